package linstorcluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	lapi "github.com/LINBIT/golinstor/client"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/linstorbackup"
	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
	"github.com/linstor-operator/linstor-operator/pkg/images"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/upgrade"
)

// DefaultUpgradePhaseTimeout bounds the phases that wait for LINSTOR to come up at the
// new version; past it the upgrade rolls back.
const DefaultUpgradePhaseTimeout = 10 * time.Minute

// AnnotationRetryUpgrade set to a version retries an upgrade to it that was rolled back.
const AnnotationRetryUpgrade = "linstor.io/retry-upgrade"

// reconcileVersion decides which LINSTOR version runs and drives upgrades through
// Preflight, Backup, Controller, Satellites and Verify, rolling back from the backup if
// the new version does not come up. The state lives in status.upgrade, so an operator
// restart resumes where it stopped.
func (r *Reconciler) reconcileVersion(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	if s.restoreStatus != nil && (s.restoreStatus.Phase == restoreRunning || s.restored) {
		return ctrl.Result{}, nil // the restore decides the version this pass
	}
	s.deployed = c.Status.Deployed.DeepCopy()
	s.upgradeStatus = c.Status.Upgrade.DeepCopy()
	if c.Spec.ExternalController != nil {
		// The controller's version is not ours to change: satellites follow it.
		s.deployed = &linstorv1.DeployedVersions{Satellites: or(c.Status.Version, images.LinstorVersion)}
		s.upgradeStatus = nil
		return ctrl.Result{}, nil
	}
	if st := s.upgradeStatus; st != nil && inProgress(st.Phase) {
		return r.advanceUpgrade(ctx, s)
	}

	running := c.Status.Version
	if running == "" && s.deployed != nil {
		running = s.deployed.Controller // deployed, not answering yet
	}
	var policy linstorv1.UpgradePolicy
	if c.Spec.Upgrade != nil {
		policy = c.Spec.Upgrade.Policy
	}
	d := r.release().Decide(upgrade.Input{Running: running, Requested: c.Spec.Version, Policy: policy})
	keep := func() {
		if s.deployed == nil {
			s.deployed = &linstorv1.DeployedVersions{Controller: running, Satellites: running}
		}
	}
	switch d.Action {
	case upgrade.Install, upgrade.Stay:
		s.deployed = &linstorv1.DeployedVersions{Controller: d.To.String(), Satellites: d.To.String()}
		if st := s.upgradeStatus; st != nil && st.Phase != linstorv1.UpgradeSucceeded {
			s.upgradeStatus = nil // the version question is settled
		}
	case upgrade.Refuse:
		keep()
		s.upgradeStatus = &linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeRefused, From: running, To: d.Final.String(), Message: d.Message}
		s.versionErr = d.Message
	case upgrade.AwaitApproval:
		keep()
		s.upgradeStatus = &linstorv1.UpgradeStatus{Phase: linstorv1.UpgradeAwaitingApproval, From: running, To: d.Final.String(), Message: d.Message}
	case upgrade.Upgrade:
		keep()
		if st := s.upgradeStatus; st != nil && st.Phase == linstorv1.UpgradeRolledBack && st.From == running && st.To == d.To.String() {
			if c.Annotations[AnnotationRetryUpgrade] != d.To.String() {
				s.versionErr = st.Message
				return ctrl.Result{}, nil // rolled back: retried only when asked to
			}
			// The request is used up by this retry: were it to fail too, the next retry
			// must be asked for again, never looping on its own.
			before := c.DeepCopy()
			delete(c.Annotations, AnnotationRetryUpgrade)
			if err := r.Client.Patch(ctx, c, client.MergeFrom(before)); err != nil {
				return ctrl.Result{}, fmt.Errorf("removing the %s annotation: %w", AnnotationRetryUpgrade, err)
			}
		}
		// The start is recorded before anything is checked or changed.
		now := metav1.Now()
		s.upgradeStatus = &linstorv1.UpgradeStatus{Phase: linstorv1.UpgradePreflight, From: running, To: d.To.String(),
			StartedAt: &now, PhaseStartedAt: &now, Message: d.Message}
		s.upgrading, s.deployed = true, versions(running, running)
		r.Recorder.Eventf(c, corev1.EventTypeNormal, "UpgradeStarted", "%s", d.Message)
		return next, nil
	}
	return ctrl.Result{}, nil
}

func inProgress(p linstorv1.UpgradePhase) bool {
	switch p {
	case linstorv1.UpgradePreflight, linstorv1.UpgradeBackup, linstorv1.UpgradeController,
		linstorv1.UpgradeSatellites, linstorv1.UpgradeVerify, linstorv1.UpgradeRollingBack:
		return true
	}
	return false
}

