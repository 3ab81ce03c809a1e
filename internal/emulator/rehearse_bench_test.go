package emulator

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkRehearse100k runs what the emulator plays for an upgrade rehearsal from a
// 1.31 database (migrations 28, 29 and 30) on 100,000 rows: 12,500 replicated resource
// definitions, each with two DRBD resources (layer ids and DRBD rows), its DRBD
// definition, a volume definition and DrbdPrimarySetOn. It prints the time and the rows
// the migrations wrote. The real rehearsal's time is LINSTOR's own on the copy plus the
// restore into the scratch API (make bench-backup measures that restore at 100,000
// objects); this measures the emulator's model, not LINSTOR.
func BenchmarkRehearse100k(b *testing.B) {
	db := dbTables{}
	add := func(plural string, r row) {
		name, err := objectName(plural, r)
		if err != nil {
			b.Fatal(err)
		}
		if db[plural] == nil {
			db[plural] = tableRows{}
		}
		db[plural][name] = r
	}
	const definitions = 12500
	id := int64(0)
	for i := 0; i < definitions; i++ {
		rsc := fmt.Sprintf("PVC-%06d", i)
		add("resourcedefinitions", rscDfnRow(rsc, ""))
		add("volumedefinitions", vlmDfnRow(rsc, "", 0, 0))
		add("layerdrbdresourcedefinitions", drbdRscDfnRow(rsc, "", "", int64(7000+i%1000)))
		add("propscontainers", propRow("/RSC_DFNS/"+rsc, "DrbdPrimarySetOn", "N1"))
		for n := 0; n < 2; n++ {
			id++
			add("layerresourceids", lriRow(id, rsc, ""))
			add("layerdrbdresources", drbdRscRow(id))
		}
	}
	rows := 0
	for _, t := range db {
		rows += len(t)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := rehearse(db, 28, 30); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(rows), "rows")
		b.Logf("rehearsal of migrations 28-30 on %d rows: %s", rows, time.Since(start).Round(time.Millisecond))
	}
}
