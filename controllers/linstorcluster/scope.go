package linstorcluster

import (
	"net/http"

	lapi "github.com/LINBIT/golinstor/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/observer"
)

// scope carries one pass: the object, and what the phases observed. Phases record
// observations here; only status.go turns them into conditions.
type scope struct {
	cluster *linstorv1.LinstorCluster
	// stop ends the phase list early (a duplicate cluster must not act).
	stop bool

	duplicateOf string
	// outsideNamespace is the operator's namespace when the cluster is in another one.
	outsideNamespace string
	renderErr        error
	// missingAccounts are operand ServiceAccounts that do not exist (pods cannot start).
	missingAccounts []string
	applyErr        error
	// monitoring is status.monitoring as this pass decided it (nil: not decided).
	monitoring   *linstorv1.MonitoringStatus
	satelliteErr error

	// The database lifecycle's decision (pkg/lifecycle), saved by reconcileLifecycle:
	// stopController says why the LINSTOR controller must not run now ("" lets it
	// run); fenceCSI stops the CSI controller; upgrading: a version change is under
	// way; lifecycleProblem is what Degraded reports of it.
	stopController string
	fenceCSI       bool
	upgrading      bool
	// holdOperator: what is in progress must be finished by this operator release
	// (lifecycle.Output.HoldOperator); Upgradeable is False meanwhile.
	holdOperator bool
	// lostNodesRefused says which lost-node acknowledgements are not honoured, and why.
	lostNodesRefused string
	// lifecycleDecided: this pass took the decision (false when it failed or a
	// conflict sent it round again, and for a cluster that manages nothing).
	lifecycleDecided bool
	deployed         *linstorv1.DeployedVersions
	upgradeStatus    *linstorv1.UpgradeStatus
	restoreStatus    *linstorv1.RestoreStatus
	lifecycleProblem lifecycle.Problem

	tlsErr          error
	tlsMissing      bool              // a user-provided Secret is missing
	tlsFingerprints map[string]string // Secret name -> fingerprint, for rolling pods
	certificates    []linstorv1.CertificateStatus

	lc            *lapi.Client
	snap          *observer.Snapshot
	passphraseErr error
	linstorURL    string
	httpClient    *http.Client
	linstorErr    error
	// transient: LINSTOR did not answer, but for less than the grace period.
	transient      bool
	linstorVersion string
	propertiesErr  error

	// removalHeld: satellites wait to be evacuated or deleted (too many at once).
	removalHeld string

	satellitesTotal, satellitesReady int32
	totalKiB, freeKiB                int64
	poolsSeen                        bool

	// skippedDecided: reconcileSatellites looked at every node this pass; skippedNodes
	// (at most satellite.MaxSkippedNodes) and satellitesSkipped (all) are its result.
	skippedDecided    bool
	skippedNodes      []linstorv1.SkippedNode
	satellitesSkipped int32
}

func newScope(c *linstorv1.LinstorCluster) *scope { return &scope{cluster: c} }
