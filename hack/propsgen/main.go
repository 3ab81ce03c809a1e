// Command propsgen writes pkg/linstor/props/zz_generated_whitelist.go, the table of
// LINSTOR properties each object accepts, from three files of linstor-common (the
// LINSTOR submodule that defines the properties). See package
// internal/propsgen for what it derives and how.
//
// To regenerate, take the linstor-common commit the LINSTOR release pins (for a
// release tag: `git -C linstor-server ls-tree <tag> linstor-common`), extract the
// three files and run the generator from the repository root:
//
//	commit=ab276708d06bef880fe829230472a5c35ac25359   # LINSTOR v1.33.3
//	git clone https://github.com/LINBIT/linstor-common /tmp/linstor-common
//	mkdir -p /tmp/lc
//	for f in properties.json consts.json drbdsetup.xml; do
//		git -C /tmp/linstor-common show "$commit:$f" > "/tmp/lc/$f"
//	done
//	go run ./hack/propsgen -common /tmp/lc -commit "$commit" -linstor v1.33.3 \
//		-out pkg/linstor/props/zz_generated_whitelist.go
//
// Afterwards `LINSTOR_COMMON_DIR=/tmp/lc go test ./pkg/linstor/props/` checks that the
// committed table is what these files produce.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/linstor-operator/linstor-operator/internal/propsgen"
)

func main() {
	common := flag.String("common", "", "Directory with linstor-common's properties.json, consts.json and drbdsetup.xml.")
	out := flag.String("out", "pkg/linstor/props/zz_generated_whitelist.go", "Output file.")
	commit := flag.String("commit", propsgen.DefaultCommit, "linstor-common commit the files come from (printed in the header).")
	linstor := flag.String("linstor", propsgen.DefaultLinstorVersion, "LINSTOR release that pins the commit (printed in the header).")
	flag.Parse()
	if *common == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: propsgen -common DIR [-out FILE] [-commit SHA] [-linstor VERSION]")
		os.Exit(2)
	}
	src, err := propsgen.Generate(*common, *commit, *linstor)
	if err != nil {
		fmt.Fprintln(os.Stderr, "propsgen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "propsgen:", err)
		os.Exit(1)
	}
}
