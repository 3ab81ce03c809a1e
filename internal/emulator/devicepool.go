package emulator

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
)

// Physical storage: the lsblk listing (GET /v1/physical-storage) and device pools
// (POST /v1/physical-storage/{node}), which the satellite makes with pvcreate, vgcreate,
// lvcreate and zpool create on the node's disks (disks.go).

// Entry codes of the satellite's device-pool answers: MASK_SUCCESS (0) with the
// operation and MASK_PHYSICAL_DEVICE, no code number (DevicePoolHandler.java).
const (
	physCrt = lapiconst.MaskCrt | lapiconst.MaskPhysicalDevice
	physDel = lapiconst.MaskDel | lapiconst.MaskPhysicalDevice
)

// viewPhysicalStorage groups every ONLINE node's candidates by size, then rotational
// (false first), sorted so (CtrlPhysicalStorageApiCallHandler.groupPhysicalStorageByDevice,
// a TreeMap with that comparator).
func (e *Emulator) viewPhysicalStorage(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	type key struct {
		size int64
		rot  bool
	}
	groups := map[key]*lapi.PhysicalStorageViewItem{}
	var order []key
	for _, n := range e.sortedNodes() {
		for _, d := range e.candidates(n) {
			k := key{d.Size, d.Rotational}
			g, ok := groups[k]
			if !ok {
				g = &lapi.PhysicalStorageViewItem{Size: d.Size, Rotational: d.Rotational, Nodes: map[string][]lapi.PhysicalStorageDevice{}}
				groups[k] = g
				order = append(order, k)
			}
			g.Nodes[n.Name] = append(g.Nodes[n.Name], d.PhysicalStorageDevice)
		}
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].size != order[j].size {
			return order[i].size < order[j].size
		}
		return !order[i].rot && order[j].rot
	})
	out := []lapi.PhysicalStorageViewItem{}
	for _, k := range order {
		out = append(out, *groups[k])
	}
	writeJSON(w, http.StatusOK, out)
}

// getPhysicalStorage: an offline satellite cannot be asked; the server fails the
// request with an unknown error.
func (e *Emulator) getPhysicalStorage(w http.ResponseWriter, r *http.Request, n *node) {
	if !e.online(n.Name) {
		writeRC(w, http.StatusOK, rc(lapiconst.FailUnknownError, "An unknown error occurred.").withCause("No active connection to satellite '%s'", n.Name))
		return
	}
	out := append([]lapi.PhysicalStorageNode{}, e.candidates(n)...)
	writeJSON(w, http.StatusOK, out)
}

// devicePoolName is CtrlPhysicalStorageApiCallHandler.getDevicePoolName: the given
// name, else linstor_<what follows the last slash of the first path> (the whole path
// when its only slash is the first character).
func devicePoolName(name string, paths []string) string {
	if name != "" {
		return name
	}
	p := paths[0]
	if i := strings.LastIndex(p, "/"); i > 0 {
		p = p[i+1:]
	}
	return "linstor_" + p
}

// thinVG and thinLV split an LVM_THIN pool name (LvmThinDriverKind.VGName, LVName):
// "vg/lv", or "name" for the VG linstor_name holding the thin pool name.
func thinVG(pool string) string {
	if vg, _, ok := strings.Cut(pool, "/"); ok {
		return vg
	}
	return "linstor_" + pool
}

func thinLV(pool string) string {
	return pool[strings.Index(pool, "/")+1:]
}

