package emulator

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
)

// The controller's GET /metrics (api/rest/Metrics.java, prometheus/PrometheusBuilder.java
// and prometheus/TextFormat.java at v1.33.3), written as the server writes it: the same
// families in the same order, HELP texts, types, labels in the order Java's HashMap
// yields them and numbers as Java's Double.toString prints them. Not modelled: the
// JVM's default exports and the two request-duration histograms the server appends
// after the scrape counters.

// connectionStatusValue is the number of ApiConsts.ConnectionStatus that
// linstor_node_state reports (linstor-common consts.json).
var connectionStatusValue = map[string]int{
	"OFFLINE": 0, "CONNECTED": 1, "ONLINE": 2, "VERSION_MISMATCH": 3, "FULL_SYNC_FAILED": 4, "AUTHENTICATION_ERROR": 5,
	"UNKNOWN": 6, "HOSTNAME_MISMATCH": 7, "OTHER_CONTROLLER": 8, "AUTHENTICATED": 9, "NO_STLT_CONN": 10,
	"MISSING_EXT_TOOLS": 11, "DUPLICATE_UNAME": 12,
}

// connectionStatusOrder is ConnectionStatus in declaration order, for the HELP text.
var connectionStatusOrder = []string{"OFFLINE", "CONNECTED", "ONLINE", "VERSION_MISMATCH", "FULL_SYNC_FAILED",
	"AUTHENTICATION_ERROR", "UNKNOWN", "HOSTNAME_MISMATCH", "OTHER_CONTROLLER", "AUTHENTICATED", "NO_STLT_CONN",
	"MISSING_EXT_TOOLS", "DUPLICATE_UNAME"}

// volumeStates is PrometheusBuilder.VolumeStates in declaration order: a disk state's
// number in linstor_volume_state, matched ignoring case; any other state (Outdated,
// Negotiating, none) is DUnknown.
var volumeStates = []struct {
	name  string
	value int
}{
	{"UpToDate", 1}, {"Created", 2}, {"Attached", 3}, {"Diskless", 4}, {"Inconsistent", 5}, {"Failed", 6},
	{"To: Creating", 7}, {"To: Attachable", 8}, {"To: Attaching", 9}, {"Diskless(Detached)", 90}, {"DUnknown", -1},
}

// reconnectSleep is how often the controller's ReconnectorTask tries an OFFLINE
// satellite again (RECONNECT_SLEEP); every try is a new peer (Node.setPeer), which
// linstor_node_reconnect_attempt_count counts.
const reconnectSleep = 10 * time.Second

