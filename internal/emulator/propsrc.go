package emulator

import (
	"maps"
	"slices"
	"strings"

	lapiconst "github.com/LINBIT/golinstor"
	lapi "github.com/LINBIT/golinstor/client"

	"github.com/linstor-operator/linstor-operator/pkg/linstor/props"
)

// propRefused is the answer to a refused property (CtrlPropsHelper.fillProperties and
// remove): FAIL_INVLD_PROP, HTTP 500, and the whole request changes nothing.
func propRefused(err props.Error, ctx uint64) apiCallRc {
	if err.UnknownKey {
		return rc(lapiconst.FailInvldProp|ctx, "Invalid property key: %s", err.Key).withCause("The key '%s' is not whitelisted.", err.Key)
	}
	return rc(lapiconst.FailInvldProp|ctx, "Invalid property(%s) value: %s", err.Key, err.Value).
		withCause("The value '%s' is not valid for the key '%s'", err.Value, err.Key).withDetails("%s", err.Reason)
}

// setProps validates and stores overrides into m, which the caller owns; on a refusal
// m may hold some of them, so callers pass a copy they drop on failure.
func setProps(obj props.Object, m map[string]string, in map[string]string) ([]string, *props.Error) {
	keys := slices.Sorted(maps.Keys(in))
	for _, k := range keys {
		if err := props.Check(obj, k, in[k]); err != nil {
			return nil, asPropsError(err)
		}
		m[k] = props.Normalize(obj, k, in[k])
	}
	return keys, nil
}

func asPropsError(err error) *props.Error {
	if pe, ok := err.(*props.Error); ok {
		return pe
	}
	return &props.Error{Reason: err.Error()}
}

// modifyProps applies a GenericPropsModify the way the server does for one object:
// overrides, then deletes (a key that is not whitelisted is refused even when absent;
// a whitelisted absent key is fine), then namespaces (refused when any key stored
// under the namespace is not whitelisted). It works on a copy: on a refusal the
// current map is untouched, as the server's transaction rolls back.
func modifyProps(obj props.Object, current map[string]string, mod lapi.GenericPropsModify, objMask uint64) ([]apiCallRc, map[string]string, *apiCallRc) {
	next := maps.Clone(current)
	if next == nil {
		next = map[string]string{}
	}
	var answer []apiCallRc
	if len(mod.OverrideProps) > 0 {
		set, bad := setProps(obj, next, mod.OverrideProps)
		if bad != nil {
			refused := propRefused(*bad, objMask|lapiconst.MaskMod)
			return nil, nil, &refused
		}
		answer = append(answer, rc(objMask|lapiconst.MaskCrt|lapiconst.Created, "Successfully set property key(s): %s", strings.Join(set, ",")))
	}
	var deleted []string
	for _, k := range mod.DeleteProps {
		if err := props.CheckDelete(obj, k); err != nil {
			refused := rc(lapiconst.FailInvldProp|objMask|lapiconst.MaskMod, "Invalid property key").withCause("The key '%s' is not whitelisted.", k)
			return nil, nil, &refused
		}
		if _, ok := next[k]; ok {
			delete(next, k)
		}
		deleted = append(deleted, k)
	}
	if len(deleted) > 0 {
		answer = append(answer, rc(objMask|lapiconst.MaskDel|lapiconst.Deleted, "Successfully deleted property key(s): %s", strings.Join(deleted, ",")))
	}
	for _, ns := range mod.DeleteNamespaces {
		prefix := strings.TrimSuffix(ns, "/") + "/"
		for _, k := range slices.Sorted(maps.Keys(next)) {
			if !strings.HasPrefix(k, prefix) {
				continue
			}
			if err := props.CheckDelete(obj, k); err != nil {
				refused := rc(lapiconst.FailInvldProp|objMask|lapiconst.MaskMod, "Invalid property key").withCause("The key '%s' is not whitelisted.", k)
				return nil, nil, &refused
			}
			delete(next, k)
		}
	}
	return answer, next, nil
}
