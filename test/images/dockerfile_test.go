// Package images checks the container images: without a container engine, that the
// Dockerfile copies exactly what the operator binary is built from; with TEST_IMAGES=1
// (make test-images), that the images build with buildah, push to a registry and run.
package images

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// dockerfile is what the tests read of a Dockerfile: the build arguments declared before the
// first FROM with their defaults, and the sources of the builder stage's COPY instructions.
type dockerfile struct {
	args        map[string]string
	builderFrom string
	runtimeFrom string
	copies      []string
}

func readDockerfile(t *testing.T, path string) dockerfile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	df := dockerfile{args: map[string]string{}}
	stage := -1
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		switch strings.ToUpper(fields[0]) {
		case "ARG":
			if name, value, ok := strings.Cut(fields[1], "="); ok && stage < 0 {
				df.args[name] = value
			}
		case "FROM":
			stage++
			if stage == 0 {
				df.builderFrom = fields[1]
			}
			df.runtimeFrom = fields[1]
		case "COPY":
			if stage == 0 {
				// COPY src… dest: everything between the instruction and the destination.
				df.copies = append(df.copies, fields[1:len(fields)-1]...)
			}
		}
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return df
}

// binarySources lists, relative to the repository, the files `go build .` reads from the
// main module: the Go files of every package the binary links and the files they embed.
func binarySources(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=Dir,Module,GoFiles,EmbedFiles", ".")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var files []string
	decoder := json.NewDecoder(strings.NewReader(string(out)))
	for decoder.More() {
		var pkg struct {
			Dir                 string
			Module              *struct{ Main bool }
			GoFiles, EmbedFiles []string
		}
		if err := decoder.Decode(&pkg); err != nil {
			t.Fatal(err)
		}
		if pkg.Module == nil || !pkg.Module.Main {
			continue
		}
		rel, err := filepath.Rel(root, pkg.Dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range append(pkg.GoFiles, pkg.EmbedFiles...) {
			files = append(files, filepath.ToSlash(filepath.Join(rel, name)))
		}
	}
	return files
}

// covers reports whether the COPY source src brings file into the build context's copy.
func covers(src, file string) bool {
	if strings.HasSuffix(src, "/") {
		return strings.HasPrefix(file, src)
	}
	return file == src
}

// The first release's Dockerfile copied main.go, api/, controllers/ and pkg/ only: the build
// stopped at go build (main.go links internal/manager, pkg/webhooks embeds config/crd), and
// no test noticed because none builds the image without a container engine.
func TestDockerfileCopiesWhatTheBinaryIsBuiltFrom(t *testing.T) {
	root := envtest.RepoRoot()
	df := readDockerfile(t, filepath.Join(root, "Dockerfile"))
	sources := binarySources(t, root)
	if len(sources) == 0 {
		t.Fatal("go list named no file of the main module")
	}
	for _, file := range sources {
		if !slices.ContainsFunc(df.copies, func(src string) bool { return covers(src, file) }) {
			t.Errorf("the Dockerfile's builder stage does not copy %s, which go build . reads", file)
		}
	}
	// go.mod and go.sum are read by go mod download; every other source must hold a file
	// the binary is built from, so that the image's build context stays small and its
	// cache is not invalidated by changes to tests, tools or the emulator.
	for _, src := range df.copies {
		if src == "go.mod" || src == "go.sum" {
			continue
		}
		if !slices.ContainsFunc(sources, func(file string) bool { return covers(src, file) }) {
			t.Errorf("the Dockerfile copies %s, which go build . does not read", src)
		}
	}
}

// Machines that cannot pull the public base images pass their own as build arguments; the
// defaults stay the public images, and the builder's Go is the version go.mod asks for.
func TestDockerfileBaseImagesAreArgumentsDefaultingToThePublicImages(t *testing.T) {
	root := envtest.RepoRoot()
	df := readDockerfile(t, filepath.Join(root, "Dockerfile"))
	if df.builderFrom != "${BUILDER_IMAGE}" {
		t.Errorf("the builder stage is FROM %s, want FROM ${BUILDER_IMAGE}", df.builderFrom)
	}
	if df.runtimeFrom != "${RUNTIME_IMAGE}" {
		t.Errorf("the last stage is FROM %s, want FROM ${RUNTIME_IMAGE}", df.runtimeFrom)
	}
	if got, want := df.args["RUNTIME_IMAGE"], "gcr.io/distroless/static:nonroot"; got != want {
		t.Errorf("RUNTIME_IMAGE defaults to %q, want %q (no shell, no libc, user 65532)", got, want)
	}
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goDirective := regexp.MustCompile(`(?m)^go (\d+\.\d+)\S*$`).FindStringSubmatch(string(data))
	if goDirective == nil {
		t.Fatal("go.mod has no go directive")
	}
	if got, want := df.args["BUILDER_IMAGE"], "docker.io/library/golang:"+goDirective[1]; got != want {
		t.Errorf("BUILDER_IMAGE defaults to %q, want %q (go.mod says %s)", got, want, goDirective[0])
	}
}
