package savepoint

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// wantRuns lists the prefix runs of rows, batch by batch, as PrefixRuns
// describes them (see PrefixRuns.String).
func wantRuns(rows []Row, batches []int) string {
	var b strings.Builder
	start := 0
	for _, n := range batches {
		for i := start; i < start+n; {
			r := rows[i]
			sep := separatorIndex(r.Key)
			kgByte := len(r.Key) > 0 && r.Key[0] < NumKeyGroups
			j := i + 1
			for ; j < start+n; j++ {
				s := rows[j]
				if s.Op != r.Op {
					break
				}
				if sep >= 0 && !bytes.HasPrefix(s.Key, r.Key[:sep+1]) || sep < 0 && separatorIndex(s.Key) >= 0 {
					break
				}
				kgByte = kgByte || len(s.Key) > 0 && s.Key[0] < NumKeyGroups
			}
			var kb, vb int
			for _, s := range rows[i:j] {
				kb, vb = kb+len(s.Key), vb+len(s.Value)
			}
			fmt.Fprintf(&b, "[%d,%d) op %d slotted %v prefix %q kg byte %v first %q last %q bytes %d+%d\n", i, j, r.Op, sep >= 0, r.Key[:max(0, sep+1)], kgByte, r.Key, rows[j-1].Key, kb, vb)
			i = j
		}
		start += n
	}
	return b.String()
}

