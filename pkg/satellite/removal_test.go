package satellite

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

func TestRemovalHeld(t *testing.T) {
	one := int32(1)
	for _, tc := range []struct {
		name    string
		in      Removal
		held    bool
		message string
	}{
		{"one node of ten", Removal{Name: "n1", Removing: []string{"n1"}, Total: 10}, false, ""},
		{"three of ten", Removal{Name: "n3", Removing: []string{"n1", "n2", "n3"}, Total: 10}, false, ""},
		{"four of ten: a selector typo holds them all", Removal{Name: "n1", Removing: []string{"n1", "n2", "n3", "n4"}, Total: 10}, true, "annotate the LinstorCluster linstor.io/confirm-removal=4"},
		{"four of ten, confirmed", Removal{Name: "n4", Removing: []string{"n1", "n2", "n3", "n4"}, Total: 10, Confirmed: "4"}, false, ""},
		{"a confirmation covers the removals still left", Removal{Name: "n4", Removing: []string{"n3", "n4"}, Total: 5, Confirmed: "4"}, false, ""},
		{"a stale confirmation for fewer", Removal{Name: "n1", Removing: []string{"n1", "n2", "n3", "n4", "n5"}, Total: 10, Confirmed: "4"}, true, "=5"},
		{"every node of a cluster", Removal{Name: "a", Removing: []string{"a", "b", "c"}, Total: 3}, true, "3 of 3 satellites"},
		{"the one node of a one-node cluster", Removal{Name: "a", Removing: []string{"a"}, Total: 1}, false, ""},
		{"one of two", Removal{Name: "b", Removing: []string{"b"}, Total: 2}, false, ""},
		{"maxConcurrent: the first in name order goes", Removal{Name: "n1", Removing: []string{"n2", "n1"}, Total: 10, MaxConcurrent: &one}, false, ""},
		{"maxConcurrent: the second waits", Removal{Name: "n2", Removing: []string{"n2", "n1"}, Total: 10, MaxConcurrent: &one}, true, "maxConcurrentEvacuations is 1"},
		{"maxConcurrent: one waiting for its data takes no place", Removal{Name: "n2", Removing: []string{"n2", "n1"}, Held: []string{"n1"}, Total: 10, MaxConcurrent: &one}, false, ""},
		{"maxConcurrent: the held one asking again is judged in its place", Removal{Name: "n1", Removing: []string{"n2", "n1"}, Held: []string{"n1"}, Total: 10, MaxConcurrent: &one}, false, ""},
		{"maxConcurrent: behind a held one and one that goes", Removal{Name: "n3", Removing: []string{"n1", "n2", "n3"}, Held: []string{"n1"}, Total: 10, MaxConcurrent: &one}, true, "1 removals go first"},
		{"a held removal still counts towards the share", Removal{Name: "n1", Removing: []string{"n1", "n2", "n3", "n4"}, Held: []string{"n2", "n3", "n4"}, Total: 10}, true, "=4"},
		{"long lists are cut", Removal{Name: "n01", Removing: []string{"n01", "n02", "n03", "n04", "n05", "n06", "n07"}, Total: 8}, true, "and 2 more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RemovalHeld(tc.in)
			if (got != "") != tc.held || !strings.Contains(got, tc.message) {
				t.Fatalf("RemovalHeld = %q, want held=%t containing %q", got, tc.held, tc.message)
			}
		})
	}
}

func TestRemoving(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name                           string
		policy                         linstorv1.DeletionPolicy
		deleting, selected, nodeExists bool
		want                           bool
	}{
		{"selected, running", linstorv1.DeletionEvacuate, false, true, true, false},
		{"selected Retain, running", linstorv1.DeletionRetain, false, true, true, false},
		{"Evacuate being deleted", linstorv1.DeletionEvacuate, true, true, true, true},
		{"Delete being deleted", linstorv1.DeletionDelete, true, false, false, true},
		{"Retain being deleted: over at once", linstorv1.DeletionRetain, true, false, true, false},
		{"Evacuate no longer selected", linstorv1.DeletionEvacuate, false, false, true, true},
		{"Delete no longer selected, node gone", linstorv1.DeletionDelete, false, false, false, true},
		{"Retain no longer selected, node there: its satellite would stop", linstorv1.DeletionRetain, false, false, true, true},
		{"Retain no longer selected, node gone: nothing runs there", linstorv1.DeletionRetain, false, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sat := &linstorv1.LinstorSatellite{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
			sat.Spec.DeletionPolicy = tc.policy
			if tc.deleting {
				sat.DeletionTimestamp = &now
			}
			if got := Removing(sat, tc.selected, tc.nodeExists); got != tc.want {
				t.Fatalf("Removing = %t, want %t", got, tc.want)
			}
		})
	}
}
