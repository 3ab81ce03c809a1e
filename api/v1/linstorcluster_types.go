package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LinstorClusterSpec is the desired state of the LINSTOR cluster. The component objects
// (controller, satellite, csi and its controller and node, highAvailabilityController,
// upgrade) default to {} so that their fields' defaults are stored and shown.
//
// The controller default makes spec.controller.enabled true unless written false, so an
// external controller needs controller.enabled: false; an object stored before that
// default (external controller, no controller field) keeps being accepted on update.
type LinstorClusterSpec struct {
	// nodeSelector selects the nodes that run a LINSTOR satellite. Empty selects every node.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Satellite Node Selector",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:selector:core:v1:Node"}
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// nodeAffinity selects the nodes that run a LINSTOR satellite by node selector terms
	// (any term matches), in addition to nodeSelector. A node that stops being selected
	// has its LinstorSatellite removed under its deletion policy. See `kubectl explain
	// pod.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`.
	// +optional
	NodeAffinity *corev1.NodeSelector `json:"nodeAffinity,omitempty"`

	// repository replaces the registry and repository path of every image of the
	// release's image set, for a mirror: "registry.example.com/linstor" turns
	// "quay.io/piraeusdatastore/piraeus-server:v1.33.3" into
	// "registry.example.com/linstor/piraeus-server:v1.33.3"; tags and digests are kept.
	// Images set in a component's image field are used as written.
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+([._-][a-z0-9]+)*(\.[a-z0-9]+([._-][a-z0-9]+)*)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Image Repository",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text","urn:alm:descriptor:com.tectonic.ui:advanced"}
	Repository string `json:"repository,omitempty"`

	// controller configures the LINSTOR controller Deployment.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Controller"
	// +kubebuilder:default={}
	Controller *ControllerSpec `json:"controller,omitempty"`

	// satellite holds defaults for every satellite; LinstorSatelliteConfigurations refine them per node.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Satellite Defaults"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,path=enabled,displayName="Enabled",description="Not used: every node spec.nodeSelector selects runs a satellite.",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:hidden"}
	// +kubebuilder:default={}
	Satellite *SatelliteSpec `json:"satellite,omitempty"`

	// csi configures the LINSTOR CSI driver.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="CSI Driver"
	// +kubebuilder:default={}
	CSI *CSISpec `json:"csi,omitempty"`

	// highAvailabilityController configures the HA controller, which fails over pods of
	// nodes that lost their DRBD quorum.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="High Availability Controller"
	// +kubebuilder:default={}
	HighAvailabilityController *ComponentSpec `json:"highAvailabilityController,omitempty"`

	// database selects where the LINSTOR controller keeps its database.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Database"
	Database *DatabaseSpec `json:"database,omitempty"`

	// tls secures controller-satellite traffic (internal) and the REST API (api). A
	// channel left unset uses status.tls.defaultMode: Generated for a cluster created
	// by this operator release or later, Disabled for one that ran without TLS before
	// (an operator upgrade never switches a running cluster) and with an external
	// controller. Only mode Disabled turns a channel off.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="TLS"
	TLS *TLSSpec `json:"tls,omitempty"`

	// networkPolicy is Enabled (the default when unset) or Disabled. Enabled renders a
	// NetworkPolicy that lets only the operator, the CSI driver, the HA controller and
	// other controller replicas reach the LINSTOR controller's API port.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Network Policy",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Enabled","urn:alm:descriptor:com.tectonic.ui:select:Disabled"}
	NetworkPolicy NetworkPolicyMode `json:"networkPolicy,omitempty"`

	// passphraseSecretRef names the Secret (key "MASTER_PASSPHRASE") holding the passphrase that
	// encrypts LINSTOR's volume keys. When unset the operator creates "linstor-passphrase".
	// Losing it makes encrypted volumes unreadable: the operator protects the Secret with a finalizer.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Passphrase Secret",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	PassphraseSecretRef *LocalSecretReference `json:"passphraseSecretRef,omitempty"`

	// properties are LINSTOR controller properties. Removing one here removes it from LINSTOR;
	// properties set by other means are left alone.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=256
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Controller Properties",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Properties []Property `json:"properties,omitempty"`

	// externalController points the operator at a LINSTOR controller it does not run.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="External Controller",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	ExternalController *ExternalControllerSpec `json:"externalController,omitempty"`

	// version pins the LINSTOR version, for example "1.33.3". Empty follows the operator release.
	// +kubebuilder:validation:Pattern=`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`
	// +kubebuilder:validation:MaxLength=64
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="LINSTOR Version",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Version string `json:"version,omitempty"`

	// upgrade sets how LINSTOR upgrades brought by new operator releases proceed.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Upgrade"
	// +kubebuilder:default={}
	Upgrade *UpgradeSpec `json:"upgrade,omitempty"`

	// podTemplatePolicy says what the podTemplate patches of this cluster and of the
	// LinstorSatelliteConfigurations may change. Restricted (the default) refuses a patch
	// that gives a pod more privilege than the operator gives it: another ServiceAccount
	// or its token, privileged containers, privilege escalation, added capabilities,
	// running as root, host namespaces, hostPath volumes and ports, an unmasked /proc, or
	// an Unconfined seccomp or AppArmor profile. AllowPrivileged applies such patches:
	// whoever may edit these objects can then run privileged pods on every node.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pod Template Policy",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Restricted","urn:alm:descriptor:com.tectonic.ui:select:AllowPrivileged","urn:alm:descriptor:com.tectonic.ui:advanced"}
	PodTemplatePolicy PodTemplatePolicy `json:"podTemplatePolicy,omitempty"`

	// nodeFailure says what happens to the replicas of a node that failed: Off (the
	// default) moves nothing; Evict moves them after a timeout. See docs/replica-health.md.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Node Failure"
	NodeFailure *NodeFailureSpec `json:"nodeFailure,omitempty"`

	// monitoring creates the Prometheus Operator's ServiceMonitor, PodMonitor and
	// PrometheusRule for LINSTOR and the Grafana dashboard, and lets the monitoring
	// namespaces scrape the LINSTOR controller (docs/monitoring.md); by default while
	// the Prometheus Operator's CRDs are installed.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Monitoring"
	Monitoring *MonitoringSpec `json:"monitoring,omitempty"`
}

