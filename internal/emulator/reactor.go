package emulator

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/linstor-operator/linstor-operator/pkg/linstor/props"
)

// onNoQuorumKey is the DRBD resource option for I/O without quorum.
const onNoQuorumKey = "DrbdOptions/Resource/on-no-quorum"

// reactorDiskStates, reactorConnectionStates and reactorRoles are the states
// drbd-reactor's prometheus plugin writes one series each of, with enums = true, in
// its order (drbd-reactor src/drbd.rs DiskState::iterator, ConnectionState::iterator,
// Role::iterator).
var (
	reactorDiskStates       = []string{"Diskless", "Attaching", "Detaching", "Failed", "Negotiating", "Inconsistent", "Outdated", "DUnknown", "Consistent", "UpToDate"}
	reactorConnectionStates = []string{"StandAlone", "Disconnecting", "Unconnected", "Timeout", "BrokenPipe", "NetworkFailure", "ProtocolError", "TearDown", "Connecting", "Connected"}
	reactorRoles            = []string{"Unknown", "Primary", "Secondary"}
)

// ReactorHandler serves the page drbd-reactor's prometheus plugin serves on nodeName
// (the satellite pod's drbd-reactor, with enums = true as the operator configures it),
// from the DRBD the emulator models there: what DRBD in that machine's kernel reports,
// not what LINSTOR shows (DRBD runs while only the satellite is stopped). The machine
// gone, nothing answers (503). Per drbd-reactor src/plugin/prometheus.rs Metrics::get:
//   - drbd_resource_role, _suspended, _maypromote per resource;
//   - drbd_connection_state per peer, drbd_peerdevice_outofsync_bytes per peer and
//     volume;
//   - drbd_device_state, _client, _unintentionaldiskless, _quorum per volume.
//
// A resource is suspended when it lost quorum and its on-no-quorum is suspend-io
// (drbd_state.c: susp_quorum = on_no_quorum == ONQ_SUSPEND_IO && !quorum); the option
// is the definition's, else its group's, else the controller's (a new database sets
// io-error there: freshControllerProps), and unset is DRBD's default, suspend-io. Out of
// sync toward a peer is one 4 KiB block per peer that missed this node's writes (the
// emulator does not count written bytes), and during a resync what is left of it, or of
// the whole volume for a new replica's first sync. I/O counters and the other gauges
// are left out.
func (e *Emulator) ReactorHandler(nodeName string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.advance()
		if !e.drbdRuns(nodeName) {
			http.Error(w, "the machine is gone", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(e.reactorPage(nodeName)))
	})
}

