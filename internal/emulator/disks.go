package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	lapi "github.com/LINBIT/golinstor/client"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The machines' block devices. Devices, and the volume groups and zpools made on them,
// belong to the host, not to LINSTOR: they are kept per node name and outlive the
// deletion and re-creation of the LINSTOR node, controller restarts and database
// restores, as a real machine's disks do. lsblk.go derives what lsblk prints from
// them, and LINSTOR's candidate list from that; volumes.go attaches block volumes and
// records what device pools destroy.

// lsblk FSTYPE values of the signatures device pools write, and the one udev's
// multipath rules give every path of a multipath device (multipath-tools
// multipath/multipath.rules: ID_FS_TYPE="mpath_member" once multipath claims it).
const (
	FSTypeLVM         = "LVM2_member"
	FSTypeZFS         = "zfs_member"
	FSTypeMpathMember = "mpath_member"
)

// lsblk TYPE values (util-linux misc-utils/lsblk.c get_type): "part" for a partition;
// for device-mapper the prefix of its DM UUID, lower-cased (LVM, CRYPT, mpath, part for
// kpartx partitions), "dm" without one; "loop"; md/level for md arrays ("raid1");
// else the SCSI type, "disk" when there is none.
const (
	TypeDisk  = "disk"
	TypePart  = "part"
	TypeLoop  = "loop"
	TypeLVM   = "lvm"
	TypeCrypt = "crypt"
	TypeMpath = "mpath"
	TypeDM    = "dm"
	TypeROM   = "rom"
	TypeRAID1 = "raid1"
)

// mdLevels are md/level values lsblk prints as TYPE for md arrays.
var mdLevels = map[string]bool{"linear": true, "raid0": true, "raid1": true, "raid4": true, "raid5": true, "raid6": true, "raid10": true, "md": true}

// dmTypes are device-mapper devices: lsblk NAME /dev/mapper/<name>, KNAME /dev/dm-<n>.
var dmTypes = map[string]bool{TypeLVM: true, TypeCrypt: true, TypeMpath: true, TypeDM: true}

// DisksAnnotation on a Kubernetes Node lists that machine's block devices when the
// emulator is coupled with Cluster.DisksFromNodes: a JSON list of Disk (see
// ParseDisksAnnotation).
const DisksAnnotation = "emulator.linstor.io/disks"

// Disk is one block device of a host as lsblk reports it, with what is on it: a whole
// disk, or, with Type and Parents, a partition, a loop device, a zvol, a device-mapper
// or md device, an optical drive.
type Disk struct {
	// Device is what lsblk --paths prints as NAME: the kernel path (/dev/nvme1n1,
	// /dev/sda1, /dev/loop3, /dev/zd0, /dev/md127), except for device-mapper devices,
	// which it names /dev/mapper/<name> (lsblk.c mk_dm_name).
	Device string
	// KName is lsblk's KNAME when it differs from Device: /dev/dm-<n> for a
	// device-mapper device, required for those and refused for others. Children name
	// their parent by it (lsblk PKNAME).
	KName string
	// Type is lsblk's TYPE (TypeDisk when empty): TypePart, TypeLoop, TypeLVM,
	// TypeCrypt, TypeMpath, TypeDM, TypeROM, an md level such as TypeRAID1.
	Type string
	// Parents are the devices this one is made from, by Device or KName: the disk of a
	// partition, the members of an md array, the devices under a device-mapper device
	// (sysfs slaves). lsblk prints the device once under each, with that parent as
	// PKNAME. A loop device has none: its backing file or device is not a parent.
	Parents []string
	// Size in bytes. Only a loop device (detached) or an optical drive (no medium) may
	// have none.
	Size       int64
	Rotational bool
	Model      string
	Serial     string
	WWN        string
	// Links are the other names udev gives the device, e.g.
	// /dev/disk/by-id/nvme-eui.0025388b91b2f1a1; any of them opens it.
	Links []string
	// FSType is the signature on the device, as lsblk's FSTYPE shows it once udev has
	// probed the device: "" when none is found, else e.g. "ext4", FSTypeLVM, FSTypeZFS.
	// FSTypeMpathMember marks a path multipathd holds. What lsblk shows can differ: a
	// write through another host or path is seen after a rescan (Lsblk), and udev never
	// probes some kinds (rbd, zram).
	FSType string
	// Partitioned: the device holds a partition table, so lsblk lists children under it
	// (set by itself when a partition of it is listed).
	Partitioned bool
	// Major is the device's major number; 0 takes the number the kernel gives the
	// device's kind (lsblk.go majorOf), 147 is DRBD.
	Major int
	// Pool names the active volume group (FSType LVM2_member) or imported zpool
	// (zfs_member) the device belongs to on this host; "" when none: a signature alone
	// (an orphan PV, the label of a destroyed zpool) is old and inactive. A device with a
	// Pool is in use.
	Pool string
	// Backing is what a loop device reads and writes: a file, or a block device such as
	// the DRBD device of an attached volume (losetup's BACK-FILE).
	Backing string
	// Shared: the device is a LUN of shared storage (a SAN LUN zoned to several hosts,
	// a dual-ported disk): every Shared device with the same WWN, on this host or
	// another, is the same medium, and what is written through one is on all.
	Shared bool
	// Data names what the device holds that no signature shows, e.g. "VM image": a
	// virtual machine's raw disk or a database's block volume has an empty FSTYPE, yet a
	// device pool made on it destroys it (Overwritten).
	Data string
}

