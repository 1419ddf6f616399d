package transform_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sptool/sptool/internal/gen"
	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/transform"
)

// benchRows is the size of the benchmarks' snapshot: 1,000,000 rows, or
// SPTOOL_BENCH_ROWS (e.g. 10000000).
func benchRows(b *testing.B) int {
	n := 1_000_000
	if s := os.Getenv("SPTOOL_BENCH_ROWS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			b.Fatalf("SPTOOL_BENCH_ROWS=%q: want a positive row count", s)
		}
		n = v
	}
	return n
}

// benchApply writes a generated snapshot (unsorted, as clink writes it) and
// times a whole apply of the rules: open, run every row through them,
// write the output file and its sidecar. It reports rows/s.
func benchApply(b *testing.B, src string, sideFiles map[string]string) {
	if testing.Short() {
		b.Skip("generates a large snapshot")
	}
	rows := benchRows(b)
	dir := b.TempDir()
	in := filepath.Join(dir, "checkpoint-1.snap")
	if err := gen.WriteBig(in, gen.BigOptions{Rows: rows, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	for name, body := range sideFiles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	set, err := rules.Parse(filepath.Join(dir, "rules.yaml"), []byte(src))
	if err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(dir, "out", "checkpoint-1.snap")
	var rep *transform.Report
	b.ResetTimer()
	for b.Loop() {
		sp, err := savepoint.Open(in, savepoint.OpenOptions{RequireValid: true})
		if err != nil {
			b.Fatal(err)
		}
		rep, err = transform.Run(context.Background(), sp, set, transform.Options{Out: out, Force: true})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	if rep.RowsIn != int64(rows) || rep.RowsDropped == 0 {
		b.Fatalf("report: %d rows in, %d dropped", rep.RowsIn, rep.RowsDropped)
	}
	b.ReportMetric(float64(rep.RowsDropped), "dropped")
}

// BenchmarkApplyDrop applies one drop expression to every row.
func BenchmarkApplyDrop(b *testing.B) {
	benchApply(b, "version: 1\nrules:\n  - drop: 'key_group < 64 && slot == \"agg\"'\n", nil)
}

// BenchmarkApplyPurge100k purges 100,000 int64 keys (every tenth user key
// of the snapshot) from every row.
func BenchmarkApplyPurge100k(b *testing.B) {
	rows := benchRows(b)
	var keys strings.Builder
	step := max(rows/100_000, 1)
	for i := range 100_000 {
		keys.WriteString(strconv.Itoa(i * step))
		keys.WriteByte('\n')
	}
	benchApply(b, "version: 1\nrules:\n  - purge_keys: {keys_file: keys.txt, codec: int64}\n",
		map[string]string{"keys.txt": keys.String()})
}
