package emulator

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	lapiconst "github.com/LINBIT/golinstor"
	"github.com/google/uuid"
	"github.com/robfig/cron/v3"
)

// Backup schedules (CtrlScheduleApiCallHandler, CtrlScheduledBackupsApiCallHandler,
// ScheduleBackupService). The server parses cron with cron-utils' UNIX definition
// (ScheduleControllerFactory.create: five fields, minute to day of week, no
// descriptors); robfig/cron with the same five fields parses the same language. The
// scheduler runs on the emulator's clock: RunDueSchedules starts what is due.

type schedule struct {
	name, fullCron, incCron string
	full, inc               cron.Schedule
	keepLocal, keepRemote   *int32
	maxRetries              *int32
	onFailure               string // SKIP or RETRY
	uuid                    string
}

var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// shipKey names a scheduled shipping: resource definition, remote and schedule, by
// their display names.
type shipKey struct{ rd, remote, schedule string }

// scheduledShipping is ScheduledShippingConfig with its task: when it fires next
// (calculatedFrom + timeout) and whether that backup is incremental.
type scheduledShipping struct {
	key            shipKey
	lastInc        bool
	timeout        time.Duration
	incremental    bool
	calculatedFrom time.Time
	// running: the task fired and its backup has not ended (the task is out of the
	// lookup maps, so next_exec_time is -1).
	running  bool
	retryCt  int
	prefNode string
}

// scheduleJSON is JsonGenTypes.Schedule.
type scheduleJSON struct {
	ScheduleName string `json:"schedule_name"`
	FullCron     string `json:"full_cron"`
	IncCron      string `json:"inc_cron,omitempty"`
	KeepLocal    *int32 `json:"keep_local,omitempty"`
	KeepRemote   *int32 `json:"keep_remote,omitempty"`
	OnFailure    string `json:"on_failure,omitempty"`
	MaxRetries   *int32 `json:"max_retries,omitempty"`
}

// scheduleModifyJSON is JsonGenTypes.ScheduleModify.
type scheduleModifyJSON struct {
	FullCron   string  `json:"full_cron,omitempty"`
	IncCron    *string `json:"inc_cron,omitempty"`
	KeepLocal  *int32  `json:"keep_local,omitempty"`
	KeepRemote *int32  `json:"keep_remote,omitempty"`
	OnFailure  string  `json:"on_failure,omitempty"`
	MaxRetries *int32  `json:"max_retries,omitempty"`
}

func (s *schedule) view() scheduleJSON {
	return scheduleJSON{ScheduleName: s.name, FullCron: s.fullCron, IncCron: s.incCron, KeepLocal: s.keepLocal, KeepRemote: s.keepRemote,
		OnFailure: s.onFailure, MaxRetries: s.maxRetries}
}

// description is getDetailedScheduleDescription, with the cron expressions where the
// server has cron-utils describe them in English.
func (s *schedule) description() string {
	out := "Schedule: " + s.name + ", FullCron: " + s.fullCron
	if s.incCron != "" {
		out += ", IncCron: " + s.incCron
	}
	return out
}

func (e *Emulator) listSchedules(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var data []scheduleJSON
	for _, name := range slices.Sorted(maps.Keys(e.bk().schedules)) {
		data = append(data, e.bk().schedules[name].view())
	}
	writeJSON(w, http.StatusOK, dataList(data))
}

// parseCron is CronParser.parse with the UNIX definition; an expression without a
// future execution is refused too.
func parseCron(kind, expr string) (cron.Schedule, *apiCallRc) {
	s, err := cronParser.Parse(expr)
	if err != nil {
		f := rc(lapiconst.MaskError|lapiconst.MaskSchedule, "Error parsing full-cron \"%s\": %s", expr, err)
		return nil, &f
	}
	if s.Next(time.Now()).IsZero() {
		f := rc(lapiconst.MaskError|lapiconst.MaskSchedule, "The cron expression for %s backups '%s' has no possible future executions.", kind, expr)
		return nil, &f
	}
	return s, nil
}

func onFailureValue(v string) (string, bool) {
	switch strings.ToUpper(v) {
	case "", "SKIP":
		return "SKIP", true
	case "RETRY":
		return "RETRY", true
	}
	return "", false
}

