package render

import (
	"fmt"

	"github.com/linstor-operator/linstor-operator/pkg/clustertls"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
)

// Names of the CSI driver's objects.
const (
	csiSocketDir = "/var/lib/csi/sockets/pluginproxy/"
	kubeletDir   = "/var/lib/kubelet"
)

// CSIEnabled: the CSI driver runs unless explicitly disabled.
func CSIEnabled(cluster *linstorv1.LinstorCluster) bool {
	c := cluster.Spec.CSI
	return c == nil || c.Enabled == nil || *c.Enabled
}

// componentEnabled: a CSI workload runs unless its enabled is false.
func componentEnabled(c *linstorv1.ComponentSpec) bool {
	return c == nil || c.Enabled == nil || *c.Enabled
}

// componentImage is a CSI workload's own image override, or "".
func componentImage(c *linstorv1.ComponentSpec) string {
	if c == nil {
		return ""
	}
	return c.Image
}

// CSI renders the LINSTOR CSI driver: the CSIDriver object, the controller Deployment
// with its sidecars and the node DaemonSet. linstorURL is where the plugin reaches
// LINSTOR. csi.controller.enabled and csi.node.enabled leave their workload out; the
// CSIDriver stays while either runs (the kubelet asks it how to mount, the
// provisioner's objects name it). The plugin image is the workload's own image, else
// csi.image, else the release's.
func CSI(cluster *linstorv1.LinstorCluster, imgs images.Set, linstorURL string) (Objects, error) {
	if !CSIEnabled(cluster) {
		return nil, nil
	}
	spec := cluster.Spec.CSI
	if spec == nil {
		spec = &linstorv1.CSISpec{}
	}
	ctrlOn, nodeOn := componentEnabled(spec.Controller), componentEnabled(spec.Node)
	if !ctrlOn && !nodeOn {
		return nil, nil
	}
	l := labels(cluster, "linstor-csi")
	plugin := image(spec.Image, imgs.Image(images.LinstorCSI))
	env := []corev1.EnvVar{
		{Name: "LS_CONTROLLERS", Value: linstorURL},
		{Name: "KUBE_NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
	}
	if clustertls.UsesAPIClientCertificate(cluster) {
		env = append(env, clientCertEnv(clustertls.APIClientSecretName(cluster))...)
	}

	driver := &storagev1.CSIDriver{
		TypeMeta:   typeMeta("storage.k8s.io/v1", "CSIDriver"),
		ObjectMeta: metav1.ObjectMeta{Name: names.CSIDriverName, Labels: l},
		Spec: storagev1.CSIDriverSpec{
			AttachRequired: ptr.To(true), PodInfoOnMount: ptr.To(true), StorageCapacity: ptr.To(true),
			FSGroupPolicy:        ptr.To(storagev1.FileFSGroupPolicy),
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent},
		},
	}

	sidecar := func(name string, c images.Component, extra ...string) corev1.Container {
		return corev1.Container{
			Name: name, Image: imgs.Image(c),
			Args:            append([]string{"--csi-address=$(ADDRESS)", "--v=2"}, extra...),
			Env:             []corev1.EnvVar{{Name: "ADDRESS", Value: csiSocketDir + "csi.sock"}},
			VolumeMounts:    []corev1.VolumeMount{{Name: "socket-dir", MountPath: csiSocketDir}},
			SecurityContext: restricted(),
		}
	}
	ctrlTmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: l},
		Spec: corev1.PodSpec{
			ServiceAccountName: names.ServiceAccountName(names.CSIControllerName),
			PriorityClassName:  "system-cluster-critical",
			// The runtime's syscall filter costs it nothing (it runs as root: baseline).
			SecurityContext: &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{
				{
					Name: "linstor-csi", Image: image(componentImage(spec.Controller), plugin),
					Args:            []string{"--csi-endpoint=unix://$(ADDRESS)", "--node=$(KUBE_NODE_NAME)", "--linstor-endpoint=$(LS_CONTROLLERS)", "--log-level=info"},
					Env:             append([]corev1.EnvVar{{Name: "ADDRESS", Value: csiSocketDir + "csi.sock"}}, env...),
					VolumeMounts:    []corev1.VolumeMount{{Name: "socket-dir", MountPath: csiSocketDir}},
					SecurityContext: restricted(),
				},
				sidecar("csi-provisioner", images.CSIProvisioner, "--leader-election", "--feature-gates=Topology=true", "--enable-capacity", "--capacity-ownerref-level=2", "--extra-create-metadata"),
				sidecar("csi-attacher", images.CSIAttacher, "--leader-election"),
				sidecar("csi-snapshotter", images.CSISnapshotter, "--leader-election"),
				sidecar("csi-resizer", images.CSIResizer, "--leader-election", "--handle-volume-inuse-error=false"),
				sidecar("csi-livenessprobe", images.CSILivenessProbe),
				sidecar("csi-external-health-monitor-controller", images.CSIHealthMonitor, "--leader-election"),
			},
			Volumes: []corev1.Volume{{Name: "socket-dir", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	// The provisioner publishes capacity per topology segment and needs its pod identity.
	ctrlTmpl.Spec.Containers[1].Env = append(ctrlTmpl.Spec.Containers[1].Env,
		corev1.EnvVar{Name: "NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}})
	applyComponent(&ctrlTmpl, spec.Controller, "linstor-csi")
	if spec.Controller != nil {
		if err := patchPodTemplate(&ctrlTmpl, spec.Controller.PodTemplate, cluster.Spec.PodTemplatePolicy); err != nil {
			return nil, fmt.Errorf("spec.csi.controller.podTemplate: %w", err)
		}
	}
	controller := &appsv1.Deployment{
		TypeMeta:   typeMeta("apps/v1", "Deployment"),
		ObjectMeta: metav1.ObjectMeta{Name: names.CSIControllerName, Namespace: cluster.Namespace, Labels: l},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: selectorLabels(cluster, "linstor-csi")},
			Template: withSelector(ctrlTmpl, selectorLabels(cluster, "linstor-csi"), names.CSIControllerName),
		},
	}

	bidirectional := corev1.MountPropagationBidirectional
	pluginDir := kubeletDir + "/plugins/" + names.CSIDriverName + "/"
	nodeTmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: l},
		Spec: corev1.PodSpec{
			ServiceAccountName: names.ServiceAccountName(names.CSINodeName),
			PriorityClassName:  "system-node-critical",
			Tolerations:        haTaintTolerations(),
			Containers: []corev1.Container{
				{
					Name: "csi-node-driver-registrar", Image: imgs.Image(images.CSINodeRegistrar),
					Args:            []string{"--v=2", "--csi-address=$(ADDRESS)", "--kubelet-registration-path=$(DRIVER_REG_SOCK_PATH)"},
					Env:             []corev1.EnvVar{{Name: "ADDRESS", Value: pluginDir + "csi.sock"}, {Name: "DRIVER_REG_SOCK_PATH", Value: pluginDir + "csi.sock"}},
					VolumeMounts:    []corev1.VolumeMount{{Name: "plugin-dir", MountPath: pluginDir}, {Name: "registration-dir", MountPath: "/registration/"}},
					SecurityContext: restricted(),
				},
				{
					Name: "linstor-csi", Image: image(componentImage(spec.Node), plugin),
					Args: []string{"--csi-endpoint=unix://$(ADDRESS)", "--node=$(KUBE_NODE_NAME)", "--linstor-endpoint=$(LS_CONTROLLERS)", "--log-level=info"},
					Env:  append([]corev1.EnvVar{{Name: "ADDRESS", Value: pluginDir + "csi.sock"}}, env...),
					// Mounting DRBD devices into pods needs a privileged container with
					// bidirectional propagation into the kubelet's directory.
					SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
					VolumeMounts: []corev1.VolumeMount{
						{Name: "plugin-dir", MountPath: pluginDir},
						{Name: "publish-dir", MountPath: kubeletDir, MountPropagation: &bidirectional},
						{Name: "device-dir", MountPath: "/dev"},
					},
				},
				{
					Name: "csi-livenessprobe", Image: imgs.Image(images.CSILivenessProbe),
					Args:            []string{"--csi-address=$(ADDRESS)"},
					Env:             []corev1.EnvVar{{Name: "ADDRESS", Value: pluginDir + "csi.sock"}},
					VolumeMounts:    []corev1.VolumeMount{{Name: "plugin-dir", MountPath: pluginDir}},
					SecurityContext: restricted(),
				},
			},
			Volumes: []corev1.Volume{
				hostPath("plugin-dir", pluginDir, corev1.HostPathDirectoryOrCreate),
				hostPath("registration-dir", kubeletDir+"/plugins_registry/", corev1.HostPathDirectory),
				hostPath("publish-dir", kubeletDir, corev1.HostPathDirectory),
				hostPath("device-dir", "/dev", corev1.HostPathDirectory),
			},
		},
	}
	applyComponent(&nodeTmpl, spec.Node, "linstor-csi")
	if spec.Node != nil {
		if err := patchPodTemplate(&nodeTmpl, spec.Node.PodTemplate, cluster.Spec.PodTemplatePolicy); err != nil {
			return nil, fmt.Errorf("spec.csi.node.podTemplate: %w", err)
		}
	}
	node := &appsv1.DaemonSet{
		TypeMeta:   typeMeta("apps/v1", "DaemonSet"),
		ObjectMeta: metav1.ObjectMeta{Name: names.CSINodeName, Namespace: cluster.Namespace, Labels: l},
		Spec: appsv1.DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: selectorLabels(cluster, names.CSINodeName)},
			Template:       withSelector(nodeTmpl, selectorLabels(cluster, names.CSINodeName), names.CSINodeName),
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType},
		},
	}

	out := Objects{driver}
	if ctrlOn {
		out = append(out, controller)
	}
	if nodeOn {
		out = append(out, node)
	}
	return out, nil
}

