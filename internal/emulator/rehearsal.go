package emulator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
	"github.com/linstor-operator/linstor-operator/pkg/names"
)

// The upgrade rehearsal (pkg/render.RehearsalJob): a Job whose pod restores the
// pre-upgrade LinstorBackup into a scratch API server of its own (container "load") and
// runs the new LINSTOR's `linstor-config run-migration` on it (container "migrate").
// Neither LINSTOR nor a scratch API server runs here, so the emulator plays the Job: it
// reads the backup the way "load" does, runs the migrations the new version would run on
// that copy (rehearse, the same code a controller start runs), and reports the outcome
// as the pod and the job controller would: a pod whose failed container's termination
// message is LINSTOR's exception, and the Job's Complete or Failed condition. The test
// worlds run no job controller (kwok's would have the pod completed by kwok on its own),
// so the played pod is held out of scheduling by a gate and nothing else acts on it.

// rehearsalGate keeps the pod the emulator writes for a rehearsal Job unscheduled: no
// kubelet (kwok) ever runs it.
const rehearsalGate = "emulator.linstor.io/played"

// playRehearsals plays every rehearsal Job in namespace that has no outcome yet.
func (e *Emulator) playRehearsals(ctx context.Context, c client.Client, namespace string) error {
	var jobs batchv1.JobList
	if err := c.List(ctx, &jobs, client.InNamespace(namespace), client.MatchingLabels{names.LabelComponent: names.RehearsalComponent}); err != nil {
		if apierrors.IsNotFound(err) || strings.Contains(err.Error(), "no matches for kind") {
			return nil
		}
		return err
	}
	var errs []error
	for i := range jobs.Items {
		job := &jobs.Items[i]
		if job.DeletionTimestamp != nil || jobFinished(job) {
			continue
		}
		errs = append(errs, e.playRehearsal(ctx, c, job))
	}
	return errors.Join(errs...)
}

