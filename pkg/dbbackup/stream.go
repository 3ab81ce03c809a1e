package dbbackup

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The streamed format (2): gzip of JSON lines. The first line is a header with the
// format and the tables' definitions; every other line is one object. Tables come in
// CRD name order, objects in the API server's order, and encoding/json sorts map keys,
// so equal databases give equal bytes. Nothing is ever held whole: the database is
// read a page at a time and written as it is read; a restore reads it back the same
// way. Format 1 (one JSON document, Dump) is still read.

// PageSize is how many objects one list request reads.
const PageSize = 500

// maxLine bounds one encoded object (LINSTOR's objects are small; Secrets cap at 1 MiB).
const maxLine = 16 << 20

// ErrNoDatabase: no table of LINSTOR's k8s backend exists.
var ErrNoDatabase = errors.New("no LINSTOR database found: no CRD of group " + Group + " exists")

type header struct {
	Format int                                        `json:"format"`
	CRDs   []apiextensionsv1.CustomResourceDefinition `json:"crds"`
}

// Counts are what a backup holds.
type Counts struct{ CRDs, Objects int }

// Write streams the database to w in format 2. The LINSTOR controller must be stopped.
func Write(ctx context.Context, c client.Reader, w io.Writer) (Counts, error) {
	crds, err := tables(ctx, c)
	if err != nil {
		return Counts{}, err
	}
	if len(crds) == 0 {
		return Counts{}, ErrNoDatabase
	}
	zw, _ := gzip.NewWriterLevel(w, gzip.BestCompression) // no name, zero mtime: deterministic
	h := header{Format: 2}
	for _, crd := range crds {
		h.CRDs = append(h.CRDs, cleanCRD(crd))
	}
	if err := writeLine(zw, h); err != nil {
		return Counts{}, err
	}
	counts := Counts{CRDs: len(crds)}
	for i := range crds {
		err := eachObject(ctx, c, &crds[i], func(o map[string]any) error {
			counts.Objects++
			return writeLine(zw, clean(o))
		})
		if err != nil {
			return counts, err
		}
	}
	return counts, zw.Close()
}

func writeLine(w io.Writer, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(raw, '\n'))
	return err
}

// tables lists the database's CRDs, sorted by name.
func tables(ctx context.Context, c client.Reader) ([]apiextensionsv1.CustomResourceDefinition, error) {
	var list apiextensionsv1.CustomResourceDefinitionList
	if err := c.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing CRDs: %w", err)
	}
	var out []apiextensionsv1.CustomResourceDefinition
	for _, crd := range list.Items {
		if crd.Spec.Group == Group {
			out = append(out, crd)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// eachObject reads a table a page at a time.
func eachObject(ctx context.Context, c client.Reader, crd *apiextensionsv1.CustomResourceDefinition, f func(map[string]any) error) error {
	cont := ""
	for {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(Group + "/" + storageVersion(crd))
		list.SetKind(crd.Spec.Names.ListKind)
		if err := c.List(ctx, list, client.Limit(PageSize), client.Continue(cont)); err != nil {
			return fmt.Errorf("listing %s: %w", crd.Name, err)
		}
		for i := range list.Items {
			if err := f(list.Items[i].Object); err != nil {
				return err
			}
		}
		if cont = list.GetContinue(); cont == "" {
			return nil
		}
	}
}

// Reader reads a backup in either format, one object at a time.
type Reader struct {
	CRDs []apiextensionsv1.CustomResourceDefinition
	// next returns the next object, or io.EOF.
	next func() (map[string]any, error)
}

// NewReader opens an encoded backup.
func NewReader(r io.Reader) (*Reader, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("backup data is not gzip: %w", err)
	}
	br := bufio.NewReaderSize(zr, 64<<10)
	first, err := br.Peek(12)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("backup data is corrupt: %w", err)
	}
	if !bytes.HasPrefix(first, []byte(`{"format":`)) {
		// Format 1: one document; small databases only were written so.
		d := &Dump{}
		if err := json.NewDecoder(br).Decode(d); err != nil {
			return nil, fmt.Errorf("backup data is corrupt: %w", err)
		}
		objs := d.Objects
		return &Reader{CRDs: d.CRDs, next: func() (map[string]any, error) {
			if len(objs) == 0 {
				return nil, io.EOF
			}
			o := objs[0]
			objs = objs[1:]
			return o, nil
		}}, nil
	}
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	if !sc.Scan() {
		return nil, fmt.Errorf("backup data is corrupt: no header: %v", sc.Err())
	}
	var h header
	if err := json.Unmarshal(sc.Bytes(), &h); err != nil || h.Format != 2 {
		return nil, fmt.Errorf("backup data is corrupt or of an unknown format: %v", err)
	}
	return &Reader{CRDs: h.CRDs, next: func() (map[string]any, error) {
		if !sc.Scan() {
			if err := sc.Err(); err != nil {
				return nil, fmt.Errorf("backup data is corrupt: %w", err)
			}
			return nil, io.EOF
		}
		var o map[string]any
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			return nil, fmt.Errorf("backup data is corrupt: %w", err)
		}
		return o, nil
	}}, nil
}

// Next returns the next object, or io.EOF after the last.
func (r *Reader) Next() (map[string]any, error) { return r.next() }

// ReadAll decodes a whole backup (tests and small databases).
func ReadAll(r io.Reader) (*Dump, error) {
	br, err := NewReader(r)
	if err != nil {
		return nil, err
	}
	d := &Dump{CRDs: br.CRDs}
	for {
		o, err := br.Next()
		if errors.Is(err, io.EOF) {
			return d, nil
		}
		if err != nil {
			return nil, err
		}
		d.Objects = append(d.Objects, o)
	}
}
