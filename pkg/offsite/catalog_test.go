package offsite_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/linstor-operator/linstor-operator/pkg/offsite"
)

// List shows every published backup under the prefix, of every cluster, newest first;
// manifests that do not parse, or that lie in another backup's directory, are
// reported beside the list and hide nothing; objects that are not manifests are
// ignored; a backup under another prefix is not listed.
func TestListNewestFirst(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t, false)
	key := newIdentityKey(t)
	s := newStore(t, location(srv, "dc1"), key)
	data := testDatabase(t)
	day := func(d int) time.Time { return time.Date(2026, 11, d, 3, 0, 0, 0, time.UTC) }
	// Published out of order.
	middle := backup(t, s, "b", day(20), data)
	newest := backup(t, s, "c", day(27), data)
	oldest := backup(t, s, "a", day(1), data)
	other := newStore(t, location(srv, "dc2"), key)
	backup(t, other, "elsewhere", day(28), data)

	client := srv.Client()
	put := func(key, body string) {
		t.Helper()
		if _, err := client.PutObject(ctx, bucket, key, strings.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	base := "dc1/" + databasesDir + "/"
	put(base+"linstor.prod/20261126T000000Z-bogus/"+manifestName, "{this is not a manifest")
	// A manifest copied into another directory would point at other data.
	raw, err := os.ReadFile(filepath.Join(srv.Dir, bucket, base, newest.ID, manifestName))
	if err != nil {
		t.Fatal(err)
	}
	put(base+"linstor.prod/20261126T000000Z-copied/"+manifestName, string(raw))
	put(base+"linstor.prod/notes.txt", "not a manifest")

	ms, unreadable, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	if want := []string{newest.ID, middle.ID, oldest.ID}; !slices.Equal(ids, want) {
		t.Fatalf("List: %v, want newest first %v", ids, want)
	}
	var bad []string
	for _, u := range unreadable {
		if offsite.ReasonOf(u.Err) != offsite.ReasonCorrupt || !strings.Contains(u.Err.Error(), u.Key) {
			t.Fatalf("unreadable %s: %v, want Corrupt naming the key", u.Key, u.Err)
		}
		bad = append(bad, strings.TrimPrefix(u.Key, base))
	}
	slices.Sort(bad)
	if want := []string{"linstor.prod/20261126T000000Z-bogus/manifest.json", "linstor.prod/20261126T000000Z-copied/manifest.json"}; !slices.Equal(bad, want) {
		t.Fatalf("unreadable: %v, want %v", bad, want)
	}
}

// Delete removes the manifest before the data: when deleting the data fails, the
// backup is already unlisted, and deleting again finishes; deleting what is gone is
// no error.
func TestDeleteOrder(t *testing.T) {
	ctx := context.Background()
	e := newFaultEnv(t)
	s := e.proxied(t)
	dir := filepath.Join(e.srv.Dir, bucket, "faults", databasesDir, e.good.ID)
	dataDeletes := func(r *http.Request) bool {
		return r.Method == http.MethodDelete && strings.HasSuffix(r.URL.Path, "/"+dataName)
	}
	// Not retried: the data's DELETE fails once, for good.
	must(t, e.faults.FailNext(1, http.StatusNotImplemented, "NotImplemented", dataDeletes))
	err := s.Delete(ctx, e.good.ID)
	if offsite.ReasonOf(err) != offsite.ReasonServerError || !strings.Contains(err.Error(), dataName) {
		t.Fatalf("Delete with the data's DELETE failing: %v", err)
	}
	var deletes []string
	for _, r := range e.faults.Requests() {
		if strings.HasPrefix(r, http.MethodDelete) {
			deletes = append(deletes, filepath.Base(r))
		}
	}
	if want := []string{manifestName, dataName}; !slices.Equal(deletes, want) {
		t.Fatalf("DELETEs in order %v, want %v", deletes, want)
	}
	if ids := listIDs(t, s); len(ids) != 0 {
		t.Fatalf("a half-deleted backup is listed: %v", ids)
	}
	if _, err := os.Stat(filepath.Join(dir, dataName)); err != nil {
		t.Fatalf("the data went although its DELETE failed: %v", err)
	}
	if _, err := s.Get(ctx, e.good.ID); offsite.ReasonOf(err) != offsite.ReasonNotFound {
		t.Fatalf("Get of a half-deleted backup: %v, want NotFound", err)
	}

	must(t, s.Delete(ctx, e.good.ID))
	if _, err := os.Stat(filepath.Join(dir, dataName)); !os.IsNotExist(err) {
		t.Fatalf("the second Delete left the data: %v", err)
	}
	must(t, s.Delete(ctx, e.good.ID))
	must(t, s.Delete(ctx, offsite.NewID(testCluster, time.Now(), "never-made")))
}