// metrics serves the page. The query parameters resource, storage_pools and
// error_reports (default true; JAX-RS reads anything but "true" as false) leave out the
// resource and volume families, the pool families and the error report count.
func (e *Emulator) metrics(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	withResources, withPools, withErrorReports := queryFlag(r, "resource"), queryFlag(r, "storage_pools"), queryFlag(r, "error_reports")
	e.mu.Lock()
	defer e.mu.Unlock()
	e.advance()
	// The server counts a scrape when it starts and again when it writes the counter, so
	// the page shows 1, 3, 5, ... (Metrics.SCRAPE_REQUESTS).
	e.scrapeRequests++
	scrapes := e.scrapeRequests
	e.scrapeRequests++

	var tf textFormat
	tf.gauge("linstor_info", "")
	tf.sample(javaLabels("version", e.version, "buildtime", controllerBuildTime, "gitid", controllerGitHash), 1)

	nodes := e.sortedNodes()
	tf.gauge("linstor_node_state", connectionStatusHelp())
	for _, n := range nodes {
		tf.sample(e.nodeLabels(n), float64(connectionStatusValue[e.connectionStatus(n)]))
	}
	tf.gauge("linstor_node_reconnect_attempt_count", "Number of node reconnection attempts")
	for _, n := range nodes {
		tf.sample(e.nodeLabels(n), float64(e.reconnectAttempts(n)))
	}

	rds := e.sortedRDs()
	tf.gauge("linstor_resource_definition_count", "")
	tf.sample("", float64(len(rds)))
	views := map[*resourceDefinition][]lapi.ResourceWithVolumes{}
	for _, rd := range rds {
		views[rd] = e.resourceViews(rd)
	}
	if withResources {
		tf.gauge("linstor_resource_definition_resource_count", "")
		for _, rd := range rds {
			tf.sample(javaLabels("name", rd.Name, "resource_group", rd.ResourceGroupName), float64(len(views[rd])))
		}
	}
	tf.gauge("linstor_volume_definition_size_bytes", "")
	for _, rd := range rds {
		for _, vd := range rd.volumes {
			tf.sample(javaLabels("name", rd.Name, "volume_number", strconv.Itoa(int(*vd.VolumeNumber)), "resource_group", rd.ResourceGroupName),
				float64(vd.SizeKib)*1024)
		}
	}

	if withResources {
		tf.gauge("linstor_resource_state", `-1="unknown state", 0="secondary", 1="primary"`)
		for _, rd := range rds {
			for _, rv := range views[rd] {
				state := -1
				if rv.State != nil && rv.State.InUse != nil {
					state = 0
					if *rv.State.InUse {
						state = 1
					}
				}
				tf.sample(javaLabels("name", rv.Name, "node", rv.NodeName), float64(state))
			}
		}
		tf.gauge("linstor_volume_state", volumeStateHelp())
		for _, rd := range rds {
			for _, rv := range views[rd] {
				for _, v := range rv.Volumes {
					tf.sample(volumeLabels(rv, v), float64(volumeStateValue(rv, v)))
				}
			}
		}
		tf.gauge("linstor_volume_allocated_size_bytes", "")
		for _, rd := range rds {
			for _, rv := range views[rd] {
				for _, v := range rv.Volumes {
					tf.sample(volumeLabels(rv, v), float64(v.AllocatedSizeKib)*1024)
				}
			}
		}
	}

	if withPools {
		// From the cache, as rest/Metrics lists them (listStorPoolsCached): no pool
		// carries an error report there, so linstor_storage_pool_error_count stays 0
		// even for a pool BreakStoragePool broke (poolViewFrom).
		var pools []lapi.StoragePool
		for _, n := range nodes {
			for _, p := range sortedPools(n) {
				pools = append(pools, e.poolViewFrom(p, true))
			}
		}
		tf.gauge("linstor_storage_pool_capacity_free_bytes", "")
		for _, p := range pools {
			tf.sample(poolLabels(p), e.poolBytes(p, p.FreeCapacity))
		}
		tf.gauge("linstor_storage_pool_capacity_total_bytes", "")
		for _, p := range pools {
			tf.sample(poolLabels(p), e.poolBytes(p, p.TotalCapacity))
		}
		tf.gauge("linstor_storage_pool_error_count", "")
		for _, p := range pools {
			errors := 0
			for _, rc := range p.Reports {
				if uint64(rc.RetCode)&lapiconst.MaskError == lapiconst.MaskError {
					errors++
				}
			}
			tf.sample(poolLabels(p), float64(errors))
		}
	}

	// The emulator writes no error reports: the total is 0 and there is no count per
	// node and module.
	if withErrorReports {
		tf.gauge("linstor_error_reports_count", "")
		tf.sample("", 0)
	}

	tf.counter("linstor_scrape_requests_count")
	tf.sample("", float64(scrapes))
	tf.gauge("linstor_scrape_duration_seconds", "")
	tf.sample("", float64(time.Since(start).Milliseconds())/1000)

	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write([]byte(tf.String()))
}

// controllerBuildTime and controllerGitHash are what GET /v1/controller/version reports.
const (
	controllerBuildTime = "2026-01-01T00:00:00+00:00"
	controllerGitHash   = "emulator"
)

func queryFlag(r *http.Request, name string) bool {
	values, ok := r.URL.Query()[name]
	if !ok || len(values) == 0 {
		return true
	}
	return strings.EqualFold(values[0], "true")
}

// nodeLabels are PrometheusBuilder.nodeExport's: the active satellite connection's
// address, encryption and port, when the node has one, and its name and type.
func (e *Emulator) nodeLabels(n *node) string {
	for _, nif := range n.NetInterfaces {
		if strings.EqualFold(nif.Name, n.Props[curStltConnKey]) && nif.SatellitePort != 0 {
			return javaLabels("address", nif.Address.String(), "encryption", nif.SatelliteEncryptionType,
				"port", strconv.Itoa(int(nif.SatellitePort)), "node", n.Name, "nodetype", n.Type)
		}
	}
	return javaLabels("node", n.Name, "nodetype", n.Type)
}

// reconnectAttempts counts the peers the controller made for the node: the first
// connect, the tries of earlier outages and those of the current one. Nodes without a
// satellite connection get none.
func (e *Emulator) reconnectAttempts(n *node) int64 {
	if !holdsPools(n.Type) || n.Props[curStltConnKey] == "" {
		return 0
	}
	attempts := 1 + n.reconnects
	if !n.online && !n.offlineSince.IsZero() {
		attempts += int64(e.now().Sub(n.offlineSince) / reconnectSleep)
	}
	return attempts
}

// countReconnects adds the tries of an outage that ends now: one every reconnectSleep
// while the satellite was away and the one that found it back.
func (e *Emulator) countReconnects(n *node) {
	if !n.offlineSince.IsZero() {
		n.reconnects += int64(e.now().Sub(n.offlineSince)/reconnectSleep) + 1
	}
}

func volumeLabels(rv lapi.ResourceWithVolumes, v lapi.Volume) string {
	pool := v.StoragePoolName
	if pool == "" {
		pool = "_unknown"
	}
	return javaLabels("resource", rv.Name, "node", rv.NodeName, "volume", strconv.Itoa(int(v.VolumeNumber)),
		"device_path", v.DevicePath, "storage_pool", pool)
}

