package transform

import (
	"bytes"
	"encoding/binary"
	"slices"
	"unicode/utf8"

	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
)

// prefixPlan is what the steps do to the keyed rows of one prefix: an
// operator and the stored key up to and including the slot separator (key
// group and slot). Most steps decide on those alone (a filter on op, slot
// or key_group, a slot or operator drop, a rule scoped to another slot), so
// the plan is made once per prefix and every row of a run of that prefix
// follows it: only the steps in live look at each row.
type prefixPlan struct {
	// The fields a row of clink's hash-map order reads (see worker.alone)
	// come first, in the struct's first cache line: a plan is one of
	// thousands met in turn, and with them spread over three lines the
	// rules pass of the drop of 10M such rows took 45 ms more CPU.
	op     uint64
	prefix []byte // a copy
	// before and after are the worker's counts of the prefix's operator
	// and slot (see worker.counts): rows in clink's hash-map order take a
	// plan nearly every row, and finding the counts in their maps each
	// time cost more than the plan.
	before, after *int64
	// dropBy is the step that drops every row reaching it, or -1.
	dropBy int
	// whole is set when the prefix's rows pass or drop whole as far as
	// the plan goes: it is not generic, has no remap, and keeps op (see
	// passesWhole for the rest).
	whole bool
	// generic is set when a live step may change a row's operator or key:
	// the prefix's rows then take the general path, one at a time.
	generic bool
	// purges are the key lists of the live steps when every live step is
	// a purge_keys of a slot that is not composite and no step drops the
	// prefix: a row whose user key none of them may hold passes every step
	// untouched (and the erasure audit, which looks the key up in the same
	// lists, finds nothing).
	purges []*rules.PurgeKeysSpec
	// live are the steps before dropBy (or all, when it is -1) that must
	// see each row; the others pass every row of the prefix.
	live []int
	// slot and kg are the prefix's slot (a copy) and key group (a keyed
	// row's first byte), for the output's runLog.
	slot []byte
	kg   int
	// remaps are the remap_operator steps that every row of the prefix
	// takes before any step that must see each row: outOp is the operator
	// the rows leave them with (op when there are none), and the steps
	// after them are asked about outOp.
	remaps []int
	outOp  uint64
	// afterOut is counts' after for outOp when it is not op.
	afterOut *int64
}

// planCacheMax bounds the plans a worker keeps in its map (one per prefix
// met).
const planCacheMax = 1 << 12

// slotTableBits sets the size of planCache.bySlot.
const slotTableBits = 8

// planCache holds a worker's plans: the last one used, a table of them by
// operator and slot, then key group, and a map by operator and prefix
// behind it, for input that is not grouped by prefix (clink's hash-map
// order, where nearly every row has another prefix than the one before,
// among a few operators and slots and up to 128 key groups).
type planCache struct {
	last    *prefixPlan
	bySlot  [1 << slotTableBits]slotPlans
	byKey   map[string]*prefixPlan
	scratch []byte
}

// slotPlans is an entry of planCache.bySlot: the plans of one operator's
// prefixes with one slot part (a keyed row's prefix is its key-group byte,
// then the slot part: its slot name and the separator), by key group. The
// slot part's length and first 16 bytes (zero-padded, as two words) are in
// the entry, so that a lookup compares words instead of following the
// plans' pointers (in hash-map order, a cache miss or two a row).
type slotPlans struct {
	op     uint64
	w0, w1 uint64
	slen   int
	plans  *[savepoint.NumKeyGroups]*prefixPlan
	// whole[kg] is what alone does to a row of key group kg, from the
	// entry alone: wholeAsk (the plan says), wholeKeep, wholeDrop, or
	// wholeUnlisted (keep it when no purge list of the plan, purges, may
	// hold its user key; the lists are the operator and slot's). In
	// hash-map order each row reads another plan than the row before, of
	// thousands: reading it was a cache miss a row, and half of alone's
	// time. before and after are the operator and slot's counts (set by
	// alone), and slot the slot (a plan's copy), for the rows taken so.
	whole         [savepoint.NumKeyGroups]uint8
	before, after *int64
	slot          []byte
	purges        []*rules.PurgeKeysSpec
}

// What alone does to a row of a prefix whose plan is in a slotPlans
// (slotPlans.whole).
const (
	wholeAsk      = iota // read the plan
	wholeKeep            // the prefix's rows pass whole: keep the row
	wholeDrop            // a step drops the prefix's rows whole: drop the row
	wholeUnlisted        // keep the row if no purge list may hold its key
)

// set records plan p, of key group kg, in the entry.
func (e *slotPlans) set(kg int, p *prefixPlan) {
	e.plans[kg] = p
	e.whole[kg] = wholeAsk
	// (A slot part of more than 16 bytes may share the entry's words with
	// another: its plan compares the rest.)
	if !p.whole || p.purges == nil && len(p.live) > 0 || e.slen > 16 {
		return
	}
	e.slot = p.slot
	switch {
	case p.purges != nil:
		// The lists in scope of the operator and slot: every key group's
		// plan that has lists has these (a plan has none when a step
		// drops its prefix). One that had others would be asked.
		if e.purges != nil && !slices.Equal(e.purges, p.purges) {
			return
		}
		e.whole[kg], e.purges = wholeUnlisted, p.purges
	case p.dropBy >= 0:
		e.whole[kg] = wholeDrop
	default:
		e.whole[kg] = wholeKeep
	}
}

