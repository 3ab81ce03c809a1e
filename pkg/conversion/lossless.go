package conversion

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
)

// DataAnnotation holds, on a spoke object, the hub data the spoke cannot express.
const DataAnnotation = "linstor.io/conversion-data"

// Annotation sizes. The API server refuses an object whose annotations total more than
// 256 KiB, and a conversion answer with such an object fails the whole request (a LIST
// of the namespace included), so the data is compressed when large and left out when
// even compressed it does not fit.
const (
	annotationsLimit = 256 << 10
	// compressAbove keeps small annotations readable JSON.
	compressAbove = 16 << 10
	// margin leaves room for annotations a client adds on a later write.
	margin = 8 << 10
)

// Part converts one part of an object (its spec or its status) between the hub type H
// and the spoke type S.
type Part[H, S any] struct {
	// ToSpoke maps the fields the spoke can express.
	ToSpoke func(*H) S
	// ToHub maps every spoke field; spokes are designed to be subsets of the hub.
	ToHub func(*S) H
	// Overlay copies the spoke-expressible fields of from into base.
	Overlay func(base *H, from *H)
}

// data is the annotation's payload: the kept hub parts, or one of them compressed, or
// the reason they were left out.
type data struct {
	Spec   json.RawMessage `json:"spec,omitempty"`
	Status json.RawMessage `json:"status,omitempty"`
	// Gzip is the base64 of the gzipped JSON of a data with Spec and Status.
	Gzip string `json:"gzip,omitempty"`
	// Omitted says why the hub data is not here: the spoke cannot be written back.
	Omitted string `json:"omitted,omitempty"`
}

// InvalidError explains why conversion data cannot be used. The conversion does not
// fail on it (a conversion error is an internal error for every client, readers of a
// whole LIST included): it leaves the annotation on the hub object, where admission
// refuses it with this message.
type InvalidError struct{ Reason string }

func (e *InvalidError) Error() string { return e.Reason }

// ToSpoke converts the spec and status of a hub object and records, in the spoke's
// annotations, what would otherwise be lost. It never fails for data that encodes as
// JSON: what does not fit in the annotation is left out, and the object can then be
// read through the spoke but not written back through it.
func ToSpoke[HS, SS, HT, ST any](spokeMeta *metav1.ObjectMeta, spec Part[HS, SS], hubSpec *HS, spokeSpec *SS,
	status Part[HT, ST], hubStatus *HT, spokeStatus *ST,
) error {
	*spokeSpec = spec.ToSpoke(hubSpec)
	*spokeStatus = status.ToSpoke(hubStatus)

	var kept data
	var err error
	if kept.Spec, err = lossOf(spec, hubSpec, spokeSpec); err != nil {
		return err
	}
	if kept.Status, err = lossOf(status, hubStatus, spokeStatus); err != nil {
		return err
	}
	delete(spokeMeta.Annotations, DataAnnotation)
	if kept.Spec != nil || kept.Status != nil {
		others := 0
		for k, v := range spokeMeta.Annotations {
			others += len(k) + len(v)
		}
		value, err := encode(kept, annotationsLimit-margin-others-len(DataAnnotation))
		if err != nil {
			return err
		}
		if spokeMeta.Annotations == nil {
			spokeMeta.Annotations = map[string]string{}
		}
		spokeMeta.Annotations[DataAnnotation] = value
	}
	if len(spokeMeta.Annotations) == 0 {
		spokeMeta.Annotations = nil
	}
	return nil
}

// encode fits kept into budget bytes: as JSON, compressed, without the status (the
// operator writes status again; a spoke status write then keeps only what the spoke
// has), or as the reason it does not fit.
func encode(kept data, budget int) (string, error) {
	for _, candidate := range []data{kept, {Spec: kept.Spec}} {
		if candidate.Spec == nil && candidate.Status == nil {
			continue
		}
		raw, err := json.Marshal(candidate)
		if err != nil {
			return "", err
		}
		if len(raw) <= compressAbove && len(raw) <= budget {
			return string(raw), nil
		}
		packed, err := json.Marshal(data{Gzip: gzipBase64(raw)})
		if err != nil {
			return "", err
		}
		if len(packed) <= budget {
			return string(packed), nil
		}
	}
	raw, err := json.Marshal(data{Omitted: fmt.Sprintf("the linstor.io/v1 fields v1alpha1 cannot express are %d bytes, too large for this annotation even compressed: read this object through v1alpha1 if you must, edit it through linstor.io/v1", len(kept.Spec))})
	return string(raw), err
}

