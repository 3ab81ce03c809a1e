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
}

// ResolveDRBDLoader decides the loader of a node from its status.nodeInfo.osImage and
// the configured strategy (empty is Auto):
//  1. Auto takes the strategy the operating system allows: Compile where the host
//     has kernel headers, ShippedModules where it has none (RHCOS), None where the
//     operating system loads DRBD itself (Talos).
//  2. Compile mounts the host's /usr/src unless the operating system has none
//     (Flatcar keeps the headers below /lib/modules and /usr is read-only there).
//  3. The image is the loader flavour for the osImage; None has none.
func ResolveDRBDLoader(osImage string, configured linstorv1.DRBDModuleLoader, imgs images.Set) DRBDLoader {
	km := images.DRBDKernelModules(osImage)
	strategy := configured
	if strategy == "" || strategy == linstorv1.DRBDModuleLoaderAuto {
		switch km {
		case images.NoHeaders:
			strategy = linstorv1.DRBDModuleLoaderShippedModules
		case images.OSProvided:
			strategy = linstorv1.DRBDModuleLoaderNone
		default:
			strategy = linstorv1.DRBDModuleLoaderCompile
		}
	}
	if strategy == linstorv1.DRBDModuleLoaderNone {
		return DRBDLoader{Strategy: strategy}
	}
	return DRBDLoader{
		Strategy:   strategy,
		Image:      imgs.DRBDModuleLoader(osImage),
		HostUsrSrc: strategy == linstorv1.DRBDModuleLoaderCompile && km != images.LibModulesHeaders,
	}
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
	if l.HostUsrSrc {
		mounts = append(mounts, corev1.VolumeMount{Name: "usr-src", MountPath: "/usr/src", ReadOnly: true})
		volumes = append(volumes, hostPath("usr-src", "/usr/src", corev1.HostPathDirectoryOrCreate))
	}
	return []corev1.Container{{
		Name:  names.DRBDLoaderContainer,
		Image: l.Image,
		// Loading the kernel module needs SYS_MODULE, nothing more.
		SecurityContext: &corev1.SecurityContext{RunAsUser: ptr.To[int64](0), Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_MODULE"}, Drop: []corev1.Capability{"ALL"}}},
		Env:             []corev1.EnvVar{{Name: "LB_HOW", Value: lbHow[l.Strategy]}},
		VolumeMounts:    mounts,
	}}, volumes
}
