package emulator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/minio/minio-go/v7"

	"github.com/linstor-operator/linstor-operator/internal/s3server"
)

// The server's answers where its spec says otherwise, for the backup endpoints.
func init() {
	serverCorrections = append(serverCorrections,
		struct {
			what, source string
			apply        func(*openapi3.T) error
		}{
			what:   "GET /v1/remotes answers one RemoteList object, not a list of them",
			source: "controller/.../api/rest/v1/Remotes.getRemotes (objectMapper.writeValueAsString(remoteList))",
			apply: func(doc *openapi3.T) error {
				op := doc.Paths.Find("/v1/remotes")
				if op == nil || op.Get == nil || op.Get.Responses.Status(http.StatusOK) == nil {
					return errors.New("no GET /v1/remotes")
				}
				op.Get.Responses.Status(http.StatusOK).Value.Content.Get("application/json").Schema =
					openapi3.NewSchemaRef("#/components/schemas/RemoteList", doc.Components.Schemas["RemoteList"].Value)
				return nil
			},
		},
		struct {
			what, source string
			apply        func(*openapi3.T) error
		}{
			what:   "POST /v1/remotes/{remote_name}/backups and .../backups/restore answer 201 Created, not 200",
			source: "controller/.../api/rest/v1/Backups.createBackup, restoreBackup (mapToMonoResponse(.., Response.Status.CREATED))",
			apply: func(doc *openapi3.T) error {
				for _, path := range []string{"/v1/remotes/{remote_name}/backups", "/v1/remotes/{remote_name}/backups/restore"} {
					op := doc.Paths.Find(path)
					if op == nil || op.Post == nil || op.Post.Responses.Status(http.StatusOK) == nil {
						return errors.New("no 200 answer of POST " + path)
					}
					op.Post.Responses.Set("201", op.Post.Responses.Status(http.StatusOK))
				}
				return nil
			},
		},
		struct {
			what, source string
			apply        func(*openapi3.T) error
		}{
			what: "ScheduledRscs of a resource without a schedule (reason none set/undeployed) have no remote_name and schedule_name",
			source: "CtrlScheduleApiCallHandler.listUnscheduledRsc (null remote and schedule), JsonGenTypes.ScheduledRscs " +
				"(JsonInclude NON_EMPTY leaves nulls out)",
			apply: func(doc *openapi3.T) error {
				s, ok := doc.Components.Schemas["ScheduledRscs"]
				if !ok || !slices.Contains(s.Value.Required, "remote_name") {
					return errors.New("ScheduledRscs does not require remote_name")
				}
				s.Value.Required = []string{"rsc_name"}
				return nil
			},
		},
	)
}

// backupWorld is an emulator with two online nodes holding pool "thin", an unlocked
// master passphrase, and a real S3 server with the bucket "linstor".
type backupWorld struct {
	h   *harness
	clk *clock
	s3  *s3server.Server
}

const bucket = "linstor"

func newBackupWorld(t *testing.T, conform bool) *backupWorld {
	t.Helper()
	ctx := context.Background()
	s3, err := s3server.Start(ctx, s3server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s3.Stop() })
	must(t, s3.CreateBucket(ctx, bucket))
	h, clk := harnessWithNodes(t, conform, "10.0.7.", "n1", "n2")
	clk.mu.Lock()
	clk.now = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	clk.mu.Unlock()
	addPool(t, h, "n1", "n2")
	return &backupWorld{h: h, clk: clk, s3: s3}
}

func (w *backupWorld) remote(name string) map[string]any {
	return map[string]any{"remote_name": name, "endpoint": w.s3.Endpoint, "bucket": bucket, "region": w.s3.Region,
		"access_key": w.s3.AccessKey, "secret_key": w.s3.SecretKey}
}

func (w *backupWorld) keys(t *testing.T) []string {
	t.Helper()
	var out []string
	for obj := range w.s3.Client().ListObjects(context.Background(), bucket, minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		out = append(out, obj.Key)
	}
	slices.Sort(out)
	return out
}

func (w *backupWorld) object(t *testing.T, key string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(w.s3.Dir, bucket, key))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func (w *backupWorld) wait(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must(t, w.h.emu.WaitForBackups(ctx))
}

