// Package render builds the Kubernetes objects the operator wants, from a LinstorCluster
// (or LinstorSatellite) and the release image set. It is pure: no client, no clock.
//
// The algorithm for every workload:
//  1. Build the typed object with the operator's labels (the cluster label selects
//     what is pruned later), the image from the image set unless the CR overrides it,
//     and the typed fields of the component spec (resources, scheduling).
//  2. Apply the component's podTemplate strategic-merge patch last, so a user can
//     change anything the typed fields do not cover, except adding privilege unless
//     the LinstorCluster allows it (PodTemplateEscalation, against the pod of step 1).
//  3. Return objects in apply order (ServiceAccount and RBAC before workloads).
//  4. The controllers then apply the component's patches (WithClusterPatches,
//     WithSatellitePatches; patches.go), held to the same policy.
package render
