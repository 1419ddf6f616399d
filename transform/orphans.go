package transform

import (
	"fmt"
	"slices"
	"sort"

	"github.com/sptool/sptool/internal/gallop"
	"github.com/sptool/sptool/savepoint"
)

// A tree may hold stale copies of a key: keyed rows in a file other than
// the one of the subtask that owns their key group, which a narrowed
// restore drops and a chained subtask keeps where no record of the key
// arrives (format sections 10.1, 10.2). The owner's copy is the key's
// state. A rule that decides by where a row is stored or by its value
// (not by its operator and key alone) may drop the owner's copy and keep
// a stale one, which the output would then hold with no owner copy: a
// row validate reports lost, which a later rescale refuses, and which
// brings an older value of a key the run dropped back wherever a subtask
// restores its file unfiltered. So may an owner whose changelog's log
// erases the key: its output, written in canonical form, keeps no log, so
// no longer says that the key is gone. dropOrphans drops such copies.
//
// Legacy raw keys (no slot, first byte below 128: the in-flight buffers of
// unaligned checkpoints, legacy timer blobs) are filtered by their first
// byte as keyed rows are, but each subtask's is its own state (section
// 10.1: one per subtask, with its own value), which a chained subtask
// restores: they are kept, and a warning names those the run leaves
// without their owner's row.

// staleRow is a row of an output, before the outputs are sorted, stored
// outside its file's key-group range: its input row, the operator and key
// it had there, its key group, the file index of its owner and its
// operator and key in the output.
type staleRow struct {
	in    int
	op    uint64
	key   []byte
	kg    int
	owner int
	raw   bool // a legacy raw key
	// out is its operator and key in the output, after the rules.
	out savepoint.Row
}

// copyFates reports whether a rule of the run may give two stored copies
// of one key different fates: one that drops or keeps a row by its value
// (decidesByValue) or by the subtask that stores it.
func (e *engine) copyFates() bool {
	return slices.ContainsFunc(e.steps, func(st step) bool { return decidesBy(st.rule, byValue|byStore) })
}

// orphansPossible reports whether a run over sp may leave a stale copy
// without its owner's copy (see dropOrphans): sp is a tree, the rules do
// not rescale it, and a rule may give a key's copies different fates or
// a file's changelog erases a key in its log.
func (e *engine) orphansPossible(sp *savepoint.Savepoint) bool {
	if sp.Kind == savepoint.InputFile || e.set.Rescale() != nil {
		return false
	}
	return e.copyFates() || slices.ContainsFunc(sp.Files, func(f *savepoint.File) bool { return f.Snapshot.ErasesByLog() })
}

