package transform

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sptool/sptool/internal/gen"
	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
)

// TestPartsAgree: a file processed by several workers over ranges of its
// rows gives byte-identical output and the same report as one worker, for
// sorted and shuffled inputs and rules that drop, rename, rewrite and purge.
func TestPartsAgree(t *testing.T) {
	defer func(v int) { minRowsPerPart = v }(minRowsPerPart)
	dir := t.TempDir()
	src := `version: 1
slots:
  - {op: 42, slot: agg, key: int64, value: int64}
rules:
  - drop: 'key_group < 20 && slot == "window"'
  - rename_slot: {op: 7, from: count, to: count_v2}
  - set_value: {op: 42, slot: agg, expr: 'value % 1000'}
  - purge_keys: {keys: [5, 17, 99991], codec: int64}
  - remap_operator: {from: 7, to: 8}
`
	set, err := rules.Parse(filepath.Join(dir, "r.yaml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, sorted := range []bool{true, false} {
		in := filepath.Join(dir, "in.snap")
		os.Remove(in)
		if err := gen.WriteBig(in, gen.BigOptions{Rows: 20000, Seed: 3, Sorted: sorted}); err != nil {
			t.Fatal(err)
		}
		one, b1 := runParts(t, in, set, 1<<30, 1, filepath.Join(dir, "one.snap"))
		many, b2 := runParts(t, in, set, 64, 7, filepath.Join(dir, "many.snap"))
		if !bytes.Equal(b1, b2) {
			t.Fatalf("sorted=%v: output of 7 parts differs from one part", sorted)
		}
		if one.RowsOut != many.RowsOut || one.RowsDropped != many.RowsDropped || one.DuplicatesResolved != many.DuplicatesResolved {
			t.Fatalf("sorted=%v: reports differ: %+v vs %+v", sorted, one, many)
		}
		for i := range one.PerRule {
			if *one.PerRule[i] != *many.PerRule[i] && one.PerRule[i].Purge == nil {
				t.Errorf("rule %d: %+v vs %+v", i+1, one.PerRule[i], many.PerRule[i])
			}
		}
		for i := range one.Slots {
			if *one.Slots[i] != *many.Slots[i] {
				t.Errorf("slot %d: %+v vs %+v", i, one.Slots[i], many.Slots[i])
			}
		}
		if one.RowsDropped == 0 || one.PerRule[1].Changed == 0 || one.PerRule[3].Dropped == 0 {
			t.Fatalf("the rules did not do anything: %+v", one.PerRule)
		}
		os.Remove(filepath.Join(dir, "one.snap"))
		os.Remove(filepath.Join(dir, "one.snap.meta"))
		os.Remove(filepath.Join(dir, "many.snap"))
		os.Remove(filepath.Join(dir, "many.snap.meta"))
	}
}

// TestPartsJoinTimerBlobs: the timer blobs of two operators a merge joins
// sit in different parts of the file when several workers take it; the
// output and the timers merged are those of one worker.
func TestPartsJoinTimerBlobs(t *testing.T) {
	defer func(v int) { minRowsPerPart = v }(minRowsPerPart)
	dir := t.TempDir()
	var rows []savepoint.Row
	for op := uint64(7); op <= 8; op++ {
		for i := range 1000 {
			rows = append(rows, savepoint.Row{Op: op, Key: fmt.Appendf(nil, "\x01s%d|%05d", op, i), Value: []byte("v")})
		}
		ts := []savepoint.Timer{{Time: int64(op), Key: []byte("k")}, {Time: 100, Key: []byte("both")}}
		rows = append(rows, savepoint.Row{Op: op, Key: append([]byte(nil), savepoint.TimerKeyPrefix...), Value: savepoint.EncodeTimers(nil, ts)})
	}
	one, b1, many, b2 := runTwoWays(t, dir, rows, "  - remap_operator: {from: 7, to: 8, merge: true}\n", 4)
	if !bytes.Equal(b1, b2) {
		t.Fatal("the output of several parts differs from one part's")
	}
	// Op 7's timer at 7 joins op 8's; the timer both hold is kept once.
	if one.TimersMerged != 3 || many.TimersMerged != 3 || one.DuplicatesResolved != 1 || many.DuplicatesResolved != 1 {
		t.Errorf("timers merged %d and %d, duplicates %d and %d; want 3, 3, 1, 1", one.TimersMerged, many.TimersMerged, one.DuplicatesResolved, many.DuplicatesResolved)
	}
}

// runParts applies set to the file in with parts of at least minRows rows
// and jobs workers, writing out; it returns the report and the output's
// bytes. The caller restores minRowsPerPart.
func runParts(t *testing.T, in string, set *rules.Set, minRows, jobs int, out string) (*Report, []byte) {
	t.Helper()
	minRowsPerPart = minRows
	sp, err := savepoint.Open(in, savepoint.OpenOptions{Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	rep, err := Run(context.Background(), sp, set, Options{Out: out, Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return rep, b
}

// TestPartsDroppedTimerBlobs: a timer blob a rule drops in a later part of
// a file stays dropped when the parts are joined: its place (none) is not
// shifted onto the last row of the part before, here another blob (op
// 9's), which must reach the output as it was.
func TestPartsDroppedTimerBlobs(t *testing.T) {
	defer func(v int) { minRowsPerPart = v }(minRowsPerPart)
	dir := t.TempDir()
	blob := func(op uint64) savepoint.Row {
		return savepoint.Row{Op: op, Key: bytes.Clone(savepoint.TimerKeyPrefix), Value: savepoint.EncodeTimers(nil, []savepoint.Timer{{Time: int64(op), Key: []byte("k")}})}
	}
	keyed := func(op uint64, n int) (rows []savepoint.Row) {
		for i := range n {
			rows = append(rows, savepoint.Row{Op: op, Key: fmt.Appendf(nil, "\x01s|%05d", i), Value: []byte("v")})
		}
		return rows
	}
	var rows []savepoint.Row
	rows = append(append(rows, keyed(7, 60)...), blob(7))
	rows = append(append(rows, keyed(8, 60)...), blob(8))
	rows = append(rows, blob(9), blob(21), blob(22)) // op 9's is the last row of the first of two parts
	rows = append(rows, keyed(30, 121)...)
	one, b1, two, b2 := runTwoWays(t, dir, rows, "  - remap_operator: {from: 7, to: 8, merge: true}\n  - drop: 'op == 21 || op == 22'\n", 2)
	if !bytes.Equal(b1, b2) {
		t.Error("the output of two parts differs from one part's")
	}
	if one.TimersMerged != 2 || two.TimersMerged != 2 || len(two.Warnings) != len(one.Warnings) {
		t.Errorf("timers merged %d and %d (want 2), warnings %q and %q", one.TimersMerged, two.TimersMerged, one.Warnings, two.Warnings)
	}
	sp, err := savepoint.Open(filepath.Join(dir, "many.snap"), savepoint.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	var ops []uint64
	sp.Files[0].Snapshot.EachRow(func(i int, r savepoint.Row) bool {
		if bytes.HasPrefix(r.Key, savepoint.TimerKeyPrefix) {
			ops = append(ops, r.Op)
		}
		return true
	})
	if want := []uint64{8, 9}; !slices.Equal(ops, want) {
		t.Errorf("timer blobs of ops %v, want %v", ops, want)
	}
}

// runTwoWays writes rows to a file in dir and applies the rules src to it
// with jobs workers, in one part (one.snap) and in parts of 64 rows
// (many.snap); it returns both reports and outputs. The caller restores
// minRowsPerPart.
func runTwoWays(t *testing.T, dir string, rows []savepoint.Row, src string, jobs int) (one *Report, b1 []byte, many *Report, b2 []byte) {
	t.Helper()
	in := filepath.Join(dir, "in.snap")
	if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	set, err := rules.Parse(filepath.Join(dir, "r.yaml"), []byte("version: 1\nrules:\n"+src))
	if err != nil {
		t.Fatal(err)
	}
	one, b1 = runParts(t, in, set, 1<<30, jobs, filepath.Join(dir, "one.snap"))
	many, b2 = runParts(t, in, set, 64, jobs, filepath.Join(dir, "many.snap"))
	return one, b1, many, b2
}

// TestFailureStopsParts: a part of a file whose rules fail stops the parts
// after it at their next row: none of them runs to its end (each would
// take seconds, an expression taking some 40 ms a row), and the error is
// the failing part's, whichever part it is. The parts before it run to
// their end (their rows here are quick), so that the error reported is
// the first in row order whatever the timing.
func TestFailureStopsParts(t *testing.T) {
	for _, bad := range []int{0, 64, 3 * 64} {
		t.Run(fmt.Sprintf("row %d", bad), func(t *testing.T) { testFailureStopsParts(t, bad) })
	}
}

func testFailureStopsParts(t *testing.T, bad int) {
	defer func(v int) { minRowsPerPart = v }(minRowsPerPart)
	minRowsPerPart = 64
	dir := t.TempDir()
	rows := make([]savepoint.Row, 4*64)
	for i := range rows {
		rows[i] = savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), fmt.Appendf(nil, "k%03d", i)), Value: []byte("v")}
	}
	slices.SortFunc(rows, func(a, b savepoint.Row) int { return bytes.Compare(a.Key, b.Key) })
	rows[bad].Value = []byte("bad") // the first row of a part
	for i := range bad {
		rows[i].Value = []byte("quick")
	}
	in := filepath.Join(dir, "in.snap")
	if _, err := savepoint.WriteSnapshotFile(in, nil, rows, savepoint.SnapshotOptions{Sidecar: true, CheckpointID: 3}); err != nil {
		t.Fatal(err)
	}
	src := "version: 1\nslots:\n  - {op: 7, slot: agg, value: string}\nrules:\n" +
		"  - drop: 'value == \"bad\" ? key_group % (key_group - key_group) == 0 : value == \"quick\" || any(1..999, {any(1..999, {# == 0})})'\n"
	set, err := rules.Parse(filepath.Join(dir, "r.yaml"), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	sp, err := savepoint.Open(in, savepoint.OpenOptions{Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	var counted atomic.Int64
	out := filepath.Join(dir, "out.snap")
	_, err = Run(context.Background(), sp, set, Options{Out: out, Jobs: 4, Progress: func(stage string, done, total int64) {
		counted.Store(max(counted.Load(), done))
	}})
	if err == nil || errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "divide by zero") {
		t.Fatalf("error %v, want the failing part's division by zero", err)
	}
	if n := counted.Load(); n > int64(bad) {
		t.Errorf("%d rows processed, of which %d of the parts after the one that failed", n, n-int64(bad))
	}
	if _, err := os.Lstat(out); err == nil {
		t.Error("output written")
	}
}
