package cli

import (
	"bytes"
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sptool/sptool/savepoint"
)

// catFile is one file as cat reads it: the rows of cur to print, in
// canonical order.
type catFile struct {
	cur *savepoint.Cursor
	// order lists the rows of cur to print, in order; nil prints every
	// row of cur as stored.
	order []uint32
	// file is the file cur reads: the one given, or its sorted copy.
	file *savepoint.File
	copy *savepoint.Spilled // the sorted copy, nil without one
	// rows, when not nil, are the rows of order, copied: printed from
	// memory, not read through the map.
	rows []savepoint.Row
	// release, when not 0, is how many rows are read between two
	// releases of the file's pages (else File.ReleaseRows).
	release int
}

// close removes the sorted copy, if there is one.
func (c *catFile) close() {
	if c.copy != nil {
		c.copy.Close()
		c.copy = nil
	}
}

// catFirstRows is the most rows a --limit without --where finds in one
// pass over a file out of canonical order, rather than sorting the file
// (each row held with a copy of its key).
var catFirstRows = 1 << 14

// openCatFile prepares f for cat, when cat reaches it (a tree's files are
// sorted one at a time, each copy removed before the next file's sort, so
// the first rows come out after one file's sort, not the whole tree's):
//   - a file in canonical order is read as stored;
//   - one out of order and of fewer than catSpillRows rows through an
//     index sorted in memory;
//   - a larger one through a sorted copy in tempDir (every row kept,
//     duplicates in stream order), in bounded memory.
//
// pick, when not nil, chooses the rows that may be printed (--op and
// --slot): the others are left out of the sort. first, when above 0, is
// how many rows are still to be printed when nothing but pick chooses
// them (a --limit without --where): up to catFirstRows, the first rows in
// order are found in one pass over the file, and nothing is sorted but
// them.
func openCatFile(ctx context.Context, f *savepoint.File, tempDir string, pick func(op uint64, key []byte) bool, first int) (*catFile, error) {
	cur := f.Snapshot.NewCursor()
	if sorted, _ := f.Snapshot.Order(); sorted {
		return &catFile{cur: cur, file: f}, nil
	}
	n := cur.Len()
	if first > 0 && first <= catFirstRows {
		held, err := firstRows(ctx, f, pick, first)
		if err != nil {
			return nil, err
		}
		cf := &catFile{cur: cur, file: f, order: make([]uint32, len(held))}
		for i, r := range held {
			cf.order[i] = r.row
		}
		if copyValues(f, cur, held) {
			cf.rows = make([]savepoint.Row, len(held))
			for i, r := range held {
				cf.rows[i] = savepoint.Row{Op: r.op, Key: r.key, Value: r.value}
			}
		} else if f.ReleaseRows() < n {
			// Read where they are stored, in canonical order, at random:
			// each fault maps a whole folio of the page cache around its
			// row, up to megabytes (64 rows of a 390 MB file left 190 MB
			// of it resident), so the pages go after every row.
			cf.release = 1
		}
		return cf, nil
	}
	if n >= catSpillRows {
		sorted, err := savepoint.SortSpilled(cur, savepoint.SpillOptions{
			Dir:            tempDir,
			Release:        f.ReleasePages,
			ReleaseRows:    f.ReleaseRows(),
			KeepDuplicates: true,
			Only:           pick,
			Stop:           func() bool { return ctx.Err() != nil },
		})
		switch {
		case err == nil:
			cf := &catFile{file: sorted.File(f), copy: sorted}
			cf.cur = cf.file.Snapshot.NewCursor()
			return cf, nil
		case errors.Is(err, context.Canceled):
			return nil, ctx.Err()
		case n >= savepoint.InPlaceRows || savepoint.InputFault(err):
			return nil, fmt.Errorf("%s: sort the rows: %w", f.Path, err)
		}
		// A file that fits in memory whose sort failed (no temporary
		// directory, no room in it) is read as a smaller one is.
	}
	var at []uint32 // the rows pick chooses (nil: every row)
	if pick != nil {
		for i := range n {
			if pick(cur.Op(i), cur.Key(i)) {
				at = append(at, uint32(i))
			}
		}
		n = len(at)
	}
	order := savepoint.SortOrder(n, func(i int) (uint64, []byte) {
		if at != nil {
			i = int(at[i])
		}
		return cur.Op(i), cur.Key(i)
	})
	if at != nil {
		for j, p := range order {
			order[j] = at[p]
		}
	}
	return &catFile{cur: cur, order: order, file: f}, nil
}

