// Package dbbackup backs up and restores LINSTOR's database when it lives in Kubernetes
// (the "k8s" backend): every CRD of the group internal.linstor.linbit.com and all their
// objects. A dump is encoded deterministically (sorted JSON, gzip without timestamps),
// so equal databases give equal bytes and a checksum proves a restore exact. Encoded
// dumps are split into chunks small enough for Secrets.
package dbbackup

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Group is the API group of LINSTOR's k8s database backend.
const Group = "internal.linstor.linbit.com"

// ChunkSize keeps each Secret well under the 1 MiB object limit.
const ChunkSize = 512 << 10

// Dump is the database: its CRDs and their objects, without server-set fields.
type Dump struct {
	CRDs    []apiextensionsv1.CustomResourceDefinition `json:"crds"`
	Objects []map[string]any                           `json:"objects"`
}

// Take reads the whole database into memory (tests and small databases; backups
// stream with Write). The LINSTOR controller must be stopped: it writes to it.
func Take(ctx context.Context, c client.Client) (*Dump, error) {
	crds, err := tables(ctx, c)
	if err != nil {
		return nil, err
	}
	d := &Dump{}
	for i := range crds {
		if err := eachObject(ctx, c, &crds[i], func(o map[string]any) error {
			d.Objects = append(d.Objects, clean(o))
			return nil
		}); err != nil {
			return nil, err
		}
		d.CRDs = append(d.CRDs, cleanCRD(crds[i]))
	}
	return d, nil
}

// Counts returns the numbers of CRDs and objects.
func (d *Dump) Counts() (crds, objects int) { return len(d.CRDs), len(d.Objects) }

func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return crd.Spec.Versions[0].Name
}

// clean drops what the API server sets, so a restore creates the objects anew and
// two dumps of the same data are equal.
func clean(o map[string]any) map[string]any {
	u := unstructured.Unstructured{Object: o}
	out := u.DeepCopy()
	for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "selfLink"} {
		unstructured.RemoveNestedField(out.Object, "metadata", f)
	}
	return out.Object
}

func cleanCRD(crd apiextensionsv1.CustomResourceDefinition) apiextensionsv1.CustomResourceDefinition {
	out := apiextensionsv1.CustomResourceDefinition{TypeMeta: crd.TypeMeta, Spec: *crd.Spec.DeepCopy()}
	out.APIVersion, out.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
	out.Name, out.Labels, out.Annotations = crd.Name, crd.Labels, crd.Annotations
	return out
}

