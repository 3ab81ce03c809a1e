package emulator

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	lapiconst "github.com/LINBIT/golinstor"
	"github.com/google/uuid"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// s3Remote is an S3 remote (core/objects/remotes/S3Remote). The server stores the
// access and secret key encrypted with the master key (EncryptionHelper.encrypt), so
// nothing about a remote works without an unlocked passphrase; the emulator keeps
// them plain and enforces that rule instead.
type s3Remote struct {
	name, endpoint, bucket, region string
	accessKey, secretKey           string
	usePathStyle                   bool
	uuid                           string
}

// backupState is what the emulator knows about S3 remotes, schedules, snapshots and
// volume contents (remotes.go, backupship.go, schedules.go). It lives in the
// emulator's memory: a controller restart keeps it, Reset forgets it; it is not part
// of the emulated database tables.
type backupState struct {
	remotes   map[string]*s3Remote            // by lower-cased name
	schedules map[string]*schedule            // by lower-cased name
	snapshots map[string]map[string]*snapshot // rd UUID -> lower-cased snapshot name
	// data is each resource's volume content, by rd UUID and volume number: DRBD keeps
	// every diskful replica identical, so one copy stands for all.
	data      map[string]map[int32][]byte
	clusterID string
	transport http.RoundTripper
	// shipping counts shipments and restores running in the background.
	running int
	idle    chan struct{}
	// active are the scheduled shippings (ScheduleBackupService.activeShippings).
	active map[shipKey]*scheduledShipping
	// restoring names the meta files a restore is using (BackupInfoManager.restoreContainsMetaFile).
	restoring map[string]bool
	// dfltRgProps are DfltRscGrp's Schedule/ properties (the emulator's default group
	// has no stored properties of its own).
	dfltRgProps map[string]string
}

func (e *Emulator) bk() *backupState {
	b := &e.backups
	if b.remotes == nil {
		b.remotes = map[string]*s3Remote{}
		b.schedules = map[string]*schedule{}
		b.snapshots = map[string]map[string]*snapshot{}
		b.data = map[string]map[int32][]byte{}
		b.active = map[shipKey]*scheduledShipping{}
		b.restoring = map[string]bool{}
		b.dfltRgProps = map[string]string{}
		b.clusterID = uuid.NewString()
	}
	return b
}

// SetS3Transport sets the HTTP transport the emulated controller and satellites use
// to reach S3 endpoints, for example one trusting a test CA (the JVM's trust store).
func (e *Emulator) SetS3Transport(rt http.RoundTripper) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.bk().transport = rt
}

func (e *Emulator) backupRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/remotes", e.listRemotes)
	mux.HandleFunc("DELETE /v1/remotes", e.deleteRemote)
	mux.HandleFunc("GET /v1/remotes/s3", e.listS3Remotes)
	mux.HandleFunc("POST /v1/remotes/s3", e.createS3Remote)
	mux.HandleFunc("PUT /v1/remotes/s3/{remote}", e.modifyS3Remote)

	mux.HandleFunc("GET /v1/remotes/{remote}/backups", e.listBackups)
	mux.HandleFunc("POST /v1/remotes/{remote}/backups", e.createBackup)
	mux.HandleFunc("DELETE /v1/remotes/{remote}/backups", e.deleteBackups)
	mux.HandleFunc("POST /v1/remotes/{remote}/backups/restore", e.restoreBackup)
	mux.HandleFunc("POST /v1/remotes/{remote}/backups/info", e.backupInfo)
	mux.HandleFunc("PUT /v1/remotes/{remote}/backups/schedule/{schedule}/enable", e.setBackupSchedule(true))
	mux.HandleFunc("PUT /v1/remotes/{remote}/backups/schedule/{schedule}/disable", e.setBackupSchedule(false))
	mux.HandleFunc("DELETE /v1/remotes/{remote}/backups/schedule/{schedule}/delete", e.deleteBackupSchedule)

	mux.HandleFunc("GET /v1/schedules", e.listSchedules)
	mux.HandleFunc("POST /v1/schedules", e.createSchedule)
	mux.HandleFunc("PUT /v1/schedules/{schedule}", e.modifySchedule)
	mux.HandleFunc("DELETE /v1/schedules/{schedule}", e.deleteSchedule)
	mux.HandleFunc("GET /v1/view/schedules-by-resource", e.viewSchedulesByResource)
	mux.HandleFunc("GET /v1/view/schedules-by-resource/{rd}", e.viewScheduleDetails)
}

