package api

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	linstorv1alpha1 "github.com/linstor-operator/linstor-operator/api/v1alpha1"
	lossless "github.com/linstor-operator/linstor-operator/pkg/conversion"
	"github.com/linstor-operator/linstor-operator/pkg/crdschema"
	"github.com/linstor-operator/linstor-operator/pkg/webhooks"
	"github.com/linstor-operator/linstor-operator/test/corpus"
	"github.com/linstor-operator/linstor-operator/test/envtest"
)

// The generated corpus: random objects drawn from the CRDs' own schemas (test/corpus,
// not the Go fuzzer), sent through the real API server and the operator's webhooks in
// both versions, and random invalid mutations of them that must be refused on every
// path: written as v1, as v1alpha1, in the conversion annotation, and as updates.
//
// What is valid is modelled independently of the server: v1's schema and CEL rules
// (pkg/crdschema) plus the webhook's own rules (webhooks.SpecErrors), on the object as
// the Go conversion turns it into v1. The server must agree with that model on every
// object, in both directions. CORPUS_OBJECTS sets the objects per kind (default 30).

// corpusKind is one multi-version kind under test.
type corpusKind struct {
	kind, file string
	hub        func() conversion.Hub
	spoke      func() conversion.Convertible
	// setup fills what the schema cannot say (a LinstorSatellite's name rule).
	hints map[string]func(*rand.Rand) any
}

// counts are printed at the end: what each path tried and what the server did.
type counts map[string]int

func TestGeneratedCorpus(t *testing.T) {
	objects := 30
	if n, err := strconv.Atoi(os.Getenv("CORPUS_OBJECTS")); err == nil && n > 0 {
		objects = n
	}
	total := counts{}
	for _, k := range corpusKinds() {
		t.Run(k.kind, func(t *testing.T) {
			c := newCorpusRun(t, k)
			for i := 0; i < objects; i++ {
				c.round(i)
			}
			t.Logf("%s: %v", k.kind, c.counts)
			for key, n := range c.counts {
				total[key] += n
			}
		})
	}
	t.Logf("all kinds: %v", total)
	if t.Failed() {
		return
	}
	for _, key := range []string{"v1 valid accepted", "v1alpha1 round trips equal", "v1 invalid refused", "v1alpha1 invalid refused", "annotation invalid refused", "update invalid refused"} {
		if total[key] == 0 {
			t.Errorf("no %q: the corpus does not exercise that path", key)
		}
	}
}

type corpusRun struct {
	t       *testing.T
	k       corpusKind
	ns      string
	r       *rand.Rand
	hubGen  *corpus.Generator
	spkGen  *corpus.Generator
	hubSpec *apiextensionsv1.JSONSchemaProps
	spkSpec *apiextensionsv1.JSONSchemaProps
	model   *crdschema.Schema
	counts  counts
}

func newCorpusRun(t *testing.T, k corpusKind) *corpusRun {
	crd, err := corpus.Load(filepath.Join(envtest.RepoRoot(), "config", "crd", "bases", k.file))
	if err != nil {
		t.Fatal(err)
	}
	hubRoot, err := corpus.Schema(crd, "v1")
	if err != nil {
		t.Fatal(err)
	}
	spokeRoot, err := corpus.Schema(crd, "v1alpha1")
	if err != nil {
		t.Fatal(err)
	}
	model, err := crdschema.New(hubRoot)
	if err != nil {
		t.Fatal(err)
	}
	hubSpec, spokeSpec := hubRoot.Properties["spec"], spokeRoot.Properties["spec"]
	r := rand.New(rand.NewSource(int64(len(k.kind)) * 7919))
	c := &corpusRun{t: t, k: k, ns: env.Namespace(t), r: r, hubSpec: &hubSpec, spkSpec: &spokeSpec, model: model, counts: counts{}}
	c.hubGen = &corpus.Generator{Rand: r, Hints: k.hints, Skip: []string{"spec.*.affinity", "spec.csi.*.affinity", "spec.database.restoreFrom", "spec.externalController"}, OptionalProbability: 0.6}
	c.spkGen = &corpus.Generator{Rand: r, Hints: k.hints, OptionalProbability: 0.6}
	c.hubGen.Hints["spec.storagePools[*]"] = func(r *rand.Rand) any { return c.pool(r) }
	return c
}

