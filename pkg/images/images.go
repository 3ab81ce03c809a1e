package images

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Component names one operand image.
type Component string

const (
	LinstorController Component = "LINSTOR_CONTROLLER"
	LinstorSatellite  Component = "LINSTOR_SATELLITE"
	LinstorCSI        Component = "LINSTOR_CSI"
	HAController      Component = "HA_CONTROLLER"
	DRBDShutdownGuard Component = "DRBD_SHUTDOWN_GUARD"
	DRBDReactor       Component = "DRBD_REACTOR"
	CSIAttacher       Component = "CSI_ATTACHER"
	CSILivenessProbe  Component = "CSI_LIVENESSPROBE"
	CSIProvisioner    Component = "CSI_PROVISIONER"
	CSISnapshotter    Component = "CSI_SNAPSHOTTER"
	CSIResizer        Component = "CSI_RESIZER"
	CSINodeRegistrar  Component = "CSI_NODE_DRIVER_REGISTRAR"
	CSIHealthMonitor  Component = "CSI_EXTERNAL_HEALTH_MONITOR"
	// Etcd and KubeAPIServer run the migration rehearsal's scratch API server on the
	// rehearsal pod's loopback (render.RehearsalJob). It serves LINSTOR's CRDs only, so
	// one pinned version serves every cluster (and a mirror lists exact images).
	Etcd                 Component = "ETCD"
	KubeAPIServer        Component = "KUBE_APISERVER"
	drbdLoaderPrefix               = "DRBD_MODULE_LOADER_"
	relatedImagePrefix             = "RELATED_IMAGE_"
	piraeus                        = "quay.io/piraeusdatastore/"
	sigStorage                     = "registry.k8s.io/sig-storage/"
	k8sRegistry                    = "registry.k8s.io/"
	drbdVersion                    = "v9.3.3"
	fallbackLoaderDistro           = "noble"
)

// LinstorVersion is the LINSTOR version this release pins.
const LinstorVersion = "1.33.3"

// defaults is the release's image set (docs/images.md: versions and their release notes).
var defaults = map[Component]string{
	LinstorController: piraeus + "piraeus-server:v" + LinstorVersion,
	LinstorSatellite:  piraeus + "piraeus-server:v" + LinstorVersion,
	LinstorCSI:        piraeus + "piraeus-csi:v1.12.0",
	HAController:      piraeus + "piraeus-ha-controller:v1.3.2",
	DRBDShutdownGuard: piraeus + "drbd-shutdown-guard:v1.1.2",
	DRBDReactor:       piraeus + "drbd-reactor:v1.12.0",
	CSIAttacher:       sigStorage + "csi-attacher:v4.12.0",
	CSILivenessProbe:  sigStorage + "livenessprobe:v2.19.0",
	CSIProvisioner:    sigStorage + "csi-provisioner:v6.3.0",
	CSISnapshotter:    sigStorage + "csi-snapshotter:v8.6.0",
	CSIResizer:        sigStorage + "csi-resizer:v2.2.1",
	CSINodeRegistrar:  sigStorage + "csi-node-driver-registrar:v2.17.0",
	CSIHealthMonitor:  sigStorage + "csi-external-health-monitor-controller:v0.18.0",
	// An etcd of the 3.6 series, which Kubernetes 1.34 runs on.
	Etcd:          k8sRegistry + "etcd:3.6.4-0",
	KubeAPIServer: k8sRegistry + "kube-apiserver:v1.34.2",
}

// retired are components earlier releases listed and nothing renders any more. Their
// RELATED_IMAGE_ variables are ignored, not refused: a mirror configuration written for
// an earlier release (a Subscription's spec.config.env) must not stop the operator.
var retired = map[string]bool{
	// ktls-utils (tlshd) serves DRBD's kernel TLS, which the operator does not offer.
	"KTLS_UTILS": true,
}