// firstRows returns the first k rows of f in canonical order among those
// pick chooses (every row, when nil), in that order: rows of one operator
// and key in stream order, as a stable sort leaves them. One pass over the
// keys (read in blocks, not through the map) keeps the k first seen so far
// in a heap, each with a copy of its key.
func firstRows(ctx context.Context, f *savepoint.File, pick func(op uint64, key []byte) bool, k int) ([]heldRow, error) {
	h := &rowHeap{rows: make([]heldRow, 0, min(k, f.Snapshot.NumRows()))}
	var err error
	pace := savepoint.NewPacer(0, f.ReleaseRows())
	f.Snapshot.EachKey(func(i int, op uint64, key []byte) bool {
		if pace.Due(i) {
			if err = ctx.Err(); err != nil {
				return false
			}
		}
		if pick != nil && !pick(op, key) {
			return true
		}
		r := heldRow{op: op, key: key, row: uint32(i)}
		switch {
		case len(h.rows) < k:
			r.key = bytes.Clone(key)
			heap.Push(h, r)
		case r.before(&h.rows[0]):
			r.key = append(h.rows[0].key[:0], key...) // (the copy of the row let go)
			h.rows[0] = r
			heap.Fix(h, 0)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(h.rows, func(a, b heldRow) int {
		if a.before(&b) {
			return -1
		}
		return 1 // (no two rows are the same row)
	})
	return h.rows, nil
}

// catHeldValues bounds the bytes of values copyValues copies.
var catHeldValues = 32 << 20

// copyValues copies the values of the rows held (of f, which cur reads)
// into them, reading them in stored order, and reports whether it did: not
// when they add up to more than catHeldValues. In stored order, rows near
// each other share the folios of the page cache that each fault maps (a
// whole folio around the row, up to megabytes): 16,384 rows of a 1.2M-row
// file in no order took 1.2-1.5 s read in canonical order, a fault or more
// a row with the pages released after each, against about 0.1 s so. The
// pages are released every 64 rows.
func copyValues(f *savepoint.File, cur *savepoint.Cursor, held []heldRow) bool {
	byRow := make([]*heldRow, len(held))
	for i := range held {
		byRow[i] = &held[i]
	}
	slices.SortFunc(byRow, func(a, b *heldRow) int { return cmp.Compare(a.row, b.row) })
	total := 0
	for i, r := range byRow {
		if i%64 == 63 {
			f.ReleasePages()
		}
		v := cur.Value(int(r.row))
		if total += len(v); total > catHeldValues {
			for _, r := range byRow[:i] {
				r.value = nil
			}
			f.ReleasePages()
			return false
		}
		r.value = bytes.Clone(v)
	}
	f.ReleasePages()
	return true
}

// heldRow is a row firstRows holds: its operator, a copy of its key, and
// its index; and a copy of its value once copyValues read it.
type heldRow struct {
	op         uint64
	key, value []byte
	row        uint32
}

// before reports whether r comes before s in canonical order, rows of one
// operator and key in stream order.
func (r *heldRow) before(s *heldRow) bool {
	if r.op != s.op {
		return r.op < s.op
	}
	if c := bytes.Compare(r.key, s.key); c != 0 {
		return c < 0
	}
	return r.row < s.row
}

// rowHeap holds rows with the last in canonical order on top.
type rowHeap struct{ rows []heldRow }

func (h *rowHeap) Len() int           { return len(h.rows) }
func (h *rowHeap) Less(i, j int) bool { return h.rows[j].before(&h.rows[i]) }
func (h *rowHeap) Swap(i, j int)      { h.rows[i], h.rows[j] = h.rows[j], h.rows[i] }
func (h *rowHeap) Push(x any)         { h.rows = append(h.rows, x.(heldRow)) }
func (h *rowHeap) Pop() any {
	x := h.rows[len(h.rows)-1]
	h.rows = h.rows[:len(h.rows)-1]
	return x
}
