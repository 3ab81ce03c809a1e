package e2edr

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"filippo.io/age"
	lapi "github.com/LINBIT/golinstor/client"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/controllers/linstorcluster"
	"github.com/linstor-operator/linstor-operator/internal/kwokcluster"
	"github.com/linstor-operator/linstor-operator/internal/s3server"
	"github.com/linstor-operator/linstor-operator/internal/sim"
	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
	"github.com/linstor-operator/linstor-operator/pkg/lifecycle"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
	"github.com/linstor-operator/linstor-operator/pkg/names"
	"github.com/linstor-operator/linstor-operator/pkg/volumebackup"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

const (
	// namespace and the names below are the runbook's (docs/disaster-recovery.md).
	namespace   = "linstor"
	clusterName = "linstor"
	bucket      = "linstor-backups"
	prefix      = "cluster-a"
	keySecret   = "linstor-backup-key"
	s3Secret    = "linstor-backup-s3"
	targetName  = "offsite"
	// scheduleName is the runbook's schedule; it fires every 15 s, not nightly, so the
	// test does not wait for a clock.
	scheduleName = "nightly"
	importName   = "from-cluster-a"
	// samplePool is the storage pool of config/samples' LinstorSatelliteConfiguration.
	samplePool = "file-thin"
	nodes      = 3
	// volumeResource's volume 0 gets known bytes in cluster A; cluster B restores it from
	// LINSTOR's shipped backup into restoredResource on restoreNode.
	volumeResource   = "pvc-dr-db"
	restoredResource = "pvc-dr-db-restored"
	restoreNode      = "node-1"
	// fullVolumeBackups is the schedule's LINSTOR cron for full volume backups: nightly
	// at 2:00 on the emulator's clock, which the test moves to that hour.
	fullVolumeBackups = "0 2 * * *"

	timeout = 3 * time.Minute
	tick    = 250 * time.Millisecond
)

var ctx = context.Background()

// timeline logs each step with the seconds since the test started; the closing note of
// issue #32 quotes it.
type timeline struct {
	t     *testing.T
	start time.Time
	lines []string
}

func (tl *timeline) mark(format string, args ...any) {
	line := fmt.Sprintf("%6.1fs %s", time.Since(tl.start).Seconds(), fmt.Sprintf(format, args...))
	tl.lines = append(tl.lines, line)
	tl.t.Log("timeline: " + line)
}

// startCluster starts a simulated cluster with the operator running, stopped when the
// test ends (stopping twice is harmless).
func startCluster(t *testing.T, name string) *sim.Env {
	t.Helper()
	root := envtest.RepoRoot()
	started.processDirs = append(started.processDirs, filepath.Join(kwokcluster.Workdir(root), "clusters", name))
	env, err := sim.Start(ctx, sim.Options{Root: root, Name: name, Namespace: namespace, LinstorPoll: 2 * time.Second})
	if err != nil {
		t.Fatalf("starting the simulated cluster %s: %v", name, err)
	}
	started.addresses = append(started.addresses, env.Addresses()...)
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping cluster %s: %v", name, err)
		}
	})
	if err := env.StartOperator(); err != nil {
		t.Fatalf("starting the operator in %s: %v", name, err)
	}
	return env
}

// stopCluster stops everything of env, its etcd included, and waits until none of its
// processes runs and none of its ports answers.
func stopCluster(g Gomega, env *sim.Env) {
	addrs := env.Addresses()
	g.Expect(env.Stop()).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Cluster.Processes()).To(BeEmpty())
		g.Expect(envtest.Listening(addrs)).To(BeEmpty())
	}, 15*time.Second, tick).Should(Succeed())
}

func linstorCluster(g Gomega, c client.Client) *linstorv1.LinstorCluster {
	lc := &linstorv1.LinstorCluster{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: clusterName}, lc)).To(Succeed())
	return lc
}

func conditionStatus(conds []metav1.Condition, typ string) metav1.ConditionStatus {
	if c := meta.FindStatusCondition(conds, typ); c != nil {
		return c.Status
	}
	return "Missing"
}

// availableWithPools: the LinstorCluster is Available with every satellite Ready and
// the samples' pool on each (LINSTOR accepts pools only once a satellite is ONLINE).
func availableWithPools(g Gomega, c client.Client) {
	lc := linstorCluster(g, c)
	g.Expect(conditionStatus(lc.Status.Conditions, linstorv1.ConditionAvailable)).To(Equal(metav1.ConditionTrue), "%+v", lc.Status.Conditions)
	g.Expect(lc.Status.Satellites).To(Equal(linstorv1.SatelliteCounts{Ready: nodes, Total: nodes}))
	var sats linstorv1.LinstorSatelliteList
	g.Expect(c.List(ctx, &sats, client.InNamespace(namespace))).To(Succeed())
	g.Expect(sats.Items).To(HaveLen(nodes))
	for _, sat := range sats.Items {
		g.Expect(sat.Status.StoragePools).To(ContainElement(HaveField("Name", samplePool)), "satellite %s", sat.Name)
	}
}

