package savepoint

import (
	"bytes"
	"container/heap"
	"fmt"
	"iter"
	"slices"
	"strconv"
)

// UnionRow is one row of a savepoint's logical view (see Savepoint.Union):
// the row and the subtask whose copy it is.
type UnionRow struct {
	Row Row
	// Subtask is the global subtask index of the file the row was taken
	// from (-1 for a single-file input).
	Subtask int
	// Copies, from UnionSeqCopies only, are the stored copies (one per
	// file, in file order) of an operator-state row or the empty key that
	// several files hold, among which the union chose Row: each subtask
	// restores its own copy, if it holds one (format 5.3), so a comparison
	// of restored state needs them all. Nil otherwise.
	Copies []UnionRow
}

// UnionStats describes how a union resolved the rows held by several files.
// Its counts are complete once the iteration has ended.
type UnionStats struct {
	// Files is the number of files read; StoredRows the rows they hold.
	Files      int
	StoredRows int
	// Rows is the number of logical rows produced.
	Rows int
	// FileDuplicates counts rows stored twice (same op and key) within one
	// file, resolved as clink's restore does (Logical).
	FileDuplicates int
	// StaleCopies counts copies of rows a restore filters by key group
	// (keyed rows, and legacy raw keys, whose first byte is below 128)
	// held by a subtask that does not own their key group while the
	// owner's file holds the row too, or its changelog's log erases it
	// (Snapshot.ErasedByLog): the owner's state is the one a restore keeps
	// (format sections 1.7, 10.1).
	StaleCopies int
	// Lost counts such copies outside their owner's file whose owner lacks
	// them: a narrowed restore at the tree's layout drops them, so they are
	// left out.
	Lost int
	// StaleRaw and LostRaw are the legacy raw keys among StaleCopies and
	// Lost (inspect's key-group summary counts keyed rows alone).
	StaleRaw, LostRaw int
	// OperatorShared counts operator-state keys held by several files.
	OperatorShared int
	// OperatorGreater counts shared operator keys whose 8-byte values
	// differ: the greatest signed int64 is kept (clink's rule, section 6.3).
	OperatorGreater int
	// OperatorConflicts counts shared operator keys with differing values
	// that are not all 8 bytes long: the fold in subtask order keeps the
	// later copy (the highest subtask index), reported in Warnings (not
	// by UnionSeqCopies, whose caller compares the copies themselves).
	OperatorConflicts int
	// FrozenCopies counts copies of operator rows left out of the fold
	// because they are frozen replicas: held by a chain group other than
	// the ones whose files hold the operator's keyed rows, which run it
	// (format section 10.3), while a group running it holds the row too.
	FrozenCopies int
	// Warnings say what was resolved and how, one line each.
	Warnings []string
}

// maxConflictWarnings bounds the per-key operator conflict warnings; the
// rest are summarised in one line.
const maxConflictWarnings = 20

// Union returns the logical state of the savepoint: the state as a restore at
// the tree's own layout sees it, one row per (op, key), sorted canonically by
// (op, key bytes). It is what diff compares and export writes.
//
//   - A single file: Logical(rows) (duplicates resolved as clink's restore
//     does), Subtask -1.
//   - Keyed rows (first key byte below 128, including legacy raw keys such
//     as the '_'-prefixed in-flight buffers, which restore filters as that
//     key group): the copy of the subtask that owns the row's key group
//     within its chain group (Savepoint.GroupOf, Group.Owner). Copies in
//     other files are stale and counted; a row held only outside its
//     owner's file is left out and counted as lost (no restore holds it).
//   - Operator rows (first byte 128 or more) and the empty key: merged over
//     every file with clink's rule, folding MergeDuplicate in subtask order:
//     in a tree of several chain groups, an operator row is folded over the
//     copies of the groups whose files hold the operator's keyed rows (the
//     groups running it, whose subtasks each restore their own copy) when
//     they hold the row; the other groups' copies are frozen replicas that
//     no subtask running the operator restores (counted as FrozenCopies);
//     two 8-byte operator values keep the greater signed int64, anything
//     else (the empty key's values too: clink's merge does not take it for
//     operator state, format 1.6) keeps the later copy (the highest subtask
//     index); such choices between differing values are reported as
//     warnings.
//
// The warnings say what was resolved (stale copies, lost rows, operator
// conflicts). Union merges the files' sorted rows in one k-way pass; see
// UnionSeq to visit the rows without holding them all.
//
// The rows of a savepoint opened with OpenOptions.Columnar are read from
// its memory maps: run the iteration under Guard, or a file cut short by
// another process meanwhile ends the process.
func (sp *Savepoint) Union() ([]UnionRow, []string) {
	rows, st := sp.UnionWithStats()
	return rows, st.Warnings
}