// advanceUpgrade runs the current phase and moves to the next when it is done.
func (r *Reconciler) advanceUpgrade(ctx context.Context, s *scope) (ctrl.Result, error) {
	st := s.upgradeStatus
	s.upgrading = true
	switch st.Phase {
	case linstorv1.UpgradePreflight:
		s.deployed = versions(st.From, st.From)
		return r.upgradePreflight(ctx, s)
	case linstorv1.UpgradeBackup:
		s.deployed = versions(st.From, st.From)
		return r.upgradeBackup(ctx, s)
	case linstorv1.UpgradeController:
		s.deployed = versions(st.To, st.From)
		return r.upgradeController(ctx, s)
	case linstorv1.UpgradeSatellites:
		s.deployed = versions(st.To, st.To)
		return r.upgradeSatellites(ctx, s)
	case linstorv1.UpgradeVerify:
		s.deployed = versions(st.To, st.To)
		return r.upgradeVerify(ctx, s)
	case linstorv1.UpgradeRollingBack:
		s.deployed = versions(st.From, st.From)
		return r.rollBack(ctx, s)
	}
	return ctrl.Result{}, nil
}

func versions(controller, satellites string) *linstorv1.DeployedVersions {
	return &linstorv1.DeployedVersions{Controller: controller, Satellites: satellites}
}

func (r *Reconciler) enterPhase(s *scope, phase linstorv1.UpgradePhase, msg string) {
	now := metav1.Now()
	s.upgradeStatus.Phase, s.upgradeStatus.PhaseStartedAt, s.upgradeStatus.Message = phase, &now, msg
	r.Recorder.Eventf(s.cluster, corev1.EventTypeNormal, "Upgrade"+string(phase), "%s", msg)
}

// phaseExpired reports a waiting phase that ran out of time.
func (r *Reconciler) phaseExpired(s *scope) bool {
	t := s.upgradeStatus.PhaseStartedAt
	return t != nil && time.Since(t.Time) > r.phaseTimeout()
}

func (r *Reconciler) phaseTimeout() time.Duration {
	if r.UpgradePhaseTimeout > 0 {
		return r.UpgradePhaseTimeout
	}
	return DefaultUpgradePhaseTimeout
}

const upgradePoll = 2 * time.Second

// next moves on to the following phase right after this pass's status is written.
var next = ctrl.Result{RequeueAfter: 100 * time.Millisecond}

// upgradePreflight: LINSTOR answers at the old version, every satellite is ONLINE, every
// replica healthy, and there is a way to back up. Until then the upgrade waits.
func (r *Reconciler) upgradePreflight(ctx context.Context, s *scope) (ctrl.Result, error) {
	st := s.upgradeStatus
	blocked := func(msg string) (ctrl.Result, error) {
		st.Message = "Preflight: waiting: " + msg
		return ctrl.Result{RequeueAfter: upgradePoll}, nil
	}
	conn, err := r.Linstor.Connect(ctx, s.cluster)
	if err != nil {
		return blocked(err.Error())
	}
	v, err := conn.Controller.GetVersion(ctx)
	if err != nil {
		return blocked("LINSTOR controller not reachable: " + err.Error())
	}
	if v.Version != st.From {
		return blocked(fmt.Sprintf("LINSTOR reports %s, expected %s", v.Version, st.From))
	}
	nodes, err := conn.Nodes.GetAll(ctx)
	if err != nil {
		return blocked(err.Error())
	}
	resources, err := conn.Resources.GetResourceView(ctx)
	if err != nil {
		return blocked(err.Error())
	}
	syncing := map[string]bool{}
	rds, err := conn.ResourceDefinitions.GetAll(ctx, lapi.RDGetAllRequest{})
	if err != nil {
		return blocked(err.Error())
	}
	for _, rd := range rds {
		if status, err := conn.ResourceDefinitions.SyncStatus(ctx, rd.Name); err == nil {
			syncing[rd.Name] = !status.SyncedOnAll
		}
	}
	if problems := upgrade.Problems(nodes, resources, syncing); len(problems) > 0 {
		return blocked(strings.Join(problems, "; "))
	}
	db := s.cluster.Spec.Database
	if linstorbackup.Unsupported(s.cluster) != "" && (db == nil || !db.ExternalBackupAcknowledged) {
		return blocked("the database is external: back it up, then set spec.database.externalBackupAcknowledged: true")
	}
	r.enterPhase(s, linstorv1.UpgradeBackup, fmt.Sprintf("Preflight passed; backing up the LINSTOR %s database", st.From))
	return next, nil
}

