package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// results is what results-N<nodes>.json holds.
type results struct {
	Nodes                        int       `json:"nodes"`
	StartedAt                    time.Time `json:"startedAt"`
	SteadyWindow                 string    `json:"steadyWindow"`
	Operator                     string    `json:"operator"`
	OperatorBuiltFromWorkingTree bool      `json:"operatorBuiltFromWorkingTree"`
	OperatorRevision             string    `json:"operatorRevision,omitempty"`
	OperatorUserAgentPrefix      string    `json:"operatorUserAgentPrefix"`
	OperatorFieldManagers        []string  `json:"operatorFieldManagers"`
	EmulatorInterval             string    `json:"emulatorInterval"`
	EmulatorDatabase             bool      `json:"emulatorDatabase"`
	Notes                        []string  `json:"notes"`
	// MemoryLimitBytes is the manager container's memory limit in the bundle; the
	// operator ran in a memory cgroup of that size unless MemoryLimitNotEnforced says why.
	MemoryLimitBytes       int64  `json:"memoryLimitBytes,omitempty"`
	MemoryLimitNotEnforced string `json:"memoryLimitNotEnforced,omitempty"`
	// OOMKills: the kernel killed the operator for memory (its cgroup's count).
	OOMKills int `json:"oomKills,omitempty"`

	// Volumes placed after convergence (VOLUMES=) and their replicas.
	Volumes  int `json:"volumes,omitempty"`
	Replicas int `json:"replicas,omitempty"`
	// PlacementSeconds: how long placing them took (one emulator batch, one commit).
	PlacementSeconds float64 `json:"placementSeconds,omitempty"`
	// Fault: the degrading fault played after the steady window (with volumes only).
	Fault                *faultResult `json:"fault,omitempty"`
	ExpectedPools        int          `json:"expectedPools"`
	SamplesAppliedSecond int          `json:"samplesAppliedSecond"`
	Converged            bool         `json:"converged"`
	Interrupted          bool         `json:"interrupted"`
	// Seconds after the samples were applied (1 s resolution); null: never reached.
	SecondsToAllOnline     *int `json:"secondsToAllOnline"`
	SecondsToAllPools      *int `json:"secondsToAllPools"`
	SecondsToAvailable     *int `json:"secondsToAvailable"`
	SecondsToConverged     *int `json:"secondsToConverged"`
	SteadyRegressedSeconds int  `json:"steadyRegressedSeconds"`

	Phases []phaseResult `json:"phases"`

	Audit struct {
		Lines, Unparsable, OperatorEvents, Rotations int
		UserAgents                                   map[string]int `json:"userAgents"`
		ReadError                                    string         `json:"readError,omitempty"`
	} `json:"audit"`
	WatchGaps   int      `json:"watchGaps"`
	WatchErrors []string `json:"watchErrors,omitempty"`

	Timeline []point `json:"timeline"`
}

// phaseResult sums the counters over a phase's seconds [FromSecond, ToSecond) of the
// clock that starts with the operator. The converge phase starts with the operator
// (its start-up, then the samples) and ends when everything is converged.
type phaseResult struct {
	Name       string `json:"name"`
	FromSecond int    `json:"fromSecond"`
	ToSecond   int    `json:"toSecond"`
	Seconds    int    `json:"seconds"`

	// APIRequests by "verb resource[.group][/subresource]", failed ones included.
	APIRequests      map[string]int `json:"apiRequests"`
	APIRequestsTotal int            `json:"apiRequestsTotal"`
	APIWrites        int            `json:"apiWrites"`
	APIWritesFailed  int            `json:"apiWritesFailed"`
	// Per watched resource: the operator's write requests and the changes they made.
	Resources []resourceWrites `json:"resources"`
	// EffectiveWrites: the operator's writes that changed an object (watched kinds).
	EffectiveWrites int `json:"effectiveWrites"`
	// WatchedAPIWrites: the operator's successful write requests on watched kinds;
	// minus EffectiveWrites, the writes that changed nothing.
	WatchedAPIWrites int `json:"watchedAPIWrites"`
	NoopWrites       int `json:"noopWrites"`
	// Floor: creates + finalizers added + status changes by the operator.
	Floor          floor    `json:"floor"`
	WritesPerFloor *float64 `json:"writesPerFloor"`
	// Changes by other writers (kube-controller-manager, the bench) and of unknown writer.
	OtherChanges map[string]int `json:"otherChanges"`
	Unattributed int            `json:"unattributedChanges"`

	// OtherClients: every other client's requests, by "user-agent-product verb resource".
	OtherClients map[string]int `json:"otherClients"`

	LinstorRequests          map[string]int `json:"linstorRequests"`
	LinstorRequestsTotal     int            `json:"linstorRequestsTotal"`
	LinstorRequestsPerMinute float64        `json:"linstorRequestsPerMinute"`

	// Operator: the process at the end of the phase (VmHWM is the peak so far).
	Operator   procSample `json:"operator"`
	CPUSeconds float64    `json:"cpuSecondsInPhase"`
}

