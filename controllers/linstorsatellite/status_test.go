package linstorsatellite

import (
	"errors"
	"net"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
	"github.com/linstor-operator/linstor-operator/pkg/images"
	"github.com/linstor-operator/linstor-operator/pkg/netif"
	"github.com/linstor-operator/linstor-operator/pkg/storagepool"
)

// statusScope is a pass's scope of satellite n1 of cluster c with nothing wrong.
func statusScope(change func(*scope)) *scope {
	s := &scope{
		sat:     &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: "n1", Generation: 3}, Spec: linstorv1.LinstorSatelliteSpec{ClusterRef: linstorv1.ClusterReference{Name: "c"}}},
		cluster: &linstorv1.LinstorCluster{},
		writer:  &linstorWriter{},
	}
	if change != nil {
		change(s)
	}
	return s
}

func TestDegradation(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name            string
		scope           func(*scope)
		reason, message string
	}{
		{"nothing wrong", nil, "", ""},
		{"the cluster is gone", func(s *scope) { s.cluster = nil }, linstorv1.ReasonInvalidSpec, `LinstorCluster "c" not found`},
		{"no address in the wanted families",
			func(s *scope) {
				s.nodeErr = &netif.NoAddressError{Node: "n1", Families: []linstorv1.IPFamily{"IPv6"}, Have: []net.IP{net.ParseIP("10.0.0.1")}}
			},
			linstorv1.ReasonNoAddressInIPFamilies, ""},
		{"the Kubernetes node is missing", func(s *scope) { s.nodeErr = errors.New("kubernetes node n1: not found") },
			linstorv1.ReasonInvalidSpec, "kubernetes node n1: not found"},
		{"an RHCOS version without a Driver Toolkit image, before any workload error",
			func(s *scope) {
				s.loaderErr = &images.DriverToolkitMissingError{Version: "419.96.202411202233-0", Why: "ImageStream openshift/driver-toolkit has no tag 419.96.202411202233-0 (RHCOS tags: none)"}
				s.workloadErr = boom
			},
			linstorv1.ReasonDriverToolkitMissing, "Satellite workload not applied: no Driver Toolkit image for RHCOS 419.96.202411202233-0: ImageStream openshift/driver-toolkit has no tag 419.96.202411202233-0 (RHCOS tags: none)"},
		{"a refused pod-template patch", func(s *scope) { s.workloadErr, s.renderInvalid = boom, true },
			linstorv1.ReasonInvalidSpec, "Satellite workload: boom"},
		{"an apply error is no spec problem, whatever else is invalid",
			func(s *scope) { s.workloadErr, s.netifErr, s.netifInvalid = boom, errors.New("nic"), true },
			linstorv1.ReasonLinstorError, "Satellite workload: boom"},
		{"a net interface the node cannot satisfy", func(s *scope) { s.netifErr, s.netifInvalid = boom, true },
			linstorv1.ReasonInvalidSpec, "boom"},
		{"a net interface LINSTOR refused", func(s *scope) { s.netifErr = boom }, linstorv1.ReasonLinstorError, "boom"},
		{"node properties", func(s *scope) { s.propsErr = boom }, linstorv1.ReasonLinstorError, "boom"},
		{"pool problems come before failed claims",
			func(s *scope) {
				s.pools = storagepool.Outcome{Problems: []string{"pool a: x", "pool b: y"}, ClaimFailed: []string{"claim"}}
			},
			linstorv1.ReasonLinstorError, "pool a: x; pool b: y"},
		{"a failed claim", func(s *scope) { s.pools = storagepool.Outcome{ClaimFailed: []string{"c1", "c2"}} },
			linstorv1.ReasonDiskClaimFailed, "c1; c2"},
		{"deletion waits for the last replica",
			func(s *scope) { s.deleteWait, s.deleteReason = "holds pvc-1", linstorv1.ReasonHoldsLastReplica },
			linstorv1.ReasonHoldsLastReplica, "holds pvc-1"},
		{"deletion waits for an evacuation", func(s *scope) { s.deleteWait = "evacuating" },
			linstorv1.ReasonWaitingForEvacuate, "evacuating"},
		{"a spec problem outranks a waiting deletion",
			func(s *scope) { s.nodeErr, s.deleteWait = boom, "evacuating" }, linstorv1.ReasonInvalidSpec, "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := statusScope(tc.scope)
			reason, message := degradation(s)
			if reason != tc.reason || tc.message != "" && message != tc.message {
				t.Errorf("degradation = %q, %q; want %q, %q", reason, message, tc.reason, tc.message)
			}
			if (reason == "") != (message == "") {
				t.Errorf("a reason without a message or the reverse: %q, %q", reason, message)
			}
			// The condition says the same.
			setDegradedCondition(s.sat, s)
			c := meta.FindStatusCondition(s.sat.Status.Conditions, linstorv1.ConditionDegraded)
			wantStatus, wantReason := metav1.ConditionTrue, reason
			if reason == "" {
				wantStatus, wantReason = metav1.ConditionFalse, linstorv1.ReasonAsExpected
			}
			if c == nil || c.Status != wantStatus || c.Reason != wantReason || c.Message != message || c.ObservedGeneration != 3 {
				t.Errorf("Degraded = %+v, want %s/%s %q", c, wantStatus, wantReason, message)
			}
		})
	}
}

