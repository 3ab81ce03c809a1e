package render

import (
	"fmt"
	"strings"

	"github.com/linstor-operator/linstor-operator/pkg/clustertls"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
)

// Names of the controller's objects (namespaced, in the LinstorCluster's namespace).
const (
	controllerConfig = "linstor-controller-config"
	dbCertMount      = "/etc/linstor/db-client"
)

// Controller renders the LINSTOR controller: its configuration, a Deployment and a
// Service. Its ServiceAccount and RBAC ship with the operator (config/rbac). External-controller mode renders nothing.
func Controller(cluster *linstorv1.LinstorCluster, imgs images.Set) (Objects, error) {
	if cluster.Spec.ExternalController != nil || !ControllerEnabled(cluster) {
		return nil, nil
	}
	l := labels(cluster, names.ControllerName)
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: cluster.Namespace, Labels: l}
	}
	config := &corev1.ConfigMap{TypeMeta: typeMeta("v1", "ConfigMap"), ObjectMeta: meta(controllerConfig),
		Data: map[string]string{"linstor.toml": linstorTOML(cluster)}}

	deploy, err := controllerDeployment(cluster, imgs, l)
	if err != nil {
		return nil, err
	}
	ports := []corev1.ServicePort{
		{Name: "api", Port: names.APIPort, TargetPort: intstr.FromString("api"), Protocol: corev1.ProtocolTCP},
		{Name: "secure-api", Port: names.SecureAPIPort, TargetPort: intstr.FromString("secure-api"), Protocol: corev1.ProtocolTCP},
	}
	if clustertls.APITLSEnabled(cluster) {
		ports = ports[1:] // plain HTTP only answers on the pod's loopback
	}
	svc := &corev1.Service{
		TypeMeta: typeMeta("v1", "Service"), ObjectMeta: meta(names.ControllerName),
		Spec: corev1.ServiceSpec{Selector: selectorLabels(cluster, names.ControllerName), Ports: ports},
	}
	return Objects{config, deploy, svc}, nil
}

// ControllerEnabled: the controller runs unless explicitly disabled.
func ControllerEnabled(cluster *linstorv1.LinstorCluster) bool {
	c := cluster.Spec.Controller
	return c == nil || c.Enabled == nil || *c.Enabled
}

func linstorTOML(cluster *linstorv1.LinstorCluster) string {
	db := cluster.Spec.Database
	var b strings.Builder
	b.WriteString("[db]\n")
	if db == nil || db.Type != linstorv1.DatabaseExternal {
		b.WriteString("  connection_url = \"k8s\"\n")
	} else {
		fmt.Fprintf(&b, "  connection_url = %q\n", db.ConnectionURL)
		if db.ClientCertificateSecretRef != nil {
			fmt.Fprintf(&b, "  ca_certificate = %q\n", dbCertMount+"/ca.crt")
			fmt.Fprintf(&b, "  client_certificate = %q\n", dbCertMount+"/tls.crt")
			fmt.Fprintf(&b, "  client_key_pkcs8_pem = %q\n", dbCertMount+"/tls.key")
		}
	}
	if clustertls.APITLSEnabled(cluster) {
		b.WriteString(httpsTOML())
	}
	return b.String()
}

