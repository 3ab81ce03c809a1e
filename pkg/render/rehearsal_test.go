package render

import (
	"strings"
	"testing"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
)

func rehearsalJob(t *testing.T, spec linstorv1.LinstorClusterSpec) *batchv1.Job {
	t.Helper()
	imgs, err := images.FromEnv([]string{"RELATED_IMAGE_OPERATOR=registry.example.com/linstor-operator:v2.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	c := cluster(spec)
	c.UID = "uid-1"
	job, err := RehearsalJob(c, imgs, Rehearsal{Name: "linstor-rehearse-1-33-3-1748779200", Backup: "linstor-before-1-33-3-1748779200",
		To: "1.33.3", Timeout: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return job
}

func TestRehearsalJobGolden(t *testing.T) {
	golden(t, "rehearsal", Objects{rehearsalJob(t, linstorv1.LinstorClusterSpec{})})
}

// The rehearsal's safety is a property of the pod, not of the images: whatever LINSTOR's
// migration code does, it cannot reach the cluster's API.
func TestRehearsalJobCannotTouchTheLiveDatabase(t *testing.T) {
	job := rehearsalJob(t, linstorv1.LinstorClusterSpec{})
	pod := job.Spec.Template.Spec
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("automountServiceAccountToken = %v, want false", pod.AutomountServiceAccountToken)
	}
	if pod.ServiceAccountName != names.ServiceAccountName(names.RehearsalComponent) {
		t.Errorf("serviceAccountName = %q", pod.ServiceAccountName)
	}
	if pod.HostNetwork || pod.HostPID || pod.HostIPC {
		t.Error("the pod shares a host namespace")
	}
	tokenVolumes := map[string]bool{}
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			t.Errorf("volume %s is a hostPath", v.Name)
		}
		if v.Secret != nil {
			t.Errorf("volume %s mounts a Secret", v.Name)
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.ServiceAccountToken != nil {
					tokenVolumes[v.Name] = true
				}
			}
		}
	}
	if len(tokenVolumes) != 1 {
		t.Fatalf("volumes with a service account token: %v, want exactly one", tokenVolumes)
	}
	all := append(append([]corev1.Container{}, pod.InitContainers...), pod.Containers...)
	var order []string
	for _, c := range all {
		order = append(order, c.Name)
		mountsToken := false
		for _, m := range c.VolumeMounts {
			mountsToken = mountsToken || tokenVolumes[m.Name]
		}
		if mountsToken != (c.Name == names.RehearsalLoadContainer) {
			t.Errorf("container %s mounts the service account token: %v; only %s may", c.Name, mountsToken, names.RehearsalLoadContainer)
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				t.Errorf("container %s reads Secret %s", c.Name, e.ValueFrom.SecretKeyRef.Name)
			}
		}
		sc := c.SecurityContext
		if sc == nil || sc.Privileged != nil && *sc.Privileged || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0 {
			t.Errorf("container %s: security context %+v is not restricted", c.Name, sc)
		}
		if c.Resources.Limits.Memory().IsZero() {
			t.Errorf("container %s has no memory limit", c.Name)
		}
		if len(c.Ports) != 0 {
			t.Errorf("container %s exposes ports %v: the scratch API listens on loopback only", c.Name, c.Ports)
		}
	}
	want := []string{names.RehearsalPrepareContainer, names.RehearsalEtcdContainer, names.RehearsalAPIContainer, names.RehearsalLoadContainer, names.RehearsalMigrateContainer}
	if strings.Join(order, ",") != strings.Join(want, ",") {
		t.Errorf("containers run in order %v, want %v", order, want)
	}
	if pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Error("the pod may run as root")
	}

	migrate := pod.Containers[0]
	if !strings.Contains(migrate.Image, "piraeus-server:v1.33.3") {
		t.Errorf("migrate runs %s, want the new LINSTOR controller image", migrate.Image)
	}
	if got := strings.Join(migrate.Command, " "); got != "/usr/share/linstor-server/bin/linstor-config run-migration --config-directory=/scratch/linstor --logs=/scratch/linstor/logs" {
		t.Errorf("migrate command = %q", got)
	}
	env := map[string]string{}
	for _, e := range migrate.Env {
		env[e.Name] = e.Value
	}
	if env["KUBECONFIG"] != "/scratch/kubeconfig" {
		t.Errorf("migrate KUBECONFIG = %q, want the scratch API's", env["KUBECONFIG"])
	}
	// fabric8 would fall back to the in-cluster config if the kubeconfig were missing:
	// these point it nowhere.
	if _, ok := env["KUBERNETES_SERVICE_HOST"]; !ok {
		t.Error("migrate does not override KUBERNETES_SERVICE_HOST")
	}
	if migrate.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
		t.Errorf("migrate terminationMessagePolicy = %s", migrate.TerminationMessagePolicy)
	}

	api := pod.InitContainers[2]
	args := strings.Join(api.Command, " ")
	for _, flag := range []string{"--bind-address=127.0.0.1", "--authorization-mode=AlwaysAllow", "--token-auth-file=", "--etcd-servers=http://127.0.0.1:2379",
		"--service-account-key-file=", "--service-account-signing-key-file=", "--tls-cert-file=", "--anonymous-auth=false"} {
		if !strings.Contains(args, flag) {
			t.Errorf("kube-apiserver lacks %s: %s", flag, args)
		}
	}
	etcd := pod.InitContainers[1]
	if args := strings.Join(etcd.Command, " "); !strings.Contains(args, "--listen-client-urls=http://127.0.0.1:2379") || strings.Contains(args, "0.0.0.0") {
		t.Errorf("etcd does not listen on loopback only: %s", args)
	}
	for _, c := range []corev1.Container{etcd, api} {
		if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			t.Errorf("%s is not a native sidecar", c.Name)
		}
	}
	load := pod.InitContainers[3]
	if got := strings.Join(load.Command, " "); !strings.Contains(got, "rehearsal load --backup=linstor-before-1-33-3-1748779200 --namespace=storage") {
		t.Errorf("load command = %q", got)
	}
}

