// Package apply writes desired objects with server-side apply under one field owner
// and prunes the objects of a LinstorCluster that are no longer desired.
//
//  1. Each object is converted to unstructured without status or creationTimestamp,
//     so the apply request carries exactly the fields the operator owns.
//  2. Namespaced objects get a controller owner reference to the LinstorCluster, so
//     Kubernetes' garbage collector removes them with it. Cluster-scoped objects cannot
//     point at a namespaced owner; the LinstorCluster's finalizer removes those.
//  3. Apply with ForceOwnership: the operator's fields win over manual edits.
//  4. Prune lists each managed kind by the cluster label and deletes what was not
//     applied in this pass. A pass that failed to render never prunes.
package apply
