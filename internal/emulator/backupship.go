package emulator

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
	"github.com/google/uuid"
	"github.com/minio/minio-go/v7"
)

// Backup shipping to S3 (CtrlBackupCreateApiCallHandler, the satellite's
// BackupShippingS3Service, CtrlBackupApiCallHandler, CtrlBackupRestoreApiCallHandler).
// What reaches the bucket follows the server: the object names (S3VolumeNameInfo,
// S3MetafileNameInfo) and the metadata JSON (BackupMetaDataPojo). The volume objects'
// bytes are the emulator's own: the server ships `thin_send`/`zfs send` streams
// through zstd, which cannot be produced without LVM or ZFS; a full backup object
// holds the volume's content as it is, an incremental one a block delta against its
// base (deltaMagic), so an incremental is only restorable with its whole chain.

// Property keys the server sets (InternalApiConsts, ApiConsts).
const (
	backupSourceNamespc  = "BackupShipping/Source" // BackupShippingUtils.BACKUP_SOURCE_PROPS_NAMESPC
	backupTargetNamespc  = "BackupShipping/Target" // BackupShippingUtils.BACKUP_TARGET_PROPS_NAMESPC
	keyShippingStatus    = "ShippingStatus"
	keyStartTimestamp    = "BackupStartTimestamp"
	keyLastFullBackup    = "LastFullBackupTimestamp" // holds the full backup's snapshot name
	keyLastSnapshot      = "BackupLastSnapshot"
	keyLastStartedQueued = "BackupLastStartedOrQueued"
	keyTargetRemote      = "BackupTargetRemote"
	keySrcNode           = "SrcNode"
	keyBackupToRestore   = "BackupToRestore"
	keyShippedBySchedule = "Schedule/BackupShippedBySchedule"
	statusShipping       = "Shipping"
	statusSuccess        = "Success"
	statusFailed         = "Failed"
	backupDateFormat     = "20060102_150405" // BackupConsts.DATE_FORMAT
)

// snapshot is a snapshot definition with its one shipping snapshot: the emulator
// keeps what backups need (props, creation time, the volumes' content then).
type snapshot struct {
	name    string
	uuid    string
	created time.Time
	node    string
	props   map[string]string
	data    map[int32][]byte
	sizes   map[int32]uint64 // KiB, of the volume definitions then
	// failure is why the last shipment or restore of this snapshot failed.
	failure string
	// done is closed when its shipment (or restore) has ended.
	done chan struct{}
}

func srcNamespc(remote string) string { return backupSourceNamespc + "/" + remote + "/" }

// WriteVolumeData replaces the content of a volume of rd, as a writer on any of its
// replicas would: DRBD keeps the diskful replicas identical.
func (e *Emulator) WriteVolumeData(rd string, vol int32, data []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	def, ok := e.rds[strings.ToLower(rd)]
	if !ok {
		return fmt.Errorf("resource definition %q not found", rd)
	}
	if !slices.ContainsFunc(def.volumes, func(v lapi.VolumeDefinition) bool { return v.VolumeNumber != nil && *v.VolumeNumber == vol }) {
		return fmt.Errorf("resource definition %q has no volume %d", rd, vol)
	}
	b := e.bk()
	if b.data[def.Uuid] == nil {
		b.data[def.Uuid] = map[int32][]byte{}
	}
	b.data[def.Uuid][vol] = bytes.Clone(data)
	return nil
}

// ReadVolumeData reads a volume of rd on a node holding its data.
func (e *Emulator) ReadVolumeData(nodeName, rd string, vol int32) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	def, ok := e.rds[strings.ToLower(rd)]
	if !ok {
		return nil, fmt.Errorf("resource definition %q not found", rd)
	}
	rep := def.resources[nodeName]
	if rep == nil || !rep.holdsData() {
		return nil, fmt.Errorf("resource %q has no data on node %q", rd, nodeName)
	}
	return bytes.Clone(e.bk().data[def.Uuid][vol]), nil
}

// Snapshots names rd's snapshots, oldest first.
func (e *Emulator) Snapshots(rd string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	def, ok := e.rds[strings.ToLower(rd)]
	if !ok {
		return nil
	}
	var out []string
	for _, s := range e.sortedSnapshots(def) {
		out = append(out, s.name)
	}
	return out
}

// SnapshotProps returns a snapshot definition's properties (its shipping status under
// BackupShipping/Source/<remote>/ShippingStatus) and the failure of its last shipment.
func (e *Emulator) SnapshotProps(rd, snap string) (map[string]string, string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	def, ok := e.rds[strings.ToLower(rd)]
	if !ok {
		return nil, "", false
	}
	s := e.bk().snapshots[def.Uuid][strings.ToLower(snap)]
	if s == nil {
		return nil, "", false
	}
	return maps.Clone(s.props), s.failure, true
}

