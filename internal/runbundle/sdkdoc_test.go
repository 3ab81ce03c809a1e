package runbundle

import (
	"strings"
	"testing"
)

func sdkDoc(lines ...string) []byte {
	return []byte("text\n" + SDKCommandsMarker + "\n```sh\n" + strings.Join(lines, "\n") + "\n```\nmore text\n")
}

var documented = []string{
	"kubectl create namespace linstor",
	"kubectl label namespace linstor pod-security.kubernetes.io/enforce=privileged",
	"operator-sdk run bundle quay.io/x/y-bundle:v0.3.0 -n linstor",
	"operator-sdk cleanup linstor-operator -n linstor --delete-all=false",
}

func TestParseSDKCommands(t *testing.T) {
	c, err := ParseSDKCommands(sdkDoc(documented...))
	if err != nil {
		t.Fatal(err)
	}
	if c.Namespace != "linstor" || c.NamespaceLabels["pod-security.kubernetes.io/enforce"] != "privileged" ||
		c.BundleImage != "quay.io/x/y-bundle:v0.3.0" || c.CleanupPackage != "linstor-operator" || c.CleanupDeleteAll {
		t.Errorf("parsed %+v", c)
	}
}

// The block may not say what the tests do not follow.
func TestParseSDKCommandsRefusesWhatTheTestsDoNotDo(t *testing.T) {
	with := func(i int, line string) []string {
		out := append([]string(nil), documented...)
		out[i] = line
		return out
	}
	cases := map[string][]string{
		"run bundle without -n":      with(2, "operator-sdk run bundle quay.io/x/y-bundle:v0.3.0"),
		"cleanup in another ns":      with(3, "operator-sdk cleanup linstor-operator -n other --delete-all=false"),
		"an untested flag":           with(2, "operator-sdk run bundle quay.io/x/y-bundle:v0.3.0 -n linstor --index-image foo"),
		"label another namespace":    with(1, "kubectl label namespace other pod-security.kubernetes.io/enforce=privileged"),
		"no label before run bundle": {documented[0], documented[2], documented[3]},
	}
	for name, lines := range cases {
		t.Run(name, func(t *testing.T) {
			if c, err := ParseSDKCommands(sdkDoc(lines...)); err == nil {
				t.Fatalf("accepted: %+v", c)
			}
		})
	}
	// Without --delete-all=false, cleanup deletes the CRDs: parsed as such.
	c, err := ParseSDKCommands(sdkDoc(with(3, "operator-sdk cleanup linstor-operator -n linstor")...))
	if err != nil || !c.CleanupDeleteAll {
		t.Errorf("cleanup without --delete-all: %+v, %v; want delete-all true (operator-sdk's default)", c, err)
	}
}
