package olm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/internal/kwokcluster"
	"github.com/linstor-operator/linstor-operator/internal/runbundle"
)

// make test-images sets these from the images it built and pushed.
const (
	// catalogConfigsEnv is the catalog image's /configs: its file-based catalog, whose
	// bundles reference bundle images.
	catalogConfigsEnv = "OLM_CATALOG_CONFIGS"
	// bundleImagesEnv lists the pushed bundle images' contents, "image=dir" separated by
	// spaces: what a kubelet would pull for each.
	bundleImagesEnv = "OLM_BUNDLE_IMAGES"
	// unpackRefLabel marks OLM's bundle unpack Jobs; its value names their ConfigMap.
	unpackRefLabel = "operatorframework.io/bundle-unpack-ref"
)

// TestInstallFromTheCatalogImage installs this tree's release as a cluster installs from
// a published catalog: opm serves the catalog image's catalog, whose bundles are image
// references, so OLM unpacks the bundle image with a Job (opm alpha bundle extract into a
// ConfigMap) before it installs. kwok runs no container and the cluster no job
// controller: the test plays the Job, running its pod's extract command with the pulled
// bundle image's content, then completing it. The operator then runs as the pod OLM made
// (make test-images gives the binary taken out of the operator image) and serves the
// webhooks OLM wired. Run by make test-images only.
func TestInstallFromTheCatalogImage(t *testing.T) {
	configs, images := os.Getenv(catalogConfigsEnv), os.Getenv(bundleImagesEnv)
	if configs == "" || images == "" {
		t.Skipf("needs %s and %s: make test-images runs it with the images it built", catalogConfigsEnv, bundleImagesEnv)
	}
	g := newG(t)
	c := world.client
	bundleDirs := map[string]string{}
	for _, pair := range strings.Fields(images) {
		image, dir, ok := strings.Cut(pair, "=")
		g.Expect(ok).To(BeTrue(), "%s: %q is not image=dir", bundleImagesEnv, pair)
		bundleDirs[image] = dir
	}

	g.Expect(kwokcluster.AddNodes(ctx, c, "node", 0, 3)).To(Succeed())
	kubelet := startUnpackKubelet(t, bundleDirs)
	opts := runBundleOptions(logWriter{t})
	opts.BundleDir = filepath.Join(world.root, "bundle")
	opts.CatalogDir = configs
	start := time.Now()
	res, err := runbundle.Install(ctx, opts)
	g.Expect(err).NotTo(HaveOccurred(), "the unpack Jobs: %s\nthe test's unpacking: %v", describeUnpackJobs(), kubelet.failures())
	g.Expect(kubelet.failures()).To(BeEmpty())
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: res.CSV}, csv)).To(Succeed())
	g.Expect(csv.Status.Phase).To(Equal(operatorsv1alpha1.CSVPhaseSucceeded))

	// OLM took the CSV from the bundle image it unpacked, not from the catalog.
	var plans operatorsv1alpha1.InstallPlanList
	g.Expect(c.List(ctx, &plans, client.InNamespace(namespace))).To(Succeed())
	var lookups []string
	for _, p := range plans.Items {
		for _, l := range p.Status.BundleLookups {
			if l.Identifier == res.CSV {
				lookups = append(lookups, l.Path)
			}
		}
	}
	g.Expect(lookups).To(HaveLen(1), "one bundle lookup of %s in the InstallPlans", res.CSV)
	g.Expect(bundleDirs).To(HaveKey(lookups[0]), "OLM looked %s up by a pushed bundle image", res.CSV)
	g.Expect(kubelet.unpackedImages()).To(ContainElement(lookups[0]))
	t.Logf("%6.1fs after subscribing: %s Succeeded from the catalog image, its bundle unpacked from image %s",
		time.Since(start).Seconds(), res.CSV, lookups[0])

	op, _ := startRelease(t, csv)
	installed.op = op
	t.Cleanup(func() { installed.op = nil })
	g.Expect(op.image).To(Equal(csv.Annotations["containerImage"]))

	// The webhooks OLM wired reach the operator process: a cluster outside the operator's
	// namespace is refused by its validating webhook, and a v1alpha1 read of a v1 cluster
	// goes through its conversion webhook.
	elsewhere := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "linstor"}}
	err = c.Create(ctx, elsewhere)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring(`admission webhook "vlinstorcluster.linstor.io" denied the request`))
	g.Expect(err.Error()).To(ContainSubstring(fmt.Sprintf("a LinstorCluster must be created in namespace %q", namespace)))
	cluster := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "linstor"}}
	g.Expect(c.Create(ctx, cluster)).To(Succeed())
	old := &unstructured.Unstructured{}
	old.SetAPIVersion("linstor.io/v1alpha1")
	old.SetKind("LinstorCluster")
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: cluster.Name}, old)).To(Succeed())
	g.Expect(old.GetAPIVersion()).To(Equal("linstor.io/v1alpha1"))
	ended, exitErr := op.proc.exited()
	g.Expect(ended).To(BeFalse(), "the operator exited: %v", exitErr)
	t.Logf("%6.1fs after subscribing: the operator binary %s serves the validating and conversion webhooks through OLM's Service",
		time.Since(start).Seconds(), world.binaries[op.image])
}

// unpackKubelet plays OLM's bundle unpack Jobs: it runs their pod's extract container, as
// its kubelet would, with the content of the bundle image the pod pulls, and completes them.
type unpackKubelet struct {
	bundleDirs map[string]string
	mu         sync.Mutex
	seen       map[string]bool // Jobs handled, namespace/name
	unpacked   []string        // bundle images extracted
	errs       []error
}

