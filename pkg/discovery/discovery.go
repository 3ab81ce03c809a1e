package discovery

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// RelistEvery is the default pace of the listings of a node's disks while one of its
// discovery pools does not exist yet (waiting for disks, dry run, retrying a failed
// claim). Each listing is one lsblk on the satellite, so a node whose pools all exist is
// not listed at all.
const RelistEvery = 2 * time.Minute

// Disk is an unused disk as LINSTOR lists it.
type Disk struct {
	Device     string
	Size       int64
	Rotational bool
	Model      string
	Serial     string
	WWN        string
}

// safeID: the characters udev keeps as they are in a by-id name; anything else is
// escaped or replaced, and a name we cannot predict exactly is not used.
var safeID = regexp.MustCompile(`^[A-Za-z0-9._:-]+$`)

// StableName is the /dev/disk/by-id link udev's 60-persistent-storage.rules give the
// disk, derived from the identity lsblk reports: "wwn-<WWN>" for SCSI/SATA disks,
// "nvme-<WWN>" for NVMe namespaces, "virtio-<serial>" for virtio disks. Empty when the
// name cannot be predicted (no WWN or serial, another bus, characters udev rewrites).
func StableName(d Disk) string {
	base := path.Base(d.Device)
	switch {
	case strings.HasPrefix(base, "nvme") && safeID.MatchString(d.WWN):
		return "/dev/disk/by-id/nvme-" + d.WWN
	case strings.HasPrefix(base, "sd") && safeID.MatchString(d.WWN):
		return "/dev/disk/by-id/wwn-" + d.WWN
	case strings.HasPrefix(base, "vd") && safeID.MatchString(d.Serial):
		return "/dev/disk/by-id/virtio-" + d.Serial
	}
	return ""
}

// identity tells a disk from another across kernel renames: its WWN or serial when it
// has one, its path otherwise; the size guards against reused serials.
func identity(device, wwn, serial string, size int64) string {
	if wwn != "" || serial != "" {
		return fmt.Sprintf("id:%s/%s/%d", wwn, serial, size)
	}
	return fmt.Sprintf("path:%s/%d", device, size)
}

func (d Disk) identity() string { return identity(d.Device, d.WWN, d.Serial, d.Size) }

// Pool is one discovery pool of a node.
type Pool struct {
	Name  string
	Match linstorv1.DiskDiscovery
	// Exists: LINSTOR has the pool on the node.
	Exists bool
}

// Input is what the decision depends on.
type Input struct {
	// Pools are the node's pools with source.discover, in spec order.
	Pools []Pool
	// HostDevices maps each path listed in another pool's source.hostDevices to that pool.
	HostDevices map[string]string
	// Listed are the unused disks LINSTOR listed in this pass; nil when not listed.
	Listed []Disk
	// Previous is the discovery status the last pass saved.
	Previous *linstorv1.DiscoveryStatus
	// Elsewhere maps the identity keys (IdentityKeys) of every disk other nodes report
	// in their discovery status, listed or claimed, to one such node: a disk seen there
	// is a shared LUN, and claiming it here would write under the other node's feet.
	Elsewhere map[string]string
}

// Action is what the controller does for a pool.
type Action int

const (
	// None: nothing to send to LINSTOR.
	None Action = iota
	// Claim: create the pool from Devices (POST /v1/physical-storage/{node}).
	Claim
	// Register: the pool's disks already hold its volume group or zpool (claimed in an
	// earlier life of the pool): create the LINSTOR pool on it, claim nothing.
	Register
)

// PoolPlan is the decision for one pool.
type PoolPlan struct {
	Action Action
	// Devices to send to LINSTOR: stable names on a first claim, kernel paths after.
	Devices []string
	// Disks are the disks claimed, for the events.
	Disks  []Disk
	Status linstorv1.DiscoveryPoolStatus
}

// Plan is the decision for a node.
type Plan struct {
	Pools []PoolPlan
	Disks []linstorv1.DiskStatus
}

// ListDue says whether LINSTOR should list the node's disks in this pass: only while a
// discovery pool is missing, at once when the spec changed, else every interval.
func ListDue(pools []Pool, prev *linstorv1.DiscoveryStatus, generation int64, now time.Time, every time.Duration) bool {
	missing := slices.ContainsFunc(pools, func(p Pool) bool { return !p.Exists })
	switch {
	case !missing:
		return false
	case prev == nil || prev.ListedAt == nil || prev.ObservedGeneration != generation:
		return true
	}
	return now.Sub(prev.ListedAt.Time) >= every
}

