package dbbackup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// ErrNothingWritten is wrapped by every error of Check, RestoreBackup, RestoreFrom and
// Restore returned before their first write: LINSTOR's database is as it was, and
// LINSTOR may run on it.
var ErrNothingWritten = errors.New("nothing was written: LINSTOR's database is unchanged")

// ErrPartlyRestored is wrapped by every restore error after the first write: the
// database is partly replaced and LINSTOR must not run on it.
var ErrPartlyRestored = errors.New("LINSTOR's database is partly restored")

// ErrRestoredDiffers: the database read back after a restore is not the backup.
var ErrRestoredDiffers = errors.New("the restored database differs from the backup")

// ErrBackupUnusable marks a Check error no retry changes: the backup is not Completed,
// damaged, holds what does not decode or is not LINSTOR's, or names tables this release
// may not change. Other Check errors (the API server did not answer) may pass on retry.
var ErrBackupUnusable = errors.New("the backup cannot be restored")

// unusableError keeps the message and adds ErrBackupUnusable to what it wraps.
type unusableError struct{ error }

func (e unusableError) Unwrap() []error { return []error{e.error, ErrBackupUnusable} }

func unusable(err error) error { return unusableError{err} }

func nothingWritten(err error) error { return fmt.Errorf("%w (%w)", err, ErrNothingWritten) }

// CheckResult is what restoring a backup will do, for the status to say before it
// happens. Names are CRD names, sorted.
type CheckResult struct {
	// Create are the backup's tables that do not exist now: created from its definitions.
	Create []string
	// Update are the tables that exist in both: emptied, and their definitions restored.
	Update []string
	// Delete are the tables that exist now but not in the backup: deleted with their rows.
	Delete []string
	// Objects is how many rows the backup holds.
	Objects int
}

func (r CheckResult) String() string {
	return fmt.Sprintf("creates %d tables, replaces %d, deletes %d; restores %d objects",
		len(r.Create), len(r.Update), len(r.Delete), r.Objects)
}

// Check runs every check a restore of b can fail without writing anything: b is
// Completed; its chunk Secrets read as a stream match status.checksum; the header and
// every object decode and each object is a row of a table of the backup; every table of
// the backup and of the live database is one the operator knows (Tables); and the live
// tables can take the backup's definitions. It reads the backup once, memory bounded
// by one object. Every error names the backup and wraps ErrNothingWritten.
func Check(ctx context.Context, c client.Reader, b *linstorv1.LinstorBackup) (CheckResult, error) {
	res, err := check(ctx, c, b)
	if err != nil {
		return res, nothingWritten(fmt.Errorf("LinstorBackup %s cannot be restored: %w", b.Name, err))
	}
	return res, nil
}