// PodTemplatePolicy says whether podTemplate patches may give pods more privilege.
// +kubebuilder:validation:Enum=Restricted;AllowPrivileged
type PodTemplatePolicy string

const (
	// PodTemplateRestricted refuses patches that add privilege; unset means Restricted.
	PodTemplateRestricted PodTemplatePolicy = "Restricted"
	// PodTemplateAllowPrivileged applies every patch as written.
	PodTemplateAllowPrivileged PodTemplatePolicy = "AllowPrivileged"
)

// ControllerSpec configures the LINSTOR controller.
type ControllerSpec struct {
	ComponentSpec `json:",inline"`

	// replicas of the controller Deployment; more than one runs with leader election.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=5
	// +kubebuilder:default=1
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Replicas",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	Replicas *int32 `json:"replicas,omitempty"`
}

// CSISpec configures the CSI driver.
type CSISpec struct {
	// enabled deploys the CSI driver when true (the default).
	// +kubebuilder:default=true
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Enabled",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	Enabled *bool `json:"enabled,omitempty"`

	// image overrides the LINSTOR CSI plugin image.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\s]+$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Image",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text","urn:alm:descriptor:com.tectonic.ui:advanced"}
	Image string `json:"image,omitempty"`

	// controller configures the CSI controller Deployment; enabled: false leaves it out
	// (the node plugin still mounts volumes provisioned before), and image overrides the
	// CSI plugin image in it.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="CSI Controller"
	// +kubebuilder:default={}
	Controller *ComponentSpec `json:"controller,omitempty"`

	// node configures the CSI node DaemonSet; enabled: false leaves it out (no pod can
	// then mount a LINSTOR volume), and image overrides the CSI plugin image in it.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="CSI Node"
	// +kubebuilder:default={}
	Node *ComponentSpec `json:"node,omitempty"`
}

// DatabaseType names a LINSTOR database backend.
// +kubebuilder:validation:Enum=k8s;external
type DatabaseType string

