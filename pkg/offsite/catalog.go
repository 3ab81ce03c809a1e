package offsite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/minio/minio-go/v7"
)

// maxManifestSize bounds what List and Get read of a manifest (they are ~700 bytes).
const maxManifestSize = 64 << 10

// Publish writes the manifest of a verified upload, which makes the backup listed.
// It fills Format, Encryption, KeyFingerprint and MAC from the store, and checks that
// the data object is there with the manifest's size.
func (s *Store) Publish(ctx context.Context, m Manifest) error {
	m.Format = ManifestFormat
	m.Encryption = s.key.Encryption()
	m.KeyFingerprint = s.key.Fingerprint()
	m.MAC, m.Authenticated = "", false
	if err := m.validate(); err != nil {
		return s.failWith(ReasonInvalid, "publish", "", err)
	}
	dataKey := s.dataKey(m.ID)
	info, err := s.client.StatObject(ctx, s.loc.Bucket, dataKey, minio.StatObjectOptions{})
	if err != nil {
		return s.failObject(ctx, "publish", dataKey, err)
	}
	if info.Size != m.EncryptedSize {
		return s.failWith(ReasonCorrupt, "publish", dataKey, fmt.Errorf("the object is %d bytes, the manifest says %d", info.Size, m.EncryptedSize))
	}
	raw, err := s.signManifest(m)
	if err != nil {
		return s.failWith(ReasonInvalid, "publish", "", err)
	}
	key := s.manifestKey(m.ID)
	_, err = s.client.PutObject(ctx, s.loc.Bucket, key, bytes.NewReader(raw), int64(len(raw)), minio.PutObjectOptions{ContentType: "application/json"})
	return s.fail("publish", key, err)
}

// signManifest encodes m with its MAC, computed on m as a reader decodes it (JSON
// carries a time in its zone's offset, invalid UTF-8 as U+FFFD): what Get checks is
// what was signed.
func (s *Store) signManifest(m Manifest) ([]byte, error) {
	raw, err := encodeManifest(m)
	if err != nil {
		return nil, err
	}
	var decoded Manifest
	if err := json.Unmarshal(raw, &decoded); err != nil {
		return nil, err
	}
	if decoded.MAC, err = s.macOf(decoded); err != nil {
		return nil, err
	}
	return encodeManifest(decoded)
}

// Get reads the manifest of a backup (ReasonNotFound if it is not published) and
// authenticates it: a manifest of another key is ReasonWrongKey, one whose MAC is
// missing or not the store key's ReasonCorrupt.
func (s *Store) Get(ctx context.Context, id string) (Manifest, error) {
	if err := validateID(id); err != nil {
		return Manifest{}, s.failWith(ReasonInvalid, "get", "", err)
	}
	key := s.manifestKey(id)
	raw, err := s.read(ctx, key)
	if err != nil {
		return Manifest{}, s.failObject(ctx, "get", key, err)
	}
	m, err := decodeManifest(raw, id)
	if err != nil {
		return Manifest{}, s.failWith(ReasonCorrupt, "get", key, err)
	}
	if err := s.authenticate("get", key, m); err != nil {
		return Manifest{}, err
	}
	m.Authenticated = true
	return m, nil
}

func (s *Store) read(ctx context.Context, key string) ([]byte, error) {
	obj, err := s.client.GetObject(ctx, s.loc.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	raw, err := io.ReadAll(io.LimitReader(obj, maxManifestSize+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > maxManifestSize {
		return nil, fmt.Errorf("larger than %d bytes", maxManifestSize)
	}
	return raw, nil
}

// Unreadable is a manifest List skipped, and why.
type Unreadable struct {
	Key string
	Err error
}

// List reads every manifest under the prefix (all clusters' backups: a new cluster
// finds an old one's this way), newest first, each Authenticated if its MAC is the
// store key's (others were made with other keys, or changed: Get and Open refuse
// them). A manifest that does not read or parse does not hide the others: it is
// skipped and returned in unreadable; err is for a failure to list at all.
func (s *Store) List(ctx context.Context) (manifests []Manifest, unreadable []Unreadable, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for obj := range s.client.ListObjects(ctx, s.loc.Bucket, minio.ListObjectsOptions{Prefix: s.base, Recursive: true}) {
		if obj.Err != nil {
			return nil, nil, s.fail("list", s.base, obj.Err)
		}
		id, ok := strings.CutSuffix(strings.TrimPrefix(obj.Key, s.base), "/"+manifestName)
		if !ok || !strings.HasPrefix(obj.Key, s.base) {
			continue
		}
		raw, err := s.read(ctx, obj.Key)
		if err != nil {
			// A manifest deleted since the listing was a backup being deleted.
			if classify(err) == ReasonNotFound {
				continue
			}
			if r := classify(err); r != ReasonServerError && r != ReasonCorrupt {
				return nil, nil, s.fail("list", obj.Key, err)
			}
			unreadable = append(unreadable, Unreadable{Key: obj.Key, Err: s.fail("list", obj.Key, err)})
			continue
		}
		m, err := decodeManifest(raw, id)
		if err != nil {
			unreadable = append(unreadable, Unreadable{Key: obj.Key, Err: s.failWith(ReasonCorrupt, "list", obj.Key, err)})
			continue
		}
		m.Authenticated = s.authentic(m)
		manifests = append(manifests, m)
	}
	sort.SliceStable(manifests, func(i, j int) bool {
		if !manifests[i].CreatedAt.Equal(manifests[j].CreatedAt) {
			return manifests[i].CreatedAt.After(manifests[j].CreatedAt)
		}
		return manifests[i].ID > manifests[j].ID
	})
	return manifests, unreadable, nil
}

// Delete removes a backup: the manifest first, so a backup half deleted is no longer
// listed, then the data. A backup already gone is no error.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := validateID(id); err != nil {
		return s.failWith(ReasonInvalid, "delete", "", err)
	}
	for _, key := range []string{s.manifestKey(id), s.dataKey(id)} {
		err := s.client.RemoveObject(ctx, s.loc.Bucket, key, minio.RemoveObjectOptions{})
		if err != nil && classify(err) != ReasonNotFound {
			return s.fail("delete", key, err)
		}
	}
	return nil
}

// Stat checks, in one HEAD of the data object, that a published backup is still
// there with its size: ReasonNotFound if it is gone (a bucket lifecycle rule, or by
// hand), ReasonCorrupt if its size is not m's EncryptedSize. Cheap enough to run
// every few minutes on every completed backup; it reads neither the bytes nor the
// manifest (Open checks both).
func (s *Store) Stat(ctx context.Context, m Manifest) error {
	if err := validateID(m.ID); err != nil {
		return s.failWith(ReasonInvalid, "stat", "", err)
	}
	key := s.dataKey(m.ID)
	info, err := s.client.StatObject(ctx, s.loc.Bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return s.failObject(ctx, "stat", key, err)
	}
	if info.Size != m.EncryptedSize {
		return s.failWith(ReasonCorrupt, "stat", key, fmt.Errorf("the object is %d bytes, the manifest says %d", info.Size, m.EncryptedSize))
	}
	return nil
}
