package controllers

import (
	"testing"

	"github.com/linstor-operator/linstor-operator/pkg/names"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// The satellite pod as the controllers write it to a real API server: drbd-reactor's
// ConfigMap is applied with the cluster's objects (owned by the cluster, so it is pruned
// with it), and the DaemonSet the API server accepted carries the shutdown guard, the
// reactor reading that ConfigMap, and the host mounts LVM and udev need.
func TestSatellitePodIsCompleteOnTheAPIServer(t *testing.T) {
	g := NewWithT(t)
	ns := env.Namespace(t)
	makeNode(t, "satpod-a", "10.9.4.1", map[string]string{"suite": "satpod"})
	cluster := makeCluster(t, ns, linstorv1.LinstorClusterSpec{NodeSelector: map[string]string{"suite": "satpod"}})

	g.Eventually(func(g Gomega) {
		cm := get(g, ns, names.ReactorConfigName, &corev1.ConfigMap{})
		g.Expect(metav1.IsControlledBy(cm, cluster)).To(BeTrue(), "the reactor's ConfigMap is the cluster's")
		g.Expect(cm.Data).To(HaveKeyWithValue(names.ReactorConfigKey, ContainSubstring("[[prometheus]]")))

		tmpl := podTemplate(g, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.SatelliteDaemonSetName("satpod-a")}})
		var init, containers []string
		for _, c := range tmpl.Spec.InitContainers {
			init = append(init, c.Name)
		}
		for _, c := range tmpl.Spec.Containers {
			containers = append(containers, c.Name)
		}
		g.Expect(init).To(Equal([]string{names.DRBDLoaderContainer, names.ShutdownGuardContainer}))
		g.Expect(containers).To(Equal([]string{names.SatelliteComponent, names.ReactorContainer}))
		hostPaths := map[string]string{}
		for _, v := range tmpl.Spec.Volumes {
			switch {
			case v.HostPath != nil:
				hostPaths[v.HostPath.Path] = string(*v.HostPath.Type)
			case v.ConfigMap != nil && v.ConfigMap.Name == names.ReactorConfigName:
				hostPaths["configMap"] = v.Name
			}
		}
		for path, typ := range map[string]string{
			"/etc/lvm/archive": "DirectoryOrCreate", "/etc/lvm/backup": "DirectoryOrCreate", "/run/lock": "DirectoryOrCreate",
			"/run/udev": "DirectoryOrCreate", "/var/lib/linstor.d": "DirectoryOrCreate", "/var/log/linstor-satellite": "DirectoryOrCreate",
			"/run/systemd/system": "Directory", "/run/drbd-shutdown-guard": "DirectoryOrCreate", "/run/dbus/system_bus_socket": "Socket",
		} {
			g.Expect(hostPaths).To(HaveKeyWithValue(path, typ))
		}
		g.Expect(hostPaths).To(HaveKey("configMap"), "the reactor's ConfigMap is mounted")
	}, timeout, tick).Should(Succeed())
}
