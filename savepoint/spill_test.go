package savepoint

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// spillRows returns n rows in random order with the shapes that stress the
// external sort: few operators, duplicates (keyed, and operator state with
// 8-byte values, which keep the greater), empty keys, one key group much
// larger than the rest, keys that share long prefixes, and keys that are
// prefixes of others.
func spillRows(r *rand.Rand, n int) []Row {
	rows := make([]Row, n)
	long := bytes.Repeat([]byte("s"), 40)
	for i := range rows {
		var k []byte
		switch c := r.IntN(10); {
		case c == 0:
			k = nil
		case c < 4: // the big key group, with a long shared prefix
			k = append([]byte{7}, long[:r.IntN(len(long))]...)
			k = append(k, byte(r.IntN(4)))
		case c < 6: // operator state and timers
			k = []byte{0xff, byte(r.IntN(3))}
		default:
			k = make([]byte, 1+r.IntN(6))
			for j := range k {
				k[j] = byte(r.IntN(130))
			}
		}
		v := make([]byte, r.IntN(3)*4)
		for j := range v {
			v[j] = byte(r.Uint32())
		}
		if r.IntN(3) == 0 {
			v = v[:0]
			v = append(v, byte(r.Uint32()), 0, 0, 0, 0, 0, 0, byte(r.IntN(2))<<7)
		}
		rows[i] = Row{Op: r.Uint64N(3) * 1e18, Key: k, Value: v}
	}
	return rows
}

// rowString renders a row for comparisons.
func rowString(r Row) string { return fmt.Sprintf("%d/%x/%x", r.Op, r.Key, r.Value) }

// TestSortSpilled: the external sort gives the rows, and drops the
// duplicates, that CanonicalPositions does, at budgets that make it split
// buckets down to single keys, with the first pass in one part or several,
// with sorted buckets gathered in columns or not, and the writer writes the
// same bytes from either. No batch of the sorted rows has a column longer
// than the limit (maxCol, when lowered).
func TestSortSpilled(t *testing.T) {
	defer func(v int) { spillPartRows = v }(spillPartRows)
	defer func(v int64) { maxColumnBytes = v }(maxColumnBytes)
	defer func(v int) { blockBytes = v }(blockBytes)
	block := blockBytes
	for _, c := range []struct {
		n, budget, partRows int
		maxCol              int64
		block               int // the first pass's blocks: rows longer than a quarter go alone
	}{
		{0, 0, 1, 0, 0}, {1, 0, 1, 0, 0}, {5000, 0, 1 << 18, 0, 0}, {5000, 0, 700, 0, 0}, {5000, 1 << 10, 1000, 0, 0}, {5000, 64, 1 << 18, 0, 0},
		{20000, 4 << 10, 1 << 18, 0, 0}, {20000, 4 << 10, 3000, 0, 0},
		{5000, 0, 1 << 18, 300, 0}, {20000, 4 << 10, 1 << 18, 700, 0},
		{5000, 0, 700, 0, 100}, {20000, 4 << 10, 3000, 0, 256}, {5000, 64, 1 << 18, 0, 1 << 10},
	} {
		spillPartRows = c.partRows
		blockBytes = block
		if c.block > 0 {
			blockBytes = c.block
		}
		maxColumnBytes = maxBinaryData
		if c.maxCol > 0 {
			maxColumnBytes = c.maxCol
		}
		t.Run(fmt.Sprintf("%d rows budget %d parts of %d columns of %d blocks of %d", c.n, c.budget, c.partRows, c.maxCol, c.block), func(t *testing.T) {
			for _, keep := range []bool{false, true} {
				rows := spillRows(rand.New(rand.NewPCG(uint64(c.n), uint64(c.budget))), c.n)
				sp, want := checkSortSpilled(t, rows, c.budget, keep)
				defer sp.Close()
				got := sp.Snapshot()
				cur := got.NewCursor()
				if c.budget > 0 && c.n > 1000 && len(got.Batches) < 2 {
					t.Errorf("%d batches: a small budget should cut the sorted rows into several", len(got.Batches))
				}
				for i, b := range got.Batches {
					if int64(len(b.Keys)) > maxColumnBytes || int64(len(b.Vals)) > maxColumnBytes {
						t.Fatalf("batch %d: %d bytes of keys and %d of values, more than %d", i, len(b.Keys), len(b.Vals), maxColumnBytes)
					}
				}
				var a, b bytes.Buffer
				if err := WriteStream(&a, nil, RowSlice(want)); err != nil {
					t.Fatal(err)
				}
				if err := WriteStream(&b, nil, cur); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(a.Bytes(), b.Bytes()) {
					t.Fatalf("written from the spilled rows: %s", firstDiff(b.Bytes(), a.Bytes()))
				}
			}
		})
	}
}

