package runbundle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// CatalogSourceName names the CatalogSource run-bundle creates in the install namespace.
	CatalogSourceName = "linstor-operator-run-bundle"
	// OperatorGroupName names the OperatorGroup run-bundle creates when the namespace has none.
	OperatorGroupName = "linstor-operator-run-bundle"
	// CreatedByAnnotation marks the OperatorGroup run-bundle created, the only one
	// cleanup-bundle deletes: an OperatorGroup that was there before serves other operators.
	CreatedByAnnotation = "linstor.io/created-by"
	createdByValue      = "run-bundle"

	pollInterval = time.Second
)

// Options of Install and Cleanup. Cleanup reads only Config, Namespace, Out and StateDir.
type Options struct {
	Config *rest.Config
	// BundleDir is a registry+v1 bundle directory (make bundle writes bundle/).
	BundleDir string
	// Namespace to install into; created if missing.
	Namespace string
	// Channel to subscribe to; empty for the bundle's default channel.
	Channel string
	// Approval is the Subscription's installPlanApproval, Automatic or Manual. With Manual,
	// Install approves the InstallPlan of the bundle's CSV itself.
	Approval string
	// CatalogDir, when set, is a file-based catalog to serve instead of one of the bundle
	// alone: for example catalog/, to install a previous release (BundleDir bundles/0.2.0)
	// that OLM then upgrades along the catalog's channels. It must hold the bundle's CSV
	// in the channel subscribed to.
	CatalogDir string
	// CatalogAddress is where OLM reaches the catalog server, host:port; opm serve listens
	// on that port.
	CatalogAddress string
	// Opm is the opm binary (make opm).
	Opm     string
	Timeout time.Duration
	Out     io.Writer
	// StateDir keeps the catalog, opm's pid and log between run-bundle and cleanup-bundle.
	StateDir string
}

// Result is what Install did and saw.
type Result struct {
	CSV           string
	Channel       string
	Subscription  string
	CatalogSource string
	OperatorGroup string
	// OperatorGroupCreated is false when the namespace's OperatorGroup was used.
	OperatorGroupCreated bool
	// ApprovedInstallPlan names the last InstallPlan Install approved (Manual approval).
	ApprovedInstallPlan string
	// Phases are the CSV phases in the order seen, the last one Succeeded.
	Phases []PhaseChange
}

// Scheme holds the kinds run-bundle reads and writes.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, operatorsv1alpha1.AddToScheme, operatorsv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func newClient(cfg *rest.Config) (client.Client, error) {
	if cfg == nil {
		return nil, errors.New("no cluster configuration (KUBECONFIG)")
	}
	s, err := Scheme()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: s})
}

