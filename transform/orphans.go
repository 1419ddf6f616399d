package transform

import (
	"bytes"
	"slices"
	"sort"

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
// erases the key: its output, written as a snapshot, keeps no log, so no
// longer says that the key is gone. dropOrphans drops such copies.

// orphan is a kept stale copy whose owner's output holds no copy: its
// operator and key in the output, and the file index of the owner.
type orphan struct {
	op    uint64
	key   []byte
	owner int
	// ids are the operators and keys the row may have had in the input
	// (one when its input row is known; see engine.inputIDs).
	ids []savepoint.Row
}

// copyFates reports whether a rule of the run may give two stored copies
// of one key different fates: one that drops or keeps a row by its value
// (decidesByValue) or by the subtask that stores it.
func (e *engine) copyFates() bool {
	return slices.ContainsFunc(e.steps, func(st step) bool { return decidesBy(st.rule, byValue|byStore) })
}

// dropOrphans drops, from the output files of the tree sp (results, by
// file), each keyed row outside its file's key-group range whose owner's
// output holds no row of its operator and key while the owner's input
// file held one, or erased it in its changelog's log: the rules dropped
// the owner's copy and kept this one, or the owner's output no longer
// says it erased the key. It counts them in the results' orphans, and
// takes them out of the counts and the audit as a resolved duplicate is.
// A copy whose owner's input held none (lost in the input, which validate
// reports) is left as it is. It does nothing for a file, or for a rescale
// (which drops every stale copy); it looks only at the copies of keys
// whose owner's output may lack them (see mayLack below). A file it drops
// rows from that the rules left unchanged is rewritten.
func (e *engine) dropOrphans(sp *savepoint.Savepoint, results []*fileResult) error {
	if sp.Kind == savepoint.InputFile {
		return nil
	}
	// The owners whose output may lack a key of which another file holds
	// a stale copy: those the rules dropped rows of, when a rule may part
	// a key's copies, and those whose changelog's log erases a key (their
	// output, a snapshot, holds no log: the copy, stale in the input,
	// would be lost in the output).
	fates := e.copyFates()
	mayLack := make([]bool, len(results))
	some := false
	for i, res := range results {
		mayLack[i] = sp.Files[i].Snapshot.ErasesByLog() ||
			fates && slices.ContainsFunc(res.rules, func(rc ruleCounts) bool { return rc.dropped > 0 })
		some = some || mayLack[i]
	}
	if !some {
		return nil
	}
	byIndex := fileIndexes(sp)
	// The stale copies each file keeps of the keys of such owners, each
	// file read in its own goroutine (it reads its own output alone).
	cands := make([][]orphan, len(results))
	savepoint.ForEach(len(sp.Files), func(i int) {
		g, ok := sp.GroupOf(sp.Files[i].Subtask)
		out := results[i].out
		if !ok || out.Len() == 0 {
			return
		}
		// The file index of each key group's owner, where it is another
		// file that may lack a key, else -1.
		var owner [savepoint.NumKeyGroups]int
		looked := false
		for kg := range owner {
			owner[kg] = -1
			if x, ok := byIndex[g.Owner(kg)]; ok && x != i && mayLack[x] {
				owner[kg], looked = x, true
			}
		}
		if !looked {
			return
		}
		want := func(kg int) bool { return owner[kg] >= 0 }
		staleCopies(out, results[i].canonical, want, func(p int, op uint64, key []byte, kg int) {
			c := orphan{op: op, key: bytes.Clone(key), owner: owner[kg]}
			if out.spilled {
				c.ids = e.inputIDs(c.op, c.key)
			} else {
				in := out.idx.at(p)
				c.ids = []savepoint.Row{{Op: out.cur.Op(in), Key: bytes.Clone(out.cur.Key(in))}}
			}
			cands[i] = append(cands[i], c)
		})
	})
	found := make([][]orphan, len(results))
	for i := range cands {
		found[i] = orphansOf(cands[i], results, sp.Files)
	}
	for i, orphans := range found {
		if len(orphans) == 0 {
			continue
		}
		res := results[i]
		if !res.changed {
			// Copied otherwise: it is written anew, as a file a rule
			// changed is.
			res.changed = true
			if e.settle(sp.Files[i], res); res.err != nil {
				return savepoint.WithFile(sp.Files[i].Path, res.err)
			}
		}
		res.orphans += res.out.dropRows(orphans, res.canonical, e.dropper(res))
	}
	return nil
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

// orphansOf returns the candidates whose owner's output (results, by file
// index) holds no row of their operator and key and whose owner's input
// file (files) held one of their input ids, or erased one by its log.
func orphansOf(cands []orphan, results []*fileResult, files []*savepoint.File) []orphan {
	var out []orphan
	byOwner := map[int][]orphan{}
	for _, c := range cands {
		byOwner[c.owner] = append(byOwner[c.owner], c)
	}
	for owner, cs := range byOwner {
		held := holdsRows(results[owner].out, results[owner].canonical, cs)
		var ids []savepoint.Row
		var gone []orphan
		for x, c := range cs {
			if !held[x] {
				gone = append(gone, c)
				ids = append(ids, c.ids...)
			}
		}
		if len(gone) == 0 {
			continue
		}
		in := files[owner].Snapshot
		at := findRows(in, ids)
		for _, c := range gone {
			held := slices.ContainsFunc(at[:len(c.ids)], func(row int) bool { return row >= 0 }) ||
				slices.ContainsFunc(c.ids, func(id savepoint.Row) bool { return in.ErasedByLog(id.Op, id.Key) })
			if held {
				out = append(out, c)
			}
			at = at[len(c.ids):]
		}
	}
	return out
}

// holdsRows reports, for each of cs, whether out (canonical: in canonical
// order) holds a row of its operator and key.
func holdsRows(out *outRows, canonical bool, cs []orphan) []bool {
	held := make([]bool, len(cs))
	if canonical {
		for x, c := range cs {
			y := lowerBound(out, c.op, c.key)
			held[x] = y < out.Len() && compareRow(out.Op(y), out.Key(y), c.op, c.key) == 0
		}
		return held
	}
	want := map[uint64]map[string][]int{}
	for x, c := range cs {
		if want[c.op] == nil {
			want[c.op] = map[string][]int{}
		}
		want[c.op][string(c.key)] = append(want[c.op][string(c.key)], x)
	}
	out.eachKeyIn(0, out.Len(), func(_ int, op uint64, key []byte) bool {
		for _, x := range want[op][string(key)] {
			held[x] = true
		}
		return true
	})
	return held
}

// dropRows removes the output rows of the operators and keys of cs
// (canonical: the rows are in canonical order), after calling dropped
// with each, and returns how many it removed.
func (o *outRows) dropRows(cs []orphan, canonical bool, dropped func(savepoint.Row)) int64 {
	gone := map[int]bool{}
	if canonical {
		for _, c := range cs {
			for y := lowerBound(o, c.op, c.key); y < o.Len() && compareRow(o.Op(y), o.Key(y), c.op, c.key) == 0; y++ {
				gone[y] = true
			}
		}
	} else {
		want := map[uint64]map[string]bool{}
		for _, c := range cs {
			if want[c.op] == nil {
				want[c.op] = map[string]bool{}
			}
			want[c.op][string(c.key)] = true
		}
		o.eachKeyIn(0, o.Len(), func(p int, op uint64, key []byte) bool {
			if want[op][string(key)] {
				gone[p] = true
			}
			return true
		})
	}
	if len(gone) == 0 {
		return 0
	}
	keep := make([]uint32, 0, o.Len()-len(gone))
	for p := range o.Len() {
		if gone[p] {
			dropped(o.Row(p))
			continue
		}
		keep = append(keep, uint32(p))
	}
	o.keepPositions(keep)
	return int64(len(gone))
}
