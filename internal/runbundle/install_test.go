package runbundle_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	olmcrds "github.com/operator-framework/api/crds"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/linstor-operator/linstor-operator/internal/runbundle"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// The envtest world: a real kube-apiserver with OLM's CRDs (from operator-framework/api,
// the same version as the typed clients) and the project's CRDs, and no OLM operator. The
// test plays OLM's part where it needs one: it makes the InstallPlans and moves the CSV.
var (
	cfg *rest.Config
	k8s client.Client
	// withoutOLM is what Install and Cleanup did before OLM's CRDs were installed.
	withoutOLM struct {
		install, cleanup error
		cleanupOut       bytes.Buffer
	}
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin", "k8s", "v1.34.2")
	}
	env := &ctrlenvtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDInstallOptions: ctrlenvtest.CRDInstallOptions{
			Paths:              []string{filepath.Join(root, "config", "crd", "bases")},
			ErrorIfPathMissing: true,
		},
	}
	var err error
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "starting kube-apiserver (make envtest-assets): %v\n", err)
		return 1
	}
	defer func() { _ = env.Stop() }()

	// First a cluster without OLM, then OLM's CRDs.
	withoutOLM.install = func() error {
		_, err := runbundle.Install(context.Background(), runbundle.Options{Config: cfg, BundleDir: filepath.Join(root, "bundle"),
			Namespace: "no-olm", Approval: "Automatic", CatalogAddress: "127.0.0.1:1", Opm: "/nonexistent/opm", Timeout: time.Minute, StateDir: filepath.Join(os.TempDir(), "run-bundle-no-olm-state")})
		return err
	}()
	withoutOLM.cleanup = runbundle.Cleanup(context.Background(), runbundle.Options{Config: cfg, Namespace: "no-olm",
		Out: &withoutOLM.cleanupOut, StateDir: filepath.Join(os.TempDir(), "run-bundle-no-olm-state")})
	if _, err := ctrlenvtest.InstallCRDs(cfg, ctrlenvtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{
		olmcrds.CatalogSource(), olmcrds.ClusterServiceVersion(), olmcrds.InstallPlan(),
		olmcrds.OperatorGroup(), olmcrds.Subscription(), olmcrds.OperatorCondition(),
	}}); err != nil {
		fmt.Fprintf(os.Stderr, "installing OLM's CRDs: %v\n", err)
		return 1
	}
	scheme, err := runbundle.Scheme()
	if err == nil {
		err = apiextensionsv1.AddToScheme(scheme)
	}
	if err == nil {
		k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// syncBuffer is Install's output, read by the test while Install writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func options(t *testing.T, namespace, approval string, timeout time.Duration, out *syncBuffer) runbundle.Options {
	return runbundle.Options{
		Config:         cfg,
		BundleDir:      filepath.Join("..", "..", "bundle"),
		Namespace:      namespace,
		Approval:       approval,
		CatalogAddress: freeAddress(t),
		Opm:            envtest.OPMBinary(t),
		Timeout:        timeout,
		Out:            out,
		StateDir:       t.TempDir(),
	}
}

// eventually polls cond every 100ms until it holds or 20s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func exists(t *testing.T, obj client.Object) bool {
	t.Helper()
	err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// listPackages calls the registry API's ListPackages (api.Registry, a server stream of
// PackageName{name = 1}) with hand-encoded protobuf: operator-registry's client is not a
// dependency of this module.
func listPackages(ctx context.Context, address string) ([]string, error) {
	conn, err := grpc.NewClient(address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stream, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, "/api.Registry/ListPackages", grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return nil, err
	}
	if err := stream.SendMsg(&[]byte{}); err != nil {
		return nil, err
	}
	if err := stream.CloseSend(); err != nil {
		return nil, err
	}
	var names []string
	for {
		var msg []byte
		if err := stream.RecvMsg(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return names, nil
			}
			return names, err
		}
		for len(msg) > 0 {
			num, typ, n := protowire.ConsumeTag(msg)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			msg = msg[n:]
			if num == 1 && typ == protowire.BytesType {
				v, m := protowire.ConsumeBytes(msg)
				if m < 0 {
					return nil, protowire.ParseError(m)
				}
				names = append(names, string(v))
				msg = msg[m:]
				continue
			}
			m := protowire.ConsumeFieldValue(num, typ, msg)
			if m < 0 {
				return nil, protowire.ParseError(m)
			}
			msg = msg[m:]
		}
	}
}

