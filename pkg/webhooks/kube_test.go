package webhooks

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestDatabaseURLs(t *testing.T) {
	for url, want := range map[string]string{
		"jdbc:postgresql://db.example.com:5432/linstor": "",
		"jdbc:mariadb://db/linstor?useSSL=true":         "",
		"etcd://etcd-0:2379,etcd-1:2379":                "",
		"jdbc:postgresql:///linstor":                    "must name the database's host",
		"jdbc:h2:/var/lib/linstor/db":                   "must name the database's host",
		"jdbc::x":                                       "must be jdbc:<driver>://<host>/<database>",
		"etcd://etcd:99999":                             `host "etcd:99999" is not host[:port]`,
		"etcd://a:2379,,b:2379":                         `host "" is not host[:port]`,
		"postgres://db/linstor":                         "must be a JDBC (jdbc:...) or etcd (etcd://...) URL",
	} {
		errs := validateDatabaseURL(field.NewPath("url"), url)
		if got := errs.ToAggregate(); (want == "") != (got == nil) || (got != nil && !strings.Contains(got.Error(), want)) {
			t.Errorf("%s: got %v, want %q", url, got, want)
		}
	}
}

func TestPodTemplatePatchDirectives(t *testing.T) {
	for patch, want := range map[string]string{
		`{"spec":{"containers":[{"name":"c","$patch":"delete"}]}}`:                                        "",
		`{"spec":{"$setElementOrder/containers":[{"name":"c"}],"containers":[{"name":"c","image":"i"}]}}`: "",
		`{"spec":{"containers":[{"name":"c","$deleteFromPrimitiveList/args":["--x"]}]}}`:                  "",
		`{"spec":{"nodeSelector":{"$patch":"replace","a":"b"}}}`:                                          "",
		`{"spec":{"$retainKeys":["containers"],"containers":[{"name":"c"}]}}`:                             "",
		`{"$patch":"replace","spec":{"containers":[{"name":"c","image":"i"}]}}`:                           "",
		`{"spec":{"containers":[{"name":"c","$patch":"explode"}]}}`:                                       `Unsupported value: "explode"`,
		`{"spec":{"$retainKeys":"containers"}}`:                                                           "must be a list of the field names to keep",
		`{"spec":{"$bogus":1}}`:                                                                           "is not a strategic-merge directive",
		`{"spec":{"containers":[{"name":"c","$deleteFromPrimitiveList/image":["x"]}]}}`:                   "must be a pod template patch",
		`{"spec":{"$setElementOrder/containers":[{"nam":"c"}]}}`:                                          `unknown field "spec.containers[0].nam"`,
		`{"spec":{"containers":[{"$patch":"delete"}]}}`:                                                   "does not contain declared merge key: name",
		`{"spec":{"containerz":[]}}`:                                                                      `unknown field "spec.containerz"`,
	} {
		errs := validatePodTemplatePatch(field.NewPath("spec", "podTemplate"), &runtime.RawExtension{Raw: []byte(patch)})
		if got := errs.ToAggregate(); (want == "") != (got == nil) || (got != nil && !strings.Contains(got.Error(), want)) {
			t.Errorf("%s: got %v, want %q", patch, got, want)
		}
	}
}
