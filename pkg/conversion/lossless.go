package conversion

import (
	"bytes"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DataAnnotation holds, on a spoke object, the hub data the spoke cannot express.
const DataAnnotation = "linstor.io/conversion-data"

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

// stored is the annotation's payload.
type stored struct {
	Spec   json.RawMessage `json:"spec,omitempty"`
	Status json.RawMessage `json:"status,omitempty"`
}

// ToSpoke converts the spec and status of a hub object and records, in the spoke's
// annotations, what would otherwise be lost.
func ToSpoke[HS, SS, HT, ST any](spokeMeta *metav1.ObjectMeta, spec Part[HS, SS], hubSpec *HS, spokeSpec *SS,
	status Part[HT, ST], hubStatus *HT, spokeStatus *ST,
) error {
	*spokeSpec = spec.ToSpoke(hubSpec)
	*spokeStatus = status.ToSpoke(hubStatus)

	var data stored
	var err error
	if data.Spec, err = lossOf(spec, hubSpec, spokeSpec); err != nil {
		return err
	}
	if data.Status, err = lossOf(status, hubStatus, spokeStatus); err != nil {
		return err
	}
	delete(spokeMeta.Annotations, DataAnnotation)
	if data.Spec != nil || data.Status != nil {
		raw, err := json.Marshal(data)
		if err != nil {
			return fmt.Errorf("encoding %s: %w", DataAnnotation, err)
		}
		if spokeMeta.Annotations == nil {
			spokeMeta.Annotations = map[string]string{}
		}
		spokeMeta.Annotations[DataAnnotation] = string(raw)
	}
	if len(spokeMeta.Annotations) == 0 {
		spokeMeta.Annotations = nil
	}
	return nil
}

// ToHub converts the spec and status of a spoke object, restoring what the spoke's
// annotation kept, and removes the annotation from the hub's metadata.
func ToHub[HS, SS, HT, ST any](hubMeta *metav1.ObjectMeta, spec Part[HS, SS], spokeSpec *SS, hubSpec *HS,
	status Part[HT, ST], spokeStatus *ST, hubStatus *HT,
) error {
	var data stored
	if raw, ok := hubMeta.Annotations[DataAnnotation]; ok {
		if err := json.Unmarshal([]byte(raw), &data); err != nil {
			return fmt.Errorf("metadata.annotations[%s] is not valid conversion data: %w", DataAnnotation, err)
		}
		delete(hubMeta.Annotations, DataAnnotation)
		if len(hubMeta.Annotations) == 0 {
			hubMeta.Annotations = nil
		}
	}
	var err error
	if *hubSpec, err = restore(spec, spokeSpec, data.Spec); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	if *hubStatus, err = restore(status, spokeStatus, data.Status); err != nil {
		return fmt.Errorf("status: %w", err)
	}
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

func restore[H, S any](p Part[H, S], spoke *S, raw json.RawMessage) (H, error) {
	converted := p.ToHub(spoke)
	if raw == nil {
		return converted, nil
	}
	var kept H
	if err := json.Unmarshal(raw, &kept); err != nil {
		return converted, fmt.Errorf("decoding kept hub data: %w", err)
	}
	keptAsSpoke := p.ToSpoke(&kept)
	unchanged, err := SameJSON(&keptAsSpoke, spoke)
	if err != nil {
		return converted, err
	}
	if unchanged {
		return kept, nil
	}
	p.Overlay(&kept, &converted)
	return kept, nil
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