const (
	// DatabaseK8s keeps the database as custom resources in this cluster.
	DatabaseK8s DatabaseType = "k8s"
	// DatabaseExternal uses a database reached through a JDBC or etcd URL.
	DatabaseExternal DatabaseType = "external"
)

// DatabaseSpec selects the LINSTOR database.
// +kubebuilder:validation:XValidation:rule="self.type != 'external' || (has(self.connectionURL) && size(self.connectionURL) > 0)",message="spec.database.connectionURL is required when spec.database.type is external"
// +kubebuilder:validation:XValidation:rule="self.type == 'external' || (!has(self.connectionURL) && !has(self.clientCertificateSecretRef))",message="spec.database.connectionURL and clientCertificateSecretRef are only allowed when spec.database.type is external"
// +kubebuilder:validation:XValidation:rule="self.type == oldSelf.type",message="spec.database.type is immutable: moving LINSTOR's database needs a backup and restore"
type DatabaseSpec struct {
	// type is "k8s" (the default: custom resources in this cluster) or "external".
	// +kubebuilder:default=k8s
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Type",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:k8s","urn:alm:descriptor:com.tectonic.ui:select:external"}
	Type DatabaseType `json:"type,omitempty"`

	// connectionURL of the external database, for example "jdbc:postgresql://db/linstor" or "etcd://etcd:2379".
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(jdbc:[a-z0-9]+:|etcd://)\S+$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Connection URL",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text","urn:alm:descriptor:com.tectonic.ui:fieldDependency:type:external"}
	ConnectionURL string `json:"connectionURL,omitempty"`

	// clientCertificateSecretRef names a Secret with ca.crt, tls.crt and tls.key for the database connection.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Client Certificate Secret",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldDependency:type:external"}
	ClientCertificateSecretRef *LocalSecretReference `json:"clientCertificateSecretRef,omitempty"`

	// keepBackups deletes the oldest completed LinstorBackups of this cluster beyond this
	// many. Unset keeps them all.
	// +kubebuilder:validation:Minimum=1
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Backups to Keep",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number","urn:alm:descriptor:com.tectonic.ui:fieldDependency:type:k8s"}
	KeepBackups *int32 `json:"keepBackups,omitempty"`

	// restoreFrom names a Completed LinstorBackup (in this namespace) to restore: the
	// controller is stopped, the database replaced exactly, and LINSTOR started at the
	// backup's version, which this release must run. It is restored once while the field
	// names it (status.restore records it; clearing the field clears that record). Pin
	// spec.version to the backup's version to stay there.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Restore From Backup",xDescriptors={"urn:alm:descriptor:io.kubernetes:linstor.io:v1:LinstorBackup","urn:alm:descriptor:com.tectonic.ui:advanced","urn:alm:descriptor:com.tectonic.ui:fieldDependency:type:k8s"}
	RestoreFrom string `json:"restoreFrom,omitempty"`

	// externalBackupAcknowledged: with an external database the operator cannot back it
	// up; upgrades wait until this is true, stating the admin has a current backup.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="External Database Backup Acknowledged",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch","urn:alm:descriptor:com.tectonic.ui:fieldDependency:type:external"}
	ExternalBackupAcknowledged bool `json:"externalBackupAcknowledged,omitempty"`
}

// TLSSpec secures LINSTOR's traffic.
// +kubebuilder:validation:XValidation:rule="!has(self.internal) || !has(self.internal.clientSecretName)",message="spec.tls.internal.clientSecretName: only the api channel has client certificates"
// +kubebuilder:validation:XValidation:rule="!has(self.api) || self.api.mode != 'Secret' || has(self.api.clientSecretName)",message="spec.tls.api.clientSecretName is required when mode is Secret"
type TLSSpec struct {
	// internal secures controller-satellite traffic.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,path=clientSecretName,displayName="Client Secret",description="Only the api channel has client certificates.",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:hidden"}
	Internal *TLSConfig `json:"internal,omitempty"`

	// api secures the REST API with HTTPS and client certificates.
	// +optional
	API *TLSConfig `json:"api,omitempty"`
}