type backupList struct {
	Linstor map[string]struct {
		ID         string `json:"id"`
		OriginSnap string `json:"origin_snap"`
		OriginNode string `json:"origin_node"`
		Success    *bool  `json:"success"`
		Shipping   *bool  `json:"shipping"`
		Restorable *bool  `json:"restorable"`
		BasedOnID  string `json:"based_on_id"`
		Vlms       []struct {
			S3 struct {
				Key string `json:"key"`
			} `json:"s3"`
		} `json:"vlms"`
	} `json:"linstor"`
	Other struct {
		Files []string `json:"files"`
	} `json:"other"`
}

// TestConformanceBackups drives remotes, backups, restores and schedules through the
// spec validator against a real S3 server, and checks what lands in the bucket: the
// object names and metadata of BackupShippingUtils/S3VolumeNameInfo/S3MetafileNameInfo.
func TestConformanceBackups(t *testing.T) {
	w := newBackupWorld(t, true)
	h, emu, ctx := w.h, w.h.emu, context.Background()
	must(t, emu.PlaceResource("pvc-1", "n1", "thin", false))
	must(t, emu.PlaceResource("pvc-1", "n2", "thin", false))
	full := bytes.Repeat([]byte("0123456789abcdef"), 1024) // 16 KiB, four 4 KiB blocks
	must(t, emu.WriteVolumeData("pvc-1", 0, full))

	// S3 remotes: the keys are stored encrypted with the master key, so without a
	// passphrase nothing is created (EncryptionHelper.encrypt).
	status, got := h.call(t, "POST", "/v1/remotes/s3", w.remote("offsite"))
	expect(t, "remote without master key", status, got, http.StatusNotFound, lapiconst.FailNotFoundCryptKey)
	must(t, h.client.Encryption.Create(ctx, lapi.Passphrase{NewPassphrase: "s3cret"}))
	bad := w.remote("offsite")
	bad["secret_key"] = "wrong"
	status, got = h.call(t, "POST", "/v1/remotes/s3", bad)
	expect(t, "remote with a wrong secret", status, got, http.StatusInternalServerError, lapiconst.FailUnknownError|lapiconst.MaskBackup|lapiconst.MaskMod|lapiconst.MaskRemote)
	noBucket := w.remote("offsite")
	noBucket["bucket"] = "missing"
	status, got = h.call(t, "POST", "/v1/remotes/s3", noBucket)
	expect(t, "remote with a missing bucket", status, got, http.StatusInternalServerError, lapiconst.FailUnknownError|lapiconst.MaskBackup|lapiconst.MaskMod|lapiconst.MaskRemote)
	incomplete := w.remote("offsite")
	delete(incomplete, "region")
	status, got = h.call(t, "POST", "/v1/remotes/s3", incomplete)
	expect(t, "remote without region", status, got, http.StatusInternalServerError, lapiconst.FailInvldBackupConfig|lapiconst.MaskBackup|lapiconst.MaskMod|lapiconst.MaskRemote)
	status, got = h.call(t, "POST", "/v1/remotes/s3", w.remote("offsite"))
	expect(t, "remote", status, got, http.StatusOK, lapiconst.Created|lapiconst.MaskRemote|lapiconst.MaskMod)
	status, got = h.call(t, "POST", "/v1/remotes/s3", w.remote("offsite"))
	expect(t, "second remote of the name", status, got, http.StatusInternalServerError, lapiconst.FailExistsRemote|lapiconst.MaskMod|lapiconst.MaskRemote)
	for _, path := range []string{"/v1/remotes", "/v1/remotes/s3"} {
		var raw json.RawMessage
		h.raw(t, "GET", path, nil, &raw)
		if strings.Contains(string(raw), w.s3.SecretKey) || strings.Contains(string(raw), w.s3.AccessKey) || !strings.Contains(string(raw), `"use_path_style":false`) {
			t.Errorf("GET %s = %s: keys answered, or use_path_style not false", path, raw)
		}
	}
	remotes, err := h.client.Remote.GetAll(ctx)
	must(t, err)
	if len(remotes.S3Remotes) != 1 || remotes.S3Remotes[0].Endpoint != w.s3.Endpoint || remotes.S3Remotes[0].Bucket != bucket {
		t.Errorf("remotes = %+v", remotes)
	}
	status, got = h.call(t, "PUT", "/v1/remotes/s3/offsite", map[string]any{"secret_key": "wrong"})
	expect(t, "modify to a wrong secret", status, got, http.StatusInternalServerError, lapiconst.FailUnknownError|lapiconst.MaskBackup|lapiconst.MaskMod|lapiconst.MaskRemote)
	status, _ = h.call(t, "PUT", "/v1/remotes/s3/offsite", map[string]any{"region": w.s3.Region})
	if status != http.StatusOK {
		t.Fatalf("modify region: HTTP %d", status)
	}

	// A full backup: one object per volume, then the meta file.
	snap, err := h.client.Backup.Create(ctx, "offsite", lapi.BackupCreate{RscName: "pvc-1", SnapName: "snap1"})
	must(t, err)
	if snap != "snap1" {
		t.Errorf("snapshot = %q", snap)
	}
	w.wait(t)
	fullVol, fullMeta := "pvc-1_00000_back_20260301_000000^snap1", "pvc-1_back_20260301_000000^snap1.meta"
	if keys := w.keys(t); !slices.Equal(keys, []string{fullVol, fullMeta}) {
		t.Fatalf("bucket = %q, want %q", keys, []string{fullVol, fullMeta})
	}
	if !bytes.Equal(w.object(t, fullVol), full) {
		t.Error("the full backup's volume object is not the volume's content")
	}
	var meta map[string]any
	must(t, json.Unmarshal(w.object(t, fullMeta), &meta))
	backups, _ := meta["backups"].(map[string]any)
	vol0, _ := backups["0"].([]any)
	if meta["rscName"] != "pvc-1" || meta["nodeName"] == "" || meta["clusterId"] == "" || meta["snapDfnUuid"] == "" || meta["basedOn"] != nil ||
		len(vol0) != 1 || vol0[0].(map[string]any)["name"] != fullVol {
		t.Errorf("meta file = %v", meta)
	}
	snapProps := meta["rscDfn"].(map[string]any)["snapDfnProps"].(map[string]any)
	if snapProps["BackupShipping/Source/offsite/LastFullBackupTimestamp"] != "snap1" || snapProps["BackupShipping/Source/offsite/ShippingStatus"] != "Uploading Metadata" {
		t.Errorf("meta snapDfnProps = %v", snapProps)
	}

	// An incremental backup a minute later ships only the changed block, based on the full.
	changed := bytes.Clone(full)
	copy(changed[5000:], "changed")
	must(t, emu.WriteVolumeData("pvc-1", 0, changed))
	w.clk.Advance(time.Minute)
	status, got = h.call(t, "POST", "/v1/remotes/offsite/backups", map[string]any{"rsc_name": "pvc-1", "incremental": true})
	expect(t, "incremental backup", status, got, http.StatusCreated, lapiconst.MaskInfo)
	w.wait(t)
	incVol, incMeta := "pvc-1_00000_back_20260301_000100", "pvc-1_back_20260301_000100.meta"
	if keys := w.keys(t); !slices.Equal(keys, []string{fullVol, incVol, fullMeta, incMeta}) {
		t.Fatalf("bucket = %q", keys)
	}
	if n := len(w.object(t, incVol)); n >= len(full)/2 {
		t.Errorf("incremental object is %d bytes for one changed 4 KiB block", n)
	}
	must(t, json.Unmarshal(w.object(t, incMeta), &meta))
	if meta["basedOn"] != fullMeta {
		t.Errorf("incremental basedOn = %v, want %s", meta["basedOn"], fullMeta)
	}
	var list backupList
	h.raw(t, "GET", "/v1/remotes/offsite/backups", nil, &list)
	inc := list.Linstor["pvc-1_back_20260301_000100"]
	if len(list.Linstor) != 2 || inc.BasedOnID != fullMeta || inc.Restorable == nil || !*inc.Restorable || inc.Success == nil || !*inc.Success ||
		inc.Shipping == nil || *inc.Shipping || inc.OriginSnap != "back_20260301_000100" {
		t.Errorf("backups = %+v", list)
	}
	gl, err := h.client.Backup.GetAll(ctx, "offsite", "pvc-1", "")
	must(t, err)
	if len(gl.Linstor) != 2 {
		t.Errorf("golinstor list = %+v", gl)
	}

	// What a restore of the latest would download and allocate.
	info, err := h.client.Backup.Info(ctx, "offsite", lapi.BackupInfoRequest{SrcRscName: "pvc-1", NodeName: "n2"})
	must(t, err)
	wantDl := int64(len(full)/1024) + int64((len(w.object(t, incVol))+1023)/1024)
	if info.Full != fullMeta || info.Latest != "pvc-1_back_20260301_000100" || info.Count != 2 || info.DlSizeKib != wantDl ||
		len(info.Storpools) != 1 || info.Storpools[0].Name != "thin" || len(info.Storpools[0].Vlms) != 2 {
		t.Errorf("backup info = %+v, want full %s, 2 backups, %d KiB to download", info, fullMeta, wantDl)
	}

	// Restore the latest into a new resource on n2: the chain is applied.
	status, got = h.call(t, "POST", "/v1/remotes/offsite/backups/restore", map[string]any{"src_rsc_name": "pvc-1", "target_rsc_name": "pvc-2", "node_name": "n2"})
	expect(t, "restore", status, got, http.StatusCreated, lapiconst.MaskInfo)
	w.wait(t)
	data, err := emu.ReadVolumeData("n2", "pvc-2", 0)
	must(t, err)
	if !bytes.Equal(data, changed) {
		t.Error("the restored volume does not hold the data of the latest backup")
	}

	// Schedules: CRUD, enable for the resource, the view of active triples.
	sched := map[string]any{"schedule_name": "nightly", "full_cron": "0 2 * * *", "inc_cron": "0 * * * *", "keep_remote": 1, "on_failure": "RETRY", "max_retries": 2}
	status, got = h.call(t, "POST", "/v1/schedules", sched)
	expect(t, "schedule", status, got, http.StatusOK, lapiconst.Created|lapiconst.MaskCrt|lapiconst.MaskSchedule)
	status, got = h.call(t, "POST", "/v1/schedules", map[string]any{"schedule_name": "broken", "full_cron": "61 * * * *"})
	expect(t, "schedule with a bad cron", status, got, http.StatusInternalServerError, lapiconst.MaskError|lapiconst.MaskSchedule|lapiconst.MaskCrt)
	status, got = h.call(t, "PUT", "/v1/schedules/nightly", map[string]any{"keep_local": 3})
	expect(t, "modify schedule", status, got, http.StatusOK, lapiconst.Modified|lapiconst.MaskMod|lapiconst.MaskSchedule)
	var schedules struct {
		Data []map[string]any `json:"data"`
	}
	h.raw(t, "GET", "/v1/schedules", nil, &schedules)
	if len(schedules.Data) != 1 || schedules.Data[0]["keep_local"] != float64(3) || schedules.Data[0]["on_failure"] != "RETRY" {
		t.Errorf("schedules = %v", schedules)
	}
	status, got = h.call(t, "PUT", "/v1/remotes/offsite/backups/schedule/nightly/enable", map[string]any{"rsc_name": "pvc-1"})
	expect(t, "enable", status, got, http.StatusOK, lapiconst.Modified)
	var byRsc struct {
		Data []map[string]any `json:"data"`
	}
	h.raw(t, "GET", "/v1/view/schedules-by-resource", nil, &byRsc)
	if len(byRsc.Data) != 2 || byRsc.Data[0]["rsc_name"] != "pvc-1" || byRsc.Data[0]["next_exec_inc"] != true ||
		byRsc.Data[1]["rsc_name"] != "pvc-2" || byRsc.Data[1]["reason"] != "none set" {
		t.Errorf("schedules by resource = %v", byRsc.Data)
	}
	var details struct {
		Data []map[string]any `json:"data"`
	}
	h.raw(t, "GET", "/v1/view/schedules-by-resource/pvc-1", nil, &details)
	if len(details.Data) != 1 || details.Data[0]["rsc_dfn"] != true || details.Data[0]["ctrl"] != nil {
		t.Errorf("schedule details = %v", details.Data)
	}
	status, got = h.call(t, "PUT", "/v1/remotes/offsite/backups/schedule/nightly/disable", map[string]any{"rsc_name": "pvc-1"})
	expect(t, "disable", status, got, http.StatusOK, lapiconst.Modified)
	status, got = h.call(t, "DELETE", "/v1/remotes/offsite/backups/schedule/nightly/delete?rsc_dfn_name=pvc-1", nil)
	expect(t, "delete schedule from the resource", status, got, http.StatusOK, lapiconst.Deleted)

	// Deleting the full backup without cascading is refused: the incremental needs it.
	status, got = h.call(t, "DELETE", "/v1/remotes/offsite/backups?id=pvc-1_back_20260301_000000%5Esnap1", nil)
	expect(t, "delete a full backup others are based on", status, got, http.StatusInternalServerError, lapiconst.FailDependendBackup)
	status, got = h.call(t, "DELETE", "/v1/remotes/offsite/backups?id=pvc-1_back_20260301_000000%5Esnap1&cascading=true", nil)
	expect(t, "delete cascading", status, got, http.StatusOK, lapiconst.MaskSuccess|lapiconst.MaskBackup)
	if keys := w.keys(t); len(keys) != 0 {
		t.Errorf("bucket after cascading delete = %q", keys)
	}
	if snaps := emu.Snapshots("pvc-1"); len(snaps) != 0 {
		t.Errorf("local snapshots of deleted backups = %q (the server deletes them with the backups)", snaps)
	}
	status, got = h.call(t, "DELETE", "/v1/remotes/offsite/backups", nil)
	expect(t, "delete without a filter", status, got, http.StatusBadRequest, lapiconst.FailInvldRequest)

	status, got = h.call(t, "DELETE", "/v1/schedules/nightly", nil)
	expect(t, "delete schedule", status, got, http.StatusOK, lapiconst.Deleted|lapiconst.MaskDel|lapiconst.MaskSchedule)
	must(t, h.client.Remote.Delete(ctx, "offsite"))
	status, got = h.call(t, "DELETE", "/v1/remotes?remote_name=offsite", nil)
	expect(t, "delete a missing remote", status, got, http.StatusOK, lapiconst.WarnNotFound|lapiconst.MaskMod|lapiconst.MaskRemote)

	h.conf.report(t)
	for _, op := range []string{"POST /v1/remotes/s3", "GET /v1/remotes", "POST /v1/remotes/{remote_name}/backups", "GET /v1/remotes/{remote_name}/backups",
		"POST /v1/remotes/{remote_name}/backups/restore", "POST /v1/remotes/{remote_name}/backups/info", "DELETE /v1/remotes/{remote_name}/backups", "GET /v1/view/schedules-by-resource",
		"PUT /v1/remotes/{remote_name}/backups/schedule/{schedule_name}/enable", "GET /v1/view/schedules-by-resource/{rscName}"} {
		if h.conf.validated[op] == 0 {
			t.Errorf("%s was not validated against the spec", op)
		}
	}
}