// rawCodec passes protobuf bytes through unchanged.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

func healthStatus(ctx context.Context, address string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	conn, err := grpc.NewClient(address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	return resp.GetStatus(), err
}

// Manual approval in a namespace that does not exist yet: run-bundle creates the namespace,
// the catalog server, the CatalogSource, a global OperatorGroup and the Subscription,
// approves exactly the InstallPlan of the bundle's CSV, reports each CSV phase until
// Succeeded; cleanup-bundle then removes exactly that and keeps LINSTOR's objects.
func TestInstallManualThenCleanup(t *testing.T) {
	ctx := t.Context()
	const ns = "rb-manual"
	out := &syncBuffer{}
	opts := options(t, ns, "Manual", 2*time.Minute, out)
	bundle, err := runbundle.ReadBundle(opts.BundleDir)
	if err != nil {
		t.Fatal(err)
	}
	startingCSV := bundle.CSV.Name

	type installResult struct {
		res *runbundle.Result
		err error
	}
	done := make(chan installResult, 1)
	go func() {
		res, err := runbundle.Install(ctx, opts)
		done <- installResult{res, err}
	}()

	sub := &operatorsv1alpha1.Subscription{ObjectMeta: metav1.ObjectMeta{Name: bundle.Package, Namespace: ns}}
	eventually(t, "the Subscription", func() bool { return exists(t, sub) })

	// The objects, exactly.
	cs := &operatorsv1alpha1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: runbundle.CatalogSourceName, Namespace: ns}}
	if !exists(t, cs) {
		t.Fatal("no CatalogSource")
	}
	wantCS := operatorsv1alpha1.CatalogSourceSpec{SourceType: operatorsv1alpha1.SourceTypeGrpc, Address: opts.CatalogAddress,
		DisplayName: "linstor-operator (make run-bundle)", Publisher: "make run-bundle"}
	if !reflect.DeepEqual(cs.Spec, wantCS) {
		t.Errorf("CatalogSource spec %+v, want %+v", cs.Spec, wantCS)
	}
	var groups operatorsv1.OperatorGroupList
	if err := k8s.List(ctx, &groups, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(groups.Items) != 1 {
		t.Fatalf("%d OperatorGroups, want 1", len(groups.Items))
	}
	og := groups.Items[0]
	if og.Name != runbundle.OperatorGroupName || og.Annotations[runbundle.CreatedByAnnotation] != "run-bundle" ||
		!reflect.DeepEqual(og.Spec, operatorsv1.OperatorGroupSpec{UpgradeStrategy: operatorsv1.UpgradeStrategyDefault}) {
		t.Errorf("OperatorGroup %s, annotations %v, spec %+v: want %s, created by run-bundle, all namespaces",
			og.Name, og.Annotations, og.Spec, runbundle.OperatorGroupName)
	}
	wantSub := operatorsv1alpha1.SubscriptionSpec{CatalogSource: runbundle.CatalogSourceName, CatalogSourceNamespace: ns,
		Package: "linstor-operator", Channel: bundle.DefaultChannel, StartingCSV: startingCSV, InstallPlanApproval: operatorsv1alpha1.ApprovalManual}
	if !reflect.DeepEqual(*sub.Spec, wantSub) {
		t.Errorf("Subscription spec %+v, want %+v", *sub.Spec, wantSub)
	}

	// The catalog server answers where the CatalogSource points, with this package only.
	if st, err := healthStatus(ctx, opts.CatalogAddress); err != nil || st != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health at %s: %v, %v", opts.CatalogAddress, st, err)
	}
	if pkgs, err := listPackages(ctx, opts.CatalogAddress); err != nil || !reflect.DeepEqual(pkgs, []string{"linstor-operator"}) {
		t.Errorf("ListPackages at %s: %v, %v; want [linstor-operator]", opts.CatalogAddress, pkgs, err)
	}

	// OLM's part: two InstallPlans of the Subscription, the bundle's and a later one, and
	// one nobody owns.
	owner := []metav1.OwnerReference{{APIVersion: "operators.coreos.com/v1alpha1", Kind: "Subscription", Name: sub.Name, UID: sub.UID}}
	plan := func(name string, owners []metav1.OwnerReference, csv string) *operatorsv1alpha1.InstallPlan {
		ip := &operatorsv1alpha1.InstallPlan{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, OwnerReferences: owners},
			Spec:       operatorsv1alpha1.InstallPlanSpec{ClusterServiceVersionNames: []string{csv}, Approval: operatorsv1alpha1.ApprovalManual},
		}
		if err := k8s.Create(ctx, ip); err != nil {
			t.Fatal(err)
		}
		return ip
	}
	later := plan("install-later", owner, "linstor-operator.v99.0.0")
	start := plan("install-start", owner, startingCSV)
	unowned := plan("install-unowned", nil, startingCSV)
	eventually(t, "approval of install-start", func() bool { return exists(t, start) && start.Spec.Approved })
	// OLM resolving again before the CSV exists makes a new plan for the same CSV: it is
	// approved too.
	reResolved := plan("install-again", owner, startingCSV)
	eventually(t, "approval of install-again", func() bool { return exists(t, reResolved) && reResolved.Spec.Approved })
	time.Sleep(2 * time.Second) // two more polls: nothing else gets approved
	for _, ip := range []*operatorsv1alpha1.InstallPlan{later, unowned} {
		if !exists(t, ip) || ip.Spec.Approved {
			t.Errorf("InstallPlan %s approved (or gone); only the plans of the startingCSV owned by the Subscription may be", ip.Name)
		}
	}

	// OLM's part: the CSV through its phases; run-bundle reports each.
	csv := bundle.CSV.DeepCopy()
	csv.Namespace = ns
	if err := k8s.Create(ctx, csv); err != nil {
		t.Fatal(err)
	}
	phases := []operatorsv1alpha1.ClusterServiceVersionPhase{
		operatorsv1alpha1.CSVPhasePending, operatorsv1alpha1.CSVPhaseInstallReady,
		operatorsv1alpha1.CSVPhaseInstalling, operatorsv1alpha1.CSVPhaseSucceeded,
	}
	for _, phase := range phases {
		csv.Status.Phase, csv.Status.Reason, csv.Status.Message = phase, "TestReason", "set by the test"
		if err := k8s.Status().Update(ctx, csv); err != nil {
			t.Fatal(err)
		}
		eventually(t, "phase "+string(phase)+" reported", func() bool {
			return strings.Contains(out.String(), fmt.Sprintf("CSV phase %s (TestReason: set by the test)", phase))
		})
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("Install: %v\n%s", r.err, out)
	}
	var seen []operatorsv1alpha1.ClusterServiceVersionPhase
	for _, p := range r.res.Phases {
		seen = append(seen, p.Phase)
	}
	if !reflect.DeepEqual(seen, phases) || r.res.ApprovedInstallPlan != "install-again" || !r.res.OperatorGroupCreated || r.res.CSV != startingCSV {
		t.Errorf("result %+v, phases %v", r.res, seen)
	}
	t.Logf("run-bundle output:\n%s", out)

	// LINSTOR's objects, which cleanup must keep.
	lc := &unstructured.Unstructured{}
	lc.SetAPIVersion("linstor.io/v1")
	lc.SetKind("LinstorCluster")
	lc.SetName("linstor")
	lc.SetNamespace(ns)
	if err := unstructured.SetNestedMap(lc.Object, map[string]any{}, "spec"); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, lc); err != nil {
		t.Fatal(err)
	}

	cleanOut := &syncBuffer{}
	opts.Out = cleanOut
	if err := runbundle.Cleanup(ctx, opts); err != nil {
		t.Fatal(err)
	}
	t.Logf("cleanup-bundle output:\n%s", cleanOut)
	for _, obj := range []client.Object{sub, csv, start, later, cs, &og} {
		if exists(t, obj) {
			t.Errorf("%T %s still there after cleanup", obj, obj.GetName())
		}
	}
	kept := []client.Object{unowned, lc, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "linstorclusters.linstor.io"}}}
	for _, obj := range kept {
		if !exists(t, obj) {
			t.Errorf("%T %s deleted by cleanup", obj, obj.GetName())
		}
	}
	if !strings.Contains(cleanOut.String(), "the operands (LINSTOR) keep running") {
		t.Errorf("cleanup does not say the operands survive:\n%s", cleanOut)
	}
	if _, err := healthStatus(ctx, opts.CatalogAddress); err == nil {
		t.Errorf("the catalog server still answers at %s", opts.CatalogAddress)
	}
	if _, err := os.Stat(filepath.Join(opts.StateDir, "opm.pid")); !os.IsNotExist(err) {
		t.Errorf("pid file left: %v", err)
	}

	// Again: nothing to do, no error.
	again := &syncBuffer{}
	opts.Out = again
	if err := runbundle.Cleanup(ctx, opts); err != nil {
		t.Fatalf("second cleanup: %v", err)
	}
	if strings.Contains(again.String(), "deleted") || strings.Contains(again.String(), "stopped") {
		t.Errorf("second cleanup did something:\n%s", again)
	}
}

