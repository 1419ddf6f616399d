package transform

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/sptool/sptool/savepoint"
)

// blobCopy is a stored timer blob (savepoint.IsTimerBlob: an
// operator-state row whose key starts with savepoint.TimerKeyPrefix, or
// the legacy unprefixed raw key), noted as the rules keep or drop it: the
// timer blobs of two operators that a remap_operator with merge: true
// makes one are joined before the duplicates are resolved (see
// unionTimerBlobs).
type blobCopy struct {
	pos int    // its output position; -1: a rule dropped it
	row int    // its input row (its place in the stream)
	op  uint64 // the operator it has in the output (when kept)
	key []byte // and its key there
	// inOp and inKey are the operator and key it was stored under: the
	// copies of one (inOp, inKey) are one blob stored more than once.
	inOp  uint64
	inKey []byte
}

// noteBlob notes input row i (r as stored) when it is a timer blob: kept
// as output row pos (nr as written), or, with pos -1, dropped by a rule.
func (res *fileResult) noteBlob(pos, i int, r, nr savepoint.Row) {
	if !savepoint.IsTimerBlob(r.Key) {
		return
	}
	c := blobCopy{pos: pos, row: i, inOp: r.Op, inKey: bytes.Clone(r.Key)}
	if pos >= 0 {
		c.op, c.key = nr.Op, bytes.Clone(nr.Key)
	}
	res.blobs = append(res.blobs, c)
}

// timerBlobKey is a timer blob's operator and key.
type timerBlobKey struct {
	op  uint64
	key string
}

// unionTimerBlobs joins the timer blobs that the rules made one: where
// blobs stored under different operators or keys meet at one (op, key) of
// the output, a restore would keep one of them whole (a timer blob is one
// value, format 3.4) and the other blobs' timers would never fire.
//
// Of each stored blob, the copy a restore keeps is found among all its
// stored copies (folded with savepoint.IncomingWins in stream order, the
// values as stored, as dropShadowed finds it). A blob whose kept copy a
// rule dropped brings nothing: the copies it hid do not come back. Every
// copy at the key is given the timers of the kept copies there, as the
// rules left them, identical timers once and sorted as rescale sorts
// them; the duplicates are then resolved as before, and whichever copy
// survives holds them all (one value, shared by the copies). The copies a
// restore would not keep are counted as lost, as before.
//
// It returns the keys it joined blobs at, whose duplicates the caller does
// not count again (lost timers, the erasure audit: both are accounted for
// here), and warnings for kept copies it could not read: those keys are
// left to the duplicate resolution (one copy kept whole).
func (e *engine) unionTimerBlobs(res *fileResult) (joined map[timerBlobKey]bool, warnings []string) {
	if len(res.blobs) < 2 {
		return nil, nil
	}
	out := res.out
	// Each stored blob's copy that a restore keeps.
	type held struct {
		c     blobCopy
		value []byte // as stored when 8 bytes long, else nil
	}
	winners := map[timerBlobKey]held{}
	for _, c := range res.blobs { // in stream order
		id := timerBlobKey{c.inOp, string(c.inKey)}
		// Only two values of 8 bytes are compared (IncomingWins): any
		// other is held as nil, whose length is not 8 either.
		var v []byte
		if in := out.cur.Value(c.row); len(in) == 8 {
			v = bytes.Clone(in)
		}
		h, ok := winners[id]
		if !ok || savepoint.IncomingWins(savepoint.Row{Op: c.inOp, Key: c.inKey, Value: h.value}, savepoint.Row{Op: c.inOp, Key: c.inKey, Value: v}) {
			winners[id] = held{c, v}
		}
	}
	// The kept copies at each output key, and how many stored blobs' kept
	// copies are among them.
	groups := map[timerBlobKey][]blobCopy{}
	blobs := map[timerBlobKey]int{}
	var order []timerBlobKey
	for _, c := range res.blobs {
		if c.pos < 0 {
			continue
		}
		k := timerBlobKey{c.op, string(c.key)}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], c)
		if winners[timerBlobKey{c.inOp, string(c.inKey)}].c.row == c.row {
			blobs[k]++
		}
	}
	comp := &compositeMemo{e: e}
	var rewrites []blobRewrite
	for _, k := range order {
		copies := groups[k]
		if blobs[k] < 2 {
			continue // one blob, maybe stored twice: the restore's rule applies
		}
		var proc, event []savepoint.Timer
		var lost, lostTimers int64
		failed := false
		for _, c := range copies {
			// (A copy: the timers' keys are slices of it, and the next
			// read of the input may reuse its buffer.)
			p, ev, err := savepoint.ParseTimers(bytes.Clone(out.Value(c.pos)))
			if winners[timerBlobKey{c.inOp, string(c.inKey)}].c.row != c.row {
				// A copy its own blob's kept copy hid.
				if err == nil && len(p)+len(ev) > 0 {
					lost++
					lostTimers += int64(len(p) + len(ev))
				}
				continue
			}
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("op %d timer blob %s (input row %d, op %d): not merged with the other timer blobs of op %d, one of which is kept whole: %v", k.op, savepoint.RenderKey(c.key), c.row, c.inOp, k.op, err))
				failed = true
				break
			}
			proc, event = append(proc, p...), append(event, ev...)
		}
		if failed {
			continue
		}
		proc, event = uniqueTimers(proc), uniqueTimers(event)
		res.timersMerged += int64(len(proc) + len(event))
		res.blobsJoined += int64(blobs[k] - 1) // duplicates of the one kept
		res.timerBlobsLost += lost
		res.timersLost += lostTimers
		// The audit: every copy goes, one with the joined timers stays.
		key := []byte(k.key)
		pk := savepoint.ParseKey(key)
		for _, c := range copies {
			e.auditOut(res, savepoint.Row{Op: k.op, Key: key, Value: out.Value(c.pos)}, pk, -1, comp)
		}
		joinedRow := savepoint.Row{Op: k.op, Key: key, Value: savepoint.EncodeTimers(proc, event)}
		e.auditOut(res, joinedRow, pk, 1, comp)
		if out.mod == nil {
			out.mod = &modRows{}
		}
		// One copy of the key and value in the arena, shared by the copies.
		joinedEnt := modEntry{op: k.op, key: out.mod.ref(key, nil), value: out.mod.ref(joinedRow.Value, nil)}
		for _, c := range copies {
			rewrites = append(rewrites, blobRewrite{pos: uint32(c.pos), ent: joinedEnt})
		}
		if joined == nil {
			joined = map[timerBlobKey]bool{}
		}
		joined[k] = true
	}
	out.rewriteShared(rewrites)
	return joined, warnings
}

