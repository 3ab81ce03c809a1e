package emulator

import (
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
	"github.com/google/uuid"

	"github.com/linstor-operator/linstor-operator/pkg/linstor/props"
)

// nodeTypes are the node types a client may ask for, by their lower-case spelling:
// the server parses the type case-insensitively (LinstorParsingUtils.asNodeType,
// Node.Type) and answers the enum name, upper case (Node.getApiData). OPENFLEX_TARGET
// is gone; REMOTE_SPDK and EBS_TARGET are "special" nodes.
var nodeTypes = map[string]string{
	"controller": "CONTROLLER", "satellite": "SATELLITE", "combined": "COMBINED", "auxiliary": "AUXILIARY",
	"remote_spdk": "REMOTE_SPDK", "ebs_target": "EBS_TARGET",
}

func specialNodeType(t string) bool { return t == "REMOTE_SPDK" || t == "EBS_TARGET" }

// holdsPools: only SATELLITE and COMBINED allow storage providers (Node.Type's
// allowed kinds; the special types are not modelled further).
func holdsPools(t string) bool { return t == "SATELLITE" || t == "COMBINED" }

const (
	disklessPool = "DfltDisklessStorPool"
	// curStltConnKey names the active net interface (Node.setActiveStltConn).
	curStltConnKey = "CurStltConnName"
	// nodeUnameKey is set from the satellite's uname when it first authenticates
	// (CtrlAuthResponseApiCallHandler.updateUnameMap). Neither key is whitelisted.
	nodeUnameKey = "NodeUname"
)

func (e *Emulator) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /metrics", e.metrics)
	mux.HandleFunc("GET /v1/controller/version", e.getVersion)
	mux.HandleFunc("GET /v1/controller/properties", e.getControllerProps)
	mux.HandleFunc("POST /v1/controller/properties", e.modifyControllerProps)
	mux.HandleFunc("DELETE /v1/controller/properties/{key...}", e.deleteControllerProp)
	mux.HandleFunc("GET /v1/encryption/passphrase", e.getPassphraseStatus)
	mux.HandleFunc("POST /v1/encryption/passphrase", e.createPassphrase)
	mux.HandleFunc("PUT /v1/encryption/passphrase", e.modifyPassphrase)
	mux.HandleFunc("PATCH /v1/encryption/passphrase", e.enterPassphrase)

	mux.HandleFunc("GET /v1/events/nodes", e.nodeEvents)

	mux.HandleFunc("GET /v1/nodes", e.listNodes)
	mux.HandleFunc("POST /v1/nodes", e.createNode)
	mux.HandleFunc("GET /v1/nodes/{node}", e.onNode(queryMissing, e.getNode))
	mux.HandleFunc("PUT /v1/nodes/{node}", e.onNode(missingWith(lapiconst.FailNotFoundNode|modNode), e.modifyNode))
	mux.HandleFunc("DELETE /v1/nodes/{node}", e.onNode(deleteMissing(delNode), e.deleteNode))
	mux.HandleFunc("DELETE /v1/nodes/{node}/lost", e.onNode(deleteMissing(delNode), e.lostNode))
	mux.HandleFunc("PUT /v1/nodes/{node}/reconnect", e.onNode(missingWith(lapiconst.FailNotFoundNode|modNode), e.reconnectNode))
	mux.HandleFunc("PUT /v1/nodes/{node}/evacuate", e.onNode(rawMissing, e.evacuateNode))
	mux.HandleFunc("PUT /v1/nodes/{node}/evict", e.onNode(rawMissing, e.evictNode))
	mux.HandleFunc("PUT /v1/nodes/{node}/restore", e.onNode(rawMissing, e.restoreNode))
	mux.HandleFunc("GET /v1/nodes/{node}/net-interfaces", e.onNode(queryMissing, e.listNetIfs))
	mux.HandleFunc("POST /v1/nodes/{node}/net-interfaces", e.onNode(missingWith(lapiconst.FailNotFoundNode|crtNetIf), e.createNetIf))
	mux.HandleFunc("GET /v1/nodes/{node}/net-interfaces/{netif}", e.onNode(queryMissing, e.getNetIf))
	mux.HandleFunc("PUT /v1/nodes/{node}/net-interfaces/{netif}", e.onNode(missingWith(lapiconst.FailNotFoundNode|modNetIf), e.modifyNetIf))
	mux.HandleFunc("DELETE /v1/nodes/{node}/net-interfaces/{netif}", e.onNode(netIfDeleteMissing, e.deleteNetIf))

	mux.HandleFunc("GET /v1/nodes/{node}/storage-pools", e.hangingQuery(e.onNode(queryMissing, e.listPools)))
	mux.HandleFunc("POST /v1/nodes/{node}/storage-pools", e.onNode(missingWith(lapiconst.FailNotFoundNode|crtPool), e.createPool))
	mux.HandleFunc("GET /v1/nodes/{node}/storage-pools/{pool}", e.hangingQuery(e.onNode(queryMissing, e.getPool)))
	mux.HandleFunc("PUT /v1/nodes/{node}/storage-pools/{pool}", e.onNode(missingWith(lapiconst.FailNotFoundNode|modPool), e.modifyPool))
	mux.HandleFunc("DELETE /v1/nodes/{node}/storage-pools/{pool}", e.onNode(poolDeleteMissing, e.deletePool))
	mux.HandleFunc("GET /v1/view/storage-pools", e.hangingQuery(e.viewPools))
	mux.HandleFunc("GET /v1/physical-storage", e.viewPhysicalStorage)
	mux.HandleFunc("GET /v1/physical-storage/{$}", e.viewPhysicalStorage)
	mux.HandleFunc("GET /v1/physical-storage/{node}", e.onNode(queryMissing, e.getPhysicalStorage))
	mux.HandleFunc("POST /v1/physical-storage/{node}", e.onNode(missingWith(lapiconst.FailNotFoundNode|lapiconst.MaskPhysicalDevice|lapiconst.MaskCrt), e.createDevicePool))

	mux.HandleFunc("GET /v1/node-connections", e.listNodeConnections)
	mux.HandleFunc("PUT /v1/node-connections/{a}/{b}", e.modifyNodeConnection)

	mux.HandleFunc("GET /v1/resource-definitions", e.listResourceDefinitions)
	mux.HandleFunc("GET /v1/resource-groups", e.listResourceGroups)
	mux.HandleFunc("POST /v1/resource-definitions", e.createResourceDefinition)
	mux.HandleFunc("DELETE /v1/resource-definitions/{rd}", e.deleteResourceDefinition)
	mux.HandleFunc("GET /v1/resource-definitions/{rd}/sync-status", e.syncStatus)
	mux.HandleFunc("GET /v1/resource-definitions/{rd}/volume-definitions", e.listVolumeDefinitions)
	mux.HandleFunc("POST /v1/resource-definitions/{rd}/volume-definitions", e.createVolumeDefinition)
	mux.HandleFunc("GET /v1/resource-definitions/{rd}/resources", e.listResources)
	mux.HandleFunc("POST /v1/resource-definitions/{rd}/resources/{node}", e.createResource)
	mux.HandleFunc("DELETE /v1/resource-definitions/{rd}/resources/{node}", e.deleteResource)
	mux.HandleFunc("PUT /v1/resource-definitions/{rd}/resources/{node}/toggle-disk/diskless", e.toggleDisk(true))
	mux.HandleFunc("PUT /v1/resource-definitions/{rd}/resources/{node}/toggle-disk/diskless/{pool}", e.toggleDisk(true))
	mux.HandleFunc("PUT /v1/resource-definitions/{rd}/resources/{node}/toggle-disk/diskful", e.toggleDisk(false))
	mux.HandleFunc("PUT /v1/resource-definitions/{rd}/resources/{node}/toggle-disk/diskful/{pool}", e.toggleDisk(false))
	mux.HandleFunc("GET /v1/view/resources", e.viewResources)
	e.backupRoutes(mux)
}

