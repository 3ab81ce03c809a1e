package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/linstor-operator/linstor-operator/internal/kwokcluster"
)

// benchCluster is the demo's kwok cluster (same binaries, workdir and owner file, so
// `make demo-down` removes one a killed bench left) with the kube-apiserver's audit log.
type benchCluster struct {
	*kwokcluster.Cluster
	// AuditLog is where kwokctl's binary runtime has the apiserver write it
	// (`kwokctl logs audit --name <name>` prints it).
	AuditLog string
}

func createCluster(ctx context.Context, root, name, policyFile string) (*benchCluster, error) {
	cl, err := kwokcluster.Create(ctx, root, name, "--kube-audit-policy", policyFile)
	if err != nil {
		return nil, err
	}
	c := &benchCluster{Cluster: cl, AuditLog: filepath.Join(cl.Dir(), "logs", "audit.log")}
	if _, err := os.Stat(c.AuditLog); err != nil {
		_ = c.Delete()
		return nil, fmt.Errorf("kwokctl did not create the audit log: %w", err)
	}
	// The bench's own requests must not pass for the operator's in the audit log.
	c.Config.UserAgent = "linstor-bench/" + kwokcluster.KubernetesVersion
	return c, nil
}
