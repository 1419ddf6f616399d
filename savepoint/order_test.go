package savepoint

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// Order finds the one inversion or duplicate wherever it is: inside a part,
// at a batch boundary, at the boundary between the parallel parts.
func TestOrder(t *testing.T) {
	defer func(v int) { keyBlock = v }(keyBlock)
	blocks := []int{4096, 7}
	if testing.Short() {
		// The race detector's run, where the two took 65 s: blocks of 7
		// rows, whose edges fall everywhere.
		blocks = blocks[1:]
	}
	for _, block := range blocks {
		keyBlock = block // keys read in blocks of this many rows
		testOrder(t)
	}
}

func testOrder(t *testing.T) {
	const n = 200_000
	base := func() []Row {
		rows := make([]Row, n)
		for i := range rows {
			rows[i] = Row{Op: uint64(i / 50_000), Key: []byte(fmt.Sprintf("k%07d", i)), Value: []byte{1}}
		}
		return rows
	}
	parts := min(runtime.NumCPU(), n/(1<<16))
	boundary := n / max(parts, 2) // the first row of the second part (on two or more cores)
	swap := func(i int) func([]Row) {
		return func(r []Row) { r[i-1], r[i] = r[i], r[i-1] }
	}
	dup := func(i int) func([]Row) {
		return func(r []Row) { r[i] = Row{Op: r[i-1].Op, Key: r[i-1].Key, Value: []byte{2}} }
	}
	cases := []struct {
		name           string
		change         func([]Row)
		sorted, strict bool
	}{
		{"sorted", func([]Row) {}, true, true},
		{"inversion inside", swap(1234), false, false},
		{"inversion at the batch boundary", swap(70_000), false, false},
		{"inversion at the part boundary", swap(boundary), false, false},
		{"inversion at a block boundary", swap(keyBlock * 3), false, false},
		{"duplicate at a block boundary", dup(keyBlock * 5), true, false},
		{"operator out of order", func(r []Row) { r[n-1].Op = 0 }, false, false},
		{"duplicate", dup(99_999), true, false},
		{"duplicate at the part boundary", dup(boundary), true, false},
	}
	for _, tc := range cases {
		for _, columnar := range []bool{true, false} {
			rows := base()
			tc.change(rows)
			var buf bytes.Buffer
			if err := EncodeStreamAsIs(&buf, nil, rows, []int{70_000, 130_000}); err != nil {
				t.Fatal(err)
			}
			s, err := DecodeSnapshot(buf.Bytes(), ReadOptions{Columnar: columnar})
			if err != nil {
				t.Fatal(err)
			}
			if sorted, strict := s.Order(); sorted != tc.sorted || strict != tc.strict {
				t.Errorf("%s (columnar %v): sorted %v strict %v, want %v %v", tc.name, columnar, sorted, strict, tc.sorted, tc.strict)
			}
		}
	}
}

// prefixRunEnd ends a run where a plain scan does, for every row and end
// of a set of rows in no order (keys of a few bytes from a small alphabet:
// empty keys, keys of one byte, separators first and last, rows that share
// an operator and key group but not a slot) and of the same rows sorted.
func TestPrefixRunEnd(t *testing.T) {
	alphabet := []byte{1, 2, '|', 'a'}
	var rows []Row
	for op := uint64(1); op <= 2; op++ {
		for n := 0; n <= 4; n++ {
			for i := 0; i < 1<<(2*n); i++ {
				key := make([]byte, n)
				for j := range key {
					key[j] = alphabet[i>>(2*j)&3]
				}
				rows = append(rows, Row{Op: op, Key: key})
			}
		}
	}
	shuffled := slices.Clone(rows)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	// Four rows of one slot next to each other, which the shuffle seldom
	// leaves, and an empty key last (no byte after the key before it).
	shuffled = append(shuffled, Row{Op: 1, Key: []byte("\x02a|1")}, Row{Op: 1, Key: []byte("\x02a|2")}, Row{Op: 1, Key: []byte("\x02a|")}, Row{Op: 1, Key: []byte("\x02a|3")}, Row{Op: 1})
	slices.SortFunc(rows, func(a, b Row) int { return compareRows(a.Op, a.Key, b.Op, b.Key) })
	for _, c := range []struct {
		name   string
		rows   []Row
		sorted bool
	}{{"shuffled", shuffled, false}, {"sorted", rows, true}, {"sorted, scanned", rows, false}} {
		ops := make([]uint64, len(c.rows))
		offs := make([]int32, 1, len(c.rows)+1)
		var keys []byte
		for i, r := range c.rows {
			ops[i] = r.Op
			keys = append(keys, r.Key...)
			offs = append(offs, int32(len(keys)))
		}
		runs := 0
		for x := range c.rows {
			for _, hi := range []int{x + 1, min(x+2, len(c.rows)), min(x+5, len(c.rows)), len(c.rows)} {
				want := x + 1
				if sep := separatorIndex(c.rows[x].Key); sep >= 0 {
					for want < hi && c.rows[want].Op == c.rows[x].Op && bytes.HasPrefix(c.rows[want].Key, c.rows[x].Key[:sep+1]) {
						want++
					}
				}
				if got := prefixRunEnd(ops, offs, keys, x, hi, c.sorted); got != want {
					t.Fatalf("%s: row %d (op %d, key %q), rows before %d: run ends at %d, want %d", c.name, x, c.rows[x].Op, c.rows[x].Key, hi, got, want)
				}
				if want > x+1 {
					runs++
				}
			}
		}
		if runs == 0 {
			t.Fatalf("%s: no run of more than one row: the test tests nothing", c.name)
		}
	}
}
