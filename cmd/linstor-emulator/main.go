// Command linstor-emulator serves the in-memory LINSTOR REST emulator on a port, for
// trying the operator or golinstor programs without a LINSTOR controller.
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net/http"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/linstor-operator/linstor-operator/internal/emulator"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:3370", "Address to serve the LINSTOR REST API on.")
	version := flag.String("version", emulator.DefaultVersion, "LINSTOR version the controller reports.")
	disk := flag.String("new-node-disk", "/dev/vdb", "Unused 100 GiB virtio disk every new node's machine has; empty for none.")
	extra := flag.String("new-node-extra-disks", "/dev/vdc=200Gi,/dev/vdd=500Gi", "More unused virtio disks of every new node's machine, as comma-separated <device>=<size>; empty for none.")
	flag.Parse()

	type spec struct {
		device string
		size   int64
	}
	var specs []spec
	if *disk != "" {
		specs = append(specs, spec{*disk, 100 << 30})
	}
	for _, item := range strings.Split(*extra, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		device, size, ok := strings.Cut(item, "=")
		q, err := resource.ParseQuantity(size)
		if !ok || err != nil || q.Value() <= 0 || !strings.HasPrefix(device, "/dev/") {
			log.Fatalf("-new-node-extra-disks: %q is not <device>=<size>, e.g. /dev/vdc=200Gi", item)
		}
		specs = append(specs, spec{device, q.Value()})
	}

	disks := func(node string) []emulator.Disk {
		var out []emulator.Disk
		for _, s := range specs {
			out = append(out, emulator.VirtioDisk(node, s.device, s.size))
		}
		return out
	}
	if _, err := emulator.EncodeDisksAnnotation(disks("node")...); err != nil {
		log.Fatalf("new node disks: %v", err)
	}

	emu := emulator.New()
	emu.SetVersion(*version)
	emu.SetNewNodeDisksFunc(disks)
	srv := &http.Server{Addr: *listen, Handler: emu.Handler(), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Printf("LINSTOR emulator %s serving on http://%s", *version, *listen)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
