// Package bench holds benchmarks that need a real API server and take minutes; they
// print numbers and assert nothing about time. Run them with make bench-backup.
package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
)

// TestBackupMemory measures the peak heap of backing up and restoring a LINSTOR
// database of BENCH_BACKUP_OBJECTS objects (default 100000) on a real API server: the
// streamed backup and restore the operator runs, and for comparison the earlier
// whole-database encoding; then the offsite backup to a real S3 server (versitygw) and
// the restore from it (backup_offsite_test.go).
func TestBackupMemory(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("BENCH_BACKUP_OBJECTS"))
	if os.Getenv("BENCH_BACKUP") == "" {
		t.Skip("a benchmark: run it with make bench-backup (BENCH_BACKUP=1, BENCH_BACKUP_OBJECTS=100000)")
	}
	if n == 0 {
		n = 100000
	}
	store := startStore(t) // first: a missing $VERSITYGW fails before minutes of set-up
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets, _ = filepath.Abs("../../bin/k8s/v1.34.2")
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	cfg.QPS, cfg.Burst = 2000, 4000
	if err := apiextensionsv1.AddToScheme(scheme.Scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// Two tables, as LINSTOR's: most rows are properties.
	tables := map[string]int{"propscontainers": n * 9 / 10, "resources": n - n*9/10}
	for plural := range tables {
		kind := strings.ToUpper(plural[:1]) + plural[1:]
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + "." + dbbackup.Group},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: dbbackup.Group, Scope: apiextensionsv1.ClusterScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, ListKind: kind + "List"},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1-33-3", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}}}},
		}
		if err := c.Create(ctx, crd); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second) // established
	start := time.Now()
	var created atomic.Int64
	var wg sync.WaitGroup
	work := make(chan [2]string, 1024)
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for job := range work {
				u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
					"prop_key": "/rsc/" + job[1] + "/DrbdOptions/Net/protocol", "prop_value": "C", "props_instance": "/RESOURCES/" + strings.ToUpper(job[1]),
				}}}
				u.SetGroupVersionKind(schema.GroupVersionKind{Group: dbbackup.Group, Version: "v1-33-3", Kind: strings.ToUpper(job[0][:1]) + job[0][1:]})
				u.SetName(job[1])
				for {
					if err := c.Create(ctx, u); err == nil {
						created.Add(1)
						break
					} else if !strings.Contains(err.Error(), "rate") {
						t.Error(err)
						break
					}
				}
			}
		}()
	}
	for plural, count := range tables {
		for i := 0; i < count; i++ {
			work <- [2]string{plural, fmt.Sprintf("%s-%07d", plural[:3], i)}
		}
	}
	close(work)
	wg.Wait()
	t.Logf("created %d objects in %s", created.Load(), time.Since(start).Round(time.Second))

	// Streamed backup: what the operator runs (chunks are hashed, as Secrets would be written).
	var encoded bytes.Buffer
	peak, took := measure(func() {
		h := sha256.New()
		counts, err := dbbackup.Write(ctx, c, io.MultiWriter(h, &encoded))
		if err != nil || counts.Objects != n {
			t.Fatalf("Write: %d objects, %v", counts.Objects, err)
		}
	})
	t.Logf("backup  (streamed):       %7.1f MiB peak heap over the baseline, %s, %d objects -> %.1f MiB encoded", mib(peak), took, n, mib(uint64(encoded.Len())))
	data := encoded.Bytes()
	encoded = bytes.Buffer{}

	// The earlier way, for comparison: the whole database in memory, then encoded.
	peakOld, tookOld := measure(func() {
		d, err := dbbackup.Take(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Encode(); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("backup  (whole, before):  %7.1f MiB peak heap over the baseline, %s", mib(peakOld), tookOld)

	// Streamed restore from the encoded backup (its chunks stand in for the Secrets).
	peakRestore, tookRestore := measure(func() {
		r, err := dbbackup.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if err := dbbackup.RestoreFrom(ctx, c, r); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("restore (streamed):       %7.1f MiB peak heap over the baseline (the %.1f MiB encoded backup included), %s", mib(peakRestore), mib(uint64(len(data))), tookRestore)
	peakDecode, _ := measure(func() {
		if _, err := dbbackup.Decode(data); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("restore (whole, before):  %7.1f MiB peak heap over the baseline just to decode it", mib(peakDecode))

	want := dbbackup.Checksum(data)
	data = nil
	benchOffsite(t, ctx, c, store, n, want)
}

// measure runs f and reports the peak heap in use above what was in use before.
func measure(f func()) (uint64, time.Duration) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	start := time.Now()
	f()
	took := time.Since(start).Round(100 * time.Millisecond)
	close(done)
	if p := peak.Load(); p > base {
		return p - base, took
	}
	return 0, took
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
