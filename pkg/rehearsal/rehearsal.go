// Package rehearsal is what the operator binary runs inside the migration rehearsal's
// Job (render.RehearsalJob): `manager rehearsal prepare` writes the scratch API's
// credentials and LINSTOR's configuration; `manager rehearsal load` copies the
// pre-upgrade LinstorBackup from the cluster's API into the scratch API. LINSTOR's own
// migration code then runs against the copy.
package rehearsal

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/dbbackup"
)

// LinstorTOML is the scratch LINSTOR configuration: the k8s backend (DbK8sCrd.start
// compares the URL with "k8s"), which reaches the API through fabric8's default
// configuration, i.e. $KUBECONFIG, pointed at the scratch API.
const LinstorTOML = "[db]\n  connection_url = \"k8s\"\n"

// Prepare writes, into dir: pki/ (the scratch API's serving certificate and key, its
// service-account key pair, a static token file), kubeconfig (server with that token,
// trusting that certificate) and linstor/linstor.toml. Nothing in it is a credential
// for the cluster's API.
func Prepare(dir, server string) error {
	pki := filepath.Join(dir, "pki")
	for _, d := range []string{pki, filepath.Join(dir, "linstor", "logs"), filepath.Join(dir, "etcd")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	certPEM, keyPEM, err := servingCert()
	if err != nil {
		return err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	tokenBytes := make([]byte, 32)
	if _, err := rand.Read(tokenBytes); err != nil {
		return err
	}
	token := hex.EncodeToString(tokenBytes)
	kubeconfig, err := clientcmd.Write(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"scratch": {Server: server, CertificateAuthorityData: certPEM}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"rehearsal": {Token: token}},
		Contexts:       map[string]*clientcmdapi.Context{"scratch": {Cluster: "scratch", AuthInfo: "rehearsal"}},
		CurrentContext: "scratch",
	})
	if err != nil {
		return err
	}
	files := map[string][]byte{
		filepath.Join(pki, "apiserver.crt"): certPEM,
		filepath.Join(pki, "apiserver.key"): keyPEM,
		filepath.Join(pki, "sa.key"):        pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}),
		filepath.Join(pki, "sa.pub"):        pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub}),
		// token,user,uid,"group": kube-apiserver's --token-auth-file format.
		filepath.Join(pki, "tokens.csv"):              []byte(token + ",rehearsal,rehearsal,\"system:masters\"\n"),
		filepath.Join(dir, "kubeconfig"):              kubeconfig,
		filepath.Join(dir, "linstor", "linstor.toml"): []byte(LinstorTOML),
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// servingCert is a self-signed certificate for 127.0.0.1 and localhost.
func servingCert() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()),
		Subject:      pkix.Name{CommonName: "linstor-rehearsal-apiserver"},
		NotBefore:    now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// Load copies LinstorBackup backup of namespace, read from the cluster's API (source),
// into the scratch API (target) with pkg/dbbackup, the code a rollback restores with,
// and reads the copy back against the backup's checksum: the migration then runs on
// exactly the database backed up. It waits for the scratch API to answer first.
func Load(ctx context.Context, source client.Reader, target client.Client, namespace, backup string) error {
	b := &linstorv1.LinstorBackup{}
	if err := source.Get(ctx, client.ObjectKey{Namespace: namespace, Name: backup}, b); err != nil {
		return fmt.Errorf("reading LinstorBackup %s: %w", backup, err)
	}
	if b.Status.Phase != linstorv1.BackupCompleted {
		return fmt.Errorf("LinstorBackup %s is %q, not Completed", backup, b.Status.Phase)
	}
	if err := dbbackup.Verify(ctx, source, b); err != nil {
		return fmt.Errorf("LinstorBackup %s: %w", backup, err)
	}
	if err := waitReady(ctx, target); err != nil {
		return err
	}
	r, err := dbbackup.NewReader(dbbackup.Open(ctx, source, b))
	if err != nil {
		return fmt.Errorf("LinstorBackup %s: %w", backup, err)
	}
	if err := dbbackup.RestoreFrom(ctx, target, r); err != nil {
		return fmt.Errorf("copying LinstorBackup %s into the scratch API: %w", backup, err)
	}
	if err := dbbackup.VerifyRestored(ctx, target, b.Status.Checksum); err != nil {
		return fmt.Errorf("the copy of LinstorBackup %s: %w", backup, err)
	}
	return nil
}

// waitReady waits until the scratch API lists CRDs (it starts beside this container).
func waitReady(ctx context.Context, c client.Reader) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = dbbackup.Empty(ctx, c)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the scratch API server did not answer: %v (%w)", last, err)
	}
	return nil
}
