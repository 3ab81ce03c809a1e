package linstor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	lapi "github.com/LINBIT/golinstor/client"
)

// LINSTOR's backup schedules, which golinstor does not wrap (CtrlScheduleApiCallHandler,
// CtrlScheduledBackupsApiCallHandler, the schedules-by-resource view of REST/View.java).

// Schedule is LINSTOR's JsonGenTypes.Schedule.
type Schedule struct {
	Name       string `json:"schedule_name"`
	FullCron   string `json:"full_cron"`
	IncCron    string `json:"inc_cron,omitempty"`
	KeepLocal  *int32 `json:"keep_local,omitempty"`
	KeepRemote *int32 `json:"keep_remote,omitempty"`
	OnFailure  string `json:"on_failure,omitempty"`
	MaxRetries *int32 `json:"max_retries,omitempty"`
}

// ScheduledResource is one row of the schedules-by-resource view (ScheduledRscs): times
// are milliseconds since the epoch; a negative LastSnapTime means nothing was shipped
// yet, a negative NextExecTime that a shipment runs.
type ScheduledResource struct {
	Resource     string `json:"rsc_name"`
	Remote       string `json:"remote_name,omitempty"`
	Schedule     string `json:"schedule_name,omitempty"`
	Reason       string `json:"reason,omitempty"`
	LastSnapTime int64  `json:"last_snap_time"`
	LastSnapInc  bool   `json:"last_snap_inc"`
	NextExecTime int64  `json:"next_exec_time"`
	NextExecInc  bool   `json:"next_exec_inc"`
}

// ScheduleEnabledProp is the property LINSTOR sets on a resource group (or the
// controller) a schedule is enabled for: "true" or "false"
// (CtrlScheduledBackupsApiCallHandler.setScheduleInTransaction).
func ScheduleEnabledProp(remote, schedule string) string {
	return "Schedule/" + remote + "/" + schedule + "/Enabled"
}

// GetSchedule reads one schedule (LINSTOR lists them all: there is no GET of one);
// nil when LINSTOR has none of that name (names compare without case, as LINSTOR's).
func GetSchedule(ctx context.Context, conn *Connection, name string) (*Schedule, error) {
	var list struct {
		Data []Schedule `json:"data"`
	}
	if err := getJSON(ctx, conn, "/v1/schedules", nil, &list); err != nil {
		return nil, err
	}
	for i := range list.Data {
		if strings.EqualFold(list.Data[i].Name, name) {
			return &list.Data[i], nil
		}
	}
	return nil, nil
}

// CreateSchedule creates a schedule.
func CreateSchedule(ctx context.Context, conn *Connection, s Schedule) error {
	_, err := do(ctx, conn, http.MethodPost, "/v1/schedules", s)
	return err
}

// ModifySchedule changes a schedule's crons, keeps and failure handling.
func ModifySchedule(ctx context.Context, conn *Connection, s Schedule) error {
	body := map[string]any{"full_cron": s.FullCron, "inc_cron": s.IncCron, "keep_local": s.KeepLocal, "keep_remote": s.KeepRemote,
		"on_failure": s.OnFailure, "max_retries": s.MaxRetries}
	_, err := do(ctx, conn, http.MethodPut, "/v1/schedules/"+url.PathEscape(s.Name), body)
	return err
}

// DeleteSchedule deletes a schedule (LINSTOR removes its properties everywhere).
func DeleteSchedule(ctx context.Context, conn *Connection, name string) error {
	_, err := do(ctx, conn, http.MethodDelete, "/v1/schedules/"+url.PathEscape(name), nil)
	if err == lapi.NotFoundError {
		return nil
	}
	return err
}

// SetScheduleEnabled enables or disables a schedule to a remote for a resource group,
// or for every resource (group "").
func SetScheduleEnabled(ctx context.Context, conn *Connection, remote, schedule, group string, enable bool) error {
	action := "disable"
	if enable {
		action = "enable"
	}
	body := map[string]any{}
	if group != "" {
		body["grp_name"] = group
	}
	_, err := do(ctx, conn, http.MethodPut, "/v1/remotes/"+url.PathEscape(remote)+"/backups/schedule/"+url.PathEscape(schedule)+"/"+action, body)
	return err
}

