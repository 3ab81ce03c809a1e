// Package manager wires the operator: scheme, controller-runtime manager, webhooks and
// controllers. main.go, the demo and the envtest harness all start the operator through
// it, so tests exercise the same wiring that ships.
package manager
