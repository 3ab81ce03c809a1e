package netif

import (
	"net"
	"strings"
	"testing"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	lapi "github.com/LINBIT/golinstor/client"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

func node(annotation string, addrs ...corev1.NodeAddress) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	if annotation != "" {
		n.Annotations = map[string]string{names.AnnotationHostInterfaces: annotation}
	}
	n.Status.Addresses = addrs
	return n
}

var (
	internal  = corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}
	internal6 = corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "fd00::5"}
)

func TestPlan(t *testing.T) {
	cases := []struct {
		name     string
		node     *corev1.Node
		specs    []linstorv1.NetInterface
		families []linstorv1.IPFamily
		want     string // name=address* (active) in order
		wantErr  string
	}{
		{name: "default only", node: node("", internal), want: "default=10.0.0.5*"},
		{name: "by name", node: node("eth0=10.0.0.5, eth1=192.168.7.5", internal),
			specs: []linstorv1.NetInterface{{Name: "data", InterfaceName: "eth1"}},
			want:  "default=10.0.0.5* data=192.168.7.5"},
		{name: "by name, active", node: node("eth1=192.168.7.5", internal),
			specs: []linstorv1.NetInterface{{Name: "data", InterfaceName: "eth1", Active: true}},
			want:  "default=10.0.0.5 data=192.168.7.5*"},
		{name: "cidr on a status address", node: node("", internal, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "203.0.113.9"}),
			specs: []linstorv1.NetInterface{{Name: "public", CIDR: "203.0.113.0/24"}},
			want:  "default=10.0.0.5* public=203.0.113.9"},
		{name: "cidr on an annotated address, ipv6", node: node("eth2=fd00::7,eth1=192.168.7.5", internal),
			specs: []linstorv1.NetInterface{{Name: "v6", CIDR: "fd00::/64"}, {Name: "v4", CIDR: "192.168.0.0/16"}},
			want:  "default=10.0.0.5* v6=fd00::7 v4=192.168.7.5"},
		{name: "hostname addresses are ignored", node: node("", internal, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "192.168.1.1"}),
			specs:   []linstorv1.NetInterface{{Name: "x", CIDR: "192.168.0.0/16"}},
			wantErr: "netInterfaces[x].cidr: node n1 has no address in 192.168.0.0/16"},
		{name: "unknown interface name", node: node("eth0=10.0.0.5", internal),
			specs:   []linstorv1.NetInterface{{Name: "data", InterfaceName: "eth9"}},
			wantErr: `netInterfaces[data].interfaceName: node n1 has no interface "eth9"`},
		{name: "reserved name", node: node("", internal),
			specs:   []linstorv1.NetInterface{{Name: "Default", CIDR: "10.0.0.0/8"}},
			wantErr: "reserved"},
		{name: "bad annotation", node: node("eth0:10.0.0.5", internal), wantErr: `"eth0:10.0.0.5" is not name=address`},
		{name: "no internal ip", node: node(""), wantErr: "no InternalIP"},
		// ipFamilies choose the default interface's address among the InternalIPs.
		{name: "no ipFamilies: the first InternalIP, whatever its family", node: node("", internal6, internal),
			want: "default=fd00::5*"},
		{name: "ipFamilies IPv4 skips an IPv6 listed first", node: node("", internal6, internal),
			families: []linstorv1.IPFamily{linstorv1.IPv4}, want: "default=10.0.0.5*"},
		{name: "ipFamilies IPv6 first", node: node("", internal, internal6),
			families: []linstorv1.IPFamily{linstorv1.IPv6, linstorv1.IPv4}, want: "default=fd00::5*"},
		{name: "ipFamilies IPv6 first, falling back to IPv4", node: node("", internal),
			families: []linstorv1.IPFamily{linstorv1.IPv6, linstorv1.IPv4}, want: "default=10.0.0.5*"},
		{name: "an IPv4-mapped address is IPv4", node: node("", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "::ffff:10.0.0.9"}),
			families: []linstorv1.IPFamily{linstorv1.IPv4}, want: "default=10.0.0.9*"},
		{name: "an ExternalIP of the family does not count", node: node("", internal, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "2001:db8::1"}),
			families: []linstorv1.IPFamily{linstorv1.IPv6}, wantErr: "kubernetes node n1 has no InternalIP address of ipFamilies IPv6 (it has 10.0.0.5)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Plan(tc.node, tc.specs, tc.families)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var parts []string
			for _, d := range got {
				s := d.Name + "=" + d.Address.String()
				if d.Active {
					s += "*"
				}
				parts = append(parts, s)
			}
			if s := strings.Join(parts, " "); s != tc.want {
				t.Fatalf("plan %q, want %q", s, tc.want)
			}
		})
	}
}