// reset empties the entry for the plans of op and another slot part.
func (e *slotPlans) reset(op, w0, w1 uint64, slen int) {
	if e.plans == nil {
		e.plans = new([savepoint.NumKeyGroups]*prefixPlan)
	} else {
		clear(e.plans[:])
	}
	clear(e.whole[:])
	e.before, e.after, e.slot, e.purges = nil, nil, nil, nil
	e.op, e.w0, e.w1, e.slen = op, w0, w1, slen
}

// slotProbes is how many entries of planCache.bySlot, from the one
// planSlot names, may hold the plans of an operator and slot part.
const slotProbes = 4

// entry returns the entry of bySlot for operator op and a slot part of
// slen bytes starting with words w0 and w1: the one of slotProbes entries
// from planSlot's that holds them, or else the first of those that is
// free, or else planSlot's, emptied for them. Pairs that share planSlot's
// entry would otherwise take it from each other at every row: in hash-map
// order, a map lookup and an entry cleared each time (two of the twenty
// pairs of the benchmarks' files did: 10% of the rules' CPU).
func (c *planCache) entry(op, w0, w1 uint64, slen int) *slotPlans {
	h := planSlot(op, w0, w1, slen)
	for i := range slotProbes {
		e := &c.bySlot[(h+i)&(len(c.bySlot)-1)]
		if e.plans == nil {
			e.reset(op, w0, w1, slen)
			return e
		}
		if e.op == op && e.slen == slen && e.w0 == w0 && e.w1 == w1 {
			return e
		}
	}
	e := &c.bySlot[h]
	e.reset(op, w0, w1, slen)
	return e
}

// entryOf is entry for operator op and slot part part (a keyed prefix
// without its key-group byte).
func (c *planCache) entryOf(op uint64, part []byte) *slotPlans {
	w0, w1 := savepoint.PrefixWords(part)
	return c.entry(op, w0, w1, len(part))
}

// planSlot returns where in planCache.bySlot the plans of op and a slot
// part of slen bytes starting with words w0 and w1 go.
func planSlot(op, w0, w1 uint64, slen int) int {
	return int(savepoint.PrefixHash(op, w0, w1, slen) >> (64 - slotTableBits))
}

// planFor returns the plan for the prefix of the keyed row r (k parsed).
func (w *worker) planFor(r savepoint.Row, k savepoint.Key) *prefixPlan {
	plen := len(r.Key) - len(k.UserKey)
	if p := w.cachedPlan(r.Op, r.Key[:plen]); p != nil {
		return p
	}
	c := &w.plans
	prefix := r.Key[:plen]
	e := c.entryOf(r.Op, prefix[1:])
	c.scratch = append(appendOp(c.scratch[:0], r.Op), prefix...)
	p, ok := c.byKey[string(c.scratch)]
	if !ok {
		p = w.e.newPlan(r.Op, bytes.Clone(prefix), k, w.subtask)
		if c.byKey == nil {
			c.byKey = map[string]*prefixPlan{}
		}
		if len(c.byKey) < planCacheMax {
			c.byKey[string(c.scratch)] = p
		}
	}
	c.last = p
	e.set(k.KeyGroup, p)
	return p
}

// keyedPlan returns the plan of the row of operator op and stored key key,
// or nil when the key is not a keyed row's: the cached plan of its prefix,
// else planFor's.
func (w *worker) keyedPlan(op uint64, key []byte) *prefixPlan {
	plen := savepoint.KeyedPrefixLen(key)
	if plen == 0 {
		return nil
	}
	if p := w.cachedPlan(op, key[:plen]); p != nil {
		return p
	}
	return w.planFor(savepoint.Row{Op: op, Key: key}, savepoint.ParseKey(key))
}

// cachedPlan returns the plan of operator op and keyed prefix prefix (a
// key group byte, a slot, the separator) if the worker has it at hand,
// else nil (planFor makes it). In clink's hash-map order every row asks,
// through keyedPlan, with its operator and key, without making its Row and
// Key, whose copies through the stack stalled the loads after them (the
// drop of 10M such rows: 140 ms of CPU).
func (w *worker) cachedPlan(op uint64, prefix []byte) *prefixPlan {
	c := &w.plans
	if p := c.last; p != nil && p.op == op && bytes.Equal(p.prefix, prefix) {
		return p
	}
	part := prefix[1:] // a keyed row's key group, prefix[0], is below 128
	e := c.entryOf(op, part)
	if p := e.plans[prefix[0]]; p != nil && (len(part) <= 16 || bytes.Equal(p.prefix[1:], part)) {
		c.last = p
		return p
	}
	return nil
}

func appendOp(b []byte, op uint64) []byte {
	for i := 0; i < 8; i++ {
		b = append(b, byte(op>>(8*i)))
	}
	return b
}

// newPlan asks each step what it does to the rows of a prefix.
func (e *engine) newPlan(op uint64, prefix []byte, k savepoint.Key, subtask int) *prefixPlan {
	p := e.askSteps(op, prefix, k, subtask)
	p.whole = !p.generic && len(p.remaps) == 0 && p.outOp == p.op
	return p
}