// upgradeBackup takes a LinstorBackup (the controller is stopped meanwhile) and waits
// for it. A failed backup ends the upgrade before anything changed.
func (r *Reconciler) upgradeBackup(ctx context.Context, s *scope) (ctrl.Result, error) {
	st := s.upgradeStatus
	if linstorbackup.Unsupported(s.cluster) != "" {
		r.enterPhase(s, linstorv1.UpgradeController, "External database backed up by the admin; starting the controller at "+st.To)
		return next, nil
	}
	if st.BackupName == "" {
		st.BackupName = fmt.Sprintf("%s-before-%s-%d", s.cluster.Name, strings.ReplaceAll(st.To, ".", "-"), st.StartedAt.Unix())
	}
	b := &linstorv1.LinstorBackup{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.cluster.Namespace, Name: st.BackupName}, b)
	if apierrors.IsNotFound(err) {
		// Not owned by the cluster: a backup must outlive what it backs up.
		b = &linstorv1.LinstorBackup{
			ObjectMeta: metav1.ObjectMeta{Name: st.BackupName, Namespace: s.cluster.Namespace,
				Labels: map[string]string{"linstor.io/upgrade-from": st.From, "linstor.io/upgrade-to": st.To}},
			Spec: linstorv1.LinstorBackupSpec{ClusterRef: linstorv1.ClusterReference{Name: s.cluster.Name}},
		}
		if err := r.Client.Create(ctx, b); err != nil {
			return ctrl.Result{}, err
		}
		s.stopController = "the pre-upgrade backup " + b.Name + " is being taken"
		return ctrl.Result{RequeueAfter: upgradePoll}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	switch b.Status.Phase {
	case linstorv1.BackupCompleted:
		r.enterPhase(s, linstorv1.UpgradeController, fmt.Sprintf("Backup %s completed (%s); starting the controller at %s, which migrates the database",
			b.Name, b.Status.Checksum, st.To))
		return next, nil
	case linstorv1.BackupFailed:
		st.Phase, st.Message = linstorv1.UpgradeRolledBack, fmt.Sprintf("The pre-upgrade backup failed (%s); nothing was changed, LINSTOR stays at %s", b.Status.Message, st.From)
		r.Recorder.Event(s.cluster, corev1.EventTypeWarning, "UpgradeAborted", st.Message)
		s.versionErr = st.Message
		return ctrl.Result{}, nil
	}
	s.stopController = "the pre-upgrade backup " + b.Name + " is being taken"
	st.Message = "Backup: " + b.Status.Message
	return ctrl.Result{RequeueAfter: upgradePoll}, nil
}

// upgradeController waits for the controller at the new version (it migrates the
// database on start); if it does not come up in time, the upgrade rolls back.
func (r *Reconciler) upgradeController(ctx context.Context, s *scope) (ctrl.Result, error) {
	st := s.upgradeStatus
	conn, err := r.Linstor.Connect(ctx, s.cluster)
	var reported string
	if err == nil {
		if v, err := conn.Controller.GetVersion(ctx); err == nil {
			reported = v.Version
		} else {
			st.Message = fmt.Sprintf("Controller: waiting for LINSTOR %s to answer: %v", st.To, err)
		}
	}
	if reported == st.To {
		r.enterPhase(s, linstorv1.UpgradeSatellites, fmt.Sprintf("Controller runs LINSTOR %s; moving the satellites", st.To))
		return next, nil
	}
	if r.phaseExpired(s) {
		return r.startRollback(s, fmt.Sprintf("the controller did not come up at %s within %s (%s)", st.To, r.phaseTimeout(), st.Message))
	}
	return ctrl.Result{RequeueAfter: upgradePoll}, nil
}

// upgradeSatellites waits until every satellite is ONLINE at the new version.
func (r *Reconciler) upgradeSatellites(ctx context.Context, s *scope) (ctrl.Result, error) {
	st := s.upgradeStatus
	var nodes []lapi.Node
	conn, err := r.Linstor.Connect(ctx, s.cluster)
	if err == nil {
		nodes, err = conn.Nodes.GetAll(ctx)
	}
	if err != nil {
		// An unreachable controller counts against the phase's time like a slow satellite.
		st.Message = "Satellites: cannot list LINSTOR nodes: " + err.Error()
	} else {
		var waiting []string
		for _, n := range nodes {
			if linstor.RunsSatellite(n) && n.ConnectionStatus != "ONLINE" {
				waiting = append(waiting, n.Name+" "+n.ConnectionStatus)
			}
		}
		if len(waiting) == 0 {
			r.enterPhase(s, linstorv1.UpgradeVerify, fmt.Sprintf("All %d satellites ONLINE at %s; verifying", len(nodes), st.To))
			return next, nil
		}
		st.Message = "Satellites: waiting for " + strings.Join(waiting, ", ")
	}
	if r.phaseExpired(s) {
		return r.startRollback(s, fmt.Sprintf("satellites did not come up at %s within %s (%s)", st.To, r.phaseTimeout(), st.Message))
	}
	return ctrl.Result{RequeueAfter: upgradePoll}, nil
}

