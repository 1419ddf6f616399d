package savepoint

import (
	"encoding/binary"
	"sort"
	"unsafe"
)

// Regular stretches of a batch's columns.
//
// The writer needs a batch's offsets three more times after the open has
// read and checked them: to size the output, to bound the key and value
// bytes of each run of rows it copies, and to write the output's offsets;
// and it copies the operators. In a canonical file the keys of a run of
// rows of one slot usually all have one length (an int64 key behind the
// slot's prefix), values often do too, and the operators change only
// between operators' rows. The pass at open notes those stretches as it
// reads (stepCol, opCol) when there are few of them, and the writer then
// computes the offsets and repeats the operators instead of reading them:
// 320 MB less read for a 10M-row purge, of 950 MB.

// stepRun is a stretch of a batch's rows, from row on, whose keys (or
// values) all have length step; off is where row's starts.
type stepRun struct {
	row  int
	off  int32
	step int32
}

// stepCol is a batch's offsets of keys (or values) as stretches of equal
// lengths, in row order, the first from row 0 and the last up to the
// batch's end.
type stepCol struct{ runs []stepRun }

// opRun is a stretch of a batch's rows, from row on, of operator op.
type opRun struct {
	row int
	op  uint64
}

// opCol is a batch's operators as stretches of one operator, in row
// order, the first from row 0.
type opCol struct{ runs []opRun }

// stepHint remembers the stretch of the last lookup of one caller, which
// mostly goes forward through a batch.
type stepHint struct {
	col *stepCol
	at  int
}

// find returns the index of the stretch holding row x: the last whose row
// is at most x.
func (c *stepCol) find(x int, h *stepHint) int {
	k := 0
	if h.col == c {
		k = h.at
	}
	runs := c.runs
	switch {
	case runs[k].row <= x && (k+1 == len(runs) || runs[k+1].row > x):
	case k+1 < len(runs) && runs[k+1].row <= x && (k+2 == len(runs) || runs[k+2].row > x):
		k++
	default:
		k = sort.Search(len(runs), func(i int) bool { return runs[i].row > x }) - 1
	}
	if h.col != c {
		// Stored only when it changes: a pointer store while the
		// collector marks goes through its write barrier, and the sizing
		// of a 10M-row purge's output made 400,000 of them.
		h.col = c
	}
	h.at = k
	return k
}

// at returns offsets[x], for x from 0 to the batch's rows.
func (c *stepCol) at(x int, h *stepHint) int32 {
	r := c.runs[c.find(x, h)]
	return r.off + int32(x-r.row)*r.step
}

// stepsOf returns the stretches of the column whose offsets are offsets
// (b.KeyOffs or b.ValOffs), or nil when the open noted none.
func (b *Batch) stepsOf(offsets []int32) *stepCol {
	switch p := unsafe.SliceData(offsets); {
	case p == nil:
		return nil
	case p == unsafe.SliceData(b.KeyOffs):
		return b.keySteps
	case p == unsafe.SliceData(b.ValOffs):
		return b.valSteps
	}
	return nil
}

// stepOffsets writes the end offsets of rows [lo, lo+n) of a column of
// stretches c (n at least 1), moved so that row lo starts at off, and
// returns the last; h is the caller's hint.
func (s *sink) stepOffsets(c *stepCol, h *stepHint, lo, n int, off uint32) uint32 {
	k := c.find(lo, h)
	for x, end := lo, lo+n; x < end; k++ {
		r := c.runs[k]
		to := end
		if k+1 < len(c.runs) {
			to = min(to, c.runs[k+1].row)
		}
		step := uint32(r.step)
		for x < to {
			b := s.reserve(to-x, 4)
			if littleEndian && uintptr(unsafe.Pointer(unsafe.SliceData(b)))%4 == 0 {
				w := wordsOf[uint32](b)
				for j := range w {
					off += step
					w[j] = off
				}
			} else {
				for j := 0; j < len(b); j += 4 {
					off += step
					binary.LittleEndian.PutUint32(b[j:j+4], off)
				}
			}
			x += len(b) / 4
		}
		h.col, h.at = c, k
	}
	return off
}

// find returns the index of the stretch holding row x.
func (c *opCol) find(x int) int {
	return sort.Search(len(c.runs), func(i int) bool { return c.runs[i].row > x }) - 1
}

