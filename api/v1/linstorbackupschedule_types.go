package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LinstorBackupScheduleSpec says when to back up a cluster's LINSTOR database, where
// to, and how many backups to keep; and, with volumes, LINSTOR's own backup shipping of
// the volumes to the same bucket.
// +kubebuilder:validation:XValidation:rule="!has(self.volumes) || has(self.targetRef)",message="spec.volumes ships volumes to a bucket: spec.targetRef must name its LinstorBackupTarget"
type LinstorBackupScheduleSpec struct {
	// clusterRef names the LinstorCluster in this namespace.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Cluster"
	ClusterRef ClusterReference `json:"clusterRef"`

	// targetRef sends every backup, encrypted, to this LinstorBackupTarget's bucket;
	// unset keeps them in Secrets in this namespace (lost with the cluster).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Backup Target"
	TargetRef *BackupTargetReference `json:"targetRef,omitempty"`

	// schedule in cron syntax ("minute hour day-of-month month day-of-week", or
	// @hourly, @daily, @weekly, @monthly, @every <duration>), for example "0 3 * * *".
	// Each backup stops the LINSTOR controller for the time of the copy (volumes keep
	// working: DRBD does not need it).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Schedule",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Schedule string `json:"schedule"`

	// timeZone of the schedule, an IANA name such as "Europe/Vienna" (default UTC).
	// +kubebuilder:validation:MaxLength=64
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Time Zone",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	TimeZone string `json:"timeZone,omitempty"`

	// suspend stops creating database backups; the ones there are kept and retention
	// still applies. LINSTOR's shipping of the volumes (spec.volumes) goes on: remove
	// spec.volumes to stop it.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Suspend",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	Suspend bool `json:"suspend,omitempty"`

	// startingDeadlineSeconds: a run missed while the operator was down is taken late
	// if its time is at most this far in the past (once, for the latest missed time, as a
	// CronJob does); unset takes it however late.
	// +kubebuilder:validation:Minimum=10
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Starting Deadline (s)",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number","urn:alm:descriptor:com.tectonic.ui:advanced"}
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`

	// backupTimeout is each backup's spec.timeout (default 10m).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(h|m|s))+$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Backup Timeout",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text","urn:alm:descriptor:com.tectonic.ui:advanced"}
	BackupTimeout *metav1.Duration `json:"backupTimeout,omitempty"`

	// retention deletes this schedule's old backups, in the cluster and in the bucket.
	// The newest Completed backup is never deleted, whatever the rules say.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Retention"
	Retention *BackupRetention `json:"retention,omitempty"`

	// volumes ships the volumes' data to targetRef's bucket with LINSTOR's own backup
	// shipping: the operator registers the bucket in LINSTOR as an S3 remote (named after
	// the target, credentials from its Secret), declares a LINSTOR backup schedule
	// (named after this object) and enables it for the resource groups named, or for
	// every resource. LINSTOR takes the snapshots and ships them (full, then incremental
	// on their own crons); its backups are encrypted only for volumes with a LUKS layer.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Volume Backups"
	Volumes *VolumeBackupSpec `json:"volumes,omitempty"`
}

// VolumeBackupSpec is a LINSTOR backup schedule (LINSTOR's cron syntax: five fields,
// no @descriptors).
type VolumeBackupSpec struct {
	// fullSchedule is when a full backup of each volume is shipped, for example
	// "0 2 * * 0" (Sundays at 2:00, the LINSTOR controller's time zone).
	// +kubebuilder:validation:Pattern=`^\S+( \S+){4}$`
	// +kubebuilder:validation:MaxLength=128
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Full Backup Schedule",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	FullSchedule string `json:"fullSchedule"`

	// incrementalSchedule is when an incremental backup (the changes since the last
	// backup) is shipped, for example "0 2 * * 1-6"; unset ships only full backups.
	// +kubebuilder:validation:Pattern=`^\S+( \S+){4}$`
	// +kubebuilder:validation:MaxLength=128
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Incremental Backup Schedule",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	IncrementalSchedule string `json:"incrementalSchedule,omitempty"`

	// keepLocal is how many snapshots a full backup is based on LINSTOR keeps on the
	// nodes (LINSTOR's keep_local); unset keeps them all.
	// +kubebuilder:validation:Minimum=1
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Snapshots Kept Locally",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number"}
	KeepLocal *int32 `json:"keepLocal,omitempty"`

	// keepRemote is how many full backups (with their incrementals) LINSTOR keeps in the
	// bucket (LINSTOR's keep_remote); unset keeps them all.
	// +kubebuilder:validation:Minimum=1
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Full Backups Kept in the Bucket",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number"}
	KeepRemote *int32 `json:"keepRemote,omitempty"`

	// resourceGroups the schedule is enabled for; empty enables it for every resource
	// (on the LINSTOR controller).
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	// +optional
	ResourceGroups []string `json:"resourceGroups,omitempty"`

	// retries of a failed shipment before the next scheduled one (LINSTOR's on_failure
	// RETRY with max_retries); unset skips to the next scheduled time.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Retries",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number","urn:alm:descriptor:com.tectonic.ui:advanced"}
	Retries *int32 `json:"retries,omitempty"`
}

// MaxListedVolumeBackups bounds status.volumes.resources.
const MaxListedVolumeBackups = 100

// VolumeBackupStatus is what LINSTOR reports of its shipping on this schedule.
type VolumeBackupStatus struct {
	// remote and schedule are the names in LINSTOR.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="LINSTOR Remote",xDescriptors={"urn:alm:descriptor:text"}
	Remote string `json:"remote,omitempty"`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="LINSTOR Schedule",xDescriptors={"urn:alm:descriptor:text"}
	Schedule string `json:"schedule,omitempty"`
	// credentialsHash says which credentials LINSTOR's remote was given (LINSTOR never
	// returns the secret key): a changed Secret is sent again. An HMAC keyed by the
	// target's encryption key, so a reader of the status cannot test guesses of the
	// secret key against it.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Credentials Hash",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:hidden"}
	CredentialsHash string `json:"credentialsHash,omitempty"`
	// scheduled counts the resources the schedule covers; shipped those with a backup
	// shipped; notScheduled those LINSTOR does not ship, with a reason.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resources Scheduled",xDescriptors={"urn:alm:descriptor:text"}
	Scheduled int32 `json:"scheduled,omitempty"`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resources Shipped",xDescriptors={"urn:alm:descriptor:text"}
	Shipped int32 `json:"shipped,omitempty"`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resources Not Scheduled",xDescriptors={"urn:alm:descriptor:text"}
	NotScheduled int32 `json:"notScheduled,omitempty"`
	// failed counts the resources whose last shipment failed (read from LINSTOR's
	// backup list of the remote; a later good shipment clears it).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resources Failed",xDescriptors={"urn:alm:descriptor:text"}
	Failed int32 `json:"failed,omitempty"`
	// resources lists each resource's last shipped backup, next one, its failure and the
	// reason it is not shipped: those not scheduled first, then those whose last
	// shipment failed, then the oldest shipped (at most 100).
	// +kubebuilder:validation:MaxItems=100
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resources",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:hidden"}
	Resources []ResourceBackupStatus `json:"resources,omitempty"`
}

// ResourceBackupStatus is one resource's shipping.
type ResourceBackupStatus struct {
	// name of the LINSTOR resource.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Resource",xDescriptors={"urn:alm:descriptor:text"}
	Name string `json:"name"`
	// lastShipped is when the snapshot of its newest backup in the bucket was taken (a
	// shipment LINSTOR completed); lastIncremental says whether it was incremental.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Shipped",xDescriptors={"urn:alm:descriptor:text"}
	LastShipped *metav1.Time `json:"lastShipped,omitempty"`
	// lastBackup is that backup's id in LINSTOR (`linstor backup list`; restore it with
	// `linstor backup restore ... --id`).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Backup",xDescriptors={"urn:alm:descriptor:text"}
	LastBackup string `json:"lastBackup,omitempty"`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Was Incremental",xDescriptors={"urn:alm:descriptor:text"}
	LastIncremental bool `json:"lastIncremental,omitempty"`
	// next is when the next shipment starts (unset while one runs).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Next",xDescriptors={"urn:alm:descriptor:text"}
	Next *metav1.Time `json:"next,omitempty"`
	// running: a shipment is under way.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Running",xDescriptors={"urn:alm:descriptor:text"}
	Running bool `json:"running,omitempty"`
	// reason LINSTOR gives for not shipping it.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Not Shipped Because",xDescriptors={"urn:alm:descriptor:text"}
	Reason string `json:"reason,omitempty"`
	// lastFailed is when the snapshot of its last shipment, which failed, was taken; set
	// only while no later shipment succeeded.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Failed",xDescriptors={"urn:alm:descriptor:text"}
	LastFailed *metav1.Time `json:"lastFailed,omitempty"`
	// lastFailure says what LINSTOR reports of that failure: its message where LINSTOR
	// gives one, else how LINSTOR's backup list shows it (LINSTOR keeps the cause in
	// its error reports: linstor error-reports list).
	// +kubebuilder:validation:MaxLength=512
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Failure",xDescriptors={"urn:alm:descriptor:text"}
	LastFailure string `json:"lastFailure,omitempty"`
}

// MaxVolumeFailureMessage bounds status.volumes.resources[].lastFailure.
const MaxVolumeFailureMessage = 512

// BackupRetention bounds how many backups a schedule keeps and for how long.
// +kubebuilder:validation:XValidation:rule="has(self.keepLast) || has(self.maxAge)",message="retention needs keepLast, maxAge or both"
type BackupRetention struct {
	// keepLast keeps this many of the newest Completed backups.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Keep Last",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number"}
	KeepLast *int32 `json:"keepLast,omitempty"`

	// maxAge deletes Completed backups older than this, for example "720h" (30 days).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(h|m|s))+$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Maximum Age",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`
}