// A restore needs the whole chain: with the full backup's volume object gone (a bucket
// lifecycle rule), the backups are listed as not restorable and a restore of the
// incremental creates no resource.
func TestRestoreNeedsTheWholeChain(t *testing.T) {
	w := newBackupWorld(t, false)
	h, emu, ctx := w.h, w.h.emu, context.Background()
	must(t, h.client.Encryption.Create(ctx, lapi.Passphrase{NewPassphrase: "s3cret"}))
	must(t, emu.PlaceResource("pvc-1", "n1", "thin", false))
	must(t, emu.WriteVolumeData("pvc-1", 0, []byte("first")))
	status, _ := h.call(t, "POST", "/v1/remotes/s3", w.remote("offsite"))
	if status != http.StatusOK {
		t.Fatalf("remote: HTTP %d", status)
	}
	_, err := h.client.Backup.Create(ctx, "offsite", lapi.BackupCreate{RscName: "pvc-1"})
	must(t, err)
	w.wait(t)
	must(t, emu.WriteVolumeData("pvc-1", 0, []byte("second")))
	w.clk.Advance(time.Minute)
	_, err = h.client.Backup.Create(ctx, "offsite", lapi.BackupCreate{RscName: "pvc-1", Incremental: true})
	must(t, err)
	w.wait(t)
	must(t, os.Remove(filepath.Join(w.s3.Dir, bucket, "pvc-1_00000_back_20260301_000000")))

	var list backupList
	h.raw(t, "GET", "/v1/remotes/offsite/backups", nil, &list)
	full, inc := list.Linstor["pvc-1_back_20260301_000000"], list.Linstor["pvc-1_back_20260301_000100"]
	if full.Restorable == nil || *full.Restorable || inc.Restorable == nil || !*inc.Restorable {
		t.Errorf("backups = %+v: the full one should not be restorable (the incremental's own objects are all there)", list)
	}
	status, _ = h.call(t, "POST", "/v1/remotes/offsite/backups/restore", map[string]any{"last_backup": "pvc-1_back_20260301_000100", "target_rsc_name": "pvc-2", "node_name": "n2"})
	if status != http.StatusCreated {
		t.Fatalf("restore: HTTP %d", status)
	}
	w.wait(t)
	if emu.ResourcePlaced("pvc-2", "n2") {
		t.Error("a restore whose full backup is gone created the resource")
	}
	_, failure, ok := emu.SnapshotProps("pvc-2", "back_20260301_000000")
	if !ok || failure == "" {
		t.Errorf("the full backup's snapshot in pvc-2 records no failure (%v)", ok)
	}
}