func startUnpackKubelet(t *testing.T, bundleDirs map[string]string) *unpackKubelet {
	k := &unpackKubelet{bundleDirs: bundleDirs, seen: map[string]bool{}}
	c, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for c.Err() == nil {
			k.look(c)
			select {
			case <-c.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-stopped })
	return k
}

func (k *unpackKubelet) failures() []error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]error{}, k.errs...)
}

func (k *unpackKubelet) unpackedImages() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string{}, k.unpacked...)
}

func (k *unpackKubelet) look(c context.Context) {
	var jobs batchv1.JobList
	if err := world.client.List(c, &jobs, client.HasLabels{unpackRefLabel}); err != nil {
		return // the next look retries
	}
	for i := range jobs.Items {
		job := &jobs.Items[i]
		key := job.Namespace + "/" + job.Name
		k.mu.Lock()
		seen := k.seen[key]
		k.seen[key] = true
		k.mu.Unlock()
		if seen {
			continue
		}
		image, err := k.unpack(c, job)
		k.mu.Lock()
		if err != nil {
			k.errs = append(k.errs, fmt.Errorf("unpack Job %s: %w", key, err))
		} else {
			k.unpacked = append(k.unpacked, image)
		}
		k.mu.Unlock()
	}
}

// unpack runs the Job pod's extract command: opm alpha bundle extract of the bundle
// image's content (which the pod's init containers copy to /bundle/) into the Job's
// ConfigMap, as the pod's ServiceAccount.
func (k *unpackKubelet) unpack(c context.Context, job *batchv1.Job) (string, error) {
	spec := job.Spec.Template.Spec
	var image string
	for _, ic := range spec.InitContainers {
		if ic.Name == "pull" {
			image = ic.Image
		}
	}
	var extract *corev1.Container
	for i := range spec.Containers {
		if spec.Containers[i].Name == "extract" {
			extract = &spec.Containers[i]
		}
	}
	if image == "" || extract == nil || len(extract.Command) < 4 || extract.Command[0] != "opm" {
		return "", fmt.Errorf("not the pod OLM v0.46 makes (init container pull, container extract running opm): %+v", spec)
	}
	dir, ok := k.bundleDirs[image]
	if !ok {
		return "", fmt.Errorf("its pod pulls %s, which is no pushed bundle image", image)
	}
	args := append([]string{}, extract.Command[1:]...)
	for i := range args {
		if i > 0 && args[i-1] == "-m" && args[i] == "/bundle/" {
			args[i] = dir + "/"
		}
	}
	kubeconfig := filepath.Join(world.work, "unpack-"+job.Name+".kubeconfig")
	if err := writeTokenKubeconfig(job.Namespace, spec.ServiceAccountName, kubeconfig); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(c, world.opm, append(args, "--kubeconfig", kubeconfig)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for _, e := range extract.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	// The container exited 0: the Job succeeded.
	return image, completeJob(c, job)
}

// completeJob writes the job controller's status of a Job whose one pod succeeded. The
// test's cluster runs no job controller (internal/kwokcluster: the test worlds play the
// Jobs, as kwok would complete them whatever their containers did).
func completeJob(c context.Context, job *batchv1.Job) error {
	now := metav1.Now()
	cond := func(t batchv1.JobConditionType) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: batchv1.JobReasonCompletionsReached,
			Message: "Reached expected number of succeeded pods", LastProbeTime: now, LastTransitionTime: now}
	}
	job.Status.StartTime, job.Status.CompletionTime = &now, &now
	job.Status.Active, job.Status.Succeeded = 0, 1
	// The API server wants SuccessCriteriaMet before Complete.
	job.Status.Conditions = append(job.Status.Conditions, cond(batchv1.JobSuccessCriteriaMet), cond(batchv1.JobComplete))
	if err := world.client.Status().Update(c, job); err != nil {
		return fmt.Errorf("completing Job %s: %w", job.Name, err)
	}
	return nil
}

// describeUnpackJobs says where OLM's bundle unpacking stands: the Jobs, their events
// and their ConfigMaps' keys.
func describeUnpackJobs() string {
	var jobs batchv1.JobList
	if err := world.client.List(ctx, &jobs, client.HasLabels{unpackRefLabel}); err != nil {
		return err.Error()
	}
	if len(jobs.Items) == 0 {
		return "none"
	}
	var b strings.Builder
	for _, job := range jobs.Items {
		fmt.Fprintf(&b, "\nJob %s/%s: succeeded %d, conditions %v", job.Namespace, job.Name, job.Status.Succeeded, job.Status.Conditions)
		var events corev1.EventList
		if err := world.client.List(ctx, &events, client.InNamespace(job.Namespace)); err == nil {
			for _, e := range events.Items {
				if e.InvolvedObject.Name == job.Name {
					fmt.Fprintf(&b, "; event %s %s: %s", e.InvolvedObject.Kind, e.Reason, e.Message)
				}
			}
		}
		cm := &corev1.ConfigMap{}
		if err := world.client.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: job.Labels[unpackRefLabel]}, cm); err == nil {
			fmt.Fprintf(&b, "; ConfigMap %s: %d data keys, %d binary", cm.Name, len(cm.Data), len(cm.BinaryData))
		} else {
			fmt.Fprintf(&b, "; ConfigMap: %v", err)
		}
	}
	return b.String()
}

// writeTokenKubeconfig writes a kubeconfig that authenticates as ServiceAccount
// namespace/account with a token from the TokenRequest API.
func writeTokenKubeconfig(ns, account, path string) error {
	_, _, err := tokenKubeconfig(ns, account, path)
	return err
}
