// Package bundle generates the OLM bundle (registry+v1) from the project's sources, as
// operator-sdk's `generate bundle` would (its CLI cannot be installed here):
//
//  1. Start from the CSV base in config/manifests/bases.
//  2. Owned CRDs: every served version of every CRD in config/crd/bases, with display
//     names, descriptions, resources and spec/status descriptors read from the
//     +operator-sdk:csv markers in api/v1.
//  3. Install strategy: the manager Deployment from config/manager (image and
//     RELATED_IMAGE_* env set), cluster permissions from the ClusterRoles bound to its
//     service account, namespace permissions from the Roles.
//  4. Webhook definitions: one ConversionWebhook for the multi-version CRDs, and the
//     validating webhooks of config/webhook.
//  5. relatedImages from the release image set, alm-examples from the v1 samples.
//  6. The release's upgrade edges (spec.replaces, spec.skips, olm.skipRange) as the
//     catalog's channels give them (UpgradeEdges), com.redhat.openshift.versions, and
//     app.kubernetes.io/managed-by: olm on every object.
//  7. Write bundle/manifests, bundle/metadata/annotations.yaml and the scorecard config.
package bundle