// A bucket that cannot be reached: the backup is accepted ("in progress"), its
// snapshot's shipping status becomes Failed, nothing of it is listed (the server lists
// only what the bucket holds and shipments still running), and the listing itself
// answers 500 while the endpoint is down.
func TestShipmentToAnUnreachableBucket(t *testing.T) {
	w := newBackupWorld(t, false)
	h, emu, ctx := w.h, w.h.emu, context.Background()
	must(t, h.client.Encryption.Create(ctx, lapi.Passphrase{NewPassphrase: "s3cret"}))
	must(t, emu.PlaceResource("pvc-1", "n1", "thin", false))
	must(t, emu.WriteVolumeData("pvc-1", 0, []byte("data")))
	if status, _ := h.call(t, "POST", "/v1/remotes/s3", w.remote("offsite")); status != http.StatusOK {
		t.Fatalf("remote: HTTP %d", status)
	}
	w.s3.Kill()
	snap, err := h.client.Backup.Create(ctx, "offsite", lapi.BackupCreate{RscName: "pvc-1"})
	must(t, err)
	w.wait(t)
	props, failure, _ := emu.SnapshotProps("pvc-1", snap)
	if props["BackupShipping/Source/offsite/ShippingStatus"] != "Failed" || failure == "" {
		t.Errorf("snapshot props %v, failure %q: want ShippingStatus Failed", props, failure)
	}
	status, got := h.call(t, "GET", "/v1/remotes/offsite/backups", nil)
	expect(t, "list while the endpoint is down", status, got, http.StatusInternalServerError, lapiconst.FailUnknownError)
	must(t, w.s3.Restart(ctx))
	var list backupList
	h.raw(t, "GET", "/v1/remotes/offsite/backups", nil, &list)
	if len(list.Linstor) != 0 {
		t.Errorf("a failed shipment is listed: %+v", list)
	}
}

