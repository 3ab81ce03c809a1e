// Package runbundle installs a bundle directory through the OLM of a cluster, as
// `operator-sdk run bundle` does with a bundle image, and removes that install again
// (make run-bundle, make cleanup-bundle; docs/olm.md). The catalog is the bundle alone,
// rendered and served by opm, so no image, registry or container engine is needed.
// The decisions (catalog blobs, channel, OperatorGroup, which InstallPlan to approve,
// what a stuck install lacks) are pure functions; Install and Cleanup act on the cluster.
package runbundle
