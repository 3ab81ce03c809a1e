package webhooks

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/satellite"
)

// The CRDs' self == oldSelf rules hold only for the version written and only while the
// field is present: removing it (or its parent) or writing through v1alpha1 (which has
// no transition rules) would get around them. These checks run in the webhook, which
// the API server calls with the object converted to v1 whatever version was written
// (matchPolicy Equivalent), on the effective values: defaults included.

// effectiveDatabaseType is spec.database.type with its default.
func effectiveDatabaseType(db *linstorv1.DatabaseSpec) linstorv1.DatabaseType {
	if db == nil || db.Type == "" {
		return linstorv1.DatabaseK8s
	}
	return db.Type
}

func immutableCluster(old, new *linstorv1.LinstorClusterSpec) field.ErrorList {
	if o, n := effectiveDatabaseType(old.Database), effectiveDatabaseType(new.Database); o != n {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "database", "type"), n,
			fmt.Sprintf("spec.database.type is immutable (it is %s; removing the field means %s): moving LINSTOR's database needs a backup and restore", o, linstorv1.DatabaseK8s))}
	}
	return nil
}

// immutablePools: a pool that stays (same name, ignoring case like LINSTOR) keeps its
// type and what backs it (volume group, thin pool, zpool, directory, defaults
// included). A pool may be removed; one added later under the same name is new.
func immutablePools(path *field.Path, old, new []linstorv1.StoragePool) field.ErrorList {
	before := map[string]*linstorv1.StoragePool{}
	for i := range old {
		before[strings.ToLower(old[i].Name)] = &old[i]
	}
	var errs field.ErrorList
	for i := range new {
		o, ok := before[strings.ToLower(new[i].Name)]
		if !ok {
			continue
		}
		oldKind, oldProps := satellite.Provider(o)
		newKind, newProps := satellite.Provider(&new[i])
		at := path.Index(i)
		if oldKind != newKind {
			errs = append(errs, field.Invalid(at, new[i].Name, fmt.Sprintf("the pool type is immutable (%s, now %s): remove the pool and add one with a new name instead", oldKind, newKind)))
			continue
		}
		keys := make([]string, 0, len(oldProps))
		for k := range oldProps {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if oldProps[k] != newProps[k] {
				errs = append(errs, field.Invalid(at, new[i].Name, fmt.Sprintf("what backs a pool is immutable: %s would change from %q to %q (defaults included); remove the pool and add one with a new name instead",
					strings.TrimPrefix(k, "StorDriver/"), oldProps[k], newProps[k])))
			}
		}
	}
	return errs
}
