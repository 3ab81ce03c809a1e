package images

import "regexp"

// HostLayout is what a node's operating system offers the satellite pod beside the DRBD
// module: whether the DRBD shutdown guard can install itself, and where LVM's metadata
// backups live. docs/satellite.md gives the source of each row of hostLayouts.
type HostLayout struct {
	// Systemd: the host runs systemd with a D-Bus system bus, which the shutdown guard
	// needs to install and start its unit. Also assumed for an operating system not listed.
	Systemd bool
	// LVMDir holds LVM's metadata backups on the host (its backup/ and archive/).
	LVMDir string
}

// defaultHost is every operating system hostLayouts does not list.
var defaultHost = HostLayout{Systemd: true, LVMDir: "/etc/lvm"}

// hostLayouts lists the operating systems that differ from defaultHost, by the osImage
// that selects them, in match order.
var hostLayouts = []struct {
	match  *regexp.Regexp
	layout HostLayout
}{
	// No systemd, and /etc is read-only: /var is the writable, persistent part.
	{regexp.MustCompile(`^Talos\b`), HostLayout{Systemd: false, LVMDir: "/var/etc/lvm"}},
}

// Host returns the layout of the operating system of a node's status.nodeInfo.osImage.
func Host(osImage string) HostLayout {
	for _, h := range hostLayouts {
		if h.match.MatchString(osImage) {
			return h.layout
		}
	}
	return defaultHost
}
