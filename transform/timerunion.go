package transform

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/sptool/sptool/savepoint"
)

// blobCopy is a timer blob kept in a file's output (an operator-state row
// whose key starts with savepoint.TimerKeyPrefix), noted as the rules keep
// it: the timer blobs of two operators that a remap_operator with merge:
// true makes one are joined before the duplicates are resolved (see
// unionTimerBlobs).
type blobCopy struct {
	pos int    // its output position
	row int    // its input row (its place in the stream)
	op  uint64 // the operator it has in the output
	key []byte // and its key there
	// inOp and inKey are the operator and key it was stored under: the
	// copies of one (inOp, inKey) are one blob stored more than once.
	inOp  uint64
	inKey []byte
}

// noteBlob notes the output row at pos, kept from input row i (r as
// stored, nr as written), when it is a timer blob.
func (res *fileResult) noteBlob(pos, i int, r, nr savepoint.Row) {
	if !bytes.HasPrefix(nr.Key, savepoint.TimerKeyPrefix) {
		return
	}
	res.blobs = append(res.blobs, blobCopy{
		pos: pos, row: i, op: nr.Op, key: bytes.Clone(nr.Key),
		inOp: r.Op, inKey: bytes.Clone(r.Key),
	})
}

// timerBlobKey is an output timer blob's operator and key.
type timerBlobKey struct {
	op  uint64
	key string
}

// unionTimerBlobs joins the timer blobs that the rules made one: where
// blobs stored under different operators or keys meet at one (op, key) of
// the output, a restore would keep one of them whole (a timer blob is one
// value, format 3.4) and the other blobs' timers would never fire. Every
// copy there is given the timers of each stored blob's copy that a restore
// keeps (the copies of one blob folded with savepoint.IncomingWins, as the
// input's values stand), as the rules left them, identical timers once and
// sorted as rescale sorts them; the duplicates are then resolved as before,
// and whichever copy survives holds them all. A copy a restore did not
// keep is not taken in: its timers are lost as they were before the rules
// ran (counted, when it can be read).
//
// It returns the keys it joined blobs at (the duplicates resolved there
// are not lost timers) and warnings for blobs kept by a restore that it
// could not read: those keys are left to the duplicate resolution (one
// copy kept whole).
func (e *engine) unionTimerBlobs(res *fileResult) (joined map[timerBlobKey]bool, warnings []string) {
	if len(res.blobs) < 2 {
		return nil, nil
	}
	groups := map[timerBlobKey][]blobCopy{}
	var order []timerBlobKey
	for _, b := range res.blobs {
		k := timerBlobKey{b.op, string(b.key)}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], b)
	}
	out := res.out
	comp := &compositeMemo{e: e}
	for _, k := range order {
		copies := groups[k] // in stream order
		// The copy of each stored blob that a restore keeps.
		type held struct {
			c     blobCopy
			value []byte // as stored
		}
		kept := map[timerBlobKey]held{}
		for _, c := range copies {
			id := timerBlobKey{c.inOp, string(c.inKey)}
			v := bytes.Clone(out.cur.Value(out.idx.at(c.pos)))
			h, ok := kept[id]
			if !ok || savepoint.IncomingWins(savepoint.Row{Op: c.inOp, Key: c.inKey, Value: h.value}, savepoint.Row{Op: c.inOp, Key: c.inKey, Value: v}) {
				kept[id] = held{c, v}
			}
		}
		if len(kept) < 2 {
			continue // one blob, maybe stored twice: the restore's rule applies
		}
		var proc, event []savepoint.Timer
		var lost, lostTimers int64
		failed := false
		for _, c := range copies {
			// (A copy: the timers' keys are slices of it, and the next
			// read of the input may reuse its buffer.)
			p, ev, err := savepoint.ParseTimers(bytes.Clone(out.Value(c.pos)))
			if kept[timerBlobKey{c.inOp, string(c.inKey)}].c.row != c.row {
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
		res.timerBlobsLost += lost
		res.timersLost += lostTimers
		value := savepoint.EncodeTimers(proc, event)
		for _, c := range copies {
			before := out.Row(c.pos)
			before.Key, before.Value = bytes.Clone(before.Key), bytes.Clone(before.Value)
			after := savepoint.Row{Op: before.Op, Key: before.Key, Value: value}
			pk := savepoint.ParseKey(before.Key)
			e.auditOut(res, before, pk, -1, comp)
			e.auditOut(res, after, pk, 1, comp)
			out.modify(c.pos, after, savepoint.Row{}) // (its key and value copied)
		}
		if joined == nil {
			joined = map[timerBlobKey]bool{}
		}
		joined[k] = true
	}
	return joined, warnings
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
