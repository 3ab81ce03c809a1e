package discovery

import (
	"path"
	"regexp"
	"strings"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// LINSTOR offers every lsblk entry without a parent, larger than 1 GiB, not DRBD's
// major, without FSTYPE and without children (LsBlkUtils.filterDeviceCandidates,
// v1.33.3); it never looks at TYPE, and the REST answer carries none. So a loop device,
// a zvol or an md array with no signature is "unused" to LINSTOR, and only the kernel
// name says what the device is. Discovery claims only whole disks of the families
// udev's 60-persistent-storage.rules names as disks and the kernel's devices.txt gives
// a disk major (sd 8/65-71/128-135, hd 3/22/33/34..., vd and nvme dynamic virtio-blk and
// NVMe, xvd 202, mmcblk 179, dasd 94), without a partition suffix.

// Kind is what a device's kernel name says it is.
type Kind int

const (
	// UnknownKind: not a family discovery knows; claimed only when a pool's
	// devicePaths names the device exactly.
	UnknownKind Kind = iota
	// PhysicalDisk: a whole disk of a physical-disk family.
	PhysicalDisk
	// NeverClaimed: a device that is, or may sit on, someone's data (a loop device over
	// a DRBD volume, a zvol, an md array, a device-mapper device, DRBD itself, a network
	// block device) or is no disk at all (optical, RAM). Never claimed, even when named.
	NeverClaimed
)

type family struct {
	name *regexp.Regexp
	kind Kind
	what string
}

// families are matched against the device's base name, in order.
var families = []family{
	// Whole disks only: a partition (sda1, nvme0n1p1, mmcblk0p1) has a parent and
	// LINSTOR does not list it, but a name with a suffix is never taken as a disk.
	{regexp.MustCompile(`^sd[a-z]+$`), PhysicalDisk, "SCSI/SATA/SAS disk"},
	{regexp.MustCompile(`^nvme[0-9]+n[0-9]+$`), PhysicalDisk, "NVMe namespace"},
	{regexp.MustCompile(`^vd[a-z]+$`), PhysicalDisk, "virtio disk"},
	{regexp.MustCompile(`^xvd[a-z]+$`), PhysicalDisk, "Xen virtual disk"},
	{regexp.MustCompile(`^hd[a-z]+$`), PhysicalDisk, "IDE disk"},
	{regexp.MustCompile(`^mmcblk[0-9]+$`), PhysicalDisk, "MMC/SD card"},
	{regexp.MustCompile(`^dasd[a-z]+$`), PhysicalDisk, "s390 DASD"},

	{regexp.MustCompile(`^loop[0-9]+$`), NeverClaimed, "loop device (kubelet backs every raw-block volume in use with one, over its DRBD device: writing it writes the volume on every replica)"},
	{regexp.MustCompile(`^zd[0-9]+$`), NeverClaimed, "ZFS zvol (a volume of a zpool)"},
	{regexp.MustCompile(`^md[0-9]+$`), NeverClaimed, "software RAID (md) array"},
	{regexp.MustCompile(`^dm-[0-9]+$`), NeverClaimed, "device-mapper device (LVM, dm-crypt, multipath)"},
	{regexp.MustCompile(`^drbd[0-9]+$`), NeverClaimed, "DRBD device"},
	{regexp.MustCompile(`^rbd[0-9]+$`), NeverClaimed, "Ceph RBD image"},
	{regexp.MustCompile(`^nbd[0-9]+$`), NeverClaimed, "network block device"},
	{regexp.MustCompile(`^sr[0-9]+$`), NeverClaimed, "optical drive"},
	{regexp.MustCompile(`^z?ram[0-9]+$`), NeverClaimed, "RAM disk"},
}

// neverDirs: device nodes under these directories are device-mapper, md or zvol
// names (lsblk --paths prints /dev/mapper/<name> for dm devices).
var neverDirs = map[string]string{
	"/dev/mapper": "device-mapper device (LVM, dm-crypt, multipath)",
	"/dev/md":     "software RAID (md) array",
	"/dev/zvol":   "ZFS zvol (a volume of a zpool)",
	"/dev/drbd":   "DRBD device",
}

// DeviceKind classifies a device by the path LINSTOR lists (lsblk --paths NAME) and
// says what it is in words.
func DeviceKind(device string) (Kind, string) {
	for dir, what := range neverDirs {
		if strings.HasPrefix(device, dir+"/") {
			return NeverClaimed, what
		}
	}
	if path.Dir(device) != "/dev" {
		return UnknownKind, "device outside /dev"
	}
	base := path.Base(device)
	for _, f := range families {
		if f.name.MatchString(base) {
			return f.kind, f.what
		}
	}
	return UnknownKind, "device of a kind discovery does not know"
}

// namesExactly reports whether a pool's devicePaths lists the device (or its stable
// name) literally, without a wildcard: the admin chose this very device.
func namesExactly(patterns []string, d Disk) bool {
	stable := StableName(d)
	for _, p := range patterns {
		if strings.ContainsAny(p, `*?[\`) {
			continue
		}
		if p == d.Device || (stable != "" && p == stable) {
			return true
		}
	}
	return false
}

// identityKeys are what tell one disk from every other disk, on this node or another:
// its WWN when it reports one, else its serial. Two entries sharing one are one disk
// seen twice (two paths, or a LUN zoned to two nodes) unless proven otherwise, and the
// operator does not try to prove it. The serial alone is not compared when there is a
// WWN: the namespaces of one NVMe controller share its serial (lsblk SERIAL is the
// controller's) and differ in their WWN (EUI-64/NGUID).
func identityKeys(wwn, serial string) []string {
	switch {
	case wwn != "":
		return []string{"wwn:" + wwn}
	case serial != "":
		return []string{"serial:" + serial}
	}
	return nil
}

// IdentityKeys of a disk status another node reported, for Input.Elsewhere.
func IdentityKeys(d linstorv1.DiskStatus) []string { return identityKeys(d.WWN, d.Serial) }

// catchAll reports whether patterns match any disk, as if there were none: "*", or
// "/dev/*" for paths, takes every disk of every node as a size-only matcher does.
func catchAll(patterns []string, samples []string) bool {
	for _, p := range patterns {
		all := true
		for _, s := range samples {
			if ok, err := path.Match(p, s); err != nil || !ok {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// Every physical disk family, and models of several vendors (and none): a pattern
// matching all of them narrows nothing.
var (
	anyDevicePath = []string{"/dev/sda", "/dev/nvme0n1", "/dev/vda", "/dev/xvda", "/dev/hda", "/dev/mmcblk0", "/dev/dasda"}
	anyModel      = []string{"", "SAMSUNG MZQL21T9HCJR-00A07", "ST8000NM000A-2KE1", "QEMU HARDDISK", "INTEL SSDPE2KX010T8", "Virtual disk"}
)
