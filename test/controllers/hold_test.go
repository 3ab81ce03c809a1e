package controllers

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// holdCreates registers a validating webhook, served by the test, on the creates that
// hook's rules and selectors match (its name, client config and policies are filled
// in here). The first create of an object whose name held accepts blocks until
// release is called (at most 25 s, within the webhook's timeout); arrived is closed
// when it comes. The API server picks a configuration up a moment later, so probes
// (probe(i) is created and deleted again, named with the prefix "hold-probe-") are
// sent until one reaches the webhook: it is active when this returns.
func holdCreates(t *testing.T, hook admissionregistrationv1.ValidatingWebhook, held func(name string) bool, probe func(i int) client.Object) (arrived <-chan struct{}, release func()) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	came, released, probed := make(chan struct{}), make(chan struct{}), make(chan struct{}, 10)
	var arrive, free sync.Once
	release = func() { free.Do(func() { close(released) }) }
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		name := review.Request.Name
		if held(name) {
			first := false
			arrive.Do(func() { first = true; close(came) })
			if first {
				select {
				case <-released:
				case <-time.After(25 * time.Second):
				}
			}
		} else if strings.HasPrefix(name, "hold-probe-") {
			select {
			case probed <- struct{}{}:
			default:
			}
		}
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	t.Cleanup(release) // before the server closes: it waits for the held request

	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	url := srv.URL + "/validate"
	hook.Name = "hold.test.linstor.io"
	hook.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url,
		CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}
	hook.FailurePolicy, hook.SideEffects = &fail, &none
	hook.AdmissionReviewVersions, hook.TimeoutSeconds = []string{"v1"}, ptr.To[int32](30)
	config := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "hold-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{hook},
	}
	g.Expect(env.Client.Create(ctx, config)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, config) })

	for i := 0; ; i++ {
		if i == 200 {
			t.Fatal("the test's admission webhook is never called")
		}
		p := probe(i)
		g.Expect(env.Client.Create(ctx, p)).To(Succeed())
		_ = env.Client.Delete(ctx, p)
		select {
		case <-probed:
			return came, release
		case <-time.After(tick):
		}
	}
}