// Encode serializes the dump as Write does (format 2): the same database gives the
// same bytes either way.
func (d *Dump) Encode() ([]byte, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err := writeLine(zw, header{Format: 2, CRDs: d.CRDs}); err != nil {
		return nil, err
	}
	for _, o := range d.Objects {
		if err := writeLine(zw, o); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Decode reads an encoded backup of either format whole.
func Decode(data []byte) (*Dump, error) { return ReadAll(bytes.NewReader(data)) }

// Checksum is the SHA-256 of encoded data, as "sha256:<hex>".
func Checksum(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Split cuts data into chunks of at most size bytes.
func Split(data []byte, size int) [][]byte {
	var out [][]byte
	for len(data) > size {
		out = append(out, data[:size])
		data = data[size:]
	}
	return append(out, data)
}

// Restore replaces the database with the dump, the LINSTOR controller stopped: every
// object of the group is deleted, CRDs the dump does not have are deleted, the dump's
// CRDs get their definitions back (created as LINSTOR would when they no longer exist),
// and the dump's objects are created. Everything that can be checked without writing
// (the dump's definitions and objects, the known tables) is checked first: such an error
// wraps ErrNothingWritten; any later one wraps ErrPartlyRestored.
func Restore(ctx context.Context, c client.Client, d *Dump) error {
	check := newObjectCheck(d.CRDs)
	for _, o := range d.Objects {
		if err := check.object(o); err != nil {
			return nothingWritten(err)
		}
	}
	objs := d.Objects
	return restore(ctx, c, d.CRDs, func() (map[string]any, error) {
		if len(objs) == 0 {
			return nil, io.EOF
		}
		o := objs[0]
		objs = objs[1:]
		return o, nil
	})
}

// RestoreFrom is Restore reading the backup as it goes: memory does not grow with the
// database. Before its first write it checks the header's definitions, the known tables
// and the live CRDs (errors wrap ErrNothingWritten); it cannot check object lines it has
// not read yet, so a damaged line ends it partly restored. Restores of a LinstorBackup
// use RestoreBackup, which runs Check (the whole stream) first.
func RestoreFrom(ctx context.Context, c client.Client, r *Reader) error {
	check := newObjectCheck(r.CRDs)
	return restore(ctx, c, r.CRDs, func() (map[string]any, error) {
		o, err := r.Next()
		if err == nil {
			err = check.object(o)
		}
		return o, err
	})
}

func restore(ctx context.Context, c client.Client, dumpCRDs []apiextensionsv1.CustomResourceDefinition, next func() (map[string]any, error)) error {
	p, err := planRestore(ctx, c, dumpCRDs)
	if err != nil {
		return nothingWritten(err)
	}
	// From here on every request may have changed the database.
	if err := p.apply(ctx, c, next); err != nil {
		return fmt.Errorf("%w: %w", ErrPartlyRestored, err)
	}
	return nil
}

func (p *restorePlan) apply(ctx context.Context, c client.Client, next func() (map[string]any, error)) error {
	for _, crd := range p.delete {
		if err := c.Delete(ctx, crd); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting %s: %w", crd.Name, err)
		}
		if err := waitGone(ctx, c, crd.Name); err != nil {
			return fmt.Errorf("waiting for %s to be deleted: %w", crd.Name, err)
		}
	}
	// The versions a table loses (a migration since the backup added them), kept so that
	// objects the API server still wrote in one can be rewritten (reencode).
	lost := map[string][]apiextensionsv1.CustomResourceDefinitionVersion{}
	for _, u := range p.update {
		crd, want := u.live, u.want
		if err := deleteObjects(ctx, c, crd); err != nil {
			return err
		}
		// Read again: deleting may have readmitted a version.
		if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, crd); err != nil {
			return fmt.Errorf("reading %s: %w", crd.Name, err)
		}
		for _, v := range crd.Spec.Versions {
			if slices.Contains(removedVersions(crd, &want.Spec), v.Name) {
				lost[crd.Name] = append(lost[crd.Name], *v.DeepCopy())
			}
		}
		if err := forgetStoredVersions(ctx, c, crd, &want.Spec); err != nil {
			return err
		}
		removed := removedVersions(crd, &want.Spec)
		crd.Spec = *want.Spec.DeepCopy()
		crd.Labels, crd.Annotations = want.Labels, want.Annotations
		if err := c.Update(ctx, crd); err != nil {
			return fmt.Errorf("restoring the definition of %s: %w", crd.Name, err)
		}
		if err := waitEstablished(ctx, c, crd.Name); err != nil {
			return fmt.Errorf("waiting for %s to be established: %w", crd.Name, err)
		}
		if err := waitUnserved(ctx, c, crd, removed); err != nil {
			return err
		}
	}
	for _, want := range p.create {
		if err := createTable(ctx, c, want); err != nil {
			return err
		}
	}
	if err := createAll(ctx, c, next); err != nil {
		return err
	}
	for _, u := range p.update {
		if err := reencode(ctx, c, u.want, lost[u.want.Name]); err != nil {
			return err
		}
	}
	return nil
}

// reencode makes every object of a table that lost versions readable through the
// restored definition. The API server takes a CRD update in asynchronously: an object
// created right after it may be stored in the storage version of before (one the
// restored CRD no longer has), and then no list of the table succeeds again ("request
// to convert CR from an invalid group/version"). Such a table gets its lost versions
// back, unserved, so its objects can be read; each is written again, which stores it
// in the restored storage version; then the versions go again. As the
// kube-storage-version-migrator does, but only when a list says it is needed.
func reencode(ctx context.Context, c client.Client, want *apiextensionsv1.CustomResourceDefinition, lost []apiextensionsv1.CustomResourceDefinitionVersion) error {
	if len(lost) == 0 {
		return nil
	}
	storage := storageVersion(want)
	readable := func() (bool, error) {
		err := listAll(ctx, c, want, storage, func(*unstructured.Unstructured) error { return nil })
		switch {
		case err == nil:
			return true, nil
		case strings.Contains(err.Error(), "invalid group/version"):
			return false, nil
		default:
			return false, err
		}
	}
	for attempt := 0; ; attempt++ {
		ok, err := readable()
		if err != nil || ok {
			return err
		}
		if attempt == 5 {
			return fmt.Errorf("%s: objects stay stored in versions the backup's definition lacks", want.Name)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: want.Name}, crd); err != nil {
			return err
		}
		for _, v := range lost {
			v.Served, v.Storage = false, false
			crd.Spec.Versions = append(crd.Spec.Versions, v)
		}
		if err := c.Update(ctx, crd); err != nil {
			return fmt.Errorf("restoring %s's lost versions to rewrite its objects: %w", want.Name, err)
		}
		time.Sleep(time.Second) // the API server takes the update in
		if err := listAll(ctx, c, want, storage, func(u *unstructured.Unstructured) error {
			if err := c.Update(ctx, u); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("rewriting %s %s: %w", want.Spec.Names.Kind, u.GetName(), err)
			}
			return nil
		}); err != nil {
			return err
		}
		if err := c.Get(ctx, client.ObjectKey{Name: want.Name}, crd); err != nil {
			return err
		}
		crd.Spec = *want.Spec.DeepCopy()
		if err := c.Update(ctx, crd); err != nil {
			return fmt.Errorf("restoring the definition of %s: %w", want.Name, err)
		}
		crd.Status.StoredVersions = []string{storage}
		if err := c.Status().Update(ctx, crd); err != nil {
			return fmt.Errorf("forgetting the stored versions of %s: %w", want.Name, err)
		}
		time.Sleep(time.Second)
	}
}

