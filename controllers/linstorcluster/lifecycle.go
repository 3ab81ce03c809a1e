package linstorcluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/linstorstate"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	lapi "github.com/LINBIT/golinstor/client"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/reconciler"
	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
	"github.com/linstor-operator/linstor-operator/pkg/render"
	"github.com/linstor-operator/linstor-operator/pkg/upgrade"
)

// AnnotationRetryUpgrade set to a version retries an upgrade to it that was rolled back.
const AnnotationRetryUpgrade = names.AnnotationRetryUpgrade

// errLifecycleConflict: the LinstorCluster changed since it was read; the decision is
// taken again on fresh data rather than acting on a stale one.
var errLifecycleConflict = errors.New("the LinstorCluster changed while its database lifecycle was decided; deciding again")

// reconcileLifecycle decides the database lifecycle (restore, version, upgrade,
// rollback, backup gate) with pkg/lifecycle: observe what it needs, decide, save the
// new state with an optimistic lock, then carry out the actions. Two operators, or
// one reading a stale cache, can never both act on the same state: the second save
// conflicts.
func (r *Reconciler) reconcileLifecycle(ctx context.Context, s *scope) (_ ctrl.Result, reterr error) {
	log := ctrl.LoggerFrom(ctx)
	defer func() {
		if reterr != nil {
			// Without a decision nothing may be applied: the workloads stay exactly as
			// they are (a stopped controller stays stopped) until the next pass.
			s.stop = true
		}
	}()
	c := s.cluster
	spec := r.lifecycleSpec(c)
	state := lifecycle.State{Deployed: c.Status.Deployed, Upgrade: c.Status.Upgrade, Restore: c.Status.Restore, LostNodes: c.Status.LostNodes}.DeepCopy()
	// Which nodes are acknowledged as lost is decided first: the upgrade's checks are
	// observed without them.
	lost, err := r.decideLostNodes(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	decided := state.DeepCopy()
	decided.LostNodes = lost.Lost
	obs, err := r.observeLifecycle(ctx, c, lifecycle.Needs(spec, decided), lifecycle.LostNames(decided.LostNodes))
	if err != nil {
		return ctrl.Result{}, err
	}
	in := lifecycle.Input{Spec: spec, State: decided, Observed: obs, Release: r.release(), Now: time.Now()}
	out := lifecycle.Step(in)
	out.Events = append(lost.Events, out.Events...)
	s.lostNodesRefused = r.refusedLostNodes(c, lost)
	// The status write does not wake this controller: a step that moved asks for the
	// next pass itself.
	moved := !equalState(state, out.State) || out.VersionStale
	if err := r.saveLifecycle(ctx, c, state, out); err != nil {
		return ctrl.Result{}, err
	}
	// Before any job is polled: a backup the saved state may restore is protected while
	// the passes only wait for a job (a confirmed switch to another backup, say).
	if err := r.protectBackups(ctx, c, out.State); err != nil {
		return ctrl.Result{}, err
	}
	for _, a := range out.Actions {
		log.V(1).Info("lifecycle action", "action", a.Kind, "backup", a.Backup, "annotation", a.Annotation)
		if a.Kind != lifecycle.RestoreDatabase && a.Kind != lifecycle.CheckRestore {
			if err := r.act(ctx, c, a); err != nil {
				return ctrl.Result{}, err
			}
			continue
		}
		// Checks and restores run on their own (minutes on a large database) and the
		// passes only look at them, so a reconcile never blocks; an operator restart runs
		// them again from the saved state (they are idempotent).
		done, checked, err := r.databaseJob(ctx, c, a)
		if !done {
			if err != nil {
				return ctrl.Result{}, err // nothing started: decided again on fresh data
			}
			r.useLifecycle(s, out)
			return ctrl.Result{RequeueAfter: lifecycle.Poll}, nil
		}
		restored := a.Kind == lifecycle.RestoreDatabase && err == nil
		if restored {
			// The marker goes before the outcome is saved: a marker present means the
			// replacement is not known complete (a crash in between restores again, with
			// LINSTOR still stopped).
			if err := r.clearMarker(ctx, c); err != nil {
				return ctrl.Result{}, err
			}
		}
		// The outcome is a transition of its own, saved like any other.
		a.Checked = checked
		before := out.State
		out = lifecycle.AfterAction(in, out.State, a, err)
		if err := r.saveLifecycle(ctx, c, before, out); err != nil {
			if restored {
				// Not saved (a conflict, the object being deleted): the marker is put back,
				// so nothing starts on this database without the restore being redone.
				if mErr := r.writeMarker(ctx, r.Direct, c, jobMarker(c, a.Backup)); mErr != nil {
					return ctrl.Result{}, errors.Join(err, mErr)
				}
			}
			return ctrl.Result{}, err
		}
	}
	if err := r.protectBackups(ctx, c, out.State); err != nil {
		return ctrl.Result{}, err
	}
	r.useLifecycle(s, out)
	if out.Upgrading || out.StopController != "" {
		log.V(1).Info("lifecycle", "stopController", out.StopController, "fenceCSI", out.FenceCSI, "requeue", out.Requeue)
	}
	if moved && (out.Requeue == 0 || out.Requeue > time.Second) {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	return ctrl.Result{RequeueAfter: out.Requeue}, nil
}

func (r *Reconciler) lifecycleSpec(c *linstorv1.LinstorCluster) lifecycle.Spec {
	spec := lifecycle.Spec{
		ClusterName: c.Name, ClusterUID: string(c.UID), Requested: c.Spec.Version, Reported: c.Status.Version,
		ConfirmRestore: c.Annotations[names.AnnotationConfirmRestore], RetryUpgrade: c.Annotations[names.AnnotationRetryUpgrade],
		ExternalController: c.Spec.ExternalController != nil, ExternalDatabase: dbbackup.Unsupported(c),
		PhaseTimeout: r.UpgradePhaseTimeout,
	}
	spec.ConfirmDatabaseRestored = c.Annotations[names.AnnotationConfirmDatabaseRestored]
	if r.Images.Operator() == "" {
		spec.RehearsalUnavailable = render.ErrNoOperatorImage.Error()
	}
	if u := c.Spec.Upgrade; u != nil {
		spec.Policy = u.Policy
		spec.RehearsalOff = u.Rehearsal != nil && !*u.Rehearsal
		if u.PhaseTimeout != nil {
			spec.PhaseTimeout = u.PhaseTimeout.Duration
		}
	}
	if db := c.Spec.Database; db != nil {
		spec.RestoreFrom, spec.ExternalBackupAcknowledged = db.RestoreFrom, db.ExternalBackupAcknowledged
	}
	return spec
}

// decideLostNodes looks at the nodes the acknowledge-lost-nodes annotation names, and
// those status.lostNodes records, and decides which are honoured (lifecycle.LostNodes).
// LINSTOR that does not answer leaves the recorded ones as they are.
func (r *Reconciler) decideLostNodes(ctx context.Context, c *linstorv1.LinstorCluster) (lifecycle.LostNodesOutput, error) {
	annotation := c.Annotations[names.AnnotationAcknowledgeLostNodes]
	in := lifecycle.LostNodesInput{Annotation: annotation, Recorded: c.Status.LostNodes, Now: time.Now()}
	if !lifecycle.NeedsLostNodes(annotation, c.Status.LostNodes) {
		return lifecycle.LostNodes(in), nil
	}
	acknowledged := lifecycle.AcknowledgedNames(annotation)
	for _, l := range c.Status.LostNodes {
		acknowledged = append(acknowledged, l.Name)
	}
	var kubeNodes corev1.NodeList
	if err := r.Client.List(ctx, &kubeNodes); err != nil {
		return lifecycle.LostNodesOutput{}, fmt.Errorf("listing nodes: %w", err)
	}
	var pods corev1.PodList
	if err := r.Direct.List(ctx, &pods, client.InNamespace(c.Namespace),
		client.MatchingLabels{names.LabelName: names.SatelliteComponent, names.LabelInstance: c.Name}); err != nil {
		return lifecycle.LostNodesOutput{}, fmt.Errorf("listing satellite pods: %w", err)
	}
	conn, err := r.Linstor.Connect(ctx, c)
	if err != nil {
		return lifecycle.LostNodes(in), nil
	}
	linstorNodes, err := conn.Nodes.GetAll(ctx)
	if err != nil {
		return lifecycle.LostNodes(in), nil
	}
	// What the other replicas' DRBD reports of its connection to a named node: an
	// OFFLINE satellite says nothing about whether the machine's DRBD still runs.
	resources, err := conn.Resources.GetResourceView(ctx)
	if err != nil {
		return lifecycle.LostNodes(in), nil
	}
	in.Seen = map[string]lifecycle.SeenNode{}
	for _, name := range acknowledged {
		key := strings.ToLower(name)
		seen := lifecycle.SeenNode{Name: name}
		for _, n := range linstorNodes {
			if strings.EqualFold(n.Name, name) {
				seen.InLinstor, seen.Name, seen.ConnectionStatus = true, n.Name, n.ConnectionStatus
			}
		}
		for _, n := range kubeNodes.Items {
			seen.KubernetesNode = seen.KubernetesNode || strings.EqualFold(n.Name, name)
		}
		seen.SatellitePod = lifecycle.SatellitePodState(pods.Items, name)
		seen.DrbdConnected = lifecycle.DrbdConnectedTo(resources, name)
		in.Seen[key] = seen
	}
	return lifecycle.LostNodes(in), nil
}

// refusedLostNodes is what the status says of acknowledgements that are not honoured;
// a Warning Event says it once per change (this process remembers what it said).
func (r *Reconciler) refusedLostNodes(c *linstorv1.LinstorCluster, lost lifecycle.LostNodesOutput) string {
	if lost.Unknown {
		said, _ := r.lostNodesSaid.Load(c.UID)
		msg, _ := said.(string)
		return msg // not looked at: what was said last stands
	}
	if len(lost.NotHonoured) == 0 {
		r.lostNodesSaid.Delete(c.UID)
		return ""
	}
	msg := fmt.Sprintf("%s is not honoured for %s", names.AnnotationAcknowledgeLostNodes, strings.Join(lost.NotHonoured, "; "))
	if said, ok := r.lostNodesSaid.Load(c.UID); !ok || said != msg {
		r.lostNodesSaid.Store(c.UID, msg)
		r.Recorder.Event(c, corev1.EventTypeWarning, "LostNodeNotAcknowledged", msg)
	}
	return msg
}

// observeLifecycle reads what Needs asks for; the upgrade's checks leave out the nodes
// acknowledged as lost. LINSTOR that does not answer is an observation, not an error.
func (r *Reconciler) observeLifecycle(ctx context.Context, c *linstorv1.LinstorCluster, need lifecycle.Need, lost map[string]bool) (lifecycle.Observed, error) {
	var obs lifecycle.Observed
	// LinstorBackups are read from the API server, not the cache: whether the LINSTOR
	// controller may start depends on them, and a backup created a moment ago (the
	// upgrade's own, by the previous pass) may not be in the cache yet.
	active, running, err := activeAndRunning(ctx, r.Direct, c)
	if err != nil {
		return obs, err
	}
	obs.ActiveBackup, obs.RunningBackup = active, running
	if need.Marker {
		m, err := r.readMarker(ctx, c)
		if err != nil {
			return obs, err
		}
		obs.Marker = m
	}
	if need.Linstor {
		obs.Linstor = r.observeLinstor(ctx, c, need, lost)
	}
	for _, b := range []struct {
		name string
		into **lifecycle.Backup
	}{{need.UpgradeBackup, &obs.UpgradeBackup}, {need.RestoreBackup, &obs.RestoreBackup}} {
		if b.name == "" {
			continue
		}
		got, err := r.observeBackup(ctx, c.Namespace, b.name)
		if err != nil {
			return obs, err
		}
		*b.into = got
	}
	if need.DatabaseEmpty {
		empty, err := dbbackup.Empty(ctx, r.Direct)
		if err != nil {
			return obs, err
		}
		obs.DatabaseEmpty = &empty
		if !empty {
			if obs.DatabaseSchema, err = dbbackup.StoredSchema(ctx, r.Direct); err != nil {
				return obs, err
			}
		}
	}
	if need.Rehearsal != "" {
		rh, err := r.observeRehearsal(ctx, c.Namespace, need.Rehearsal)
		if err != nil {
			return obs, err
		}
		obs.Rehearsal = rh
	}
	if need.ControllerStopped {
		stopped, err := dbbackup.ControllerStopped(ctx, r.Direct, c)
		if err != nil {
			return obs, err
		}
		obs.ControllerStopped = stopped
	}
	return obs, nil
}

func (r *Reconciler) observeLinstor(ctx context.Context, c *linstorv1.LinstorCluster, need lifecycle.Need, lost map[string]bool) *lifecycle.Linstor {
	l := &lifecycle.Linstor{}
	conn, err := r.Linstor.Connect(ctx, c)
	if err != nil {
		l.Err = err.Error()
		return l
	}
	v, err := conn.Controller.GetVersion(ctx)
	if err != nil {
		l.Err = err.Error()
		return l
	}
	l.Version = v.Version
	if !need.Problems && !need.Waiting {
		return l
	}
	nodes, err := conn.Nodes.GetAll(ctx)
	if err != nil {
		l.Err = err.Error()
		return l
	}
	// A node acknowledged as lost has no satellite to wait for: the Satellites phase
	// does not wait for it either, or every upgrade would roll back on it.
	nodes, _, _ = lifecycle.WithoutLostNodes(lost, nodes, nil, nil)
	for _, n := range nodes {
		if linstorstate.RunsSatellite(n) && n.ConnectionStatus != "ONLINE" {
			l.Waiting = append(l.Waiting, n.Name+" "+n.ConnectionStatus)
		}
	}
	if !need.Problems {
		return l
	}
	resources, err := conn.Resources.GetResourceView(ctx)
	if err != nil {
		l.Err = err.Error()
		return l
	}
	syncing := map[string]bool{}
	rds, err := conn.ResourceDefinitions.GetAll(ctx, lapi.RDGetAllRequest{})
	if err != nil {
		l.Err = err.Error()
		return l
	}
	for _, rd := range rds {
		if status, err := conn.ResourceDefinitions.SyncStatus(ctx, rd.Name); err == nil {
			syncing[rd.Name] = !status.SyncedOnAll
		}
	}
	_, resources, syncing = lifecycle.WithoutLostNodes(lost, nil, resources, syncing)
	l.Problems = linstorstate.UpgradeProblems(nodes, resources, syncing)
	// A satellite whose DRBD loader cannot be rendered (no Driver Toolkit for its RHCOS
	// version) runs as it is, ONLINE, but would not be rolled in the Satellites phase:
	// the upgrade would migrate the controller, time out and roll back.
	var sats linstorv1.LinstorSatelliteList
	if err := r.Client.List(ctx, &sats, client.InNamespace(c.Namespace), client.MatchingLabels{names.LabelCluster: c.Name}); err != nil {
		l.Err = err.Error()
		return l
	}
	for _, sat := range sats.Items {
		if d := meta.FindStatusCondition(sat.Status.Conditions, linstorv1.ConditionDegraded); d != nil && d.Status == metav1.ConditionTrue &&
			d.Reason == linstorv1.ReasonDriverToolkitMissing && !lost[sat.Name] {
			l.Problems = append(l.Problems, "satellite "+sat.Name+" cannot be upgraded: "+d.Message)
		}
	}
	return l
}

// observeBackup reads a LinstorBackup from the API server: a cancel completes, and the
// controller starts, only on what is there now (see observeLifecycle).
func (r *Reconciler) observeBackup(ctx context.Context, namespace, name string) (*lifecycle.Backup, error) {
	b := &linstorv1.LinstorBackup{}
	err := r.Direct.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, b)
	switch {
	case apierrors.IsNotFound(err):
		return &lifecycle.Backup{Name: name}, nil
	case err != nil:
		return nil, err
	}
	// One being deleted while the lifecycle still holds it (FinalizerBackupInUse) is
	// still there to restore: its chunk Secrets go only once it is gone.
	found := b.DeletionTimestamp == nil || controllerutil.ContainsFinalizer(b, names.FinalizerBackupInUse)
	return &lifecycle.Backup{Name: name, Found: found, UID: string(b.UID), Cluster: b.Spec.ClusterRef.Name, Phase: b.Status.Phase,
		Message: b.Status.Message, LinstorVersion: b.Status.LinstorVersion, Checksum: b.Status.Checksum, Objects: int64(b.Status.Objects)}, nil
}

// saveLifecycle writes the decided state when it differs from what was read, with the
// resourceVersion as a precondition, and records the decision's events.
func (r *Reconciler) saveLifecycle(ctx context.Context, c *linstorv1.LinstorCluster, from lifecycle.State, out lifecycle.Output) error {
	for _, e := range out.Events {
		typ := corev1.EventTypeNormal
		if e.Warning {
			typ = corev1.EventTypeWarning
		}
		r.Recorder.Event(c, typ, e.Reason, e.Message)
	}
	next := out.State
	if next.Upgrade != nil {
		next.Upgrade.Message = reconciler.Bound(next.Upgrade.Message)
	}
	if next.Restore != nil {
		next.Restore.Message = reconciler.Bound(next.Restore.Message)
	}
	if equalState(from, next) && !out.VersionStale {
		return nil
	}
	before := c.DeepCopy()
	c.Status.Deployed, c.Status.Upgrade, c.Status.Restore = next.Deployed.DeepCopy(), next.Upgrade.DeepCopy(), next.Restore.DeepCopy()
	c.Status.LostNodes = next.DeepCopy().LostNodes
	if out.VersionStale {
		c.Status.Version = "" // LINSTOR reports its version again once it runs on the replaced database
	}
	if err := r.Client.Status().Patch(ctx, c, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return errLifecycleConflict
		}
		return fmt.Errorf("saving the database lifecycle state: %w", err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("lifecycle transition", "upgrade", phaseOf(next.Upgrade), "restore", restorePhase(next.Restore))
	return nil
}

// act carries out one action; all are idempotent, so a resumed pass may repeat one.
func (r *Reconciler) act(ctx context.Context, c *linstorv1.LinstorCluster, a lifecycle.Action) error {
	switch a.Kind {
	case lifecycle.CreateBackup:
		// Not owned by the cluster: a backup must outlive what it backs up.
		b := &linstorv1.LinstorBackup{
			ObjectMeta: metav1.ObjectMeta{Name: a.Backup, Namespace: c.Namespace,
				Labels: map[string]string{"linstor.io/upgrade-from": a.From, "linstor.io/upgrade-to": a.To}},
			Spec: linstorv1.LinstorBackupSpec{ClusterRef: linstorv1.ClusterReference{Name: c.Name}},
		}
		if err := r.Client.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the pre-upgrade backup %s: %w", a.Backup, err)
		}
		return nil
	case lifecycle.CreateRehearsal:
		return r.createRehearsal(ctx, c, a)
	case lifecycle.DeleteRehearsal:
		return r.deleteRehearsal(ctx, c.Namespace, a.Job)
	case lifecycle.RecordMarker:
		return r.writeMarker(ctx, r.Client, c, *a.Marker)
	case lifecycle.ClearMarker:
		return r.clearMarkerIfPresent(ctx, c)
	case lifecycle.RemoveAnnotation:
		if _, ok := c.Annotations[a.Annotation]; !ok {
			return nil
		}
		before := c.DeepCopy()
		delete(c.Annotations, a.Annotation)
		if err := r.Client.Patch(ctx, c, client.MergeFrom(before)); err != nil {
			return fmt.Errorf("removing the %s annotation: %w", a.Annotation, err)
		}
		return nil
	}
	return fmt.Errorf("unknown lifecycle action %q", a.Kind)
}

// useLifecycle hands the decision to the phases that follow and to the status.
func (r *Reconciler) useLifecycle(s *scope, out lifecycle.Output) {
	s.deployed, s.upgradeStatus, s.restoreStatus = out.State.Deployed, out.State.Upgrade, out.State.Restore
	s.stopController, s.fenceCSI, s.upgrading, s.holdOperator = out.StopController, out.FenceCSI, out.Upgrading, out.HoldOperator
	if backup, busy := r.restores.restoring(client.ObjectKeyFromObject(s.cluster)); busy && s.stopController == "" {
		// Whatever a (possibly stale) decision says, LINSTOR never starts on a database
		// a restore job is still writing.
		s.stopController = "a restore of " + backup + " still runs"
	}
	s.lifecycleProblem = out.Problem
	s.lifecycleDecided = true
}

func equalState(a, b lifecycle.State) bool { return equality.Semantic.DeepEqual(a, b) }

func phaseOf(u *linstorv1.UpgradeStatus) string {
	if u == nil {
		return ""
	}
	return string(u.Phase)
}

func restorePhase(r *linstorv1.RestoreStatus) string {
	if r == nil {
		return ""
	}
	return r.Phase
}

func (r *Reconciler) release() upgrade.Release {
	if r.Release != nil {
		return *r.Release
	}
	return upgrade.Current
}

// restoreJobs runs database restores in the background, one per LinstorCluster, for as
// long as the manager runs (leads).
type restoreJobs struct {
	mu sync.Mutex
	// jobs are keyed by the LinstorCluster's namespace and name, not its UID: a
	// recreated object must see the job its predecessor started.
	jobs    map[types.NamespacedName]*restoreJob
	ctx     context.Context // the manager's; nil until it runs
	running sync.WaitGroup
}

// run is the manager runnable: it lends its context to the jobs and, when it ends,
// waits for them to stop, so two restores never overlap.
func (j *restoreJobs) run(ctx context.Context) error {
	j.mu.Lock()
	j.ctx = ctx
	j.mu.Unlock()
	<-ctx.Done()
	j.mu.Lock()
	j.ctx, j.jobs = nil, nil // no job starts from here on
	j.mu.Unlock()
	j.running.Wait()
	return nil
}

// ctxReady reports that the manager runs, so jobs can start.
func (j *restoreJobs) ctxReady() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.ctx != nil
}

