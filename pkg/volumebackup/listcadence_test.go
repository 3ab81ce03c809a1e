package volumebackup

import (
	"reflect"
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
