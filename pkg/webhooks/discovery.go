package webhooks

import (
	"fmt"
	"path"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// validateDiscovery refuses matchers that can never match or that contradict
// another pool's: what the schema cannot say (quantities compared, patterns parsed,
// pools compared). The schema already refuses an empty matcher.
func validateDiscovery(at *field.Path, pools []linstorv1.StoragePool) field.ErrorList {
	var errs field.ErrorList
	type matcher struct {
		index    int
		criteria linstorv1.DiskDiscovery
	}
	var seen []matcher
	for i, p := range pools {
		if p.Source == nil || p.Source.Discover == nil {
			continue
		}
		d := p.Source.Discover
		dp := at.Index(i).Child("source", "discover")
		if d.MinSize != nil && d.MinSize.Sign() <= 0 {
			errs = append(errs, field.Invalid(dp.Child("minSize"), d.MinSize.String(), "must be more than zero"))
		}
		if d.MaxSize != nil && d.MaxSize.Sign() <= 0 {
			errs = append(errs, field.Invalid(dp.Child("maxSize"), d.MaxSize.String(), "must be more than zero"))
		}
		if d.MinSize != nil && d.MaxSize != nil && d.MinSize.Cmp(*d.MaxSize) > 0 {
			errs = append(errs, field.Invalid(dp.Child("maxSize"), d.MaxSize.String(), fmt.Sprintf("is less than minSize %s: no disk can match", d.MinSize)))
		}
		for j, pattern := range d.Models {
			if _, err := path.Match(pattern, ""); err != nil {
				errs = append(errs, field.Invalid(dp.Child("models").Index(j), pattern, "is not a valid shell pattern: "+err.Error()))
			}
		}
		for j, pattern := range d.DevicePaths {
			if _, err := path.Match(pattern, ""); err != nil {
				errs = append(errs, field.Invalid(dp.Child("devicePaths").Index(j), pattern, "is not a valid shell pattern: "+err.Error()))
			}
		}
		criteria := *d.DeepCopy()
		criteria.DryRun, criteria.MaxDisksPerNode = false, nil
		for _, other := range seen {
			if equality.Semantic.DeepEqual(criteria, other.criteria) {
				errs = append(errs, field.Invalid(dp, "", fmt.Sprintf("matches the same disks as %s: a disk matched by two pools is claimed by neither", at.Index(other.index).Child("source", "discover"))))
				break
			}
		}
		seen = append(seen, matcher{i, criteria})
	}
	return errs
}
