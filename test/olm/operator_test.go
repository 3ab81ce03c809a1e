package olm

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	testenv "github.com/linstor-operator/linstor-operator/test/envtest"
)

// olmCertDir is where OLM mounts the webhook serving certificate it generated (and
// main.go's default for --webhook-cert-dir).
const olmCertDir = "/tmp/k8s-webhook-server/serving-certs"

// serviceAccountDir is where a pod finds its ServiceAccount's token, namespace and CA.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// operatorPod is the operator process standing in for the pods of the Deployment OLM
// created.
type operatorPod struct {
	proc *process
	// image is the pods' operator image, which decided the binary.
	image string
	// pods are the Deployment's pods the process serves: it listens on every address of
	// the namespace, and each pod's address is one of them.
	pods []corev1.Pod
	env  map[string]string
	args []string
	// certSecret is the Secret OLM generated for the webhook Service.
	certSecret string
	// account is the pod's ServiceAccount, whose token the process uses.
	account string
	// kubeconfig authenticates as account.
	kubeconfig string
}

// startOperatorAsPod runs the operator binary as the Deployment's pods would run it: the
// container's args and environment (fieldRefs resolved against the pod), OLM's serving
// certificate, a token of the pod's ServiceAccount (so only the CSV's RBAC applies), and
// the pods' addresses on the namespace's loopback.
func startOperatorAsPod(dep *appsv1.Deployment) (*operatorPod, error) {
	pods, err := runningPodsOf(ctx, dep)
	if err != nil {
		return nil, err
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("Deployment %s has no Running pod", dep.Name)
	}
	pod := pods[0]
	ctr, err := managerContainer(&pod)
	if err != nil {
		return nil, err
	}
	// The kubelet runs the pod's image: the binary built from that release's sources.
	binary, ok := world.binaries[ctr.Image]
	if !ok {
		return nil, fmt.Errorf("pod %s runs image %s, which no release of the world has", pod.Name, ctr.Image)
	}
	for _, p := range pods[1:] {
		if other, err := managerContainer(&p); err != nil || other.Image != ctr.Image {
			return nil, fmt.Errorf("pods %s and %s run different images: a rollout is under way", pod.Name, p.Name)
		}
	}
	op := &operatorPod{pods: pods, env: map[string]string{}, account: pod.Spec.ServiceAccountName, image: ctr.Image}
	if op.account == "" {
		op.account = "default"
	}
	if len(ctr.EnvFrom) > 0 {
		return nil, fmt.Errorf("container %s: envFrom is not resolved by this test", ctr.Name)
	}
	for _, e := range ctr.Env {
		v, err := envValue(&pod, e)
		if err != nil {
			return nil, err
		}
		op.env[e.Name] = v
	}
	for _, a := range ctr.Args {
		if strings.Contains(a, "$(") {
			return nil, fmt.Errorf("container %s: argument %q references a variable this test does not expand", ctr.Name, a)
		}
	}

	dir := filepath.Join(world.work, "serving-certs")
	if op.certSecret, err = writeServingCert(&pod, ctr, dir); err != nil {
		return nil, err
	}
	op.kubeconfig = filepath.Join(world.work, "operator.kubeconfig")
	if err := writeAccountKubeconfig(namespace, op.account, op.kubeconfig); err != nil {
		return nil, err
	}
	for _, p := range pods {
		if err := addAddress(p.Status.PodIP); err != nil {
			return nil, err
		}
	}

	env := []string{"KUBECONFIG=" + op.kubeconfig}
	for k, v := range op.env {
		env = append(env, k+"="+v)
	}
	op.args = append(append([]string{}, ctr.Args...), "--webhook-cert-dir="+dir)
	name := "operator-" + ctr.Image[strings.LastIndex(ctr.Image, ":")+1:]
	if err := startProcess(name, env, binary, op.args...); err != nil {
		return nil, err
	}
	op.proc = world.procs[len(world.procs)-1]
	// Ready as the kubelet would see it: the container's readiness probe at the pod's
	// address (the operator is ready once its webhook server serves).
	probe := ctr.ReadinessProbe
	if probe == nil || probe.HTTPGet == nil {
		return nil, fmt.Errorf("container %s has no HTTP readiness probe", ctr.Name)
	}
	port := probe.HTTPGet.Port.IntValue()
	if port == 0 {
		for _, p := range ctr.Ports {
			if p.Name == probe.HTTPGet.Port.String() {
				port = int(p.ContainerPort)
			}
		}
	}
	url := "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(port)) + probe.HTTPGet.Path
	err = testenv.WaitFor(250*time.Millisecond, time.Minute, func() (bool, error) {
		if ended, err := op.proc.exited(); ended {
			return false, fmt.Errorf("the operator exited: %v", err)
		}
		resp, err := http.Get(url)
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("%s: %s", url, resp.Status)
	})
	if err != nil {
		return nil, fmt.Errorf("the operator never became ready: %w", err)
	}
	return op, nil
}

// managerContainer is the pod's default container (kubectl's annotation), else its first.
func managerContainer(pod *corev1.Pod) (*corev1.Container, error) {
	name := pod.Annotations["kubectl.kubernetes.io/default-container"]
	for i := range pod.Spec.Containers {
		if name == "" || pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i], nil
		}
	}
	return nil, fmt.Errorf("pod %s has no container %q", pod.Name, name)
}

