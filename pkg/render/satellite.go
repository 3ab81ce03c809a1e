package render

import (
	"fmt"
	"hash/fnv"

	"github.com/linstor-operator/linstor-operator/pkg/clustertls"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
)

// SatelliteConfig renders the configuration every satellite pod shares: drbd-reactor's
// (ReactorConfig), and with internal TLS the satellites' linstor_satellite.toml (without
// it the defaults serve and there is none).
func SatelliteConfig(cluster *linstorv1.LinstorCluster) Objects {
	objs := Objects{ReactorConfig(cluster)}
	if !clustertls.InternalTLSEnabled(cluster) {
		return objs
	}
	return append(objs, &corev1.ConfigMap{
		TypeMeta:   typeMeta("v1", "ConfigMap"),
		ObjectMeta: metav1.ObjectMeta{Name: names.SatelliteConfigName, Namespace: cluster.Namespace, Labels: labels(cluster, names.SatelliteComponent)},
		Data:       map[string]string{"linstor_satellite.toml": satelliteTOML()},
	})
}

// Satellite renders the satellite of one node: a DaemonSet pinned to the node, on the
// host network, with the DRBD module loader decided by ResolveDRBDLoader, the DRBD
// shutdown guard where the host runs systemd, and the drbd-reactor metrics sidecar.
// An RHCOS node whose version has no Driver Toolkit image in imgs gets no satellite but
// a *images.DriverToolkitMissingError: a loader without headers cannot build DRBD.
func Satellite(cluster *linstorv1.LinstorCluster, sat *linstorv1.LinstorSatellite, node *corev1.Node, imgs images.Set) (Objects, error) {
	l := labels(cluster, names.SatelliteComponent)
	h := fnv.New32a()
	_, _ = h.Write([]byte(node.Name))
	l[names.LabelSatellite] = fmt.Sprintf("%08x", h.Sum32())
	selector := map[string]string{names.LabelName: names.SatelliteComponent, names.LabelInstance: cluster.Name, names.LabelSatellite: l[names.LabelSatellite]}
	defaults := cluster.Spec.Satellite
	override := ""
	if defaults != nil {
		override = defaults.Image
	}
	port := int32(names.SatellitePort)
	host := images.Host(node.Status.NodeInfo.OSImage)
	// The satellite's host mounts (docs/satellite.md says why each one is there).
	mounts := []corev1.VolumeMount{
		{Name: "dev", MountPath: "/dev"},
		{Name: "lib-modules", MountPath: "/lib/modules", ReadOnly: true},
		{Name: "var-lib-drbd", MountPath: "/var/lib/drbd"},
		{Name: "var-lib-linstor-pools", MountPath: "/var/lib/linstor-pools"},
		{Name: "var-lib-linstor-d", MountPath: "/var/lib/linstor.d"},
		{Name: "var-log-linstor-satellite", MountPath: "/var/log/linstor-satellite"},
		{Name: "etc-lvm-archive", MountPath: "/etc/lvm/archive"},
		{Name: "etc-lvm-backup", MountPath: "/etc/lvm/backup"},
		{Name: "run-lock", MountPath: "/run/lock"},
		{Name: "run-udev", MountPath: "/run/udev", ReadOnly: true},
	}
	// The DRBD module loader, decided from the node's OS and the merged configuration
	// (a satellite written before the field existed falls back to the cluster's default).
	configured := sat.Spec.DRBDModuleLoader
	if configured == "" && defaults != nil {
		configured = defaults.DRBDModuleLoader
	}
	loader, err := ResolveDRBDLoader(node, configured, imgs)
	if err != nil {
		return nil, err
	}
	initContainers, loaderVolumes := loader.initContainers()
	volumes := append(append([]corev1.Volume{
		hostPath("dev", "/dev", corev1.HostPathDirectory),
		hostPath("lib-modules", "/lib/modules", corev1.HostPathDirectory),
	}, loaderVolumes...),
		hostPath("var-lib-drbd", "/var/lib/drbd", corev1.HostPathDirectoryOrCreate),
		hostPath("var-lib-linstor-pools", "/var/lib/linstor-pools", corev1.HostPathDirectoryOrCreate),
		hostPath("var-lib-linstor-d", "/var/lib/linstor.d", corev1.HostPathDirectoryOrCreate),
		hostPath("var-log-linstor-satellite", "/var/log/linstor-satellite", corev1.HostPathDirectoryOrCreate),
		hostPath("etc-lvm-archive", host.LVMDir+"/archive", corev1.HostPathDirectoryOrCreate),
		hostPath("etc-lvm-backup", host.LVMDir+"/backup", corev1.HostPathDirectoryOrCreate),
		hostPath("run-lock", "/run/lock", corev1.HostPathDirectoryOrCreate),
		// Read-only, and created empty where the host has no udev: a mount added by an
		// operator upgrade must never keep a running satellite from starting again.
		hostPath("run-udev", "/run/udev", corev1.HostPathDirectoryOrCreate),
	)
	if host.Systemd {
		guard, guardVolumes := shutdownGuard(imgs.Image(images.DRBDShutdownGuard))
		initContainers = append(initContainers, guard)
		volumes = append(volumes, guardVolumes...)
	}
	reactor, reactorVolume := reactorContainer(imgs.Image(images.DRBDReactor))
	volumes = append(volumes, reactorVolume)
	if clustertls.InternalTLSEnabled(cluster) {
		port = names.SatelliteSecurePort
		v, m := pemVolumes("internal-tls", clustertls.InternalTLSSecretName(cluster), internalPEMDir, internalJKSDir)
		volumes = append(append(volumes, v...), corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: names.SatelliteConfigName}}}})
		mounts = append(append(mounts, m...), corev1.VolumeMount{Name: "config", MountPath: "/etc/linstor", ReadOnly: true})
	}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: l},
		Spec: corev1.PodSpec{
			// LINSTOR and DRBD address the node by its own IP: satellites use the host network.
			HostNetwork:       true,
			DNSPolicy:         corev1.DNSClusterFirstWithHostNet,
			PriorityClassName: "system-node-critical",
			// Its own account: the only grant it carries is the SCC DRBD needs (config/rbac).
			ServiceAccountName:           names.ServiceAccountName(names.SatelliteComponent),
			AutomountServiceAccountToken: ptr.To(false),
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
					{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node.Name}},
				}}},
			}}},
			Tolerations:    haTaintTolerations(),
			InitContainers: initContainers,
			Containers: []corev1.Container{{
				Name:  names.SatelliteComponent,
				Image: image(override, imgs.Image(images.LinstorSatellite)),
				Args:  []string{"startSatellite"},
				Env:   []corev1.EnvVar{{Name: "LB_FORCE_NODE_NAME", Value: node.Name}},
				Ports: []corev1.ContainerPort{{Name: "linstor", ContainerPort: port, Protocol: corev1.ProtocolTCP}},
				// DRBD devices, LVM and ZFS on the host need a privileged container.
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
				VolumeMounts:    mounts,
				ReadinessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intOrName("linstor")}}, PeriodSeconds: 10},
			}, reactor},
			Volumes: volumes,
		},
	}
	if defaults != nil {
		applyComponent(&tmpl, &defaults.ComponentSpec, names.SatelliteComponent)
		if err := patchPodTemplate(&tmpl, defaults.PodTemplate, cluster.Spec.PodTemplatePolicy); err != nil {
			return nil, fmt.Errorf("spec.satellite.podTemplate: %w", err)
		}
	}
	if err := patchPodTemplate(&tmpl, sat.Spec.PodTemplate, cluster.Spec.PodTemplatePolicy); err != nil {
		return nil, fmt.Errorf("LinstorSatelliteConfiguration podTemplate: %w", err)
	}
	pinToNode(&tmpl.Spec, node.Name)
	tmpl.Labels = withSelector(tmpl, selector, names.SatelliteComponent).Labels
	return Objects{&appsv1.DaemonSet{
		TypeMeta:   typeMeta("apps/v1", "DaemonSet"),
		ObjectMeta: metav1.ObjectMeta{Name: names.SatelliteDaemonSetName(node.Name), Namespace: sat.Namespace, Labels: l},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: tmpl,
			// One pod per node: an update replaces it in place, never two satellites at once.
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType},
		},
	}}, nil
}

