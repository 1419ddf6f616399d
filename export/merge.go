package export

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"
	"slices"

	"github.com/sptool/sptool/internal/gallop"
	"github.com/sptool/sptool/savepoint"
)

// keyRun is a stretch of consecutive rows of one operator in one source's
// canonical order that are already in export order among themselves: rows
// of one key group and slot (sorted by user key, as the keys share the
// prefix), or rows without a slot separator (slot "<raw>", sorted by the
// whole key).
type keyRun struct {
	op         uint64
	src        int    // the source (mergeSource) the rows are in
	start, end int    // its positions [start, end)
	slot       []byte // as entry.slot gives it
	sep        bool   // the rows have a separator (their slot is a real one)
	keyed      bool   // the rows are keyed (first key byte below 128)
}

// mergeSource is one file's rows in canonical order (op, key): the stream
// rows themselves when they are in that order, read through a
// savepoint.RowReader per run, or the positions of an index into them.
type mergeSource struct {
	file *savepoint.File
	rows *savepoint.Cursor
	idx  []uint32 // stream row of each position; nil: positions are stream rows
	n    int      // positions
}

func (s *mergeSource) op(pos int) uint64 {
	if s.idx != nil {
		return s.rows.Op(int(s.idx[pos]))
	}
	return s.rows.Op(pos)
}

func (s *mergeSource) key(pos int) []byte {
	if s.idx != nil {
		return s.rows.Key(int(s.idx[pos]))
	}
	return s.rows.Key(pos)
}

