package monitoring

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	lapi "github.com/LINBIT/golinstor/client"
	. "github.com/onsi/gomega"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/internal/emulator"
	"github.com/linstor-operator/linstor-operator/internal/promserver"
	"github.com/linstor-operator/linstor-operator/pkg/certs"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// The alert rules run with every for: scaled down mechanically so that a test waits
// seconds, not hours: for' = for/forScale rounded up to whole seconds, at most maxFor.
// Expressions, labels and annotations are those of config/prometheus/rules.yaml.
const (
	forScale = 300
	maxFor   = 10 * time.Second
)

const (
	timeout = 60 * time.Second
	tick    = 200 * time.Millisecond
	// runningVersion is the LINSTOR the cluster runs; the release offers a newer one.
	runningVersion = "1.33.2"
)

func scaleFor(d time.Duration) time.Duration {
	scaled := d / forScale
	if rest := scaled % time.Second; rest != 0 {
		scaled += time.Second - rest
	}
	return min(max(scaled, time.Second), maxFor)
}

type ruleFile struct {
	Spec struct {
		Groups []struct {
			Name  string           `json:"name"`
			Rules []map[string]any `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// scaledRules writes the PrometheusRule's groups as a plain rule file with scaled for:
// and returns its path and every alert's scaled for:, in the file's order.
func scaledRules(t *testing.T, dir string) (string, []string, map[string]time.Duration) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(envtest.RepoRoot(), "config", "prometheus", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(data, &rf); err != nil {
		t.Fatal(err)
	}
	var names []string
	forOf := map[string]time.Duration{}
	for _, g := range rf.Spec.Groups {
		for _, r := range g.Rules {
			name, _ := r["alert"].(string)
			if name == "" {
				continue
			}
			names = append(names, name)
			if f, ok := r["for"].(string); ok {
				d, err := model.ParseDuration(f)
				if err != nil {
					t.Fatalf("%s: for %q: %v", name, f, err)
				}
				forOf[name] = scaleFor(time.Duration(d))
				r["for"] = model.Duration(forOf[name]).String()
			}
		}
	}
	out, err := yaml.Marshal(map[string]any{"groups": rf.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, names, forOf
}

// alertLog follows /api/v1/alerts: each alert instance (label set) and when it was
// first seen firing, and each alert's state now.
type alertLog struct {
	mu        sync.Mutex
	instances map[string][]*alertInstance
	now       map[string]promv1.AlertState
	err       error
}

// alertInstance is one label set of an alert, as first seen firing.
type alertInstance struct {
	labels model.LabelSet
	firing time.Time
	// activeAt is Prometheus's own start of its pending period.
	activeAt time.Time
}

func watchAlerts(ctx context.Context, srv *promserver.Server) *alertLog {
	l := &alertLog{instances: map[string][]*alertInstance{}, now: map[string]promv1.AlertState{}}
	go func() {
		for ctx.Err() == nil {
			alerts, err := srv.Alerts(ctx)
			seen := time.Now()
			l.mu.Lock()
			l.err = err
			if err == nil {
				l.now = map[string]promv1.AlertState{}
			}
			for _, a := range alerts {
				name := string(a.Labels["alertname"])
				if a.State == promv1.AlertStateFiring || l.now[name] == "" {
					l.now[name] = a.State
				}
				// Each firing counts once: the same labels firing again later (a fault
				// after a blip) are a new instance.
				if a.State == promv1.AlertStateFiring && !slices.ContainsFunc(l.instances[name], func(i *alertInstance) bool { return i.labels.Equal(a.Labels) && i.activeAt.Equal(a.ActiveAt) }) {
					l.instances[name] = append(l.instances[name], &alertInstance{labels: a.Labels, firing: seen, activeAt: a.ActiveAt})
				}
			}
			l.mu.Unlock()
			time.Sleep(250 * time.Millisecond)
		}
	}()
	return l
}

// fired: name was seen firing.
func (l *alertLog) fired(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.instances[name]) > 0
}

// firedWith is the first instance of name with these labels that was first seen firing
// at or after since; nil if none was.
func (l *alertLog) firedWith(name string, want map[string]string, since time.Time) *alertInstance {
	l.mu.Lock()
	defer l.mu.Unlock()
next:
	for _, i := range l.instances[name] {
		for k, v := range want {
			if string(i.labels[model.LabelName(k)]) != v {
				continue next
			}
		}
		if !i.firing.Before(since) {
			return i
		}
	}
	return nil
}

func (l *alertLog) labelsOf(name string) []model.LabelSet {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []model.LabelSet
	for _, i := range l.instances[name] {
		out = append(out, i.labels)
	}
	return out
}

func (l *alertLog) state(name string) promv1.AlertState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.now[name]
}

func (l *alertLog) firingNow() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for name, s := range l.now {
		if s == promv1.AlertStateFiring {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// fault is one injected problem and the alerts it must make fire, with labels each
// firing instance must carry.
type fault struct {
	what   string
	alerts map[string]map[string]string
	at     time.Time
}

// expectFiring waits until every alert of the faults fired, with its labels, in an
// instance first seen firing after its fault, and checks that Prometheus held that
// instance pending for its for: first.
func expectFiring(t *testing.T, log *alertLog, forOf map[string]time.Duration, srv *promserver.Server, within time.Duration, faults ...*fault) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		for _, f := range faults {
			for name, labels := range f.alerts {
				g.Expect(log.firedWith(name, labels, f.at)).NotTo(BeNil(), "%s%v (after %s) is %q; it fired with %v", name, labels, f.what, log.state(name), log.labelsOf(name))
			}
		}
	}, within, tick).Should(Succeed(), func() string {
		failed, err := srv.Query(context.Background(), `sum by (route, code) (increase(linstor_operator_linstor_requests_total{code!~"2.."}[10m]))`)
		return fmt.Sprintf("firing now: %s\nfailed LINSTOR requests: %v %v\n%s", strings.Join(log.firingNow(), ", "), failed, err, srv.LogTail(10))
	})
	for _, f := range faults {
		for name, labels := range f.alerts {
			i := log.firedWith(name, labels, f.at)
			// Prometheus fires an alert only once it has been pending for its for:.
			if held := i.firing.Sub(i.activeAt); held < forOf[name]-time.Second/2 {
				t.Errorf("%s%v fired %s after it went pending, before its for: of %s", name, labels, held, forOf[name])
			}
			t.Logf("%s fired %s after %s (for: %s)", name, i.firing.Sub(f.at).Round(100*time.Millisecond), f.what, forOf[name])
		}
	}
}

// Every alert the operator and LINSTOR can be made to raise here fires in a real
// Prometheus that scrapes the LINSTOR emulator's /metrics and the operator's metrics
// while its controllers run; on a healthy cluster only the honest "never backed up"
// fires. The test logs the alert → fired table at the end.
func TestAlertsFireInPrometheus(t *testing.T) {
	bin, err := promserver.Binary()
	if err != nil {
		t.Fatal(err)
	}
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.Namespace(t)

	// A cluster of 8 nodes running LINSTOR 1.33.2 pinned, the Manual upgrade policy, and
	// internal TLS from a Secret of the user's.
	was := emu.Version()
	emu.SetVersion(runningVersion)
	t.Cleanup(func() { emu.SetVersion(was) })
	nodes := []string{"mon-1", "mon-2", "mon-3", "mon-4", "mon-5", "mon-6", "mon-7", "mon-8"}
	for i, n := range nodes {
		makeNode(t, n, fmt.Sprintf("10.60.0.%d", i+1), map[string]string{"suite": "mon"})
	}
	ca, err := certs.NewCA("user-ca", time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	internalTLS := userCertificate(g, ns, "my-internal-tls", ca, time.Now())
	g.Expect(env.Client.Create(ctx, internalTLS)).To(Succeed())
	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorSatelliteConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: ns},
		Spec: linstorv1.LinstorSatelliteConfigurationSpec{StoragePools: []linstorv1.StoragePool{{Name: "thin", LvmThinPool: &linstorv1.LvmThinPool{}}}}})).To(Succeed())
	cluster := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor", Namespace: ns}, Spec: linstorv1.LinstorClusterSpec{
		NodeSelector: map[string]string{"suite": "mon"},
		Version:      runningVersion,
		Upgrade:      &linstorv1.UpgradeSpec{Policy: linstorv1.UpgradeManual},
		TLS:          &linstorv1.TLSSpec{Internal: &linstorv1.TLSConfig{Mode: linstorv1.TLSSecret, SecretName: "my-internal-tls"}},
	}}
	g.Expect(env.Client.Create(ctx, cluster)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := getCluster(g, cluster)
		g.Expect(condition(c, linstorv1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue), "%+v", c.Status.Conditions)
		g.Expect(c.Status.Satellites.Total).To(Equal(int32(len(nodes))))
		for _, n := range nodes {
			sat := &linstorv1.LinstorSatellite{}
			g.Expect(env.Client.Get(ctx, keyOf(ns, n), sat)).To(Succeed())
			g.Expect(sat.Status.StoragePools).To(HaveLen(1), n)
		}
	}, timeout, tick).Should(Succeed())

	// Offsite: LinstorBackupTarget offsite on a real bucket behind a fault proxy, and a
	// LinstorBackupSchedule whose LINSTOR schedule ships every volume of the default
	// resource group there every minute, on the real clock; its database backups are
	// suspended (each would stop LINSTOR's controller).
	offsite := startBackupWorld(t, ns)
	g.Expect(env.Client.Create(ctx, offsite.target(ns, "offsite", offsite.proxy.Endpoint, offsiteBucket))).To(Succeed())
	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "volumes", Namespace: ns},
		Spec: linstorv1.LinstorBackupScheduleSpec{ClusterRef: linstorv1.ClusterReference{Name: cluster.Name}, TargetRef: &linstorv1.BackupTargetReference{Name: "offsite"},
			Schedule: "@daily", Suspend: true, Volumes: &linstorv1.VolumeBackupSpec{FullSchedule: "* * * * *", ResourceGroups: []string{"DfltRscGrp"}}}})).To(Succeed())

	// Volumes placed so that each fault below touches one of them.
	place := map[string][]string{"pvc-deg": {"mon-1", "mon-2"}, "pvc-disk": {"mon-1", "mon-3"}, "pvc-sb": {"mon-4", "mon-5"}, "pvc-q": {"mon-6", "mon-7", "mon-8"}}
	for rd, on := range place {
		for _, n := range on {
			g.Expect(emu.PlaceResource(rd, n, "thin", false)).To(Succeed())
		}
	}
	g.Eventually(func(g Gomega) {
		r := getCluster(g, cluster).Status.Replicas
		g.Expect(r).NotTo(BeNil())
		g.Expect(r.Healthy).To(Equal(int32(len(place))), "%+v", r)
	}, timeout, tick).Should(Succeed())
	g.Eventually(func(g Gomega) {
		target := &linstorv1.LinstorBackupTarget{}
		g.Expect(env.Client.Get(ctx, keyOf(ns, "offsite"), target)).To(Succeed())
		c := conditionOf(target.Status.Conditions, linstorv1.ConditionAvailable)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
		s := &linstorv1.LinstorBackupSchedule{}
		g.Expect(env.Client.Get(ctx, keyOf(ns, "volumes"), s)).To(Succeed())
		c = conditionOf(s.Status.Conditions, linstorv1.ConditionConfigured)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
		g.Expect(s.Status.Volumes.Scheduled).To(Equal(int32(len(place))))
	}, timeout, tick).Should(Succeed())
	go emu.RunScheduler(ctx, time.Second)

	// drbd-reactor in the satellite pods of the nodes the DRBD faults touch: the page
	// drbd-reactor serves, from the emulator's DRBD on that machine. pvc-q suspends its
	// I/O when it loses quorum (on-no-quorum suspend-io, as a StorageClass sets it).
	reactors := map[string]*httptest.Server{}
	var reactorTargets []any
	for _, n := range []string{"mon-1", "mon-2", "mon-4", "mon-6"} {
		reactors[n] = httptest.NewServer(emu.ReactorHandler(n))
		defer reactors[n].Close()
		reactorTargets = append(reactorTargets, map[string]any{"targets": []string{hostPort(reactors[n].URL)}, "labels": map[string]string{"namespace": ns, "node": n}})
	}
	g.Expect(emu.SetResourceDefinitionProp("pvc-q", "DrbdOptions/Resource/on-no-quorum", "suspend-io")).To(Succeed())

	dir := t.TempDir()
	rules, alertNames, forOf := scaledRules(t, dir)
	srv, err := promserver.Start(ctx, promserver.Config{Binary: bin, Dir: dir, RuleFiles: []string{rules}, Jobs: []promserver.Job{
		{Name: "linstor-operator", Targets: []string{hostPort(operatorMetrics)}},
		// As the ServiceMonitor and PodMonitor of the cluster's namespace label them.
		{Name: ns + "/linstor-controller", Targets: []string{hostPort(linstorURL)}, Labels: map[string]string{"namespace": ns}},
		// One target per satellite pod, each with its node (the PodMonitor's relabeling).
		{Name: ns + "/linstor-satellite", Settings: map[string]any{"static_configs": reactorTargets}},
	}})
	g.Expect(err).NotTo(HaveOccurred())
	defer srv.Stop()
	log := watchAlerts(ctx, srv)
	// The dashboard's picture covers the run from here.
	runStart := time.Now()

	// Every target is scraped, the LINSTOR page included.
	g.Eventually(func(g Gomega) {
		targets, err := srv.Targets(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(targets).To(HaveLen(2 + len(reactors)))
		for _, tg := range targets {
			g.Expect(tg.Health).To(Equal(promv1.HealthGood), "%s: %s", tg.ScrapeURL, tg.LastError)
		}
		vec, err := srv.Query(ctx, fmt.Sprintf(`linstor_node_state{namespace=%q, nodetype="SATELLITE"} == 2`, ns))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(vec).To(HaveLen(len(nodes)))
	}, timeout, tick).Should(Succeed())

	// Healthy: after the longest for:, only the database's missing backup fires, as it
	// should (no LinstorBackup was ever taken).
	time.Sleep(maxFor + 3*time.Second)
	g.Eventually(log.firingNow, timeout, tick).Should(ContainElement("LinstorDatabaseNeverBackedUp"))
	g.Expect(log.firingNow()).To(Equal([]string{"LinstorDatabaseNeverBackedUp"}))
	g.Expect(log.firedWith("LinstorDatabaseNeverBackedUp", map[string]string{"namespace": ns, "cluster": "linstor"}, time.Time{})).NotTo(BeNil())

	// Faults, all at once: each touches its own nodes and volumes.
	lc, err := linstor.NewClient(linstorURL, nil)
	g.Expect(err).NotTo(HaveOccurred())
	of := func(extra ...string) map[string]string {
		out := map[string]string{"namespace": ns}
		for i := 0; i+1 < len(extra); i += 2 {
			out[extra[i]] = extra[i+1]
		}
		return out
	}
	clusterLabels := of("cluster", "linstor")
	offline := &fault{what: "satellite mon-2 offline while pvc-deg is written on mon-1", alerts: map[string]map[string]string{
		"LinstorSatelliteOffline":   of("node", "mon-2"),
		"LinstorSatelliteNotOnline": of("cluster", "linstor", "state", "OFFLINE"),
		"LinstorResourceDegraded":   clusterLabels,
		"DrbdMetricsDown":           of("node", "mon-2"),
	}}
	offline.at = time.Now()
	g.Expect(emu.SetInUse("pvc-deg", "mon-1", true)).To(Succeed())
	g.Expect(emu.SetNodeOnline("mon-2", false)).To(Succeed())

	disk := &fault{what: "the disk of pvc-disk on mon-3 failed", alerts: map[string]map[string]string{"LinstorResourceUnintentionallyDiskless": clusterLabels}}
	disk.at = time.Now()
	g.Expect(emu.FailDisk("pvc-disk", "mon-3")).To(Succeed())

	splitBrain := &fault{what: "pvc-sb written on both sides of a cut link, then healed", alerts: map[string]map[string]string{
		"LinstorResourceSplitBrain":  clusterLabels,
		"DrbdConnectionNotConnected": of("node", "mon-4", "name", "pvc-sb", "conn_name", "mon-5", "drbd_connection_state", "StandAlone"),
	}}
	splitBrain.at = time.Now()
	g.Expect(emu.PartitionLink("mon-4", "mon-5")).To(Succeed())
	for _, n := range []string{"mon-4", "mon-5"} {
		g.Expect(emu.SetInUse("pvc-sb", n, true)).To(Succeed())
		g.Expect(emu.SetInUse("pvc-sb", n, false)).To(Succeed())
	}
	g.Expect(emu.HealLink("mon-4", "mon-5")).To(Succeed())

	quorum := &fault{what: "every link between pvc-q's three replicas cut", alerts: map[string]map[string]string{
		"LinstorResourceQuorumLost": clusterLabels,
		"DrbdResourceSuspended":     of("node", "mon-6", "name", "pvc-q"),
	}}
	quorum.at = time.Now()
	for _, cut := range [][2]string{{"mon-6", "mon-7"}, {"mon-6", "mon-8"}, {"mon-7", "mon-8"}} {
		g.Expect(emu.PartitionLink(cut[0], cut[1])).To(Succeed())
	}

	expiring := &fault{what: "my-internal-tls replaced by a certificate that expires in 10 days",
		alerts: map[string]map[string]string{"LinstorCertificateExpiringSoon": of("cluster", "linstor", "secret", "my-internal-tls")}}
	expiring.at = time.Now()
	renewed := userCertificate(g, ns, "my-internal-tls", ca, time.Now().Add(-certs.LeafValidity+10*24*time.Hour))
	g.Expect(envtest.Update(ctx, env.Client, internalTLS, func(s *corev1.Secret) { s.Data = renewed.Data })).To(Succeed())

	full := &fault{what: "a 95 GiB volume in mon-1's 100 GiB pool", alerts: map[string]map[string]string{"LinstorStoragePoolAlmostFull": of("node", "mon-1", "pool", "thin")}}
	full.at = time.Now()
	g.Expect(lc.ResourceDefinitions.Create(ctx, lapi.ResourceDefinitionCreate{ResourceDefinition: lapi.ResourceDefinition{Name: "pvc-big"}})).To(Succeed())
	g.Expect(lc.ResourceDefinitions.CreateVolumeDefinition(ctx, "pvc-big", lapi.VolumeDefinitionCreate{VolumeDefinition: lapi.VolumeDefinition{SizeKib: 95 << 20}})).To(Succeed())
	g.Expect(lc.Resources.Create(ctx, lapi.ResourceCreate{Resource: lapi.Resource{Name: "pvc-big", NodeName: "mon-1", Props: map[string]string{"StorPoolName": "thin"}}})).To(Succeed())

	// mon-8's thin volume is gone from the machine: LINSTOR's storage-pool view carries
	// the satellite's failed free-space query as the pool's error report.
	poolLost := &fault{what: "the thin volume behind mon-8's pool thin is gone", alerts: map[string]map[string]string{"LinstorStoragePoolErrors": of("node", "mon-8", "pool", "thin")}}
	poolLost.at = time.Now()
	g.Expect(emu.BreakStoragePool("mon-8", "thin")).To(Succeed())
	t.Cleanup(func() { _ = emu.RepairStoragePool("mon-8", "thin") })

	reactorDown := &fault{what: "drbd-reactor of mon-1 stops answering", alerts: map[string]map[string]string{"DrbdMetricsDown": of("node", "mon-1")}}
	reactorDown.at = time.Now()
	reactors["mon-1"].CloseClientConnections()
	reactors["mon-1"].Close()

	// LINSTOR 1.33.3 offered under the Manual policy while the database was never backed
	// up: the operator exports when the wait began as the AwaitingApproval phase's start.
	awaiting := &fault{what: "spec.version unpinned under the Manual policy, no backup ever taken",
		alerts: map[string]map[string]string{"LinstorUpgradeAwaitsApprovalWithoutBackup": clusterLabels}}
	awaiting.at = time.Now()
	g.Expect(envtest.Update(ctx, env.Client, cluster, func(c *linstorv1.LinstorCluster) { c.Spec.Version = "" })).To(Succeed())
	var waitingSince metav1.Time
	g.Eventually(func(g Gomega) {
		u := getCluster(g, cluster).Status.Upgrade
		g.Expect(u).NotTo(BeNil())
		g.Expect(u.Phase).To(Equal(linstorv1.UpgradeAwaitingApproval))
		g.Expect(u.PhaseStartedAt).NotTo(BeNil())
		waitingSince = *u.PhaseStartedAt
	}, timeout, tick).Should(Succeed())

	// Database backups every 5 seconds to LinstorBackupTarget dr-site, whose bucket was
	// never made: the target says so, and every run of the schedule is missed.
	drSite := &fault{what: "database backups scheduled every 5 s to LinstorBackupTarget dr-site, whose bucket does not exist", alerts: map[string]map[string]string{
		"LinstorBackupTargetUnavailable": of("target", "dr-site", "reason", "NoSuchBucket"),
		"LinstorBackupScheduleFailing":   of("schedule", "database", "cluster", "linstor"),
	}}
	drSite.at = time.Now()
	g.Expect(env.Client.Create(ctx, offsite.target(ns, "dr-site", offsite.s3.Endpoint, "linstor-dr"))).To(Succeed())
	g.Expect(env.Client.Create(ctx, &linstorv1.LinstorBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "database", Namespace: ns},
		Spec: linstorv1.LinstorBackupScheduleSpec{ClusterRef: linstorv1.ClusterReference{Name: cluster.Name}, TargetRef: &linstorv1.BackupTargetReference{Name: "dr-site"},
			Schedule: "@every 5s"}})).To(Succeed())

	// A policy of the namespace refuses privileged DaemonSets, then node mon-9 joins: the
	// API server refuses its satellite's DaemonSet (and the renewed certificate's
	// rollout to the others), so their passes keep failing.
	refused := &fault{what: "a ValidatingAdmissionPolicy refuses privileged DaemonSets, then node mon-9 joins",
		alerts: map[string]map[string]string{"LinstorOperatorReconcileErrors": {"controller": "linstorsatellite"}}}
	refused.at = time.Now()
	refusePrivilegedDaemonSets(t, g, ns)
	makeNode(t, "mon-9", "10.60.0.9", map[string]string{"suite": "mon"})

	expectFiring(t, log, forOf, srv, 2*timeout, offline, disk, splitBrain, quorum, expiring, full, poolLost, reactorDown, awaiting, drSite, refused)
	g.Expect(emu.RepairStoragePool("mon-8", "thin")).To(Succeed())
	vec, err := srv.Query(ctx, fmt.Sprintf(`linstor_operator_upgrade_phase_started_timestamp_seconds{namespace=%q}`, ns))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(vec).To(HaveLen(1))
	g.Expect(string(vec[0].Metric["phase"])).To(Equal(string(linstorv1.UpgradeAwaitingApproval)))
	g.Expect(int64(vec[0].Value)).To(Equal(waitingSince.Unix()))

	// The satellite back: its alert ends, and its replica of pvc-deg, which missed
	// mon-1's writes, resyncs (Inconsistent for 20 s here).
	resync := &fault{what: "mon-2 back: its replica of pvc-deg resyncs the writes it missed",
		alerts: map[string]map[string]string{"DrbdDeviceNotUpToDate": of("node", "mon-2", "name", "pvc-deg", "drbd_device_state", "Inconsistent")}}
	emu.SetTiming(emulator.Timing{SatelliteConnect: emulator.DefaultTiming.SatelliteConnect, Resync: 20 * time.Second})
	t.Cleanup(func() { emu.SetTiming(emulator.DefaultTiming) })
	resync.at = time.Now()
	g.Expect(emu.SetNodeOnline("mon-2", true)).To(Succeed())
	g.Eventually(func() promv1.AlertState { return log.state("LinstorSatelliteOffline") }, timeout, tick).Should(BeEmpty())
	expectFiring(t, log, forOf, srv, timeout, resync)
	emu.SetTiming(emulator.DefaultTiming)
	g.Expect(emu.SetInUse("pvc-deg", "mon-1", false)).To(Succeed())

	// LINSTOR's page stops reaching Prometheus while its API answers (as when a
	// ServiceMonitor lacks the /metrics/linstor endpoint): every alert on LINSTOR's own
	// series is silent, and one alert says so.
	metricsGone := &fault{what: "scrapes of LINSTOR's /metrics closed unanswered, its API answering",
		alerts: map[string]map[string]string{"LinstorControllerMetricsAbsent": of()}}
	metricsGone.at = time.Now()
	linstorMetricsDown.Store(true)
	t.Cleanup(func() { linstorMetricsDown.Store(false) })
	// Meanwhile mon-3's satellite stops answering free-space queries (lvs hanging on a
	// dead disk): every uncached pool list hangs, and the operator reads the cache.
	hung := &fault{what: "mon-3's satellite does not answer free-space queries", alerts: map[string]map[string]string{"LinstorStoragePoolQueryFailing": clusterLabels}}
	hung.at = time.Now()
	g.Expect(emu.HangFreeSpaceQuery("mon-3", true)).To(Succeed())
	t.Cleanup(func() { _ = emu.HangFreeSpaceQuery("mon-3", false) })
	expectFiring(t, log, forOf, srv, timeout, metricsGone, hung)
	g.Expect(emu.HangFreeSpaceQuery("mon-3", false)).To(Succeed())
	g.Expect(getCluster(g, cluster).Status.Conditions).NotTo(ContainElement(HaveField("Reason", linstorv1.ReasonLinstorUnreachable)), "a hung satellite made LINSTOR look unreachable")
	linstorMetricsDown.Store(false)
	g.Eventually(func() promv1.AlertState { return log.state("LinstorControllerMetricsAbsent") }, timeout, tick).Should(BeEmpty())

	// The API's TLS names a Secret that does not exist: the cluster is Degraded. And a
	// client sends the conversion webhook requests it cannot read (HTTP 400).
	degraded := &fault{what: "spec.tls.api names a missing Secret", alerts: map[string]map[string]string{"LinstorClusterDegraded": clusterLabels}}
	degraded.at = time.Now()
	g.Expect(envtest.Update(ctx, env.Client, cluster, func(c *linstorv1.LinstorCluster) {
		c.Spec.TLS.API = &linstorv1.TLSConfig{Mode: linstorv1.TLSSecret, SecretName: "missing-api-tls", ClientSecretName: "missing-api-client-tls"}
	})).To(Succeed())
	webhookErrors := &fault{what: "malformed ConversionReviews sent to /convert", alerts: map[string]map[string]string{"LinstorOperatorWebhookErrors": {"webhook": "/convert", "code": "400"}}}
	webhookErrors.at = time.Now()
	stopPosting := postMalformedConversions(t, ctx)
	expectFiring(t, log, forOf, srv, 2*timeout, degraded, webhookErrors)
	stopPosting()

	// A volume of another StorageClass, in the resource group the CSI driver makes for
	// it, which the schedule does not name: LINSTOR does not ship it, and says why.
	unscheduled := &fault{what: "pvc-scratch made in resource group scratch, which schedule volumes does not name",
		alerts: map[string]map[string]string{"LinstorVolumeBackupsNotScheduled": of("schedule", "volumes", "state", "not_scheduled")}}
	unscheduled.at = time.Now()
	g.Expect(emu.PlaceResource("pvc-scratch", "mon-7", "thin", false)).To(Succeed())
	g.Expect(emu.SetResourceGroup("scratch", 1, "pvc-scratch")).To(Succeed())

	// LINSTOR's controller stops answering: the operator reports it unreachable.
	down := &fault{what: "the LINSTOR controller stops answering", alerts: map[string]map[string]string{
		"LinstorControllerDown":        clusterLabels,
		"LinstorControllerUnreachable": {},
	}}
	down.at = time.Now()
	linstorDown.Store(true)
	t.Cleanup(func() { linstorDown.Store(false) })
	// Meanwhile offsite's S3 endpoint refuses connections: the target says so, and
	// LINSTOR's scheduled shipments fail (at least one minute passes in the outage).
	bucketDown := &fault{what: "the S3 endpoint of LinstorBackupTarget offsite refuses connections",
		alerts: map[string]map[string]string{"LinstorBackupTargetUnavailable": of("target", "offsite", "reason", "Unreachable")}}
	bucketDown.at = time.Now()
	g.Expect(offsite.proxy.Refuse()).To(Succeed())
	// LinstorControllerUnreachable counts failed requests in 10 minutes (> 10), which
	// the scaled for: does not shorten: the operator retries a LINSTOR that does not
	// answer after 1, 2, 4, 8, 16 and then every 30 seconds (the observer's backoff;
	// reconciler passes may ask it for a cycle sooner), so the count passes 10 two to
	// three minutes into the outage.
	expectFiring(t, log, forOf, srv, 5*time.Minute, down, bucketDown)

	// LINSTOR answers again, then the bucket is back: the target's recovery wakes the
	// schedule, which reads LINSTOR's shipments of the outage as failed and the volume
	// LINSTOR does not ship.
	linstorDown.Store(false)
	// A shipment of the next minute, through the recovered endpoint, would succeed and
	// end the failures: leave their alert the time to fire before it.
	if next := time.Now().Truncate(time.Minute).Add(time.Minute); time.Until(next) < 20*time.Second {
		time.Sleep(time.Until(next) + 2*time.Second)
		g.Expect(emu.WaitForBackups(ctx)).To(Succeed())
	}
	shipments := &fault{what: "LINSTOR's scheduled shipments while offsite's S3 endpoint refused connections",
		alerts: map[string]map[string]string{"LinstorVolumeBackupsFailing": of("schedule", "volumes", "state", "failed")}, at: bucketDown.at}
	g.Expect(offsite.proxy.PassThrough()).To(Succeed())
	expectFiring(t, log, forOf, srv, timeout, shipments, unscheduled)

	// Through every pass since, the upgrade kept waiting from the same moment.
	u := getCluster(g, cluster).Status.Upgrade
	g.Expect(u).NotTo(BeNil())
	g.Expect(u.Phase).To(Equal(linstorv1.UpgradeAwaitingApproval))
	g.Expect(u.PhaseStartedAt).NotTo(BeNil())
	g.Expect(u.PhaseStartedAt.Time).To(BeTemporally("==", waitingSince.Time), "the wait's start moved")

	// What fired, alert by alert.
	var table bytes.Buffer
	fmt.Fprintf(&table, "%-45s %-6s %s\n", "alert", "fired", "for: (scaled)")
	for _, name := range alertNames {
		fired := log.fired(name)
		yes := "no"
		if fired {
			yes = "yes"
		}
		fmt.Fprintf(&table, "%-45s %-6s %s\n", name, yes, forOf[name])
	}
	t.Logf("alerts seen firing in Prometheus:\n%s", table.String())

	// The dashboard over the same run, with the moments the faults came.
	drawDashboard(t, ctx, srv, ns, cluster.Name, runStart, time.Now(), []chartEvent{
		{at: offline.at, label: "faults"}, {at: degraded.at, label: "API TLS Secret missing"}, {at: down.at, label: "LINSTOR down"},
	})

	// docs/alerts.md says which alerts this test sees firing: it must say what happened.
	documented := seenFiringColumn(t)
	for _, name := range alertNames {
		fired := log.fired(name)
		if doc, ok := documented[name]; !ok || doc != fired {
			t.Errorf("docs/alerts.md: %s is marked seen firing %q (%v), but it fired here: %v %v", name, map[bool]string{true: "yes", false: "no"}[doc], ok, fired, log.labelsOf(name))
		}
	}
}

// A cell says yes or no.
var seenFiringRow = regexp.MustCompile(`^\| \[(\w+)\]\(#\w+\) \| \w+ \| \w+ \| (yes|no) \|$`)

// seenFiringColumn reads the "seen firing in Prometheus" column of docs/alerts.md.
func seenFiringColumn(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(envtest.RepoRoot(), "docs", "alerts.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if m := seenFiringRow.FindStringSubmatch(line); m != nil {
			out[m[1]] = m[2] != "no"
		}
	}
	return out
}

// userCertificate is a Secret of the user's with a certificate of ca issued at from
// (valid for certs.LeafValidity).
func userCertificate(g Gomega, ns, name string, ca certs.Pair, from time.Time) *corev1.Secret {
	leaf, err := certs.Issue(ca, certs.Request{CommonName: "linstor", Server: true, Client: true}, from)
	g.Expect(err).NotTo(HaveOccurred())
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Data: map[string][]byte{"ca.crt": ca.CertPEM, "tls.crt": leaf.CertPEM, "tls.key": leaf.KeyPEM}}
}

// postMalformedConversions sends the operator's conversion webhook a ConversionReview
// without a request every 400 ms, 8 times: over several scrapes, so that rate() sees
// the 400s grow.
func postMalformedConversions(t *testing.T, ctx context.Context) func() {
	t.Helper()
	opts := env.Manager.GetWebhookServer().(*webhook.DefaultServer).Options
	url := fmt.Sprintf("https://%s:%d/convert", opts.Host, opts.Port)
	// The test's own client; the API server is not involved.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 5 * time.Second}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 8 && ctx.Err() == nil; i++ {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{}`))
			req.Header.Set("Content-Type", "application/json")
			if resp, err := client.Do(req); err == nil {
				resp.Body.Close()
			}
			time.Sleep(400 * time.Millisecond)
		}
	}()
	return func() { cancel(); <-done }
}