// createDevicePool follows rest/v1/PhysicalStorage.createDevicePool and
// CtrlPhysicalStorageApiCallHandler: LVM, LVM_THIN and ZFS(_THIN) only, the pool name
// defaulting to linstor_<first device>; the satellite's work is in stlt below. The
// controller turns a satellite answer holding an error into that first error alone
// (CommonMessageProcessor.handleAnswer), so nothing else of the answer, and no storage
// pool, follows a failure, whatever the satellite did before it. With
// with_storage_pool the pool is then registered under the storage-pool rules; if that
// fails, the device pool is deleted again (the pool step's error path is
// deleteDevicePool). An offline satellite is skipped: 201 with nothing done.
func (e *Emulator) createDevicePool(w http.ResponseWriter, r *http.Request, n *node) {
	var in lapi.PhysicalStorageCreate
	if !decode(w, r, &in, http.StatusInternalServerError) {
		return
	}
	if _, ok := providerKinds[strings.ToUpper(string(in.ProviderKind))]; !ok {
		writeJSON(w, http.StatusBadRequest, []apiCallRc{rc(lapiconst.FailInvldLayerKind, "Given provider kind '%s' is invalid", in.ProviderKind)})
		return
	}
	if name := in.WithStoragePool.Name; name != "" && checkName(name, 3, 48, "-") != "" {
		writeJSON(w, http.StatusBadRequest, []apiCallRc{rc(lapiconst.FailInvldStorPoolName, "The given storage pool name '%s' is invalid.", name)})
		return
	}
	if len(in.DevicePaths) == 0 {
		writeRC(w, http.StatusCreated, rc(lapiconst.FailUnknownError, "Field 'device_paths' is null or empty."))
		return
	}
	if !e.online(n.Name) {
		writeRC(w, http.StatusCreated)
		return
	}
	switch in.ProviderKind {
	case lapi.LVM, lapi.LVM_THIN, lapi.ZFS, lapi.ZFS_THIN:
	default:
		writeRC(w, http.StatusCreated, rc(lapiconst.FailInvldProvider, "(%s) Create device pool not supported for provider: %s", n.Name, in.ProviderKind))
		return
	}
	poolName := devicePoolName(in.PoolName, in.DevicePaths)
	s := e.stlt(n)
	s.createDevicePool(in.ProviderKind, in.DevicePaths, poolName)
	if bad := s.firstError(); bad != nil {
		writeRC(w, http.StatusCreated, *bad)
		return
	}
	answer := s.out
	name := in.WithStoragePool.Name
	if name == "" {
		writeRC(w, http.StatusCreated, answer...)
		return
	}
	// rest/v1/PhysicalStorage.deviceProviderToStorPoolProperty, then the request's props
	// over it (putAll): a StorPoolName of the request wins.
	storPoolName := poolName
	if in.ProviderKind == lapi.LVM_THIN {
		storPoolName = thinVG(poolName) + "/" + thinLV(poolName)
	}
	requested := map[string]string{poolNameKey: storPoolName}
	for k, v := range in.WithStoragePool.Props {
		requested[k] = v
	}
	var size int64
	for _, d := range s.used {
		size += d.Size
	}
	registered, refused := e.addPool(n, name, in.ProviderKind, requested, size/1024)
	if refused == nil {
		writeRC(w, http.StatusCreated, append(answer, registered...)...)
		return
	}
	answer = append(answer, *refused)
	undo := e.stlt(n)
	undo.deleteDevicePool(in.ProviderKind, in.DevicePaths, poolName)
	if bad := undo.firstError(); bad != nil {
		answer = append(answer, *bad)
	} else {
		answer = append(answer, undo.out...)
	}
	writeRC(w, http.StatusCreated, answer...)
}

// stlt is the satellite of one node running device-pool commands on its machine. Its
// entries carry the "(<node>) " prefix the controller adds to every satellite entry
// (CtrlSatelliteUpdateCaller.deserializeApiCallRc, CommonMessageProcessor.handleAnswer).
type stlt struct {
	e    *Emulator
	node string
	h    *host
	out  []apiCallRc
	// used are the devices of the device pool just made, once each.
	used []*blockDev
}

func (e *Emulator) stlt(n *node) *stlt {
	h := e.hosts[hostKey(n.Name)]
	if h == nil {
		// A node loaded from a database, on a machine never described: no disks are
		// known, so every device is missing. Not kept, so a later description applies.
		h = newHost(n.Name, nil)
	}
	return &stlt{e: e, node: n.Name, h: h}
}

