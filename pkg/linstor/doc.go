// Package linstor wraps golinstor for the controllers: a client factory, error
// classification, and property reconciliation with last-applied tracking.
//
// Property reconciliation, the algorithm:
//  1. The keys the operator set last time are stored in LINSTOR itself, as a JSON list
//     in the property names.AuxLastApplied of the same object, so nothing is forgotten when
//     the operator restarts or its CRs are recreated.
//  2. Desired keys whose current value differs are overridden.
//  3. Keys in the last-applied list that are no longer desired are deleted.
//  4. Keys the operator never set are never touched, whoever set them.
//  5. When nothing differs the diff is empty and the caller makes no request at all.
package linstor