// A shipment that fails after part of it reached the bucket (the S3 server refuses the
// second volume's object): the first volume's object stays without a meta file, and the
// list shows the backup by it, with shipping and success false from the snapshot's
// Failed status (CtrlBackupApiCallHandler.getBackupFromVolumeKey), its id the full
// backup id, and no fail_messages: the server never writes it (Json.apiToBackup).
// The answer is checked against the spec.
func TestFailedShipmentListedByItsVolumeObjects(t *testing.T) {
	w := newBackupWorld(t, true)
	h, emu, ctx := w.h, w.h.emu, context.Background()
	proxy, err := s3server.StartFaults(w.s3)
	must(t, err)
	t.Cleanup(proxy.Close)
	must(t, h.client.Encryption.Create(ctx, lapi.Passphrase{NewPassphrase: "s3cret"}))
	must(t, emu.PlaceResource("pvc-1", "n1", "thin", false))
	if status, _ := h.call(t, "POST", "/v1/resource-definitions/pvc-1/volume-definitions", map[string]any{"volume_definition": map[string]any{"size_kib": 4096}}); status != http.StatusOK {
		t.Fatalf("second volume: HTTP %d", status)
	}
	must(t, emu.WriteVolumeData("pvc-1", 0, []byte("volume 0")))
	must(t, emu.WriteVolumeData("pvc-1", 1, []byte("volume 1")))
	remote := w.remote("offsite")
	remote["endpoint"] = proxy.Endpoint
	if status, _ := h.call(t, "POST", "/v1/remotes/s3", remote); status != http.StatusOK {
		t.Fatalf("remote: HTTP %d", status)
	}
	must(t, proxy.FailNext(100, http.StatusForbidden, "AccessDenied", func(r *http.Request) bool {
		return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "_00001_")
	}))
	snap, err := h.client.Backup.Create(ctx, "offsite", lapi.BackupCreate{RscName: "pvc-1"})
	must(t, err)
	w.wait(t)
	if keys := w.keys(t); !slices.Equal(keys, []string{"pvc-1_00000_" + snap}) {
		t.Fatalf("bucket = %q, want only the first volume's object", keys)
	}
	var raw map[string]map[string]map[string]any
	h.raw(t, "GET", "/v1/remotes/offsite/backups", nil, &raw)
	got, ok := raw["linstor"]["pvc-1_"+snap]
	if !ok || got["success"] != false || got["shipping"] != false || got["origin_rsc"] != "pvc-1" || got["start_timestamp"] == nil {
		t.Fatalf("backups = %v, want pvc-1_%s with success and shipping false", raw, snap)
	}
	if _, set := got["fail_messages"]; set {
		t.Errorf("fail_messages = %v: the server never writes it", got["fail_messages"])
	}
}

