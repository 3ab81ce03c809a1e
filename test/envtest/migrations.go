package envtest

import (
	"fmt"
	"strings"
)

// MigrationProblems checks post, the database after an upgrade hop, against pre, the
// same database before it, for what each of LINSTOR's k8s migrations 28, 29 and 30 that
// the hop ran must have done (docs/linstor-schema-history.md §3; the stored version is
// the next migration's number, so a hop from stored s to stored t ran s … t-1). It is
// written from the server's source, apart from the emulator's code, and names every
// difference; nil when the hop did exactly what the migrations do to those rows.
func MigrationProblems(pre, post *LinstorDatabase) []string {
	var out []string
	from, to := pre.StoredVersion(), post.StoredVersion()
	ran := func(n int64) bool { return from <= n && n < to }
	if ran(28) {
		out = append(out, migration28(pre, post)...)
	}
	if ran(29) {
		out = append(out, migration29(pre, post)...)
	}
	if ran(30) {
		out = append(out, migration30(pre, post)...)
	}
	return out
}

// Migration_28_v1_31_1_MoveTcpPortsToNodes: every table's CRD gets schema v1-31-1 as
// its storage version; each DRBD resource gets tcp_port_list "[<its definition's
// tcp_port>]" ("[-1]" for a snapshot's); each resource connection's tcp_port becomes
// tcp_port_src and tcp_port_dst.
func migration28(pre, post *LinstorDatabase) []string {
	var out []string
	for plural := range pre.Tables {
		if plural == "linstorversion" || plural == "rollback" {
			continue
		}
		t, ok := post.Tables[plural]
		switch {
		case !ok:
			out = append(out, "28: table "+plural+" is gone")
		case t.Storage != "v1-31-1":
			out = append(out, fmt.Sprintf("28: table %s stores %s, want v1-31-1", plural, t.Storage))
		case !contains(t.Served, pre.Tables[plural].Storage):
			out = append(out, fmt.Sprintf("28: table %s no longer serves %s", plural, pre.Tables[plural].Storage))
		}
	}
	ports := map[string]any{} // resource name -> its DRBD definition's tcp_port
	for _, rd := range pre.Tables["layerdrbdresourcedefinitions"].Rows {
		if fmt.Sprint(rd["snapshot_name"]) == "" && fmt.Sprint(rd["resource_name_suffix"]) == "" {
			ports[fmt.Sprint(rd["resource_name"])] = rd["tcp_port"]
		}
	}
	lris := map[string]map[string]any{}
	for _, lri := range pre.Tables["layerresourceids"].Rows {
		lris[fmt.Sprint(lri["layer_resource_id"])] = lri
	}
	for name, r := range post.Tables["layerdrbdresources"].Rows {
		lri := lris[fmt.Sprint(r["layer_resource_id"])]
		if lri == nil {
			out = append(out, fmt.Sprintf("28: layerdrbdresources/%s has no LayerResourceIds row: the migration fails on it", name))
			continue
		}
		want := "[-1]"
		if fmt.Sprint(lri["snapshot_name"]) == "" {
			want = fmt.Sprintf("[%v]", nullText(ports[fmt.Sprint(lri["resource_name"])]))
		}
		if got := fmt.Sprint(r["tcp_port_list"]); got != want {
			out = append(out, fmt.Sprintf("28: layerdrbdresources/%s tcp_port_list %s, want %s", name, got, want))
		}
		if old, ok := pre.Tables["layerdrbdresources"].Rows[name]; ok {
			out = append(out, sameExcept("28: layerdrbdresources/"+name, old, r, "tcp_port_list")...)
		}
	}
	for name, r := range post.Tables["resourceconnections"].Rows {
		old, ok := pre.Tables["resourceconnections"].Rows[name]
		if !ok {
			continue
		}
		if _, still := r["tcp_port"]; still {
			out = append(out, "28: resourceconnections/"+name+" still has tcp_port")
		}
		for _, col := range []string{"tcp_port_src", "tcp_port_dst"} {
			if fmt.Sprint(r[col]) != fmt.Sprint(old["tcp_port"]) {
				out = append(out, fmt.Sprintf("28: resourceconnections/%s %s %v, want the old tcp_port %v", name, col, r[col], old["tcp_port"]))
			}
		}
	}
	return out
}