// NetworkPolicyMode says whether the operator restricts who reaches the LINSTOR API.
// +kubebuilder:validation:Enum=Enabled;Disabled
type NetworkPolicyMode string

const (
	NetworkPolicyEnabled  NetworkPolicyMode = "Enabled"
	NetworkPolicyDisabled NetworkPolicyMode = "Disabled"
)

// TLSMode says where certificates come from.
// +kubebuilder:validation:Enum=Disabled;Generated;Secret;CertManager
type TLSMode string

const (
	TLSDisabled    TLSMode = "Disabled"
	TLSGenerated   TLSMode = "Generated"
	TLSSecret      TLSMode = "Secret"
	TLSCertManager TLSMode = "CertManager"
)

// TLSConfig configures one TLS channel.
// +kubebuilder:validation:XValidation:rule="self.mode != 'Secret' || has(self.secretName)",message="secretName is required when mode is Secret"
// +kubebuilder:validation:XValidation:rule="self.mode != 'CertManager' || has(self.issuerRef)",message="issuerRef is required when mode is CertManager"
// +kubebuilder:validation:XValidation:rule="self.mode == 'CertManager' || !has(self.issuerRef)",message="issuerRef is only allowed when mode is CertManager"
// +kubebuilder:validation:XValidation:rule="!has(self.caReference) || self.mode == 'Secret' || self.mode == 'CertManager'",message="caReference is only allowed when mode is Secret or CertManager: Generated certificates are verified by the operator's own CA"
type TLSConfig struct {
	// mode is Disabled, Generated (the operator issues and rotates certificates),
	// Secret (user-provided) or CertManager.
	// +kubebuilder:default=Generated
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Mode",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Disabled","urn:alm:descriptor:com.tectonic.ui:select:Generated","urn:alm:descriptor:com.tectonic.ui:select:Secret","urn:alm:descriptor:com.tectonic.ui:select:CertManager"}
	Mode TLSMode `json:"mode,omitempty"`

	// secretName holds ca.crt, tls.crt and tls.key (mode Secret), or names the Secret the
	// operator or cert-manager writes.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Secret",xDescriptors={"urn:alm:descriptor:io.kubernetes:Secret","urn:alm:descriptor:com.tectonic.ui:fieldDependency:mode:Secret"}
	SecretName string `json:"secretName,omitempty"`

	// clientSecretName (api only) holds ca.crt, tls.crt and tls.key of the client
	// certificate the operator, CSI and HA controller present to the API (mode Secret), or
	// names the Secret the operator or cert-manager writes.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Client Secret",xDescriptors={"urn:alm:descriptor:io.kubernetes:Secret","urn:alm:descriptor:com.tectonic.ui:fieldDependency:mode:Secret"}
	ClientSecretName string `json:"clientSecretName,omitempty"`

	// issuerRef is the cert-manager issuer (mode CertManager).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Issuer",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:fieldDependency:mode:CertManager"}
	IssuerRef *IssuerReference `json:"issuerRef,omitempty"`

	// caReference names the CA certificate that verifies the peers of this channel when
	// it is not the ca.crt of the channel's Secrets (mode Secret or CertManager), for
	// example a company CA kept in a ConfigMap.
	// +optional
	CAReference *CAReference `json:"caReference,omitempty"`
}

// CAReference names a key of a Secret or ConfigMap in the cluster's namespace holding
// PEM CA certificates.
type CAReference struct {
	// kind is Secret (the default) or ConfigMap.
	// +kubebuilder:validation:Enum=Secret;ConfigMap
	// +kubebuilder:default=Secret
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Kind",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Secret","urn:alm:descriptor:com.tectonic.ui:select:ConfigMap"}
	Kind string `json:"kind,omitempty"`
	// name of the Secret or ConfigMap.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Name",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Name string `json:"name"`
	// key holding the certificates; ca.crt when unset.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +kubebuilder:default=ca.crt
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Key",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Key string `json:"key,omitempty"`
}