// createSchedule follows CtrlScheduleApiCallHandler.createScheduleInTransaction.
func (e *Emulator) createSchedule(w http.ResponseWriter, r *http.Request) {
	var in scheduleJSON
	if !decode(w, r, &in, http.StatusInternalServerError) {
		return
	}
	refs := []string{"Remote", in.ScheduleName} // makeScheduleContext puts the name under KEY_REMOTE
	if bad := checkNodeName(in.ScheduleName); bad != "" {
		writeRC(w, http.StatusOK, rc(lapiconst.FailInvldScheduleName|crtSchedule, "The given schedule name '%s' is invalid.", in.ScheduleName).withCause("%s", bad).withRefs(refs...))
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	b := e.bk()
	if _, ok := b.schedules[strings.ToLower(in.ScheduleName)]; ok {
		writeRC(w, http.StatusOK, rc(lapiconst.FailExistsSchedule|crtSchedule,
			"A schedule with the name '%s' already exists. Please use a different name or try to modify the schedule instead.", in.ScheduleName).withRefs(refs...))
		return
	}
	onFailure, ok := onFailureValue(in.OnFailure)
	if !ok {
		writeRC(w, http.StatusOK, rc(lapiconst.FailUnknownError|crtSchedule, "No enum constant OnFailure.%s", strings.ToUpper(in.OnFailure)).withRefs(refs...))
		return
	}
	s := &schedule{name: in.ScheduleName, fullCron: in.FullCron, incCron: in.IncCron, keepLocal: in.KeepLocal, keepRemote: in.KeepRemote,
		maxRetries: in.MaxRetries, onFailure: onFailure, uuid: uuid.NewString()}
	var fail *apiCallRc
	if s.full, fail = parseCron("full", in.FullCron); fail != nil {
		writeRC(w, http.StatusOK, fail.masked(crtSchedule).withRefs(refs...))
		return
	}
	if in.IncCron != "" {
		if s.inc, fail = parseCron("inc", in.IncCron); fail != nil {
			writeRC(w, http.StatusOK, fail.masked(crtSchedule).withRefs(refs...))
			return
		}
	}
	b.schedules[strings.ToLower(s.name)] = s
	writeRC(w, http.StatusOK, rc(lapiconst.Created|crtSchedule, "%s created sucessfully.", s.description()).
		withDetails("%s UUID is: %s", s.description(), s.uuid).withRefs(refs...))
}

// modifySchedule follows changeScheduleInTransaction: an empty inc_cron removes it, a
// negative keep or retry count unsets it; a changed cron reschedules the tasks.
func (e *Emulator) modifySchedule(w http.ResponseWriter, r *http.Request) {
	var in scheduleModifyJSON
	if !decode(w, r, &in, http.StatusInternalServerError) {
		return
	}
	name := r.PathValue("schedule")
	refs := []string{"Remote", name}
	e.mu.Lock()
	defer e.mu.Unlock()
	cur, ok := e.bk().schedules[strings.ToLower(name)]
	if !ok {
		writeRC(w, http.StatusOK, scheduleNotRegistered(name).masked(modSchedule).withRefs(refs...))
		return
	}
	s := *cur
	reschedule := false
	if in.FullCron != "" {
		full, err := cronParser.Parse(in.FullCron)
		if err != nil {
			writeRC(w, http.StatusOK, rc(lapiconst.FailUnknownError|modSchedule, "Error parsing full-cron: %s", err).withRefs(refs...))
			return
		}
		s.full, s.fullCron, reschedule = full, in.FullCron, true
	}
	if in.IncCron != nil {
		s.inc, s.incCron = nil, ""
		if *in.IncCron != "" {
			inc, err := cronParser.Parse(*in.IncCron)
			if err != nil {
				writeRC(w, http.StatusOK, rc(lapiconst.FailUnknownError|modSchedule, "Error parsing inc-cron: %s", err).withRefs(refs...))
				return
			}
			s.inc, s.incCron = inc, *in.IncCron
		}
		reschedule = true
	}
	unsetNegative := func(v *int32) *int32 {
		if *v < 0 {
			return nil
		}
		return ptrTo(*v)
	}
	if in.KeepLocal != nil {
		s.keepLocal = unsetNegative(in.KeepLocal)
	}
	if in.KeepRemote != nil {
		s.keepRemote = unsetNegative(in.KeepRemote)
	}
	if in.MaxRetries != nil {
		s.maxRetries = unsetNegative(in.MaxRetries)
	}
	if in.OnFailure != "" {
		v, ok := onFailureValue(in.OnFailure)
		if !ok {
			writeRC(w, http.StatusOK, rc(lapiconst.FailUnknownError|modSchedule, "No enum constant OnFailure.%s", strings.ToUpper(in.OnFailure)).withRefs(refs...))
			return
		}
		s.onFailure = v
	}
	*cur = s
	desc := "Schedule: " + s.name
	if reschedule {
		// ScheduleBackupService.modifyTasks: every task of the schedule, from now.
		now := e.now()
		for _, conf := range e.bk().active {
			if strings.EqualFold(conf.key.schedule, s.name) && !conf.running {
				conf.timeout, conf.incremental = timeoutAndType(cur, now, conf.lastStart(e), true, false, conf.lastInc)
				conf.calculatedFrom = now.Truncate(time.Second)
			}
		}
		desc = s.description()
	}
	writeRC(w, http.StatusOK, rc(lapiconst.Modified|modSchedule, "%s modified sucessfully.", desc).withDetails("%s UUID is: %s", desc, s.uuid).withRefs(refs...))
}

// lastStart is the task's previous start (BackupShippingTask.getPreviousTaskStartTime):
// the resource's LastBackupTime for this remote and schedule, if any. Holds e.mu.
func (c *scheduledShipping) lastStart(e *Emulator) *time.Time {
	def, ok := e.rds[strings.ToLower(c.key.rd)]
	if !ok {
		return nil
	}
	ms, err := strconv.ParseInt(def.Props["Schedule/"+c.key.remote+"/"+c.key.schedule+"/LastBackupTime"], 10, 64)
	if err != nil {
		return nil
	}
	t := time.UnixMilli(ms)
	return &t
}

func scheduleNotRegistered(name string) apiCallRc {
	return rc(lapiconst.FailNotFoundSchedule, "Schedule '%s' not registered.", name).
		withCause("The specified schedule '%s' could not be found in the database", name).
		withCorrection("Create a schedule with the name '%s' first.", name)
}

// deleteSchedule follows CtrlScheduleApiCallHandler.delete: the tasks end and every
// property naming the schedule goes (ScheduleBackupService.removeTasks).
func (e *Emulator) deleteSchedule(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("schedule")
	refs := []string{"Remote", name}
	e.mu.Lock()
	defer e.mu.Unlock()
	b := e.bk()
	s, ok := b.schedules[strings.ToLower(name)]
	if !ok {
		writeRC(w, http.StatusOK, rc(lapiconst.WarnNotFound|delSchedule, "Schedule: %s not found.", name).withRefs(refs...))
		return
	}
	for k := range b.active {
		if strings.EqualFold(k.schedule, s.name) {
			delete(b.active, k)
		}
	}
	e.removeScheduleProps("", s.name)
	delete(b.schedules, strings.ToLower(name))
	writeRC(w, http.StatusOK,
		rc(lapiconst.Deleted|delSchedule, "Schedule: %s marked for deletion.", s.name).withDetails("Schedule: %s UUID is: %s", s.name, s.uuid).withRefs(refs...),
		rc(lapiconst.Deleted|modSchedule, "Schedule: %s deleted.", s.name).withDetails("Schedule: %s UUID was: %s", s.name, s.uuid).withRefs(refs...))
}

// removeScheduleProps removes the Schedule/<remote>/<schedule>/ properties of the
// controller, the resource groups and the resource definitions; an empty remote or
// schedule matches any (removeAllRelatedProps). Holds e.mu.
func (e *Emulator) removeScheduleProps(remote, sched string) {
	drop := func(props map[string]string) {
		for k := range props {
			parts := strings.Split(k, "/")
			if len(parts) >= 4 && parts[0] == "Schedule" && (remote == "" || strings.EqualFold(parts[1], remote)) &&
				(sched == "" || strings.EqualFold(parts[2], sched)) {
				delete(props, k)
			}
		}
	}
	drop(e.controllerProps)
	drop(e.bk().dfltRgProps)
	for _, g := range e.rgs {
		drop(g.Props)
	}
	for _, def := range e.rds {
		drop(def.Props)
	}
}

// backupScheduleJSON is JsonGenTypes.BackupSchedule.
type backupScheduleJSON struct {
	RscName        *string           `json:"rsc_name,omitempty"`
	GrpName        *string           `json:"grp_name,omitempty"`
	NodeName       string            `json:"node_name,omitempty"`
	DstStorPool    string            `json:"dst_stor_pool,omitempty"`
	StorPoolRename map[string]string `json:"stor_pool_rename,omitempty"`
	ForceRestore   bool              `json:"force_restore,omitempty"`
	DstRscGrp      string            `json:"dst_rsc_grp,omitempty"`
	DstRscName     string            `json:"dst_rsc_name,omitempty"`
	ForceMvRscGrp  bool              `json:"force_mv_rsc_grp,omitempty"`
}

// scheduleProps returns the properties a schedule is set on: a resource definition,
// a resource group, or the controller. Holds e.mu.
func (e *Emulator) scheduleProps(rscName, grpName string) (map[string]string, *apiCallRc) {
	switch {
	case rscName != "":
		def, ok := e.rds[strings.ToLower(rscName)]
		if !ok {
			f := rc(lapiconst.FailNotFoundRscDfn, "Resource definition '%s' not found.", rscName).withRefs("RscDfn", rscName)
			return nil, &f
		}
		if def.Props == nil {
			def.Props = map[string]string{}
		}
		return def.Props, nil
	case grpName != "":
		if strings.EqualFold(grpName, "DfltRscGrp") {
			return e.bk().dfltRgProps, nil
		}
		g, ok := e.rgs[strings.ToLower(grpName)]
		if !ok {
			f := rc(lapiconst.FailNotFoundRscGrp, "Resource group '%s' not found.", grpName).withRefs("RscGrp", grpName)
			return nil, &f
		}
		if g.Props == nil {
			g.Props = map[string]string{}
			e.rgs[strings.ToLower(grpName)] = g
		}
		return g.Props, nil
	}
	return e.controllerProps, nil
}

// setBackupSchedule answers .../schedule/{schedule}/enable and /disable
// (CtrlScheduledBackupsApiCallHandler.setScheduleInTransaction): Enabled and PrefNode
// under Schedule/<remote>/<schedule>/ on the resource definition, group or controller,
// then the tasks of the resource definitions concerned are added or removed.
func (e *Emulator) setBackupSchedule(enable bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in backupScheduleJSON
		if !decode(w, r, &in, http.StatusInternalServerError) {
			return
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		remote, sched, fail := e.remoteAndSchedule(r.PathValue("remote"), r.PathValue("schedule"))
		if fail != nil {
			writeRC(w, http.StatusOK, *fail)
			return
		}
		rscName, grpName := deref(in.RscName), deref(in.GrpName)
		props, fail := e.scheduleProps(rscName, grpName)
		if fail != nil {
			writeRC(w, http.StatusOK, *fail)
			return
		}
		ns := "Schedule/" + remote.name + "/" + sched.name + "/"
		props[ns+"Enabled"] = strconv.FormatBool(enable)
		if in.NodeName != "" {
			props[ns+"PrefNode"] = in.NodeName
		}
		var rcs []apiCallRc
		if rscName == "" && in.DstRscName != "" {
			where := "--rg"
			if grpName == "" {
				where = "on controller level"
			}
			rcs = append(rcs, rc(lapiconst.WarnInvldConf, "target resource definition is only usable in combiantion with --rd, but not %s. Ignoring target resource definition parameter!", where))
		}
		e.reconcileSchedules()
		action := "disabled"
		if enable {
			action = "enabled"
		}
		writeRC(w, http.StatusOK, append(rcs, rc(lapiconst.Modified, "%s", scheduleMessage(sched.name, action, in.RscName, in.GrpName, remote.name)))...)
	}
}

// scheduleMessage is buildSuccessMessage: a resource name that was given at all, even
// empty, wins ("for resource definition ”").
func scheduleMessage(sched, action string, rscName, grpName *string, remote string) string {
	out := "Backup shipping schedule '" + sched + "' sucessfully " + action
	switch {
	case rscName != nil:
		out += " for resource definition '" + *rscName + "'"
	case grpName != nil:
		out += " for resource group '" + *grpName + "'"
	default:
		out += " on controller"
	}
	return out + " to remote '" + remote + "'."
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (e *Emulator) remoteAndSchedule(remoteName, schedName string) (*s3Remote, *schedule, *apiCallRc) {
	remote, ok := e.bk().remotes[strings.ToLower(remoteName)]
	if !ok {
		f := remoteNotRegistered(remoteName)
		return nil, nil, &f
	}
	sched, ok := e.bk().schedules[strings.ToLower(schedName)]
	if !ok {
		f := scheduleNotRegistered(schedName)
		return nil, nil, &f
	}
	return remote, sched, nil
}

// deleteBackupSchedule answers DELETE .../schedule/{schedule}/delete
// (deleteScheduleInTransaction): Enabled and PrefNode are removed. The REST layer
// defaults rsc_dfn_name to "", so the message always names a resource definition.
func (e *Emulator) deleteBackupSchedule(w http.ResponseWriter, r *http.Request) {
	rscName, grpName := r.URL.Query().Get("rsc_dfn_name"), r.URL.Query().Get("rsc_grp_name")
	e.mu.Lock()
	defer e.mu.Unlock()
	remote, sched, fail := e.remoteAndSchedule(r.PathValue("remote"), r.PathValue("schedule"))
	if fail != nil {
		writeRC(w, http.StatusOK, *fail)
		return
	}
	props, fail := e.scheduleProps(rscName, grpName)
	if fail != nil {
		writeRC(w, http.StatusOK, *fail)
		return
	}
	ns := "Schedule/" + remote.name + "/" + sched.name + "/"
	delete(props, ns+"Enabled")
	delete(props, ns+"PrefNode")
	e.reconcileSchedules()
	writeRC(w, http.StatusOK, rc(lapiconst.Deleted, "%s", scheduleMessage(sched.name, "deleted", &rscName, &grpName, remote.name)))
}

// scheduleNamespace renders the Schedule/ properties of rd with the resource
// definition over its group over the controller (PriorityProps.renderRelativeMap).
// Holds e.mu.
func (e *Emulator) scheduleNamespace(def *resourceDefinition) map[string]string {
	out := map[string]string{}
	add := func(props map[string]string) {
		for k, v := range props {
			if rel, ok := strings.CutPrefix(k, "Schedule/"); ok {
				if _, set := out[rel]; !set {
					out[rel] = v
				}
			}
		}
	}
	add(def.Props)
	add(e.groupProps(def.ResourceGroupName))
	add(e.controllerProps)
	return out
}

func (e *Emulator) groupProps(name string) map[string]string {
	if strings.EqualFold(name, "DfltRscGrp") || name == "" {
		return e.bk().dfltRgProps
	}
	return e.rgs[strings.ToLower(name)].Props
}

func (e *Emulator) diskfulCount(def *resourceDefinition) int {
	n := 0
	for _, rep := range def.resources {
		if rep.diskful() {
			n++
		}
	}
	return n
}

// reconcileSchedules adds a task for every enabled triple of a resource definition
// with diskful resources that has none, and ends the tasks of triples no longer
// enabled. The server does this when a schedule is enabled or disabled, a resource is
// created and the controller starts (addOrRemoveTasks, fluxAllNewTasks); the emulator
// also does it on every RunDueSchedules. Holds e.mu.
func (e *Emulator) reconcileSchedules() {
	b := e.bk()
	now := e.now()
	enabled := map[shipKey]bool{}
	for _, def := range e.rds {
		props := e.scheduleNamespace(def)
		for k, v := range props {
			parts := strings.Split(k, "/")
			if len(parts) != 3 || parts[2] != "Enabled" || v != "true" {
				continue
			}
			remote, ok1 := b.remotes[strings.ToLower(parts[0])]
			sched, ok2 := b.schedules[strings.ToLower(parts[1])]
			if !ok1 || !ok2 || e.diskfulCount(def) == 0 {
				continue
			}
			key := shipKey{rd: def.Name, remote: remote.name, schedule: sched.name}
			enabled[key] = true
			if _, ok := b.active[key]; !ok {
				conf := &scheduledShipping{key: key, prefNode: props[parts[0]+"/"+parts[1]+"/PrefNode"]}
				conf.timeout, conf.incremental = timeoutAndType(sched, now, nil, true, false, false)
				conf.calculatedFrom = now.Truncate(time.Second)
				b.active[key] = conf
			}
		}
	}
	for key := range b.active {
		if !enabled[key] {
			delete(b.active, key)
		}
	}
}

// RunDueSchedules starts the scheduled backups whose time has come on the emulator's
// clock (TaskScheduleService firing BackupShippingTask) and returns how many it
// started. A backup that cannot start is rescheduled as a failure.
func (e *Emulator) RunDueSchedules(ctx context.Context) int {
	e.mu.Lock()
	e.reconcileSchedules()
	now := e.now()
	var due []*scheduledShipping
	for _, key := range slices.SortedFunc(maps.Keys(e.bk().active), compareShipKeys) {
		conf := e.bk().active[key]
		if !conf.running && !conf.calculatedFrom.Add(conf.timeout).After(now) {
			conf.running = true
			due = append(due, conf)
		}
	}
	e.mu.Unlock()
	for _, conf := range due {
		scheduledAt := conf.calculatedFrom.Add(conf.timeout)
		rcs := e.startBackup(ctx, conf.key.rd, "", conf.key.remote, conf.prefNode, conf.key.schedule, conf.incremental)
		if slices.ContainsFunc(rcs, apiCallRc.isError) {
			e.mu.Lock()
			if s := e.bk().schedules[strings.ToLower(conf.key.schedule)]; s != nil {
				e.addTaskAgain(conf.key, s, &scheduledAt, false, false, conf.lastInc)
			}
			e.mu.Unlock()
		}
	}
	return len(due)
}

func compareShipKeys(a, b shipKey) int {
	if c := strings.Compare(strings.ToUpper(a.rd), strings.ToUpper(b.rd)); c != 0 {
		return c
	}
	if c := strings.Compare(strings.ToUpper(a.remote), strings.ToUpper(b.remote)); c != 0 {
		return c
	}
	return strings.Compare(strings.ToUpper(a.schedule), strings.ToUpper(b.schedule))
}

// RunScheduler calls RunDueSchedules every interval until ctx ends (for the demo;
// tests move the clock and call RunDueSchedules).
func (e *Emulator) RunScheduler(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			e.RunDueSchedules(ctx)
		}
	}
}

