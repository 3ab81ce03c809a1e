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
	"syscall"
	"time"

	lapi "github.com/LINBIT/golinstor/client"

	"github.com/linstor-operator/linstor-operator/pkg/linstor/emulator"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:3370", "Address to serve the LINSTOR REST API on.")
	version := flag.String("version", emulator.DefaultVersion, "LINSTOR version the controller reports.")
	disk := flag.String("new-node-disk", "/dev/vdb", "Unused 100 GiB block device every new node reports; empty for none.")
	flag.Parse()

	emu := emulator.New()
	emu.SetVersion(*version)
	if *disk != "" {
		emu.SetNewNodeDisks(lapi.PhysicalStorageNode{PhysicalStorageDevice: lapi.PhysicalStorageDevice{Device: *disk, Model: "emulated"}, Size: 100 << 30})
	}
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