// reactorPage renders the page. The caller holds e.mu.
func (e *Emulator) reactorPage(nodeName string) string {
	families := map[string][]string{}
	add := func(name, labels string, value any) {
		families[name] = append(families[name], fmt.Sprintf("%s{%s} %v", name, labels, value))
	}
	boolean := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	resources := 0
	for _, rd := range e.sortedRDs() {
		var here string
		for name := range rd.resources {
			if strings.EqualFold(name, nodeName) {
				here = name
			}
		}
		rep := rd.resources[here]
		if rep == nil || !rep.drbd() {
			continue
		}
		resources++
		res := fmt.Sprintf("name=%q", rd.Name)
		role := "Secondary"
		if rep.inUse {
			role = "Primary"
		}
		for _, r := range reactorRoles {
			add("drbd_resource_role", fmt.Sprintf("%s,drbd_resource_role=%q", res, r), boolean(r == role))
		}
		quorum := e.hasQuorum(rd, here)
		add("drbd_resource_suspended", res, boolean(!quorum && !strings.EqualFold(e.onNoQuorum(rd), "io-error")))
		add("drbd_resource_maypromote", res, boolean(e.mayPromote(rd, here)))

		peers := slices.Sorted(func(yield func(string) bool) {
			for name, p := range rd.resources {
				if name != here && p.drbd() && !yield(name) {
					return
				}
			}
		})
		for _, peer := range peers {
			p := rd.resources[peer]
			conn := fmt.Sprintf("%s,conn_name=%q,peer_node_id=\"%d\"", res, peer, p.nodeID)
			state := e.drbdConnection(rd, here, peer).Message
			for _, s := range reactorConnectionStates {
				add("drbd_connection_state", fmt.Sprintf("%s,drbd_connection_state=%q", conn, s), boolean(s == state))
			}
			for _, v := range rd.volumes {
				add("drbd_peerdevice_outofsync_bytes", fmt.Sprintf("%s,volume=\"%d\"", conn, *v.VolumeNumber), e.outOfSyncBytes(rd, here, peer, int64(v.SizeKib)*1024))
			}
		}
		state, client := e.kernelDiskState(rep), rep.pool == ""
		for _, v := range rd.volumes {
			dev := fmt.Sprintf("%s,volume=\"%d\",minor=\"%d\"", res, *v.VolumeNumber, 1000+int(*v.VolumeNumber))
			for _, s := range reactorDiskStates {
				add("drbd_device_state", fmt.Sprintf("%s,drbd_device_state=%q", dev, s), boolean(s == state))
			}
			add("drbd_device_client", dev, boolean(client))
			add("drbd_device_unintentionaldiskless", dev, boolean(!client && state == "Diskless"))
			add("drbd_device_quorum", dev, boolean(quorum))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# TYPE drbdreactor_up gauge\ndrbdreactor_up 1\n# TYPE drbd_resource_resources gauge\ndrbd_resource_resources %d\n", resources)
	names := make([]string, 0, len(families))
	for name := range families {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(&b, "# TYPE %s gauge\n", name)
		for _, line := range families[name] {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// kernelDiskState is the disk state DRBD itself reports of a replica, whatever
// LINSTOR knows: Diskless without a disk or after the disk failed (DRBD detached it),
// Inconsistent while it is a resync target, else its settled state.
func (e *Emulator) kernelDiskState(rep *replica) string {
	switch {
	case rep.pool == "", rep.diskFailed:
		return "Diskless"
	case e.syncing(rep):
		return "Inconsistent"
	}
	return rep.diskState
}

// outOfSyncBytes is what DRBD on node has out of sync toward peer for a volume of
// size bytes: during a resync between the two (either way), what is left of the blocks
// to copy, the missed writes' block or, for a new replica's first sync, the whole
// volume; else one block if the peer missed node's writes.
func (e *Emulator) outOfSyncBytes(rd *resourceDefinition, node, peer string, size int64) int64 {
	rep, p := rd.resources[node], rd.resources[peer]
	for _, pair := range [][2]string{{peer, node}, {node, peer}} {
		target := rd.resources[pair[0]]
		if e.syncing(target) && strings.EqualFold(e.syncSource(rd, pair[0], target), pair[1]) {
			toCopy := int64(missedBlock)
			if target.syncFrom == "" {
				toCopy = size
			}
			return int64(float64(toCopy) * (1 - e.donePercentage(target)/100))
		}
	}
	if rep != nil && p != nil && p.behind[strings.ToLower(node)] {
		return missedBlock
	}
	return 0
}

// missedBlock is what the emulator counts out of sync for a peer's missed writes.
const missedBlock = 4096

// onNoQuorum is the definition's on-no-quorum option, else its group's, else the
// controller's ("" when unset: DRBD's default, suspend-io).
func (e *Emulator) onNoQuorum(rd *resourceDefinition) string {
	if v := rd.Props[onNoQuorumKey]; v != "" {
		return v
	}
	if v := e.rgs[strings.ToLower(rd.ResourceGroupName)].Props[onNoQuorumKey]; v != "" {
		return v
	}
	return e.controllerProps[onNoQuorumKey]
}

// SetResourceDefinitionProp sets (or, with value "", removes) a property of a resource
// definition, as `linstor resource-definition set-property` leaves it, checked against
// the property whitelist; the REST modify's answers are not modelled.
func (e *Emulator) SetResourceDefinitionProp(rd, key, value string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	def, ok := e.rds[strings.ToLower(rd)]
	if !ok {
		return fmt.Errorf("resource definition %q not found", rd)
	}
	if value == "" {
		delete(def.Props, key)
		return nil
	}
	if err := props.Check(props.ResourceDefinition, key, value); err != nil {
		return err
	}
	if def.Props == nil {
		def.Props = map[string]string{}
	}
	def.Props[key] = props.Normalize(props.ResourceDefinition, key, value)
	return nil
}