// checkSortSpilled sorts rows with SortSpilled (at the budget, keeping
// duplicates or not) and fails t unless it gives the rows, and drops the
// rows, that CanonicalPositions does (or, keeping them, SortOrder's stable
// order). It returns the sorted copy and the rows it must hold.
func checkSortSpilled(t *testing.T, rows []Row, budget int, keep bool) (*Spilled, []Row) {
	t.Helper()
	var wantLost []string
	pos := CanonicalPositions(Columns(RowSlice(rows)), func(p uint32) { wantLost = append(wantLost, rowString(rows[p])) }, nil)
	if keep { // every row, a stable sort
		pos, wantLost = SortOrder(len(rows), func(i int) (uint64, []byte) { return rows[i].Op, rows[i].Key }), nil
	}
	want := make([]Row, len(pos))
	for i, p := range pos {
		want[i] = rows[p]
	}
	var gotLost []string
	sp, err := SortSpilled(Columns(RowSlice(rows)), SpillOptions{Dir: t.TempDir(), Budget: budget, KeepDuplicates: keep, Dropped: func(r Row) { gotLost = append(gotLost, rowString(r)) }})
	if err != nil {
		t.Fatal(err)
	}
	got := sp.Snapshot()
	if got.NumRows() != len(want) {
		sp.Close()
		t.Fatalf("%d rows, want %d", got.NumRows(), len(want))
	}
	cur := got.NewCursor()
	for i, w := range want {
		if g := cur.Row(i); rowString(g) != rowString(w) {
			sp.Close()
			t.Fatalf("row %d: %s, want %s", i, rowString(g), rowString(w))
		}
	}
	slices.Sort(wantLost)
	slices.Sort(gotLost)
	if !slices.Equal(gotLost, wantLost) {
		sp.Close()
		t.Fatalf("dropped %d rows, want %d:\n%v\n%v", len(gotLost), len(wantLost), gotLost, wantLost)
	}
	return sp, want
}

