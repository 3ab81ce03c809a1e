package offsite_test

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/linstor-operator/linstor-operator/pkg/offsite"
)

// Stat checks that a published backup's object is still there with its size, in one
// HEAD of the object: gone (a lifecycle rule) is NotFound, cut short is Corrupt, the
// bucket gone is NoSuchBucket; the messages name the object.
func TestStat(t *testing.T) {
	ctx := context.Background()
	e := newFaultEnv(t)
	s := e.proxied(t)
	must(t, s.Stat(ctx, e.good))
	want := []string{http.MethodHead + " /" + bucket + "/faults/" + databasesDir + "/" + e.good.ID + "/" + dataName}
	if got := e.faults.Requests(); !slices.Equal(got, want) {
		t.Fatalf("Stat made the requests %q, want %q", got, want)
	}

	object := e.objectFile()
	raw, err := os.ReadFile(object)
	must(t, err)
	must(t, os.WriteFile(object, raw[:len(raw)-1], 0o644))
	if err := s.Stat(ctx, e.good); offsite.ReasonOf(err) != offsite.ReasonCorrupt || !strings.Contains(err.Error(), dataName) {
		t.Fatalf("Stat of a truncated object: %v, want %s naming the object", err, offsite.ReasonCorrupt)
	}
	must(t, os.Remove(object))
	if err := s.Stat(ctx, e.good); offsite.ReasonOf(err) != offsite.ReasonNotFound || !strings.Contains(err.Error(), dataName) {
		t.Fatalf("Stat of a deleted object: %v, want %s naming the object", err, offsite.ReasonNotFound)
	}

	loc := s.Location()
	loc.Bucket = "no-such-bucket"
	if err := newStore(t, loc, e.key).Stat(ctx, e.good); offsite.ReasonOf(err) != offsite.ReasonNoSuchBucket {
		t.Fatalf("Stat in a missing bucket: %v, want %s", err, offsite.ReasonNoSuchBucket)
	}
	bad := e.good
	bad.ID = "../" + bad.ID
	if err := s.Stat(ctx, bad); offsite.ReasonOf(err) != offsite.ReasonInvalid {
		t.Fatalf("Stat of an invalid ID: %v, want %s", err, offsite.ReasonInvalid)
	}
}