// Install installs the bundle in opts.BundleDir through OLM, the way `operator-sdk run
// bundle` does but with no image: a private catalog of that one bundle served by opm,
// a CatalogSource for it, an OperatorGroup if the namespace has none, a Subscription
// starting at the bundle's CSV; then it waits for the CSV to succeed. Once the objects
// exist, the Result comes back also with an error from the wait.
func Install(ctx context.Context, opts Options) (*Result, error) {
	start := time.Now()
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	if opts.Namespace == "" || opts.StateDir == "" || opts.Opm == "" || opts.CatalogAddress == "" || opts.Timeout <= 0 {
		return nil, errors.New("run-bundle: Namespace, StateDir, Opm, CatalogAddress and Timeout are required")
	}
	approval, err := ParseApproval(opts.Approval)
	if err != nil {
		return nil, err
	}
	if opts.CatalogDir != "" && approval != operatorsv1alpha1.ApprovalManual {
		return nil, errors.New("run-bundle: CATALOG needs APPROVAL=Manual: with Automatic, OLM would upgrade past the bundle along the catalog's channels at once")
	}
	b, err := ReadBundle(opts.BundleDir)
	if err != nil {
		return nil, err
	}
	channel, err := b.Channel(opts.Channel)
	if err != nil {
		return nil, err
	}
	c, err := newClient(opts.Config)
	if err != nil {
		return nil, err
	}
	if err := CheckOLMCRDs(c.RESTMapper()); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	// Refuse what OLM would refuse before anything starts.
	sub := desiredSubscription(opts.Namespace, b, channel, approval)
	if err := checkSubscription(ctx, c, sub); err != nil {
		return nil, err
	}
	var groups operatorsv1.OperatorGroupList
	if err := c.List(ctx, &groups, client.InNamespace(opts.Namespace)); err != nil {
		return nil, err
	}
	ogPlan, err := PlanOperatorGroup(opts.Namespace, b.CSV.Spec.InstallModes, groups.Items)
	if err != nil {
		return nil, err
	}
	res := &Result{CSV: b.CSV.Name, Channel: channel, Subscription: b.Package, CatalogSource: CatalogSourceName}
	fmt.Fprintf(out, "run-bundle: %s (package %s, channel %s) into namespace %s, approval %s\n", b.CSV.Name, b.Package, channel, opts.Namespace, approval)

	blobs, err := catalogBlobs(ctx, opts, b, channel)
	if err != nil {
		return nil, err
	}
	catalogDir, pid, err := serveCatalog(ctx, opts, b.Package, blobs)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "%7.1fs  catalog %s served by opm (pid %d) at %s\n", time.Since(start).Seconds(), catalogDir, pid, opts.CatalogAddress)

	if created, err := ensureNamespace(ctx, c, opts.Namespace); err != nil {
		return nil, err
	} else if created {
		fmt.Fprintf(out, "%7.1fs  namespace %s created\n", time.Since(start).Seconds(), opts.Namespace)
	}
	if err := applyCatalogSource(ctx, c, opts.Namespace, opts.CatalogAddress); err != nil {
		return nil, err
	}
	res.OperatorGroup, res.OperatorGroupCreated = ogPlan.Existing, ogPlan.Create
	ogState := "existing"
	if ogPlan.Create {
		ogState = "created"
		if res.OperatorGroup, err = createOperatorGroup(ctx, c, opts.Namespace, ogPlan.TargetNamespaces); err != nil {
			return nil, err
		}
	}
	if err := ensureSubscription(ctx, c, sub); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "%7.1fs  CatalogSource %s, OperatorGroup %s (%s), Subscription %s\n", time.Since(start).Seconds(),
		CatalogSourceName, res.OperatorGroup, ogState, sub.Name)

	return res, waitSucceeded(ctx, c, opts.Namespace, sub, b.CSV.Name, approval, start, opts.Timeout, out, res)
}

// catalogBlobs is what the install serves: opts.CatalogDir as opm reads it, checked to
// hold the bundle in channel exactly as BundleDir has it, or else a catalog of the
// bundle alone.
func catalogBlobs(ctx context.Context, opts Options, b *Bundle, channel string) ([]byte, error) {
	bundleRendered, err := render(ctx, opts.Opm, opts.BundleDir)
	if err != nil {
		return nil, err
	}
	if opts.CatalogDir == "" {
		return CatalogBlobs(bundleRendered, b, channel)
	}
	rendered, err := render(ctx, opts.Opm, opts.CatalogDir)
	if err != nil {
		return nil, err
	}
	if err := CatalogHolds(rendered, b.Package, channel, b.CSV.Name); err != nil {
		return nil, err
	}
	return rendered, SameBundle(rendered, bundleRendered, b.CSV.Name)
}

// serveCatalog writes blobs to the state directory and (re)starts opm serve on them,
// waiting until it answers.
func serveCatalog(ctx context.Context, opts Options, pkg string, blobs []byte) (string, int, error) {
	if err := os.MkdirAll(opts.StateDir, 0o755); err != nil {
		return "", 0, err
	}
	catalogDir, err := writeCatalog(opts.StateDir, pkg, blobs)
	if err != nil {
		return "", 0, err
	}
	pid, err := startServe(opts.Opm, opts.StateDir, catalogDir, opts.CatalogAddress)
	if err != nil {
		return "", 0, err
	}
	return catalogDir, pid, waitServing(ctx, opts.CatalogAddress, pid, filepath.Join(opts.StateDir, logFileName))
}