// round generates one valid v1 object and one v1alpha1 object and drives every path.
// Creates of other objects come first: only one LinstorCluster may exist at a time.
func (c *corpusRun) round(i int) {
	spec := c.validHubSpec()
	name := fmt.Sprintf("c%03d", i)
	bad := c.sampleMutations(spec)
	c.createPaths(name, spec, bad)
	c.spokeNative(name + "-alpha")
	stored, ok := c.createV1(name, spec)
	if !ok {
		return
	}
	c.roundTrip(name, stored)
	c.updatePaths(name, stored, append(bad, c.immutableChanges(stored.Object["spec"].(map[string]any))...))
	_ = env.Client.Delete(context.Background(), c.object("v1", name, nil))
}

// mutated is one schema-violating mutation of a valid spec.
type mutated struct {
	spec map[string]any
	what string
}

// sampleMutations picks a few of the spec's schema-violating mutations.
func (c *corpusRun) sampleMutations(spec map[string]any) []mutated {
	all := c.hubGen.Mutations("spec", c.hubSpec, spec)
	c.r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	var out []mutated
	for _, m := range all[:min(len(all), 6)] {
		bad := corpus.DeepCopy(spec).(map[string]any)
		m.Apply(bad)
		out = append(out, mutated{bad, fmt.Sprintf("%s (%s)", m.Path, m.Description)})
	}
	return out
}

// validHubSpec draws v1 specs until the model accepts one; the refusals are counted.
func (c *corpusRun) validHubSpec() map[string]any {
	for tries := 0; tries < 200; tries++ {
		spec, _ := c.hubGen.Value("spec", c.hubSpec).(map[string]any)
		if spec == nil {
			spec = map[string]any{}
		}
		if errs := c.modelErrors(spec, nil); len(errs) == 0 {
			return spec
		}
		c.counts["v1 generated, model refuses"]++
	}
	c.t.Fatalf("%s: no valid object in 200 draws", c.k.kind)
	return nil
}

// modelErrors is what v1 refuses in spec, on create (old nil) or update.
func (c *corpusRun) modelErrors(spec, old map[string]any) []string {
	obj := map[string]any{"apiVersion": "linstor.io/v1", "kind": c.k.kind, "metadata": map[string]any{"name": "model", "namespace": c.ns}, "spec": corpus.DeepCopy(spec)}
	c.model.Default(obj)
	var oldObj map[string]any
	if old != nil {
		oldObj = map[string]any{"apiVersion": "linstor.io/v1", "kind": c.k.kind, "metadata": map[string]any{"name": "model", "namespace": c.ns}, "spec": corpus.DeepCopy(old)}
		c.model.Default(oldObj)
	}
	var out []string
	for _, e := range c.model.Validate(context.Background(), obj, oldObj) {
		out = append(out, e.Error())
	}
	if len(out) > 0 {
		return out
	}
	typed := c.k.hub()
	if err := fromMap(obj, typed); err != nil {
		return []string{"does not decode: " + err.Error()}
	}
	for _, e := range webhooks.SpecErrors(typed) {
		out = append(out, e.Error())
	}
	if oldObj != nil {
		oldTyped := c.k.hub()
		if err := fromMap(oldObj, oldTyped); err != nil {
			return []string{"old does not decode: " + err.Error()}
		}
		for _, e := range webhooks.UpdateErrors(oldTyped, typed) {
			out = append(out, e.Error())
		}
	}
	return out
}

