// Command bench is the operator's scale benchmark (`make bench`). It starts a
// kwok-simulated cluster with the kube-apiserver's audit log on, adds NODES storage
// nodes, installs the CRDs, serves the LINSTOR emulator (coupled to the cluster's
// pods) in this process, runs the operator as a separate process and applies a
// LinstorCluster and a LinstorSatelliteConfiguration with one thin pool per node. It
// measures the time until every satellite is ONLINE, every pool reports capacity and
// the LinstorCluster is Available, then keeps watching for a steady-state window in
// which nothing changes. It counts the operator's Kubernetes API requests (from the
// audit log, by its user agent), the writes that really changed an object (from
// watches, attributed by managedFields), the floor of writes a perfect operator would
// need, and the operator's LINSTOR requests; it reads the operator's peak memory and CPU
// time. Results: a table on stdout and in bin/bench/results-N<nodes>.md, JSON in
// results-N<nodes>.json, and a picture in convergence-N<nodes>.svg. The cluster is
// deleted at the end, also on Ctrl-C. See docs/performance.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	lapi "github.com/LINBIT/golinstor/client"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/internal/bundle"
	"github.com/linstor-operator/linstor-operator/internal/emulator"
	"github.com/linstor-operator/linstor-operator/internal/kwokcluster"
)

