package v1alpha1

// StoragePools groups pools by type, the v1alpha1 way.
type StoragePools struct {
	// lvmPools are thick LVM pools.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="LVM Pools"
	LvmPools []LvmPool `json:"lvmPools,omitempty"`
	// lvmThinPools are LVM thin pools.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="LVM Thin Pools"
	LvmThinPools []LvmThinPool `json:"lvmThinPools,omitempty"`
	// zfsPools are ZFS pools.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="ZFS Pools"
	ZfsPools []ZfsPool `json:"zfsPools,omitempty"`
}

// LvmPool is a thick LVM pool.
type LvmPool struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=48
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9_-]*$`
	Name string `json:"name"`
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9+_.-]+$`
	// +optional
	VolumeGroup string `json:"volumeGroup,omitempty"`
	// devicePaths to create the volume group from.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^/dev/[^\s]+$`
	// +kubebuilder:validation:items:MaxLength=256
	// +optional
	DevicePaths []string `json:"devicePaths,omitempty"`
}

// LvmThinPool is an LVM thin pool.
type LvmThinPool struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=48
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9_-]*$`
	Name string `json:"name"`
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9+_.-]+$`
	// +optional
	VolumeGroup string `json:"volumeGroup,omitempty"`
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9+_.-]+$`
	// +optional
	ThinPool string `json:"thinPool,omitempty"`
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^/dev/[^\s]+$`
	// +kubebuilder:validation:items:MaxLength=256
	// +optional
	DevicePaths []string `json:"devicePaths,omitempty"`
}

// ZfsPool is a ZFS pool.
type ZfsPool struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=48
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9_-]*$`
	Name string `json:"name"`
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_.:/-]+$`
	// +optional
	ZPool string `json:"zPool,omitempty"`
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^/dev/[^\s]+$`
	// +kubebuilder:validation:items:MaxLength=256
	// +optional
	DevicePaths []string `json:"devicePaths,omitempty"`
}
