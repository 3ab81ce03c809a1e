// Package netif decides which network interfaces a LINSTOR node is registered with.
//
// Kubernetes knows a node's addresses but not its interface names, so names come from
// the node annotation names.AnnotationHostInterfaces, written by whatever provisions the node
// (for example a node-setup DaemonSet, or the admin):
//
//	linstor.io/host-interfaces: "eth0=10.0.0.5,eth1=192.168.7.5,eth1=fd00::5"
//
// A CIDR selector matches the node's status addresses and the annotated addresses.
package netif

import (
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	lapi "github.com/LINBIT/golinstor/client"
	corev1 "k8s.io/api/core/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Default is the interface every node gets at its InternalIP (the satellite pod runs on
// the host network, so that is its pod IP).
const Default = "default"

// Desired is one LINSTOR net interface as it should be.
type Desired struct {
	Name    string
	Address net.IP
	Active  bool
}

// Plan resolves the configured interfaces on a node. The default interface is always
// part of the plan, at the node's InternalIP of the preferred family (families, see
// InternalIP); it is active unless a configured interface is.
// An interface that cannot be resolved is an error naming it: the caller keeps what is
// registered rather than guess.
func Plan(node *corev1.Node, specs []linstorv1.NetInterface, families []linstorv1.IPFamily) ([]Desired, error) {
	internal, err := InternalIP(node, families)
	if err != nil {
		return nil, err
	}
	host, err := HostInterfaces(node)
	if err != nil {
		return nil, err
	}
	out := []Desired{{Name: Default, Address: internal, Active: true}}
	for _, spec := range specs {
		if strings.EqualFold(spec.Name, Default) {
			return nil, fmt.Errorf("netInterfaces[%s]: the name %q is reserved for the InternalIP interface", spec.Name, Default)
		}
		addr, err := resolve(node, host, spec)
		if err != nil {
			return nil, err
		}
		if spec.Active {
			out[0].Active = false
		}
		out = append(out, Desired{Name: spec.Name, Address: addr, Active: spec.Active})
	}
	return out, nil
}

func resolve(node *corev1.Node, host map[string][]netip.Addr, spec linstorv1.NetInterface) (net.IP, error) {
	if spec.InterfaceName != "" {
		addrs := host[spec.InterfaceName]
		if len(addrs) == 0 {
			return nil, fmt.Errorf("netInterfaces[%s].interfaceName: node %s has no interface %q in its %s annotation",
				spec.Name, node.Name, spec.InterfaceName, names.AnnotationHostInterfaces)
		}
		return net.IP(addrs[0].AsSlice()), nil
	}
	prefix, err := netip.ParsePrefix(spec.CIDR)
	if err != nil {
		return nil, fmt.Errorf("netInterfaces[%s].cidr: %w", spec.Name, err)
	}
	for _, a := range candidates(node, host) {
		if prefix.Contains(a) {
			return net.IP(a.AsSlice()), nil
		}
	}
	return nil, fmt.Errorf("netInterfaces[%s].cidr: node %s has no address in %s", spec.Name, node.Name, spec.CIDR)
}

// candidates are the node's addresses in a stable order: status addresses first (as the
// kubelet reports them), then annotated ones sorted by interface name.
func candidates(node *corev1.Node, host map[string][]netip.Addr) []netip.Addr {
	var out []netip.Addr
	for _, a := range node.Status.Addresses {
		if a.Type != corev1.NodeInternalIP && a.Type != corev1.NodeExternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil {
			out = append(out, ip.Unmap())
		}
	}
	names := make([]string, 0, len(host))
	for n := range host {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out = append(out, host[n]...)
	}
	return out
}

// HostInterfaces parses the node's names.AnnotationHostInterfaces.
func HostInterfaces(node *corev1.Node) (map[string][]netip.Addr, error) {
	out := map[string][]netip.Addr{}
	raw := strings.TrimSpace(node.Annotations[names.AnnotationHostInterfaces])
	if raw == "" {
		return out, nil
	}
	for _, pair := range strings.Split(raw, ",") {
		name, addr, ok := strings.Cut(strings.TrimSpace(pair), "=")
		ip, err := netip.ParseAddr(strings.TrimSpace(addr))
		if !ok || name == "" || err != nil {
			return nil, fmt.Errorf("node %s annotation %s: %q is not name=address", node.Name, names.AnnotationHostInterfaces, pair)
		}
		out[strings.TrimSpace(name)] = append(out[strings.TrimSpace(name)], ip.Unmap())
	}
	return out, nil
}

// InternalIP is the address the satellite is registered at: the node's first InternalIP
// of the first family in families that the node has one of (its first InternalIP of
// any family when families is empty). The satellite pod runs on the host network, so
// this is also its pod IP. A node with no such address is a *NoAddressError: the
// caller registers nothing rather than an address of a family the admin excluded.
func InternalIP(node *corev1.Node, families []linstorv1.IPFamily) (net.IP, error) {
	var all []net.IP
	for _, a := range node.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		if ip := net.ParseIP(a.Address); ip != nil {
			all = append(all, ip)
		}
	}
	if len(families) == 0 && len(all) > 0 {
		return all[0], nil
	}
	for _, f := range families {
		for _, ip := range all {
			if Family(ip) == f {
				return ip, nil
			}
		}
	}
	return nil, &NoAddressError{Node: node.Name, Families: families, Have: all}
}

