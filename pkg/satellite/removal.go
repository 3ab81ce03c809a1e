package satellite

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// MaxRemovalShare is the share of a cluster's satellites that may be evacuated or
// deleted at once without confirmation (LINSTOR's own auto-evict stops at 34%).
const MaxRemovalShare = 34

// Removal is one satellite's place in the removals under way.
type Removal struct {
	// Name is the satellite asking; Removing are all satellites of the cluster being
	// evacuated or deleted (Name among them); Total counts every satellite of it.
	Name     string
	Removing []string
	Total    int
	// MaxConcurrent is maxConcurrentEvacuations (nil: no limit of its own).
	MaxConcurrent *int32
	// Held are satellites of Removing that wait until their node's data is safe
	// (DeleteHeld, EvacuateHeld said so last). They take no place under MaxConcurrent:
	// a node that cannot go (a dead one not acknowledged lost) must not stop the others
	// for ever. They still count towards MaxRemovalShare.
	Held []string
	// Confirmed is the names.AnnotationConfirmRemoval value ("" when absent).
	Confirmed string
}

// Removing says whether sat counts among a cluster's removals under way (Removal.Removing).
// A deletion counts while it takes its time (Evacuate, Delete); a Retain deletion is over
// at once. A satellite no longer selected counts, Retain too while its node exists: it
// touches nothing in LINSTOR, but the satellite there stops, so LINSTOR loses the node
// (OFFLINE, its replicas unmanaged) until it is selected again. On a node that is gone
// nothing runs any more, so removing its Retain satellite stops nothing.
func Removing(sat *linstorv1.LinstorSatellite, selected, nodeExists bool) bool {
	retain := sat.Spec.DeletionPolicy == linstorv1.DeletionRetain
	if !sat.DeletionTimestamp.IsZero() {
		return !retain
	}
	return !selected && (!retain || nodeExists)
}

// RemovalHeld says why the satellite must not start its Evacuate or Delete now ("" when
// it may). A nodeSelector typo, nodes vanishing or satellites deleted by hand can ask
// to remove much of a cluster at once: more than MaxRemovalShare waits, all of it,
// until confirmed; within it, at most MaxConcurrent go at once, in name order, so the
// choice does not depend on which reconcile runs first. Others that wait for their
// data (Held) are passed over; the one asking is judged in its place, as it asks only
// once its own data is safe.
func RemovalHeld(r Removal) string {
	removing := append([]string(nil), r.Removing...)
	sort.Strings(removing)
	allowed := r.Total * MaxRemovalShare / 100
	if allowed < 1 {
		allowed = 1
	}
	confirmed, _ := strconv.Atoi(r.Confirmed)
	if len(removing) > allowed && len(removing) > confirmed {
		return fmt.Sprintf("%d of %d satellites are to be removed at once (%s), more than %d%% of the cluster: "+
			"nothing is removed until confirmed. If that is intended, annotate the LinstorCluster %s=%d; if not, fix the nodeSelector or the nodes",
			len(removing), r.Total, listed(removing), MaxRemovalShare, names.AnnotationConfirmRemoval, len(removing))
	}
	if r.MaxConcurrent == nil {
		return ""
	}
	held := map[string]bool{}
	for _, name := range r.Held {
		held[name] = true
	}
	ahead := 0
	for _, name := range removing {
		switch {
		case name == r.Name:
			if ahead < int(*r.MaxConcurrent) {
				return ""
			}
			return fmt.Sprintf("waiting: %d removals go first and maxConcurrentEvacuations is %d", ahead, *r.MaxConcurrent)
		case !held[name]:
			ahead++
		}
	}
	return ""
}

func listed(names []string) string {
	const shown = 5
	if len(names) <= shown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:shown], ", "), len(names)-shown)
}