// blobRewrite is a row that unionTimerBlobs writes at an output position;
// the rows of one key share their key and value in the arena.
type blobRewrite struct {
	pos uint32
	ent modEntry
}

// rewriteShared records the rows rw at their positions, in one pass over
// the rows already rewritten (modRows.putAll).
func (o *outRows) rewriteShared(rw []blobRewrite) {
	if len(rw) == 0 {
		return
	}
	slices.SortFunc(rw, func(a, b blobRewrite) int { return cmp.Compare(a.pos, b.pos) })
	ps := make([]uint32, len(rw))
	es := make([]modEntry, len(rw))
	for i, r := range rw {
		ps[i], es[i] = r.pos, r.ent
	}
	o.mod.putAll(ps, es)
}

// uniqueTimers sorts timers by time and key, and keeps identical ones once,
// so that none fires twice.
func uniqueTimers(ts []savepoint.Timer) []savepoint.Timer {
	sortTimers(ts)
	return slices.CompactFunc(ts, func(a, b savepoint.Timer) bool {
		return a.Time == b.Time && bytes.Equal(a.Key, b.Key)
	})
}

// sortTimers sorts timers by time, then key; the order of equal ones is
// kept.
func sortTimers(ts []savepoint.Timer) {
	slices.SortStableFunc(ts, func(a, b savepoint.Timer) int {
		if c := cmp.Compare(a.Time, b.Time); c != 0 {
			return c
		}
		return bytes.Compare(a.Key, b.Key)
	})
}

// hiddenBlob is a legacy timer blob (key) that a merge moved from operator
// from into operator op, which holds a prefixed blob of the same name.
type hiddenBlob struct {
	op, from uint64
	key      string
}

// hiddenLegacyBlobs returns the legacy (unprefixed) timer blobs of blobs
// that a remap_operator with merge: true moved into an operator whose
// output holds a prefixed blob of the same name. The two are different
// keys, so they are not joined; but clink's get_operator_state reads the
// prefixed blob and falls back to the legacy key only when there is none
// (format 2.1): the moved blob's timers would never fire.
func hiddenLegacyBlobs(blobs []blobCopy) []hiddenBlob {
	prefixed := map[timerBlobKey]bool{}
	for _, c := range blobs {
		if c.pos >= 0 && len(c.key) > 0 && c.key[0] == 0xff {
			prefixed[timerBlobKey{c.op, string(c.key[1:])}] = true
		}
	}
	var out []hiddenBlob
	for _, c := range blobs {
		if c.pos < 0 || len(c.key) == 0 || c.key[0] == 0xff || c.op == c.inOp {
			continue
		}
		h := hiddenBlob{op: c.op, from: c.inOp, key: string(c.key)}
		if prefixed[timerBlobKey{c.op, h.key}] && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// hiddenLegacyWarnings words the hidden legacy blobs (see
// hiddenLegacyBlobs), each with the number of files it is in.
func hiddenLegacyWarnings(hidden map[hiddenBlob]int) []string {
	keys := slices.SortedFunc(maps.Keys(hidden), func(a, b hiddenBlob) int {
		return cmp.Or(cmp.Compare(a.op, b.op), cmp.Compare(a.key, b.key), cmp.Compare(a.from, b.from))
	})
	var warns []string
	for _, h := range keys {
		files := "1 file"
		if n := hidden[h]; n != 1 {
			files = fmt.Sprintf("%d files", n)
		}
		warns = append(warns, fmt.Sprintf("op %d: the legacy timer blob %s that the merge moved from op %d (%s) is not read after a restore: op %d holds a prefixed blob of that name, which clink reads instead of the legacy key (format 2.1), so the moved blob's timers do not fire", h.op, savepoint.RenderKey([]byte(h.key)), h.from, files, h.op))
	}
	return warns
}
