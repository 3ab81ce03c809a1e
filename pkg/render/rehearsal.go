package render

import (
	"errors"
	"fmt"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
)

// Rehearsal is one attempt at rehearsing an upgrade's migration (lifecycle.CreateRehearsal).
type Rehearsal struct {
	// Name is the Job's (lifecycle.RehearsalName).
	Name string
	// Backup is the pre-upgrade LinstorBackup the copy is made from.
	Backup string
	// To is the LINSTOR version whose migrations run.
	To string
	// Timeout is the phase timeout: the Job's activeDeadlineSeconds.
	Timeout time.Duration
}

// Paths inside the rehearsal pod's scratch volume (pkg/rehearsal writes them).
const (
	scratchDir        = "/scratch"
	scratchKubeconfig = scratchDir + "/kubeconfig"
	scratchPKI        = scratchDir + "/pki"
	scratchLinstor    = scratchDir + "/linstor"
	tokenDir          = "/var/run/secrets/kubernetes.io/serviceaccount"
	// linstorConfigTool is LINSTOR's configuration tool in the controller image
	// (linstor-server debian/rules installs it under LS_PREFIX=/usr/share/linstor-server).
	linstorConfigTool = "/usr/share/linstor-server/bin/linstor-config"
)

// ErrNoOperatorImage: the operator does not know its own image (RELATED_IMAGE_OPERATOR),
// which prepares and loads the scratch API.
var ErrNoOperatorImage = errors.New("the operator's own image is unknown (RELATED_IMAGE_OPERATOR is not set)")