// invalidStoredVersion reads the version the API server cannot convert objects from,
// out of its error: objects stored in a version their CRD no longer has.
func invalidStoredVersion(err error) (string, bool) {
	const marker = "request to convert CR from an invalid group/version: " + Group + "/"
	msg := err.Error()
	i := strings.Index(msg, marker)
	if i < 0 {
		return "", false
	}
	v := msg[i+len(marker):]
	if j := strings.IndexAny(v, " ,;:\"'"); j >= 0 {
		v = v[:j]
	}
	return v, v != ""
}

// readmitVersion puts version back into a CRD, unserved and not stored (the storage
// version's schema: LINSTOR's tables keep one column set per version name), so that the
// API server can read the objects stored in it.
func readmitVersion(ctx context.Context, c client.Client, name, version string) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		return err
	}
	if slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == version }) {
		time.Sleep(time.Second) // already there: the API server has not taken it in yet
		return nil
	}
	var v apiextensionsv1.CustomResourceDefinitionVersion
	for _, x := range crd.Spec.Versions {
		if x.Storage {
			v = *x.DeepCopy()
		}
	}
	v.Name, v.Served, v.Storage = version, false, false
	crd.Spec.Versions = append(crd.Spec.Versions, v)
	if err := c.Update(ctx, crd); err != nil {
		return fmt.Errorf("readmitting version %s of %s to read the objects stored in it: %w", version, name, err)
	}
	time.Sleep(time.Second) // the API server takes the update in
	return nil
}

// listAll calls do for every object of a table, a page at a time, at version.
func listAll(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition, version string, do func(*unstructured.Unstructured) error) error {
	cont := ""
	for {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(Group + "/" + version)
		list.SetKind(crd.Spec.Names.ListKind)
		if err := c.List(ctx, list, client.Limit(PageSize), client.Continue(cont)); err != nil {
			return fmt.Errorf("listing %s: %w", crd.Name, err)
		}
		for i := range list.Items {
			if err := do(&list.Items[i]); err != nil {
				return err
			}
		}
		if cont = list.GetContinue(); cont == "" {
			return nil
		}
	}
}