// TestSortSpilledOnly: rows SpillOptions.Only leaves out are not sorted
// and are not duplicates (Dropped never hears of them): the sort of a
// source through Only gives what the sort of the rows Only keeps gives,
// keeping duplicates or not, with the first pass in one part or several.
func TestSortSpilledOnly(t *testing.T) {
	defer func(v int) { spillPartRows = v }(spillPartRows)
	for _, partRows := range []int{1 << 18, 700} {
		spillPartRows = partRows
		rows := spillRows(rand.New(rand.NewPCG(7, uint64(partRows))), 5000)
		only := func(op uint64, key []byte) bool { return op != 1e18 && (len(key) == 0 || key[0] != 7) }
		var kept []Row
		for _, r := range rows {
			if only(r.Op, r.Key) {
				kept = append(kept, r)
			}
		}
		if len(kept) == 0 || len(kept) == len(rows) {
			t.Fatalf("%d of %d rows kept: the test needs some of each", len(kept), len(rows))
		}
		for _, keep := range []bool{false, true} {
			t.Run(fmt.Sprintf("parts of %d keep %v", partRows, keep), func(t *testing.T) {
				want, wantLost := sortedRowStrings(kept, keep)
				var gotLost []string
				sp, err := SortSpilled(Columns(RowSlice(rows)), SpillOptions{Dir: t.TempDir(), Budget: 1 << 10, KeepDuplicates: keep, Only: only, Dropped: func(r Row) { gotLost = append(gotLost, rowString(r)) }})
				if err != nil {
					t.Fatal(err)
				}
				defer sp.Close()
				cur := sp.Snapshot().NewCursor()
				var got []string
				for i := range cur.Len() {
					got = append(got, rowString(cur.Row(i)))
				}
				if !slices.Equal(got, want) {
					t.Errorf("%d rows sorted, want the %d rows kept, in order", len(got), len(want))
				}
				slices.Sort(gotLost)
				if !slices.Equal(gotLost, wantLost) {
					t.Errorf("dropped %d rows as duplicates, want %d", len(gotLost), len(wantLost))
				}
			})
		}
	}
}

// sortedRowStrings returns rows as CanonicalPositions orders them (or, with
// keep, SortOrder: every row, a stable sort), and the rows it drops, sorted.
func sortedRowStrings(rows []Row, keep bool) (sorted, lost []string) {
	pos := CanonicalPositions(Columns(RowSlice(rows)), func(p uint32) { lost = append(lost, rowString(rows[p])) }, nil)
	if keep {
		pos, lost = SortOrder(len(rows), func(i int) (uint64, []byte) { return rows[i].Op, rows[i].Key }), nil
	}
	for _, p := range pos {
		sorted = append(sorted, rowString(rows[p]))
	}
	slices.Sort(lost)
	return sorted, lost
}

// TestSortSpilledRandomShapes: the external sort against the in-memory one
// on random rows of few distinct keys (duplicates everywhere, so that any
// reordering within a bucket shows), values from none to many times a
// block of the first pass (rows that go alone between short rows of the
// same key), any number of operators, with blocks, parts and budgets from
// tiny to the defaults.
func TestSortSpilledRandomShapes(t *testing.T) {
	defer func(v int) { spillPartRows = v }(spillPartRows)
	defer func(v int) { blockBytes = v }(blockBytes)
	block := blockBytes
	seeds := 80
	if testing.Short() {
		seeds = 20
	}
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 0x5eed))
		// (Blocks of 4 bytes take every row alone.)
		blockBytes = []int{4, 16, 40, 100, 1000, block}[r.IntN(6)]
		spillPartRows = []int{1, 13, 200, 1 << 18}[r.IntN(4)]
		budget := []int{1, 300, 8 << 10, 0}[r.IntN(4)]
		long := []int{0, 50, 3000}[r.IntN(3)]
		rows := make([]Row, r.IntN(3000))
		ops := 1 + r.IntN(8)
		for i := range rows {
			k := make([]byte, r.IntN(4))
			for j := range k {
				k[j] = byte(r.IntN(3))
			}
			v := make([]byte, r.IntN(9))
			if long > 0 && r.IntN(8) == 0 {
				v = make([]byte, r.IntN(long))
			}
			for j := range v {
				v[j] = byte(r.Uint32())
			}
			rows[i] = Row{Op: uint64(r.IntN(ops)), Key: k, Value: v}
		}
		for _, keep := range []bool{false, true} {
			t.Run(fmt.Sprintf("seed %d keep %v", seed, keep), func(t *testing.T) {
				sp, _ := checkSortSpilled(t, rows, budget, keep)
				sp.Close()
			})
		}
	}
}

