package linstorcluster

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
	"github.com/linstor-operator/linstor-operator/pkg/names"
	"github.com/linstor-operator/linstor-operator/pkg/render"
)

// +kubebuilder:rbac:groups=batch,namespace=system,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",namespace=system,resources=pods,verbs=get;list;watch

// observeRehearsal reads the rehearsal Job from the API server (a Job created by the
// previous pass may not be cached yet): its outcome is its Complete or Failed
// condition, as the job controller sets them; the message is the termination message
// of its pod's migrate container, else load's, else the Failed condition's (a world
// without a job controller has no pods).
func (r *Reconciler) observeRehearsal(ctx context.Context, namespace, name string) (*lifecycle.Rehearsal, error) {
	job := &batchv1.Job{}
	err := r.Direct.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, job)
	switch {
	case apierrors.IsNotFound(err):
		return &lifecycle.Rehearsal{Name: name}, nil
	case err != nil:
		return nil, fmt.Errorf("reading the rehearsal Job %s: %w", name, err)
	}
	out := &lifecycle.Rehearsal{Name: name, Found: job.DeletionTimestamp == nil}
	failedMessage := ""
	for _, cond := range job.Status.Conditions {
		if cond.Status != corev1.ConditionTrue {
			continue
		}
		switch cond.Type {
		case batchv1.JobComplete:
			out.Succeeded = true
		case batchv1.JobFailed:
			out.Failed, failedMessage = true, cond.Reason+": "+cond.Message
		}
	}
	if !out.Failed {
		return out, nil
	}
	var pods corev1.PodList
	if err := r.Direct.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{names.LabelJobName: name}); err != nil {
		return nil, fmt.Errorf("listing the rehearsal Job's pods: %w", err)
	}
	out.Message = rehearsalMessage(pods.Items)
	if out.Message == "" {
		out.Message = failedMessage
	}
	return out, nil
}

// rehearsalMessage is what the failed rehearsal's containers said: migrate's
// termination message (LINSTOR's exception), else load's (the copy was not made).
func rehearsalMessage(pods []corev1.Pod) string {
	for _, container := range []string{names.RehearsalMigrateContainer, names.RehearsalLoadContainer} {
		for _, p := range pods {
			statuses := append(append([]corev1.ContainerStatus{}, p.Status.ContainerStatuses...), p.Status.InitContainerStatuses...)
			for _, s := range statuses {
				if s.Name == container && s.State.Terminated != nil && s.State.Terminated.ExitCode != 0 {
					msg := s.State.Terminated.Message
					if msg == "" {
						msg = fmt.Sprintf("exit code %d (%s)", s.State.Terminated.ExitCode, s.State.Terminated.Reason)
					}
					return container + ": " + msg
				}
			}
		}
	}
	return ""
}

// createRehearsal creates the attempt's Job unless it exists; earlier attempts' Jobs,
// kept for their logs, go now.
func (r *Reconciler) createRehearsal(ctx context.Context, c *linstorv1.LinstorCluster, a lifecycle.Action) error {
	var jobs batchv1.JobList
	if err := r.Direct.List(ctx, &jobs, client.InNamespace(c.Namespace),
		client.MatchingLabels{names.LabelComponent: names.RehearsalComponent, names.LabelInstance: c.Name}); err != nil {
		return fmt.Errorf("listing rehearsal Jobs: %w", err)
	}
	for i := range jobs.Items {
		if jobs.Items[i].Name != a.Job {
			if err := r.deleteRehearsal(ctx, c.Namespace, jobs.Items[i].Name); err != nil {
				return err
			}
		}
	}
	timeout := r.lifecycleSpec(c).PhaseTimeout
	if timeout <= 0 {
		timeout = lifecycle.DefaultPhaseTimeout
	}
	job, err := render.RehearsalJob(c, r.Images.WithRepository(c.Spec.Repository), render.Rehearsal{Name: a.Job, Backup: a.Backup, To: a.To, Timeout: timeout})
	if err != nil {
		return err
	}
	if err := r.Client.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the rehearsal Job %s: %w", a.Job, err)
	}
	return nil
}

// deleteRehearsal deletes a rehearsal Job and its pods.
func (r *Reconciler) deleteRehearsal(ctx context.Context, namespace, name string) error {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := r.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the rehearsal Job %s: %w", name, err)
	}
	return nil
}
