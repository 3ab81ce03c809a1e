package api

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linstor-operator/linstor-operator/pkg/clustertls"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
	"github.com/linstor-operator/linstor-operator/pkg/render"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// Pod Security Standards levels, strictest first.
var podSecurityLevels = []string{"restricted", "baseline", "privileged"}

// podSecurityTable is the reviewed statement of what each pod needs (docs/security.md,
// "Pod Security"): the strictest `pod-security.kubernetes.io/enforce` level whose
// namespace admits it, and, for the pods that need more than baseline, what a baseline
// namespace's refusal names. A change of a pod template that moves a pod to another
// level fails here until this table (and the documentation) says so.
var podSecurityTable = []struct {
	pod    string
	lowest string
	// baselineRefuses are parts of the API server's message when enforce=baseline
	// refuses the pod (the Pod Security Standards check names).
	baselineRefuses []string
}{
	{pod: "operator", lowest: "restricted"},
	// Sleeps as a fixed non-root user; drain evicts it, so it must run anywhere.
	{pod: names.DrainGuardComponent, lowest: "restricted"},
	// runAsNonRoot: false (the image runs as root).
	{pod: names.ControllerName, lowest: "baseline"},
	// No pod securityContext: neither runAsNonRoot nor a seccomp profile.
	{pod: names.CSIControllerName, lowest: "baseline"},
	// Mounts DRBD devices into pods: privileged, the kubelet's directories and /dev.
	{pod: names.CSINodeName, lowest: "privileged", baselineRefuses: []string{"hostPath volumes", `privileged (container "linstor-csi"`}},
	// drbdsetup reads DRBD state through the host's netlink.
	{pod: names.HAControllerName, lowest: "privileged", baselineRefuses: []string{"hostNetwork=true", `privileged (container "linstor-ha-controller"`}},
	// DRBD, LVM and ZFS on the host; LINSTOR addresses the node by its own IP (so its
	// port and drbd-reactor's metrics port are host ports); the DRBD module loader (an
	// init container) needs SYS_MODULE; the shutdown guard (an init container) installs a
	// systemd unit on the host (docs/satellite.md).
	{pod: names.SatelliteComponent, lowest: "privileged", baselineRefuses: []string{
		"hostNetwork=true", "hostPath volumes", `hostPort (containers "linstor-satellite", "drbd-reactor"`,
		`privileged (containers "drbd-shutdown-guard", "linstor-satellite" must not`,
		`non-default capabilities (container "drbd-module-loader" must not include "SYS_MODULE"`,
	}},
}

// TestPodSecurityLevelOfEveryPod dry-run creates every pod the operator ships or renders
// in three namespaces, enforce=restricted, baseline and privileged, and checks the
// strictest level that admits it against podSecurityTable: the API server's own Pod
// Security admission decides, as it does for the ReplicaSet and DaemonSet controllers.
func TestPodSecurityLevelOfEveryPod(t *testing.T) {
	ctx := context.Background()
	templates := podTemplates(t)
	namespaces := map[string]string{}
	for _, level := range podSecurityLevels {
		namespaces[level] = podSecurityNamespace(t, level)
	}
	for _, row := range podSecurityTable {
		t.Run(row.pod, func(t *testing.T) {
			tmpl, ok := templates[row.pod]
			if !ok {
				t.Fatalf("pod %s: no such pod template rendered", row.pod)
			}
			refusals := map[string]string{}
			for _, level := range podSecurityLevels {
				if err := dryRunPod(ctx, namespaces[level], row.pod, tmpl); err != nil {
					if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "violates PodSecurity") {
						t.Fatalf("pod %s in an enforce=%s namespace: not a Pod Security refusal: %v", row.pod, level, err)
					}
					refusals[level] = err.Error()
				}
			}
			want := levelIndex(row.lowest)
			for i, level := range podSecurityLevels {
				msg, refused := refusals[level]
				switch {
				case i >= want && refused:
					t.Errorf("pod %s is refused by enforce=%s, but the table says it needs no more than %s: %s", row.pod, level, row.lowest, msg)
				case i < want && !refused:
					t.Errorf("pod %s is admitted by enforce=%s, stricter than the table's %s: tighten the table and docs/security.md", row.pod, level, row.lowest)
				case refused:
					t.Logf("pod %s refused by enforce=%s: %s", row.pod, level, msg)
				}
			}
			// What PSA refuses: each operand that needs privilege, under baseline, for
			// the reasons the table names.
			if want <= levelIndex("baseline") {
				return
			}
			msg, refused := refusals["baseline"]
			if !refused {
				return // reported above
			}
			for _, reason := range row.baselineRefuses {
				if !strings.Contains(msg, reason) {
					t.Errorf("pod %s: enforce=baseline refused it without naming %q: %s", row.pod, reason, msg)
				}
			}
			if len(row.baselineRefuses) == 0 {
				t.Errorf("pod %s needs privileged: the table must name what baseline refuses: %s", row.pod, msg)
			}
		})
	}
}