// addTaskAgain reschedules a triple after its backup ended (or failed to start): only
// while it is still active. Holds e.mu.
func (e *Emulator) addTaskAgain(key shipKey, s *schedule, lastStart *time.Time, ok, forceSkip, lastInc bool) {
	conf, active := e.bk().active[key]
	if !active {
		return
	}
	now := e.now()
	skip := forceSkip || e.tooManyRetries(ok, s)
	conf.timeout, conf.incremental = timeoutAndType(s, now, lastStart, ok, skip, lastInc)
	conf.calculatedFrom, conf.lastInc, conf.running = now.Truncate(time.Second), lastInc, false
}

// tooManyRetries counts a RETRY schedule's failed attempts on the first active task of
// the schedule (as the server does, whichever resource it is for). Holds e.mu.
func (e *Emulator) tooManyRetries(ok bool, s *schedule) bool {
	if ok || s.onFailure != "RETRY" {
		return false
	}
	for _, key := range slices.SortedFunc(maps.Keys(e.bk().active), compareShipKeys) {
		conf := e.bk().active[key]
		if !strings.EqualFold(key.schedule, s.name) {
			continue
		}
		if s.maxRetries == nil {
			return false
		}
		if int(*s.maxRetries) <= conf.retryCt {
			conf.retryCt = 0
			return true
		}
		conf.retryCt++
		return false
	}
	return false
}