// The one pass at open finds the CRC, the order and the prefix runs that
// the separate passes find, whatever the ranges, chunks and windows it
// cuts the file into: keys longer than a window, empty keys, keys without
// a separator, several batches, rows out of order or repeated.
func TestVerifyMapped(t *testing.T) {
	defer func(a, b, c int) { verifyMinRows, verifyChunk, verifyBlock = a, b, c }(verifyMinRows, verifyChunk, verifyBlock)
	r := rand.New(rand.NewPCG(3, 4))
	var sorted []Row
	for op := uint64(1); op <= 3; op++ {
		for kg := 0; kg < 5; kg++ {
			for _, slot := range []string{"a", "count", "window-of-a-long-name"} {
				for k := range 40 + r.IntN(40) {
					key := fmt.Appendf(nil, "%c%s|%08d", kg, slot, k)
					sorted = append(sorted, Row{Op: op, Key: key, Value: bytes.Repeat([]byte{'v'}, r.IntN(12))})
				}
			}
		}
		// Operator-state and raw rows: runs without a shared prefix.
		sorted = append(sorted, Row{Op: op, Key: []byte{200, 'x'}}, Row{Op: op, Key: []byte{201, 'x', '|', 'y'}}, Row{Op: op, Key: []byte("\xffzz")},
			Row{Op: op, Key: []byte{130}}, Row{Op: op, Key: []byte{7}}) // unslotted, one with a key-group byte
	}
	slices.SortFunc(sorted, func(a, b Row) int { return a.Compare(b) })
	long := slices.Clone(sorted)
	long[100].Key = append(slices.Clone(long[100].Key), bytes.Repeat([]byte{'~'}, 3000)...) // past a window, still in order
	empty := append([]Row{{Op: 0, Key: nil, Value: nil}}, sorted...)
	swapped := slices.Clone(sorted)
	swapped[500], swapped[501] = swapped[501], swapped[500]
	repeated := slices.Clone(sorted)
	repeated[700] = repeated[699]
	n := len(sorted)
	// Rows out of order, or repeated, across a batch of no rows.
	rotated := append(slices.Clone(sorted[n/2:]), sorted[:n/2]...)
	doubled := append(slices.Clone(sorted[:n/2+1]), sorted[n/2:]...)
	cases := []struct {
		name    string
		rows    []Row
		batches []int
	}{
		{"sorted", sorted, []int{n}},
		{"batches", sorted, []int{1, n/3 - 1, 0, n / 3, n - 2*(n/3)}},
		{"long key", long, []int{n}},
		{"empty key", empty, []int{n + 1}},
		{"out of order", swapped, []int{n}},
		{"repeated", repeated, []int{n}},
		{"out of order across an empty batch", rotated, []int{n - n/2, 0, n / 2}},
		{"repeated across an empty batch", doubled, []int{n/2 + 1, 0, n - n/2}},
		{"out of order after an empty first batch", rotated, []int{0, n - n/2, 0, 0, n / 2}},
	}
	for _, c := range cases {
		path := filepath.Join(t.TempDir(), "in.snap")
		if _, err := WriteSnapshotFile(path, nil, c.rows, SnapshotOptions{AsIs: true, Batches: c.batches}); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, cut := range []struct{ minRows, chunk, block int }{{1 << 16, 2048, 256 << 10}, {7, 3, 64}, {100, 16, 1000}} {
			verifyMinRows, verifyChunk, verifyBlock = cut.minRows, cut.chunk, cut.block
			name := fmt.Sprintf("%s/%d-%d-%d", c.name, cut.minRows, cut.chunk, cut.block)
			sp, err := Open(path, OpenOptions{Columnar: true})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			f := sp.Files[0]
			if f.CRC32C != CRC32C(data) {
				t.Errorf("%s: CRC %d, want %d", name, f.CRC32C, CRC32C(data))
			}
			// The pass again, on a snapshot of the same batches whose
			// order is not known: it must not give up.
			fresh := &Snapshot{Variant: Canonical, Batches: f.Snapshot.Batches}
			crc, ok := verifyMapped(context.Background(), f.mapped.f, f.Size, f.mapping, fresh, nil)
			if !ok || crc != CRC32C(data) {
				t.Errorf("%s: verifyMapped = %d, %v; want %d, true", name, crc, ok, CRC32C(data))
			}
			checkSteps(t, name, f.Snapshot)
			gotSorted, gotStrict := fresh.Order()
			wantSorted, wantStrict := f.Snapshot.computeOrder()
			if gotSorted != wantSorted || gotStrict != wantStrict {
				t.Errorf("%s: order %v %v, want %v %v", name, gotSorted, gotStrict, wantSorted, wantStrict)
			}
			switch runs := fresh.Runs(); {
			case !wantStrict && runs != nil:
				t.Errorf("%s: rows out of order have prefix runs", name)
			case wantStrict && runs == nil:
				t.Errorf("%s: no prefix runs", name)
			case wantStrict:
				if got, want := runs.String(), wantRuns(c.rows, c.batches); got != want {
					t.Errorf("%s: runs\n%s\nwant\n%s", name, got, want)
				}
				for _, i := range []int{0, 1, 99, 100, len(c.rows) - 1} {
					if run := runs.Run(runs.Find(i)); i < run.Start || i >= run.End {
						t.Errorf("%s: Find(%d) gives run [%d,%d)", name, i, run.Start, run.End)
					}
				}
			}
			sp.Close()
		}
	}
}

// checkSteps checks that the stretches the open noted for snap's batches
// (see stepCol) give their offsets and operators, and returns how many
// columns of how many have them.
func checkSteps(t *testing.T, what string, snap *Snapshot) (noted, cols int) {
	t.Helper()
	for bi := range snap.Batches {
		b := &snap.Batches[bi]
		if b.Len() == 0 {
			continue
		}
		cols += 3
		for _, c := range []struct {
			name    string
			steps   *stepCol
			offsets []int32
		}{{"key", b.keySteps, b.KeyOffs}, {"value", b.valSteps, b.ValOffs}} {
			if c.steps == nil {
				continue
			}
			noted++
			if b.stepsOf(c.offsets) != c.steps {
				t.Fatalf("%s: batch %d: stepsOf gives another column's %s stretches", what, bi, c.name)
			}
			var h stepHint
			for _, x := range []int{b.Len(), 0, b.Len() / 2} { // jumps, then in order
				if got := c.steps.at(x, &h); got != c.offsets[x] {
					t.Fatalf("%s: batch %d: %s offset %d = %d from %d stretches, want %d", what, bi, c.name, x, got, len(c.steps.runs), c.offsets[x])
				}
			}
			for x := range c.offsets {
				if got := c.steps.at(x, &h); got != c.offsets[x] {
					t.Fatalf("%s: batch %d: %s offset %d = %d from %d stretches, want %d", what, bi, c.name, x, got, len(c.steps.runs), c.offsets[x])
				}
			}
		}
		if b.opRuns != nil {
			noted++
			for x, op := range b.Ops {
				if got := b.opRuns.runs[b.opRuns.find(x)].op; got != op {
					t.Fatalf("%s: batch %d: operator of row %d = %d from %d stretches, want %d", what, bi, x, got, len(b.opRuns.runs), op)
				}
			}
		}
	}
	return noted, cols
}

