package webhooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
)

// Request size limits. The webhook port accepts connections from anything that can
// reach the Service (the server asks for no client certificate), so a body's size
// must not be the sender's choice: an unbounded one is buffered whole and can have the
// operator killed for memory (limit 256Mi, config/manager/manager.yaml) on every replica
// in turn. The API server accepts a write body of at most 3 MiB
// (k8s.io/apiserver MaxRequestBodyBytes) and etcd stores at most 1.5 MiB by default,
// which bounds one object.
const (
	// ConvertPath is where the CRDs send ConversionReviews (config/crd/patches).
	ConvertPath = "/convert"

	// ConversionBodyLimit bounds a ConversionReview. One review carries one object for
	// a get, a write or a watch event, but a whole list for a list read through another
	// version (apiextensions-apiserver webhookConverter.Convert sends every item of an
	// UnstructuredList in one request). 16 MiB holds five objects of the API server's
	// 3 MiB maximum, a page of 500 (kubectl's and client-go's chunk size) at 32 KiB an
	// object, or an unpaged list of 1,000 LinstorSatellites at 16 KiB each, four times
	// what a satellite with its status and managedFields takes (3.6 KiB,
	// TestConvertThousandSatellitesList). Serving a 15 MiB review took about 80 MiB more
	// heap at its peak (body, decoded and converted objects, the encoded response): twice
	// that would not fit the 256Mi container beside the caches.
	ConversionBodyLimit int64 = 16 << 20

	// AdmissionBodyLimit is what controller-runtime's admission.Webhook.ServeHTTP
	// (pkg/webhook/admission/http.go, maxRequestSize) already reads at most of an
	// AdmissionReview: two objects (old and new) of 3 MiB and 1 MiB for the rest. The
	// validating webhooks are not wrapped; a test holds controller-runtime to it.
	AdmissionBodyLimit int64 = 7 << 20
)

// registerConversion serves the CRD conversion webhook with its body limited. It must
// run before the first builder that finds a convertible kind: the builder registers
// its own, unlimited, handler only when nothing is served at ConvertPath yet.
func registerConversion(srv webhook.Server, scheme *runtime.Scheme) {
	srv.Register(ConvertPath, LimitBody(conversion.NewWebhookHandler(scheme), ConversionBodyLimit))
}

// LimitBody refuses a request whose body exceeds limit bytes with 413 Request Entity
// Too Large and a metav1.Status naming the limit (the API server reports its message).
// A declared Content-Length over the limit is refused before anything is read;
// otherwise next reads through http.MaxBytesReader, which stops after limit+1 bytes,
// and whatever next answers to the truncated body is replaced by the refusal.
func LimitBody(next http.Handler, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limit {
			writeTooLarge(w, limit)
			return
		}
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		body := &limitedBody{ReadCloser: http.MaxBytesReader(w, r.Body, limit)}
		lw := &limitedWriter{ResponseWriter: w, body: body, limit: limit}
		r.Body = body
		next.ServeHTTP(lw, r)
		if body.exceeded && !lw.wrote {
			writeTooLarge(w, limit)
		}
	})
}

// limitedBody records that the limit was reached.
type limitedBody struct {
	io.ReadCloser
	exceeded bool
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		b.exceeded = true
	}
	return n, err
}

// limitedWriter turns whatever the handler answers to a body cut at the limit into the
// refusal. A handler that had answered before reading past the limit keeps its answer.
type limitedWriter struct {
	http.ResponseWriter
	body  *limitedBody
	limit int64
	// wrote: the response started, from the handler or as the refusal.
	wrote bool
	// refused: the handler's own answer is being discarded.
	refused bool
}

func (w *limitedWriter) WriteHeader(code int) {
	if w.wrote {
		if !w.refused {
			w.ResponseWriter.WriteHeader(code)
		}
		return
	}
	w.wrote = true
	if w.body.exceeded {
		w.refused = true
		writeTooLarge(w.ResponseWriter, w.limit)
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if w.refused {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

func writeTooLarge(w http.ResponseWriter, limit int64) {
	status := metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure,
		Code:     http.StatusRequestEntityTooLarge,
		Reason:   metav1.StatusReasonRequestEntityTooLarge,
		Message:  fmt.Sprintf("linstor-operator webhook: request body exceeds %d bytes", limit),
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusRequestEntityTooLarge)
	_ = json.NewEncoder(w).Encode(status)
}