type floor struct {
	Creates       int `json:"creates"`
	Finalizers    int `json:"finalizersAdded"`
	StatusChanges int `json:"statusChanges"`
	Total         int `json:"total"`
}

type resourceWrites struct {
	Resource      string `json:"resource"`
	APIWrites     int    `json:"apiWrites"` // successful write requests, subresources included
	Failed        int    `json:"failedWrites"`
	Effective     int    `json:"effective"`
	Creates       int    `json:"creates"`
	Finalizers    int    `json:"finalizersAdded"`
	StatusChanges int    `json:"statusChanges"`
	OtherChanges  int    `json:"otherChanges"`
}

func (b *bench) isOperator(manager string) bool {
	for _, m := range b.o.managers {
		if m == manager {
			return true
		}
	}
	return false
}

// finish sums every phase's counters and fills the timeline.
func (b *bench) finish() {
	r := &b.res
	r.Nodes = b.o.nodes
	r.StartedAt = b.ck.t0
	r.SteadyWindow = b.o.steady.String()
	r.OperatorUserAgentPrefix = b.o.uaPrefix
	r.OperatorFieldManagers = b.o.managers
	r.EmulatorInterval, r.EmulatorDatabase = b.o.coupleEach.String(), b.o.database
	// The notes of the run (volumes, fault) follow the general ones.
	r.Notes = append([]string{
		"No admission or conversion webhooks: the operator runs with --webhooks=false and every object is written as v1.",
		"Operator API requests are read from the kube-apiserver's audit log (level Metadata, stage ResponseComplete) by user agent prefix " + fmt.Sprintf("%q", b.o.uaPrefix) + "; watches are counted when they end.",
		"Effective writes are watch events of the watched kinds whose managedFields name an operator field manager as the writer; events, leases and the LINSTOR database (internal.linstor.linbit.com, written by the emulator) are not watched.",
		"Floor = objects created + finalizers added after creation + writes that changed .status, all by the operator.",
	}, r.Notes...)
	st := b.audit.stats()
	r.Audit.Lines, r.Audit.Unparsable, r.Audit.OperatorEvents, r.Audit.Rotations, r.Audit.UserAgents = st.Lines, st.Unparsable, st.OperatorEvents, st.Rotations, st.UserAgents
	if st.Err != nil {
		r.Audit.ReadError = st.Err.Error()
	}
	r.WatchGaps, r.WatchErrors = b.ww.problems()

	watched := map[string]bool{}
	for _, w := range watchedResources {
		watched[w.name()] = true
	}
	prevCPU := 0.0
	for i := range r.Phases {
		p := &r.Phases[i]
		p.CPUSeconds = p.Operator.CPUSeconds - prevCPU
		prevCPU = p.Operator.CPUSeconds
		reqs := b.audit.requests.sum(p.FromSecond, p.ToSecond, nil)
		p.APIRequests = map[string]int{}
		byRes := map[string]*resourceWrites{}
		res := func(name string) *resourceWrites {
			if byRes[name] == nil {
				byRes[name] = &resourceWrites{Resource: name}
			}
			return byRes[name]
		}
		for key, n := range reqs {
			k := parseRequestKey(key)
			p.APIRequests[k.Verb+" "+k.resourceName()] += n
			p.APIRequestsTotal += n
			if !k.isWrite() {
				continue
			}
			p.APIWrites += n
			name := requestKey{Group: k.Group, Resource: k.Resource}.resourceName()
			if k.Failed {
				p.APIWritesFailed += n
				if watched[name] {
					res(name).Failed += n
				}
				continue
			}
			if watched[name] {
				res(name).APIWrites += n
				p.WatchedAPIWrites += n
			}
		}
		p.OtherChanges = map[string]int{}
		for key, n := range b.ww.changes.sum(p.FromSecond, p.ToSecond, nil) {
			ck := parseChangeKey(key)
			if !b.isOperator(ck.Writer) {
				if ck.Writer == unknownWriter && ck.Category != catDelete {
					p.Unattributed += n
				}
				if ck.Category != catFinalizerAdded {
					p.OtherChanges[ck.Writer+" "+ck.Category+" "+ck.Resource] += n
				}
				continue
			}
			rw := res(ck.Resource)
			switch ck.Category {
			case catFinalizerAdded:
				rw.Finalizers += n
				p.Floor.Finalizers += n
				continue // pairs, not writes
			case catCreate:
				rw.Creates += n
				p.Floor.Creates += n
			case catStatus:
				rw.StatusChanges += n
				p.Floor.StatusChanges += n
			default:
				rw.OtherChanges += n
			}
			rw.Effective += n
			p.EffectiveWrites += n
		}
		p.Floor.Total = p.Floor.Creates + p.Floor.Finalizers + p.Floor.StatusChanges
		if p.Floor.Total > 0 {
			v := float64(p.APIWrites) / float64(p.Floor.Total)
			p.WritesPerFloor = &v
		}
		p.NoopWrites = p.WatchedAPIWrites - p.EffectiveWrites
		for _, name := range sortedKeys(func() map[string]int {
			m := map[string]int{}
			for k := range byRes {
				m[k] = 0
			}
			return m
		}()) {
			p.Resources = append(p.Resources, *byRes[name])
		}
		p.OtherClients = b.audit.others.sum(p.FromSecond, p.ToSecond, nil)
		p.LinstorRequests = b.linstor.sum(p.FromSecond, p.ToSecond, nil)
		p.LinstorRequestsTotal = total(p.LinstorRequests)
		if p.Seconds > 0 {
			p.LinstorRequestsPerMinute = float64(p.LinstorRequestsTotal) * 60 / float64(p.Seconds)
		}
	}

	n := 0
	if len(r.Phases) > 0 {
		n = r.Phases[len(r.Phases)-1].ToSecond
	}
	isWrite := func(key string) bool { return parseRequestKey(key).isWrite() }
	reqs := b.audit.requests.perSecond(n, nil)
	writes := b.audit.requests.perSecond(n, isWrite)
	eff := b.ww.changes.perSecond(n, func(key string) bool {
		ck := parseChangeKey(key)
		return b.isOperator(ck.Writer) && ck.Category != catFinalizerAdded
	})
	lin := b.linstor.perSecond(n, nil)
	// One point per second s of [0, n): the requests within it and the state sampled at
	// its end (tick s+1); before the first sample (the samples are not applied yet) and
	// at a missed tick, the last state known.
	sampled := map[int]point{}
	for _, p := range b.points {
		sampled[p.Second-1] = p
	}
	last := point{Available: "Missing"}
	r.Timeline = make([]point, 0, n)
	for s := 0; s < n; s++ {
		if p, ok := sampled[s]; ok {
			last = p
		}
		p := last
		p.Second = s
		p.APIRequests, p.APIWrites, p.EffectiveWrites, p.LinstorRequests = reqs[s], writes[s], eff[s], lin[s]
		r.Timeline = append(r.Timeline, p)
	}
}

