// Package reconciler is the skeleton every controller of this operator shares
// (cluster-api's reconcile shape):
//
//  1. Reconcile gets the object, runs its delete list when it is being deleted, and
//     otherwise builds a scope for the pass.
//  2. Run calls the named phases in order; each acts and records what it saw on the
//     scope. Their errors are collected so that the status is still saved.
//  3. The status is derived from the scope and saved last (deferred), through
//     PatchStatus: a snapshot, the change, and one write only when something changed.
//
// It also holds what every controller uses beside: bounded conditions, the predicate
// that ignores a controller's own status writes, and the retry pacing.
package reconciler
