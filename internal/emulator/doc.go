// Package emulator is an in-memory LINSTOR controller REST API for tests and the demo.
// LINSTOR (JVM) and DRBD (kernel) cannot run here, so this is the one stand-in the
// project allows. It serves the real URL paths with the real JSON shapes (golinstor's
// types), the real ApiCallRc error semantics and LINSTOR's data-safety refusals, and
// a conformance test validates every request and response against the official
// OpenAPI spec.
//
// The server's source (LINSTOR v1.33.3) is the reference, not the spec; every modelled
// behaviour and the server code it comes from is listed in docs/linstor-semantics.md.
// The main ones:
//  1. Mutations answer an ApiCallRc list; the first error entry decides the HTTP status
//     (codes 300-399: 404, 400-499: 403, other errors: 500); warnings ride in a 2xx.
//  2. A satellite whose version differs from the controller's is VERSION_MISMATCH.
//  3. DELETE /v1/nodes/{n} refuses nodes holding in-use resources or the last
//     diskful replica of a resource that still has diskless peers, and nothing else:
//     a lone replica is deleted with its data; DELETE .../lost refuses connected nodes
//     and does not check replicas; storage pools holding volumes cannot be deleted.
//  4. The passphrase is created once, must be entered again after a controller
//     restart, and can only be modified with the old one.
//  5. Properties are checked against LINSTOR's whitelist (pkg/linstor/props); one bad
//     key refuses the whole request.
//  6. Background work takes time (Timing): satellites connect, replicas resync,
//     evacuations move replicas and wait for them to be unused.
//  7. GET /v1/events/nodes streams node events (server-sent events) where the server
//     sends them: create, modify, delete, evacuate, evict, restore; never for
//     connection changes. A controller restart ends every stream.
//  8. Disks belong to the machines, not to LINSTOR (disks.go): GET /v1/physical-storage
//     lists them through lsblk's candidate filter, and device pools run pvcreate,
//     vgcreate, lvcreate or `zpool create -f` on them (devicepool.go), with their
//     partial effects. Volume groups and zpools outlive storage-pool and node
//     deletion, controller restarts and database restores.
//  9. S3 remotes, backups and schedules (remotes.go, backupship.go, schedules.go) write
//     real objects, named and described as the server names and describes them, to a
//     real S3 server; restores apply the incremental chain; schedules fire by cron on the
//     emulator's clock (RunDueSchedules) and apply keep_local/keep_remote.
//
// Test hooks (methods on *Emulator) inject latency and 5xx per route (also after
// serving the request: a lost answer), take nodes offline, force version mismatches,
// place resources, describe each machine's disks, log requests and count them by
// route (RequestCounts).
package emulator