// writeOpRuns writes the operators of rows [lo, lo+n) of a batch whose
// operators are c.
func (s *sink) writeOpRuns(c *opCol, lo, n int) {
	for k, x, end := c.find(lo), lo, lo+n; x < end; k++ {
		to := end
		if k+1 < len(c.runs) {
			to = min(to, c.runs[k+1].row)
		}
		op := c.runs[k].op
		for x < to {
			// The operator, then copies of what is filled, doubling.
			b := s.reserve(to-x, 8)
			binary.LittleEndian.PutUint64(b, op)
			for j := 8; j < len(b); j *= 2 {
				copy(b[j:], b[:j])
			}
			x += len(b) / 8
		}
	}
}

// reserve appends to the sink's buffer room for up to n items of width
// bytes (at least one), flushing it first when it has no room for one,
// and returns the room, to be filled.
func (s *sink) reserve(n, width int) []byte {
	room := (cap(s.buf) - len(s.buf)) / width
	if room == 0 {
		s.flush()
		room = (cap(s.buf) - len(s.buf)) / width
	}
	at := len(s.buf)
	s.buf = s.buf[:at+width*min(room, n)]
	return s.buf[at:]
}

// run is a stretch a runBuilder notes.
type run interface {
	stepRun | opRun
	first() int // the stretch's first row
}

func (r stepRun) first() int { return r.row }
func (r opRun) first() int   { return r.row }

// runBuilder notes the stretches of a column of one range of a batch as
// the open reads it (stepRun or opRun), and gives up beyond max of them,
// or as soon as they come at a rate that would reach max (see add).
type runBuilder[R run] struct {
	runs []R
	max  int
	over bool
}

// denseAfter is the fewest stretches a runBuilder notes before it judges
// their rate.
const denseAfter = 4096

// add notes run r, unless the last one noted has its length (or operator):
// r then continues it.
//
// Stretches shorter than 8 rows on average are not worth noting (the
// writer reads such offsets and operators as fast as it computes them),
// and max is a range's rows / 8: each time the array is full (from
// denseAfter stretches on), a builder whose stretches so far average
// fewer than 8 rows gives up. A file in clink's own order (rows shuffled,
// the operator and the key's length changing at almost every row) gave
// up only at max, after allocating twice its array by doubling: about
// 200 MB for 10M rows, every page of it a fault, and the collections that
// the allocations triggered.
func (rb *runBuilder[R]) add(r R, same func(a, b R) bool) {
	if rb.over {
		return
	}
	n := len(rb.runs)
	if n > 0 && same(rb.runs[n-1], r) {
		return
	}
	if n == rb.max || n >= denseAfter && n == cap(rb.runs) && 8*n > r.first()-rb.runs[0].first() {
		rb.over, rb.runs = true, nil
		return
	}
	rb.runs = append(rb.runs, r)
}

// stepBuilder notes stretches of equal lengths.
type stepBuilder struct{ runBuilder[stepRun] }

func sameStep(a, b stepRun) bool { return a.step == b.step }

// add notes that row's key (or value) starts at off and is step long.
func (sb *stepBuilder) add(row int, off, step int32) {
	sb.runBuilder.add(stepRun{row, off, step}, sameStep)
}

// ascendingSteps is ascending (offs, following from, never decrease and
// end at most at max) for the ends of the rows from row on, noting their
// stretches of equal lengths in one pass.
func (sb *stepBuilder) ascendingSteps(row int, offs []int32, from, max int32) bool {
	if sb.over {
		return ascending(offs, from, max)
	}
	step := int32(-1)
	if n := len(sb.runs); n > 0 {
		step = sb.runs[n-1].step
	}
	for j, o := range offs {
		if o < from {
			return false
		}
		if o-from != step {
			step = o - from
			if sb.add(row+j, from, step); sb.over {
				return ascending(offs[j+1:], o, max)
			}
		}
		from = o
	}
	return from <= max
}

// opBuilder notes stretches of one operator.
type opBuilder struct{ runBuilder[opRun] }

func sameOp(a, b opRun) bool { return a.op == b.op }

// add notes that row is of operator op.
func (ob *opBuilder) add(row int, op uint64) { ob.runBuilder.add(opRun{row, op}, sameOp) }