func check(ctx context.Context, c client.Reader, b *linstorv1.LinstorBackup) (CheckResult, error) {
	switch {
	case b.Status.Phase != linstorv1.BackupCompleted:
		return CheckResult{}, unusable(fmt.Errorf("it is %q, not Completed", b.Status.Phase))
	case len(b.Status.Secrets) == 0 && b.Status.Stored == nil:
		return CheckResult{}, unusable(errors.New("status.secrets names no chunk Secret and status.stored no bucket"))
	case b.Status.Checksum == "":
		return CheckResult{}, unusable(errors.New("status.checksum is empty"))
	}
	// One pass: the checksum is computed over what the decoder reads. A damaged chunk
	// usually breaks the decoding too; the checksum says more, so it is reported first.
	h := sha256.New()
	data := io.TeeReader(Open(ctx, c, b), h)
	objects, crds, decodeErr := decodeAll(data)
	if _, err := io.Copy(io.Discard, data); err != nil {
		if apierrors.IsNotFound(err) && b.Status.Stored == nil {
			return CheckResult{}, unusable(fmt.Errorf("it is damaged: %w", err)) // a chunk Secret is gone
		}
		if storedUnusable(err) {
			return CheckResult{}, unusable(fmt.Errorf("its copy in the bucket cannot be read: %w", err))
		}
		return CheckResult{}, err
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != b.Status.Checksum {
		return CheckResult{}, unusable(fmt.Errorf("it is damaged: its %d chunk Secrets (or its bucket copy) read back with checksum %s, status.checksum is %s",
			len(b.Status.Secrets), got, b.Status.Checksum))
	}
	if decodeErr != nil {
		return CheckResult{}, unusable(decodeErr) // the bytes are the ones backed up: no retry decodes them
	}
	if b.Status.Objects > 0 && int(b.Status.Objects) != objects {
		return CheckResult{}, unusable(fmt.Errorf("it holds %d objects, status.objects says %d", objects, b.Status.Objects))
	}
	p, err := planRestore(ctx, c, crds)
	if err != nil {
		return CheckResult{}, err
	}
	res := p.result()
	res.Objects = objects
	return res, nil
}

// decodeAll reads a backup through, checking every object against the header's tables.
func decodeAll(data io.Reader) (int, []apiextensionsv1.CustomResourceDefinition, error) {
	r, err := NewReader(data)
	if err != nil {
		return 0, nil, err
	}
	check := newObjectCheck(r.CRDs)
	for n := 0; ; n++ {
		o, err := r.Next()
		if errors.Is(err, io.EOF) {
			return n, r.CRDs, nil
		}
		if err == nil {
			err = check.object(o)
		}
		if err != nil {
			return n, nil, fmt.Errorf("object %d: %w", n+1, err)
		}
	}
}

// RestoreBackup restores b: Check first (nothing written when it fails), then a
// restore read from b's chunk Secrets as a stream. Its errors wrap ErrNothingWritten
// or ErrPartlyRestored. The caller keeps LINSTOR stopped and, when it returns nil,
// compares the database with b by VerifyRestored (it also catches Secrets changed
// between the check and the restore).
func RestoreBackup(ctx context.Context, c client.Client, b *linstorv1.LinstorBackup) (CheckResult, error) {
	res, err := Check(ctx, c, b)
	if err != nil {
		return res, err
	}
	r, err := NewReader(Open(ctx, c, b))
	if err != nil {
		return res, nothingWritten(fmt.Errorf("LinstorBackup %s cannot be restored: %w", b.Name, err))
	}
	if err := RestoreFrom(ctx, c, r); err != nil {
		return res, fmt.Errorf("restoring LinstorBackup %s: %w", b.Name, err)
	}
	return res, nil
}

// VerifyRestored reads the database back, encoded as a backup is, and compares its
// checksum with want, the backup's: the encoding is deterministic, so the database is
// the backup exactly when they are equal. LINSTOR must still be stopped.
func VerifyRestored(ctx context.Context, c client.Reader, want string) error {
	h := sha256.New()
	if _, err := Write(ctx, c, h); err != nil {
		return fmt.Errorf("reading the restored database back: %w", err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("%w: it reads back with checksum %s, the backup's is %s", ErrRestoredDiffers, got, want)
	}
	return nil
}

// restorePlan is what a restore does to the live tables.
type restorePlan struct {
	create []*apiextensionsv1.CustomResourceDefinition // the dump's definitions
	update []tableUpdate
	delete []*apiextensionsv1.CustomResourceDefinition // live
}

type tableUpdate struct {
	live, want *apiextensionsv1.CustomResourceDefinition
}

func (p *restorePlan) result() CheckResult {
	var r CheckResult
	for _, crd := range p.create {
		r.Create = append(r.Create, crd.Name)
	}
	for _, u := range p.update {
		r.Update = append(r.Update, u.live.Name)
	}
	for _, crd := range p.delete {
		r.Delete = append(r.Delete, crd.Name)
	}
	return r
}

// planRestore reads the live tables and decides what a restore of the dump's tables
// does to each, refusing what it could not finish: tables unknown to the operator
// (RBAC lets it change only Tables), definitions no LINSTOR wrote, a scope change the
// API server refuses. It writes nothing; it waits for tables being deleted to be gone.
func planRestore(ctx context.Context, c client.Reader, dumpCRDs []apiextensionsv1.CustomResourceDefinition) (*restorePlan, error) {
	if err := checkDumpTables(dumpCRDs); err != nil {
		return nil, unusable(err)
	}
	live, err := tablesSettled(ctx, c)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(dumpCRDs)+len(live))
	inDump := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for i := range dumpCRDs {
		inDump[dumpCRDs[i].Name] = &dumpCRDs[i]
		names = append(names, dumpCRDs[i].Name)
	}
	current := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for i := range live {
		current[live[i].Name] = &live[i]
		names = append(names, live[i].Name)
	}
	if err := checkKnownTables(names); err != nil {
		return nil, unusable(err)
	}
	p := &restorePlan{}
	for i := range live {
		crd := &live[i]
		want := inDump[crd.Name]
		switch {
		case want == nil:
			p.delete = append(p.delete, crd)
		case crd.Spec.Scope != want.Spec.Scope:
			return nil, unusable(fmt.Errorf("CRD %s is %s-scoped, the backup's is %s-scoped: the API server cannot change a CRD's scope", crd.Name, crd.Spec.Scope, want.Spec.Scope))
		default:
			p.update = append(p.update, tableUpdate{live: crd, want: want})
		}
	}
	for i := range dumpCRDs {
		if current[dumpCRDs[i].Name] == nil {
			p.create = append(p.create, &dumpCRDs[i])
		}
	}
	sort.Slice(p.create, func(i, j int) bool { return p.create[i].Name < p.create[j].Name })
	return p, nil
}

// tablesSettled lists the live tables after waiting for those being deleted to be
// gone: a terminating CRD can be neither updated nor created again.
func tablesSettled(ctx context.Context, c client.Reader) ([]apiextensionsv1.CustomResourceDefinition, error) {
	var live []apiextensionsv1.CustomResourceDefinition
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		if live, err = tables(ctx, c); err != nil {
			return false, err
		}
		return !slices.ContainsFunc(live, func(crd apiextensionsv1.CustomResourceDefinition) bool { return crd.DeletionTimestamp != nil }), nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for LINSTOR's CRDs being deleted to be gone: %w", err)
	}
	return live, nil
}

