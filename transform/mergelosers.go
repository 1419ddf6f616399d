package transform

import (
	"bytes"
	"encoding/binary"

	"github.com/sptool/sptool/savepoint"
)

// mergeSteps returns the indexes of the steps that merge rows into an
// operator or slot that has some (remap_operator and rename_slot with
// merge: true) and that a step deciding by value (decidesByValue) follows.
func mergeSteps(steps []step) []int {
	var out []int
	byValue := false
	for i := len(steps) - 1; i >= 0; i-- {
		r := steps[i].rule
		if byValue && (r.RemapOperator != nil && r.RemapOperator.Merge || r.RenameSlot != nil && r.RenameSlot.Merge) {
			out = append([]int{i}, out...)
		}
		byValue = byValue || decidesByValue(r)
	}
	return out
}

// mergeInto reports whether row r, as step s left it, is a row in the
// operator or slot that s merges rows into: keyed, operator-state or raw (a
// restore resolves copies of each, format 1.6). Timer blobs are joined, not
// resolved (see unionTimerBlobs).
func (s *step) mergeInto(r savepoint.Row, k savepoint.Key) bool {
	if k.Kind != savepoint.KindKeyed && savepoint.IsTimerBlob(r.Key) {
		return false
	}
	switch rule := s.rule; {
	case rule.RemapOperator != nil:
		return r.Op == rule.RemapOperator.To.ID
	case rule.RenameSlot != nil:
		return r.Op == rule.RenameSlot.Op.ID && k.HasSlot && string(k.Slot) == rule.RenameSlot.To
	}
	return false
}

// mergeLosers marks, by input row, the rows of f that a merge (mergeSteps)
// resolved away: at the merge, two rows held one key of the operator or
// slot merged into, and a restore keeps one (savepoint.IncomingWins, in
// stream order: the later keyed row, the greater 8-byte operator value). The copy lost must not come back when a later rule drops
// the copy kept by its value (a purge_expired, a filter on the value):
// the rules see both, and resolving duplicates when they have run would
// keep the other. The copies marked in shadowed (see dropShadowed), gone
// before any rule, take no part. It returns nil when no merge lost a copy.
// Each row runs through the steps up to the merge once more, on a worker
// of its own whose counts are thrown away.
func (e *engine) mergeLosers(f *savepoint.File, shadowed []uint64) ([]uint64, error) {
	if len(e.mergeSteps) == 0 {
		return nil, nil
	}
	snap := f.Snapshot
	n := snap.NumRows()
	lost := make([]uint64, (n+63)/64)
	found := false
	w := &worker{e: e, res: e.newResult(), subtask: f.Subtask, rr: &rangeResult{}, comp: compositeMemo{e: e}}
	cur := snap.NewCursor()
	var id []byte
	for _, s := range e.mergeSteps {
		type heldRow struct {
			i     int
			value []byte // of an operator row, which IncomingWins compares
		}
		held := map[string]heldRow{}
		err := savepoint.Guard(func() error {
			for i := range n {
				if lost[i/64]&(1<<(i%64)) != 0 || shadowed != nil && shadowed[i/64]&(1<<(i%64)) != 0 {
					continue
				}
				r := cur.Row(i)
				k := savepoint.ParseKey(r.Key)
				nr, keep, err := w.through(r, k, s+1)
				if err != nil {
					return w.rowError(i, r, k, err)
				}
				if !keep {
					continue
				}
				if nr.Op != r.Op || !sameSlice(nr.Key, r.Key) {
					k = savepoint.ParseKey(nr.Key)
				}
				if !e.steps[s].mergeInto(nr, k) {
					continue
				}
				id = append(binary.BigEndian.AppendUint64(id[:0], nr.Op), nr.Key...)
				h := heldRow{i: i}
				if nr.IsOperatorState() {
					h.value = bytes.Clone(nr.Value)
				}
				if old, ok := held[string(id)]; ok {
					found = true
					if !savepoint.IncomingWins(savepoint.Row{Op: nr.Op, Key: nr.Key, Value: old.value}, nr) {
						lost[i/64] |= 1 << (i % 64)
						continue
					}
					lost[old.i/64] |= 1 << (old.i % 64)
				}
				held[string(id)] = h
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if !found {
		return nil, nil
	}
	return lost, nil
}
