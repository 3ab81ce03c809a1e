package api

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	linstorv1alpha1 "github.com/linstor-operator/linstor-operator/api/v1alpha1"
)

// BenchmarkConversionWebhook measures what a v1alpha1 client waits for: a GET and an
// UPDATE of a LinstorCluster stored as v1, each converted by the operator's /convert
// webhook (an UPDATE converts three times: the request, the admission call, storage).
// It reports the median and the 99th percentile in milliseconds; run it with
// `make bench-conversion`.
func BenchmarkConversionWebhook(b *testing.B) {
	for _, size := range []struct {
		name       string
		properties int
	}{{"typical", 4}, {"large", 200}} {
		b.Run(size.name, func(b *testing.B) {
			ctx := context.Background()
			ns := env.Namespace(b)
			cluster := benchCluster(ns, size.properties)
			if err := env.Client.Create(ctx, cluster); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = env.Client.Delete(ctx, cluster) })

			var gets, updates []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for { // a conflict (the operator wrote in between) is not a sample: read again
					var old linstorv1alpha1.LinstorCluster
					start := time.Now()
					if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cluster), &old); err != nil {
						b.Fatal(err)
					}
					get := time.Since(start)
					old.Spec.ControllerProperties["Aux/bench"] = fmt.Sprint(i)
					start = time.Now()
					err := env.Client.Update(ctx, &old)
					if apierrors.IsConflict(err) {
						continue
					}
					if err != nil {
						b.Fatal(err)
					}
					gets, updates = append(gets, get), append(updates, time.Since(start))
					break
				}
			}
			b.StopTimer()
			reportPercentiles(b, "get", gets)
			reportPercentiles(b, "update", updates)
		})
	}
}

func reportPercentiles(b *testing.B, what string, d []time.Duration) {
	slices.Sort(d)
	at := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(at(0.50), what+"-p50-ms")
	b.ReportMetric(at(0.99), what+"-p99-ms")
}

// benchCluster has v1-only fields, so every v1alpha1 read carries conversion data.
func benchCluster(ns string, properties int) *linstorv1.LinstorCluster {
	var props []linstorv1.Property
	for i := range properties {
		props = append(props, linstorv1.Property{Name: fmt.Sprintf("Aux/property-%03d", i), Value: fmt.Sprintf("value %d of a benchmark", i)})
	}
	return &linstorv1.LinstorCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: ns},
		Spec: linstorv1.LinstorClusterSpec{
			Controller: &linstorv1.ControllerSpec{
				ComponentSpec: linstorv1.ComponentSpec{
					Resources:   &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
					Tolerations: []corev1.Toleration{{Key: "storage", Operator: corev1.TolerationOpExists}},
					PodTemplate: &runtime.RawExtension{Raw: []byte(`{"metadata":{"labels":{"team":"storage"}}}`)},
				},
				Replicas: ptr.To[int32](2),
			},
			TLS:        &linstorv1.TLSSpec{API: &linstorv1.TLSConfig{Mode: linstorv1.TLSGenerated}},
			Properties: props,
			Upgrade:    &linstorv1.UpgradeSpec{Policy: linstorv1.UpgradeManual},
		},
	}
}