// Publish serves opts.CatalogDir as it is now in place of what an earlier Install or
// Publish with the same StateDir served, as a catalog image update would: OLM sees the
// catalog server come back, reads it again and offers the upgrades it now holds to the
// Subscription. It reads Opm, CatalogDir, CatalogAddress, StateDir and Timeout.
func Publish(ctx context.Context, opts Options) error {
	if opts.CatalogDir == "" || opts.StateDir == "" || opts.Opm == "" || opts.CatalogAddress == "" || opts.Timeout <= 0 {
		return errors.New("run-bundle publish: CatalogDir, StateDir, Opm, CatalogAddress and Timeout are required")
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	rendered, err := render(ctx, opts.Opm, opts.CatalogDir)
	if err != nil {
		return err
	}
	pkg, err := catalogPackage(rendered)
	if err != nil {
		return err
	}
	_, _, err = serveCatalog(ctx, opts, pkg, rendered)
	return err
}

func ensureNamespace(ctx context.Context, c client.Client, name string) (bool, error) {
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if apierrors.IsAlreadyExists(err) {
		return false, nil
	}
	return err == nil, err
}

// applyCatalogSource creates the CatalogSource or points it at this run's address.
func applyCatalogSource(ctx context.Context, c client.Client, namespace, address string) error {
	cs := &operatorsv1alpha1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: CatalogSourceName, Namespace: namespace}}
	err := c.Get(ctx, client.ObjectKeyFromObject(cs), cs)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	// An address and no image: OLM dials it and starts no catalog pod.
	cs.Spec = operatorsv1alpha1.CatalogSourceSpec{
		SourceType:  operatorsv1alpha1.SourceTypeGrpc,
		Address:     address,
		DisplayName: "linstor-operator (make run-bundle)",
		Publisher:   "make run-bundle",
	}
	if apierrors.IsNotFound(err) {
		return c.Create(ctx, cs)
	}
	return c.Update(ctx, cs)
}

// createOperatorGroup creates run-bundle's OperatorGroup, marked so that cleanup-bundle
// deletes it and no other.
func createOperatorGroup(ctx context.Context, c client.Client, namespace string, targets []string) (string, error) {
	og := &operatorsv1.OperatorGroup{
		ObjectMeta: metav1.ObjectMeta{
			Name:        OperatorGroupName,
			Namespace:   namespace,
			Annotations: map[string]string{CreatedByAnnotation: createdByValue},
		},
		Spec: operatorsv1.OperatorGroupSpec{TargetNamespaces: targets},
	}
	return og.Name, c.Create(ctx, og)
}

func desiredSubscription(namespace string, b *Bundle, channel string, approval operatorsv1alpha1.Approval) *operatorsv1alpha1.Subscription {
	return &operatorsv1alpha1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Name: b.Package, Namespace: namespace},
		Spec: &operatorsv1alpha1.SubscriptionSpec{
			CatalogSource:          CatalogSourceName,
			CatalogSourceNamespace: namespace,
			Package:                b.Package,
			Channel:                channel,
			StartingCSV:            b.CSV.Name,
			InstallPlanApproval:    approval,
		},
	}
}

// checkSubscription refuses, before anything starts, a Subscription of the package that
// differs from the one this run would create: OLM does not move a Subscription back to
// another startingCSV or channel. The same one, left by an earlier run, is kept and
// waited for again.
func checkSubscription(ctx context.Context, c client.Client, want *operatorsv1alpha1.Subscription) error {
	existing := &operatorsv1alpha1.Subscription{}
	err := c.Get(ctx, client.ObjectKeyFromObject(want), existing)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if existing.Spec == nil || *existing.Spec != *want.Spec {
		return fmt.Errorf("Subscription %s/%s already exists with another spec (an earlier run-bundle or another install): run make cleanup-bundle NAMESPACE=%s first",
			want.Namespace, want.Name, want.Namespace)
	}
	return nil
}