// notDegradedAndUnlocked: nothing is wrong with the LinstorCluster (its Degraded
// condition names a lost master passphrase, for one), and LINSTOR's master passphrase
// is entered, so encrypted volumes open.
func notDegradedAndUnlocked(g Gomega, env *sim.Env) {
	lc := linstorCluster(g, env.Client)
	cond := meta.FindStatusCondition(lc.Status.Conditions, linstorv1.ConditionDegraded)
	g.Expect(cond).NotTo(BeNil())
	g.Expect(cond.Status).To(Equal(metav1.ConditionFalse), "Degraded: %s: %s", cond.Reason, cond.Message)
	linstorClient, err := linstor.NewClient(env.LinstorURL, nil)
	g.Expect(err).NotTo(HaveOccurred())
	status, err := linstor.GetPassphraseStatus(ctx, linstorClient, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(status).To(Equal(linstor.PassphraseUnlocked), "LINSTOR's master passphrase")
}

// The runbook's steps 1 and 2: the key and credential Secrets and the target.
func createSecretsAndTarget(g Gomega, c client.Client, srv *s3server.Server, identity string) {
	g.Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: keySecret, Namespace: namespace},
		StringData: map[string]string{"identity": identity}})).To(Succeed())
	g.Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s3Secret, Namespace: namespace},
		StringData: map[string]string{linstorv1.S3AccessKeyIDKey: srv.AccessKey, linstorv1.S3SecretAccessKeyKey: srv.SecretKey}})).To(Succeed())
	g.Expect(c.Create(ctx, &linstorv1.LinstorBackupTarget{ObjectMeta: metav1.ObjectMeta{Name: targetName, Namespace: namespace},
		Spec: linstorv1.LinstorBackupTargetSpec{
			S3: linstorv1.S3Location{Endpoint: srv.Endpoint, Bucket: bucket, Prefix: prefix, PathStyle: true,
				CredentialsSecretRef: linstorv1.LocalSecretReference{Name: s3Secret}},
			Encryption: linstorv1.BackupEncryption{KeySecretRef: linstorv1.LocalSecretReference{Name: keySecret}}}})).To(Succeed())
}

func availableTarget(g Gomega, c client.Client) *linstorv1.LinstorBackupTarget {
	target := &linstorv1.LinstorBackupTarget{}
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: targetName}, target)).To(Succeed())
		cond := meta.FindStatusCondition(target.Status.Conditions, linstorv1.ConditionAvailable)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), cond.Message)
	}, timeout, tick).Should(Succeed())
	return target
}

// volumeRemote is the LINSTOR S3 remote the operator registers for the target.
var volumeRemote = volumebackup.Name(targetName)

// volumeBackupsConfigured: the schedule is Configured (the operator registered the
// target's bucket as LINSTOR's S3 remote, declared LINSTOR's schedule and enabled it
// for every resource), and LINSTOR says so.
func volumeBackupsConfigured(g Gomega, env *sim.Env, lc *lapi.Client) *metav1.Condition {
	s := &linstorv1.LinstorBackupSchedule{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: scheduleName}, s)).To(Succeed())
	cond := meta.FindStatusCondition(s.Status.Conditions, linstorv1.ConditionConfigured)
	g.Expect(cond).NotTo(BeNil())
	g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), cond.Message)
	g.Expect(cond.ObservedGeneration).To(Equal(s.Generation))
	g.Expect(remoteNames(g, lc)).To(ContainElement(volumeRemote))
	props, err := lc.Controller.GetProps(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(props).To(HaveKeyWithValue(linstor.ScheduleEnabledProp(volumeRemote, volumebackup.Name(scheduleName)), "true"))
	return cond
}

func remoteNames(g Gomega, lc *lapi.Client) []string {
	remotes, err := lc.Remote.GetAllS3(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	out := []string{}
	for _, r := range remotes {
		out = append(out, r.RemoteName)
	}
	return out
}

// nudge makes the operator look at LINSTOR's shipping now: it does so once a minute,
// and on any change of the schedule, such as an annotation.
func nudge(g Gomega, c client.Client) {
	s := &linstorv1.LinstorBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: scheduleName, Namespace: namespace}}
	g.Expect(envtest.Update(ctx, c, s, func(s *linstorv1.LinstorBackupSchedule) {
		metav1.SetMetaDataAnnotation(&s.ObjectMeta, "test.linstor.io/wake", time.Now().Format(time.RFC3339Nano))
	})).To(Succeed())
}

