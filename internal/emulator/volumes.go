package emulator

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Writes to block devices and what they destroy. A device can be one medium with
// others: the paths to a shared LUN (Disk.Shared, same WWN) on one host or several,
// and the loop devices kubelet attaches over one LINSTOR volume on several nodes. A
// write reaches the medium; the writing host's udev sees it at once (it probes a device
// closed after writing, 60-block.rules OPTIONS+="watch"), every other host and path
// only after a rescan (lsblk.go).

// mediumKey names the medium a device is; "" when it is only itself.
func mediumKey(d *blockDev) string {
	switch {
	case d.volume != "":
		return "volume:" + strings.ToLower(d.volume)
	case d.Shared:
		return "wwn:" + strings.ToLower(d.WWN)
	}
	return ""
}

func sameMedium(a, b *blockDev) bool {
	k := mediumKey(a)
	return a == b || k != "" && k == mediumKey(b)
}

type hostDev struct {
	h *host
	d *blockDev
}

// mediumPeers are the other devices, on every host, that are d's medium.
func (e *Emulator) mediumPeers(d *blockDev) []hostDev {
	if mediumKey(d) == "" {
		return nil
	}
	keys := make([]string, 0, len(e.hosts))
	for k := range e.hosts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []hostDev
	for _, k := range keys {
		for _, x := range e.hosts[k].devs {
			if x != d && sameMedium(x, d) {
				out = append(out, hostDev{e.hosts[k], x})
			}
		}
	}
	return out
}

// overwrite is a device-pool command on host h writing a signature (fsType, naming
// label) over d: pvcreate or zpool create. It records in Overwritten what that
// destroys, then writes.
//   - d's own content: another signature (pvcreate rewriting an orphan PV is not data),
//     a partition table, data no signature shows (Disk.Data);
//   - a volume behind an attached loop device: the write goes through DRBD to every
//     diskful replica (a peer cut off from the writer gets it at resync), each recorded
//     as "<node>:<its DRBD device>" and in DestroyedReplicas;
//   - a pool another host (or another path here) has active on the same LUN.
func (e *Emulator) overwrite(h *host, d *blockDev, fsType, label string) {
	peers := e.mediumPeers(d)
	lost := d.Partitioned || d.Data != "" || d.volume != "" ||
		d.FSType != "" && !(fsType == FSTypeLVM && d.FSType == FSTypeLVM && d.label == "")
	var also []string
	for _, p := range peers {
		lost = lost || p.d.Data != ""
		if p.d.InUse() {
			also = append(also, p.h.name+":"+p.d.Device)
		}
	}
	if lost || len(also) > 0 {
		e.overwritten = append(e.overwritten, h.name+":"+d.Device)
	}
	e.overwritten = append(e.overwritten, also...)
	if d.volume != "" {
		e.destroyVolume(h, d.volume)
	}
	e.rewrite(h, d, fsType, label)
}

// rewrite puts a signature (or none) on d's medium without judging what it replaces:
// vgcreate naming the VG in its PVs, vgremove, zpool destroy, wipefs. The partition
// table and raw data are gone; partitions leave this host's kernel at once, other
// hosts' at their rescan.
func (e *Emulator) rewrite(h *host, d *blockDev, fsType, label string) {
	for _, p := range e.mediumPeers(d) {
		if p.d.staleSince.IsZero() {
			p.d.staleSince, p.d.seenFSType, p.d.seenPartitioned = e.now(), p.d.FSType, p.d.Partitioned
		}
		p.d.FSType, p.d.label, p.d.Partitioned, p.d.Data = fsType, label, false, ""
	}
	hadPartitions := d.Partitioned
	d.FSType, d.label, d.Partitioned, d.Data = fsType, label, false, ""
	d.staleSince, d.seenFSType, d.seenPartitioned = time.Time{}, "", false
	if hadPartitions {
		h.dropPartitions(d)
	}
}

// destroyVolume records the replicas of a LINSTOR resource whose data a write through
// an attached loop device on h destroyed.
func (e *Emulator) destroyVolume(h *host, resource string) {
	rd := e.rds[strings.ToLower(resource)]
	if rd == nil {
		return
	}
	paths := map[string]string{}
	for _, v := range e.resourceViews(rd) {
		if len(v.Volumes) > 0 {
			paths[v.NodeName] = v.Volumes[0].DevicePath
		}
	}
	var writer *replica
	for name, rep := range rd.resources {
		if strings.EqualFold(name, h.name) {
			writer = rep
		}
	}
	names := make([]string, 0, len(rd.resources))
	for name := range rd.resources {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		rep := rd.resources[name]
		// Without DRBD the write stays on the writer's own volume.
		reached := writer != nil && writer.drbd() || strings.EqualFold(name, h.name)
		if !rep.diskful() || !reached {
			continue
		}
		e.overwritten = append(e.overwritten, name+":"+paths[name])
		h.destroyedReplicas = append(h.destroyedReplicas, rd.Name+"@"+name)
	}
}

