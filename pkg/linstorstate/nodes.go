package linstorstate

import (
	"strings"

	lapi "github.com/LINBIT/golinstor/client"
)

// Node types as a real controller sends them: the names of the server's Node.Type
// enum (core/objects/Node.java), upper case. golinstor's ValNodeType* constants are
// spelled "Controller", "Satellite", so every comparison is case-insensitive.
const (
	NodeTypeController = "CONTROLLER"
	NodeTypeSatellite  = "SATELLITE"
	NodeTypeCombined   = "COMBINED"
	NodeTypeAuxiliary  = "AUXILIARY"
)

// NodeTypeIs reports whether the node's type is typ, whatever the spelling.
func NodeTypeIs(n lapi.Node, typ string) bool { return strings.EqualFold(n.Type, typ) }

// RunsSatellite reports whether LINSTOR connects to a satellite process for the node:
// SATELLITE and COMBINED nodes. A CONTROLLER or AUXILIARY node has none, and the
// special types (REMOTE_SPDK, EBS_TARGET) are served by another satellite, so their
// connection state says nothing about a pod the operator runs.
func RunsSatellite(n lapi.Node) bool {
	return NodeTypeIs(n, NodeTypeSatellite) || NodeTypeIs(n, NodeTypeCombined)
}

// HasFlag reports whether a LINSTOR flag list holds flag (flags are enum names).
func HasFlag(flags []string, flag string) bool {
	for _, f := range flags {
		if strings.EqualFold(f, flag) {
			return true
		}
	}
	return false
}

// equalFold compares LINSTOR names, which the server treats case-insensitively.
func equalFold(a, b string) bool { return strings.EqualFold(a, b) }