// askSteps asks each step what it does to the rows of a prefix, for
// newPlan, which then sets the plan's whole.
func (e *engine) askSteps(op uint64, prefix []byte, k savepoint.Key, subtask int) *prefixPlan {
	p := &prefixPlan{op: op, outOp: op, prefix: prefix, dropBy: -1, slot: bytes.Clone(k.Slot), kg: k.KeyGroup}
	e.noteCompositeLike(op, k)
	for i := range e.steps {
		st := &e.steps[i]
		if st.apply == nil {
			continue
		}
		if st.remap != nil && st.remap.from == p.outOp && len(p.live) == 0 {
			// Every row reaching it is remapped alike: a span of the
			// output, the steps after it asked about the new operator.
			p.remaps = append(p.remaps, i)
			p.outOp = st.remap.to
			continue
		}
		v := eachRow
		if st.prefix != nil {
			v = st.prefix(p.outOp, k, subtask)
		}
		switch v {
		case dropAll:
			p.dropBy = i
			return p
		case eachRow:
			if len(p.remaps) > 0 {
				// A step sees each row after a remap: the general path
				// runs them all, row by row, from the first step.
				p.remaps, p.outOp, p.generic = nil, op, true
				return p
			}
			p.live = append(p.live, i)
			if st.rekeys {
				p.generic = true
				return p
			}
		}
	}
	if len(p.remaps) > 0 && e.movedIntoPurge(p, k) || e.atMovedPurge(p, k) {
		// The remaps move the rows into the scope of a purge that ran
		// before them, or later rules move a purge's scope to where the
		// rows are: the general path audits each output row, so that the
		// rows of listed keys it leaves there are counted.
		p.remaps, p.outOp, p.live, p.generic = nil, op, nil, true
		return p
	}
	return p.withPurges(e, op, k)
}

// atMovedPurge reports whether the rows of plan p (of slot k.Slot), which
// no step moves, are where later rules move the rows of a scoped purge
// that does not look at them (see rules.Set.PurgedScope): its audit counts
// the rows of listed keys there, which only the general path asks it
// about.
func (e *engine) atMovedPurge(p *prefixPlan, k savepoint.Key) bool {
	if p.generic || len(p.remaps) > 0 {
		return false
	}
	for _, j := range e.purges {
		if !slices.Contains(p.live, j) && e.purgedScopes[j].Match(p.op, k.Slot, k.HasSlot) {
			return true
		}
	}
	return false
}

// noteCompositeLike samples, for each purge_keys step whose scope the
// rows of a prefix (operator op, key k, the first row's) reach, the
// rules' remaps and renames before it followed, and whose slot is not
// declared composite, whether the first key looks like a composite key
// of the purge's codec (compositeLike), under the operator and slot the
// purge sees. A slot most of whose samples do holds clink's expiring
// collections: the purge matches its keys whole, so the elements of
// listed keys it holds are left (Run warns, and counts those it passed
// over). A step that drops the rows before the purge is not followed:
// the warning may then name a slot whose rows went otherwise.
func (e *engine) noteCompositeLike(op uint64, k savepoint.Key) {
	if len(e.purges) == 0 || k.Kind != savepoint.KindKeyed {
		return
	}
	cur, slot := op, string(k.Slot)
	for i := range e.steps {
		r := e.steps[i].rule
		switch {
		case r.RemapOperator != nil:
			if r.RemapOperator.From.ID == cur {
				cur = r.RemapOperator.To.ID
			}
			continue
		case r.RenameSlot != nil:
			if r.RenameSlot.Op.ID == cur && r.RenameSlot.From == slot {
				slot = r.RenameSlot.To
			}
			continue
		}
		pk := r.PurgeKeys
		if pk == nil || !pk.Scope.Match(cur, []byte(slot), k.HasSlot) || e.composite(op, k.Slot) || e.composite(cur, []byte(slot)) {
			continue
		}
		like := compositeLike(k.UserKey, pk.Codec)
		key := elemKey{i, slotKey{op: cur, slot: slot}}
		e.mu.Lock()
		if e.compositeLike == nil {
			e.compositeLike = map[elemKey]*compositeSamples{}
		}
		c := e.compositeLike[key]
		if c == nil {
			c = &compositeSamples{}
			e.compositeLike[key] = c
		}
		c.n++
		if like {
			c.like++
		}
		e.mu.Unlock()
	}
}

// compositeSamples counts a slot's prefixes sampled by noteCompositeLike
// for a purge_keys step, and those whose first key looked composite.
type compositeSamples struct{ n, like int }

// compositeLike reports whether a user key looks like a composite key of
// clink's ExpiringMapState or ExpiringListState (a key, 0x1F, an element)
// whose key a purge_keys list of the codec could hold: the codec's width
// and 0x1F for integer keys (8 bytes for int64 and uint64, 4 for uint32);
// for string keys, text before the first 0x1F (a byte no
// text key holds). A key of 8 bytes may be an int64 (3% of them hold a
// 0x1F): it looks composite only if its element is text too
// ("ab\x1fcart1", not 0x41 0x1F 0 0 0 0 0 0, the int64 8001; for uint32
// keys, not 3 0 0 0 0x1F 0 0 0, the int64 133143986179).
func compositeLike(uk []byte, codec string) bool {
	if w := rules.PurgeKeyWidth(codec); w > 0 {
		if len(uk) <= w+1 || uk[w] != 0x1F {
			return false
		}
		return len(uk) != 8 || printable(uk[w+1:])
	}
	i := bytes.IndexByte(uk, 0x1F)
	if i <= 0 || i == len(uk)-1 || !printable(uk[:i]) {
		return false
	}
	return len(uk) != 8 || printable(uk[i+1:])
}

