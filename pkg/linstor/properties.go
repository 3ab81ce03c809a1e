package linstor

import (
	"encoding/json"
	"sort"

	lapi "github.com/LINBIT/golinstor/client"
)

// LastAppliedKey holds the keys the operator set on a LINSTOR object.
const LastAppliedKey = "Aux/linstor-operator/last-applied"

// PropertyDiff returns the modification that takes current to desired. It is empty
// (IsEmpty) when current already matches.
func PropertyDiff(current, desired map[string]string) lapi.GenericPropsModify {
	return TrackedPropertyDiff(current, desired, LastAppliedKey)
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
