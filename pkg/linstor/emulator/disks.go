package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	lapi "github.com/LINBIT/golinstor/client"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The machines' block devices. Disks, and the volume groups and zpools made on them,
// belong to the host, not to LINSTOR: they are kept per node name and outlive the
// deletion and re-creation of the LINSTOR node, controller restarts and database
// restores, as a real machine's disks do.

// lsblk FSTYPE values of the signatures device pools write.
const (
	FSTypeLVM = "LVM2_member"
	FSTypeZFS = "zfs_member"
)

// DisksAnnotation on a Kubernetes Node lists that machine's disks when the emulator is
// coupled with Cluster.DisksFromNodes: a JSON list of Disk (see ParseDisksAnnotation).
const DisksAnnotation = "emulator.linstor.io/disks"

// Disk is one whole block device of a host as lsblk reports it, with what is on it.
type Disk struct {
	// Device is the kernel path (lsblk --paths NAME), e.g. /dev/nvme1n1.
	Device string
	// Size in bytes.
	Size       int64
	Rotational bool
	Model      string
	Serial     string
	WWN        string
	// Links are the other names udev gives the device, e.g.
	// /dev/disk/by-id/nvme-eui.0025388b91b2f1a1; any of them opens the disk.
	Links []string
	// FSType is lsblk's FSTYPE: "" when no signature is found, else e.g. "ext4",
	// FSTypeLVM, FSTypeZFS.
	FSType string
	// Partitioned: lsblk lists children of the disk (partitions, or device-mapper
	// devices on top of it).
	Partitioned bool
	// Major is the device's major number; 147 is DRBD.
	Major int
	// Pool names the active volume group (FSType LVM2_member) or imported zpool
	// (zfs_member) the disk belongs to; "" when none: a signature alone (an orphan PV,
	// the label of a destroyed zpool) is old and inactive. A disk with a Pool is in use.
	Pool string
}

// InUse reports whether the disk belongs to an active volume group or imported zpool.
func (d Disk) InUse() bool { return d.Pool != "" }

func (d Disk) clone() Disk {
	d.Links = append([]string(nil), d.Links...)
	return d
}

// names are the paths that open the disk.
func (d Disk) names() []string { return append([]string{d.Device}, d.Links...) }

// diskJSON is the annotation's form of a Disk: the REST answer's field names for what
// lsblk reports, the size a quantity ("1Ti") or a number of bytes.
type diskJSON struct {
	Device      string             `json:"device"`
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
}

// MarshalJSON writes the annotation form, the size as a binary quantity.
func (d Disk) MarshalJSON() ([]byte, error) {
	return json.Marshal(diskJSON{Device: d.Device, Size: resource.NewQuantity(d.Size, resource.BinarySI), Rotational: d.Rotational,
		Model: d.Model, Serial: d.Serial, WWN: d.WWN, Links: d.Links, FSType: d.FSType, Partitioned: d.Partitioned, Major: d.Major, Pool: d.Pool})
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
	*d = Disk{Device: in.Device, Size: in.Size.Value(), Rotational: in.Rotational, Model: in.Model, Serial: in.Serial, WWN: in.WWN,
		Links: in.Links, FSType: in.FSType, Partitioned: in.Partitioned, Major: in.Major, Pool: in.Pool}
	return nil
}

// ParseDisksAnnotation reads the value of DisksAnnotation, e.g.
//
//	[{"device":"/dev/nvme0n1","size":"1Ti","model":"SAMSUNG MZQL21T9HCJR-00A07",
//	  "serial":"S64GNE0R123456","wwn":"eui.36344730523012340025384500000001",
//	  "links":["/dev/disk/by-id/nvme-eui.36344730523012340025384500000001"]}]
//
// Besides device, size, rotational, model, serial, wwn and links, a disk may say what
// is on it already: fstype, partitioned, major, pool.
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

