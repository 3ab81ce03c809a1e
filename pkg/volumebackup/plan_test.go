package volumebackup

import (
	"reflect"
	"testing"

	lapi "github.com/LINBIT/golinstor/client"
	"k8s.io/utils/ptr"

	"github.com/linstor-operator/linstor-operator/pkg/linstor"
)

func TestPlan(t *testing.T) {
	remote := lapi.S3Remote{RemoteName: "offsite", Endpoint: "https://s3.example.com", Bucket: "b", Region: "us-east-1", AccessKey: "a", SecretKey: "s"}
	hash := "digest-of-the-credentials"
	sched := linstor.Schedule{Name: "nightly", FullCron: "0 2 * * 0", IncCron: "0 2 * * 1-6", KeepRemote: ptr.To[int32](4), OnFailure: "SKIP"}
	prop := linstor.ScheduleEnabledProp("offsite", "nightly")
	on := map[string]string{prop: "true"}
	off := map[string]string{prop: "false"}
	seen := func(r lapi.S3Remote) *lapi.S3Remote { r.AccessKey, r.SecretKey = "", ""; return &r }
	steady := Observed{Remote: seen(remote), RecordedHash: hash, Schedule: &sched, ControllerProps: on}
	for _, tc := range []struct {
		name string
		d    Desired
		o    Observed
		want []Action
	}{
		{"nothing in LINSTOR: remote, schedule, enabled for every resource",
			Desired{Remote: remote, CredentialsHash: hash, Schedule: sched}, Observed{},
			[]Action{{Kind: CreateRemote}, {Kind: CreateSchedule}, {Kind: Enable}}},
		{"steady: nothing (LINSTOR returns no keys and path style false, and that is no change)",
			Desired{Remote: remote, CredentialsHash: hash, Schedule: sched}, steady, nil},
		{"a remote of that name the operator never configured points elsewhere: left alone, nothing written",
			Desired{Remote: remote, CredentialsHash: hash, Schedule: sched},
			Observed{Remote: func() *lapi.S3Remote { r := seen(remote); r.Bucket = "users-own"; return r }()},
			[]Action{{Kind: ForeignRemote}}},
		{"a restored database's remote (same place, no recorded credentials): given this cluster's credentials",
			Desired{Remote: remote, CredentialsHash: hash, Schedule: sched},
			Observed{Remote: seen(remote), Schedule: &sched, ControllerProps: on},
			[]Action{{Kind: ModifyRemote}}},
		{"the credentials Secret changed: the remote is modified",
			Desired{Remote: remote, CredentialsHash: "other", Schedule: sched}, steady, []Action{{Kind: ModifyRemote}}},
		{"the bucket changed: modified",
			Desired{Remote: func() lapi.S3Remote { r := remote; r.Bucket = "c"; return r }(), CredentialsHash: hash, Schedule: sched}, steady, []Action{{Kind: ModifyRemote}}},
		{"keepRemote changed: the schedule is modified",
			Desired{Remote: remote, CredentialsHash: hash, Schedule: func() linstor.Schedule { s := sched; s.KeepRemote = ptr.To[int32](5); return s }()}, steady,
			[]Action{{Kind: ModifySchedule}}},
		{"an empty on_failure reads as SKIP: no change",
			Desired{Remote: remote, CredentialsHash: hash, Schedule: sched},
			Observed{Remote: seen(remote), RecordedHash: hash, Schedule: func() *linstor.Schedule { s := sched; s.OnFailure = ""; return &s }(), ControllerProps: on}, nil},
		{"narrowed to two groups: enabled there, disabled on the controller",
			Desired{Remote: remote, CredentialsHash: hash, Schedule: sched, Groups: []string{"rg-a", "rg-b"}},
			Observed{Remote: seen(remote), RecordedHash: hash, Schedule: &sched, ControllerProps: on, GroupProps: map[string]map[string]string{"rg-a": on, "rg-b": off, "rg-c": nil}},
			[]Action{{Kind: Enable, Group: "rg-b"}, {Kind: Disable}}},
		{"a group left the list: disabled there only",
			Desired{Remote: remote, CredentialsHash: hash, Schedule: sched, Groups: []string{"rg-a"}},
			Observed{Remote: seen(remote), RecordedHash: hash, Schedule: &sched, GroupProps: map[string]map[string]string{"rg-a": on, "rg-b": on}},
			[]Action{{Kind: Disable, Group: "rg-b"}}},
		{"back to every resource: enabled on the controller, the groups disabled",
			Desired{Remote: remote, CredentialsHash: hash, Schedule: sched},
			Observed{Remote: seen(remote), RecordedHash: hash, Schedule: &sched, GroupProps: map[string]map[string]string{"rg-a": on}},
			[]Action{{Kind: Enable}, {Kind: Disable, Group: "rg-a"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Plan(tc.d, tc.o); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("plan %v; want %v", got, tc.want)
			}
		})
	}
}

func TestName(t *testing.T) {
	if got := Name("offsite.site-a"); got != "offsite_site-a" {
		t.Fatal(got)
	}
}