// lastShipped is status.volumes' row of a resource (nil: not listed).
func lastShipped(g Gomega, c client.Client, resource string) *linstorv1.ResourceBackupStatus {
	s := &linstorv1.LinstorBackupSchedule{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: scheduleName}, s)).To(Succeed())
	if s.Status.Volumes == nil {
		return nil
	}
	for i := range s.Status.Volumes.Resources {
		if s.Status.Volumes.Resources[i].Name == resource {
			return &s.Status.Volumes.Resources[i]
		}
	}
	return nil
}

// encodedDatabase is LINSTOR's database as a backup encodes it, and its checksum.
func encodedDatabase(g Gomega, c client.Client) (*dbbackup.Dump, []byte, string) {
	d, err := dbbackup.Take(ctx, c)
	g.Expect(err).NotTo(HaveOccurred())
	data, err := d.Encode()
	g.Expect(err).NotTo(HaveOccurred())
	return d, data, dbbackup.Checksum(data)
}

// placements lists LINSTOR's resources as "resource@node", sorted.
func placements(g Gomega, lc *lapi.Client) []string {
	view, err := lc.Resources.GetResourceView(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, r := range view {
		out = append(out, r.Name+"@"+r.NodeName)
	}
	sort.Strings(out)
	return out
}

// objectDiff names the objects of got that differ from want's.
func objectDiff(want, got *dbbackup.Dump) string {
	index := func(d *dbbackup.Dump) map[string]string {
		out := map[string]string{}
		for _, o := range d.Objects {
			md, _ := o["metadata"].(map[string]any)
			raw, _ := json.Marshal(o)
			out[fmt.Sprintf("%v/%v", o["kind"], md["name"])] = string(raw)
		}
		return out
	}
	w, h := index(want), index(got)
	var diff []string
	for k, v := range w {
		if h[k] == "" {
			diff = append(diff, "missing "+k)
		} else if h[k] != v {
			diff = append(diff, fmt.Sprintf("changed %s:\n  backup   %s\n  restored %s", k, v, h[k]))
		}
	}
	for k, v := range h {
		if w[k] == "" {
			diff = append(diff, "added "+k+": "+v)
		}
	}
	sort.Strings(diff)
	return fmt.Sprintf("%d objects in the backup, %d restored; %d differ:\n%s", len(w), len(h), len(diff), strings.Join(diff, "\n"))
}

// controllerStart is what was seen of LINSTOR's controller first starting: when the
// Deployment was first scaled up and its first pod appeared (zero: not yet), and what the
// LinstorCluster's status.restore said at each moment (read fresh from the API server).
type controllerStart struct {
	scaledUp, firstPod                  time.Time
	restoreAtScaleUp, restoreAtFirstPod string
	firstPodName                        string
}

// controllerStarts watches LINSTOR's controller Deployment and pods in a cluster.
type controllerStarts struct {
	mu   sync.Mutex
	seen controllerStart
}

func watchControllerStarts(t *testing.T, env *sim.Env) *controllerStarts {
	t.Helper()
	wc, err := client.NewWithWatch(env.Cluster.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	selector := client.MatchingLabels{names.LabelName: names.ControllerName}
	pods, err := wc.Watch(ctx, &corev1.PodList{}, client.InNamespace(namespace), selector)
	if err != nil {
		t.Fatal(err)
	}
	deployments, err := wc.Watch(ctx, &appsv1.DeploymentList{}, client.InNamespace(namespace), selector)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pods.Stop(); deployments.Stop() })
	restorePhase := func() string {
		lc := &linstorv1.LinstorCluster{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: clusterName}, lc); err != nil {
			return "unknown: " + err.Error()
		}
		if lc.Status.Restore == nil {
			return "none"
		}
		return lc.Status.Restore.Phase
	}
	s := &controllerStarts{}
	go func() {
		for ev := range pods.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			s.mu.Lock()
			if s.seen.firstPod.IsZero() {
				s.seen.firstPod, s.seen.firstPodName, s.seen.restoreAtFirstPod = time.Now(), pod.Name, restorePhase()
			}
			s.mu.Unlock()
		}
	}()
	go func() {
		for ev := range deployments.ResultChan() {
			d, ok := ev.Object.(*appsv1.Deployment)
			if !ok || d.Spec.Replicas == nil || *d.Spec.Replicas == 0 {
				continue
			}
			s.mu.Lock()
			if s.seen.scaledUp.IsZero() {
				s.seen.scaledUp, s.seen.restoreAtScaleUp = time.Now(), restorePhase()
			}
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *controllerStarts) snapshot() controllerStart {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen
}

// The disaster recovery of docs/disaster-recovery.md, step by step, on two simulated
// clusters and a real S3 server: cluster A, with volumes, backs its database up to the
// bucket on a schedule, and LINSTOR ships a volume's data there on the schedule's
// volumes cron; cluster A is stopped whole, its etcd included, so nothing of it is left
// but the bucket; cluster B, given the bucket, the credentials and the key, imports the
// backup it finds listed and restores it before its LINSTOR first starts. LINSTOR B
// runs on a database identical to the backup, object for object, and answers with
// cluster A's resources; with the schedule applied again, the operator registers the
// bucket in LINSTOR B, and LINSTOR B restores the volume from it with the bytes cluster
// A wrote.
func TestNewClusterRestoresTheLostClustersBackupFromTheBucket(t *testing.T) {
	g := NewWithT(t)
	tl := &timeline{t: t, start: time.Now()}
	defer func() { t.Logf("disaster recovery timeline:\n%s", strings.Join(tl.lines, "\n")) }()
	root := envtest.RepoRoot()

	// The bucket outlives both clusters.
	srv, err := s3server.Start(ctx, s3server.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	started.addresses, started.processDirs = append(started.addresses, srv.Host), append(started.processDirs, srv.Dir)
	t.Cleanup(func() { _ = srv.Stop() })
	g.Expect(srv.CreateBucket(ctx, bucket)).To(Succeed())
	id, err := age.GenerateX25519Identity()
	g.Expect(err).NotTo(HaveOccurred())
	identity := id.String() // the key the admin keeps outside the cluster
	tl.mark("S3 server (versitygw) up, bucket %s created", bucket)

	// Cluster A, with volumes.
	a := startCluster(t, "linstor-dr-a")
	tl.mark("cluster A: kwok cluster and operator up")
	g.Expect(kwokcluster.AddNodes(ctx, a.Client, "node", 0, nodes)).To(Succeed())
	g.Expect(sim.ApplySamples(ctx, a.Client, root, namespace)).To(Succeed())
	g.Eventually(func(g Gomega) { availableWithPools(g, a.Client) }, timeout, tick).Should(Succeed())
	g.Eventually(func(g Gomega) { notDegradedAndUnlocked(g, a) }, timeout, tick).Should(Succeed())
	tl.mark("cluster A: LinstorCluster Available, %d/%d satellites, pools created, master passphrase set", nodes, nodes)
	for _, p := range []struct {
		rd, node string
		inUse    bool
	}{{"pvc-dr-db", "node-0", true}, {"pvc-dr-db", "node-1", false}, {"pvc-dr-logs", "node-2", true}} {
		g.Expect(a.Emulator.PlaceResource(p.rd, p.node, samplePool, p.inUse)).To(Succeed())
	}
	lcA, err := linstor.NewClient(a.LinstorURL, nil)
	g.Expect(err).NotTo(HaveOccurred())
	resourcesA := placements(g, lcA)
	g.Expect(resourcesA).To(Equal([]string{"pvc-dr-db@node-0", "pvc-dr-db@node-1", "pvc-dr-logs@node-2"}))
	// LINSTOR writes its database as it runs: the backup must find the volumes in it.
	g.Eventually(func(g Gomega) {
		d, _, _ := encodedDatabase(g, a.Client)
		objects, err := json.Marshal(d.Objects)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(strings.ToUpper(string(objects))).To(And(ContainSubstring("PVC-DR-DB"), ContainSubstring("PVC-DR-LOGS")))
	}, timeout, tick).Should(Succeed())
	tl.mark("cluster A: LINSTOR holds %v, written to its database", resourcesA)
	// Known bytes on a volume, for the restore in cluster B to compare.
	volumeData := make([]byte, 256<<10)
	_, err = rand.Read(volumeData)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Emulator.WriteVolumeData(volumeResource, 0, volumeData)).To(Succeed())
	volumeSum := sha256.Sum256(volumeData)
	tl.mark("cluster A: %d bytes written to %s volume 0 (sha256 %x)", len(volumeData), volumeResource, volumeSum[:8])
	// LINSTOR's scheduler runs on the emulator's clock: real time until the test moves
	// it on to the night (it never goes back, so satellites stay connected).
	var clockShift atomic.Int64
	a.Emulator.SetClock(func() time.Time { return time.Now().Add(time.Duration(clockShift.Load())) })
	clusterA := linstorCluster(g, a.Client)
	// The admin keeps LINSTOR's master passphrase with the backup key (runbook step 1).
	var passphraseA corev1.Secret
	g.Expect(a.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: linstorcluster.DefaultPassphraseSecret}, &passphraseA)).To(Succeed())
	keptPassphrase := passphraseA.Data[linstorcluster.PassphraseKey]
	g.Expect(keptPassphrase).NotTo(BeEmpty())

	// Steps 1 to 3 of the runbook: the key, the credentials, the target, the schedule.
	createSecretsAndTarget(g, a.Client, srv, identity)
	availableTarget(g, a.Client)
	tl.mark("cluster A: LinstorBackupTarget %s Available", targetName)
	g.Expect(a.Client.Create(ctx, &linstorv1.LinstorBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: scheduleName, Namespace: namespace},
		Spec: linstorv1.LinstorBackupScheduleSpec{ClusterRef: linstorv1.ClusterReference{Name: clusterName},
			TargetRef: &linstorv1.BackupTargetReference{Name: targetName}, Schedule: "@every 15s",
			Volumes: &linstorv1.VolumeBackupSpec{FullSchedule: fullVolumeBackups}}})).To(Succeed())
	tl.mark("cluster A: LinstorBackupSchedule %s created (@every 15s; volumes: full %q)", scheduleName, fullVolumeBackups)
	var taken linstorv1.LinstorBackup
	g.Eventually(func(g Gomega) {
		var list linstorv1.LinstorBackupList
		g.Expect(a.Client.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{names.LabelBackupSchedule: scheduleName})).To(Succeed())
		g.Expect(list.Items).NotTo(BeEmpty())
		sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
		taken = list.Items[0]
		g.Expect(taken.Status.Phase).To(Equal(linstorv1.BackupCompleted), "%s: %s", taken.Name, taken.Status.Message)
	}, timeout, tick).Should(Succeed())
	g.Expect(taken.Status.Stored).NotTo(BeNil(), "a scheduled backup to a target is kept in the bucket")
	g.Expect(taken.Status.ControllerStopped).NotTo(BeNil())
	tl.mark("cluster A: scheduled LinstorBackup %s Completed: %d CRDs, %d objects, %s, LINSTOR stopped for %s; in the bucket as %s",
		taken.Name, taken.Status.CRDs, taken.Status.Objects, taken.Status.Checksum, taken.Status.ControllerStopped.Duration, taken.Status.Stored.ID)
	// The schedule is suspended so that the bucket holds exactly the backups this test
	// knows (a run under way when the cluster dies is never listed: offsite_faults).
	sched := &linstorv1.LinstorBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: scheduleName, Namespace: namespace}}
	g.Expect(envtest.Update(ctx, a.Client, sched, func(s *linstorv1.LinstorBackupSchedule) { s.Spec.Suspend = true })).To(Succeed())
	var completedA map[string]string // bucket id -> checksum, of every backup A completed
	g.Eventually(func(g Gomega) {
		var list linstorv1.LinstorBackupList
		g.Expect(a.Client.List(ctx, &list, client.InNamespace(namespace))).To(Succeed())
		completedA = map[string]string{}
		for _, b := range list.Items {
			g.Expect(b.Status.Phase).To(BeElementOf(linstorv1.BackupCompleted, linstorv1.BackupFailed), "%s is under way", b.Name)
			if b.Status.Phase == linstorv1.BackupCompleted && b.Status.Stored != nil {
				completedA[b.Status.Stored.ID] = b.Status.Checksum
			}
		}
	}, timeout, tick).Should(Succeed())
	_, _, sumA := encodedDatabase(g, a.Client)
	tl.mark("cluster A: schedule suspended, no backup under way; %d Completed in the bucket; A's database now %s (the backup's %s)",
		len(completedA), sumA, taken.Status.Checksum)

	// Runbook section 5: LINSTOR ships the volumes on the schedule's volumes cron
	// (spec.suspend holds the database backups only). While a database backup ran,
	// LINSTOR was not written to: the operator configures it again at its next look.
	configuredA := &metav1.Condition{}
	g.Eventually(func(g Gomega) {
		nudge(g, a.Client)
		configuredA = volumeBackupsConfigured(g, a, lcA)
	}, timeout, time.Second).Should(Succeed())
	// The backup restarted LINSTOR's controller: it ships only once the operator has
	// entered the master passphrase again (an S3 remote's keys are encrypted with it).
	g.Eventually(func(g Gomega) { notDegradedAndUnlocked(g, a) }, timeout, tick).Should(Succeed())
	tl.mark("cluster A: volume backups Configured, master passphrase entered: %s", configuredA.Message)
	now := time.Now()
	night := time.Date(now.Year(), now.Month(), now.Day(), 2, 0, 1, 0, now.Location())
	if !night.After(now) {
		night = night.AddDate(0, 0, 1)
	}
	clockShift.Store(int64(night.Sub(now)))
	shipments := a.Emulator.RunDueSchedules(ctx)
	g.Expect(shipments).To(BeNumerically(">=", 1))
	g.Expect(a.Emulator.WaitForBackups(ctx)).To(Succeed())
	inBucket, err := lcA.Backup.GetAll(ctx, volumeRemote, volumeResource, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inBucket.Linstor).To(ContainElement(HaveField("Success", true)), "LINSTOR A lists %+v in the bucket for %s", inBucket.Linstor, volumeResource)
	var shipped *linstorv1.ResourceBackupStatus
	g.Eventually(func(g Gomega) {
		nudge(g, a.Client)
		shipped = lastShipped(g, a.Client, volumeResource)
		g.Expect(shipped).NotTo(BeNil(), "status.volumes does not list %s", volumeResource)
		g.Expect(shipped.LastShipped).NotTo(BeNil(), "status.volumes: %s not shipped", volumeResource)
		g.Expect(shipped.LastIncremental).To(BeFalse())
	}, timeout, time.Second).Should(Succeed())
	tl.mark("cluster A: emulator clock moved to %s: LINSTOR shipped %d resources to the bucket; status.volumes: %s last shipped %s (full)",
		night.Format("15:04:05"), shipments, volumeResource, shipped.LastShipped.Format(time.RFC3339))
	// The admin keeps the schedule with the cluster's other manifests.
	keptSchedule := &linstorv1.LinstorBackupSchedule{}
	g.Expect(a.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: scheduleName}, keptSchedule)).To(Succeed())

	// The disaster: cluster A and everything in it are gone.
	stopCluster(g, a)
	tl.mark("cluster A stopped whole: no process, no port left; only the bucket remains")

	// Cluster B: the operator installed and the namespace (sim.Start), the same machines.
	b := startCluster(t, "linstor-dr-b")
	g.Expect(kwokcluster.AddNodes(ctx, b.Client, "node", 0, nodes)).To(Succeed())
	tl.mark("cluster B: kwok cluster and operator up, %d nodes", nodes)
	// Step 2: the Secrets with the key and the master passphrase kept, and the target.
	g.Expect(b.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: linstorcluster.DefaultPassphraseSecret, Namespace: namespace},
		Data: map[string][]byte{linstorcluster.PassphraseKey: keptPassphrase}})).To(Succeed())
	createSecretsAndTarget(g, b.Client, srv, identity)
	// Step 3: the backup to restore, read from the target's status as a user would.
	var chosen linstorv1.StoredBackup
	g.Eventually(func(g Gomega) {
		target := availableTarget(g, b.Client)
		g.Expect(target.Status.Backups).NotTo(BeEmpty())
		chosen = target.Status.Backups[0]
	}, timeout, tick).Should(Succeed())
	g.Expect(chosen.ClusterUID).To(Equal(string(clusterA.UID)), "the newest backup listed is not cluster A's")
	wantChecksum, known := completedA[chosen.ID]
	g.Expect(known).To(BeTrue(), "the target lists %s, which cluster A never completed (A completed %v)", chosen.ID, completedA)
	tl.mark("cluster B: target Available, lists %s (cluster %s, LINSTOR %s)", chosen.ID, chosen.Cluster, chosen.LinstorVersion)

	// Step 4: the import and the LinstorCluster naming it, applied together.
	starts := watchControllerStarts(t, b)
	wc, err := client.NewWithWatch(b.Cluster.Config, client.Options{Scheme: b.Client.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	restores, err := wc.Watch(ctx, &linstorv1.LinstorClusterList{}, client.InNamespace(namespace))
	g.Expect(err).NotTo(HaveOccurred())
	defer restores.Stop()
	g.Expect(b.Client.Create(ctx, &linstorv1.LinstorBackup{ObjectMeta: metav1.ObjectMeta{Name: importName, Namespace: namespace},
		Spec: linstorv1.LinstorBackupSpec{ClusterRef: linstorv1.ClusterReference{Name: clusterName},
			TargetRef: &linstorv1.BackupTargetReference{Name: targetName}, ImportFrom: chosen.ID}})).To(Succeed())
	g.Expect(sim.ApplySamples(ctx, b.Client, root, namespace, func(u *unstructured.Unstructured) {
		if u.GetKind() == "LinstorCluster" {
			g.Expect(unstructured.SetNestedField(u.Object, importName, "spec", "database", "restoreFrom")).To(Succeed())
		}
	})).To(Succeed())
	tl.mark("cluster B: LinstorBackup %s (importFrom %s) and LinstorCluster (restoreFrom %s) applied", importName, chosen.ID, importName)

	// Step 5: the import completes, the restore ends Restored; every phase is seen.
	var phases []string
	var final *linstorv1.RestoreStatus
	deadline := time.After(timeout)
	importDone := false
	poll := time.NewTicker(tick)
	defer poll.Stop()
	for final == nil {
		select {
		case ev, ok := <-restores.ResultChan():
			g.Expect(ok).To(BeTrue(), "the watch of the LinstorCluster ended")
			lc, isCluster := ev.Object.(*linstorv1.LinstorCluster)
			if !isCluster || lc.Status.Restore == nil {
				continue
			}
			r := lc.Status.Restore
			if len(phases) == 0 || phases[len(phases)-1] != r.Phase {
				phases = append(phases, r.Phase)
				tl.mark("cluster B: status.restore %s: %s", r.Phase, r.Message)
			}
			if r.Phase == lifecycle.RestoreRestored || r.Phase == lifecycle.RestoreFailed {
				final = r
			}
		case <-poll.C:
			if importDone {
				continue
			}
			imp := &linstorv1.LinstorBackup{}
			if b.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: importName}, imp) == nil && imp.Status.Phase == linstorv1.BackupCompleted {
				importDone = true
				tl.mark("cluster B: import %s Completed: %s", importName, imp.Status.Message)
			}
		case <-deadline:
			lc := linstorCluster(g, b.Client)
			t.Fatalf("the restore did not end within %s; phases %v; status.restore %+v; conditions %+v", timeout, phases, lc.Status.Restore, lc.Status.Conditions)
		}
	}
	g.Expect(final.Phase).To(Equal(lifecycle.RestoreRestored), final.Message)
	g.Expect(phases).To(ContainElement(lifecycle.RestoreRestoring))
	g.Expect(phases).NotTo(ContainElement(lifecycle.RestoreAwaitingConfirmation), "a new cluster's empty database asked for a confirmation")
	imported := &linstorv1.LinstorBackup{}
	g.Expect(b.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: importName}, imported)).To(Succeed())
	g.Expect(imported.Status.Phase).To(Equal(linstorv1.BackupCompleted), imported.Status.Message)
	g.Expect(imported.Status.Checksum).To(Equal(wantChecksum), "the import is not the backup cluster A took")
	g.Expect(imported.Status.Stored.ClusterUID).To(Equal(string(clusterA.UID)))

	// LINSTOR's controller never ran before its database was restored: no pod of it
	// existed while status.restore said anything but Restored.
	g.Eventually(func(g Gomega) {
		g.Expect(starts.snapshot().firstPod.IsZero()).To(BeFalse(), "no LINSTOR controller pod after the restore")
	}, timeout, tick).Should(Succeed())
	seen := starts.snapshot()
	g.Expect(seen.restoreAtFirstPod).To(Equal(lifecycle.RestoreRestored), "LINSTOR's controller pod %s appeared while status.restore was %s", seen.firstPodName, seen.restoreAtFirstPod)
	// The Deployment is scaled in the reconcile that ends the restore, before its status
	// patch lands: Restoring may still be read then, anything earlier may not.
	g.Expect(seen.restoreAtScaleUp).To(BeElementOf(lifecycle.RestoreRestoring, lifecycle.RestoreRestored), "LINSTOR's controller was scaled up while status.restore was %s", seen.restoreAtScaleUp)
	tl.mark("cluster B: LINSTOR controller Deployment scaled up (status.restore then: %s), first pod %s (status.restore then: %s)",
		seen.restoreAtScaleUp, seen.firstPodName, seen.restoreAtFirstPod)

	// LINSTOR B answers with cluster A's resources; the cluster becomes Available.
	lcB, err := linstor.NewClient(b.LinstorURL, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		g.Expect(placements(g, lcB)).To(Equal(resourcesA))
	}, timeout, tick).Should(Succeed())
	tl.mark("cluster B: LINSTOR answers with cluster A's resources %v", resourcesA)
	g.Eventually(func(g Gomega) { availableWithPools(g, b.Client) }, timeout, tick).Should(Succeed())
	g.Expect(linstorCluster(g, b.Client).Status.Version).To(Equal(chosen.LinstorVersion))
	g.Eventually(func(g Gomega) { notDegradedAndUnlocked(g, b) }, 30*time.Second, tick).Should(Succeed())
	tl.mark("cluster B: LinstorCluster Available, not Degraded, %d/%d satellites, LINSTOR %s, master passphrase entered", nodes, nodes, chosen.LinstorVersion)

	// The database LINSTOR B runs on is the backup, object for object: its encoding
	// has the backup's checksum. The operator is stopped first, so nothing writes while
	// it is read.
	g.Expect(b.StopOperator()).To(Succeed())
	var restoredSum string
	var restoredCRDs, restoredObjects int
	g.Eventually(func(g Gomega) {
		var restored *dbbackup.Dump
		restored, _, restoredSum = encodedDatabase(g, b.Client)
		restoredCRDs, restoredObjects = restored.Counts()
		g.Expect(restoredSum).To(Equal(wantChecksum), func() string {
			backup, err := dbbackup.Load(ctx, b.Client, imported)
			if err != nil {
				return "reading the backup from the bucket: " + err.Error()
			}
			return objectDiff(backup, restored)
		})
	}, 30*time.Second, tick).Should(Succeed())
	g.Expect([]int{restoredCRDs, restoredObjects}).To(Equal([]int{int(taken.Status.CRDs), int(taken.Status.Objects)}))
	tl.mark("compared: cluster B's database %d CRDs, %d objects, %s = the backup of cluster A %d CRDs, %d objects, %s",
		restoredCRDs, restoredObjects, restoredSum, taken.Status.CRDs, taken.Status.Objects, wantChecksum)

	// Step 6: the schedule applied again as cluster A had it (suspended, as the test left
	// it, so the bucket keeps only the backups it knows); the operator registers the
	// bucket in LINSTOR B again (the emulator keeps remotes outside the database tables,
	// so LINSTOR B has none until then).
	g.Expect(b.StartOperator()).To(Succeed())
	remotesBefore := remoteNames(g, lcB)
	g.Expect(b.Client.Create(ctx, &linstorv1.LinstorBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: scheduleName, Namespace: namespace},
		Spec: keptSchedule.Spec})).To(Succeed())
	tl.mark("cluster B: operator running again; LinstorBackupSchedule %s applied as cluster A had it (volumes: full %q); LINSTOR B's S3 remotes: %v",
		scheduleName, keptSchedule.Spec.Volumes.FullSchedule, remotesBefore)
	configuredB := &metav1.Condition{}
	g.Eventually(func(g Gomega) { configuredB = volumeBackupsConfigured(g, b, lcB) }, timeout, tick).Should(Succeed())
	tl.mark("cluster B: volume backups Configured, LINSTOR B's S3 remotes: %v: %s", remoteNames(g, lcB), configuredB.Message)

	// Section 5: the volume restored from its backup in the bucket, through LINSTOR B.
	listed, err := lcB.Backup.GetAll(ctx, volumeRemote, volumeResource, "")
	g.Expect(err).NotTo(HaveOccurred())
	var backupIDs []string
	for id, bk := range listed.Linstor {
		g.Expect(bk.Restorable).To(BeTrue(), "backup %s", id)
		backupIDs = append(backupIDs, id)
	}
	g.Expect(backupIDs).To(HaveLen(1), "LINSTOR B lists %v in the bucket for %s", backupIDs, volumeResource)
	g.Expect(lcB.Backup.Restore(ctx, volumeRemote, lapi.BackupRestoreRequest{SrcRscName: volumeResource, TargetRscName: restoredResource, NodeName: restoreNode})).To(Succeed())
	g.Expect(b.Emulator.WaitForBackups(ctx)).To(Succeed())
	g.Expect(placements(g, lcB)).To(ContainElement(restoredResource + "@" + restoreNode))
	restoredData, err := b.Emulator.ReadVolumeData(restoreNode, restoredResource, 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bytes.Equal(restoredData, volumeData)).To(BeTrue(), "%s volume 0: %d bytes restored differ from the %d cluster A wrote", restoredResource, len(restoredData), len(volumeData))
	restoredVolumeSum := sha256.Sum256(restoredData)
	tl.mark("compared: %s volume 0 on %s, restored by LINSTOR B from backup %s, %d bytes, sha256 %x = what cluster A wrote to %s",
		restoredResource, restoreNode, backupIDs[0], len(restoredData), restoredVolumeSum[:8], volumeResource)
}
