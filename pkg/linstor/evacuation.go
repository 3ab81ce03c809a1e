package linstor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
)

// maxAnswer bounds what is read of a LINSTOR answer the operator decodes itself.
const maxAnswer = 4 << 20

// Evacuate asks LINSTOR to evacuate node and returns the messages of the warnings in
// its answer, which golinstor drops: LINSTOR answers 200 and keeps a replica that has
// nowhere to go, with WARN_NOT_EVACUATING (CtrlNodeApiCallHandler.evacuateNode).
func Evacuate(ctx context.Context, conn *Connection, node string) ([]string, error) {
	rcs, err := do(ctx, conn, http.MethodPut, "/v1/nodes/"+node+"/evacuate", nil)
	if err != nil {
		return nil, err
	}
	var warnings []string
	for _, rc := range rcs {
		if uint64(rc.RetCode)&lapiconst.MaskError == lapiconst.MaskWarn {
			warnings = append(warnings, rc.Message)
		}
	}
	return warnings, nil
}

// do sends a request and decodes LINSTOR's ApiCallRc answer; an error entry or a
// status of 400 and above is an error (lapi.ApiCallError), a 404 is NotFoundError.
func do(ctx context.Context, conn *Connection, method, path string, body any) ([]lapi.ApiCallRc, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, conn.BaseURL().JoinPath(path).String(), rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := conn.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNotFound {
		return nil, lapi.NotFoundError
	}
	var rcs []lapi.ApiCallRc
	if err := json.Unmarshal(raw, &rcs); err != nil {
		return nil, fmt.Errorf("%s %s: HTTP %d, unexpected answer %q", method, path, resp.StatusCode, truncate(raw, 200))
	}
	for _, rc := range rcs {
		if uint64(rc.RetCode)&lapiconst.MaskError == lapiconst.MaskError {
			return rcs, lapi.ApiCallError(rcs)
		}
	}
	if resp.StatusCode >= 400 {
		return rcs, fmt.Errorf("%s %s: HTTP %d", method, path, resp.StatusCode)
	}
	return rcs, nil
}

// ReplicasOf reads every replica of the resources that have one on node: two view
// calls, the second only when node holds anything.
func ReplicasOf(ctx context.Context, lc *lapi.Client, node string) ([]lapi.ResourceWithVolumes, error) {
	onNode, err := lc.Resources.GetResourceView(ctx, &lapi.ListOpts{Node: []string{node}})
	if err != nil || len(onNode) == 0 {
		return nil, err
	}
	names := map[string]bool{}
	for _, r := range onNode {
		names[r.Name] = true
	}
	list := make([]string, 0, len(names))
	for n := range names {
		list = append(list, n)
	}
	sort.Strings(list)
	return lc.Resources.GetResourceView(ctx, &lapi.ListOpts{Resource: list})
}