// A schedule fires on the emulator's clock: the first run is the earlier of the next
// full and incremental cron time; after a full, keep_remote deletes the older full
// backups (with what is based on them) from the bucket; a failure with RETRY runs again
// a minute later (ScheduleBackupService.getTimeoutAndType, checkKeepRemote).
func TestScheduledBackupsAndRetention(t *testing.T) {
	w := newBackupWorld(t, false)
	h, emu, ctx := w.h, w.h.emu, context.Background()
	must(t, h.client.Encryption.Create(ctx, lapi.Passphrase{NewPassphrase: "s3cret"}))
	must(t, emu.PlaceResource("pvc-1", "n1", "thin", false))
	must(t, emu.WriteVolumeData("pvc-1", 0, []byte("day 1")))
	if status, _ := h.call(t, "POST", "/v1/remotes/s3", w.remote("offsite")); status != http.StatusOK {
		t.Fatalf("remote: HTTP %d", status)
	}
	h.call(t, "POST", "/v1/schedules", map[string]any{"schedule_name": "nightly", "full_cron": "0 2 * * *", "inc_cron": "0 */6 * * *",
		"keep_remote": 1, "on_failure": "RETRY", "max_retries": 1})
	h.call(t, "PUT", "/v1/remotes/offsite/backups/schedule/nightly/enable", map[string]any{})

	runAt := func(at time.Time) int {
		t.Helper()
		w.clk.mu.Lock()
		w.clk.now = at
		w.clk.mu.Unlock()
		n := emu.RunDueSchedules(ctx)
		w.wait(t)
		return n
	}
	if n := runAt(time.Date(2026, 3, 1, 1, 59, 0, 0, time.UTC)); n != 0 {
		t.Fatalf("%d backups started before 02:00", n)
	}
	if n := runAt(time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)); n != 1 {
		t.Fatalf("%d backups started at 02:00, want the full one", n)
	}
	rds, err := h.client.ResourceDefinitions.GetAll(ctx, lapi.RDGetAllRequest{})
	must(t, err)
	if len(rds) != 1 {
		t.Fatalf("resource definitions = %+v", rds)
	}
	if rd := rds[0]; rd.Props["Schedule/offsite/nightly/LastBackupInc"] != "false" || rd.Props["Schedule/offsite/nightly/LastBackupTime"] == "" {
		t.Errorf("rd props = %v", rd.Props)
	}
	must(t, emu.WriteVolumeData("pvc-1", 0, []byte("day 1, later")))
	if n := runAt(time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC)); n != 1 {
		t.Fatalf("%d backups at 06:00, want the incremental one", n)
	}
	var byRsc struct {
		Data []map[string]any `json:"data"`
	}
	h.raw(t, "GET", "/v1/view/schedules-by-resource?rsc=pvc-1", nil, &byRsc)
	if len(byRsc.Data) != 1 || byRsc.Data[0]["last_snap_inc"] != true ||
		byRsc.Data[0]["next_exec_time"] != float64(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixMilli()) {
		t.Errorf("schedules by resource after the incremental = %v", byRsc.Data)
	}
	must(t, emu.WriteVolumeData("pvc-1", 0, []byte("day 2")))
	for _, at := range []time.Time{time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 18, 0, 0, 0, time.UTC), time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)} {
		runAt(at)
	}
	if n := runAt(time.Date(2026, 3, 2, 2, 0, 0, 0, time.UTC)); n != 1 {
		t.Fatalf("%d backups at day 2 02:00", n)
	}
	// keep_remote 1: day 1's full backup and its incrementals are gone, day 2's stays.
	keys := w.keys(t)
	for _, k := range keys {
		if strings.Contains(k, "back_20260301") {
			t.Errorf("bucket still holds %s after keep_remote=1 (keys %q)", k, keys)
		}
	}
	if !slices.Contains(keys, "pvc-1_back_20260302_020000.meta") {
		t.Errorf("bucket = %q, want day 2's full backup", keys)
	}
	status, _ := h.call(t, "POST", "/v1/remotes/offsite/backups/restore", map[string]any{"src_rsc_name": "pvc-1", "target_rsc_name": "pvc-day2", "node_name": "n2"})
	if status != http.StatusCreated {
		t.Fatalf("restore: HTTP %d", status)
	}
	w.wait(t)
	if data, err := emu.ReadVolumeData("n2", "pvc-day2", 0); err != nil || string(data) != "day 2" {
		t.Errorf("restored %q, %v", data, err)
	}

	// A failure with RETRY runs again a minute later.
	w.s3.Kill()
	if n := runAt(time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)); n != 1 {
		t.Fatalf("%d backups at 06:00", n)
	}
	h.raw(t, "GET", "/v1/view/schedules-by-resource?rsc=pvc-1", nil, &byRsc)
	if want := float64(time.Date(2026, 3, 2, 6, 1, 0, 0, time.UTC).UnixMilli()); len(byRsc.Data) != 1 || byRsc.Data[0]["next_exec_time"] != want {
		t.Errorf("after a failure with RETRY: %v, want next_exec_time %v", byRsc.Data, want)
	}
	must(t, w.s3.Restart(ctx))
	if n := runAt(time.Date(2026, 3, 2, 6, 1, 0, 0, time.UTC)); n != 1 {
		t.Fatalf("%d retries at 06:01", n)
	}
	if keys := w.keys(t); !slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(k, "pvc-1_back_20260302_060100") }) {
		t.Errorf("the retry shipped nothing: %q", keys)
	}
}

