package olm

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/linstor-operator/linstor-operator/pkg/linstor/emulator"
	"github.com/linstor-operator/linstor-operator/pkg/render"
)

// linstor is the LINSTOR emulator standing in for the LINSTOR controller pod: it serves
// the REST API at that pod's address on the HTTPS port, with the API certificate the
// operator generated and requiring its client certificate, under the Service name the
// operator dials (resolved by the world's /etc/hosts).
var linstor struct {
	emu    *emulator.Emulator
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	served string // the address served, once the pod ran
	err    error
	srv    *http.Server
}

func startLinstor() error {
	linstor.emu = emulator.New()
	linstor.emu.SetNewNodeDisksFunc(func(node string) []emulator.Disk {
		return []emulator.Disk{emulator.VirtioDisk(node, "/dev/vdb", 100<<30), emulator.VirtioDisk(node, "/dev/vdc", 200<<30)}
	})
	c, cancel := context.WithCancel(context.Background())
	linstor.cancel = cancel
	linstor.wg.Add(2)
	go func() {
		defer linstor.wg.Done()
		linstor.emu.Couple(c, emulator.Cluster{Reader: world.client, Namespace: namespace, Database: world.client, DisksFromNodes: true})
	}()
	go func() {
		defer linstor.wg.Done()
		err := serveLinstor(c)
		linstor.mu.Lock()
		linstor.err = err
		linstor.mu.Unlock()
	}()
	return nil
}

func stopLinstor() {
	if linstor.cancel == nil {
		return
	}
	linstor.cancel()
	linstor.mu.Lock()
	if linstor.srv != nil {
		_ = linstor.srv.Close()
	}
	linstor.mu.Unlock()
	linstor.wg.Wait()
}

// linstorState reports the address served so far and why serving failed, if it did.
func linstorState() (string, error) {
	linstor.mu.Lock()
	defer linstor.mu.Unlock()
	return linstor.served, linstor.err
}

// serveLinstor waits for the controller pod the operator deploys and the API certificate
// it generates, then serves the emulator as that pod would.
func serveLinstor(c context.Context) error {
	var (
		secret corev1.Secret
		podIP  string
	)
	for {
		select {
		case <-c.Done():
			return nil
		case <-time.After(500 * time.Millisecond):
		}
		if err := world.client.Get(c, client.ObjectKey{Namespace: namespace, Name: render.DefaultAPITLSSecret}, &secret); err != nil {
			continue
		}
		ip, err := controllerPodIP(c)
		if err != nil || ip == "" {
			continue
		}
		podIP = ip
		break
	}
	pair, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return fmt.Errorf("Secret %s: %w", render.DefaultAPITLSSecret, err)
	}
	clientCAs := x509.NewCertPool()
	if !clientCAs.AppendCertsFromPEM(secret.Data["ca.crt"]) {
		return fmt.Errorf("Secret %s has no ca.crt", render.DefaultAPITLSSecret)
	}
	if err := addAddress(podIP); err != nil {
		return err
	}
	addr := net.JoinHostPort(podIP, strconv.Itoa(render.SecureAPIPort))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: linstor.emu.Handler(), ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: clientCAs,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}}
	linstor.mu.Lock()
	linstor.srv, linstor.served = srv, addr
	linstor.mu.Unlock()
	if err := addHost(podIP, render.ControllerName+"."+namespace+".svc"); err != nil {
		return err
	}
	if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// controllerPodIP is the address kwok gave the Running pod of the LINSTOR controller's
// Deployment, "" while there is none.
func controllerPodIP(c context.Context) (string, error) {
	var dep appsv1.Deployment
	if err := world.client.Get(c, client.ObjectKey{Namespace: namespace, Name: render.ControllerName}, &dep); err != nil {
		return "", err
	}
	pods, err := runningPods(c, &dep)
	if err != nil || len(pods) == 0 {
		return "", err
	}
	return pods[0].Status.PodIP, nil
}

// runningPods lists the Deployment's Running pods that have an address.
func runningPods(c context.Context, dep *appsv1.Deployment) ([]corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	if err != nil {
		return nil, err
	}
	var pods corev1.PodList
	if err := world.client.List(c, &pods, client.InNamespace(dep.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}
