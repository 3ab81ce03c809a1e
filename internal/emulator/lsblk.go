package emulator

import (
	"path"
	"regexp"
	"slices"
	"time"
	"unicode"
)

// What lsblk prints on a machine, and LINSTOR's candidate filter over it. The
// satellite runs `lsblk -P -b --paths -o NAME,SIZE,PKNAME,KNAME,ROTA,TYPE,FSTYPE,
// MAJ:MIN,MODEL,SERIAL,WWN,STATE,DISC-GRAN` (LsBlkUtils.lsblk, LsBlkEntry.LsBlkFields)
// and keeps what filterDeviceCandidates lets through. lsblk facts are from util-linux
// misc-utils/lsblk.c and lsblk-properties.c (v2.38.1 and v2.39.3 agree), majors from
// the kernel's Documentation/admin-guide/devices.txt, udev facts from systemd's
// rules.d/60-persistent-storage.rules and 60-block.rules.

// LsblkEntry is one line of that lsblk output.
type LsblkEntry struct {
	// Name is NAME with --paths: /dev/<kernel name>, /dev/mapper/<name> for
	// device-mapper devices.
	Name string
	// KName is KNAME: /dev/<kernel name>, e.g. /dev/dm-0.
	KName string
	// PKName is PKNAME: the parent's KNAME; "" for a device without parents. A device
	// of several parents (an md array, a multipath map) is printed once under each: with
	// -P lsblk keeps the tree's parent-child order (force_tree_order).
	PKName string
	Type   string
	// FSType is FSTYPE as the udev database has it (lsblk-properties.c reads udev first,
	// libblkid only for a device udev does not know).
	FSType     string
	Size       int64
	Rotational bool
	Major      int
	// Model and Serial are empty for partitions and devices with parents (lsblk.c:
	// only a device that is not a partition and has no slaves has them).
	Model  string
	Serial string
	WWN    string
}

// Majors of block devices (Documentation/admin-guide/devices.txt; zvols: OpenZFS
// include/sys/zvol.h ZVOL_MAJOR, the default of the zvol_major module parameter;
// NVMe: include/uapi/linux/major.h BLOCK_EXT_MAJOR). Virtio, device-mapper, rbd and
// zram register a dynamic major at load time (register_blkdev(0, ...), from 254
// down); majorOf leaves those 0 unless a test gives one.
const (
	ramMajor  = 1
	loopMajor = 7
	sdMajor   = 8
	mdMajor   = 9
	srMajor   = 11
	nbdMajor  = 43
	drbdMajor = 147
	mmcMajor  = 179
	xvdMajor  = 202
	zvolMajor = 230
	nvmeMajor = 259
)

// majorKinds give the major of a kernel name's kind; sd is computed (sdMajorOf).
var majorKinds = []struct {
	name  *regexp.Regexp
	major int
}{
	{regexp.MustCompile(`^ram[0-9]+$`), ramMajor},
	{regexp.MustCompile(`^loop[0-9]+$`), loopMajor},
	{regexp.MustCompile(`^md[0-9]+$`), mdMajor},
	{regexp.MustCompile(`^sr[0-9]+$`), srMajor},
	{regexp.MustCompile(`^nbd[0-9]+$`), nbdMajor},
	{regexp.MustCompile(`^drbd[0-9]+$`), drbdMajor},
	{regexp.MustCompile(`^mmcblk[0-9]+`), mmcMajor},
	{regexp.MustCompile(`^xvd[a-z]+`), xvdMajor},
	{regexp.MustCompile(`^zd[0-9]+`), zvolMajor},
	{regexp.MustCompile(`^nvme[0-9]+n[0-9]+`), nvmeMajor},
}

var sdName = regexp.MustCompile(`^sd([a-z]+)[0-9]*$`)

// majorOf is the device's major number: as given, else the one its kind has.
func majorOf(d *blockDev) int {
	if d.Major != 0 {
		return d.Major
	}
	base := path.Base(d.kname())
	if m := sdName.FindStringSubmatch(base); m != nil {
		return sdMajorOf(m[1])
	}
	for _, k := range majorKinds {
		if k.name.MatchString(base) {
			return k.major
		}
	}
	return 0
}

// sdMajorOf: SCSI disks 0-15 (sda-sdp) are on major 8, 16-127 on 65-71, 128-255 on
// 128-135, sixteen disks a major (devices.txt).
func sdMajorOf(letters string) int {
	n := 0
	for _, c := range letters {
		n = n*26 + int(c-'a') + 1
	}
	n-- // sda is disk 0
	switch {
	case n < 16:
		return sdMajor
	case n < 128:
		return 65 + (n-16)/16
	}
	return 128 + (n-128)/16
}

