// Package linstorcluster reconciles a LinstorCluster: the LINSTOR controller workload,
// one LinstorSatellite per selected node, and the controller properties in LINSTOR.
package linstorcluster
