// Package upgrade decides LINSTOR version changes: which versions this operator release
// runs, which running versions it upgrades from (and through which stepping stones), and
// whether a change may start now. It is pure: the controller acts on its decisions.
package upgrade

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a LINSTOR release version, major.minor.patch with an optional pre-release.
type Version struct {
	Major, Minor, Patch int
	Pre                 string
}

// Parse reads "1.33.3" or "1.34.0-rc.1" (a leading "v" is accepted).
func Parse(s string) (Version, error) {
	core, pre, _ := strings.Cut(strings.TrimPrefix(s, "v"), "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return Version{}, fmt.Errorf("%q is not a LINSTOR version (major.minor.patch)", s)
	}
	var nums [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return Version{}, fmt.Errorf("%q is not a LINSTOR version (major.minor.patch)", s)
		}
		nums[i] = n
	}
	return Version{Major: nums[0], Minor: nums[1], Patch: nums[2], Pre: pre}, nil
}

// MustParse is Parse for the release tables.
func MustParse(s string) Version {
	v, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return v
}

func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if v.Pre != "" {
		s += "-" + v.Pre
	}
	return s
}

// Compare orders versions; a pre-release comes before its release.
func (v Version) Compare(o Version) int {
	for _, d := range []int{v.Major - o.Major, v.Minor - o.Minor, v.Patch - o.Patch} {
		if d != 0 {
			return sign(d)
		}
	}
	switch {
	case v.Pre == o.Pre:
		return 0
	case v.Pre == "":
		return 1
	case o.Pre == "":
		return -1
	}
	return sign(strings.Compare(v.Pre, o.Pre))
}

// Less reports v < o.
func (v Version) Less(o Version) bool { return v.Compare(o) < 0 }

func sign(d int) int {
	switch {
	case d < 0:
		return -1
	case d > 0:
		return 1
	}
	return 0
}