// udevProbed: udev runs blkid on the device and records its FSTYPE. 60-persistent-
// storage.rules probes loop, mmcblk, nvme, sd, sr (with a data medium), vd, xvd, nbd,
// zd and a few rarer kinds; device-mapper's 13-dm-disk.rules and mdadm's
// 63-md-raid-arrays.rules probe dm and md. rbd and zram are in no list, so lsblk shows
// an empty FSTYPE for them whatever they hold (kubernetes/kubernetes#59050,
// rook/rook#1553: a mounted ext4 rbd device listed with an empty FSTYPE).
var udevProbedName = regexp.MustCompile(`^(loop|mmcblk[0-9]|msblk|mspblk|nvme|sd|sr|vd|xvd|bcache|cciss|dasd|ubd|ubi|scm|pmem|nbd|zd|dm-|md)`)

func udevProbed(d *blockDev) bool { return udevProbedName.MatchString(path.Base(d.kname())) }

// viewFSType is what lsblk shows as FSTYPE on this host.
func (d *blockDev) viewFSType() string {
	switch {
	case d.mpathMember:
		return FSTypeMpathMember
	case !udevProbed(d):
		return ""
	case !d.staleSince.IsZero():
		return d.seenFSType
	}
	return d.FSType
}

// viewPartitioned: the kernel of this host has partitions of the device.
func (d *blockDev) viewPartitioned() bool {
	if !d.staleSince.IsZero() {
		return d.seenPartitioned
	}
	return d.Partitioned
}

// partitionName is partition n of a disk as the kernel names it: a "p" between a name
// ending in a digit and the number (nvme0n1p1, mmcblk0p1, loop0p1), none otherwise
// (sda1) (block/partitions/core.c).
func partitionName(disk string, n int) string {
	if disk != "" && unicode.IsDigit(rune(disk[len(disk)-1])) {
		return disk + "p" + itoa(n)
	}
	return disk + itoa(n)
}

// lsblk renders the host's devices as lsblk prints them now. Top-level devices are
// those without parents, children follow their parents; a device of several parents
// is printed under each. lsblk sorts by MAJ:MIN; the emulator keeps the order the
// devices were given in. Left out, as lsblk leaves them out: RAM disks (major 1,
// excluded unless --all), loop devices of size 0 without a backing file
// (lsblk.c ignore_empty).
func (h *host) lsblk(now time.Time) []LsblkEntry {
	h.catchUp(now)
	byName := map[string]*blockDev{}
	for _, d := range h.devs {
		byName[d.Device], byName[d.kname()] = d, d
	}
	children := map[*blockDev][]*blockDev{}
	for _, d := range h.devs {
		for _, p := range d.Parents {
			if parent := byName[p]; parent != nil {
				children[parent] = append(children[parent], d)
			}
		}
	}
	var out []LsblkEntry
	var walk func(d *blockDev, parent *blockDev)
	walk = func(d *blockDev, parent *blockDev) {
		if d.Size == 0 && d.typ() == TypeLoop && d.Backing == "" {
			return
		}
		out = append(out, d.entry(parent))
		hasPart := false
		for _, c := range children[d] {
			hasPart = hasPart || c.typ() == TypePart
			walk(c, d)
		}
		if d.viewPartitioned() && !hasPart {
			// A partition table with no partition described: lsblk shows one.
			part := &blockDev{Disk: Disk{Device: h.freeName(partitionName(d.Device, 1)), Type: TypePart, Size: max(d.Size-(2<<20), 0),
				Major: majorOf(d), WWN: d.WWN, Rotational: d.Rotational}}
			out = append(out, part.entry(d))
		}
	}
	for _, d := range h.devs {
		if len(d.Parents) == 0 && majorOf(d) != ramMajor {
			walk(d, nil)
		}
	}
	return out
}

// freeName is name, or name with a suffix when a device of the host has it.
func (h *host) freeName(name string) string {
	for i := 0; ; i++ {
		candidate := name
		if i > 0 {
			candidate = name + "_" + itoa(i)
		}
		if h.find(candidate) == nil {
			return candidate
		}
	}
}

func (d *blockDev) entry(parent *blockDev) LsblkEntry {
	r := LsblkEntry{Name: d.Device, KName: d.kname(), Type: d.typ(), FSType: d.viewFSType(), Size: d.Size,
		Rotational: d.Rotational, Major: majorOf(d), WWN: d.WWN}
	if parent != nil {
		r.PKName = parent.kname()
	}
	if d.typ() != TypePart && len(d.Parents) == 0 {
		r.Model, r.Serial = d.Model, d.Serial
	}
	return r
}

// Candidate filter constants of LsBlkUtils (MINIMAL_DEVICE_SIZE_BYTES, MAJOR_DRBD_NR).
const minCandidateSize = 1 << 30