// ok records a success entry; every one refers to the pool it worked on.
func (s *stlt) ok(pool string, code uint64, format string, args ...any) {
	s.out = append(s.out, rc(code, "(%s) %s", s.node, fmt.Sprintf(format, args...)).withRefs("PoolName", pool))
}

// fail records a failed external command as the satellite reports it: the
// StorageException of Commands.genericExecutor (message, and the command's exit code
// and output as details, ExtCmdUtils.checkExitCode) copied with FAIL_UNKNOWN_ERROR
// (ApiCallRcImpl.copyFromLinstorExc). The lvm --config filter is left out of the
// command line.
func (s *stlt) fail(code uint64, msg, command string, exit int, stderr string) {
	s.out = append(s.out, rc(code, "(%s) %s", s.node, msg).
		withDetails("Command '%s' returned with exitcode %d. \n\nStandard out: \n\n\nError message: \n%s\n", command, exit, stderr))
}

func (s *stlt) firstError() *apiCallRc {
	for _, entry := range s.out {
		if entry.isError() {
			return &entry
		}
	}
	return nil
}

// createDevicePool is the satellite's CreateDevicePool.execute: checkPoolExists, then
// DevicePoolHandler.createDevicePool.
func (s *stlt) createDevicePool(kind lapi.ProviderKind, paths []string, poolName string) {
	// checkPoolExists looks for the literal pool name: for LVM_THIN "vg/lv" never names
	// a VG, so only vgcreate below notices an existing VG.
	switch kind {
	case lapi.LVM, lapi.LVM_THIN:
		if s.h.hasPool(FSTypeLVM, poolName) {
			s.out = append(s.out, rc(lapiconst.FailExistsStorPool, "(%s) Volume group name already used.", s.node))
			return
		}
	case lapi.ZFS, lapi.ZFS_THIN:
		if s.h.hasPool(FSTypeZFS, poolName) {
			s.out = append(s.out, rc(lapiconst.FailExistsStorPool, "(%s) Zpool name already used.", s.node))
			return
		}
	}
	switch kind {
	case lapi.LVM:
		s.createLVMPool(paths, poolName)
	case lapi.LVM_THIN:
		// The thin pool is attempted even when the VG step failed: createDevicePool adds
		// both answers without looking at the first.
		s.createLVMPool(paths, thinVG(poolName))
		s.createThinPool(thinVG(poolName), thinLV(poolName))
	case lapi.ZFS, lapi.ZFS_THIN:
		s.createZPool(paths, poolName)
	}
}

// createLVMPool is DevicePoolHandler.createLVMPool: pvcreate on each device in order
// (LvmCommands.pvCreate, without -f or -y), then vgcreate. A failure ends it; the PVs
// made before stay.
func (s *stlt) createLVMPool(paths []string, vg string) {
	for _, p := range paths {
		d := s.h.find(p)
		if why := s.pvcreateRefusal(d, p); why != "" {
			s.fail(lapiconst.FailUnknownError, "Failed to pvcreate on device: "+p, "pvcreate "+p, 5, why)
			return
		}
		// pvcreate wipes no foreign signature unasked, but rewrites an orphan PV's label;
		// raw data it cannot see it overwrites.
		s.e.overwrite(s.h, d, FSTypeLVM, "")
		s.ok(vg, physCrt, "PV for device '%s' created.", p)
	}
	command := "vgcreate " + vg + " " + strings.Join(paths, " ")
	failMsg := "Failed to vgcreate on device(s): " + strings.Join(paths, " ")
	if s.h.hasPool(FSTypeLVM, vg) {
		s.fail(lapiconst.FailUnknownError, failMsg, command, 5, fmt.Sprintf("  A volume group called %s already exists.", vg))
		return
	}
	disks := s.distinct(paths)
	for i, d := range disks {
		if d.InUse() {
			s.fail(lapiconst.FailUnknownError, failMsg, command, 5, fmt.Sprintf("  Physical volume '%s' is already in volume group '%s'", d.Device, d.Pool))
			return
		}
		// Two paths to one LUN carry one PV: LVM sees it twice.
		for _, other := range disks[:i] {
			if sameMedium(other, d) {
				s.fail(lapiconst.FailUnknownError, failMsg, command, 5, fmt.Sprintf("  Cannot use device %s with duplicates.", d.Device))
				return
			}
		}
	}
	for _, d := range disks {
		d.Pool = vg
		s.e.rewrite(s.h, d, FSTypeLVM, vg)
	}
	s.used = disks
	s.ok(vg, physCrt, "VG for devices [%s] with name '%s' created.", strings.Join(paths, ", "), vg)
}

