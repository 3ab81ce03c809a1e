package render

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
)

// The admission webhooks judge a patch before anything is rendered: they render each
// component as the operator would without the patch, apply the patch to that, and
// compare (PodTemplateEscalation). Only security fields are compared, so any image set
// serves, and a made-up node stands in for the nodes a satellite will run on.

// probeNode is the node the webhooks render a satellite for.
const probeNode = "node"

// ClusterPodTemplateErrors returns, for every podTemplate patch of the cluster, what the
// patch adds in privilege to the pod the operator renders without it, under the
// cluster's spec.podTemplatePolicy. Disabled components are checked too (enabling one
// must not bring in a refused patch). A patch that does not apply is left to the syntax
// check.
func ClusterPodTemplateErrors(cluster *linstorv1.LinstorCluster, imgs images.Set) field.ErrorList {
	bare := withoutPatches(cluster)
	spec := field.NewPath("spec")
	var errs field.ErrorList
	check := func(patch *runtime.RawExtension, at *field.Path, render func() (Objects, error), workload string) {
		if patch == nil || len(patch.Raw) == 0 {
			return
		}
		objs, err := render()
		if err != nil {
			return
		}
		errs = append(errs, patchErrors(cluster.Spec.PodTemplatePolicy, podTemplateOf(objs, workload), patch, at)...)
	}
	s := cluster.Spec
	if s.Controller != nil {
		check(s.Controller.PodTemplate, spec.Child("controller", "podTemplate"),
			func() (Objects, error) { return Controller(bare, imgs) }, names.ControllerName)
	}
	if s.Satellite != nil {
		check(s.Satellite.PodTemplate, spec.Child("satellite", "podTemplate"),
			func() (Objects, error) {
				return Satellite(bare, probeSatellite(bare, ""), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: probeNode}}, imgs)
			},
			names.SatelliteDaemonSetName(probeNode))
	}
	if s.CSI != nil {
		csi := func() (Objects, error) { return CSI(bare, imgs, "http://"+names.ControllerName) }
		if s.CSI.Controller != nil {
			check(s.CSI.Controller.PodTemplate, spec.Child("csi", "controller", "podTemplate"), csi, names.CSIControllerName)
		}
		if s.CSI.Node != nil {
			check(s.CSI.Node.PodTemplate, spec.Child("csi", "node", "podTemplate"), csi, names.CSINodeName)
		}
	}
	if s.HighAvailabilityController != nil {
		check(s.HighAvailabilityController.PodTemplate, spec.Child("highAvailabilityController", "podTemplate"),
			func() (Objects, error) { return HAController(bare, imgs) }, names.HAControllerName)
	}
	return errs
}

// SatelliteConfigurationPodTemplateErrors returns what the podTemplate patch of cfg adds
// in privilege to the satellite pod as cluster renders it (its spec.satellite
// podTemplate applied, unless that one is refused itself), under the cluster's policy.
// cluster is nil when there is none: then the default policy, Restricted, applies.
func SatelliteConfigurationPodTemplateErrors(cluster *linstorv1.LinstorCluster, cfg *linstorv1.LinstorSatelliteConfiguration, imgs images.Set) field.ErrorList {
	patch := cfg.Spec.PodTemplate
	if patch == nil || len(patch.Raw) == 0 {
		return nil
	}
	if cluster == nil {
		cluster = &linstorv1.LinstorCluster{}
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: probeNode}}
	objs, err := Satellite(cluster, probeSatellite(cluster, cfg.Spec.DRBDModuleLoader), node, imgs)
	if err != nil {
		bare := withoutPatches(cluster)
		if objs, err = Satellite(bare, probeSatellite(bare, cfg.Spec.DRBDModuleLoader), node, imgs); err != nil {
			return nil
		}
	}
	return patchErrors(cluster.Spec.PodTemplatePolicy, podTemplateOf(objs, names.SatelliteDaemonSetName(probeNode)), patch, field.NewPath("spec", "podTemplate"))
}

func patchErrors(policy linstorv1.PodTemplatePolicy, before *corev1.PodTemplateSpec, patch *runtime.RawExtension, at *field.Path) field.ErrorList {
	if before == nil {
		return nil
	}
	after, err := strategicPatch(before, patch)
	if err != nil {
		return nil // the webhook's syntax check names what is wrong with it
	}
	return PodTemplateEscalation(policy, before, after, at)
}

// withoutPatches is the cluster without any podTemplate patch, every component enabled.
func withoutPatches(cluster *linstorv1.LinstorCluster) *linstorv1.LinstorCluster {
	bare := cluster.DeepCopy()
	s := &bare.Spec
	s.ExternalController = nil
	if s.Controller == nil {
		s.Controller = &linstorv1.ControllerSpec{}
	}
	s.Controller.Enabled, s.Controller.PodTemplate = ptr.To(true), nil
	if s.Satellite != nil {
		s.Satellite.PodTemplate = nil
	}
	if s.CSI == nil {
		s.CSI = &linstorv1.CSISpec{}
	}
	s.CSI.Enabled = ptr.To(true)
	for _, c := range []**linstorv1.ComponentSpec{&s.CSI.Controller, &s.CSI.Node} {
		if *c == nil {
			*c = &linstorv1.ComponentSpec{}
		}
		(*c).Enabled, (*c).PodTemplate = ptr.To(true), nil
	}
	if s.HighAvailabilityController == nil {
		s.HighAvailabilityController = &linstorv1.ComponentSpec{}
	}
	s.HighAvailabilityController.Enabled, s.HighAvailabilityController.PodTemplate = ptr.To(true), nil
	return bare
}

// probeSatellite is the LinstorSatellite of the probe node, without a patch of its own.
func probeSatellite(cluster *linstorv1.LinstorCluster, loader linstorv1.DRBDModuleLoader) *linstorv1.LinstorSatellite {
	return &linstorv1.LinstorSatellite{
		ObjectMeta: metav1.ObjectMeta{Name: probeNode, Namespace: cluster.Namespace},
		Spec:       linstorv1.LinstorSatelliteSpec{ClusterRef: linstorv1.ClusterReference{Name: cluster.Name}, DRBDModuleLoader: loader},
	}
}

// podTemplateOf finds the pod template of the named Deployment or DaemonSet.
func podTemplateOf(objs Objects, name string) *corev1.PodTemplateSpec {
	for _, o := range objs {
		switch w := o.(type) {
		case *appsv1.Deployment:
			if w.Name == name {
				return &w.Spec.Template
			}
		case *appsv1.DaemonSet:
			if w.Name == name {
				return &w.Spec.Template
			}
		}
	}
	return nil
}
