package images

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// OpenShift publishes the Driver Toolkit (the kernel-devel headers, and the compiler, of
// the RHCOS kernel of a release) as the ImageStream driver-toolkit in namespace openshift,
// with one tag per RHCOS version the cluster runs, named by that version
// ("418.94.202410090804-0"), beside "latest" (openshift/driver-toolkit
// docs/driver_toolkit_imagestream.md and manifests/01-openshift-imagestream.yaml, commit
// b63b175a79b9). Kernel Module Management finds its build image the same way: it maps
// every tag but "latest" to spec.tags[].from.name, and a node's osImage to its version
// (rh-ecosystem-edge/kernel-module-management internal/controllers/
// imagestream_reconciler.go and kernel_dtk_reconciler.go, commit 0419e2f0ea51).
const (
	DriverToolkitNamespace = "openshift"
	DriverToolkitName      = "driver-toolkit"
)

// nfdOSTreeVersion is Node Feature Discovery's label with the RHCOS version (the
// OSTREE_VERSION of the host's /etc/os-release), read where the osImage names none.
const nfdOSTreeVersion = "feature.node.kubernetes.io/system-os_release.OSTREE_VERSION"

// rhcosVersion reads the version from an RHCOS osImage: "<OpenShift 4.x><RHEL>.<build>"
// before OpenShift 4.19 ("Red Hat Enterprise Linux CoreOS 418.94.202410090804-0 (Plow)"),
// "<RHEL>.<date>-<n>" since ("Red Hat Enterprise Linux CoreOS 9.6.20250826-1 (Plow)").
var rhcosVersion = regexp.MustCompile(`^Red Hat Enterprise Linux CoreOS (\d+\.\d+\.\d+-\d+)\b`)

// RHCOSVersion returns the RHCOS version of a node from its status.nodeInfo.osImage, or
// else from Node Feature Discovery's OSTREE_VERSION label; "" when neither names one.
func RHCOSVersion(osImage string, labels map[string]string) string {
	if m := rhcosVersion.FindStringSubmatch(osImage); m != nil {
		return m[1]
	}
	return labels[nfdOSTreeVersion]
}

// DriverToolkit is the cluster's driver-toolkit ImageStream as the operator read it.
type DriverToolkit struct {
	// Images maps each RHCOS version (a tag) to its image (the tag's from.name).
	Images map[string]string
	// Unavailable says why there are no images: the image.openshift.io API is not
	// served, or the ImageStream does not exist. "" when the ImageStream was read.
	Unavailable string
}

// DriverToolkitMissingError: a node runs RHCOS, and no Driver Toolkit image matches its
// version. No loader is rendered for it: headers of another kernel cannot build DRBD.
type DriverToolkitMissingError struct {
	// Version is the node's RHCOS version; "" when the node does not say.
	Version string
	// Why names what is missing.
	Why string
}

func (e *DriverToolkitMissingError) Error() string {
	if e.Version == "" {
		return "no Driver Toolkit image for the node: " + e.Why
	}
	return fmt.Sprintf("no Driver Toolkit image for RHCOS %s: %s", e.Version, e.Why)
}

// ImageFor returns the Driver Toolkit image for RHCOS version, or a
// *DriverToolkitMissingError that names the version and the ImageStream.
func (t DriverToolkit) ImageFor(version string) (string, error) {
	stream := "ImageStream " + DriverToolkitNamespace + "/" + DriverToolkitName
	switch {
	case version == "":
		return "", &DriverToolkitMissingError{Why: "its osImage names no RHCOS version, and it has no " + nfdOSTreeVersion + " label"}
	case t.Unavailable != "":
		return "", &DriverToolkitMissingError{Version: version, Why: stream + ": " + t.Unavailable}
	}
	if img := t.Images[version]; img != "" {
		return img, nil
	}
	var tags []string
	for tag := range t.Images {
		tags = append(tags, tag)
	}
	slices.Sort(tags)
	have := "none"
	if len(tags) > 0 {
		have = strings.Join(tags, ", ")
	}
	return "", &DriverToolkitMissingError{Version: version, Why: fmt.Sprintf("%s has no tag %s (RHCOS tags: %s)", stream, version, have)}
}

// WithDriverToolkit returns the set with the cluster's Driver Toolkit images, which the
// loader of an RHCOS node compiles DRBD with. They are the OpenShift release's own images
// and are not moved by WithRepository (the cluster's mirror configuration serves them).
func (s Set) WithDriverToolkit(t DriverToolkit) Set {
	s.toolkit = t
	return s
}

// DriverToolkit is the cluster's Driver Toolkit as WithDriverToolkit set it.
func (s Set) DriverToolkit() DriverToolkit { return s.toolkit }
