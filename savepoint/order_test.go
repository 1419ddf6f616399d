package savepoint

import (
	"bytes"
	"fmt"
	"runtime"
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
