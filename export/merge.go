package export

import (
	"bytes"
	"encoding/binary"
	"slices"

	"github.com/sptool/sptool/savepoint"
)

// keyRun is a stretch of consecutive stored rows of one operator that are
// already in export order among themselves: rows of one key group and
// slot (sorted by user key, as the stored keys share the prefix), or rows
// without a slot separator (slot "<raw>", sorted by the whole key).
type keyRun struct {
	op         uint64
	start, end int    // stream rows [start, end)
	slot       []byte // as entry.slot gives it
	sep        bool   // the rows have a separator (their slot is a real one)
}

// mergeRuns returns the runs of a strictly sorted snapshot, or nil when
// there are so many (short runs, little to gain) that sorting is better.
// In sorted rows the keys sharing a prefix up to the slot separator are
// consecutive, so the end of such a run is found by binary search; rows
// without a separator are scanned. release is called every so many rows.
func mergeRuns(rows *savepoint.Cursor, n int, release func()) []keyRun {
	var runs []keyRun
	limit := max(1024, n/16)
	next := 0
	for i := 0; i < n; {
		if i >= next {
			release()
			next = i + 1<<18
		}
		op, key := rows.Op(i), rows.Key(i)
		sep := separator(key)
		r := keyRun{op: op, start: i, sep: sep >= 0}
		e := entry{key: key, sep: sep}
		r.slot = e.slot()
		j := i + 1
		if r.sep {
			prefix := key[:sep+1]
			j += savepoint.Gallop(n-j, func(x int) bool {
				return rows.Op(j+x) != op || !bytes.HasPrefix(rows.Key(j+x), prefix)
			})
		} else {
			for j < n && rows.Op(j) == op && separator(rows.Key(j)) < 0 {
				j++
			}
		}
		r.end = j
		runs = append(runs, r)
		if len(runs) > limit {
			return nil
		}
		i = j
	}
	return runs
}

// singleMerged is single for a file whose rows are strictly increasing in
// (op, key), so it holds no duplicates: instead of sorting every row into
// export order it merges, operator by operator and slot by slot, the runs
// of rows already in that order (one a key group), reading each run's rows
// in order through a savepoint.RowReader of its own (through the map, the
// runs of a slot advancing together would keep a large part of the file
// resident). It returns false, having done nothing, when the file is not such a
// file or its runs are too many.
func (p *pipeline) singleMerged(f *savepoint.File, perFile bool, st *savepoint.UnionStats) (bool, error) {
	if _, strict := f.Snapshot.Order(); !strict {
		return false, nil
	}
	rows := f.Snapshot.NewCursor()
	n := rows.Len()
	runs := mergeRuns(rows, n, f.ReleasePages)
	if runs == nil && n > 0 {
		return false, nil
	}
	f.ReleasePages()
	if !perFile {
		*st = savepoint.UnionStats{Files: 1, StoredRows: n}
	}
	e := new(entry) // one allocation: the sink takes a pointer
	e.subtask = int32(f.Subtask)
	var h runHeap
	h.rows = rows
	emitted := 0
	for lo := 0; lo < len(runs); {
		hi := lo + 1
		for hi < len(runs) && runs[hi].op == runs[lo].op {
			hi++
		}
		p.res.Operators++
		op := runs[lo:hi]
		// Export order within an operator: slot, user key, key.
		slices.SortStableFunc(op, func(a, b keyRun) int { return bytes.Compare(a.slot, b.slot) })
		for g := 0; g < len(op); {
			h2 := g + 1
			for h2 < len(op) && bytes.Equal(op[h2].slot, op[g].slot) {
				h2++
			}
			p.res.Slots++
			if err := h.reset(op[g:h2]); err != nil {
				return true, err
			}
			for h.len() > 0 {
				if emitted&0xFFFF == 0 {
					if err := p.ctx.Err(); err != nil {
						return true, err
					}
					if emitted&(1<<18-1) == 0 {
						f.ReleasePages() // what was read stays cached, not resident
					}
				}
				r := h.peek()
				e.key, e.value, e.sep = r.Key, r.Value, separator(r.Key)
				if err := p.sink.add(r.Op, e); err != nil {
					return true, err
				}
				if err := h.advance(); err != nil {
					return true, err
				}
				p.res.Rows++
				emitted++
			}
			g = h2
		}
		lo = hi
	}
	if !perFile {
		st.Rows = int(p.res.Rows)
	}
	return true, nil
}