func TestRehearsalJobShape(t *testing.T) {
	job := rehearsalJob(t, linstorv1.LinstorClusterSpec{Controller: &linstorv1.ControllerSpec{ComponentSpec: linstorv1.ComponentSpec{
		NodeSelector: map[string]string{"role": "storage"}}}})
	if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 0 {
		t.Errorf("backoffLimit = %v, want 0: one attempt, its outcome is the rehearsal's", job.Spec.BackoffLimit)
	}
	if job.Spec.ActiveDeadlineSeconds == nil || *job.Spec.ActiveDeadlineSeconds != 600 {
		t.Errorf("activeDeadlineSeconds = %v, want the phase timeout", job.Spec.ActiveDeadlineSeconds)
	}
	if job.Spec.TTLSecondsAfterFinished != nil {
		t.Error("a ttl would delete a failed rehearsal's logs")
	}
	if len(job.OwnerReferences) != 1 || job.OwnerReferences[0].UID != "uid-1" || !ptr.Deref(job.OwnerReferences[0].Controller, false) {
		t.Errorf("owner references = %+v, want the LinstorCluster", job.OwnerReferences)
	}
	if job.Labels[names.LabelComponent] != names.RehearsalComponent || job.Labels[names.LabelCluster] != "linstor" {
		t.Errorf("labels = %v", job.Labels)
	}
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy = %s", job.Spec.Template.Spec.RestartPolicy)
	}
	if job.Spec.Template.Spec.NodeSelector["role"] != "storage" {
		t.Errorf("the controller's node selector is not kept: %v", job.Spec.Template.Spec.NodeSelector)
	}
	long := rehearsalJob(t, linstorv1.LinstorClusterSpec{})
	if len(long.Name) > 63 {
		t.Errorf("name %q longer than a label value", long.Name)
	}
	if _, err := RehearsalJob(cluster(linstorv1.LinstorClusterSpec{}), images.Default(), Rehearsal{Name: "x", Backup: "b", To: "1.33.3", Timeout: time.Minute}); err == nil {
		t.Error("rendered without the operator's own image")
	}
}
