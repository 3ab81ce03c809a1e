package volumebackup

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/linstor-operator/linstor-operator/pkg/linstor"
)

// Whether the remote's backup list is read now, row by row: each rule alone, then
// which one wins when several hold.
func TestBucketListDue(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 2, 0, 0, 0, time.UTC)
	idle := FingerprintView([]linstor.ScheduledResource{{Resource: "pvc-a", Remote: "offsite", Schedule: "nightly", LastSnapTime: 1000, NextExecTime: 90000}})
	moved := FingerprintView([]linstor.ScheduledResource{{Resource: "pvc-a", Remote: "offsite", Schedule: "nightly", LastSnapTime: 1000, NextExecTime: -1}})
	for _, tc := range []struct {
		name string
		last ListRead
		now  time.Time
		view ViewFingerprint
		want ListDue
	}{
		{"never read (first pass, restart, new remote)", ListRead{}, t0, idle, DueNeverRead},
		{"never read, whatever the view", ListRead{}, t0, ViewFingerprint{}, DueNeverRead},
		{"read a poll ago, nothing moved", ListRead{At: t0, View: idle}, t0.Add(time.Minute), idle, NotDue},
		{"read just under the interval ago, nothing moved", ListRead{At: t0, View: idle}, t0.Add(BucketListInterval - time.Second), idle, NotDue},
		{"the view moved (a shipment started)", ListRead{At: t0, View: idle}, t0.Add(time.Minute), moved, DueViewChanged},
		{"the view moved back (the shipment ended)", ListRead{At: t0, View: moved}, t0.Add(time.Minute), idle, DueViewChanged},
		{"the view moved within the same second", ListRead{At: t0, View: idle}, t0, moved, DueViewChanged},
		{"the last list showed a shipment in progress", ListRead{At: t0, View: idle, Shipping: true}, t0.Add(time.Minute), idle, DueShipping},
		{"a shipment in progress, read again the same second", ListRead{At: t0, View: idle, Shipping: true}, t0, idle, DueShipping},
		{"the interval passed", ListRead{At: t0, View: idle}, t0.Add(BucketListInterval), idle, DueInterval},
		{"long past the interval", ListRead{At: t0, View: idle}, t0.Add(24 * time.Hour), idle, DueInterval},
		{"the clock went back", ListRead{At: t0, View: idle}, t0.Add(-time.Minute), idle, DueInterval},
		{"view moved and shipping: the view names it", ListRead{At: t0, View: idle, Shipping: true}, t0.Add(time.Minute), moved, DueViewChanged},
		{"view moved and the interval passed: the view names it", ListRead{At: t0, View: idle}, t0.Add(time.Hour), moved, DueViewChanged},
		{"shipping and the interval passed: shipping names it", ListRead{At: t0, View: idle, Shipping: true}, t0.Add(time.Hour), idle, DueShipping},
		{"a failure shown, read a poll ago", ListRead{At: t0, View: idle, Failing: true}, t0.Add(time.Minute), idle, NotDue},
		{"a failure shown, the recheck passed (a manual backup may have fixed it)", ListRead{At: t0, View: idle, Failing: true}, t0.Add(FailingRecheck), idle, DueFailing},
		{"a failure shown, the interval passed: the failure names it", ListRead{At: t0, View: idle, Failing: true}, t0.Add(time.Hour), idle, DueFailing},
		{"a failure shown and the view moved: the view names it", ListRead{At: t0, View: idle, Failing: true}, t0.Add(FailingRecheck), moved, DueViewChanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := BucketListDue(tc.last, tc.now, tc.view); got != tc.want {
				t.Errorf("BucketListDue = %q; want %q", got, tc.want)
			}
		})
	}
}

