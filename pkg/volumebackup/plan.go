// Package volumebackup plans LINSTOR's own backup shipping of the volumes for a
// LinstorBackupSchedule's spec.volumes, as a pure function of what is wanted and what
// LINSTOR holds: the S3 remote (the LinstorBackupTarget's bucket), the LINSTOR schedule
// and where it is enabled. The controller reads LINSTOR, calls Plan, performs the
// actions in order; a steady state plans nothing, so it writes nothing.
package volumebackup

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	lapi "github.com/LINBIT/golinstor/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
)

// Kind of an action.
type Kind string

const (
	CreateRemote   Kind = "CreateRemote"
	ModifyRemote   Kind = "ModifyRemote"
	CreateSchedule Kind = "CreateSchedule"
	ModifySchedule Kind = "ModifySchedule"
	// Enable and Disable the schedule for Group ("" is every resource: the controller).
	Enable  Kind = "Enable"
	Disable Kind = "Disable"
	// ForeignRemote: LINSTOR has a remote of that name pointing elsewhere that the
	// operator never configured; it is left alone and nothing else is written.
	ForeignRemote Kind = "ForeignRemote"
)

// Action is one LINSTOR write.
type Action struct {
	Kind  Kind
	Group string
}

// Desired is what the schedule asks LINSTOR for.
type Desired struct {
	Remote          lapi.S3Remote
	CredentialsHash string
	Schedule        linstor.Schedule
	// Groups it is enabled for; empty: every resource (the controller).
	Groups []string
}

// Observed is what LINSTOR holds.
type Observed struct {
	// Remote is LINSTOR's S3 remote of that name (nil: none); LINSTOR returns neither
	// key, so RecordedHash (the status) says which credentials it was given.
	Remote       *lapi.S3Remote
	RecordedHash string
	Schedule     *linstor.Schedule
	// ControllerProps and GroupProps are the properties the schedule is enabled in.
	ControllerProps map[string]string
	GroupProps      map[string]map[string]string
}

var nameChars = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// Name is a Kubernetes name as LINSTOR accepts it for remotes and schedules (letters,
// digits, _ and -: a dot becomes _).
func Name(k8sName string) string { return nameChars.ReplaceAllString(k8sName, "_") }

// CredentialsParts are what a remote's credentials digest covers (offsite's
// KeyedDigest): the place and the credentials LINSTOR was given.
func CredentialsParts(r lapi.S3Remote) []string {
	return []string{r.Endpoint, r.Bucket, r.Region, r.AccessKey, r.SecretKey}
}

// DesiredSchedule is LINSTOR's schedule for spec.volumes.
func DesiredSchedule(name string, v *linstorv1.VolumeBackupSpec) linstor.Schedule {
	s := linstor.Schedule{Name: name, FullCron: v.FullSchedule, IncCron: v.IncrementalSchedule, KeepLocal: v.KeepLocal, KeepRemote: v.KeepRemote, OnFailure: "SKIP"}
	if v.Retries != nil {
		s.OnFailure, s.MaxRetries = "RETRY", v.Retries
	}
	return s
}

// Plan lists the writes that bring LINSTOR to d, in order: remote, schedule, enables,
// disables.
func Plan(d Desired, o Observed) []Action {
	var out []Action
	sameLocation := o.Remote != nil && strings.EqualFold(o.Remote.Endpoint, d.Remote.Endpoint) && o.Remote.Bucket == d.Remote.Bucket
	if o.Remote != nil && o.RecordedHash == "" && !sameLocation {
		// Modifying it would send the user's other schedules' backups elsewhere. A
		// restored database's remote (same endpoint and bucket) is taken over.
		return []Action{{Kind: ForeignRemote}}
	}
	switch {
	case o.Remote == nil:
		out = append(out, Action{Kind: CreateRemote})
	case !strings.EqualFold(o.Remote.Endpoint, d.Remote.Endpoint) || o.Remote.Bucket != d.Remote.Bucket || o.Remote.Region != d.Remote.Region ||
		o.RecordedHash != d.CredentialsHash:
		// use_path_style is not compared: LINSTOR always reads it back false.
		out = append(out, Action{Kind: ModifyRemote})
	}
	switch {
	case o.Schedule == nil:
		out = append(out, Action{Kind: CreateSchedule})
	case !sameSchedule(*o.Schedule, d.Schedule):
		out = append(out, Action{Kind: ModifySchedule})
	}
	prop := linstor.ScheduleEnabledProp(d.Remote.RemoteName, d.Schedule.Name)
	enabled := func(props map[string]string) bool { return props[prop] == "true" }
	if len(d.Groups) == 0 {
		if !enabled(o.ControllerProps) {
			out = append(out, Action{Kind: Enable})
		}
	} else {
		for _, g := range d.Groups {
			if !enabled(o.GroupProps[g]) {
				out = append(out, Action{Kind: Enable, Group: g})
			}
		}
		if enabled(o.ControllerProps) {
			out = append(out, Action{Kind: Disable})
		}
	}
	groups := make([]string, 0, len(o.GroupProps))
	for g := range o.GroupProps {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		if enabled(o.GroupProps[g]) && !slices.Contains(d.Groups, g) {
			out = append(out, Action{Kind: Disable, Group: g})
		}
	}
	return out
}

func sameSchedule(a, b linstor.Schedule) bool {
	eq := func(x, y *int32) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	onFailure := func(s string) string {
		if s == "" {
			return "SKIP"
		}
		return strings.ToUpper(s)
	}
	return a.FullCron == b.FullCron && a.IncCron == b.IncCron && eq(a.KeepLocal, b.KeepLocal) && eq(a.KeepRemote, b.KeepRemote) &&
		onFailure(a.OnFailure) == onFailure(b.OnFailure) && (onFailure(b.OnFailure) != "RETRY" || eq(a.MaxRetries, b.MaxRetries))
}

// Describe says an action in words, for Events.
func Describe(a Action, remote, schedule string) string {
	where := "every resource"
	if a.Group != "" {
		where = "resource group " + a.Group
	}
	switch a.Kind {
	case Enable, Disable:
		return fmt.Sprintf("%s LINSTOR schedule %s to remote %s for %s", strings.ToLower(string(a.Kind))+"d", schedule, remote, where)
	case CreateRemote, ModifyRemote:
		return fmt.Sprintf("%s LINSTOR S3 remote %s", strings.TrimSuffix(strings.ToLower(string(a.Kind)), "remote")+"d", remote)
	}
	return fmt.Sprintf("%s LINSTOR schedule %s", strings.TrimSuffix(strings.ToLower(string(a.Kind)), "schedule")+"d", schedule)
}
