package api

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

type obj = map[string]any
type list = []any

func newObject(version, kind, name string, spec obj) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: obj{"spec": spec}}
	u.SetAPIVersion("linstor.io/" + version)
	u.SetKind(kind)
	u.SetName(name)
	return u
}

func pool(name string, fields obj) obj {
	p := obj{"name": name}
	for k, v := range fields {
		p[k] = v
	}
	return p
}

// invalidCases are objects the API server must refuse, with the message the user sees.
var invalidCases = []struct {
	name, version, kind string
	spec                obj
	want                string
}{
	// LinstorCluster v1: schema.
	{"replicas below 1", "v1", "LinstorCluster", obj{"controller": obj{"replicas": 0}}, "spec.controller.replicas: Invalid value: 0: spec.controller.replicas in body should be greater than or equal to 1"},
	{"replicas above 5", "v1", "LinstorCluster", obj{"controller": obj{"replicas": 6}}, "spec.controller.replicas in body should be less than or equal to 5"},
	{"replicas not a number", "v1", "LinstorCluster", obj{"controller": obj{"replicas": "two"}}, "spec.controller.replicas in body must be of type integer"},
	{"image with a space", "v1", "LinstorCluster", obj{"controller": obj{"image": "quay.io/x y"}}, "spec.controller.image in body should match"},
	{"csi enabled not a boolean", "v1", "LinstorCluster", obj{"csi": obj{"enabled": "yes"}}, "spec.csi.enabled in body must be of type boolean"},
	{"unknown database type", "v1", "LinstorCluster", obj{"database": obj{"type": "mysql"}}, `spec.database.type: Unsupported value: "mysql": supported values: "k8s", "external"`},
	{"external database without URL", "v1", "LinstorCluster", obj{"database": obj{"type": "external"}}, "spec.database.connectionURL is required when spec.database.type is external"},
	{"k8s database with URL", "v1", "LinstorCluster", obj{"database": obj{"type": "k8s", "connectionURL": "jdbc:postgresql://db/x"}}, "spec.database.connectionURL and clientCertificateSecretRef are only allowed when spec.database.type is external"},
	{"database URL scheme", "v1", "LinstorCluster", obj{"database": obj{"type": "external", "connectionURL": "postgres://db"}}, "spec.database.connectionURL in body should match"},
	{"unknown TLS mode", "v1", "LinstorCluster", obj{"tls": obj{"internal": obj{"mode": "Magic"}}}, `spec.tls.internal.mode: Unsupported value: "Magic"`},
	{"TLS Secret mode without secret", "v1", "LinstorCluster", obj{"tls": obj{"api": obj{"mode": "Secret", "clientSecretName": "c"}}}, "secretName is required when mode is Secret"},
	{"API TLS Secret mode without client secret", "v1", "LinstorCluster", obj{"tls": obj{"api": obj{"mode": "Secret", "secretName": "s"}}}, "spec.tls.api.clientSecretName is required when mode is Secret"},
	{"client secret on the internal channel", "v1", "LinstorCluster", obj{"tls": obj{"internal": obj{"clientSecretName": "c"}}}, "spec.tls.internal.clientSecretName: only the api channel has client certificates"},
	{"TLS CertManager without issuer", "v1", "LinstorCluster", obj{"tls": obj{"api": obj{"mode": "CertManager"}}}, "issuerRef is required when mode is CertManager"},
	{"issuer without CertManager", "v1", "LinstorCluster", obj{"tls": obj{"internal": obj{"issuerRef": obj{"name": "ca"}}}}, "issuerRef is only allowed when mode is CertManager"},
	{"issuer kind", "v1", "LinstorCluster", obj{"tls": obj{"api": obj{"mode": "CertManager", "issuerRef": obj{"name": "ca", "kind": "Vault"}}}}, `spec.tls.api.issuerRef.kind: Unsupported value: "Vault"`},
	{"TLS secret name", "v1", "LinstorCluster", obj{"tls": obj{"api": obj{"mode": "Secret", "secretName": "Bad_Name"}}}, "spec.tls.api.secretName in body should match"},
	{"external controller ftp URL", "v1", "LinstorCluster", obj{"externalController": obj{"url": "ftp://linstor:3370"}}, "spec.externalController.url must be an http:// or https:// URL"},
	{"external controller not a URL", "v1", "LinstorCluster", obj{"externalController": obj{"url": "linstor controller"}}, "spec.externalController.url must be an http:// or https:// URL"},
	{"external controller without url", "v1", "LinstorCluster", obj{"externalController": obj{}}, "spec.externalController.url: Required value"},
	{"version not semver", "v1", "LinstorCluster", obj{"version": "latest"}, "spec.version in body should match"},
	{"upgrade policy", "v1", "LinstorCluster", obj{"upgrade": obj{"policy": "Sometimes"}}, `spec.upgrade.policy: Unsupported value: "Sometimes": supported values: "Automatic", "Manual"`},
	{"duplicate controller property", "v1", "LinstorCluster", obj{"properties": list{obj{"name": "Aux/a", "value": "1"}, obj{"name": "Aux/a", "value": "2"}}}, `spec.properties[1]: Duplicate value: {"name":"Aux/a"}`},
	{"empty property name", "v1", "LinstorCluster", obj{"properties": list{obj{"name": ""}}}, "spec.properties[0].name in body should be at least 1 chars long"},
	{"property name with leading slash", "v1", "LinstorCluster", obj{"properties": list{obj{"name": "/Aux/x"}}}, "spec.properties[0].name in body should match"},
	{"passphrase secret name", "v1", "LinstorCluster", obj{"passphraseSecretRef": obj{"name": "Bad_Name"}}, "spec.passphraseSecretRef.name in body should match"},
	// LinstorSatelliteConfiguration v1.
	{"pool with two types", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("pool", obj{"lvmPool": obj{}, "zfsPool": obj{}})}}, "spec.storagePools[0]: Invalid value: \"object\": exactly one of lvmPool, lvmThinPool, zfsPool, zfsThinPool, filePool, fileThinPool must be set"},
	{"pool without type", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("pool", nil)}}, "exactly one of lvmPool, lvmThinPool, zfsPool, zfsThinPool, filePool, fileThinPool must be set"},
	{"pool name starting with a digit", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("1pool", obj{"lvmPool": obj{}})}}, "spec.storagePools[0].name in body should match"},
	{"duplicate pool names", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("pool", obj{"lvmPool": obj{}}), pool("pool", obj{"zfsPool": obj{}})}}, "spec.storagePools[1]: Duplicate value"},
	{"host devices for a file pool", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("pool", obj{"filePool": obj{}, "source": obj{"hostDevices": list{"/dev/vdb"}}})}}, "source (hostDevices or discover) is only allowed for LVM and ZFS pools"},
	// Storage discovery: the schema's part; the webhook's part below.
	{"discovery for a file pool", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("pool", obj{"fileThinPool": obj{}, "source": obj{"discover": obj{"rotational": false}}})}}, "source (hostDevices or discover) is only allowed for LVM and ZFS pools"},
	{"empty discovery matcher", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("pool", obj{"lvmThinPool": obj{}, "source": obj{"discover": obj{"dryRun": true}}})}}, "spec.storagePools[0].source.discover: Invalid value: \"object\": discover needs at least one of minSize, maxSize, media (Rotational or SolidState), models or devicePaths: an empty matcher would claim every unused disk of every node"},
	{"host devices and discovery", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("pool", obj{"lvmThinPool": obj{}, "source": obj{"hostDevices": list{"/dev/vdb"}, "discover": obj{"rotational": false}}})}}, "spec.storagePools[0].source: Invalid value: \"object\": exactly one of hostDevices or discover must be set"},
	{"empty source", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("pool", obj{"lvmThinPool": obj{}, "source": obj{}})}}, "exactly one of hostDevices or discover must be set"},
	{"discovery path outside /dev", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("pool", obj{"lvmThinPool": obj{}, "source": obj{"discover": obj{"devicePaths": list{"nvme*"}}}})}}, "spec.storagePools[0].source.discover.devicePaths[0] in body should match"},
	{"discovery limit of zero", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("pool", obj{"lvmThinPool": obj{}, "source": obj{"discover": obj{"rotational": false, "maxDisksPerNode": 0}}})}}, "spec.storagePools[0].source.discover.maxDisksPerNode: Invalid value: 0: spec.storagePools[0].source.discover.maxDisksPerNode in body should be greater than or equal to 1"},
	{"discovery size not a quantity", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("pool", obj{"lvmThinPool": obj{}, "source": obj{"discover": obj{"minSize": "big"}}})}}, "spec.storagePools[0].source.discover.minSize"},
	{"host device outside /dev", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("pool", obj{"lvmPool": obj{}, "source": obj{"hostDevices": list{"sdb"}}})}}, "spec.storagePools[0].source.hostDevices[0] in body should match"},
	{"no host devices", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("pool", obj{"lvmPool": obj{}, "source": obj{"hostDevices": list{}}})}}, "spec.storagePools[0].source.hostDevices in body should have at least 1 items"},
	{"relative file pool directory", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("pool", obj{"filePool": obj{"directory": "pools/p"}})}}, "spec.storagePools[0].filePool.directory in body should match"},
	{"volume group with a space", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("pool", obj{"lvmThinPool": obj{"volumeGroup": "my vg"}})}}, "spec.storagePools[0].lvmThinPool.volumeGroup in body should match"},
	{"NIC by name and CIDR", "v1", "LinstorSatelliteConfiguration", obj{"netInterfaces": list{obj{"name": "data", "interfaceName": "eth1", "cidr": "10.0.0.0/24"}}}, "exactly one of interfaceName or cidr must be set"},
	// LINSTOR's own rules (names, property whitelist), refused at admission.
	{"pool name shorter than LINSTOR allows", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("ab", obj{"lvmPool": obj{}})}}, "spec.storagePools[0].name in body should be at least 3 chars long"},
	{"NIC name shorter than LINSTOR allows", "v1", "LinstorSatelliteConfiguration", obj{"netInterfaces": list{obj{"name": "lo", "cidr": "10.0.0.0/24"}}}, "spec.netInterfaces[0].name in body should be at least 3 chars long"},
	{"NIC name longer than LINSTOR allows", "v1", "LinstorSatelliteConfiguration", obj{"netInterfaces": list{obj{"name": strings.Repeat("n", 33), "cidr": "10.0.0.0/24"}}}, "spec.netInterfaces[0].name: Too long"},
	{"pool names differing in case only", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("thin", obj{"lvmThinPool": obj{}}), pool("THIN", obj{"lvmThinPool": obj{}})}}, "spec.storagePools[1].name: Duplicate value"},
	{"the default diskless pool", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("DfltDisklessStorPool", obj{"lvmPool": obj{}})}}, "spec.storagePools[0].name: Invalid value: \"DfltDisklessStorPool\": is the default diskless pool"},
	{"node property LINSTOR does not know", "v1", "LinstorSatelliteConfiguration", obj{"properties": list{obj{"name": "DrbdOptions/Net/protocol", "value": "C"}}}, `spec.properties[0].name: Invalid value: "DrbdOptions/Net/protocol"`},
	{"node property value LINSTOR refuses", "v1", "LinstorSatelliteConfiguration", obj{"properties": list{obj{"name": "DrbdOptions/AutoEvictAllowEviction", "value": "maybe"}}}, `spec.properties[0].value: Invalid value: "maybe"`},
	{"the controller's own node property", "v1", "LinstorSatelliteConfiguration", obj{"properties": list{obj{"name": "CurStltConnName", "value": "x"}}}, `spec.properties[0].name: Invalid value: "CurStltConnName"`},
	{"pool property LINSTOR does not know", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("thin", obj{"lvmThinPool": obj{}, "properties": list{obj{"name": "Foo/Bar", "value": "1"}}})}}, `spec.storagePools[0].properties[0].name: Invalid value: "Foo/Bar"`},
	{"controller property value LINSTOR refuses", "v1", "LinstorCluster", obj{"properties": list{obj{"name": "DrbdOptions/Net/protocol", "value": "c"}}}, `spec.properties[0].value: Invalid value: "c"`},
	{"node connection property LINSTOR does not know", "v1", "LinstorNodeConnection", obj{"properties": list{obj{"name": "DrbdOptions/Disk/on-io-error", "value": "detach"}}}, `spec.properties[0].name: Invalid value: "DrbdOptions/Disk/on-io-error"`},
	{"NIC with neither", "v1", "LinstorSatelliteConfiguration", obj{"netInterfaces": list{obj{"name": "data"}}}, "exactly one of interfaceName or cidr must be set"},
	{"NIC CIDR out of range", "v1", "LinstorSatelliteConfiguration", obj{"netInterfaces": list{obj{"name": "data", "cidr": "10.0.0.0/33"}}}, "cidr must be a network in CIDR notation, such as 10.0.1.0/24"},
	{"two active NICs", "v1", "LinstorSatelliteConfiguration", obj{"netInterfaces": list{obj{"name": "a", "cidr": "10.0.0.0/24", "active": true}, obj{"name": "b", "interfaceName": "eth2", "active": true}}}, "spec.netInterfaces: at most one interface may be active"},
	{"property value and valueFrom", "v1", "LinstorSatelliteConfiguration", obj{"properties": list{obj{"name": "Aux/z", "value": "a", "valueFrom": obj{"nodeFieldRef": "metadata.name"}}}}, "value, valueFrom and expandFrom are mutually exclusive"},
	{"property valueFrom and expandFrom", "v1", "LinstorSatelliteConfiguration", obj{"properties": list{obj{"name": "Aux/z", "valueFrom": obj{"nodeFieldRef": "metadata.name"}, "expandFrom": obj{"nodeFieldRef": "metadata.labels['zone/*']"}}}}, "value, valueFrom and expandFrom are mutually exclusive"},
	{"expandFrom nameTemplate and delimiter", "v1", "LinstorSatelliteConfiguration", obj{"properties": list{obj{"name": "Aux/z", "expandFrom": obj{"nodeFieldRef": "metadata.labels['zone/*']", "nameTemplate": "/$1", "delimiter": ","}}}}, "nameTemplate and delimiter are mutually exclusive"},
	{"expandFrom without a wildcard", "v1", "LinstorSatelliteConfiguration", obj{"properties": list{obj{"name": "Aux/z", "expandFrom": obj{"nodeFieldRef": "metadata.labels['zone']"}}}}, "spec.properties[0].expandFrom.nodeFieldRef"},
	{"configuration nodeAffinity without terms", "v1", "LinstorSatelliteConfiguration", obj{"nodeAffinity": obj{"nodeSelectorTerms": list{}}}, "spec.nodeAffinity.nodeSelectorTerms: Required value"},
	{"configuration nodeAffinity with a bad operator", "v1", "LinstorSatelliteConfiguration", obj{"nodeAffinity": obj{"nodeSelectorTerms": list{obj{"matchExpressions": list{obj{"key": "disk", "operator": "in", "values": list{"nvme"}}}}}}}, "spec.nodeAffinity.nodeSelectorTerms[0].matchExpressions[0].operator"},
	{"caReference with mode Generated", "v1", "LinstorCluster", obj{"tls": obj{"internal": obj{"mode": "Generated", "caReference": obj{"name": "ca"}}}}, "caReference is only allowed when mode is Secret or CertManager"},
	{"node field ref outside metadata", "v1", "LinstorSatelliteConfiguration", obj{"properties": list{obj{"name": "Aux/z", "valueFrom": obj{"nodeFieldRef": "spec.podCIDR"}}}}, "spec.properties[0].valueFrom.nodeFieldRef in body should match"},
	{"deletion policy", "v1", "LinstorSatelliteConfiguration", obj{"deletionPolicy": "Destroy"}, `spec.deletionPolicy: Unsupported value: "Destroy": supported values: "Retain", "Evacuate", "Delete"`},
	{"zero concurrent evacuations", "v1", "LinstorSatelliteConfiguration", obj{"maxConcurrentEvacuations": 0}, "spec.maxConcurrentEvacuations in body should be greater than or equal to 1"},
	// LinstorNodeConnection v1.
	{"unknown selector operator", "v1", "LinstorNodeConnection", obj{"selector": list{obj{"matchLabels": list{obj{"key": "zone", "op": "Near"}}}}}, `spec.selector[0].matchLabels[0].op: Unsupported value: "Near"`},
	{"In without values", "v1", "LinstorNodeConnection", obj{"selector": list{obj{"matchLabels": list{obj{"key": "zone", "op": "In"}}}}}, "values must be set for In and NotIn, and only for them"},
	{"Same with values", "v1", "LinstorNodeConnection", obj{"selector": list{obj{"matchLabels": list{obj{"key": "zone", "op": "Same", "values": list{"a"}}}}}}, "values must be set for In and NotIn, and only for them"},
	{"path without interface", "v1", "LinstorNodeConnection", obj{"paths": list{obj{"name": "data"}}}, "spec.paths[0].interface: Required value"},
	// Values Kubernetes refuses in the rendered pods, checked as Kubernetes checks them.
	{"node selector label value", "v1", "LinstorCluster", obj{"nodeSelector": obj{"zone": "not a value"}}, `spec.nodeSelector: Invalid value: "not a value": a valid label must be an empty string or consist of alphanumeric characters`},
	{"component node selector key", "v1", "LinstorCluster", obj{"satellite": obj{"nodeSelector": obj{"-bad": "x"}}}, `spec.satellite.nodeSelector: Invalid value: "-bad"`},
	{"toleration operator", "v1", "LinstorCluster", obj{"controller": obj{"tolerations": list{obj{"key": "storage", "operator": "Sometimes"}}}}, `spec.controller.tolerations[0].operator: Unsupported value: "Sometimes": supported values: "Equal", "Exists"`},
	{"toleration value with Exists", "v1", "LinstorCluster", obj{"csi": obj{"node": obj{"tolerations": list{obj{"key": "storage", "operator": "Exists", "value": "x"}}}}}, "spec.csi.node.tolerations[0].value: Invalid value: \"x\": value must be empty when operator is Exists"},
	{"toleration seconds without NoExecute", "v1", "LinstorCluster", obj{"satellite": obj{"tolerations": list{obj{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}}}}, "effect must be NoExecute when tolerationSeconds is set"},
	{"requests above limits", "v1", "LinstorCluster", obj{"controller": obj{"resources": obj{"requests": obj{"memory": "2Gi"}, "limits": obj{"memory": "1Gi"}}}}, `spec.controller.resources.requests[memory]: Invalid value: "2Gi": must be less than or equal to memory limit of 1Gi`},
	{"node affinity operator", "v1", "LinstorCluster", obj{"highAvailabilityController": obj{"affinity": obj{"nodeAffinity": obj{"requiredDuringSchedulingIgnoredDuringExecution": obj{"nodeSelectorTerms": list{obj{"matchExpressions": list{obj{"key": "zone", "operator": "In"}}}}}}}}}, "spec.highAvailabilityController.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Required value"},
	{"external controller URL without a host", "v1", "LinstorCluster", obj{"externalController": obj{"url": "https://:3371"}, "controller": obj{"enabled": false}}, `spec.externalController.url: Invalid value: "https://:3371": must name a host`},
	{"etcd URL without a host", "v1", "LinstorCluster", obj{"database": obj{"type": "external", "connectionURL": "etcd:///linstor"}}, `spec.database.connectionURL: Invalid value: "etcd:///linstor": must name the database's host`},
	{"restore from a backup that does not exist", "v1", "LinstorCluster", obj{"database": obj{"restoreFrom": "no-such-backup"}}, `spec.database.restoreFrom: Not found: "no-such-backup"`},
	{"restore from a name that cannot exist", "v1", "LinstorCluster", obj{"database": obj{"restoreFrom": "Bad_Name"}}, `spec.database.restoreFrom: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain`},
	{"monitoring mode", "v1", "LinstorCluster", obj{"monitoring": obj{"mode": "On"}}, `spec.monitoring.mode: Unsupported value: "On": supported values: "Auto", "Enabled", "Disabled"`},
	{"connection selector key", "v1", "LinstorNodeConnection", obj{"selector": list{obj{"matchLabels": list{obj{"key": "bad key", "op": "Same"}}}}}, `spec.selector[0].matchLabels[0].key: Invalid value: "bad key"`},
	{"connection selector value", "v1", "LinstorNodeConnection", obj{"selector": list{obj{"matchLabels": list{obj{"key": "zone", "op": "In", "values": list{"a b"}}}}}}, `spec.selector[0].matchLabels[0].values[0]: Invalid value: "a b"`},
	// Strategic-merge directives where they are not valid.
	{"unknown patch type", "v1", "LinstorCluster", obj{"controller": obj{"podTemplate": obj{"spec": obj{"containers": list{obj{"name": "linstor-controller", "$patch": "explode"}}}}}}, `spec.controller.podTemplate.spec.containers[0].$patch: Unsupported value: "explode": supported values: "merge", "replace", "delete"`},
	{"unknown directive", "v1", "LinstorSatelliteConfiguration", obj{"podTemplate": obj{"spec": obj{"$bogus": "x"}}}, `spec.podTemplate.spec.$bogus: Invalid value: "$bogus": is not a strategic-merge directive`},
	{"delete from a field that is not a list", "v1", "LinstorCluster", obj{"satellite": obj{"podTemplate": obj{"spec": obj{"containers": list{obj{"name": "linstor-satellite", "$deleteFromPrimitiveList/image": list{"x"}}}}}}}, "must be a pod template patch"},
	{"element order of a map", "v1", "LinstorCluster", obj{"csi": obj{"controller": obj{"podTemplate": obj{"spec": obj{"$setElementOrder/nodeSelector": obj{"a": "b"}}}}}}, `spec.csi.controller.podTemplate.spec.$setElementOrder/nodeSelector: Invalid value`},
	{"list item without its merge key", "v1", "LinstorCluster", obj{"controller": obj{"podTemplate": obj{"spec": obj{"containers": list{obj{"$patch": "delete"}}}}}}, "does not contain declared merge key: name"},
	// v1alpha1: same rules for the deprecated shape.
	{"v1alpha1 database URL", "v1alpha1", "LinstorCluster", obj{"dbConnectionURL": "mysql://db"}, "spec.dbConnectionURL in body should match"},
	{"v1alpha1 replicas", "v1alpha1", "LinstorCluster", obj{"controllerReplicas": 0}, "spec.controllerReplicas in body should be greater than or equal to 1"},
	{"v1alpha1 luks secret", "v1alpha1", "LinstorCluster", obj{"luksSecret": "Bad_Name"}, "spec.luksSecret in body should match"},
	{"v1alpha1 device path", "v1alpha1", "LinstorSatelliteConfiguration", obj{"lvmPools": list{obj{"name": "p", "devicePaths": list{"sdb"}}}}, "spec.lvmPools[0].devicePaths[0] in body should match"},
	{"v1alpha1 pool name", "v1alpha1", "LinstorSatelliteConfiguration", obj{"zfsPools": list{obj{"name": ""}}}, "spec.zfsPools[0].name in body should be at least 1 chars long"},
	{"v1alpha1 satellite without cluster", "v1alpha1", "LinstorSatellite", obj{}, "spec.clusterName: Required value"},
	// Webhook: patch syntax CEL cannot check.
	{"controller pod template typo", "v1", "LinstorCluster", obj{"controller": obj{"podTemplate": obj{"spec": obj{"containerz": list{}}}}}, `spec.controller.podTemplate: Invalid value: "<patch>": must be a pod template patch: unknown field "spec.containerz"`},
	{"satellite pod template type", "v1", "LinstorSatelliteConfiguration", obj{"podTemplate": obj{"spec": obj{"hostNetwork": "yes"}}}, "spec.podTemplate: Invalid value: \"<patch>\": must be a pod template patch"},
	// Pod-template patches that add privilege (unless the LinstorCluster allows it).
	{"controller patch on the host's PID namespace", "v1", "LinstorCluster", obj{"controller": obj{"podTemplate": obj{"spec": obj{"hostPID": true}}}},
		"spec.controller.podTemplate.spec.hostPID: Forbidden: may not put the pod in the host's process (PID) namespace (pod-template patches may not add privilege unless the LinstorCluster sets spec.podTemplatePolicy: AllowPrivileged)"},
	{"satellite patch adding a privileged container", "v1", "LinstorSatelliteConfiguration", obj{"podTemplate": obj{"spec": obj{"containers": list{obj{"name": "debug", "image": "busybox", "securityContext": obj{"privileged": true}}}}}},
		"spec.podTemplate.spec.containers[name=debug].securityContext.privileged: Forbidden: may not make the container privileged (pod-template patches may not add privilege unless the LinstorCluster sets spec.podTemplatePolicy: AllowPrivileged)"},
	{"csi node pod template typo", "v1", "LinstorCluster", obj{"csi": obj{"node": obj{"podTemplate": obj{"metadata": obj{"labelz": obj{}}}}}}, `spec.csi.node.podTemplate: Invalid value: "<patch>": must be a pod template patch: unknown field "metadata.labelz"`},
	// Webhook: discovery matchers that contradict themselves or each other.
	{"discovery sizes reversed", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("pool", obj{"lvmThinPool": obj{}, "source": obj{"discover": obj{"minSize": "2Ti", "maxSize": "1Ti"}}})}},
		`spec.storagePools[0].source.discover.maxSize: Invalid value: "1Ti": is less than minSize 2Ti: no disk can match`},
	{"discovery size of zero", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("pool", obj{"lvmThinPool": obj{}, "source": obj{"discover": obj{"minSize": "0"}}})}},
		`spec.storagePools[0].source.discover.minSize: Invalid value: "0": must be more than zero`},
	{"discovery model pattern", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("pool", obj{"lvmThinPool": obj{}, "source": obj{"discover": obj{"models": list{"SAMSUNG [MZ"}}}})}},
		`spec.storagePools[0].source.discover.models[0]: Invalid value: "SAMSUNG [MZ": is not a valid shell pattern: syntax error in pattern`},
	{"discovery path pattern", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("pool", obj{"lvmThinPool": obj{}, "source": obj{"discover": obj{"devicePaths": list{"/dev/nvme[0-"}}}})}},
		`spec.storagePools[0].source.discover.devicePaths[0]: Invalid value: "/dev/nvme[0-": is not a valid shell pattern`},
	{"two pools discovering the same disks", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{
		pool("fast", obj{"lvmThinPool": obj{}, "source": obj{"discover": obj{"rotational": false, "allowAnyDisk": true}}}),
		pool("also", obj{"zfsThinPool": obj{}, "source": obj{"discover": obj{"rotational": false, "dryRun": true}}})}},
		`spec.storagePools[1].source.discover: Invalid value: "": matches the same disks as spec.storagePools[0].source.discover: a disk matched by two pools is claimed by neither`},
	{"discovery media and rotational", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("hdd", obj{"zfsPool": obj{}, "source": obj{"discover": obj{"media": "Rotational", "rotational": true, "models": list{"ST8000*"}}}})}},
		"set media, not both media and rotational"},
	{"discovery media and rotational matching the same disks", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{
		pool("old", obj{"zfsPool": obj{}, "source": obj{"discover": obj{"rotational": true, "models": list{"ST8000*"}}}}),
		pool("new", obj{"zfsThinPool": obj{}, "source": obj{"discover": obj{"media": "Rotational", "models": list{"ST8000*"}}}})}},
		"spec.storagePools[1].source.discover: Invalid value: \"\": matches the same disks as spec.storagePools[0].source.discover"},
	{"discovery media Any alone", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("any", obj{"zfsPool": obj{}, "source": obj{"discover": obj{"media": "Any", "allowAnyDisk": true}}})}},
		"discover needs at least one of minSize, maxSize, media (Rotational or SolidState), models or devicePaths"},
	{"discovery media alone", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("ssd", obj{"zfsPool": obj{}, "source": obj{"discover": obj{"media": "SolidState", "allowAnyDisk": true}}})}},
		"media needs one of minSize, maxSize, models or devicePaths beside it"},
	{"discovery media unknown", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("ssd", obj{"zfsPool": obj{}, "source": obj{"discover": obj{"media": "Flash", "models": list{"X*"}}}})}},
		`spec.storagePools[0].source.discover.media: Unsupported value: "Flash"`},
	{"discovery matcher that takes any disk", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("hdd", obj{"zfsPool": obj{}, "source": obj{"discover": obj{"rotational": true, "minSize": "4Ti"}}})}},
		`spec.storagePools[0].source.discover.allowAnyDisk: Invalid value: false: a matcher without models or devicePaths (or whose patterns match every disk`},
}