// Family is the address family of ip. An IPv4-mapped IPv6 address is IPv4: it reaches
// an IPv4 socket, and Go prints it dotted, which is what LINSTOR receives.
func Family(ip net.IP) linstorv1.IPFamily {
	if ip.To4() != nil {
		return linstorv1.IPv4
	}
	return linstorv1.IPv6
}

// NoAddressError: the node has no InternalIP (of the wanted families).
type NoAddressError struct {
	Node     string
	Families []linstorv1.IPFamily
	Have     []net.IP
}

func (e *NoAddressError) Error() string {
	if len(e.Have) == 0 {
		return fmt.Sprintf("kubernetes node %s reports no InternalIP address", e.Node)
	}
	have := make([]string, len(e.Have))
	for i, ip := range e.Have {
		have[i] = ip.String()
	}
	families := make([]string, len(e.Families))
	for i, f := range e.Families {
		families[i] = string(f)
	}
	return fmt.Sprintf("kubernetes node %s has no InternalIP address of ipFamilies %s (it has %s): the satellite is not registered in LINSTOR until the node has one or ipFamilies allows these",
		e.Node, strings.Join(families, ", "), strings.Join(have, ", "))
}

// Changes are the LINSTOR calls that bring a node's interfaces to the plan.
type Changes struct {
	Create []lapi.NetInterface
	Modify []lapi.NetInterface
	// Delete lists interfaces the operator registered that are no longer planned.
	Delete []string
}

// Empty is true when the node already matches the plan.
func (c Changes) Empty() bool { return len(c.Create)+len(c.Modify)+len(c.Delete) == 0 }

// Diff compares what LINSTOR has with the plan. Only interfaces in managed (those the
// operator registered) are ever deleted; interfaces added by hand are left alone.
// port and encryption are the satellite connection settings (3366/PLAIN or 3367/SSL).
func Diff(current []lapi.NetInterface, plan []Desired, managed []string, port int32, encryption string) Changes {
	var c Changes
	have := map[string]lapi.NetInterface{}
	for _, nif := range current {
		have[strings.ToLower(nif.Name)] = nif
	}
	planned := map[string]bool{}
	for _, d := range plan {
		planned[strings.ToLower(d.Name)] = true
		want := lapi.NetInterface{Name: d.Name, Address: d.Address, IsActive: d.Active}
		if d.Active {
			want.SatellitePort = port
			want.SatelliteEncryptionType = encryption
		}
		cur, ok := have[strings.ToLower(d.Name)]
		switch {
		case !ok:
			c.Create = append(c.Create, want)
		case !cur.Address.Equal(d.Address) || (d.Active && !cur.IsActive) ||
			(d.Active && (cur.SatellitePort != port || !strings.EqualFold(cur.SatelliteEncryptionType, encryption))):
			c.Modify = append(c.Modify, want)
		}
	}
	for _, name := range managed {
		if _, ok := have[strings.ToLower(name)]; ok && !planned[strings.ToLower(name)] {
			c.Delete = append(c.Delete, name)
		}
	}
	sort.Strings(c.Delete)
	return c
}
