package controllers

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/internal/s3server"
)

// stallingProxy passes requests to srv; once stalled, it holds every write (PUT, POST)
// without an answer until the client gives up: an S3 gateway on a hung disk.
func stallingProxy(t *testing.T, srv *s3server.Server) (endpoint string, stalled *atomic.Bool) {
	target, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	stalled = &atomic.Bool{}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target); r.Out.Host = r.In.Host }, Transport: srv.Transport()}
	done := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if stalled.Load() && (r.Method == http.MethodPut || r.Method == http.MethodPost) {
			select {
			case <-r.Context().Done():
			case <-done:
			}
			return
		}
		proxy.ServeHTTP(w, r)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &http.Server{Handler: h}
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { close(done); _ = s.Close() })
	return "http://" + l.Addr().String(), stalled
}

// A bucket that takes the copy's connection and never answers must not keep LINSTOR's
// controller stopped past the backup's deadline: the backup fails at its deadline and
// LINSTOR runs again.
func TestOffsiteBackupToAStalledBucketEndsAtItsDeadline(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := s3Bucket(t, "linstor-stall")
	endpoint, stalled := stallingProxy(t, srv)
	ns, cluster := backupCluster(t, srv, "stl", "stl-a", "10.64.0.1")
	replicas := func(g Gomega) int32 { return controllerReplicas(g, ns) }
	g.Eventually(replicas, timeout, tick).Should(Equal(int32(1)))
	target := backupTarget(ns, "stalling", srv, "linstor-stall")
	target.Spec.S3.Endpoint = endpoint
	g.Expect(env.Client.Create(ctx, target)).To(Succeed())
	availableTarget(g, ns, "stalling")

	// The bucket checks out (reads pass), then hangs on the copy's writes.
	stalled.Store(true)
	const deadline = 20 * time.Second
	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Name: "stalled", Namespace: ns},
		Spec: linstorv1.LinstorBackupSpec{ClusterRef: linstorv1.ClusterReference{Name: cluster.Name}, TargetRef: &linstorv1.BackupTargetReference{Name: "stalling"},
			Timeout: &metav1.Duration{Duration: deadline}}})).To(Succeed())
	g.Eventually(func(g Gomega) linstorv1.BackupPhase {
		return get(g, ns, "stalled", &linstorv1.LinstorBackup{}).Status.Phase
	}, timeout, tick).Should(Equal(linstorv1.BackupRunning))
	g.Eventually(func(g Gomega) {
		b := get(g, ns, "stalled", &linstorv1.LinstorBackup{})
		g.Expect(b.Status.Phase).To(Equal(linstorv1.BackupFailed), "still %s after its deadline: %s", b.Status.Phase, b.Status.Message)
		g.Expect(b.Status.Message).To(ContainSubstring("not completed within"))
	}, deadline+timeout, tick).Should(Succeed())
	g.Eventually(replicas, timeout, tick).Should(Equal(int32(1)), "LINSTOR stayed stopped")
}
