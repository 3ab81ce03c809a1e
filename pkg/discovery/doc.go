// Package discovery decides which of a node's unused disks become which storage pool.
//
// LINSTOR lists a node's unused disks (GET /v1/physical-storage/{node}: whole disks of
// more than 1 GiB with no partition, filesystem or holder, LsBlkUtils.filterDeviceCandidates)
// and creates a volume group or zpool from the disks it is given (POST
// /v1/physical-storage/{node}). The satellite checks nothing more: ZFS pools are made with
// `zpool create -f` (ZfsCommands.createZPool), which overwrites an old signature. So the
// operator is the only guard of a disk's data, and every rule that keeps it lives here as
// a pure function of the spec, the last listing and what the status remembers.
package discovery