// pvcreateRefusal is why pvcreate, run without -f and without a terminal, refuses a
// device: missing, partitioned, a PV of a volume group (active here or not: pvcreate
// reads the label from the device, not udev's view), held open by the kernel, or
// holding a signature it would have to ask before wiping. An orphan PV is fine (its own
// label is rewritten).
func (s *stlt) pvcreateRefusal(d *blockDev, p string) string {
	switch {
	case d == nil:
		return fmt.Sprintf("  No device found for %s.", p)
	case d.Partitioned:
		return fmt.Sprintf("  Cannot use %s: device is partitioned", p)
	case d.FSType == FSTypeLVM && d.label != "":
		return fmt.Sprintf("  Can't initialize physical volume \"%s\" of volume group \"%s\" without -ff\n  %s: physical volume not initialized.", p, d.label, p)
	case s.h.held(d):
		return fmt.Sprintf("  Can't open %s exclusively.  Mounted filesystem?", p)
	case d.FSType != "" && d.FSType != FSTypeLVM:
		return fmt.Sprintf("WARNING: %s signature detected on %s. Wipe it? [y/n]: [n]\n  Aborted wiping of %s.\n  1 existing signature left on the device.", d.FSType, p, d.FSType)
	}
	return ""
}

// createThinPool is DevicePoolHandler.createLVMThinPool (LvmCommands.createThinPool:
// lvcreate -l 100%FREE -T): it needs the VG, and free space in it, which an earlier
// thin pool took all of.
func (s *stlt) createThinPool(vg, lv string) {
	command := "lvcreate -l 100%FREE -T -n " + vg + "/" + lv
	var why string
	switch {
	case !s.h.hasPool(FSTypeLVM, vg):
		why = fmt.Sprintf("  Volume group \"%s\" not found\n  Cannot process volume group %s", vg, vg)
	case s.h.thin[vg+"/"+lv]:
		why = fmt.Sprintf("  Logical Volume \"%s\" already exists in volume group \"%s\"", lv, vg)
	case s.h.vgHasThin(vg):
		why = fmt.Sprintf("  Insufficient free space: no free extents in volume group \"%s\"", vg)
	}
	if why != "" {
		s.fail(lapiconst.FailUnknownError, "Failed to create lvm volume", command, 5, why)
		return
	}
	s.h.thin[vg+"/"+lv] = true
	s.ok(vg+"/"+lv, physCrt, "Thin-pool '%s' in LVM-pool '%s' created.", lv, vg)
}

func (h *host) vgHasThin(vg string) bool {
	for key := range h.thin {
		if strings.HasPrefix(key, vg+"/") {
			return true
		}
	}
	return false
}