func TestInvalidObjectsAreRefusedWithAClearMessage(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	t.Logf("%d invalid objects", len(invalidCases))
	for i, tc := range invalidCases {
		t.Run(tc.name, func(t *testing.T) {
			o := newObject(tc.version, tc.kind, fmt.Sprintf("invalid-%d", i), tc.spec)
			o.SetNamespace(ns)
			err := env.Client.Create(ctx, o)
			if err == nil {
				_ = env.Client.Delete(ctx, o)
				t.Fatalf("accepted; want refusal with %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("refused with\n  %v\nwant message containing\n  %s", err, tc.want)
			}
		})
	}
}

// updateCases are valid objects whose later edit must be refused (transition rules).
var updateCases = []struct {
	name, kind string
	before     obj
	after      obj
	want       string
}{
	{"pool type change", "LinstorSatelliteConfiguration",
		obj{"storagePools": list{pool("pool", obj{"lvmThinPool": obj{}})}},
		obj{"storagePools": list{pool("pool", obj{"lvmPool": obj{}})}},
		"the pool type is immutable: remove the pool and add one with a new name instead"},
	{"volume group change", "LinstorSatelliteConfiguration",
		obj{"storagePools": list{pool("pool", obj{"lvmThinPool": obj{"volumeGroup": "vg1"}})}},
		obj{"storagePools": list{pool("pool", obj{"lvmThinPool": obj{"volumeGroup": "vg2"}})}},
		"spec.storagePools[0].lvmThinPool.volumeGroup: Invalid value: \"string\": volumeGroup is immutable"},
	{"thin pool change", "LinstorSatelliteConfiguration",
		obj{"storagePools": list{pool("pool", obj{"lvmThinPool": obj{"thinPool": "a"}})}},
		obj{"storagePools": list{pool("pool", obj{"lvmThinPool": obj{"thinPool": "b"}})}},
		"thinPool is immutable"},
	{"zpool change", "LinstorSatelliteConfiguration",
		obj{"storagePools": list{pool("zfs", obj{"zfsPool": obj{"zPool": "tank"}})}},
		obj{"storagePools": list{pool("zfs", obj{"zfsPool": obj{"zPool": "other"}})}},
		"zPool is immutable"},
	{"file pool directory change", "LinstorSatelliteConfiguration",
		obj{"storagePools": list{pool("files", obj{"fileThinPool": obj{"directory": "/a"}})}},
		obj{"storagePools": list{pool("files", obj{"fileThinPool": obj{"directory": "/b"}})}},
		"directory is immutable"},
	{"database type change", "LinstorCluster",
		obj{"database": obj{"type": "k8s"}},
		obj{"database": obj{"type": "external", "connectionURL": "jdbc:postgresql://db/linstor"}},
		"spec.database.type is immutable: moving LINSTOR's database needs a backup and restore"},
	// Around the CRD's transition rules: removing the field or its parent.
	{"database type removed with its parent", "LinstorCluster",
		obj{"database": obj{"type": "external", "connectionURL": "jdbc:postgresql://db/linstor"}},
		obj{},
		"spec.database.type: Invalid value: \"k8s\": spec.database.type is immutable (it is external; removing the field means k8s)"},
	{"volume group removed (its default differs)", "LinstorSatelliteConfiguration",
		obj{"storagePools": list{pool("pool", obj{"lvmThinPool": obj{"volumeGroup": "vg1"}})}},
		obj{"storagePools": list{pool("pool", obj{"lvmThinPool": obj{}})}},
		`spec.storagePools[0]: Invalid value: "pool": what backs a pool is immutable: LvmVg would change from "vg1" to "linstor_pool"`},
	{"database removed from a v1alpha1-written cluster", "LinstorCluster",
		obj{"database": obj{"type": "external", "connectionURL": "etcd://etcd:2379"}},
		obj{"database": nil},
		"spec.database.type is immutable (it is external; removing the field means k8s)"},
	{"pool type changed under a name in another case", "LinstorSatelliteConfiguration",
		obj{"storagePools": list{pool("pool", obj{"lvmThinPool": obj{}})}},
		obj{"storagePools": list{pool("POOL", obj{"lvmPool": obj{}})}},
		"the pool type is immutable (LVM_THIN, now LVM)"},
}

// Writing through v1alpha1 (no transition rules there) is checked as a v1 write: the
// webhook sees every write converted to v1.
func TestImmutableThroughV1alpha1(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	ns := env.Namespace(t)
	o := newObject("v1", "LinstorSatelliteConfiguration", "through-alpha", obj{"storagePools": list{pool("pool", obj{"lvmThinPool": obj{"volumeGroup": "vg1"}})}})
	o.SetNamespace(ns)
	g.Expect(env.Client.Create(ctx, o)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, o) })
	for _, tc := range []struct {
		name string
		spec obj
		want string
	}{
		{"pool type", obj{"lvmPools": list{obj{"name": "pool"}}}, "the pool type is immutable (LVM_THIN, now LVM)"},
		{"volume group", obj{"lvmThinPools": list{obj{"name": "pool", "volumeGroup": "vg2"}}}, "spec.lvmThinPools[0]: Invalid value: \"pool\": what backs a pool is immutable: LvmVg would change from \"vg1\" to \"vg2\""},
		{"volume group removed", obj{"lvmThinPools": list{obj{"name": "pool"}}}, "LvmVg would change from \"vg1\" to \"linstor_pool\""},
		{"volume group changed with a device added", obj{"lvmThinPools": list{obj{"name": "pool", "volumeGroup": "vg3", "devicePaths": list{"/dev/vdb"}}}}, "LvmVg would change from \"vg1\" to \"vg3\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			alpha := newObject("v1alpha1", "LinstorSatelliteConfiguration", "through-alpha", nil)
			alpha.SetNamespace(ns)
			err := update(ctx, alpha, func() { alpha.Object["spec"] = tc.spec }, false)
			g.Expect(err).To(HaveOccurred(), "edit through v1alpha1 accepted")
			g.Expect(err.Error()).To(ContainSubstring(tc.want))
		})
	}
}

