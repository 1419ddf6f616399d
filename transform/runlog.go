package transform

import (
	"bytes"
	"sync/atomic"
)

// runLog describes the output rows of a file (or of a range of its rows) in
// order, a stretch of rows of one operator, key group and slot at a time,
// as the process pass appends them. The rescale sorts the rows into the new
// files and counts their slots from it, without reading every key twice
// more. A log is dropped when the rows are reordered (canonicalise) or when
// it would hold too many stretches (input not grouped by prefix); the
// rescale then reads the keys, as it does without one.
type runLog struct {
	runs   []loggedRun
	rows   int  // rows described
	broken bool // dropped: see above
}

// loggedRun is a stretch of n output rows of operator op whose keys are in
// key group kg (-1: not keyed, that is operator state or an empty key, as
// savepoint.RestoreKeyGroup says) and slot.
type loggedRun struct {
	op      uint64
	slot    []byte // shared, never modified
	n       int
	kg      int
	hasSlot bool
}

// A log keeps up to runLogMin stretches, and beyond that one per
// runLogRows rows at most: rows in clink's hash-map order (a stretch nearly
// every row) would make it as large as the rows.
const (
	runLogMin  = 4096
	runLogRows = 16
)

// add appends n rows (none: no-op) of operator op, key group kg and slot,
// which is copied first if clone is set (the caller's bytes may change).
func (l *runLog) add(op uint64, kg int, slot []byte, hasSlot bool, n int, clone bool) {
	if l.broken || n == 0 {
		return
	}
	l.rows += n
	if k := len(l.runs) - 1; k >= 0 {
		if r := &l.runs[k]; r.op == op && r.kg == kg && r.hasSlot == hasSlot && bytes.Equal(r.slot, slot) {
			r.n += n
			return
		}
	}
	if len(l.runs) >= runLogMin && len(l.runs) >= l.rows/runLogRows {
		l.drop()
		return
	}
	if clone {
		slot = bytes.Clone(slot)
	}
	l.runs = append(l.runs, loggedRun{op: op, slot: slot, n: n, kg: kg, hasSlot: hasSlot})
}

// drop discards the log: the rows it described were reordered, or it grew
// too large.
func (l *runLog) drop() { l.runs, l.broken = nil, true }

// appendLog appends the log of the rows that follow l's.
func (l *runLog) appendLog(m *runLog) {
	if m.broken {
		l.drop()
		return
	}
	for _, r := range m.runs {
		l.add(r.op, r.kg, r.slot, r.hasSlot, r.n, false)
	}
}

// describes reports whether l describes exactly the rows rows of an output.
func (l *runLog) describes(rows int) bool { return !l.broken && l.rows == rows && !noRunLog }

// noRunLog makes every log unusable (tests compare the rescale with and
// without them).
var noRunLog = false

// runLogUses counts the old files a rescale sorted out from their logs
// (tests check which path ran).
var runLogUses atomic.Int64