// printable reports whether b is UTF-8 text without control characters.
func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, c := range b {
		if c < 0x20 || c == 0x7F {
			return false
		}
	}
	return true
}

// movedIntoPurge reports whether the remap steps of p move its rows (of
// slot k.Slot) into the named scope of a purge_keys step before the last
// of them, which therefore did not see them there (one that did would
// have made the plan look at each row).
func (e *engine) movedIntoPurge(p *prefixPlan, k savepoint.Key) bool {
	for _, j := range e.purges {
		if j < p.remaps[len(p.remaps)-1] && e.inPurgeScope(j, p.outOp, k) {
			return true
		}
	}
	return false
}

// withPurges sets p.purges when the live steps are all purge_keys steps and
// the slot is not composite (p.dropBy is -1). A prefix whose first key
// looks like a composite key of a list's codec (compositeLike) is left to
// the path that audits every row: the elements of listed keys in a slot
// not declared composite are left by the purge, and the audit counts
// them.
func (p *prefixPlan) withPurges(e *engine, op uint64, k savepoint.Key) *prefixPlan {
	if len(p.live) == 0 || e.composite(op, k.Slot) {
		return p
	}
	var lists []*rules.PurgeKeysSpec
	for _, i := range p.live {
		pk := e.steps[i].rule.PurgeKeys
		if pk == nil || compositeLike(k.UserKey, pk.Codec) {
			return p
		}
		lists = append(lists, pk)
	}
	p.purges = lists
	return p
}

// run processes the run of rows from i (before end) that share row r's
// operator and prefix, following plan p; it returns how many rows it
// took (at least one). r holds row i's operator and key only, its key
// perhaps read into w.keys (see scanRow).
func (w *worker) run(i, end int, r savepoint.Row, p *prefixPlan) (int, error) {
	res := w.res
	cur := res.out.cur
	// The scan reads on into w.keys: keep row i's key.
	w.runFirst = append(w.runFirst[:0], r.Key...)
	r.Key = w.runFirst
	k := savepoint.ParseKey(r.Key)
	if p.purges != nil && cur.Columnar() {
		return w.purgeRun(i, end, r, k, p)
	}
	n, inc, err := w.scanRun(i, end, r.Op, p.prefix, nil)
	if err != nil {
		return 0, err
	}
	if len(p.live) == 0 {
		last := r
		if p.dropBy < 0 && n > 1 {
			if last, err = w.lastOf(i, n); err != nil {
				return 0, err
			}
		}
		w.wholeRun(i, n, &r, &last, inc, p)
		return n, nil
	}
	before, after := w.counts(p)
	*before += int64(n)
	// Some steps must see each row: the user keys differ, the prefix
	// (and so op, key group and slot) does not. Kept rows are appended a
	// streak of consecutive ones at a time.
	plen := len(p.prefix)
	dropped := int64(0)
	streak := 0 // unmodified kept rows before j not appended yet
	flush := func(j int) error {
		if streak == 0 {
			return nil
		}
		err := w.keepRows(j-streak, streak)
		streak = 0
		return err
	}
	for j := i; j < i+n; j++ {
		// Read with pread, a block of rows at a time, rather than through
		// the map: each first touch of a mapped page costs more than
		// read's copy (a drop on len(value) over 10M rows took 8,600 page
		// faults more than a drop on the key group). The row's bytes are
		// valid until the next block: modify copies what it keeps of them.
		row, err := w.rows.Row(cur, j)
		if err != nil {
			return 0, err
		}
		k.UserKey = row.Key[plen:]
		nr, ok, err := w.live(p, row, k)
		if err != nil {
			return 0, w.rowError(j, row, k, err)
		}
		if !ok {
			dropped++
			if err := flush(j); err != nil {
				return 0, err
			}
			continue
		}
		if !sameSlice(nr.Value, row.Value) {
			if err := flush(j); err != nil {
				return 0, err
			}
			res.changed = true
			res.out.modify(res.out.Len(), nr, row)
			w.keepRun(j, 1, &nr, &nr, true)
		} else {
			streak++
		}
		w.e.auditOut(res, nr, k, 1, &w.comp)
	}
	if err := flush(i + n); err != nil {
		return 0, err
	}
	if dropped > 0 {
		res.changed = true
		*after -= dropped
	}
	// The kept rows of a strictly increasing run strictly increase.
	w.rr.sorted = w.rr.sorted && inc
	return n, nil
}