// LinstorBackupScheduleStatus says what the schedule did and will do.
type LinstorBackupScheduleStatus struct {
	// conditions: Ready (the schedule, target and cluster are valid), BackupsHealthy
	// (the last backup completed).
	// +listType=map
	// +listMapKey=type
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// lastScheduleTime is the scheduled time of the last backup created.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Scheduled",xDescriptors={"urn:alm:descriptor:text"}
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// nextScheduleTime is when the next backup is due.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Next Scheduled",xDescriptors={"urn:alm:descriptor:text"}
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`
	// lastSuccessfulTime is when the last backup completed.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Successful",xDescriptors={"urn:alm:descriptor:text"}
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`
	// lastBackup is the LinstorBackup created last.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Backup",xDescriptors={"urn:alm:descriptor:io.kubernetes:linstor.io:v1:LinstorBackup"}
	LastBackup string `json:"lastBackup,omitempty"`
	// active names the backup under way; a run that comes while one is under way is skipped.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Active Backup",xDescriptors={"urn:alm:descriptor:io.kubernetes:linstor.io:v1:LinstorBackup"}
	Active string `json:"active,omitempty"`
	// lastControllerStopped is how long the last completed backup kept the LINSTOR
	// controller stopped.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Controller Stopped For",xDescriptors={"urn:alm:descriptor:text"}
	LastControllerStopped *metav1.Duration `json:"lastControllerStopped,omitempty"`
	// volumes is LINSTOR's shipping of the volumes (spec.volumes).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Volume Backups",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:hidden"}
	Volumes *VolumeBackupStatus `json:"volumes,omitempty"`
	// missed counts runs not taken: past the starting deadline, or while one was under way.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Missed Runs",xDescriptors={"urn:alm:descriptor:text"}
	Missed int32 `json:"missed,omitempty"`
}

// LinstorBackupSchedule backs up a LinstorCluster's LINSTOR database on a schedule,
// into Secrets or an encrypted bucket, and deletes old backups by count and age.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=lbs,categories=linstor
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.targetRef.name`
// +kubebuilder:printcolumn:name="Suspend",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Last Successful",type=date,JSONPath=`.status.lastSuccessfulTime`
// +kubebuilder:printcolumn:name="Next",type=string,JSONPath=`.status.nextScheduleTime`
// +operator-sdk:csv:customresourcedefinitions:displayName="LINSTOR Backup Schedule",resources={{LinstorBackup,v1}}
type LinstorBackupSchedule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec LinstorBackupScheduleSpec `json:"spec"`
	// +optional
	Status LinstorBackupScheduleStatus `json:"status,omitempty"`
}

// LinstorBackupScheduleList contains a list of LinstorBackupSchedule.
// +kubebuilder:object:root=true
type LinstorBackupScheduleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LinstorBackupSchedule `json:"items"`
}

func init() {
	SchemeBuilder.Register(&LinstorBackupSchedule{}, &LinstorBackupScheduleList{})
}
