package linstor

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"

	"github.com/linstor-operator/linstor-operator/pkg/linstor/props"
)

// PropertyDiff returns the modification that takes current to desired. It is empty
// (IsEmpty) when current already matches.
func PropertyDiff(current, desired map[string]string) lapi.GenericPropsModify {
	return TrackedPropertyDiff(current, desired, names.AuxLastApplied)
}

// TrackedPropertyDiff is PropertyDiff with the keys recorded under tracker, for objects
// that several owners configure (each owner tracks only its own keys).
func TrackedPropertyDiff(current, desired map[string]string, tracker string) lapi.GenericPropsModify {
	var mod lapi.GenericPropsModify
	for k, v := range desired {
		if cur, ok := current[k]; !ok || cur != v {
			if mod.OverrideProps == nil {
				mod.OverrideProps = lapi.OverrideProps{}
			}
			mod.OverrideProps[k] = v
		}
	}
	for _, k := range lastApplied(current, tracker) {
		if _, still := desired[k]; !still {
			if _, present := current[k]; present {
				mod.DeleteProps = append(mod.DeleteProps, k)
			}
		}
	}
	sort.Strings(mod.DeleteProps)

	keys := make([]string, 0, len(desired))
	for k := range desired {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	tracked, _ := json.Marshal(keys)
	switch {
	case len(keys) == 0 && current[tracker] != "":
		mod.DeleteProps = append(mod.DeleteProps, tracker)
	case len(keys) > 0 && current[tracker] != string(tracked):
		if mod.OverrideProps == nil {
			mod.OverrideProps = lapi.OverrideProps{}
		}
		mod.OverrideProps[tracker] = string(tracked)
	}
	return mod
}

// IsEmpty reports whether mod changes nothing.
func IsEmpty(mod lapi.GenericPropsModify) bool {
	return len(mod.OverrideProps) == 0 && len(mod.DeleteProps) == 0 && len(mod.DeleteNamespaces) == 0
}

// lastApplied reads the tracked keys; a damaged value tracks nothing (it never
// causes deletions of unknown keys).
func lastApplied(current map[string]string, tracker string) []string {
	var keys []string
	if raw := current[tracker]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &keys); err != nil {
			return nil
		}
	}
	return keys
}

// ValidProperties splits desired properties into those LINSTOR's whitelist for obj
// accepts and a description of each refused one, sorted. LINSTOR refuses a whole
// request for one bad key (CtrlPropsHelper.fillProperties rolls the transaction
// back), so sending a refused key would block every other key, the operator's own
// bookkeeping included; refused keys are reported instead, and not tracked.
func ValidProperties(obj props.Object, desired map[string]string) (map[string]string, []string) {
	valid := make(map[string]string, len(desired))
	var refused []string
	for _, k := range slices.Sorted(maps.Keys(desired)) {
		if err := props.Check(obj, k, desired[k]); err != nil {
			refused = append(refused, err.Error())
			continue
		}
		// As LINSTOR stores it (BooleanTrueFalseProperty.normalize): "True" asked and
		// "true" stored must not be a write on every pass.
		valid[k] = props.Normalize(obj, k, desired[k])
	}
	return valid, refused
}

// WithoutUndeletable drops deletions of keys LINSTOR would refuse to delete (a key
// that is not whitelisted is refused even when absent), which would fail the request.
func WithoutUndeletable(obj props.Object, mod lapi.GenericPropsModify) lapi.GenericPropsModify {
	var keep []string
	for _, k := range mod.DeleteProps {
		if props.CheckDelete(obj, k) == nil {
			keep = append(keep, k)
		}
	}
	mod.DeleteProps = keep
	return mod
}

// OnlyAux keeps the Aux/ part of a modification: LINSTOR accepts any Aux/ key, so this
// part goes through even when LINSTOR refuses a key the whitelist here accepted (a
// LINSTOR version with another whitelist).
func OnlyAux(mod lapi.GenericPropsModify) lapi.GenericPropsModify {
	var out lapi.GenericPropsModify
	for k, v := range mod.OverrideProps {
		if strings.HasPrefix(k, "Aux/") {
			if out.OverrideProps == nil {
				out.OverrideProps = lapi.OverrideProps{}
			}
			out.OverrideProps[k] = v
		}
	}
	for _, k := range mod.DeleteProps {
		if strings.HasPrefix(k, "Aux/") {
			out.DeleteProps = append(out.DeleteProps, k)
		}
	}
	return out
}

// IsPropertyRefusal reports LINSTOR's FAIL_INVLD_PROP in an error from golinstor.
func IsPropertyRefusal(err error) bool {
	var apiErr lapi.ApiCallError
	if !errors.As(err, &apiErr) {
		return false
	}
	for _, rc := range apiErr {
		if uint64(rc.RetCode)&lapiconst.MaskBitsCode == lapiconst.FailInvldProp&lapiconst.MaskBitsCode && uint64(rc.RetCode)&lapiconst.MaskError == lapiconst.MaskError {
			return true
		}
	}
	return false
}

// ModifyProperties sends a property modification built from validated properties; if
// LINSTOR still refuses a key, the operator's own Aux/ keys are sent alone so its
// bookkeeping never waits on a user's key. It returns LINSTOR's refusal, if any.
func ModifyProperties(mod lapi.GenericPropsModify, send func(lapi.GenericPropsModify) error) error {
	err := send(mod)
	if err == nil || !IsPropertyRefusal(err) {
		return err
	}
	if aux := OnlyAux(mod); !IsEmpty(aux) {
		if auxErr := send(aux); auxErr != nil {
			return fmt.Errorf("%w (and the operator's own keys: %v)", err, auxErr)
		}
	}
	return err
}