// purgeRun is run for a plan whose live steps are all purge_keys (see
// prefixPlan.purges), from a mapped file. The purge lists' filter sees each
// row's user key as the scan reads it; only the rows it lets through (a
// few in a hundred) are read whole and go through the steps, and the rows
// between them are appended as they are, their keys not read again.
func (w *worker) purgeRun(i, end int, r savepoint.Row, k savepoint.Key, p *prefixPlan) (int, error) {
	res := w.res
	plen := len(p.prefix)
	w.listed, w.listedKeys = w.listed[:0], w.listedKeys[:0]
	n, inc, err := 0, true, error(nil)
	if w.hasKnown && w.known.End <= end {
		// The pass at open may have found the run's listed rows already,
		// from some row on: those before it (read before the probe came,
		// or in another range of the pass) are scanned.
		from := w.hits.ProbedFrom(i, w.known.End)
		if rows, keys, ends, ok := w.hits.Hits(from, w.known.End); ok && from < w.known.End {
			if from > i {
				if _, _, err := w.purgeScan(i, from, r, p); err != nil {
					return 0, err
				}
			}
			for t, row := range rows {
				w.listedKeys = append(w.listedKeys, keys[ends[t]:ends[t+1]]...)
				w.listed = append(w.listed, listedRow{row, len(w.listedKeys)})
			}
			w.runLast = append(w.runLast[:0], w.known.Last...)
			n = w.known.End - i
			if hitsUsed != nil {
				hitsUsed(from - i)
			}
		}
	}
	if n == 0 {
		n, inc, err = w.purgeScan(i, end, r, p)
	}
	if err != nil {
		return 0, err
	}
	before, after := w.counts(p)
	*before += int64(n)
	// The rows kept are appended a stretch at a time: the rows up to a
	// listed one that is dropped or modified.
	empty := res.out.Len() == 0
	kept := false // some row was
	next := i     // the first row not appended yet
	appendTo := func(j int) {
		if j > next {
			res.out.idx.appendRun(next, j-next)
			kept = true
		}
	}
	var dropped int64
	if len(p.purges) == 1 {
		// The lookups' cache misses overlap when they are asked for first,
		// together (see PrefetchLookups); one by one, each waits for its own.
		p.purges[0].PrefetchLookups(len(w.listed), func(t int) []byte {
			from := 0
			if t > 0 {
				from = w.listed[t-1].keyEnd
			}
			return w.listedKeys[from+plen : w.listed[t].keyEnd]
		})
	}
	from := 0
	for _, l := range w.listed {
		// The steps look at the user key only: the row goes without its
		// value, its key copied as the scan read it.
		j := l.row
		row := savepoint.Row{Op: r.Op, Key: w.listedKeys[from:l.keyEnd:l.keyEnd]}
		from = l.keyEnd
		k.UserKey = row.Key[plen:]
		nr, ok, err := w.live(p, row, k)
		if err != nil {
			return 0, w.rowError(j, row, k, err)
		}
		if ok && sameSlice(nr.Value, row.Value) {
			w.e.auditOut(res, nr, k, 1, &w.comp)
			continue // kept as it is, with the rows around it
		}
		appendTo(j)
		next = j + 1
		if !ok {
			dropped++
			continue
		}
		res.changed = true
		// row's key is a copy (the scan's): nr's is copied whatever it is.
		res.out.modify(res.out.Len(), nr, savepoint.Row{})
		res.out.idx.appendRun(j, 1)
		kept = true
		w.e.auditOut(res, nr, k, 1, &w.comp)
	}
	appendTo(i + n)
	if dropped > 0 {
		res.changed = true
		*after -= dropped
	}
	if !kept {
		return n, nil // all dropped
	}
	// The order of what was kept, as keepRun would track it, with the
	// run's first and last rows standing for the first and last kept: in
	// a strictly increasing run they bound them (the verdict is the same
	// for sorted input, and at worst "not sorted" for a run that follows
	// rows out of order), and a run that is not makes its range unsorted
	// whatever the keys. Reading the kept ones would fault their pages in
	// through the map.
	w.track(empty, &savepoint.Row{Op: r.Op, Key: w.runFirst}, &savepoint.Row{Op: r.Op, Key: w.runLast}, inc)
	return n, nil
}

// hitsUsed, when set (by tests), is called for each run whose listed rows
// came from the pass at open, with the number of its first rows that were
// not probed there and were scanned.
var hitsUsed func(scanned int)

// purgeScan finds the rows of the run of row i (before end) that the purge
// lists of plan p may hold, reading the run's keys: it fills w.listed and
// w.listedKeys, sets w.runLast, and returns the run's length and whether
// its keys strictly increase.
func (w *worker) purgeScan(i, end int, r savepoint.Row, p *prefixPlan) (int, bool, error) {
	plen := len(p.prefix)
	return w.scanRun(i, end, r.Op, p.prefix, func(kc *savepoint.KeyColumns, j, m, row int) {
		list := func(t int) {
			w.listedKeys = append(w.listedKeys, kc.Keys[kc.Offs[t]:kc.Offs[t+1]]...)
			w.listed = append(w.listed, listedRow{row + t - j, len(w.listedKeys)})
		}
		probe := purgeProbe{lists: p.purges}
		probe.MayMatchColumn(kc.Keys, kc.Offs[j:j+m+1], 0, int32(plen), func(t int) { list(j + t) })
		w.runLast = append(w.runLast[:0], kc.Keys[kc.Offs[j+m-1]:kc.Offs[j+m]]...)
	})
}

