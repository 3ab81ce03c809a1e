package linstorsatellite

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/linstor-operator/linstor-operator/pkg/images"
)

// imageStreamKind is OpenShift's ImageStream, read as unstructured: the operator does
// not depend on OpenShift's API types for one read.
var imageStreamKind = schema.GroupVersionKind{Group: "image.openshift.io", Version: "v1", Kind: "ImageStream"}

// driverToolkit reads the cluster's driver-toolkit ImageStream for the loader of an
// RHCOS node; every other node needs none and costs no request. It is read around the
// cache, only for RHCOS nodes: the manager watches no kind that may not be served, so it
// starts the same on clusters without OpenShift's image API.
func (r *Reconciler) driverToolkit(ctx context.Context, node *corev1.Node) (images.DriverToolkit, error) {
	if images.DRBDKernelModules(node.Status.NodeInfo.OSImage) != images.DriverToolkitHeaders {
		return images.DriverToolkit{}, nil
	}
	stream := &unstructured.Unstructured{}
	stream.SetGroupVersionKind(imageStreamKind)
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: images.DriverToolkitNamespace, Name: images.DriverToolkitName}, stream)
	switch {
	case meta.IsNoMatchError(err):
		return images.DriverToolkit{Unavailable: "the image.openshift.io/v1 API is not served"}, nil
	case apierrors.IsNotFound(err):
		return images.DriverToolkit{Unavailable: "not found"}, nil
	case err != nil:
		return images.DriverToolkit{}, fmt.Errorf("reading ImageStream %s/%s: %w", images.DriverToolkitNamespace, images.DriverToolkitName, err)
	}
	return driverToolkitImages(stream), nil
}

// driverToolkitImages maps the ImageStream's tags to their images (spec.tags[].from.name),
// as Kernel Module Management does: every tag but "latest" is an RHCOS version.
func driverToolkitImages(stream *unstructured.Unstructured) images.DriverToolkit {
	out := images.DriverToolkit{Images: map[string]string{}}
	tags, _, _ := unstructured.NestedSlice(stream.Object, "spec", "tags")
	for _, t := range tags {
		tag, ok := t.(map[string]any)
		if !ok {
			continue
		}
		name, _, _ := unstructured.NestedString(tag, "name")
		image, _, _ := unstructured.NestedString(tag, "from", "name")
		if name != "" && name != "latest" && image != "" {
			out.Images[name] = image
		}
	}
	return out
}