// createZPool is DevicePoolHandler.createZPool: `zpool create -f -m none <pool>
// <devices>` (ZfsCommands.createZPool). -f makes zpool use a device that holds an old
// signature, a partition table, raw data, or the label of a pool imported on another
// host ("potentially active": libzfs zpool_in_use reports a pool active but not
// imported here so, and -f overrides it), destroying it. Only a missing device, a vdev
// of a pool imported here, a device the kernel holds (an active VG's PV, an md or
// multipath member) or two paths to one device stop it.
func (s *stlt) createZPool(paths []string, pool string) {
	command := "zpool create -f -m none " + pool + " " + strings.Join(paths, " ")
	failMsg := "Failed to create zpool: " + pool
	var disks []*blockDev
	for _, p := range paths {
		d := s.h.find(p)
		switch {
		case d == nil:
			s.fail(lapiconst.FailUnknownError, failMsg, command, 1, fmt.Sprintf("cannot open '%s': no such device in /dev\nmust be a full path or shorthand device name", p))
			return
		case d.InUse() && d.FSType == FSTypeZFS:
			s.fail(lapiconst.FailUnknownError, failMsg, command, 1, fmt.Sprintf("invalid vdev specification\nthe following errors must be manually repaired:\n%s is part of active pool '%s'", p, d.Pool))
			return
		case s.h.held(d) || containsMedium(disks, d):
			s.fail(lapiconst.FailUnknownError, failMsg, command, 1, fmt.Sprintf("cannot create '%s': one or more vdevs refer to the same device, or one of\nthe devices is part of an active md or lvm device", pool))
			return
		}
		disks = append(disks, d)
	}
	for _, d := range disks {
		s.e.overwrite(s.h, d, FSTypeZFS, pool)
		d.Pool = pool
	}
	s.used = disks
	s.ok(pool, physCrt, "ZPool '%s' on device(s) [%s] created.", pool, strings.Join(paths, ", "))
}

// containsMedium: one of disks is d, or another path to the same LUN.
func containsMedium(disks []*blockDev, d *blockDev) bool {
	for _, x := range disks {
		if x == d || sameMedium(x, d) {
			return true
		}
	}
	return false
}

// distinct resolves paths to the devices they name, once each.
func (s *stlt) distinct(paths []string) []*blockDev {
	var out []*blockDev
	for _, p := range paths {
		if d := s.h.find(p); d != nil && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// deleteDevicePool is DevicePoolHandler.deleteDevicePool, the rollback of a device
// pool whose storage pool could not be registered: the thin pool, then vgremove and
// pvremove; or zpool destroy and wipefs. The disks end up blank.
func (s *stlt) deleteDevicePool(kind lapi.ProviderKind, paths []string, poolName string) {
	switch kind {
	case lapi.LVM_THIN:
		vg, lv := thinVG(poolName), thinLV(poolName)
		delete(s.h.thin, vg+"/"+lv)
		s.ok(vg+"/"+lv, physDel, "Thin lv with name '%s' removed.", lv)
		s.deleteLVMPool(paths, vg)
	case lapi.LVM:
		s.deleteLVMPool(paths, poolName)
	case lapi.ZFS, lapi.ZFS_THIN:
		for _, d := range s.h.devs {
			if d.FSType == FSTypeZFS && d.Pool == poolName {
				d.Pool = ""
				s.e.rewrite(s.h, d, FSTypeZFS, "") // zpool destroy marks the labels destroyed
			}
		}
		// deleteZPool answers with MASK_CRT, as the server does.
		s.ok(poolName, physCrt, "ZPool '%s' deleted.", poolName)
		for _, d := range s.distinct(paths) {
			s.e.rewrite(s.h, d, "", "") // Commands.wipeFs
		}
	}
}

func (s *stlt) deleteLVMPool(paths []string, vg string) {
	for _, d := range s.h.devs {
		if d.FSType == FSTypeLVM && d.Pool == vg {
			d.Pool = ""
			s.e.rewrite(s.h, d, FSTypeLVM, "") // vgremove leaves orphan PVs
		}
	}
	s.h.prune()
	s.ok(vg, physDel, "VG with name '%s' removed.", vg)
	for _, d := range s.distinct(paths) {
		s.e.rewrite(s.h, d, "", "")
	}
	s.ok(vg, physDel, "PV for device(s) '%s' removed.", strings.Join(paths, ","))
}