// createTable creates a table of the dump that does not exist (a new cluster, or a
// migration since the backup dropped it) the way LINSTOR's k8s backend does: LINSTOR
// server-side applies a generated CRD manifest of name, group, versions, scope and
// names, nothing else (BaseK8sCrdMigration.createOrReplaceCrdSchema and
// DbK8sCrd.migrate for linstorversion and rollback, LINSTOR v1.33.3,
// controller/src/main/java/com/linbit/linstor/dbcp/...). The dump holds that
// definition as the API server stored it, defaults filled in, so creating it gives the
// same CRD; the next LINSTOR migration force-applies its own manifest over it as it
// would over one it created. planRestore admits only names of Tables.
func createTable(ctx context.Context, c client.Client, want *apiextensionsv1.CustomResourceDefinition) error {
	crd := &apiextensionsv1.CustomResourceDefinition{Spec: *want.Spec.DeepCopy()}
	crd.Name, crd.Labels, crd.Annotations = want.Name, want.Labels, want.Annotations
	if err := c.Create(ctx, crd); err != nil {
		return fmt.Errorf("creating %s from the backup: %w", want.Name, err)
	}
	if err := waitEstablished(ctx, c, want.Name); err != nil {
		return fmt.Errorf("waiting for %s to be established: %w", want.Name, err)
	}
	return nil
}

// restoreWorkers create objects in parallel: a restore keeps LINSTOR stopped, so it
// should be quick; memory stays bounded by the workers and the channel.
const restoreWorkers = 8

// forgetStoredVersions prepares crd, whose objects are all deleted, to take the
// definition want back: the apiserver keeps a version in spec while status.storedVersions
// names it (a migration may have added one), and with no object left nothing is stored
// in it. The versions want lacks stay in spec, unserved and not storage, until
// storedVersions no longer names them.
func forgetStoredVersions(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition, want *apiextensionsv1.CustomResourceDefinitionSpec) error {
	wanted := map[string]bool{}
	for _, v := range want.Versions {
		wanted[v.Name] = true
	}
	var keep []string
	extra := false
	for _, v := range crd.Status.StoredVersions {
		if wanted[v] {
			keep = append(keep, v)
		} else {
			extra = true
		}
	}
	if !extra {
		return nil
	}
	spec := want.DeepCopy()
	for _, v := range crd.Spec.Versions {
		if !wanted[v.Name] {
			v.Served, v.Storage = false, false
			spec.Versions = append(spec.Versions, v)
		}
	}
	crd.Spec = *spec
	if err := c.Update(ctx, crd); err != nil {
		return fmt.Errorf("restoring the definition of %s: %w", crd.Name, err)
	}
	for _, v := range want.Versions {
		if v.Storage && !slices.Contains(keep, v.Name) {
			keep = append(keep, v.Name)
		}
	}
	crd.Status.StoredVersions = keep
	if err := c.Status().Update(ctx, crd); err != nil {
		return fmt.Errorf("forgetting the stored versions of %s: %w", crd.Name, err)
	}
	return nil
}

