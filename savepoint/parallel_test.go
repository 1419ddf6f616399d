package savepoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
)

// The parallel writer writes the bytes of the sequential one, with the
// CRC-32C of those bytes: for runs of a mapped file with gaps, rows in
// another order than stored (one at a time), rows in memory, outputs split
// into several batches (ranges then start and end inside batches and runs),
// no rows at all; with one goroutine, as many as ranges, or fewer. Progress
// is called, never twice at once.
func TestWriteStreamParallelMatches(t *testing.T) {
	defer func(a, b int) { parallelMinRows, parallelChunkRows = a, b }(parallelMinRows, parallelChunkRows)
	parallelMinRows, parallelChunkRows = 1, 37
	r := rand.New(rand.NewPCG(11, 12))
	rows := writerRows(r, 4000, 30)
	sp, _ := writeMapped(t, rows, []int{1500, 2500})
	dir := t.TempDir()
	snap := sp.Files[0].Snapshot
	var gaps []int
	for i := range rows {
		if r.IntN(10) < 8 {
			gaps = append(gaps, i)
		}
	}
	sources := map[string]RowSource{
		"runs with gaps": selection{cur: snap.NewCursor(), idx: gaps},
		"shuffled":       selection{cur: snap.NewCursor(), idx: r.Perm(len(rows))},
		"in memory":      RowSlice(rows),
		"no rows":        RowSlice(nil),
	}
	md := Metadata{{MetaFormatVersion, "1"}}
	for name, src := range sources {
		for _, limit := range []int64{maxColumnBytes, 20000, 3001} {
			for _, jobs := range []int{1, 2, 3, 64} {
				what := fmt.Sprintf("%s, column limit %d, %d jobs", name, limit, jobs)
				func() {
					defer func(v int64) { maxColumnBytes = v }(maxColumnBytes)
					maxColumnBytes = limit
					var want bytes.Buffer
					if err := WriteStream(&want, md, src); err != nil {
						t.Fatal(err)
					}
					out := filepath.Join(dir, "out.snap")
					var calls, busy atomic.Int32
					info, err := WriteSnapshotFrom(out, md, src, SnapshotOptions{Jobs: jobs, Sidecar: true, Progress: func(int64) {
						if busy.Add(1) > 1 {
							t.Errorf("%s: progress called twice at once", what)
						}
						calls.Add(1)
						busy.Add(-1)
					}})
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					got := mustReadFile(t, out)
					if !bytes.Equal(got, want.Bytes()) {
						t.Fatalf("%s: parallel output differs (%d vs %d bytes)\n%s", what, len(got), want.Len(), firstDiff(got, want.Bytes()))
					}
					if info.Size != int64(len(got)) || info.CRC32C != CRC32C(got) {
						t.Fatalf("%s: reported size %d, CRC %08x; the file has %d, %08x", what, info.Size, info.CRC32C, len(got), CRC32C(got))
					}
					if v, detail, _ := Verify(out, true, info.Size, CRC32C(got), mustReadFile(t, out+SidecarSuffix)); v != VerdictValid {
						t.Fatalf("%s: sidecar %s: %s", what, v, detail)
					}
				}()
			}
		}
	}
}