// InUse reports whether the device belongs to an active volume group or imported zpool.
func (d Disk) InUse() bool { return d.Pool != "" }

func (d Disk) clone() Disk {
	d.Links = append([]string(nil), d.Links...)
	d.Parents = append([]string(nil), d.Parents...)
	if len(d.Links) == 0 {
		d.Links = nil
	}
	if len(d.Parents) == 0 {
		d.Parents = nil
	}
	return d
}

// kname is the device's kernel name as a path.
func (d Disk) kname() string {
	if d.KName != "" {
		return d.KName
	}
	return d.Device
}

func (d Disk) typ() string {
	if d.Type == "" {
		return TypeDisk
	}
	return d.Type
}

// names are the paths that open the device.
func (d Disk) names() []string {
	out := []string{d.Device}
	if d.KName != "" {
		out = append(out, d.KName)
	}
	return append(out, d.Links...)
}

// diskJSON is the annotation's form of a Disk: the REST answer's field names for what
// lsblk reports, the size a quantity ("1Ti") or a number of bytes.
type diskJSON struct {
	Device      string             `json:"device"`
	KName       string             `json:"kname,omitempty"`
	Type        string             `json:"type,omitempty"`
	Parents     []string           `json:"parents,omitempty"`
	Size        *resource.Quantity `json:"size"`
	Rotational  bool               `json:"rotational,omitempty"`
	Model       string             `json:"model,omitempty"`
	Serial      string             `json:"serial,omitempty"`
	WWN         string             `json:"wwn,omitempty"`
	Links       []string           `json:"links,omitempty"`
	FSType      string             `json:"fstype,omitempty"`
	Partitioned bool               `json:"partitioned,omitempty"`
	Major       int                `json:"major,omitempty"`
	Pool        string             `json:"pool,omitempty"`
	Backing     string             `json:"backing,omitempty"`
	Shared      bool               `json:"shared,omitempty"`
	Data        string             `json:"data,omitempty"`
}

// MarshalJSON writes the annotation form, the size as a binary quantity.
func (d Disk) MarshalJSON() ([]byte, error) {
	return json.Marshal(diskJSON{Device: d.Device, KName: d.KName, Type: d.Type, Parents: d.Parents,
		Size: resource.NewQuantity(d.Size, resource.BinarySI), Rotational: d.Rotational,
		Model: d.Model, Serial: d.Serial, WWN: d.WWN, Links: d.Links, FSType: d.FSType, Partitioned: d.Partitioned, Major: d.Major, Pool: d.Pool,
		Backing: d.Backing, Shared: d.Shared, Data: d.Data})
}

// UnmarshalJSON reads the annotation form strictly: an unknown field is an error, so a
// misspelt one is not silently dropped.
func (d *Disk) UnmarshalJSON(b []byte) error {
	var in diskJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return err
	}
	if in.Size == nil {
		return fmt.Errorf("disk %q: no size", in.Device)
	}
	*d = Disk{Device: in.Device, KName: in.KName, Type: in.Type, Parents: in.Parents, Size: in.Size.Value(), Rotational: in.Rotational,
		Model: in.Model, Serial: in.Serial, WWN: in.WWN, Links: in.Links, FSType: in.FSType, Partitioned: in.Partitioned, Major: in.Major,
		Pool: in.Pool, Backing: in.Backing, Shared: in.Shared, Data: in.Data}
	return nil
}

