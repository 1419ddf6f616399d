package savepoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// arrowGoBatch is rows as a record batch of schema (the canonical fields)
// built with arrow-go's own arrays.
func arrowGoBatch(schema *arrow.Schema, rows []Row) arrow.RecordBatch {
	n := len(rows)
	ops := make([]byte, 8*n)
	kOff, vOff := make([]byte, 4*(n+1)), make([]byte, 4*(n+1))
	var kData, vData []byte
	for i, r := range rows {
		binary.LittleEndian.PutUint64(ops[8*i:], r.Op)
		kData, vData = append(kData, r.Key...), append(vData, r.Value...)
		binary.LittleEndian.PutUint32(kOff[4*(i+1):], uint32(len(kData)))
		binary.LittleEndian.PutUint32(vOff[4*(i+1):], uint32(len(vData)))
	}
	cols := []arrow.Array{
		array.MakeFromData(array.NewData(arrow.PrimitiveTypes.Uint64, n, []*memory.Buffer{nil, memory.NewBufferBytes(ops)}, nil, 0, 0)),
		array.MakeFromData(array.NewData(arrow.BinaryTypes.Binary, n, []*memory.Buffer{nil, memory.NewBufferBytes(kOff), memory.NewBufferBytes(kData)}, nil, 0, 0)),
		array.MakeFromData(array.NewData(arrow.BinaryTypes.Binary, n, []*memory.Buffer{nil, memory.NewBufferBytes(vOff), memory.NewBufferBytes(vData)}, nil, 0, 0)),
	}
	return array.NewRecordBatch(schema, cols, int64(n))
}

// arrowGoStream is the reference: the same rows encoded with arrow-go's own
// IPC writer, batches split where the direct writer splits them.
func arrowGoStream(t *testing.T, w io.Writer, md Metadata, rows []Row) {
	t.Helper()
	keys, vals := make([]string, len(md)), make([]string, len(md))
	for i, e := range md {
		keys[i], vals[i] = e.Key, e.Value
	}
	meta := arrow.NewMetadata(keys, vals)
	schema := arrow.NewSchema(canonicalFields, &meta)
	iw := ipc.NewWriter(w, ipc.WithSchema(schema))
	src := RowSlice(rows)
	for start := 0; ; {
		end, _, _, _, err := nextBatch(src, start, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := iw.Write(arrowGoBatch(schema, rows[start:end])); err != nil {
			t.Fatal(err)
		}
		if start = end; start >= len(rows) {
			break
		}
	}
	if err := iw.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestWriteStreamMatchesArrowGo: the direct writer produces exactly the bytes
// of arrow-go's IPC writer for the same rows and metadata.
func TestWriteStreamMatchesArrowGo(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []Row {
		rows := make([]Row, n)
		for i := range rows {
			k := make([]byte, 1+r.IntN(40))
			v := make([]byte, r.IntN(20))
			for j := range k {
				k[j] = byte(r.Uint32())
			}
			for j := range v {
				v[j] = byte(r.Uint32())
			}
			rows[i] = Row{Op: r.Uint64N(5), Key: k, Value: v}
		}
		return Logical(rows)
	}
	var vm VersionMap
	vm.Set(VersionEntry{Op: 42, StateType: "T", Version: 3, Slot: "counts"})
	cases := []struct {
		name  string
		rows  []Row
		md    Metadata
		limit int64
	}{
		{"fixture", Logical(fixtureRows), Metadata{{MetaFormatVersion, "1"}}, 0},
		{"empty", nil, CanonicalMetadata(nil, vm), 0},
		{"empty values", []Row{{1, []byte("a"), nil}, {2, []byte("b"), []byte{}}}, nil, 0},
		{"random 1000", random(1000), append(CanonicalMetadata(nil, vm), MetaEntry{"x", "y"}), 0},
		{"split batches", random(500), nil, 900},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.limit > 0 {
				defer func(v int64) { maxColumnBytes = v }(maxColumnBytes)
				maxColumnBytes = c.limit
			}
			var want, got bytes.Buffer
			arrowGoStream(t, &want, c.md, c.rows)
			if err := WriteStream(&got, c.md, RowSlice(c.rows)); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("direct writer differs from arrow-go (%d vs %d bytes)\n%s", got.Len(), want.Len(), firstDiff(got.Bytes(), want.Bytes()))
			}
			s, err := DecodeSnapshot(got.Bytes(), ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !rowsEqual(s.Rows, c.rows) {
				t.Fatal("rows differ after decoding")
			}
		})
	}
}