func gzipBase64(raw []byte) string {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = w.Write(raw)
	_ = w.Close()
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

// maxDecoded bounds what a compressed annotation may expand to: an object cannot hold
// more than etcd's request limit, so anything larger is not ours.
const maxDecoded = 3 << 20

// decode reads an annotation value, decompressing it.
func decode(value string) (data, error) {
	var d data
	if err := strictJSON([]byte(value), &d); err != nil {
		return d, &InvalidError{"is not conversion data written by this operator: " + err.Error()}
	}
	if d.Omitted != "" {
		return d, &InvalidError{"cannot be written back through linstor.io/v1alpha1: " + d.Omitted}
	}
	if d.Gzip == "" {
		return d, nil
	}
	if d.Spec != nil || d.Status != nil {
		return d, &InvalidError{"holds both compressed and plain data"}
	}
	zipped, err := base64.StdEncoding.DecodeString(d.Gzip)
	if err != nil {
		return d, &InvalidError{"gzip: not base64: " + err.Error()}
	}
	r, err := gzip.NewReader(bytes.NewReader(zipped))
	if err != nil {
		return d, &InvalidError{"gzip: " + err.Error()}
	}
	raw, err := io.ReadAll(io.LimitReader(r, maxDecoded+1))
	if err != nil {
		return d, &InvalidError{"gzip: " + err.Error()}
	}
	if len(raw) > maxDecoded {
		return d, &InvalidError{fmt.Sprintf("gzip: expands to more than %d bytes", maxDecoded)}
	}
	var inner data
	if err := strictJSON(raw, &inner); err != nil || inner.Gzip != "" || inner.Omitted != "" {
		return d, &InvalidError{"gzip: does not hold conversion data"}
	}
	return inner, nil
}

// strictJSON refuses unknown fields, duplicate keys and case-insensitive matches, so
// data meant for another shape is not half read.
func strictJSON(raw []byte, into any) error {
	strict, err := kjson.UnmarshalStrict(raw, into)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		return strict[0]
	}
	return nil
}

// Validate reports why an annotation value cannot complete a spoke of hub part types
// HS and HT, or nil. The admission webhook calls it to explain a refusal.
func Validate[HS, HT any](value string) error {
	d, err := decode(value)
	if err != nil {
		return err
	}
	if d.Spec != nil {
		var spec HS
		if err := strictJSON(d.Spec, &spec); err != nil {
			return &InvalidError{"spec: " + err.Error()}
		}
	}
	if d.Status != nil {
		var status HT
		if err := strictJSON(d.Status, &status); err != nil {
			return &InvalidError{"status: " + err.Error()}
		}
	}
	return nil
}

// ToHub converts the spec and status of a spoke object, restoring what the spoke's
// annotation kept, and removes the annotation from the hub's metadata. An annotation
// it cannot use is left on the hub object for admission to refuse (see InvalidError),
// and the spoke's own fields are converted alone.
func ToHub[HS, SS, HT, ST any](hubMeta *metav1.ObjectMeta, spec Part[HS, SS], spokeSpec *SS, hubSpec *HS,
	status Part[HT, ST], spokeStatus *ST, hubStatus *HT,
) error {
	var kept data
	if value, ok := hubMeta.Annotations[DataAnnotation]; ok {
		if Validate[HS, HT](value) != nil {
			*hubSpec, *hubStatus = spec.ToHub(spokeSpec), status.ToHub(spokeStatus)
			return nil
		}
		kept, _ = decode(value)
		delete(hubMeta.Annotations, DataAnnotation)
		if len(hubMeta.Annotations) == 0 {
			hubMeta.Annotations = nil
		}
	}
	*hubSpec = restore(spec, spokeSpec, kept.Spec)
	*hubStatus = restore(status, spokeStatus, kept.Status)
	return nil
}

// lossOf returns the hub part as JSON when the spoke cannot carry it, nil otherwise.
func lossOf[H, S any](p Part[H, S], hub *H, spoke *S) (json.RawMessage, error) {
	back := p.ToHub(spoke)
	same, err := SameJSON(&back, hub)
	if err != nil || same {
		return nil, err
	}
	return json.Marshal(hub)
}

// restore rebuilds the hub part from the spoke and the kept JSON, which Validate has
// accepted.
func restore[H, S any](p Part[H, S], spoke *S, raw json.RawMessage) H {
	converted := p.ToHub(spoke)
	if raw == nil {
		return converted
	}
	var kept H
	_ = json.Unmarshal(raw, &kept)
	keptAsSpoke := p.ToSpoke(&kept)
	if unchanged, _ := SameJSON(&keptAsSpoke, spoke); unchanged {
		return kept
	}
	p.Overlay(&kept, &converted)
	return kept
}

// SameJSON reports whether a and b serialize identically. JSON is what the API server
// stores, so nil and empty collections that both serialize away count as equal.
func SameJSON(a, b any) (bool, error) {
	ja, err := json.Marshal(a)
	if err != nil {
		return false, err
	}
	jb, err := json.Marshal(b)
	if err != nil {
		return false, err
	}
	return bytes.Equal(ja, jb), nil
}