// ParseDisksAnnotation reads the value of DisksAnnotation, e.g.
//
//	[{"device":"/dev/nvme0n1","size":"1Ti","model":"SAMSUNG MZQL21T9HCJR-00A07",
//	  "serial":"S64GNE0R123456","wwn":"eui.36344730523012340025384500000001",
//	  "links":["/dev/disk/by-id/nvme-eui.36344730523012340025384500000001"]},
//	 {"device":"/dev/loop1","type":"loop","size":"20Gi","backing":"/var/lib/vm1.img","data":"VM image"}]
//
// Besides device, size, rotational, model, serial, wwn and links, a device may say what
// it is (type, kname, parents, backing, shared, major) and what is on it (fstype,
// partitioned, pool, data). A list from before types existed reads as whole disks.
func ParseDisksAnnotation(value string) ([]Disk, error) {
	var disks []Disk
	dec := json.NewDecoder(strings.NewReader(value))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&disks); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the disk list")
	}
	if err := validateDisks(disks); err != nil {
		return nil, err
	}
	return disks, nil
}

// EncodeDisksAnnotation renders disks as the value of DisksAnnotation.
func EncodeDisksAnnotation(disks ...Disk) (string, error) {
	if err := validateDisks(disks); err != nil {
		return "", err
	}
	if disks == nil {
		disks = []Disk{}
	}
	b, err := json.Marshal(disks)
	return string(b), err
}

var dmKName = regexp.MustCompile(`^/dev/dm-[0-9]+$`)

// validateDisks refuses what no machine has: relative paths, a name two devices answer
// to, a pool without the signature of its kind, types lsblk never prints, a partition,
// md array or device-mapper device without the devices it is made from, a parent that
// is not there or a device made from itself.
func validateDisks(disks []Disk) error {
	seen := map[string]string{}
	for _, d := range disks {
		typ := d.typ()
		switch {
		case !strings.HasPrefix(d.Device, "/dev/"):
			return fmt.Errorf("disk %q: the device must be a path under /dev/", d.Device)
		case d.Size < 0 || d.Size == 0 && typ != TypeLoop && typ != TypeROM:
			return fmt.Errorf("disk %s: the size must be positive (only a detached loop device or an empty optical drive has none)", d.Device)
		case d.Major < 0:
			return fmt.Errorf("disk %s: negative major number", d.Device)
		case d.Pool != "" && d.FSType != FSTypeLVM && d.FSType != FSTypeZFS:
			return fmt.Errorf("disk %s: pool %q needs fstype %s or %s", d.Device, d.Pool, FSTypeLVM, FSTypeZFS)
		case typ != TypeDisk && typ != TypePart && typ != TypeLoop && typ != TypeROM && !dmTypes[typ] && !mdLevels[typ]:
			return fmt.Errorf("disk %s: type %q is none lsblk prints (disk, part, loop, rom, lvm, crypt, mpath, dm, or an md level such as raid1)", d.Device, d.Type)
		case strings.HasPrefix(d.Device, "/dev/mapper/") != dmKName.MatchString(d.KName):
			return fmt.Errorf("disk %s: kname %q: a device-mapper device (and only it) has device /dev/mapper/<name> and kname /dev/dm-<n>, as lsblk --paths prints NAME and KNAME (see DeviceMapper)", d.Device, d.KName)
		case dmTypes[typ] && d.KName == "":
			return fmt.Errorf("disk %s: type %s is a device-mapper device: device /dev/mapper/<name>, kname /dev/dm-<n>", d.Device, typ)
		case typ == TypePart && len(d.Parents) != 1:
			return fmt.Errorf("disk %s: a partition has one parent, its disk", d.Device)
		case (mdLevels[typ] || typ == TypeLVM || typ == TypeCrypt || typ == TypeMpath) && len(d.Parents) == 0:
			return fmt.Errorf("disk %s: a %s device needs parents, the devices it is made from", d.Device, typ)
		case d.Backing != "" && typ != TypeLoop:
			return fmt.Errorf("disk %s: only a loop device has a backing file", d.Device)
		case d.Shared && d.WWN == "":
			return fmt.Errorf("disk %s: a shared LUN is identified by its WWN, and has none", d.Device)
		}
		for _, name := range d.names() {
			if !strings.HasPrefix(name, "/dev/") {
				return fmt.Errorf("disk %s: link %q must be a path under /dev/", d.Device, name)
			}
			if other, dup := seen[name]; dup {
				return fmt.Errorf("%s names both %s and %s", name, other, d.Device)
			}
			seen[name] = d.Device
		}
	}
	return validateParents(disks)
}

