package webhooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	linstorv1alpha1 "github.com/linstor-operator/linstor-operator/api/v1alpha1"
)

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(linstorv1.AddToScheme(s))
	utilruntime.Must(linstorv1alpha1.AddToScheme(s))
	return s
}

// convertServer is the /convert endpoint as Setup registers it on a manager, served
// through the webhook server's mux (metrics wrapper included). Nothing here reaches
// the API server.
func convertServer(t *testing.T) http.Handler {
	t.Helper()
	srv := webhook.NewServer(webhook.Options{})
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
		Scheme: testScheme(t), WebhookServer: srv,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := Setup(mgr, ""); err != nil {
		t.Fatal(err)
	}
	return srv.WebhookMux()
}

// oversized is a body of size bytes: a ConversionReview whose first object's
// apiVersion string runs to the end. It counts what was read from it. (Finite, so that
// a handler without the limit fails the test instead of reading forever.)
type oversized struct {
	prefix     []byte
	size, read int64
}

func (o *oversized) Read(p []byte) (int, error) {
	if o.read >= o.size {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && o.read < o.size {
		if o.read < int64(len(o.prefix)) {
			c := copy(p[n:], o.prefix[o.read:])
			n += c
			o.read += int64(c)
			continue
		}
		p[n] = 'a'
		n++
		o.read++
	}
	return n, nil
}

func newOversized(limit int64) *oversized {
	return &oversized{
		prefix: []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"linstor.io/v1","objects":[{"apiVersion":"`),
		size:   2 * limit,
	}
}

func assertTooLarge(t *testing.T, rec *httptest.ResponseRecorder, limit int64) {
	t.Helper()
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413; body %q", rec.Code, rec.Body.String())
	}
	var status metav1.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &status); err != nil {
		t.Fatalf("body is not a Status: %v: %q", err, rec.Body.String())
	}
	if status.Reason != metav1.StatusReasonRequestEntityTooLarge || status.Code != http.StatusRequestEntityTooLarge ||
		!strings.Contains(status.Message, fmt.Sprint(limit)) {
		t.Errorf("status %+v, want reason RequestEntityTooLarge naming the limit %d", status, limit)
	}
}

func TestConvertRefusesDeclaredOversizedBody(t *testing.T) {
	body := newOversized(ConversionBodyLimit)
	req := httptest.NewRequest(http.MethodPost, ConvertPath, body)
	req.ContentLength = body.size
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	convertServer(t).ServeHTTP(rec, req)
	assertTooLarge(t, rec, ConversionBodyLimit)
	if body.read != 0 {
		t.Errorf("read %d bytes of a body declared over the limit, want none", body.read)
	}
}

func TestConvertRefusesStreamedOversizedBody(t *testing.T) {
	body := newOversized(ConversionBodyLimit)
	req := httptest.NewRequest(http.MethodPost, ConvertPath, body)
	req.ContentLength = -1 // chunked: the size is known only by reading
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	convertServer(t).ServeHTTP(rec, req)
	assertTooLarge(t, rec, ConversionBodyLimit)
	if body.read > ConversionBodyLimit+1 {
		t.Errorf("read %d bytes, want at most the limit + 1 (%d)", body.read, ConversionBodyLimit+1)
	}
}

// LimitBody leaves alone a handler that answered before reaching the limit.
func TestLimitBodyKeepsAnswerGivenBeforeTheLimit(t *testing.T) {
	h := LimitBody(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write([]byte("early"))
	}), 10)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(strings.Repeat("x", 100)))
	req.ContentLength = -1
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusAccepted || rec.Body.String() != "early" {
		t.Errorf("got %d %q, want the handler's 202 \"early\"", rec.Code, rec.Body.String())
	}
}

func review(t *testing.T, desired string, objs ...runtime.Object) []byte {
	t.Helper()
	r := apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request:  &apiextensionsv1.ConversionRequest{UID: "u", DesiredAPIVersion: desired},
	}
	for _, o := range objs {
		raw, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		r.Request.Objects = append(r.Request.Objects, runtime.RawExtension{Raw: raw})
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func convert(t *testing.T, body []byte) apiextensionsv1.ConversionReview {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, ConvertPath, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	convertServer(t).ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d, want 200; body %q", rec.Code, rec.Body.String())
	}
	var out apiextensionsv1.ConversionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if out.Response == nil || out.Response.Result.Status != metav1.StatusSuccess {
		t.Fatalf("conversion failed: %+v", out.Response)
	}
	return out
}

func TestConvertWithinLimit(t *testing.T) {
	sat := &linstorv1alpha1.LinstorSatellite{
		TypeMeta:   metav1.TypeMeta{APIVersion: linstorv1alpha1.GroupVersion.String(), Kind: "LinstorSatellite"},
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: "linstor"},
		Spec:       linstorv1alpha1.LinstorSatelliteSpec{ClusterName: "linstor"},
	}
	out := convert(t, review(t, linstorv1.GroupVersion.String(), sat))
	if n := len(out.Response.ConvertedObjects); n != 1 {
		t.Fatalf("%d objects converted, want 1", n)
	}
	var got linstorv1.LinstorSatellite
	if err := json.Unmarshal(out.Response.ConvertedObjects[0].Raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.APIVersion != linstorv1.GroupVersion.String() || got.Spec.ClusterRef.Name != "linstor" {
		t.Errorf("converted to %s with clusterRef %q, want linstor.io/v1 with clusterRef linstor", got.APIVersion, got.Spec.ClusterRef.Name)
	}
}

