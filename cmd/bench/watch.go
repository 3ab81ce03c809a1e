package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// watchedResource is a kind of object whose changes the bench follows. Namespaced ones
// are watched in the LinstorCluster's namespace, the others cluster-wide.
type watchedResource struct {
	GVR        schema.GroupVersionResource
	Namespaced bool
}

// name is how the audit log's objectRef names it: resource, or resource.group.
func (r watchedResource) name() string {
	if r.GVR.Group == "" {
		return r.GVR.Resource
	}
	return r.GVR.Resource + "." + r.GVR.Group
}

func gvr(group, version, res string, namespaced bool) watchedResource {
	return watchedResource{GVR: schema.GroupVersionResource{Group: group, Version: version, Resource: res}, Namespaced: namespaced}
}

// watchedResources are every kind the operator's RBAC lets it write, except Events
// (every Event write changes something), Leases (leader election is off) and the
// LINSTOR k8s database (written by the emulator, not the operator).
var watchedResources = []watchedResource{
	gvr("linstor.io", "v1", "linstorclusters", true),
	gvr("linstor.io", "v1", "linstorsatellites", true),
	gvr("linstor.io", "v1", "linstorsatelliteconfigurations", true),
	gvr("linstor.io", "v1", "linstornodeconnections", true),
	gvr("apps", "v1", "daemonsets", true),
	gvr("apps", "v1", "deployments", true),
	gvr("", "v1", "services", true),
	gvr("", "v1", "configmaps", true),
	gvr("", "v1", "secrets", true),
	gvr("", "v1", "serviceaccounts", true),
	gvr("rbac.authorization.k8s.io", "v1", "roles", true),
	gvr("rbac.authorization.k8s.io", "v1", "rolebindings", true),
	gvr("rbac.authorization.k8s.io", "v1", "clusterroles", false),
	gvr("rbac.authorization.k8s.io", "v1", "clusterrolebindings", false),
	gvr("storage.k8s.io", "v1", "csidrivers", false),
}

// Categories of a change, the second field of a changes key.
const (
	catCreate = "create"
	// catStatus: the write changed .status.
	catStatus = "status"
	// catFinalizer: the write added a finalizer (and changed no status).
	catFinalizer = "finalizer"
	// catOther: any other change (spec, labels, annotations, owner references, a
	// finalizer removed, a deletion timestamp set).
	catOther  = "other"
	catDelete = "delete"
	// catFinalizerAdded counts (object, finalizer) pairs added after creation, each once:
	// the finalizer part of the floor (not a count of writes).
	catFinalizerAdded = "finalizer-added"
)

// unknownWriter stands for a change whose writer the object does not tell (see attribute).
const unknownWriter = "?"

// writeWatch counts the writes that changed something, exactly: it watches every
// watched kind and receives one event per stored change. The apiserver bumps an object's
// resourceVersion, and sends a watch event, only when a write changed the stored object
// (a no-op update or apply is answered without writing to etcd), and a watch resumed from
// its last resourceVersion misses nothing. So the events are exactly the writes that
// changed something; attribute tells whose write each was from managedFields (see
// there). A watch that must start over (410 Gone: the history was compacted) has lost
// events: that is counted in gaps and reported, as the counts are then a lower bound.
type writeWatch struct {
	dyn       dynamic.Interface
	namespace string
	clock     clock
	// changes: "resource|category|writer" per second of receipt.
	changes *series

	mu         sync.Mutex
	objects    map[string]*objRecord // resource/uid
	finalizers map[string]bool       // resource/uid/finalizer already counted
	satellites map[string]satSummary // LinstorSatellite name
	available  map[string]string     // LinstorCluster name -> Available status
	gaps       int
	errs       []string
}

type satSummary struct {
	online bool
	pools  int // storage pools in status with a total capacity above zero
}

type mfEntry struct {
	key, manager, subresource, time string
}

type objRecord struct {
	mf           []mfEntry
	status, rest uint64
	finalizers   []string
}

func newWriteWatch(dyn dynamic.Interface, namespace string, c clock) *writeWatch {
	return &writeWatch{dyn: dyn, namespace: namespace, clock: c, changes: newSeries(),
		objects: map[string]*objRecord{}, finalizers: map[string]bool{}, satellites: map[string]satSummary{}, available: map[string]string{}}
}

