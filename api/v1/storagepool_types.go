package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// StoragePool is one LINSTOR storage pool on a satellite. Exactly one pool type is set.
// +kubebuilder:validation:XValidation:rule="[has(self.lvmPool), has(self.lvmThinPool), has(self.zfsPool), has(self.zfsThinPool), has(self.filePool), has(self.fileThinPool)].filter(x, x).size() == 1",message="exactly one of lvmPool, lvmThinPool, zfsPool, zfsThinPool, filePool, fileThinPool must be set"
// +kubebuilder:validation:XValidation:rule="[has(self.lvmPool), has(self.lvmThinPool), has(self.zfsPool), has(self.zfsThinPool), has(self.filePool), has(self.fileThinPool)] == [has(oldSelf.lvmPool), has(oldSelf.lvmThinPool), has(oldSelf.zfsPool), has(oldSelf.zfsThinPool), has(oldSelf.filePool), has(oldSelf.fileThinPool)]",message="the pool type is immutable: remove the pool and add one with a new name instead"
// +kubebuilder:validation:XValidation:rule="!has(self.source) || has(self.lvmPool) || has(self.lvmThinPool) || has(self.zfsPool) || has(self.zfsThinPool)",message="source (hostDevices or discover) is only allowed for LVM and ZFS pools: LINSTOR creates device pools for these types only"
type StoragePool struct {
	// name of the LINSTOR storage pool.
	// LINSTOR's storage pool names: 3 to 48 characters, a letter first, then letters,
	// digits, '_' or '-' (StorPoolName); compared ignoring case.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=48
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9_-]*$`
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pool Name",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Name string `json:"name"`

	// lvmPool uses thick LVM logical volumes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="LVM Pool"
	LvmPool *LvmPool `json:"lvmPool,omitempty"`
	// lvmThinPool uses LVM thin volumes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="LVM Thin Pool"
	LvmThinPool *LvmThinPool `json:"lvmThinPool,omitempty"`
	// zfsPool uses ZFS zvols.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="ZFS Pool",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	ZfsPool *ZfsPool `json:"zfsPool,omitempty"`
	// zfsThinPool uses sparse ZFS zvols.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="ZFS Thin Pool",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	ZfsThinPool *ZfsPool `json:"zfsThinPool,omitempty"`
	// filePool uses preallocated files in a directory.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="File Pool",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	FilePool *FilePool `json:"filePool,omitempty"`
	// fileThinPool uses sparse files in a directory.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="File Thin Pool"
	FileThinPool *FilePool `json:"fileThinPool,omitempty"`

	// source creates the volume group or zpool from host devices when it does not exist.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Source Devices"
	Source *StoragePoolSource `json:"source,omitempty"`

	// properties set on the LINSTOR storage pool.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pool Properties",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Properties []Property `json:"properties,omitempty"`
}

// LvmPool names the volume group of a thick LVM pool.
type LvmPool struct {
	// volumeGroup name; defaults to the pool name.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9+_.-]+$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="volumeGroup is immutable"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Volume Group",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	VolumeGroup string `json:"volumeGroup,omitempty"`
}

// LvmThinPool names the volume group and thin pool of an LVM thin pool.
type LvmThinPool struct {
	// volumeGroup name; defaults to "linstor_<pool name>".
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9+_.-]+$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="volumeGroup is immutable"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Volume Group",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	VolumeGroup string `json:"volumeGroup,omitempty"`
	// thinPool logical volume name; defaults to the pool name.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9+_.-]+$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="thinPool is immutable"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Thin Pool",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	ThinPool string `json:"thinPool,omitempty"`
}

// ZfsPool names the zpool of a ZFS pool.
type ZfsPool struct {
	// zPool name; defaults to the pool name.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.:/-]+$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="zPool is immutable"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="ZFS Pool Name",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	ZPool string `json:"zPool,omitempty"`
}

// FilePool names the directory of a file pool.
type FilePool struct {
	// directory holding the volume files; defaults to "/var/lib/linstor-pools/<pool name>".
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/[^\s]*$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="directory is immutable"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Directory",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Directory string `json:"directory,omitempty"`
}

// StoragePoolSource says which disks make the volume group or zpool of a pool when it
// does not exist yet: listed by path, or discovered by what they are.
// +kubebuilder:validation:XValidation:rule="has(self.hostDevices) != has(self.discover)",message="exactly one of hostDevices or discover must be set"
type StoragePoolSource struct {
	// hostDevices are block device paths, for example "/dev/vdb", the same on every node.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^/dev/[^\s]+$`
	// +kubebuilder:validation:items:MaxLength=256
	// +listType=set
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Host Devices"
	HostDevices []string `json:"hostDevices,omitempty"`

	// discover claims the node's unused disks that match, as LINSTOR lists them (whole
	// disks of more than 1 GiB with no partition, filesystem or holder). A disk must
	// match every field that is set. See docs/storage-discovery.md.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Discover Disks"
	Discover *DiskDiscovery `json:"discover,omitempty"`
}