func levelIndex(level string) int {
	for i, l := range podSecurityLevels {
		if l == level {
			return i
		}
	}
	panic("unknown Pod Security level " + level)
}

// podSecurityNamespace creates a namespace that enforces level and deletes it afterwards.
func podSecurityNamespace(t *testing.T, level string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "pod-security-" + level + "-",
		Labels:       map[string]string{"pod-security.kubernetes.io/enforce": level},
	}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating an enforce=%s namespace: %v", level, err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
	return ns.Name
}

// dryRunPod asks the API server to admit a pod of tmpl in namespace without creating it.
func dryRunPod(ctx context.Context, namespace, name string, tmpl corev1.PodTemplateSpec) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: tmpl.Labels, Annotations: tmpl.Annotations},
		Spec:       tmpl.Spec,
	}
	return env.Client.Create(ctx, pod, client.DryRunAll)
}

// podTemplates are the operator's pod (config/manager/manager.yaml, as the OLM bundle
// ships it) and the operand pods rendered for a default LinstorCluster, by pod name.
func podTemplates(t *testing.T) map[string]corev1.PodTemplateSpec {
	t.Helper()
	out := map[string]corev1.PodTemplateSpec{"operator": managerPodTemplate(t)}
	imgs := images.Default()
	cluster := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor", Namespace: "linstor"}}
	sat := &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: "linstor"}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{OSImage: "Ubuntu 24.04.1 LTS"}}}
	var all render.Objects
	for _, r := range []func() (render.Objects, error){
		func() (render.Objects, error) { return render.Controller(cluster, imgs) },
		func() (render.Objects, error) { return render.CSI(cluster, imgs, clustertls.ServiceURL(cluster)) },
		func() (render.Objects, error) { return render.HAController(cluster, imgs) },
		func() (render.Objects, error) { return render.Satellite(cluster, sat, node, imgs) },
	} {
		objs, err := r()
		if err != nil {
			t.Fatalf("rendering: %v", err)
		}
		all = append(all, objs...)
	}
	satellite, err := render.SatellitePodSpec(cluster, sat, node, imgs)
	if err != nil {
		t.Fatalf("rendering: %v", err)
	}
	guard := render.DrainGuardPod(cluster, sat, satellite)
	// Bound to a node that does not exist: admission does not look.
	out[names.DrainGuardComponent] = corev1.PodTemplateSpec{ObjectMeta: guard.ObjectMeta, Spec: guard.Spec}
	for _, o := range all {
		switch w := o.(type) {
		case *appsv1.Deployment:
			out[w.Name] = w.Spec.Template
		case *appsv1.DaemonSet:
			name := w.Name
			if strings.HasPrefix(name, names.SatelliteDaemonSetName("")) {
				name = names.SatelliteComponent // one DaemonSet per node
			}
			out[name] = w.Spec.Template
		}
	}
	return out
}

// managerPodTemplate is the pod template of config/manager/manager.yaml's Deployment.
func managerPodTemplate(t *testing.T) corev1.PodTemplateSpec {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(envtest.RepoRoot(), "config", "manager", "manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range bytes.Split(raw, []byte("\n---\n")) {
		var d appsv1.Deployment
		if err := yaml.UnmarshalStrict(doc, &d); err != nil {
			t.Fatal(fmt.Errorf("config/manager/manager.yaml: %w", err))
		}
		if d.Kind == "Deployment" {
			return d.Spec.Template
		}
	}
	t.Fatal("config/manager/manager.yaml has no Deployment")
	return corev1.PodTemplateSpec{}
}