// dropOrphans runs once every file's rules have run and before their
// outputs are sorted (engine.sortLater), when orphansPossible. It drops
// from the outputs of the tree sp (results, by file) each keyed row stored
// outside its file's key-group range, kept by the rules, whose operator
// and key after the rules the owner's output does not hold, while the
// owner's input file held the operator and key the row had in the input,
// or erased it in its changelog's log: the rules dropped the owner's copy
// and kept this one, or the owner's output no longer says that the key is
// gone. A row whose owner's input held no copy (lost in the input, which
// validate reports) is kept as it is, and so is one whose key the owner's
// output holds, whichever row of the owner's it comes from (a stale copy
// of that key, which the owner's copy outranks). The owner's outputs are
// asked before they are sorted: the sort resolves copies of one key, but
// never takes a key away. It counts them in the results' orphans, takes
// them out of the slot counts and the audit as a resolved duplicate is,
// and returns the warnings that say so, and that name the legacy raw keys
// it keeps though their owner holds none. A file it drops rows from that
// the rules left unchanged is rewritten.
func (e *engine) dropOrphans(sp *savepoint.Savepoint, results []*fileResult) []string {
	// The owners whose output may lack a key of which another file holds
	// a stale copy: those the rules dropped rows of, when a rule may part
	// a key's copies, and those whose changelog's log erases a key.
	fates := e.copyFates()
	mayLack := make([]bool, len(results))
	for i, res := range results {
		mayLack[i] = sp.Files[i].Snapshot.ErasesByLog() ||
			fates && slices.ContainsFunc(res.rules, func(rc ruleCounts) bool { return rc.dropped > 0 })
	}
	if !slices.Contains(mayLack, true) {
		return nil
	}
	byIndex := fileIndexes(sp)
	// The stale rows each file keeps of the keys of such owners, each file
	// read in its own goroutine (it reads its own rows alone).
	stale := make([][]staleRow, len(results))
	savepoint.ForEach(len(sp.Files), func(i int) {
		g, ok := sp.GroupOf(sp.Files[i].Subtask)
		out := results[i].out
		if !ok || out.Len() == 0 || out.spilled {
			return // (only a rescale's outputs are sorted first)
		}
		// The file index of each key group's owner, where it is another
		// file that may lack a key, else -1.
		var owner [savepoint.NumKeyGroups]int
		looked := false
		for kg := range owner {
			owner[kg] = -1
			if x, ok := byIndex[g.Owner(kg)]; ok && x != i && mayLack[x] {
				owner[kg] = x
				// (A file whose key groups the open read holds none
				// outside its range, mostly: its rows are not read.)
				held, _ := sp.Files[i].KeyGroupsHeld(kg)
				looked = looked || held
			}
		}
		if !looked {
			return
		}
		want := func(kg int) bool { return owner[kg] >= 0 }
		// The keys are copied into blocks of their own, not each into an
		// allocation.
		var arena []byte
		keep := func(b []byte) []byte {
			if len(arena)+len(b) > cap(arena) {
				arena = make([]byte, 0, max(64<<10, len(b)))
			}
			arena = append(arena, b...)
			return arena[len(arena)-len(b) : len(arena) : len(arena)]
		}
		staleCopies(out, results[i].canonical, want, func(p int, op uint64, key []byte, kg int) {
			in := out.idx.at(p)
			inKey := out.cur.Key(in)
			stale[i] = append(stale[i], staleRow{in: in, op: out.cur.Op(in), key: keep(inKey), kg: kg, owner: owner[kg],
				raw: savepoint.ParseKey(inKey).Kind == savepoint.KindRaw, out: savepoint.Row{Op: op, Key: keep(key)}})
		})
	})
	// Whether each stale row's owner kept its copy, asked of each owner
	// once.
	byOwner := map[int][][2]int{} // owner -> (file, index in stale[file])
	for i, rows := range stale {
		for j, r := range rows {
			byOwner[r.owner] = append(byOwner[r.owner], [2]int{i, j})
		}
	}
	owners := make([]int, 0, len(byOwner))
	for o := range byOwner {
		owners = append(owners, o)
	}
	slices.Sort(owners)
	// The orphans of each file, and the legacy raw keys left.
	type orphan struct {
		at    orphanAt
		byLog bool // the owner's log erases the key (no rule dropped it)
	}
	orphans := make([][]orphan, len(results))
	var raws, rawsByLog int
	var rawAt orphanAt
	for _, o := range owners {
		// Those whose operator and key, after the rules, the owner's
		// output does not hold ...
		refs := byOwner[o]
		outIDs := make([]savepoint.Row, len(refs))
		for x, ref := range refs {
			outIDs[x] = stale[ref[0]][ref[1]].out
		}
		has := holdsRows(results[o].out, results[o].canonical, outIDs)
		var gone [][2]int
		var ids []savepoint.Row
		for x, ref := range refs {
			if !has[x] {
				r := stale[ref[0]][ref[1]]
				gone, ids = append(gone, ref), append(ids, savepoint.Row{Op: r.op, Key: r.key})
			}
		}
		if len(gone) == 0 {
			continue
		}
		// ... and whose own, in the input, the owner's input held or
		// erased in its log.
		in := sp.Files[o].Snapshot
		inRow := findRows(in, ids)
		for x, ref := range gone {
			r := stale[ref[0]][ref[1]]
			byLog := inRow[x] < 0 && in.ErasedByLog(r.op, r.key)
			if !byLog && inRow[x] < 0 {
				continue // lost in the input
			}
			at := orphanAt{file: ref[0], row: r.in, op: r.op, kg: r.kg, owner: o}
			if r.raw {
				raws++
				if byLog {
					rawsByLog++
				}
				rawAt.note(at)
				continue
			}
			orphans[ref[0]] = append(orphans[ref[0]], orphan{at: at, byLog: byLog})
		}
	}
	var dropped, byLog int64
	var droppedAt orphanAt
	for i, found := range orphans {
		if len(found) == 0 {
			continue
		}
		res, f := results[i], sp.Files[i]
		if !res.changed {
			// Copied otherwise: it is written anew, as a file a rule
			// changed is, its own copies of a key resolved first.
			res.changed = true
			if e.resolveCopies(f, res); res.err != nil {
				continue
			}
		}
		// Those the file's own resolution left (a copy it hid is gone).
		left := keptInputRows(res.out, f.Snapshot.NumRows())
		marks := make([]uint64, len(left))
		for _, o := range found {
			in := o.at.row
			if left[in/64]&(1<<(in%64)) == 0 {
				continue
			}
			marks[in/64] |= 1 << (in % 64)
			droppedAt.note(o.at)
			if o.byLog {
				byLog++
			}
		}
		n := res.out.dropMarked(marks, e.dropper(res))
		res.orphans += n
		dropped += n
	}
	var warns []string
	if dropped > 0 {
		what := "1 stale copy dropped that no rule matched: a keyed row stored outside its file's key-group range"
		them := "it"
		if dropped > 1 {
			what = fmt.Sprintf("%d stale copies dropped that no rule matched: keyed rows stored outside their file's key-group range", dropped)
			them = "them"
		}
		why := "whose owner's copy the rules dropped"
		switch {
		case byLog == dropped:
			why = "whose owner's changelog erases the key in its log (the owner's output, written in canonical form, keeps no log)"
		case byLog > 0:
			why = fmt.Sprintf("whose owner's copy the rules dropped, or (%d of them) whose owner's changelog erases the key in its log, which the owner's output, written in canonical form, does not keep", byLog)
		}
		warns = append(warns, fmt.Sprintf("%s %s (first: %s); the output would hold %s without an owner copy, which a chained subtask, restored unfiltered, keeps (an older state of the key)",
			what, why, droppedAt.where(sp), them))
	}
	if raws > 0 {
		what, its, each, it := "1 legacy raw key row outside its file's key-group range kept", "its", "it is", "it"
		if raws > 1 {
			what, its, each, it = fmt.Sprintf("%d legacy raw key rows outside their file's key-group range kept", raws), "their", "each is", "them"
		}
		why := fmt.Sprintf("the rules dropped %s owner's row", its)
		switch {
		case rawsByLog == raws:
			why = fmt.Sprintf("%s owner's changelog erases the key in its log, which the owner's output, written in canonical form, does not keep", its)
		case rawsByLog > 0:
			why = fmt.Sprintf("the rules dropped their owner's row, or (%d of them) their owner's changelog erases the key in its log, which the owner's output does not keep", rawsByLog)
		}
		warns = append(warns, fmt.Sprintf("%s, though %s (first: %s): %s its subtask's own state (an in-flight buffer, a legacy timer blob), which a chained subtask restores and a narrowed one drops; validate reports %s as lost on restore",
			what, why, rawAt.where(sp), each, it))
	}
	return warns
}

