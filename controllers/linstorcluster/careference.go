package linstorcluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/linstor-operator/linstor-operator/pkg/clustertls"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/linstor"
)

// checkCAReferences reads the CA of every channel that names one (spec.tls.<channel>.
// caReference): the pods mount it and the operator verifies LINSTOR's API with it, so
// a missing or empty one stops the workloads here, as a missing certificate does. There
// is no fallback to the Secrets' ca.crt or to an unverified connection.
func (r *Reconciler) checkCAReferences(ctx context.Context, s *scope) error {
	for _, ch := range []struct {
		name string
		ref  *linstorv1.CAReference
	}{{"internal", clustertls.InternalCAReference(s.cluster)}, {"api", clustertls.APICAReference(s.cluster)}} {
		if ch.ref == nil {
			continue
		}
		if _, err := linstor.ReadCAReference(ctx, r.Client, s.cluster.Namespace, ch.ref); err != nil {
			s.tlsMissing = errors.Is(err, linstor.ErrCAReferenceMissing)
			return fmt.Errorf("spec.tls.%s.caReference: %w", ch.name, err)
		}
	}
	return nil
}

// hasCAReference: the CA of Secret name's channel comes from a caReference, so the
// Secret need not carry a ca.crt.
func hasCAReference(c *linstorv1.LinstorCluster, name string) bool {
	if clustertls.InternalCAReference(c) != nil && name == clustertls.InternalTLSSecretName(c) {
		return true
	}
	return clustertls.APICAReference(c) != nil && (name == clustertls.APITLSSecretName(c) || name == clustertls.APIClientSecretName(c))
}