// IssuerReference names a cert-manager Issuer or ClusterIssuer.
type IssuerReference struct {
	// name of the issuer.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Issuer Name",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Name string `json:"name"`
	// kind is Issuer or ClusterIssuer.
	// +kubebuilder:validation:Enum=Issuer;ClusterIssuer
	// +kubebuilder:default=Issuer
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Issuer Kind",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Issuer","urn:alm:descriptor:com.tectonic.ui:select:ClusterIssuer"}
	Kind string `json:"kind,omitempty"`
}

// ExternalControllerSpec points at a LINSTOR controller outside this cluster.
type ExternalControllerSpec struct {
	// url of the LINSTOR REST API, for example "https://linstor.example.com:3371".
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="isURL(self) && (self.startsWith('http://') || self.startsWith('https://'))",message="spec.externalController.url must be an http:// or https:// URL"
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="URL",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	URL string `json:"url"`

	// clientCertificateSecretRef holds ca.crt, tls.crt and tls.key for an HTTPS API.
	// +optional
	ClientCertificateSecretRef *LocalSecretReference `json:"clientCertificateSecretRef,omitempty"`
}

// UpgradePolicy says whether a LINSTOR upgrade starts on its own.
// +kubebuilder:validation:Enum=Automatic;Manual
type UpgradePolicy string

const (
	UpgradeAutomatic UpgradePolicy = "Automatic"
	UpgradeManual    UpgradePolicy = "Manual"
)

// UpgradeSpec sets the upgrade policy.
type UpgradeSpec struct {
	// policy is Automatic (the default) or Manual (approve by setting spec.version).
	// +kubebuilder:default=Automatic
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Policy",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Automatic","urn:alm:descriptor:com.tectonic.ui:select:Manual"}
	Policy UpgradePolicy `json:"policy,omitempty"`

	// phaseTimeout bounds each upgrade phase that waits (Backup, Rehearsal, Controller,
	// Satellites): past it, a Backup or Rehearsal ends the upgrade with nothing changed, and a
	// Controller or Satellites phase rolls back. Large databases or slow image pulls
	// want more than the 10 minutes default. Verify has no timeout.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(h|m|s))+$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Phase Timeout",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	PhaseTimeout *metav1.Duration `json:"phaseTimeout,omitempty"`

	// rehearsal, on by default, runs the new LINSTOR version's database migrations on
	// a copy of the pre-upgrade backup, in a Job with a scratch Kubernetes API of its
	// own, before the real migration (phase Rehearsal). A failed rehearsal ends the
	// upgrade with nothing changed. Off, or with an external database, the phase is
	// skipped.
	// +kubebuilder:default=true
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Rehearse the Migration",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	Rehearsal *bool `json:"rehearsal,omitempty"`
}

// ClusterPhase is the LinstorCluster's state in one word.
// +kubebuilder:validation:Enum=Progressing;Available;Degraded;Upgrading
type ClusterPhase string

const (
	ClusterProgressing ClusterPhase = "Progressing"
	ClusterAvailable   ClusterPhase = "Available"
	ClusterDegraded    ClusterPhase = "Degraded"
	ClusterUpgrading   ClusterPhase = "Upgrading"
)

