package savepoint

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sptool/sptool/internal/texttable"
)

// TimerBlobSummary is one timer blob of an operator (IsTimerBlob: an
// operator-state row whose key starts with 0xFF "__clink_timers", or the
// legacy unprefixed "__clink_timers" raw key, format 2.1 and 3.4) and its
// copies.
type TimerBlobSummary struct {
	Op uint64 `json:"op"`
	// Key is the blob's key, rendered (RenderKey).
	Key string `json:"key"`
	// Legacy marks a legacy unprefixed blob: a raw row, which clink's
	// get_operator_state reads when the operator has no 0xFF-prefixed
	// blob of that name. A restore filters it by its first byte, as key
	// group 95: a narrowed restore keeps only the copy of the subtask
	// owning key group 95 in its chain group, and no restore unions it
	// from other subtasks (validate checks what that fires). Its copies
	// are counted as a prefixed blob's are. Absent when false.
	Legacy bool `json:"legacy,omitempty"`
	// Copies are the files' copies of the blob, in subtask order.
	Copies []TimerCopySummary `json:"copies"`

	key string // the blob's key as stored, for the order
}

// TimerCopySummary is one file's copy of a timer blob.
type TimerCopySummary struct {
	// Subtask is the file's subtask (-1 for a single-file input).
	Subtask int `json:"subtask"`
	// State is BlobLive, BlobFrozen (the blob of an operator another
	// chain group runs, which never fires, format 10.3) or BlobUnknown.
	State string `json:"state"`
	// Processing and Event count the blob's processing-time and
	// event-time timers.
	Processing int `json:"processing"`
	Event      int `json:"event"`
	// OutsideRange counts the timers of a live copy whose key's group the
	// subtask does not own in its chain group: a restore of the subtask
	// drops them (or, chained, fires them away from their key's state).
	// Absent for a single file and for copies not live.
	OutsideRange *int `json:"outside_range,omitempty"`
	// EarliestMs and LatestMs are the earliest and latest timer times
	// (epoch milliseconds); absent when the blob holds no timer.
	EarliestMs *int64 `json:"earliest_ms,omitempty"`
	LatestMs   *int64 `json:"latest_ms,omitempty"`
	// Error says why the blob does not decode; absent when it does.
	Error string `json:"error,omitempty"`
}

// fileRow is a row of file sp.Files[file].
type fileRow struct {
	file int
	row  Row
}

// runsOperator reports whether a row with this key shows that the chain
// group of its file runs the row's operator: a keyed row, legacy raw keys
// included (as rescale takes an operator's keyed rows for its own).
func runsOperator(key []byte) bool { return len(key) > 0 && key[0] < NumKeyGroups }

// The states of a copy of a timer blob (TimerCopySummary.State).
const (
	// BlobLive: the file's chain group runs the operator; restores fire
	// the copy's timers.
	BlobLive = "live"
	// BlobFrozen: another chain group runs the operator (it holds keyed
	// rows of it, this one none); the copy is one every restore unions
	// into every file (format 10.3), and it never fires.
	BlobFrozen = "frozen"
	// BlobUnknown: a tree of several chain groups none of which holds
	// keyed rows of the operator (one with timers and no keyed state): which
	// group runs it is not known.
	BlobUnknown = "unknown"
)

// blobLiveness tells the state of each copy of a timer blob in a tree:
// which operators each chain group runs (those with keyed rows in its
// files; every operator when the group holds every file), and which
// operators any group runs. Built once (newBlobLiveness), it answers each
// copy without going over the files again.
type blobLiveness struct {
	running map[Group]map[uint64]bool // nil: the group holds every file
	any     map[uint64]bool
}

// newBlobLiveness reads the operators of each file's keyed rows (keyedOps,
// by index in sp.Files).
func (sp *Savepoint) newBlobLiveness(keyedOps []map[uint64]bool) *blobLiveness {
	l := &blobLiveness{running: map[Group]map[uint64]bool{}, any: map[uint64]bool{}}
	for _, g := range sp.Groups {
		ops, n := map[uint64]bool{}, 0
		for i, f := range sp.Files {
			if g.Contains(f.Subtask) {
				n++
				for op := range keyedOps[i] {
					ops[op], l.any[op] = true, true
				}
			}
		}
		if n == len(sp.Files) {
			ops = nil
		}
		l.running[g] = ops
	}
	return l
}

