package images

import "testing"

func TestHost(t *testing.T) {
	cases := []struct {
		osImage string
		want    HostLayout
	}{
		{"Ubuntu 24.04.1 LTS", HostLayout{Systemd: true, LVMDir: "/etc/lvm"}},
		{"Red Hat Enterprise Linux CoreOS 416.94.202410211619-0", HostLayout{Systemd: true, LVMDir: "/etc/lvm"}},
		{"Flatcar Container Linux by Kinvolk 3815.2.0 (Oklo)", HostLayout{Systemd: true, LVMDir: "/etc/lvm"}},
		{"Talos (v1.7.0)", HostLayout{Systemd: false, LVMDir: "/var/etc/lvm"}},
		{"Talos (v1.11.2)", HostLayout{Systemd: false, LVMDir: "/var/etc/lvm"}},
		{"", HostLayout{Systemd: true, LVMDir: "/etc/lvm"}},
		// A name that only starts like a known one is not it.
		{"Talosian Linux 1", HostLayout{Systemd: true, LVMDir: "/etc/lvm"}},
	}
	for _, tc := range cases {
		t.Run(tc.osImage, func(t *testing.T) {
			if got := Host(tc.osImage); got != tc.want {
				t.Errorf("Host(%q) = %+v, want %+v", tc.osImage, got, tc.want)
			}
		})
	}
}
