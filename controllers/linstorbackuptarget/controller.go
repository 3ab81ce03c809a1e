// Package linstorbackuptarget checks LinstorBackupTargets: whether the bucket can be
// reached with the credentials and the key the target names, and which database
// backups it holds (all clusters', so a new cluster finds a lost one's). It writes
// nothing to the bucket.
package linstorbackuptarget

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/reconciler"
	"github.com/linstor-operator/linstor-operator/pkg/backuptarget"
	"github.com/linstor-operator/linstor-operator/pkg/offsite"
)

// DefaultPoll is how often a target's bucket is listed again: backups other clusters
// write, and objects a bucket lifecycle deletes, show up without a trigger.
const DefaultPoll = 5 * time.Minute

// checkTimeout bounds one check and listing of a bucket.
const checkTimeout = 30 * time.Second

// failedPoll is how soon a target that failed is looked at again.
const failedPoll = time.Minute

// Reconciler checks targets.
type Reconciler struct {
	Client client.Client
	// Namespace is the operator's: Secrets are read (and cached) only there.
	Namespace string
	// Poll overrides DefaultPoll (tests).
	Poll time.Duration
}

// +kubebuilder:rbac:groups=linstor.io,resources=linstorbackuptargets,verbs=get;list;watch
// +kubebuilder:rbac:groups=linstor.io,resources=linstorbackuptargets/status,verbs=get;update;patch

type scope struct {
	target  *linstorv1.LinstorBackupTarget
	reason  string
	message string
	list    []offsite.Manifest
	bad     int
	fprint  string
}

// Reconcile checks one target.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	t := &linstorv1.LinstorBackupTarget{}
	if err := r.Client.Get(ctx, req.NamespacedName, t); err != nil {
		if apierrors.IsNotFound(err) {
			targetAvailable.DeletePartialMatch(prometheus.Labels{"namespace": req.Namespace, "target": req.Name})
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &scope{target: t}
	res, err := r.check(ctx, s)
	if _, serr := reconciler.PatchStatus(ctx, r.Client, t, func() { updateStatus(s) }); serr != nil && err == nil {
		err = serr
	}
	recordMetrics(t, s.reason)
	return res, err
}

func (r *Reconciler) poll() time.Duration {
	if r.Poll > 0 {
		return r.Poll
	}
	return DefaultPoll
}

// check opens the bucket, checks it and lists its backups.
func (r *Reconciler) check(ctx context.Context, s *scope) (ctrl.Result, error) {
	t := s.target
	if r.Namespace != "" && t.Namespace != r.Namespace {
		s.reason, s.message = linstorv1.ReasonWrongNamespace, fmt.Sprintf("LinstorBackupTargets are read in the operator's namespace %s only (its Secrets are read there): create it there", r.Namespace)
		return ctrl.Result{}, nil
	}
	store, err := backuptarget.Open(ctx, r.Client, t)
	var missing *backuptarget.MissingError
	switch {
	case errors.As(err, &missing):
		s.reason, s.message = linstorv1.ReasonSecretMissing, err.Error()
		return ctrl.Result{}, nil // the Secret's creation wakes it
	case offsite.ReasonOf(err) == offsite.ReasonInvalid:
		s.reason, s.message = linstorv1.ReasonInvalidSpec, err.Error()
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, err
	}
	s.fprint = store.Key().Fingerprint()
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	if err := store.Check(ctx); err != nil {
		s.reason, s.message = string(offsite.ReasonOf(err)), err.Error()
		if s.reason == "" {
			s.reason = string(offsite.ReasonServerError)
		}
		return ctrl.Result{RequeueAfter: min(failedPoll, r.poll())}, nil
	}
	manifests, unreadable, err := store.List(ctx)
	if err != nil {
		s.reason, s.message = string(offsite.ReasonOf(err)), err.Error()
		return ctrl.Result{RequeueAfter: min(failedPoll, r.poll())}, nil
	}
	s.list, s.bad = manifests, len(unreadable)
	return ctrl.Result{RequeueAfter: r.poll()}, nil
}

// updateStatus derives the status; an unchanged bucket writes nothing.
func updateStatus(s *scope) {
	t := s.target
	st := &t.Status
	available := metav1.Condition{Type: linstorv1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: linstorv1.ReasonAsExpected, ObservedGeneration: t.Generation}
	if s.reason != "" {
		available.Status, available.Reason, available.Message = metav1.ConditionFalse, s.reason, s.message
	} else {
		available.Message = fmt.Sprintf("s3://%s/%s reachable; %d database backups", t.Spec.S3.Bucket, t.Spec.S3.Prefix, len(s.list))
		if s.bad > 0 {
			available.Message += fmt.Sprintf("; %d manifests could not be read (skipped)", s.bad)
		}
		st.Count = int32(len(s.list))
		st.Backups = nil
		for i, m := range s.list {
			if i == linstorv1.MaxListedBackups {
				break
			}
			created := metav1.NewTime(m.CreatedAt.UTC())
			st.Backups = append(st.Backups, linstorv1.StoredBackup{ID: m.ID, Cluster: m.Cluster.Namespace + "/" + m.Cluster.Name, ClusterUID: m.Cluster.UID,
				Backup: m.Backup, Schedule: m.Schedule, LinstorVersion: m.LinstorVersion, CreatedAt: &created, Objects: int32(m.Objects), Size: m.EncryptedSize})
		}
	}
	if s.fprint != "" {
		st.KeyFingerprint = s.fprint
	}
	reconciler.SetCondition(&st.Conditions, available)
	st.ObservedGeneration = t.Generation
}

// SetupWithManager registers the controller; a target wakes when a Secret or ConfigMap
// it names changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&linstorv1.LinstorBackupTarget{}, builder.WithPredicates(reconciler.NotStatusOnly())).
		// A check waits on the network: an unreachable bucket must not delay the others.
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.targetsNaming)).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.targetsNaming)).
		Complete(r)
}

func (r *Reconciler) targetsNaming(ctx context.Context, o client.Object) []ctrl.Request {
	var list linstorv1.LinstorBackupTargetList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var out []ctrl.Request
	for _, t := range list.Items {
		s3 := t.Spec.S3
		if s3.CredentialsSecretRef.Name == o.GetName() || t.Spec.Encryption.KeySecretRef.Name == o.GetName() ||
			s3.CAConfigMapRef != nil && s3.CAConfigMapRef.Name == o.GetName() {
			out = append(out, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&t)})
		}
	}
	return out
}

var targetAvailable = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "linstor_operator_backup_target_available",
	Help: "1 when the LinstorBackupTarget's bucket can be used (Available=True), else 0, with the reason (Unreachable, Unauthorized, NoSuchBucket, SecretMissing, ...).",
}, []string{"namespace", "target", "reason"})

func init() { metrics.Registry.MustRegister(targetAvailable) }

// recordMetrics replaces the target's series: one, with the current reason.
func recordMetrics(t *linstorv1.LinstorBackupTarget, reason string) {
	targetAvailable.DeletePartialMatch(prometheus.Labels{"namespace": t.Namespace, "target": t.Name})
	if reason == "" {
		targetAvailable.WithLabelValues(t.Namespace, t.Name, linstorv1.ReasonAsExpected).Set(1)
		return
	}
	targetAvailable.WithLabelValues(t.Namespace, t.Name, reason).Set(0)
}
