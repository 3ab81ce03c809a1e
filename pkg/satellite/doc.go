// Package satellite computes a node's LinstorSatellite from the LinstorCluster and the
// LinstorSatelliteConfigurations. Pure: the inputs are objects, the output a spec.
//
// The merge, in a defined order:
//  1. A node gets a satellite when it matches the cluster's nodeSelector.
//  2. Configurations that select the node apply in order of their names; for the same
//     item name (pool, property, interface) a later configuration replaces the earlier
//     item, other items accumulate; deletionPolicy, maxConcurrentEvacuations and
//     drbdModuleLoader are the last ones set (drbdModuleLoader starts from the
//     cluster's spec.satellite.drbdModuleLoader).
//  3. Pod-template patches apply in the same order, each on top of the previous result.
//  4. Properties with valueFrom are resolved against the node; a missing label or
//     annotation leaves the property out (so it is removed from LINSTOR).
package satellite
