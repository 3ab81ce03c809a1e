package images

import "testing"

func TestDRBDKernelModules(t *testing.T) {
	cases := []struct {
		osImage string
		want    KernelModules
	}{
		{"Ubuntu 24.04.1 LTS", HostHeaders},
		{"Ubuntu 22.04.4 LTS", HostHeaders},
		{"Debian GNU/Linux 12 (bookworm)", HostHeaders},
		{"Red Hat Enterprise Linux 9.4 (Plow)", HostHeaders},
		{"Red Hat Enterprise Linux 8.9 (Ootpa)", HostHeaders},
		{"Rocky Linux 9.3 (Blue Onyx)", HostHeaders},
		{"Red Hat Enterprise Linux CoreOS 415.92.202402201450-0 (Plow)", DriverToolkitHeaders},
		{"Red Hat Enterprise Linux CoreOS 412.86.202306132230-0 (Ootpa)", DriverToolkitHeaders},
		{"Red Hat Enterprise Linux CoreOS 9.6.20250826-1 (Plow)", DriverToolkitHeaders},
		{"Talos (v1.7.0)", OSProvided},
		{"Talos (v1.11.2)", OSProvided},
		{"Flatcar Container Linux by Kinvolk 3815.2.0 (Oklo)", LibModulesHeaders},
		{"Bottlerocket OS 1.20.0 (aws-k8s-1.29)", HostHeaders},
		{"", HostHeaders},
		// Names that only contain a known one are not it.
		{"Talosian Linux 1", HostHeaders},
		{"Not Red Hat Enterprise Linux CoreOS", HostHeaders},
	}
	for _, tc := range cases {
		t.Run(tc.osImage, func(t *testing.T) {
			if got := DRBDKernelModules(tc.osImage); got != tc.want {
				t.Errorf("DRBDKernelModules(%q) = %d, want %d", tc.osImage, got, tc.want)
			}
		})
	}
}