// Decide plans every discovery pool of a node. The rules, each there to keep a disk's data:
//   - a pool that exists is never given another disk (LINSTOR cannot extend one);
//   - a pool whose disks were claimed before is registered on them again, never given new ones;
//   - after a claim whose outcome is unknown or failed, the same disks are retried only
//     while all of them are still listed unused; otherwise nothing is claimed for it;
//   - a disk matched by two pools, or listed in a pool's hostDevices, is claimed by none;
//   - only whole physical disks are claimed (DeviceKind): never a loop device, zvol, md,
//     dm, DRBD, RBD or NBD device, and an unknown kind only when devicePaths names it;
//   - a WWN or serial listed twice on the node, or reported by another node, is one disk
//     seen twice (two paths, a shared LUN): claimed by none;
//   - a dry-run pool claims nothing, nor does a matcher that could take any disk
//     (no models, no devicePaths) until allowAnyDisk acknowledges it;
//   - a retried claim finds its disks by WWN, serial and size, never by kernel path;
//   - only disks LINSTOR listed as unused in this very pass are ever claimed.
func Decide(in Input) Plan {
	prevPools := map[string]linstorv1.DiscoveryPoolStatus{}
	var prevDisks []linstorv1.DiskStatus
	if in.Previous != nil {
		for _, p := range in.Previous.Pools {
			prevPools[p.Name] = p
		}
		prevDisks = in.Previous.Disks
	}
	claimedFor := map[string][]string{} // pool -> disks claimed before, as remembered
	for _, d := range prevDisks {
		if d.State == linstorv1.DiskClaimed && d.Pool != "" {
			claimedFor[d.Pool] = append(claimedFor[d.Pool], d.Device)
		}
	}
	plan := Plan{}
	decided := map[string]*PoolPlan{}
	var matching []*PoolPlan // pools that take disks from this listing
	for _, p := range in.Pools {
		prev, hasPrev := prevPools[p.Name]
		pp := &PoolPlan{Status: linstorv1.DiscoveryPoolStatus{Name: p.Name}}
		if hasPrev {
			pp.Status = *prev.DeepCopy()
		}
		attempted := hasPrev && len(prev.Claimed) > 0 && (prev.State == linstorv1.PoolClaiming || prev.State == linstorv1.PoolClaimFailed)
		switch {
		case p.Exists:
			pp.Status.State = linstorv1.PoolCreated
			pp.Status.Message = "The storage pool exists in LINSTOR"
			if len(pp.Status.Claimed) > 0 {
				pp.Status.Message += fmt.Sprintf(", made from %s", strings.Join(pp.Status.Claimed, ", "))
			}
		case attempted && in.Listed == nil:
			// Wait for a listing to know what the last claim did.
		case attempted:
			retryClaim(in, pp, prev, prevDisks)
		case (hasPrev && (prev.State == linstorv1.PoolCreated || prev.State == linstorv1.PoolRegistering)) || len(claimedFor[p.Name]) > 0:
			pp.Action = Register
			pp.Status.State = linstorv1.PoolRegistering
			pp.Status.Message = "The pool's disks already hold its volume group or zpool: registering the pool on them again, claiming no disk"
		case in.Listed == nil:
			if !hasPrev {
				pp.Status.State = linstorv1.PoolWaitingForDisks
				pp.Status.Message = "Waiting for LINSTOR to list the node's unused disks"
			}
		default:
			pp.Status.Claimed, pp.Status.Attempts, pp.Status.ClaimTime = nil, 0, nil
			matching = append(matching, pp)
		}
		decided[p.Name] = pp
	}

	if in.Listed == nil {
		plan.Disks = append(plan.Disks, prevDisks...)
	} else {
		plan.Disks = assign(in, decided, matching)
		// Disks claimed before are no longer listed: remember them, unless one is
		// listed unused again (wiped), in which case this listing speaks for it.
		seen := map[string]bool{}
		for _, d := range in.Listed {
			seen[d.identity()] = true
		}
		for _, d := range prevDisks {
			if d.State == linstorv1.DiskClaimed && !seen[identity(d.Device, d.WWN, d.Serial, d.Size.Value())] {
				plan.Disks = append(plan.Disks, d)
			}
		}
	}
	for _, p := range in.Pools {
		plan.Pools = append(plan.Pools, *decided[p.Name])
	}
	// Remembered claims of pools no longer in the spec stay, so a pool added back is
	// registered on its disks, and say why the disks are not offered again.
	inSpec := map[string]bool{}
	for _, p := range in.Pools {
		inSpec[p.Name] = true
	}
	for i := range plan.Disks {
		d := &plan.Disks[i]
		if d.State == linstorv1.DiskClaimed && !inSpec[d.Pool] {
			d.Message = fmt.Sprintf("Claimed for storage pool %s, which is no longer in the spec: its volume group or zpool stays on the disk (the operator never wipes a disk)", d.Pool)
		}
	}
	return plan
}

