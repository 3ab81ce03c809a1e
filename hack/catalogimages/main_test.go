package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// projectCatalog is opm render of the project's catalog/, and stand-ins for what opm
// render gives for each release's bundle image: the same bundle with its image set.
func projectCatalog(t *testing.T) (project, fromImages []blob) {
	t.Helper()
	project, err := render(envtest.OPMBinary(t), filepath.Join(envtest.RepoRoot(), "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range project {
		if b.schema() != "olm.bundle" {
			continue
		}
		var copied blob
		data, _ := json.Marshal(b)
		if err := json.Unmarshal(data, &copied); err != nil {
			t.Fatal(err)
		}
		copied["image"] = "registry.example/linstor-operator-bundle:" + b.name()
		fromImages = append(fromImages, copied)
	}
	if len(fromImages) < 2 {
		t.Fatalf("catalog/ has %d bundles, want the releases", len(fromImages))
	}
	return project, fromImages
}

func TestMergeKeepsTheChannelsAndTakesEveryBundleFromItsImage(t *testing.T) {
	project, fromImages := projectCatalog(t)
	merged, err := merge(project, fromImages)
	if err != nil {
		t.Fatal(err)
	}
	if len(merged) != len(project) {
		t.Fatalf("merged %d blobs, the catalog has %d", len(merged), len(project))
	}
	if merged[0].schema() != "olm.package" {
		t.Errorf("the first blob is %s, want olm.package", merged[0].schema())
	}
	channels := 0
	for i, b := range merged {
		switch b.schema() {
		case "olm.channel":
			channels++
		case "olm.bundle":
			if want := "registry.example/linstor-operator-bundle:" + b.name(); b["image"] != want {
				t.Errorf("blob %d, bundle %s: image %v, want %s", i, b.name(), b["image"], want)
			}
		}
	}
	if channels == 0 {
		t.Error("the merged catalog has no channel")
	}
}

func TestMergeRefusesACatalogTheImagesDoNotMatch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(project, fromImages []blob) ([]blob, []blob)
		want   string
	}{
		{"a release without image", func(p, i []blob) ([]blob, []blob) { return p, i[1:] }, "no bundle image given for linstor-operator.v0.1.0"},
		{"an image of a release the catalog lacks", func(p, i []blob) ([]blob, []blob) {
			extra := blob{"schema": "olm.bundle", "name": "linstor-operator.v9.9.9", "package": "linstor-operator", "image": "registry.example/x:v9"}
			return p, append(i, extra)
		}, "releases the catalog does not list: linstor-operator.v9.9.9"},
		{"an image with other manifests", func(p, i []blob) ([]blob, []blob) {
			i[0]["properties"] = []any{}
			return p, i
		}, "holds another linstor-operator.v0.1.0 than the catalog"},
		{"two images of one release", func(p, i []blob) ([]blob, []blob) {
			return p, append(i, i[0])
		}, "are both linstor-operator.v0.1.0"},
		{"a bundle without image", func(p, i []blob) ([]blob, []blob) {
			i[0]["image"] = ""
			return p, i
		}, `want only bundles from images`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			project, fromImages := projectCatalog(t)
			project, fromImages = tc.change(project, fromImages)
			_, err := merge(project, fromImages)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("merge: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
