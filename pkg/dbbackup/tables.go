package dbbackup

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// StoredSchema reads LINSTOR's LinstorVersion/version: the number of the last k8s
// migration its database ran plus one (DbK8sCrd.migrate stores getNextVersion), 0 when
// the table or the object is missing.
func StoredSchema(ctx context.Context, c client.Reader) (int64, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(Group + "/v1")
	u.SetKind("LinstorVersion")
	err := c.Get(ctx, client.ObjectKey{Name: "version"}, u)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("reading LINSTOR's LinstorVersion: %w", err)
	}
	n, _, err := unstructured.NestedInt64(u.Object, "spec", "version")
	if err != nil {
		return 0, fmt.Errorf("reading LINSTOR's LinstorVersion: %w", err)
	}
	return n, nil
}