// appendRuns appends the runs of source src to runs and returns them, or
// nil when they pass limit (short runs, little to gain: sorting is
// better). In canonical order the keys sharing a prefix up to the slot
// separator are consecutive, so the end of such a run is found by binary
// search; rows without a separator are scanned. The source's file pages are
// released every so many rows. The runs' slot names are slots' copies: a
// name in the map would fault its page (and, through fault-around, its
// neighbours) back in whenever the runs are sorted.
func appendRuns(runs []keyRun, s *mergeSource, src, limit int, slots slotNames) []keyRun {
	// And once it is done with the source: a tree of 64 files of 156K
	// rows each, none reaching the release every 256K rows, kept the pages
	// its binary searches faulted in, 290 MB of the 372 MB tree.
	defer s.file.ReleasePages()
	release := savepoint.NewPacer(0, s.file.ReleaseRows())
	for i := 0; i < s.n; {
		if release.Due(i) {
			s.file.ReleasePages()
		}
		op, key := s.op(i), s.key(i)
		sep := separator(key)
		r := keyRun{op: op, src: src, start: i, sep: sep >= 0, keyed: len(key) > 0 && key[0] < savepoint.NumKeyGroups}
		e := entry{key: key, sep: sep}
		r.slot = slots.intern(e.slot())
		j := i + 1
		if r.sep {
			prefix := key[:sep+1]
			j += gallop.Search(s.n-j, func(x int) bool {
				return s.op(j+x) != op || !bytes.HasPrefix(s.key(j+x), prefix)
			})
		} else {
			// Rows without a separator in one run: the empty key, legacy
			// raw keys (keyed, of key group '_'), operator keys.
			for ; j < s.n && s.op(j) == op; j++ {
				k := s.key(j)
				if separator(k) >= 0 {
					break
				}
				r.keyed = r.keyed || len(k) > 0 && k[0] < savepoint.NumKeyGroups
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

// slotNames interns slot names.
type slotNames map[string][]byte

func (m slotNames) intern(b []byte) []byte {
	if s, ok := m[string(b)]; ok {
		return s
	}
	s := bytes.Clone(b)
	m[string(s)] = s
	return s
}

// runLimit is the most runs merged for n rows: beyond it the runs are so
// short that sorting is better.
func runLimit(n int) int { return max(1024, n/16) }

// singleMerged is single for a file whose rows are strictly increasing in
// (op, key), so it holds no duplicates (perFile: increasing): instead of
// sorting every row into export order it merges the runs of rows already
// in that order (merged). It returns false, having done nothing, when the
// file is not such a file or its runs are too many.
func (p *pipeline) singleMerged(f *savepoint.File, perFile bool, st *savepoint.UnionStats) (bool, error) {
	// perFile keeps duplicates: they are adjacent in a sorted file, in one
	// run, in stream order.
	if sorted, strict := f.Snapshot.Order(); !strict && !(perFile && sorted) {
		return false, nil
	}
	rows := f.Snapshot.NewCursor()
	src := []mergeSource{{file: f, rows: rows, n: rows.Len()}}
	runs := appendRuns(nil, &src[0], 0, runLimit(src[0].n), slotNames{})
	if runs == nil && src[0].n > 0 {
		return false, nil
	}
	f.ReleasePages()
	if !perFile {
		*st = savepoint.UnionStats{Files: 1, StoredRows: src[0].n}
	}
	err := p.merged(src, runs, nil)
	if !perFile {
		st.Rows = int(p.res.Rows)
	}
	return true, err
}

// treeMerged exports the files of sp (a tree, or a file of a tree that its
// subtask does not wholly own) by merging runs, as singleMerged does for one
// file: the runs of every file are merged slot by slot, the copies of one
// (op, key) that several files hold meet in the merge and are resolved as
// Union resolves them (or, perFile, all written, in file order). A file
// whose stream rows are not in canonical order is read through an index in
// that order (4 bytes a row). Nothing else is held but the runs, so a tree
// larger than memory exports in bounded memory where buffering an
// operator's rows would hold all of them. It returns false, having done
// nothing, when the runs are too many.
func (p *pipeline) treeMerged(sp *savepoint.Savepoint, perFile bool, st *savepoint.UnionStats) (bool, error) {
	var srcs []mergeSource
	var stats savepoint.UnionStats
	total := 0
	for _, f := range sp.Files {
		stats.Files++
		if f.Snapshot == nil || f.Snapshot.NumRows() == 0 {
			continue
		}
		stored := f.Snapshot.NumRows()
		total += stored
		stats.StoredRows += stored
		rows := f.Snapshot.NewCursor()
		idx, n := savepoint.CanonicalIndex(rows, !perFile)
		f.ReleasePages()
		stats.FileDuplicates += stored - n
		srcs = append(srcs, mergeSource{file: f, rows: rows, idx: idx, n: n})
	}
	var runs []keyRun
	limit, slots := runLimit(total), slotNames{}
	for i := range srcs {
		if runs = appendRuns(runs, &srcs[i], i, limit, slots); runs == nil {
			return false, nil
		}
	}
	var res *savepoint.Resolver
	if !perFile {
		*st = stats
		res = savepoint.NewResolver(sp, st)
	}
	err := p.merged(srcs, runs, res)
	if res != nil {
		res.Finish()
	}
	return true, err
}

// merged writes the rows of runs (each source's in order) in export order:
// operator by operator and slot by slot it merges the slot's runs,
// reading each run's rows in order through a savepoint.RowReader of its
// own (through the map, the runs of a slot advancing together would keep a
// large part of the file resident). With res, the copies of one (op, key)
// (one a source) are resolved by it; without, every row is written.
func (p *pipeline) merged(srcs []mergeSource, runs []keyRun, res *savepoint.Resolver) error {
	// The runs of each operator, in slot order; a stable sort keeps file
	// order among the runs of one slot, which breaks the merge's ties.
	slices.SortStableFunc(runs, func(a, b keyRun) int {
		if c := cmp.Compare(a.op, b.op); c != 0 {
			return c
		}
		return bytes.Compare(a.slot, b.slot)
	})
	e := new(entry) // one allocation: the sink takes a pointer
	var seen uint8  // the kinds of slot emitted of the current slot's runs (entry.newSlot)
	emit := func(r savepoint.Row, subtask int) error {
		e.key, e.value, e.sep, e.subtask = r.Key, r.Value, separator(r.Key), int32(subtask)
		p.res.Rows++
		p.res.Slots += e.newSlot(&seen)
		return p.sink.add(r.Op, e)
	}
	h := runHeap{srcs: srcs}
	var copies []savepoint.UnionRow
	var taken []int32
	emitted := 0
	release := func() {
		for i := range srcs {
			srcs[i].file.ReleasePages() // what was read stays cached, not resident
		}
	}
	every := math.MaxInt // rows emitted between releases: the fewest any source asks
	for i := range srcs {
		every = min(every, srcs[i].file.ReleaseRows())
	}
	pace := savepoint.NewPacer(every, every)
	for lo := 0; lo < len(runs); {
		hi := lo + 1
		for hi < len(runs) && runs[hi].op == runs[lo].op {
			hi++
		}
		opRows := p.res.Rows
		if res != nil {
			// The files holding the operator's keyed rows tell Union which
			// chain groups run it, before its operator rows are resolved
			// (they may come first in export order).
			for _, r := range runs[lo:hi] {
				if r.keyed {
					res.NoteKeyed(r.op, srcs[r.src].file.Subtask)
				}
			}
		}
		for g := lo; g < hi; {
			g2 := g + 1
			for g2 < hi && bytes.Equal(runs[g2].slot, runs[g].slot) {
				g2++
			}
			seen = 0
			if err := h.reset(runs[g:g2]); err != nil {
				return err
			}
			for h.len() > 0 {
				if emitted&0xFFFF == 0 {
					if err := p.ctx.Err(); err != nil {
						return err
					}
				}
				if pace.Due(emitted) {
					release()
				}
				emitted++
				if res == nil || !h.tied() {
					m := h.top()
					keep := true
					if res != nil {
						_, keep = res.Resolve(append(copies[:0], savepoint.UnionRow{Row: m.head, Subtask: m.subtask}))
					}
					if keep {
						if err := emit(m.head, m.subtask); err != nil {
							return err
						}
					}
					if err := h.advance(); err != nil {
						return err
					}
					continue
				}
				// Copies of one key in several sources: take them all off
				// the heap (their rows stay valid), resolve, then put back
				// the runs that go on. The heap breaks ties on the source,
				// so copies is in file order.
				taken, copies = taken[:0], copies[:0]
				key := h.top().head.Key
				for h.len() > 0 && bytes.Equal(h.top().head.Key, key) {
					m := h.top()
					taken = append(taken, h.pop())
					copies = append(copies, savepoint.UnionRow{Row: m.head, Subtask: m.subtask})
				}
				if c, ok := res.Resolve(copies); ok {
					if err := emit(c.Row, c.Subtask); err != nil {
						return err
					}
				}
				for _, k := range taken {
					if err := h.next(k); err != nil {
						return err
					}
				}
			}
			g = g2
		}
		if p.res.Rows > opRows {
			p.res.Operators++
		}
		lo = hi
	}
	return nil
}

// runHeap merges runs of one slot: a min-heap of the runs' next rows by
// (user key, key, source). Each run is read through a RowReader of its own.
// The heap holds run numbers, so a sift moves one int per level; each run's
// next row caches the first 8 bytes of its user key as an integer, which
// decides most comparisons (8-byte keys: all but ties).
type runHeap struct {
	srcs []mergeSource
	heap []int32 // run numbers, a min-heap
	runs []mergeRun
	pool []*savepoint.RowReader // every reader made, for the next slot
}

// mergeRun is a run being merged and its next row.
type mergeRun struct {
	src       int
	subtask   int
	next, end int // the next position and the run's end
	head      savepoint.Row
	uk        []byte // head's user key
	ukp       uint64 // uk's first 8 bytes, big-endian, zero-padded
	reader    *savepoint.RowReader
}

func (h *runHeap) reset(runs []keyRun) error {
	h.heap, h.runs = h.heap[:0], h.runs[:0]
	// The runs read together share mergeReadBytes.
	share := max(mergeReadMin, mergeReadBytes/max(1, len(runs)))
	for k, r := range runs {
		if k == len(h.pool) {
			h.pool = append(h.pool, new(savepoint.RowReader))
		}
		h.pool[k].MaxBytes = share
		h.runs = append(h.runs, mergeRun{src: r.src, subtask: h.srcs[r.src].file.Subtask, next: r.start, end: r.end, reader: h.pool[k]})
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

// mergeReadBytes is about the most bytes of rows the runs merged together
// hold in their readers, each at least mergeReadMin (and a row): with a
// RowReader's 4 MiB each, the 512 runs of an operator's rows of 4 KB keys
// held 236 MB, the input's size. Rows of tens of bytes still fill the
// readers' 2,048 rows.
const (
	mergeReadBytes = 64 << 20
	mergeReadMin   = 64 << 10
)

// load reads run m's next row.
func (h *runHeap) load(m *mergeRun) error {
	s := &h.srcs[m.src]
	var r savepoint.Row
	if s.idx != nil {
		r = s.rows.Row(int(s.idx[m.next]))
	} else {
		var err error
		if r, err = m.reader.Row(s.rows, m.next); err != nil {
			return err
		}
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
// compared in full. Equal keys order by source.
func (h *runHeap) less(a, b int32) bool {
	x, y := &h.runs[a], &h.runs[b]
	if x.ukp != y.ukp {
		return x.ukp < y.ukp
	}
	if c := bytes.Compare(x.uk, y.uk); c != 0 {
		return c < 0
	}
	if c := bytes.Compare(x.head.Key, y.head.Key); c != 0 {
		return c < 0
	}
	return x.src < y.src
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

func (h *runHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(h.heap[i], h.heap[parent]) {
			return
		}
		h.heap[i], h.heap[parent] = h.heap[parent], h.heap[i]
		i = parent
	}
}

// top returns the run with the least next row (its head is valid until the
// run advances).
func (h *runHeap) top() *mergeRun { return &h.runs[h.heap[0]] }

// tied reports whether another run's next row has the top's key: the
// second least row is a child of the root.
func (h *runHeap) tied() bool {
	key := h.top().head.Key
	for c := 1; c <= 2 && c < len(h.heap); c++ {
		if bytes.Equal(h.runs[h.heap[c]].head.Key, key) {
			return true
		}
	}
	return false
}

// advance moves the top run past its next row.
func (h *runHeap) advance() error {
	m := h.top()
	m.next++
	if m.next < m.end {
		if err := h.load(m); err != nil {
			return err
		}
		h.replaceTop()
		return nil
	}
	h.pop() // the run ended
	return nil
}

// replaceTop restores the heap after the root's run read on: the hole at
// the root goes down along the lesser children to a leaf, one comparison a
// level, and the run then moves up from there (Floyd's). The runs of a
// slot are its key groups', whose user keys interleave, so a run's next
// row belongs near the bottom: about half the comparisons of down, which
// makes two a level.
func (h *runHeap) replaceTop() {
	n, k, i := len(h.heap), h.heap[0], 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && h.less(h.heap[c+1], h.heap[c]) {
			c++
		}
		h.heap[i] = h.heap[c]
		i = c
	}
	h.heap[i] = k
	h.up(i)
}

// pop takes the top run off the heap without advancing it (its head stays
// valid) and returns its number.
func (h *runHeap) pop() int32 {
	k := h.heap[0]
	last := len(h.heap) - 1
	h.heap[0] = h.heap[last]
	h.heap = h.heap[:last]
	if last > 0 {
		h.down(0)
	}
	return k
}

// next advances run k, taken off by pop, and puts it back unless it ended.
func (h *runHeap) next(k int32) error {
	m := &h.runs[k]
	m.next++
	if m.next == m.end {
		return nil
	}
	if err := h.load(m); err != nil {
		return err
	}
	h.heap = append(h.heap, k)
	h.up(len(h.heap) - 1)
	return nil
}
