package v1alpha1

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	"sigs.k8s.io/randfill"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	lossless "github.com/linstor-operator/linstor-operator/pkg/conversion"
)

// fuzzIterations per kind and direction; FUZZ_ITERATIONS raises it for a longer run.
func fuzzIterations() int {
	if n, err := strconv.Atoi(os.Getenv("FUZZ_ITERATIONS")); err == nil && n > 0 {
		return n
	}
	return 10000
}

type spoke interface {
	client.Object
	conversion.Convertible
}

type hub interface {
	client.Object
	conversion.Hub
}

var kinds = []struct {
	name  string
	hub   func() hub
	spoke func() spoke
	// editSpoke copies the spoke's spec (what a user edits) from src to dst.
	editSpoke func(dst, src spoke)
	// hubOnlyKept says what of orig's v1-only spec an edit through v1alpha1 lost in
	// stored ("" when nothing): the spoke view alone cannot show it.
	hubOnlyKept func(orig, stored hub) string
}{
	{"LinstorCluster", func() hub { return &linstorv1.LinstorCluster{} }, func() spoke { return &LinstorCluster{} },
		func(dst, src spoke) { dst.(*LinstorCluster).Spec = src.(*LinstorCluster).Spec },
		func(orig, stored hub) string {
			o, s := orig.(*linstorv1.LinstorCluster).Spec, stored.(*linstorv1.LinstorCluster).Spec
			if !sameJSON(o.NodeAffinity, s.NodeAffinity) {
				return "nodeAffinity"
			}
			if o.Satellite != nil && (s.Satellite == nil || !sameJSON(o.Satellite.Patches, s.Satellite.Patches)) {
				return "satellite.patches"
			}
			return ""
		}},
	{"LinstorSatelliteConfiguration", func() hub { return &linstorv1.LinstorSatelliteConfiguration{} }, func() spoke { return &LinstorSatelliteConfiguration{} },
		func(dst, src spoke) {
			dst.(*LinstorSatelliteConfiguration).Spec = src.(*LinstorSatelliteConfiguration).Spec
		},
		func(orig, stored hub) string {
			o, s := orig.(*linstorv1.LinstorSatelliteConfiguration).Spec, stored.(*linstorv1.LinstorSatelliteConfiguration).Spec
			if !sameJSON(o.IPFamilies, s.IPFamilies) || !sameJSON(o.Patches, s.Patches) {
				return "ipFamilies or patches"
			}
			byName := map[string][]linstorv1.NodeProperty{}
			for _, p := range s.Properties {
				byName[p.Name] = append(byName[p.Name], p)
			}
			// Spelled out rather than the code's hubOnly: the test states the rule.
			fromNode := func(p *linstorv1.NodeProperty) bool { return p.ValueFrom != nil || p.ExpandFrom != nil }
			for _, p := range o.Properties {
				if !fromNode(&p) {
					continue
				}
				got := byName[p.Name]
				switch {
				case len(got) == 1 && !fromNode(&got[0]):
					// The edit set a literal of this name: the edit wins.
				case len(got) == 0 || !sameJSON(got[len(got)-1], p) && !sameJSON(got[0], p):
					return "properties: " + p.Name + " (valueFrom/expandFrom) became " + fmt.Sprint(got)
				}
			}
			return ""
		}},
	{"LinstorSatellite", func() hub { return &linstorv1.LinstorSatellite{} }, func() spoke { return &LinstorSatellite{} },
		func(dst, src spoke) { dst.(*LinstorSatellite).Spec = src.(*LinstorSatellite).Spec },
		func(orig, stored hub) string {
			o, s := orig.(*linstorv1.LinstorSatellite).Spec, stored.(*linstorv1.LinstorSatellite).Spec
			if !sameJSON(o.IPFamilies, s.IPFamilies) || !sameJSON(o.Patches, s.Patches) {
				return "ipFamilies or patches"
			}
			return ""
		}},
}

func sameJSON(a, b any) bool {
	same, err := lossless.SameJSON(a, b)
	return err == nil && same
}

func newFiller(seed int64) *randfill.Filler {
	s := runtime.NewScheme()
	// The RawExtension filler encodes a metav1.Status into pod-template patches.
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(seed), serializer.NewCodecFactory(s)).NilChance(0.3).NumElements(0, 3)
}

// viaJSON stores obj as the API server would and reads it back into a fresh object.
func viaJSON[T any](t *testing.T, obj any, fresh T) T {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if err := json.Unmarshal(raw, fresh); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	return fresh
}

func jsonDiff(t *testing.T, want, got any) string {
	t.Helper()
	if same, err := lossless.SameJSON(want, got); err != nil || same {
		return ""
	}
	var a, b any
	ja, _ := json.Marshal(want)
	jb, _ := json.Marshal(got)
	_ = json.Unmarshal(ja, &a)
	_ = json.Unmarshal(jb, &b)
	return cmp.Diff(a, b)
}

