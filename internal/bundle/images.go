package bundle

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"

	"github.com/linstor-operator/linstor-operator/pkg/images"
	"github.com/linstor-operator/linstor-operator/pkg/upgrade"
)

// DisconnectedAnnotation says whether the bundle can be mirrored for a cluster with no
// access to the image registries. OpenShift's mirroring (oc-mirror, ImageDigestMirrorSet)
// redirects digest references only, so it is true only when every image is pinned by
// digest.
const DisconnectedAnnotation = "features.operators.openshift.io/disconnected"

// releaseImage is one image the release may run: its RELATED_IMAGE_ variable (which
// the operator reads) and its relatedImages name (which mirroring reads).
type releaseImage struct {
	env, name, image string
	// version is the LINSTOR version of a stepping stone or rollback target's image.
	version string
}

// releaseImages lists every image any supported path runs: the operator, every
// component, every DRBD loader flavour, and the LINSTOR images of the versions the
// release runs besides its target (stepping stones, rollback targets).
func releaseImages(operatorImage string) []releaseImage {
	out := []releaseImage{{env: "RELATED_IMAGE_OPERATOR", name: "operator", image: operatorImage}}
	for _, r := range images.Default().Related() {
		out = append(out, releaseImage{env: r[0], name: relatedName(strings.TrimPrefix(r[0], "RELATED_IMAGE_")), image: r[1]})
	}
	return append(out, versionImages(upgrade.Current)...)
}

func relatedName(component string) string {
	return strings.ToLower(strings.ReplaceAll(component, "_", "-"))
}

// versionImages are the LINSTOR controller and satellite images of the versions r runs
// besides its target.
func versionImages(r upgrade.Release) []releaseImage {
	var out []releaseImage
	for _, v := range r.Runnable {
		if v.Compare(r.Target) == 0 {
			continue
		}
		set := images.Default().ForLinstor(v.String())
		for _, c := range []images.Component{images.LinstorController, images.LinstorSatellite} {
			out = append(out, releaseImage{
				env:     images.VersionedName(c, v.String()),
				name:    relatedName(string(c)) + "-" + strings.ReplaceAll(v.String(), ".", "-"),
				image:   set.Image(c),
				version: v.String(),
			})
		}
	}
	return out
}

// LinstorVersionImages are the relatedImages of versionImages.
func LinstorVersionImages(r upgrade.Release) []operatorsv1alpha1.RelatedImage {
	return relatedImages(versionImages(r))
}

// relatedImages lists each image once per component, and an image of another LINSTOR
// version once (controller and satellite share it): mirroring reads images, not names.
func relatedImages(list []releaseImage) []operatorsv1alpha1.RelatedImage {
	out := make([]operatorsv1alpha1.RelatedImage, 0, len(list))
	seen := map[string]bool{}
	for _, img := range list {
		if img.version != "" {
			if seen[img.image] {
				continue
			}
			seen[img.image] = true
		}
		out = append(out, operatorsv1alpha1.RelatedImage{Name: img.name, Image: img.image})
	}
	return out
}

var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ReadDigests reads an image digests file: one "<image reference> <digest>" per line,
// for example "quay.io/piraeusdatastore/piraeus-server:v1.33.3 sha256:…" (what
// `skopeo inspect --format '{{.Digest}}' docker://<reference>` prints), "#" comments.
func ReadDigests(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	scanner := bufio.NewScanner(f)
	for n := 1; scanner.Scan(); n++ {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 || !digestPattern.MatchString(fields[1]) {
			return nil, fmt.Errorf("%s:%d: want \"<image reference> sha256:<64 hex digits>\", got %q", path, n, line)
		}
		out[fields[0]] = fields[1]
	}
	return out, scanner.Err()
}

// pinImages rewrites every image to "<repository>@<digest>" from digests. An image
// already pinned is kept; one without a digest is an error naming it, so a release is
// never half pinned.
func pinImages(list []releaseImage, digests map[string]string) ([]releaseImage, error) {
	out := make([]releaseImage, len(list))
	var missing []string
	for i, img := range list {
		out[i] = img
		if strings.Contains(img.image, "@") {
			continue
		}
		d, ok := digests[img.image]
		if !ok {
			if !slices.Contains(missing, img.image) {
				missing = append(missing, img.image)
			}
			continue
		}
		out[i].image = repository(img.image) + "@" + d
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("no digest for %d images: %s", len(missing), strings.Join(missing, ", "))
	}
	return out, nil
}

// repository strips the tag of an image reference (a ":" after the last "/").
func repository(ref string) string {
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i]
	}
	return ref
}

func allPinned(list []releaseImage) bool {
	for _, img := range list {
		if !strings.Contains(img.image, "@sha256:") {
			return false
		}
	}
	return true
}
