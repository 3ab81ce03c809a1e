package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LinstorBackupTargetSpec says where backups go outside the cluster: an S3-compatible
// bucket, and the key they are encrypted with before they leave.
type LinstorBackupTargetSpec struct {
	// s3 is the bucket.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="S3 Bucket"
	S3 S3Location `json:"s3"`

	// encryption: a LINSTOR database backup holds secrets (the master passphrase's
	// wrapped key, remotes' credentials), so it is encrypted before it leaves the cluster.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Encryption"
	Encryption BackupEncryption `json:"encryption"`
}

// S3Location is a bucket and a prefix on an S3-compatible endpoint.
type S3Location struct {
	// endpoint of the S3 service, for example "https://s3.eu-central-1.amazonaws.com"
	// or "https://minio.storage.example:9000". http:// is accepted for endpoints inside a
	// trusted network; the backups are encrypted either way.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^https?://[^\s/]+(/[^\s]*)?$`
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Endpoint",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Endpoint string `json:"endpoint"`

	// bucket name; the operator never creates or deletes it.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9.-]*[a-z0-9]$`
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Bucket",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Bucket string `json:"bucket"`

	// prefix of every object the operator writes, for sharing a bucket between clusters.
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9!_.*'()-]+(/[A-Za-z0-9!_.*'()-]+)*$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Prefix",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Prefix string `json:"prefix,omitempty"`

	// region of the bucket (default us-east-1, which most on-premises services accept).
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z0-9-]+$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Region",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Region string `json:"region,omitempty"`

	// pathStyle addresses the bucket in the path (https://endpoint/bucket/key), as most
	// on-premises services need; unset lets the client choose (virtual-hosted on AWS).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Path-Style Addressing",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	PathStyle bool `json:"pathStyle,omitempty"`

	// credentialsSecretRef names a Secret in this namespace with AWS_ACCESS_KEY_ID and
	// AWS_SECRET_ACCESS_KEY. Credentials are never part of the spec.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Credentials Secret"
	CredentialsSecretRef LocalSecretReference `json:"credentialsSecretRef"`

	// caConfigMapRef names a ConfigMap in this namespace whose ca.crt holds the CA
	// bundle (PEM) that signed the endpoint's certificate, added to the system's.
	// +optional
	CAConfigMapRef *LocalConfigMapReference `json:"caConfigMapRef,omitempty"`
}

// BackupEncryption names the key backups are encrypted with (age, an authenticated
// streaming cipher).
type BackupEncryption struct {
	// keySecretRef names a Secret in this namespace holding either "identity", an age
	// X25519 identity (AGE-SECRET-KEY-1..., from `age-keygen`), or "passphrase". Keep a
	// copy of it outside the cluster: a backup cannot be read without it.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Key Secret"
	KeySecretRef LocalSecretReference `json:"keySecretRef"`
}

// LocalConfigMapReference names a ConfigMap in the namespace of the referring object.
type LocalConfigMapReference struct {
	// name of the ConfigMap.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="ConfigMap",xDescriptors={"urn:alm:descriptor:io.kubernetes:ConfigMap"}
	Name string `json:"name"`
}

// BackupTargetReference names a LinstorBackupTarget in the namespace of the referring object.
type BackupTargetReference struct {
	// name of the LinstorBackupTarget.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Backup Target",xDescriptors={"urn:alm:descriptor:io.kubernetes:linstor.io:v1:LinstorBackupTarget"}
	Name string `json:"name"`
}

// Credential and key names in the Secrets a LinstorBackupTarget names.
const (
	S3AccessKeyIDKey     = "AWS_ACCESS_KEY_ID"
	S3SecretAccessKeyKey = "AWS_SECRET_ACCESS_KEY"
	CABundleKey          = "ca.crt"
)

// StoredBackup is a database backup found in the bucket.
type StoredBackup struct {
	// id of the backup in the bucket: name it in a LinstorBackup's spec.importFrom.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="ID",xDescriptors={"urn:alm:descriptor:text"}
	ID string `json:"id"`
	// cluster that was backed up, as namespace/name.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Cluster",xDescriptors={"urn:alm:descriptor:text"}
	Cluster string `json:"cluster,omitempty"`
	// clusterUID of that LinstorCluster.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Cluster UID",xDescriptors={"urn:alm:descriptor:text"}
	ClusterUID string `json:"clusterUID,omitempty"`
	// backup is the LinstorBackup that took it.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Backup",xDescriptors={"urn:alm:descriptor:text"}
	Backup string `json:"backup,omitempty"`
	// schedule that created it, if any.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Schedule",xDescriptors={"urn:alm:descriptor:text"}
	Schedule string `json:"schedule,omitempty"`
	// linstorVersion wrote the database: restore it with that version.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="LINSTOR Version",xDescriptors={"urn:alm:descriptor:text"}
	LinstorVersion string `json:"linstorVersion,omitempty"`
	// createdAt is when the copy was taken.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Created At",xDescriptors={"urn:alm:descriptor:text"}
	CreatedAt *metav1.Time `json:"createdAt,omitempty"`
	// objects counts the database's objects.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Objects",xDescriptors={"urn:alm:descriptor:text"}
	Objects int32 `json:"objects,omitempty"`
	// size of the encrypted copy in bytes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Size (bytes)",xDescriptors={"urn:alm:descriptor:text"}
	Size int64 `json:"size,omitempty"`
}

// MaxListedBackups bounds status.backups.
const MaxListedBackups = 50

// LinstorBackupTargetStatus says whether the bucket can be used and what it holds.
type LinstorBackupTargetStatus struct {
	// conditions: Available (the endpoint answers, the credentials and the key work, the
	// bucket exists), with a reason naming what to fix.
	// +listType=map
	// +listMapKey=type
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// count of database backups in the bucket under the prefix.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Backups in the Bucket",xDescriptors={"urn:alm:descriptor:text"}
	Count int32 `json:"count,omitempty"`
	// backups in the bucket, newest first (at most 50).
	// +kubebuilder:validation:MaxItems=50
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Backups",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:hidden"}
	Backups []StoredBackup `json:"backups,omitempty"`
	// keyFingerprint says which key the target encrypts with (not secret).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Key Fingerprint",xDescriptors={"urn:alm:descriptor:text"}
	KeyFingerprint string `json:"keyFingerprint,omitempty"`
}

// LinstorBackupTarget is an S3-compatible bucket that LinstorBackups and
// LinstorBackupSchedules write encrypted database backups to, and that a new cluster
// restores from.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=lbt,categories=linstor
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.s3.endpoint`
// +kubebuilder:printcolumn:name="Bucket",type=string,JSONPath=`.spec.s3.bucket`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Backups",type=integer,JSONPath=`.status.count`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="LINSTOR Backup Target",resources={{Secret,v1},{ConfigMap,v1}}
type LinstorBackupTarget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec LinstorBackupTargetSpec `json:"spec"`
	// +optional
	Status LinstorBackupTargetStatus `json:"status,omitempty"`
}

// LinstorBackupTargetList contains a list of LinstorBackupTarget.
// +kubebuilder:object:root=true
type LinstorBackupTargetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LinstorBackupTarget `json:"items"`
}

func init() {
	SchemeBuilder.Register(&LinstorBackupTarget{}, &LinstorBackupTargetList{})
}