// HAController renders the HA controller, which evicts pods of nodes that lost DRBD
// quorum so they restart elsewhere.
func HAController(cluster *linstorv1.LinstorCluster, imgs images.Set) (Objects, error) {
	spec := cluster.Spec.HighAvailabilityController
	if spec != nil && spec.Enabled != nil && !*spec.Enabled {
		return nil, nil
	}
	l := labels(cluster, names.HAControllerName)
	override := ""
	if spec != nil {
		override = spec.Image
	}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: l},
		Spec: corev1.PodSpec{
			ServiceAccountName: names.ServiceAccountName(names.HAControllerName),
			PriorityClassName:  "system-node-critical",
			Tolerations:        haTaintTolerations(),
			Containers: []corev1.Container{{
				Name: names.HAControllerName, Image: image(override, imgs.Image(images.HAController)),
				Args: []string{"/agent", "--v=2"},
				Env:  []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
				// It reads DRBD state through drbdsetup, which needs the host's netlink.
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
			}},
			HostNetwork: true,
			DNSPolicy:   corev1.DNSClusterFirstWithHostNet,
		},
	}
	applyComponent(&tmpl, spec, names.HAControllerName)
	if spec != nil {
		if err := patchPodTemplate(&tmpl, spec.PodTemplate, cluster.Spec.PodTemplatePolicy); err != nil {
			return nil, fmt.Errorf("spec.highAvailabilityController.podTemplate: %w", err)
		}
	}
	ds := &appsv1.DaemonSet{
		TypeMeta:   typeMeta("apps/v1", "DaemonSet"),
		ObjectMeta: metav1.ObjectMeta{Name: names.HAControllerName, Namespace: cluster.Namespace, Labels: l},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selectorLabels(cluster, names.HAControllerName)},
			Template: withSelector(tmpl, selectorLabels(cluster, names.HAControllerName), names.HAControllerName),
		},
	}
	return Objects{ds}, nil
}

// withSelector makes sure the pod carries the selector labels (a component name may
// differ from the common label set).
func withSelector(t corev1.PodTemplateSpec, sel map[string]string, component string) corev1.PodTemplateSpec {
	lbl := map[string]string{}
	for k, v := range t.Labels {
		lbl[k] = v
	}
	for k, v := range sel {
		lbl[k] = v
	}
	lbl[names.LabelComponent] = component
	t.Labels = lbl
	return t
}

func hostPath(name, path string, typ corev1.HostPathType) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: &typ}}}
}

func restricted() *corev1.SecurityContext {
	return &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
}

func intOrName(name string) intstr.IntOrString { return intstr.FromString(name) }