func (c *corpusRun) object(version, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	if spec != nil {
		u.Object["spec"] = corpus.DeepCopy(spec)
	}
	u.SetAPIVersion("linstor.io/" + version)
	u.SetKind(c.k.kind)
	u.SetName(name)
	u.SetNamespace(c.ns)
	return u
}

// createV1 writes a model-valid v1 object, which the server must accept.
func (c *corpusRun) createV1(name string, spec map[string]any) (*unstructured.Unstructured, bool) {
	u := c.object("v1", name, spec)
	if err := env.Client.Create(context.Background(), u); err != nil {
		c.t.Errorf("valid v1 %s refused: %v\nspec: %s", c.k.kind, err, asJSON(spec))
		return nil, false
	}
	c.counts["v1 valid accepted"]++
	return u, true
}

// roundTrip reads the object as v1alpha1, writes it back unchanged and reads it as v1:
// the spec must be what was stored.
func (c *corpusRun) roundTrip(name string, stored *unstructured.Unstructured) {
	ctx := context.Background()
	alpha := c.object("v1alpha1", name, nil)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(alpha), alpha); err != nil {
		c.t.Errorf("v1alpha1 GET of a valid object: %v", err)
		return
	}
	if err := c.retryUpdate(alpha); err != nil {
		c.t.Errorf("v1alpha1 PUT of an unchanged object refused: %v\nobject: %s", err, asJSON(alpha.Object))
		return
	}
	back := c.object("v1", name, nil)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(back), back); err != nil {
		c.t.Errorf("v1 GET: %v", err)
		return
	}
	if !c.sameSpec(c.k.hub(), back, stored) {
		c.t.Errorf("round trip through v1alpha1 changed the spec:\nstored %s\nback   %s", asJSON(stored.Object["spec"]), asJSON(back.Object["spec"]))
		return
	}
	if _, ok := back.GetAnnotations()[lossless.DataAnnotation]; ok {
		c.t.Errorf("conversion data stored on the v1 object")
	}
	c.counts["v1alpha1 round trips equal"]++
}

// sameSpec compares two specs as the typed API reads them: a duration or quantity in
// another notation ("90s", "1m30s") and an empty list or map against an absent one
// are the same value. Conversion goes through the Go types and writes the canonical
// form, as every typed client does.
func (c *corpusRun) sameSpec(typed runtime.Object, a, b *unstructured.Unstructured) bool {
	norm := func(u *unstructured.Unstructured) string {
		into := typed.DeepCopyObject()
		if err := fromMap(map[string]any{"spec": u.Object["spec"]}, into); err != nil {
			return "undecodable: " + err.Error()
		}
		m, _ := toMap(into)
		return asJSON(m["spec"])
	}
	return norm(a) == norm(b)
}

// retryUpdate writes u, taking the current resourceVersion when the operator wrote in between.
func (c *corpusRun) retryUpdate(u *unstructured.Unstructured) error {
	for {
		err := env.Client.Update(context.Background(), u)
		if !apierrors.IsConflict(err) {
			return err
		}
		cur := c.object(u.GetAPIVersion()[len("linstor.io/"):], u.GetName(), nil)
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(u), cur); err != nil {
			return err
		}
		u.SetResourceVersion(cur.GetResourceVersion())
	}
}

// createPaths writes each mutation as a v1 create, as a v1alpha1 create, and as the
// conversion annotation of a valid v1alpha1 object.
func (c *corpusRun) createPaths(name string, spec map[string]any, bad []mutated) {
	validSpoke, _ := c.toSpoke(spec)
	for j, m := range bad {
		c.expectRefused("v1 invalid", c.object("v1", fmt.Sprintf("%s-m%d", name, j), m.spec), m.what)

		// The same object through v1alpha1, when the Go types can hold it (a wrong
		// type cannot be converted, so it never reaches v1alpha1 this way).
		spoke, annotation, ok := c.toSpokeChecked(m.spec)
		if !ok {
			continue
		}
		u := c.object("v1alpha1", fmt.Sprintf("%s-a%d", name, j), spoke)
		u.SetAnnotations(annotation)
		c.expectVerdict("v1alpha1 invalid", u, c.spokeModel(spoke, annotation, nil), m.what)

		// Its conversion data on a valid v1alpha1 object: refused when what it
		// completes breaks v1's rules (the spoke's own fields win over kept ones).
		if annotation != nil {
			u := c.object("v1alpha1", fmt.Sprintf("%s-n%d", name, j), validSpoke)
			u.SetAnnotations(annotation)
			c.expectVerdict("annotation invalid", u, c.spokeModel(validSpoke, annotation, nil), m.what)
		}
	}
}