// runHeap merges runs of one slot: a min-heap of the runs' next rows by
// (user key, key). Each run is read through a RowReader of its own. The
// heap holds run numbers, so a sift moves one int per level; each run's
// next row caches the first 8 bytes of its user key as an integer, which
// decides most comparisons (8-byte keys: all but ties).
type runHeap struct {
	rows *savepoint.Cursor
	heap []int32 // run numbers, a min-heap
	runs []mergeRun
	pool []*savepoint.RowReader // every reader made, for the next slot
}

// mergeRun is a run being merged and its next row.
type mergeRun struct {
	next, end int // the next row and the run's end
	head      savepoint.Row
	uk        []byte // head's user key
	ukp       uint64 // uk's first 8 bytes, big-endian, zero-padded
	reader    *savepoint.RowReader
}

func (h *runHeap) reset(runs []keyRun) error {
	h.heap, h.runs = h.heap[:0], h.runs[:0]
	for k, r := range runs {
		if k == len(h.pool) {
			h.pool = append(h.pool, new(savepoint.RowReader))
		}
		h.runs = append(h.runs, mergeRun{next: r.start, end: r.end, reader: h.pool[k]})
		h.heap = append(h.heap, int32(k))
		if err := h.load(&h.runs[k]); err != nil {
			return err
		}
	}
	for i := len(h.heap)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
	return nil
}

func (h *runHeap) len() int { return len(h.heap) }

// load reads run m's next row.
func (h *runHeap) load(m *mergeRun) error {
	r, err := m.reader.Row(h.rows, m.next)
	if err != nil {
		return err
	}
	e := entry{key: r.Key, sep: separator(r.Key)}
	m.head, m.uk = r, e.userKey()
	var b [8]byte
	copy(b[:], m.uk)
	m.ukp = binary.BigEndian.Uint64(b[:])
	return nil
}

// less orders runs a and b by their next rows. Zero-padded prefixes that
// differ order the user keys as bytes.Compare does; equal ones are
// compared in full.
func (h *runHeap) less(a, b int32) bool {
	x, y := &h.runs[a], &h.runs[b]
	if x.ukp != y.ukp {
		return x.ukp < y.ukp
	}
	if c := bytes.Compare(x.uk, y.uk); c != 0 {
		return c < 0
	}
	return bytes.Compare(x.head.Key, y.head.Key) < 0
}

func (h *runHeap) down(i int) {
	n := len(h.heap)
	for {
		m := i
		if l := 2*i + 1; l < n && h.less(h.heap[l], h.heap[m]) {
			m = l
		}
		if r := 2*i + 2; r < n && h.less(h.heap[r], h.heap[m]) {
			m = r
		}
		if m == i {
			return
		}
		h.heap[i], h.heap[m] = h.heap[m], h.heap[i]
		i = m
	}
}

// peek returns the least next row (valid until advance).
func (h *runHeap) peek() savepoint.Row { return h.runs[h.heap[0]].head }

// advance moves past the least next row.
func (h *runHeap) advance() error {
	m := &h.runs[h.heap[0]]
	m.next++
	if m.next < m.end {
		if err := h.load(m); err != nil {
			return err
		}
	} else {
		last := len(h.heap) - 1
		h.heap[0] = h.heap[last]
		h.heap = h.heap[:last]
	}
	if len(h.heap) > 0 {
		h.down(0)
	}
	return nil
}