// orphanAt is a row a warning of dropOrphans counts: its file and input
// row (by index in the savepoint's files), operator, key group and the
// file index of its owner. set is false for none.
type orphanAt struct {
	file, row int
	op        uint64
	kg, owner int
	set       bool
}

// note takes r when it comes before the row held in file and row order,
// so that the warning names the first.
func (a *orphanAt) note(r orphanAt) {
	if !a.set || r.file < a.file || r.file == a.file && r.row < a.row {
		*a = r
		a.set = true
	}
}

// where says where the row is, as the warnings name it.
func (a *orphanAt) where(sp *savepoint.Savepoint) string {
	f := sp.Files[a.file]
	row := "row"
	if f.Snapshot.Variant == savepoint.Changelog {
		row = "replayed row"
	}
	return fmt.Sprintf("%s %s %d, op %d, key group %d, owned by subtask %d", savepoint.ShowName(f.Rel), row, a.row, a.op, a.kg, sp.Files[a.owner].Subtask)
}

// sortOutputs sorts the outputs of the files that sortLater left unsorted
// (see engine.sortOut), in parallel, jobs at a time; a file that fails
// records its error in its result.
func (e *engine) sortOutputs(sp *savepoint.Savepoint, results []*fileResult, jobs int) {
	var faults savepoint.Faults
	sem := make(chan struct{}, max(1, jobs))
	for i, res := range results {
		if !res.changed || res.canonical || res.err != nil {
			continue
		}
		sem <- struct{}{}
		faults.Go(func() {
			defer func() { <-sem }()
			e.sortOut(sp.Files[i], res)
		})
	}
	faults.Wait()
}