// A namespace with its own global OperatorGroup and no OLM operator running: run-bundle
// uses that group, waits, then fails naming the missing catalog operator; cleanup keeps
// the group.
func TestInstallWithoutOLMOperatorsKeepsExistingOperatorGroup(t *testing.T) {
	ctx := t.Context()
	const ns = "rb-existing-group"
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	existing := &operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Name: "global-operators", Namespace: ns}}
	if err := k8s.Create(ctx, existing); err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	opts := options(t, ns, "Automatic", 5*time.Second, out)
	res, err := runbundle.Install(ctx, opts)
	if err == nil || !strings.Contains(err.Error(), "no OLM catalog operator processed the Subscription") {
		t.Fatalf("error %v, want one naming the missing catalog operator\n%s", err, out)
	}
	if res.OperatorGroup != "global-operators" || res.OperatorGroupCreated {
		t.Errorf("OperatorGroup %q created=%v, want the existing global-operators", res.OperatorGroup, res.OperatorGroupCreated)
	}
	var groups operatorsv1.OperatorGroupList
	if err := k8s.List(ctx, &groups, client.InNamespace(ns)); err != nil || len(groups.Items) != 1 {
		t.Errorf("%d OperatorGroups (%v), want only the existing one", len(groups.Items), err)
	}
	sub := &operatorsv1alpha1.Subscription{ObjectMeta: metav1.ObjectMeta{Name: "linstor-operator", Namespace: ns}}
	if !exists(t, sub) || sub.Spec.InstallPlanApproval != operatorsv1alpha1.ApprovalAutomatic {
		t.Errorf("Subscription missing or not Automatic: %+v", sub.Spec)
	}

	// Another approval now would need another Subscription: refused, pointing to cleanup.
	manual := opts
	manual.Approval = "Manual"
	if _, err := runbundle.Install(ctx, manual); err == nil || !strings.Contains(err.Error(), "already exists with another spec") ||
		!strings.Contains(err.Error(), "make cleanup-bundle NAMESPACE="+ns) {
		t.Errorf("Install with another approval: %v, want a refusal naming cleanup-bundle", err)
	}

	if err := runbundle.Cleanup(ctx, opts); err != nil {
		t.Fatal(err)
	}
	if !exists(t, existing) {
		t.Error("cleanup deleted the OperatorGroup run-bundle did not create")
	}
	if exists(t, sub) {
		t.Error("Subscription still there")
	}
	if !strings.Contains(out.String(), "kept: OperatorGroup global-operators (run-bundle did not create it)") {
		t.Errorf("cleanup does not say it kept the OperatorGroup:\n%s", out)
	}
}

