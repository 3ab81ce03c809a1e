package bundle

import (
	"fmt"
	"strconv"
	"strings"
)

// OpenShiftVersionsAnnotation, in the bundle's metadata and as the bundle image's label,
// names the OpenShift versions whose catalogs may carry the bundle; "v4.18" means 4.18
// and later. The community pipeline refuses a bundle whose range includes an OpenShift
// older than its minKubeVersion (operator-pipelines, check_api_version_constraints),
// and one with a minKubeVersion but no such annotation.
const OpenShiftVersionsAnnotation = "com.redhat.openshift.versions"

// OpenShiftVersions is the oldest OpenShift that ships the CSV's minKubeVersion (1.31):
// OpenShift 4.18 (TestOpenShiftVersionsFollowMinKubeVersion).
const OpenShiftVersions = "v4.18"

// OpenShiftKubernetes is the Kubernetes minor each OpenShift 4 minor ships, from Red Hat's
// table (access.redhat.com/solutions/4870701, "What version of the Kubernetes API is
// included with each OpenShift 4.x release?"), as the community pipeline
// (operatorcert/static_tests/community/bundle.py, OCP_TO_K8S) and preflight
// (openshift-preflight's bundle validation, ocpToKubeVersion: "4.18": "1.31") carry it.
var OpenShiftKubernetes = map[string]string{
	"4.14": "1.27", "4.15": "1.28", "4.16": "1.29", "4.17": "1.30",
	"4.18": "1.31", "4.19": "1.32", "4.20": "1.33", "4.21": "1.34",
}

// OldestOpenShiftFor is the oldest OpenShift minor of the table shipping Kubernetes
// minKube (major.minor[.patch]) or newer.
func OldestOpenShiftFor(minKube string) (string, error) {
	want, err := minor(minKube)
	if err != nil {
		return "", err
	}
	best, bestMinor := "", 0
	for ocp, kube := range OpenShiftKubernetes {
		k, _ := minor(kube)
		o, _ := minor(ocp)
		if k >= want && (best == "" || o < bestMinor) {
			best, bestMinor = ocp, o
		}
	}
	if best == "" {
		return "", fmt.Errorf("no OpenShift in the table ships Kubernetes %s", minKube)
	}
	return best, nil
}

// minor is the minor number of "1.31.0", "1.31" or "4.18".
func minor(v string) (int, error) {
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if len(parts) < 2 {
		return 0, fmt.Errorf("version %q has no minor", v)
	}
	return strconv.Atoi(parts[1])
}