// state returns the state of the copy of a timer blob of op in a file of
// chain group g.
func (l *blobLiveness) state(g Group, op uint64) string {
	switch ops := l.running[g]; {
	case ops == nil || ops[op]:
		return BlobLive
	case l.any[op]:
		return BlobFrozen
	}
	return BlobUnknown
}

// summarizeTimers summarises the timer blob rows (of files by index in
// sp.Files, in file order) given the operators of each file's keyed rows.
// A blob a file stores twice counts once, as a restore keeps it
// (MergeDuplicate).
func summarizeTimers(sp *Savepoint, keyedOps []map[uint64]bool, rows []fileRow) []TimerBlobSummary {
	// Each file's blobs as a restore keeps them (Logical), as validate
	// reads them; rows come file by file.
	var kept []fileRow
	for lo := 0; lo < len(rows); {
		hi := lo + 1
		for hi < len(rows) && rows[hi].file == rows[lo].file {
			hi++
		}
		file := make([]Row, 0, hi-lo)
		for _, fr := range rows[lo:hi] {
			file = append(file, fr.row)
		}
		for _, r := range Logical(file) {
			kept = append(kept, fileRow{rows[lo].file, r})
		}
		lo = hi
	}
	rows = kept
	out := []TimerBlobSummary{}
	at := map[blobID]int{} // index in out
	live := sp.newBlobLiveness(keyedOps)
	for _, fr := range rows {
		f, r := sp.Files[fr.file], fr.row
		c := TimerCopySummary{Subtask: f.Subtask, State: BlobLive}
		g, grouped := sp.GroupOf(f.Subtask)
		grouped = grouped && sp.Kind != InputFile
		if grouped {
			if c.State = live.state(g, r.Op); c.State == BlobLive {
				c.OutsideRange = new(int)
			}
		}
		if sp.Kind == InputFile {
			c.Subtask = -1
		}
		proc, event, err := ParseTimers(r.Value)
		if err != nil {
			c.Error, c.OutsideRange = err.Error(), nil
		}
		c.Processing, c.Event = len(proc), len(event)
		for _, list := range [2][]Timer{proc, event} {
			for _, t := range list {
				if c.EarliestMs == nil || t.Time < *c.EarliestMs {
					c.EarliestMs = &t.Time
				}
				if c.LatestMs == nil || t.Time > *c.LatestMs {
					c.LatestMs = &t.Time
				}
				if c.OutsideRange != nil && !g.Range(f.Subtask).Contains(KeyGroupOf(t.Key)) {
					*c.OutsideRange++
				}
			}
		}
		id := blobID{r.Op, string(r.Key)}
		i, ok := at[id]
		if !ok {
			i = len(out)
			at[id] = i
			out = append(out, TimerBlobSummary{Op: r.Op, Key: RenderKey(r.Key), Legacy: !r.IsOperatorState(), key: id.key})
		}
		out[i].Copies = append(out[i].Copies, c)
	}
	slices.SortFunc(out, func(a, b TimerBlobSummary) int {
		if a.Op != b.Op {
			return cmp.Compare(a.Op, b.Op)
		}
		return strings.Compare(a.key, b.key)
	})
	return out
}

// blobID is an operator-state key of an operator.
type blobID struct {
	op  uint64
	key string
}

// maxTimerCopyLines is the most copies of timer blobs inspect's text lists
// one a line; above it, each blob gets one line adding up its copies (the
// JSON lists them all).
var maxTimerCopyLines = 64

