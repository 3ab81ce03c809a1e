// Package props knows which properties LINSTOR v1.33.3 accepts on which object, and
// checks a property the way the LINSTOR controller does before the operator sends it.
//
// # The whitelist
//
// The LINSTOR controller refuses any property key it does not know for the object
// (HTTP 500, FAIL_INVLD_PROP, and the whole request is rolled back). The known keys
// form its whitelist, one per object. LINSTOR builds it at compile time from
// linstor-common:
//   - properties.json: hand-written rules (key, type, value rule, default, unit) and,
//     per object, the rules it accepts;
//   - drbdsetup.xml: the options of five drbdsetup commands, which become the
//     DrbdOptions/Net, Disk, PeerDevice and Resource keys of the controller, resource
//     definitions, volume definitions, volumes and connections, plus the
//     DrbdOptions/Handlers keys.
//
// At start-up the server class WhitelistProps turns these into one map per object and
// patches it (every DrbdOptions/.../resync-after key is a plain string); the
// controller's CtrlPropsHelper then validates every set and delete against it.
// Resource groups use the resource-definition whitelist, volume groups the
// volume-definition one; an object without a whitelist (volume connections, snapshot
// definitions, ...) accepts only the ignored prefixes below.
//
// zz_generated_whitelist.go holds the result for LINSTOR v1.33.3 (linstor-common
// ab276708d06bef880fe829230472a5c35ac25359): keys, types and value rules only. It is
// written by hack/propsgen (package gen holds the derivation); do not edit it.
//
// # How Check decides
//
//  1. Ignored prefixes: a key that starts, case-sensitively and as the raw string,
//     with "Aux/" (every object), "EBS/Tags/" (controller, node, resource definition,
//     volume definition), "Paths/" (node and resource connections) or "SED/" (storage
//     pools) skips the whitelist: any value is accepted. "aux/x" and "/Aux/x" are not
//     Aux keys.
//  2. Such a key must still fit LINSTOR's property container: at most 256 characters
//     (MaxKeyLength, counted in UTF-16 code units), and at most 255 once empty path
//     segments and a trailing '/' are removed.
//  3. Any other key must be whitelisted for the object: exact, case-sensitive lookup;
//     there are no wildcards. An unknown key is an *Error with UnknownKey set. (A key
//     too long for the container can never be whitelisted, so LINSTOR reports it as
//     unknown too.)
//  4. The value must satisfy the key's rule, which depends on the rule's type (below).
//
// Value rules by type:
//   - regex: the whole value matches Pattern, with Java's semantics ('.' excludes
//     all line terminators, \s includes \x0B, case-sensitive);
//   - symbol: the value is one of Values, case-sensitive;
//   - boolean: yes or no, ASCII case-insensitive;
//   - boolean_true_false: true, false, yes or no, ASCII case-insensitive;
//   - range: a Java long (optional sign, digits, no spaces) in Min..Max, inclusive;
//   - range-float: a Java double (spaces trimmed; 1e2 and 1.5d are numbers) in
//     Min..Max, inclusive;
//   - numeric-or-symbol: a Java long in Min..Max, or, if the value is no number,
//     one of Values; a number out of range is refused even if it were a symbol;
//   - long: any Java long;
//   - string: anything.
//
// LINSTOR stores the normalized value (see Normalize). Check does not cover what the
// controller checks beyond the whitelist: the controller's Cluster/Remote and NetCom
// keys (handled separately by LINSTOR, here they are unknown keys), port and minor
// ranges, whether a PrefNic interface exists, and similar.
//
// All functions are safe for concurrent use; the value patterns are compiled on first
// use.
//
// CheckDelete follows delete_props: the ignored prefixes of the delete path (the same,
// except that SED/ is not ignored on storage pools), then whitelist membership; a
// whitelisted key that is not set is not an error.
package props