// loaderDistros are the DRBD module loader flavours, by the osImage that selects them,
// in match order (the first match wins).
var loaderDistros = []struct {
	match  *regexp.Regexp
	distro string
}{
	// RHCOS versions are <OpenShift 4.x>.<RHEL>.<build> up to OpenShift 4.18: 4.13 and
	// later run on RHEL 9. From 4.19 they are <RHEL>.<date>-<n> ("9.6.20250826-1").
	{regexp.MustCompile(`^Red Hat Enterprise Linux CoreOS ((41[3-9]|4[2-9][0-9])\b|9\.[0-9]+\.)`), "almalinux9"},
	{regexp.MustCompile(`^Red Hat Enterprise Linux CoreOS 10\.[0-9]+\.`), "almalinux10"},
	{regexp.MustCompile(`^Red Hat Enterprise Linux CoreOS`), "almalinux8"},
	{regexp.MustCompile(`^Red Hat Enterprise Linux .*10\.`), "almalinux10"},
	{regexp.MustCompile(`^Red Hat Enterprise Linux .*7\.`), "centos7"},
	{regexp.MustCompile(`^Red Hat Enterprise Linux .*8\.`), "almalinux8"},
	{regexp.MustCompile(`^Red Hat Enterprise Linux .*9\.`), "almalinux9"},
	{regexp.MustCompile(`^CentOS Linux 7`), "centos7"},
	{regexp.MustCompile(`^(CentOS Linux 8|AlmaLinux 8|Oracle Linux Server 8\.|Rocky Linux 8)`), "almalinux8"},
	{regexp.MustCompile(`^(AlmaLinux 9|Oracle Linux Server 9\.|Rocky Linux 9)`), "almalinux9"},
	{regexp.MustCompile(`^(AlmaLinux 10|Oracle Linux Server 10\.|Rocky Linux 10)`), "almalinux10"},
	{regexp.MustCompile(`^Ubuntu 18\.04`), "bionic"},
	{regexp.MustCompile(`^Ubuntu 20\.04`), "focal"},
	{regexp.MustCompile(`^Ubuntu 22\.04`), "jammy"},
	{regexp.MustCompile(`^Ubuntu 24\.04`), "noble"},
	{regexp.MustCompile(`^Ubuntu 26\.04`), "resolute"},
	{regexp.MustCompile(`^Debian GNU/Linux 13`), "trixie"},
	{regexp.MustCompile(`^Debian GNU/Linux 12`), "bookworm"},
	{regexp.MustCompile(`^Debian GNU/Linux 11`), "bullseye"},
	{regexp.MustCompile(`^Debian GNU/Linux 10`), "buster"},
}

// Set is the image of every component for this operator process.
type Set struct {
	images  map[Component]string
	loaders map[string]string // distro -> image
	// versioned are the LINSTOR controller and satellite images of other LINSTOR
	// versions the release runs (stepping stones, rollback targets), by version, from
	// RELATED_IMAGE_LINSTOR_<COMPONENT>_<X_Y_Z>: a mirror that pins digests pins them too.
	versioned map[string]map[Component]string
	// operator is the operator's own image (RELATED_IMAGE_OPERATOR, which the bundle
	// sets), run by the migration rehearsal's prepare and load steps; "" when unknown.
	operator string
	// toolkit is the cluster's Driver Toolkit (WithDriverToolkit), for RHCOS nodes.
	toolkit DriverToolkit
}

// Default returns the compiled-in set.
func Default() Set {
	s := Set{images: map[Component]string{}, loaders: map[string]string{}}
	for c, img := range defaults {
		s.images[c] = img
	}
	for _, d := range loaderDistros {
		s.loaders[d.distro] = loaderImage(d.distro)
	}
	s.loaders[fallbackLoaderDistro] = loaderImage(fallbackLoaderDistro)
	return s
}

// retiredLoaders are flavours piraeus no longer builds, with the last DRBD version it
// built them at: their nodes keep that image rather than one that does not exist.
var retiredLoaders = map[string]string{"centos7": "v9.2.13", "bionic": "v9.2.13", "focal": "v9.2.13", "buster": "v9.2.14"}

func loaderImage(distro string) string {
	version := drbdVersion
	if last, ok := retiredLoaders[distro]; ok {
		version = last
	}
	return piraeus + "drbd9-" + distro + ":" + version
}