// retryClaim decides after a claim whose outcome is unknown or failed: the same disks
// again while all of them are still unused and still this pool's alone, else nothing,
// saying why. A disk is found again by its WWN, serial and size, not by its kernel
// path, which a reboot may have given to another disk.
func retryClaim(in Input, pp *PoolPlan, prev linstorv1.DiscoveryPoolStatus, prevDisks []linstorv1.DiskStatus) {
	var gone, unwanted []string
	var disks []Disk
	for _, dev := range prev.Claimed {
		d, ok := findAgain(in.Listed, rememberedClaim(prevDisks, prev.Name, dev))
		if !ok {
			gone = append(gone, dev)
			continue
		}
		m := classify(in, d)
		switch {
		case m.refused != "":
			unwanted = append(unwanted, fmt.Sprintf("%s (%s)", dev, m.message))
		case m.explicit || len(m.matchedBy) != 1 || m.matchedBy[0] != prev.Name:
			unwanted = append(unwanted, dev+" (no longer matched by this pool alone: the spec changed)")
		}
		disks = append(disks, d)
	}
	switch {
	case len(gone) > 0:
		pp.Status.State = linstorv1.PoolClaimFailed
		pp.Status.Message = fmt.Sprintf("The claim of %s did not create the pool, and %s no longer listed as unused with the same WWN, serial and size: LINSTOR did part of the work (a PV or zpool may exist), or the kernel names changed. "+
			"No other disk is claimed for this pool on this node. Inspect the node (pvs, vgs, zpool status); once the disks are unused again, the claim is retried",
			strings.Join(prev.Claimed, ", "), plural(gone, "is", "are"))
		return
	case len(unwanted) > 0:
		pp.Status.State = linstorv1.PoolClaimFailed
		pp.Status.Message = fmt.Sprintf("The claim of %s did not create the pool and is not retried: %s. "+
			"No other disk is claimed for this pool on this node while these are remembered; remove the pool from the spec to forget them", strings.Join(prev.Claimed, ", "), strings.Join(unwanted, "; "))
		return
	}
	pp.Action = Claim
	pp.Disks = disks
	pp.Status.Claimed = nil
	for _, d := range disks {
		pp.Devices = append(pp.Devices, d.Device) // a first attempt with stable names failed or is unknown
		pp.Status.Claimed = append(pp.Status.Claimed, d.Device)
	}
	pp.Status.State = linstorv1.PoolClaiming
	pp.Status.Attempts = prev.Attempts + 1
	pp.Status.Message = fmt.Sprintf("Claiming %s again (attempt %d): all of them are still unused", strings.Join(pp.Status.Claimed, ", "), pp.Status.Attempts)
}

// rememberedClaim is the disk status the last listing saved for a claimed path of pool;
// only the path is known when none was saved.
func rememberedClaim(prevDisks []linstorv1.DiskStatus, pool, dev string) linstorv1.DiskStatus {
	for _, d := range prevDisks {
		if d.State == linstorv1.DiskClaimed && d.Pool == pool && d.Device == dev {
			return d
		}
	}
	return linstorv1.DiskStatus{Device: dev}
}

