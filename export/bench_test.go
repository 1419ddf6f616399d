package export

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/sptool/sptool/internal/gen"
	"github.com/sptool/sptool/savepoint"
)

// benchRows is the size of the benchmark snapshot: 10 million rows, or
// SPTOOL_BENCH_ROWS.
func benchRows(b *testing.B) int {
	n := 10_000_000
	if s := os.Getenv("SPTOOL_BENCH_ROWS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			b.Fatalf("SPTOOL_BENCH_ROWS=%q: want a positive integer", s)
		}
		n = v
	}
	return n
}

// cpuSeconds returns the user and system CPU time the process has used:
// on a machine shared with other work, rows per CPU-second is steadier than
// rows per wall-clock second.
func cpuSeconds() float64 {
	u, s := cpuTimes()
	return u + s
}

// vmHWM returns the process's peak resident set size in bytes
// (/proc/self/status VmHWM), or 0 where it is not available.
func vmHWM() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb * 1024
		}
	}
	return 0
}

// BenchmarkExportParquet exports a generated snapshot (internal/gen BigRows:
// 5 operators, 4 slots, int64 user keys over all key groups, 8-byte values)
// to canonical Parquet (Snappy), on one goroutine. The snapshot is written,
// synced to disk and opened as sptool opens it (savepoint.Open) outside the
// timer, then the heap is returned to the OS (debug.FreeOSMemory), so the
// export pays its page faults as a fresh sptool process does.
//
// Inputs: "sorted" is the order sptool writes (canonical); "shuffled" the
// hash-map order clink writes. Outputs: "file" writes the Parquet file
// atomically as `sptool export` does (to the page cache: CLINK_STATE_FSYNC=0
// skips the fsyncs); "discard" encodes to io.Discard, the export alone.
//
// Reports rows/s (wall clock), rows/cpu-s (rows per second of CPU time the
// process used, GC included: steadier on a shared machine) and the peak RSS
// during the export (VmHWM after resetting it through /proc/self/clear_refs;
// it includes the opened snapshot: the file's bytes plus about 56 bytes per
// row). SPTOOL_BENCH_KEEP_HEAP=1 skips FreeOSMemory.
//
//	CLINK_STATE_FSYNC=0 go test ./export -run '^$' -bench ExportParquet -benchtime 1x
//	SPTOOL_BENCH_ROWS=1000000 go test ./export -run '^$' -bench ExportParquet
func BenchmarkExportParquet(b *testing.B) {
	if testing.Short() {
		b.Skip("generates a 10-million-row snapshot; skipped with -short")
	}
	n := benchRows(b)
	dir := b.TempDir()
	inputs := map[string]string{}
	input := func(b *testing.B, name string) string {
		if p, ok := inputs[name]; ok {
			return p
		}
		p := filepath.Join(dir, name+".snap")
		if name == "sorted" {
			// sptool's canonical writer sorts (gen.BigOptions.Sorted only
			// skips the shuffle: its rows cycle through the operators).
			rows := gen.BigRows(gen.BigOptions{Rows: n, Seed: 1, Sorted: true})
			if _, err := savepoint.WriteSnapshotFile(p, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.SnapshotOptions{}); err != nil {
				b.Fatal(err)
			}
		} else if err := gen.WriteBig(p, gen.BigOptions{Rows: n, Seed: 1}); err != nil {
			b.Fatal(err)
		}
		syncAll() // no writeback of the input during the timed export
		inputs[name] = p
		return p
	}
	for _, order := range []string{"sorted", "shuffled"} {
		for _, dest := range []string{"file", "discard"} {
			b.Run(order+"/"+dest, func(b *testing.B) {
				sp, err := savepoint.Open(input(b, order), savepoint.OpenOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if os.Getenv("SPTOOL_BENCH_KEEP_HEAP") == "" {
					debug.FreeOSMemory()
				}
				// Reset the peak RSS so that VmHWM reports the export's
				// peak (the opened snapshot included), not the generator's.
				os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
				out := filepath.Join(dir, "big.parquet")
				var res *Result
				user0, sys0 := cpuTimes()
				b.ResetTimer()
				for b.Loop() {
					if dest == "discard" {
						res, err = Write(context.Background(), io.Discard, sp, Options{})
					} else {
						os.Remove(out)
						res, err = WriteFile(context.Background(), out, sp, Options{}, true)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				user1, sys1 := cpuTimes()
				cpu := user1 - user0 + sys1 - sys0
				if res.Rows != int64(n) {
					b.Fatalf("exported %d rows, want %d", res.Rows, n)
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
				if cpu > 0 {
					b.ReportMetric(float64(n)*float64(b.N)/cpu, "rows/cpu-s")
				}
				b.ReportMetric((sys1-sys0)/float64(b.N), "sys-s/op")
				b.ReportMetric(vmHWM()/(1<<20), "peak-RSS-MB")
				b.ReportMetric(float64(res.Bytes)/(1<<20), "parquet-MB")
				os.Remove(out)
			})
		}
	}
}
