package savepoint

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// TimerBlobSummary is one timer blob of an operator (an operator-state row
// whose key starts with 0xFF "__clink_timers", format 3.4) and its copies.
type TimerBlobSummary struct {
	Op uint64 `json:"op"`
	// Key is the blob's key, rendered (RenderKey).
	Key string `json:"key"`
	// Copies are the files' copies of the blob, in subtask order.
	Copies []TimerCopySummary `json:"copies"`
}

// TimerCopySummary is one file's copy of a timer blob.
type TimerCopySummary struct {
	// Subtask is the file's subtask (-1 for a single-file input).
	Subtask int `json:"subtask"`
	// Live is false for a frozen copy: the blob of an operator that the
	// file's chain group does not run (format 10.3), which never fires.
	Live bool `json:"live"`
	// Processing and Event count the blob's processing-time and
	// event-time timers.
	Processing int `json:"processing"`
	Event      int `json:"event"`
	// OutsideRange counts the timers whose key's group the subtask does
	// not own in its chain group: a restore of the subtask drops them (or,
	// chained, fires them away from their key's state); 0 for a single
	// file.
	OutsideRange int `json:"outside_range"`
	// EarliestMs and LatestMs are the earliest and latest timer times
	// (epoch milliseconds); absent when the blob holds no timer.
	EarliestMs *int64 `json:"earliest_ms,omitempty"`
	LatestMs   *int64 `json:"latest_ms,omitempty"`
	// Error says why the blob does not decode; "" when it does.
	Error string `json:"error,omitempty"`
}

// fileRow is a row of file sp.Files[file].
type fileRow struct {
	file int
	row  Row
}

// runningOps returns the operators chain group g runs: those with keyed rows
// in its files (keyedOps, by index in sp.Files), or every operator (all)
// when g holds every file of sp. The other operators' operator rows in g's
// files are frozen copies (format 10.3).
func (sp *Savepoint) runningOps(g Group, keyedOps []map[uint64]bool) (ops map[uint64]bool, all bool) {
	ops = map[uint64]bool{}
	n := 0
	for i, f := range sp.Files {
		if g.Contains(f.Subtask) {
			n++
			for op := range keyedOps[i] {
				ops[op] = true
			}
		}
	}
	return ops, n == len(sp.Files)
}

// summarizeTimers summarises the timer blob rows (of files by index in
// sp.Files, in file order) given the operators of each file's keyed rows.
func summarizeTimers(sp *Savepoint, keyedOps []map[uint64]bool, rows []fileRow) []TimerBlobSummary {
	out := []TimerBlobSummary{}
	running := map[Group]map[uint64]bool{}
	at := map[blobID]int{} // index in out
	var ids []blobID       // of out
	for _, fr := range rows {
		f, r := sp.Files[fr.file], fr.row
		c := TimerCopySummary{Subtask: f.Subtask, Live: true}
		g, grouped := sp.GroupOf(f.Subtask)
		grouped = grouped && sp.Kind != InputFile
		if grouped {
			ops, ok := running[g]
			if !ok {
				var all bool
				if ops, all = sp.runningOps(g, keyedOps); all {
					ops = nil
				}
				running[g] = ops
			}
			c.Live = ops == nil || ops[r.Op]
		}
		if sp.Kind == InputFile {
			c.Subtask = -1
		}
		proc, event, err := ParseTimers(r.Value)
		if err != nil {
			c.Error = err.Error()
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
				if grouped && !g.Range(f.Subtask).Contains(KeyGroupOf(t.Key)) {
					c.OutsideRange++
				}
			}
		}
		id := blobID{r.Op, string(r.Key)}
		i, ok := at[id]
		if !ok {
			i = len(out)
			at[id] = i
			ids = append(ids, id)
			out = append(out, TimerBlobSummary{Op: r.Op, Key: RenderKey(r.Key)})
		}
		out[i].Copies = append(out[i].Copies, c)
	}
	// By operator and key.
	order := make([]int, len(out))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if x, y := ids[a], ids[b]; x.op != y.op {
			return cmp.Compare(x.op, y.op)
		}
		return strings.Compare(ids[a].key, ids[b].key)
	})
	sorted := make([]TimerBlobSummary, len(out))
	for i, j := range order {
		sorted[i] = out[j]
	}
	return sorted
}

// blobID is an operator-state key of an operator.
type blobID struct {
	op  uint64
	key string
}

// writeTimers writes the Timers section of inspect's text.
func writeTimers(b *bytes.Buffer, blobs []TimerBlobSummary) {
	if len(blobs) == 0 {
		b.WriteString("\nTimers: none (no timer blobs)\n")
		return
	}
	live, frozen := 0, 0
	for _, bl := range blobs {
		for _, c := range bl.Copies {
			if c.Live {
				live += c.Processing + c.Event
			} else {
				frozen += c.Processing + c.Event
			}
		}
	}
	fmt.Fprintf(b, "\nTimers (%d in live blobs", live)
	if frozen > 0 {
		fmt.Fprintf(b, ", %d in frozen copies of other chain groups' operators", frozen)
	}
	b.WriteString(")\n")
	var bad []string
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  OP\tBLOB\tSUBTASK\tPROCESSING\tEVENT\tOUTSIDE RANGE\tEARLIEST\tLATEST")
	for _, bl := range blobs {
		for i, c := range bl.Copies {
			op, key := strconv.FormatUint(bl.Op, 10), bl.Key
			if i > 0 {
				op, key = "", ""
			}
			sub := strconv.Itoa(c.Subtask)
			switch {
			case c.Subtask < 0:
				sub = "-"
			case !c.Live:
				sub += " (frozen)"
			}
			if c.Error != "" {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t?\t?\t?\t?\t?\n", op, key, sub)
				bad = append(bad, fmt.Sprintf("  op %d blob %s of subtask %s does not decode: %s\n", bl.Op, bl.Key, sub, c.Error))
				continue
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", op, key, sub, c.Processing, c.Event, c.OutsideRange, timerTime(c.EarliestMs), timerTime(c.LatestMs))
		}
	}
	tw.Flush()
	for _, line := range bad {
		b.WriteString(line)
	}
}

// timerTime renders a timer time (epoch ms) as UTC, "-" for none.
func timerTime(ms *int64) string {
	if ms == nil {
		return "-"
	}
	return time.UnixMilli(*ms).UTC().Format("2006-01-02T15:04:05.000Z")
}