func TestDegradedByAPoolInUse(t *testing.T) {
	s := statusScope(func(s *scope) { s.pools = storagepool.Outcome{Waiting: "pool old holds 2 volumes"} })
	setDegradedCondition(s.sat, s)
	c := meta.FindStatusCondition(s.sat.Status.Conditions, linstorv1.ConditionDegraded)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != linstorv1.ReasonPoolInUse || c.Message != "pool old holds 2 volumes" {
		t.Errorf("Degraded = %+v", c)
	}
	// A fault outranks the wait.
	s.propsErr = errors.New("boom")
	setDegradedCondition(s.sat, s)
	if c := meta.FindStatusCondition(s.sat.Status.Conditions, linstorv1.ConditionDegraded); c.Reason != linstorv1.ReasonLinstorError {
		t.Errorf("Degraded = %+v, want LinstorError", c)
	}
}

func TestProgressing(t *testing.T) {
	for _, tc := range []struct {
		name          string
		scope         func(*scope)
		status        metav1.ConditionStatus
		reason, inMsg string
	}{
		{"settled", nil, metav1.ConditionFalse, linstorv1.ReasonAsExpected, ""},
		{"creating", func(s *scope) { s.pools.Creating = []string{"a", "b"} }, metav1.ConditionTrue, linstorv1.ReasonReconciling, "Creating storage pools: a, b"},
		{"waiting for disks outranks creating", func(s *scope) { s.pools.Creating, s.pools.WaitingForDisks = []string{"a"}, []string{"no disk matches"} },
			metav1.ConditionTrue, linstorv1.ReasonWaitingForDisks, "no disk matches"},
		{"offline outranks waiting for disks", func(s *scope) { s.pools.WaitingForDisks, s.pools.Pending = []string{"x"}, "waiting for ONLINE" },
			metav1.ConditionTrue, linstorv1.ReasonNodeOffline, "waiting for ONLINE"},
		{"fenced writes outrank an offline node",
			func(s *scope) {
				s.pools.Pending = "waiting"
				s.writer.fence = "upgrade in phase Satellites"
				s.writer.may("node properties")
			},
			metav1.ConditionTrue, linstorv1.ReasonLinstorWritesFenced, "LINSTOR writes wait (node properties): upgrade in phase Satellites"},
		{"an unreachable controller outranks fenced writes",
			func(s *scope) {
				s.writer.fence = "f"
				s.writer.may("x")
				s.linstorErr = errors.New("connection refused")
			},
			metav1.ConditionTrue, linstorv1.ReasonControllerNotReady, "Waiting for the LINSTOR controller: connection refused"},
		{"a pod waiting for its certificate outranks everything",
			func(s *scope) {
				s.linstorErr, s.workloadPending = errors.New("x"), "Waiting for the internal TLS certificate"
			},
			metav1.ConditionTrue, linstorv1.ReasonReconciling, "Waiting for the internal TLS certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := statusScope(tc.scope)
			setProgressingCondition(s.sat, s)
			c := meta.FindStatusCondition(s.sat.Status.Conditions, linstorv1.ConditionProgressing)
			if c == nil || c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.inMsg {
				t.Errorf("Progressing = %+v, want %s/%s %q", c, tc.status, tc.reason, tc.inMsg)
			}
		})
	}
}