// What moves the fingerprint: the fields LINSTOR changes when a shipment starts or
// ends, and the set of scheduled resources; not the order of the rows, nor the rows
// LINSTOR does not schedule (Summarize reads no backup for them).
func TestFingerprintView(t *testing.T) {
	base := []linstor.ScheduledResource{
		{Resource: "pvc-a", Remote: "offsite", Schedule: "nightly", LastSnapTime: 1000, NextExecTime: 90000},
		{Resource: "pvc-b", Remote: "offsite", Schedule: "nightly", LastSnapTime: -1, NextExecTime: 90000},
		{Resource: "pvc-idle", Reason: "none set", LastSnapTime: -1, NextExecTime: -1},
	}
	fp := FingerprintView(base)
	changed := func(edit func(rows []linstor.ScheduledResource) []linstor.ScheduledResource) ViewFingerprint {
		return FingerprintView(edit(append([]linstor.ScheduledResource(nil), base...)))
	}
	for _, tc := range []struct {
		name  string
		edit  func(rows []linstor.ScheduledResource) []linstor.ScheduledResource
		moves bool
	}{
		{"nothing", func(r []linstor.ScheduledResource) []linstor.ScheduledResource { return r }, false},
		{"a shipment starts: last snapshot time", func(r []linstor.ScheduledResource) []linstor.ScheduledResource { r[1].LastSnapTime = 95000; return r }, true},
		{"a shipment starts: next execution -1", func(r []linstor.ScheduledResource) []linstor.ScheduledResource { r[0].NextExecTime = -1; return r }, true},
		{"an incremental one", func(r []linstor.ScheduledResource) []linstor.ScheduledResource { r[0].LastSnapInc = true; return r }, true},
		{"rescheduled as incremental", func(r []linstor.ScheduledResource) []linstor.ScheduledResource { r[0].NextExecInc = true; return r }, true},
		{"LINSTOR stops shipping a resource: a reason", func(r []linstor.ScheduledResource) []linstor.ScheduledResource { r[1].Reason = "undeployed"; return r }, true},
		{"a resource is scheduled", func(r []linstor.ScheduledResource) []linstor.ScheduledResource {
			return append(r, linstor.ScheduledResource{Resource: "pvc-c", Remote: "offsite", Schedule: "nightly", LastSnapTime: -1, NextExecTime: 90000})
		}, true},
		{"a resource is renamed in case only", func(r []linstor.ScheduledResource) []linstor.ScheduledResource { r[0].Resource = "PVC-A"; return r }, true},
		{"another remote", func(r []linstor.ScheduledResource) []linstor.ScheduledResource { r[0].Remote = "elsewhere"; return r }, true},
		{"the rows in another order", func(r []linstor.ScheduledResource) []linstor.ScheduledResource {
			r[0], r[1], r[2] = r[2], r[0], r[1]
			return r
		}, false},
		{"a resource LINSTOR does not schedule comes", func(r []linstor.ScheduledResource) []linstor.ScheduledResource {
			return append(r, linstor.ScheduledResource{Resource: "pvc-new", Reason: "none set", LastSnapTime: -1, NextExecTime: -1})
		}, false},
		{"one LINSTOR does not schedule goes", func(r []linstor.ScheduledResource) []linstor.ScheduledResource { return r[:2] }, false},
		{"its reason changes", func(r []linstor.ScheduledResource) []linstor.ScheduledResource { r[2].Reason = "undeployed"; return r }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := changed(tc.edit) != fp; got != tc.moves {
				t.Errorf("fingerprint moved: %v; want %v", got, tc.moves)
			}
		})
	}
	if FingerprintView(nil) != FingerprintView([]linstor.ScheduledResource{{Resource: "pvc-idle", Reason: "none set"}}) {
		t.Error("a view of unscheduled resources only differs from an empty one")
	}
}

// What is kept of a list: the backups Summarize reads for the scheduled rows, and
// whether one of them ships; another schedule's shipment to the same bucket is not
// ours to follow.
func TestKeepListed(t *testing.T) {
	rows := []linstor.ScheduledResource{
		{Resource: "pvc-a", Remote: "offsite", Schedule: "nightly", LastSnapTime: 1000, NextExecTime: 90000},
		{Resource: "pvc-idle", Reason: "none set"},
	}
	a := linstor.ShippedBackup{ID: "pvc-a_back_1", Resource: "PVC-A", StartTimestamp: ptr.To[int64](1000), Success: ptr.To(true), Shipping: ptr.To(false)}
	other := linstor.ShippedBackup{ID: "pvc-z_back_1", Resource: "pvc-z", Shipping: ptr.To(true)}
	idle := linstor.ShippedBackup{ID: "pvc-idle_back_1", Resource: "pvc-idle", Shipping: ptr.To(true)}
	kept, shipping := KeepListed(rows, []linstor.ShippedBackup{a, other, idle})
	if !reflect.DeepEqual(kept, []linstor.ShippedBackup{a}) || shipping {
		t.Fatalf("kept %+v shipping %v; want only pvc-a's backup, not shipping", kept, shipping)
	}
	if !reflect.DeepEqual(Summarize(rows, kept), Summarize(rows, []linstor.ShippedBackup{a, other, idle})) {
		t.Error("the summary of the kept list differs from the whole list's")
	}
	running := linstor.ShippedBackup{ID: "pvc-a_back_2", Resource: "pvc-a", Shipping: ptr.To(true)}
	if _, shipping := KeepListed(rows, []linstor.ShippedBackup{a, running}); !shipping {
		t.Error("pvc-a's backup in progress is not seen shipping")
	}
}