// start lists every watched kind (what exists already is not counted) and then
// follows them until ctx ends. It returns once every initial list is done.
func (w *writeWatch) start(ctx context.Context) error {
	for _, r := range watchedResources {
		rv, err := w.list(ctx, r)
		if err != nil {
			return fmt.Errorf("listing %s: %w", r.name(), err)
		}
		go w.follow(ctx, r, rv)
	}
	return nil
}

func (w *writeWatch) client(r watchedResource) dynamic.ResourceInterface {
	if r.Namespaced {
		return w.dyn.Resource(r.GVR).Namespace(w.namespace)
	}
	return w.dyn.Resource(r.GVR)
}

// list records the current objects without counting them and returns the list's
// resourceVersion.
func (w *writeWatch) list(ctx context.Context, r watchedResource) (string, error) {
	l, err := w.client(r).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range l.Items {
		u := &l.Items[i]
		w.objects[r.name()+"/"+string(u.GetUID())] = record(u)
		w.summarize(r, u, false)
	}
	return l.GetResourceVersion(), nil
}

func (w *writeWatch) follow(ctx context.Context, r watchedResource, rv string) {
	for ctx.Err() == nil {
		wi, err := w.client(r).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				rv = w.restart(ctx, r)
				continue
			}
			if ctx.Err() == nil {
				w.noteErr(fmt.Sprintf("watch %s: %v", r.name(), err))
				time.Sleep(time.Second)
			}
			continue
		}
		for ev := range wi.ResultChan() {
			switch ev.Type {
			case watch.Error:
				if st := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(st) || apierrors.IsGone(st) {
					rv = w.restart(ctx, r)
				}
				wi.Stop()
			case watch.Bookmark:
				if u, ok := ev.Object.(*unstructured.Unstructured); ok {
					rv = u.GetResourceVersion()
				}
			default:
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				rv = u.GetResourceVersion()
				w.observe(r, ev.Type, u, time.Now())
			}
		}
	}
}

// restart lists again after the watch history was lost; the changes in between are
// not counted (gaps says so).
func (w *writeWatch) restart(ctx context.Context, r watchedResource) string {
	w.mu.Lock()
	w.gaps++
	w.mu.Unlock()
	for ctx.Err() == nil {
		rv, err := w.list(ctx, r)
		if err == nil {
			return rv
		}
		time.Sleep(time.Second)
	}
	return ""
}

func (w *writeWatch) noteErr(s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.errs) < 20 {
		w.errs = append(w.errs, s)
	}
}

func (w *writeWatch) observe(r watchedResource, typ watch.EventType, u *unstructured.Unstructured, at time.Time) {
	bucket := w.clock.bucket(at)
	key := r.name() + "/" + string(u.GetUID())
	w.mu.Lock()
	defer w.mu.Unlock()
	if typ == watch.Deleted {
		delete(w.objects, key)
		w.summarize(r, u, true)
		// A deletion leaves no trace of its requester in the object.
		w.changes.add(bucket, r.name()+"|"+catDelete+"|"+unknownWriter, 1)
		return
	}
	rec := record(u)
	old := w.objects[key]
	w.objects[key] = rec
	w.summarize(r, u, false)
	writer := attribute(old, rec)
	cat := catOther
	switch {
	case old == nil:
		cat = catCreate
	case rec.status != old.status:
		cat = catStatus
	}
	prev := map[string]bool{}
	if old != nil {
		for _, f := range old.finalizers {
			prev[f] = true
		}
	}
	for _, f := range rec.finalizers {
		if prev[f] || old == nil {
			continue // a finalizer in the create costs no extra write
		}
		if cat == catOther {
			cat = catFinalizer
		}
		if fk := key + "/" + f; !w.finalizers[fk] {
			w.finalizers[fk] = true
			w.changes.add(bucket, r.name()+"|"+catFinalizerAdded+"|"+writer, 1)
		}
	}
	w.changes.add(bucket, r.name()+"|"+cat+"|"+writer, 1)
}