// options of one benchmark run.
type options struct {
	nodes      int
	steady     time.Duration
	timeout    time.Duration
	operator   string // binary; empty: build the working tree's
	opArgs     []string
	name       string
	namespace  string
	out        string
	uaPrefix   string
	managers   []string
	root       string
	opLogPath  string
	coupleEach time.Duration
	database   bool
	volumes    int // resources placed after convergence, before the steady window
	profile    bool
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, " ") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	var o options
	var managers string
	var opArgs stringList
	flag.IntVar(&o.nodes, "nodes", envInt("NODES", 100), "Simulated storage nodes (env NODES).")
	flag.IntVar(&o.volumes, "volumes", envInt("VOLUMES", 0), "Resources of 3 replicas placed through the emulator after convergence, before the steady window (env VOLUMES).")
	flag.DurationVar(&o.steady, "steady", envDuration("STEADY", 5*time.Minute), "Steady-state window after convergence (env STEADY).")
	flag.DurationVar(&o.timeout, "timeout", envDuration("CONVERGE_TIMEOUT", 30*time.Minute), "Give up waiting for convergence after this long (env CONVERGE_TIMEOUT); the steady window runs anyway.")
	flag.StringVar(&o.operator, "operator", os.Getenv("OPERATOR"), "Operator binary to run (env OPERATOR); empty: build the working tree into bin/bench/manager. An older build can be benchmarked this way.")
	flag.DurationVar(&o.coupleEach, "emulator-interval", time.Second, "How often the LINSTOR emulator looks at the cluster's pods (a satellite is ONLINE at most this long after its pod runs).")
	flag.BoolVar(&o.database, "emulator-database", true, "Keep the emulator's state in the cluster as LINSTOR's k8s database backend does (as the demo); off saves the apiserver that load at 1,000 nodes.")
	flag.BoolVar(&o.profile, "profile", os.Getenv("PROFILE") != "", "Profile the operator in the steady window: its CPU over the window and its heap at the end, into the output directory (env PROFILE).")
	flag.Var(&opArgs, "operator-arg", "Extra operator argument (repeatable).")
	flag.StringVar(&o.name, "cluster-name", "linstor-bench", "Name of the kwok cluster (`make demo-down` removes one a killed bench left).")
	flag.StringVar(&o.namespace, "namespace", "linstor", "Namespace of the LinstorCluster.")
	flag.StringVar(&o.out, "out", filepath.Join("bin", "bench"), "Directory for the results, the operator's log and binary.")
	flag.StringVar(&o.uaPrefix, "user-agent-prefix", "", "User agent prefix of the operator's requests in the audit log; empty: the binary's name and \"/\" (client-go's default user agent).")
	flag.StringVar(&managers, "field-managers", "", "Comma-separated field managers that are the operator; empty: linstor-operator (its server-side apply owner) and the binary's name (client-go's default for updates and patches).")
	redraw := flag.String("redraw", "", "Only redraw the table (stdout) and the SVG (next to it) from a results-N<nodes>.json; runs nothing.")
	flag.Parse()
	if *redraw != "" {
		if err := redrawResults(*redraw); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	o.opArgs = opArgs
	if o.nodes <= 0 || o.steady < 0 {
		fmt.Fprintln(os.Stderr, "bench: -nodes must be positive and -steady not negative")
		os.Exit(2)
	}
	if managers != "" {
		o.managers = strings.Split(managers, ",")
	}
	if err := run(o); err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "bench: interrupted")
			os.Exit(130)
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(o options) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Output piped into a program that exits (head) must not kill the bench before it
	// deletes the cluster.
	signal.Ignore(syscall.SIGPIPE)
	start := time.Now()
	if o.root, err = os.Getwd(); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(o.root, "config", "crd", "bases")); err != nil {
		return errors.New("run it from the repository's top directory (make bench)")
	}
	o.out = abs(o.root, o.out)
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	step(start, "building what is missing of the simulated cluster")
	if err := kwokcluster.BuildBinaries(ctx, o.root); err != nil {
		return err
	}
	built := o.operator == ""
	if built {
		o.operator = filepath.Join(o.out, "manager")
		step(start, "building the operator: go build -o "+rel(o.root, o.operator)+" .")
		if err := buildOperator(ctx, o.root, o.operator); err != nil {
			return err
		}
	} else {
		o.operator = abs(o.root, o.operator)
		if _, err := os.Stat(o.operator); err != nil {
			return err
		}
	}
	binName := filepath.Base(o.operator)
	if o.uaPrefix == "" {
		o.uaPrefix = binName + "/"
	}
	if len(o.managers) == 0 {
		o.managers = []string{"linstor-operator", binName}
	}
	o.opLogPath = filepath.Join(o.out, "operator.log")

	policy := filepath.Join(o.out, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
		return err
	}
	step(start, fmt.Sprintf("starting kwok cluster %s (etcd, kube-apiserver with its audit log, kube-controller-manager, kube-scheduler, kwok)", o.name))
	cl, err := createCluster(ctx, o.root, o.name, policy)
	if err != nil {
		return err
	}
	var op *operatorProc
	var emuSrv *http.Server
	stopBackground := func() {}
	defer func() {
		step(start, "stopping the operator, the emulator and the cluster")
		if op != nil {
			if e := op.stop(); e != nil {
				fmt.Fprintln(os.Stderr, "bench:", e)
			}
		}
		stopBackground()
		if emuSrv != nil {
			_ = emuSrv.Close()
		}
		if e := cl.Delete(); e != nil {
			fmt.Fprintln(os.Stderr, "bench:", e)
		}
		if left := cl.Processes(); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "bench: processes of the cluster still running: %s (make demo-down)\n", strings.Join(left, " "))
		}
	}()

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	utilruntime.Must(linstorv1.AddToScheme(scheme))
	c, err := client.New(cl.Config, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cl.Config)
	if err != nil {
		return err
	}

	step(start, fmt.Sprintf("creating %d kwok nodes", o.nodes))
	if err := kwokcluster.AddNodes(ctx, c, "storage", 0, o.nodes); err != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// The operands' accounts ship with the operator (config/rbac), as a deployment has them.
	rbac, err := bundle.ReadRBAC(o.root, o.namespace)
	if err != nil {
		return err
	}
	for _, obj := range rbac.Objects() {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("installing config/rbac: %w", err)
		}
	}
	step(start, "installing the v1 CRDs of config/crd/bases (no admission or conversion webhooks: the operator runs with --webhooks=false)")
	if _, err := envtest.InstallCRDs(cl.Config, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(o.root, "config", "crd", "bases")}, ErrorIfPathMissing: true,
	}); err != nil {
		return fmt.Errorf("installing the CRDs: %w", err)
	}

	bg, cancelBg := context.WithCancel(context.Background())
	stopBackground = cancelBg
	ck := clock{t0: time.Now()}
	linstorReqs := newSeries()
	emu := emulator.New()
	emu.SetNewNodeDisks(lapi.PhysicalStorageNode{PhysicalStorageDevice: lapi.PhysicalStorageDevice{Device: "/dev/vdb", Model: "emulated"}, Size: 100 << 30})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	emuSrv = &http.Server{Handler: countingHandler(emu, ck, linstorReqs), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = emuSrv.Serve(ln) }()
	linstorURL := "http://" + ln.Addr().String()
	coupled := emulator.Cluster{Reader: c, Namespace: o.namespace, Interval: o.coupleEach}
	if o.database {
		coupled.Database = c
	}
	go emu.Couple(bg, coupled)

	ww := newWriteWatch(dyn, o.namespace, ck)
	if err := ww.start(bg); err != nil {
		return err
	}
	audit := newAuditTail(cl.AuditLog, o.uaPrefix, ck)
	go audit.run(bg)

	step(start, fmt.Sprintf("starting the operator %s (LINSTOR emulator at %s; log %s)", rel(o.root, o.operator), linstorURL, rel(o.root, o.opLogPath)))
	var prof *profiler
	if o.profile {
		if prof, err = newProfiler(o.out); err != nil {
			return err
		}
		o.opArgs = append(o.opArgs, prof.operatorArg())
	}
	// The operator runs limited as in its pod: the kernel enforces the bundle's memory
	// limit, and the operator sets its Go memory limit from it.
	var cg *memoryCgroup
	limit, limitErr := podMemoryLimit(o.root)
	if limitErr == nil {
		cg, limitErr = newMemoryCgroup(fmt.Sprintf("linstor-bench-operator-%d", os.Getpid()), limit)
	}
	if cg != nil {
		defer func() {
			if e := cg.remove(); e != nil {
				fmt.Fprintln(os.Stderr, "bench: removing the operator's memory cgroup:", e)
			}
		}()
		step(start, fmt.Sprintf("the operator runs in memory cgroup %s limited to %d MiB (the bundle's limit)", cg.dir, limit>>20))
	} else {
		step(start, fmt.Sprintf("the operator's memory is NOT limited: %v", limitErr))
	}
	op, err = startOperator(o.operator, cl.Kubeconfig, o.namespace, linstorURL, o.opLogPath, o.opArgs, cg)
	if err != nil {
		return err
	}
	// The operator's requests must show in the audit log under its user agent: else
	// every count below would be zero for the wrong reason.
	if err := waitOperatorSeen(ctx, audit, op, 60*time.Second, o); err != nil {
		return err
	}

	b := &bench{o: o, ck: ck, ww: ww, audit: audit, linstor: linstorReqs, op: op, emu: emu, start: start, prof: prof}
	b.res.MemoryLimitBytes = limit
	if cg == nil && limitErr != nil {
		b.res.MemoryLimitNotEnforced = limitErr.Error()
	}
	b.res.Operator = rel(o.root, o.operator)
	b.res.OperatorBuiltFromWorkingTree = built
	if rev, err := gitDescribe(o.root); err == nil && built {
		b.res.OperatorRevision = rev
	}
	measureErr := b.measure(ctx, c)
	if n := len(b.res.Phases); n > 0 {
		// Let the audit tail and the watches take in the last second's requests.
		end := ck.tick(b.res.Phases[n-1].ToSecond)
		for deadline := time.Now().Add(15 * time.Second); !audit.caughtUp(end) && time.Now().Before(deadline); {
			time.Sleep(200 * time.Millisecond)
		}
		time.Sleep(time.Second)
	}
	// Stop the operator before it sees the cluster go away; the results are in memory.
	if e := op.stop(); e != nil {
		fmt.Fprintln(os.Stderr, "bench:", e)
	}
	if cg != nil {
		if n, e := cg.oomKills(); e == nil {
			b.res.OOMKills = n
		}
	}
	op = nil
	if b.phasesDone > 0 {
		if err := b.report(); err != nil {
			return err
		}
	}
	return measureErr
}

