package images

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// docImages reads docs/images.md's table: variable (or "<FLAVOUR>" for every loader
// not named in its own row) to the documented image, "<flavour>" in it standing for
// the lower-case flavour. A row may name several variables ("`A_X`, `_Y`": A_Y).
func docImages(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile("../../docs/images.md")
	if err != nil {
		t.Fatal(err)
	}
	code := regexp.MustCompile("`([^`]+)`")
	out := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.Contains(cells[1], relatedImagePrefix) {
			continue
		}
		image := code.FindStringSubmatch(cells[2])
		if image == nil {
			t.Fatalf("docs/images.md: no image in %q", line)
		}
		first := ""
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			name := m[1]
			if strings.HasPrefix(name, "_") {
				name = first[:strings.LastIndex(first, "_")] + name
			} else {
				first = name
			}
			out[name] = image[1]
		}
	}
	return out
}

// The documented set is the compiled-in one: every image, at the documented tag.
func TestDocumentedImagesAreTheDefaults(t *testing.T) {
	documented := docImages(t)
	used := map[string]bool{}
	for _, kv := range Default().Related() {
		name, image := kv[0], kv[1]
		want, ok := documented[name]
		if !ok {
			flavour, isLoader := strings.CutPrefix(name, relatedImagePrefix+drbdLoaderPrefix)
			if want, ok = documented[relatedImagePrefix+drbdLoaderPrefix+"<FLAVOUR>"]; !isLoader || !ok {
				t.Errorf("%s=%s is not in docs/images.md", name, image)
				continue
			}
			want = strings.ReplaceAll(want, "<flavour>", strings.ToLower(flavour))
			used[relatedImagePrefix+drbdLoaderPrefix+"<FLAVOUR>"] = true
		} else {
			want = strings.ReplaceAll(want, "<flavour>", strings.ToLower(strings.TrimPrefix(name, relatedImagePrefix+drbdLoaderPrefix)))
			used[name] = true
		}
		// A row may leave out the registry ("drbd9-buster:v9.2.14").
		if image != want && !strings.HasSuffix(image, "/"+want) {
			t.Errorf("%s is %s, docs/images.md says %s", name, image, want)
		}
	}
	for name := range documented {
		if !used[name] {
			t.Errorf("docs/images.md lists %s, which the release does not have", name)
		}
	}
}
