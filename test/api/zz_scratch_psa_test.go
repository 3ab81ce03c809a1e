package api

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/linstor-operator/linstor-operator/pkg/render"
)

func TestScratchPSAProposals(t *testing.T) {
	ctx := context.Background()
	tm := podTemplates(t)
	ns := podSecurityNamespace(t, "restricted")
	seccomp := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	csi := tm[render.CSIControllerName]
	csi.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: seccomp}
	t.Logf("csi seccomp only: %v", dryRunPod(ctx, ns, "csi-a", csi))
	csi.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: seccomp, RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532)}
	t.Logf("csi seccomp+nonroot: %v", dryRunPod(ctx, ns, "csi-b", csi))
	c := tm[render.ControllerName]
	c.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: seccomp, RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000)}
	t.Logf("controller nonroot: %v", dryRunPod(ctx, ns, "ctl", c))
}
