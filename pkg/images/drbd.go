package images

import "regexp"

// KernelModules is how a node's operating system lets the DRBD module loader get a
// DRBD 9 module for the running kernel. docs/drbd.md gives the source of each row of
// kernelModules.
type KernelModules int

const (
	// HostHeaders: the host has kernel headers installed under /usr/src, where
	// /lib/modules/<kernel>/build points (Debian, Ubuntu, RHEL and its rebuilds). The
	// loader compiles DRBD. Also assumed for an operating system not listed.
	HostHeaders KernelModules = iota
	// LibModulesHeaders: /usr/src does not exist on a read-only /usr (Flatcar); the
	// loader compiles DRBD with only /lib/modules from the host.
	LibModulesHeaders
	// DriverToolkitHeaders: the host has no kernel headers (RHCOS), and OpenShift
	// publishes them, for each RHCOS version, in its Driver Toolkit image (DriverToolkit).
	// The loader compiles DRBD against those. RHCOS enforces SELinux: the loader runs as
	// spc_t and relabels the modules it built before loading them.
	DriverToolkitHeaders
	// OSProvided: the operating system itself ships DRBD 9 and loads it at boot (Talos,
	// with the drbd system extension); a loader could not build or load one.
	OSProvided
)

// kernelModules lists the operating systems that differ from HostHeaders, by the
// osImage that selects them, in match order.
var kernelModules = []struct {
	match *regexp.Regexp
	km    KernelModules
}{
	{regexp.MustCompile(`^Red Hat Enterprise Linux CoreOS`), DriverToolkitHeaders},
	{regexp.MustCompile(`^Talos\b`), OSProvided},
	{regexp.MustCompile(`^Flatcar Container Linux`), LibModulesHeaders},
}

// DRBDKernelModules returns how the operating system of a node's
// status.nodeInfo.osImage provides the DRBD module.
func DRBDKernelModules(osImage string) KernelModules {
	for _, k := range kernelModules {
		if k.match.MatchString(osImage) {
			return k.km
		}
	}
	return HostHeaders
}
