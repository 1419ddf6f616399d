package transform

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/sptool/sptool/savepoint"
)

// A rescale keeps a row index for each pair of an old and a new file of a
// group, most of them never searched: one holds its search hints (4 KiB)
// only once searched, or a rescale between 128 subtasks and 128 holds 64
// MiB of them. Goroutines searching one index at once share its hints.
func TestRowIndexHintsMadeWhenSearched(t *testing.T) {
	if n := unsafe.Sizeof(rowIndex{}); n > 256 {
		t.Errorf("a row index is %d bytes before any search, want at most 256", n)
	}
	var x rowIndex
	for i := range 4096 {
		x.appendRun(3*i, 2)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g * 2048; i < (g+1)*2048; i++ {
				if got, want := x.at(i), 3*(i/2)+i%2; got != want {
					t.Errorf("row %d: at %d, want %d", i, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// A row index built from runs, and joined to another, maps every output
// row to its input row, and keeps adjacent runs as one span.
func TestRowIndexRuns(t *testing.T) {
	type run struct{ start, n int }
	for _, tc := range []struct {
		name  string
		a, b  []run
		spans int
	}{
		{"empty", nil, nil, 0},
		{"one run", []run{{5, 3}}, nil, 1},
		{"adjacent runs join", []run{{0, 2}, {2, 3}, {9, 1}}, nil, 2},
		{"joined index extends the last span", []run{{0, 2}}, []run{{2, 2}, {7, 1}}, 2},
		{"joined index starts a span", []run{{0, 2}}, []run{{4, 2}, {7, 1}, {8, 4}}, 3},
		{"into an empty index", nil, []run{{3, 1}, {5, 1}}, 2},
		{"many single rows", func() (rs []run) {
			for i := 0; i < 5000; i += 2 {
				rs = append(rs, run{i, 1})
			}
			return rs
		}(), []run{{5000, 1}, {5001, 1}}, 2501},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var x, y rowIndex
			var want []int
			for _, r := range tc.a {
				x.appendRun(r.start, r.n)
				for i := range r.n {
					want = append(want, r.start+i)
				}
			}
			for _, r := range tc.b {
				y.appendRun(r.start, r.n)
				for i := range r.n {
					want = append(want, r.start+i)
				}
			}
			x.appendIndex(&y)
			if x.Len() != len(want) || len(x.spans) != tc.spans || len(x.ends) != tc.spans {
				t.Fatalf("%d rows in %d spans (%d ends), want %d in %d", x.Len(), len(x.spans), len(x.ends), len(want), tc.spans)
			}
			var got []int
			for i := 0; i < x.Len(); {
				start, n := x.run(i)
				if x.at(i) != start || n < 1 {
					t.Fatalf("row %d: at %d, run %d+%d", i, x.at(i), start, n)
				}
				for j := range n {
					got = append(got, start+j)
				}
				i += n
			}
			if !slices.Equal(got, want) {
				t.Fatalf("rows %v, want %v", got, want)
			}
		})
	}
}

// outRows.eachKeyIn visits the output rows of a range (kept input rows,
// some modified, some remapped) with the operator and key Op and Key give
// them, in order, from a mapped file and from rows in memory, and stops
// when told; written, the output rows are the rows Row gives.
func TestOutRowsEachKeyIn(t *testing.T) {
	var rows []savepoint.Row
	for i := range 3000 {
		rows = append(rows, savepoint.Row{Op: uint64(1 + i%3), Key: savepoint.EncodeKeyedKey([]byte("s"), fmt.Appendf(nil, "k%05d", i)), Value: []byte{1}})
	}
	path := filepath.Join(t.TempDir(), "f.snap")
	if _, err := savepoint.WriteSnapshotFile(path, nil, rows, savepoint.SnapshotOptions{AsIs: true}); err != nil {
		t.Fatal(err)
	}
	sp, err := savepoint.Open(path, savepoint.OpenOptions{Columnar: true, AllowMissingSidecar: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	for _, snap := range []*savepoint.Snapshot{sp.Files[0].Snapshot, {Rows: rows}} {
		o := &outRows{cur: snap.NewCursor()}
		for i := 0; i < len(rows); i += 7 { // runs of 5 kept, 2 dropped
			o.idx.appendRun(i, min(5, len(rows)-i))
		}
		o.modify(3, savepoint.Row{Op: 99, Key: []byte("renamed")}, o.Row(3))
		o.modify(o.Len()-1, savepoint.Row{Op: 98, Key: []byte("last")}, o.Row(o.Len()-1))
		// Rows whose operator alone changed (a remap): spans of them.
		for p := 5; p < 40; p++ {
			o.ops.set(uint32(p), uint64(70+p/20))
		}
		o.ops.set(100, 80)
		for _, r := range [][2]int{{0, o.Len()}, {2, 3}, {4, 1000}, {o.Len() - 1, o.Len()}, {10, 10}} {
			var got []string
			o.eachKeyIn(r[0], r[1], func(i int, op uint64, key []byte) bool {
				got = append(got, fmt.Sprintf("%d:%d:%s", i, op, key))
				return true
			})
			var want []string
			for i := r[0]; i < r[1]; i++ {
				want = append(want, fmt.Sprintf("%d:%d:%s", i, o.Op(i), o.Key(i)))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("columnar %v, rows %v: %d visited, want %d; first difference in\n%v\n%v", snap.Columnar(), r, len(got), len(want), got[:min(5, len(got))], want[:min(5, len(want))])
			}
		}
		// Written, the output is the rows Row gives, the remapped rows'
		// keys and values copied as runs (KeyValueRun), not their
		// operators (Run).
		want := make(savepoint.RowSlice, o.Len())
		for i := range want {
			want[i] = o.Row(i)
		}
		if want[6].Op != 70 || want[25].Op != 71 || want[100].Op != 80 || want[101].Op == 80 || want[3].Op != 99 {
			t.Fatalf("Row does not give the operators set: %d %d %d %d %d", want[6].Op, want[25].Op, want[100].Op, want[101].Op, want[3].Op)
		}
		var a, b bytes.Buffer
		if err := savepoint.WriteStream(&a, nil, want); err != nil {
			t.Fatal(err)
		}
		if err := savepoint.WriteStream(&b, nil, o); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("columnar %v: written, the output rows differ from Row's", snap.Columnar())
		}
		if snap.Columnar() {
			if _, _, n, ok := o.Run(4); !ok || n != 1 {
				t.Errorf("Run(4): %d rows, %v; want 1, stopping before the remapped rows", n, ok)
			}
			if _, _, _, ok := o.Run(6); ok {
				t.Error("Run(6), a remapped row: a run of stored rows")
			}
			if _, _, n, ok := o.KeyValueRun(6); !ok || n < 2 {
				t.Errorf("KeyValueRun(6): %d rows, %v; want a run of the remapped rows' keys and values", n, ok)
			}
		}
		n := 0
		o.eachKeyIn(0, o.Len(), func(int, uint64, []byte) bool { n++; return n < 4 })
		if n != 4 {
			t.Errorf("went on for %d rows after being told to stop at 4", n)
		}
	}
}

// A rescale's merge compares keys through the old outputs, which for inputs
// out of order are sorted copies in mapped temporary files: it releases
// their pages as it goes, as it does the input's, or they would all stay
// resident (a shuffled tree's rescale held more than its own size).
func TestMergeSortedReleasesOldOutputs(t *testing.T) {
	var olds []*outRows
	pos := make([]rowIndex, 2)
	released := make([]int, 2)
	for s := range 2 {
		var rows []savepoint.Row
		for i := range 50 {
			rows = append(rows, savepoint.Row{Op: 1, Key: savepoint.EncodeKeyedKey([]byte("s"), fmt.Appendf(nil, "k%03d", 2*i+s))})
		}
		slices.SortFunc(rows, func(a, b savepoint.Row) int { return a.Compare(b) })
		o := &outRows{cur: (&savepoint.Snapshot{Rows: rows}).NewCursor(), release: func() { released[s]++ }}
		o.idx.appendRun(0, len(rows)) // its output: every row, in order
		olds = append(olds, o)
		pos[s].appendRun(0, len(rows)) // all go to the new file
	}
	inputReleases := 0
	m := mergeSorted(olds, pos, nil, func() { inputReleases++ })
	if m.Len() != 100 {
		t.Fatalf("%d rows merged, want 100", m.Len())
	}
	for i := 1; i < m.Len(); i++ {
		a, ai := m.at(i - 1)
		b, bi := m.at(i)
		if a.Row(ai).Compare(b.Row(bi)) >= 0 {
			t.Fatalf("row %d not after row %d", i, i-1)
		}
	}
	if inputReleases == 0 || released[0] == 0 || released[1] == 0 {
		t.Errorf("releases: input %d, old outputs %v; want each at least once", inputReleases, released)
	}
}

// modRows finds the rewritten rows by position, whether they were set in
// order (as the engine does) or not, and says where the next one is; a row
// keeps the input's key or value only where it is the input's own slice,
// other bytes are copied (the caller's may change), and rows copied to
// another modRows keep their bytes.
func TestModRows(t *testing.T) {
	input := savepoint.Row{Key: []byte("input key"), Value: []byte("input value")}
	row := func(p uint32) savepoint.Row {
		r := savepoint.Row{Op: uint64(p), Key: []byte{byte(p)}, Value: input.Value}
		if p%2 == 0 {
			r.Key, r.Value = input.Key, []byte{byte(p), 'v'}
		}
		return r
	}
	check := func(m *modRows, p uint32, e modEntry) {
		t.Helper()
		want := row(p)
		in := func() []byte { return []byte("from input") }
		key, val := m.bytes(e.key, in), m.bytes(e.value, in)
		if p%2 == 0 && string(key) != "from input" || p%2 == 1 && !bytes.Equal(key, want.Key) {
			t.Fatalf("row %d: key %q, want %q", p, key, want.Key)
		}
		if p%2 == 1 && string(val) != "from input" || p%2 == 0 && !bytes.Equal(val, want.Value) {
			t.Fatalf("row %d: value %q, want %q", p, val, want.Value)
		}
	}
	for _, order := range [][]uint32{{2, 5, 6, 40, 41, 100}, {41, 2, 100, 6, 40, 5}} {
		m := &modRows{}
		for _, p := range order {
			m.set(p, row(999), input)
			r := row(p)
			m.set(p, r, input) // set again: replaced
			if p%2 == 1 {
				r.Key[0] = 'x' // the caller's bytes change: the copy does not
			}
		}
		if m.len() != 6 {
			t.Fatalf("%v: %d rows, want 6", order, m.len())
		}
		want := []uint32{2, 5, 6, 40, 41, 100}
		var got []uint32
		copied := &modRows{}
		m.each(func(p uint32, e modEntry) {
			if e.op != uint64(p) {
				t.Fatalf("%v: row %d holds %d", order, p, e.op)
			}
			check(m, p, e)
			copied.copyFrom(p+1000, e, m)
			got = append(got, p)
		})
		if !slices.Equal(got, want) {
			t.Fatalf("%v: positions %v, want %v", order, got, want)
		}
		m.arena = nil // the copies hold their own bytes
		copied.each(func(p uint32, e modEntry) { check(copied, p-1000, e) })
		for _, p := range []uint32{0, 2, 3, 6, 7, 41, 99, 100, 101, 5, 4, 40} { // forward and back
			e, ok := m.get(p)
			wantOK := slices.Contains(want, p)
			if ok != wantOK || ok && e.op != uint64(p) {
				t.Fatalf("%v: get(%d) = %v, %v", order, p, e.op, ok)
			}
			next, ok := m.next(p)
			k, _ := slices.BinarySearch(want, p)
			if ok != (k < len(want)) || ok && next != want[k] {
				t.Fatalf("%v: next(%d) = %d, %v", order, p, next, ok)
			}
		}
	}
	var none *modRows
	if _, ok := none.get(3); ok || none.len() != 0 {
		t.Fatal("a nil modRows holds rows")
	}
	if _, ok := none.next(0); ok {
		t.Fatal("a nil modRows has a next row")
	}
}

// modRows over many chunks and bitmap words: get and next agree with a
// plain list of the positions, and arena bytes stay put as chunks fill.
func TestModRowsMany(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	m := &modRows{}
	var want []uint32
	p := uint32(0)
	for len(want) < 3*modChunk+17 {
		p += uint32(1 + r.IntN([]int{1, 3, 200}[r.IntN(3)]))
		want = append(want, p)
		n := 1 + r.IntN(40)
		if len(want)%20000 == 0 {
			n = arenaChunk + 1 // larger than a chunk: one of its own
		}
		m.set(p, savepoint.Row{Op: uint64(p), Key: binary.BigEndian.AppendUint32(nil, p), Value: bytes.Repeat([]byte{byte(p)}, n)}, savepoint.Row{})
	}
	for probe := 0; probe < 20000; probe++ {
		q := uint32(r.IntN(int(p) + 100))
		k, found := slices.BinarySearch(want, q)
		e, ok := m.get(q)
		if ok != found || ok && (e.op != uint64(q) || binary.BigEndian.Uint32(m.bytes(e.key, nil)) != q || m.bytes(e.value, nil)[0] != byte(q)) {
			t.Fatalf("get(%d) = %+v, %v; want found %v", q, e, ok, found)
		}
		next, ok := m.next(q)
		if ok != (k < len(want)) || ok && next != want[k] {
			t.Fatalf("next(%d) = %d, %v", q, next, ok)
		}
	}
}

// putAll gives the rows held and the rows given, the given ones replacing
// any at the same position, as one put each would: given after the last
// row held (appended), before it, among them and at their positions.
func TestModRowsPutAll(t *testing.T) {
	entry := func(m *modRows, p uint32, tag byte) modEntry {
		return modEntry{op: uint64(p)<<8 | uint64(tag), key: m.ref([]byte{tag, byte(p)}, nil), value: m.ref([]byte("v"), nil)}
	}
	for _, tc := range []struct {
		held, given []uint32
	}{
		{nil, []uint32{3, 9}},
		{[]uint32{1, 2}, []uint32{5, 70}},
		{[]uint32{10, 20, 30}, []uint32{0, 15, 20, 31, 64, 65}},
		{[]uint32{5, 6}, []uint32{5, 6}},
	} {
		m, want := &modRows{}, &modRows{}
		for _, p := range tc.held {
			m.put(p, entry(m, p, 'h'))
			want.put(p, entry(want, p, 'h'))
		}
		es := make([]modEntry, len(tc.given))
		for i, p := range tc.given {
			es[i] = entry(m, p, 'g')
			want.put(p, entry(want, p, 'g'))
		}
		m.putAll(tc.given, es)
		type row struct {
			p       uint32
			op      uint64
			key, vl string
		}
		rows := func(m *modRows) (out []row) {
			m.each(func(p uint32, e modEntry) {
				out = append(out, row{p, e.op, string(m.bytes(e.key, nil)), string(m.bytes(e.value, nil))})
			})
			return out
		}
		if got, w := rows(m), rows(want); !slices.Equal(got, w) {
			t.Errorf("held %v, given %v: %v, want %v", tc.held, tc.given, got, w)
		}
		for p := uint32(0); p < 100; p++ {
			a, okA := m.get(p)
			b, okB := want.get(p)
			if okA != okB || a.op != b.op {
				t.Fatalf("held %v, given %v: get(%d) = %d, %v; want %d, %v", tc.held, tc.given, p, a.op, okA, b.op, okB)
			}
		}
	}
}

// opSpans gives each position the operator last set for it, and the next
// position with one, as a plain map does; spans appended shifted join
// their neighbours.
func TestOpSpans(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	var s opSpans
	want := map[uint32]uint64{}
	p := uint32(0)
	for range 3*modChunk + 5000 { // spans over several chunks
		p += uint32(1 + r.IntN(3)*r.IntN(3))
		op := uint64(r.IntN(3))
		s.set(p, op)
		want[p] = op
	}
	if s.n >= 3*modChunk+5000 || s.n < 2*modChunk {
		t.Fatalf("%d spans for %d positions: consecutive ones are not joined, or the test spans too few chunks", s.n, 3*modChunk+5000)
	}
	for q := uint32(0); q < p+3; q++ {
		op, ok := s.at(q)
		if w, has := want[q]; ok != has || ok && op != w {
			t.Fatalf("at(%d) = %d, %v; want %d, %v", q, op, ok, w, has)
		}
		next, ok := s.next(q)
		wantNext := q
		for ; wantNext <= p; wantNext++ {
			if _, has := want[wantNext]; has {
				break
			}
		}
		if ok != (wantNext <= p) || ok && next != wantNext {
			t.Fatalf("next(%d) = %d, %v; want %d", q, next, ok, wantNext)
		}
	}
	var a, b, joined opSpans
	a.add(opSpan{pos: 0, n: 2, op: 5})
	b.add(opSpan{pos: 0, n: 3, op: 5})
	b.add(opSpan{pos: 4, n: 1, op: 5})
	joined.appendShifted(&a, 0)
	joined.appendShifted(&b, 2)
	if joined.n != 2 || *joined.span(0) != (opSpan{pos: 0, n: 5, op: 5}) || *joined.span(1) != (opSpan{pos: 6, n: 1, op: 5}) {
		t.Fatalf("appendShifted: %+v", joined.chunks)
	}
	if op, ok := joined.at(4); !ok || op != 5 {
		t.Fatalf("appendShifted: at(4) = %d, %v", op, ok)
	}
	if _, ok := joined.at(5); ok {
		t.Fatal("appendShifted: at(5) set")
	}
}