// RehearsalJob renders the Job that rehearses the migration to r.To on a copy of the
// pre-upgrade backup. Its pod runs a Kubernetes API of its own on loopback and LINSTOR's
// own migration code (linstor-config run-migration, LinstorConfigTool.CmdRunMigration
// at v1.33.3: DbK8sCrd.migrate through initialize()) against it:
//
//  1. prepare (operator image): certificates, a token, a kubeconfig for the scratch
//     API and linstor.toml with the k8s backend, in the scratch volume.
//  2. etcd and kube-apiserver: native sidecars on 127.0.0.1, no port exposed.
//  3. load (operator image, the only container with a token for the cluster's API, of
//     an account that may only read LinstorBackups and Secrets): restores the backup
//     into the scratch API with pkg/dbbackup and reads it back against its checksum.
//  4. migrate (the new LINSTOR controller image): no credential for the cluster's API
//     at all, so no misconfiguration can migrate the live database.
func RehearsalJob(cluster *linstorv1.LinstorCluster, imgs images.Set, r Rehearsal) (*batchv1.Job, error) {
	operator := imgs.Operator()
	if operator == "" {
		return nil, ErrNoOperatorImage
	}
	override := ""
	var component *linstorv1.ComponentSpec
	if c := cluster.Spec.Controller; c != nil {
		override, component = c.Image, &c.ComponentSpec
	}
	linstor := image(override, imgs.ForLinstor(r.To).Image(images.LinstorController))
	apiURL := fmt.Sprintf("https://127.0.0.1:%d", names.RehearsalAPIPort)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", names.RehearsalEtcdPort)

	scratch := corev1.VolumeMount{Name: "scratch", MountPath: scratchDir}
	restricted := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	// Requests are a quarter of the limits: the pod runs once per upgrade, on a node that
	// can run the LINSTOR controller, and must not stay Pending where the controller fits.
	bounded := func(cpu, memory string) corev1.ResourceRequirements {
		limit := resource.MustParse(memory)
		request := resource.NewQuantity(limit.Value()/4, resource.BinarySI)
		return corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: *request},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: limit},
		}
	}
	// The scratch API's endpoint for anything that falls back to the in-cluster
	// configuration (fabric8 and client-go read these): it can only reach the copy.
	scratchEndpoint := []corev1.EnvVar{
		{Name: "KUBERNETES_SERVICE_HOST", Value: "127.0.0.1"},
		{Name: "KUBERNETES_SERVICE_PORT", Value: fmt.Sprint(names.RehearsalAPIPort)},
	}

	prepare := corev1.Container{
		Name:    names.RehearsalPrepareContainer,
		Image:   operator,
		Command: []string{"/manager", "rehearsal", "prepare", "--dir=" + scratchDir, "--server=" + apiURL},
		Env:     scratchEndpoint, VolumeMounts: []corev1.VolumeMount{scratch},
		Resources: bounded("10m", "64Mi"), SecurityContext: restricted,
	}
	etcd := corev1.Container{
		Name:  names.RehearsalEtcdContainer,
		Image: imgs.Image(images.Etcd),
		Command: []string{"/usr/local/bin/etcd", "--name=rehearsal", "--data-dir=" + scratchDir + "/etcd",
			"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
			"--listen-peer-urls=http://127.0.0.1:2380", "--initial-advertise-peer-urls=http://127.0.0.1:2380",
			"--initial-cluster=rehearsal=http://127.0.0.1:2380", "--listen-metrics-urls=http://127.0.0.1:2381",
			// The copy lives only as long as the pod: no fsync per write.
			"--unsafe-no-fsync", "--quota-backend-bytes=8589934592"},
		RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
		VolumeMounts:  []corev1.VolumeMount{scratch},
		// exec, not httpGet: the kubelet probes the pod's IP, and etcd listens on loopback.
		StartupProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
			Command: []string{"/usr/local/bin/etcdctl", "--endpoints=" + etcdURL, "endpoint", "health"}}},
			PeriodSeconds: 2, FailureThreshold: 60, TimeoutSeconds: 5},
		Resources: bounded("100m", "1Gi"), SecurityContext: restricted,
	}
	apiServer := corev1.Container{
		Name:  names.RehearsalAPIContainer,
		Image: imgs.Image(images.KubeAPIServer),
		Command: []string{"/usr/local/bin/kube-apiserver",
			"--etcd-servers=" + etcdURL,
			"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", names.RehearsalAPIPort),
			"--tls-cert-file=" + scratchPKI + "/apiserver.crt", "--tls-private-key-file=" + scratchPKI + "/apiserver.key",
			"--anonymous-auth=false", "--token-auth-file=" + scratchPKI + "/tokens.csv", "--authorization-mode=AlwaysAllow",
			"--service-account-issuer=" + apiURL,
			"--service-account-key-file=" + scratchPKI + "/sa.pub", "--service-account-signing-key-file=" + scratchPKI + "/sa.key",
			"--service-cluster-ip-range=10.0.0.0/24", "--cert-dir=" + scratchPKI,
		},
		// No probe: the kubelet's httpGet reaches the pod's IP, not its loopback, and the
		// image has no shell; load waits for /readyz itself.
		RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
		VolumeMounts:  []corev1.VolumeMount{scratch},
		Resources:     bounded("250m", "2Gi"), SecurityContext: restricted,
	}
	load := corev1.Container{
		Name:  names.RehearsalLoadContainer,
		Image: operator,
		Command: []string{"/manager", "rehearsal", "load", "--backup=" + r.Backup, "--namespace=" + cluster.Namespace,
			"--kubeconfig=" + scratchKubeconfig},
		VolumeMounts: []corev1.VolumeMount{scratch, {Name: "cluster-api-token", MountPath: tokenDir, ReadOnly: true}},
		// The message the status quotes when the copy could not be made.
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		Resources:                bounded("100m", "512Mi"), SecurityContext: restricted,
	}
	migrate := corev1.Container{
		Name:  names.RehearsalMigrateContainer,
		Image: linstor,
		// -c and -l are the controller's options (CtrlCmdLineArgsParser), which
		// run-migration passes on to CtrlConfig.
		Command: []string{linstorConfigTool, "run-migration", "--config-directory=" + scratchLinstor, "--logs=" + scratchLinstor + "/logs"},
		Env: append([]corev1.EnvVar{
			// fabric8's default configuration reads it (DbK8sCrd.start).
			{Name: "KUBECONFIG", Value: scratchKubeconfig},
			{Name: "HOME", Value: scratchDir},
			{Name: "KUBERNETES_AUTH_TRYSERVICEACCOUNT", Value: "false"},
		}, scratchEndpoint...),
		VolumeMounts: []corev1.VolumeMount{scratch},
		// LINSTOR's exception (LinStorDBRuntimeException "Exception occurred during
		// migration" and its cause) is in the log tail.
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		Resources:                bounded("250m", "2Gi"),
		SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
	}
	pod := corev1.PodSpec{
		ServiceAccountName:           names.ServiceAccountName(names.RehearsalComponent),
		AutomountServiceAccountToken: ptr.To(false),
		EnableServiceLinks:           ptr.To(false),
		RestartPolicy:                corev1.RestartPolicyNever,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532), FSGroup: ptr.To[int64](65532),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		InitContainers: []corev1.Container{prepare, etcd, apiServer, load},
		Containers:     []corev1.Container{migrate},
		Volumes: []corev1.Volume{
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "cluster-api-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3600)}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
					Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
			}}}},
		},
	}
	if component != nil {
		// Where the controller may run, the rehearsal may (tolerations, selectors).
		pod.NodeSelector, pod.Affinity = component.NodeSelector, component.Affinity
		pod.Tolerations = MergeTolerations(controllerTolerations(), component.Tolerations)
	} else {
		pod.Tolerations = controllerTolerations()
	}
	l := labels(cluster, names.RehearsalComponent)
	return &batchv1.Job{
		TypeMeta: typeMeta("batch/v1", "Job"),
		ObjectMeta: metav1.ObjectMeta{Name: r.Name, Namespace: cluster.Namespace, Labels: l,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cluster, linstorv1.GroupVersion.WithKind("LinstorCluster"))}},
		Spec: batchv1.JobSpec{
			// One attempt: its outcome is the rehearsal's; the retry annotation starts another.
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: ptr.To(int64(r.Timeout / time.Second)),
			Template:              corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: l}, Spec: pod},
		},
	}, nil
}