// UnionWithStats is Union with the full statistics.
func (sp *Savepoint) UnionWithStats() ([]UnionRow, UnionStats) {
	var st UnionStats
	n := 0
	for _, f := range sp.Files {
		if f.Snapshot != nil {
			n += f.Snapshot.NumRows()
		}
	}
	out := make([]UnionRow, 0, n)
	for r := range sp.UnionSeq(&st) {
		out = append(out, r)
	}
	return out, st
}

// UnionSeq returns the rows of Union as an iterator, in canonical order,
// without collecting them. st, when not nil, is reset and filled as the
// iteration proceeds; it is complete when the iteration ends (stopping early
// leaves it partial). Each file's rows are sorted once (a file already in
// canonical order is not copied) and the files are merged with a heap.
//
// The rows of a savepoint opened with OpenOptions.Columnar are read from
// its memory maps: run the iteration under Guard, or a file cut short by
// another process meanwhile ends the process. A file that does not decode
// (File.Undecodable) holds no rows: a warning names it.
func (sp *Savepoint) UnionSeq(st *UnionStats) iter.Seq[UnionRow] {
	return sp.unionSeq(st, false)
}

// UnionSeqCopies is UnionSeq with the Copies of each operator-state row
// (and empty key) that several files hold.
func (sp *Savepoint) UnionSeqCopies(st *UnionStats) iter.Seq[UnionRow] {
	return sp.unionSeq(st, true)
}

func (sp *Savepoint) unionSeq(st *UnionStats, copies bool) iter.Seq[UnionRow] {
	return func(yield func(UnionRow) bool) {
		sp.mustBeOpen()
		s := st
		if s == nil {
			s = &UnionStats{}
		}
		*s = UnionStats{}
		for _, f := range sp.undecodable() {
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s %s (%s): none of its rows is in the union", ShowName(f.Rel), f.notRead(), undecodableReason(f)))
		}
		u := &unioner{sp: sp, st: s, tree: sp.Kind != InputFile, copies: copies, running: NewRunningGroups(sp)}
		u.run(true, yield)
		u.finish()
	}
}

// StoredSeq visits every stored row of every file (no union: copies held by
// several files and duplicates within a file are all kept), merged in
// canonical order (op, key), copies of one key in subtask order and, within
// a file, in stream order. It is export's --per-file view.
//
// The rows of a savepoint opened with OpenOptions.Columnar are read from
// its memory maps: run the iteration under Guard, or a file cut short by
// another process meanwhile ends the process.
func (sp *Savepoint) StoredSeq() iter.Seq[UnionRow] {
	return func(yield func(UnionRow) bool) {
		sp.mustBeOpen()
		u := &unioner{sp: sp, st: &UnionStats{}, tree: sp.Kind != InputFile, running: NewRunningGroups(sp)}
		u.run(false, yield)
	}
}

// unionCursor walks one file's rows in canonical order, by index into the
// file's rows (which may be memory-mapped columns): nothing is copied.
type unionCursor struct {
	rows    *Cursor
	idx     []uint32 // stream index of each position; nil: the rows are in order
	n       int
	i       int
	subtask int
	order   int // the file's position in sp.Files: ties between files break on it
	file    *File
}