func firstDiff(a, b []byte) string {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			lo := max(0, i-16)
			return fmt.Sprintf("first difference at byte %d:\n got %x\nwant %x", i, a[lo:min(len(a), i+16)], b[lo:min(len(b), i+16)])
		}
	}
	return "one is a prefix of the other"
}

// selection is a RunSource over chosen rows of a columnar snapshot.
type selection struct {
	cur *Cursor
	idx []int
}

func (s selection) Len() int           { return len(s.idx) }
func (s selection) Row(i int) Row      { return s.cur.Row(s.idx[i]) }
func (s selection) Op(i int) uint64    { return s.cur.Op(s.idx[i]) }
func (s selection) Key(i int) []byte   { return s.cur.Key(s.idx[i]) }
func (s selection) Value(i int) []byte { return s.cur.Value(s.idx[i]) }
func (s selection) Run(i int) (*Batch, int, int, bool) {
	b, lo, left := s.cur.Locate(s.idx[i])
	n := 1
	for n < left && i+n < len(s.idx) && s.idx[i+n] == s.idx[i]+n {
		n++
	}
	return b, lo, n, true
}

// writerRows returns n rows for the writers' tests: operator i/1000, key
// k%06d, and a value of up to maxValue-1 copies of a byte, its length
// drawn from r.
func writerRows(r *rand.Rand, n, maxValue int) []Row {
	rows := make([]Row, n)
	for i := range rows {
		rows[i] = Row{Op: uint64(i / 1000), Key: []byte(fmt.Sprintf("k%06d", i)), Value: bytes.Repeat([]byte{byte(i)}, r.IntN(maxValue))}
	}
	return rows
}

// columnarAsIs encodes rows as they are, in batches of the given sizes,
// and decodes them columnar, from memory.
func columnarAsIs(t *testing.T, rows []Row, batches []int) *Snapshot {
	t.Helper()
	var in bytes.Buffer
	if err := EncodeStreamAsIs(&in, nil, rows, batches); err != nil {
		t.Fatal(err)
	}
	snap, err := DecodeSnapshot(in.Bytes(), ReadOptions{Columnar: true})
	if err != nil || !snap.Columnar() {
		t.Fatalf("decode: %v", err)
	}
	return snap
}