// LinstorClusterStatus is the observed state of the LINSTOR cluster.
type LinstorClusterStatus struct {
	// conditions: Available, Progressing, Degraded, Upgradeable, Encrypted.
	// +listType=map
	// +listMapKey=type
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// phase sums the conditions up in one word for lists (the OpenShift console's list
	// of instances shows status.phase): Upgrading while a LINSTOR upgrade runs, Degraded,
	// Available, or Progressing until the cluster is available.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Status",xDescriptors={"urn:alm:descriptor:io.kubernetes.phase"}
	Phase ClusterPhase `json:"phase,omitempty"`

	// observedGeneration is the generation the last successful pass acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// version is the LINSTOR version the controller reports, not the requested one.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="LINSTOR Version",xDescriptors={"urn:alm:descriptor:text"}
	Version string `json:"version,omitempty"`

	// satellites counts satellites by readiness.
	// +optional
	Satellites SatelliteCounts `json:"satellites,omitempty"`

	// satellitesSummary is "ready/total", for the printer column.
	// +optional
	SatellitesSummary string `json:"satellitesSummary,omitempty"`

	// capacity totals the storage pools of all satellites.
	// +optional
	Capacity *CapacityStatus `json:"capacity,omitempty"`

	// deployed is the LINSTOR version each part is deployed at. During an upgrade the
	// controller moves first and the satellites follow.
	// +optional
	Deployed *DeployedVersions `json:"deployed,omitempty"`

	// upgrade reports a LINSTOR version change: waiting for approval, refused, or in
	// progress phase by phase. It survives operator restarts: the upgrade resumes.
	// +optional
	Upgrade *UpgradeStatus `json:"upgrade,omitempty"`

	// restore reports the last restore from a LinstorBackup.
	// +optional
	Restore *RestoreStatus `json:"restore,omitempty"`

	// tls reports the TLS mode each channel runs with, and the mode of channels
	// spec.tls leaves unset.
	// +optional
	TLS *TLSStatus `json:"tls,omitempty"`

	// certificates lists the TLS Secrets in use, with their expiry.
	// +listType=map
	// +listMapKey=secretName
	// +optional
	Certificates []CertificateStatus `json:"certificates,omitempty"`

	// skippedNodes are nodes the satellite selection takes but that get no satellite,
	// with the reason (for example a NoSchedule or NoExecute taint the satellite pod
	// does not tolerate). At most 50 are listed; satellites.skipped counts them all.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=50
	// +optional
	SkippedNodes []SkippedNode `json:"skippedNodes,omitempty"`

	// lostNodes are LINSTOR nodes the user acknowledged as gone for good (annotation
	// linstor.io/acknowledge-lost-nodes): an upgrade's preflight, satellites phase and
	// verification proceed without them. Nothing else skips a node.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=256
	// +optional
	LostNodes []LostNode `json:"lostNodes,omitempty"`

	// replicas is the health of every LINSTOR resource: counts by state and the worst
	// ones by name.
	// +optional
	Replicas *ReplicaHealthStatus `json:"replicas,omitempty"`

	// splitBrainResolution is the last split-brain resolution a user confirmed with the
	// annotation linstor.io/resolve-split-brain, and where it is.
	// +optional
	SplitBrainResolution *SplitBrainResolutionStatus `json:"splitBrainResolution,omitempty"`

	// monitoring says whether the monitoring objects exist, and why not.
	// +optional
	Monitoring *MonitoringStatus `json:"monitoring,omitempty"`
}

// SkippedNode is a node selected for a satellite that gets none.
type SkippedNode struct {
	// name of the Kubernetes node.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Skipped Node",xDescriptors={"urn:alm:descriptor:io.kubernetes:Node"}
	Name string `json:"name"`
	// reason is a CamelCase word, e.g. UntoleratedTaint.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Skipped Because",xDescriptors={"urn:alm:descriptor:text"}
	Reason string `json:"reason"`
	// message says why, naming the taint or condition, and what to do.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Skipped Node Message",xDescriptors={"urn:alm:descriptor:text"}
	Message string `json:"message,omitempty"`
}

// LostNode is a LINSTOR node acknowledged as gone for good.
type LostNode struct {
	// name of the LINSTOR node.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Lost Node",xDescriptors={"urn:alm:descriptor:text"}
	Name string `json:"name"`
	// acknowledgedAt is when the operator first saw the acknowledgement.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Lost Node Acknowledged At",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:hidden"}
	AcknowledgedAt *metav1.Time `json:"acknowledgedAt,omitempty"`
	// message says what the acknowledgement changes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Lost Node Message",xDescriptors={"urn:alm:descriptor:text"}
	Message string `json:"message,omitempty"`
}

// DeployedVersions are the LINSTOR versions the operator deploys.
type DeployedVersions struct {
	// controller is the LINSTOR controller's version.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Controller Version",xDescriptors={"urn:alm:descriptor:text"}
	Controller string `json:"controller,omitempty"`
	// satellites is the version of every satellite (LINSTOR refuses mixed versions).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Satellite Version",xDescriptors={"urn:alm:descriptor:text"}
	Satellites string `json:"satellites,omitempty"`
}