// writeTimers writes the Timers section of inspect's text.
func writeTimers(b *bytes.Buffer, blobs []TimerBlobSummary) {
	if len(blobs) == 0 {
		b.WriteString("\nTimers: none (no timer blobs)\n")
		return
	}
	in, copies := map[string]int{}, 0
	for _, bl := range blobs {
		copies += len(bl.Copies)
		for _, c := range bl.Copies {
			in[c.State] += c.Processing + c.Event
		}
	}
	fmt.Fprintf(b, "\nTimers (%d in live blobs", in[BlobLive])
	if n := in[BlobFrozen]; n > 0 {
		fmt.Fprintf(b, ", %d in frozen copies of other chain groups' operators", n)
	}
	if n := in[BlobUnknown]; n > 0 {
		fmt.Fprintf(b, ", %d of operators no chain group holds keyed rows of (which group runs them is not known)", n)
	}
	b.WriteString(")\n")
	perCopy := copies <= maxTimerCopyLines
	var bad []string
	legacy := false
	tab := texttable.New("  ", 2)
	tab.Row("OP", "BLOB", "SUBTASK", "PROCESSING", "EVENT", "OUTSIDE RANGE", "EARLIEST", "LATEST")
	for _, bl := range blobs {
		var sum TimerCopySummary // of the live copies, when not per copy
		live := 0
		blobKey := bl.Key
		if bl.Legacy {
			blobKey += " (legacy)"
			legacy = true
		}
		for i, c := range bl.Copies {
			sub := strconv.Itoa(c.Subtask)
			switch {
			case c.Subtask < 0:
				sub = "-"
			case c.State != BlobLive:
				sub += " (" + c.State + ")"
			}
			if c.Error != "" {
				bad = append(bad, fmt.Sprintf("  op %d blob %s of subtask %s does not decode: %s\n", bl.Op, bl.Key, sub, c.Error))
			}
			if !perCopy {
				if c.State == BlobLive && c.Error == "" {
					live++
					sum.add(c)
				}
				continue
			}
			op, key := strconv.FormatUint(bl.Op, 10), blobKey
			if i > 0 {
				op, key = "", ""
			}
			if c.Error != "" {
				tab.Row(op, key, sub, "?", "?", "?", "?", "?")
				continue
			}
			tab.Row(append([]string{op, key, sub}, c.cells()...)...)
		}
		if !perCopy {
			copies := fmt.Sprintf("%d %s, %d live", len(bl.Copies), plural(len(bl.Copies), "copy", "copies"), live)
			tab.Row(append([]string{strconv.FormatUint(bl.Op, 10), blobKey, copies}, sum.cells()...)...)
		}
	}
	tab.WriteTo(b)
	if !perCopy {
		fmt.Fprintf(b, "  (%d copies of %d blobs: one line a blob, adding up its live copies; --json lists every copy)\n", copies, len(blobs))
	}
	if legacy {
		b.WriteString("  (legacy: an unprefixed __clink_timers raw row, which get_operator_state reads when the operator has no 0xff-prefixed blob of that name;\n" +
			"   a restore filters it as key group 95, so a narrowed restore keeps only the copy of the subtask owning key group 95)\n")
	}
	for _, line := range bad {
		b.WriteString(line)
	}
}

// add adds the counts and times of copy c to s.
func (s *TimerCopySummary) add(c TimerCopySummary) {
	s.Processing += c.Processing
	s.Event += c.Event
	if c.OutsideRange != nil {
		s.OutsideRange = ptr(deref(s.OutsideRange) + *c.OutsideRange)
	}
	if c.EarliestMs != nil && (s.EarliestMs == nil || *c.EarliestMs < *s.EarliestMs) {
		s.EarliestMs = c.EarliestMs
	}
	if c.LatestMs != nil && (s.LatestMs == nil || *c.LatestMs > *s.LatestMs) {
		s.LatestMs = c.LatestMs
	}
}

// cells renders the counts and times of s as cells of the Timers table.
func (s TimerCopySummary) cells() []string {
	outside := "-"
	if s.OutsideRange != nil {
		outside = strconv.Itoa(*s.OutsideRange)
	}
	return []string{strconv.Itoa(s.Processing), strconv.Itoa(s.Event), outside, timerTime(s.EarliestMs), timerTime(s.LatestMs)}
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// timerTime renders a timer time (epoch ms) as UTC, "-" for none.
func timerTime(ms *int64) string {
	if ms == nil {
		return "-"
	}
	return time.UnixMilli(*ms).UTC().Format("2006-01-02T15:04:05.000Z")
}
