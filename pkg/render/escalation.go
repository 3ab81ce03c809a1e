package render

import (
	"fmt"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// A podTemplate patch is applied by the operator, under the operator's own rights: whoever
// may edit a LinstorCluster or a LinstorSatelliteConfiguration would otherwise run any pod
// they like (privileged, on the host's namespaces, under any ServiceAccount of the
// namespace) without being allowed to create a single pod. Unless the LinstorCluster says
// spec.podTemplatePolicy: AllowPrivileged, a patch may keep or lower the privilege the
// operator renders, never raise it. "Raise" is judged field by field against the pod
// rendered without the patch, so the satellite keeps its privileged container and host
// network while the LINSTOR controller cannot gain either.

// podTemplatePolicyHint ends every refusal: it says how to allow the patch.
const podTemplatePolicyHint = "pod-template patches may not add privilege unless the LinstorCluster sets spec.podTemplatePolicy: AllowPrivileged"

// Annotations that still select a profile on some kubelets.
const (
	appArmorAnnotationPrefix = "container.apparmor.security.beta.kubernetes.io/"
	seccompPodAnnotation     = "seccomp.security.alpha.kubernetes.io/pod"
	seccompAnnotationPrefix  = "container.seccomp.security.alpha.kubernetes.io/"
)

// seLinuxTypes are the SELinux types the Pod Security Standards' baseline allows.
var seLinuxTypes = sets.New("", "container_t", "container_init_t", "container_kvm_t", "container_engine_t")

// PodTemplateEscalation returns what a user's podTemplate patch gains in privilege:
// before is the pod template as the operator renders it without the patch, after the
// same template with the patch applied, and at is the patch's own path (the errors name
// the fields under it, for example at.spec.hostPID). Under AllowPrivileged it returns
// nothing.
func PodTemplateEscalation(policy linstorv1.PodTemplatePolicy, before, after *corev1.PodTemplateSpec, at *field.Path) field.ErrorList {
	if policy == linstorv1.PodTemplateAllowPrivileged {
		return nil
	}
	e := &escalation{before: &before.Spec, after: &after.Spec, spec: at.Child("spec")}
	e.pod()
	e.podSecurityContext()
	e.volumes()
	for _, list := range []struct {
		name          string
		before, after []corev1.Container
	}{
		{"initContainers", before.Spec.InitContainers, after.Spec.InitContainers},
		{"containers", before.Spec.Containers, after.Spec.Containers},
		{"ephemeralContainers", ephemeral(before.Spec.EphemeralContainers), ephemeral(after.Spec.EphemeralContainers)},
	} {
		for i := range list.after {
			c := &list.after[i]
			was := &corev1.Container{} // a new container starts from nothing
			for j := range list.before {
				if list.before[j].Name == c.Name {
					was = &list.before[j]
				}
			}
			e.container(e.spec.Child(list.name).Key("name="+c.Name), was, c)
		}
	}
	e.annotations(at.Child("metadata", "annotations"), before.Annotations, after.Annotations)
	return e.errs
}

type escalation struct {
	before, after *corev1.PodSpec
	spec          *field.Path
	errs          field.ErrorList
}

func (e *escalation) forbid(at *field.Path, format string, args ...any) {
	e.errs = append(e.errs, field.Forbidden(at, fmt.Sprintf(format, args...)+" ("+podTemplatePolicyHint+")"))
}

// pod checks the pod's identity and host namespaces.
func (e *escalation) pod() {
	b, a := e.before, e.after
	if a.ServiceAccountName != b.ServiceAccountName {
		e.forbid(e.spec.Child("serviceAccountName"), "may not change the pod's ServiceAccount from %q", b.ServiceAccountName)
	}
	if a.DeprecatedServiceAccount != b.DeprecatedServiceAccount {
		e.forbid(e.spec.Child("serviceAccount"), "may not change the pod's ServiceAccount from %q", b.DeprecatedServiceAccount)
	}
	if on(a.AutomountServiceAccountToken, true) && !on(b.AutomountServiceAccountToken, true) {
		e.forbid(e.spec.Child("automountServiceAccountToken"), "may not mount the ServiceAccount token the operator keeps out of this pod")
	}
	for _, ns := range []struct {
		field         string
		before, after bool
		what          string
	}{
		{"hostNetwork", b.HostNetwork, a.HostNetwork, "network"},
		{"hostPID", b.HostPID, a.HostPID, "process (PID)"},
		{"hostIPC", b.HostIPC, a.HostIPC, "IPC"},
	} {
		if ns.after && !ns.before {
			e.forbid(e.spec.Child(ns.field), "may not put the pod in the host's %s namespace", ns.what)
		}
	}
	if on(a.HostUsers, true) && !on(b.HostUsers, true) {
		e.forbid(e.spec.Child("hostUsers"), "may not take the pod out of its own user namespace")
	}
	if on(a.ShareProcessNamespace, false) && !on(b.ShareProcessNamespace, false) {
		e.forbid(e.spec.Child("shareProcessNamespace"), "may not share the process namespace between the pod's containers")
	}
}

// podSecurityContext checks the pod-level defaults of every container's security context.
func (e *escalation) podSecurityContext() {
	b, a := e.before.SecurityContext, e.after.SecurityContext
	if b == nil {
		b = &corev1.PodSecurityContext{}
	}
	if a == nil {
		a = &corev1.PodSecurityContext{}
	}
	at := e.spec.Child("securityContext")
	e.runAsUser(at, b.RunAsUser, a.RunAsUser)
	e.runAsNonRoot(at, b.RunAsNonRoot, a.RunAsNonRoot)
	e.seccomp(at, b.SeccompProfile, a.SeccompProfile)
	e.appArmor(at, b.AppArmorProfile, a.AppArmorProfile)
	e.seLinux(at, b.SELinuxOptions, a.SELinuxOptions)
	if hostProcess(a.WindowsOptions) && !hostProcess(b.WindowsOptions) {
		e.forbid(at.Child("windowsOptions", "hostProcess"), "may not run the pod as a Windows host process")
	}
}

// runAsUser refuses running as root where the operator does not.
func (e *escalation) runAsUser(at *field.Path, before, after *int64) {
	switch {
	case rankUser(after) <= rankUser(before):
	case after != nil:
		e.forbid(at.Child("runAsUser"), "may not run as root (UID 0)")
	default:
		e.forbid(at.Child("runAsUser"), "may not drop the non-root UID %d: the image's user may be root", *before)
	}
}

// runAsNonRoot refuses lifting the operator's non-root requirement.
func (e *escalation) runAsNonRoot(at *field.Path, before, after *bool) {
	if rankNonRoot(after) > rankNonRoot(before) {
		e.forbid(at.Child("runAsNonRoot"), "may not allow running as root where the operator does not")
	}
}

// seccomp refuses a seccomp profile weaker than the operator's.
func (e *escalation) seccomp(at *field.Path, before, after *corev1.SeccompProfile) {
	b, a := seccompType(before), seccompType(after)
	if rankProfile(a) > rankProfile(b) {
		e.forbid(at.Child("seccompProfile"), "may not weaken the seccomp profile from %s to %s", profileName(b), profileName(a))
	}
}

// appArmor refuses an AppArmor profile weaker than the operator's.
func (e *escalation) appArmor(at *field.Path, before, after *corev1.AppArmorProfile) {
	b, a := appArmorType(before), appArmorType(after)
	if rankProfile(a) > rankProfile(b) {
		e.forbid(at.Child("appArmorProfile"), "may not weaken the AppArmor profile from %s to %s", profileName(b), profileName(a))
	}
}

// seLinux refuses the SELinux options the Pod Security Standards' baseline forbids.
func (e *escalation) seLinux(at *field.Path, before, after *corev1.SELinuxOptions) {
	if after == nil || (before != nil && *before == *after) {
		return
	}
	if after.User != "" || after.Role != "" {
		e.forbid(at.Child("seLinuxOptions"), "may not set an SELinux user or role")
	}
	if !seLinuxTypes.Has(after.Type) {
		e.forbid(at.Child("seLinuxOptions", "type"), "may not set the SELinux type %q", after.Type)
	}
}

// volumes refuses host paths the operator does not mount, and ServiceAccount tokens it
// does not project.
func (e *escalation) volumes() {
	had := map[string]*corev1.Volume{}
	for i := range e.before.Volumes {
		had[e.before.Volumes[i].Name] = &e.before.Volumes[i]
	}
	for _, v := range e.after.Volumes {
		at := e.spec.Child("volumes").Key("name=" + v.Name)
		was := had[v.Name]
		if v.HostPath != nil {
			switch {
			case was == nil || was.HostPath == nil:
				e.forbid(at.Child("hostPath"), "may not mount the host path %q", v.HostPath.Path)
			case cleanPath(was.HostPath.Path) != cleanPath(v.HostPath.Path):
				e.forbid(at.Child("hostPath", "path"), "may not point the volume at %q: the operator mounts %q", v.HostPath.Path, was.HostPath.Path)
			}
		}
		if v.Projected == nil {
			continue
		}
		for i, src := range v.Projected.Sources {
			if src.ServiceAccountToken != nil && !projectsToken(was, *src.ServiceAccountToken) {
				e.forbid(at.Child("projected", "sources").Index(i).Child("serviceAccountToken"), "may not project a ServiceAccount token the operator does not")
			}
		}
	}
}

// container checks one container against what it was (empty for a new container).
func (e *escalation) container(at *field.Path, was, c *corev1.Container) {
	if !e.before.HostNetwork {
		e.hostPorts(at, c)
	}
	b, a := securityContext(was), securityContext(c)
	if on(b.Privileged, false) {
		// It already has every capability and the host's devices, and runs without
		// seccomp or AppArmor confinement: nothing in its own settings adds to that.
		return
	}
	sc := at.Child("securityContext")
	if on(a.Privileged, false) {
		e.forbid(sc.Child("privileged"), "may not make the container privileged")
	}
	if !equalBool(a.AllowPrivilegeEscalation, b.AllowPrivilegeEscalation) && rankEscalation(a.AllowPrivilegeEscalation) > rankEscalation(b.AllowPrivilegeEscalation) {
		e.forbid(sc.Child("allowPrivilegeEscalation"), "may not allow privilege escalation")
	}
	e.capabilities(sc.Child("capabilities"), b.Capabilities, a.Capabilities)
	if a.ProcMount != nil && *a.ProcMount == corev1.UnmaskedProcMount && (b.ProcMount == nil || *b.ProcMount != corev1.UnmaskedProcMount) {
		e.forbid(sc.Child("procMount"), "may not unmask /proc")
	}
	if hostProcess(a.WindowsOptions) && !hostProcess(b.WindowsOptions) {
		e.forbid(sc.Child("windowsOptions", "hostProcess"), "may not run the container as a Windows host process")
	}
	e.seLinux(sc, b.SELinuxOptions, a.SELinuxOptions)

	// Fields that default to the pod's: judged on the value in effect, and reported here
	// only when the container's own field changed (a pod-level change is reported there).
	pb, pa := e.before.SecurityContext, e.after.SecurityContext
	if pb == nil {
		pb = &corev1.PodSecurityContext{}
	}
	if pa == nil {
		pa = &corev1.PodSecurityContext{}
	}
	if !equalInt(b.RunAsUser, a.RunAsUser) {
		e.runAsUser(sc, orPod(b.RunAsUser, pb.RunAsUser), orPod(a.RunAsUser, pa.RunAsUser))
	}
	if !equalBool(b.RunAsNonRoot, a.RunAsNonRoot) {
		e.runAsNonRoot(sc, orPod(b.RunAsNonRoot, pb.RunAsNonRoot), orPod(a.RunAsNonRoot, pa.RunAsNonRoot))
	}
	if seccompType(b.SeccompProfile) != seccompType(a.SeccompProfile) {
		e.seccomp(sc, orPod(b.SeccompProfile, pb.SeccompProfile), orPod(a.SeccompProfile, pa.SeccompProfile))
	}
	if appArmorType(b.AppArmorProfile) != appArmorType(a.AppArmorProfile) {
		e.appArmor(sc, orPod(b.AppArmorProfile, pb.AppArmorProfile), orPod(a.AppArmorProfile, pa.AppArmorProfile))
	}
	e.mounts(at, was, c)
}

// capabilities refuses a capability the container did not have: added, or no longer
// dropped.
func (e *escalation) capabilities(at *field.Path, before, after *corev1.Capabilities) {
	if before == nil {
		before = &corev1.Capabilities{}
	}
	if after == nil {
		after = &corev1.Capabilities{}
	}
	added, dropped := capSet(before.Add), capSet(before.Drop)
	for i, c := range after.Add {
		if !added.Has(normCap(c)) {
			e.forbid(at.Child("add").Index(i), "may not add the capability %s", c)
		}
	}
	stillDropped := capSet(after.Drop)
	if stillDropped.Has("ALL") {
		return
	}
	for _, c := range sets.List(dropped) {
		if !stillDropped.Has(c) {
			e.forbid(at.Child("drop"), "may not stop dropping the capability %s", c)
		}
	}
}

// mounts refuses giving a container a host path it did not mount, or writing to one it
// mounted read-only.
func (e *escalation) mounts(at *field.Path, was, c *corev1.Container) {
	hostPaths := map[string]string{}
	for _, v := range e.after.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	for _, m := range c.VolumeMounts {
		host, ok := hostPaths[m.Name]
		if !ok {
			continue
		}
		covered, readOnly := false, false
		for _, w := range was.VolumeMounts {
			if w.Name == m.Name && (w.SubPath == "" || w.SubPath == m.SubPath) && w.SubPathExpr == m.SubPathExpr {
				covered = true
				readOnly = w.ReadOnly
				if !w.ReadOnly {
					break
				}
			}
		}
		mat := at.Child("volumeMounts").Key("mountPath=" + m.MountPath)
		switch {
		case !covered:
			e.forbid(mat, "may not mount the host path %q (volume %q) into this container", host, m.Name)
		case readOnly && !m.ReadOnly:
			e.forbid(mat.Child("readOnly"), "may not make the host path %q writable", host)
		}
	}
}

// hostPorts refuses opening a port on the node (a pod on the host network has them all).
func (e *escalation) hostPorts(at *field.Path, c *corev1.Container) {
	had := sets.New[string]()
	for _, list := range [][]corev1.Container{e.before.InitContainers, e.before.Containers} {
		for _, b := range list {
			for _, p := range b.Ports {
				had.Insert(fmt.Sprintf("%d/%s", p.HostPort, p.Protocol))
			}
		}
	}
	for _, p := range c.Ports {
		if p.HostPort != 0 && !had.Has(fmt.Sprintf("%d/%s", p.HostPort, p.Protocol)) {
			e.forbid(at.Child("ports").Key(fmt.Sprintf("containerPort=%d", p.ContainerPort)).Child("hostPort"), "may not open the host port %d", p.HostPort)
		}
	}
}

// annotations refuses the annotations that run a container unconfined.
func (e *escalation) annotations(at *field.Path, before, after map[string]string) {
	for _, k := range sets.List(sets.KeySet(after)) {
		profile := k == seccompPodAnnotation || strings.HasPrefix(k, seccompAnnotationPrefix) || strings.HasPrefix(k, appArmorAnnotationPrefix)
		if profile && strings.EqualFold(after[k], "unconfined") && !strings.EqualFold(before[k], "unconfined") {
			e.forbid(at.Key(k), "may not run unconfined")
		}
	}
}

func ephemeral(in []corev1.EphemeralContainer) []corev1.Container {
	out := make([]corev1.Container, len(in))
	for i := range in {
		out[i] = corev1.Container(in[i].EphemeralContainerCommon)
	}
	return out
}

func securityContext(c *corev1.Container) *corev1.SecurityContext {
	if c.SecurityContext == nil {
		return &corev1.SecurityContext{}
	}
	return c.SecurityContext
}

// on is the value of an optional boolean, def when unset.
func on(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// The ranks order a field's values from least to most privilege; unset sits between an
// explicit restriction and an explicit grant (an unset field takes a default the
// operator does not choose: the image's user, the runtime's profile).

func rankUser(uid *int64) int {
	switch {
	case uid == nil:
		return 1
	case *uid == 0:
		return 2
	}
	return 0
}

func rankNonRoot(b *bool) int {
	switch {
	case b == nil:
		return 1
	case *b:
		return 0
	}
	return 2
}

func rankEscalation(b *bool) int {
	switch {
	case b == nil:
		return 1
	case *b:
		return 2
	}
	return 0
}

func rankProfile(typ string) int {
	switch typ {
	case string(corev1.SeccompProfileTypeRuntimeDefault):
		return 0
	case string(corev1.SeccompProfileTypeUnconfined):
		return 2
	}
	return 1 // unset, or a profile on the node the operator cannot judge
}

func profileName(typ string) string {
	if typ == "" {
		return "unset"
	}
	return typ
}

func seccompType(p *corev1.SeccompProfile) string {
	if p == nil {
		return ""
	}
	return string(p.Type)
}

func appArmorType(p *corev1.AppArmorProfile) string {
	if p == nil {
		return ""
	}
	return string(p.Type)
}

func hostProcess(w *corev1.WindowsSecurityContextOptions) bool {
	return w != nil && on(w.HostProcess, false)
}

func projectsToken(was *corev1.Volume, token corev1.ServiceAccountTokenProjection) bool {
	if was == nil || was.Projected == nil {
		return false
	}
	for _, src := range was.Projected.Sources {
		if t := src.ServiceAccountToken; t != nil && t.Audience == token.Audience {
			return true
		}
	}
	return false
}

func cleanPath(p string) string { return path.Clean("/" + p) }

func normCap(c corev1.Capability) string {
	return strings.TrimPrefix(strings.ToUpper(string(c)), "CAP_")
}

func capSet(caps []corev1.Capability) sets.Set[string] {
	s := sets.New[string]()
	for _, c := range caps {
		s.Insert(normCap(c))
	}
	return s
}

func equalBool(a, b *bool) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
func equalInt(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// orPod is a container's own setting, or the pod's when it has none.
func orPod[T any](own, pod *T) *T {
	if own != nil {
		return own
	}
	return pod
}