func TestImmutableFieldsRefuseEdits(t *testing.T) {
	ctx := context.Background()
	for i, tc := range updateCases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ns := env.Namespace(t)
			o := newObject("v1", tc.kind, fmt.Sprintf("immutable-%d", i), tc.before)
			o.SetNamespace(ns)
			g.Expect(env.Client.Create(ctx, o)).To(Succeed())
			t.Cleanup(func() { _ = env.Client.Delete(ctx, o) })
			err := update(ctx, o, func() { o.Object["spec"] = tc.after }, false)
			g.Expect(err).To(HaveOccurred(), "edit accepted")
			g.Expect(err.Error()).To(ContainSubstring(tc.want))
		})
	}
}

func TestOnlyOneLinstorCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	first := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor", Namespace: env.Namespace(t)}}
	g.Expect(env.Client.Create(ctx, first)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, first) })

	second := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: env.Namespace(t)}}
	err := env.Client.Create(ctx, second)
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring(fmt.Sprintf("only one LinstorCluster may exist per Kubernetes cluster and %s/linstor already does", first.Namespace)))

	// Updating the one cluster is of course allowed.
	g.Expect(update(ctx, first, func() { first.Spec.Version = "1.33.3" }, false)).To(Succeed())
}

// TestValidEdgeCasesAreAccepted guards against rules that are too strict.
func TestValidEdgeCasesAreAccepted(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	cases := []struct {
		name, version, kind string
		spec                obj
	}{
		{"empty cluster", "v1", "LinstorCluster", obj{}},
		{"external database with certificates", "v1", "LinstorCluster", obj{"database": obj{"type": "external", "connectionURL": "etcd://etcd:2379", "clientCertificateSecretRef": obj{"name": "etcd-client"}}}},
		{"external controller, own disabled", "v1", "LinstorCluster", obj{"externalController": obj{"url": "https://linstor.example.com:3371"}, "controller": obj{"enabled": false}}},
		{"cert-manager TLS", "v1", "LinstorCluster", obj{"tls": obj{"internal": obj{"mode": "CertManager", "issuerRef": obj{"name": "ca", "kind": "ClusterIssuer"}}}}},
		{"prerelease version", "v1", "LinstorCluster", obj{"version": "1.34.0-rc.1"}},
		{"monitoring off", "v1", "LinstorCluster", obj{"monitoring": obj{"mode": "Disabled"}}},
		{"monitoring on without the Prometheus Operator", "v1", "LinstorCluster", obj{"monitoring": obj{"mode": "Enabled"}}},
		{"discovery pools", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{
			pool("nvme", obj{"lvmThinPool": obj{}, "source": obj{"discover": obj{"rotational": false, "minSize": "1Ti", "maxSize": "1Ti", "models": list{"SAMSUNG MZQL2*"}, "devicePaths": list{"/dev/disk/by-id/nvme-*"}, "maxDisksPerNode": 2}}}),
			pool("hdd", obj{"zfsPool": obj{}, "source": obj{"discover": obj{"rotational": true, "dryRun": true}}}),
			pool("ssd", obj{"zfsThinPool": obj{}, "source": obj{"discover": obj{"media": "SolidState", "maxSize": "512Gi", "dryRun": true}}}),
			pool("listed", obj{"lvmPool": obj{}, "source": obj{"hostDevices": list{"/dev/vdb"}}})}}},
		{"every pool type", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{
			pool("fat", obj{"lvmPool": obj{}}), pool("thin", obj{"lvmThinPool": obj{"volumeGroup": "vg", "thinPool": "tp"}, "source": obj{"hostDevices": list{"/dev/vdb", "/dev/disk/by-id/x"}}}),
			pool("zfs", obj{"zfsPool": obj{"zPool": "tank/linstor"}}), pool("zfs_thin", obj{"zfsThinPool": obj{}}),
			pool("files", obj{"filePool": obj{"directory": "/var/lib/pools"}}), pool("files-thin", obj{"fileThinPool": obj{}, "properties": list{obj{"name": "PrefNic", "value": "data"}}}),
		}}},
		{"IPv6 NIC and label-derived property", "v1", "LinstorSatelliteConfiguration", obj{
			"netInterfaces": list{obj{"name": "data", "cidr": "fd00::/64", "active": true}, obj{"name": "backup", "interfaceName": "bond0.100"}},
			"properties": list{obj{"name": "Aux/zone", "valueFrom": obj{"nodeFieldRef": "metadata.labels['topology.kubernetes.io/zone']"}},
				obj{"name": "DrbdOptions/AutoEvictAllowEviction", "value": "false"}},
		}},
		{"node connection across zones", "v1", "LinstorNodeConnection", obj{
			"selector":   list{obj{"matchLabels": list{obj{"key": "topology.kubernetes.io/zone", "op": "NotSame"}, obj{"key": "tier", "op": "In", "values": list{"storage"}}}}},
			"paths":      list{obj{"name": "data", "interface": "data"}},
			"properties": list{obj{"name": "DrbdOptions/Net/protocol", "value": "A"}},
		}},
		{"LINSTOR's shortest names", "v1", "LinstorSatelliteConfiguration", obj{"storagePools": list{pool("abc", obj{"lvmPool": obj{}})},
			"netInterfaces": list{obj{"name": "eth", "cidr": "10.0.0.0/24"}}}},
		{"v1alpha1 cluster", "v1alpha1", "LinstorCluster", obj{"dbConnectionURL": "k8s", "controllerProperties": obj{"DrbdOptions/Net/protocol": "C"}}},
		{"v1alpha1 external database", "v1alpha1", "LinstorCluster", obj{"dbConnectionURL": "jdbc:postgresql://db.example.com:5432/linstor", "dbCertSecret": "db-cert"}},
		{"v1alpha1 satellite pools", "v1alpha1", "LinstorSatellite", obj{"clusterName": "linstor", "lvmThinPools": list{obj{"name": "thin", "volumeGroup": "vg", "devicePaths": list{"/dev/vdb", "/dev/vdc"}}}, "nodeProperties": obj{"Aux/rack": "r1"}}},
		{"strategic-merge directives", "v1", "LinstorCluster", obj{"controller": obj{"podTemplate": obj{"spec": obj{
			"$setElementOrder/containers": list{obj{"name": "linstor-controller"}},
			"containers":                  list{obj{"name": "linstor-controller", "$deleteFromPrimitiveList/args": list{"--log-level=debug"}, "env": list{obj{"name": "JAVA_OPTS", "$patch": "delete"}}}},
			"volumes":                     list{obj{"name": "extra", "$patch": "replace", "emptyDir": obj{}}},
			"nodeSelector":                obj{"$patch": "replace", "tier": "storage"},
		}}}}},
		{"retained keys", "v1", "LinstorSatelliteConfiguration", obj{"podTemplate": obj{"spec": obj{"volumes": list{obj{"name": "v", "$retainKeys": list{"name", "emptyDir"}, "emptyDir": obj{}}}}}}},
		{"satellite patch keeping the satellite's privilege", "v1", "LinstorSatelliteConfiguration", obj{"podTemplate": obj{"spec": obj{"hostNetwork": true,
			"containers": list{obj{"name": "linstor-satellite", "securityContext": obj{"privileged": true}}}}}}},
		{"Kubernetes-valid scheduling", "v1", "LinstorCluster", obj{"nodeSelector": obj{"node-role.kubernetes.io/storage": ""}, "controller": obj{
			"resources":   obj{"requests": obj{"cpu": "500m", "memory": "1Gi"}, "limits": obj{"memory": "1Gi"}},
			"tolerations": list{obj{"operator": "Exists"}, obj{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}},
			"affinity": obj{"nodeAffinity": obj{"requiredDuringSchedulingIgnoredDuringExecution": obj{"nodeSelectorTerms": list{obj{"matchExpressions": list{
				obj{"key": "zone", "operator": "In", "values": list{"a", "b"}}, obj{"key": "disks", "operator": "Gt", "values": list{"2"}}}}}}}},
		}, "database": obj{"type": "external", "connectionURL": "etcd://etcd-0:2379,etcd-1:2379"}}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := newObject(tc.version, tc.kind, fmt.Sprintf("valid-%d", i), tc.spec)
			o.SetNamespace(ns)
			if err := env.Client.Create(ctx, o); err != nil {
				t.Fatalf("refused: %v", err)
			}
			_ = env.Client.Delete(ctx, o)
		})
	}
	// The zero values a typed Go client sends are accepted too.
	typed := &linstorv1.LinstorSatelliteConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "typed", Namespace: ns},
		Spec: linstorv1.LinstorSatelliteConfigurationSpec{StoragePools: []linstorv1.StoragePool{{Name: "pool", LvmThinPool: &linstorv1.LvmThinPool{}}}}}
	if err := env.Client.Create(ctx, typed); err != nil {
		t.Fatalf("typed client object refused: %v", err)
	}
	_ = env.Client.Delete(ctx, client.Object(typed))
}
