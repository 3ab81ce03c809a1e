// Command bundlegen writes the OLM bundle (make bundle). See internal/bundle.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/linstor-operator/linstor-operator/internal/bundle"
)

func main() {
	var o bundle.Options
	var channels string
	flag.StringVar(&o.Root, "root", ".", "Repository root.")
	flag.StringVar(&o.Out, "out", "bundle", "Output directory.")
	flag.StringVar(&o.Version, "version", "", "Operator version, for example 0.2.0.")
	flag.StringVar(&o.Image, "image", "", "Operator image.")
	flag.StringVar(&channels, "channels", "candidate,stable", "Channels, comma separated.")
	flag.StringVar(&o.DefaultChannel, "default-channel", "stable", "Default channel.")
	flag.StringVar(&o.CreatedAt, "created-at", "", "createdAt annotation (fixed per release for reproducible bundles).")
	digests := flag.String("image-digests", "", "File of \"<image reference> sha256:<digest>\" lines: pin every image by digest (see docs/olm.md).")
	flag.Parse()
	o.Channels = strings.Split(channels, ",")
	if o.Version == "" || o.Image == "" || o.CreatedAt == "" {
		fmt.Fprintln(os.Stderr, "bundlegen: -version, -image and -created-at are required")
		os.Exit(2)
	}
	if *digests != "" {
		var err error
		if o.Digests, err = bundle.ReadDigests(*digests); err != nil {
			fmt.Fprintln(os.Stderr, "bundlegen:", err)
			os.Exit(1)
		}
	}
	if err := bundle.Generate(o); err != nil {
		fmt.Fprintln(os.Stderr, "bundlegen:", err)
		os.Exit(1)
	}
}