// DiskMedia is what a disk stores data on.
// +kubebuilder:validation:Enum=Any;Rotational;SolidState
type DiskMedia string

const (
	DiskMediaAny        DiskMedia = "Any"
	DiskMediaRotational DiskMedia = "Rotational"
	DiskMediaSolidState DiskMedia = "SolidState"
)

// WantsRotational is the disk kind the matcher asks for: true spinning, false
// solid-state, nil either.
func (m *DiskDiscovery) WantsRotational() *bool {
	switch m.Media {
	case DiskMediaRotational:
		return ptr.To(true)
	case DiskMediaSolidState:
		return ptr.To(false)
	case DiskMediaAny:
		return nil
	}
	return m.Rotational
}

// DiskDiscovery selects unused disks by what they are, not where they are.
// +kubebuilder:validation:XValidation:rule="has(self.minSize) || has(self.maxSize) || has(self.rotational) || (has(self.media) && self.media != 'Any') || has(self.models) || has(self.devicePaths)",message="discover needs at least one of minSize, maxSize, media (Rotational or SolidState), models or devicePaths: an empty matcher would claim every unused disk of every node"
// An operator release before 0.3.0 does not read media: run by it (a rollback, the old
// pod of an upgrade) a matcher of media alone would be empty, and claim every unused disk.
// +kubebuilder:validation:XValidation:rule="!has(self.media) || self.media == 'Any' || has(self.minSize) || has(self.maxSize) || has(self.models) || has(self.devicePaths)",message="media needs one of minSize, maxSize, models or devicePaths beside it: an operator release before 0.3.0 does not read media, and would take the matcher for one that claims every unused disk"
// +kubebuilder:validation:XValidation:rule="!has(self.rotational) || !has(self.media)",message="set media, not both media and rotational (rotational is its older form)"
type DiskDiscovery struct {
	// minSize: only disks at least this large.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Discover: Minimum Size",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	// +optional
	MinSize *resource.Quantity `json:"minSize,omitempty"`
	// maxSize: only disks at most this large.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Discover: Maximum Size",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	// +optional
	MaxSize *resource.Quantity `json:"maxSize,omitempty"`
	// media: Rotational only spinning disks, SolidState only solid-state ones; Any or
	// unset, either.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Discover: Disk Media",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Any","urn:alm:descriptor:com.tectonic.ui:select:Rotational","urn:alm:descriptor:com.tectonic.ui:select:SolidState"}
	// +optional
	Media DiskMedia `json:"media,omitempty"`
	// rotational is the older form of media: true is Rotational, false SolidState. A
	// checkbox cannot show "either", so the console hides it; set media instead.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Discover: Rotational",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:hidden"}
	// +optional
	Rotational *bool `json:"rotational,omitempty"`
	// models are shell patterns matched against the model LINSTOR reports (lsblk
	// MODEL), for example "SAMSUNG MZQL2*"; a disk matches when one pattern does.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=128
	// +listType=set
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Discover: Model Patterns"
	// +optional
	Models []string `json:"models,omitempty"`
	// devicePaths are shell patterns matched against the disk's kernel path and its
	// /dev/disk/by-id name, for example "/dev/nvme*" or "/dev/disk/by-id/nvme-*"; a disk
	// matches when one pattern matches one of its names.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Pattern=`^/dev/[^\s]+$`
	// +kubebuilder:validation:items:MaxLength=256
	// +listType=set
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Discover: Device Path Patterns"
	// +optional
	DevicePaths []string `json:"devicePaths,omitempty"`
	// maxDisksPerNode claims at most this many disks on a node (in device name order);
	// unset, every matching disk.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Discover: Max Disks per Node",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number"}
	// +optional
	MaxDisksPerNode *int32 `json:"maxDisksPerNode,omitempty"`
	// allowAnyDisk acknowledges that a matcher without models or devicePaths (size and
	// rotational only) may claim every unused physical disk of a node, including a disk
	// that holds data without a signature lsblk recognizes (a raw database device, an
	// unlabelled disk of another system). Without it such a matcher is refused on create
	// and change, and an older one claims nothing (its pool status says why).
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Discover: Allow Any Disk",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	// +optional
	AllowAnyDisk bool `json:"allowAnyDisk,omitempty"`
	// dryRun reports on each LinstorSatellite which disks would be claimed, and claims
	// nothing.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Discover: Dry Run",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	// +optional
	DryRun bool `json:"dryRun,omitempty"`
}

