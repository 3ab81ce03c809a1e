package upgrade

import (
	"fmt"
	"strings"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
)

// Release is what one operator release knows about LINSTOR versions.
type Release struct {
	// Target is the version the release pins and upgrades to.
	Target Version
	// Runnable are the versions it can deploy: the target, and the stepping stones it
	// carries images for. spec.version may pin any of them.
	Runnable []Version
	// Oldest is the oldest running version it upgrades from; older clusters must first
	// be upgraded by an older operator release.
	Oldest Version
	// Stones route upgrades through an intermediate version.
	Stones []Stone
}

// Stone: an upgrade to At or later from a version below Below goes through Via first.
type Stone struct {
	At, Below, Via Version
	Why            string
}

// Current is this operator release. Keep docs/upgrades.md in step with it. Its target
// is the LINSTOR version whose images the release pins (images.LinstorVersion), so the
// release's version has one home.
var Current = Release{
	Target: MustParse(images.LinstorVersion),
	// The newest patch of each older line it upgrades from, runnable so that a rollback
	// from a failed hop returns to it and a cluster can be pinned to it. No stepping stone
	// between them: LINSTOR's k8s backend runs every migration from the stored version to
	// its newest in one start, each its own committed step (DbK8sCrd.migrate; see
	// docs/linstor-schema-history.md §4), so 1.31.x -> 1.33.3 is one hop running 28, 29 and 30.
	Runnable: []Version{MustParse("1.31.3"), MustParse("1.32.3"), MustParse("1.33.2"), MustParse(images.LinstorVersion)},
	// The oldest LINSTOR it takes over and upgrades (a cluster deployed by other means);
	// older databases first need the migrations of an older LINSTOR.
	Oldest: MustParse("1.29.0"),
	Stones: []Stone{{
		At: MustParse("1.34.0"), Below: MustParse("1.33.2"), Via: MustParse("1.33.2"),
		Why: "LINSTOR 1.34 dropped the database migrations older than 1.21 and expects 1.33.2's",
	}},
}

// Action is what a decision asks for.
type Action string

const (
	// Install: nothing runs yet; deploy To.
	Install Action = "Install"
	// Stay: the running version is the wanted one.
	Stay Action = "Stay"
	// Upgrade: move from From to To now (To may be a stepping stone before Final).
	Upgrade Action = "Upgrade"
	// AwaitApproval: an upgrade is available, the Manual policy waits for the user.
	AwaitApproval Action = "AwaitApproval"
	// Refuse: the wanted change is not possible; Message says what to do.
	Refuse Action = "Refuse"
)

// Input is what the cluster asks for and runs.
type Input struct {
	// Running is the version LINSTOR reports ("" before the first install).
	Running string
	// Requested is spec.version ("" follows the release).
	Requested string
	Policy    linstorv1.UpgradePolicy
}

// Decision is the planner's answer.
type Decision struct {
	Action Action
	// From is the running version, To the next version to run, Final where the path ends.
	From, To, Final Version
	Message         string
}

// Decide plans the next version change.
func (r Release) Decide(in Input) Decision {
	final := r.Target
	if in.Requested != "" {
		v, err := Parse(in.Requested)
		if err != nil {
			return Decision{Action: Refuse, Message: "spec.version: " + err.Error()}
		}
		if !r.runs(v) {
			return Decision{Action: Refuse, Final: v, Message: fmt.Sprintf(
				"spec.version %s is not a version this operator release can run; it runs %s", v, r.runnable())}
		}
		final = v
	}
	if in.Running == "" {
		return Decision{Action: Install, To: final, Final: final, Message: "Installing LINSTOR " + final.String()}
	}
	running, err := Parse(in.Running)
	if err != nil {
		return Decision{Action: Refuse, Final: final, Message: "LINSTOR reports an unreadable version: " + err.Error()}
	}
	d := Decision{From: running, To: final, Final: final}
	switch c := running.Compare(final); {
	case c == 0:
		d.Action, d.Message = Stay, "LINSTOR "+running.String()+" is the wanted version"
		return d
	case c > 0:
		d.Action, d.To = Refuse, running
		d.Message = fmt.Sprintf("LINSTOR %s runs and %s is wanted, but LINSTOR cannot downgrade: its database was migrated. "+
			"Set spec.version to %s (or remove it), or restore a LinstorBackup taken at %s.", running, final, running, final)
		return d
	case running.Less(r.Oldest):
		d.Action, d.To = Refuse, running
		d.Message = fmt.Sprintf("LINSTOR %s is older than %s, the oldest version this operator release upgrades from: "+
			"upgrade it with an earlier operator release first", running, r.Oldest)
		return d
	}
	for _, s := range r.Stones {
		if !final.Less(s.At) && running.Less(s.Below) {
			if !r.runs(s.Via) {
				d.Action, d.To = Refuse, running
				d.Message = fmt.Sprintf("LINSTOR %s must pass through %s before %s (%s), and this operator release cannot run %s: "+
					"upgrade to %s with an earlier operator release first", running, s.Via, final, s.Why, s.Via, s.Via)
				return d
			}
			d.To = s.Via
			break
		}
	}
	if in.Policy == linstorv1.UpgradeManual && in.Requested == "" {
		d.Action = AwaitApproval
		d.Message = fmt.Sprintf("LINSTOR %s is available (running %s). The upgrade policy is Manual: set spec.version to %s to start it.",
			final, running, final)
		return d
	}
	d.Action = Upgrade
	d.Message = fmt.Sprintf("Upgrading LINSTOR from %s to %s", running, d.To)
	if d.To != final {
		d.Message += fmt.Sprintf(", on the way to %s", final)
	}
	return d
}

// Runs reports whether the release can deploy v.
func (r Release) Runs(v Version) bool { return r.runs(v) }

// RunnableList names the versions the release can deploy.
func (r Release) RunnableList() string { return r.runnable() }

func (r Release) runs(v Version) bool {
	for _, x := range r.Runnable {
		if x.Compare(v) == 0 {
			return true
		}
	}
	return false
}

func (r Release) runnable() string {
	s := make([]string, len(r.Runnable))
	for i, v := range r.Runnable {
		s[i] = v.String()
	}
	return strings.Join(s, ", ")
}
