package images

import "strings"

// WithRepository returns the set with every image moved to repository, for a mirror:
// "<repository>/<last path element>[:tag][@digest]". Tags and digests are kept, so a
// digest still pins the exact image the release was tested with. "" changes nothing.
// Images a LinstorCluster sets in a component's image field are not in the set and are
// used as written.
func (s Set) WithRepository(repository string) Set {
	if repository == "" {
		return s
	}
	// The operator's own image is where the operator already runs from: it stays.
	out := Set{images: map[Component]string{}, loaders: map[string]string{}, operator: s.operator, toolkit: s.toolkit}
	for c, img := range s.images {
		out.images[c] = InRepository(img, repository)
	}
	for d, img := range s.loaders {
		out.loaders[d] = InRepository(img, repository)
	}
	for v, imgs := range s.versioned {
		if out.versioned == nil {
			out.versioned = map[string]map[Component]string{}
		}
		out.versioned[v] = map[Component]string{}
		for c, img := range imgs {
			out.versioned[v][c] = InRepository(img, repository)
		}
	}
	return out
}

// InRepository rewrites one image reference to repository, keeping its last path
// element with its tag, and its digest. The registry, with its port ("host:5000/"),
// goes with the rest of the path; a digest's "sha256:" may not be taken for a path.
func InRepository(ref, repository string) string {
	name, digest, _ := strings.Cut(ref, "@")
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	if digest != "" {
		digest = "@" + digest
	}
	return strings.TrimSuffix(repository, "/") + "/" + name + digest
}