// validateParents checks that every parent is a device of the set, given by its
// Device or KName, and that no device is made from itself.
func validateParents(disks []Disk) error {
	byName := map[string]int{}
	for i, d := range disks {
		byName[d.Device], byName[d.kname()] = i, i
	}
	for _, d := range disks {
		for _, p := range d.Parents {
			if _, ok := byName[p]; !ok {
				return fmt.Errorf("disk %s: parent %s is not one of the host's devices", d.Device, p)
			}
		}
	}
	const (
		unvisited = iota
		visiting
		done
	)
	state := make([]int, len(disks))
	var visit func(i int) error
	visit = func(i int) error {
		switch state[i] {
		case visiting:
			return fmt.Errorf("disk %s is made from itself", disks[i].Device)
		case done:
			return nil
		}
		state[i] = visiting
		for _, p := range disks[i].Parents {
			if err := visit(byName[p]); err != nil {
				return err
			}
		}
		state[i] = done
		return nil
	}
	for i := range disks {
		if err := visit(i); err != nil {
			return err
		}
	}
	return nil
}

// VirtioDisk is a virtio disk of a simulated machine: serial "<node>-<name>" within
// the 20 bytes virtio-blk carries (the node name is cut, so a machine's serials stay
// distinct), and the by-id link udev makes from it.
func VirtioDisk(node, device string, size int64) Disk {
	suffix := "-" + path.Base(device)
	if keep := 20 - len(suffix); len(node) > keep {
		node = node[:max(keep, 0)]
	}
	serial := node + suffix
	return Disk{Device: device, Size: size, Model: "emulated", Serial: serial, Links: []string{"/dev/disk/by-id/virtio-" + serial}}
}

// blockDev is a device of a host: its description, with what is on it now, and what
// this host's udev database and kernel last saw of it.
type blockDev struct {
	Disk
	// label is the VG or zpool the signature names (written by vgcreate or zpool
	// create); "" for none or an orphan PV. Pool is the same name while it is active on
	// this host; on another host sharing the LUN it stays inactive.
	label string
	// mpathMember: udev's multipath rules set FSTYPE mpath_member on this path, whatever
	// is on the LUN.
	mpathMember bool
	// staleSince: the content changed through another host or path at this time, and
	// this host has not re-probed since: lsblk shows seenFSType and seenPartitioned.
	staleSince      time.Time
	seenFSType      string
	seenPartitioned bool
	// volume names the LINSTOR resource a loop device attached by AttachBlockVolume
	// writes to; attached loops are not part of the configured hardware.
	volume string
}

// newBlockDev makes a device as configured: what udev sees is what is on it.
func newBlockDev(d Disk) *blockDev {
	b := &blockDev{Disk: d.clone()}
	if b.FSType == FSTypeMpathMember {
		b.FSType, b.mpathMember = "", true
	}
	b.label = b.Pool
	return b
}

// export is the device as NodeDisks reports it: what is on it.
func (b *blockDev) export() Disk {
	d := b.Disk.clone()
	if d.FSType == "" && b.mpathMember {
		d.FSType = FSTypeMpathMember
	}
	return d
}

// host is one machine's block devices.
type host struct {
	// name is the node name the machine was first seen under.
	name string
	devs []*blockDev
	// configured is the device set as last given; Reset returns the devices to it.
	configured []Disk
	// thin holds the thin pools made in the host's volume groups, as "vg/lv".
	thin map[string]bool
	// lostThin holds the thin pools ("vg/lv", any pool's StorDriver/StorPoolName) whose
	// logical volume is gone from the machine (BreakStoragePool): the satellite's free
	// space query fails for every LINSTOR pool backed by one (pools.go).
	lostThin map[string]bool
	// thinUsed: data written into each thin pool, in KiB, by "vg/lv" (FillThinPool).
	thinUsed map[string]int64
	// rescanDelay: how long after a write through another host or path this host's
	// udev and kernel see it (0: only RescanNodeDisks).
	rescanDelay time.Duration
	// destroyedReplicas: "<resource>@<node>" for each replica whose data a device pool
	// made on this host destroyed through an attached volume (volumes.go).
	destroyedReplicas []string
}

