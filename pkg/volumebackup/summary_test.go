package volumebackup

import (
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
)

func TestSummarizeOrderAndCounts(t *testing.T) {
	rows := []linstor.ScheduledResource{
		{Resource: "pvc-ok", LastSnapTime: 2000, NextExecTime: 90000},
		{Resource: "pvc-old", LastSnapTime: 1000, NextExecTime: 90000, LastSnapInc: true},
		{Resource: "pvc-new", LastSnapTime: -1, NextExecTime: 90000},
		{Resource: "pvc-running", LastSnapTime: 1500, NextExecTime: -1},
		{Resource: "pvc-failed", LastSnapTime: 120000, NextExecTime: 900000},
		{Resource: "pvc-diskless", Reason: "no diskful replica"},
	}
	backups := []linstor.ShippedBackup{
		shipped("pvc-ok", "pvc-ok_back_a", 2000, ""),
		shipped("pvc-old", "pvc-old_back_b", 1000, "pvc-old_back_a.meta"),
		shipped("pvc-running", "pvc-running_back_a", 1500, ""),
		shipped("pvc-failed", "pvc-failed_back_a", 60000, ""),
	}
	s := Summarize(rows, backups)
	if s.Scheduled != 5 || s.Shipped != 4 || s.NotScheduled != 1 || s.Failed != 1 {
		t.Fatalf("scheduled %d shipped %d not %d failed %d", s.Scheduled, s.Shipped, s.NotScheduled, s.Failed)
	}
	var order []string
	for _, r := range s.Resources {
		order = append(order, r.Name)
	}
	if want := []string{"pvc-diskless", "pvc-failed", "pvc-new", "pvc-old", "pvc-running", "pvc-ok"}; !reflect.DeepEqual(order, want) {
		t.Fatalf("order %v; want %v", order, want)
	}
	if r := s.Resources[4]; !r.Running || r.Next != nil {
		t.Errorf("running not kept: %+v", r)
	}
	if r := s.Resources[3]; !r.LastIncremental || r.LastBackup != "pvc-old_back_b" {
		t.Errorf("incremental or backup id not kept: %+v", r)
	}
	if got := FailedNames(s.Resources, 3); !reflect.DeepEqual(got, []string{"pvc-failed"}) {
		t.Errorf("failed names %v", got)
	}
}

