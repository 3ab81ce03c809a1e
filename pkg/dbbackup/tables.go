package dbbackup

import (
	"fmt"
	"slices"
)

// Tables are the plurals of every CRD LINSTOR's k8s backend has defined, in any schema
// version up to v1.33.3: the @Plural of each generated class in
// server/generated-dbdrivers/.../k8s/crd/GenCrd*.java, plus LinstorVersionCrd
// ("linstorversion") and RollbackCrd ("rollback") in server/src/.../k8s/crd. The
// operator may update and delete only these CRDs (config/rbac), and a restore checks
// every CRD it would touch against them before it changes anything.
var Tables = []string{
	"ebsremotes", "files", "keyvaluestore",
	"layerbcachevolumes", "layercachevolumes", "layerdrbdresourcedefinitions", "layerdrbdresources",
	"layerdrbdvolumedefinitions", "layerdrbdvolumes", "layerluksvolumes", "layeropenflexresourcedefinitions",
	"layeropenflexvolumes", "layerresourceids", "layerstoragevolumes", "layerwritecachevolumes",
	"linstorremotes", "linstorversion",
	"nodeconnections", "nodenetinterfaces", "nodes", "nodestorpool",
	"propscontainers",
	"resourceconnections", "resourcedefinitions", "resourcegroups", "resources", "rollback",
	"s3remotes", "satellitescapacity", "schedules",
	"secaccesstypes", "secaclmap", "secconfiguration", "secdfltroles", "secidentities", "secidrolemap",
	"secobjectprotection", "secroles", "sectyperules", "sectypes",
	"spacehistory", "storpooldefinitions", "trackingdate",
	"volumeconnections", "volumedefinitions", "volumegroups", "volumes",
}

// TableCRDs are the CRD names of Tables.
func TableCRDs() []string {
	out := make([]string, len(Tables))
	for i, t := range Tables {
		out[i] = t + "." + Group
	}
	return out
}

// checkKnownTables refuses CRDs of LINSTOR's group that are not in Tables: the operator
// may not change them (RBAC), and finding that out halfway through a restore would
// leave the database half restored.
func checkKnownTables(names []string) error {
	known := TableCRDs()
	var unknown []string
	for _, n := range names {
		if !slices.Contains(known, n) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return fmt.Errorf("LINSTOR database tables %v are unknown to this operator release, which may not change them: upgrade the operator before restoring", unknown)
	}
	return nil
}