// attribute names the field manager whose write turned old into new, from the
// objects' managedFields. The apiserver stamps the time of the writing manager's entry
// (manager, operation, subresource) when, and only when, its write changes the object;
// an entry of another manager only loses fields. So the writer is the manager whose
// entry is new or whose time changed. Two cases leave no such trace: the same manager
// writing again within the same second (times have one-second resolution), and a write
// that only removes fields. Then the writer is the manager that wrote last (latest time)
// the part that changed (the status subresource when only .status changed, the object
// otherwise). When that is not one manager, the writer is unknownWriter and the report
// says how many changes were so.
func attribute(old, cur *objRecord) string {
	var before map[string]mfEntry
	if old != nil {
		before = make(map[string]mfEntry, len(old.mf))
		for _, e := range old.mf {
			before[e.key] = e
		}
	}
	touched := map[string]bool{}
	for _, e := range cur.mf {
		if o, ok := before[e.key]; !ok || o.time != e.time {
			touched[e.manager] = true
		}
	}
	if len(touched) == 1 {
		for m := range touched {
			return m
		}
	}
	if len(touched) > 1 || old == nil {
		return unknownWriter
	}
	part := ""
	if cur.status != old.status && cur.rest == old.rest {
		part = "status"
	}
	var cands []mfEntry
	for _, e := range cur.mf {
		if e.subresource == part {
			cands = append(cands, e)
		}
	}
	if len(cands) == 0 {
		cands = cur.mf
	}
	latest, writers := "", map[string]bool{}
	for _, e := range cands {
		switch {
		case e.time > latest:
			latest, writers = e.time, map[string]bool{e.manager: true}
		case e.time == latest:
			writers[e.manager] = true
		}
	}
	if len(writers) == 1 {
		for m := range writers {
			return m
		}
	}
	return unknownWriter
}

func record(u *unstructured.Unstructured) *objRecord {
	rec := &objRecord{finalizers: u.GetFinalizers()}
	for _, e := range u.GetManagedFields() {
		t := ""
		if e.Time != nil {
			t = e.Time.UTC().Format(time.RFC3339)
		}
		rec.mf = append(rec.mf, mfEntry{key: e.Manager + "\x00" + string(e.Operation) + "\x00" + e.Subresource,
			manager: e.Manager, subresource: e.Subresource, time: t})
	}
	obj := u.Object
	rec.status = hashJSON(obj["status"])
	rest := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != "status" {
			rest[k] = v
		}
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		m := make(map[string]any, len(md))
		for k, v := range md {
			if k != "resourceVersion" && k != "managedFields" {
				m[k] = v
			}
		}
		rest["metadata"] = m
	}
	rec.rest = hashJSON(rest)
	return rec
}

func hashJSON(v any) uint64 {
	if v == nil {
		return 0
	}
	b, _ := json.Marshal(v) // maps marshal with sorted keys: equal content, equal bytes
	return hash(b)
}

func hash(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// summarize keeps what the sampler reads: satellites' connection and pools, clusters'
// Available condition. Called with w.mu held.
func (w *writeWatch) summarize(r watchedResource, u *unstructured.Unstructured, deleted bool) {
	switch r.GVR.Resource {
	case "linstorsatellites":
		if deleted {
			delete(w.satellites, u.GetName())
			return
		}
		conn, _, _ := unstructured.NestedString(u.Object, "status", "connectionStatus")
		s := satSummary{online: conn == "ONLINE"}
		pools, _, _ := unstructured.NestedSlice(u.Object, "status", "storagePools")
		for _, p := range pools {
			pm, _ := p.(map[string]any)
			if q, ok := quantity(pm["totalCapacity"]); ok && q.Sign() > 0 {
				s.pools++
			}
		}
		w.satellites[u.GetName()] = s
	case "linstorclusters":
		if deleted {
			delete(w.available, u.GetName())
			return
		}
		st := "Unknown"
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			cm, _ := c.(map[string]any)
			if cm["type"] == "Available" {
				st = fmt.Sprint(cm["status"])
			}
		}
		w.available[u.GetName()] = st
	}
}

func quantity(v any) (resource.Quantity, bool) {
	if v == nil {
		return resource.Quantity{}, false
	}
	q, err := resource.ParseQuantity(fmt.Sprint(v))
	return q, err == nil
}

// snapshot is what the sampler records each second.
type snapshot struct {
	Satellites, Online, Pools int
	Available                 string
}

func (w *writeWatch) snapshot() snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := snapshot{Satellites: len(w.satellites), Available: "Missing"}
	for _, sat := range w.satellites {
		if sat.online {
			s.Online++
		}
		s.Pools += sat.pools
	}
	names := make([]string, 0, len(w.available))
	for n := range w.available {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) > 0 {
		s.Available = w.available[names[0]]
	}
	return s
}

func (w *writeWatch) problems() (gaps int, errs []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gaps, append([]string(nil), w.errs...)
}

// changeKey is a parsed key of writeWatch.changes.
type changeKey struct{ Resource, Category, Writer string }

func parseChangeKey(s string) changeKey {
	p := strings.SplitN(s, "|", 3)
	return changeKey{p[0], p[1], p[2]}
}