// wholeRun counts the n rows of a run that plan p decides whole (no step
// sees each row) and drops them, or keeps them: first and last are the
// run's first and last rows, inc whether its keys strictly increase.
// (Rows by pointer, here and in keepRun and track: in clink's order each
// row is a run, and two Rows copied through the stack at each of the
// three calls stalled the loads after them.)
func (w *worker) wholeRun(i, n int, first, last *savepoint.Row, inc bool, p *prefixPlan) {
	before, after := w.counts(p)
	*before += int64(n)
	for _, s := range p.remaps {
		c := &w.res.rules[s]
		c.matched += int64(n)
		c.changed += int64(n)
	}
	if p.dropBy >= 0 {
		w.droppedWhole(p, n, after)
		return
	}
	if p.outOp != p.op {
		out := w.res.out
		w.res.changed = true
		if p.afterOut == nil {
			p.afterOut = w.res.after.counter(p.outOp, p.slot, true)
		}
		*after -= int64(n)
		*p.afterOut += int64(n)
		f, l := *first, *last
		f.Op, l.Op = p.outOp, p.outOp
		first, last = &f, &l
		out.ops.add(opSpan{pos: uint32(out.Len()), n: uint32(n), op: p.outOp})
	}
	w.keepRun(i, n, first, last, inc)
}

// droppedWhole counts n rows of plan p's prefix dropped by its step
// dropBy; after is the prefix's count after the rules.
func (w *worker) droppedWhole(p *prefixPlan, n int, after *int64) {
	c := &w.res.rules[p.dropBy]
	c.matched += int64(n)
	c.dropped += int64(n)
	w.res.changed = true
	*after -= int64(n)
}

// runOfOne is run for row i alone (r its operator and key, p its plan),
// without looking at the rows after it.
func (w *worker) runOfOne(i int, r savepoint.Row, p *prefixPlan) (int, error) {
	if !p.passesWhole(r.Key[len(p.prefix):]) {
		return w.run(i, i+1, r, p)
	}
	w.wholeRun(i, 1, &r, &r, true, p)
	return 1, nil
}

// passesWhole reports whether a row of p's prefix whose user key is
// userKey goes through the prefix's steps as its whole run does, without
// a step seeing it: none must see each row, or each that must is a
// purge_keys whose lists cannot hold userKey. A row no purge list may
// hold passes every step untouched, as purgeRun would find; in clink's
// hash-map order, where each row is a run of its own, that spares
// purgeRun's copies of its key and scan of its run (the purge of 100,000
// keys from 10M rows: 1.40 -> 0.97 s of its processing).
func (p *prefixPlan) passesWhole(userKey []byte) bool {
	if p.purges != nil {
		probe := purgeProbe{lists: p.purges}
		return !probe.mayMatch(userKey)
	}
	return len(p.live) == 0
}

// alone takes rows i, i+1, ... of a block that ends at end each as a run
// of its own, as runOfOne does, while each row's plan passes or drops it
// whole (no remap, no step that must see the row, and no purge list that
// may hold its key), and returns the first row it did not take. It is
// for input in clink's hash-map order, where nearly every row is a run of
// its own and the run machinery (its rows passed and copied from call to
// call) cost more than the rules: the drop of 10M such rows spent 1.26 s
// of CPU in processRange. The output's order is not tracked: the caller
// knows the range is out of order already.
func (w *worker) alone(i, end int) (int, error) {
	out := w.res.out
	c := &w.plans
	// The rows kept are appended to the output's index a stretch of
	// consecutive rows at a time (a call for each took 0.13 s of the 3.3 s
	// of CPU of the drop of 10M rows in clink's order, where a stretch is
	// about eight rows).
	kept, nkept := 0, 0
	keep := func(row int) {
		if nkept > 0 && kept+nkept == row {
			nkept++
			return
		}
		out.idx.appendRun(kept, nkept)
		kept, nkept = row, 1
	}
	defer func() { out.idx.appendRun(kept, nkept) }()
	for ; i < end; i++ {
		op, key, err := w.scanKey(i)
		if err != nil {
			return i, err
		}
		if plen := savepoint.KeyedPrefixLen(key); plen > 0 && plen <= 17 {
			// The prefix's entry, when it says without the plan.
			e := c.entryOf(op, key[1:plen])
			kg := key[0]
			if e.whole[kg] != wholeAsk && e.before == nil {
				e.before, e.after = w.counts(e.plans[kg])
			}
			switch e.whole[kg] {
			case wholeUnlisted:
				if probe := (purgeProbe{lists: e.purges}); probe.mayMatch(key[plen:]) {
					break // the plan's steps look at it
				}
				fallthrough
			case wholeKeep:
				*e.before++
				keep(i)
				out.log.add(op, int(kg), e.slot, true, 1, false)
				continue
			case wholeDrop:
				*e.before++
				w.droppedWhole(e.plans[kg], 1, e.after)
				continue
			}
		}
		p := w.keyedPlan(op, key)
		if p == nil || !p.whole || !p.passesWhole(key[len(p.prefix):]) {
			return i, nil
		}
		before, after := w.counts(p)
		*before++
		if p.dropBy >= 0 {
			w.droppedWhole(p, 1, after)
			continue
		}
		keep(i)
		out.log.add(p.op, p.kg, p.slot, true, 1, false)
	}
	return i, nil
}