// validateDisks refuses what no machine has: relative paths, empty disks, a name two
// disks answer to, a pool without the signature of its kind.
func validateDisks(disks []Disk) error {
	seen := map[string]string{}
	for _, d := range disks {
		switch {
		case !strings.HasPrefix(d.Device, "/dev/"):
			return fmt.Errorf("disk %q: the device must be a path under /dev/", d.Device)
		case d.Size <= 0:
			return fmt.Errorf("disk %s: the size must be positive", d.Device)
		case d.Major < 0:
			return fmt.Errorf("disk %s: negative major number", d.Device)
		case d.Pool != "" && d.FSType != FSTypeLVM && d.FSType != FSTypeZFS:
			return fmt.Errorf("disk %s: pool %q needs fstype %s or %s", d.Device, d.Pool, FSTypeLVM, FSTypeZFS)
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

// host is one machine's storage.
type host struct {
	disks []*Disk
	// configured is the disk set as last given; Reset returns the disks to it.
	configured []Disk
	// thin holds the thin pools made in the host's volume groups, as "vg/lv".
	thin map[string]bool
}

func newHost(disks []Disk) *host {
	h := &host{thin: map[string]bool{}}
	h.replace(disks)
	return h
}

// find resolves a path as the kernel would open it: the device or any udev link.
func (h *host) find(p string) *Disk {
	for _, d := range h.disks {
		for _, name := range d.names() {
			if name == p {
				return d
			}
		}
	}
	return nil
}

func (h *host) hasPool(fsType, name string) bool {
	for _, d := range h.disks {
		if d.FSType == fsType && d.Pool == name {
			return true
		}
	}
	return false
}

// replace makes disks the host's set: a disk already present (same Device) keeps what
// is on it unless the new description says otherwise; disks not listed are unplugged.
func (h *host) replace(disks []Disk) {
	old := map[string]*Disk{}
	for _, d := range h.disks {
		old[d.Device] = d
	}
	h.disks = nil
	for _, d := range disks {
		nd := merge(old[d.Device], d)
		h.disks = append(h.disks, &nd)
	}
	h.configured = cloneDisks(disks)
	h.prune()
}

// add hot-plugs d, or describes a present disk anew.
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
	for i, cur := range h.disks {
		if cur.Device == d.Device {
			nd := merge(cur, d)
			h.disks[i] = &nd
			return
		}
	}
	nd := d.clone()
	h.disks = append(h.disks, &nd)
}

// merge describes a disk anew: the hardware as given, the state (signature, pool,
// children, major) kept unless given.
func merge(old *Disk, d Disk) Disk {
	out := d.clone()
	if old == nil {
		return out
	}
	// The same signature given again (an annotation applied anew) keeps the pool the
	// disk joined since; another one replaces both.
	if out.FSType == "" || out.FSType == old.FSType && out.Pool == "" {
		out.FSType, out.Pool = old.FSType, old.Pool
	}
	out.Partitioned = out.Partitioned || old.Partitioned
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

// reset returns the disks to their configured state, as fresh machines.
func (h *host) reset() {
	h.disks = nil
	for _, d := range h.configured {
		nd := d.clone()
		h.disks = append(h.disks, &nd)
	}
	h.thin = map[string]bool{}
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
// serials of their own (see VirtioDisk).
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
	e.hosts[hostKey(node)] = newHost(disks)
}

// SetNodeDisks replaces the disks of a node's machine, whether or not LINSTOR knows
// the node: a disk with the same Device keeps what is on it (signature, volume group or
// zpool) unless d says otherwise; disks not listed are unplugged. Devices and links
// must be unique paths under /dev/.
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
		e.hosts[hostKey(node)] = newHost(disks)
		return
	}
	h.replace(disks)
}

// AddNodeDisk hot-plugs a disk into a node's machine (or describes a present one
// anew, as SetNodeDisks does).
func (e *Emulator) AddNodeDisk(node string, d Disk) {
	e.mu.Lock()
	defer e.mu.Unlock()
	h := e.hosts[hostKey(node)]
	if h == nil {
		h = newHost(nil)
		e.hosts[hostKey(node)] = h
	}
	others := []Disk{d}
	for _, cur := range h.disks {
		if cur.Device != d.Device {
			others = append(others, *cur)
		}
	}
	if err := validateDisks(others); err != nil {
		panic("emulator: AddNodeDisk(" + node + "): " + err.Error())
	}
	h.add(d)
}

// NodeDisks returns a copy of the disks of a node's machine, with what is on them.
func (e *Emulator) NodeDisks(node string) []Disk {
	e.mu.Lock()
	defer e.mu.Unlock()
	h := e.hosts[hostKey(node)]
	if h == nil {
		return nil
	}
	out := make([]Disk, 0, len(h.disks))
	for _, d := range h.disks {
		out = append(out, d.clone())
	}
	return out
}

// Overwritten lists, as "<node>:<device>", every disk whose earlier signature or
// partition table a device-pool create destroyed (zpool create -f does it without
// asking). An operator that guards data keeps it empty.
func (e *Emulator) Overwritten() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.overwritten...)
}

// minCandidateSize: lsblk entries of 1 GiB or less are not offered.
const minCandidateSize = 1 << 30

// drbdMajor is DRBD's block major; DRBD devices are never offered.
const drbdMajor = 147

// candidates lists a node's unused disks as the satellite's lsblk filter does
// (satellite/.../layer/storage/utils/LsBlkUtils.java filterDeviceCandidates): no
// parent (all disks here are whole disks), more than 1 GiB, not DRBD, no FSTYPE, no
// children. An offline satellite is not asked and contributes nothing.
func (e *Emulator) candidates(n *node) []lapi.PhysicalStorageNode {
	h := e.hosts[hostKey(n.Name)]
	if !e.online(n.Name) || h == nil {
		return nil
	}
	var out []lapi.PhysicalStorageNode
	for _, d := range h.disks {
		if d.Size > minCandidateSize && d.Major != drbdMajor && d.FSType == "" && !d.Partitioned {
			out = append(out, lapi.PhysicalStorageNode{
				PhysicalStorageDevice: lapi.PhysicalStorageDevice{Device: d.Device, Model: d.Model, Serial: d.Serial, Wwn: d.WWN},
				Size:                  d.Size, Rotational: d.Rotational,
			})
		}
	}
	return out
}
