package linstorcluster

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/linstor-operator/linstor-operator/controllers/reconciler"
)

// An ended job's outcome belongs to the object that started it: a LinstorCluster
// recreated under the same name starts its own job instead of taking a "done".
func TestRestoreJobsReportOnlyToTheObjectThatStartedThem(t *testing.T) {
	var jobs restoreJobs
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = jobs.run(ctx) }()
	for !jobs.ctxReady() {
		time.Sleep(time.Millisecond)
	}
	key := types.NamespacedName{Namespace: "linstor", Name: "linstor"}
	var runs atomic.Int32
	run := func(context.Context) (string, error) { runs.Add(1); return "ok", nil }
	waitDone := func(uid types.UID) (bool, string) {
		for i := 0; i < 1000; i++ {
			if done, checked, _ := jobs.poll(key, uid, "RestoreDatabase/a", "a", true, run); done {
				return true, checked
			}
			time.Sleep(time.Millisecond)
		}
		return false, ""
	}
	if done, _, _ := jobs.poll(key, "uid-old", "RestoreDatabase/a", "a", true, run); done {
		t.Fatal("a job started now cannot be done")
	}
	for runs.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond) // ended, not reported: the old object was deleted
	if !jobs.known(key, "uid-old", "RestoreDatabase/a") || jobs.known(key, "uid-new", "RestoreDatabase/a") {
		t.Fatal("known must name the object that started the job only")
	}
	if done, _ := waitDone("uid-new"); !done {
		t.Fatal("the new object's job never ended")
	}
	if got := runs.Load(); got != 2 {
		t.Fatalf("the recreated object got the old job's outcome: %d runs, want 2", got)
	}
	// forgetEnded drops an ended, unreported job.
	jobs.poll(key, "uid-third", "RestoreDatabase/a", "a", true, run)
	for runs.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond)
	jobs.forgetEnded(key)
	if jobs.known(key, "uid-third", "RestoreDatabase/a") {
		t.Fatal("forgetEnded kept an ended job")
	}
}

// Each freshness proof replaces the previous stamp: a restore retried for days keeps a
// bounded message.
func TestStampedReplacesThePreviousStamp(t *testing.T) {
	msg := "Replacing the database with nightly; LINSTOR stays stopped until it is complete"
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	once := stamped(msg, t0)
	again := stamped(stamped(once, t0.Add(time.Hour)), t0)
	if once != again || strings.Count(again, jobStamp) != 1 || !strings.HasPrefix(again, msg) {
		t.Fatalf("stamped twice %q, once %q", again, once)
	}
	long := strings.Repeat("x", 40000)
	if got := stamped(long, t0); len(got) > len(reconciler.Bound(long+jobStamp+"2026-11-27T10:00:00Z)")) {
		t.Fatalf("unbounded: %d", len(got))
	}
}
