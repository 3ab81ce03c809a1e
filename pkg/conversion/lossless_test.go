package conversion

import (
	"encoding/json"
	"math/rand"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A hub with a field the spoke lacks, to exercise the annotation.
type hubSpec struct {
	Name  string `json:"name,omitempty"`
	Extra string `json:"extra,omitempty"`
}

type spokeSpec struct {
	Name string `json:"name,omitempty"`
}

type status struct {
	Note string `json:"note,omitempty"`
}

var specPart = Part[hubSpec, spokeSpec]{
	ToSpoke: func(h *hubSpec) spokeSpec { return spokeSpec{Name: h.Name} },
	ToHub:   func(s *spokeSpec) hubSpec { return hubSpec{Name: s.Name} },
	Overlay: func(base, from *hubSpec) { base.Name = from.Name },
}

var statusPart = Part[status, status]{
	ToSpoke: func(h *status) status { return status{} },
	ToHub:   func(s *status) status { return status{} },
	Overlay: func(base, from *status) {},
}

func roundTrip(t *testing.T, hub hubSpec, hubStatus status, edit func(*spokeSpec)) (hubSpec, status, metav1.ObjectMeta) {
	t.Helper()
	var meta metav1.ObjectMeta
	var spoke spokeSpec
	var spokeStatus status
	if err := ToSpoke(&meta, specPart, &hub, &spoke, statusPart, &hubStatus, &spokeStatus); err != nil {
		t.Fatal(err)
	}
	annotations := meta.Annotations
	if edit != nil {
		edit(&spoke)
	}
	var back hubSpec
	var backStatus status
	if err := ToHub(&meta, specPart, &spoke, &back, statusPart, &spokeStatus, &backStatus); err != nil {
		t.Fatal(err)
	}
	if _, left := meta.Annotations[DataAnnotation]; left {
		t.Fatalf("usable conversion data left on the hub: %v", meta.Annotations)
	}
	return back, backStatus, metav1.ObjectMeta{Annotations: annotations}
}

func random(n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	r := rand.New(rand.NewSource(int64(n)))
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[r.Intn(len(letters))]
	}
	return string(b)
}

func TestAnnotationEncodings(t *testing.T) {
	for _, tc := range []struct {
		name       string
		extra      string
		note       string
		wantPrefix string
		lossless   bool // spec and status both come back
		specBack   bool // the spec comes back
	}{
		{"small data is plain JSON", "x", "n", `{"spec":`, true, true},
		{"large compressible data is gzipped", strings.Repeat("storage ", 20000), strings.Repeat("s", 1000), `{"gzip":`, true, true},
		{"a large status is left out before the spec", random(100 << 10), random(200 << 10), `{"gzip":`, false, true},
		{"data that never fits is left out, saying why", random(400 << 10), "", `{"omitted":`, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var meta metav1.ObjectMeta
			var spoke spokeSpec
			var spokeStatus status
			hub, hubStatus := hubSpec{Name: "n", Extra: tc.extra}, status{Note: tc.note}
			if err := ToSpoke(&meta, specPart, &hub, &spoke, statusPart, &hubStatus, &spokeStatus); err != nil {
				t.Fatal(err)
			}
			value := meta.Annotations[DataAnnotation]
			t.Logf("%d bytes of data, annotation %d bytes", len(tc.extra)+len(tc.note), len(value))
			if !strings.HasPrefix(value, tc.wantPrefix) {
				t.Fatalf("annotation starts %.40q, want %q", value, tc.wantPrefix)
			}
			if len(value) > annotationsLimit-margin {
				t.Fatalf("annotation of %d bytes exceeds the budget", len(value))
			}
			err := Validate[hubSpec, status](value)
			if tc.specBack != (err == nil) {
				t.Fatalf("Validate: %v", err)
			}
			if !tc.specBack {
				if !strings.Contains(err.Error(), "edit it through linstor.io/v1") {
					t.Fatalf("the refusal does not say what to do: %v", err)
				}
				return
			}
			var back hubSpec
			var backStatus status
			if err := ToHub(&meta, specPart, &spoke, &back, statusPart, &spokeStatus, &backStatus); err != nil {
				t.Fatal(err)
			}
			if back != hub {
				t.Fatalf("spec lost: %.60v", back)
			}
			if tc.lossless && backStatus != hubStatus {
				t.Fatal("status lost")
			}
		})
	}
}

func TestOtherAnnotationsShrinkTheBudget(t *testing.T) {
	meta := metav1.ObjectMeta{Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": random(200 << 10)}}
	var spoke spokeSpec
	var spokeStatus status
	hub := hubSpec{Name: "n", Extra: random(60 << 10)}
	if err := ToSpoke(&meta, specPart, &hub, &spoke, statusPart, &status{}, &spokeStatus); err != nil {
		t.Fatal(err)
	}
	total := 0
	for k, v := range meta.Annotations {
		total += len(k) + len(v)
	}
	if total > annotationsLimit {
		t.Fatalf("annotations total %d bytes, over the API server's limit", total)
	}
	if !strings.HasPrefix(meta.Annotations[DataAnnotation], `{"omitted":`) {
		t.Fatalf("data that does not fit next to the other annotations was not left out")
	}
}

func TestEditsThroughTheSpokeKeepHubOnlyFields(t *testing.T) {
	back, _, _ := roundTrip(t, hubSpec{Name: "a", Extra: strings.Repeat("kept ", 10000)}, status{}, func(s *spokeSpec) { s.Name = "b" })
	if back.Name != "b" || back.Extra != strings.Repeat("kept ", 10000) {
		t.Fatalf("edit not applied over the compressed data: name %q, extra %d bytes", back.Name, len(back.Extra))
	}
}

func TestValidateRefusesWhatIsNotOurs(t *testing.T) {
	gz := func(inner string) string {
		raw, _ := json.Marshal(data{Gzip: gzipBase64([]byte(inner))})
		return string(raw)
	}
	for _, tc := range []struct{ value, want string }{
		{`not json`, "is not conversion data written by this operator"},
		{`{"spec":{"name":"x","unknown":1}}`, `spec: unknown field "unknown"`},
		{`{"spec":{"name":1}}`, "spec: json: cannot unmarshal number"},
		{`{"specs":{}}`, `unknown field "specs"`},
		{`{"spec":{},"gzip":"x"}`, "holds both compressed and plain data"},
		{`{"gzip":"!!"}`, "gzip: not base64"},
		{`{"gzip":"aGVsbG8="}`, "gzip:"},
		{gz(`{"gzip":"nested"}`), "gzip: does not hold conversion data"},
		{gz(strings.Repeat(" ", maxDecoded+10)), "expands to more than"},
		{`{"omitted":"too large"}`, "cannot be written back through linstor.io/v1alpha1: too large"},
	} {
		err := Validate[hubSpec, status](tc.value)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.40q: got %v, want %q", tc.value, err, tc.want)
		}
		if _, ok := err.(*InvalidError); !ok {
			t.Errorf("%.40q: %T is not an InvalidError", tc.value, err)
		}
	}
}