// Without OLM's CRDs, run-bundle stops before starting anything and names the missing
// kinds; cleanup-bundle has nothing to delete and says so.
func TestWithoutOLMCRDs(t *testing.T) {
	err := withoutOLM.install
	if err == nil || !strings.Contains(err.Error(), "OLM is not installed in this cluster") {
		t.Fatalf("Install: %v, want an error saying OLM is not installed", err)
	}
	for _, kind := range []string{"CatalogSource", "Subscription", "InstallPlan", "ClusterServiceVersion", "OperatorGroup"} {
		if !strings.Contains(err.Error(), kind+".operators.coreos.com") {
			t.Errorf("Install error does not name %s: %v", kind, err)
		}
	}
	if withoutOLM.cleanup != nil || !strings.Contains(withoutOLM.cleanupOut.String(), "no OLM objects to delete") {
		t.Errorf("Cleanup: %v\n%s", withoutOLM.cleanup, withoutOLM.cleanupOut.String())
	}
}

// A CSV that fails ends the wait at once with its reason, and the output lists the CSV's
// conditions (its phase history).
func TestInstallReportsFailedCSV(t *testing.T) {
	ctx := t.Context()
	const ns = "rb-failed"
	out := &syncBuffer{}
	opts := options(t, ns, "Automatic", time.Minute, out)
	bundle, err := runbundle.ReadBundle(opts.BundleDir)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := runbundle.Install(ctx, opts)
		done <- err
	}()
	sub := &operatorsv1alpha1.Subscription{ObjectMeta: metav1.ObjectMeta{Name: bundle.Package, Namespace: ns}}
	eventually(t, "the Subscription", func() bool { return exists(t, sub) })

	csv := bundle.CSV.DeepCopy()
	csv.Namespace = ns
	if err := k8s.Create(ctx, csv); err != nil {
		t.Fatal(err)
	}
	at := metav1.NewTime(time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC))
	csv.Status = operatorsv1alpha1.ClusterServiceVersionStatus{
		Phase: operatorsv1alpha1.CSVPhaseFailed, Reason: operatorsv1alpha1.CSVReasonInstallCheckFailed, Message: "install timeout",
		Conditions: []operatorsv1alpha1.ClusterServiceVersionCondition{
			{Phase: operatorsv1alpha1.CSVPhaseInstalling, Reason: operatorsv1alpha1.CSVReasonInstallSuccessful, Message: "waiting for install components to report healthy", LastTransitionTime: &at},
			{Phase: operatorsv1alpha1.CSVPhaseFailed, Reason: operatorsv1alpha1.CSVReasonInstallCheckFailed, Message: "install timeout", LastTransitionTime: &at},
		},
	}
	if err := k8s.Status().Update(ctx, csv); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if want := "CSV " + bundle.CSV.Name + " failed: InstallCheckFailed: install timeout"; err == nil || err.Error() != want {
			t.Errorf("error %v, want %q", err, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Install still waits on a Failed CSV")
	}
	for _, want := range []string{
		"CSV phase Failed (InstallCheckFailed: install timeout)",
		"2026-11-24T07:00:00Z  Installing  InstallSucceeded: waiting for install components to report healthy",
		"2026-11-24T07:00:00Z  Failed  InstallCheckFailed: install timeout",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output does not show %q:\n%s", want, out)
		}
	}
	opts.Out = nil
	if err := runbundle.Cleanup(ctx, opts); err != nil {
		t.Fatal(err)
	}
}

