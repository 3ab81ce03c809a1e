package reconciler

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// recordingClient records status patches; any other call panics (nil interface), so
// the test also proves PatchStatus makes no other request.
type recordingClient struct {
	client.Client
	patches []recordedPatch
	err     error
}

type recordedPatch struct {
	kind types.PatchType
	data string
}

func (c *recordingClient) Status() client.SubResourceWriter { return statusWriter{c} }

type statusWriter struct{ c *recordingClient }

func (w statusWriter) Create(context.Context, client.Object, client.Object, ...client.SubResourceCreateOption) error {
	panic("unexpected status create")
}

func (w statusWriter) Update(context.Context, client.Object, ...client.SubResourceUpdateOption) error {
	panic("unexpected status update")
}

func (w statusWriter) Patch(_ context.Context, obj client.Object, p client.Patch, _ ...client.SubResourcePatchOption) error {
	data, err := p.Data(obj)
	if err != nil {
		return err
	}
	w.c.patches = append(w.c.patches, recordedPatch{kind: p.Type(), data: string(data)})
	return w.c.err
}

func TestPatchStatus(t *testing.T) {
	gib := resource.MustParse("1Gi")
	for _, tc := range []struct {
		name      string
		change    func(*linstorv1.LinstorCluster)
		opts      []StatusOption
		writeErr  error
		wantWrote bool
		wantErr   bool
		// wantData are substrings of the one patch sent (none when nothing is sent).
		wantData []string
		notData  []string
	}{
		{name: "steady state: no write", change: func(*linstorv1.LinstorCluster) {}},
		{name: "an equal quantity in another unit is no change", change: func(c *linstorv1.LinstorCluster) {
			c.Status.Capacity.Total = resource.NewQuantity(1024*1024*1024, resource.BinarySI)
		}},
		{name: "a changed field: one merge patch of the change, no lock", change: func(c *linstorv1.LinstorCluster) { c.Status.Version = "1.33.3" },
			wantWrote: true, wantData: []string{`"version":"1.33.3"`}, notData: []string{"resourceVersion", "capacity"}},
		{name: "optimistic lock: the patch carries the resourceVersion read", change: func(c *linstorv1.LinstorCluster) { c.Status.Version = "1.33.3" },
			opts: []StatusOption{WithOptimisticLock()}, wantWrote: true, wantData: []string{`"resourceVersion":"7"`, `"version":"1.33.3"`}},
		{name: "a failed write is returned", change: func(c *linstorv1.LinstorCluster) { c.Status.Version = "1.33.3" },
			writeErr: errors.New("etcd is gone"), wantErr: true, wantData: []string{`"version":"1.33.3"`}},
		{name: "a change outside status is not a status change", change: func(c *linstorv1.LinstorCluster) { c.Labels = map[string]string{"a": "b"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &linstorv1.LinstorCluster{ObjectMeta: metav1.ObjectMeta{Name: "linstor", Namespace: "linstor", ResourceVersion: "7"},
				Status: linstorv1.LinstorClusterStatus{Version: "1.33.2", Capacity: &linstorv1.CapacityStatus{Total: &gib}}}
			rc := &recordingClient{err: tc.writeErr}
			wrote, err := PatchStatus(context.Background(), rc, c, func() { tc.change(c) }, tc.opts...)
			if wrote != tc.wantWrote || (err != nil) != tc.wantErr {
				t.Fatalf("PatchStatus = %t, %v; want wrote %t, error %t", wrote, err, tc.wantWrote, tc.wantErr)
			}
			if len(tc.wantData) == 0 {
				if len(rc.patches) != 0 {
					t.Fatalf("sent %d patches, want none: %+v", len(rc.patches), rc.patches)
				}
				return
			}
			if len(rc.patches) != 1 || rc.patches[0].kind != types.MergePatchType {
				t.Fatalf("sent %+v, want one merge patch", rc.patches)
			}
			for _, s := range tc.wantData {
				if !strings.Contains(rc.patches[0].data, s) {
					t.Errorf("patch %s lacks %s", rc.patches[0].data, s)
				}
			}
			for _, s := range tc.notData {
				if strings.Contains(rc.patches[0].data, s) {
					t.Errorf("patch %s holds %s", rc.patches[0].data, s)
				}
			}
		})
	}
}