// missingFunc answers a request whose node does not exist; each server handler has
// its own answer (nodes.md in docs/linstor-semantics.md lists them).
type missingFunc func(w http.ResponseWriter, r *http.Request)

// queryMissing: a GET answers 404 with the raw code (RequestHelper.notFoundResponse).
func queryMissing(w http.ResponseWriter, r *http.Request) {
	notFound(w, lapiconst.FailNotFoundNode, "Node '%s' not found.", r.PathValue("node"))
}

// missingWith: a mutating call fails with the context's masks; codes 300-399 are 404
// (CtrlApiDataLoader.loadNode).
func missingWith(code uint64) missingFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("node")
		writeRC(w, http.StatusOK, rc(code, "Node '%s' not found.", name).
			withCause("The specified node '%s' could not be found in the database", name).
			withCorrection("Create a node with the name '%s' first.", name).withRefs("Node", name))
	}
}

// rawMissing: evacuate, evict and restore answer without context masks or obj_refs
// (they are not wrapped in reportingExceptions).
func rawMissing(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("node")
	writeRC(w, http.StatusOK, rc(lapiconst.FailNotFoundNode, "Node '%s' not found.", name).
		withCause("The specified node '%s' could not be found in the database", name).
		withCorrection("Create a node with the name '%s' first.", name))
}

// deleteMissing: deleting a node that does not exist has no effect and is no error
// (CtrlNodeDeleteApiCallHandler, CtrlNodeLostApiCallHandler): 200 with WARN_NOT_FOUND.
func deleteMissing(ctx uint64) missingFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("node")
		writeRC(w, http.StatusOK, rc(lapiconst.WarnNotFound|ctx, "Deletion of node '%s' had no effect.", name).
			withCause("Node '%s' does not exist.", name).withDetails("Node: %s", name).withRefs("Node", name))
	}
}

func netIfDeleteMissing(w http.ResponseWriter, r *http.Request) {
	writeNetIfNotFound(w, r.PathValue("node"), r.PathValue("netif"))
}

func writeNetIfNotFound(w http.ResponseWriter, nodeName, nif string) {
	writeRC(w, http.StatusOK, rc(lapiconst.WarnNotFound|delNetIf, "Deletion of netInterface '%s' on node '%s' had no effect.", nif, nodeName).
		withCause("NetInterface '%s' on node '%s' does not exist.", nif, nodeName).withRefs("Node", nodeName))
}

// onNode serves a request about the node in the path: it holds the lock, brings
// time-driven state up to date and answers as the server does when the node is missing.
func (e *Emulator) onNode(missing missingFunc, h func(http.ResponseWriter, *http.Request, *node)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.advance()
		n, ok := e.nodes[strings.ToLower(r.PathValue("node"))]
		if !ok {
			missing(w, r)
			return
		}
		h(w, r, n)
	}
}