// timeoutAndType is ScheduleBackupService.getTimeoutAndType: when the next backup is
// due from now, and whether it is incremental. A missed full (or incremental) backup
// starts at once; after a failure, RETRY tries again in a minute, SKIP waits for the
// next cron time.
func timeoutAndType(s *schedule, now time.Time, lastStart *time.Time, lastOK, forceSkip, lastIncr bool) (time.Duration, bool) {
	skip := s.onFailure == "SKIP" || forceSkip
	nextFull := s.full.Next(now)
	var nextInc time.Time
	if s.inc != nil {
		nextInc = s.inc.Next(now)
	} else {
		nextInc = nextFull.AddDate(1, 0, 0)
	}
	earlier := func() (time.Duration, bool) {
		if nextInc.Before(nextFull) {
			return nextInc.Sub(now), true
		}
		return nextFull.Sub(now), false
	}
	if lastStart == nil {
		return earlier()
	}
	lastFullFromNow, lastFullFromLast := lastExec(s.full, now), lastExec(s.full, *lastStart)
	var nextIncFromLast time.Time
	if s.inc != nil {
		nextIncFromLast = s.inc.Next(*lastStart)
	} else {
		nextIncFromLast = nextInc.AddDate(1, 0, 0)
	}
	var timeout time.Duration
	var incr bool
	if lastFullFromNow.Equal(lastFullFromLast) || !lastOK && skip {
		if nextInc.Equal(nextIncFromLast) || s.inc == nil || !lastOK && skip {
			timeout, incr = earlier()
		} else {
			timeout, incr = 0, true // missed an incremental
		}
	} else {
		timeout, incr = 0, false // missed a full
	}
	if !lastOK && !skip {
		timeout, incr = time.Minute, incr && lastIncr
	}
	return timeout, incr
}

