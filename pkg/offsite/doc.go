// Package offsite keeps backups of LINSTOR's database in an S3 bucket, outside the
// cluster they protect, encrypted before they leave it, and reads them back.
//
// # Layout in the bucket
//
//	<prefix>/linstor-operator/databases/<ID>/database.json.gz.age   the backup
//	<prefix>/linstor-operator/databases/<ID>/manifest.json          what it is (JSON)
//
// ID is "<namespace>.<cluster name>/<UTC yyyymmddThhmmssZ>-<uid8>-<backup name>" (NewID).
// database.json.gz.age is the stream dbbackup.Write writes (gzip of JSON lines)
// encrypted with age (https://age-encryption.org/v1): to an X25519 recipient, or to a
// passphrase through scrypt (work factor 2^15), then ChaCha20-Poly1305 in 64 KiB
// chunks, each authenticated, so a changed, cut or reordered byte fails to decrypt.
// The age CLI opens it: `age -d -i key.txt database.json.gz.age | gunzip`.
//
// manifest.json is not encrypted: it holds no secret, and a new cluster reads it to
// choose a backup before it has the key: the cluster it came from (namespace, name,
// UID), LINSTOR's and the operator's versions, the time, the counts of tables and
// objects, the size and SHA-256 of the plaintext stream (as dbbackup.Checksum) and of
// the stored object, the encryption and the fingerprint of the key that opens it, and
// a MAC.
//
// # Authenticated manifests
//
// Encrypting to an X25519 recipient needs only the public recipient, which every
// manifest shows: whoever may write to the bucket could replace a backup's object and
// manifest with another database, validly encrypted, with true checksums. The
// manifest's "mac" is what only the key's holder can make: HMAC-SHA256 of the
// manifest's compact JSON (encoding/json of Manifest, "mac" left out), keyed by
// HKDF-SHA256 (info "linstor-operator offsite manifest MAC v1", no salt) of
//
//   - an identity: its canonical string, AGE-SECRET-KEY-1…;
//   - a passphrase: scrypt(passphrase, salt "linstor-operator offsite manifest MAC v1",
//     N=2^15, r=8, p=1, 32 bytes). The manifest is readable by anyone with the bucket;
//     a MAC keyed by a fast hash would test passphrase guesses faster than the
//     object's scrypt stanza does, so it costs the same work. The salt is fixed so one
//     derivation per store serves every manifest List checks (a fixed salt lets one
//     precomputed dictionary serve every bucket: the passphrase is a long random
//     string, not a word); age's own passphrase-derived key cannot serve: it is
//     salted anew in each object's header.
//
// Get and Open refuse a manifest whose MAC is missing or not the store key's
// (ReasonCorrupt: another passphrase, or a manifest written or changed in the
// bucket), and one that names another identity (ReasonWrongKey). List shows every
// cluster's backups, some made with other keys, and marks those whose MAC is the
// store key's Authenticated. The MAC covers the ID, which must be the manifest's
// directory, and the object's checksum: an authentic manifest copied elsewhere is
// refused, and beside another object Open fails at the checksums.
//
// # A backup's life
//
//  1. Upload streams the backup through age into a multipart upload of PartSize
//     parts: memory stays near one part, whatever the database's size. A failure
//     aborts the upload.
//  2. Verify reads the object back and decrypts it: sizes and checksums of both the
//     stored and the decrypted bytes must be those written.
//  3. Publish writes manifest.json with its MAC, last: a backup is listed only when
//     it is whole and was read back. A new cluster finds backups by listing
//     manifests (List).
//  4. Open reads a backup for a restore, checking as Verify does; its Read returns an
//     error instead of io.EOF if anything differs, so a restore never takes a damaged
//     stream for whole.
//  5. Stat, one HEAD of the object, finds a backup whose object a lifecycle rule
//     deleted or that changed size, cheaply enough to run every few minutes.
//  6. Delete removes the manifest first, then the data: a backup half deleted is no
//     longer listed.
//
// Every failure is an *Error with a Reason for conditions and a message that names
// the bucket and the object and says what the admin does.
package offsite