// rowsStream returns the stream WriteStream writes of rows idx of rows,
// taken one by one from memory: what a writer of runs must match.
func rowsStream(t *testing.T, rows []Row, idx []int) []byte {
	t.Helper()
	plain := make(RowSlice, len(idx))
	for i, j := range idx {
		plain[i] = rows[j]
	}
	var b bytes.Buffer
	if err := WriteStream(&b, nil, plain); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// writeMapped writes rows as they are, in batches of the given sizes, to a
// file of a new temporary directory, and opens it memory-mapped (closed at
// the test's end); it returns the savepoint and the file's path.
func writeMapped(t *testing.T, rows []Row, batches []int) (*Savepoint, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.snap")
	if _, err := WriteSnapshotFile(path, nil, rows, SnapshotOptions{AsIs: true, Batches: batches}); err != nil {
		t.Fatal(err)
	}
	sp, err := Open(path, OpenOptions{Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	return sp, path
}

// runChoice copies a run of rows at once, and a row by itself as a run
// when it follows the run before closely in its batch or comes alone among
// runs; rows out of order, one after another, go row by row.
func TestRunChoice(t *testing.T) {
	var b1, b2 Batch
	type step struct {
		ok    bool
		b     *Batch
		lo, n int
		want  bool
	}
	for name, steps := range map[string][]step{
		"runs":               {{true, &b1, 0, 5, true}, {true, &b1, 9, 3, true}},
		"kept between holes": {{true, &b1, 0, 1, true}, {true, &b1, 2, 1, true}, {true, &b1, 4, 1, true}, {true, &b1, 4 + 1 + nearRows, 1, true}},
		"far apart":          {{true, &b1, 0, 1, true}, {true, &b1, 2 + nearRows, 1, false}, {true, &b1, 5 + 2*nearRows, 1, false}},
		"out of order":       {{true, &b1, 100, 1, true}, {true, &b1, 7, 1, false}, {true, &b1, 50, 1, false}},
		"another batch":      {{true, &b1, 0, 1, true}, {true, &b2, 1, 1, false}},
		"lone among runs":    {{true, &b1, 0, 1, true}, {true, &b1, 500, 1, false}, {true, &b1, 600, 9, true}, {true, &b1, 900, 1, true}},
		"modified rows":      {{false, nil, 0, 1, false}, {true, &b1, 3, 1, false}, {true, &b1, 4, 5, true}, {false, nil, 0, 1, false}, {true, &b1, 11, 1, true}},
	} {
		var c runChoice
		for k, st := range steps {
			if got := c.run(st.ok, st.b, st.lo, st.n); got != st.want {
				t.Errorf("%s, step %d (rows %d+%d): run %v, want %v", name, k, st.lo, st.n, got, st.want)
			}
		}
	}
}

// TestWriteStreamRuns: copying runs of consecutive input rows column by
// column gives exactly the bytes of writing the same rows one by one,
// including where runs cross the writer's batch splits and the input's
// batch boundaries.
func TestWriteStreamRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	rows := writerRows(r, 3000, 12)
	snap := columnarAsIs(t, rows, []int{1000, 0, 1500, 500})
	var idx []int
	for i := range rows {
		if r.IntN(10) < 7 { // runs of kept rows with gaps
			idx = append(idx, i)
		}
	}
	sel := selection{cur: snap.NewCursor(), idx: idx}
	for _, limit := range []int64{maxColumnBytes, 5000, 777} {
		func() {
			defer func(v int64) { maxColumnBytes = v }(maxColumnBytes)
			maxColumnBytes = limit
			var a bytes.Buffer
			if err := WriteStream(&a, nil, sel); err != nil {
				t.Fatal(err)
			}
			if want := rowsStream(t, rows, idx); !bytes.Equal(a.Bytes(), want) {
				t.Fatalf("limit %d: runs differ from rows\n%s", limit, firstDiff(a.Bytes(), want))
			}
		}()
	}
}

// countedRuns is a selection that counts the runs it is asked for.
type countedRuns struct {
	selection
	calls *int
}

func (c countedRuns) Run(i int) (*Batch, int, int, bool) {
	*c.calls++
	return c.selection.Run(i)
}

// TestRunStepsKept: the passes over keys and values after the first take
// the steps it kept instead of asking the source for each run again, and
// write the same bytes; a pass of more steps than are kept asks for each.
func TestRunStepsKept(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	rows := writerRows(r, 4000, 12)
	snap := columnarAsIs(t, rows, []int{1500, 2500})
	var idx []int
	for i := range rows {
		if r.IntN(10) < 8 {
			idx = append(idx, i)
		}
	}
	want := rowsStream(t, rows, idx)
	// The sizing pass, the operators' and the key offsets' ask for each
	// run; the keys' and both value passes ask for none.
	write := func() int {
		calls := 0
		var got bytes.Buffer
		if err := WriteStream(&got, nil, countedRuns{selection{cur: snap.NewCursor(), idx: idx}, &calls}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("the bytes differ from writing the rows one by one\n%s", firstDiff(got.Bytes(), want))
		}
		return calls
	}
	kept := write()
	defer func(v int) { maxRunSteps = v }(maxRunSteps)
	maxRunSteps = 10
	asked := write()
	if kept == 0 || 2*kept != asked {
		t.Errorf("runs asked for: %d with the steps kept, %d without; want 3 passes of 6", kept, asked)
	}
	// Steps of other rows are not replayed.
	var s runSteps
	s.start(0, 10)
	s.add(nil, 0, 3, true)
	s.add(nil, 3, 7, true)
	s.finish()
	s.start(0, 10)
	if _, _, n, run, ok := s.next(0); !ok || n != 3 || !run {
		t.Fatalf("replay of row 0: %d rows, run %v, kept %v", n, run, ok)
	}
	if _, _, _, _, ok := s.next(4); ok {
		t.Fatal("a step of row 3 replayed for row 4")
	}
	if _, _, _, _, ok := s.next(3); ok {
		t.Fatal("a replay that went wrong goes on")
	}
	s.start(0, 11)
	if _, _, _, _, ok := s.next(0); ok {
		t.Fatal("steps of rows [0, 10) replayed for rows [0, 11)")
	}
	// A row copied on its own is followed by the next row.
	s.start(20, 30)
	s.add(nil, 0, 2, true)
	s.add(nil, 9, 5, false)
	s.add(nil, 4, 3, true)
	s.finish()
	s.start(20, 30)
	for _, want := range []struct{ row, lo, n int }{{20, 0, 2}, {22, 0, 0}, {23, 4, 3}} {
		if _, lo, n, _, ok := s.next(want.row); !ok || lo != want.lo || n != want.n {
			t.Fatalf("replay of row %d: from %d, %d rows, kept %v; want from %d, %d rows", want.row, lo, n, ok, want.lo, want.n)
		}
	}
	// A pass of more steps than are kept keeps none, and the passes after
	// it over the same rows keep none either.
	s.start(0, 100)
	for i := range maxRunSteps + 1 {
		s.add(nil, i, 1, true)
	}
	s.finish()
	for range 3 {
		s.start(0, 100)
		s.add(nil, 0, 1, true)
		s.finish()
		if len(s.steps) != 0 || s.full {
			t.Fatalf("a pass after one of too many steps kept %d steps (whole: %v)", len(s.steps), s.full)
		}
		if _, _, _, _, ok := s.next(0); ok {
			t.Fatal("a pass of too many steps replayed")
		}
	}
	s.start(0, 99)
	s.add(nil, 0, 1, true)
	if len(s.steps) != 1 {
		t.Fatal("a pass over other rows keeps no steps after one of too many")
	}
}

// TestWriteStreamFromFile: runs of a memory-mapped input are read from the
// file (pread, through a window) rather than the map; the bytes are those
// of writing the same rows from memory, whether the rows are read forward
// with gaps or in a shuffled order (where the window gives up), whatever
// the window's size. A file cut short while it is written from is an
// ErrInputChanged, not a crash.
func TestWriteStreamFromFile(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	rows := writerRows(r, 5000, 40)
	sp, path := writeMapped(t, rows, []int{2000, 3000})
	snap := sp.Files[0].Snapshot
	if snap.Batches[0].file == nil {
		t.Fatal("the batches of a mapped file do not know their file")
	}
	var gaps, shuffled []int
	for i := range rows {
		if r.IntN(10) < 8 {
			gaps = append(gaps, i)
		}
	}
	shuffled = r.Perm(len(rows))
	for _, win := range []int{sinkSize, 4096, 64} {
		func() {
			defer func(v int) { windowSize = v }(windowSize)
			windowSize = win
			for name, idx := range map[string][]int{"gaps": gaps, "shuffled": shuffled} {
				var a bytes.Buffer
				if err := WriteStream(&a, nil, selection{cur: snap.NewCursor(), idx: idx}); err != nil {
					t.Fatal(err)
				}
				if want := rowsStream(t, rows, idx); !bytes.Equal(a.Bytes(), want) {
					t.Fatalf("window %d, %s: mapped runs differ from rows\n%s", win, name, firstDiff(a.Bytes(), want))
				}
			}
		}()
	}
	if err := os.Truncate(path, 1000); err != nil {
		t.Fatal(err)
	}
	_, err := WriteSnapshotFrom(filepath.Join(t.TempDir(), "out.snap"), nil, selection{cur: snap.NewCursor(), idx: gaps}, SnapshotOptions{})
	if !errors.Is(err, ErrInputChanged) {
		t.Fatalf("writing from a truncated input: %v, want ErrInputChanged", err)
	}
}

// TestWriteOffsetsDirect: the offsets of runs longer than directMin bytes
// are read from the file straight into the writer's buffer and moved
// there; the bytes are those of writing the rows from memory, whether the
// buffer fills in the middle of a run (the sequential writer, whose buffer
// holds the operators before) or not (the parallel one), and whether the
// run starts the batch or not.
func TestWriteOffsetsDirect(t *testing.T) {
	const n = 300_000
	rows := make([]Row, n)
	for i := range rows {
		rows[i] = Row{Op: uint64(i / 100_000), Key: []byte(fmt.Sprintf("k%07d", i)), Value: bytes.Repeat([]byte{byte(i)}, i%7)}
	}
	sp, _ := writeMapped(t, rows, []int{n})
	snap := sp.Files[0].Snapshot
	// Runs of 4095 rows (4096 offsets, directMin bytes: through the
	// window), 4096 and 4097 rows (straight into the buffer), the first at
	// the batch's start, then long runs.
	var idx []int
	for i := range rows {
		if i != 4095 && i != 8192 && i != 12290 && i%50_000 != 7 {
			idx = append(idx, i)
		}
	}
	want := rowsStream(t, rows, idx)
	var got bytes.Buffer
	if err := WriteStream(&got, nil, selection{cur: snap.NewCursor(), idx: idx}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("sequential: mapped runs differ from rows\n%s", firstDiff(got.Bytes(), want))
	}
	out := filepath.Join(t.TempDir(), "out.snap")
	if _, err := WriteSnapshotFrom(out, nil, selection{cur: snap.NewCursor(), idx: idx}, SnapshotOptions{Jobs: 3}); err != nil {
		t.Fatal(err)
	}
	if b := mustReadFile(t, out); !bytes.Equal(b, want) {
		t.Fatalf("parallel: mapped runs differ from rows\n%s", firstDiff(b, want))
	}
}

// TestRowReader: RowReaders over a mapped file, several advancing at once
// through runs that cross batch ends, hand out the rows the batches hold;
// rows in memory too; a reader moved to another file reads that file; and a file whose offsets changed since open is an
// error, not a panic.
func TestRowReader(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	rows := make([]Row, 3000)
	for i := range rows {
		rows[i] = Row{Op: uint64(i / 700), Key: bytes.Repeat([]byte{byte(i)}, r.IntN(12)), Value: bytes.Repeat([]byte{byte(i >> 3)}, r.IntN(9))}
	}
	mapped, path := writeMapped(t, rows, []int{1000, 2000})
	inMemory, err := Open(path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer inMemory.Close()
	defer func(v, b int) { rowReaderRows, rowReaderBytes = v, b }(rowReaderRows, rowReaderBytes)
	for _, sp := range []*Savepoint{mapped, inMemory} {
		cur := sp.Files[0].Snapshot.NewCursor()
		for _, n := range []int{1, 7, 2048, -40, -41} {
			// n < 0: 2048 rows, but at most -n bytes of keys and values
			// (about three rows): for -41, each reader's MaxBytes says so.
			rowReaderRows, rowReaderBytes = n, 4<<20
			if n < 0 {
				rowReaderRows, rowReaderBytes = 2048, -n
			}
			// Three runs read in turns, as a merge does.
			starts := []int{0, 990, 2500}
			readers := make([]RowReader, len(starts))
			if n == -41 {
				rowReaderBytes = 4 << 20
				for k := range readers {
					readers[k].MaxBytes = 41
				}
			}
			for step := 0; step < 500; step++ {
				k := r.IntN(len(starts))
				i := starts[k]
				got, err := readers[k].Row(cur, i)
				if err != nil {
					t.Fatal(err)
				}
				if want := rows[i]; got.Op != want.Op || !bytes.Equal(got.Key, want.Key) || !bytes.Equal(got.Value, want.Value) {
					t.Fatalf("%d rows at once: row %d: %+v, want %+v", n, i, got, want)
				}
				rd := &readers[k]
				limit := rowReaderBytes
				if rd.MaxBytes > 0 {
					limit = rd.MaxBytes
				}
				if rd.fromFile && (rd.hi-rd.lo > rowReaderRows || rd.hi-rd.lo > 1 && len(rd.keys)+len(rd.vals) > limit) {
					t.Fatalf("%d rows at once: holds rows %d-%d, %d bytes", n, rd.lo, rd.hi, len(rd.keys)+len(rd.vals))
				}
				starts[k] = (i + 1) % len(rows)
			}
		}
	}
	// A reader moved to another file's rows reads that file's rows, not
	// the rows it holds at the same index.
	other := make([]Row, len(rows))
	for i := range other {
		other[i] = Row{Op: 9, Key: []byte{byte(i), 'o'}, Value: []byte{byte(i)}}
	}
	otherPath := filepath.Join(t.TempDir(), "other.snap")
	if _, err := WriteSnapshotFile(otherPath, nil, other, SnapshotOptions{AsIs: true}); err != nil {
		t.Fatal(err)
	}
	otherSP, err := Open(otherPath, OpenOptions{Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	defer otherSP.Close()
	var moved RowReader
	for _, sp := range []*Savepoint{mapped, otherSP, inMemory, otherSP} {
		want := rows[5]
		if sp == otherSP {
			want = other[5]
		}
		if got, err := moved.Row(sp.Files[0].Snapshot.NewCursor(), 5); err != nil || !bytes.Equal(got.Key, want.Key) {
			t.Fatalf("a reader moved between files: row 5 %+v (%v), want %+v", got, err, want)
		}
	}
	// Offsets rewritten behind the map's back.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := &mapped.Files[0].Snapshot.Batches[1]
	off, _ := b.file.offsetOf(bytesOf(b.ValOffs[100:200]))
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xff, 0xff, 0xff, 0x7f}, 100), off); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rowReaderRows = 2048
	var rd RowReader
	if _, err := rd.Row(mapped.Files[0].Snapshot.NewCursor(), 1000); !errors.Is(err, ErrInputChanged) {
		t.Fatalf("changed offsets: %v, want ErrInputChanged", err)
	}
}

// Key and value offsets that go below 0, decrease, or end past the data are
// refused at open, whether the file is memory-mapped (its offsets read with
// pread) or read into memory, and in a chunk after the first too.
func TestOpenRefusesBadOffsets(t *testing.T) {
	rows := make([]Row, 300000) // more offsets than validation reads at once
	for i := range rows {
		rows[i] = Row{Op: 1, Key: []byte(fmt.Sprintf("k%07d", i)), Value: []byte{byte(i)}}
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.snap")
	if _, err := WriteSnapshotFile(good, nil, rows, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	sp, err := Open(good, OpenOptions{Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	f := sp.Files[0]
	b := &f.Snapshot.Batches[0]
	keyOffs, _ := f.mapped.offsetOf(bytesOf(b.KeyOffs))
	valOffs, _ := f.mapped.offsetOf(bytesOf(b.ValOffs))
	sp.Close()
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		at   int64 // byte of the file
		v    int32
		want string
	}{
		{"negative first key offset", keyOffs, -1, "start at -1, below 0"},
		{"key offsets decrease", keyOffs + 4*5, 1, "not monotonically non-decreasing at index 4"},
		{"value offsets decrease in the second chunk", valOffs + 4*(1<<18+3), 2, "not monotonically non-decreasing at index 262146"},
		{"last value offset past the data", valOffs + 4*int64(len(rows)), 1 << 30, "out of bounds of data buffer"},
	}
	for _, c := range cases {
		bad := bytes.Clone(data)
		binary.LittleEndian.PutUint32(bad[c.at:], uint32(c.v))
		path := filepath.Join(dir, "bad.snap")
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, columnar := range []bool{true, false} {
			sp, err := Open(path, OpenOptions{Columnar: columnar})
			if err == nil {
				sp.Close()
				t.Errorf("%s (columnar %v): opened", c.name, columnar)
			} else if !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s (columnar %v): %v, want %q", c.name, columnar, err, c.want)
			}
		}
	}
}

// KeyColumns holds the operators and keys of the rows asked for, read with
// pread from a mapped file or sliced from memory (LoadKeys: the keys alone,
// and it does not claim to hold the operators); a mapped file cut short
// since it was opened is an ErrInputChanged.
func TestKeyColumns(t *testing.T) {
	defer func(v int64) { keyColumnsBytes = v }(keyColumnsBytes)
	for _, budget := range []int64{4 << 20, 30, 1} {
		keyColumnsBytes = budget // fewer rows than asked for when their keys pass it
		testKeyColumns(t)
	}
}

func testKeyColumns(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	rows := make([]Row, 3000)
	for i := range rows {
		rows[i] = Row{Op: uint64(i / 1000), Key: bytes.Repeat([]byte{byte(i)}, 1+r.IntN(20)), Value: []byte{byte(i)}}
	}
	path := filepath.Join(t.TempDir(), "in.snap")
	if _, err := WriteSnapshotFile(path, nil, rows, SnapshotOptions{AsIs: true, Batches: []int{1200, 1800}}); err != nil {
		t.Fatal(err)
	}
	for _, columnar := range []bool{true, false} {
		sp, err := Open(path, OpenOptions{Columnar: columnar})
		if err != nil {
			t.Fatal(err)
		}
		snap := sp.Files[0].Snapshot
		var kc KeyColumns
		for trial := 0; trial < 200; trial++ {
			bi := r.IntN(len(snap.Batches))
			b := &snap.Batches[bi]
			lo := r.IntN(b.Len())
			hi := lo + 1 + r.IntN(b.Len()-lo)
			load, keysOnly := kc.Load, trial%2 == 1
			if keysOnly {
				load = kc.LoadKeys
			}
			if err := load(b, lo, hi); err != nil {
				t.Fatal(err)
			}
			if kc.Lo != lo || kc.Hi <= lo || kc.Hi > hi || (!columnar || keyColumnsBytes > 1<<20) && kc.Hi != hi {
				t.Fatalf("columnar %v, budget %d: asked for rows %d-%d, holds %d-%d", columnar, keyColumnsBytes, lo, hi, kc.Lo, kc.Hi)
			}
			hi = kc.Hi
			for x := lo; x < hi; x++ {
				want := b.Row(x)
				if keysOnly && columnar {
					// The operators were not read: Holds says so.
					if kc.Holds(b, x) || kc.Ops != nil || !kc.HoldsKeys(b, x) || !bytes.Equal(kc.Key(x), want.Key) {
						t.Fatalf("batch %d row %d: keys alone loaded, but Holds %v, HoldsKeys %v, key %x, want %x", bi, x, kc.Holds(b, x), kc.HoldsKeys(b, x), kc.Key(x), want.Key)
					}
					continue
				}
				if !kc.Holds(b, x) || kc.Ops[x-kc.Lo] != want.Op || !bytes.Equal(kc.Key(x), want.Key) {
					t.Fatalf("columnar %v, batch %d row %d: op %d key %x, want %d %x", columnar, bi, x, kc.Ops[x-kc.Lo], kc.Key(x), want.Op, want.Key)
				}
			}
			if kc.Holds(b, hi) || kc.Holds(b, lo-1) {
				t.Fatalf("rows %d-%d held: says it holds %d or %d", lo, hi, lo-1, hi)
			}
		}
		if columnar {
			b := &snap.Batches[1]
			if err := os.Truncate(path, 2000); err != nil {
				t.Fatal(err)
			}
			if err := kc.Load(b, 0, b.Len()); !errors.Is(err, ErrInputChanged) {
				t.Fatalf("loading from a truncated file: %v, want ErrInputChanged", err)
			}
			// LoadOrMap holds the rows in place in the map instead (reading
			// them would fault: the file was cut short).
			kc.LoadOrMap(b, 10, 20)
			if !kc.Holds(b, 10) || kc.Hi != 20 || len(kc.Keys) == 0 || &kc.Keys[0] != &b.Keys[0] {
				t.Fatalf("LoadOrMap of a truncated file: holds %d-%d, not the map's rows 10-20", kc.Lo, kc.Hi)
			}
			sp.Close()
			if _, err := WriteSnapshotFile(path, nil, rows, SnapshotOptions{AsIs: true, Batches: []int{1200, 1800}}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		sp.Close()
	}
}

// EachKey hands out the operator and key of every row in stream order, as
// EachRow does, for a mapped file read in blocks of a few rows (across
// batch ends too), and stops when asked.
func TestEachKey(t *testing.T) {
	defer func(v int) { keyBlock = v }(keyBlock)
	defer func(v int64) { keyColumnsBytes = v }(keyColumnsBytes)
	for _, budget := range []int64{4 << 20, 10} {
		keyColumnsBytes = budget
		testEachKey(t)
	}
}

func testEachKey(t *testing.T) {
	rows := make([]Row, 1000)
	for i := range rows {
		rows[i] = Row{Op: uint64(i / 300), Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte{byte(i)}}
	}
	path := filepath.Join(t.TempDir(), "in.snap")
	if _, err := WriteSnapshotFile(path, nil, rows, SnapshotOptions{AsIs: true, Batches: []int{400, 0, 600}}); err != nil {
		t.Fatal(err)
	}
	for _, block := range []int{4096, 3} {
		keyBlock = block
		for _, columnar := range []bool{true, false} {
			sp, err := Open(path, OpenOptions{Columnar: columnar})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			sp.Files[0].Snapshot.EachKey(func(i int, op uint64, key []byte) bool {
				if i != n || op != rows[i].Op || !bytes.Equal(key, rows[i].Key) {
					t.Fatalf("block %d, columnar %v: row %d (call %d): op %d key %q, want %d %q", block, columnar, i, n, op, key, rows[i].Op, rows[i].Key)
				}
				n++
				return i < 700
			})
			if n != 701 {
				t.Errorf("block %d, columnar %v: %d calls, want 701 (the last for row 700)", block, columnar, n)
			}
			sp.Close()
		}
	}
}

// TestBoundsWindowSize: a window of run bounds starts at a page, doubles
// while each read serves many views (bounds close together), up to
// boundsWindowMax, and halves back to a page when reads serve few.
func TestBoundsWindowSize(t *testing.T) {
	w := window{bounds: true}
	steps := []struct {
		views int64 // views served by the read before
		want  int64
	}{
		{0, boundsWindow},
		{20, 2 * boundsWindow},
		{16, 4 * boundsWindow},
		{10, 4 * boundsWindow},
		{4, 2 * boundsWindow},
		{1, boundsWindow},
		{1, boundsWindow},
	}
	for i, s := range steps {
		w.views += s.views
		if got := w.boundsSize(); got != s.want {
			t.Fatalf("step %d: after %d views, size %d, want %d", i, s.views, got, s.want)
		}
		w.size = s.want
	}
	for range 20 {
		w.views += 100
		w.size = w.boundsSize()
	}
	if want := min(int64(windowSize), boundsWindowMax); w.size != want {
		t.Fatalf("dense bounds: size %d, want %d", w.size, want)
	}
}

// moveOffsets gives the same result whether its buffers are aligned (read
// as []uint32) or not, and wraps modulo 2^32 as offsets moved down do.
func TestMoveOffsets(t *testing.T) {
	src := make([]byte, 4*9+3)
	dst := make([]byte, 4*9+3)
	for shiftSrc := 0; shiftSrc < 4; shiftSrc++ {
		for shiftDst := 0; shiftDst < 4; shiftDst++ {
			for _, delta := range []uint32{0, 7, 1 << 31, ^uint32(99)} {
				s, d := src[shiftSrc:shiftSrc+36], dst[shiftDst:shiftDst+36]
				for j := 0; j < 9; j++ {
					binary.LittleEndian.PutUint32(s[4*j:], uint32(j*1000+50))
				}
				last := moveOffsets(d, s, delta)
				for j := 0; j < 9; j++ {
					if got, want := binary.LittleEndian.Uint32(d[4*j:]), uint32(j*1000+50)+delta; got != want {
						t.Fatalf("shifts %d/%d, delta %d: offset %d is %d, want %d", shiftSrc, shiftDst, delta, j, got, want)
					}
				}
				if want := uint32(8050) + delta; last != want {
					t.Errorf("shifts %d/%d, delta %d: returned %d, want %d", shiftSrc, shiftDst, delta, last, want)
				}
			}
		}
	}
}

// sizedBuf gives a small read a buffer of its size and a large one a
// pooled buffer.
func TestSizedBuf(t *testing.T) {
	for _, c := range []struct {
		n      int64
		pooled bool
		cap    int
	}{{1, false, 1}, {704, false, 704}, {smallBufMax, false, smallBufMax}, {smallBufMax + 1, true, sinkSize}, {sinkSize, true, sinkSize}} {
		b, pooled := sizedBuf(c.n, int(c.n))
		if pooled != c.pooled || cap(b) != c.cap || len(b) != 0 {
			t.Errorf("sizedBuf(%d): len %d cap %d pooled %v; want cap %d pooled %v", c.n, len(b), cap(b), pooled, c.cap, c.pooled)
		}
		putBuf(b)
	}
}