// TestSortSpilledLeavesNothing: the temporary files are unlinked at once,
// and an unusable directory is an error that names what failed.
func TestSortSpilledLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	rows := spillRows(rand.New(rand.NewPCG(9, 9)), 3000)
	sp, err := SortSpilled(Columns(RowSlice(rows)), SpillOptions{Dir: dir, Budget: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("%d files left in the temporary directory while the sort's result is open", len(ents))
	}
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = SortSpilled(Columns(RowSlice(rows)), SpillOptions{Dir: dir + "/missing"})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("temporary file")) {
		t.Fatalf("missing directory: %v", err)
	}
}

// TestSortOrderGrouped: sorting a group of buckets at a time gives the
// order of sorting every row at once, with and without the remembered
// buckets (more than 255 operators turn them off), and marks every
// duplicate as a tie.
func TestSortOrderGrouped(t *testing.T) {
	for _, manyOps := range []bool{false, true} {
		r := rand.New(rand.NewPCG(4, 2))
		// With many operators the bucket of each row is not remembered,
		// and each group's pass reads every row: groups of one row make
		// that a pass per bucket, 7 s for 20,000 rows (58 s under the race
		// detector), where 4,000 rows show the same.
		n := 20000
		if manyOps {
			n = 4000
		}
		rows := spillRows(r, n)
		if manyOps {
			for i := range rows {
				rows[i].Op = r.Uint64N(400)
			}
		}
		at := func(i int) (uint64, []byte) { return rows[i].Op, rows[i].Key }
		want, wantTie := sortOrder(len(rows), at, true, nil)
		defer func(v int) { sortGroupRows = v }(sortGroupRows)
		// The rows also from a memory-mapped file, visited in blocks.
		path := filepath.Join(t.TempDir(), "rows.snap")
		if _, err := WriteSnapshotFile(path, nil, rows, SnapshotOptions{AsIs: true}); err != nil {
			t.Fatal(err)
		}
		sp, err := Open(path, OpenOptions{Columnar: true, AllowMissingSidecar: true})
		if err != nil {
			t.Fatal(err)
		}
		defer sp.Close()
		snap := sp.Files[0].Snapshot
		each := func(fn func(i int, op uint64, key []byte) bool) { snap.EachKey(fn) }
		for _, c := range []struct {
			g    int
			each bool
		}{{1, false}, {50, false}, {3000, false}, {50, true}, {3000, true}} {
			g := c.g
			sortGroupRows = g
			var got []uint32
			var tie []bool
			if c.each {
				got, tie = sortOrderEach(len(rows), at, each, true, func() {})
			} else {
				got, tie = sortOrder(len(rows), at, true, func() {})
			}
			sortGroupRows = 1 << 20
			if !slices.Equal(got, want) {
				t.Fatalf("many ops %v, groups of %d, rows visited from the file %v: order differs", manyOps, g, c.each)
			}
			for j := 1; j < len(got); j++ {
				a, b := rows[got[j-1]], rows[got[j]]
				if same := a.Op == b.Op && bytes.Equal(a.Key, b.Key); (same && !tie[j]) || (tie[j] && !wantTie[j]) {
					t.Fatalf("many ops %v, groups of %d: position %d: tie %v (at once: %v), same key %v", manyOps, g, j, tie[j], wantTie[j], same)
				}
			}
		}
	}
}