// lastExec is ScheduleBackupService.exec(.., false): t itself when it is an
// execution time, else the latest one before it.
func lastExec(s cron.Schedule, t time.Time) time.Time {
	prev := prevExec(s, t)
	if !prev.IsZero() && s.Next(prev).Equal(t) {
		return t
	}
	return prev
}

// prevExec is the latest execution strictly before t (cron-utils' lastExecution).
func prevExec(s cron.Schedule, t time.Time) time.Time {
	for window := time.Minute; window <= 5*366*24*time.Hour; window *= 2 {
		var last time.Time
		for n := s.Next(t.Add(-window - time.Second)); !n.IsZero() && n.Before(t); n = s.Next(n) {
			last = n
		}
		if !last.IsZero() {
			return last
		}
	}
	return time.Time{}
}

// afterScheduledShipment is handleSchedulesIfNeeded: the task is rescheduled from the
// backup's start, and after a full backup the schedule's retention is applied.
func (e *Emulator) afterScheduledShipment(rscName string, remote s3Remote, scheduleName string, snap *snapshot, ok bool) {
	e.mu.Lock()
	s := e.bk().schedules[strings.ToLower(scheduleName)]
	if s == nil {
		e.mu.Unlock()
		return
	}
	ns := srcNamespc(remote.name)
	lastInc := snap.props[ns+keyLastSnapshot] != ""
	startMs, _ := strconv.ParseInt(snap.props[ns+keyStartTimestamp], 10, 64)
	start := time.UnixMilli(startMs)
	key := shipKey{rd: rscName, remote: remote.name, schedule: s.name}
	for k := range e.bk().active {
		if strings.EqualFold(k.rd, rscName) && strings.EqualFold(k.remote, remote.name) && strings.EqualFold(k.schedule, s.name) {
			key = k
		}
	}
	e.addTaskAgain(key, s, &start, ok, false, lastInc)
	keepRemote := s.keepRemote
	if !lastInc {
		e.keepLocal(rscName, s, remote.name)
	}
	e.mu.Unlock()
	if !lastInc && keepRemote != nil {
		e.keepRemote(rscName, remote, s.name, *keepRemote)
	}
}