// filterDeviceCandidates is LsBlkUtils.filterDeviceCandidates (v1.33.3) over lsblk's
// lines: no PKNAME, SIZE above 1 GiB, major not DRBD's, empty FSTYPE, and no line
// whose PKNAME is its NAME. Nothing looks at TYPE. The child test compares PKNAME, a
// kernel name, with NAME, which for a device-mapper device is /dev/mapper/<name>: the
// children of a device-mapper device never count (it has parents itself, except a
// device-mapper target such as dm-zero).
func filterDeviceCandidates(entries []LsblkEntry) []LsblkEntry {
	var out []LsblkEntry
	for _, e := range entries {
		if e.PKName != "" || e.Size <= minCandidateSize || e.Major == drbdMajor || e.FSType != "" {
			continue
		}
		hasChild := false
		for _, c := range entries {
			if c.PKName == e.Name {
				hasChild = true
				break
			}
		}
		if !hasChild {
			out = append(out, e)
		}
	}
	return out
}

// catchUp lets this host see writes made through another host or path once its
// rescan delay has passed.
func (h *host) catchUp(now time.Time) {
	if h.rescanDelay <= 0 {
		return
	}
	for _, d := range h.devs {
		if !d.staleSince.IsZero() && !now.Before(d.staleSince.Add(h.rescanDelay)) {
			h.probe(d)
		}
	}
}

// probe is udev re-reading the device (blkid) and the kernel re-reading its partition
// table: the view is what is on it; partitions that are gone leave.
func (h *host) probe(d *blockDev) {
	d.staleSince, d.seenFSType, d.seenPartitioned = time.Time{}, "", false
	if !d.Partitioned {
		h.dropPartitions(d)
	}
}

// dropPartitions removes the described partitions of d, gone with its partition table.
// The kernel keeps a partition that is held (BLKRRPART fails with EBUSY).
func (h *host) dropPartitions(d *blockDev) {
	var gone []*blockDev
	for _, x := range h.devs {
		if x.typ() == TypePart && len(x.Parents) == 1 && (x.Parents[0] == d.Device || x.Parents[0] == d.kname()) && !h.held(x) {
			gone = append(gone, x)
		}
	}
	h.devs = slices.DeleteFunc(h.devs, func(x *blockDev) bool { return slices.Contains(gone, x) })
}

// held: the kernel refuses to open the device exclusively (pvcreate, zpool create):
// a device-mapper or md device is made from it or from one of its partitions, or it
// belongs to an active VG or imported zpool here.
func (h *host) held(d *blockDev) bool {
	if d.InUse() {
		return true
	}
	for _, x := range h.devs {
		for _, p := range x.Parents {
			if p != d.Device && p != d.kname() {
				continue
			}
			if x.typ() != TypePart || h.held(x) {
				return true
			}
		}
	}
	return false
}

// Lsblk returns what lsblk prints on a node's machine now, as the satellite runs it:
// the lines LINSTOR's candidate filter reads (LinstorCandidates gives those it keeps).
func (e *Emulator) Lsblk(node string) []LsblkEntry {
	return onHost(e, node, func(h *host) []LsblkEntry { return h.lsblk(e.now()) })
}

// LinstorCandidates returns the lsblk lines of a node's machine that LINSTOR offers as
// unused (GET /v1/physical-storage/{node}), whether or not the satellite is online.
func (e *Emulator) LinstorCandidates(node string) []LsblkEntry {
	return onHost(e, node, func(h *host) []LsblkEntry { return filterDeviceCandidates(h.lsblk(e.now())) })
}

// onHost reads a node's machine under the emulator's lock; the zero value when the
// node has no machine.
func onHost[T any](e *Emulator, node string, read func(h *host) T) T {
	e.mu.Lock()
	defer e.mu.Unlock()
	var zero T
	h := e.hosts[hostKey(node)]
	if h == nil {
		return zero
	}
	return read(h)
}

// RescanNodeDisks makes a node's machine see what is on its devices now, as `udevadm
// trigger` and a partition-table re-read do. Without it (or SetNodeRescanDelay), a
// write made through another host sharing a LUN, or through another path to it, stays
// unseen: udev re-probes a device only when this host closes it after writing
// (60-block.rules OPTIONS+="watch"), and nothing tells it of another host's write.
func (e *Emulator) RescanNodeDisks(node string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if h := e.hosts[hostKey(node)]; h != nil {
		for _, d := range append([]*blockDev(nil), h.devs...) {
			if !d.staleSince.IsZero() {
				h.probe(d)
			}
		}
	}
}

// SetNodeRescanDelay makes a node's machine see writes made through another host or
// path after d, as if something re-probed its devices periodically; 0 (the default)
// waits for RescanNodeDisks. Time is the emulator's clock (SetClock).
func (e *Emulator) SetNodeRescanDelay(node string, d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.machine(node).rescanDelay = d
}

// machine is a node's machine, made empty on first use; the caller holds e.mu.
func (e *Emulator) machine(node string) *host {
	h := e.hosts[hostKey(node)]
	if h == nil {
		h = newHost(node, nil)
		e.hosts[hostKey(node)] = h
	}
	return h
}