func TestDiff(t *testing.T) {
	ip := net.ParseIP
	current := []lapi.NetInterface{
		{Name: "default", Address: ip("10.0.0.5"), IsActive: true, SatellitePort: 3366, SatelliteEncryptionType: "PLAIN"},
		{Name: "old", Address: ip("192.168.7.5")},
		{Name: "by-hand", Address: ip("172.16.0.1")},
		{Name: "data", Address: ip("192.168.8.1")},
	}
	plan := []Desired{
		{Name: "default", Address: ip("10.0.0.5")},
		{Name: "data", Address: ip("192.168.8.2"), Active: true},
		{Name: "new", Address: ip("192.168.9.1")},
	}
	c := Diff(current, plan, []string{"default", "old", "gone-already"}, 3367, "SSL")
	if len(c.Create) != 1 || c.Create[0].Name != "new" || c.Create[0].IsActive {
		t.Errorf("create %+v, want only the inactive interface new", c.Create)
	}
	if len(c.Modify) != 1 || c.Modify[0].Name != "data" || !c.Modify[0].IsActive ||
		c.Modify[0].SatellitePort != 3367 || c.Modify[0].SatelliteEncryptionType != "SSL" || !c.Modify[0].Address.Equal(ip("192.168.8.2")) {
		t.Errorf("modify %+v, want data moved, made active on 3367/SSL", c.Modify)
	}
	if strings.Join(c.Delete, ",") != "old" {
		t.Errorf("delete %v, want only old: by-hand was never ours, gone-already is gone", c.Delete)
	}

	// In sync: nothing to do.
	current = []lapi.NetInterface{{Name: "default", Address: ip("10.0.0.5"), IsActive: true, SatellitePort: 3366, SatelliteEncryptionType: "PLAIN"}}
	if c := Diff(current, []Desired{{Name: "default", Address: ip("10.0.0.5"), Active: true}}, []string{"default"}, 3366, "PLAIN"); !c.Empty() {
		t.Errorf("in-sync node produced changes: %+v", c)
	}
	// Turning on internal TLS changes the active interface's port and encryption.
	if c := Diff(current, []Desired{{Name: "default", Address: ip("10.0.0.5"), Active: true}}, []string{"default"}, 3367, "SSL"); len(c.Modify) != 1 {
		t.Errorf("TLS switch produced %+v, want one modify", c)
	}
}

// LINSTOR lets the active interface be deleted and then picks the first other one
// with a port by name, or leaves the node without a connection
// (CtrlNetIfApiCallHandler.deleteNetIf). The operator never leaves that choice to
// LINSTOR: whenever it deletes the active interface, the same change makes the
// planned one active first (the reconciler applies Create, Modify, then Delete).
func TestDiffSwitchesTheConnectionBeforeDeletingTheActiveInterface(t *testing.T) {
	ip := net.ParseIP
	for _, tc := range []struct {
		name    string
		current []lapi.NetInterface
		plan    []Desired
	}{
		{"back to the InternalIP", []lapi.NetInterface{
			{Name: "default", Address: ip("10.0.0.5"), SatellitePort: 3366, SatelliteEncryptionType: "PLAIN"},
			{Name: "data", Address: ip("192.168.8.2"), IsActive: true, SatellitePort: 3366, SatelliteEncryptionType: "PLAIN"},
		}, []Desired{{Name: "default", Address: ip("10.0.0.5"), Active: true}}},
		{"to a new interface", []lapi.NetInterface{
			{Name: "default", Address: ip("10.0.0.5"), SatellitePort: 3366, SatelliteEncryptionType: "PLAIN"},
			{Name: "data", Address: ip("192.168.8.2"), IsActive: true, SatellitePort: 3366, SatelliteEncryptionType: "PLAIN"},
		}, []Desired{{Name: "default", Address: ip("10.0.0.5")}, {Name: "storage", Address: ip("192.168.9.2"), Active: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Diff(tc.current, tc.plan, []string{"default", "data", "storage"}, 3366, "PLAIN")
			if strings.Join(c.Delete, ",") != "data" {
				t.Fatalf("delete %v, want data", c.Delete)
			}
			activated := 0
			for _, nif := range append(append([]lapi.NetInterface(nil), c.Create...), c.Modify...) {
				if nif.IsActive && nif.SatellitePort != 0 && nif.SatelliteEncryptionType != "" {
					activated++
				}
			}
			if activated != 1 {
				t.Fatalf("deleting the active interface without activating another first: %+v", c)
			}
		})
	}
}
