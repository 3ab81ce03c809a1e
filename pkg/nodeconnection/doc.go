// Package nodeconnection decides which node pairs a LinstorNodeConnection selects and
// which connection properties it wants on them. Pure: nodes in, pairs and properties out.
//
//  1. A pair (a, b), a < b by name, is selected when any selector term matches; a term
//     matches when every expression holds. An empty selector selects every pair.
//  2. Exists/DoesNotExist: both nodes have / neither node has the label. In/NotIn: both
//     nodes' values are / neither value is in the list. Same/NotSame: both nodes have the
//     label, with equal / different values.
//  3. Desired properties are spec.properties plus, per path, Paths/<path>/<node> set to
//     the interface on each side.
package nodeconnection
