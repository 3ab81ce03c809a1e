package emulator

import (
	"fmt"
	"net/http"
	"sort"
	"strings"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"
)

func (e *Emulator) getVersion(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	writeJSON(w, http.StatusOK, lapi.ControllerVersion{Version: e.version, GitHash: "emulator", BuildTime: "2026-01-01T00:00:00+00:00", RestApiVersion: restAPIVersion})
}

func (e *Emulator) getControllerProps(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	writeJSON(w, http.StatusOK, copyMap(e.controllerProps))
}

func (e *Emulator) modifyControllerProps(w http.ResponseWriter, r *http.Request) {
	var in lapi.GenericPropsModify
	if !decode(w, r, &in) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for k := range in.OverrideProps {
		if strings.TrimSpace(k) == "" || strings.HasPrefix(k, "/") {
			writeRC(w, http.StatusCreated, rc(lapiconst.FailInvldProp|lapiconst.MaskCtrlConf|lapiconst.MaskMod, "Property key %q is invalid", k))
			return
		}
	}
	applyProps(e.controllerProps, in)
	writeRC(w, http.StatusCreated, rc(lapiconst.Modified|lapiconst.MaskCtrlConf|lapiconst.MaskMod|lapiconst.MaskInfo, "Controller properties modified."))
}

func (e *Emulator) deleteControllerProp(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.controllerProps, r.PathValue("key"))
	writeRC(w, http.StatusOK, rc(lapiconst.Deleted|lapiconst.MaskCtrlConf|lapiconst.MaskDel|lapiconst.MaskInfo, "Controller property %q deleted.", r.PathValue("key")))
}

type passphraseStatus struct {
	Status string `json:"status"`
}

func (e *Emulator) getPassphraseStatus(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	status := "unset"
	switch {
	case e.passphrase != "" && e.passphraseOpen:
		status = "unlocked"
	case e.passphrase != "":
		status = "locked"
	}
	writeJSON(w, http.StatusOK, []passphraseStatus{{Status: status}})
}

func (e *Emulator) createPassphrase(w http.ResponseWriter, r *http.Request) {
	var in lapi.Passphrase
	if !decode(w, r, &in) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.passphrase != "":
		writeRC(w, http.StatusOK, rc(lapiconst.FailExistsCryptPassphrase|lapiconst.MaskCrt, "A master passphrase already exists; modify it with the old one"))
	case in.NewPassphrase == "":
		writeRC(w, http.StatusOK, rc(lapiconst.FailInvldCryptPassphrase|lapiconst.MaskCrt, "The new passphrase must not be empty"))
	default:
		e.passphrase, e.passphraseOpen = in.NewPassphrase, true
		writeRC(w, http.StatusOK, rc(lapiconst.Created|lapiconst.MaskCrt|lapiconst.MaskInfo, "Master passphrase created."))
	}
}

func (e *Emulator) modifyPassphrase(w http.ResponseWriter, r *http.Request) {
	var in lapi.Passphrase
	if !decode(w, r, &in) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.passphrase == "":
		writeRC(w, http.StatusOK, rc(lapiconst.FailNotFoundCryptKey|lapiconst.MaskMod, "No master passphrase is set"))
	case in.OldPassphrase != e.passphrase:
		writeRC(w, http.StatusOK, rc(lapiconst.FailInvldCryptPassphrase|lapiconst.MaskMod, "The old passphrase is wrong"))
	case in.NewPassphrase == "":
		writeRC(w, http.StatusOK, rc(lapiconst.FailInvldCryptPassphrase|lapiconst.MaskMod, "The new passphrase must not be empty"))
	default:
		e.passphrase, e.passphraseOpen = in.NewPassphrase, true
		writeRC(w, http.StatusOK, rc(lapiconst.Modified|lapiconst.MaskMod|lapiconst.MaskInfo, "Master passphrase modified."))
	}
}

func (e *Emulator) enterPassphrase(w http.ResponseWriter, r *http.Request) {
	var in string
	if !decode(w, r, &in) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.passphrase == "":
		writeRC(w, http.StatusOK, rc(lapiconst.FailNotFoundCryptKey|lapiconst.MaskMod, "No master passphrase is set"))
	case in != e.passphrase:
		writeRC(w, http.StatusOK, rc(lapiconst.FailInvldCryptPassphrase|lapiconst.MaskMod, "The passphrase is wrong"))
	default:
		e.passphraseOpen = true
		writeRC(w, http.StatusOK, rc(lapiconst.PassphraseAccepted|lapiconst.MaskMod|lapiconst.MaskInfo, "Master passphrase accepted."))
	}
}

// metrics serves a Prometheus text page like the controller's /metrics.
func (e *Emulator) metrics(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "# HELP linstor_info LINSTOR controller version.\n# TYPE linstor_info gauge\nlinstor_info{version=%q} 1\n", e.version)
	fmt.Fprintf(w, "# HELP linstor_node_state Node connection state (1 = ONLINE).\n# TYPE linstor_node_state gauge\n")
	for _, n := range e.sortedNodes() {
		v := 0
		if e.nodeView(n).ConnectionStatus == "ONLINE" {
			v = 1
		}
		fmt.Fprintf(w, "linstor_node_state{node=%q} %d\n", n.Name, v)
	}
	fmt.Fprintf(w, "# HELP linstor_storage_pool_capacity_free_bytes Free capacity.\n# TYPE linstor_storage_pool_capacity_free_bytes gauge\n")
	for _, n := range e.sortedNodes() {
		pools := sortedPools(n)
		sort.Slice(pools, func(i, j int) bool { return pools[i].StoragePoolName < pools[j].StoragePoolName })
		for _, p := range pools {
			if p.ProviderKind != lapi.DISKLESS {
				fmt.Fprintf(w, "linstor_storage_pool_capacity_free_bytes{node=%q,storage_pool=%q} %d\n", n.Name, p.StoragePoolName, e.poolView(p).FreeCapacity*1024)
			}
		}
	}
}