func (c *unionCursor) row() Row {
	if c.idx != nil {
		return c.rows.Row(int(c.idx[c.i]))
	}
	return c.rows.Row(c.i)
}

// cursorHeap is a min-heap of cursors by (current row, file order).
type cursorHeap []*unionCursor

func (h cursorHeap) Len() int { return len(h) }
func (h cursorHeap) Less(i, j int) bool {
	if c := h[i].row().Compare(h[j].row()); c != 0 {
		return c < 0
	}
	return h[i].order < h[j].order
}
func (h cursorHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap) Push(x any)   { *h = append(*h, x.(*unionCursor)) }
func (h *cursorHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

type unioner struct {
	sp        *Savepoint
	st        *UnionStats
	tree      bool
	copies    bool // fill UnionRow.Copies
	conflicts []string
	// running follows the groups running the operator merged last;
	// live is a scratch list of their copies (liveCopies).
	running RunningGroups
	live    []UnionRow
}

// RunningGroups follows, as the rows of a tree pass in canonical order (an
// operator's keyed rows before its operator rows), the chain groups whose
// files hold keyed rows of the operator met last: the groups that run it,
// whose copies of its operator rows its subtasks restore (format 10.3).
type RunningGroups struct {
	sp     *Savepoint
	op     uint64
	noted  bool
	last   int // the subtask noted last
	groups []Group
}

// NewRunningGroups returns a RunningGroups of the tree sp.
func NewRunningGroups(sp *Savepoint) RunningGroups { return RunningGroups{sp: sp} }

// Note records that the file of subtask holds keyed rows of op. Notes of
// another operator replace those before. Only a tree of several chain
// groups needs them.
func (r *RunningGroups) Note(op uint64, subtask int) {
	if r.sp == nil || r.sp.Kind == InputFile || len(r.sp.Groups) < 2 {
		return
	}
	if !r.noted || op != r.op {
		r.groups, r.op, r.noted, r.last = r.groups[:0], op, true, -1
	}
	if subtask == r.last {
		return
	}
	r.last = subtask
	if g, ok := r.sp.GroupOf(subtask); ok && !slices.Contains(r.groups, g) {
		r.groups = append(r.groups, g)
	}
}

// NoteRow is Note for row r of subtask's file, when r is keyed (its first
// key byte below 128).
func (r *RunningGroups) NoteRow(row Row, subtask int) {
	if len(row.Key) > 0 && row.Key[0] < NumKeyGroups {
		r.Note(row.Op, subtask)
	}
}

// Of returns the groups running op, and whether they are known: in a tree
// of fewer than two chain groups every subtask runs every operator (nil,
// true); in one of several, they are known once a file's keyed rows of op
// were noted.
func (r *RunningGroups) Of(op uint64) ([]Group, bool) {
	if r.sp == nil || len(r.sp.Groups) < 2 {
		return nil, true
	}
	if !r.noted || r.op != op || len(r.groups) == 0 {
		return nil, false
	}
	return r.groups, true
}

// Runs reports whether subtask runs op, as far as is known: true also when
// the groups running op are not known.
func (r *RunningGroups) Runs(op uint64, subtask int) bool {
	gs, ok := r.Of(op)
	if !ok || gs == nil {
		return true
	}
	g, in := r.sp.GroupOf(subtask)
	return in && slices.Contains(gs, g)
}

// A Resolver applies Union's rules to the copies of one (op, key) held by
// the files of a savepoint, for code that merges the files' rows itself
// (in another order than Union's) and must keep the rows Union keeps and
// count them the same way.
type Resolver struct{ u unioner }

// LargeValueBytes is the size of a row's value from which a pass that
// compares the copies of one key held in several files (operator state
// replicated in every file, such as a broadcast state) has each file's
// pages released once its copy is compared.
const LargeValueBytes = 1 << 20

// NewResolver returns a Resolver for sp that counts into st (Rows,
// StaleCopies, Lost and the operator counts; the caller fills Files,
// StoredRows and FileDuplicates).
func NewResolver(sp *Savepoint, st *UnionStats) *Resolver {
	return &Resolver{unioner{sp: sp, st: st, tree: sp.Kind != InputFile, running: NewRunningGroups(sp)}}
}

// Resolve returns the copy a restore at the savepoint's layout keeps of
// copies (every stored copy of one (op, key), one per file, in the order of
// sp.Files), and false when it keeps none.
func (r *Resolver) Resolve(copies []UnionRow) (UnionRow, bool) {
	var c UnionRow
	var ok bool
	if len(copies) == 1 {
		c, ok = r.u.resolveOne(copies[0])
	} else {
		c, ok = r.u.resolveMany(copies)
	}
	if ok {
		r.u.st.Rows++
	}
	return c, ok
}

// NoteKeyed records that the file of subtask holds keyed rows of operator
// op (rows whose first key byte is below 128). Union learns which chain
// groups run an operator from its keyed rows, which come before its
// operator rows in canonical order; code resolving rows in another order
// notes each file's keyed rows of op before it resolves op's operator
// rows, so that those are folded over the same copies. Notes of another
// operator replace the ones before.
func (r *Resolver) NoteKeyed(op uint64, subtask int) { r.u.running.Note(op, subtask) }

// Finish adds Union's summary warnings to the stats once every key is
// resolved.
func (r *Resolver) Finish() { r.u.finish() }

// CanonicalIndex returns the stream indexes of a file's rows in canonical
// order (nil when they already are), and how many there are: deduplicated
// as clink's restore does (Logical) when dedup is set, else every row in a
// stable sort (stream order kept among equal keys). It is how Union and
// StoredSeq read each file.
func CanonicalIndex(c *Cursor, dedup bool) ([]uint32, int) {
	n := c.Len()
	// The order check reads the keys with pread, a block at a time (see
	// Snapshot.Order): through the map it left the whole file resident.
	if sorted, strict := c.s.Order(); strict || sorted && !dedup {
		return nil, n
	}
	if !dedup {
		return SortOrder(n, func(i int) (uint64, []byte) { return c.Op(i), c.Key(i) }), n
	}
	out := CanonicalPositions(c, nil, nil)
	return out, len(out)
}

// run merges the files. With dedup each (op, key) is resolved to one row;
// without, every copy is yielded.
func (u *unioner) run(dedup bool, yield func(UnionRow) bool) {
	var h cursorHeap
	for i, f := range u.sp.Files {
		u.st.Files++
		if f.Snapshot == nil || f.Snapshot.NumRows() == 0 {
			continue
		}
		stored := f.Snapshot.NumRows()
		u.st.StoredRows += stored
		cur := f.Snapshot.NewCursor()
		idx, n := CanonicalIndex(cur, dedup)
		f.ReleasePages()
		u.st.FileDuplicates += stored - n
		h = append(h, &unionCursor{rows: cur, idx: idx, n: n, subtask: f.Subtask, order: i, file: f})
	}
	// advance moves a cursor to its next row. Every ReleaseRows rows read
	// of all the files, their mapped pages are dropped from the resident
	// set (they stay in the page cache): merging, the cursors advance
	// together, and counted per file, a tree of 64 files of 156K rows
	// each, none reaching its count, kept 430 MB of the 372 MB tree's
	// pages.
	every := u.sp.ReleaseRows()
	release, read := NewPacer(every, every), 0
	advance := func(c *unionCursor) {
		c.i++
		if read++; release.Due(read) {
			for _, f := range u.sp.Files { // (those of ended cursors too)
				f.ReleasePages()
			}
		}
	}
	if !dedup {
		// Every copy, in (op, key, file order); no resolution.
		heap.Init(&h)
		for h.Len() > 0 {
			c := h[0]
			if !yield(UnionRow{Row: c.row(), Subtask: c.subtask}) {
				return
			}
			advance(c)
			if c.i == c.n {
				heap.Pop(&h)
			} else {
				heap.Fix(&h, 0)
			}
		}
		return
	}
	if len(h) == 1 {
		// One file with rows: each key is held once; only ownership applies.
		c := h[0]
		for ; c.i < c.n; advance(c) {
			if r, ok := u.resolveOne(UnionRow{Row: c.row(), Subtask: c.subtask}); ok && !u.emit(r, yield) {
				return
			}
		}
		return
	}
	heap.Init(&h)
	copies := make([]UnionRow, 0, len(h))
	for h.Len() > 0 {
		copies = copies[:0]
		first := h[0].row()
		for h.Len() > 0 {
			c := h[0]
			r := c.row()
			if r.Op != first.Op || !bytes.Equal(r.Key, first.Key) {
				break
			}
			copies = append(copies, UnionRow{Row: r, Subtask: c.subtask})
			u.running.NoteRow(r, c.subtask)
			advance(c)
			if c.i == c.n {
				heap.Pop(&h)
			} else {
				heap.Fix(&h, 0)
			}
		}
		var r UnionRow
		var ok bool
		if len(copies) == 1 {
			r, ok = u.resolveOne(copies[0])
		} else {
			r, ok = u.resolveMany(copies)
		}
		if ok && !u.emit(r, yield) {
			return
		}
	}
}

// owned reports whether the file of subtask holds the authoritative copy of
// a key-group-filtered row of key group kg. Rows of a single-file input and
// of a subtask outside every chain group are taken as they are.
func (u *unioner) owned(kg, subtask int) bool {
	if !u.tree {
		return true
	}
	g, ok := u.sp.GroupOf(subtask)
	return !ok || g.Owner(kg) == subtask
}

// liveCopies returns the copies (of one operator row, in file order) that
// a fold of them takes: in a tree of several chain groups, those of the
// groups whose files hold keyed rows of the row's operator, when every
// subtask of those groups holds one. The others are frozen replicas
// (format section 10.3) that no subtask running the operator restores:
// each restores its own copy (format 5.3). A running subtask without a
// copy of its own restores the union of every other directory's, frozen
// ones too; then, and when the groups running the operator are not known,
// all.
func (u *unioner) liveCopies(copies []UnionRow) []UnionRow {
	op := copies[0].Row.Op
	groups, known := u.running.Of(op)
	if !known || groups == nil {
		return copies
	}
	running := 0
	for _, g := range groups {
		running += g.Count
	}
	live := foldedCopies(copies, &u.live, running, func(c UnionRow) bool { return u.running.Runs(op, c.Subtask) })
	u.st.FrozenCopies += len(copies) - len(live)
	return live
}

// foldedCopies returns the copies of an operator row that a fold of them
// takes, given which copies are of a subtask running the operator (runs)
// and how many subtasks run it: those copies, when each running subtask
// holds one; else every copy, since a running subtask without a copy of
// its own restores the union of every other directory's (format 5.3,
// 10.3). buf is reused for the result.
func foldedCopies[C any](copies []C, buf *[]C, running int, runs func(C) bool) []C {
	live := (*buf)[:0]
	for _, c := range copies {
		if runs(c) {
			live = append(live, c)
		}
	}
	*buf = live
	if len(live) < running || len(live) == len(copies) {
		return copies
	}
	return live
}

func (u *unioner) emit(c UnionRow, yield func(UnionRow) bool) bool {
	u.st.Rows++
	return yield(c)
}

// resolveOne handles a key held by one file: it returns the copy and
// whether a restore keeps it.
func (u *unioner) resolveOne(c UnionRow) (UnionRow, bool) {
	if kg, filtered := RestoreKeyGroup(c.Row.Key); filtered && !u.owned(kg, c.Subtask) {
		u.outside(c, u.erasedByOwner(kg, c.Subtask, c.Row)) // erased: the owner's state is none
		return c, false
	}
	return c, true
}

// outside counts c, a copy outside its owner's file, as stale (the owner's
// state stands for it) or lost.
func (u *unioner) outside(c UnionRow, stale bool) {
	raw := ParseKey(c.Row.Key).Kind != KindKeyed
	switch {
	case stale:
		u.st.StaleCopies++
		if raw {
			u.st.StaleRaw++
		}
	default:
		u.st.Lost++
		if raw {
			u.st.LostRaw++
		}
	}
}

// erasedByOwner reports whether the owner of key group kg, in the chain
// group of subtask, erases r's key in its changelog's log
// (Snapshot.ErasedByLog).
func (u *unioner) erasedByOwner(kg, subtask int, r Row) bool {
	g, ok := u.sp.GroupOf(subtask)
	if !ok {
		return false
	}
	f := u.sp.File(g.Owner(kg))
	return f != nil && f.Snapshot.ErasedByLog(r.Op, r.Key)
}

// resolveMany handles a key held by several files (copies in file order):
// it returns the copy a restore keeps, if any.
func (u *unioner) resolveMany(copies []UnionRow) (UnionRow, bool) {
	if kg, filtered := RestoreKeyGroup(copies[0].Row.Key); filtered {
		owner := -1
		for i, c := range copies {
			if u.owned(kg, c.Subtask) {
				owner = i
				break
			}
		}
		if owner < 0 {
			// Each copy's owner is of its own chain group.
			for _, c := range copies {
				u.outside(c, u.erasedByOwner(kg, c.Subtask, c.Row))
			}
			return UnionRow{}, false
		}
		for i, c := range copies {
			if i != owner {
				u.outside(c, true)
			}
		}
		return copies[owner], true
	}
	// Operator state and the empty key: fold clink's rule in subtask order.
	u.st.OperatorShared++
	all := copies
	if copies[0].Row.IsOperatorState() {
		copies = u.liveCopies(copies)
	}
	best := copies[0]
	all8, differ := len(best.Row.Value) == 8 && best.Row.IsOperatorState(), false
	for _, c := range copies[1:] {
		all8 = all8 && len(c.Row.Value) == 8
		differ = differ || !bytes.Equal(c.Row.Value, copies[0].Row.Value)
		if IncomingWins(best.Row, c.Row) {
			best = c
		}
		if len(c.Row.Value) >= LargeValueBytes {
			// A broadcast state in every file would otherwise be
			// resident as many times over once compared.
			if f := u.sp.File(c.Subtask); f != nil {
				f.ReleasePages()
			}
		}
	}
	if u.copies {
		best.Copies = slices.Clone(all)
	}
	switch {
	case !differ:
	case all8:
		u.st.OperatorGreater++
	case u.copies:
		// With the copies at hand (diff), the rows are compared as
		// restores see them, not as a choice of one copy: a timer blob
		// by the timers a restore keeps (each subtask's blob holds its
		// own), any other row subtask by subtask.
	default:
		u.st.OperatorConflicts++
		if len(u.conflicts) < maxConflictWarnings {
			msg := fmt.Sprintf("op %d operator key %s: %d subtasks (%s) hold different values, not all 8-byte operator values; subtask %d's copy is used (clink's fold in subtask order keeps the later one)",
				best.Row.Op, renderOperatorKey(best.Row.Key), len(copies), subtaskList(copies), best.Subtask)
			if len(copies) < len(all) {
				frozen := slices.DeleteFunc(slices.Clone(all), func(c UnionRow) bool {
					return slices.ContainsFunc(copies, func(l UnionRow) bool { return l.Subtask == c.Subtask })
				})
				msg += fmt.Sprintf("; the copies of subtasks %s, in chain groups that do not run the operator, are frozen replicas (format section 10.3), left out", subtaskList(frozen))
			} else if _, known := u.running.Of(best.Row.Op); !known {
				msg += fmt.Sprintf("; op %d has no keyed rows to tell which of the %d chain groups runs it, so the copies of the others, frozen replicas that its subtasks do not restore, are among these (format section 10.3)", best.Row.Op, len(u.sp.Groups))
			}
			if len(best.Row.Key) == 0 {
				msg = fmt.Sprintf("op %d, the empty key: %d subtasks (%s) hold different values; subtask %d's copy is used (clink's fold in subtask order keeps the later one: %s)",
					best.Row.Op, len(copies), subtaskList(copies), best.Subtask, DifferingCopiesWhy(nil))
			}
			u.conflicts = append(u.conflicts, msg)
		}
	}
	return best, true
}

// DifferingCopiesWhy says why the differing copies of key, an operator key
// or the empty key that several subtasks hold, are not resolved by the
// greater of two 8-byte values (clink's rule for operator keys only).
func DifferingCopiesWhy(key []byte) string {
	if len(key) == 0 {
		return "the greater of two 8-byte values decides operator keys only, and the empty key is none"
	}
	return "not all 8-byte operator values"
}

// renderOperatorKey shows an operator-state key as its marker byte in hex
// followed by the quoted logical key when that is printable, e.g.
// 0xff+"__clink_timers"; otherwise as RenderBytes does.
func renderOperatorKey(key []byte) string {
	if len(key) > 1 && key[0] >= NumKeyGroups && Printable(key[1:]) {
		return fmt.Sprintf("0x%02x+%s", key[0], RenderBytes(key[1:], 40))
	}
	return RenderBytes(key, 40)
}

func subtaskList(copies []UnionRow) string {
	var b []byte
	for i, c := range copies {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(c.Subtask), 10)
	}
	return string(b)
}