func jobFinished(job *batchv1.Job) bool {
	for _, cond := range job.Status.Conditions {
		if (cond.Type == batchv1.JobComplete || cond.Type == batchv1.JobFailed) && cond.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// rehearsalOutcome is what the pod's containers would end with: the container that
// failed ("" when all succeeded) and its message.
type rehearsalOutcome struct {
	failed  string
	message string
}

// rehearseJob runs what the Job's pod would: load the backup, migrate the copy.
func (e *Emulator) rehearseJob(ctx context.Context, c client.Client, job *batchv1.Job) rehearsalOutcome {
	spec := job.Spec.Template.Spec
	backup, namespace := "", job.Namespace
	for _, ctr := range spec.InitContainers {
		if ctr.Name != names.RehearsalLoadContainer {
			continue
		}
		for _, arg := range append(append([]string{}, ctr.Command...), ctr.Args...) {
			if v, ok := strings.CutPrefix(arg, "--backup="); ok {
				backup = v
			}
			if v, ok := strings.CutPrefix(arg, "--namespace="); ok {
				namespace = v
			}
		}
	}
	version := imageVersion(spec.Containers, names.RehearsalMigrateContainer)
	if backup == "" || version == "" {
		return rehearsalOutcome{failed: names.RehearsalLoadContainer, message: fmt.Sprintf("the Job names no backup (%q) or no LINSTOR image version (%q)", backup, version)}
	}
	dump, err := dbbackup.LoadNamed(ctx, c, namespace, backup)
	if err != nil {
		return rehearsalOutcome{failed: names.RehearsalLoadContainer, message: fmt.Sprintf("loading LinstorBackup %s: %v", backup, err)}
	}
	db := tablesOfDump(dump)
	stored := 0
	for _, r := range db["linstorversion"] {
		if n, ok := int64Column(r, "version"); ok {
			stored = int(n)
		}
	}
	last, err := lastMigration(version)
	if err != nil {
		return rehearsalOutcome{failed: names.RehearsalMigrateContainer, message: err.Error()}
	}
	if err := rehearse(db, stored, last); err != nil {
		// LinstorConfigTool.main: picocli rethrows the migration's exception out of main.
		return rehearsalOutcome{failed: names.RehearsalMigrateContainer, message: "com.linbit.linstor.LinStorDBRuntimeException: " + err.Error()}
	}
	return rehearsalOutcome{}
}

// tablesOfDump turns a backup's objects into tables (plural = lowercased kind).
func tablesOfDump(d *dbbackup.Dump) dbTables {
	db := dbTables{}
	for _, o := range d.Objects {
		kind, _ := o["kind"].(string)
		md, _ := o["metadata"].(map[string]any)
		name, _ := md["name"].(string)
		spec, _ := o["spec"].(map[string]any)
		plural := strings.ToLower(kind)
		if db[plural] == nil {
			db[plural] = tableRows{}
		}
		r := row{}
		for k, v := range spec {
			if f, ok := v.(float64); ok && f == float64(int64(f)) {
				v = int64(f)
			}
			r[k] = v
		}
		db[plural][name] = r
	}
	return db
}

// playRehearsal writes the Job's pod, ended as its containers would end, and then the
// Job's status as the job controller would set it.
func (e *Emulator) playRehearsal(ctx context.Context, c client.Client, job *batchv1.Job) error {
	out := e.rehearseJob(ctx, c, job)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: job.Namespace, Name: job.Name + "-played",
		Labels:          map[string]string{names.LabelJobName: job.Name, "job-name": job.Name},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))},
	}, Spec: *job.Spec.Template.Spec.DeepCopy()}
	for k, v := range job.Spec.Template.Labels {
		pod.Labels[k] = v
	}
	pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: rehearsalGate})
	if err := c.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("writing the rehearsal pod of Job %s: %w", job.Name, err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		return err
	}
	now := metav1.NewTime(time.Now())
	terminated := func(name string, failed bool) corev1.ContainerStatus {
		s := corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}}}
		if failed {
			s.State.Terminated.ExitCode, s.State.Terminated.Reason, s.State.Terminated.Message = 1, "Error", out.message
		}
		return s
	}
	pod.Status.Phase = corev1.PodSucceeded
	if out.failed != "" {
		pod.Status.Phase = corev1.PodFailed
	}
	pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses = nil, nil
	for _, ctr := range pod.Spec.InitContainers {
		pod.Status.InitContainerStatuses = append(pod.Status.InitContainerStatuses, terminated(ctr.Name, ctr.Name == out.failed))
	}
	for _, ctr := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, terminated(ctr.Name, ctr.Name == out.failed))
	}
	if err := c.Status().Update(ctx, pod); err != nil {
		return fmt.Errorf("ending the rehearsal pod of Job %s: %w", job.Name, err)
	}

	// The job controller's conditions for a finished Job (a Complete needs
	// SuccessCriteriaMet first, a Failed needs FailureTarget: the API server checks it).
	job.Status.StartTime, job.Status.Active = &now, 0
	cond := func(t batchv1.JobConditionType, reason, msg string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: msg, LastProbeTime: now, LastTransitionTime: now}
	}
	if out.failed == "" {
		job.Status.Succeeded, job.Status.CompletionTime = 1, &now
		job.Status.Conditions = append(job.Status.Conditions,
			cond(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached, "Reached expected number of succeeded pods"),
			cond(batchv1.JobComplete, batchv1.JobReasonCompletionsReached, "Reached expected number of succeeded pods"))
	} else {
		job.Status.Failed = 1
		job.Status.Conditions = append(job.Status.Conditions,
			cond(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit"),
			cond(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit"))
	}
	if err := c.Status().Update(ctx, job); err != nil {
		return fmt.Errorf("ending the rehearsal Job %s: %w", job.Name, err)
	}
	return nil
}