// findAgain finds a remembered disk in this listing: by WWN or serial and size when
// it has them (whatever its path now), else by path, size and model. A remembered disk
// without a size was never seen listed: it is not found.
func findAgain(listed []Disk, was linstorv1.DiskStatus) (Disk, bool) {
	if was.Size == nil {
		return Disk{}, false
	}
	size := was.Size.Value()
	keys := identityKeys(was.WWN, was.Serial)
	var found []Disk
	for _, d := range listed {
		switch {
		case d.Size != size:
		case len(keys) > 0:
			if d.WWN == was.WWN && d.Serial == was.Serial {
				found = append(found, d)
			}
		case d.Device == was.Device && d.Model == was.Model && d.WWN == "" && d.Serial == "":
			found = append(found, d)
		}
	}
	if len(found) != 1 {
		return Disk{}, false // gone, or two candidates: not the disk we can be sure of
	}
	return found[0], true
}

// match is how the pools see one disk.
type match struct {
	explicit  bool     // listed in a pool's hostDevices
	owner     string   // that pool
	refused   string   // why no pool may claim it (a Reason), or ""
	message   string   // the refusal in words
	matchedBy []string // discovery pools whose matcher takes it
	why       []string // "<pool>: <what did not match>" for the others
}

// Reasons a disk is refused whatever the pools say.
const (
	ReasonNotAPhysicalDisk  = "NotAPhysicalDisk"
	ReasonSameIdentityTwice = "SameIdentityTwice"
	ReasonSeenOnOtherNode   = "SeenOnOtherNode"
)

func classify(in Input, d Disk) match {
	var m match
	m.owner, m.explicit = in.HostDevices[d.Device]
	if stable := StableName(d); !m.explicit && stable != "" {
		m.owner, m.explicit = in.HostDevices[stable]
	}
	m.refused, m.message = refusal(in, d)
	for _, p := range in.Pools {
		if reason := mismatch(&p.Match, d, StableName(d)); reason != "" {
			m.why = append(m.why, p.Name+": "+reason)
		} else {
			m.matchedBy = append(m.matchedBy, p.Name)
		}
	}
	return m
}

// refusal says why no pool may claim d on this node: what it is, or that its identity
// is seen twice.
func refusal(in Input, d Disk) (reason, message string) {
	if kind, what := DeviceKind(d.Device); kind == NeverClaimed {
		return ReasonNotAPhysicalDisk, fmt.Sprintf("A %s, not a physical disk: discovery never claims it (list it in a pool's hostDevices if it really is free)", what)
	}
	keys := identityKeys(d.WWN, d.Serial)
	for _, other := range in.Listed {
		if other.Device == d.Device {
			continue
		}
		for _, k := range identityKeys(other.WWN, other.Serial) {
			if slices.Contains(keys, k) {
				return ReasonSameIdentityTwice, fmt.Sprintf("%s is also listed as %s: two paths to one disk (multipath without multipathd?). Claimed by neither; run multipathd, or list the path to use in a pool's hostDevices", describeKey(k), other.Device)
			}
		}
	}
	for _, k := range keys {
		if node, ok := in.Elsewhere[k]; ok {
			return ReasonSeenOnOtherNode, fmt.Sprintf("%s is also reported by node %s: one disk seen by both (a shared LUN, which a pool on each would overwrite), or disks whose serials repeat across machines (some clouds name every VM's disks alike). Claimed by none; list it in the hostDevices of a pool of the one node that should use it", describeKey(k), node)
		}
	}
	return "", ""
}

func describeKey(k string) string {
	kind, value, _ := strings.Cut(k, ":")
	return fmt.Sprintf("Its %s %q", strings.ToUpper(kind), value)
}

func plural(items []string, one, many string) string {
	if len(items) == 1 {
		return items[0] + " " + one
	}
	return strings.Join(items, ", ") + " " + many
}