// immutableChanges are edits v1 must refuse on update although each is valid on its
// own: a pool's type or what backs it, the database type, changed or removed.
func (c *corpusRun) immutableChanges(stored map[string]any) []mutated {
	var out []mutated
	change := func(what string, edit func(spec map[string]any) bool) {
		spec := corpus.DeepCopy(stored).(map[string]any)
		if edit(spec) {
			out = append(out, mutated{spec, what})
		}
	}
	pools, _ := stored["storagePools"].([]any)
	if len(pools) > 0 {
		first := func(spec map[string]any) map[string]any { return spec["storagePools"].([]any)[0].(map[string]any) }
		change("pool type changed", func(spec map[string]any) bool {
			p := first(spec)
			for _, t := range []string{"lvmPool", "lvmThinPool", "zfsPool", "zfsThinPool", "filePool", "fileThinPool"} {
				if _, ok := p[t]; ok {
					delete(p, t)
					if t == "zfsThinPool" {
						p["filePool"] = map[string]any{}
						delete(p, "source")
					} else {
						p["zfsThinPool"] = map[string]any{}
					}
					return true
				}
			}
			return false
		})
		change("what backs a pool removed", func(spec map[string]any) bool {
			p := first(spec)
			for _, t := range []string{"lvmPool", "lvmThinPool", "zfsPool", "zfsThinPool", "filePool", "fileThinPool"} {
				if backing, ok := p[t].(map[string]any); ok && len(backing) > 0 {
					p[t] = map[string]any{}
					return true
				}
			}
			return false
		})
	}
	if c.k.kind == "LinstorCluster" {
		change("database type changed", func(spec map[string]any) bool {
			if db, ok := spec["database"].(map[string]any); ok && db["type"] == "external" {
				delete(spec, "database")
			} else {
				spec["database"] = map[string]any{"type": "external", "connectionURL": "etcd://etcd:2379"}
			}
			return true
		})
	}
	return out
}

// updatePaths writes each mutation over the stored object, through v1 and v1alpha1.
func (c *corpusRun) updatePaths(name string, stored *unstructured.Unstructured, bad []mutated) {
	ctx := context.Background()
	for _, m := range bad {
		cur := c.object("v1", name, nil)
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cur), cur); err != nil {
			c.t.Error(err)
			return
		}
		cur.Object["spec"] = corpus.DeepCopy(m.spec)
		c.expectRefused("update invalid", cur, m.what+" as v1 update")

		spoke, annotation, ok := c.toSpokeChecked(m.spec)
		if !ok {
			continue
		}
		cur = c.object("v1alpha1", name, nil)
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cur), cur); err != nil {
			c.t.Error(err)
			return
		}
		cur.Object["spec"] = spoke
		cur.SetAnnotations(annotation)
		c.expectVerdict("update invalid", cur, c.spokeModel(spoke, annotation, stored.Object["spec"].(map[string]any)), m.what+" as v1alpha1 update")
	}
}

