package main

import (
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/test/envtest"
)

func entry(manager, sub, t string) mfEntry {
	return mfEntry{key: manager + "\x00Update\x00" + sub, manager: manager, subresource: sub, time: t}
}

func TestAttribute(t *testing.T) {
	const t1, t2 = "2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z"
	op, kcm := "manager", "kube-controller-manager"
	for _, tc := range []struct {
		name     string
		old, cur *objRecord
		want     string
	}{
		{"create", nil, &objRecord{mf: []mfEntry{entry(op, "", t1)}}, op},
		{"time of the writer changes", &objRecord{mf: []mfEntry{entry(op, "", t1), entry(kcm, "status", t1)}},
			&objRecord{mf: []mfEntry{entry(op, "", t1), entry(kcm, "status", t2)}, status: 1}, kcm},
		{"new entry", &objRecord{mf: []mfEntry{entry(kcm, "", t1)}},
			&objRecord{mf: []mfEntry{entry(kcm, "", t1), entry(op, "status", t1)}, status: 1}, op},
		{"same second, status only: latest status writer", &objRecord{mf: []mfEntry{entry(op, "status", t2), entry(kcm, "", t2)}},
			&objRecord{mf: []mfEntry{entry(op, "status", t2), entry(kcm, "", t2)}, status: 1}, op},
		{"same second, both wrote the object at once: unknown", &objRecord{mf: []mfEntry{entry(op, "", t2), entry(kcm, "", t2)}, rest: 1},
			&objRecord{mf: []mfEntry{entry(op, "", t2), entry(kcm, "", t2)}, rest: 2}, unknownWriter},
		{"removal only: latest writer of the object", &objRecord{mf: []mfEntry{entry(op, "", t2), entry(kcm, "", t1)}, rest: 1},
			&objRecord{mf: []mfEntry{entry(op, "", t2), entry(kcm, "", t1)}, rest: 2}, op},
	} {
		if got := attribute(tc.old, tc.cur); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestAuditTailCountsTheOperatorAcrossRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	line := func(ua, verb, res, sub string, code int, at time.Duration) string {
		return fmt.Sprintf(`{"kind":"Event","stage":"ResponseComplete","verb":%q,"userAgent":%q,"objectRef":{"resource":%q,"namespace":"linstor","apiGroup":"linstor.io","subresource":%q},"responseStatus":{"code":%d},"stageTimestamp":%q}`+"\n",
			verb, ua, res, sub, code, t0.Add(at).Format(time.RFC3339Nano))
	}
	if err := os.WriteFile(path, []byte(line("manager/v0.0.0 (linux/amd64)", "patch", "linstorsatellites", "status", 200, 500*time.Millisecond)+
		line("kube-controller-manager/v1.34.2", "update", "daemonsets", "status", 200, time.Second)), 0o644); err != nil {
		t.Fatal(err)
	}
	a := newAuditTail(path, "manager/", clock{t0: t0})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.run(ctx)
	if err := envtest.WaitFor(20*time.Millisecond, 5*time.Second, func() (bool, error) { return a.stats().Lines == 2, nil }); err != nil {
		t.Fatal(err)
	}
	// Rotate as lumberjack does: rename, then a new file; plus a line split in two writes.
	if err := os.Rename(path, filepath.Join(dir, "audit-old.log")); err != nil {
		t.Fatal(err)
	}
	l := line("manager/v0.0.0", "update", "linstorsatellites", "", 409, 1500*time.Millisecond)
	if err := os.WriteFile(path, []byte(l[:40]), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(l[40:] + line("manager/v0.0.0", "get", "linstorclusters", "", 200, 2500*time.Millisecond))
	f.Close()
	if err := envtest.WaitFor(20*time.Millisecond, 5*time.Second, func() (bool, error) { return a.stats().Lines == 4, nil }); err != nil {
		t.Fatal(err)
	}
	st := a.stats()
	if st.OperatorEvents != 3 || st.Unparsable != 0 || st.Rotations != 1 {
		t.Fatalf("stats %+v", st)
	}
	got := a.requests.sum(0, 2, nil)
	want := map[string]int{"patch|linstor.io|linstorsatellites|status|ok": 1, "update|linstor.io|linstorsatellites||failed": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("seconds [0,2): got %v, want %v", got, want)
	}
	if got := total(a.requests.sum(2, 3, nil)); got != 1 {
		t.Fatalf("second 2: %d requests", got)
	}
}

func TestSVGIsWellFormed(t *testing.T) {
	one := 3
	r := &results{Nodes: 10, ExpectedPools: 10, SteadyWindow: "30s", SamplesAppliedSecond: 2, SecondsToAvailable: &one,
		Phases: []phaseResult{{Name: "converge", FromSecond: 0, ToSecond: 8}, {Name: "steady", FromSecond: 8, ToSecond: 38}}}
	for s := 1; s <= 38; s++ {
		r.Timeline = append(r.Timeline, point{Second: s, Online: min(s, 10), Pools: min(s/2, 10), APIWrites: 40 - s, LinstorRequests: 3})
	}
	svg := convergenceSVG(r)
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		_, err := d.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("not XML: %v", err)
			}
			break
		}
	}
	for _, want := range []string{"satellites ONLINE", "storage pools", "operator API writes/s", "LINSTOR requests/s", "seconds since the operator started", "per second"} {
		if !strings.Contains(svg, want) {
			t.Errorf("no %q in the picture", want)
		}
	}
}

// The bench limits the operator as its pod is limited: the limit is the bundle's, the
// one OLM installs, and config/manager is where it is set.
func TestPodMemoryLimitIsTheBundles(t *testing.T) {
	root := envtest.RepoRoot()
	limit, err := podMemoryLimit(root)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "config", "manager", "manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("memory: %dMi", limit>>20)
	if limit%(1<<20) != 0 || !strings.Contains(string(raw), want) {
		t.Fatalf("the bundle's manager memory limit is %d bytes; config/manager/manager.yaml has no %q", limit, want)
	}
}

// A shell moves itself into the cgroup and becomes the binary, keeping its pid and
// the arguments (a plain directory stands in for the cgroup: its cgroup.procs gets the
// pid written).
func TestMemoryCgroupWrapRunsTheBinaryInside(t *testing.T) {
	cg := &memoryCgroup{dir: t.TempDir()}
	name, args := cg.wrap("/bin/sh", []string{"-c", `printf '%s|%s|%s' "$$" "$0" "$1"`, "a b", "c"})
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		t.Fatal(err)
	}
	procs, err := os.ReadFile(filepath.Join(cg.dir, "cgroup.procs"))
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Split(string(out), "|")
	if len(fields) != 3 || fields[0] != strings.TrimSpace(string(procs)) || fields[1] != "a b" || fields[2] != "c" {
		t.Fatalf("ran as %q with cgroup.procs %q: want the same pid and the arguments a b, c", out, procs)
	}
}