// typicalSatellite is a LinstorSatellite as the operator keeps it: owner, finalizer,
// labels, two pools with properties, status with conditions and capacities, and the
// managedFields of its writers.
func typicalSatellite(i int) *linstorv1.LinstorSatellite {
	name := fmt.Sprintf("worker-%04d.storage.example.com", i)
	q := resource.MustParse("1862Gi")
	fields := `{"f:metadata":{"f:labels":{"f:app.kubernetes.io/managed-by":{},"f:linstor.io/cluster":{}},"f:ownerReferences":{"k:{\"uid\":\"0b3c5f1e-7d2a-4c44-9a5e-1f6a2b3c4d5e\"}":{}}},` +
		`"f:spec":{"f:clusterRef":{"f:name":{}},"f:deletionPolicy":{},"f:netInterfaces":{},"f:properties":{"k:{\"name\":\"Aux/topology/zone\"}":{".":{},"f:name":{},"f:value":{}}},"f:storagePools":{"k:{\"name\":\"thin\"}":{".":{},"f:lvmThinPool":{"f:thinPool":{},"f:volumeGroup":{}},"f:name":{}},"k:{\"name\":\"file\"}":{".":{},"f:filePool":{"f:directory":{}},"f:name":{}}}}}`
	status := `{"f:status":{"f:conditions":{"k:{\"type\":\"Available\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Configured\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:connectionStatus":{},"f:observedGeneration":{},"f:poolsSummary":{},"f:storagePools":{},"f:version":{}}}`
	now := metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	cond := func(t string) metav1.Condition {
		return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: "AsExpected", ObservedGeneration: 3, LastTransitionTime: now,
			Message: "satellite " + name + " is ONLINE in LINSTOR 1.33.3 with 2 of 2 storage pools reporting capacity"}
	}
	props := []linstorv1.Property{{Name: "Aux/topology/zone", Value: "eu-central-1a"}, {Name: "Aux/topology/kubernetes.io/hostname", Value: name}}
	return &linstorv1.LinstorSatellite{
		TypeMeta: metav1.TypeMeta{APIVersion: linstorv1.GroupVersion.String(), Kind: "LinstorSatellite"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "linstor", UID: "9f0e8d7c-6b5a-4f3e-8d2c-1b0a9f8e7d6c", ResourceVersion: "123456789", Generation: 3,
			CreationTimestamp: now, Finalizers: []string{"linstor.io/satellite-deletion-policy"},
			Labels: map[string]string{"app.kubernetes.io/managed-by": "linstor-operator", "linstor.io/cluster": "linstor"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "linstor.io/v1", Kind: "LinstorCluster", Name: "linstor",
				UID: "0b3c5f1e-7d2a-4c44-9a5e-1f6a2b3c4d5e", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "linstor-operator", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "linstor.io/v1", Time: &now, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}},
				{Manager: "linstor-operator", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "linstor.io/v1", Time: &now, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(status)}, Subresource: "status"},
			},
		},
		Spec: linstorv1.LinstorSatelliteSpec{
			ClusterRef: linstorv1.ClusterReference{Name: "linstor"},
			StoragePools: []linstorv1.StoragePool{
				{Name: "thin", LvmThinPool: &linstorv1.LvmThinPool{VolumeGroup: "linstor_thin", ThinPool: "thin"}, Properties: props[:1]},
				{Name: "file", FilePool: &linstorv1.FilePool{Directory: "/var/lib/linstor-pools/file"}},
			},
			Properties: props,
		},
		Status: linstorv1.LinstorSatelliteStatus{
			Conditions:         []metav1.Condition{cond("Available"), cond("Configured"), cond("PoolsReady"), cond("Connected")},
			ObservedGeneration: 3, ConnectionStatus: "ONLINE", Version: "1.33.3", PoolsSummary: "2/2",
			StoragePools: []linstorv1.StoragePoolStatus{
				{Name: "thin", ProviderKind: "LVM_THIN", FreeCapacity: &q, TotalCapacity: &q},
				{Name: "file", ProviderKind: "FILE", FreeCapacity: &q, TotalCapacity: &q},
			},
		},
	}
}

// A list of a thousand satellites read through v1alpha1 is one ConversionReview; it
// must fit ConversionBodyLimit with room to spare.
func TestConvertThousandSatellitesList(t *testing.T) {
	objs := make([]runtime.Object, 1000)
	for i := range objs {
		objs[i] = typicalSatellite(i)
	}
	body := review(t, linstorv1alpha1.GroupVersion.String(), objs...)
	t.Logf("1000 satellites: %d bytes (%.1f KiB each), limit %d", len(body), float64(len(body))/1000/1024, ConversionBodyLimit)
	if int64(len(body))*2 > ConversionBodyLimit {
		t.Errorf("1000 typical satellites take %d bytes: less than half the limit left", len(body))
	}
	out := convert(t, body)
	if n := len(out.Response.ConvertedObjects); n != len(objs) {
		t.Fatalf("%d objects converted, want %d", n, len(objs))
	}
}

// controller-runtime caps admission bodies itself (pkg/webhook/admission/http.go,
// maxRequestSize); this holds an upgrade of it to AdmissionBodyLimit.
func TestAdmissionBodyCappedByControllerRuntime(t *testing.T) {
	body := newOversized(AdmissionBodyLimit)
	req := httptest.NewRequest(http.MethodPost, "/validate", body)
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	admission.WithCustomValidator(testScheme(t), &linstorv1.LinstorSatellite{}, SatelliteValidator{}).ServeHTTP(rec, req)
	if body.read > AdmissionBodyLimit {
		t.Errorf("read %d bytes, want at most %d", body.read, AdmissionBodyLimit)
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("not an AdmissionReview: %v: %q", err, rec.Body.String())
	}
	if out.Response == nil || out.Response.Allowed || out.Response.Result == nil || out.Response.Result.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("response %+v, want a denial with code 413", out.Response)
	}
}
