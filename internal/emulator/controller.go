package emulator

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"net/http"
	"slices"
	"strings"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"

	"github.com/linstor-operator/linstor-operator/pkg/linstor/props"
)

func (e *Emulator) getVersion(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	writeJSON(w, http.StatusOK, lapi.ControllerVersion{Version: e.version, GitHash: controllerGitHash, BuildTime: controllerBuildTime, RestApiVersion: restAPIVersion})
}

// getControllerProps lists the controller and satellite configuration merged; once a
// passphrase exists that includes the encrypted/* keys (CtrlConfApiCallHandler.listProps).
func (e *Emulator) getControllerProps(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := maps.Clone(e.controllerProps)
	if e.passphrase != "" {
		sum := sha256.Sum256([]byte(e.passphrase))
		out["encrypted/masterhash"] = hex.EncodeToString(sum[:])
		out["encrypted/masterkey"] = hex.EncodeToString(sum[:16])
		out["encrypted/passphrasesalt"] = hex.EncodeToString(sum[16:])
	}
	writeJSON(w, http.StatusOK, out)
}

const ctrlCtx = lapiconst.MaskCtrlConf

// modifyControllerProps follows CtrlConfApiCallHandler.modifyCtrl: every key against
// the controller whitelist (Aux/ and EBS/Tags/ are free), one answer entry per key,
// and the whole request fails on the first refusal (201 on success).
func (e *Emulator) modifyControllerProps(w http.ResponseWriter, r *http.Request) {
	var in lapi.GenericPropsModify
	if !decode(w, r, &in, http.StatusInternalServerError) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	next := maps.Clone(e.controllerProps)
	var answer []apiCallRc
	for _, k := range slices.Sorted(maps.Keys(in.OverrideProps)) {
		v := in.OverrideProps[k]
		if err := props.Check(props.Controller, k, v); err != nil {
			writeRC(w, http.StatusCreated, ctrlPropRefused(asPropsError(err), lapiconst.MaskCrt))
			return
		}
		next[k] = props.Normalize(props.Controller, k, v)
		answer = append(answer, rc(lapiconst.Created|ctrlCtx|lapiconst.MaskCrt, "Successfully set property '%s' to value '%s'", k, next[k]))
	}
	for _, k := range in.DeleteProps {
		if err := props.CheckDelete(props.Controller, k); err != nil {
			writeRC(w, http.StatusCreated, ctrlPropRefused(asPropsError(err), lapiconst.MaskDel))
			return
		}
		delete(next, k)
		answer = append(answer, rc(lapiconst.Deleted|ctrlCtx|lapiconst.MaskDel, "Successfully deleted property '%s'", k))
	}
	// The server's controller namespace delete builds each key twice prefixed
	// (CtrlConfApiCallHandler.deleteNamespace): nothing is found, so an Aux/ namespace
	// "succeeds" without removing anything and any other non-empty one is refused.
	for _, ns := range in.DeleteNamespaces {
		prefix := strings.TrimSuffix(ns, "/") + "/"
		for _, k := range slices.Sorted(maps.Keys(next)) {
			if strings.HasPrefix(k, prefix) && !strings.HasPrefix(k, "Aux/") {
				writeRC(w, http.StatusCreated, rc(lapiconst.FailInvldProp|ctrlCtx|lapiconst.MaskDel, "The key '%s/%s' is not whitelisted", strings.TrimSuffix(ns, "/"), k))
				return
			}
		}
	}
	e.controllerProps = next
	writeRC(w, http.StatusCreated, answer...)
}

func ctrlPropRefused(err *props.Error, op uint64) apiCallRc {
	if err.UnknownKey {
		return rc(lapiconst.FailInvldProp|ctrlCtx|op, "The key '%s' is not whitelisted", err.Key).withDetails("Controller")
	}
	return rc(lapiconst.FailInvldProp|ctrlCtx|op, "The value '%s' is not valid.", err.Value).withDetails("%s\nController", err.Reason)
}

// deleteControllerProp: a whitelisted key is "deleted" even when it was not set; any
// other key is an error entry (500), not a 404 (CtrlConfApiCallHandler.deletePropWithCommit).
func (e *Emulator) deleteControllerProp(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	key := r.PathValue("key")
	if err := props.CheckDelete(props.Controller, key); err != nil {
		writeRC(w, http.StatusOK, rc(lapiconst.FailInvldProp|ctrlCtx|lapiconst.MaskDel, "The key '%s' is not whitelisted", key))
		return
	}
	delete(e.controllerProps, key)
	writeRC(w, http.StatusOK, rc(lapiconst.Deleted|ctrlCtx|lapiconst.MaskDel, "Successfully deleted property '%s'", key))
}

