// Package grafana carries the LINSTOR dashboard into the operator binary, which ships
// it as a ConfigMap the Grafana sidecar and the OpenShift console pick up.
package grafana

import _ "embed"

// Dashboard is the dashboard's Grafana JSON model.
//
//go:embed linstor.json
var Dashboard []byte

// FileName is the dashboard's key in the ConfigMap.
const FileName = "linstor.json"