// WaitForBackups waits until no shipment or restore runs in the background.
func (e *Emulator) WaitForBackups(ctx context.Context) error {
	for {
		e.mu.Lock()
		b := e.bk()
		if b.running == 0 {
			e.mu.Unlock()
			return nil
		}
		if b.idle == nil {
			b.idle = make(chan struct{})
		}
		idle := b.idle
		e.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (e *Emulator) startBackground() { e.bk().running++ }

func (e *Emulator) endBackground() {
	b := e.bk()
	b.running--
	if b.running == 0 && b.idle != nil {
		close(b.idle)
		b.idle = nil
	}
}

func (e *Emulator) sortedSnapshots(def *resourceDefinition) []*snapshot {
	out := slices.Collect(maps.Values(e.bk().snapshots[def.Uuid]))
	sort.Slice(out, func(i, j int) bool { return out[i].created.Before(out[j].created) })
	return out
}

// Object names: S3VolumeNameInfo.toString and S3MetafileNameInfo.toString. The
// emulator sets no BackupShipping/S3KeySuffix (a satellite-config property), so the
// suffix is always empty; the snapshot name follows '^' unless it is the backup id.
var (
	metaNamePattern   = regexp.MustCompile(`^(?P<rsc>[a-zA-Z0-9_-]{2,48})_(?P<id>back_[0-9]{8}_[0-9]{6})(?:|(?P<suffix>:?.+?))(?P<snap>\^.*)?\.meta$`)
	volumeNamePattern = regexp.MustCompile(`^(?P<rsc>[a-zA-Z0-9_-]{2,48})(?P<layer>\..+)?_(?P<vlm>[0-9]{5})_(?P<id>back_[0-9]{8}_[0-9]{6})(?P<suffix>:?.+?)?(?P<snap>\^.*)?$`)
)

type backupName struct {
	rsc, id, suffix, snap string
	vlm                   int32
	time                  time.Time
}

func newBackupName(rsc string, start time.Time, snap string) backupName {
	id := "back_" + start.UTC().Format(backupDateFormat)
	if snap == "" {
		snap = id
	}
	return backupName{rsc: rsc, id: id, snap: snap, time: start.UTC().Truncate(time.Second)}
}

func (n backupName) snapPart() string {
	if n.snap != "" && n.snap != n.id {
		return "^" + n.snap
	}
	return ""
}

// fullID is S3MetafileNameInfo.toFullBackupId: the meta file's name without ".meta".
func (n backupName) fullID() string  { return n.rsc + "_" + n.id + n.suffix + n.snapPart() }
func (n backupName) metaKey() string { return n.fullID() + ".meta" }

func (n backupName) volumeKey(vlm int32) string {
	return fmt.Sprintf("%s_%05d_%s%s%s", n.rsc, vlm, n.id, n.suffix, n.snapPart())
}

func parseBackupName(re *regexp.Regexp, key string) (backupName, bool) {
	m := re.FindStringSubmatch(key)
	if m == nil {
		return backupName{}, false
	}
	get := func(g string) string { return m[re.SubexpIndex(g)] }
	n := backupName{rsc: get("rsc"), id: get("id"), suffix: get("suffix"), snap: strings.TrimPrefix(get("snap"), "^")}
	if n.snap == "" {
		n.snap = n.id
	}
	t, err := time.ParseInLocation(backupDateFormat, strings.TrimPrefix(n.id, "back_"), time.UTC)
	if err != nil {
		return backupName{}, false
	}
	n.time = t
	if re == volumeNamePattern {
		if get("layer") != "" {
			return backupName{}, false // only the data layer's volumes are shipped (RscLayerSuffixes.shouldSuffixBeShipped)
		}
		v, _ := strconv.Atoi(get("vlm"))
		n.vlm = int32(v)
	}
	return n, true
}

// backupMeta is BackupMetaDataPojo as Jackson writes it (JsonInclude NON_NULL).
type backupMeta struct {
	RscName         string                        `json:"rscName"`
	NodeName        string                        `json:"nodeName"`
	StartTimestamp  int64                         `json:"startTimestamp"`
	FinishTimestamp int64                         `json:"finishTimestamp"`
	BasedOn         string                        `json:"basedOn,omitempty"`
	LayerData       metaLayer                     `json:"layerData"`
	RscDfn          metaRscDfn                    `json:"rscDfn"`
	Rsc             metaRsc                       `json:"rsc"`
	Backups         map[string][]backupMetaVolume `json:"backups"`
	ClusterID       string                        `json:"clusterId"`
	SnapDfnUUID     string                        `json:"snapDfnUuid"`
}

// metaLayer is a reduced RscLayerDataApi: the layer kinds, top first, and each
// volume's storage pool (the server writes the full layer pojo).
type metaLayer struct {
	Kind     string            `json:"kind"`
	Children []metaLayer       `json:"children,omitempty"`
	Volumes  []metaLayerVolume `json:"volumeList,omitempty"`
}

type metaLayerVolume struct {
	VlmNr                 int32  `json:"vlmNr"`
	StorPoolName          string `json:"storPoolName"`
	ProviderKind          string `json:"providerKind,omitempty"`
	SnapshotAllocatedSize int64  `json:"snapshotAllocatedSize"`
	SnapshotUsableSize    int64  `json:"snapshotUsableSize"`
}

type metaRscDfn struct {
	SnapDfnProps map[string]string     `json:"snapDfnProps"`
	RscDfnProps  map[string]string     `json:"rscDfnProps"`
	Flags        int64                 `json:"flags"`
	VlmDfns      map[string]metaVlmDfn `json:"vlmDfns"`
}

type metaVlmDfn struct {
	SnapVlmDfnProps map[string]string `json:"snapVlmDfnProps"`
	VlmDfnProps     map[string]string `json:"vlmDfnProps"`
	Flags           int64             `json:"flags"`
	Size            uint64            `json:"size"`
}

type metaRsc struct {
	SnapProps map[string]string  `json:"snapProps"`
	RscProps  map[string]string  `json:"rscProps"`
	Flags     int64              `json:"flags"`
	Vlms      map[string]metaVlm `json:"vlms"`
}

type metaVlm struct {
	SnapVlmProps map[string]string `json:"snapVlmProps"`
	VlmProps     map[string]string `json:"vlmProps"`
	Flags        int64             `json:"flags"`
}

type backupMetaVolume struct {
	Name              string `json:"name"`
	FinishedTimestamp int64  `json:"finishedTimestamp"`
	Node              string `json:"node"`
}

// deltaMagic starts an incremental volume object: the volume's new length, then each
// changed 4 KiB block as offset, length and bytes (the emulator's own format).
var deltaMagic = []byte("LINSTOR-EMU-DELTA1\n")

const deltaBlock = 4096

func makeDelta(base, cur []byte) []byte {
	out := bytes.NewBuffer(append([]byte(nil), deltaMagic...))
	_ = binary.Write(out, binary.BigEndian, uint64(len(cur)))
	for off := 0; off < len(cur); off += deltaBlock {
		end := min(off+deltaBlock, len(cur))
		if end <= len(base) && bytes.Equal(base[off:end], cur[off:end]) {
			continue
		}
		_ = binary.Write(out, binary.BigEndian, uint64(off))
		_ = binary.Write(out, binary.BigEndian, uint32(end-off))
		out.Write(cur[off:end])
	}
	return out.Bytes()
}

func applyDelta(base, delta []byte) ([]byte, error) {
	if !bytes.HasPrefix(delta, deltaMagic) {
		return nil, errors.New("not an incremental volume object")
	}
	rd := bytes.NewReader(delta[len(deltaMagic):])
	var size uint64
	if err := binary.Read(rd, binary.BigEndian, &size); err != nil {
		return nil, err
	}
	out := make([]byte, size)
	copy(out, base)
	for rd.Len() > 0 {
		var off uint64
		var n uint32
		if err := binary.Read(rd, binary.BigEndian, &off); err != nil {
			return nil, err
		}
		if err := binary.Read(rd, binary.BigEndian, &n); err != nil {
			return nil, err
		}
		if off+uint64(n) > size {
			return nil, errors.New("delta block beyond the volume")
		}
		if _, err := io.ReadFull(rd, out[off:off+uint64(n)]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// backupCreateJSON is JsonGenTypes.BackupCreate.
type backupCreateJSON struct {
	RscName     string `json:"rsc_name"`
	NodeName    string `json:"node_name,omitempty"`
	SnapName    string `json:"snap_name,omitempty"`
	Incremental *bool  `json:"incremental,omitempty"`
	DstSnapName string `json:"dst_snap_name,omitempty"`
}

// createBackup answers POST /v1/remotes/{remote}/backups (Backups.createBackup: 201).
func (e *Emulator) createBackup(w http.ResponseWriter, r *http.Request) {
	var in backupCreateJSON
	if !decode(w, r, &in, http.StatusInternalServerError) {
		return
	}
	rcs := e.startBackup(r.Context(), in.RscName, in.SnapName, r.PathValue("remote"), in.NodeName, "", in.Incremental != nil && *in.Incremental)
	writeRC(w, http.StatusCreated, rcs...)
}

// startBackup is CtrlBackupCreateApiCallHandler.backupSnapshot for an S3 remote: it
// takes a snapshot, chooses the node that ships it and starts the shipment in the
// background; the answer says "in progress", and the outcome shows in the bucket, in
// the snapshot's ShippingStatus and in the schedule's next run.
func (e *Emulator) startBackup(ctx context.Context, rscName, snapName, remoteName, prefNode, scheduleName string, incremental bool) []apiCallRc {
	var rcs []apiCallRc
	now := e.now()
	if snapName == "" {
		snapName = "back_" + now.UTC().Format(backupDateFormat)
		rcs = append(rcs, rc(lapiconst.MaskInfo, "Generated snapshot name for backup of resource%s to remote %s", rscName, remoteName))
	}
	e.mu.Lock()
	def, remote, fail := e.backupTargets(rscName, remoteName)
	if fail != nil {
		e.mu.Unlock()
		return append(rcs, *fail)
	}
	b := e.bk()
	if b.snapshots[def.Uuid][strings.ToLower(snapName)] != nil {
		e.mu.Unlock()
		// Shipping an existing snapshot again is not modelled.
		return append(rcs, rc(lapiconst.FailExistsSnapshot, "Snapshot '%s' of resource '%s' already exists.", snapName, rscName))
	}
	// getIncrementalBase: the snapshot last started or queued to this remote, if it
	// still exists; a shipped one only if its backup is still in the bucket.
	var prev *snapshot
	if incremental {
		if name := def.Props[srcNamespc(remote.name)+keyLastStartedQueued]; name != "" {
			prev = b.snapshots[def.Uuid][strings.ToLower(name)]
		}
	}
	remoteCopy, rt, open := *remote, b.transport, e.passphraseOpen
	e.mu.Unlock()

	if prev != nil && prev.props[srcNamespc(remote.name)+keyShippingStatus] == statusSuccess {
		if !open {
			return append(rcs, noMasterKey("Unable to decrypt the S3 access key and secret key without having a master key"))
		}
		found, err := e.backupInBucket(ctx, &remoteCopy, rt, prev.uuid)
		if err != nil {
			return append(rcs, exceptionThrown(err))
		}
		if !found {
			prev = nil // "the previous backup ... has already been deleted. Creating a full backup instead."
		}
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	def, remote, fail = e.backupTargets(rscName, remoteName)
	if fail != nil {
		return append(rcs, *fail)
	}
	var holders []string
	for _, n := range slices.Sorted(maps.Keys(def.resources)) {
		if def.resources[n].holdsData() {
			holders = append(holders, n)
		}
	}
	if len(holders) == 0 {
		return append(rcs, rc(lapiconst.FailNotFoundRsc|lapiconst.MaskSnapshot, "No diskful resource of '%s' to take a snapshot of.", rscName))
	}
	// ensureMasterKeyIsUnlockedIfNeeded: an S3 remote always needs it.
	if !e.passphraseOpen {
		return append(rcs, rc(lapiconst.FailInvldCryptPassphrase,
			"Backup shipping requires a set up encryption. Please use 'linstor encryption create-passphrase' or '... enter-passphrase'"))
	}
	ns := srcNamespc(remote.name)
	snap := &snapshot{name: snapName, uuid: uuid.NewString(), created: now, props: map[string]string{}, data: map[int32][]byte{},
		sizes: map[int32]uint64{}, done: make(chan struct{})}
	for _, vd := range def.volumes {
		if vd.VolumeNumber == nil {
			continue
		}
		snap.data[*vd.VolumeNumber] = bytes.Clone(b.data[def.Uuid][*vd.VolumeNumber])
		snap.sizes[*vd.VolumeNumber] = vd.SizeKib
	}
	// setBackupSnapDfnProps, setStartBackupProps, setIncrementalDependentProps.
	if scheduleName != "" {
		snap.props[keyShippedBySchedule] = scheduleName
	}
	snap.props[ns+keyStartTimestamp] = strconv.FormatInt(now.UnixMilli(), 10)
	snap.props[ns+keyTargetRemote] = remote.name
	if def.Props == nil {
		def.Props = map[string]string{}
	}
	schedNs := "Schedule/" + remote.name + "/" + scheduleName + "/"
	if prev == nil {
		snap.props[ns+keyLastFullBackup] = snapName
		if scheduleName != "" {
			def.Props[schedNs+"LastBackupInc"] = "false"
		}
	} else {
		snap.props[ns+keyLastFullBackup] = prev.props[ns+keyLastFullBackup]
		if scheduleName != "" {
			def.Props[schedNs+"LastBackupInc"] = "true"
		}
	}
	if scheduleName != "" {
		def.Props[schedNs+"LastBackupTime"] = strconv.FormatInt(now.UnixMilli(), 10)
	}
	def.Props[ns+keyLastStartedQueued] = snapName
	if b.snapshots[def.Uuid] == nil {
		b.snapshots[def.Uuid] = map[string]*snapshot{}
	}
	b.snapshots[def.Uuid][strings.ToLower(snapName)] = snap

	node := holders[0]
	if slices.Contains(holders, prefNode) {
		node = prefNode
	}
	snap.node = node
	rcs = append(rcs, rc(lapiconst.Created|lapiconst.MaskSnapshot, "New snapshot '%s' of resource '%s' registered.", snapName, def.Name).withRefs("RscDfn", def.Name, "Snapshot", snapName),
		rc(lapiconst.MaskInfo, "Shipping of resource %s to remote %s in progress.", def.Name, remote.name).withRefs("Snapshot", snapName))
	e.startBackground()
	go e.ship(def.Name, def.Uuid, snap, prev, remoteCopy, rt, scheduleName)
	return rcs
}

// backupTargets loads the resource definition and the S3 remote a backup needs, with
// the server's refusals (CtrlApiDataLoader.loadRscDfn, CtrlBackupApiHelper.getS3Remote).
func (e *Emulator) backupTargets(rscName, remoteName string) (*resourceDefinition, *s3Remote, *apiCallRc) {
	def, ok := e.rds[strings.ToLower(rscName)]
	if !ok {
		f := rc(lapiconst.FailNotFoundRscDfn, "Resource definition '%s' not found.", rscName).withRefs("RscDfn", rscName)
		return nil, nil, &f
	}
	remote, f := e.s3RemoteOrFail(remoteName)
	if f != nil {
		return nil, nil, f
	}
	return def, remote, nil
}

func (e *Emulator) s3RemoteOrFail(name string) (*s3Remote, *apiCallRc) {
	if name == "" {
		f := rc(lapiconst.FailInvldRemoteName|lapiconst.MaskBackup, "No remote name was given. Please provide a valid remote name.")
		return nil, &f
	}
	remote, ok := e.bk().remotes[strings.ToLower(name)]
	if !ok {
		f := rc(lapiconst.FailNotFoundRemote|lapiconst.MaskBackup, "The remote %s does not exist. Please provide a valid remote or create a new one.", name)
		return nil, &f
	}
	return remote, nil
}

// exceptionThrown is RequestHelper's answer to an exception it does not know, such as
// the AWS SDK's: FAIL_UNKNOWN_ERROR "Exception thrown." with the exception's message.
func exceptionThrown(err error) apiCallRc {
	return rc(lapiconst.FailUnknownError, "Exception thrown.").withDetails("%v", err)
}

// backupInBucket reports whether a meta file in the bucket was written from the
// snapshot with this UUID (loadAllLinstorS3Objects, matched by snapDfnUuid).
func (e *Emulator) backupInBucket(ctx context.Context, remote *s3Remote, rt http.RoundTripper, snapUUID string) (bool, error) {
	keys, err := listKeys(ctx, remote, rt, "")
	if err != nil {
		return false, err
	}
	for _, k := range keys {
		if _, ok := parseBackupName(metaNamePattern, k); !ok {
			continue
		}
		meta, err := readMeta(ctx, remote, rt, k)
		if err == nil && meta.SnapDfnUUID == snapUUID {
			return true, nil
		}
	}
	return false, nil
}

func readMeta(ctx context.Context, remote *s3Remote, rt http.RoundTripper, key string) (*backupMeta, error) {
	raw, err := getObject(ctx, remote, rt, key)
	if err != nil {
		return nil, err
	}
	var m backupMeta
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

const s3TransferTimeout = 2 * time.Minute

func getObject(ctx context.Context, remote *s3Remote, rt http.RoundTripper, key string) ([]byte, error) {
	c, err := remote.client(rt)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s3TransferTimeout)
	defer cancel()
	obj, err := c.GetObject(ctx, remote.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	return io.ReadAll(obj)
}

func putObject(ctx context.Context, remote *s3Remote, rt http.RoundTripper, key string, data []byte) error {
	c, err := remote.client(rt)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s3TransferTimeout)
	defer cancel()
	_, err = c.PutObject(ctx, remote.bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{})
	return err
}

// ship is the satellite's shipment: it waits for the shipment of its incremental base
// (the server queues a backup whose base is still shipping), uploads each volume, then
// the meta file (BackupShippingS3Service.preCtrlNotifyBackupShipped: only after every
// volume arrived), and reports Success or Failed; a scheduled backup is then
// rescheduled and its retention applied (CtrlBackupShippingSentInternalCallHandler).
func (e *Emulator) ship(rscName, rdUUID string, snap, prev *snapshot, remote s3Remote, rt http.RoundTripper, scheduleName string) {
	defer func() {
		e.mu.Lock()
		close(snap.done)
		e.endBackground()
		e.mu.Unlock()
	}()
	if prev != nil {
		<-prev.done
	}
	ns := srcNamespc(remote.name)
	e.mu.Lock()
	snap.props[ns+keyShippingStatus] = statusShipping
	snap.props[ns+keySrcNode] = snap.node
	if prev != nil {
		snap.props[ns+keyLastSnapshot] = prev.name
	}
	start, _ := strconv.ParseInt(snap.props[ns+keyStartTimestamp], 10, 64)
	e.mu.Unlock()

	name := newBackupName(rscName, time.UnixMilli(start), snap.name)
	ctx := context.Background()
	meta := backupMeta{RscName: rscName, NodeName: snap.node, StartTimestamp: start, Backups: map[string][]backupMetaVolume{},
		SnapDfnUUID: snap.uuid}
	if prev != nil {
		prevStart, _ := strconv.ParseInt(prev.props[ns+keyStartTimestamp], 10, 64)
		meta.BasedOn = newBackupName(rscName, time.UnixMilli(prevStart), prev.name).metaKey()
	}
	err := func() error {
		for _, vol := range slices.Sorted(maps.Keys(snap.data)) {
			content := snap.data[vol]
			if prev != nil {
				content = makeDelta(prev.data[vol], content)
			}
			key := name.volumeKey(vol)
			if err := putObject(ctx, &remote, rt, key, content); err != nil {
				return fmt.Errorf("volume %d: %w", vol, err)
			}
			meta.Backups[strconv.Itoa(int(vol))] = []backupMetaVolume{{Name: key, FinishedTimestamp: e.now().UnixMilli(), Node: snap.node}}
		}
		e.mu.Lock()
		e.fillMeta(&meta, rscName, rdUUID, snap)
		e.mu.Unlock()
		meta.FinishTimestamp = e.now().UnixMilli()
		raw, err := json.Marshal(meta)
		if err != nil {
			return err
		}
		return putObject(ctx, &remote, rt, name.metaKey(), raw)
	}()

	e.mu.Lock()
	if err != nil {
		snap.props[ns+keyShippingStatus] = statusFailed
		snap.failure = err.Error()
	} else {
		snap.props[ns+keyShippingStatus] = statusSuccess
	}
	e.mu.Unlock()
	if scheduleName != "" {
		e.afterScheduledShipment(rscName, remote, scheduleName, snap, err == nil)
	}
}

// fillMeta is BackupShippingUtils.getBackupMetaDataPojo with what the emulator knows.
// Holds e.mu.
func (e *Emulator) fillMeta(meta *backupMeta, rscName, rdUUID string, snap *snapshot) {
	meta.ClusterID = e.bk().clusterID
	meta.RscDfn = metaRscDfn{SnapDfnProps: maps.Clone(snap.props), RscDfnProps: map[string]string{}, VlmDfns: map[string]metaVlmDfn{}}
	meta.Rsc = metaRsc{SnapProps: map[string]string{}, RscProps: map[string]string{}, Vlms: map[string]metaVlm{}}
	// getSnapDfnProps: every shipping status reads "uploading metadata".
	for k := range meta.RscDfn.SnapDfnProps {
		if strings.HasPrefix(k, "BackupShipping/") && strings.HasSuffix(k, "/"+keyShippingStatus) {
			meta.RscDfn.SnapDfnProps[k] = "Uploading Metadata"
		}
	}
	pool, kind := "", ""
	layers := defaultLayers
	if def, ok := e.rds[strings.ToLower(rscName)]; ok && def.Uuid == rdUUID {
		maps.Copy(meta.RscDfn.RscDfnProps, def.Props)
		if rep := def.resources[snap.node]; rep != nil {
			pool, layers = rep.pool, rep.layerStack()
			maps.Copy(meta.Rsc.RscProps, rep.props)
			if n, ok := e.nodes[strings.ToLower(snap.node)]; ok && n.pools[strings.ToLower(pool)] != nil {
				kind = string(n.pools[strings.ToLower(pool)].ProviderKind)
			}
		}
	}
	var vols []metaLayerVolume
	for vol, size := range snap.sizes {
		key := strconv.Itoa(int(vol))
		meta.RscDfn.VlmDfns[key] = metaVlmDfn{SnapVlmDfnProps: map[string]string{}, VlmDfnProps: map[string]string{}, Size: size}
		meta.Rsc.Vlms[key] = metaVlm{SnapVlmProps: map[string]string{}, VlmProps: map[string]string{}}
		// A thin snapshot allocates what was written; the emulator's volumes hold only
		// what WriteVolumeData wrote.
		vols = append(vols, metaLayerVolume{VlmNr: vol, StorPoolName: pool, ProviderKind: kind,
			SnapshotAllocatedSize: (int64(len(snap.data[vol])) + 1023) / 1024, SnapshotUsableSize: int64(size)})
	}
	slices.SortFunc(vols, func(a, b metaLayerVolume) int { return int(a.VlmNr - b.VlmNr) })
	var layer *metaLayer
	for i := len(layers) - 1; i >= 0; i-- {
		l := metaLayer{Kind: string(layers[i])}
		if layer == nil {
			l.Volumes = vols
		} else {
			l.Children = []metaLayer{*layer}
		}
		layer = &l
	}
	meta.LayerData = *layer
}

// backupJSON is JsonGenTypes.Backup (NON_EMPTY: false is written, null is not). Its
// fail_messages is left out: declared in JsonGenTypes, but Json.apiToBackup never sets
// it (v1.33.3), so a failed shipment says only success and shipping false.
type backupJSON struct {
	ID                string             `json:"id"`
	StartTime         string             `json:"start_time,omitempty"`
	StartTimestamp    *int64             `json:"start_timestamp,omitempty"`
	FinishedTime      string             `json:"finished_time,omitempty"`
	FinishedTimestamp *int64             `json:"finished_timestamp,omitempty"`
	OriginRsc         string             `json:"origin_rsc"`
	OriginSnap        string             `json:"origin_snap,omitempty"`
	OriginNode        string             `json:"origin_node,omitempty"`
	Vlms              []backupVolumeJSON `json:"vlms"`
	Success           *bool              `json:"success,omitempty"`
	Shipping          *bool              `json:"shipping,omitempty"`
	Restorable        *bool              `json:"restorable,omitempty"`
	S3                *backupS3JSON      `json:"s3,omitempty"`
	BasedOnID         string             `json:"based_on_id,omitempty"`
}

type backupVolumeJSON struct {
	VlmNr             int64            `json:"vlm_nr"`
	FinishedTime      string           `json:"finished_time,omitempty"`
	FinishedTimestamp *int64           `json:"finished_timestamp,omitempty"`
	S3                *backupVolS3JSON `json:"s3,omitempty"`
}

type backupVolS3JSON struct {
	Key string `json:"key,omitempty"`
}

type backupS3JSON struct {
	MetaName string `json:"meta_name,omitempty"`
}

func fmtMillis(ms int64) string { return time.UnixMilli(ms).UTC().Format(backupDateFormat) }

// listBackups answers GET /v1/remotes/{remote}/backups (CtrlBackupApiCallHandler.listBackups):
// every meta file with its volumes, then volume objects without a meta file (with the
// state of their local snapshot), then local shipments not visible yet; every other
// key is in "other". A bucket that cannot be listed is a 500.
func (e *Emulator) listBackups(w http.ResponseWriter, r *http.Request) {
	rscFilter, snapFilter := r.URL.Query().Get("rsc_name"), r.URL.Query().Get("snap_name")
	e.mu.Lock()
	remote, fail := e.s3RemoteOrFail(r.PathValue("remote"))
	if fail != nil {
		e.mu.Unlock()
		writeStatus(w, http.StatusInternalServerError, *fail) // RequestHelper.doInScope: an ApiRcException is a 500
		return
	}
	if !e.passphraseOpen {
		e.mu.Unlock()
		writeStatus(w, http.StatusInternalServerError, noMasterKey("Unable to decrypt the S3 access key and secret key without having a master key"))
		return
	}
	remoteCopy, rt := *remote, e.bk().transport
	e.mu.Unlock()

	keys, err := listKeys(r.Context(), &remoteCopy, rt, rscFilter)
	if err != nil {
		writeStatus(w, http.StatusInternalServerError, exceptionThrown(err))
		return
	}
	all := map[string]bool{}
	for _, k := range keys {
		all[k] = true
	}
	linstor := map[string]backupJSON{}
	used := map[string]bool{}
	for _, k := range keys {
		info, ok := parseBackupName(metaNamePattern, k)
		if !ok || snapFilter != "" && !strings.EqualFold(snapFilter, info.snap) {
			continue
		}
		meta, err := readMeta(r.Context(), &remoteCopy, rt, k)
		if err != nil {
			continue // logged by the server, left out of both lists
		}
		bk := backupJSON{ID: strings.TrimSuffix(k, ".meta"), OriginRsc: info.rsc, OriginSnap: info.snap, OriginNode: meta.NodeName,
			StartTime: fmtMillis(meta.StartTimestamp), StartTimestamp: ptrTo(meta.StartTimestamp),
			FinishedTime: fmtMillis(meta.FinishTimestamp), FinishedTimestamp: ptrTo(meta.FinishTimestamp),
			Shipping: ptrTo(false), Success: ptrTo(true), S3: &backupS3JSON{MetaName: k}, BasedOnID: meta.BasedOn, Vlms: []backupVolumeJSON{}}
		restorable := true
		for _, vol := range slices.Sorted(maps.Keys(meta.Backups)) {
			for _, v := range meta.Backups[vol] {
				vinfo, ok := parseBackupName(volumeNamePattern, v.Name)
				switch {
				case !all[v.Name]:
					restorable = false // the meta file names a volume the bucket does not hold
				case !ok || strconv.Itoa(int(vinfo.vlm)) != vol:
					restorable = false
				default:
					bk.Vlms = append(bk.Vlms, backupVolumeJSON{VlmNr: int64(vinfo.vlm), FinishedTime: fmtMillis(v.FinishedTimestamp),
						FinishedTimestamp: ptrTo(v.FinishedTimestamp), S3: &backupVolS3JSON{Key: v.Name}})
					used[v.Name] = true
				}
			}
		}
		bk.Restorable = ptrTo(restorable)
		linstor[bk.ID] = bk
		used[k] = true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, k := range keys {
		if used[k] {
			continue
		}
		info, ok := parseBackupName(volumeNamePattern, k)
		if !ok || snapFilter != "" && !strings.EqualFold(snapFilter, info.snap) {
			continue
		}
		bk := e.backupFromVolumeKeys(info, keys, used, e.localSnapshot(info.rsc, info.snap), remoteCopy.name)
		linstor[bk.ID] = bk
		used[k] = true
	}
	// Shipments under way that are not in the bucket yet. The server's filters here are
	// inverted (a given rsc_name skips that resource, a snap_name keeps only others);
	// the emulator does the same.
	for _, def := range e.rds {
		if rscFilter != "" && strings.EqualFold(def.Name, rscFilter) {
			continue
		}
		for _, s := range e.sortedSnapshots(def) {
			if s.props[srcNamespc(remoteCopy.name)+keyShippingStatus] != statusShipping {
				continue
			}
			if snapFilter != "" && strings.EqualFold(snapFilter, s.name) {
				continue
			}
			start, _ := strconv.ParseInt(s.props[srcNamespc(remoteCopy.name)+keyStartTimestamp], 10, 64)
			name := newBackupName(def.Name, time.UnixMilli(start), s.name)
			var future []string
			for _, vol := range slices.Sorted(maps.Keys(s.sizes)) {
				future = append(future, name.volumeKey(vol))
			}
			if len(future) == 0 {
				continue
			}
			first, _ := parseBackupName(volumeNamePattern, future[0])
			bk := e.backupFromVolumeKeys(first, future, used, s, remoteCopy.name)
			linstor[bk.ID] = bk
			used[future[0]] = true
		}
	}
	other := []string{}
	for _, k := range keys {
		if !used[k] {
			other = append(other, k)
		}
	}
	out := map[string]any{}
	if len(linstor) > 0 {
		out["linstor"] = linstor
	}
	if len(other) > 0 {
		out["other"] = map[string]any{"files": other}
	} else {
		out["other"] = map[string]any{}
	}
	writeJSON(w, http.StatusOK, out)
}

// localSnapshot is backupHelper.loadSnapDfnIfExists. Holds e.mu.
func (e *Emulator) localSnapshot(rsc, snap string) *snapshot {
	def, ok := e.rds[strings.ToLower(rsc)]
	if !ok {
		return nil
	}
	return e.bk().snapshots[def.Uuid][strings.ToLower(snap)]
}

// backupFromVolumeKeys is getBackupFromVolumeKey: volume objects without a meta file,
// grouped by resource and backup id, with shipping/success from the local snapshot's
// status (both unset without one; both false for a failed shipment). Holds e.mu.
func (e *Emulator) backupFromVolumeKeys(info backupName, keys []string, used map[string]bool, snap *snapshot, remote string) backupJSON {
	first := info.volumeKey(info.vlm)
	vlms := map[int32]backupVolumeJSON{info.vlm: {VlmNr: int64(info.vlm), S3: &backupVolS3JSON{Key: first}}}
	for _, k := range keys {
		if used[k] || k == first {
			continue
		}
		other, ok := parseBackupName(volumeNamePattern, k)
		if ok && other.rsc == info.rsc && other.id == info.id {
			vlms[other.vlm] = backupVolumeJSON{VlmNr: int64(other.vlm), S3: &backupVolS3JSON{Key: k}}
			used[k] = true
		}
	}
	bk := backupJSON{ID: info.fullID(), OriginRsc: info.rsc, OriginSnap: info.snap, StartTime: info.time.Format(backupDateFormat),
		StartTimestamp: ptrTo(info.time.UnixMilli()), Restorable: ptrTo(false)}
	for _, v := range slices.Sorted(maps.Keys(vlms)) {
		bk.Vlms = append(bk.Vlms, vlms[v])
	}
	if snap != nil {
		status := snap.props[srcNamespc(remote)+keyShippingStatus]
		switch status {
		case statusShipping:
			bk.Shipping, bk.OriginNode = ptrTo(true), snap.node
		case statusSuccess:
			bk.Shipping, bk.Success, bk.OriginNode = ptrTo(false), ptrTo(true), snap.node
		default:
			bk.Shipping, bk.Success = ptrTo(false), ptrTo(false)
		}
	}
	return bk
}

// s3Object is CtrlBackupApiHelper.S3ObjectInfo: a key, its meta file if it is one,
// what it references and what references it.
type s3Object struct {
	key          string
	exists       bool
	meta         *backupMeta
	references   []*s3Object
	referencedBy []*s3Object
	snap         *snapshot
	snapRsc      string
}

// loadLinstorObjects is loadAllLinstorS3Objects: every meta file, the volumes it
// names, the meta files based on it, and the local snapshot it came from (same UUID).
func (e *Emulator) loadLinstorObjects(ctx context.Context, remote *s3Remote, rt http.RoundTripper) (map[string]*s3Object, error) {
	keys, err := listKeys(ctx, remote, rt, "")
	if err != nil {
		return nil, err
	}
	objs := map[string]*s3Object{}
	get := func(k string) *s3Object {
		if objs[k] == nil {
			objs[k] = &s3Object{key: k}
		}
		return objs[k]
	}
	for _, k := range keys {
		info, ok := parseBackupName(metaNamePattern, k)
		if !ok {
			continue
		}
		meta, err := readMeta(ctx, remote, rt, k)
		if err != nil {
			continue
		}
		o := get(k)
		o.exists, o.meta = true, meta
		for _, vols := range meta.Backups {
			for _, v := range vols {
				child := get(v.Name)
				child.referencedBy = append(child.referencedBy, o)
				o.references = append(o.references, child)
			}
		}
		if meta.BasedOn != "" {
			base := get(meta.BasedOn)
			base.referencedBy = append(base.referencedBy, o)
			o.references = append(o.references, base)
		}
		e.mu.Lock()
		if s := e.localSnapshot(info.rsc, info.snap); s != nil && s.uuid == meta.SnapDfnUUID {
			o.snap, o.snapRsc = s, info.rsc
		}
		e.mu.Unlock()
	}
	for _, k := range keys {
		if o, ok := objs[k]; ok {
			o.exists = true
		}
	}
	return objs, nil
}

type toDelete struct {
	keys     map[string]bool
	notFound map[string]bool
	snaps    map[*snapshot]string // -> resource name
	rcs      []apiCallRc
	fail     *apiCallRc
}

// addToDeleteList: a meta file with its volumes, and (cascading) every backup based on
// it; without cascading, a dependent backup refuses the whole deletion.
func (d *toDelete) add(o *s3Object, cascading bool) {
	if o.meta == nil || d.fail != nil {
		return
	}
	d.keys[o.key] = true
	for _, child := range o.references {
		if child.meta != nil {
			continue // never upwards
		}
		if child.exists {
			d.keys[child.key] = true
		} else {
			d.notFound[child.key] = true
		}
	}
	for _, dep := range o.referencedBy {
		if !dep.exists || dep.meta == nil {
			continue
		}
		if !cascading {
			f := rc(lapiconst.FailDependendBackup, "%s should be deleted, but at least %s is referencing it. Use --cascading to delete recursively", o.key, dep.key)
			d.fail = &f
			return
		}
		d.add(dep, cascading)
	}
	if o.snap != nil {
		d.snaps[o.snap] = o.snapRsc
	}
}

// deleteBackups answers DELETE /v1/remotes/{remote}/backups (Backups.deleteBackups,
// CtrlBackupApiCallHandler.deleteBackupInTransaction).
func (e *Emulator) deleteBackups(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	flag := func(k string) bool { v, _ := strconv.ParseBool(q.Get(k)); return v }
	id, idPrefix, s3key := q.Get("id"), q.Get("id_prefix"), q.Get("s3key")
	timestamp, rscName, nodeName := q.Get("timestamp"), q.Get("resource_name"), q.Get("node_name")
	cascading, all, allLocal, dryRun, keepSnaps := flag("cascading"), flag("all"), flag("all_local_cluster"), flag("dryrun"), flag("keep_snaps")
	combination := 0
	for i, set := range []bool{cascading, id != "", idPrefix != "", s3key != "", timestamp != "" || rscName != "" || nodeName != "", all, allLocal} {
		if set {
			combination |= 1 << i
		}
	}
	if c := combination &^ 1; c == 0 || c&(c-1) != 0 {
		msg := "Too many parameters given. You can only use the following parameters in combination: id and cascading; s3key and cascading; " +
			"since, resource_name and node_name in any combination; all other parameters can only be used on their own."
		if combination == 0 {
			msg = "You have to specify which backups you want to delete. Use 'all' to delete all backups in the specified bucket"
		}
		writeStatus(w, http.StatusBadRequest, rc(lapiconst.FailInvldRequest, "%s", msg))
		return
	}
	rcs, err := e.deleteBackupsOf(r.Context(), r.PathValue("remote"), deleteFilter{id: id, idPrefix: idPrefix, s3key: s3key, timestamp: timestamp,
		rscName: rscName, nodeName: nodeName, cascading: cascading, all: all, allLocal: allLocal, dryRun: dryRun, keepSnaps: keepSnaps})
	if err != nil {
		rcs = append(rcs, exceptionThrown(err))
	}
	writeRC(w, http.StatusOK, rcs...)
}

type deleteFilter struct {
	id, idPrefix, s3key, timestamp, rscName, nodeName string
	cascading, all, allLocal, dryRun, keepSnaps       bool
}

func (e *Emulator) deleteBackupsOf(ctx context.Context, remoteName string, f deleteFilter) ([]apiCallRc, error) {
	e.mu.Lock()
	remote, fail := e.s3RemoteOrFail(remoteName)
	if fail != nil {
		e.mu.Unlock()
		return []apiCallRc{*fail}, nil
	}
	if !e.passphraseOpen {
		e.mu.Unlock()
		return []apiCallRc{noMasterKey("Unable to decrypt the S3 access key and secret key without having a master key")}, nil
	}
	remoteCopy, rt, clusterID := *remote, e.bk().transport, e.bk().clusterID
	e.mu.Unlock()
	objs, err := e.loadLinstorObjects(ctx, &remoteCopy, rt)
	if err != nil {
		return nil, err
	}
	d := &toDelete{keys: map[string]bool{}, notFound: map[string]bool{}, snaps: map[*snapshot]string{}}
	byKeys := func(keys []string, cascading bool) {
		for _, k := range keys {
			if o := objs[k]; o != nil && o.exists {
				d.add(o, cascading)
			} else {
				d.notFound[k] = true
			}
		}
	}
	switch {
	case f.id != "" || f.idPrefix != "":
		prefix, multi := f.idPrefix, true
		if f.id != "" {
			prefix, multi = f.id, false
			if !strings.HasSuffix(prefix, ".meta") {
				prefix += ".meta"
			}
		}
		var match []string
		for k := range objs {
			if strings.HasPrefix(k, prefix) {
				match = append(match, k)
			}
		}
		sort.Strings(match)
		switch {
		case len(match) == 0:
			what := ""
			if multi {
				what = "prefix "
			}
			d.rcs = append(d.rcs, rc(lapiconst.WarnNotFound, "No backup with id %s'%s' found on remote '%s'", what, prefix, remoteCopy.name))
		case len(match) > 1 && !multi:
			d.rcs = append(d.rcs, rc(lapiconst.FailNotFoundBackup, "Ambigious id '%s' for remote '%s':\n  %s\n", prefix, remoteCopy.name, strings.Join(match, "\n  ")))
		default:
			byKeys(match, f.cascading)
		}
	case f.s3key != "":
		byKeys([]string{f.s3key}, f.cascading)
		d.keys[f.s3key] = true
		delete(d.notFound, f.s3key)
	case f.timestamp != "" || f.rscName != "" || f.nodeName != "":
		var before time.Time
		if f.timestamp != "" {
			t, err := time.ParseInLocation(backupDateFormat, f.timestamp, time.UTC)
			if err != nil {
				return []apiCallRc{rc(lapiconst.FailInvldTimeParam, "Failed to parse '%s'. Expected format: YYYYMMDD_HHMMSS (e.g. 20210824_072543)", f.timestamp)}, nil
			}
			before = t
		}
		var match []string
		for k, o := range objs {
			info, ok := parseBackupName(metaNamePattern, k)
			if o.meta == nil || !ok {
				continue
			}
			if (f.nodeName == "" || strings.EqualFold(f.nodeName, o.meta.NodeName)) && (f.rscName == "" || strings.EqualFold(f.rscName, o.meta.RscName)) &&
				(f.timestamp == "" || before.After(info.time)) {
				match = append(match, k)
			}
		}
		sort.Strings(match)
		byKeys(match, f.cascading)
	case f.all:
		byKeys(slices.Sorted(maps.Keys(objs)), true)
	case f.allLocal:
		var match []string
		for k, o := range objs {
			if o.meta != nil && o.meta.ClusterID == clusterID {
				match = append(match, k)
			}
		}
		sort.Strings(match)
		byKeys(match, true)
	}
	if d.fail != nil {
		return []apiCallRc{*d.fail}, nil
	}
	if f.keepSnaps {
		d.snaps = map[*snapshot]string{}
	}
	var rcs []apiCallRc
	keys := slices.Sorted(maps.Keys(d.keys))
	if f.dryRun {
		if len(keys) > 0 {
			rcs = append(rcs, rc(0, "Would delete s3 objects:\n  %s\n", strings.Join(keys, "\n  ")))
		}
		if len(d.snaps) > 0 {
			var lines []string
			for s, rsc := range d.snaps {
				lines = append(lines, "Resource: "+rsc+", Snapshot: "+s.name)
			}
			sort.Strings(lines)
			rcs = append(rcs, rc(0, "Would delete Snapshots:\n  %s\n", strings.Join(lines, "\n  ")))
		}
		if len(rcs) == 0 {
			rcs = append(rcs, rc(0, "Dryrun mode. Although nothing selected for deletion"))
		}
	} else {
		deleted := keys
		if len(keys) == 0 {
			rcs = append(rcs, rc(lapiconst.InfoNoop|lapiconst.MaskBackup, "Could not find any backups to delete."))
		} else if failed := removeObjects(ctx, &remoteCopy, rt, keys); len(failed) > 0 {
			rcs = append(rcs, rc(lapiconst.FailUnknownError|lapiconst.MaskBackup, "Could not delete [%s]", strings.Join(failed, ", ")))
			deleted = slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return slices.Contains(failed, k) })
		}
		rcs = append(rcs, rc(lapiconst.MaskSuccess|lapiconst.MaskBackup, "Successfully deleted [%s]", strings.Join(deleted, ", ")))
		e.mu.Lock()
		for s, rsc := range d.snaps {
			e.dropSnapshot(rsc, s)
		}
		e.mu.Unlock()
	}
	if len(d.notFound) > 0 {
		rcs = append(rcs, rc(lapiconst.WarnNotFound, "The following S3 keys were not found in the given remote:\n  %s\n", strings.Join(slices.Sorted(maps.Keys(d.notFound)), "\n  ")))
	}
	return append(rcs, d.rcs...), nil
}

// removeObjects deletes keys and returns those it could not delete.
func removeObjects(ctx context.Context, remote *s3Remote, rt http.RoundTripper, keys []string) []string {
	c, err := remote.client(rt)
	if err != nil {
		return keys
	}
	var failed []string
	for _, k := range keys {
		ctx, cancel := context.WithTimeout(ctx, s3Timeout)
		if err := c.RemoveObject(ctx, remote.bucket, k, minio.RemoveObjectOptions{}); err != nil {
			failed = append(failed, k)
		}
		cancel()
	}
	return failed
}

// dropSnapshot deletes a local snapshot (CtrlSnapshotDeleteApiCallHandler). Holds e.mu.
func (e *Emulator) dropSnapshot(rsc string, s *snapshot) {
	if def, ok := e.rds[strings.ToLower(rsc)]; ok {
		delete(e.bk().snapshots[def.Uuid], strings.ToLower(s.name))
	}
}

// backupRestoreJSON is JsonGenTypes.BackupRestore.
type backupRestoreJSON struct {
	SrcRscName    string            `json:"src_rsc_name,omitempty"`
	SrcSnapName   string            `json:"src_snap_name,omitempty"`
	LastBackup    string            `json:"last_backup,omitempty"`
	StorPoolMap   map[string]string `json:"stor_pool_map,omitempty"`
	TargetRscName string            `json:"target_rsc_name"`
	Passphrase    string            `json:"passphrase,omitempty"`
	NodeName      string            `json:"node_name"`
	DownloadOnly  bool              `json:"download_only,omitempty"`
	ForceRestore  bool              `json:"force_restore,omitempty"`
	DstRscGrp     string            `json:"dst_rsc_grp,omitempty"`
	ForceMvRscGrp bool              `json:"force_mv_rsc_grp,omitempty"`
}

type chainLink struct {
	name backupName
	key  string
	meta *backupMeta
}

// restoreBackup answers POST /v1/remotes/{remote}/backups/restore
// (CtrlBackupRestoreApiCallHandler.restoreBackupInTransaction: 201): the node must be
// connected; the backup is last_backup, or the latest of src_rsc_name (and
// src_snap_name); its chain is followed through basedOn down to the full backup; the
// target resource definition gets one snapshot per link, and in the background the
// node downloads the chain from the full backup up and, unless download_only or the
// target already has resources, the resource is created on the node with the data.
func (e *Emulator) restoreBackup(w http.ResponseWriter, r *http.Request) {
	var in backupRestoreJSON
	if !decode(w, r, &in, http.StatusInternalServerError) {
		return
	}
	ctx := r.Context()
	e.mu.Lock()
	n, ok := e.nodes[strings.ToLower(in.NodeName)]
	if !ok {
		e.mu.Unlock()
		writeRC(w, http.StatusCreated, rc(lapiconst.FailNotFoundNode, "Node '%s' not found.", in.NodeName).withRefs("Node", in.NodeName))
		return
	}
	if e.connectionStatus(n) != "ONLINE" {
		e.mu.Unlock()
		writeRC(w, http.StatusCreated, rc(lapiconst.FailNotConnected, "No active connection to satellite '%s'.", n.Name).
			withDetails("Backups cannot be restored when the corresponding satellite is not connected."))
		return
	}
	nodeName := n.Name
	remote, fail := e.s3RemoteOrFail(r.PathValue("remote"))
	if fail != nil {
		e.mu.Unlock()
		writeRC(w, http.StatusCreated, *fail)
		return
	}
	if !e.passphraseOpen {
		e.mu.Unlock()
		writeRC(w, http.StatusCreated, noMasterKey("Unable to decrypt the S3 access key and secret key without having a master key"))
		return
	}
	remoteCopy, rt := *remote, e.bk().transport
	e.mu.Unlock()

	var toRestore backupName
	var found bool
	var keys []string
	var err error
	if in.LastBackup != "" {
		metaName := in.LastBackup
		if !strings.HasSuffix(metaName, ".meta") {
			metaName += ".meta"
		}
		if toRestore, found = parseBackupName(metaNamePattern, metaName); !found {
			writeRC(w, http.StatusCreated, rc(lapiconst.FailInvldBackupConfig|lapiconst.MaskBackup,
				"The target backup %s is invalid since it does not match the pattern of '<rscName>_back_YYYYMMDD_HHMMSS[optional-backup-s3-suffix][^snapshot-name][.meta] "+
					"(e.g. my-rsc_back_20210824_072543)'. Please provide a valid target backup, or provide only the source resource name to "+
					"restore to the latest backup of that resource.", in.LastBackup))
			return
		}
		keys, err = listKeys(ctx, &remoteCopy, rt, toRestore.rsc)
	} else {
		keys, err = listKeys(ctx, &remoteCopy, rt, in.SrcRscName)
		if err == nil {
			toRestore, found = latestBackup(keys, in.SrcSnapName)
		}
	}
	if err != nil {
		writeRC(w, http.StatusCreated, exceptionThrown(err))
		return
	}
	if !found || !slices.Contains(keys, toRestore.metaKey()) {
		what := "null"
		if found {
			what = toRestore.metaKey()
		}
		writeRC(w, http.StatusCreated, rc(lapiconst.FailInvldBackupConfig|lapiconst.MaskBackup,
			"The target backup %s is invalid since it does not exist in the given remote %s. "+
				"Please provide a valid target backup, or provide only the source resource name to restore to the latest backup of that resource.",
			what, remoteCopy.name))
		return
	}
	// 3a: follow the chain down to the full backup.
	var chain []chainLink
	for cur, key := toRestore, toRestore.metaKey(); ; {
		meta, err := readMeta(ctx, &remoteCopy, rt, key)
		if err != nil {
			writeRC(w, http.StatusCreated, rc(lapiconst.FailUnknownError|lapiconst.MaskBackup, "Failed to parse meta file %s", key).withDetails("%v", err))
			return
		}
		chain = append(chain, chainLink{name: cur, key: key, meta: meta})
		if meta.BasedOn == "" {
			break
		}
		next, ok := parseBackupName(metaNamePattern, meta.BasedOn)
		if !ok {
			writeRC(w, http.StatusCreated, rc(lapiconst.FailUnknownError|lapiconst.MaskBackup, "Failed to parse meta file %s", meta.BasedOn))
			return
		}
		cur, key = next, meta.BasedOn
	}
	rcs, start := e.registerRestore(&in, nodeName, toRestore, chain, remoteCopy.name)
	if start {
		go e.download(in, nodeName, toRestore.metaKey(), chain, remoteCopy, rt)
	}
	writeRC(w, http.StatusCreated, rcs...)
}

// latestBackup is CtrlBackupApiHelper.getLatestBackup.
func latestBackup(keys []string, snapName string) (backupName, bool) {
	var latest backupName
	found := false
	for _, k := range keys {
		cur, ok := parseBackupName(metaNamePattern, k)
		if !ok || snapName != "" && snapName != cur.snap {
			continue
		}
		if !found || latest.time.Before(cur.time) {
			latest, found = cur, true
		}
	}
	return latest, found
}

// registerRestore checks the target and creates the resource definition, its volume
// definitions (sizes from the full backup's metadata) and the snapshots to receive.
func (e *Emulator) registerRestore(in *backupRestoreJSON, nodeName string, toRestore backupName, chain []chainLink, remoteName string) ([]apiCallRc, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	b := e.bk()
	if b.restoring[toRestore.metaKey()] {
		return []apiCallRc{rc(lapiconst.FailInUse|lapiconst.MaskBackup, "The meta-file %s is currently being used in a restore.", toRestore.metaKey())}, false
	}
	full := chain[len(chain)-1].meta
	pool := ""
	for l := &full.LayerData; l != nil; {
		if len(l.Volumes) > 0 {
			pool = l.Volumes[0].StorPoolName
		}
		if len(l.Children) == 0 {
			break
		}
		l = &l.Children[0]
	}
	if mapped, ok := in.StorPoolMap[pool]; ok {
		pool = mapped
	}
	if _, ok := e.nodes[strings.ToLower(nodeName)].pools[strings.ToLower(pool)]; !ok {
		return []apiCallRc{rc(lapiconst.FailNotFoundStorPool, "Storage pool '%s' on node '%s' not found.", pool, nodeName).withRefs("StorPool", pool, "Node", nodeName)}, false
	}
	var rcs []apiCallRc
	def, exists := e.rds[strings.ToLower(in.TargetRscName)]
	if exists {
		for _, link := range chain {
			if b.snapshots[def.Uuid][strings.ToLower(link.name.snap)] != nil {
				return []apiCallRc{rc(lapiconst.FailExistsSnapshot|lapiconst.MaskBackup,
					"The requested backup has already been downloaded to this cluster. Please use 'snapshot resource restore' to get a resource.")}, false
			}
		}
		if len(def.resources) > 0 && !in.DownloadOnly {
			rcs = append(rcs, rc(lapiconst.WarnBackupDlOnly, "The target resource-definition is already deployed on nodes. "+
				"After downloading the Backup Linstor will NOT restore the data to prevent unintentional data-loss."))
			in.DownloadOnly = true
		}
	} else {
		if bad := checkName(in.TargetRscName, 2, 48, "-"); bad != "" {
			return []apiCallRc{rc(lapiconst.FailInvldRscName, "The given resource name '%s' is invalid.", in.TargetRscName).withCause("%s", bad)}, false
		}
		def = &resourceDefinition{ResourceDefinition: lapi.ResourceDefinition{Name: in.TargetRscName, Uuid: uuid.NewString(), ResourceGroupName: "DfltRscGrp",
			Props: map[string]string{}}, resources: map[string]*replica{}}
		for k, v := range full.RscDfn.RscDfnProps {
			if !strings.HasPrefix(k, "BackupShipping/") && !strings.HasPrefix(k, "Schedule/") {
				def.Props[k] = v
			}
		}
		for _, vol := range slices.Sorted(maps.Keys(full.RscDfn.VlmDfns)) {
			nr, _ := strconv.Atoi(vol)
			def.volumes = append(def.volumes, lapi.VolumeDefinition{VolumeNumber: ptrTo(int32(nr)), SizeKib: full.RscDfn.VlmDfns[vol].Size, Uuid: uuid.NewString()})
		}
		slices.SortFunc(def.volumes, func(a, b lapi.VolumeDefinition) int { return int(*a.VolumeNumber - *b.VolumeNumber) })
		e.rds[strings.ToLower(def.Name)] = def
	}
	if b.snapshots[def.Uuid] == nil {
		b.snapshots[def.Uuid] = map[string]*snapshot{}
	}
	for _, link := range chain {
		s := &snapshot{name: link.name.snap, uuid: uuid.NewString(), created: e.now(), node: nodeName, data: map[int32][]byte{},
			props: map[string]string{backupTargetNamespc + "/" + keyBackupToRestore: link.key}, done: make(chan struct{})}
		b.snapshots[def.Uuid][strings.ToLower(s.name)] = s
	}
	b.restoring[toRestore.metaKey()] = true
	e.startBackground()
	return append(rcs, rc(lapiconst.MaskInfo, "Restoring backup of resource %s from remote %s into resource %s in progress.",
		toRestore.rsc, remoteName, in.TargetRscName)), true
}

// download receives the chain, full backup first, applying each incremental on top,
// and creates the resource on the node from the last snapshot.
func (e *Emulator) download(in backupRestoreJSON, nodeName, metaKey string, chain []chainLink, remote s3Remote, rt http.RoundTripper) {
	defer func() {
		e.mu.Lock()
		delete(e.bk().restoring, metaKey)
		e.endBackground()
		e.mu.Unlock()
	}()
	ctx := context.Background()
	data := map[int32][]byte{}
	var failure error
	for i := len(chain) - 1; i >= 0 && failure == nil; i-- {
		link := chain[i]
		for vol, entries := range link.meta.Backups {
			nr, _ := strconv.Atoi(vol)
			for _, v := range entries {
				raw, err := getObject(ctx, &remote, rt, v.Name)
				if err != nil {
					failure = fmt.Errorf("%s: %w", v.Name, err)
					break
				}
				if link.meta.BasedOn == "" {
					data[int32(nr)] = raw
				} else if data[int32(nr)], err = applyDelta(data[int32(nr)], raw); err != nil {
					failure = fmt.Errorf("%s: %w", v.Name, err)
				}
			}
		}
		e.mu.Lock()
		if def, ok := e.rds[strings.ToLower(in.TargetRscName)]; ok {
			if s := e.bk().snapshots[def.Uuid][strings.ToLower(link.name.snap)]; s != nil {
				s.data = maps.Clone(data)
				status := statusSuccess
				if failure != nil {
					status, s.failure = statusFailed, failure.Error()
				}
				s.props[backupTargetNamespc+"/"+keyShippingStatus] = status
			}
		}
		e.mu.Unlock()
	}
	if failure != nil || in.DownloadOnly {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	def, ok := e.rds[strings.ToLower(in.TargetRscName)]
	if !ok || len(def.resources) > 0 {
		return
	}
	pool := ""
	full := chain[len(chain)-1].meta
	for l := &full.LayerData; l != nil; {
		if len(l.Volumes) > 0 {
			pool = l.Volumes[0].StorPoolName
		}
		if len(l.Children) == 0 {
			break
		}
		l = &l.Children[0]
	}
	if mapped, ok := in.StorPoolMap[pool]; ok {
		pool = mapped
	}
	if err := e.placeResourceLocked(def.Name, nodeName, pool); err != nil {
		return
	}
	e.bk().data[def.Uuid] = data
}

// placeResourceLocked places a diskful replica of an existing resource definition, as
// the snapshot restore does at the end of a backup restore. Holds e.mu.
func (e *Emulator) placeResourceLocked(rd, nodeName, pool string) error {
	n, ok := e.nodes[strings.ToLower(nodeName)]
	if !ok {
		return fmt.Errorf("node %q not found", nodeName)
	}
	def := e.rds[strings.ToLower(rd)]
	rep := &replica{pool: pool, diskState: "UpToDate"}
	if len(def.layers) == 0 {
		def.layers = rep.layerStack()
	}
	def.resources[n.Name] = rep
	e.addLayerData(def, n.Name, rep)
	e.noteWrites()
	return nil
}

// backupInfoRequestJSON is JsonGenTypes.BackupInfoRequest.
type backupInfoRequestJSON struct {
	SrcRscName  string            `json:"src_rsc_name,omitempty"`
	SrcSnapName string            `json:"src_snap_name,omitempty"`
	LastBackup  string            `json:"last_backup,omitempty"`
	StorPoolMap map[string]string `json:"stor_pool_map,omitempty"`
	NodeName    string            `json:"node_name,omitempty"`
}

type backupInfoVolumeJSON struct {
	Name          string `json:"name,omitempty"`
	LayerType     string `json:"layer_type"`
	DlSizeKib     *int64 `json:"dl_size_kib,omitempty"`
	AllocSizeKib  *int64 `json:"alloc_size_kib,omitempty"`
	UsableSizeKib *int64 `json:"usable_size_kib,omitempty"`
}

type backupInfoStorPoolJSON struct {
	Name              string                 `json:"name"`
	ProviderKind      string                 `json:"provider_kind,omitempty"`
	TargetName        string                 `json:"target_name,omitempty"`
	RemainingSpaceKib *int64                 `json:"remaining_space_kib,omitempty"`
	Vlms              []backupInfoVolumeJSON `json:"vlms"`
}

type backupInfoJSON struct {
	Rsc          string                   `json:"rsc"`
	Snap         string                   `json:"snap,omitempty"`
	Full         string                   `json:"full"`
	Latest       string                   `json:"latest"`
	Count        int32                    `json:"count"`
	DlSizeKib    int64                    `json:"dl_size_kib"`
	AllocSizeKib int64                    `json:"alloc_size_kib"`
	Storpools    []backupInfoStorPoolJSON `json:"storpools"`
}

// backupInfo answers POST /v1/remotes/{remote}/backups/info (backupInfoInTransaction):
// the backup to restore (last_backup, or the latest of src_rsc_name), its chain's
// length, the full backup's meta file, what a restore downloads (each volume object,
// in KiB) and allocates (the full backup's snapshots), and per storage pool, with
// node_name, the space left on the target pool (stor_pool_map) after the restore.
func (e *Emulator) backupInfo(w http.ResponseWriter, r *http.Request) {
	var in backupInfoRequestJSON
	if !decode(w, r, &in, http.StatusInternalServerError) {
		return
	}
	remoteName := r.PathValue("remote")
	e.mu.Lock()
	remote, fail := e.s3RemoteOrFail(remoteName)
	if fail == nil && !e.passphraseOpen {
		f := noMasterKey("Unable to decrypt the S3 access key and secret key without having a master key")
		fail = &f
	}
	if fail != nil {
		e.mu.Unlock()
		writeRC(w, http.StatusOK, *fail)
		return
	}
	remoteCopy, rt := *remote, e.bk().transport
	e.mu.Unlock()
	ctx := r.Context()
	var target backupName
	var found bool
	prefix := in.SrcRscName
	if in.LastBackup != "" {
		metaName := in.LastBackup
		if !strings.HasSuffix(metaName, ".meta") {
			metaName += ".meta"
		}
		if target, found = parseBackupName(metaNamePattern, metaName); !found {
			writeRC(w, http.StatusOK, rc(lapiconst.FailInvldBackupConfig|lapiconst.MaskBackup,
				"The target backup %s is invalid since it does not match the pattern of '<rscName>_back_YYYYMMDD_HHMMSS[optional-backup-s3-suffix][^snapshot-name][.meta]' "+
					"(e.g. my-rsc_back_20210824_072543).Please provide a valid target backup, or provide only the source resource name "+
					"to restore to the latest backup of that resource.", metaName))
			return
		}
		prefix = target.rsc
	}
	c, err := remoteCopy.client(rt)
	if err != nil {
		writeRC(w, http.StatusOK, exceptionThrown(err))
		return
	}
	lctx, cancel := context.WithTimeout(ctx, s3Timeout)
	defer cancel()
	sizes := map[string]int64{}
	var keys []string
	for obj := range c.ListObjects(lctx, remoteCopy.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			writeRC(w, http.StatusOK, exceptionThrown(obj.Err))
			return
		}
		keys = append(keys, obj.Key)
		sizes[obj.Key] = obj.Size
	}
	if in.LastBackup == "" {
		target, found = latestBackup(keys, in.SrcSnapName)
	}
	if !found {
		writeRC(w, http.StatusOK, rc(lapiconst.FailNotFoundBackup|lapiconst.MaskBackup, "Could not find a matching backup for resource '%s', snapshot '%s' and id '%s' in remote '%s'",
			in.SrcRscName, in.SrcSnapName, in.LastBackup, remoteName))
		return
	}
	if _, ok := sizes[target.metaKey()]; !ok {
		writeRC(w, http.StatusOK, rc(lapiconst.FailNotFoundSnapshotDfn|lapiconst.MaskBackup, "Could not find the needed meta-file with the name '%s' in remote '%s'",
			target.metaKey(), remoteName))
		return
	}
	out := backupInfoJSON{Rsc: target.rsc, Snap: target.snap, Latest: target.fullID(), Storpools: []backupInfoStorPoolJSON{}}
	pools := map[string]*backupInfoStorPoolJSON{}
	var order []string
	first := true
	for key := target.metaKey(); key != ""; first = false {
		meta, err := readMeta(ctx, &remoteCopy, rt, key)
		if err != nil {
			writeRC(w, http.StatusOK, rc(lapiconst.FailUnknownError|lapiconst.MaskBackup, "Failed to parse meta file %s", key))
			return
		}
		out.Count++
		if meta.BasedOn == "" {
			out.Full = key
		}
		key = meta.BasedOn
		for l := &meta.LayerData; l != nil; {
			for _, v := range l.Volumes {
				p := pools[v.StorPoolName]
				if p == nil {
					target := v.StorPoolName
					if mapped, ok := in.StorPoolMap[target]; ok {
						target = mapped
					}
					p = &backupInfoStorPoolJSON{Name: v.StorPoolName, ProviderKind: v.ProviderKind, TargetName: target, Vlms: []backupInfoVolumeJSON{}}
					pools[v.StorPoolName] = p
					order = append(order, v.StorPoolName)
				}
				vol := backupInfoVolumeJSON{LayerType: "STORAGE"}
				for _, b := range meta.Backups[strconv.Itoa(int(v.VlmNr))] {
					vol.Name = b.Name
				}
				if first {
					vol.AllocSizeKib, vol.UsableSizeKib = ptrTo(v.SnapshotAllocatedSize), ptrTo(v.SnapshotUsableSize)
					out.AllocSizeKib += v.SnapshotAllocatedSize
				}
				if size, ok := sizes[vol.Name]; ok {
					vol.DlSizeKib = ptrTo((size + 1023) / 1024)
					out.DlSizeKib += *vol.DlSizeKib
				}
				p.Vlms = append(p.Vlms, vol)
			}
			if len(l.Children) == 0 {
				break
			}
			l = &l.Children[0]
		}
	}
	e.mu.Lock()
	for _, name := range order {
		p := pools[name]
		if n, ok := e.nodes[strings.ToLower(in.NodeName)]; ok && in.NodeName != "" {
			if sp := n.pools[strings.ToLower(p.TargetName)]; sp != nil {
				left := sp.FreeCapacity
				for _, v := range p.Vlms {
					if v.AllocSizeKib != nil {
						left -= *v.AllocSizeKib
					}
					if v.DlSizeKib != nil {
						left -= *v.DlSizeKib
					}
				}
				p.RemainingSpaceKib = &left
			}
		}
		out.Storpools = append(out.Storpools, *p)
	}
	e.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}