// checkDumpTables refuses definitions LINSTOR's k8s backend would not have written:
// the restore creates and updates CRDs from them.
func checkDumpTables(crds []apiextensionsv1.CustomResourceDefinition) error {
	seen := map[string]bool{}
	for _, crd := range crds {
		s := &crd.Spec
		storage := 0
		for _, v := range s.Versions {
			if v.Storage {
				storage++
			}
		}
		var problem string
		switch {
		case seen[crd.Name]:
			problem = "appears twice"
		case s.Group != Group:
			problem = fmt.Sprintf("spec.group is %q, not %q", s.Group, Group)
		case crd.Name != s.Names.Plural+"."+Group:
			problem = fmt.Sprintf("spec.names.plural %q does not match the name", s.Names.Plural)
		case s.Names.Kind == "" || s.Names.ListKind == "":
			problem = "spec.names.kind or listKind is empty"
		case storage != 1:
			problem = fmt.Sprintf("spec.versions has %d storage versions, not 1", storage)
		}
		if problem != "" {
			return fmt.Errorf("the backup's definition of CRD %s is invalid: %s", crd.Name, problem)
		}
		seen[crd.Name] = true
	}
	return nil
}

// objectCheck tells whether an object is a row of one of the dump's tables.
type objectCheck struct {
	versions map[string][]string // kind -> served versions
}

func newObjectCheck(crds []apiextensionsv1.CustomResourceDefinition) *objectCheck {
	oc := &objectCheck{versions: map[string][]string{}}
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if v.Served {
				oc.versions[crd.Spec.Names.Kind] = append(oc.versions[crd.Spec.Names.Kind], v.Name)
			}
		}
	}
	return oc
}

func (oc *objectCheck) object(o map[string]any) error {
	u := unstructured.Unstructured{Object: o}
	group, version, _ := strings.Cut(u.GetAPIVersion(), "/")
	switch {
	case u.GetName() == "":
		return fmt.Errorf("%s without metadata.name", u.GetKind())
	case group != Group || !slices.Contains(oc.versions[u.GetKind()], version):
		return fmt.Errorf("%s %s (apiVersion %q) is not a row of a table of the backup", u.GetKind(), u.GetName(), u.GetAPIVersion())
	}
	return nil
}
