package emulator

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	lapi "github.com/LINBIT/golinstor/client"
)

// defaultResourceGroup is the group every database starts with: DfltRscGrp, placing 2
// replicas (k8s Migration_01_v1_15_0_init creates it with replica count 2).
func defaultResourceGroup() lapi.ResourceGroup {
	return lapi.ResourceGroup{Name: "DfltRscGrp", SelectFilter: lapi.AutoSelectFilter{PlaceCount: 2}, Props: map[string]string{}}
}

// listResourceGroups answers GET /v1/resource-groups, sorted by name (the
// controller keeps them in a map sorted by ResourceGroupName, whose order is the
// upper-cased name's).
func (e *Emulator) listResourceGroups(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []lapi.ResourceGroup{defaultResourceGroup()}
	for _, g := range e.rgs {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b lapi.ResourceGroup) int {
		return strings.Compare(strings.ToUpper(a.Name), strings.ToUpper(b.Name))
	})
	writeJSON(w, http.StatusOK, out)
}

// SetResourceGroup adds or replaces a resource group placing placeCount replicas (what
// the CSI driver creates per StorageClass), and puts rd in it when rd is not "".
func (e *Emulator) SetResourceGroup(name string, placeCount int32, rd string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.rgs == nil {
		e.rgs = map[string]lapi.ResourceGroup{}
	}
	e.rgs[strings.ToLower(name)] = lapi.ResourceGroup{Name: name, SelectFilter: lapi.AutoSelectFilter{PlaceCount: placeCount}, Props: map[string]string{}}
	if rd != "" {
		def, ok := e.rds[strings.ToLower(rd)]
		if !ok {
			return fmt.Errorf("resource definition %q not found", rd)
		}
		def.ResourceGroupName = name
	}
	return nil
}