// UpgradePhase is a step of a LINSTOR upgrade.
// +kubebuilder:validation:Enum=AwaitingApproval;Refused;Preflight;Backup;Rehearsal;Controller;Satellites;Verify;Succeeded;RollingBack;RolledBack
type UpgradePhase string

const (
	UpgradeAwaitingApproval UpgradePhase = "AwaitingApproval"
	UpgradeRefused          UpgradePhase = "Refused"
	UpgradePreflight        UpgradePhase = "Preflight"
	UpgradeBackup           UpgradePhase = "Backup"
	// UpgradeRehearsal: the new version migrates a copy of the pre-upgrade backup in
	// a Job with a scratch API server; the live database is untouched.
	UpgradeRehearsal   UpgradePhase = "Rehearsal"
	UpgradeController  UpgradePhase = "Controller"
	UpgradeSatellites  UpgradePhase = "Satellites"
	UpgradeVerify      UpgradePhase = "Verify"
	UpgradeSucceeded   UpgradePhase = "Succeeded"
	UpgradeRollingBack UpgradePhase = "RollingBack"
	UpgradeRolledBack  UpgradePhase = "RolledBack"
)

// UpgradeStatus is the state of a LINSTOR version change.
type UpgradeStatus struct {
	// phase of the upgrade.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Upgrade Phase",xDescriptors={"urn:alm:descriptor:io.kubernetes.phase"}
	Phase UpgradePhase `json:"phase"`
	// from is the version running when the upgrade started.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Upgrade From",xDescriptors={"urn:alm:descriptor:text"}
	From string `json:"from,omitempty"`
	// to is the version the upgrade moves to (a stepping stone, or the final version).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Upgrade To",xDescriptors={"urn:alm:descriptor:text"}
	To string `json:"to,omitempty"`
	// startedAt is when the upgrade (or the current attempt) started.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Upgrade Started At",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:hidden"}
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// phaseStartedAt is when the current phase started; phases are bounded in time.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Phase Started At",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:hidden"}
	PhaseStartedAt *metav1.Time `json:"phaseStartedAt,omitempty"`
	// backupName is the LinstorBackup taken before the database migration.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Upgrade Backup",xDescriptors={"urn:alm:descriptor:io.kubernetes:linstor.io:v1:LinstorBackup"}
	BackupName string `json:"backupName,omitempty"`
	// message says what happens, what blocks, or what to do.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Upgrade Message",xDescriptors={"urn:alm:descriptor:io.kubernetes.phase:reason"}
	Message string `json:"message,omitempty"`
}

// RestoreStatus is the state of a restore.
type RestoreStatus struct {
	// backupName is the LinstorBackup restored (or being restored).
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Restored Backup",xDescriptors={"urn:alm:descriptor:io.kubernetes:linstor.io:v1:LinstorBackup"}
	BackupName string `json:"backupName"`
	// clusterUID is the UID of the LinstorCluster the restore was asked of: a
	// recreated object never inherits a restore.
	// +optional
	ClusterUID string `json:"clusterUID,omitempty"`
	// backupUID is the UID of the LinstorBackup the restore read: a Failed restore is
	// tried again when a new LinstorBackup of that name replaces the failed one (an
	// import created again once its Secret was fixed).
	// +optional
	BackupUID string `json:"backupUID,omitempty"`
	// phase is AwaitingConfirmation (the live database would be replaced), Stopping
	// (nothing touched yet), Restoring (the database is being replaced; LINSTOR stays
	// stopped until it is complete), Restored or Failed (refused, nothing touched).
	// +kubebuilder:validation:Enum=AwaitingConfirmation;Stopping;Restoring;Restored;Failed
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Restore Phase",xDescriptors={"urn:alm:descriptor:io.kubernetes.phase"}
	Phase string `json:"phase"`
	// linstorVersion the backup was taken with, and that runs after the restore.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Restored LINSTOR Version",xDescriptors={"urn:alm:descriptor:text"}
	LinstorVersion string `json:"linstorVersion,omitempty"`
	// completedAt is when the database was replaced.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Restore Completed At",xDescriptors={"urn:alm:descriptor:text"}
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// message says what happens or what went wrong.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Restore Message",xDescriptors={"urn:alm:descriptor:io.kubernetes.phase:reason"}
	Message string `json:"message,omitempty"`
}

