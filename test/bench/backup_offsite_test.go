package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"filippo.io/age"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/linstor-operator/linstor-operator/internal/s3server"
	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
	"github.com/linstor-operator/linstor-operator/pkg/offsite"
)

const benchBucket = "linstor-backups"

var benchCluster = offsite.ClusterIdentity{Namespace: "linstor", Name: "bench", UID: "0b3e1c52-6c59-4b7e-9d2a-bench0000001"}

// startStore runs a real versitygw on loopback ($VERSITYGW, as `make bench-backup` sets
// it) with an empty bucket, and opens it with a new age X25519 identity, as a
// LinstorBackupTarget's key Secret holds.
func startStore(t *testing.T) *offsite.Store {
	t.Helper()
	ctx := context.Background()
	srv, err := s3server.Start(ctx, s3server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	if err := srv.CreateBucket(ctx, benchBucket); err != nil {
		t.Fatal(err)
	}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	store, err := offsite.New(offsite.Location{Endpoint: srv.Endpoint, Bucket: benchBucket, Region: srv.Region,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, PathStyle: true}, offsite.Key{Identity: id.String()})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// benchOffsite backs the database of n objects up to the bucket and restores it from
// there into an emptied database, the way the operator does (controllers/linstorbackup:
// takeToBucket, then reconcileVerifying; a restore: dbbackup.RestoreBackup of a stored
// copy, then VerifyRestored). want is the checksum of the same database's streamed
// backup: the bucket's copy and the restored database must have it.
func benchOffsite(t *testing.T, ctx context.Context, c client.Client, store *offsite.Store, n int, want string) {
	createdAt := time.Now().UTC()
	id := offsite.NewID(benchCluster, createdAt, "bench")

	// Write and Upload: the LINSTOR controller is stopped for this copy (takeToBucket).
	var up offsite.Upload
	var counts dbbackup.Counts
	peakUpload, tookUpload := measure(func() {
		var err error
		up, err = store.Upload(ctx, id, func(w io.Writer) error {
			var err error
			counts, err = dbbackup.Write(ctx, c, w)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	if counts.Objects != n || up.Checksum != want {
		t.Fatalf("Upload: %d objects with checksum %s; want %d with %s, the streamed backup's", counts.Objects, up.Checksum, n, want)
	}
	t.Logf("to S3   (Write+Upload):   %7.1f MiB peak heap over the baseline, %s: the LINSTOR controller's stopped window; %.1f MiB plain, %.1f MiB encrypted",
		mib(peakUpload), tookUpload, mib(uint64(up.Size)), mib(uint64(up.EncryptedSize)))

	// Read back and publish, with LINSTOR started again (reconcileVerifying).
	peakVerify, tookVerify := measure(func() {
		if err := store.Verify(ctx, up); err != nil {
			t.Fatal(err)
		}
		if err := store.Publish(ctx, offsite.Manifest{ID: id, Cluster: benchCluster, Backup: "bench", LinstorVersion: "1.33.3", OperatorVersion: "bench",
			CreatedAt: createdAt, CRDs: counts.CRDs, Objects: counts.Objects, Size: up.Size, Checksum: up.Checksum,
			EncryptedSize: up.EncryptedSize, EncryptedChecksum: up.EncryptedChecksum}); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("to S3   (Verify+Publish): %7.1f MiB peak heap over the baseline, %s: read back with LINSTOR running", mib(peakVerify), tookVerify)

	// A new cluster's database: no LINSTOR tables.
	emptied := time.Now()
	dropTables(t, ctx, c)
	t.Logf("emptied the database (its CRDs deleted) in %s", time.Since(emptied).Round(time.Second))

	m, err := store.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	// The check before the restore (dbbackup.Check): one read of the whole backup,
	// decrypted and decoded, nothing written.
	peakCheck, tookCheck := measure(func() {
		objects, err := decodeStored(ctx, store, m)
		if err != nil || objects != n {
			t.Fatalf("checking the stored backup: %d objects, %v", objects, err)
		}
	})
	t.Logf("from S3 (check):          %7.1f MiB peak heap over the baseline, %s", mib(peakCheck), tookCheck)
	peakRestore, tookRestore := measure(func() {
		rc, err := store.Open(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		r, err := dbbackup.NewReader(rc)
		if err != nil {
			t.Fatal(err)
		}
		if err := dbbackup.RestoreFrom(ctx, c, r); err != nil {
			t.Fatal(err)
		}
		// Open checks the sizes and checksums when the stream ends.
		if _, err := io.Copy(io.Discard, rc); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("from S3 (restore):        %7.1f MiB peak heap over the baseline, %s", mib(peakRestore), tookRestore)
	peakVerifyRestored, tookVerifyRestored := measure(func() {
		if err := dbbackup.VerifyRestored(ctx, c, up.Checksum); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("from S3 (VerifyRestored): %7.1f MiB peak heap over the baseline, %s: the database reads back with the backup's checksum", mib(peakVerifyRestored), tookVerifyRestored)
	t.Logf("offsite at %d objects: LINSTOR controller stopped %s per backup (copy only), backup done %s; restore from S3 %s (check %s, restore %s, verify %s)",
		n, tookUpload, tookUpload+tookVerify, tookCheck+tookRestore+tookVerifyRestored, tookCheck, tookRestore, tookVerifyRestored)
}

// decodeStored reads a stored backup through, as dbbackup.Check does, and counts its
// objects.
func decodeStored(ctx context.Context, store *offsite.Store, m offsite.Manifest) (int, error) {
	rc, err := store.Open(ctx, m)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	r, err := dbbackup.NewReader(rc)
	if err != nil {
		return 0, err
	}
	objects := 0
	for {
		if _, err := r.Next(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return objects, err
		}
		objects++
	}
	_, err = io.Copy(io.Discard, rc)
	return objects, err
}

// dropTables deletes LINSTOR's CRDs, and with them their objects, and waits until they
// are gone.
func dropTables(t *testing.T, ctx context.Context, c client.Client) {
	t.Helper()
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := c.List(ctx, &crds); err != nil {
		t.Fatal(err)
	}
	for i := range crds.Items {
		if crds.Items[i].Spec.Group == dbbackup.Group {
			if err := c.Delete(ctx, &crds.Items[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, 20*time.Minute, true, func(ctx context.Context) (bool, error) {
		var left apiextensionsv1.CustomResourceDefinitionList
		if err := c.List(ctx, &left); err != nil {
			return false, err
		}
		for _, crd := range left.Items {
			if crd.Spec.Group == dbbackup.Group {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(fmt.Errorf("waiting for LINSTOR's CRDs to be deleted: %w", err))
	}
}