// staleCopies calls fn with each keyed row of out (canonical: in canonical
// order) whose key group kg is one of want's: its position, operator and
// key. Where the run log describes the rows it reads their key groups
// there; else, in canonical order, it finds each operator's rows of each
// stretch of wanted key groups by binary search; else it reads every key.
func staleCopies(out *outRows, canonical bool, want func(kg int) bool, fn func(p int, op uint64, key []byte, kg int)) {
	if out.log.describes(out.Len()) {
		p := 0
		for _, r := range out.log.runs {
			if r.kg >= 0 && want(r.kg) {
				for q := p; q < p+r.n; q++ {
					fn(q, out.Op(q), out.Key(q), r.kg)
				}
			}
			p += r.n
		}
		return
	}
	if !canonical {
		out.eachKeyIn(0, out.Len(), func(p int, op uint64, key []byte) bool {
			if kg, keyed := savepoint.RestoreKeyGroup(key); keyed && want(kg) {
				fn(p, op, key, kg)
			}
			return true
		})
		return
	}
	// The stretches [a, b) of key groups wanted.
	var spans [][2]int
	for kg := 0; kg < savepoint.NumKeyGroups; kg++ {
		if !want(kg) {
			continue
		}
		if k := len(spans) - 1; k >= 0 && spans[k][1] == kg {
			spans[k][1]++
		} else {
			spans = append(spans, [2]int{kg, kg + 1})
		}
	}
	n := out.Len()
	for j := 0; j < n; {
		op := out.Op(j)
		for _, sp := range spans {
			lo, hi := lowerBound(out, op, []byte{byte(sp[0])}), lowerBound(out, op, []byte{byte(sp[1])})
			for p := lo; p < hi; p++ {
				key := out.Key(p)
				fn(p, op, key, int(key[0]))
			}
		}
		j += sort.Search(n-j, func(y int) bool { return out.Op(j+y) != op })
	}
}

// holdsRows reports, for each of ids, whether out (canonical: in canonical
// order) holds a row of its operator and key: by binary search in
// canonical order, else in one pass over its keys.
func holdsRows(out *outRows, canonical bool, ids []savepoint.Row) []bool {
	held := make([]bool, len(ids))
	if canonical {
		// In the order of the ids, each searched from the row the one
		// before it was found at, by galloping: the stale copies of one
		// file come in canonical order, and lie near each other in the
		// owner's rows (one binary search of all of them each took
		// 0.73 s of a 4.4M-row tree's 400,000 stale copies).
		order := make([]int, len(ids))
		for x := range order {
			order[x] = x
		}
		slices.SortStableFunc(order, func(a, b int) int { return compareRow(ids[a].Op, ids[a].Key, ids[b].Op, ids[b].Key) })
		n, y := out.Len(), 0
		for _, x := range order {
			id := ids[x]
			y += gallop.Search(n-y, func(d int) bool { return compareRow(out.Op(y+d), out.Key(y+d), id.Op, id.Key) >= 0 })
			held[x] = y < n && compareRow(out.Op(y), out.Key(y), id.Op, id.Key) == 0
		}
		return held
	}
	want := byID(ids)
	out.eachKeyIn(0, out.Len(), func(_ int, op uint64, key []byte) bool {
		for _, x := range want[op][string(key)] {
			held[x] = true
		}
		return true
	})
	return held
}

// byID indexes ids by operator and key (a key looked up as string(b) makes
// no copy): the indexes in ids of each.
func byID(ids []savepoint.Row) map[uint64]map[string][]int {
	want := map[uint64]map[string][]int{}
	for x, id := range ids {
		if want[id.Op] == nil {
			want[id.Op] = map[string][]int{}
		}
		want[id.Op][string(id.Key)] = append(want[id.Op][string(id.Key)], x)
	}
	return want
}

// keptInputRows returns the input rows of o, an output of an input of n
// rows, as a bit set.
func keptInputRows(o *outRows, n int) []uint64 {
	kept := make([]uint64, (n+63)/64)
	x := &o.idx
	if x.dense != nil {
		for _, in := range x.dense {
			kept[in/64] |= 1 << (in % 64)
		}
		return kept
	}
	for _, sp := range x.spans {
		for in := sp.start; in < sp.start+sp.n; in++ {
			kept[in/64] |= 1 << (in % 64)
		}
	}
	return kept
}