// Context masks of makeRemoteContext and makeScheduleContext.
const (
	modRemote   = lapiconst.MaskMod | lapiconst.MaskRemote
	crtSchedule = lapiconst.MaskCrt | lapiconst.MaskSchedule
	modSchedule = lapiconst.MaskMod | lapiconst.MaskSchedule
	delSchedule = lapiconst.MaskDel | lapiconst.MaskSchedule
)

// s3RemoteJSON is JsonGenTypes.S3Remote as the server reads it.
type s3RemoteJSON struct {
	RemoteName   string `json:"remote_name,omitempty"`
	Endpoint     string `json:"endpoint,omitempty"`
	Bucket       string `json:"bucket,omitempty"`
	Region       string `json:"region,omitempty"`
	AccessKey    string `json:"access_key,omitempty"`
	SecretKey    string `json:"secret_key,omitempty"`
	UsePathStyle bool   `json:"use_path_style"`
}

// view is Json.apiToS3Remote: name, endpoint, bucket and region; never the keys, and
// use_path_style is never copied, so it is always answered false.
func (r *s3Remote) view() s3RemoteJSON {
	return s3RemoteJSON{RemoteName: r.name, Endpoint: r.endpoint, Bucket: r.bucket, Region: r.region}
}

func (e *Emulator) sortedRemotes() []s3RemoteJSON {
	out := []s3RemoteJSON{}
	for _, r := range e.bk().remotes {
		out = append(out, r.view())
	}
	// RemoteRepository is a map sorted by RemoteName (upper-cased value).
	slices.SortFunc(out, func(a, b s3RemoteJSON) int {
		return strings.Compare(strings.ToUpper(a.RemoteName), strings.ToUpper(b.RemoteName))
	})
	return out
}

// listRemotes answers GET /v1/remotes with one RemoteList object (Remotes.getRemotes);
// empty lists are left out (JsonInclude NON_EMPTY).
func (e *Emulator) listRemotes(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]any{}
	if rs := e.sortedRemotes(); len(rs) > 0 {
		out["s3_remotes"] = rs
	}
	writeJSON(w, http.StatusOK, out)
}

func (e *Emulator) listS3Remotes(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	writeJSON(w, http.StatusOK, e.sortedRemotes())
}

