// Package linstorsatellite reconciles a LinstorSatellite: the LINSTOR node of one
// Kubernetes node, its properties and storage pools, its status as LINSTOR reports it,
// and what happens to the LINSTOR node when the satellite goes away.
package linstorsatellite
