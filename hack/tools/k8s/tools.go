//go:build tools

// Package tools records the Kubernetes commands this module builds: the control plane
// and kubectl (the command `make demo` prints uses it).
package tools

import (
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	_ "k8s.io/kubectl/pkg/cmd"
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
)
