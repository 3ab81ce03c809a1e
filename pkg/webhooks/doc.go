// Package webhooks holds the admission checks CEL cannot express (one LinstorCluster
// per Kubernetes cluster, pod-template patch syntax and privilege) and registers the
// /convert endpoint for every multi-version kind, with its request body limited (limit.go).
package webhooks
