package offsite

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// ManifestFormat is the format of the manifests this package writes and reads.
const ManifestFormat = 1

// The layout in the bucket (see the package doc).
const (
	databasesDir = "linstor-operator/databases/"
	dataName     = "database.json.gz.age"
	manifestName = "manifest.json"
	idTimeLayout = "20060102T150405Z"
)

// ClusterIdentity names the LinstorCluster a backup was taken of.
type ClusterIdentity struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

// Manifest describes a backup: written last, unencrypted, so a listed backup is
// complete and verified and a new cluster can choose one without the key.
type Manifest struct {
	Format int `json:"format"`
	// ID is "<namespace>.<cluster name>/<UTC yyyymmddThhmmssZ>-<uid8>-<backup name>", the
	// backup's directory under <prefix>/linstor-operator/databases/.
	ID      string          `json:"id"`
	Cluster ClusterIdentity `json:"cluster"`
	// Backup and Schedule are the LinstorBackup's and LinstorBackupSchedule's names.
	Backup   string `json:"backup"`
	Schedule string `json:"schedule,omitempty"`

	LinstorVersion  string    `json:"linstorVersion"`
	OperatorVersion string    `json:"operatorVersion"`
	CreatedAt       time.Time `json:"createdAt"`
	CRDs            int       `json:"crds"`
	Objects         int       `json:"objects"`

	// Size and Checksum are the plaintext gzip stream's (as dbbackup.Checksum).
	Size     int64  `json:"size"`
	Checksum string `json:"checksum"`
	// EncryptedSize and EncryptedChecksum are the stored object's bytes.
	EncryptedSize     int64  `json:"encryptedSize"`
	EncryptedChecksum string `json:"encryptedChecksum"`

	// Encryption is EncryptionX25519 or EncryptionScrypt; KeyFingerprint is
	// Key.Fingerprint of the key that opens the backup.
	Encryption     string `json:"encryption"`
	KeyFingerprint string `json:"keyFingerprint"`

	// MAC is "hmac-sha256:<hex>" of the manifest's JSON without it, keyed by the key
	// that opens the backup (see the package doc): only the key's holder can make it,
	// not whoever can write to the bucket and read the public recipient.
	MAC string `json:"mac,omitempty"`

	// Authenticated is not stored: List sets it when the MAC is the store key's (the
	// store's key published the manifest, and nothing changed it since); Get returns
	// only such manifests. Publish and Open ignore it.
	Authenticated bool `json:"-"`
}

// upload is what the manifest says about the stored object.
func (m Manifest) upload() Upload {
	return Upload{ID: m.ID, Size: m.Size, Checksum: m.Checksum, EncryptedSize: m.EncryptedSize, EncryptedChecksum: m.EncryptedChecksum}
}

// NewID is a backup's ID: "<namespace>.<cluster name>/<UTC yyyymmddThhmmssZ>-<uid8>-<backup name>".
// Kubernetes namespaces have no dots, so the first dot ends the namespace; the time
// sorts a cluster's backups by name. uid8 is the start of the cluster's UID: clusters
// of one namespace and name sharing a bucket (a restored cluster beside the lost one's
// site, two sites with the same manifests) whose schedules fire in the same second
// would otherwise send their copies to one object.
func NewID(cluster ClusterIdentity, createdAt time.Time, backup string) string {
	id := cluster.Namespace + "." + cluster.Name + "/" + createdAt.UTC().Format(idTimeLayout) + "-"
	if uid := strings.ToLower(strings.ReplaceAll(cluster.UID, "-", "")); len(uid) >= 8 {
		id += uid[:8] + "-"
	}
	return id + backup
}

// idPattern: a DNS label (namespace), a DNS subdomain (cluster), the time, a DNS
// subdomain (backup). Nothing that could leave the backup's directory ("..", "/").
var idPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?\.[a-z0-9]([-.a-z0-9]*[a-z0-9])?/[0-9]{8}T[0-9]{6}Z-[a-z0-9]([-.a-z0-9]*[a-z0-9])?$`)

func validateID(id string) error {
	if !idPattern.MatchString(id) || strings.Contains(id, "..") {
		return fmt.Errorf("backup ID %q is not <namespace>.<cluster>/<yyyymmddThhmmssZ>-[<uid8>-]<backup>", id)
	}
	return nil
}

func (m Manifest) validate() error {
	if m.Format != ManifestFormat {
		return fmt.Errorf("manifest format %d: this operator reads format %d (a newer operator wrote it?)", m.Format, ManifestFormat)
	}
	if err := validateID(m.ID); err != nil {
		return err
	}
	switch {
	case m.Size <= 0 || m.EncryptedSize <= 0:
		return fmt.Errorf("manifest of %s has no sizes", m.ID)
	case !strings.HasPrefix(m.Checksum, "sha256:") || !strings.HasPrefix(m.EncryptedChecksum, "sha256:"):
		return fmt.Errorf("manifest of %s has no sha256 checksums", m.ID)
	case m.Encryption != EncryptionX25519 && m.Encryption != EncryptionScrypt:
		return fmt.Errorf("manifest of %s has encryption %q, not %q or %q", m.ID, m.Encryption, EncryptionX25519, EncryptionScrypt)
	case m.CreatedAt.IsZero():
		return fmt.Errorf("manifest of %s has no creation time", m.ID)
	}
	return nil
}

func encodeManifest(m Manifest) ([]byte, error) {
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(raw, '\n'), nil
}

// decodeManifest parses and checks a manifest read from key (whose directory must be
// the manifest's ID: a copied or moved manifest would point at other data).
func decodeManifest(raw []byte, wantID string) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return Manifest{}, fmt.Errorf("manifest is not JSON: %w", err)
	}
	if err := m.validate(); err != nil {
		return Manifest{}, err
	}
	if m.ID != wantID {
		return Manifest{}, fmt.Errorf("manifest says ID %q but lies in %q", m.ID, wantID)
	}
	return m, nil
}
