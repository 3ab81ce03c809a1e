package webhooks

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/linstor/props"
)

// validateProperties checks keys and values against LINSTOR's whitelist for obj, so a
// typo is refused here, naming the field, instead of LINSTOR refusing the whole
// request later (it rolls back every key of a request for one bad key).
func validateProperties(path *field.Path, obj props.Object, list []linstorv1.Property) field.ErrorList {
	var errs field.ErrorList
	for i, p := range list {
		errs = append(errs, propertyError(path.Index(i), obj, p.Name, p.Value, true)...)
	}
	return errs
}

// validateNodeProperties is validateProperties for node properties; a value taken
// from the node (valueFrom) is known only at reconcile time, so only its key is checked.
func validateNodeProperties(path *field.Path, list []linstorv1.NodeProperty) field.ErrorList {
	var errs field.ErrorList
	for i, p := range list {
		if p.ExpandFrom != nil {
			continue // its names are generated: validateNodePropertySources
		}
		errs = append(errs, propertyError(path.Index(i), props.Node, p.Name, p.Value, p.ValueFrom == nil)...)
	}
	return errs
}

func propertyError(path *field.Path, obj props.Object, key, value string, checkValue bool) field.ErrorList {
	var err error
	if checkValue {
		err = props.Check(obj, key, value)
	} else {
		err = props.CheckDelete(obj, key) // the key alone
	}
	if err == nil {
		return nil
	}
	if pe, ok := err.(*props.Error); ok && !pe.UnknownKey {
		return field.ErrorList{field.Invalid(path.Child("value"), value, pe.Error())}
	}
	return field.ErrorList{field.Invalid(path.Child("name"), key, err.Error())}
}

// validateStoragePools checks what LINSTOR checks of pools: names are unique ignoring
// case (StorPoolName compares upper-cased) and the default diskless pool cannot be
// configured; each pool's properties against the storage pool whitelist.
func validateStoragePools(path *field.Path, pools []linstorv1.StoragePool) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]int{}
	for i, p := range pools {
		at := path.Index(i)
		key := strings.ToLower(p.Name)
		if j, dup := seen[key]; dup {
			errs = append(errs, field.Duplicate(at.Child("name"), p.Name+" (LINSTOR pool names ignore case; see "+path.Index(j).Child("name").String()+")"))
		}
		seen[key] = i
		if key == "dfltdisklessstorpool" {
			errs = append(errs, field.Invalid(at.Child("name"), p.Name, "is the default diskless pool LINSTOR creates on every node"))
		}
		errs = append(errs, validateProperties(at.Child("properties"), props.StoragePool, p.Properties)...)
	}
	return append(errs, validateDiscovery(path, pools)...)
}

// validateNetInterfaces: net interface names are unique ignoring case in LINSTOR.
func validateNetInterfaces(path *field.Path, nifs []linstorv1.NetInterface) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, n := range nifs {
		if seen[strings.ToLower(n.Name)] {
			errs = append(errs, field.Duplicate(path.Index(i).Child("name"), n.Name+" (LINSTOR interface names ignore case)"))
		}
		seen[strings.ToLower(n.Name)] = true
	}
	return errs
}