// ScheduledResources reads the schedules-by-resource view of one schedule and remote:
// one request, whatever the number of resources.
func ScheduledResources(ctx context.Context, conn *Connection, remote, schedule string) ([]ScheduledResource, error) {
	var out struct {
		Data []ScheduledResource `json:"data"`
	}
	q := url.Values{"remote": {remote}, "schedule": {schedule}}
	if err := getJSON(ctx, conn, "/v1/view/schedules-by-resource", q, &out); err != nil {
		return nil, err
	}
	return out.Data, nil
}

// ShippedBackup is one entry of a remote's backup list (JsonGenTypes.Backup, written by
// Json.apiToBackup). golinstor's Backup cannot tell a missing success or shipping from
// false, and the list says different things with them:
//   - a backup with its meta file in the bucket: success true, shipping false
//     (CtrlBackupApiCallHandler.getBackupFromMetadata);
//   - volume objects without a meta file (getBackupFromVolumeKey), by the local
//     snapshot's shipping status: shipping true while it ships; success true once
//     shipped; both false once it failed; neither without a local snapshot;
//   - a shipment under way that has nothing in the bucket yet: shipping true.
//
// A shipment that failed before any of its objects reached the bucket is not listed
// at all, and fail_messages, though declared, is never set (v1.33.3: apiToBackup does
// not write it); Summarize in pkg/volumebackup reads both with that in mind.
type ShippedBackup struct {
	ID       string `json:"id"`
	Resource string `json:"origin_rsc"`
	// StartTimestamp is when the backup's snapshot was taken (milliseconds; from the
	// backup's id, to the second, when there is no meta file).
	StartTimestamp    *int64 `json:"start_timestamp,omitempty"`
	FinishedTimestamp *int64 `json:"finished_timestamp,omitempty"`
	Success           *bool  `json:"success,omitempty"`
	Shipping          *bool  `json:"shipping,omitempty"`
	BasedOn           string `json:"based_on_id,omitempty"`
	FailMessages      string `json:"fail_messages,omitempty"`
}

// ShippedBackups reads the backup list of a remote: one request, whatever the number
// of resources (LINSTOR lists the bucket and its own snapshots).
func ShippedBackups(ctx context.Context, conn *Connection, remote string) ([]ShippedBackup, error) {
	var out struct {
		Linstor map[string]ShippedBackup `json:"linstor"`
	}
	if err := getJSONUpTo(ctx, conn, "/v1/remotes/"+url.PathEscape(remote)+"/backups", nil, &out, maxBackupList); err != nil {
		return nil, err
	}
	list := make([]ShippedBackup, 0, len(out.Linstor))
	for _, b := range out.Linstor {
		list = append(list, b)
	}
	return list, nil
}

// getJSON reads a LINSTOR answer into out; 404 is lapi.NotFoundError.
func getJSON(ctx context.Context, conn *Connection, path string, q url.Values, out any) error {
	return getJSONUpTo(ctx, conn, path, q, out, maxAnswer)
}

// maxBackupList bounds a remote's backup list: every backup of every resource, some
// 400 bytes each (tens of thousands in a large cluster's bucket).
const maxBackupList = 64 << 20

func getJSONUpTo(ctx context.Context, conn *Connection, path string, q url.Values, out any, limit int64) error {
	u := conn.BaseURL().JoinPath(path)
	if q != nil {
		u.RawQuery = q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := conn.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return err
	}
	if resp.StatusCode == http.StatusNotFound {
		return lapi.NotFoundError
	}
	if resp.StatusCode >= 400 {
		var rcs []lapi.ApiCallRc
		if json.Unmarshal(raw, &rcs) == nil && len(rcs) > 0 {
			return lapi.ApiCallError(rcs)
		}
		return fmt.Errorf("GET %s: HTTP %d: %s", path, resp.StatusCode, truncate(raw, 200))
	}
	return json.Unmarshal(raw, out)
}