func newHost(name string, disks []Disk) *host {
	h := &host{name: name, thin: map[string]bool{}, lostThin: map[string]bool{}, thinUsed: map[string]int64{}}
	h.replace(disks)
	return h
}

// find resolves a path as the kernel would open it: the device, its kernel name or
// any udev link.
func (h *host) find(p string) *blockDev {
	for _, d := range h.devs {
		for _, name := range d.names() {
			if name == p {
				return d
			}
		}
	}
	return nil
}

func (h *host) hasPool(fsType, name string) bool {
	for _, d := range h.devs {
		if d.FSType == fsType && d.Pool == name {
			return true
		}
	}
	return false
}

// replace makes disks the host's set: a device already present (same Device) keeps
// what is on it unless the new description says otherwise; devices not listed are
// unplugged. Loop devices of attached volumes are kubelet's, not hardware: they stay
// unless a listed device takes their name.
func (h *host) replace(disks []Disk) {
	old := map[string]*blockDev{}
	for _, d := range h.devs {
		old[d.Device] = d
	}
	var attached []*blockDev
	for _, d := range h.devs {
		if d.volume != "" {
			attached = append(attached, d)
		}
	}
	h.devs = nil
	taken := map[string]bool{}
	for _, d := range disks {
		h.devs = append(h.devs, merge(old[d.Device], d))
		for _, n := range d.names() {
			taken[n] = true
		}
	}
	for _, a := range attached {
		if !taken[a.Device] {
			h.devs = append(h.devs, a)
		}
	}
	h.configured = cloneDisks(disks)
	h.markPartitioned()
	h.prune()
}

// markPartitioned: a device with a partition described holds a partition table.
func (h *host) markPartitioned() {
	for _, x := range h.devs {
		if x.typ() == TypePart && len(x.Parents) == 1 {
			if d := h.find(x.Parents[0]); d != nil {
				d.Partitioned = true
			}
		}
	}
}

// add hot-plugs d, or describes a present device anew.
func (h *host) add(d Disk) {
	found := false
	for i, cur := range h.configured {
		if cur.Device == d.Device {
			h.configured[i], found = d.clone(), true
		}
	}
	if !found {
		h.configured = append(h.configured, d.clone())
	}
	defer h.markPartitioned()
	for i, cur := range h.devs {
		if cur.Device == d.Device {
			h.devs[i] = merge(cur, d)
			return
		}
	}
	h.devs = append(h.devs, newBlockDev(d))
}

// merge describes a device anew: the hardware as given, the state (signature, pool,
// partitions, data, major) kept unless given. Described anew, the device is probed
// anew: udev sees what is on it.
func merge(old *blockDev, d Disk) *blockDev {
	out := newBlockDev(d)
	if old == nil {
		return out
	}
	// The same signature given again (an annotation applied anew) keeps the pool the
	// disk joined since; another one replaces both.
	if out.FSType == "" && !out.mpathMember || out.FSType == old.FSType && out.Pool == "" {
		out.FSType, out.Pool, out.label = old.FSType, old.Pool, old.label
	}
	out.mpathMember = out.mpathMember || old.mpathMember
	out.Partitioned = out.Partitioned || old.Partitioned
	if out.Data == "" {
		out.Data = old.Data
	}
	if out.Major == 0 {
		out.Major = old.Major
	}
	return out
}

// prune forgets thin pools whose volume group is gone (its disks were unplugged).
func (h *host) prune() {
	for key := range h.thin {
		vg, _, _ := strings.Cut(key, "/")
		if !h.hasPool(FSTypeLVM, vg) {
			delete(h.thin, key)
		}
	}
}

// reset returns the devices to their configured state, as a fresh machine: no volume
// is attached any more.
func (h *host) reset() {
	h.devs = nil
	for _, d := range h.configured {
		h.devs = append(h.devs, newBlockDev(d))
	}
	h.markPartitioned()
	h.thin = map[string]bool{}
	h.lostThin = map[string]bool{}
	h.thinUsed = map[string]int64{}
}

// export lists the host's devices as Disks.
func (h *host) export() []Disk {
	out := make([]Disk, 0, len(h.devs))
	for _, d := range h.devs {
		out = append(out, d.export())
	}
	return out
}

func cloneDisks(disks []Disk) []Disk {
	out := make([]Disk, 0, len(disks))
	for _, d := range disks {
		out = append(out, d.clone())
	}
	return out
}

func hostKey(node string) string { return strings.ToLower(node) }