// counts returns the worker's counts before and after of the operator and
// slot of plan p's prefix (plans are the worker's own).
func (w *worker) counts(p *prefixPlan) (before, after *int64) {
	if p.before == nil {
		p.before = w.res.before.counter(p.op, p.slot, true)
		p.after = w.res.after.counter(p.op, p.slot, true)
	}
	return p.before, p.after
}

// listedRow is a row of a run the purge lists may hold: its key ends at
// keyEnd in worker.listedKeys, after the previous one's.
type listedRow struct{ row, keyEnd int }

// scanRow returns the operator and key of row i, not its value. From a
// mapped file the key is read into w.keys, a block of rows at a time, and
// is valid until w.keys reads on (the next scanRow or scanRun).
func (w *worker) scanRow(i int) (savepoint.Row, error) {
	op, key, err := w.scanKey(i)
	return savepoint.Row{Op: op, Key: key}, err
}

// scanKey is scanRow's operator and key, without a Row.
func (w *worker) scanKey(i int) (uint64, []byte, error) {
	cur := w.res.out.cur
	if !cur.Columnar() {
		r := cur.Row(i)
		return r.Op, r.Key, nil
	}
	b, x, _ := cur.Locate(i)
	kc := &w.keys
	if !kc.Holds(b, x) {
		if err := kc.Load(b, x, min(b.Len(), x+scanBlock)); err != nil {
			return 0, nil, err
		}
	}
	return kc.Ops[x-kc.Lo], kc.Key(x), nil
}

// keepRows appends input rows [i, i+n), unmodified and strictly
// increasing, to the output (see keepRun).
func (w *worker) keepRows(i, n int) error {
	first, err := w.scanRow(i)
	if err != nil {
		return err
	}
	w.streakFirst = append(w.streakFirst[:0], first.Key...) // the next scanRow may read over it
	first.Key = w.streakFirst
	last, err := w.scanRow(i + n - 1)
	if err != nil {
		return err
	}
	w.keepRun(i, n, &first, &last, true)
	return nil
}

// live runs a row through the live steps of its plan, then the step that
// drops the rest of the prefix, if any.
func (w *worker) live(p *prefixPlan, r savepoint.Row, k savepoint.Key) (savepoint.Row, bool, error) {
	w.envOK = false
	for _, i := range p.live {
		out, keep, err := w.e.steps[i].apply(w, i, r, k)
		if err != nil {
			return r, false, w.e.stepError(i, err)
		}
		if !keep {
			w.res.rules[i].dropped++
			return r, false, nil
		}
		r = out // the value only: a plan with a step that rekeys is generic
	}
	if p.dropBy >= 0 {
		w.res.rules[p.dropBy].matched++
		w.res.rules[p.dropBy].dropped++
		return r, false, nil
	}
	return r, true, nil
}

// scanBlock is how many rows of a batch are read into a worker's
// KeyColumns at once (a variable so tests can make it small).
var scanBlock = 4096

// scanRun returns how many rows from i (included) before end have operator
// op and a key starting with prefix, and whether their keys strictly
// increase. The keys of a mapped file are read into w.keys a block of rows
// at a time (see savepoint.KeyColumns); each, if set, is called with the
// rows of the run in each block as it is read: m rows from index j of
// kc's, the first of which is row row.
func (w *worker) scanRun(i, end int, op uint64, prefix []byte, each func(kc *savepoint.KeyColumns, j, m, row int)) (int, bool, error) {
	cur := w.res.out.cur
	if w.hasKnown && w.known.Start <= i && i < w.known.End {
		return w.knownRun(i, min(end, w.known.End)-i, each)
	}
	if !cur.Columnar() {
		inc := true
		prev := cur.Key(i)
		j := i + 1
		for ; j < end; j++ {
			r := cur.Row(j)
			if r.Op != op || !bytes.HasPrefix(r.Key, prefix) {
				break
			}
			inc = inc && bytes.Compare(prev, r.Key) < 0
			prev = r.Key
		}
		return j - i, inc, nil
	}
	b, lo, left := cur.Locate(i)
	m := min(left, end-i)
	kc := &w.keys
	n, inc := 0, true
	for n < m {
		x := lo + n
		if !kc.Holds(b, x) {
			if err := kc.Load(b, x, min(b.Len(), x+scanBlock)); err != nil {
				return 0, false, err
			}
		}
		j := x - kc.Lo
		avail := min(kc.Hi, lo+m) - x
		ops, offs := kc.Ops[j:j+avail], kc.Offs[j:j+avail+1]
		if n > 0 {
			// The run goes on past a block: does its next row belong?
			key := kc.Keys[offs[0]:offs[1]]
			if ops[0] != op || !bytes.HasPrefix(key, prefix) {
				break
			}
			inc = inc && bytes.Compare(w.lastKey, key) < 0
		}
		k, kInc := scanColumns(ops, offs, kc.Keys, op, prefix)
		inc = inc && kInc
		if each != nil {
			each(kc, j, k, i+n)
		}
		n += k
		if k < avail {
			break
		}
		w.lastKey = append(w.lastKey[:0], kc.Keys[offs[k-1]:offs[k]]...)
	}
	return n, inc, nil
}