// Migration_29_v1_31_1_DisableAutoBlockSizesForExistingResources: every resource name
// of ResourceDefinitions gets Linstor/Drbd/auto-block-size=False on /RSC_DFNS/<NAME>.
func migration29(pre, post *LinstorDatabase) []string {
	var out []string
	seen := map[string]bool{}
	for _, rd := range pre.Tables["resourcedefinitions"].Rows {
		name := Upper(fmt.Sprint(rd["resource_name"]))
		if seen[name] {
			continue
		}
		seen[name] = true
		got := post.Select("propscontainers", map[string]any{"props_instance": "/RSC_DFNS/" + name, "prop_key": "Linstor/Drbd/auto-block-size"})
		if len(got) != 1 || fmt.Sprint(got[0]["prop_value"]) != "False" {
			out = append(out, fmt.Sprintf("29: /RSC_DFNS/%s Linstor/Drbd/auto-block-size: %v, want one row False", name, got))
		}
	}
	if len(seen) == 0 {
		out = append(out, "29: the database before the hop had no resource definition: nothing to check")
	}
	return out
}

// Migration_30_v1_31_1_NewUpToDateMechanic: a resource definition's DrbdPrimarySetOn=V
// becomes Linstor/Drbd/InitialUptoDateOn=V on each of its volume definitions, which get
// the DRBD_INIT flag (32); every DrbdPrimarySetOn property is deleted.
func migration30(pre, post *LinstorDatabase) []string {
	var out []string
	if left := post.Select("propscontainers", map[string]any{"prop_key": "DrbdPrimarySetOn"}); len(left) > 0 {
		out = append(out, fmt.Sprintf("30: DrbdPrimarySetOn rows left: %v", left))
	}
	moved := 0
	for _, p := range pre.Select("propscontainers", map[string]any{"prop_key": "DrbdPrimarySetOn"}) {
		rsc, ok := strings.CutPrefix(fmt.Sprint(p["props_instance"]), "/RSC_DFNS/")
		if !ok {
			continue
		}
		for _, vd := range pre.Select("volumedefinitions", map[string]any{"resource_name": rsc, "snapshot_name": ""}) {
			moved++
			inst := fmt.Sprintf("/VLM_DFNS/%s/%v", rsc, vd["vlm_nr"])
			got := post.Select("propscontainers", map[string]any{"props_instance": inst, "prop_key": "Linstor/Drbd/InitialUptoDateOn"})
			if len(got) != 1 || fmt.Sprint(got[0]["prop_value"]) != fmt.Sprint(p["prop_value"]) {
				out = append(out, fmt.Sprintf("30: %s InitialUptoDateOn %v, want %v", inst, got, p["prop_value"]))
			}
			now := post.Select("volumedefinitions", map[string]any{"resource_name": rsc, "snapshot_name": "", "vlm_nr": vd["vlm_nr"]})
			if len(now) != 1 {
				out = append(out, fmt.Sprintf("30: volume definition %s/%v: %d rows", rsc, vd["vlm_nr"], len(now)))
				continue
			}
			flags, _ := now[0]["vlm_flags"].(int64)
			oldFlags, _ := vd["vlm_flags"].(int64)
			if flags != oldFlags|32 {
				out = append(out, fmt.Sprintf("30: volume definition %s/%v flags %d, want %d (DRBD_INIT added)", rsc, vd["vlm_nr"], flags, oldFlags|32))
			}
		}
	}
	if moved == 0 {
		out = append(out, "30: the database before the hop had no DrbdPrimarySetOn on a volume's definition: nothing to check")
	}
	return out
}

func sameExcept(what string, old, now map[string]any, except ...string) []string {
	var out []string
	for k, v := range old {
		if contains(except, k) {
			continue
		}
		if fmt.Sprint(now[k]) != fmt.Sprint(v) {
			out = append(out, fmt.Sprintf("%s: %s %v, was %v", what, k, now[k], v))
		}
	}
	return out
}

func nullText(v any) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(v)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