// Whatever the list, the kept part summarizes as the whole does, and a long history
// keeps at most four backups of a resource (its shipping ones aside).
func TestKeepListedSummarizesAsTheWholeList(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 35))
	for round := range 2000 {
		var rows []linstor.ScheduledResource
		for r := range 1 + rng.IntN(4) {
			row := linstor.ScheduledResource{Resource: fmt.Sprintf("pvc-%d", r), LastSnapTime: int64(rng.IntN(40)) * 20_000, NextExecTime: int64(rng.IntN(3)) * 60_000}
			switch rng.IntN(6) {
			case 0:
				row.Reason = "none set"
			case 1:
				row.LastSnapTime = -1
			case 2:
				row.NextExecTime = -1
			}
			rows = append(rows, row)
		}
		var backups []linstor.ShippedBackup
		for i := range rng.IntN(60) {
			b := linstor.ShippedBackup{ID: fmt.Sprintf("b%d", i), Resource: fmt.Sprintf("PVC-%d", rng.IntN(5))}
			if rng.IntN(8) > 0 {
				b.StartTimestamp = ptr.To(int64(rng.IntN(40)) * 20_000) // equal starts happen
			}
			switch rng.IntN(5) {
			case 0:
				b.Shipping, b.Success = ptr.To(true), ptr.To(false)
			case 1, 2:
				b.Shipping, b.Success = ptr.To(false), ptr.To(true)
			case 3:
				b.Shipping, b.Success = ptr.To(false), ptr.To(false)
				b.FailMessages = fmt.Sprintf("failure %d", i)
			}
			if rng.IntN(3) == 0 {
				b.BasedOn = "b0"
			}
			backups = append(backups, b)
		}
		kept, shipping := KeepListed(rows, backups)
		if want, got := Summarize(rows, backups), Summarize(rows, kept); !reflect.DeepEqual(want, got) {
			t.Fatalf("round %d: rows %+v\nbackups %+v\nkept %+v\nsummary of the kept list %+v\nwant %+v", round, rows, backups, kept, got, want)
		}
		wholeShipping := false
		for _, b := range backups {
			for _, r := range rows {
				wholeShipping = wholeShipping || r.Reason == "" && strings.EqualFold(r.Resource, b.Resource) && b.Shipping != nil && *b.Shipping
			}
		}
		if shipping != wholeShipping {
			t.Fatalf("round %d: shipping %v, but a scheduled backup of the whole list ships: %v", round, shipping, wholeShipping)
		}
	}

	// Ten thousand backups of one resource over the years: four at most are kept.
	rows := []linstor.ScheduledResource{{Resource: "pvc-a", LastSnapTime: 5_000_000, NextExecTime: 1}}
	var backups []linstor.ShippedBackup
	for i := range 10_000 {
		backups = append(backups, linstor.ShippedBackup{ID: fmt.Sprint(i), Resource: "pvc-a", StartTimestamp: ptr.To(int64(i) * 1000),
			Success: ptr.To(i%7 != 0), Shipping: ptr.To(false)})
	}
	kept, _ := KeepListed(rows, backups)
	if len(kept) > 4 {
		t.Errorf("%d of 10000 backups kept, want at most 4", len(kept))
	}
	if !reflect.DeepEqual(Summarize(rows, kept), Summarize(rows, backups)) {
		t.Error("the kept backups summarize differently")
	}
}

// A bucket of 100,000 backups of 1,000 scheduled resources (100 each, a daily schedule
// over three months): what stays in memory between reads.
func BenchmarkKeepListed(b *testing.B) {
	var rows []linstor.ScheduledResource
	var backups []linstor.ShippedBackup
	for r := range 1000 {
		name := fmt.Sprintf("pvc-%04d", r)
		rows = append(rows, linstor.ScheduledResource{Resource: name, LastSnapTime: 99 * 86_400_000, NextExecTime: 100 * 86_400_000})
		for d := range 100 {
			backups = append(backups, linstor.ShippedBackup{ID: fmt.Sprintf("%s_back_%d", name, d), Resource: name,
				StartTimestamp: ptr.To(int64(d) * 86_400_000), Success: ptr.To(d%10 != 3), Shipping: ptr.To(false)})
		}
	}
	var kept []linstor.ShippedBackup
	for b.Loop() {
		kept, _ = KeepListed(rows, backups)
	}
	b.ReportMetric(float64(len(backups)), "listed")
	b.ReportMetric(float64(len(kept)), "kept")
}
