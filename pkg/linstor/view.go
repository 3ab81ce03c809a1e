package linstor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// ResourceView is one replica as GET /v1/view/resources lists it, with the fields
// golinstor's types omit (replication_states, may_promote): JsonGenTypes.ResourceWithVolumes
// and Json.apiToResourceWithVolumes@v1.33.3.
type ResourceView struct {
	Name     string
	NodeName string
	Flags    []string
	// InUse is state.in_use: nil while the satellite is not ONLINE.
	InUse *bool
	// Drbd is the DRBD layer's data, nil for a resource without DRBD.
	Drbd    *DrbdView
	Volumes []VolumeView
}

// DrbdView is the DRBD layer of a replica.
type DrbdView struct {
	NodeID int32
	// Connections by peer node name; only filled while the satellite is ONLINE.
	Connections map[string]DrbdConnection
	MayPromote  *bool
}

// DrbdConnection is one peer connection as the satellite reports it. Its JSON names
// are the server's, so the decoded map is kept as it is, not copied.
type DrbdConnection struct {
	Connected bool   `json:"connected"`
	Message   string `json:"message"`
}

// VolumeView is one volume of a replica.
type VolumeView struct {
	VolumeNumber int32
	StoragePool  string
	// DiskState is "" while unknown (the satellite is not ONLINE, or no DRBD).
	DiskState   string
	Replication map[string]ReplicationState
}

// ReplicationState is the replication towards one peer (JSON names: the server's).
type ReplicationState struct {
	State          string   `json:"replication_state"`
	DonePercentage *float64 `json:"done_percentage"`
}

// HasFlag tells whether LINSTOR set flag on the replica (flags are upper case,
// FlagsHelper.toStringList@v1.33.3; composite flags list their parts too: TIE_BREAKER
// comes with DRBD_DISKLESS and DISKLESS, Resource.Flags@v1.33.3).
func (v *ResourceView) HasFlag(flag string) bool {
	for _, f := range v.Flags {
		if strings.EqualFold(f, flag) {
			return true
		}
	}
	return false
}

// The JSON mirrors decode only what the view types keep: props, effective_props,
// storage and layer details are skipped by the decoder without being kept.

type viewJSON struct {
	Name        string       `json:"name"`
	NodeName    string       `json:"node_name"`
	Flags       []string     `json:"flags"`
	LayerObject *layerJSON   `json:"layer_object"`
	State       *stateJSON   `json:"state"`
	Volumes     []volumeJSON `json:"volumes"`
}

type stateJSON struct {
	InUse *bool `json:"in_use"`
}

// layerJSON is JsonGenTypes.ResourceLayer: a tree whose root is the top layer.
type layerJSON struct {
	Type     string      `json:"type"`
	Children []layerJSON `json:"children"`
	Drbd     *drbdJSON   `json:"drbd"`
}

type drbdJSON struct {
	NodeID      int32                     `json:"node_id"`
	Connections map[string]DrbdConnection `json:"connections"`
	MayPromote  *bool                     `json:"may_promote"`
}

type volumeJSON struct {
	VolumeNumber    int32            `json:"volume_number"`
	StoragePoolName string           `json:"storage_pool_name"`
	State           *volumeStateJSON `json:"state"`
}

type volumeStateJSON struct {
	DiskState         string                      `json:"disk_state"`
	ReplicationStates map[string]ReplicationState `json:"replication_states"`
}

// findDrbd returns the DRBD layer of the tree, depth first: DRBD is the top layer in
// LINSTOR's usual stacks, but ResourceLayer.children may hold it below another layer.
// The server fills drbd.connections only when DRBD is the top layer and the satellite
// reported a state (Json.apiToResourceWithVolumes@v1.33.3); below, they stay empty.
func findDrbd(l *layerJSON) *drbdJSON {
	if l == nil {
		return nil
	}
	if l.Type == "DRBD" && l.Drbd != nil {
		return l.Drbd
	}
	for i := range l.Children {
		if d := findDrbd(&l.Children[i]); d != nil {
			return d
		}
	}
	return nil
}

func (j *viewJSON) view() ResourceView {
	v := ResourceView{Name: j.Name, NodeName: j.NodeName, Flags: j.Flags}
	if j.State != nil {
		v.InUse = j.State.InUse
	}
	if d := findDrbd(j.LayerObject); d != nil {
		v.Drbd = &DrbdView{NodeID: d.NodeID, MayPromote: d.MayPromote}
		if len(d.Connections) > 0 {
			v.Drbd.Connections = d.Connections
		}
	}
	if len(j.Volumes) > 0 {
		v.Volumes = make([]VolumeView, len(j.Volumes))
		for i, vol := range j.Volumes {
			vv := VolumeView{VolumeNumber: vol.VolumeNumber, StoragePool: vol.StoragePoolName}
			if vol.State != nil {
				vv.DiskState = vol.State.DiskState
				if len(vol.State.ReplicationStates) > 0 {
					vv.Replication = vol.State.ReplicationStates
				}
			}
			v.Volumes[i] = vv
		}
	}
	return v
}

// DecodeResourceViews reads the answer of GET /v1/view/resources (a JSON array of
// ResourceWithVolumes) one element at a time and hands each to each: memory is bounded
// by one element, not by the body, whatever the number of resources. An error from each
// stops the decoding and is returned.
func DecodeResourceViews(r io.Reader, each func(ResourceView) error) error {
	dec := json.NewDecoder(r)
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("resource view: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("resource view: expected a list, got %v", tok)
	}
	for dec.More() {
		// A fresh element each time: decoding into a used one would merge its maps.
		var j viewJSON
		if err := dec.Decode(&j); err != nil {
			return fmt.Errorf("resource view: %w", err)
		}
		if err := each(j.view()); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("resource view: %w", err)
	}
	return nil
}

// maxErrorBody bounds what is kept of an error answer.
const maxErrorBody = 4 << 10

// ReadResourceViews asks GET /v1/view/resources once, without limit or offset: the
// server answers every replica in one list (View.viewResources@v1.33.3 pages only when
// limit > 0), which DecodeResourceViews streams. hc is the connection's client
// (Connection.HTTP: its TLS and timeout), baseURL its URL (Connection.Client.BaseURL).
func ReadResourceViews(ctx context.Context, hc *http.Client, baseURL string, each func(ResourceView) error) error {
	url := strings.TrimSuffix(baseURL, "/") + "/v1/view/resources"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return fmt.Errorf("resource view: HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(body))
	}
	return DecodeResourceViews(resp.Body, each)
}