// DestroyedReplicas lists, as "<resource>@<node>", every replica whose data a device
// pool destroyed by writing through a loop device attached over its volume.
func (e *Emulator) DestroyedReplicas() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, h := range e.hosts {
		out = append(out, h.destroyedReplicas...)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// AttachBlockVolume does on a node what kubelet does for a raw-block PersistentVolume a
// pod uses: it maps the volume's device with a loop device (`losetup -f --show
// <device>`, volumepathhandler AttachFileDevice, makeLoopDevice) that holds it while
// the pod runs. The loop device is the first free /dev/loopN, as large as the volume,
// backed by the device the resource view reports (the DRBD device), with no signature
// lsblk can see: the pod writes raw data. The replica is in use from now on (DRBD is
// Primary on the node). The resource must have a replica on the node (the CSI driver
// stages one, diskless if need be). It returns the loop device; attaching again
// returns it again.
func (e *Emulator) AttachBlockVolume(node, resource string) (string, error) {
	e.mu.Lock()
	n := e.nodes[strings.ToLower(node)]
	rd := e.rds[strings.ToLower(resource)]
	var devicePath string
	var size int64
	if n != nil && rd != nil {
		for _, v := range e.resourceViews(rd) {
			if v.NodeName == n.Name && len(v.Volumes) > 0 {
				devicePath, size = v.Volumes[0].DevicePath, v.Volumes[0].UsableSizeKib*1024
			}
		}
	}
	switch {
	case n == nil:
		e.mu.Unlock()
		return "", fmt.Errorf("node %q not found", node)
	case rd == nil || rd.resources[n.Name] == nil:
		e.mu.Unlock()
		return "", fmt.Errorf("resource %q has no replica on node %q: kubelet maps a volume only where the CSI driver staged it", resource, n.Name)
	case devicePath == "":
		e.mu.Unlock()
		return "", fmt.Errorf("resource %q has no volume", resource)
	}
	e.ensureHost(n.Name)
	h := e.hosts[hostKey(n.Name)]
	for _, d := range h.devs {
		if d.volume == rd.Name {
			e.mu.Unlock()
			return d.Device, nil
		}
	}
	loop := &blockDev{Disk: Disk{Device: h.freeLoop(), Type: TypeLoop, Size: size, Backing: devicePath, Data: "block volume " + rd.Name}, volume: rd.Name}
	// The volume holds what earlier writes left, e.g. through a loop on another node.
	for _, p := range e.mediumPeers(loop) {
		loop.FSType, loop.label, loop.Data = p.d.FSType, p.d.label, p.d.Data
		break
	}
	h.devs = append(h.devs, loop)
	rdName, nodeName := rd.Name, n.Name
	e.mu.Unlock()
	if err := e.SetInUse(rdName, nodeName, true); err != nil {
		e.mu.Lock()
		h.devs = slices.DeleteFunc(h.devs, func(d *blockDev) bool { return d == loop })
		e.mu.Unlock()
		return "", err
	}
	return loop.Device, nil
}

// DetachBlockVolume is kubelet unmapping the volume when the pod is gone: the loop
// device is detached and the replica is no longer in use.
func (e *Emulator) DetachBlockVolume(node, resource string) error {
	e.mu.Lock()
	h := e.hosts[hostKey(node)]
	var found *blockDev
	if h != nil {
		for _, d := range h.devs {
			if strings.EqualFold(d.volume, resource) {
				found = d
			}
		}
	}
	if found == nil {
		e.mu.Unlock()
		return fmt.Errorf("resource %q is not attached on node %q", resource, node)
	}
	h.devs = slices.DeleteFunc(h.devs, func(d *blockDev) bool { return d == found })
	n := e.nodes[strings.ToLower(node)]
	e.mu.Unlock()
	if n == nil {
		return nil
	}
	return e.SetInUse(found.volume, n.Name, false)
}

// freeLoop is the first /dev/loopN no device of the host has (losetup -f).
func (h *host) freeLoop() string {
	for i := 0; ; i++ {
		name := "/dev/loop" + itoa(i)
		if h.find(name) == nil {
			return name
		}
	}
}