// spokeModel is the model's verdict on a v1alpha1 write: converted by the operator's
// own Go conversion, then v1's rules. ok means valid.
func (c *corpusRun) spokeModel(spoke map[string]any, annotations map[string]string, old map[string]any) []string {
	u := c.object("v1alpha1", "model", spoke)
	u.SetAnnotations(annotations)
	typed := c.k.spoke()
	if err := fromMap(u.Object, typed); err != nil {
		return []string{"does not decode: " + err.Error()}
	}
	hub := c.k.hub()
	if err := typed.ConvertTo(hub); err != nil {
		return []string{"conversion: " + err.Error()}
	}
	if value, left := hub.(client.Object).GetAnnotations()[lossless.DataAnnotation]; left {
		return []string{"conversion data refused: " + value}
	}
	m, err := toMap(hub)
	if err != nil {
		return []string{err.Error()}
	}
	spec, _ := m["spec"].(map[string]any)
	return c.modelErrors(spec, old)
}

// expectVerdict: the server accepts exactly what the model accepts.
func (c *corpusRun) expectVerdict(path string, u *unstructured.Unstructured, modelErrs []string, what string) {
	var err error
	if u.GetResourceVersion() == "" {
		err = env.Client.Create(context.Background(), u)
	} else {
		err = c.retryUpdate(u)
	}
	switch {
	case len(modelErrs) == 0 && err == nil:
		c.counts[path+" (still valid) accepted"]++
		if u.GetResourceVersion() != "" && !strings.Contains(path, "update") {
			_ = env.Client.Delete(context.Background(), u)
		}
	case len(modelErrs) == 0:
		c.t.Errorf("%s: %s: server refused what v1 accepts: %v\nobject: %s", path, what, err, asJSON(u.Object))
	case err == nil:
		c.t.Errorf("%s: %s: accepted; v1 refuses it: %v\nobject: %s", path, what, modelErrs, asJSON(u.Object))
		_ = env.Client.Delete(context.Background(), u)
	case !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) && !apierrors.IsBadRequest(err):
		c.t.Errorf("%s: %s: refused with a status that is not 4xx: %v", path, what, err)
	default:
		c.counts[path+" refused"]++
	}
}

func (c *corpusRun) expectRefused(path string, u *unstructured.Unstructured, what string) {
	var err error
	if u.GetResourceVersion() == "" {
		err = env.Client.Create(context.Background(), u)
	} else {
		err = c.retryUpdate(u)
	}
	if err == nil {
		c.t.Errorf("%s: %s: accepted\nobject: %s", path, what, asJSON(u.Object))
		if u.GetResourceVersion() != "" && !strings.Contains(path, "update") {
			_ = env.Client.Delete(context.Background(), u)
		}
		return
	}
	if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) && !apierrors.IsForbidden(err) {
		c.t.Errorf("%s: %s: refused with a status that is not 4xx: %v", path, what, err)
		return
	}
	c.counts[path+" refused"]++
}

// spokeNative draws an object from the v1alpha1 schema itself: the server must accept
// it exactly when v1 accepts its conversion, and give it back unchanged.
func (c *corpusRun) spokeNative(name string) {
	spec, _ := c.spkGen.Value("spec", c.spkSpec).(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	modelErrs := c.spokeModel(spec, nil, nil)
	u := c.object("v1alpha1", name, spec)
	err := env.Client.Create(context.Background(), u)
	switch {
	case len(modelErrs) > 0 && err == nil:
		c.t.Errorf("v1alpha1 object accepted; v1 refuses it: %v\nspec: %s", modelErrs, asJSON(spec))
	case len(modelErrs) > 0:
		c.counts["v1alpha1 generated invalid refused"]++
		return
	case err != nil:
		c.t.Errorf("v1alpha1 object refused; v1 accepts it: %v\nspec: %s", err, asJSON(spec))
		return
	}
	defer func() { _ = env.Client.Delete(context.Background(), u) }()
	back := c.object("v1alpha1", name, nil)
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(back), back); err != nil {
		c.t.Errorf("v1alpha1 GET: %v", err)
		return
	}
	if !c.sameSpec(c.k.spoke(), back, u) {
		c.t.Errorf("v1alpha1 object changed on its way through v1:\nwritten %s\nread    %s", asJSON(u.Object["spec"]), asJSON(back.Object["spec"]))
		return
	}
	c.counts["v1alpha1 generated valid, read back equal"]++
}

