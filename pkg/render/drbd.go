package render

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
)

// DRBDLoader is the DRBD module loader decided for one node.
type DRBDLoader struct {
	// Strategy is Compile, ShippedModules or None; never Auto.
	Strategy linstorv1.DRBDModuleLoader
	// Image of the loader; empty for None.
	Image string
	// HostUsrSrc mounts the host's /usr/src, where the kernel headers of a Compile are.
	HostUsrSrc bool
	// DriverToolkit is the image whose kernel headers a Compile on RHCOS builds against
	// (copied into the pod by an init container); "" elsewhere.
	DriverToolkit string
	// KernelVersion is the node's running kernel (status.nodeInfo.kernelVersion), whose
	// headers the loader compiles against when they come from the Driver Toolkit.
	KernelVersion string
	// SELinuxType is the loader's SELinux type where the host enforces SELinux (RHCOS).
	SELinuxType string
}

const (
	// loaderSELinuxType lets the loader insmod what it built and relabel it: a
	// container_t process may not load kernel modules. piraeus-operator's loader runs as
	// spc_t ("super privileged container", pkg/resources/satellite/satellite/
	// daemonset.yaml), and so does Kernel Module Management's worker
	// (internal/config/config.go: worker.seLinuxType spc_t).
	loaderSELinuxType = "spc_t"
	// builtModulesLabel is the type the loader gives the modules it built before insmod
	// (LB_SELINUX_AS, LINBIT drbd docker/entry.sh load_from_ram; piraeus-operator sets
	// the same).
	builtModulesLabel = "modules_object_t"
	// headersDir is where the Driver Toolkit image has the kernel-devel headers, one
	// directory per kernel (openshift/driver-toolkit Dockerfile: kernel-devel,
	// kernel-rt-devel), and where the loader's Compile finds them.
	headersDir = "/usr/src/kernels"
)

// ResolveDRBDLoader decides the loader of a node from its status.nodeInfo (osImage,
// kernelVersion), its labels, the configured strategy (empty is Auto) and the images,
// the cluster's Driver Toolkit among them:
//  1. Auto takes the strategy the operating system allows: Compile where the host
//     has kernel headers or OpenShift publishes them (RHCOS), None where the
//     operating system loads DRBD itself (Talos).
//  2. Compile mounts the host's /usr/src unless the operating system has none
//     (Flatcar keeps the headers below /lib/modules and /usr is read-only there; RHCOS
//     has none, its headers come from the Driver Toolkit image).
//  3. Compile on RHCOS takes the Driver Toolkit image tagged with the node's RHCOS
//     version; without one it returns a *images.DriverToolkitMissingError and no loader.
//  4. The image is the loader flavour for the osImage; None has none. On RHCOS the
//     loader runs as spc_t.
func ResolveDRBDLoader(node *corev1.Node, configured linstorv1.DRBDModuleLoader, imgs images.Set) (DRBDLoader, error) {
	osImage := node.Status.NodeInfo.OSImage
	km := images.DRBDKernelModules(osImage)
	strategy := configured
	if strategy == "" || strategy == linstorv1.DRBDModuleLoaderAuto {
		strategy = linstorv1.DRBDModuleLoaderCompile
		if km == images.OSProvided {
			strategy = linstorv1.DRBDModuleLoaderNone
		}
	}
	if strategy == linstorv1.DRBDModuleLoaderNone {
		return DRBDLoader{Strategy: strategy}, nil
	}
	loader := DRBDLoader{
		Strategy:   strategy,
		Image:      imgs.DRBDModuleLoader(osImage),
		HostUsrSrc: strategy == linstorv1.DRBDModuleLoaderCompile && km != images.LibModulesHeaders && km != images.DriverToolkitHeaders,
	}
	if km != images.DriverToolkitHeaders {
		return loader, nil
	}
	loader.SELinuxType = loaderSELinuxType
	if strategy == linstorv1.DRBDModuleLoaderCompile {
		toolkit, err := imgs.DriverToolkit().ImageFor(images.RHCOSVersion(osImage, node.Labels))
		if err != nil {
			return DRBDLoader{}, err
		}
		loader.DriverToolkit, loader.KernelVersion = toolkit, node.Status.NodeInfo.KernelVersion
	}
	return loader, nil
}