// isFullOfSchedule is isFullBackupOfSchedule: shipped by the schedule and its own
// full base.
func isFullOfSchedule(props map[string]string, sched, remote, snapName string) bool {
	return props[keyShippedBySchedule] == sched && strings.EqualFold(props[srcNamespc(remote)+keyLastFullBackup], snapName)
}

// keepLocal is checkKeepLocal: beyond keep_local full-backup snapshots of the
// schedule, the failed ones go first, then the oldest, each with the incremental
// snapshots based on it. Holds e.mu.
func (e *Emulator) keepLocal(rscName string, s *schedule, remote string) {
	def, ok := e.rds[strings.ToLower(rscName)]
	if !ok || s.keepLocal == nil {
		return
	}
	ns := srcNamespc(remote)
	var fulls []*snapshot
	for _, snap := range e.sortedSnapshots(def) {
		if isFullOfSchedule(snap.props, s.name, remote, snap.name) && snap.props[ns+keyStartTimestamp] != "" {
			fulls = append(fulls, snap)
		}
	}
	if int(*s.keepLocal) >= len(fulls) {
		return
	}
	slices.SortStableFunc(fulls, func(a, b *snapshot) int {
		sa, sb := a.props[ns+keyShippingStatus] == statusSuccess, b.props[ns+keyShippingStatus] == statusSuccess
		if sa != sb {
			if sa {
				return 1
			}
			return -1
		}
		ta, _ := strconv.ParseInt(a.props[ns+keyStartTimestamp], 10, 64)
		tb, _ := strconv.ParseInt(b.props[ns+keyStartTimestamp], 10, 64)
		return int(ta - tb)
	})
	for _, full := range fulls[:len(fulls)-int(*s.keepLocal)] {
		for _, snap := range e.sortedSnapshots(def) {
			if snap.props[keyShippedBySchedule] == s.name && strings.EqualFold(snap.props[ns+keyLastFullBackup], full.name) {
				e.dropSnapshot(rscName, snap)
			}
		}
	}
}