// NodeProperty is a LINSTOR node property with a literal value or one taken from the Kubernetes node.
// +kubebuilder:validation:XValidation:rule="[has(self.value), has(self.valueFrom), has(self.expandFrom)].filter(x, x).size() <= 1",message="value, valueFrom and expandFrom are mutually exclusive"
type NodeProperty struct {
	// name of the LINSTOR property, for example "Aux/topology/rack".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9_./:-]*$`
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Name",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Name string `json:"name"`
	// value of the property.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Value",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Value string `json:"value,omitempty"`
	// valueFrom takes the value from a label or annotation of the node.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Value From Node"
	ValueFrom *NodePropertySource `json:"valueFrom,omitempty"`
	// expandFrom takes the values of every label or annotation of the node whose key
	// matches a pattern: one property per match (nameTemplate), or one property joining
	// them (delimiter). A node with no match gets no property.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Expand From",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	ExpandFrom *NodePropertyExpansion `json:"expandFrom,omitempty"`
}

// NodePropertyExpansion reads several labels or annotations of the Kubernetes node.
// +kubebuilder:validation:XValidation:rule="!(has(self.nameTemplate) && has(self.delimiter))",message="nameTemplate and delimiter are mutually exclusive: nameTemplate makes one property per match, delimiter joins the matches into one"
type NodePropertyExpansion struct {
	// nodeFieldRef selects labels or annotations by a key with one "*", such as
	// "metadata.labels['topology.example.com/*']".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^metadata\.(labels|annotations)\['[^'*]*\*[^'*]*'\]$`
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Node Field",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	NodeFieldRef string `json:"nodeFieldRef"`
	// nameTemplate makes one property per match, named the property's name followed by
	// this template; "$1" is the part of the key the "*" matched, "$2" the value.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Name Template",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	NameTemplate string `json:"nameTemplate,omitempty"`
	// valueTemplate is the value of each match; "$1" is the part of the key the "*"
	// matched, "$2" the value. Unset means "$2".
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Value Template",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	ValueTemplate string `json:"valueTemplate,omitempty"`
	// delimiter joins the values of all matches, in key order, into one property
	// (when nameTemplate is unset). Unset joins with ",".
	// +kubebuilder:validation:MaxLength=16
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Delimiter",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Delimiter string `json:"delimiter,omitempty"`
}

// NodePropertySource reads a property value from the Kubernetes node.
type NodePropertySource struct {
	// nodeFieldRef is a field path of the node, such as "metadata.labels['topology.kubernetes.io/zone']".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^metadata\.(name|uid|labels\['[^']+'\]|annotations\['[^']+'\])$`
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Node Field",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	NodeFieldRef string `json:"nodeFieldRef"`
}

// NetInterface chooses a NIC of the node for LINSTOR traffic.
// +kubebuilder:validation:XValidation:rule="has(self.interfaceName) != has(self.cidr)",message="exactly one of interfaceName or cidr must be set"
type NetInterface struct {
	// name of the LINSTOR net interface.
	// LINSTOR's net interface names: 3 to 32 characters, a letter first, then letters,
	// digits, '_' or '-' (NetInterfaceName).
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9_-]*$`
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Name",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Name string `json:"name"`
	// interfaceName selects the host interface by name, for example "eth1".
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.:@-]+$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Interface Name",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	InterfaceName string `json:"interfaceName,omitempty"`
	// cidr selects the interface whose address lies in this network, for example "10.0.1.0/24".
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="cidr must be a network in CIDR notation, such as 10.0.1.0/24"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Network (CIDR)",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	CIDR string `json:"cidr,omitempty"`
	// active makes this interface carry controller-satellite traffic. At most one is active;
	// when none is, the pod IP is used.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Active",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	Active bool `json:"active,omitempty"`
}

// DeletionPolicy says what happens to the LINSTOR node when its satellite goes away.
// +kubebuilder:validation:Enum=Retain;Evacuate;Delete
type DeletionPolicy string

const (
	// DeletionRetain keeps the LINSTOR node and its data.
	DeletionRetain DeletionPolicy = "Retain"
	// DeletionEvacuate moves all resources away, then deletes the node.
	DeletionEvacuate DeletionPolicy = "Evacuate"
	// DeletionDelete deletes the node, but never while it holds the last replica of a resource.
	DeletionDelete DeletionPolicy = "Delete"
)