// A mapped input cut short while the parallel writer reads it is an
// ErrInputChanged, and no output is left behind.
func TestWriteStreamParallelInputChanged(t *testing.T) {
	defer func(a, b int) { parallelMinRows, parallelChunkRows = a, b }(parallelMinRows, parallelChunkRows)
	parallelMinRows, parallelChunkRows = 1, 100
	rows := make([]Row, 3000)
	for i := range rows {
		rows[i] = Row{Op: 1, Key: []byte(fmt.Sprintf("k%06d", i)), Value: bytes.Repeat([]byte{byte(i)}, 50)}
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.snap")
	if _, err := WriteSnapshotFile(in, nil, rows, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	sp, err := Open(in, OpenOptions{Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	var idx []int
	for i := 0; i < len(rows); i += 2 {
		idx = append(idx, i)
	}
	if err := os.Truncate(in, 1000); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.snap")
	_, err = WriteSnapshotFrom(out, nil, selection{cur: sp.Files[0].Snapshot.NewCursor(), idx: idx}, SnapshotOptions{Jobs: 4})
	if !errors.Is(err, ErrInputChanged) {
		t.Fatalf("writing from a truncated input: %v, want ErrInputChanged", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "out.snap*")); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// The writer's ranges have equal rows, cut inside runs as well as between
// them, so that no goroutine is left with a long range to finish alone.
func TestNextBatchCutsRuns(t *testing.T) {
	rows := make([]Row, 1000)
	for i := range rows {
		rows[i] = Row{Op: 1, Key: []byte(fmt.Sprintf("k%06d", i)), Value: []byte{byte(i)}}
	}
	snap := columnarAsIs(t, rows, []int{len(rows)})
	idx := make([]int, 0, len(rows))
	for i := range rows {
		if i != 500 { // two runs: 0-499 and 501-999
			idx = append(idx, i)
		}
	}
	end, kLen, vLen, cuts, err := nextBatch(selection{cur: snap.NewCursor(), idx: idx}, 0, 300)
	if err != nil {
		t.Fatal(err)
	}
	want := []rowCut{{300, 300 * 7, 300}, {600, 600 * 7, 600}, {900, 900 * 7, 900}}
	if end != len(idx) || kLen != int64(7*len(idx)) || vLen != int64(len(idx)) || !slices.Equal(cuts, want) {
		t.Fatalf("nextBatch: end %d, sizes %d+%d, cuts %v; want %d, %d+%d, %v", end, kLen, vLen, cuts, len(idx), 7*len(idx), len(idx), want)
	}
	// Sized in parts by several goroutines, the batch is the same; with
	// one goroutine, or rows for one part, it is left to nextBatch.
	for _, jobs := range []int{2, 3, 8} {
		k, v, c, ok := sizeOneBatch(selection{cur: snap.NewCursor(), idx: idx}, 300, jobs)
		if !ok || k != kLen || v != vLen || !slices.Equal(c, want) {
			t.Fatalf("sizeOneBatch, %d jobs: %v, sizes %d+%d, cuts %v; want %d+%d, %v", jobs, ok, k, v, c, kLen, vLen, want)
		}
	}
	for _, c := range []struct{ every, jobs int }{{300, 1}, {len(idx), 4}} {
		if _, _, _, ok := sizeOneBatch(selection{cur: snap.NewCursor(), idx: idx}, c.every, c.jobs); ok {
			t.Errorf("sizeOneBatch, every %d, %d jobs: sized; want it left to nextBatch", c.every, c.jobs)
		}
	}
}

// writeTreeFile writes data to path, making its directories.
func writeTreeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A write whose Stop reports true ends with context.Canceled and leaves
// nothing at its path, whether one goroutine writes the stream (through a
// compressor or not) or several do.
func TestWriteSnapshotStopped(t *testing.T) {
	defer func(a, b int) { parallelMinRows, parallelChunkRows = a, b }(parallelMinRows, parallelChunkRows)
	parallelMinRows, parallelChunkRows = 1000, 100
	dir := t.TempDir()
	for _, n := range []int{10, 3000} {
		rows := make([]Row, n)
		for i := range rows {
			rows[i] = Row{Op: 1, Key: []byte(fmt.Sprintf("k%06d", i)), Value: []byte("v")}
		}
		for _, compression := range []string{CompressNone, CompressZstd} {
			what := fmt.Sprintf("%d rows, compression %q", n, compression)
			out := filepath.Join(dir, "out.snap")
			_, err := WriteSnapshotFrom(out, nil, RowSlice(rows), SnapshotOptions{Jobs: 2, Sidecar: true, Compression: compression, Stop: func() bool { return true }})
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%s: %v, want context.Canceled", what, err)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
				t.Fatalf("%s: left behind: %v", what, left)
			}
		}
	}
}