// SetNewNodeDisks sets the block devices the machine of every node reports when the
// emulator first sees it, at the node's creation, unless SetNodeDisks (or the Node
// annotation, when coupled) configured that machine before.
func (e *Emulator) SetNewNodeDisks(disks ...lapi.PhysicalStorageNode) {
	set := make([]Disk, 0, len(disks))
	for _, d := range disks {
		set = append(set, Disk{Device: d.Device, Size: d.Size, Rotational: d.Rotational, Model: d.Model, Serial: d.Serial, WWN: d.Wwn})
	}
	if err := validateDisks(set); err != nil {
		panic("emulator: SetNewNodeDisks: " + err.Error())
	}
	e.SetNewNodeDisksFunc(func(string) []Disk { return cloneDisks(set) })
}

// SetNewNodeDisksFunc is SetNewNodeDisks with disks made per machine, e.g. with
// serials of their own (see VirtioDisk, HostDevices).
func (e *Emulator) SetNewNodeDisksFunc(f func(node string) []Disk) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.newNodeDisks = f
}

// ensureHost gives a machine seen for the first time the default disks.
func (e *Emulator) ensureHost(node string) {
	if e.hosts[hostKey(node)] != nil {
		return
	}
	var disks []Disk
	if e.newNodeDisks != nil {
		disks = e.newNodeDisks(node)
	}
	if err := validateDisks(disks); err != nil {
		panic("emulator: default disks of " + node + ": " + err.Error())
	}
	e.hosts[hostKey(node)] = newHost(node, disks)
}

// SetNodeDisks replaces the block devices of a node's machine, whether or not LINSTOR
// knows the node: a device with the same Device keeps what is on it (signature, volume
// group or zpool) unless d says otherwise; devices not listed are unplugged. Devices
// and links must be unique paths under /dev/, parents must be listed.
func (e *Emulator) SetNodeDisks(node string, disks ...Disk) {
	if err := validateDisks(disks); err != nil {
		panic("emulator: SetNodeDisks(" + node + "): " + err.Error())
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.setNodeDisks(node, disks)
}

func (e *Emulator) setNodeDisks(node string, disks []Disk) {
	h := e.hosts[hostKey(node)]
	if h == nil {
		e.hosts[hostKey(node)] = newHost(node, disks)
		return
	}
	h.replace(disks)
}

// AddNodeDisk hot-plugs a device into a node's machine (or describes a present one
// anew, as SetNodeDisks does).
func (e *Emulator) AddNodeDisk(node string, d Disk) {
	e.mu.Lock()
	defer e.mu.Unlock()
	h := e.machine(node)
	others := []Disk{d}
	for _, cur := range h.devs {
		if cur.Device != d.Device {
			others = append(others, cur.Disk)
		}
	}
	if err := validateDisks(others); err != nil {
		panic("emulator: AddNodeDisk(" + node + "): " + err.Error())
	}
	h.add(d)
}

// NodeDisks returns a copy of the block devices of a node's machine, with what is on
// them now (which lsblk on that machine may not show yet: Lsblk).
func (e *Emulator) NodeDisks(node string) []Disk {
	return onHost(e, node, (*host).export)
}

// Overwritten lists, as "<node>:<device>", every device whose data a device-pool
// create destroyed: an earlier signature or partition table (zpool create -f does it
// without asking), data no signature shows (Disk.Data), the volume behind an attached
// loop device (the loop, and the DRBD device of every replica the write reached), a
// shared LUN's pool active on another host. An operator that guards data keeps it
// empty.
func (e *Emulator) Overwritten() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.overwritten...)
}

// candidates lists a node's unused devices as the satellite does: lsblk's entries
// (lsblk.go) through LINSTOR's filter (filterDeviceCandidates). An offline satellite is
// not asked and contributes nothing.
func (e *Emulator) candidates(n *node) []lapi.PhysicalStorageNode {
	h := e.hosts[hostKey(n.Name)]
	if !e.online(n.Name) || h == nil {
		return nil
	}
	var out []lapi.PhysicalStorageNode
	for _, r := range filterDeviceCandidates(h.lsblk(e.now())) {
		out = append(out, lapi.PhysicalStorageNode{
			PhysicalStorageDevice: lapi.PhysicalStorageDevice{Device: r.Name, Model: r.Model, Serial: r.Serial, Wwn: r.WWN},
			Size:                  r.Size, Rotational: r.Rotational,
		})
	}
	return out
}