// waitOperatorSeen waits for the operator's first request in the audit log.
func waitOperatorSeen(ctx context.Context, a *auditTail, op *operatorProc, limit time.Duration, o options) error {
	deadline := time.After(limit)
	for {
		st := a.stats()
		if st.OperatorEvents > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-op.exited():
			return fmt.Errorf("the operator exited (%v); its log: %s", err, o.opLogPath)
		case <-deadline:
			return fmt.Errorf("no request with user agent %q in the audit log %s after %s (%d lines; user agents seen: %v; audit read error: %v); is -user-agent-prefix right?",
				o.uaPrefix, a.path, limit, st.Lines, st.UserAgents, st.Err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// bench holds one run's measurements.
type bench struct {
	o       options
	ck      clock
	ww      *writeWatch
	audit   *auditTail
	linstor *series
	op      *operatorProc
	emu     *emulator.Emulator
	start   time.Time
	prof    *profiler // nil: not profiling

	res        results
	points     []point
	phasesDone int
}

// point is one second of the timeline: while measuring, the state sampled at tick
// Second; in the results, second Second of the clock (from the operator's start) with
// the state at its end and the requests within it.
type point struct {
	Second     int `json:"second"`
	Satellites int `json:"satellites"`
	Online     int `json:"online"`
	// LinstorOnline: nodes the emulated LINSTOR itself reports ONLINE at that moment,
	// against which Online (the satellites' status) shows the operator's reporting lag.
	LinstorOnline int    `json:"linstorOnline"`
	Pools         int    `json:"pools"`
	Available     string `json:"available"`
	// Filled in at the end from the counters of that second:
	APIRequests     int `json:"apiRequests"`
	APIWrites       int `json:"apiWrites"`
	EffectiveWrites int `json:"effectiveWrites"`
	LinstorRequests int `json:"linstorRequests"`
}

func (b *bench) measure(ctx context.Context, c client.Client) error {
	o := b.o
	expectedPools, err := applySamples(ctx, c, o.root, o.namespace, o.nodes)
	if err != nil {
		return err
	}
	now := time.Now()
	kSamples := b.ck.bucket(now)
	b.res.SamplesAppliedSecond = kSamples
	step(b.start, fmt.Sprintf("applied a LinstorCluster and a LinstorSatelliteConfiguration (%d storage pool per node): waiting for %d satellites ONLINE, %d pools and Available (limit %s)",
		expectedPools/o.nodes, o.nodes, expectedPools, o.timeout))
	b.res.ExpectedPools = expectedPools

	// Tick on the clock's whole seconds, so that a sample at tick k shows the state at
	// the boundary between the seconds k-1 and k the counters are split at.
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(b.ck.tick(b.ck.bucket(time.Now()) + 1))):
	}
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	var online, pools, avail, conv *int
	lastPrint := -100
	deadline := kSamples + int(o.timeout/time.Second)
	phaseStart := 0
	// Converge.
	converged := false
	k := kSamples
	for !converged && k < deadline {
		select {
		case <-ctx.Done():
			b.endPhase("converge", phaseStart, b.ck.bucket(time.Now())+1)
			b.res.Interrupted = true
			return nil
		case err := <-b.op.exited():
			b.endPhase("converge", phaseStart, b.ck.bucket(time.Now())+1)
			return fmt.Errorf("the operator exited during convergence (%v); log: %s", err, o.opLogPath)
		case t := <-ticker.C:
			k = b.tickSecond(t)
		}
		s := b.sample(k)
		first := func(p **int, ok bool) bool {
			if ok && *p == nil {
				d := k - kSamples
				*p = &d
				return true
			}
			return false
		}
		changed := first(&online, s.Satellites == o.nodes && s.Online == o.nodes)
		changed = first(&pools, s.Pools >= expectedPools) || changed
		changed = first(&avail, s.Available == "True") || changed
		converged = s.Satellites == o.nodes && s.Online == o.nodes && s.Pools >= expectedPools && s.Available == "True"
		if changed || k-lastPrint >= 10 || converged {
			b.progress(k, s)
			lastPrint = k
		}
	}
	if converged {
		d := k - kSamples
		conv = &d
	}
	b.res.SecondsToAllOnline, b.res.SecondsToAllPools, b.res.SecondsToAvailable, b.res.SecondsToConverged = online, pools, avail, conv
	b.res.Converged = converged
	if !converged {
		step(b.start, fmt.Sprintf("NOT converged within %s: measuring the steady window anyway", o.timeout))
	} else {
		step(b.start, fmt.Sprintf("converged %ds after the samples were applied; steady-state window of %s, nothing changes", *conv, o.steady))
	}
	b.endPhase("converge", phaseStart, k)
	if o.volumes > 0 {
		placing := time.Now()
		replicas, err := placeVolumes(b.emu, "storage", o.nodes, o.volumes)
		if err != nil {
			return fmt.Errorf("placing %d volumes: %w", o.volumes, err)
		}
		b.res.Volumes, b.res.Replicas, b.res.PlacementSeconds = o.volumes, replicas, time.Since(placing).Seconds()
		b.res.Notes = append(b.res.Notes, volumesNote(o.volumes, replicas, time.Since(placing)))
		step(b.start, b.res.Notes[len(b.res.Notes)-1])
		// The observer reads them at its next cycle (30 s at most); the reaction to them
		// is not the steady state.
		waited, err := awaitVolumesSeen(ctx, c, o.namespace, o.volumes, 2*time.Minute, 5*time.Second)
		if err != nil {
			return fmt.Errorf("waiting for the operator to count the volumes: %w", err)
		}
		b.res.Notes = append(b.res.Notes, fmt.Sprintf("The LinstorCluster counted the %d volumes %s after they were placed (5 s of it settling); the steady window starts then.", o.volumes, waited.Round(time.Second)))
		step(b.start, b.res.Notes[len(b.res.Notes)-1])
		// Placing them is a phase of its own: what the operator spends on volumes
		// arriving (reading a growing view each cycle) is not the steady state's.
		phaseStart = k
		k = b.tickSecond(time.Now())
		b.endPhase("volumes", phaseStart, k)
	}
	phaseStart = k

	// Steady state.
	end := k + int(o.steady/time.Second)
	cpuProfiled := make(chan error, 1)
	if prof := b.prof; prof != nil {
		if err := prof.heap(ctx, "converged-heap.pprof"); err != nil {
			step(b.start, fmt.Sprintf("no heap profile at convergence: %v", err))
		}
		go func() { cpuProfiled <- prof.cpu(ctx, "steady-cpu.pprof", o.steady-2*time.Second) }()
	}
	regressions := 0
	for k < end {
		select {
		case <-ctx.Done():
			b.endPhase("steady", phaseStart, b.ck.bucket(time.Now())+1)
			b.res.Interrupted = true
			return nil
		case err := <-b.op.exited():
			b.endPhase("steady", phaseStart, b.ck.bucket(time.Now())+1)
			return fmt.Errorf("the operator exited during the steady window (%v); log: %s", err, o.opLogPath)
		case t := <-ticker.C:
			k = b.tickSecond(t)
		}
		s := b.sample(k)
		if converged && !(s.Online == o.nodes && s.Pools >= expectedPools && s.Available == "True") {
			regressions++
		}
		if k-lastPrint >= 10 {
			b.progress(k, s)
			lastPrint = k
		}
	}
	b.res.SteadyRegressedSeconds = regressions
	b.endPhase("steady", phaseStart, end)
	if prof := b.prof; prof != nil {
		if err := <-cpuProfiled; err != nil {
			step(b.start, fmt.Sprintf("no CPU profile of the steady window: %v", err))
		}
		if err := prof.heap(ctx, "steady-heap.pprof"); err != nil {
			step(b.start, fmt.Sprintf("no heap profile after the steady window: %v", err))
		}
		step(b.start, fmt.Sprintf("profiles in %s: go tool pprof %s", rel(o.root, o.out), rel(o.root, filepath.Join(o.out, "steady-cpu.pprof"))))
	}
	if o.volumes > 0 {
		// After the window, so its reaction is not counted as steady state.
		node := "storage-0"
		step(b.start, fmt.Sprintf("degrading fault: taking node %s away (NoExecute taint), waiting for the LinstorCluster to count a degraded resource", node))
		f, err := playNodeFault(ctx, c, b.emu, o.namespace, node, 3*time.Minute)
		b.res.Fault = f
		b.res.Notes = append(b.res.Notes, faultNote(f))
		step(b.start, b.res.Notes[len(b.res.Notes)-1])
		if err != nil {
			return fmt.Errorf("the node fault: %w", err)
		}
	}
	return nil
}

// tickSecond is the whole second of the clock a tick stands for.
func (b *bench) tickSecond(t time.Time) int {
	return int(math.Round(t.Sub(b.ck.t0).Seconds()))
}

func (b *bench) sample(k int) snapshot {
	s := b.ww.snapshot()
	b.points = append(b.points, point{Second: k, Satellites: s.Satellites, Online: s.Online, LinstorOnline: b.emu.OnlineNodes(), Pools: s.Pools, Available: s.Available})
	// The emulator's own request log is not used: keep it from growing.
	b.emu.ResetRequests()
	return s
}

func (b *bench) progress(k int, s snapshot) {
	from := max(k-6, 0)
	writes := total(b.audit.requests.sum(from, k-1, func(key string) bool { return parseRequestKey(key).isWrite() }))
	lreq := total(b.linstor.sum(from, k-1, nil))
	n := float64(max(k-1-from, 1))
	fmt.Printf("[%6.1fs] satellites %d/%d ONLINE, pools %d/%d, Available=%s | operator API writes %.0f/s, LINSTOR requests %.0f/s\n",
		time.Since(b.start).Seconds(), s.Online, b.o.nodes, s.Pools, b.res.ExpectedPools, s.Available, float64(writes)/n, float64(lreq)/n)
}

// endPhase records the operator's resource use at the end of a phase; the counts of
// the phase's seconds [from, to) are summed in report, once the audit log is read.
func (b *bench) endPhase(name string, from, to int) {
	p := phaseResult{Name: name, FromSecond: from, ToSecond: to, Seconds: to - from}
	if ps, err := readProc(b.op.pid()); err == nil {
		p.Operator = ps
	}
	b.res.Phases = append(b.res.Phases, p)
	b.phasesDone++
}

// applySamples creates config/samples' LinstorCluster and LinstorSatelliteConfiguration.
// Any node selector they have must fit every node kwokcluster.Node makes, as in the
// demo, so every node gets a satellite and a pool; it checks that rather than trusting it. It returns the number of pools
// expected.
func applySamples(ctx context.Context, c client.Client, root, namespace string, nodes int) (int, error) {
	var poolsPerNode int
	for _, f := range []string{"linstor_v1_linstorsatelliteconfiguration.yaml", "linstor_v1_linstorcluster.yaml"} {
		raw, err := os.ReadFile(filepath.Join(root, "config", "samples", f))
		if err != nil {
			return 0, err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &u.Object); err != nil {
			return 0, fmt.Errorf("%s: %w", f, err)
		}
		u.SetNamespace(namespace)
		sel, _, _ := unstructured.NestedStringMap(u.Object, "spec", "nodeSelector")
		node := kwokcluster.Node("storage-0", 0)
		for k, v := range sel {
			if node.Labels[k] != v {
				return 0, fmt.Errorf("%s: node selector %s=%q does not select the kwok nodes", f, k, v)
			}
		}
		if u.GetKind() == "LinstorSatelliteConfiguration" {
			sp, _, _ := unstructured.NestedSlice(u.Object, "spec", "storagePools")
			poolsPerNode = len(sp)
		}
		if err := c.Create(ctx, u); err != nil {
			return 0, fmt.Errorf("%s: %w", f, err)
		}
	}
	if poolsPerNode == 0 {
		return 0, errors.New("the LinstorSatelliteConfiguration sample has no storage pool")
	}
	return poolsPerNode * nodes, nil
}

func step(start time.Time, msg string) {
	fmt.Printf("[%6.1fs] %s\n", time.Since(start).Seconds(), msg)
}

func envInt(name string, def int) int {
	var v int
	if _, err := fmt.Sscan(os.Getenv(name), &v); err == nil && v > 0 {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return d
	}
	return def
}

func abs(root, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, p)
}

func rel(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

func sortedByValue(m map[string]int) []string {
	keys := sortedKeys(m)
	sort.SliceStable(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	return keys
}