// envValue resolves an environment variable as the kubelet would for pod.
func envValue(pod *corev1.Pod, e corev1.EnvVar) (string, error) {
	if e.ValueFrom == nil {
		return e.Value, nil
	}
	if f := e.ValueFrom.FieldRef; f != nil {
		switch f.FieldPath {
		case "metadata.namespace":
			return pod.Namespace, nil
		case "metadata.name":
			return pod.Name, nil
		case "metadata.uid":
			return string(pod.UID), nil
		case "spec.serviceAccountName":
			return pod.Spec.ServiceAccountName, nil
		case "spec.nodeName":
			return pod.Spec.NodeName, nil
		case "status.podIP":
			return pod.Status.PodIP, nil
		case "status.hostIP":
			return pod.Status.HostIP, nil
		}
		return "", fmt.Errorf("env %s: fieldRef %s is not resolved by this test", e.Name, f.FieldPath)
	}
	if r := e.ValueFrom.SecretKeyRef; r != nil {
		var s corev1.Secret
		if err := world.client.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: r.Name}, &s); err != nil {
			return "", fmt.Errorf("env %s: %w", e.Name, err)
		}
		return string(s.Data[r.Key]), nil
	}
	if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
		var cm corev1.ConfigMap
		if err := world.client.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: r.Name}, &cm); err != nil {
			return "", fmt.Errorf("env %s: %w", e.Name, err)
		}
		return cm.Data[r.Key], nil
	}
	return "", fmt.Errorf("env %s: valueFrom is not resolved by this test", e.Name)
}

// writeServingCert writes the Secret mounted at OLM's certificate path into dir, as the
// kubelet would mount it, and returns the Secret's name.
func writeServingCert(pod *corev1.Pod, ctr *corev1.Container, dir string) (string, error) {
	var volume string
	for _, m := range ctr.VolumeMounts {
		if m.MountPath == olmCertDir {
			volume = m.Name
		}
	}
	if volume == "" {
		return "", fmt.Errorf("container %s mounts nothing at %s: %+v", ctr.Name, olmCertDir, ctr.VolumeMounts)
	}
	var src *corev1.SecretVolumeSource
	for _, v := range pod.Spec.Volumes {
		if v.Name == volume {
			src = v.Secret
		}
	}
	if src == nil {
		return "", fmt.Errorf("volume %s mounted at %s is not a Secret", volume, olmCertDir)
	}
	var s corev1.Secret
	if err := world.client.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: src.SecretName}, &s); err != nil {
		return "", err
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	files := map[string]string{}
	if len(src.Items) == 0 {
		for k := range s.Data {
			files[k] = k
		}
	}
	for _, it := range src.Items {
		files[it.Key] = it.Path
	}
	for key, path := range files {
		if err := os.WriteFile(filepath.Join(dir, path), s.Data[key], 0o600); err != nil {
			return "", err
		}
	}
	for _, need := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
		if _, err := os.Stat(filepath.Join(dir, need)); err != nil {
			return "", fmt.Errorf("Secret %s mounted at %s yields no %s", s.Name, olmCertDir, need)
		}
	}
	return s.Name, nil
}

// writeAccountKubeconfig writes a kubeconfig that authenticates as ServiceAccount
// namespace/account with a token from the TokenRequest API, as a pod's projected token.
//
// The token, the namespace and the CA are also written where the kubelet mounts them in
// the pod (/var/run/secrets/kubernetes.io/serviceaccount, on the world's private /run):
// operator-lib reads the operator's namespace from there. The API server's address stays
// the kubeconfig's: its certificate does not name the kubernetes Service.
func writeAccountKubeconfig(ns, account, path string) error {
	token, ca, err := tokenKubeconfig(ns, account, path)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(serviceAccountDir, 0o755); err != nil {
		return err
	}
	for name, data := range map[string][]byte{"token": []byte(token), "namespace": []byte(ns), "ca.crt": ca} {
		if err := os.WriteFile(filepath.Join(serviceAccountDir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// tokenKubeconfig writes a kubeconfig that authenticates as ServiceAccount ns/account
// with a token from the TokenRequest API, and returns the token and the API server's CA.
func tokenKubeconfig(ns, account, path string) (token string, ca []byte, err error) {
	if token, err = accountToken(ns, account); err != nil {
		return "", nil, err
	}
	cfg := world.cluster.Config
	ca = cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return "", nil, err
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["kwok"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: ca}
	kc.AuthInfos[account] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["pod"] = &clientcmdapi.Context{Cluster: "kwok", AuthInfo: account, Namespace: ns}
	kc.CurrentContext = "pod"
	return token, ca, clientcmd.WriteToFile(*kc, path)
}

// accountToken is a token of ServiceAccount ns/account.
func accountToken(ns, account string) (string, error) {
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](4 * 3600)}}
	sa := &corev1.ServiceAccount{}
	sa.Namespace, sa.Name = ns, account
	if err := world.client.SubResource("token").Create(ctx, sa, tr); err != nil {
		return "", fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", ns, account, err)
	}
	return tr.Status.Token, nil
}