// deleteObjects deletes every object of a CRD and waits until they are gone.
func deleteObjects(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) error {
	// A page at a time, the page's objects deleted in parallel: the operator never holds
	// the table, and no single request lasts as long as a large table takes (one
	// collection delete of 100,000 objects outlives the API server's request timeout).
	for readmitted := 0; ; {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(Group + "/" + storageVersion(crd))
		list.SetKind(crd.Spec.Names.ListKind)
		if err := c.List(ctx, list, client.Limit(PageSize)); err != nil {
			if v, ok := invalidStoredVersion(err); ok && readmitted < 5 {
				// Objects stored in a version the definition lost (see reencode): let
				// the API server read them again, to delete them.
				readmitted++
				if err := readmitVersion(ctx, c, crd.Name, v); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("listing %s: %w", crd.Name, err)
		}
		if len(list.Items) == 0 {
			return nil
		}
		items := list.Items
		err := workers(ctx, func() (*unstructured.Unstructured, bool, error) {
			if len(items) == 0 {
				return nil, false, nil
			}
			u := &items[0]
			items = items[1:]
			return u, true, nil
		}, func(ctx context.Context, u *unstructured.Unstructured) error {
			if err := c.Delete(ctx, u); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting %s %s: %w", crd.Spec.Names.Kind, u.GetName(), err)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
}

// removedVersions are the versions crd has that want lacks.
func removedVersions(crd *apiextensionsv1.CustomResourceDefinition, want *apiextensionsv1.CustomResourceDefinitionSpec) []string {
	var out []string
	for _, v := range crd.Spec.Versions {
		if !slices.ContainsFunc(want.Versions, func(w apiextensionsv1.CustomResourceDefinitionVersion) bool { return w.Name == v.Name }) {
			out = append(out, v.Name)
		}
	}
	return out
}

// waitUnserved waits until the API server no longer serves crd's removed versions: it
// takes a CRD update in asynchronously, and until then writes objects with the old
// storage version. An object the restore created in a version the restored CRD no
// longer has could never be read again ("request to convert CR from an invalid
// group/version"): LINSTOR would not start, and no restore could list the table.
func waitUnserved(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition, removed []string) error {
	for _, v := range removed {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion(Group + "/" + v)
			list.SetKind(crd.Spec.Names.ListKind)
			err := c.List(ctx, list, client.Limit(1))
			return apierrors.IsNotFound(err) || meta.IsNoMatchError(err), nil
		})
		if err != nil {
			return fmt.Errorf("waiting for the API server to stop serving %s of %s: %w", v, crd.Name, err)
		}
	}
	return nil
}

func waitGone(ctx context.Context, c client.Client, name string) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

func waitEstablished(ctx context.Context, c client.Client, name string) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// Empty reports whether LINSTOR's database holds no object (no table, or only empty
// ones): a new installation, whose database a restore cannot harm. It reads at most
// one object per table.
func Empty(ctx context.Context, c client.Reader) (bool, error) {
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := c.List(ctx, &crds); err != nil {
		return false, fmt.Errorf("listing CRDs: %w", err)
	}
	for _, crd := range crds.Items {
		if crd.Spec.Group != Group {
			continue
		}
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(Group + "/" + storageVersion(&crd))
		list.SetKind(crd.Spec.Names.ListKind)
		if err := c.List(ctx, list, client.Limit(1)); err != nil {
			return false, fmt.Errorf("listing %s: %w", crd.Name, err)
		}
		if len(list.Items) > 0 {
			return false, nil
		}
	}
	return true, nil
}

// createAll creates the objects next yields, restoreWorkers at a time.
func createAll(ctx context.Context, c client.Client, next func() (map[string]any, error)) error {
	return workers(ctx, func() (*unstructured.Unstructured, bool, error) {
		o, err := next()
		if errors.Is(err, io.EOF) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		return &unstructured.Unstructured{Object: clean(o)}, true, nil
	}, func(ctx context.Context, u *unstructured.Unstructured) error {
		// A changed definition may take a moment to reach discovery.
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			err := c.Create(ctx, u)
			if meta.IsNoMatchError(err) {
				return false, nil
			}
			return true, err
		})
		if err != nil {
			return fmt.Errorf("creating %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		return nil
	})
}

// workers does every item produce yields, restoreWorkers at a time: a restore keeps
// LINSTOR stopped, so it should be quick, and memory stays bounded by the workers. It
// stops at the first error, of either.
func workers[T any](ctx context.Context, produce func() (T, bool, error), do func(context.Context, T) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan T, restoreWorkers)
	errs := make(chan error, restoreWorkers)
	var wg sync.WaitGroup
	for w := 0; w < restoreWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for item := range jobs {
				if err := do(ctx, item); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		}()
	}
	var produceErr error
	for ctx.Err() == nil {
		item, ok, err := produce()
		if err != nil {
			produceErr = err
			break
		}
		if !ok {
			break
		}
		select {
		case jobs <- item:
		case <-ctx.Done():
		}
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	if produceErr != nil {
		return produceErr
	}
	return ctx.Err()
}