type passphraseStatus struct {
	Status string `json:"status"`
}

// getPassphraseStatus answers ONE object, not the list the OpenAPI spec declares
// (rest/v1/Encryption.passphraseStatus).
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
	writeJSON(w, http.StatusOK, passphraseStatus{Status: status})
}

// createPassphrase follows CtrlConfApiCallHandler.setPassphrase without an old one:
// refused once a passphrase exists; no length check; 201.
func (e *Emulator) createPassphrase(w http.ResponseWriter, r *http.Request) {
	var in lapi.Passphrase
	if !decode(w, r, &in, http.StatusInternalServerError) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.setPassphrase(w, in, http.StatusCreated)
}

func (e *Emulator) setPassphrase(w http.ResponseWriter, in lapi.Passphrase, success int) {
	if in.NewPassphrase == "" {
		// golinstor leaves an empty passphrase out; the server then fails on null.
		writeRC(w, success, rc(lapiconst.FailUnknownError|ctrlCtx|lapiconst.MaskCrt, "Creation of the crypt passphrase failed due to an unhandled exception of type NullPointerException."))
		return
	}
	if e.passphrase != "" {
		writeRC(w, success, rc(lapiconst.FailExistsCryptPassphrase|ctrlCtx|lapiconst.MaskCrt, "Could not create new crypt passphrase as it already exists").
			withCause("A passphrase was already defined").withCorrection("Use the crypt-modify-passphrase command instead of crypt-create-passphrase"))
		return
	}
	e.passphrase, e.passphraseOpen = in.NewPassphrase, true
	writeRC(w, success, rc(lapiconst.Created|ctrlCtx|lapiconst.MaskCrt, "Crypt passphrase created."))
}

// modifyPassphrase: without an old passphrase it is a create; with one it re-encrypts
// the master key and does NOT unlock a locked controller.
func (e *Emulator) modifyPassphrase(w http.ResponseWriter, r *http.Request) {
	var in lapi.Passphrase
	if !decode(w, r, &in, http.StatusInternalServerError) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	const ctx = ctrlCtx | lapiconst.MaskMod
	switch {
	case in.OldPassphrase == "":
		e.setPassphrase(w, in, http.StatusOK)
	case e.passphrase == "":
		writeRC(w, http.StatusOK, rc(lapiconst.FailExistsCryptPassphrase|ctx, "Could not modify crypt passphrase as it does not exist").
			withCause("No passphrase was defined yet").withCorrection("Use the crypt-create-passphrase command instead of crypt-modify-passphrase"))
	case in.OldPassphrase != e.passphrase:
		writeRC(w, http.StatusOK, wrongPassphrase())
	default:
		e.passphrase = in.NewPassphrase
		writeRC(w, http.StatusOK, rc(lapiconst.Modified|ctx, "Crypt passphrase updated"))
	}
}

// wrongPassphrase is the server's answer to a wrong passphrase, with the code of
// missing properties (IncorrectPassphraseException in CtrlConfApiCallHandler).
func wrongPassphrase() apiCallRc {
	return rc(lapiconst.FailMissingProps|ctrlCtx|lapiconst.MaskMod, "Could not restore master passphrase as the given old passphrase was incorrect").
		withCause("Wrong passphrase").withCorrection("Enter the correct passphrase")
}

// enterPassphrase takes a JSON string; entering it again while unlocked is no error.
func (e *Emulator) enterPassphrase(w http.ResponseWriter, r *http.Request) {
	var in string
	if !decode(w, r, &in, http.StatusInternalServerError) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.passphrase == "":
		writeRC(w, http.StatusOK, rc(lapiconst.FailMissingProps|ctrlCtx|lapiconst.MaskMod, "encrypted namespace is empty, you need to set a passphrase first"))
	case in != e.passphrase:
		writeRC(w, http.StatusOK, wrongPassphrase())
	default:
		e.passphraseOpen = true
		writeRC(w, http.StatusOK, rc(lapiconst.PassphraseAccepted|ctrlCtx|lapiconst.MaskMod, "Passphrase accepted"))
	}
}
