package v1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LinstorBackupSpec says whose LINSTOR database to back up.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: create a new LinstorBackup"
type LinstorBackupSpec struct {
	// clusterRef names the LinstorCluster in this namespace. Its LINSTOR controller is
	// stopped while the backup is taken (volumes keep working: DRBD does not need it).
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Cluster"
	ClusterRef ClusterReference `json:"clusterRef"`

	// timeout bounds the backup from its creation: past it, a backup that is not
	// Completed is Failed, and the LINSTOR controller, stopped for it, starts again
	// (default 10m). A backup must never keep LINSTOR stopped for good.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(h|m|s))+$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Timeout",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// DefaultBackupTimeout is a backup's deadline when spec.timeout is unset.
const DefaultBackupTimeout = 10 * time.Minute

// BackupPhase is where a backup stands.
// +kubebuilder:validation:Enum=Pending;Running;Completed;Failed
type BackupPhase string

const (
	// BackupPending waits for the LINSTOR controller to stop.
	BackupPending BackupPhase = "Pending"
	// BackupRunning copies the database.
	BackupRunning BackupPhase = "Running"
	// BackupCompleted holds a verified copy.
	BackupCompleted BackupPhase = "Completed"
	// BackupFailed could not be taken; message says why.
	BackupFailed BackupPhase = "Failed"
)

// LinstorBackupStatus describes the copy.
type LinstorBackupStatus struct {
	// conditions: Available (a verified copy exists), Progressing, Degraded (failed).
	// +listType=map
	// +listMapKey=type
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase of the backup.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Phase",xDescriptors={"urn:alm:descriptor:io.kubernetes.phase"}
	Phase BackupPhase `json:"phase,omitempty"`
	// linstorVersion ran when the backup was taken: restore it with that version.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="LINSTOR Version",xDescriptors={"urn:alm:descriptor:text"}
	LinstorVersion string `json:"linstorVersion,omitempty"`
	// crds and objects count what the database held.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Database Tables",xDescriptors={"urn:alm:descriptor:text"}
	CRDs int32 `json:"crds,omitempty"`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Database Objects",xDescriptors={"urn:alm:descriptor:text"}
	Objects int32 `json:"objects,omitempty"`
	// size of the compressed copy in bytes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Size (bytes)",xDescriptors={"urn:alm:descriptor:text"}
	Size int64 `json:"size,omitempty"`
	// checksum of the compressed copy ("sha256:<hex>"), verified after writing and before a restore.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Checksum",xDescriptors={"urn:alm:descriptor:text"}
	Checksum string `json:"checksum,omitempty"`
	// secrets hold the copy in order, in chunks; they are owned by this LinstorBackup.
	// +optional
	Secrets []string `json:"secrets,omitempty"`
	// startedAt and completedAt bound the time the controller was stopped for it.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Started At",xDescriptors={"urn:alm:descriptor:text"}
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Completed At",xDescriptors={"urn:alm:descriptor:text"}
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// message says what happens or what went wrong.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Message",xDescriptors={"urn:alm:descriptor:io.kubernetes.phase:reason"}
	Message string `json:"message,omitempty"`
}

// LinstorBackup is a copy of a LinstorCluster's LINSTOR database (k8s backend), taken
// on demand or before an upgrade.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=lb,categories=linstor
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="LINSTOR",type=string,JSONPath=`.status.linstorVersion`
// +kubebuilder:printcolumn:name="Objects",type=integer,JSONPath=`.status.objects`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="LINSTOR Backup",resources={{Secret,v1}}
type LinstorBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec LinstorBackupSpec `json:"spec"`
	// +optional
	Status LinstorBackupStatus `json:"status,omitempty"`
}

// LinstorBackupList contains a list of LinstorBackup.
// +kubebuilder:object:root=true
type LinstorBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LinstorBackup `json:"items"`
}

func init() {
	SchemeBuilder.Register(&LinstorBackup{}, &LinstorBackupList{})
}