// upgradeVerify waits until every replica is healthy again, then the upgrade is done.
func (r *Reconciler) upgradeVerify(ctx context.Context, s *scope) (ctrl.Result, error) {
	st := s.upgradeStatus
	var nodes []lapi.Node
	var resources []lapi.ResourceWithVolumes
	conn, err := r.Linstor.Connect(ctx, s.cluster)
	if err == nil {
		nodes, err = conn.Nodes.GetAll(ctx)
	}
	if err == nil {
		resources, err = conn.Resources.GetResourceView(ctx)
	}
	if err != nil {
		// No rollback from here: the satellites already run the new version.
		st.Message = "Verify: cannot read LINSTOR: " + err.Error()
		return ctrl.Result{RequeueAfter: upgradePoll}, nil
	}
	if problems := upgrade.Problems(nodes, resources, nil); len(problems) > 0 {
		st.Message = "Verify: waiting: " + strings.Join(problems, "; ")
		return ctrl.Result{RequeueAfter: upgradePoll}, nil
	}
	took := time.Since(st.StartedAt.Time).Round(time.Second)
	r.enterPhase(s, linstorv1.UpgradeSucceeded, fmt.Sprintf("Upgraded LINSTOR from %s to %s in %s; backup %s kept", st.From, st.To, took, or(st.BackupName, "(external)")))
	s.upgrading = false
	return next, nil
}

func (r *Reconciler) startRollback(s *scope, why string) (ctrl.Result, error) {
	st := s.upgradeStatus
	if st.BackupName == "" { // external database: nothing the operator can restore
		st.Phase, st.Message = linstorv1.UpgradeRolledBack, "The upgrade failed: "+why+". The database is external: restore it from your backup, then start LINSTOR "+st.From+"."
		s.versionErr = st.Message
		r.Recorder.Event(s.cluster, corev1.EventTypeWarning, "UpgradeFailed", st.Message)
		return ctrl.Result{}, nil
	}
	r.Recorder.Eventf(s.cluster, corev1.EventTypeWarning, "UpgradeFailed", "Rolling back to %s: %s", st.From, why)
	r.enterPhase(s, linstorv1.UpgradeRollingBack, "Rolling back: "+why)
	s.deployed = versions(st.From, st.From)
	s.stopController = "the database is being restored from " + st.BackupName
	return next, nil
}

// rollBack restores the backup with the controller stopped, then starts the old version.
func (r *Reconciler) rollBack(ctx context.Context, s *scope) (ctrl.Result, error) {
	st := s.upgradeStatus
	s.stopController = "the database is being restored from " + st.BackupName
	stopped, err := linstorbackup.ControllerStopped(ctx, r.Direct, s.cluster)
	if err != nil || !stopped {
		return ctrl.Result{RequeueAfter: upgradePoll}, err
	}
	b := &linstorv1.LinstorBackup{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.cluster.Namespace, Name: st.BackupName}, b); err != nil {
		return ctrl.Result{}, fmt.Errorf("reading backup %s: %w", st.BackupName, err)
	}
	// st.Message keeps the cause of the rollback; trouble restoring goes to the
	// Degraded condition, so the cause survives until it is reported.
	dump, _, err := linstorbackup.Load(ctx, r.Direct, b)
	if err != nil {
		s.versionErr = fmt.Sprintf("Rolling back to %s: cannot read backup %s, will retry: %v", st.From, st.BackupName, err)
		return ctrl.Result{RequeueAfter: upgradePoll}, nil
	}
	if err := dbbackup.Restore(ctx, r.Direct, dump); err != nil {
		s.versionErr = fmt.Sprintf("Rolling back to %s: restoring %s failed, will retry: %v", st.From, st.BackupName, err)
		return ctrl.Result{RequeueAfter: upgradePoll}, nil
	}
	reason := strings.TrimPrefix(st.Message, "Rolling back: ")
	st.Phase = linstorv1.UpgradeRolledBack
	st.Message = fmt.Sprintf("The upgrade to %s failed and was rolled back: the database was restored from %s and LINSTOR %s started again. Cause: %s. "+
		"Fix the cause, then annotate the LinstorCluster %s=%s to retry.", st.To, st.BackupName, st.From, reason, AnnotationRetryUpgrade, st.To)
	r.Recorder.Event(s.cluster, corev1.EventTypeWarning, "UpgradeRolledBack", st.Message)
	s.versionErr = st.Message
	s.stopController = ""
	s.upgrading = false
	return next, nil
}

func (r *Reconciler) release() upgrade.Release {
	if r.Release != nil {
		return *r.Release
	}
	return upgrade.Current
}
