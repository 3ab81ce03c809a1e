package v1

// DRBDModuleLoader says how a satellite's init container makes the DRBD 9 kernel module
// available on its node. docs/drbd.md lists which operating system Auto maps to which
// strategy, and why.
// +kubebuilder:validation:Enum=Auto;Compile;ShippedModules;None
type DRBDModuleLoader string

const (
	// DRBDModuleLoaderAuto chooses the strategy from the node's status.nodeInfo.osImage.
	DRBDModuleLoaderAuto DRBDModuleLoader = "Auto"
	// DRBDModuleLoaderCompile builds DRBD from source against the host's kernel headers
	// (the loader's LB_HOW=compile), which the host must have installed; on RHCOS, against
	// those of the cluster's Driver Toolkit image for the node's RHCOS version.
	DRBDModuleLoaderCompile DRBDModuleLoader = "Compile"
	// DRBDModuleLoaderShippedModules loads a module built in advance for the running kernel
	// and shipped in the loader image (LB_HOW=shipped_modules); no kernel headers are needed,
	// but the loader image must carry packages for the node's kernel.
	DRBDModuleLoaderShippedModules DRBDModuleLoader = "ShippedModules"
	// DRBDModuleLoaderNone runs no loader: the host loads DRBD 9 itself (a Talos system
	// extension, a distribution package, an admin's modprobe).
	DRBDModuleLoaderNone DRBDModuleLoader = "None"
)

// SatelliteSpec holds the defaults of every satellite.
type SatelliteSpec struct {
	ComponentSpec `json:",inline"`

	// drbdModuleLoader is how the DRBD kernel module gets onto the nodes: Auto (the
	// default: chosen from each node's osImage), Compile, ShippedModules or None.
	// A LinstorSatelliteConfiguration can set another strategy for the nodes it selects.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="DRBD Module Loader",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Auto","urn:alm:descriptor:com.tectonic.ui:select:Compile","urn:alm:descriptor:com.tectonic.ui:select:ShippedModules","urn:alm:descriptor:com.tectonic.ui:select:None"}
	DRBDModuleLoader DRBDModuleLoader `json:"drbdModuleLoader,omitempty"`
}