func (e *Emulator) listNodes(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance()
	filter := queryList(r, "nodes")
	out := []lapi.Node{}
	for _, n := range e.sortedNodes() {
		if len(filter) == 0 || filter[strings.ToLower(n.Name)] {
			out = append(out, e.nodeView(n))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (e *Emulator) getNode(w http.ResponseWriter, r *http.Request, n *node) {
	writeJSON(w, http.StatusOK, e.nodeView(n))
}

// createNode follows CtrlNodeCrtApiCallHandler.createNode: type, net interfaces
// present, name, uniqueness, properties, each interface, a satellite connection.
func (e *Emulator) createNode(w http.ResponseWriter, r *http.Request) {
	var in lapi.Node
	var typed struct {
		Type *string `json:"type"`
	}
	if !decodeTwice(w, r, &in, &typed, http.StatusInternalServerError) {
		return
	}
	if typed.Type == nil {
		in.Type = "SATELLITE" // a missing type (JSON null) is a satellite; "" is no enum name
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance()
	fail := func(code uint64, format string, args ...any) apiCallRc {
		return rc(code|crtNode, format, args...).withRefs("Node", in.Name)
	}
	typ, ok := nodeTypes[strings.ToLower(in.Type)]
	{
		if !ok {
			writeRC(w, http.StatusCreated, fail(lapiconst.FailInvldNodeType, "The specified node type '%s' is invalid.", in.Type).
				withCorrection("Valid node types are:\nCONTROLLER\nSATELLITE\nCOMBINED\nAUXILIARY\n"))
			return
		}
	}
	if len(in.NetInterfaces) == 0 {
		writeRC(w, http.StatusCreated, fail(lapiconst.FailMissingNetcom, "Registration of node '%s' failed.", in.Name).
			withCause("No network interfaces were given.").
			withCorrection("At least one network interface has to be given and be marked to be used for controller-satellite communication."))
		return
	}
	if err := checkNodeName(in.Name); err != "" {
		writeRC(w, http.StatusCreated, fail(lapiconst.FailInvldNodeName, "The given node name '%s' is invalid.", in.Name).withCause("%s", err))
		return
	}
	if e.nodes[strings.ToLower(in.Name)] != nil {
		writeRC(w, http.StatusCreated, fail(lapiconst.FailExistsNode, "Registration of node '%s' failed.", in.Name).
			withCause("A node with the specified name '%s' already exists.", in.Name).
			withCorrection("- Specify another name for the new node\nor\n- Delete the existing node before creating a new node with the same name"))
		return
	}
	nodeProps := map[string]string{}
	var answer []apiCallRc
	if len(in.Props) > 0 {
		set, bad := setProps(props.Node, nodeProps, in.Props)
		if bad != nil {
			writeRC(w, http.StatusCreated, propRefused(*bad, crtNode).withRefs("Node", in.Name))
			return
		}
		answer = append(answer, rc(lapiconst.MaskNode|lapiconst.MaskCrt|lapiconst.Created, "Successfully set property key(s): %s", strings.Join(set, ",")))
	}
	nifs, active, bad := checkNetIfs(in.Name, in.NetInterfaces, crtNode)
	if bad != nil {
		writeRC(w, http.StatusCreated, *bad)
		return
	}
	if active == "" {
		writeRC(w, http.StatusCreated, fail(lapiconst.FailNoStltConnDefined, "No satellite connection defined for node '%s'", in.Name))
		return
	}
	n := &node{Node: lapi.Node{
		Name: in.Name, Type: typ, Props: nodeProps, Uuid: uuid.NewString(), NetInterfaces: nifs,
	}, pools: map[string]*lapi.StoragePool{}}
	e.ensureHost(n.Name)
	n.Props[curStltConnKey] = active
	if holdsPools(typ) {
		n.StorageProviders = []lapi.ProviderKind{lapi.DISKLESS, lapi.LVM, lapi.LVM_THIN, lapi.ZFS, lapi.ZFS_THIN, lapi.FILE, lapi.FILE_THIN}
		n.pools[disklessPool] = &lapi.StoragePool{StoragePoolName: disklessPool, NodeName: n.Name, ProviderKind: lapi.DISKLESS, Uuid: uuid.NewString(),
			StaticTraits: map[string]string{"SupportsSnapshots": "false"}, Props: map[string]string{}}
	}
	e.nodes[strings.ToLower(in.Name)] = n
	// node-create goes out after the commit and before the controller first connects
	// (CtrlNodeCrtApiCallHandler.java:198, connectNow after it): the node still has the
	// offline peer it was created with (NodeControllerFactory.java:95,
	// PeerOffline.getConnectionStatus), so it is OFFLINE and lists no storage providers
	// or layers (those come from the satellite's tools).
	created := e.nodeView(n)
	created.StorageProviders, created.ResourceLayers = nil, nil
	e.emitNode(evNodeCreate, created)
	if !e.coupled {
		e.setOnline(n, true)
	}
	answer = append(answer, rc(lapiconst.Created|crtNode, "New node '%s' registered.", n.Name).
		withDetails("Node '%s' UUID is: %s", n.Name, n.Uuid).withRefs("Node", in.Name, "UUID", n.Uuid))
	// The controller waits up to a second for the connection (connectNow,
	// FIRST_CONNECT_TIMEOUT_MILLIS); a satellite that is not there by then is a
	// warning, and the node is stored all the same.
	if holdsPools(typ) && (!n.online || e.timing.SatelliteConnect > time.Second) {
		answer = append(answer, rc(lapiconst.WarnNotConnected|crtNode, "No active connection to satellite '%s'", n.Name).
			withDetails("The controller is trying to (re-) establish a connection to the satellite. The controller stored the changes and as soon the satellite is connected, it will receive this update.").
			withRefs("Node", in.Name))
	}
	writeRC(w, http.StatusCreated, answer...)
}

// checkNetIfs validates interfaces in request order as node create does; the first one
// with both a satellite port and an encryption type becomes the active connection
// (is_active is ignored on node create).
func checkNetIfs(nodeName string, in []lapi.NetInterface, ctx uint64) ([]lapi.NetInterface, string, *apiCallRc) {
	var out []lapi.NetInterface
	active := ""
	seen := map[string]bool{}
	for _, nif := range in {
		hasConn := nif.SatellitePort != 0 && nif.SatelliteEncryptionType != ""
		if bad := checkNetIf(nodeName, nif, hasConn, ctx); bad != nil {
			return nil, "", bad
		}
		if seen[strings.ToLower(nif.Name)] {
			bad := rc(lapiconst.FailExistsNetIf|ctx, "Registration of node '%s' failed.", nodeName).
				withCause("A duplicate network interface name was encountered during node registration.")
			return nil, "", &bad
		}
		seen[strings.ToLower(nif.Name)] = true
		stored := lapi.NetInterface{Name: nif.Name, Address: nif.Address, Uuid: uuid.NewString()}
		if hasConn {
			stored.SatellitePort, stored.SatelliteEncryptionType = nif.SatellitePort, strings.ToUpper(nif.SatelliteEncryptionType)
			if active == "" {
				active = nif.Name
			}
		}
		out = append(out, stored)
	}
	return out, active, nil
}

// checkNetIf applies the interface rules: port and encryption only when both are given,
// then the name, then the address (an IP literal; no host names).
func checkNetIf(nodeName string, nif lapi.NetInterface, hasConn bool, ctx uint64) *apiCallRc {
	var bad apiCallRc
	switch {
	case hasConn && (nif.SatellitePort < 1 || nif.SatellitePort > 65535):
		bad = rc(lapiconst.FailInvldNetPort|ctx, "The given portNumber '%d' is invalid.", nif.SatellitePort)
	case hasConn && !strings.EqualFold(nif.SatelliteEncryptionType, "PLAIN") && !strings.EqualFold(nif.SatelliteEncryptionType, "SSL"):
		bad = rc(lapiconst.FailInvldNetType|ctx, "The given encryption type '%s' is invalid.", nif.SatelliteEncryptionType)
	case checkNetIfName(nif.Name) != "":
		bad = rc(lapiconst.FailInvldNetName|ctx, "The specified net interface name '%s' is invalid.", nif.Name).withCause("%s", checkNetIfName(nif.Name))
	case nif.Address == nil:
		bad = rc(lapiconst.FailInvldNetAddr|ctx, "Failed to parse IP address").withCause("The specified IP address is not valid").
			withCorrection("Specify a valid IPv4 or IPv6 address.")
	default:
		return nil
	}
	bad = bad.withRefs("Node", nodeName)
	return &bad
}

// checkNodeName is Checks.hostNameCheck: 2-255 bytes of [A-Za-z0-9.-], not starting
// with '.' or '-', not ending with '-', each dot-separated label at most 63 long. A
// leading digit is fine; '_' is not.
func checkNodeName(s string) string {
	switch {
	case strings.HasPrefix(s, "."):
		return "Hostname cannot begin with '.'"
	case strings.HasPrefix(s, "-"):
		return "Hostname cannot begin with '-'"
	case strings.HasSuffix(s, "-"):
		return "Hostname cannot end with '-'"
	case len(s) < 2:
		return "Hostname length violates RFC1123 minimum length of 2"
	case len(s) > 255:
		return "Hostname length violates RFC1123 maximum length of 255"
	}
	for _, label := range strings.Split(s, ".") {
		if len(label) > 63 {
			return "Domain name component length violates RFC1123 maximum length of 63"
		}
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			return "Domain name cannot contain character '" + string(c) + "'"
		}
	}
	return ""
}

// checkNetIfName is NetInterfaceName's Checks.nameCheck: 3-32 characters, at least one
// letter, starting with a letter or '_', then letters, digits, '_' or '-'.
func checkNetIfName(s string) string {
	return checkName(s, 3, 32, "-")
}

// checkName is Checks.nameCheck with the extra characters a name kind allows after
// the first one.
func checkName(s string, minLen, maxLen int, extra string) string {
	if len(s) < minLen || len(s) > maxLen {
		return "Name '" + s + "' must be " + itoa(minLen) + " to " + itoa(maxLen) + " characters long"
	}
	letter := false
	for i, c := range s {
		alpha := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		letter = letter || alpha
		switch {
		case alpha || c == '_':
		case i > 0 && (c >= '0' && c <= '9' || strings.ContainsRune(extra, c)):
		default:
			return "Name '" + s + "' contains invalid character '" + string(c) + "'"
		}
	}
	if !letter {
		return "Name '" + s + "' must contain at least one letter"
	}
	return ""
}

// modifyNode follows CtrlNodeApiCallHandler.modify: type change, then properties; any
// refusal leaves the node as it was (the transaction rolls back).
func (e *Emulator) modifyNode(w http.ResponseWriter, r *http.Request, n *node) {
	var in lapi.NodeModify
	if !decode(w, r, &in, http.StatusInternalServerError) {
		return
	}
	fail := func(code uint64, format string, args ...any) apiCallRc {
		return rc(code|modNode, format, args...).withRefs("Node", n.Name)
	}
	newType := n.Type
	if in.NodeType != "" {
		typ, ok := nodeTypes[strings.ToLower(in.NodeType)]
		switch {
		case !ok:
			writeRC(w, http.StatusOK, fail(lapiconst.FailInvldNodeType, "The specified node type '%s' is invalid.", in.NodeType))
			return
		case specialNodeType(typ) != specialNodeType(n.Type):
			writeRC(w, http.StatusOK, fail(lapiconst.FailInvldNodeType, "Failed to change node type").
				withCause("Changing node types from %s to %s is not allowed", n.Type, typ))
			return
		case !holdsPools(typ) && len(n.pools) > 0:
			// Every satellite has DfltDisklessStorPool, which CONTROLLER and AUXILIARY
			// do not allow: in practice a satellite never becomes one of them.
			writeRC(w, http.StatusOK, fail(lapiconst.FailInvldStorDriver, "Failed to change node type").
				withCause("The current node has at least one storage pool with a storage driver that is not compatible with node type '%s'", typ))
			return
		}
		newType = typ
	}
	answer, next, bad := modifyProps(props.Node, n.Props, in.GenericPropsModify, lapiconst.MaskNode)
	if bad != nil {
		writeRC(w, http.StatusOK, bad.withRefs("Node", n.Name))
		return
	}
	if pref, ok := next["PrefNic"]; ok && findNetIf(n, pref) < 0 {
		writeRC(w, http.StatusOK, fail(lapiconst.FailInvldProp, "The network interface '%s' of node '%s' does not exist!", pref, n.Name))
		return
	}
	n.Props, n.Type = next, newType
	e.emitNodeModified(n) // also when nothing changed: every modify that passes sends one
	if e.connectionStatus(n) != "ONLINE" {
		for _, k := range slices.Sorted(maps.Keys(in.OverrideProps)) {
			if strings.HasPrefix(k, "Drbd") {
				answer = append(answer, rc(lapiconst.WarnUneffectiveProp|modNode, "The property '%s' has no effect since the node '%s' does not support DRBD 9", k, n.Name))
			}
		}
	}
	answer = append(answer, rc(lapiconst.Modified|modNode, "Node '%s' modified.", n.Name).
		withDetails("Node '%s' UUID is: %s", n.Name, n.Uuid).withRefs("Node", n.Name, "UUID", n.Uuid))
	writeRC(w, http.StatusOK, answer...)
}

// deleteNode follows CtrlNodeDeleteApiCallHandler: an evicted node is left alone; a
// node is refused only while one of its resources is in use, or holds the last
// diskful replica of a resource that still has diskless peers
// (CtrlRscDeleteApiHelper.ensureNotInUse, ensureNotLastDisk). A node holding the only
// replica of a resource without diskless peers IS deleted, with that data.
func (e *Emulator) deleteNode(w http.ResponseWriter, r *http.Request, n *node) {
	if hasFlag(n.Flags, lapiconst.FlagEvicted) {
		writeRC(w, http.StatusOK, rc(lapiconst.WarnNodeEvicted|delNode, "Deletion of node '%s' had no effect.", n.Name).
			withCause("Node '%s' has been evicted.", n.Name).withCorrection("Use node lost command to delete an evicted node.").withRefs("Node", n.Name))
		return
	}
	var refusals []apiCallRc
	for _, rd := range e.sortedRDs() {
		rep := rd.resources[n.Name]
		if rep == nil {
			continue
		}
		if why := e.refuseReplicaDelete(rd, n.Name, delNode); why != nil {
			refusals = append(refusals, why.withRefs("Node", n.Name))
		}
	}
	if len(refusals) > 0 {
		refusals = append(refusals, rc(lapiconst.FailNodeHasUsedRsc|delNode, "Cannot delete node, because it has in use or last diskful resources.").
			withCause("Node '%s' cannot be deleted.", n.Name).withDetails("Node: %s", n.Name).withRefs("Node", n.Name))
		writeRC(w, http.StatusOK, refusals...)
		return
	}
	var answer []apiCallRc
	involved := map[string]bool{}
	for _, rd := range e.rds {
		if rd.resources[n.Name] != nil {
			for peer := range rd.resources {
				involved[peer] = true
			}
		}
	}
	if len(involved) > 0 {
		answer = append(answer, rc(lapiconst.Deleted|delNode, "Node '%s' marked for deletion.", n.Name).withDetails("Node '%s' UUID is: %s", n.Name, n.Uuid))
		for _, peer := range slices.Sorted(maps.Keys(involved)) {
			if p := e.nodes[strings.ToLower(peer)]; p != nil && e.connectionStatus(p) != "ONLINE" {
				answer = append(answer, rc(lapiconst.WarnNotConnected|delNode, "No active connection to satellite '%s'", p.Name).withRefs("Node", n.Name))
			}
		}
	}
	// node-delete carries the node as it was just before it went: marked DELETE
	// (CtrlNodeDeleteApiCallHandler.java:256), still with its connection
	// (deleteNodeIfEmpty takes the view at :476, sends at :481; the peer is closed later).
	gone := e.nodeView(n)
	gone.Flags = appendFlag(gone.Flags, lapiconst.FlagDelete)
	e.removeNode(n)
	e.emitNode(evNodeDelete, gone)
	answer = append(answer, rc(lapiconst.Deleted|delNode, "Node '%s' deleted.", n.Name).withDetails("Node '%s' UUID was: %s", n.Name, n.Uuid).withRefs("Node", n.Name, "UUID", n.Uuid))
	writeRC(w, http.StatusOK, answer...)
}

// refuseReplicaDelete is ensureNotInUse then ensureNotLastDisk for one replica.
func (e *Emulator) refuseReplicaDelete(rd *resourceDefinition, nodeName string, ctx uint64) *apiCallRc {
	rep := rd.resources[nodeName]
	if e.inUseReported(nodeName, rep) {
		bad := rc(lapiconst.FailInUse|ctx, "Resource '%s' is still in use.", rd.Name).withCause("Resource is mounted/in use.").
			withCorrection("Un-mount resource '%s' on the node '%s'.", rd.Name, nodeName)
		return &bad
	}
	if !rep.diskful() {
		return nil
	}
	disklessPeers, otherDiskful := 0, 0
	for peer, p := range rd.resources {
		switch {
		case peer == nodeName || hasFlag(p.flags, lapiconst.FlagDelete):
		case p.diskful():
			otherDiskful++
		default:
			disklessPeers++
		}
	}
	if disklessPeers > 0 && otherDiskful == 0 {
		bad := rc(lapiconst.FailInUse|ctx, "Last resource of '%s' with disk still has diskless resources attached.", rd.Name).
			withCause("Resource still has diskless users.").withCorrection("Before deleting this resource, delete the diskless resources attached to it.")
		return &bad
	}
	return nil
}

// lostNode follows CtrlNodeLostApiCallHandler: refused while the satellite is ONLINE;
// otherwise every resource on it goes, with no in-use or last-replica check. It sends
// no node-delete event (lostNodeInTransaction never calls the event bridge).
func (e *Emulator) lostNode(w http.ResponseWriter, r *http.Request, n *node) {
	if e.connectionStatus(n) == "ONLINE" {
		writeRC(w, http.StatusOK, rc(lapiconst.FailExistsNodeConn|delNode, "Node '%s' still connected, please use the 'DelNode' api.", n.Name).withRefs("Node", n.Name))
		return
	}
	e.removeNode(n)
	writeRC(w, http.StatusOK, rc(lapiconst.Deleted|delNode, "Node '%s' deleted.", n.Name).withDetails("Node '%s' UUID was: %s", n.Name, n.Uuid).withRefs("Node", n.Name, "UUID", n.Uuid))
}

func (e *Emulator) removeNode(n *node) {
	for _, rd := range e.rds {
		delete(rd.resources, n.Name)
	}
	for k := range e.nodeConns {
		if k[0] == n.Name || k[1] == n.Name {
			delete(e.nodeConns, k)
		}
	}
	delete(e.nodes, strings.ToLower(n.Name))
}

// reconnectNode: an evicted node is not reconnected (CtrlNodeApiCallHandler.reconnectNode).
func (e *Emulator) reconnectNode(w http.ResponseWriter, r *http.Request, n *node) {
	if hasFlag(n.Flags, lapiconst.FlagEvicted) {
		writeRC(w, http.StatusOK, rc(lapiconst.WarnNodeEvicted|modNode, "Nodes [%s] are evicted and will not be reconnected. Use node restore <node-name> to reconnect.", n.Name).withRefs("Node", n.Name))
		return
	}
	n.onlineSince = e.now() // the connection is closed and opened again
	answer := []apiCallRc{rc(lapiconst.MaskMod|lapiconst.MaskNode, "Nodes [%s] will be reconnected.", n.Name).withRefs("Node", n.Name)}
	if e.connectionStatus(n) != "ONLINE" {
		answer = append(answer, rc(lapiconst.WarnNotConnected|modNode, "No active connection to satellite '%s'", n.Name).withRefs("Node", n.Name))
	}
	writeRC(w, http.StatusOK, answer...)
}

// evictNode follows CtrlNodeApiCallHandler.evictNode (raw codes, no context): refused
// while ONLINE; the node is flagged EVICTED (which carries the DELETE bit) and its
// replicas are set INACTIVE/EVICTED; replacements are placed where possible.
func (e *Emulator) evictNode(w http.ResponseWriter, r *http.Request, n *node) {
	if e.connectionStatus(n) == "ONLINE" {
		writeRC(w, http.StatusOK, rc(lapiconst.FailInUse|lapiconst.MaskNode, "Eviction of an online node is not possible."))
		return
	}
	var answer []apiCallRc
	if !hasFlag(n.Flags, lapiconst.FlagEvicted) {
		e.queryThinFreeSpace(nil) // CtrlNodeApiCallHandler.declareEvicted: fetchThinFreeCapacities first
		n.Flags = appendFlag(n.Flags, lapiconst.FlagEvicted)
		for _, rd := range e.sortedRDs() {
			rep := rd.resources[n.Name]
			if rep == nil || !rep.drbd() {
				continue // evict ignores resources without DRBD (CtrlNodeApiCallHandler.declareEvicted)
			}
			rep.flags = appendFlag(appendFlag(rep.flags, "INACTIVE"), lapiconst.FlagEvicted)
			// Replacements only while fewer active diskful replicas remain than
			// AutoEvictMinReplicaCount (the place count by default;
			// CtrlRscAutoRePlaceRscHelper).
			if rep.diskful() && e.activeDiskful(rd) < defaultPlaceCount {
				if target := e.placeReplacement(rd, rep, n.Name, lapi.NodeEvacuate{}); target != "" {
					answer = append(answer, rc(lapiconst.Created|crtRsc, "Resource '%s' on node '%s' created as a replacement of the evicted node '%s'.", rd.Name, target, n.Name))
				}
			}
		}
	}
	// Every evict that is not refused sends node-evicted, again for an evicted node
	// (declareEvicted, CtrlNodeApiCallHandler.java:1563).
	e.emitNode(evNodeEvicted, e.nodeView(n))
	writeRC(w, http.StatusOK, answer...)
}

// restoreNode clears EVICTED and EVACUATE from the node and its replicas
// (CtrlNodeApiCallHandler.restoreNode); anything else is refused with a bare error.
func (e *Emulator) restoreNode(w http.ResponseWriter, r *http.Request, n *node) {
	var in lapi.NodeRestore
	if !decode(w, r, &in, http.StatusInternalServerError) {
		return
	}
	if !hasFlag(n.Flags, lapiconst.FlagEvicted) && !hasFlag(n.Flags, lapiconst.FlagEvacuate) {
		writeRC(w, http.StatusOK, rc(lapiconst.MaskError, "Node '%s' is neither evicted nor evacuated.", n.Name))
		return
	}
	var answer []apiCallRc
	n.Flags = withoutFlag(withoutFlag(n.Flags, lapiconst.FlagEvicted), lapiconst.FlagEvacuate)
	n.EvictionTimestamp = nil
	for _, rd := range e.sortedRDs() {
		rep := rd.resources[n.Name]
		if rep == nil {
			continue
		}
		if in.DeleteResources != nil && *in.DeleteResources {
			if rep.drbd() && e.lastDiskful(rd, n.Name) { // a resource without DRBD is simply deleted (restoreNode)
				answer = append(answer, rc(lapiconst.WarnStltNotUpdated, "Not deleting resource %s since it is the last non-deleting diskful resource of this resource-definition", rd.Name))
				continue
			}
			delete(rd.resources, n.Name)
			continue
		}
		rep.flags = withoutFlag(withoutFlag(withoutFlag(rep.flags, lapiconst.FlagEvicted), "INACTIVE"), lapiconst.FlagEvacuate)
	}
	e.emitNode(evNodeRestored, e.nodeView(n)) // after the commit (CtrlNodeApiCallHandler.java:1422)
	answer = append(answer, rc(lapiconst.MaskSuccess|lapiconst.MaskNode, "Successfully restored node %s", n.Name))
	writeRC(w, http.StatusOK, answer...)
}

func (e *Emulator) lastDiskful(rd *resourceDefinition, nodeName string) bool {
	if !rd.resources[nodeName].diskful() {
		return false
	}
	for peer, p := range rd.resources {
		if peer != nodeName && p.diskful() && !hasFlag(p.flags, lapiconst.FlagDelete) {
			return false
		}
	}
	return true
}

func (e *Emulator) listNetIfs(w http.ResponseWriter, r *http.Request, n *node) {
	out := []lapi.NetInterface{}
	for _, nif := range n.NetInterfaces {
		out = append(out, netIfView(n, nif))
	}
	writeJSON(w, http.StatusOK, out)
}

func (e *Emulator) getNetIf(w http.ResponseWriter, r *http.Request, n *node) {
	i := findNetIf(n, r.PathValue("netif"))
	if i < 0 {
		notFound(w, lapiconst.FailNotFoundNetIf, "Netinterface '%s' not found.", r.PathValue("netif"))
		return
	}
	writeJSON(w, http.StatusOK, netIfView(n, n.NetInterfaces[i]))
}

// netIfView marks the active interface: the one CurStltConnName names.
func netIfView(n *node, nif lapi.NetInterface) lapi.NetInterface {
	nif.IsActive = strings.EqualFold(n.Props[curStltConnKey], nif.Name)
	return nif
}

// createNetIf follows CtrlNetIfApiCallHandler.createNetIf; is_active is honoured here
// and needs a satellite port and encryption type.
func (e *Emulator) createNetIf(w http.ResponseWriter, r *http.Request, n *node) {
	var in lapi.NetInterface
	if !decode(w, r, &in, http.StatusBadRequest) {
		return
	}
	if specialNodeType(n.Type) {
		writeRC(w, http.StatusCreated, rc(lapiconst.FailInvldNodeType|crtNetIf, "Only one network interface allowed for '%s' nodes", n.Type).withRefs("Node", n.Name))
		return
	}
	hasConn := in.SatellitePort != 0 && in.SatelliteEncryptionType != ""
	if bad := checkNetIf(n.Name, in, hasConn, crtNetIf); bad != nil {
		writeRC(w, http.StatusCreated, *bad)
		return
	}
	if findNetIf(n, in.Name) >= 0 {
		writeRC(w, http.StatusCreated, rc(lapiconst.FailExistsNetIf|crtNetIf, "NetInterface '%s' on node '%s' already exists.", in.Name, n.Name).withRefs("Node", n.Name))
		return
	}
	makeActive := in.IsActive || n.Props[curStltConnKey] == ""
	if in.IsActive && !hasConn {
		writeRC(w, http.StatusCreated, rc(lapiconst.FailInvldNetPort|lapiconst.FailInvldEncryptType|crtNetIf, "No satellite port / encryption type set for active satellite connection").withRefs("Node", n.Name))
		return
	}
	stored := lapi.NetInterface{Name: in.Name, Address: in.Address, Uuid: uuid.NewString()}
	if hasConn {
		stored.SatellitePort, stored.SatelliteEncryptionType = in.SatellitePort, strings.ToUpper(in.SatelliteEncryptionType)
	}
	n.NetInterfaces = append(n.NetInterfaces, stored)
	if makeActive && hasConn {
		e.switchConnection(n, stored.Name)
	}
	writeRC(w, http.StatusCreated, rc(lapiconst.Created|crtNetIf, "New netInterface '%s' on node '%s' registered.", in.Name, n.Name).
		withDetails("NetInterface '%s' on node '%s' UUID is: %s", in.Name, n.Name, stored.Uuid).withRefs("Node", n.Name, "UUID", stored.Uuid))
}

// modifyNetIf: port and encryption change only when both are given; is_active true
// switches the satellite connection; an address change of the active interface
// reconnects.
func (e *Emulator) modifyNetIf(w http.ResponseWriter, r *http.Request, n *node) {
	var in lapi.NetInterface
	if !decode(w, r, &in, http.StatusBadRequest) {
		return
	}
	name := r.PathValue("netif")
	i := findNetIf(n, name)
	if i < 0 {
		writeRC(w, http.StatusOK, rc(lapiconst.FailNotFoundNetIf|modNetIf, "Node '%s' has no network interface named '%s'.", n.Name, name).withRefs("Node", n.Name))
		return
	}
	cur := n.NetInterfaces[i]
	before := cur
	if in.SatellitePort != 0 && in.SatelliteEncryptionType != "" {
		if bad := checkNetIf(n.Name, lapi.NetInterface{Name: cur.Name, Address: cur.Address, SatellitePort: in.SatellitePort, SatelliteEncryptionType: in.SatelliteEncryptionType}, true, modNetIf); bad != nil {
			writeRC(w, http.StatusOK, *bad)
			return
		}
		cur.SatellitePort, cur.SatelliteEncryptionType = in.SatellitePort, strings.ToUpper(in.SatelliteEncryptionType)
	}
	if in.Address != nil {
		cur.Address = in.Address
	}
	if in.IsActive && (cur.SatellitePort == 0 || cur.SatelliteEncryptionType == "") {
		writeRC(w, http.StatusOK, rc(lapiconst.FailInvldNetPort|lapiconst.FailInvldEncryptType|modNetIf, "No satellite port / encryption type set for active satellite connection").withRefs("Node", n.Name))
		return
	}
	n.NetInterfaces[i] = cur
	isActive := strings.EqualFold(n.Props[curStltConnKey], cur.Name)
	changed := !before.Address.Equal(cur.Address) || before.SatellitePort != cur.SatellitePort
	if in.IsActive && !isActive || isActive && changed {
		e.switchConnection(n, cur.Name)
	}
	writeRC(w, http.StatusOK, rc(lapiconst.Modified|modNetIf, "NetInterface '%s' on node '%s' modified.", cur.Name, n.Name).
		withDetails("NetInterface '%s' on node '%s' UUID is: %s", cur.Name, n.Name, cur.Uuid).withRefs("Node", n.Name, "UUID", cur.Uuid))
}

// deleteNetIf: deleting the active interface is allowed; the first other interface
// (by name) with a port and encryption type takes over. With none left the node has
// no satellite connection (NO_STLT_CONN) and the answer is only a warning.
func (e *Emulator) deleteNetIf(w http.ResponseWriter, r *http.Request, n *node) {
	name := r.PathValue("netif")
	i := findNetIf(n, name)
	if i < 0 {
		writeNetIfNotFound(w, n.Name, name)
		return
	}
	gone := n.NetInterfaces[i]
	n.NetInterfaces = append(n.NetInterfaces[:i:i], n.NetInterfaces[i+1:]...)
	if strings.EqualFold(n.Props[curStltConnKey], gone.Name) {
		next := ""
		candidates := append([]lapi.NetInterface(nil), n.NetInterfaces...)
		sort.Slice(candidates, func(a, b int) bool { return strings.ToUpper(candidates[a].Name) < strings.ToUpper(candidates[b].Name) })
		for _, c := range candidates {
			if c.SatellitePort != 0 && c.SatelliteEncryptionType != "" {
				next = c.Name
				break
			}
		}
		e.switchConnection(n, next)
		if next == "" {
			writeRC(w, http.StatusOK, rc(lapiconst.WarnNoStltConnDefined|delNetIf, "NetInterface '%s' on node '%s' was the last connection to the satellite! \nTo fix this, create at least one netInterface with a valid PORT and COMMUNICATION-TYPE.", gone.Name, n.Name).withRefs("Node", n.Name))
			return
		}
	}
	writeRC(w, http.StatusOK, rc(lapiconst.Deleted|delNetIf, "NetInterface '%s' on node '%s' deleted.", gone.Name, n.Name).
		withDetails("NetInterface '%s' on node '%s' UUID was: %s", gone.Name, n.Name, gone.Uuid).withRefs("Node", n.Name))
}

// switchConnection closes the satellite connection and opens it on nif ("" leaves the
// node without one). The satellite reconnects, which takes the connect delay again.
func (e *Emulator) switchConnection(n *node, nif string) {
	if nif == "" {
		delete(n.Props, curStltConnKey)
	} else {
		n.Props[curStltConnKey] = nif
	}
	n.onlineSince = e.now()
	n.switches++
}

func findNetIf(n *node, name string) int {
	for i, nif := range n.NetInterfaces {
		if strings.EqualFold(nif.Name, name) {
			return i
		}
	}
	return -1
}

func queryList(r *http.Request, key string) map[string]bool {
	out := map[string]bool{}
	for _, v := range r.URL.Query()[key] {
		for _, s := range strings.Split(v, ",") {
			if s != "" {
				out[strings.ToLower(s)] = true
			}
		}
	}
	return out
}

// activeDiskful counts the replicas of rd that store data and serve: diskful, not
// inactive, evicted or being deleted.
func (e *Emulator) activeDiskful(rd *resourceDefinition) int {
	n := 0
	for _, rep := range rd.resources {
		if rep.diskful() && !hasFlag(rep.flags, "INACTIVE") && !hasFlag(rep.flags, lapiconst.FlagDelete) {
			n++
		}
	}
	return n
}