// toSpoke converts a v1 spec with the operator's conversion: the v1alpha1 spec and
// the conversion annotation a v1alpha1 reader would get.
func (c *corpusRun) toSpoke(spec map[string]any) (map[string]any, map[string]string) {
	spoke, annotations, _ := c.toSpokeChecked(spec)
	return spoke, annotations
}

func (c *corpusRun) toSpokeChecked(spec map[string]any) (map[string]any, map[string]string, bool) {
	hub := c.k.hub()
	if err := fromMap(map[string]any{"metadata": map[string]any{"name": "x"}, "spec": spec}, hub); err != nil {
		c.counts["mutation not expressible in Go types"]++
		return nil, nil, false
	}
	spoke := c.k.spoke()
	if err := spoke.ConvertFrom(hub); err != nil {
		c.t.Errorf("conversion to v1alpha1: %v", err)
		return nil, nil, false
	}
	m, err := toMap(spoke)
	if err != nil {
		c.t.Error(err)
		return nil, nil, false
	}
	s, _ := m["spec"].(map[string]any)
	if s == nil {
		s = map[string]any{}
	}
	return s, spoke.(client.Object).GetAnnotations(), true
}

// pool draws a storage pool with exactly one type, the shape CEL requires.
func (c *corpusRun) pool(r *rand.Rand) any {
	items := c.hubSpec.Properties["storagePools"].Items.Schema
	types := []string{"lvmPool", "lvmThinPool", "zfsPool", "zfsThinPool", "filePool", "fileThinPool"}
	t := types[r.Intn(len(types))]
	name, _ := corpus.RandomString(r, `^[A-Za-z][A-Za-z0-9_-]*$`, 3, 12)
	p := map[string]any{"name": name}
	sub := items.Properties[t]
	gen := &corpus.Generator{Rand: r, OptionalProbability: 0.5}
	p[t] = gen.Value("spec.storagePools[*]."+t, &sub)
	if p[t] == nil {
		p[t] = map[string]any{}
	}
	if t != "filePool" && t != "fileThinPool" && r.Intn(2) == 0 {
		devices := []any{}
		for n := 1 + r.Intn(3); len(devices) < n; {
			devices = append(devices, fmt.Sprintf("/dev/vd%c", 'b'+len(devices)))
		}
		p["source"] = map[string]any{"hostDevices": devices}
	}
	if r.Intn(3) == 0 {
		p["properties"] = []any{map[string]any{"name": "Aux/pool-" + strconv.Itoa(r.Intn(1000)), "value": "v"}}
	}
	return p
}

