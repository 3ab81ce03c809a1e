package olm

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/linstor-operator/linstor-operator/internal/emulator"
	testenv "github.com/linstor-operator/linstor-operator/test/envtest"
)

// linstor is the LINSTOR emulator standing in for the LINSTOR controller pod: it serves
// the REST API at that pod's address on the HTTPS port, with the API certificate the
// operator generated and requiring its client certificate, under the Service name the
// operator dials (resolved by the world's /etc/hosts).
var linstor struct {
	emu    *emulator.Emulator
	cancel context.CancelFunc
	wg     sync.WaitGroup // the coupling and the loop that follows the controller pod
	// servers are the HTTPS servers' goroutines.
	servers sync.WaitGroup

	mu     sync.Mutex
	served string // the address served now, "" while there is no controller pod
	// addresses are the controller pods' addresses served, in order.
	addresses []string
	err       error
	srv       *http.Server
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
		if err := serveLinstor(c); err != nil {
			linstor.mu.Lock()
			linstor.err = err
			linstor.mu.Unlock()
		}
	}()
	return nil
}

func stopLinstor() {
	if linstor.cancel == nil {
		return
	}
	linstor.cancel()
	linstor.wg.Wait() // nothing serves anew
	stopServingLinstor()
	linstor.servers.Wait()
}

// linstorAddresses are the addresses served so far, one per controller pod.
func linstorAddresses() []string {
	linstor.mu.Lock()
	defer linstor.mu.Unlock()
	return slices.Clone(linstor.addresses)
}

// linstorState reports the address served so far and why serving failed, if it did.
func linstorState() (string, error) {
	linstor.mu.Lock()
	defer linstor.mu.Unlock()
	return linstor.served, linstor.err
}

// serveLinstor serves the emulator as the LINSTOR controller pod would, at that pod's
// address with the API certificate the operator generated, and follows the pod: when an
// upgrade or a backup replaces it, the old address stops answering and the new pod's
// serves, under the same Service name.
func serveLinstor(c context.Context) error {
	for {
		select {
		case <-c.Done():
			return nil
		case <-time.After(500 * time.Millisecond):
		}
		ip, err := controllerPodIP(c)
		if err != nil && !apierrors.IsNotFound(err) {
			continue // asked again in a moment
		}
		linstor.mu.Lock()
		served := linstor.served
		linstor.mu.Unlock()
		if served != "" && (ip == "" || served != net.JoinHostPort(ip, strconv.Itoa(names.SecureAPIPort))) {
			stopServingLinstor() // its pod is gone
		}
		if ip == "" || (served != "" && served == net.JoinHostPort(ip, strconv.Itoa(names.SecureAPIPort))) {
			continue
		}
		var secret corev1.Secret
		if err := world.client.Get(c, client.ObjectKey{Namespace: namespace, Name: names.DefaultAPITLSSecret}, &secret); err != nil {
			continue
		}
		// A failure (a Secret caught mid-update, an address not ready) is reported and
		// tried again: following the pod must not end.
		err = serveLinstorAt(ip, &secret)
		linstor.mu.Lock()
		linstor.err = err
		linstor.mu.Unlock()
	}
}

func serveLinstorAt(podIP string, secret *corev1.Secret) error {
	pair, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return fmt.Errorf("Secret %s: %w", names.DefaultAPITLSSecret, err)
	}
	clientCAs := x509.NewCertPool()
	if !clientCAs.AppendCertsFromPEM(secret.Data["ca.crt"]) {
		return fmt.Errorf("Secret %s has no ca.crt", names.DefaultAPITLSSecret)
	}
	if err := addAddress(podIP); err != nil {
		return err
	}
	addr := net.JoinHostPort(podIP, strconv.Itoa(names.SecureAPIPort))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: linstor.emu.Handler(), ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: clientCAs,
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}}
	linstor.mu.Lock()
	linstor.srv, linstor.served = srv, addr
	linstor.addresses = append(linstor.addresses, addr)
	linstor.mu.Unlock()
	if err := setHosts(map[string]string{names.ControllerName + "." + namespace + ".svc": podIP}); err != nil {
		return err
	}
	linstor.servers.Add(1)
	go func() {
		defer linstor.servers.Done()
		if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			linstor.mu.Lock()
			linstor.err = err
			linstor.mu.Unlock()
		}
	}()
	return nil
}

// stopServingLinstor closes the server of a controller pod that is gone.
func stopServingLinstor() {
	linstor.mu.Lock()
	defer linstor.mu.Unlock()
	if linstor.srv != nil {
		_ = linstor.srv.Close()
	}
	linstor.srv, linstor.served = nil, ""
}

// controllerPodIP is the address kwok gave the Running pod of the LINSTOR controller's
// Deployment, "" while there is none.
func controllerPodIP(c context.Context) (string, error) {
	var dep appsv1.Deployment
	if err := world.client.Get(c, client.ObjectKey{Namespace: namespace, Name: names.ControllerName}, &dep); err != nil {
		return "", err
	}
	pods, err := runningPodsOf(c, &dep)
	if err != nil || len(pods) == 0 {
		return "", err
	}
	return pods[0].Status.PodIP, nil
}

// runningPodsOf lists the Deployment's Running pods that have an address.
func runningPodsOf(c context.Context, dep *appsv1.Deployment) ([]corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	if err != nil {
		return nil, err
	}
	running, err := testenv.RunningPods(c, world.client, client.InNamespace(dep.Namespace), client.MatchingLabelsSelector{Selector: sel})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range running {
		if p.Status.PodIP != "" {
			out = append(out, p)
		}
	}
	return out, nil
}