type restoreJob struct {
	// id is the action kind and the backup: a check and a restore of one backup are
	// different jobs. uid is the LinstorCluster that started it: its outcome is
	// reported to that object only.
	id      string
	uid     types.UID
	restore bool
	backup  string
	done    chan struct{}
	checked string
	err     error
}

// restoring reports a restore job of the cluster that has not ended, and its backup.
func (j *restoreJobs) restoring(key types.NamespacedName) (string, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	job, ok := j.jobs[key]
	if !ok || !job.restore {
		return "", false
	}
	select {
	case <-job.done:
		return "", false
	default:
		return job.backup, true
	}
}

// known reports whether this object's job with this id runs or has ended unreported.
func (j *restoreJobs) known(key types.NamespacedName, uid types.UID, id string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	job, ok := j.jobs[key]
	return ok && job.id == id && job.uid == uid
}

// forgetEnded drops an ended job of the cluster unreported (its object is going): a
// recreated object never takes its outcome for its own.
func (j *restoreJobs) forgetEnded(key types.NamespacedName) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if job, ok := j.jobs[key]; ok {
		select {
		case <-job.done:
			delete(j.jobs, key)
		default:
		}
	}
}

// restoreTimeout bounds one restore attempt; the next pass starts another.
const restoreTimeout = time.Hour

