package rehearsal

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// prepare writes what the scratch API server and LINSTOR read, and nothing that reaches
// the cluster's API.
func TestPrepare(t *testing.T) {
	dir := t.TempDir()
	if err := Prepare(dir, "https://127.0.0.1:6443"); err != nil {
		t.Fatal(err)
	}
	if _, err := tls.LoadX509KeyPair(filepath.Join(dir, "pki/apiserver.crt"), filepath.Join(dir, "pki/apiserver.key")); err != nil {
		t.Errorf("serving certificate: %v", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || cfg.BearerToken == "" {
		t.Errorf("kubeconfig points at %s with token %q", cfg.Host, cfg.BearerToken)
	}
	tokens, _ := os.ReadFile(filepath.Join(dir, "pki/tokens.csv"))
	if !strings.HasPrefix(string(tokens), cfg.BearerToken+",") {
		t.Errorf("the token file does not hold the kubeconfig's token: %q", tokens)
	}
	toml, _ := os.ReadFile(filepath.Join(dir, "linstor/linstor.toml"))
	if !strings.Contains(string(toml), `connection_url = "k8s"`) {
		t.Errorf("linstor.toml = %q", toml)
	}
	for _, f := range []string{"pki/sa.key", "pki/sa.pub"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if Main([]string{"load"}, os.Stderr) != 2 || Main([]string{"bogus"}, os.Stderr) != 2 {
		t.Error("bad arguments are not refused")
	}
}
