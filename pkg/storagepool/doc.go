// Package storagepool decides what a satellite pass writes to LINSTOR for the node's
// storage pools, as a pure plan: the controller observes (LINSTOR's pools, the
// managed-pools record, the discovery plan), asks Plan, performs each write the plan
// hands out, folds its result back, and reports the Outcome.
//
// The rules, each there to keep data:
//   - a pool whose type differs from the spec is reported, never changed;
//   - a pool is created only on a satellite LINSTOR reports ONLINE (LINSTOR learns the
//     providers a satellite supports when it connects);
//   - only pools the operator created (the managed-pools record) are ever deleted, and
//     LINSTOR refuses to delete one that holds volumes: the pass then waits and says so;
//   - a discovery claim is saved in the status before LINSTOR is sent it, so whatever
//     happens to the answer (or the operator) the next pass knows which disks went out;
//   - a discovery pool whose disks were claimed before is registered on them, never
//     given new disks (pkg/discovery decides which).
//
// Nothing here talks to LINSTOR or Kubernetes.
package storagepool
