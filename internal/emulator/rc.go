package emulator

import (
	"fmt"
	"net/http"
	"time"

	lapiconst "github.com/LINBIT/golinstor"
)

// apiCallRc is one entry of LINSTOR's answer to a mutating call, serialized as the
// server does (rest/v1/serializer/JsonGenTypes.ApiCallRc, NON_EMPTY): empty fields
// are left out and created_at is always set. golinstor's type lacks created_at.
type apiCallRc struct {
	RetCode        int64             `json:"ret_code"`
	Message        string            `json:"message,omitempty"`
	Cause          string            `json:"cause,omitempty"`
	Details        string            `json:"details,omitempty"`
	Correction     string            `json:"correction,omitempty"`
	ErrorReportIDs []string          `json:"error_report_ids,omitempty"`
	ObjRefs        map[string]string `json:"obj_refs,omitempty"`
	CreatedAt      string            `json:"created_at,omitempty"`
}

// rc builds one entry. code carries severity, operation and object masks as the
// server's ResponseConverter.addContext would have added them.
func rc(code uint64, format string, args ...any) apiCallRc {
	return apiCallRc{RetCode: int64(code), Message: fmt.Sprintf(format, args...), CreatedAt: time.Now().Format(time.RFC3339Nano)}
}

func (r apiCallRc) withCause(format string, args ...any) apiCallRc {
	r.Cause = fmt.Sprintf(format, args...)
	return r
}

func (r apiCallRc) withCorrection(format string, args ...any) apiCallRc {
	r.Correction = fmt.Sprintf(format, args...)
	return r
}

func (r apiCallRc) withDetails(format string, args ...any) apiCallRc {
	r.Details = fmt.Sprintf(format, args...)
	return r
}

// withRefs adds obj_refs pairs ("Node", name, "StorPool", pool, ...).
func (r apiCallRc) withRefs(kv ...string) apiCallRc {
	if r.ObjRefs == nil {
		r.ObjRefs = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		r.ObjRefs[kv[i]] = kv[i+1]
	}
	return r
}

// isError reports an entry with the error severity.
func (r apiCallRc) isError() bool {
	return uint64(r.RetCode)&lapiconst.MaskError == lapiconst.MaskError
}

// statusOf maps the first error entry to an HTTP status as
// rest/v1/utils/ApiCallRcRestUtils.toResponse does: codes 300-399 are 404, 400-499
// are 403, every other error (invalid names, "exists", "in use", invalid properties)
// is 500. Warnings and infos never change the status, so they ride in a 2xx.
func statusOf(rcs []apiCallRc, success int) int {
	for _, r := range rcs {
		if !r.isError() {
			continue
		}
		switch num := uint64(r.RetCode) & lapiconst.MaskBitsCode; {
		case num >= 300 && num < 400:
			return http.StatusNotFound
		case num >= 400 && num < 500:
			return http.StatusForbidden
		default:
			return http.StatusInternalServerError
		}
	}
	return success
}

func writeRC(w http.ResponseWriter, success int, rcs ...apiCallRc) {
	if rcs == nil {
		rcs = []apiCallRc{}
	}
	writeJSON(w, statusOf(rcs, success), rcs)
}

// notFound answers a query (GET) for a missing object: 404 with the raw code, no masks
// and no obj_refs (rest/v1/RequestHelper.notFoundResponse).
func notFound(w http.ResponseWriter, code uint64, format string, args ...any) {
	writeJSON(w, http.StatusNotFound, []apiCallRc{rc(code, format, args...)})
}

// Context masks of the server's make*Context helpers.
const (
	crtNode   = lapiconst.MaskCrt | lapiconst.MaskNode
	modNode   = lapiconst.MaskMod | lapiconst.MaskNode
	delNode   = lapiconst.MaskDel | lapiconst.MaskNode
	crtNetIf  = lapiconst.MaskCrt | lapiconst.MaskNetIf
	modNetIf  = lapiconst.MaskMod | lapiconst.MaskNetIf
	delNetIf  = lapiconst.MaskDel | lapiconst.MaskNetIf
	crtPool   = lapiconst.MaskCrt | lapiconst.MaskStorPool
	modPool   = lapiconst.MaskMod | lapiconst.MaskStorPool
	delPool   = lapiconst.MaskDel | lapiconst.MaskStorPool
	crtRsc    = lapiconst.MaskCrt | lapiconst.MaskRsc
	delRsc    = lapiconst.MaskDel | lapiconst.MaskRsc
	crtRscDfn = lapiconst.MaskCrt | lapiconst.MaskRscDfn
	delRscDfn = lapiconst.MaskDel | lapiconst.MaskRscDfn
)
