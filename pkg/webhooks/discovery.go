package webhooks

import (
	"fmt"
	"path"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/discovery"
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
		// Fields that do not change which disks match: equal matchers still take the same disks.
		criteria.DryRun, criteria.MaxDisksPerNode, criteria.AllowAnyDisk = false, nil, false
		// media and its older form rotational are one criterion.
		criteria.Rotational, criteria.Media = d.WantsRotational(), ""
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

// validateDiscoveryAcknowledged refuses a matcher that could claim any unused disk of
// a node (no models, no devicePaths) unless allowAnyDisk acknowledges it. A pool whose
// matcher the update leaves as it was is not judged again: objects made before this
// rule stay writable (the controller claims nothing for them and says why).
func validateDiscoveryAcknowledged(at *field.Path, pools, old []linstorv1.StoragePool) field.ErrorList {
	var errs field.ErrorList
	for i, p := range pools {
		if p.Source == nil || p.Source.Discover == nil || p.Source.Discover.DryRun || !discovery.NeedsAcknowledgement(p.Source.Discover) {
			continue
		}
		if unchangedMatcher(p, old) {
			continue
		}
		errs = append(errs, field.Invalid(at.Index(i).Child("source", "discover", "allowAnyDisk"), false,
			"a matcher without models or devicePaths (or whose patterns match every disk, such as \"*\" or \"/dev/*\") takes every unused disk of every node it applies to, including a disk holding data that has no signature lsblk recognizes "+
				"(a raw database device, another system's unlabelled disk); name the disks with models or devicePaths, try it with dryRun, or set allowAnyDisk: true to acknowledge"))
	}
	return errs
}

func unchangedMatcher(p linstorv1.StoragePool, old []linstorv1.StoragePool) bool {
	for _, o := range old {
		if o.Name == p.Name && o.Source != nil && o.Source.Discover != nil {
			return equality.Semantic.DeepEqual(o.Source.Discover, p.Source.Discover)
		}
	}
	return false
}