// assign decides every listed disk and fills the claims of the matching pools.
func assign(in Input, decided map[string]*PoolPlan, matching []*PoolPlan) []linstorv1.DiskStatus {
	disks := slices.Clone(in.Listed)
	sort.Slice(disks, func(i, j int) bool { return disks[i].Device < disks[j].Device })
	takes := map[string]bool{}
	for _, pp := range matching {
		takes[pp.Status.Name] = true
	}
	candidates := map[string][]int{}   // pool -> indexes into out
	contested := map[string][]string{} // pool -> disks it shares with another pool
	out := make([]linstorv1.DiskStatus, 0, len(disks))
	for _, d := range disks {
		st := diskStatus(d)
		m := classify(in, d)
		owner, matchedBy, why := m.owner, m.matchedBy, m.why
		switch {
		case m.explicit:
			st.State, st.Reason = linstorv1.DiskSkipped, "HostDevice"
			st.Message = fmt.Sprintf("Listed in the hostDevices of storage pool %s: no discovery pool claims it", owner)
		case m.refused != "":
			st.State, st.Reason, st.Message = linstorv1.DiskSkipped, m.refused, m.message
		case len(matchedBy) > 1:
			st.State, st.Reason = linstorv1.DiskSkipped, "MatchedTwice"
			st.Message = fmt.Sprintf("Matched by storage pools %s: claimed by none. Make their matchers exclusive", strings.Join(matchedBy, " and "))
			for _, pool := range matchedBy {
				contested[pool] = append(contested[pool], d.Device)
			}
		case len(matchedBy) == 0:
			st.State, st.Reason = linstorv1.DiskSkipped, "NoMatch"
			st.Message = "No discovery pool matches: " + strings.Join(why, "; ")
		default:
			pool := matchedBy[0]
			pp := decided[pool]
			st.Pool = pool
			switch {
			case takes[pool]:
				candidates[pool] = append(candidates[pool], len(out))
			case pp.Action == Claim && slices.Contains(pp.Status.Claimed, d.Device):
				st.State, st.Message = linstorv1.DiskClaimed, fmt.Sprintf("Claimed again for storage pool %s (attempt %d)", pool, pp.Status.Attempts)
			case pp.Status.State == linstorv1.PoolCreated:
				st.State, st.Reason = linstorv1.DiskSkipped, "PoolExists"
				st.Message = fmt.Sprintf("Storage pool %s already exists: LINSTOR cannot add a disk to an existing pool. Extend its volume group or zpool by hand (vgextend, zpool add) to use it", pool)
			default:
				st.State, st.Reason = linstorv1.DiskSkipped, "PoolFailed"
				st.Message = fmt.Sprintf("Storage pool %s is not being created from new disks: %s", pool, pp.Status.Message)
			}
		}
		out = append(out, st)
	}
	for _, pp := range matching {
		name := pp.Status.Name
		idx := candidates[name]
		var match *linstorv1.DiskDiscovery
		for i := range in.Pools {
			if in.Pools[i].Name == name {
				match = &in.Pools[i].Match
			}
		}
		limit := len(idx)
		if match.MaxDisksPerNode != nil && int(*match.MaxDisksPerNode) < limit {
			limit = int(*match.MaxDisksPerNode)
		}
		for n, i := range idx {
			st := &out[i]
			switch {
			case n >= limit:
				st.State, st.Reason = linstorv1.DiskSkipped, "LimitReached"
				st.Message = fmt.Sprintf("Storage pool %s takes at most %d disks per node (maxDisksPerNode)", name, limit)
			case match.DryRun:
				st.State, st.Message = linstorv1.DiskWouldClaim, fmt.Sprintf("Storage pool %s would claim it (dry run)", name)
			case NeedsAcknowledgement(match):
				st.State, st.Message = linstorv1.DiskWouldClaim, fmt.Sprintf("Storage pool %s would claim it once its matcher sets allowAnyDisk, or names models or devicePaths", name)
			default:
				st.State, st.Message = linstorv1.DiskClaimed, fmt.Sprintf("Claimed for storage pool %s", name)
				d := disks[i]
				pp.Disks = append(pp.Disks, d)
				dev := d.Device
				if stable := StableName(d); stable != "" {
					dev = stable
				}
				pp.Devices = append(pp.Devices, dev)
				pp.Status.Claimed = append(pp.Status.Claimed, d.Device)
			}
		}
		switch {
		case limit == 0:
			pp.Status.State = linstorv1.PoolWaitingForDisks
			pp.Status.Message = fmt.Sprintf("No unused disk matches (%d listed); disks added later are found when the node is listed again", len(disks))
			if c := contested[name]; len(c) > 0 {
				pp.Status.Message = fmt.Sprintf("No disk to claim: %s also matched by another pool (MatchedTwice), so neither claims it", plural(c, "is", "are"))
			}
		case match.DryRun:
			pp.Status.State = linstorv1.PoolDryRun
			pp.Status.Message = fmt.Sprintf("Dry run: would claim %d disks; nothing is claimed while dryRun is set", limit)
		case NeedsAcknowledgement(match):
			pp.Status.State = linstorv1.PoolAwaitingAcknowledgement
			pp.Status.Message = fmt.Sprintf("Would claim %d disks, but the matcher names no models or devicePaths, so it takes any unused disk of the node, including one holding data lsblk sees no signature of. "+
				"Nothing is claimed until source.discover.allowAnyDisk is set, or models or devicePaths narrow the matcher", limit)
		default:
			pp.Action = Claim
			pp.Status.State = linstorv1.PoolClaiming
			pp.Status.Attempts = 1
			pp.Status.Message = fmt.Sprintf("Claiming %s", strings.Join(pp.Status.Claimed, ", "))
			if c := contested[name]; len(c) > 0 {
				pp.Status.Message += fmt.Sprintf("; not %s, also matched by another pool (MatchedTwice)", strings.Join(c, ", "))
			}
		}
	}
	return out
}