// shutdownGuard is the init container that installs drbd-shutdown-guard as a systemd
// unit of the host (in /run, so it lasts until the next boot), and the host paths it
// writes. When the node shuts down, the unit stops before the kubelet and forces every
// DRBD resource to Secondary: a resource suspended without quorum would otherwise hold
// the file systems mounted on it and hang the shutdown. It runs privileged, as its
// project documents: it writes into the host's systemd directory and relabels its files
// for SELinux (a confined container may do neither), and asks systemd over D-Bus to
// reload and start the unit, which systemd grants only to a privileged caller.
func shutdownGuard(image string) (corev1.Container, []corev1.Volume) {
	return corev1.Container{
			Name:            names.ShutdownGuardContainer,
			Image:           image,
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true), ReadOnlyRootFilesystem: ptr.To(true)},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "run-systemd-system", MountPath: "/run/systemd/system"},
				{Name: "run-drbd-shutdown-guard", MountPath: "/run/drbd-shutdown-guard"},
				{Name: "systemd-bus-socket", MountPath: "/run/dbus/system_bus_socket"},
			},
		}, []corev1.Volume{
			hostPath("run-systemd-system", "/run/systemd/system", corev1.HostPathDirectory),
			// The guard and the drbdsetup it calls, copied out of the image.
			hostPath("run-drbd-shutdown-guard", "/run/drbd-shutdown-guard", corev1.HostPathDirectoryOrCreate),
			hostPath("systemd-bus-socket", "/run/dbus/system_bus_socket", corev1.HostPathSocket),
		}
}

// pinToNode makes every way the pod may be scheduled require its own node, whatever
// affinity the user gave or a patch left: each satellite DaemonSet belongs to one node,
// and a required term without the pin would let it run a pod on every node (N
// DaemonSets, N² pods, each claiming another node's name). A user's required terms are
// kept, each narrowed to the node (terms are ORed, requirements within one ANDed).
func pinToNode(spec *corev1.PodSpec, node string) {
	pin := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		fields := terms[i].MatchFields[:0:0]
		for _, f := range terms[i].MatchFields {
			if f.Key != "metadata.name" { // another node's pin, left by a patch
				fields = append(fields, f)
			}
		}
		terms[i].MatchFields = append(fields, pin)
	}
}
