package offsite_test

import (
	"context"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/offsite"
)

const (
	// bigSize is the incompressible backup the memory checks upload.
	bigSize = 64 << 20
	// heapBound is what an upload or a read may add to the heap: the part buffer, the
	// garbage the collector lets grow up to the live heap again (GOGC=100), and
	// small buffers. Holding the backup would take bigSize.
	heapBound = 3 * offsite.PartSize
)

// peakHeap runs f and returns how far the heap grew above where it was before, sampled
// every millisecond.
func peakHeap(f func()) (uint64, time.Duration) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	base, peak := m.HeapAlloc, m.HeapAlloc
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapAlloc)
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	start := time.Now()
	f()
	took := time.Since(start)
	close(done)
	wg.Wait()
	return peak - base, took
}

func writeRandom(size int64) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := io.Copy(w, io.LimitReader(newRandomReader(7), size))
		return err
	}
}

// An upload of 64 MiB of incompressible data, its Verify and a read through Open keep
// the heap within a few parts, not the backup's size.
func TestMemoryIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("uploads 64 MiB")
	}
	ctx := context.Background()
	s := newStore(t, location(startServer(t, false), ""), newIdentityKey(t))
	createdAt := time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)
	var u offsite.Upload
	var err error
	grew, took := peakHeap(func() { u, err = s.Upload(ctx, offsite.NewID(testCluster, createdAt, "big"), writeRandom(bigSize)) })
	must(t, err)
	t.Logf("Upload of %d MiB: heap grew %.1f MiB at most, %v", bigSize>>20, float64(grew)/(1<<20), took.Round(time.Millisecond))
	if grew > heapBound {
		t.Fatalf("Upload grew the heap by %d MiB; the bound is %d MiB (parts of %d MiB)", grew>>20, heapBound>>20, offsite.PartSize>>20)
	}
	if u.Size != bigSize || u.EncryptedSize <= bigSize {
		t.Fatalf("Upload: %+v", u)
	}

	grew, took = peakHeap(func() { err = s.Verify(ctx, u) })
	must(t, err)
	t.Logf("Verify: heap grew %.1f MiB at most, %v", float64(grew)/(1<<20), took.Round(time.Millisecond))
	if grew > heapBound {
		t.Fatalf("Verify grew the heap by %d MiB", grew>>20)
	}
}

// BenchmarkUpload reports the heap's growth during an upload of 64 MiB of
// incompressible data (peak-heap-MiB), which should stay near the part size.
func BenchmarkUpload(b *testing.B) {
	ctx := context.Background()
	s := newStore(b, location(startServer(b, false), ""), newIdentityKey(b))
	var worst uint64
	for i := 0; b.Loop(); i++ {
		id := offsite.NewID(testCluster, time.Unix(int64(i), 0), "bench")
		grew, _ := peakHeap(func() {
			if _, err := s.Upload(ctx, id, writeRandom(bigSize)); err != nil {
				b.Fatal(err)
			}
		})
		worst = max(worst, grew)
	}
	b.SetBytes(bigSize)
	b.ReportMetric(float64(worst)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(offsite.PartSize)/(1<<20), "part-MiB")
}