// A remote over HTTPS is reached only when the controller trusts the endpoint's CA
// (the JVM's trust store; SetS3Transport here): an unknown CA is "could not be reached".
func TestRemoteOverTLS(t *testing.T) {
	ctx := context.Background()
	s3, err := s3server.Start(ctx, s3server.Options{TLS: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s3.Stop() })
	must(t, s3.CreateBucket(ctx, bucket))
	h, _ := harnessWithNodes(t, false, "10.0.8.", "n1")
	addPool(t, h, "n1")
	must(t, h.client.Encryption.Create(ctx, lapi.Passphrase{NewPassphrase: "s3cret"}))
	remote := map[string]any{"remote_name": "tls", "endpoint": s3.Endpoint, "bucket": bucket, "region": s3.Region, "access_key": s3.AccessKey, "secret_key": s3.SecretKey}
	status, got := h.call(t, "POST", "/v1/remotes/s3", remote)
	expect(t, "remote with an untrusted CA", status, got, http.StatusInternalServerError, lapiconst.FailUnknownError|lapiconst.MaskBackup|lapiconst.MaskMod|lapiconst.MaskRemote)
	h.emu.SetS3Transport(s3.Transport())
	status, got = h.call(t, "POST", "/v1/remotes/s3", remote)
	expect(t, "remote with its CA trusted", status, got, http.StatusOK, lapiconst.Created|lapiconst.MaskRemote|lapiconst.MaskMod)
	must(t, h.emu.PlaceResource("pvc-1", "n1", "thin", false))
	must(t, h.emu.WriteVolumeData("pvc-1", 0, []byte("over tls")))
	_, err = h.client.Backup.Create(ctx, "tls", lapi.BackupCreate{RscName: "pvc-1"})
	must(t, err)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	must(t, h.emu.WaitForBackups(wctx))
	list, err := h.client.Backup.GetAll(ctx, "tls", "", "")
	must(t, err)
	if len(list.Linstor) != 1 {
		t.Errorf("backups over TLS = %+v", list)
	}
}