// keepRemote is checkKeepRemote: beyond keep_remote full backups of the schedule in
// the bucket, backups are deleted with everything based on them (cascading), and
// their local snapshots too. The server's loop keeps only its last deletion, so of
// several backups too many only the newest of those to go is deleted.
func (e *Emulator) keepRemote(rscName string, remote s3Remote, sched string, keep int32) {
	ctx := context.Background()
	e.mu.Lock()
	rt := e.bk().transport
	e.mu.Unlock()
	keys, err := listKeys(ctx, &remote, rt, rscName)
	if err != nil {
		return
	}
	type full struct {
		t   time.Time
		key string
	}
	var fulls []full
	for _, k := range keys {
		info, ok := parseBackupName(metaNamePattern, k)
		if !ok {
			continue
		}
		meta, err := readMeta(ctx, &remote, rt, k)
		if err == nil && isFullOfSchedule(meta.RscDfn.SnapDfnProps, sched, remote.name, info.snap) {
			fulls = append(fulls, full{info.time, k})
		}
	}
	if int(keep) >= len(fulls) {
		return
	}
	slices.SortFunc(fulls, func(a, b full) int { return a.t.Compare(b.t) })
	last := fulls[len(fulls)-int(keep)-1]
	_, _ = e.deleteBackupsOf(ctx, remote.name, deleteFilter{id: last.key, cascading: true})
}

// scheduledRscsJSON is JsonGenTypes.ScheduledRscs.
type scheduledRscsJSON struct {
	RscName         string `json:"rsc_name"`
	RemoteName      string `json:"remote_name,omitempty"`
	ScheduleName    string `json:"schedule_name,omitempty"`
	Reason          string `json:"reason,omitempty"`
	LastSnapTime    int64  `json:"last_snap_time"`
	LastSnapInc     bool   `json:"last_snap_inc"`
	NextExecTime    int64  `json:"next_exec_time"`
	NextExecInc     bool   `json:"next_exec_inc"`
	NextPlannedFull int64  `json:"next_planned_full"`
	NextPlannedInc  int64  `json:"next_planned_inc"`
}

// viewSchedulesByResource answers GET /v1/view/schedules-by-resource
// (CtrlScheduleApiCallHandler.listScheduledRscs): the active triples with their last
// and next backups, then (unless active-only) the resource definitions without one and
// why: "none set", "disabled", "undeployed". A failed backup shows only as its next
// run (a minute later with RETRY); LINSTOR reports no failure here.
func (e *Emulator) viewSchedulesByResource(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	rscF, remoteF, schedF := q.Get("rsc"), q.Get("remote"), q.Get("schedule")
	activeOnly, _ := strconv.ParseBool(q.Get("active-only"))
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	var out []scheduledRscsJSON
	for _, key := range slices.SortedFunc(maps.Keys(e.bk().active), compareShipKeys) {
		conf := e.bk().active[key]
		if rscF != "" && !strings.EqualFold(rscF, key.rd) || remoteF != "" && !strings.EqualFold(remoteF, key.remote) ||
			schedF != "" && !strings.EqualFold(schedF, key.schedule) {
			continue
		}
		s := e.bk().schedules[strings.ToLower(key.schedule)]
		def := e.rds[strings.ToLower(key.rd)]
		if s == nil || def == nil {
			continue
		}
		ns := "Schedule/" + key.remote + "/" + key.schedule + "/"
		item := scheduledRscsJSON{RscName: def.Name, RemoteName: key.remote, ScheduleName: key.schedule, LastSnapTime: -1,
			NextExecTime: -1, NextPlannedFull: -1, NextPlannedInc: -1}
		lastSnap := now
		if ms, err := strconv.ParseInt(def.Props[ns+"LastBackupTime"], 10, 64); err == nil {
			item.LastSnapTime, lastSnap = ms, time.UnixMilli(ms)
		}
		item.LastSnapInc = def.Props[ns+"LastBackupInc"] == "true"
		if n := s.full.Next(lastSnap); !n.IsZero() {
			item.NextPlannedFull = n.Unix() * 1000
		}
		if s.inc != nil {
			if n := s.inc.Next(lastSnap); !n.IsZero() {
				item.NextPlannedInc = n.Unix() * 1000
			}
		}
		if !conf.running {
			item.NextExecTime = conf.calculatedFrom.Add(conf.timeout).UnixMilli()
			item.NextExecInc = conf.incremental
		}
		out = append(out, item)
	}
	if !activeOnly {
		out = append(out, e.unscheduled(rscF)...)
	}
	slices.SortStableFunc(out, func(a, b scheduledRscsJSON) int {
		if c := strings.Compare(a.RscName, b.RscName); c != 0 {
			return c
		}
		if c := strings.Compare(a.RemoteName, b.RemoteName); c != 0 {
			return c
		}
		return strings.Compare(a.ScheduleName, b.ScheduleName)
	})
	writeJSON(w, http.StatusOK, dataList(out))
}

