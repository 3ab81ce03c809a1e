// Package envtest runs a package's tests against a real kube-apiserver and etcd
// (controller-runtime envtest with binaries the project builds itself), with the
// CRDs, the webhooks (conversion included) and the operator's manager running.
//
// Use it from TestMain:
//
//	var env *envtest.Env
//	func TestMain(m *testing.M) { os.Exit(envtest.Run(m, envtest.Options{}, &env)) }
//
// It also holds, once, the helpers several suites share (envtest stories, e2e, OLM, the
// bundle tools, the bench): Update, RunningPods, WaitFor, ShowTail, OPMBinary, LogOperatorTo,
// NothingLeft and Listening.
package envtest
