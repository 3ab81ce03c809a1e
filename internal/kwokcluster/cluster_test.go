package kwokcluster

import (
	"net"
	"testing"
)

// Every simulated node gets a valid InternalIP of its own inside the samples' data
// network 10.0.0.0/16.
func TestNodeInternalIPs(t *testing.T) {
	_, data, err := net.ParseCIDR("10.0.0.0/16")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for i := 0; i <= 10000; i++ {
		var addr string
		for _, a := range Node("n", i).Status.Addresses {
			if a.Type == "InternalIP" {
				addr = a.Address
			}
		}
		ip := net.ParseIP(addr)
		switch {
		case ip == nil || ip.To4() == nil:
			t.Fatalf("node %d: InternalIP %q is not an IPv4 address", i, addr)
		case !data.Contains(ip):
			t.Fatalf("node %d: InternalIP %s is outside %s", i, addr, data)
		case ip.To4()[3] < 10 || ip.To4()[3] > 249:
			t.Fatalf("node %d: InternalIP %s uses a reserved host number", i, addr)
		}
		if j, dup := seen[addr]; dup {
			t.Fatalf("nodes %d and %d share the InternalIP %s", j, i, addr)
		}
		seen[addr] = i
	}
	if got := NodeIP(0); got != "10.0.0.10" {
		t.Errorf("node 0 has %s, want 10.0.0.10 (the first address is unchanged)", got)
	}
}