// createS3Remote follows CtrlRemoteApiCallHandler.createS3InTransaction: every field
// but use_path_style is required, the name must be free, the keys are encrypted with
// the master key (refused without one), and the bucket must be listable with the
// given endpoint and keys before anything is committed.
func (e *Emulator) createS3Remote(w http.ResponseWriter, r *http.Request) {
	var in s3RemoteJSON
	if !decode(w, r, &in, http.StatusInternalServerError) {
		return
	}
	var missing []string
	for _, f := range []struct{ v, name string }{{in.RemoteName, "remote_name"}, {in.Endpoint, "endpoint"}, {in.Bucket, "bucket"},
		{in.Region, "region"}, {in.AccessKey, "access_key"}, {in.SecretKey, "secret_key"}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	refs := []string{"Remote", in.RemoteName}
	if len(missing) > 0 {
		what := "parameters are"
		if len(missing) == 1 {
			what = "parameter is"
		}
		writeRC(w, http.StatusOK, rc(lapiconst.FailInvldBackupConfig|lapiconst.MaskBackup|modRemote,
			"The remote could not be created because the following required %s missing: [%s]", what, strings.Join(missing, ", ")).withRefs(refs...))
		return
	}
	if bad := checkNodeName(in.RemoteName); bad != "" {
		writeRC(w, http.StatusOK, rc(lapiconst.FailInvldRemoteName|modRemote, "The given remote name '%s' is invalid.", in.RemoteName).withCause("%s", bad).withRefs(refs...))
		return
	}
	e.mu.Lock()
	b := e.bk()
	if _, ok := b.remotes[strings.ToLower(in.RemoteName)]; ok {
		e.mu.Unlock()
		writeRC(w, http.StatusOK, rc(lapiconst.FailExistsRemote|modRemote,
			"A remote with the name '%s' already exists. Please use a different name or try to modify the remote instead.", in.RemoteName).withRefs(refs...))
		return
	}
	if !e.passphraseOpen {
		e.mu.Unlock()
		writeRC(w, http.StatusOK, noMasterKey("Unable to create encrypt key without having a master key").withRefs(refs...))
		return
	}
	remote := &s3Remote{name: in.RemoteName, endpoint: in.Endpoint, bucket: in.Bucket, region: in.Region,
		accessKey: in.AccessKey, secretKey: in.SecretKey, usePathStyle: in.UsePathStyle, uuid: uuid.NewString()}
	rt := b.transport
	e.mu.Unlock()

	// "check if url and keys work together": one listing of the bucket.
	if _, err := listKeys(r.Context(), remote, rt, ""); err != nil {
		writeRC(w, http.StatusOK, unreachable(err).withRefs(refs...))
		return
	}
	e.mu.Lock()
	b.remotes[strings.ToLower(remote.name)] = remote
	e.mu.Unlock()
	writeRC(w, http.StatusOK, rc(lapiconst.Created|lapiconst.MaskRemote|modRemote, "Remote created").withRefs(refs...))
}

// modifyS3Remote follows changeS3InTransaction: only given (non-empty) fields change,
// the bucket must be listable afterwards, and a successful change answers only the
// satellites' updates (no entry of its own); use_path_style cannot be changed.
func (e *Emulator) modifyS3Remote(w http.ResponseWriter, r *http.Request) {
	var in s3RemoteJSON
	if !decode(w, r, &in, http.StatusInternalServerError) {
		return
	}
	name := r.PathValue("remote")
	refs := []string{"Remote", name}
	e.mu.Lock()
	b := e.bk()
	cur, ok := b.remotes[strings.ToLower(name)]
	if !ok {
		e.mu.Unlock()
		writeRC(w, http.StatusOK, remoteNotRegistered(name).masked(modRemote).withRefs(refs...))
		return
	}
	changed := *cur
	for _, f := range []struct {
		v   string
		dst *string
	}{{in.Endpoint, &changed.endpoint}, {in.Bucket, &changed.bucket}, {in.Region, &changed.region}, {in.AccessKey, &changed.accessKey}, {in.SecretKey, &changed.secretKey}} {
		if f.v != "" {
			*f.dst = f.v
		}
	}
	if (in.AccessKey != "" || in.SecretKey != "") && !e.passphraseOpen {
		e.mu.Unlock()
		writeRC(w, http.StatusOK, noMasterKey("Unable to create encrypt key without having a master key").withRefs(refs...))
		return
	}
	rt := b.transport
	open := e.passphraseOpen
	e.mu.Unlock()
	if !open {
		// backupHandler.listObjects decrypts the keys with the master key, which is not there.
		writeRC(w, http.StatusOK, rc(lapiconst.FailUnknownError|lapiconst.MaskBackup|modRemote, "Decrypting the access key or secret key failed.").withRefs(refs...))
		return
	}
	if _, err := listKeys(r.Context(), &changed, rt, ""); err != nil {
		writeRC(w, http.StatusOK, unreachable(err).withRefs(refs...))
		return
	}
	e.mu.Lock()
	*cur = changed
	e.mu.Unlock()
	writeRC(w, http.StatusOK)
}

// deleteRemote follows CtrlRemoteApiCallHandler.delete: a missing remote is a
// warning; otherwise its schedule tasks end and it is deleted, or only marked while a
// shipment to it runs (the emulator deletes at once: its shipments hold their own
// copy of the remote).
func (e *Emulator) deleteRemote(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("remote_name")
	refs := []string{"Remote", name}
	e.mu.Lock()
	defer e.mu.Unlock()
	b := e.bk()
	remote, ok := b.remotes[strings.ToLower(name)]
	if !ok {
		writeRC(w, http.StatusOK, rc(lapiconst.WarnNotFound|modRemote, "Remote: %s not found.", name).withRefs(refs...))
		return
	}
	for k := range b.active {
		if strings.EqualFold(k.remote, remote.name) {
			delete(b.active, k)
		}
	}
	e.removeScheduleProps(remote.name, "")
	delete(b.remotes, strings.ToLower(name))
	writeRC(w, http.StatusOK, rc(lapiconst.Deleted|modRemote, "Remote: %s marked for deletion.", remote.name).
		withDetails("Remote: %s UUID is: %s", remote.name, remote.uuid).withRefs(refs...))
}

// noMasterKey is EncryptionHelper.encrypt's and CtrlBackupApiHelper.getLocalMasterKey's
// refusal.
func noMasterKey(msg string) apiCallRc {
	return rc(lapiconst.FailNotFoundCryptKey, "%s", msg).withCause("The masterkey was not initialized yet").withCorrection("Create or enter the master passphrase")
}

// unreachable is createS3InTransaction's answer to an SdkClientException (a refused
// connection, wrong keys, a missing bucket alike).
func unreachable(err error) apiCallRc {
	return rc(lapiconst.FailUnknownError|lapiconst.MaskBackup|modRemote,
		"The remote could not be reached with the given parameters and therefore wasn't created.\n"+
			"Please check for spelling errors and that you have the correct access-key and secret-key.\n"+
			"For more information on the error, please check the error-report.").withDetails("%v", err)
}

// s3Timeout is BackupShipping/BackupTimeout's default (5 s) for listings
// (BackupToS3.listObjects); uploads and downloads get more.
const s3Timeout = 5 * time.Second

// client connects to the remote's endpoint with its keys, as BackupToS3.getS3Client
// does with the AWS SDK: path-style requests when asked for, or for an IP address
// (the SDK cannot put a bucket in front of one), virtual-hosted ones otherwise.
func (r *s3Remote) client(rt http.RoundTripper) (*minio.Client, error) {
	u, err := url.Parse(r.endpoint)
	if err != nil || u.Host == "" {
		if u, err = url.Parse("https://" + r.endpoint); err != nil {
			return nil, fmt.Errorf("endpoint %q: %w", r.endpoint, err)
		}
	}
	lookup := minio.BucketLookupDNS
	if r.usePathStyle || net.ParseIP(u.Hostname()) != nil {
		lookup = minio.BucketLookupPath
	}
	if rt == nil {
		rt = http.DefaultTransport
	}
	return minio.New(u.Host, &minio.Options{
		Creds: credentials.NewStaticV4(r.accessKey, r.secretKey, ""), Secure: u.Scheme == "https",
		Region: r.region, BucketLookup: lookup, Transport: rt, MaxRetries: 3, // the AWS SDK's default retries
	})
}

// listKeys lists the bucket's keys with the prefix, every page.
func listKeys(ctx context.Context, r *s3Remote, rt http.RoundTripper, prefix string) ([]string, error) {
	c, err := r.client(rt)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s3Timeout)
	defer cancel()
	var keys []string
	for obj := range c.ListObjects(ctx, r.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			return nil, obj.Err
		}
		keys = append(keys, obj.Key)
	}
	return keys, nil
}

// remoteNotRegistered is CtrlApiDataLoader.loadRemote's refusal (a 404).
func remoteNotRegistered(name string) apiCallRc {
	return rc(lapiconst.FailNotFoundRemote, "Remote '%s' not registered.", name).
		withCause("The specified remote '%s' could not be found in the database", name).
		withCorrection("Create a remote with the name '%s' first.", name)
}

// masked adds the context's masks, as ResponseConverter.reportingExceptions does.
func (r apiCallRc) masked(mask uint64) apiCallRc {
	r.RetCode |= int64(mask)
	return r
}