// One resource, one view row, its backups in the list: what its status row says.
func TestSummarizeOneResource(t *testing.T) {
	const t0 = int64(1_700_000_000_000) // a shipment's start, ms
	long := strings.Repeat("é", linstorv1.MaxVolumeFailureMessage)
	for _, tc := range []struct {
		name    string
		row     linstor.ScheduledResource
		backups []linstor.ShippedBackup
		// want
		shipped, failed *int64
		running         bool
		failure         string
	}{
		{name: "shipped: the view's last start is the newest backup in the bucket",
			row:     linstor.ScheduledResource{LastSnapTime: t0, NextExecTime: t0 + 3600_000},
			backups: []linstor.ShippedBackup{shipped("r", "r_back_1", t0-86400_000, ""), shipped("r", "r_back_2", t0, "")},
			shipped: ptr.To(t0)},
		{name: "LINSTOR's two clocks: the backup started 800 ms before the view's last start (its id is to the second)",
			row:     linstor.ScheduledResource{LastSnapTime: t0 + 800, NextExecTime: t0 + 3600_000},
			backups: []linstor.ShippedBackup{shipped("r", "r_back_2", t0, "")},
			shipped: ptr.To(t0)},
		{name: "failed before anything reached the bucket: the last start is neither in the list nor shipping",
			row:     linstor.ScheduledResource{LastSnapTime: t0, NextExecTime: t0 + 3600_000},
			backups: []linstor.ShippedBackup{shipped("r", "r_back_1", t0-86400_000, "")},
			shipped: ptr.To(t0 - 86400_000), failed: ptr.To(t0), failure: "neither in the bucket nor shipping"},
		{name: "never shipped, the first shipment failed",
			row:    linstor.ScheduledResource{LastSnapTime: t0, NextExecTime: t0 + 60_000},
			failed: ptr.To(t0), failure: "started 2023-11-14T22:13:20Z"},
		{name: "LINSTOR lists it failed (volume objects without a meta file), without a message",
			row:     linstor.ScheduledResource{LastSnapTime: t0, NextExecTime: t0 + 3600_000},
			backups: []linstor.ShippedBackup{shipped("r", "r_back_1", t0-86400_000, ""), failedBackup("r", "r_back_2", t0, "")},
			shipped: ptr.To(t0 - 86400_000), failed: ptr.To(t0), failure: "LINSTOR lists backup r_back_2 as failed"},
		{name: "LINSTOR's fail_messages is its message, bounded",
			row:     linstor.ScheduledResource{LastSnapTime: t0, NextExecTime: t0 + 3600_000},
			backups: []linstor.ShippedBackup{failedBackup("r", "r_back_2", t0, long)},
			failed:  ptr.To(t0), failure: "éé"},
		{name: "a failure before the last good shipment is over",
			row:     linstor.ScheduledResource{LastSnapTime: t0, NextExecTime: t0 + 3600_000},
			backups: []linstor.ShippedBackup{failedBackup("r", "r_back_1f", t0-60_000, ""), shipped("r", "r_back_2", t0, "")},
			shipped: ptr.To(t0)},
		{name: "the view says it runs: a start not in the list yet is no failure (queued behind its base)",
			row:     linstor.ScheduledResource{LastSnapTime: t0, NextExecTime: -1},
			backups: []linstor.ShippedBackup{shipped("r", "r_back_1", t0-86400_000, "")},
			shipped: ptr.To(t0 - 86400_000), running: true},
		{name: "shipping in the list: running",
			row:     linstor.ScheduledResource{LastSnapTime: t0, NextExecTime: t0 + 3600_000},
			backups: []linstor.ShippedBackup{{ID: "r_back_2", Resource: "r", StartTimestamp: ptr.To(t0), Shipping: ptr.To(true)}},
			running: true},
		{name: "volume objects without a meta file and no local snapshot (success and shipping unset): neither shipped nor failed",
			row:     linstor.ScheduledResource{LastSnapTime: t0, NextExecTime: t0 + 3600_000},
			backups: []linstor.ShippedBackup{{ID: "r_back_2", Resource: "r", StartTimestamp: ptr.To(t0)}}},
		{name: "nothing started yet: waiting, not failed",
			row: linstor.ScheduledResource{LastSnapTime: -1, NextExecTime: t0}},
		{name: "another resource's backup is not this one's",
			row:     linstor.ScheduledResource{LastSnapTime: t0, NextExecTime: t0 + 3600_000},
			backups: []linstor.ShippedBackup{shipped("r2", "r2_back_2", t0, "")},
			failed:  ptr.To(t0), failure: "neither in the bucket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.row.Resource = "r"
			s := Summarize([]linstor.ScheduledResource{tc.row}, tc.backups)
			if len(s.Resources) != 1 {
				t.Fatalf("resources %+v", s.Resources)
			}
			r := s.Resources[0]
			if at := millis(r.LastShipped); !reflect.DeepEqual(at, tc.shipped) {
				t.Errorf("lastShipped %v; want %v", deref(at), deref(tc.shipped))
			}
			if (s.Shipped == 1) != (tc.shipped != nil) {
				t.Errorf("shipped count %d", s.Shipped)
			}
			if at := millis(r.LastFailed); !reflect.DeepEqual(at, tc.failed) {
				t.Errorf("lastFailed %v; want %v (%q)", deref(at), deref(tc.failed), r.LastFailure)
			}
			if (s.Failed == 1) != (tc.failed != nil) {
				t.Errorf("failed count %d", s.Failed)
			}
			if r.Running != tc.running {
				t.Errorf("running %v", r.Running)
			}
			if !strings.Contains(r.LastFailure, tc.failure) || (tc.failed == nil) != (r.LastFailure == "") {
				t.Errorf("lastFailure %q; want it to say %q", r.LastFailure, tc.failure)
			}
			if len(r.LastFailure) > linstorv1.MaxVolumeFailureMessage || !utf8.ValidString(r.LastFailure) {
				t.Errorf("lastFailure of %d bytes, valid UTF-8 %v", len(r.LastFailure), utf8.ValidString(r.LastFailure))
			}
		})
	}
}

func shipped(rsc, id string, start int64, basedOn string) linstor.ShippedBackup {
	return linstor.ShippedBackup{ID: id, Resource: rsc, StartTimestamp: ptr.To(start), FinishedTimestamp: ptr.To(start + 1000),
		Success: ptr.To(true), Shipping: ptr.To(false), BasedOn: basedOn}
}

func failedBackup(rsc, id string, start int64, messages string) linstor.ShippedBackup {
	return linstor.ShippedBackup{ID: id, Resource: rsc, StartTimestamp: ptr.To(start), Success: ptr.To(false), Shipping: ptr.To(false), FailMessages: messages}
}

func millis(t *metav1.Time) *int64 {
	if t == nil {
		return nil
	}
	return ptr.To(t.UnixMilli())
}

func deref(p *int64) any {
	if p == nil {
		return "unset"
	}
	return time.UnixMilli(*p).UTC()
}
