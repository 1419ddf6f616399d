package transform

import (
	"math/bits"
	"sort"
	"sync/atomic"

	"github.com/sptool/sptool/internal/prefault"
)

// rowIndex maps the output rows of a file to the input rows they are: the
// input index of each output row. Processing keeps a subsequence of the
// input in order, so it is stored as runs of consecutive input rows (a
// filter over millions of sorted rows leaves a few runs); a file whose rows
// had to be sorted gets one index per row.
type rowIndex struct {
	spans []span    // runs of consecutive input rows, in output order
	ends  []uint32  // ends[k]: the output position just after spans[k]
	dense []uint32  // when not nil: the input index of each output row
	hints lazyHints // the span last found, per region of rows
}

// regionHints remember, for a search by row over runs of rows, the run
// last found, one per region of rows: 64 regions over the file's rows
// (see at). The writer's goroutines each walk a range of rows in order,
// and one hint for all of them was a miss, and a binary search, for one
// whenever the other had moved it: the sizing pass of a 10M-row purge
// took 17-21 ms on one goroutine, 12-19 on two with one hint, 11-14 with
// one a region. Each is on a cache line of its own.
type regionHints [64]struct {
	atomic.Int32
	_ [60]byte
}

// minHintShift sets the smallest region of rows that share a hint: 1024
// rows.
const minHintShift = 10

// at returns the hint for row i of rows rows. The regions are a 64th of
// the rows (256K rows of a 10M-row file), so that two of the writer's
// goroutines, whose ranges are at least a 16th of the rows (an eighth on
// two cores), hardly ever share one: with regions of a fixed 256K rows, a
// 1M-row file's ranges of 125K rows shared them, and a purge of 100,000
// keys there spent 7% of its CPU searching for runs.
func (h *regionHints) at(i, rows int) *atomic.Int32 {
	shift := max(minHintShift, bits.Len(uint(rows))-6)
	return &h[i>>shift&63].Int32
}

// lazyHints are region hints made at the first search: a rescale keeps
// an index for each pair of an old and a new file of a group (16,384 of
// them between 128 subtasks and 128), most of them never searched, and
// 4 KiB of hints in each would be 64 MiB.
type lazyHints struct{ p atomic.Pointer[regionHints] }

// at returns the hint for row i of rows rows (see regionHints.at).
func (l *lazyHints) at(i, rows int) *atomic.Int32 {
	h := l.p.Load()
	if h == nil {
		h = new(regionHints)
		if !l.p.CompareAndSwap(nil, h) {
			h = l.p.Load()
		}
	}
	return h.at(i, rows)
}

type span struct{ start, n uint32 }

// Len returns the number of output rows.
func (x *rowIndex) Len() int {
	if x.dense != nil {
		return len(x.dense)
	}
	if len(x.ends) == 0 {
		return 0
	}
	return int(x.ends[len(x.ends)-1])
}

// appendRun appends input rows [start, start+n) to the output.
func (x *rowIndex) appendRun(start, n int) {
	if n == 0 {
		return
	}
	end := uint32(x.Len() + n)
	if k := len(x.spans) - 1; k >= 0 && int(x.spans[k].start+x.spans[k].n) == start {
		x.spans[k].n += uint32(n)
		x.ends[k] = end
		return
	}
	// Input out of order makes a span of nearly every row: double, as
	// append grows a large slice by a quarter at a time, and the copies
	// (into memory touched for the first time) would cost more than the
	// spans.
	x.spans = prefault.Grow(x.spans, 1)
	x.ends = prefault.Grow(x.ends, 1)
	x.spans = append(x.spans, span{uint32(start), uint32(n)})
	x.ends = append(x.ends, end)
}

// appendIndex appends the output rows of y (which has no dense index).
func (x *rowIndex) appendIndex(y *rowIndex) {
	if len(y.spans) == 0 {
		return
	}
	x.appendRun(int(y.spans[0].start), int(y.spans[0].n)) // may extend x's last span
	base := uint32(x.Len()) - y.ends[0]
	// Grown by prefault.Grow: a range of rows in clink's hash-map order has
	// about a span a row, and append's growth a quarter at a time copies
	// them into pages faulted in one at a time.
	x.spans = append(prefault.Grow(x.spans, len(y.spans)-1), y.spans[1:]...)
	x.ends = prefault.Grow(x.ends, len(y.ends)-1)
	for _, e := range y.ends[1:] {
		x.ends = append(x.ends, e+base)
	}
}

// span returns the span holding output row i, remembering it: access is
// mostly sequential.
func (x *rowIndex) span(i int) int {
	h := x.hints.at(i, x.Len())
	k := int(h.Load())
	if k < len(x.ends) && uint32(i) < x.ends[k] && (k == 0 || uint32(i) >= x.ends[k-1]) {
		return k
	}
	if k+1 < len(x.ends) && uint32(i) >= x.ends[k] && uint32(i) < x.ends[k+1] {
		k++
	} else {
		k = sort.Search(len(x.ends), func(j int) bool { return x.ends[j] > uint32(i) })
	}
	h.Store(int32(k))
	return k
}

// at returns the input index of output row i.
func (x *rowIndex) at(i int) int {
	if x.dense != nil {
		return int(x.dense[i])
	}
	k := x.span(i)
	return int(x.spans[k].start) + i - x.spanStart(k)
}

func (x *rowIndex) spanStart(k int) int {
	if k == 0 {
		return 0
	}
	return int(x.ends[k-1])
}

// run returns the input index of output row i and how many output rows
// from i are consecutive input rows.
func (x *rowIndex) run(i int) (start, n int) {
	if x.dense != nil {
		n = 1
		for i+n < len(x.dense) && x.dense[i+n] == x.dense[i]+uint32(n) {
			n++
		}
		return int(x.dense[i]), n
	}
	k := x.span(i)
	off := i - x.spanStart(k)
	return int(x.spans[k].start) + off, int(x.spans[k].n) - off
}

// makeDense gives x one index per row, for random access by output row.
func (x *rowIndex) makeDense() {
	if x.dense != nil {
		return
	}
	d := make([]uint32, 0, x.Len())
	for _, s := range x.spans {
		for j := range s.n {
			d = append(d, s.start+j)
		}
	}
	x.dense, x.spans, x.ends = d, nil, nil
}