func ensureSubscription(ctx context.Context, c client.Client, sub *operatorsv1alpha1.Subscription) error {
	if err := c.Create(ctx, sub); !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := checkSubscription(ctx, c, sub); err != nil {
		return err
	}
	return c.Get(ctx, client.ObjectKeyFromObject(sub), sub)
}

// waitSucceeded approves the CSV's InstallPlan (Manual) and prints each CSV phase until
// Succeeded, Failed or the timeout.
func waitSucceeded(ctx context.Context, c client.Client, namespace string, sub *operatorsv1alpha1.Subscription, csvName string,
	approval operatorsv1alpha1.Approval, start time.Time, timeout time.Duration, out io.Writer, res *Result) error {
	var lastSub *operatorsv1alpha1.Subscription
	var lastCSV *operatorsv1alpha1.ClusterServiceVersion
	lastState := operatorsv1alpha1.SubscriptionState("")
	for {
		s := &operatorsv1alpha1.Subscription{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(sub), s); err == nil {
			lastSub = s
			if s.Status.State != lastState {
				lastState = s.Status.State
				fmt.Fprintf(out, "%7.1fs  Subscription %s\n", time.Since(start).Seconds(), lastState)
			}
		} else if apierrors.IsNotFound(err) {
			lastSub = nil
		} else if ctx.Err() == nil {
			return err
		}

		// OLM may resolve again before the approved plan ran (a catalog update, for
		// example) and make a new plan for the same CSV: each is approved until the CSV
		// exists.
		if approval == operatorsv1alpha1.ApprovalManual && lastSub != nil && lastCSV == nil {
			var plans operatorsv1alpha1.InstallPlanList
			if err := c.List(ctx, &plans, client.InNamespace(namespace)); err != nil && ctx.Err() == nil {
				return err
			}
			if ip := InstallPlanToApprove(plans.Items, lastSub.UID, csvName); ip != nil {
				ip.Spec.Approved = true
				if err := c.Update(ctx, ip); err != nil && !apierrors.IsConflict(err) && ctx.Err() == nil {
					return err
				} else if err == nil {
					res.ApprovedInstallPlan = ip.Name
					fmt.Fprintf(out, "%7.1fs  InstallPlan %s approved (installs %v)\n", time.Since(start).Seconds(), ip.Name, ip.Spec.ClusterServiceVersionNames)
				}
			}
		}

		csv := &operatorsv1alpha1.ClusterServiceVersion{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: csvName}, csv); err == nil {
			lastCSV = csv
			st := csv.Status
			if n := len(res.Phases); st.Phase != operatorsv1alpha1.CSVPhaseNone && (n == 0 || res.Phases[n-1].Phase != st.Phase) {
				p := PhaseChange{After: time.Since(start), Phase: st.Phase, Reason: st.Reason, Message: st.Message}
				res.Phases = append(res.Phases, p)
				fmt.Fprintln(out, p)
			}
			switch st.Phase {
			case operatorsv1alpha1.CSVPhaseSucceeded:
				fmt.Fprintf(out, "%7.1fs  %s installed\n", time.Since(start).Seconds(), csvName)
				return nil
			case operatorsv1alpha1.CSVPhaseFailed:
				fmt.Fprintf(out, "CSV %s failed: %s: %s\nits conditions:\n%s", csvName, st.Reason, st.Message, FormatConditions(csv))
				return fmt.Errorf("CSV %s failed: %s: %s", csvName, st.Reason, st.Message)
			}
		} else if !apierrors.IsNotFound(err) && ctx.Err() == nil {
			return err
		}

		select {
		case <-ctx.Done():
			return fmt.Errorf("CSV %s not Succeeded after %s: %s", csvName, timeout, Diagnose(lastSub, lastCSV, approval, time.Since(start).Round(time.Second)))
		case <-time.After(pollInterval):
		}
	}
}