// An OperatorGroup the CSV cannot run under is refused before anything starts: no opm
// server, no CatalogSource, no Subscription.
func TestInstallRefusesIncompatibleOperatorGroupFirst(t *testing.T) {
	ctx := t.Context()
	const ns = "rb-own-namespace"
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	own := &operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Name: "own", Namespace: ns},
		Spec: operatorsv1.OperatorGroupSpec{TargetNamespaces: []string{ns}}}
	if err := k8s.Create(ctx, own); err != nil {
		t.Fatal(err)
	}
	opts := options(t, ns, "Automatic", time.Minute, &syncBuffer{})
	_, err := runbundle.Install(ctx, opts)
	if want := "OperatorGroup " + ns + "/own is for install mode OwnNamespace, which the CSV does not support (it supports AllNamespaces)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one containing %q", err, want)
	}
	if _, err := os.Stat(filepath.Join(opts.StateDir, "opm.pid")); !os.IsNotExist(err) {
		t.Errorf("opm was started (pid file: %v)", err)
	}
	for _, obj := range []client.Object{
		&operatorsv1alpha1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Name: runbundle.CatalogSourceName, Namespace: ns}},
		&operatorsv1alpha1.Subscription{ObjectMeta: metav1.ObjectMeta{Name: "linstor-operator", Namespace: ns}},
	} {
		if exists(t, obj) {
			t.Errorf("%T created", obj)
		}
	}
}

// Installing from a catalog with Automatic approval is refused before anything starts:
// OLM would go past the bundle at once.
func TestCatalogNeedsManualApproval(t *testing.T) {
	opts := options(t, "rb-catalog-auto", "Automatic", time.Minute, &syncBuffer{})
	opts.CatalogDir = filepath.Join("..", "..", "catalog")
	_, err := runbundle.Install(t.Context(), opts)
	if err == nil || !strings.Contains(err.Error(), "CATALOG needs APPROVAL=Manual") {
		t.Fatalf("Install: %v, want a refusal naming APPROVAL=Manual", err)
	}
	if exists(t, &operatorsv1alpha1.Subscription{ObjectMeta: metav1.ObjectMeta{Name: "linstor-operator", Namespace: "rb-catalog-auto"}}) {
		t.Error("a Subscription was created")
	}
}