// knownRun is scanRun for the n rows from i of a prefix run of the
// input's index (worker.known): they are the run, and strictly increase.
// Their keys are read only when each wants them.
func (w *worker) knownRun(i, n int, each func(kc *savepoint.KeyColumns, j, m, row int)) (int, bool, error) {
	if each == nil {
		return n, true, nil
	}
	b, lo, _ := w.res.out.cur.Locate(i)
	kc := &w.keys
	for t := 0; t < n; {
		x := lo + t
		if !kc.HoldsKeys(b, x) {
			// The run's operator is known: its rows' are not read.
			if err := kc.LoadKeys(b, x, min(b.Len(), x+scanBlock)); err != nil {
				return 0, false, err
			}
		}
		m := min(kc.Hi, lo+n) - x
		each(kc, x-kc.Lo, m, i+t)
		t += m
	}
	return n, true, nil
}

// lastOf returns the operator and key of the last of the n rows from i,
// from the input's index when they end its run.
func (w *worker) lastOf(i, n int) (savepoint.Row, error) {
	if w.hasKnown && i+n == w.known.End {
		return savepoint.Row{Op: w.known.Op, Key: w.known.Last}, nil
	}
	return w.scanRow(i + n - 1)
}

// scanColumns is scanRun over the columns of a batch, from its first row.
//
// In a sorted batch the rows of one operator and prefix are consecutive, so
// it first finds where they would end by galloping and bisecting (a few
// probes), then checks that the rows up to there strictly increase: if they
// do, every one of them has the operator and the prefix too (keys between
// two keys with a prefix have it), and the run is exactly that. Only when
// they do not does it walk the rows one by one. The check compares keys of
// 8 to 16 bytes as two big-endian words each.
func scanColumns(ops []uint64, offs []int32, keys []byte, op uint64, prefix []byte) (int, bool) {
	in := func(j int) bool {
		return ops[j] == op && bytes.HasPrefix(keys[offs[j]:offs[j+1]], prefix)
	}
	m := len(ops)
	// Gallop: in(good) holds, bad is the first probe past it that fails.
	good, bad := 0, m
	for step := 1; good+step < m; step *= 2 {
		if !in(good + step) {
			bad = good + step
			break
		}
		good += step
	}
	for bad-good > 1 {
		mid := int(uint(good+bad) >> 1)
		if in(mid) {
			good = mid
		} else {
			bad = mid
		}
	}
	if increasing(ops[:bad], offs[:bad+1], keys, op) {
		return bad, true
	}
	return scanLinear(ops, offs, keys, op, prefix)
}

// increasing reports whether the rows of the columns all have operator op
// and strictly increasing keys.
func increasing(ops []uint64, offs []int32, keys []byte, op uint64) bool {
	if l := offs[1] - offs[0]; l >= 8 && l <= 16 {
		// The common case, keys of one length: as two words, the first 8
		// bytes and the last 8 (they overlap below 16 bytes, where the
		// bytes in common are equal if the first words are).
		at := func(j int) (uint64, uint64) {
			s := offs[j]
			return binary.BigEndian.Uint64(keys[s : s+8]), binary.BigEndian.Uint64(keys[s+l-8 : s+l])
		}
		ph, pl := at(0)
		j := 1
		for ; j < len(ops); j++ {
			if ops[j] != op || offs[j+1]-offs[j] != l {
				break
			}
			h, lw := at(j)
			if h < ph || h == ph && lw <= pl {
				return false
			}
			ph, pl = h, lw
		}
		if j == len(ops) {
			return true
		}
	}
	for j := 1; j < len(ops); j++ {
		if ops[j] != op || bytes.Compare(keys[offs[j-1]:offs[j]], keys[offs[j]:offs[j+1]]) >= 0 {
			return false
		}
	}
	return true
}

// scanLinear is scanColumns one row at a time: the rows from the first
// while they have operator op and keys starting with prefix, and whether
// their keys strictly increase (compared after the prefix, as integers for
// 8-byte user keys).
func scanLinear(ops []uint64, offs []int32, keys []byte, op uint64, prefix []byte) (int, bool) {
	inc := true
	pl := len(prefix)
	prev := keys[offs[0]:offs[1]]
	j := 1
	for ; j < len(ops); j++ {
		if ops[j] != op {
			break
		}
		key := keys[offs[j]:offs[j+1]]
		if !bytes.HasPrefix(key, prefix) {
			break
		}
		if inc {
			if a, c := prev[pl:], key[pl:]; len(a) == 8 && len(c) == 8 {
				inc = binary.BigEndian.Uint64(a) < binary.BigEndian.Uint64(c)
			} else {
				inc = bytes.Compare(a, c) < 0
			}
		}
		prev = key
	}
	return j, inc
}

// compositeMemo answers engine.composite, remembering the last answer: rows
// come grouped by operator and slot.
type compositeMemo struct {
	e    *engine
	ok   bool
	op   uint64
	slot []byte
	v    bool
}

func (m *compositeMemo) of(op uint64, slot []byte) bool {
	if m.ok && m.op == op && bytes.Equal(m.slot, slot) {
		return m.v
	}
	m.ok, m.op, m.slot, m.v = true, op, append(m.slot[:0], slot...), m.e.composite(op, slot)
	return m.v
}