// unscheduled is listUnscheduledRsc. Holds e.mu.
func (e *Emulator) unscheduled(rscF string) []scheduledRscsJSON {
	var out []scheduledRscsJSON
	none := func(name, remote, sched, reason string) scheduledRscsJSON {
		return scheduledRscsJSON{RscName: name, RemoteName: remote, ScheduleName: sched, Reason: reason, LastSnapTime: -1, NextExecTime: -1,
			NextPlannedFull: -1, NextPlannedInc: -1}
	}
	for _, def := range e.rds {
		if rscF != "" && !strings.EqualFold(rscF, def.Name) {
			continue
		}
		props := e.scheduleNamespace(def)
		if len(props) == 0 {
			out = append(out, none(def.Name, "", "", "none set"))
			continue
		}
		confSet := false
		var disabled [][2]string
		for _, k := range slices.Sorted(maps.Keys(props)) {
			parts := strings.Split(k, "/")
			if len(parts) != 3 || parts[2] != "Enabled" {
				continue
			}
			if props[k] == "false" {
				disabled = append(disabled, [2]string{parts[0], parts[1]})
			} else {
				confSet = true
				break
			}
		}
		switch {
		case !confSet && len(disabled) == 0:
			out = append(out, none(def.Name, "", "", "none set"))
		case !confSet:
			for _, d := range disabled {
				out = append(out, none(def.Name, d[0], d[1], "disabled"))
			}
		case len(def.resources) == 0:
			out = append(out, none(def.Name, "", "", "undeployed"))
		}
	}
	return out
}

// scheduleDetailsJSON is JsonGenTypes.ScheduleDetails.
type scheduleDetailsJSON struct {
	RemoteName   string `json:"remote_name"`
	ScheduleName string `json:"schedule_name"`
	Ctrl         *bool  `json:"ctrl,omitempty"`
	RscGrp       *bool  `json:"rsc_grp,omitempty"`
	RscDfn       *bool  `json:"rsc_dfn,omitempty"`
}

// viewScheduleDetails answers GET /v1/view/schedules-by-resource/{rd}
// (listScheduleDetails): per remote and schedule, where it is enabled or disabled.
func (e *Emulator) viewScheduleDetails(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	name := r.PathValue("rd")
	def, ok := e.rds[strings.ToLower(name)]
	if !ok {
		// loadRscDfn's ApiRcException inside doInScope: a 500.
		writeStatus(w, http.StatusInternalServerError, rc(lapiconst.FailNotFoundRscDfn, "Resource definition '%s' not found.", name))
		return
	}
	details := map[string]*scheduleDetailsJSON{}
	collect := func(props map[string]string, set func(*scheduleDetailsJSON, *bool)) {
		for k, v := range props {
			parts := strings.Split(k, "/")
			if len(parts) != 4 || parts[0] != "Schedule" || parts[3] != "Enabled" {
				continue
			}
			id := parts[1] + "/" + parts[2]
			if details[id] == nil {
				details[id] = &scheduleDetailsJSON{RemoteName: parts[1], ScheduleName: parts[2]}
			}
			var val *bool
			if v == "true" || v == "false" {
				val = ptrTo(v == "true")
			}
			set(details[id], val)
		}
	}
	collect(def.Props, func(d *scheduleDetailsJSON, v *bool) { d.RscDfn = v })
	collect(e.groupProps(def.ResourceGroupName), func(d *scheduleDetailsJSON, v *bool) { d.RscGrp = v })
	collect(e.controllerProps, func(d *scheduleDetailsJSON, v *bool) { d.Ctrl = v })
	var data []scheduleDetailsJSON
	for _, id := range slices.Sorted(maps.Keys(details)) {
		data = append(data, *details[id])
	}
	writeJSON(w, http.StatusOK, dataList(data))
}

// dataList is a {"data": [...]} list object; an empty list is left out (NON_EMPTY).
func dataList[T any](items []T) map[string]any {
	if len(items) == 0 {
		return map[string]any{}
	}
	return map[string]any{"data": items}
}
