package render

import (
	"fmt"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

const (
	// reactorSnippets is where the image's /etc/drbd-reactor.toml looks for snippets.
	reactorSnippets = "/etc/drbd-reactor.d"
)

// ReactorConfig renders the drbd-reactor configuration shared by every satellite: its
// prometheus plugin, with enum states (connection, disk and role as labels, which
// alerts match on). The address ":<port>" is drbd-reactor's "unspecified" form: it binds
// [::] and falls back to 0.0.0.0 where the host has no IPv6, where "[::]:<port>" would
// fail (drbd-reactor src/config.rs, LocalAddress::Unspecified).
func ReactorConfig(cluster *linstorv1.LinstorCluster) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   typeMeta("v1", "ConfigMap"),
		ObjectMeta: metav1.ObjectMeta{Name: names.ReactorConfigName, Namespace: cluster.Namespace, Labels: labels(cluster, names.SatelliteComponent)},
		Data:       map[string]string{names.ReactorConfigKey: fmt.Sprintf("[[prometheus]]\nenums = true\naddress = \":%d\"\n", names.ReactorMetricsPort)},
	}
}

// reactorContainer is the sidecar and the volume of its configuration. It only reads
// DRBD's state (drbdsetup events2 through the host network's netlink, which needs no
// capability), so it runs with none, on a read-only root file system.
func reactorContainer(image string) (corev1.Container, corev1.Volume) {
	return corev1.Container{
			Name:  names.ReactorContainer,
			Image: image,
			Ports: []corev1.ContainerPort{{Name: names.ReactorMetricsPortName, ContainerPort: names.ReactorMetricsPort, Protocol: corev1.ProtocolTCP}},
			SecurityContext: &corev1.SecurityContext{
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				AllowPrivilegeEscalation: ptr.To(false),
				ReadOnlyRootFilesystem:   ptr.To(true),
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "reactor-config", MountPath: reactorSnippets, ReadOnly: true}},
		}, corev1.Volume{Name: "reactor-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: names.ReactorConfigName}}}}
}
