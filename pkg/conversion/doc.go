// Package conversion makes a spoke<->hub conversion lossless.
//
// A spoke version cannot express everything the hub can. The algorithm:
//
//  1. Hub to spoke: map the fields the spoke has. If mapping the result back does
//     not give the hub part again, store the hub part (spec and status separately)
//     as JSON in the spoke's DataAnnotation.
//  2. Spoke to hub: map the spoke's fields to a hub part. If no stored part exists,
//     that is the result.
//  3. If a stored part exists and the spoke still maps to exactly what the stored part
//     maps to (the object came back unchanged), the stored part is the result: byte
//     for byte what was written through the hub.
//  4. Otherwise the spoke was edited: start from the stored part and overlay the fields
//     the spoke can express. Hub-only fields survive an edit made through the spoke.
//  5. The annotation never reaches the hub object.
package conversion
