package linstorcluster

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

func TestEncryptedCondition(t *testing.T) {
	disabled := &linstorv1.TLSConfig{Mode: linstorv1.TLSDisabled}
	old := linstorv1.LinstorClusterStatus{Conditions: []metav1.Condition{{Type: linstorv1.ConditionAvailable, Status: metav1.ConditionTrue}}}
	cases := []struct {
		name     string
		spec     linstorv1.LinstorClusterSpec
		status   linstorv1.LinstorClusterStatus
		want     metav1.ConditionStatus
		reason   string
		contains []string
		lacks    []string
	}{
		{"default", linstorv1.LinstorClusterSpec{}, linstorv1.LinstorClusterStatus{},
			metav1.ConditionTrue, linstorv1.ReasonAsExpected, []string{"(Generated)"}, nil},
		{"api disabled", linstorv1.LinstorClusterSpec{TLS: &linstorv1.TLSSpec{API: disabled}}, linstorv1.LinstorClusterStatus{},
			metav1.ConditionFalse, linstorv1.ReasonTLSDisabled, []string{"spec.tls.api.mode is Disabled", "master passphrase"}, []string{"spec.tls.internal"}},
		{"both disabled", linstorv1.LinstorClusterSpec{TLS: &linstorv1.TLSSpec{Internal: disabled, API: disabled}}, linstorv1.LinstorClusterStatus{},
			metav1.ConditionFalse, linstorv1.ReasonTLSDisabled, []string{"spec.tls.internal.mode is Disabled", "spec.tls.api.mode is Disabled"}, nil},
		{"kept plain after an upgrade", linstorv1.LinstorClusterSpec{}, old,
			metav1.ConditionFalse, linstorv1.ReasonTLSKeptDisabled, []string{"spec.tls.internal.mode is unset", "spec.tls.api.mode is unset", "set spec.tls.api.mode to Generated"}, nil},
		{"an explicit Disabled outranks a kept one", linstorv1.LinstorClusterSpec{TLS: &linstorv1.TLSSpec{Internal: disabled}}, old,
			metav1.ConditionFalse, linstorv1.ReasonTLSDisabled, []string{"spec.tls.internal.mode is Disabled", "spec.tls.api.mode is unset"}, nil},
		{"kept plain, switched on", linstorv1.LinstorClusterSpec{TLS: &linstorv1.TLSSpec{Internal: &linstorv1.TLSConfig{}, API: &linstorv1.TLSConfig{Mode: linstorv1.TLSGenerated}}}, old,
			metav1.ConditionTrue, linstorv1.ReasonAsExpected, nil, nil},
		{"external over http", linstorv1.LinstorClusterSpec{ExternalController: &linstorv1.ExternalControllerSpec{URL: "http://linstor:3370"}}, linstorv1.LinstorClusterStatus{},
			metav1.ConditionFalse, linstorv1.ReasonExternalController, []string{"spec.tls.internal.mode is unset", "spec.externalController.url is plain HTTP"}, nil},
		{"external over https with SSL satellites", linstorv1.LinstorClusterSpec{ExternalController: &linstorv1.ExternalControllerSpec{URL: "https://linstor:3371"},
			TLS: &linstorv1.TLSSpec{Internal: &linstorv1.TLSConfig{Mode: linstorv1.TLSSecret, SecretName: "s"}}}, linstorv1.LinstorClusterStatus{},
			metav1.ConditionTrue, linstorv1.ReasonExternalController, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &linstorv1.LinstorCluster{Spec: tc.spec, Status: tc.status}
			got := encryptedCondition(c)
			if got.Status != tc.want || got.Reason != tc.reason {
				t.Errorf("got %s/%s, want %s/%s: %s", got.Status, got.Reason, tc.want, tc.reason, got.Message)
			}
			for _, s := range tc.contains {
				if !strings.Contains(got.Message, s) {
					t.Errorf("message lacks %q: %s", s, got.Message)
				}
			}
			for _, s := range tc.lacks {
				if strings.Contains(got.Message, s) {
					t.Errorf("message has %q: %s", s, got.Message)
				}
			}
		})
	}
}

// The first pass of a new cluster records Generated before it sets its first
// conditions; a cluster an earlier operator ran records Disabled.
func TestTLSStatusIsRecordedBeforeConditions(t *testing.T) {
	fresh := &linstorv1.LinstorCluster{}
	setTLSStatus(fresh)
	setEncryptedCondition(fresh, &scope{cluster: fresh})
	if fresh.Status.TLS.DefaultMode != linstorv1.TLSGenerated || fresh.Status.TLS.Internal != linstorv1.TLSGenerated || fresh.Status.TLS.API != linstorv1.TLSGenerated {
		t.Errorf("new cluster: %+v", fresh.Status.TLS)
	}
	setTLSStatus(fresh) // the next pass: conditions exist now, the record decides
	if fresh.Status.TLS.DefaultMode != linstorv1.TLSGenerated {
		t.Errorf("the second pass turned a new cluster into an old one: %+v", fresh.Status.TLS)
	}

	old := &linstorv1.LinstorCluster{Status: linstorv1.LinstorClusterStatus{ObservedGeneration: 4,
		Conditions: []metav1.Condition{{Type: linstorv1.ConditionAvailable, Status: metav1.ConditionTrue}}}}
	setTLSStatus(old)
	if old.Status.TLS.DefaultMode != linstorv1.TLSDisabled || old.Status.TLS.Internal != linstorv1.TLSDisabled || old.Status.TLS.API != linstorv1.TLSDisabled {
		t.Errorf("old cluster: %+v", old.Status.TLS)
	}

	dup := &linstorv1.LinstorCluster{}
	setEncryptedCondition(dup, &scope{cluster: dup, duplicateOf: "ns/first"})
	if got := meta.FindStatusCondition(dup.Status.Conditions, linstorv1.ConditionEncrypted); got.Status != metav1.ConditionUnknown || got.Reason != linstorv1.ReasonDuplicateCluster {
		t.Errorf("a duplicate is judged: %+v", got)
	}

	ext := &linstorv1.LinstorCluster{Spec: linstorv1.LinstorClusterSpec{ExternalController: &linstorv1.ExternalControllerSpec{URL: "https://x"}}}
	setTLSStatus(ext)
	if ext.Status.TLS.Internal != linstorv1.TLSDisabled || ext.Status.TLS.API != "" {
		t.Errorf("external: %+v", ext.Status.TLS)
	}
}