// report writes the table (stdout and results-N.md), the JSON and the SVG.
func (b *bench) report() error {
	b.finish()
	base := filepath.Join(b.o.out, fmt.Sprintf("results-N%d", b.o.nodes))
	md := b.markdown()
	fmt.Println()
	fmt.Print(md)
	if err := os.WriteFile(base+".md", []byte(md), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(b.res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(base+".json", append(js, '\n'), 0o644); err != nil {
		return err
	}
	svgPath := filepath.Join(b.o.out, fmt.Sprintf("convergence-N%d.svg", b.o.nodes))
	if err := os.WriteFile(svgPath, []byte(convergenceSVG(&b.res)), 0o644); err != nil {
		return err
	}
	fmt.Printf("\nresults: %s.md, %s.json, %s; operator log: %s\n", rel(b.o.root, base), rel(b.o.root, base), rel(b.o.root, svgPath), rel(b.o.root, b.o.opLogPath))
	return nil
}

// redrawResults draws the table and the picture of a results file again.
func redrawResults(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var r results
	if err := json.Unmarshal(raw, &r); err != nil {
		return err
	}
	fmt.Print(markdown(&r))
	svg := filepath.Join(filepath.Dir(path), fmt.Sprintf("convergence-N%d.svg", r.Nodes))
	return os.WriteFile(svg, []byte(convergenceSVG(&r)), 0o644)
}

func (b *bench) markdown() string { return markdown(&b.res) }

func markdown(r *results) string {
	var sb strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&sb, format, a...) }
	w("# Scale benchmark: %d nodes\n\n", r.Nodes)
	rev := ""
	if r.OperatorRevision != "" {
		rev = " (" + r.OperatorRevision + ")"
	}
	w("Operator `%s`%s, user agent `%s*`, field managers %s. Started %s.\n", r.Operator, rev, r.OperatorUserAgentPrefix,
		"`"+strings.Join(r.OperatorFieldManagers, "`, `")+"`", r.StartedAt.Format(time.RFC3339))
	w("No admission or conversion webhooks (`--webhooks=false`). LINSTOR emulator following the pods every %s, database in the cluster: %t.", r.EmulatorInterval, r.EmulatorDatabase)
	switch {
	case r.MemoryLimitBytes > 0 && r.MemoryLimitNotEnforced == "":
		w(" Memory: the operator ran in a memory cgroup limited to %s, the bundle's limit for its container (it sets its Go memory limit from it, as in its pod); OOM kills: %d.", mib(r.MemoryLimitBytes), r.OOMKills)
	case r.MemoryLimitBytes > 0:
		w(" Memory: NOT limited (the bundle's limit is %s, but %s); the operator had no Go memory limit.", mib(r.MemoryLimitBytes), r.MemoryLimitNotEnforced)
	}
	if r.Interrupted {
		w(" **Interrupted**: partial results.")
	}
	if !r.Converged {
		w(" **Not converged.**")
	}
	w("\n\n")

	w("| Convergence (after the samples were applied) | time |\n|---|---|\n")
	w("| all %d satellites ONLINE | %s |\n", r.Nodes, secs(r.SecondsToAllOnline))
	w("| all %d storage pools with capacity | %s |\n", r.ExpectedPools, secs(r.SecondsToAllPools))
	w("| LinstorCluster Available | %s |\n", secs(r.SecondsToAvailable))
	w("| all three | %s |\n\n", secs(r.SecondsToConverged))
	if r.Volumes > 0 {
		w("%d volumes, %d replicas placed in %.1f s.", r.Volumes, r.Replicas, r.PlacementSeconds)
		if f := r.Fault; f != nil {
			w(" Node %s taken away after the steady window: OFFLINE in LINSTOR after %s, **degraded shown after %s**, recovered shown after %s.",
				f.Node, fsecs(f.OfflineAfter), fsecs(f.DegradedShownAfter), fsecs(f.RecoveredShownAfter))
		}
		w("\n\n")
	}

	w("| | %s |\n|---|%s\n", strings.Join(phaseNames(r.Phases), " | "), strings.Repeat("---|", len(r.Phases)))
	row := func(label string, f func(p *phaseResult) string) {
		cells := make([]string, len(r.Phases))
		for i := range r.Phases {
			cells[i] = f(&r.Phases[i])
		}
		w("| %s | %s |\n", label, strings.Join(cells, " | "))
	}
	row("duration", func(p *phaseResult) string { return fmt.Sprintf("%d s", p.Seconds) })
	row("operator API requests", func(p *phaseResult) string {
		return fmt.Sprintf("%d (%s/s)", p.APIRequestsTotal, rate(p.APIRequestsTotal, p.Seconds))
	})
	row("operator API writes", func(p *phaseResult) string {
		return fmt.Sprintf("%d (%s/s, %d failed)", p.APIWrites, rate(p.APIWrites, p.Seconds), p.APIWritesFailed)
	})
	row("writes that changed an object", func(p *phaseResult) string { return fmt.Sprint(p.EffectiveWrites) })
	row("writes that changed nothing (watched kinds)", func(p *phaseResult) string { return fmt.Sprint(p.NoopWrites) })
	row("floor: creates + finalizers + status changes", func(p *phaseResult) string {
		return fmt.Sprintf("%d = %d + %d + %d", p.Floor.Total, p.Floor.Creates, p.Floor.Finalizers, p.Floor.StatusChanges)
	})
	row("writes / floor", func(p *phaseResult) string {
		switch {
		case p.WritesPerFloor != nil:
			return fmt.Sprintf("%.1f", *p.WritesPerFloor)
		case p.APIWrites > 0:
			return "∞ (floor 0)"
		}
		return "- (no writes)"
	})
	row("LINSTOR requests", func(p *phaseResult) string {
		return fmt.Sprintf("%d (%.0f/min)", p.LinstorRequestsTotal, p.LinstorRequestsPerMinute)
	})
	row("operator peak RSS (VmHWM at phase end)", func(p *phaseResult) string { return mib(p.Operator.PeakRSSBytes) })
	row("operator CPU seconds in phase", func(p *phaseResult) string {
		return fmt.Sprintf("%.1f (%.0f%% of a core)", p.CPUSeconds, 100*p.CPUSeconds/float64(max(p.Seconds, 1)))
	})
	row("changes by other writers / of unknown writer", func(p *phaseResult) string {
		return fmt.Sprintf("%d / %d", total(p.OtherChanges)-p.Unattributed, p.Unattributed)
	})
	w("\n")

	countsTable(w, r.Phases, "Operator API requests by verb and resource", "verb resource", "%s", func(p *phaseResult) map[string]int { return p.APIRequests })
	for _, p := range r.Phases {
		if len(p.Resources) == 0 {
			continue
		}
		w("Writes on watched kinds, %s (%d s): write requests (ok/failed) against the changes they made:\n\n", p.Name, p.Seconds)
		w("| resource | write requests | failed | changed something | creates | finalizers added | status changes | other changes | changed nothing |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, rw := range p.Resources {
			w("| %s | %d | %d | %d | %d | %d | %d | %d | %d |\n", rw.Resource, rw.APIWrites, rw.Failed, rw.Effective, rw.Creates, rw.Finalizers, rw.StatusChanges, rw.OtherChanges, rw.APIWrites-rw.Effective)
		}
		w("\n")
	}

	countsTable(w, r.Phases, "LINSTOR requests by route", "route", "`%s`", func(p *phaseResult) map[string]int { return p.LinstorRequests })
	w("Other clients' requests to the apiserver (what else loads the shared machine):")
	for _, p := range r.Phases {
		byProduct := map[string]int{}
		for k, v := range p.OtherClients {
			product, _, _ := strings.Cut(k, " ")
			byProduct[product] += v
		}
		w(" %s: %s.", p.Name, userAgents(byProduct))
	}
	w("\n\n")

	var warn []string
	if r.WatchGaps > 0 {
		warn = append(warn, fmt.Sprintf("%d watch restarts lost history: the change counts are a lower bound", r.WatchGaps))
	}
	for _, p := range r.Phases {
		for _, rw := range p.Resources {
			if rw.Effective > rw.APIWrites {
				warn = append(warn, fmt.Sprintf("%s: %d changes of %s attributed to the operator but only %d successful write requests: the attribution is wrong", p.Name, rw.Effective, rw.Resource, rw.APIWrites))
			}
		}
		if p.Unattributed > 0 {
			var what []string
			for _, k := range sortedKeys(p.OtherChanges) {
				if rest, ok := strings.CutPrefix(k, unknownWriter+" "); ok {
					what = append(what, fmt.Sprintf("%s %d", rest, p.OtherChanges[k]))
				}
			}
			warn = append(warn, fmt.Sprintf("%s: %d changes could not be attributed to a writer (%s; a create without managedFields, such as a namespace's default ServiceAccount, is not the operator's)",
				p.Name, p.Unattributed, strings.Join(what, ", ")))
		}
	}
	if r.Audit.Unparsable > 0 || r.Audit.ReadError != "" {
		warn = append(warn, fmt.Sprintf("audit log: %d unparsable lines, read error %q", r.Audit.Unparsable, r.Audit.ReadError))
	}
	if r.SteadyRegressedSeconds > 0 {
		warn = append(warn, fmt.Sprintf("the converged state did not hold during %d s of the steady window", r.SteadyRegressedSeconds))
	}
	for _, e := range r.WatchErrors {
		warn = append(warn, "watch: "+e)
	}
	for _, n := range r.Notes {
		w("- %s\n", n)
	}
	w("\n")
	w("Audit log: %d lines read, %d of them the operator's (%d rotations); lines by user agent: %s.", r.Audit.Lines, r.Audit.OperatorEvents, r.Audit.Rotations, userAgents(r.Audit.UserAgents))
	for _, s := range warn {
		w(" **Warning:** %s.", s)
	}
	w("\n")
	return sb.String()
}