// lbHow is the loader image's LB_HOW for each strategy that runs it (LINBIT
// drbd/docker/entry.sh).
var lbHow = map[linstorv1.DRBDModuleLoader]string{
	linstorv1.DRBDModuleLoaderCompile:        "compile",
	linstorv1.DRBDModuleLoaderShippedModules: "shipped_modules",
}

// initContainers returns the loader's init containers and the volumes only they use
// (the host's /lib/modules is the satellite's volume "lib-modules" as well).
func (l DRBDLoader) initContainers() ([]corev1.Container, []corev1.Volume) {
	if l.Strategy == linstorv1.DRBDModuleLoaderNone {
		return nil, nil
	}
	// Both strategies modprobe optional modules (dm_thin_pool, dm_crypt, ...) from the
	// host's /lib/modules; Compile also reads /lib/modules/<kernel>/build.
	mounts := []corev1.VolumeMount{{Name: "lib-modules", MountPath: "/lib/modules", ReadOnly: true}}
	var volumes []corev1.Volume
	var containers []corev1.Container
	env := []corev1.EnvVar{{Name: "LB_HOW", Value: lbHow[l.Strategy]}}
	switch {
	case l.DriverToolkit != "":
		// The headers of the node's kernel, copied from the Driver Toolkit into the pod:
		// the loader compiles DRBD from its own source against them (piraeus-operator
		// docs/how-to/openshift.md does this with a hand-written patch).
		mounts = append(mounts, corev1.VolumeMount{Name: "usr-src", MountPath: "/usr/src", ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: "usr-src", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		containers = append(containers, l.kernelHeaders())
		if l.KernelVersion != "" {
			// The headers by their path, not through the host's
			// /lib/modules/<kernel>/build link (DRBD's Makefile takes KDIR).
			env = append(env, corev1.EnvVar{Name: "LB_MAKEOPTS", Value: "KDIR=" + headersDir + "/" + l.KernelVersion})
		}
	case l.HostUsrSrc:
		mounts = append(mounts, corev1.VolumeMount{Name: "usr-src", MountPath: "/usr/src", ReadOnly: true})
		volumes = append(volumes, hostPath("usr-src", "/usr/src", corev1.HostPathDirectoryOrCreate))
	}
	// Loading the kernel module needs SYS_MODULE, nothing more.
	security := &corev1.SecurityContext{RunAsUser: ptr.To[int64](0), Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_MODULE"}, Drop: []corev1.Capability{"ALL"}}}
	if l.SELinuxType != "" {
		security.SELinuxOptions = &corev1.SELinuxOptions{Type: l.SELinuxType}
		env = append(env, corev1.EnvVar{Name: "LB_SELINUX_AS", Value: builtModulesLabel})
	}
	return append(containers, corev1.Container{
		Name:            names.DRBDLoaderContainer,
		Image:           l.Image,
		SecurityContext: security,
		Env:             env,
		VolumeMounts:    mounts,
	}), volumes
}

// kernelHeaders is the init container that copies the kernel headers out of the Driver
// Toolkit image into the pod's usr-src volume. It only reads files every user may read
// and writes to an emptyDir: it needs no privilege at all.
func (l DRBDLoader) kernelHeaders() corev1.Container {
	return corev1.Container{
		Name:  names.KernelHeadersContainer,
		Image: l.DriverToolkit,
		// -R keeps the symbolic links of the kernel-devel tree as links.
		Command: []string{"cp", "-Rf", headersDir, "/headers/"},
		SecurityContext: &corev1.SecurityContext{
			RunAsUser: ptr.To[int64](65534), RunAsNonRoot: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem: ptr.To(true),
			Capabilities:           &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:         &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "usr-src", MountPath: "/headers"}},
	}
}