// The first pass of the external sort calls Release every spillReleaseRows
// rows, also inside one run of every row (a rescale keeps them all), and
// once at its end, so that the pages of a mapped input it has read leave
// the resident set as it goes and none stay after.
func TestSortSpilledReleasesWithinARun(t *testing.T) {
	defer func(p, r int) { spillPartRows, spillReleaseRows = p, r }(spillPartRows, spillReleaseRows)
	spillPartRows, spillReleaseRows = 1<<20, 100 // one part
	rows := spillRows(rand.New(rand.NewPCG(5, 6)), 1000)
	sp := openAsIs(t, rows)
	cur := sp.Files[0].Snapshot.NewCursor()
	all := selection{cur: cur}
	for i := range rows {
		all.idx = append(all.idx, i)
	}
	if _, _, n, _ := all.Run(0); n != len(rows) {
		t.Fatalf("a run of %d rows, want all %d", n, len(rows))
	}
	releases := 0
	s, err := SortSpilled(all, SpillOptions{Dir: t.TempDir(), Release: func() { releases++ }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// One at the start of each 100 rows, and one after the last.
	if want := len(rows)/100 + 1; s.Snapshot().NumRows() == 0 || releases != want {
		t.Errorf("%d releases over %d rows, want %d: one every 100 rows and one at the end", releases, len(rows), want)
	}
	// Every SpillOptions.ReleaseRows rows, when fewer (a file's rows long).
	releases = 0
	s2, err := SortSpilled(all, SpillOptions{Dir: t.TempDir(), Release: func() { releases++ }, ReleaseRows: 40})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if want := len(rows)/40 + 1; releases != want {
		t.Errorf("ReleaseRows 40: %d releases over %d rows, want %d", releases, len(rows), want)
	}
}

// A sort whose Stop reports true, in the pass over the source or while the
// buckets are sorted (split again, at a small budget), ends with
// context.Canceled once the sorts it started are done, and leaves no
// goroutine behind; one never stopped sorts every row.
func TestSortSpilledStop(t *testing.T) {
	defer func(p, r int) { spillPartRows, spillReleaseRows = p, r }(spillPartRows, spillReleaseRows)
	spillPartRows, spillReleaseRows = 500, 100
	rows := spillRows(rand.New(rand.NewPCG(7, 8)), 5000)
	goroutines := runtime.NumGoroutine()
	for after := int64(0); ; after += 7 {
		var asked atomic.Int64 // the first pass's parts ask at once
		sp, err := SortSpilled(Columns(RowSlice(rows)), SpillOptions{Dir: t.TempDir(), Budget: 1 << 10, Stop: func() bool {
			return asked.Add(1) > after
		}})
		if err == nil {
			sp.Close()
			// The first pass asks some 50 times, the buckets' more.
			if after < 100 {
				t.Fatalf("a sort asked to stop after %d asks, of %d, sorted every row", after, asked.Load())
			}
			break
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("stop after %d: %v, want context.Canceled", after, err)
		}
	}
	for range 100 {
		if runtime.NumGoroutine() <= goroutines {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("%d goroutines left, %d before", runtime.NumGoroutine(), goroutines)
}

// A write of the sorted file that fails (written by a goroutine of its own
// while the next batch fills) makes the rows after it go nowhere and
// finish return the error, naming the temporary file.
func TestColWriterWriteError(t *testing.T) {
	f, err := os.Open(filepath.Join(t.TempDir(), "..")) // a directory: writes fail
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := &colWriter{f: f, limit: 64}
	for i := range 100 {
		w.add(Row{Op: 1, Key: []byte{byte(i)}, Value: []byte("v")})
	}
	if _, err := w.finish(); err == nil || !strings.Contains(err.Error(), "write the sort's temporary file") {
		t.Fatalf("finish: %v, want the write's error", err)
	}
	if w.pending != nil {
		t.Error("a write still under way after finish")
	}
}

// A chunk write that fails, whether of a full buffer (outside the lock)
// or at flush, is the error of the writes and flushes after it.
func TestChunkWriterWriteError(t *testing.T) {
	for _, n := range []int{10, 3 * chunkBufSize / 1000} { // flushed only; full buffers too
		f, err := os.Open(t.TempDir()) // a directory: writes fail
		if err != nil {
			t.Fatal(err)
		}
		c := &chunkWriter{f: f}
		var werr error
		for i := 0; i < n && werr == nil; i++ {
			_, werr = c.write(make([]byte, 1000))
			if i == chunkBufSize/1000+1 {
				c.writes.Wait() // the first full buffer's write is done
			}
		}
		if n > 10 && werr == nil {
			t.Errorf("%d chunks: the writes after a full buffer's failed write succeeded", n)
		}
		ferr := c.flush()
		f.Close()
		if ferr == nil || !strings.Contains(ferr.Error(), "write the sort's temporary file") {
			t.Fatalf("%d chunks: flush: %v, want the write's error", n, ferr)
		}
	}
}

// The first pass's parts write through one chunkWriter: when its writes
// fail, the error is said once, not once a part.
func TestPartitionWriteErrorOnce(t *testing.T) {
	defer func(v int) { spillPartRows = v }(spillPartRows)
	spillPartRows = 1000
	if runtime.GOMAXPROCS(0) < 2 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	}
	src := &flatRows{ops: make([]uint64, 200_000), data: make([]byte, 21*200_000)}
	for i := range src.ops {
		src.data[21*i] = byte(i)
		binary.LittleEndian.PutUint64(src.data[21*i+5:], uint64(i)*0x9E3779B97F4A7C15)
	}
	f, err := os.Open(t.TempDir()) // a directory: writes fail
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = partitionAll(&chunkWriter{f: f}, src, 1<<16, &SpillOptions{})
	if err == nil || strings.Count(err.Error(), "write the sort's temporary file") != 1 {
		t.Fatalf("partitionAll over failing writes: %v, want the write's error once", err)
	}
}

// A bucket's buffer is allocated at its limit only while such buffers fit
// the budget together: the first buckets of many get a higher limit than
// the later ones, and 5,120 buckets of a row or two each once held 113 MB
// of buffers under a 16 MiB budget. A buffer past that grows with its
// records, to at most twice what it holds (64 bytes at least).
func TestPartitionTailsWithinBudget(t *testing.T) {
	f, err := createTempFile(t.TempDir(), "tails")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := newPartition(&chunkWriter{f: f}, 0, DefaultSpillBudget)
	for rep := range 2 {
		for op := range uint64(40) {
			for kg := range NumKeyGroups {
				if err := p.add(op, []byte{byte(kg), 's', '|', byte(rep)}, []byte("12345678")); err != nil {
					t.Fatal(err)
				}
				if err := p.flush(); err != nil { // a block of one row: its bucket's buffer now
					t.Fatal(err)
				}
			}
		}
	}
	if err := p.finish(); err != nil {
		t.Fatal(err)
	}
	held, used, grown := 0, 0, 0 // grown: what buffers grown with their records may hold
	for _, b := range p.buckets {
		held += cap(b.tail)
		used += len(b.tail)
		grown += max(64, 2*len(b.tail))
	}
	if held != p.tails {
		t.Errorf("the partition counts %d bytes of buffers, the buckets hold %d", p.tails, held)
	}
	if held > DefaultSpillBudget+grown {
		t.Fatalf("%d buckets hold %d bytes of records in %d bytes of buffers, over the budget of %d", len(p.buckets), used, held, DefaultSpillBudget)
	}
}

// A full disk, a quota used up, or a file size limit reached (a file
// system's, or the process's) says where the sort wrote (the directory it
// was given, or the system's), what it needs and how to move it.
func TestSpillWriteErrorFullDisk(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EFBIG} {
		err := spillWriteError(&os.PathError{Op: "write", Path: "/mnt/small", Err: errno}, "/mnt/small")
		if !errors.Is(err, errno) || !strings.HasPrefix(err.Error(), "write the sort's temporary file in /mnt/small: ") || !strings.Contains(err.Error(), "there: --temp-dir names a directory on a file system with room") {
			t.Errorf("%v", err)
		}
	}
	if err := spillWriteError(&os.PathError{Op: "write", Path: os.TempDir(), Err: syscall.ENOSPC}, ""); !strings.HasPrefix(err.Error(), "write the sort's temporary file in "+os.TempDir()+": ") {
		t.Errorf("%v: the system's temporary directory not named", err)
	}
	if err := spillWriteError(io.ErrShortWrite, ""); strings.Contains(err.Error(), "--temp-dir") {
		t.Errorf("%v: a hint of a full disk on another error", err)
	}
}

// A temporary file the sort cannot create in its directory (a full disk,
// a quota used up, a read-only file system, no permission) says how to
// put it elsewhere; an error of another kind gets no such hint.
func TestSpillCreateErrorHints(t *testing.T) {
	for errno, hint := range map[syscall.Errno]string{
		syscall.ENOSPC: "--temp-dir names a directory on a file system with room",
		syscall.EDQUOT: "--temp-dir names a directory on a file system with room",
		syscall.EROFS:  "--temp-dir names a directory sptool can write",
		syscall.EACCES: "--temp-dir names a directory sptool can write",
	} {
		err := spillCreateError(&os.PathError{Op: "open", Path: "/tmp/.sptool-spill-1", Err: errno}, "/tmp")
		if !errors.Is(err, errno) || !strings.HasPrefix(err.Error(), "create the sort's temporary file in /tmp: open /tmp/.sptool-spill-1: ") || !strings.Contains(err.Error(), hint) {
			t.Errorf("%v: want the hint %q", err, hint)
		}
	}
	if err := spillCreateError(&os.PathError{Op: "open", Path: "/x", Err: syscall.ENOTDIR}, "/"); strings.Contains(err.Error(), "--temp-dir") {
		t.Errorf("%v: a hint on another error", err)
	}
}

// flatRows is a ColumnSource over flat columns (no pointer a row, for
// the collector to scan): rows of a 13-byte key and an 8-byte value.
type flatRows struct {
	ops  []uint64
	data []byte // row i: key data[21i:21i+13], value data[21i+13:21i+21]
}

func (f *flatRows) Len() int           { return len(f.ops) }
func (f *flatRows) Op(i int) uint64    { return f.ops[i] }
func (f *flatRows) Key(i int) []byte   { return f.data[21*i : 21*i+13 : 21*i+13] }
func (f *flatRows) Value(i int) []byte { return f.data[21*i+13 : 21*i+21 : 21*i+21] }
func (f *flatRows) Row(i int) Row      { return Row{Op: f.Op(i), Key: f.Key(i), Value: f.Value(i)} }

// BenchmarkPartition times the first pass of the external sort over 1M
// rows in clink's hash-map order: 5 operators, keys of a key-group byte, a
// 4-byte slot and an 8-byte user key over all 128 key groups, 8-byte
// values (the benchmark inputs' shape).
func BenchmarkPartition(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 1 << 20
	src := &flatRows{ops: make([]uint64, n), data: make([]byte, 0, n*21)}
	for i := range src.ops {
		src.ops[i] = uint64(r.IntN(5))
		src.data = append(src.data, byte(r.IntN(NumKeyGroups)), 'a', 'g', 'g', '|')
		src.data = binary.LittleEndian.AppendUint64(src.data, r.Uint64())
		src.data = binary.LittleEndian.AppendUint64(src.data, r.Uint64())
	}
	b.SetBytes(n * 21)
	for b.Loop() {
		f, err := createTempFile(b.TempDir(), "bench")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := partitionAll(&chunkWriter{f: f}, src, DefaultSpillBudget, &SpillOptions{}); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// InOrder leaves a file of fewer than InPlaceRows rows in place when it
// cannot be sorted through temporary files (no temporary directory), to be
// read as a smaller one is; with a directory it gives a sorted copy, and
// with its context done none.
func TestInOrderInPlaceWithoutTempDir(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint-1.snap")
	rows := spillRows(rand.New(rand.NewPCG(4, 5)), 3000)
	if _, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), rows, SnapshotOptions{AsIs: true}); err != nil {
		t.Fatal(err)
	}
	sp, err := Open(path, OpenOptions{Columnar: true, AllowMissingSidecar: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	v, _, done, err := sp.InOrder(context.Background(), filepath.Join(dir, "missing"), 100, false)
	if err != nil || v != sp {
		t.Fatalf("without a temporary directory: view %p of %p, err %v; want the savepoint itself", v, sp, err)
	}
	done()
	v, _, done, err = sp.InOrder(context.Background(), dir, 100, false)
	if err != nil || v == sp || v.Files[0] == sp.Files[0] {
		t.Fatalf("with one: err %v, want a sorted copy", err)
	}
	done()
	// A context done stops the sort, and the file is not left to be read
	// in place: the error is the context's.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, _, err := sp.InOrder(ctx, dir, 100, false); !errors.Is(err, context.Canceled) {
		t.Fatalf("with its context done: %v, want context.Canceled", err)
	}
}

// gatherView returns a bucket's records as the sort reads them back: n
// records of keys and values of the lengths klen and vlen give (each call a
// record's), and the order of a sort, shuffled.
func gatherView(r *rand.Rand, n int, klen, vlen func() int) (recordView, []uint32) {
	v := recordView{op: 7}
	for range n {
		ks := uint32(len(v.buf))
		for range klen() {
			v.buf = append(v.buf, byte(r.Uint32()))
		}
		ke := uint32(len(v.buf))
		for range vlen() {
			v.buf = append(v.buf, byte(r.Uint32()))
		}
		v.at = append(v.at, ks, ke, uint32(len(v.buf)))
	}
	order := make([]uint32, n)
	for i := range order {
		order[i] = uint32(i)
	}
	r.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
	return v, order
}

// gather copies each row's key and value whole and nothing else: short ones
// (copied as words, past their ends) and long ones, at the end of the
// bucket's buffer and of the columns' room, into columns that hold rows
// already.
func TestGather(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name       string
		n          int
		klen, vlen func() int
	}{
		{"int64 keys and values", 500, func() int { return 13 }, func() int { return 8 }},
		{"lengths 0 to 40", 2000, func() int { return r.IntN(41) }, func() int { return r.IntN(41) }},
		{"lengths 0 to 17", 2000, func() int { return r.IntN(18) }, func() int { return r.IntN(18) }},
		{"one short row", 1, func() int { return 3 }, func() int { return 2 }},
		{"empty keys and values", 50, func() int { return 0 }, func() int { return 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c colBuf
			c.add(Row{Op: 1, Key: []byte("held"), Value: []byte("before")})
			for round := range 2 {
				v, order := gatherView(r, tc.n, tc.klen, tc.vlen)
				before := c.ops[:len(c.ops):len(c.ops)]
				c.gather(v, order)
				want := colBuf{}
				for i := range before {
					want.add(c.row(i))
				}
				for _, pos := range order {
					want.add(v.Row(int(pos)))
				}
				if len(c.ops) != len(want.ops) {
					t.Fatalf("round %d: %d rows, want %d", round, len(c.ops), len(want.ops))
				}
				for i := range want.ops {
					if got, w := c.row(i), want.row(i); got.Op != w.Op || !bytes.Equal(got.Key, w.Key) || !bytes.Equal(got.Value, w.Value) {
						t.Fatalf("round %d: row %d is %v, want %v", round, i, got, w)
					}
				}
				if !bytes.Equal(c.keys, want.keys) || !bytes.Equal(c.vals, want.vals) {
					t.Fatalf("round %d: the columns' bytes differ from the rows'", round)
				}
			}
		})
	}
}

// BenchmarkGather times gather of a bucket of 15,000 rows of 13-byte keys
// and 8-byte values (the benchmark inputs' shape) in sorted order.
func BenchmarkGather(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	v, order := gatherView(r, 15000, func() int { return 13 }, func() int { return 8 })
	var c colBuf
	for b.Loop() {
		c.reset()
		c.gather(v, order)
	}
}
