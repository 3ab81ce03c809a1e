// Package prometheus carries the alerting rules into the operator binary, which ships
// them as a PrometheusRule when the Prometheus Operator is installed. The directory is
// also a kustomization for clusters that run Prometheus without the operator's help.
package prometheus

import _ "embed"

// Rules is rules.yaml: a PrometheusRule whose spec holds every alert of docs/alerts.md.
//
//go:embed rules.yaml
var Rules []byte