// FromEnv overrides the defaults with RELATED_IMAGE_<COMPONENT> and
// RELATED_IMAGE_DRBD_MODULE_LOADER_<DISTRO> variables. Unknown RELATED_IMAGE_ names are
// an error: a typo in a mirror configuration must not silently pull the default.
func FromEnv(environ []string) (Set, error) {
	s := Default()
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, relatedImagePrefix) {
			continue
		}
		key := strings.TrimPrefix(name, relatedImagePrefix)
		if retired[key] {
			continue
		}
		if key == "OPERATOR" {
			if value != "" && !strings.ContainsAny(value, " \t\n") {
				s.operator = value
			}
			continue
		}
		if value == "" || strings.ContainsAny(value, " \t\n") {
			return Set{}, fmt.Errorf("%s=%q is not an image reference", name, value)
		}
		if distro, ok := strings.CutPrefix(key, drbdLoaderPrefix); ok {
			distro = strings.ToLower(distro)
			if _, known := s.loaders[distro]; !known {
				return Set{}, fmt.Errorf("%s: unknown DRBD module loader flavour %q", name, distro)
			}
			s.loaders[distro] = value
			continue
		}
		if c, version, ok := versionedKey(key); ok {
			if s.versioned == nil {
				s.versioned = map[string]map[Component]string{}
			}
			if s.versioned[version] == nil {
				s.versioned[version] = map[Component]string{}
			}
			s.versioned[version][c] = value
			continue
		}
		if _, known := s.images[Component(key)]; !known {
			return Set{}, fmt.Errorf("%s: unknown component %q (known: %s)", name, key, strings.Join(Components(), ", "))
		}
		s.images[Component(key)] = value
	}
	return s, nil
}

// Operator is the operator's own image, "" when RELATED_IMAGE_OPERATOR is not set.
func (s Set) Operator() string { return s.operator }

// Image returns the image of c.
func (s Set) Image(c Component) string { return s.images[c] }

// DRBDModuleLoader returns the loader image for a node's status.nodeInfo.osImage.
func (s Set) DRBDModuleLoader(osImage string) string {
	for _, d := range loaderDistros {
		if d.match.MatchString(osImage) {
			return s.loaders[d.distro]
		}
	}
	return s.loaders[fallbackLoaderDistro]
}

// Related lists every image as RELATED_IMAGE_* name and value, sorted, for the CSV.
func (s Set) Related() [][2]string {
	var out [][2]string
	for c, img := range s.images {
		out = append(out, [2]string{relatedImagePrefix + string(c), img})
	}
	for d, img := range s.loaders {
		out = append(out, [2]string{relatedImagePrefix + drbdLoaderPrefix + strings.ToUpper(d), img})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// Components lists the component names.
func Components() []string {
	var out []string
	for c := range defaults {
		out = append(out, string(c))
	}
	sort.Strings(out)
	return out
}

// ForLinstor returns the set with the LINSTOR controller and satellite images of the
// given version. The release's own version keeps its (possibly overridden) images;
// another version takes the same repository with tag "v<version>". "" changes nothing.
func (s Set) ForLinstor(version string) Set {
	if version == "" || version == LinstorVersion {
		return s
	}
	out := Set{images: map[Component]string{}, loaders: s.loaders, versioned: s.versioned, operator: s.operator, toolkit: s.toolkit}
	for c, img := range s.images {
		out.images[c] = img
	}
	for _, c := range []Component{LinstorController, LinstorSatellite} {
		if img := s.versioned[version][c]; img != "" {
			out.images[c] = img
		} else {
			out.images[c] = withTag(s.images[c], "v"+version)
		}
	}
	return out
}

var versionedName = regexp.MustCompile(`^(LINSTOR_CONTROLLER|LINSTOR_SATELLITE)_([0-9]+)_([0-9]+)_([0-9]+)$`)

// versionedKey reads "LINSTOR_CONTROLLER_1_33_2" as the controller image of 1.33.2.
func versionedKey(key string) (Component, string, bool) {
	m := versionedName.FindStringSubmatch(key)
	if m == nil {
		return "", "", false
	}
	return Component(m[1]), m[2] + "." + m[3] + "." + m[4], true
}

// VersionedName is the RELATED_IMAGE_ variable FromEnv reads as c's image for LINSTOR
// version: RELATED_IMAGE_LINSTOR_CONTROLLER_1_33_2.
func VersionedName(c Component, version string) string {
	return relatedImagePrefix + string(c) + "_" + strings.ReplaceAll(version, ".", "_")
}

// withTag replaces the tag (or digest) of an image reference.
func withTag(ref, tag string) string {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref + ":" + tag
}
