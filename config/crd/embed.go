// Package crd carries the generated CRDs into the operator binary: the admission
// webhook checks writes made through an older version against the storage version's
// own schema and rules (pkg/crdschema).
package crd

import "embed"

// Bases are the CRDs `make manifests` generates.
//
//go:embed bases/*.yaml
var Bases embed.FS