// poll starts job id for the cluster unless it runs, and reports whether it has ended,
// with what it found and its error. An ended job is forgotten once reported.
func (j *restoreJobs) poll(key types.NamespacedName, uid types.UID, id, backup string, restore bool, run func(context.Context) (string, error)) (bool, string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.jobs == nil {
		j.jobs = map[types.NamespacedName]*restoreJob{}
	}
	job, ok := j.jobs[key]
	if !ok || job.id != id || job.uid != uid {
		if ok {
			select {
			case <-job.done:
			default:
				return false, "", nil // another job of this cluster still runs: wait for it
			}
		}
		if j.ctx == nil || j.ctx.Err() != nil {
			return false, "", nil // the manager is not running (yet): the next pass starts it
		}
		job = &restoreJob{id: id, uid: uid, backup: backup, restore: restore, done: make(chan struct{})}
		j.jobs[key] = job
		j.running.Add(1)
		go func(parent context.Context) {
			defer j.running.Done()
			ctx, cancel := context.WithTimeout(parent, restoreTimeout)
			defer cancel()
			job.checked, job.err = run(ctx)
			close(job.done)
		}(j.ctx)
		return false, "", nil
	}
	select {
	case <-job.done:
		delete(j.jobs, key)
		return true, job.checked, job.err
	default:
		return false, "", nil
	}
}
