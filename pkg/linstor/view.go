package linstor

// ResourceView is one replica as GET /v1/view/resources lists it, with the fields
// golinstor's types omit (replication_states, may_promote): JsonGenTypes.ResourceWithVolumes
// and Json.apiToResourceWithVolumes@v1.33.3.
type ResourceView struct {
	Name     string
	NodeName string
	Flags    []string
	// InUse is state.in_use: nil while the satellite is not ONLINE.
	InUse *bool
	// Drbd is the DRBD layer's data, nil for a resource without DRBD.
	Drbd    *DrbdView
	Volumes []VolumeView
}

// DrbdView is the DRBD layer of a replica.
type DrbdView struct {
	NodeID int32
	// Connections by peer node name; only filled while the satellite is ONLINE.
	Connections map[string]DrbdConnection
	MayPromote  *bool
}

// DrbdConnection is one peer connection as the satellite reports it.
type DrbdConnection struct {
	Connected bool
	Message   string
}

// VolumeView is one volume of a replica.
type VolumeView struct {
	VolumeNumber int32
	StoragePool  string
	// DiskState is "" while unknown (the satellite is not ONLINE, or no DRBD).
	DiskState   string
	Replication map[string]ReplicationState
}

// ReplicationState is the replication towards one peer.
type ReplicationState struct {
	State          string
	DonePercentage *float64
}