// keyedAndRaw counts n rows, raw of them legacy raw keys, as "3 stale
// keyed copies" or, with raw ones, "3 stale keyed copies and 4 of legacy
// raw keys" (what, one and many: the noun's stem and endings).
func keyedAndRaw(n, raw int, what, one, many string) string {
	keyed := n - raw
	s := fmt.Sprintf("%d %s%s", keyed, what, plural(keyed, one, many))
	if raw > 0 {
		s += fmt.Sprintf(" and %d of legacy raw keys (a restore filters them by their first byte too)", raw)
	}
	return s
}

// finish writes the summary warnings.
func (u *unioner) finish() {
	st := u.st
	if missing := u.sp.MissingSubtasks(); u.tree && len(missing) > 0 {
		// The logical view of a tree with a hole is no restore's: say
		// so first, as rescale refuses such a tree.
		st.Warnings = append(st.Warnings, u.sp.NotConsecutive(missing)+": its chain groups are not inferred across the gap, and the rows of the missing subtasks are not here (sptool validate says more; sptool cat and export --per-file give every stored row)")
	}
	if st.StaleCopies > 0 {
		st.Warnings = append(st.Warnings, fmt.Sprintf("%s ignored: held by a subtask that does not own the row's key group while the owner's file holds the row too, or its changelog's log erases it; the owner's state is the one a restore keeps (format sections 1.7, 10.1)", keyedAndRaw(st.StaleCopies, st.StaleRaw, "stale keyed cop", "y", "ies")))
	}
	if st.Lost > 0 {
		st.Warnings = append(st.Warnings, fmt.Sprintf("%s left out: held only outside the file of the subtask owning their key group, so a restore at this layout drops them (sptool validate reports them)", keyedAndRaw(st.Lost, st.LostRaw, "keyed row", "", "s")))
	}
	st.Warnings = append(st.Warnings, u.conflicts...)
	if more := st.OperatorConflicts - len(u.conflicts); more > 0 {
		st.Warnings = append(st.Warnings, fmt.Sprintf("... and %d more operator keys with differing values, not all 8-byte operator values (the highest subtask's copy used)", more))
	}
}