func corpusKinds() []corpusKind {
	auxProperty := func(r *rand.Rand) any {
		return map[string]any{"name": fmt.Sprintf("Aux/k%d-%d", r.Intn(1000), r.Intn(1000)), "value": fmt.Sprint(r.Intn(100))}
	}
	auxMap := func(r *rand.Rand) any {
		m := map[string]any{}
		for n := r.Intn(3); len(m) < n; {
			m[fmt.Sprintf("Aux/k%d", r.Intn(1000))] = fmt.Sprint(r.Intn(100))
		}
		return m
	}
	pick := func(values ...any) func(*rand.Rand) any {
		return func(r *rand.Rand) any { return corpus.DeepCopy(values[r.Intn(len(values))]) }
	}
	podTemplates := pick(
		map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": "storage"}}},
		map[string]any{"spec": map[string]any{"priorityClassName": "system-node-critical"}},
		map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "main", "$patch": "delete"}}}},
	)
	tolerations := pick(
		map[string]any{"operator": "Exists"},
		map[string]any{"key": "storage", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
		map[string]any{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": int64(30)},
	)
	resources := pick(
		map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "256Mi"}},
		map[string]any{"requests": map[string]any{"memory": "1Gi"}, "limits": map[string]any{"memory": "2Gi"}},
	)
	component := map[string]func(*rand.Rand) any{}
	for _, c := range []string{"spec.controller", "spec.satellite", "spec.highAvailabilityController", "spec.csi.controller", "spec.csi.node"} {
		component[c+".podTemplate"] = podTemplates
		component[c+".tolerations[*]"] = tolerations
		component[c+".resources"] = resources
	}
	cluster := map[string]func(*rand.Rand) any{
		"spec.properties[*]": auxProperty,
		"spec.database": pick(
			map[string]any{"type": "k8s", "keepBackups": int64(3)},
			map[string]any{"type": "external", "connectionURL": "jdbc:postgresql://db.example.com:5432/linstor", "clientCertificateSecretRef": map[string]any{"name": "db-cert"}},
			map[string]any{"type": "external", "connectionURL": "etcd://etcd-0:2379,etcd-1:2379", "externalBackupAcknowledged": true},
		),
		"spec.tls": pick(
			map[string]any{"internal": map[string]any{"mode": "Secret", "secretName": "linstor-internal"}},
			map[string]any{"api": map[string]any{"mode": "Generated"}},
			map[string]any{"internal": map[string]any{"mode": "CertManager", "issuerRef": map[string]any{"name": "ca", "kind": "ClusterIssuer"}}, "api": map[string]any{"mode": "Secret", "secretName": "api", "clientSecretName": "api-client"}},
		),
	}
	for k, v := range component {
		cluster[k] = v
	}
	cluster["spec.controllerProperties"] = auxMap
	nic := func(r *rand.Rand) any {
		name, _ := corpus.RandomString(r, `^[A-Za-z][A-Za-z0-9_-]*$`, 3, 12)
		if r.Intn(2) == 0 {
			return map[string]any{"name": name, "interfaceName": "eth" + strconv.Itoa(r.Intn(4))}
		}
		return map[string]any{"name": name, "cidr": fmt.Sprintf("10.%d.0.0/16", r.Intn(256))}
	}
	satelliteConfiguration := map[string]func(*rand.Rand) any{
		"spec.podTemplate": podTemplates,
		"spec.properties[*]": func(r *rand.Rand) any {
			if r.Intn(3) == 0 {
				return map[string]any{"name": fmt.Sprintf("Aux/from-%d", r.Intn(1000)), "valueFrom": map[string]any{"nodeFieldRef": "metadata.name"}}
			}
			return auxProperty(r)
		},
		"spec.netInterfaces[*]": nic,
		"spec.nodeProperties":   auxMap,
	}
	satellite := map[string]func(*rand.Rand) any{
		"spec.podTemplate":      podTemplates,
		"spec.properties[*]":    auxProperty,
		"spec.netInterfaces[*]": nic,
		"spec.nodeProperties":   auxMap,
	}
	return []corpusKind{
		{kind: "LinstorCluster", file: "linstor.io_linstorclusters.yaml", hints: cluster,
			hub: func() conversion.Hub { return &linstorv1.LinstorCluster{} }, spoke: func() conversion.Convertible { return &linstorv1alpha1.LinstorCluster{} }},
		{kind: "LinstorSatelliteConfiguration", file: "linstor.io_linstorsatelliteconfigurations.yaml", hints: satelliteConfiguration,
			hub:   func() conversion.Hub { return &linstorv1.LinstorSatelliteConfiguration{} },
			spoke: func() conversion.Convertible { return &linstorv1alpha1.LinstorSatelliteConfiguration{} }},
		{kind: "LinstorSatellite", file: "linstor.io_linstorsatellites.yaml", hints: satellite,
			hub: func() conversion.Hub { return &linstorv1.LinstorSatellite{} }, spoke: func() conversion.Convertible { return &linstorv1alpha1.LinstorSatellite{} }},
	}
}

func fromMap(m map[string]any, into runtime.Object) error {
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, into)
}

func toMap(obj runtime.Object) (map[string]any, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(raw, &m)
}

func asJSON(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}