func diskStatus(d Disk) linstorv1.DiskStatus {
	return linstorv1.DiskStatus{
		Device: d.Device, StableName: StableName(d), Size: resource.NewQuantity(d.Size, resource.BinarySI),
		Rotational: d.Rotational, Model: d.Model, Serial: d.Serial, WWN: d.WWN,
	}
}

// NeedsAcknowledgement reports whether a matcher could take any unused disk of a node
// (size and rotational only, or patterns that match everything such as "*" or
// "/dev/*") without allowAnyDisk acknowledging it.
func NeedsAcknowledgement(m *linstorv1.DiskDiscovery) bool {
	narrowed := (len(m.Models) > 0 && !catchAll(m.Models, anyModel)) || (len(m.DevicePaths) > 0 && !catchAll(m.DevicePaths, anyDevicePath))
	return !narrowed && !m.AllowAnyDisk
}

// mismatch says why d does not match m, or "" when it does.
func mismatch(m *linstorv1.DiskDiscovery, d Disk, stable string) string {
	if kind, what := DeviceKind(d.Device); kind == UnknownKind && !namesExactly(m.DevicePaths, d) {
		return fmt.Sprintf("a %s: only a devicePaths entry naming it exactly claims it", what)
	}
	if why := mismatchCriteria(m, d, stable); why != "" {
		return why
	}
	if d.WWN == "" && d.Serial == "" && !namesExactly(m.DevicePaths, d) {
		// Nothing tells it from a disk another machine sees too (a shared VMDK, a
		// libvirt shareable disk): the shared-disk checks cannot protect it.
		return "reports no WWN and no serial, so nothing tells it from a disk another machine also sees: only a devicePaths entry naming it exactly claims it"
	}
	return ""
}

// mismatchCriteria says which of the matcher's fields d fails, or "".
func mismatchCriteria(m *linstorv1.DiskDiscovery, d Disk, stable string) string {
	switch {
	case m.MinSize != nil && d.Size < m.MinSize.Value():
		return fmt.Sprintf("smaller than minSize %s", m.MinSize)
	case m.MaxSize != nil && d.Size > m.MaxSize.Value():
		return fmt.Sprintf("larger than maxSize %s", m.MaxSize)
	case m.WantsRotational() != nil && *m.WantsRotational() && !d.Rotational:
		return "not rotational"
	case m.WantsRotational() != nil && !*m.WantsRotational() && d.Rotational:
		return "rotational"
	case len(m.Models) > 0 && !anyMatch(m.Models, d.Model):
		return fmt.Sprintf("model %q matches none of %s", d.Model, strings.Join(m.Models, ", "))
	case len(m.DevicePaths) > 0 && !anyMatch(m.DevicePaths, d.Device) && (stable == "" || !anyMatch(m.DevicePaths, stable)):
		return fmt.Sprintf("path matches none of %s", strings.Join(m.DevicePaths, ", "))
	}
	return ""
}

func anyMatch(patterns []string, s string) bool {
	for _, p := range patterns {
		if ok, err := path.Match(p, s); err == nil && ok {
			return true
		}
	}
	return false
}