func userAgents(m map[string]int) string {
	var parts []string
	for _, k := range sortedByValue(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func phaseNames(ps []phaseResult) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

func lastName(ps []phaseResult) string {
	if len(ps) == 0 {
		return "-"
	}
	return ps[len(ps)-1].Name
}

func perMinuteLast(ps []phaseResult, f func(*phaseResult) int) string {
	if len(ps) == 0 || ps[len(ps)-1].Seconds == 0 {
		return "-"
	}
	p := &ps[len(ps)-1]
	return fmt.Sprintf("%.1f", float64(f(p))*60/float64(p.Seconds))
}

func secs(p *int) string {
	if p == nil {
		return "not reached"
	}
	return fmt.Sprintf("%d s", *p)
}

func fsecs(p *float64) string {
	if p == nil {
		return "not reached"
	}
	return fmt.Sprintf("%.1f s", *p)
}

func rate(n, seconds int) string {
	if seconds <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(n)/float64(seconds))
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func gitDescribe(root string) (string, error) {
	out, err := exec.Command("git", "-C", root, "describe", "--always", "--dirty").Output()
	return strings.TrimSpace(string(out)), err
}

// countsTable writes one row per key of counts (summed over the phases, largest first),
// a column per phase and the last phase's rate per minute.
func countsTable(w func(string, ...any), phases []phaseResult, title, keyHeader, keyFormat string, counts func(*phaseResult) map[string]int) {
	all := map[string]int{}
	for i := range phases {
		for k, v := range counts(&phases[i]) {
			all[k] += v
		}
	}
	w("%s (per minute in the last phase):\n\n", title)
	w("| %s | %s | per min (%s) |\n|---|%s---|\n", keyHeader, strings.Join(phaseNames(phases), " | "), lastName(phases), strings.Repeat("---|", len(phases)))
	for _, k := range sortedByValue(all) {
		cells := make([]string, len(phases))
		for i := range phases {
			cells[i] = fmt.Sprint(counts(&phases[i])[k])
		}
		w("| "+keyFormat+" | %s | %s |\n", k, strings.Join(cells, " | "), perMinuteLast(phases, func(p *phaseResult) int { return counts(p)[k] }))
	}
	w("\n")
}