// TestFuzzHubSpokeHub: any v1 object survives v1 -> v1alpha1 -> (stored) -> v1 exactly.
func TestFuzzHubSpokeHub(t *testing.T) {
	for ki, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			f := newFiller(int64(1000 + ki))
			for i := 0; i < fuzzIterations(); i++ {
				in := k.hub()
				f.Fill(in)
				in = viaJSON(t, in, k.hub())

				sp := k.spoke()
				if err := sp.ConvertFrom(in); err != nil {
					t.Fatalf("iteration %d: to spoke: %v", i, err)
				}
				sp = viaJSON(t, sp, k.spoke())
				out := k.hub()
				if err := sp.ConvertTo(out); err != nil {
					t.Fatalf("iteration %d: to hub: %v", i, err)
				}
				if d := jsonDiff(t, in, out); d != "" {
					t.Fatalf("iteration %d: v1 -> v1alpha1 -> v1 lost data (-want +got):\n%s", i, d)
				}
			}
		})
	}
}

// TestFuzzSpokeHubSpoke: any v1alpha1 object survives v1alpha1 -> v1 -> v1alpha1 exactly,
// and v1 expresses all of it without the conversion annotation.
func TestFuzzSpokeHubSpoke(t *testing.T) {
	for ki, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			f := newFiller(int64(2000 + ki))
			for i := 0; i < fuzzIterations(); i++ {
				in := k.spoke()
				f.Fill(in)
				delete(in.GetAnnotations(), lossless.DataAnnotation)
				in = viaJSON(t, in, k.spoke())

				h := k.hub()
				if err := in.ConvertTo(h); err != nil {
					t.Fatalf("iteration %d: to hub: %v", i, err)
				}
				h = viaJSON(t, h, k.hub())
				out := k.spoke()
				if err := out.ConvertFrom(h); err != nil {
					t.Fatalf("iteration %d: to spoke: %v", i, err)
				}
				if _, ok := out.GetAnnotations()[lossless.DataAnnotation]; ok {
					t.Fatalf("iteration %d: v1 could not express a v1alpha1 object without the conversion annotation: %s",
						i, out.GetAnnotations()[lossless.DataAnnotation])
				}
				if d := jsonDiff(t, in, out); d != "" {
					t.Fatalf("iteration %d: v1alpha1 -> v1 -> v1alpha1 lost data (-want +got):\n%s", i, d)
				}
			}
		})
	}
}

// TestFuzzEditThroughSpoke: a v1alpha1 client reads a v1 object, replaces the spec with
// anything, and writes it back; reading the result as v1alpha1 shows exactly that edit.
func TestFuzzEditThroughSpoke(t *testing.T) {
	for ki, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			f := newFiller(int64(3000 + ki))
			for i := 0; i < fuzzIterations()/4; i++ {
				orig := k.hub()
				f.Fill(orig)
				orig = viaJSON(t, orig, k.hub())
				read := k.spoke()
				if err := read.ConvertFrom(orig); err != nil {
					t.Fatal(err)
				}
				read = viaJSON(t, read, k.spoke())
				edit := k.spoke()
				f.Fill(edit)
				k.editSpoke(read, edit)
				read = viaJSON(t, read, k.spoke())

				stored := k.hub()
				if err := read.ConvertTo(stored); err != nil {
					t.Fatalf("iteration %d: to hub: %v", i, err)
				}
				stored = viaJSON(t, stored, k.hub())
				again := k.spoke()
				if err := again.ConvertFrom(stored); err != nil {
					t.Fatal(err)
				}
				want, got := k.spoke(), k.spoke()
				k.editSpoke(want, read)
				k.editSpoke(got, again)
				if d := jsonDiff(t, want, got); d != "" {
					t.Fatalf("iteration %d: edit through v1alpha1 not honoured (-want +got):\n%s", i, d)
				}
				if lost := k.hubOnlyKept(orig, stored); lost != "" {
					t.Fatalf("iteration %d: edit through v1alpha1 lost v1-only %s", i, lost)
				}
			}
		})
	}
}

// FuzzConversionAnnotation feeds arbitrary conversion annotations (a user can edit
// annotations) to the spoke->hub path: it must never panic nor fail (a conversion error
// is an internal error for every reader), and it leaves the annotation on the hub, for
// admission to refuse, exactly when the annotation cannot be used.
func FuzzConversionAnnotation(f *testing.F) {
	f.Add(`{"spec":{"controller":{"image":"x"}}}`)
	f.Add(`{"status":{"version":"1.33.3"}}`)
	f.Add(`{"spec":null}`)
	f.Add(`not json`)
	f.Add(`{"spec":{"storagePools":[{"name":"p","filePool":{}}]}}`)
	f.Add(`{"gzip":"H4sIAAAAAAAA/6pWKkhMTlWyUlAqS8wpTVWqBQQAAP//AQAA//8="}`)
	f.Add(`{"omitted":"too large"}`)
	f.Fuzz(func(t *testing.T, annotation string) {
		in := &LinstorCluster{}
		in.Annotations = map[string]string{lossless.DataAnnotation: annotation}
		in.Spec.ControllerImage = "img"
		out := &linstorv1.LinstorCluster{}
		if err := in.ConvertTo(out); err != nil {
			t.Fatalf("conversion failed: %v", err)
		}
		_, left := out.Annotations[lossless.DataAnnotation]
		invalid := lossless.Validate[linstorv1.LinstorClusterSpec, linstorv1.LinstorClusterStatus](annotation) != nil
		if left != invalid {
			t.Fatalf("annotation left on the hub: %v, refused: %v", left, invalid)
		}
		if out.Spec.Controller == nil || out.Spec.Controller.Image == "" {
			t.Fatal("the spoke's own fields were not converted")
		}
	})
}
