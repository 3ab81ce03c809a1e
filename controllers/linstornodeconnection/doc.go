// Package linstornodeconnection reconciles LinstorNodeConnections: connection properties
// and DRBD paths on the LINSTOR node connections of the selected node pairs.
package linstornodeconnection