// The open notes the stretches of equal key and value lengths and of one
// operator (stepCol, opCol) of each batch, in ranges and blocks of any
// size, unless a range has too many: int64 keys and values, values of
// random lengths, and operators that change at every row.
func TestSteps(t *testing.T) {
	defer func(a, b int) { verifyMinRows, verifyChunk = a, b }(verifyMinRows, verifyChunk)
	r := rand.New(rand.NewPCG(5, 6))
	fixed, _ := probeRows(20_000, modProbe{7})
	mixed := slices.Clone(fixed)
	for i := range mixed {
		mixed[i].Value = bytes.Repeat([]byte{'v'}, r.IntN(30))
	}
	opEach := slices.Clone(fixed)
	for i := range opEach {
		opEach[i].Op = uint64(i)
	}
	for _, c := range []struct {
		name      string
		rows      []Row
		minNoted  int // of 3 columns a batch, over 2 batches
		wantSteps bool
	}{
		{"int64 keys and values", fixed, 6, true},
		{"values of random lengths", mixed, 4, false},
		{"an operator a row", opEach, 2, false},
	} {
		path := writeProbeFile(t, c.rows, []int{12_000, 8_000})
		for _, cut := range []struct{ minRows, chunk int }{{1 << 16, 2048}, {3000, 100}, {1000, 7}} {
			verifyMinRows, verifyChunk = cut.minRows, cut.chunk
			name := fmt.Sprintf("%s, ranges of %d rows or more, blocks of %d", c.name, cut.minRows, cut.chunk)
			sp, err := Open(path, OpenOptions{Columnar: true})
			if err != nil {
				t.Fatal(err)
			}
			noted, cols := checkSteps(t, name, sp.Files[0].Snapshot)
			if cols != 6 || noted < c.minNoted || (noted == 6) != c.wantSteps {
				t.Errorf("%s: %d of %d columns have stretches, want %d or more", name, noted, cols, c.minNoted)
			}
			sp.Close()
		}
	}
}

// Too many runs (a run for nearly every row), or runs whose first and
// last keys would take too much memory, leave no index, and the order is
// still found; a few long keys do not.
func TestVerifyMappedTooManyRuns(t *testing.T) {
	many := func(n, keyLen int) []Row {
		var rows []Row
		for i := range n {
			key := append([]byte{1, 'a', '|'}, bytes.Repeat([]byte{byte(i)}, keyLen)...)
			rows = append(rows, Row{Op: uint64(i), Key: key})
		}
		return rows
	}
	for _, c := range []struct {
		name    string
		rows    []Row
		indexed bool
	}{
		{"a run a row", many(10000, 1), false},
		{"long keys", many(3000, 1000), false},
		{"few runs of long keys", many(30, 1000), true},
	} {
		path := filepath.Join(t.TempDir(), "in.snap")
		if _, err := WriteSnapshotFile(path, nil, c.rows, SnapshotOptions{}); err != nil {
			t.Fatal(err)
		}
		sp, err := Open(path, OpenOptions{Columnar: true})
		if err != nil {
			t.Fatal(err)
		}
		snap := sp.Files[0].Snapshot
		if indexed := snap.Runs() != nil; indexed != c.indexed {
			t.Errorf("%s: indexed %v, want %v", c.name, indexed, c.indexed)
		}
		if sorted, strict := snap.Order(); !sorted || !strict {
			t.Errorf("%s: order %v %v, want strictly increasing", c.name, sorted, strict)
		}
		sp.Close()
	}
}