// TLSStatus reports the TLS modes in effect.
type TLSStatus struct {
	// defaultMode is the mode of a channel spec.tls leaves unset, recorded when the
	// operator first reconciles the cluster: Generated for a new cluster, Disabled for
	// one an earlier operator ran without TLS (switching a running cluster restarts the
	// controller and every satellite and moves the API to HTTPS: set the channel's mode
	// to do it). With spec.externalController unset channels are Disabled whatever it says.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Default TLS Mode",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:hidden"}
	DefaultMode TLSMode `json:"defaultMode,omitempty"`
	// internal is the mode controller-satellite traffic runs with.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Internal TLS Mode",xDescriptors={"urn:alm:descriptor:text"}
	Internal TLSMode `json:"internal,omitempty"`
	// api is the mode of the REST API; empty with an external controller, whose URL
	// says whether it is HTTPS.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="API TLS Mode",xDescriptors={"urn:alm:descriptor:text"}
	API TLSMode `json:"api,omitempty"`
}

// CertificateStatus reports one TLS Secret the cluster uses.
type CertificateStatus struct {
	// secretName of the Secret holding the certificate.
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Certificate Secret",xDescriptors={"urn:alm:descriptor:io.kubernetes:Secret"}
	SecretName string `json:"secretName"`
	// notAfter is when the certificate expires. Generated certificates are renewed when
	// a third of their life is left.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Expires",xDescriptors={"urn:alm:descriptor:text"}
	NotAfter *metav1.Time `json:"notAfter,omitempty"`
	// fingerprint identifies the Secret's content (SHA-256, shortened); it changes when
	// the certificate is renewed, and pods mounting it are rolled.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Fingerprint",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:hidden"}
	Fingerprint string `json:"fingerprint,omitempty"`
}

// SatelliteCounts counts satellites.
type SatelliteCounts struct {
	// ready satellites are ONLINE at the controller's version.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Satellites Ready",xDescriptors={"urn:alm:descriptor:text"}
	Ready int32 `json:"ready,omitempty"`
	// total satellites the operator manages.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Satellites",xDescriptors={"urn:alm:descriptor:text"}
	Total int32 `json:"total,omitempty"`
	// skipped counts the selected nodes that get no satellite (see skippedNodes).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Nodes Skipped",xDescriptors={"urn:alm:descriptor:text"}
	Skipped int32 `json:"skipped,omitempty"`
}

// CapacityStatus totals storage pool capacity.
type CapacityStatus struct {
	// total capacity of all storage pools.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Total Capacity",xDescriptors={"urn:alm:descriptor:text"}
	Total *resource.Quantity `json:"total,omitempty"`
	// free capacity of all storage pools.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Free Capacity",xDescriptors={"urn:alm:descriptor:text"}
	Free *resource.Quantity `json:"free,omitempty"`
}

// LinstorCluster is a LINSTOR cluster: its controller, satellites, CSI driver and HA controller.
// There is one per Kubernetes cluster.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=lc,categories=linstor
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Progressing",type=string,JSONPath=`.status.conditions[?(@.type=="Progressing")].status`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.version`
// +kubebuilder:printcolumn:name="Upgrade",type=string,JSONPath=`.status.upgrade.phase`
// +kubebuilder:printcolumn:name="Satellites",type=string,JSONPath=`.status.satellitesSummary`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="LINSTOR Cluster",resources={{Deployment,v1},{DaemonSet,v1},{Service,v1},{ConfigMap,v1},{Secret,v1},{LinstorSatellite,v1}}
type LinstorCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	// +optional
	Spec LinstorClusterSpec `json:"spec,omitempty"`
	// status is the observed state.
	// +optional
	Status LinstorClusterStatus `json:"status,omitempty"`
}

// LinstorClusterList contains a list of LinstorCluster.
// +kubebuilder:object:root=true
type LinstorClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LinstorCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&LinstorCluster{}, &LinstorClusterList{})
}