// volumeStateValue: a Diskless volume of a resource not flagged DRBD_DISKLESS (its disk
// failed or was detached) is Diskless(Detached).
func volumeStateValue(rv lapi.ResourceWithVolumes, v lapi.Volume) int {
	state := v.State.DiskState
	if state == "Diskless" && !hasFlag(rv.Flags, lapiconst.FlagDrbdDiskless) {
		state = "Diskless(Detached)"
	}
	for _, s := range volumeStates {
		if strings.EqualFold(s.name, state) {
			return s.value
		}
	}
	return -1
}

// poolLabels are PrometheusBuilder.storagePoolExport's; the backing pool is the
// StorDriver/StorPoolName property for the providers that have one
// (StorPoolApi.getBackingPoolName).
func poolLabels(p lapi.StoragePool) string {
	backing := ""
	switch p.ProviderKind {
	case lapi.LVM, lapi.LVM_THIN, lapi.ZFS, lapi.ZFS_THIN, lapi.FILE, lapi.FILE_THIN, "EBS_INIT", "EBS_TARGET", "STORAGE_SPACES", "STORAGE_SPACES_THIN":
		backing = p.Props["StorDriver/StorPoolName"]
	}
	return javaLabels("storage_pool", p.StoragePoolName, "node", p.NodeName, "driver", string(p.ProviderKind), "backing_pool", backing)
}

// poolBytes: a capacity the controller does not know (satellite not ONLINE; the view
// leaves it out) is NaN; DISKLESS pools are 0 (safeStorPoolValue).
func (e *Emulator) poolBytes(p lapi.StoragePool, kib int64) float64 {
	switch {
	case p.ProviderKind == lapi.DISKLESS:
		return 0
	case !e.online(p.NodeName):
		return math.NaN()
	}
	return float64(kib) * 1024
}

func connectionStatusHelp() string {
	var b strings.Builder
	for i, s := range connectionStatusOrder {
		fmt.Fprintf(&b, "%d=%q, ", i, s)
	}
	return b.String()
}

func volumeStateHelp() string {
	var b strings.Builder
	for _, s := range volumeStates {
		fmt.Fprintf(&b, "%d=%q, ", s.value, s.name)
	}
	return b.String()
}

// textFormat is the server's TextFormat: "# HELP" only for a non-empty help, no escaping.
type textFormat struct {
	b       strings.Builder
	current string
}

func (t *textFormat) gauge(name, help string) { t.section("gauge", name, help) }
func (t *textFormat) counter(name string)     { t.section("counter", name, "") }

func (t *textFormat) section(typ, name, help string) {
	t.current = name
	if help != "" {
		fmt.Fprintf(&t.b, "# HELP %s %s\n", name, help)
	}
	fmt.Fprintf(&t.b, "# TYPE %s %s\n", name, typ)
}

// sample writes one line; labels is javaLabels' output ("" for none).
func (t *textFormat) sample(labels string, value float64) {
	t.b.WriteString(t.current)
	if labels != "" {
		t.b.WriteString("{" + labels + "}")
	}
	t.b.WriteString(" " + javaDouble(value) + "\n")
}

func (t *textFormat) String() string { return t.b.String() }

// javaLabels formats key-value pairs, given in the order the server puts them into a
// new HashMap, in the order that HashMap iterates them: by bucket of the key's
// String.hashCode in a table of 16, ties in insertion order (no label map holds more
// than 12 entries, so the table never grows).
func javaLabels(kv ...string) string {
	type pair struct {
		key, value string
		bucket     uint32
	}
	var pairs []pair
	for i := 0; i+1 < len(kv); i += 2 {
		var h int32
		for _, c := range kv[i] {
			h = 31*h + int32(c)
		}
		u := uint32(h)
		pairs = append(pairs, pair{key: kv[i], value: kv[i+1], bucket: (u ^ u>>16) & 15})
	}
	slices.SortStableFunc(pairs, func(a, b pair) int { return int(a.bucket) - int(b.bucket) })
	parts := make([]string, len(pairs))
	for i, p := range pairs {
		parts[i] = p.key + `="` + p.value + `"`
	}
	return strings.Join(parts, ",")
}

// javaDouble prints v as Collector.doubleToGoString does: +Inf, -Inf, NaN, else Java's
// Double.toString (plain decimal with at least one fraction digit between 10^-3 and
// 10^7, else d.dddE<n>).
func javaDouble(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case v == 0:
		if math.Signbit(v) {
			return "-0.0"
		}
		return "0.0"
	}
	if abs := math.Abs(v); abs >= 1e-3 && abs < 1e7 {
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(v, 'e', -1, 64)
	mantissa, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mantissa, ".") {
		mantissa += ".0"
	}
	n, _ := strconv.Atoi(exp)
	return mantissa + "E" + strconv.Itoa(n)
}
