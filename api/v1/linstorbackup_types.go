package v1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LinstorBackupSpec says whose LINSTOR database to back up, and where the copy goes.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: create a new LinstorBackup"
// +kubebuilder:validation:XValidation:rule="!has(self.importFrom) || has(self.targetRef)",message="spec.importFrom names a backup in a bucket: spec.targetRef must name its LinstorBackupTarget"
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

	// targetRef sends the copy, encrypted, to this LinstorBackupTarget's bucket instead
	// of Secrets in this namespace: a backup that survives the cluster. The LINSTOR
	// controller is stopped only while the copy is read and sent; reading it back to
	// verify it (phase Verifying) runs with LINSTOR started again.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Backup Target"
	TargetRef *BackupTargetReference `json:"targetRef,omitempty"`

	// importFrom takes nothing: it names a backup already in targetRef's bucket (its id,
	// as the target's status.backups lists it, for example one another cluster took).
	// The operator reads it back and decrypts it; verified, it is Completed and can be
	// named in a LinstorCluster's spec.database.restoreFrom, which is how a new cluster
	// is restored after a disaster. Deleting such a LinstorBackup leaves the bucket alone.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]+/[A-Za-z0-9._-]+$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Import From Bucket",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	ImportFrom string `json:"importFrom,omitempty"`
}

// DefaultBackupTimeout is a backup's deadline when spec.timeout is unset.
const DefaultBackupTimeout = 10 * time.Minute

// BackupPhase is where a backup stands.
// +kubebuilder:validation:Enum=Pending;Running;Verifying;Completed;Failed
type BackupPhase string

const (
	// BackupPending waits for the LINSTOR controller to stop.
	BackupPending BackupPhase = "Pending"
	// BackupRunning copies the database.
	BackupRunning BackupPhase = "Running"
	// BackupVerifying reads a copy sent to a bucket back (LINSTOR runs again), or an
	// imported one.
	BackupVerifying BackupPhase = "Verifying"
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
	// stored says where the copy is in spec.targetRef's bucket.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Stored Copy",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:hidden"}
	Stored *StoredCopy `json:"stored,omitempty"`
	// controllerStopped is how long the LINSTOR controller was kept stopped for this
	// backup: from the backup's creation, when the stop is asked, to the end of the copy
	// (a bucket's read-back is not counted: LINSTOR runs again meanwhile).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Controller Stopped For",xDescriptors={"urn:alm:descriptor:text"}
	ControllerStopped *metav1.Duration `json:"controllerStopped,omitempty"`
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

// StoredCopy is a copy in a bucket.
type StoredCopy struct {
	// target is the LinstorBackupTarget.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Backup Target",xDescriptors={"urn:alm:descriptor:io.kubernetes:linstor.io:v1:LinstorBackupTarget"}
	Target string `json:"target"`
	// id of the copy in the bucket.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="ID in the Bucket",xDescriptors={"urn:alm:descriptor:text"}
	ID string `json:"id"`
	// encryptedSize and encryptedChecksum are the stored object's bytes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Encrypted Size (bytes)",xDescriptors={"urn:alm:descriptor:text"}
	EncryptedSize int64 `json:"encryptedSize,omitempty"`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Encrypted Checksum",xDescriptors={"urn:alm:descriptor:text"}
	EncryptedChecksum string `json:"encryptedChecksum,omitempty"`
	// location is the bucket it was written to or read from ("<endpoint>/<bucket>/<prefix>"):
	// a target edited since points elsewhere, which proves nothing about this copy.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Location",xDescriptors={"urn:alm:descriptor:text"}
	Location string `json:"location,omitempty"`
	// keyFingerprint says which key opens it.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Key Fingerprint",xDescriptors={"urn:alm:descriptor:text"}
	KeyFingerprint string `json:"keyFingerprint,omitempty"`
	// cluster that took it (namespace/name) and its uid, as the bucket records.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Taken of Cluster",xDescriptors={"urn:alm:descriptor:text"}
	Cluster string `json:"cluster,omitempty"`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Cluster UID",xDescriptors={"urn:alm:descriptor:text"}
	ClusterUID string `json:"clusterUID,omitempty"`
	// deletePending: the backup failed after this copy was sent, so it was never
	// published, and the operator deletes it from the bucket, retrying until it is gone
	// (also after a restart); false again once it is, or when the target was edited to
	// point elsewhere (the message then says where to delete it).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Deletion Pending",xDescriptors={"urn:alm:descriptor:text"}
	DeletePending bool `json:"deletePending,omitempty"`
}

// LinstorBackup is a copy of a LinstorCluster's LINSTOR database (k8s backend), taken
// on demand, on a schedule or before an upgrade, kept in Secrets or, encrypted, in a
// bucket; or a copy another cluster left in a bucket, imported to be restored.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=lb,categories=linstor
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="LINSTOR",type=string,JSONPath=`.status.linstorVersion`
// +kubebuilder:printcolumn:name="Objects",type=integer,JSONPath=`.status.objects`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.targetRef.name`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="LINSTOR Backup",resources={{Secret,v1},{LinstorBackupTarget,v1}}
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