func controllerDeployment(cluster *linstorv1.LinstorCluster, imgs images.Set, l map[string]string) (*appsv1.Deployment, error) {
	spec := cluster.Spec.Controller
	var component *linstorv1.ComponentSpec
	replicas := int32(1)
	override := ""
	if spec != nil {
		component = &spec.ComponentSpec
		override = spec.Image
		if spec.Replicas != nil {
			replicas = *spec.Replicas
		}
	}
	args := []string{"startController"}
	volumes := []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: controllerConfig}}}}}
	mounts := []corev1.VolumeMount{{Name: "config", MountPath: "/etc/linstor", ReadOnly: true}}
	if db := cluster.Spec.Database; db != nil && db.ClientCertificateSecretRef != nil {
		volumes = append(volumes, corev1.Volume{Name: "db-client", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: db.ClientCertificateSecretRef.Name}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "db-client", MountPath: dbCertMount, ReadOnly: true})
	}
	if clustertls.InternalTLSEnabled(cluster) {
		v, m := pemVolumes("internal-tls", clustertls.InternalTLSSecretName(cluster), internalPEMDir, internalJKSDir)
		volumes, mounts = append(volumes, v...), append(mounts, m...)
	}
	// The controller's /health answers on plain HTTP, which API TLS keeps on loopback:
	// the kubelet then checks that the HTTPS port accepts connections.
	probe := corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString("api")}}
	if clustertls.APITLSEnabled(cluster) {
		v, m := pemVolumes("api-tls", clustertls.APITLSSecretName(cluster), apiPEMDir, apiJKSDir)
		volumes, mounts = append(volumes, v...), append(mounts, m...)
		volumes = append(volumes, corev1.Volume{Name: "client-tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: clustertls.APIClientSecretName(cluster)}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "client-tls", MountPath: clientPEMDir, ReadOnly: true})
		probe = corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("secure-api")}}
	}
	env := []corev1.EnvVar{
		{Name: "K8S_AWAIT_ELECTION_ENABLED", Value: fmt.Sprint(replicas > 1)},
		{Name: "K8S_AWAIT_ELECTION_NAME", Value: names.ControllerName},
		{Name: "K8S_AWAIT_ELECTION_LOCK_NAME", Value: names.ControllerName},
		{Name: "K8S_AWAIT_ELECTION_LOCK_NAMESPACE", Value: cluster.Namespace},
		{Name: "K8S_AWAIT_ELECTION_IDENTITY", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
	}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: l},
		Spec: corev1.PodSpec{
			ServiceAccountName: names.ServiceAccountName(names.ControllerName),
			PriorityClassName:  "system-cluster-critical",
			Tolerations:        controllerTolerations(),
			SecurityContext:    &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(false), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name:  names.ControllerName,
				Image: image(override, imgs.Image(images.LinstorController)),
				Args:  args,
				Env:   env,
				Ports: []corev1.ContainerPort{
					{Name: "api", ContainerPort: names.APIPort, Protocol: corev1.ProtocolTCP},
					{Name: "secure-api", ContainerPort: names.SecureAPIPort, Protocol: corev1.ProtocolTCP},
				},
				VolumeMounts: mounts,
				LivenessProbe: &corev1.Probe{
					ProbeHandler:  probe,
					PeriodSeconds: 10, FailureThreshold: 6, TimeoutSeconds: 5,
				},
				StartupProbe: &corev1.Probe{
					// Database migrations on upgrade can take minutes: do not kill the controller mid-migration.
					ProbeHandler:  probe,
					PeriodSeconds: 10, FailureThreshold: 60, TimeoutSeconds: 5,
				},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
			Volumes: volumes,
		},
	}
	applyComponent(&tmpl, component, names.ControllerName)
	if component != nil {
		if err := patchPodTemplate(&tmpl, component.PodTemplate, cluster.Spec.PodTemplatePolicy); err != nil {
			return nil, fmt.Errorf("spec.controller.podTemplate: %w", err)
		}
	}
	return &appsv1.Deployment{
		TypeMeta:   typeMeta("apps/v1", "Deployment"),
		ObjectMeta: metav1.ObjectMeta{Name: names.ControllerName, Namespace: cluster.Namespace, Labels: l},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: selectorLabels(cluster, names.ControllerName)},
			// Two controllers must never run against one database: stop the old pod first.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: tmpl,
		},
	}, nil
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

// WithControllerStopped scales the LINSTOR controller to zero (for a database backup
// or restore); its other objects stay.
func WithControllerStopped(objs Objects) Objects {
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok && d.Name == names.ControllerName {
			d.Spec.Replicas = ptr.To[int32](0)
		}
	}
	return objs
}

// WithCSIFenced stops the CSI controller: while an upgrade could still roll back to
// the pre-upgrade backup, nothing may create, attach or delete volumes in LINSTOR's
// database (the rollback would forget it). Volumes in use keep working.
func WithCSIFenced(objs Objects) Objects {
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok && d.Name == names.CSIControllerName {
			d.Spec.Replicas = ptr.To[int32](0)
		}
	}
	return objs
}
