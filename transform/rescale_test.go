package transform_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sptool/sptool/internal/cli"
	"github.com/sptool/sptool/internal/gen"
	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/transform"
)

// Tests of the rescale rule (transform/rescale.go) against clink's restore
// semantics (docs/clink-format.md 5.3, 6, 10). Helpers are prefixed rs so they do
// not collide with the helpers of the other test files of this package.

// ---------------------------------------------------------------------------
// Small encoders.

func rsI64(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }

func rsLE(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) }

// rsKey identifies a row by (op, stored key).
func rsKey(op uint64, key []byte) string { return strconv.FormatUint(op, 10) + "/" + string(key) }

// rsSplitKey undoes rsKey (for messages).
func rsSplitKey(k string) (uint64, []byte) {
	a, b, _ := strings.Cut(k, "/")
	op, _ := strconv.ParseUint(a, 10, 64)
	return op, []byte(b)
}

func rsShow(k string) string {
	op, key := rsSplitKey(k)
	return fmt.Sprintf("op %d key %s", op, savepoint.RenderKey(key))
}

// rsIsOperator: first byte >= 128, what restore treats as operator state.
func rsIsOperator(key []byte) bool { return len(key) > 0 && key[0] >= savepoint.NumKeyGroups }

// rsIsFiltered: a non-empty key whose first byte is below 128: restore
// filters it by key group (keyed rows and legacy raw keys alike).
func rsIsFiltered(key []byte) bool { return len(key) > 0 && key[0] < savepoint.NumKeyGroups }

// ---------------------------------------------------------------------------
// Timer blobs (format 3.4): u32 n_proc {i64 ts, u32 klen, key} * n_proc,
// u32 n_event {...}, little-endian. Written and parsed here independently of
// transform's own codec.

const rsTimerBlobKey = "\xff__clink_timers"

type rsTimer struct {
	Event bool
	TS    int64
	Key   string
}

func (t rsTimer) String() string {
	d := "proc"
	if t.Event {
		d = "event"
	}
	return fmt.Sprintf("%s@%d key %s (kg %d)", d, t.TS, savepoint.RenderBytes([]byte(t.Key), 0), savepoint.KeyGroupOf([]byte(t.Key)))
}

func rsEncodeTimers(ts []rsTimer) []byte {
	var b []byte
	for _, event := range []bool{false, true} {
		n := 0
		for _, t := range ts {
			if t.Event == event {
				n++
			}
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(n))
		for _, t := range ts {
			if t.Event == event {
				b = binary.LittleEndian.AppendUint64(b, uint64(t.TS))
				b = binary.LittleEndian.AppendUint32(b, uint32(len(t.Key)))
				b = append(b, t.Key...)
			}
		}
	}
	return b
}

func rsParseTimers(b []byte) ([]rsTimer, error) {
	var out []rsTimer
	off := 0
	for _, event := range []bool{false, true} {
		if off+4 > len(b) {
			return nil, fmt.Errorf("truncated count at %d", off)
		}
		n := int(binary.LittleEndian.Uint32(b[off:]))
		off += 4
		for i := 0; i < n; i++ {
			if off+12 > len(b) {
				return nil, fmt.Errorf("truncated timer at %d", off)
			}
			ts := int64(binary.LittleEndian.Uint64(b[off:]))
			kl := int(binary.LittleEndian.Uint32(b[off+8:]))
			off += 12
			if off+kl > len(b) {
				return nil, fmt.Errorf("timer key runs past the blob at %d", off)
			}
			out = append(out, rsTimer{event, ts, string(b[off : off+kl])})
			off += kl
		}
	}
	if off != len(b) {
		return nil, fmt.Errorf("%d trailing bytes", len(b)-off)
	}
	return out, nil
}

// ---------------------------------------------------------------------------
// The simulated clink restore (format 5.3, 6.2, 6.3, 10.2), followed
// literally:
//  1. the assigned part is the subtask's own file v<G>/<i> (a resubmit at a
//     new parallelism sets no parent mapping, 6.2);
//  2. with union (file backend), every other subtask file of the generation
//     (those listed by the COMPLETED marker, if it lists any) contributes its
//     operator rows (first byte >= 128) whose (op, key) the own file does not
//     hold ("own wins"), appended in subtask order;
//  3. the parts are restored in order: a row whose first byte is below 128 is
//     dropped when narrowed and its key group lies outside the subtask's
//     range, else kept (the last copy wins); the empty key is always kept;
//     operator rows resolve duplicates with the greater-int64 rule when both
//     values are 8 bytes, else the later row wins. Keyed rows are never taken
//     from the other files.
//  4. timers: the restored timer blob of each of the subtask's operators is
//     filtered per timer by kg(timer key) against the range
//     (restore_timer_service).

type rsRestored struct {
	Subtask int
	Range   savepoint.KeyGroupRange
	Keyed   map[string][]byte // first byte < 128, and the empty key
	Oper    map[string][]byte // first byte >= 128
	Dropped int               // rows filtered out by the key-group range
	HasFile bool
}

func rsRestore(sp *savepoint.Savepoint, layout []savepoint.Group, narrowed, union bool) map[int]*rsRestored {
	out := map[int]*rsRestored{}
	for _, g := range layout {
		for i := g.First; i < g.First+g.Count; i++ {
			rng := g.Range(i)
			res := &rsRestored{Subtask: i, Range: rng, Keyed: map[string][]byte{}, Oper: map[string][]byte{}}
			out[i] = res
			var parts []savepoint.Row
			if own := sp.File(i); own != nil && own.Snapshot != nil {
				res.HasFile = true
				parts = append(parts, own.Snapshot.Rows...)
			}
			if union {
				ownOps := map[string]bool{}
				for _, r := range parts {
					if rsIsOperator(r.Key) {
						ownOps[rsKey(r.Op, r.Key)] = true
					}
				}
				for _, f := range sp.Files {
					if f.Subtask == i || f.Snapshot == nil {
						continue
					}
					if sp.Completed != nil && sp.Completed.HasSubtasks && !sp.Completed.HasSubtask(f.Subtask) {
						continue
					}
					for _, r := range f.Snapshot.Rows {
						if rsIsOperator(r.Key) && !ownOps[rsKey(r.Op, r.Key)] {
							parts = append(parts, r)
						}
					}
				}
			}
			for _, r := range parts {
				k := rsKey(r.Op, r.Key)
				switch {
				case rsIsOperator(r.Key):
					if old, ok := res.Oper[k]; ok && len(old) == 8 && len(r.Value) == 8 && rsLE(old) >= rsLE(r.Value) {
						continue
					}
					res.Oper[k] = r.Value
				case len(r.Key) > 0 && narrowed && !rng.Contains(int(r.Key[0])):
					res.Dropped++
				default:
					res.Keyed[k] = r.Value
				}
			}
		}
	}
	return out
}

// rsRestoredTimers returns the timers subtask res restores for op: those of
// every timer blob of op whose key's group lies in the range.
func rsRestoredTimers(t *testing.T, res *rsRestored, op uint64) map[rsTimerID]int {
	t.Helper()
	out := map[rsTimerID]int{}
	for k, v := range res.Oper {
		o, key := rsSplitKey(k)
		if o != op || !bytes.HasPrefix(key, []byte(rsTimerBlobKey)) {
			continue
		}
		ts, err := rsParseTimers(v)
		if err != nil {
			t.Errorf("subtask %d: op %d timer blob %s does not parse: %v", res.Subtask, op, savepoint.RenderKey(key), err)
			continue
		}
		for _, tm := range ts {
			if res.Range.Contains(savepoint.KeyGroupOf([]byte(tm.Key))) {
				out[rsTimerID{op, string(key), tm}]++
			}
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// Random trees.

type rsGroup struct {
	First, N    int // the old block
	NewFirst, M int // the new block
	OpA         uint64
	OpB         uint64
	Src         uint64
}

func (g rsGroup) old() savepoint.Group { return savepoint.Group{First: g.First, Count: g.N} }
func (g rsGroup) new() savepoint.Group { return savepoint.Group{First: g.NewFirst, Count: g.M} }

type rsTimerID struct {
	Op   uint64
	Blob string
	rsTimer
}

type rsAuth struct {
	Group int
	Row   savepoint.Row
}

// rsCase is a generated tree and the truth about it.
type rsCase struct {
	Seed   uint64
	Groups []rsGroup
	Files  map[int][]savepoint.Row // by old global subtask
	VM     savepoint.VersionMap
	// Keyed holds the authoritative copy of every row restore filters by key
	// group (keyed rows and legacy raw keys): the one in the file of the
	// subtask owning its key group within its chain group.
	Keyed map[string]rsAuth
	// Stale counts, per group, copies of such rows in other files.
	Stale []int64
	// Timers are the authoritative timers (in the blob of the subtask owning
	// kg(timer key)), with their group; TimersIn and TimersStale count, per
	// group, every timer of the group's own blobs and the copies in blobs of
	// non-owners.
	Timers      map[rsTimerID]int
	TimersIn    []int64
	TimersStale []int64
	// TimerOps are the operators whose blobs are split, per group.
	TimerOps []uint64
}

func (c *rsCase) layoutOld() []savepoint.Group {
	var gs []savepoint.Group
	for _, g := range c.Groups {
		gs = append(gs, g.old())
	}
	return gs
}

func (c *rsCase) layoutNew() []savepoint.Group {
	var gs []savepoint.Group
	for _, g := range c.Groups {
		gs = append(gs, g.new())
	}
	return gs
}

func (c *rsCase) String() string {
	var parts []string
	for _, g := range c.Groups {
		parts = append(parts, fmt.Sprintf("%d->%d", g.N, g.M))
	}
	return fmt.Sprintf("seed%d_%s", c.Seed, strings.Join(parts, "+"))
}

// rsNewParallelisms are the targets drawn: 1, primes, powers of two; every
// twentieth case takes one of rsWideParallelisms (128 and around it: many
// files, so kept rare to bound the test's time).
var (
	rsNewParallelisms  = []int{1, 1, 2, 3, 4, 5, 6, 7, 8, 11, 13, 16, 17, 31, 37}
	rsWideParallelisms = []int{64, 127, 128, 131}
)

var rsOldParallelisms = []int{1, 1, 2, 2, 3, 3, 4, 5, 6, 7, 8, 11, 13, 16}

func rsBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

// rsGenerate builds a random tree: one chain group (sometimes two), several
// operators and slots, int64 and string keys (plain, composite K 0x1F MK,
// empty and non-ASCII slot names), stale keyed copies with older values in
// non-owner files, a legacy raw key '_...' (key group 95) in every subtask of
// a group, a timer blob per subtask (two for a chained inner operator) with
// processing- and event-time timers and some stale ones, operator rows
// replicated in every file with equal and differing values of 8 bytes and
// not (including a key whose copies mix both sizes), frozen copies of the
// other group's operator rows and timer blob, and zero-row files (sparse
// cases).
func rsGenerate(seed uint64) *rsCase {
	r := rand.New(rand.NewPCG(seed, 0x7265736361))
	c := &rsCase{Seed: seed, Files: map[int][]savepoint.Row{}, Keyed: map[string]rsAuth{}, Timers: map[rsTimerID]int{}}
	nGroups := 1
	if r.IntN(5) == 0 {
		nGroups = 2
	}
	sparse := r.IntN(6) == 0
	first, newFirst := 0, 0
	for gi := 0; gi < nGroups; gi++ {
		n := rsOldParallelisms[r.IntN(len(rsOldParallelisms))]
		m := rsNewParallelisms[r.IntN(len(rsNewParallelisms))]
		switch r.IntN(4) {
		case 0:
			m = n * (2 + r.IntN(3)) // an integer factor up
		case 1:
			m = max(1, n/(1+r.IntN(3))) // down
		}
		if gi == 0 && seed%20 == 0 {
			m = rsWideParallelisms[(seed/20)%uint64(len(rsWideParallelisms))]
		}
		if m == n && (nGroups == 1 || r.IntN(2) == 0) {
			m = n + 1 + r.IntN(5)
		}
		base := uint64(100 * (gi + 1))
		c.Groups = append(c.Groups, rsGroup{First: first, N: n, NewFirst: newFirst, M: m, OpA: base + 1, OpB: base + 2, Src: base + 3})
		for i := first; i < first+n; i++ {
			c.Files[i] = nil // every subtask has a file, maybe with no rows
		}
		first += n
		newFirst += m
	}
	c.Stale = make([]int64, nGroups)
	c.TimersIn = make([]int64, nGroups)
	c.TimersStale = make([]int64, nGroups)
	c.TimerOps = make([]uint64, nGroups)
	type opCopies struct {
		key    string
		values map[int][]byte // old subtask -> value
	}
	groupOps := make([][]opCopies, nGroups)
	for gi, g := range c.Groups {
		add := func(i int, r savepoint.Row) { c.Files[i] = append(c.Files[i], r) }
		other := func(i int) int { return g.First + (i-g.First+1+r.IntN(g.N-1))%g.N }
		owner := func(kg int) int { return g.old().Owner(kg) }

		// Keyed rows.
		k := r.IntN(150)
		if sparse {
			k = r.IntN(4)
		}
		haveA := false
		for j := 0; j < k; j++ {
			var op uint64
			var slot string
			var uk []byte
			switch r.IntN(6) {
			case 0:
				op, slot, uk = g.OpA, "counts", rsI64(int64(r.IntN(1000))-200)
			case 1:
				op, slot, uk = g.OpA, "agg", rsI64(r.Int64())
			case 2:
				op, slot, uk = g.OpB, "profile", []byte("user-"+strconv.Itoa(r.IntN(500)))
			case 3:
				op, slot, uk = g.OpB, "cart", []byte(fmt.Sprintf("user-%d\x1fsku-%d", r.IntN(100), r.IntN(5)))
			case 4:
				op, slot, uk = g.OpB, "", []byte("k"+strconv.Itoa(r.IntN(300)))
			default:
				op, slot, uk = g.OpB, "zähler·計数", rsBytes(r, 1+r.IntN(6))
			}
			row := savepoint.Row{Op: op, Key: savepoint.EncodeKeyedKey([]byte(slot), uk), Value: rsBytes(r, r.IntN(12))}
			id := rsKey(row.Op, row.Key)
			if _, dup := c.Keyed[id]; dup {
				continue
			}
			haveA = haveA || op == g.OpA
			o := owner(int(row.Key[0]))
			c.Keyed[id] = rsAuth{gi, row}
			if g.N > 1 && r.IntN(7) == 0 {
				// A stale copy with an older value in a sibling's file,
				// before or after the owner's copy in file order.
				stale := savepoint.Row{Op: row.Op, Key: row.Key, Value: append([]byte("old-"), rsBytes(r, 3)...)}
				add(other(o), stale)
				c.Stale[gi]++
			}
			add(o, row)
		}
		if sparse {
			continue
		}

		// A legacy raw key: first byte '_' (95), no separator; one per
		// subtask with its own value (unaligned-checkpoint in-flight
		// buffers, format 10.1).
		if r.IntN(2) == 0 {
			key := []byte("__iterate_inflight__")
			for i := g.First; i < g.First+g.N; i++ {
				row := savepoint.Row{Op: g.OpB, Key: key, Value: []byte(fmt.Sprintf("buf-%d-%x", i, rsBytes(r, 4)))}
				add(i, row)
				if i == owner(95) {
					c.Keyed[rsKey(row.Op, row.Key)] = rsAuth{gi, row}
				} else {
					c.Stale[gi]++
				}
			}
		}

		// Timer blobs of operator A, one per subtask (a second one, slot
		// suffix 1, for a chained inner operator).
		if r.IntN(4) != 0 {
			if !haveA {
				row := savepoint.Row{Op: g.OpA, Key: savepoint.EncodeKeyedKey([]byte("counts"), rsI64(7)), Value: rsI64(700)}
				c.Keyed[rsKey(row.Op, row.Key)] = rsAuth{gi, row}
				add(owner(int(row.Key[0])), row)
			}
			c.TimerOps[gi] = g.OpA
			blobs := []string{rsTimerBlobKey}
			if r.IntN(3) == 0 {
				blobs = append(blobs, rsTimerBlobKey+"1")
			}
			for _, bk := range blobs {
				per := map[int][]rsTimer{}
				seen := map[rsTimer]bool{}
				for j := r.IntN(30); j > 0; j-- {
					var key []byte
					if r.IntN(2) == 0 {
						key = rsI64(int64(r.IntN(1000)) - 200)
					} else {
						key = []byte("user-" + strconv.Itoa(r.IntN(500)))
					}
					tm := rsTimer{Event: r.IntN(2) == 0, TS: gen.Now + int64(r.IntN(5))*1000 - 2000, Key: string(key)}
					if seen[tm] {
						continue
					}
					seen[tm] = true
					o := owner(savepoint.KeyGroupOf(key))
					per[o] = append(per[o], tm)
					c.Timers[rsTimerID{g.OpA, bk, tm}] = gi
					if g.N > 1 && r.IntN(6) == 0 {
						s := other(o)
						per[s] = append(per[s], tm)
						c.TimersStale[gi]++
					}
				}
				for i := g.First; i < g.First+g.N; i++ {
					list := per[i]
					r.Shuffle(len(list), func(a, b int) { list[a], list[b] = list[b], list[a] })
					c.TimersIn[gi] += int64(len(list))
					add(i, savepoint.Row{Op: g.OpA, Key: []byte(bk), Value: rsEncodeTimers(list)})
				}
			}
		}

		// Operator rows, replicated in every file of the group (10.3), with
		// equal and differing values.
		var ops []opCopies
		put := func(op uint64, key []byte, value func(i int) []byte, only func(i int) bool) {
			oc := opCopies{key: rsKey(op, key), values: map[int][]byte{}}
			for i := g.First; i < g.First+g.N; i++ {
				if only != nil && !only(i) {
					continue
				}
				oc.values[i] = value(i)
				add(i, savepoint.Row{Op: op, Key: key, Value: oc.values[i]})
			}
			if len(oc.values) > 0 {
				ops = append(ops, oc)
			}
		}
		mode := func() (func(i int) []byte, func(i int) bool) {
			switch r.IntN(4) {
			case 0: // equal everywhere
				v := rsI64(r.Int64N(1 << 40))
				return func(int) []byte { return v }, nil
			case 1: // present in some files only
				vs, in := map[int][]byte{}, map[int]bool{}
				for i := g.First; i < g.First+g.N; i++ {
					vs[i], in[i] = rsI64(r.Int64N(1<<40)-(1<<39)), r.IntN(2) == 0
				}
				return func(i int) []byte { return vs[i] }, func(i int) bool { return in[i] }
			default: // differing, negative ones included
				vs := map[int][]byte{}
				for i := g.First; i < g.First+g.N; i++ {
					vs[i] = rsI64(r.Int64N(1<<40) - (1 << 39))
				}
				return func(i int) []byte { return vs[i] }, nil
			}
		}
		for p := 0; p < 1+r.IntN(3); p++ {
			v, only := mode()
			put(g.Src, []byte("\xff__kafka_off__:"+strconv.Itoa(p)), v, only)
		}
		v, only := mode()
		put(g.Src, []byte("\xff__file_source_offset__"), v, only)
		wm := map[int][]byte{}
		equalWM := r.IntN(3) == 0
		w0 := rsBytes(r, 9)
		for i := g.First; i < g.First+g.N; i++ {
			wm[i] = rsBytes(r, 9)
			if equalWM {
				wm[i] = w0
			}
		}
		put(g.OpA, []byte("\xffwinrow.wm"), func(i int) []byte { return wm[i] }, nil)
		bc := []byte(`{"threshold":6}`)
		put(g.OpB, []byte("\xffrules|"), func(int) []byte { return bc }, nil)
		for i := g.First; i < g.First+g.N; i++ {
			put(g.Src, []byte(fmt.Sprintf("\xff_xo_pending_sub%d_15", i)), func(int) []byte { return []byte("txn-" + strconv.Itoa(i)) }, func(j int) bool { return j == i })
		}
		mixed := map[int][]byte{}
		for i := g.First; i < g.First+g.N; i++ {
			mixed[i] = rsI64(r.Int64N(1000) - 500)
			if r.IntN(3) == 0 {
				mixed[i] = rsBytes(r, 1+r.IntN(12))
			}
		}
		put(g.OpA, []byte("\xffmixed"), func(i int) []byte { return mixed[i] }, nil)
		hi := map[int][]byte{}
		for i := g.First; i < g.First+g.N; i++ {
			hi[i] = rsI64(r.Int64N(100))
		}
		put(g.OpB, []byte("\x80hi"), func(i int) []byte { return hi[i] }, nil)
		groupOps[gi] = ops
	}

	// Frozen copies of the other group's operator rows, its timer blobs
	// included (10.3): the values as the copy of one of its subtasks.
	if nGroups == 2 && !sparse {
		for gi, g := range c.Groups {
			h := c.Groups[1-gi]
			var hOps []opCopies
			hOps = append(hOps, groupOps[1-gi]...)
			blobs := map[string]map[int][]byte{}
			for i := h.First; i < h.First+h.N; i++ {
				for _, row := range c.Files[i] {
					if row.Op == h.OpA && bytes.HasPrefix(row.Key, []byte(rsTimerBlobKey)) {
						k := rsKey(row.Op, row.Key)
						if blobs[k] == nil {
							blobs[k] = map[int][]byte{}
						}
						blobs[k][i] = row.Value
					}
				}
			}
			for k, vs := range blobs {
				hOps = append(hOps, opCopies{key: k, values: vs})
			}
			slices.SortFunc(hOps, func(a, b opCopies) int { return strings.Compare(a.key, b.key) })
			for _, oc := range hOps {
				var from []int
				for i := range oc.values {
					from = append(from, i)
				}
				slices.Sort(from)
				op, key := rsSplitKey(oc.key)
				for i := g.First; i < g.First+g.N; i++ {
					if r.IntN(10) == 0 {
						continue
					}
					c.Files[i] = append(c.Files[i], savepoint.Row{Op: op, Key: key, Value: oc.values[from[r.IntN(len(from))]]})
				}
			}
		}
	}
	// Shuffle each file: clink writes hash-map order. (Files in subtask
	// order, so that a seed always gives the same tree.)
	for i := 0; i < first; i++ {
		rows := c.Files[i]
		r.Shuffle(len(rows), func(a, b int) { rows[a], rows[b] = rows[b], rows[a] })
	}
	for _, g := range c.Groups {
		if err := c.VM.Set(savepoint.VersionEntry{Op: g.OpA, StateType: "Agg", Version: 2, Slot: "agg"}); err != nil {
			panic(err)
		}
	}
	return c
}

// rsWriteTree writes files as a file-backend tree (generation 1, checkpoint
// 17, job 42, every file stamped with vm).
func rsWriteTree(t testing.TB, dir string, files map[int][]savepoint.Row, vm savepoint.VersionMap) string {
	t.Helper()
	return writeTree(t, dir, 17, "42", files, vm, savepoint.CompressNone)
}

// rsTempDir is a fresh directory removed at the end of the test, on a tmpfs
// when the machine has one (sptool fsyncs every file it writes, which on a
// disk makes the random cases slow), else t.TempDir().
func rsTempDir(t testing.TB) string {
	t.Helper()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "sptool-rescale-test-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}

func rsOpen(t testing.TB, path string, groups []savepoint.Group) *savepoint.Savepoint {
	t.Helper()
	sp, err := savepoint.Open(path, savepoint.OpenOptions{RequireValid: true, Groups: groups})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	return sp
}

func rsRules(t testing.TB, src string) *rules.Set {
	t.Helper()
	set, err := rules.Parse("rescale.yaml", []byte(src))
	if err != nil {
		t.Fatalf("rules: %v\n%s", err, src)
	}
	return set
}

// rsRuleFor is the rescale rule of a layout: the single form for one group,
// the groups form otherwise.
func rsRuleFor(groups []rsGroup) string {
	if len(groups) == 1 {
		return fmt.Sprintf("version: 1\nrules:\n  - rescale: {parallelism: %d}\n", groups[0].M)
	}
	return rsGroupsRule(groups, "")
}

// rsGroupsRule is the groups form of the rescale rule of a layout, with
// the lines opts (each indented as a key of the rule) before its groups.
func rsGroupsRule(groups []rsGroup, opts string) string {
	var b strings.Builder
	b.WriteString("version: 1\nrules:\n  - rescale:\n" + opts + "      groups:\n")
	for _, g := range groups {
		fmt.Fprintf(&b, "        - {subtasks: \"%d-%d\", parallelism: %d}\n", g.First, g.First+g.N-1, g.M)
	}
	return b.String()
}

// rsFold merges copies of one operator-state key as clink's restore does when
// several parts hold it (format 6.3, the pairwise rule applied in old subtask
// order): both values 8 bytes, the greater signed int64 (the earlier on a
// tie); otherwise the later one. It returns the value and the subtask it
// came from.
func rsFold(copies map[int][]byte) ([]byte, int) {
	subs := make([]int, 0, len(copies))
	for s := range copies {
		subs = append(subs, s)
	}
	slices.Sort(subs)
	best := subs[0]
	for _, s := range subs[1:] {
		a, b := copies[best], copies[s]
		if len(a) == 8 && len(b) == 8 && rsLE(a) >= rsLE(b) {
			continue
		}
		best = s
	}
	return copies[best], best
}

// ---------------------------------------------------------------------------
// The property test.

// TestRescaleProperty rescales random trees N -> M and checks, against the
// generator's truth and a simulated clink restore:
//   - the output has one file per new subtask, each keyed row in the file of
//     the subtask owning its key group at M, the union of keyed rows equal
//     to the input's authoritative rows (each exactly once), the operator
//     rows of every old file merged with clink's rule into every new file;
//   - each new timer blob holds exactly the timers of its range, every
//     authoritative timer survives exactly once, in its domain;
//   - a simulated restore at M (own file filtered by range, operator rows
//     unioned from the others with own wins, keyed rows never from others)
//     restores every keyed row and timer of the input, and what a simulated
//     restore of the input at N restores;
//   - the report's accounting holds and lists every merge between differing
//     values; validate at M finds no error.
func TestRescaleProperty(t *testing.T) {
	cases := 60
	if testing.Short() {
		cases = 40
	}
	start := time.Now()
	dir := rsTempDir(t)
	seen := map[string]int{} // what the cases covered
	if a, b := rsGenerate(7), rsGenerate(7); fmt.Sprint(a.Files) != fmt.Sprint(b.Files) {
		t.Fatal("rsGenerate is not deterministic: a failing seed could not be replayed")
	}
	for i := 0; i < cases; i++ {
		c := rsGenerate(uint64(i + 1))
		rsCoverage(c, seen)
		t.Run(c.String(), func(t *testing.T) {
			in := rsWriteTree(t, filepath.Join(dir, fmt.Sprintf("in-%d", i)), c.Files, c.VM)
			out := filepath.Join(dir, fmt.Sprintf("out-%d", i))
			sp := rsOpen(t, in, c.layoutOld())
			rsCheckInputTruth(t, c, sp)
			// Every other case runs on the input opened as the command line
			// opens it (columnar, memory-mapped).
			run := sp
			if c.Seed%2 == 1 {
				var err error
				if run, err = savepoint.Open(in, savepoint.OpenOptions{RequireValid: true, Groups: c.layoutOld(), Columnar: true}); err != nil {
					t.Fatal(err)
				}
				defer run.Close()
			}
			rep, err := transform.Run(context.Background(), run, rsRules(t, rsRuleFor(c.Groups)), transform.Options{Out: out})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			rsCheckCase(t, c, sp, rep, out)
		})
		if t.Failed() {
			break
		}
	}
	t.Logf("%d cases in %v; covered %v", cases, time.Since(start).Round(time.Millisecond), seen)
	if !t.Failed() && !testing.Short() {
		for _, what := range []string{"M=1", "M>N", "M<N", "M prime", "M=128", "M>128", "two groups", "unchanged group", "zero-row file",
			"stale keyed copy", "legacy raw key", "stale timer", "chained timer blob", "mixed-size operator values", "string keys", "int64 keys", "composite keys"} {
			if seen[what] == 0 {
				t.Errorf("no random case covered %s", what)
			}
		}
	}
}

// rsCoverage records what a generated case holds.
func rsCoverage(c *rsCase, seen map[string]int) {
	if len(c.Groups) > 1 {
		seen["two groups"]++
	}
	for gi, g := range c.Groups {
		switch {
		case g.M == g.N:
			seen["unchanged group"]++
		case g.M > g.N:
			seen["M>N"]++
		default:
			seen["M<N"]++
		}
		switch {
		case g.M == 1:
			seen["M=1"]++
		case g.M == 128:
			seen["M=128"]++
		case g.M > 128:
			seen["M>128"]++
		}
		if slices.Contains([]int{2, 3, 5, 7, 11, 13, 17, 31, 37, 127, 131}, g.M) {
			seen["M prime"]++
		}
		if c.Stale[gi] > 0 {
			seen["stale keyed copy"]++
		}
		if c.TimersStale[gi] > 0 {
			seen["stale timer"]++
		}
	}
	for _, rows := range c.Files {
		if len(rows) == 0 {
			seen["zero-row file"]++
		}
		for _, r := range rows {
			k := savepoint.ParseKey(r.Key)
			switch {
			case len(r.Key) > 0 && r.Key[0] == '_':
				seen["legacy raw key"]++
			case string(r.Key) == rsTimerBlobKey+"1":
				seen["chained timer blob"]++
			case k.Kind == savepoint.KindKeyed && bytes.Contains(k.UserKey, []byte{0x1f}):
				seen["composite keys"]++
			case k.Kind == savepoint.KindKeyed && len(k.UserKey) == 8 && string(k.Slot) != "zähler·計数":
				seen["int64 keys"]++
			case k.Kind == savepoint.KindKeyed:
				seen["string keys"]++
			}
		}
	}
	for _, g := range c.Groups {
		sizes := map[int]bool{}
		for i := g.First; i < g.First+g.N; i++ {
			for _, r := range c.Files[i] {
				if r.Op == g.OpA && string(r.Key) == "\xffmixed" {
					sizes[len(r.Value)] = true
				}
			}
		}
		if sizes[8] && len(sizes) > 1 {
			seen["mixed-size operator values"]++
		}
	}
}

// rsCheckInputTruth checks the generator against a simulated restore of the
// input at its own layout: what it restores is the authoritative truth.
func rsCheckInputTruth(t *testing.T, c *rsCase, sp *savepoint.Savepoint) {
	t.Helper()
	got := map[string][]byte{}
	timers := map[rsTimerID]int{}
	for _, res := range rsRestore(sp, c.layoutOld(), true, true) {
		for k, v := range res.Keyed {
			got[k] = v
		}
		gi := rsGroupOf(c.layoutOld(), res.Subtask)
		if op := c.TimerOps[gi]; op != 0 {
			for id, n := range rsRestoredTimers(t, res, op) {
				timers[id] += n
			}
		}
	}
	rsSameKeyed(t, "restore of the input at its own layout vs the generator's truth", got, c.Keyed)
	rsSameTimers(t, "timers restored from the input", timers, c.Timers)
}

func rsGroupOf(layout []savepoint.Group, i int) int {
	for gi, g := range layout {
		if g.Contains(i) {
			return gi
		}
	}
	return -1
}

func rsSameKeyed(t *testing.T, what string, got map[string][]byte, want map[string]rsAuth) {
	t.Helper()
	var bad []string
	for k, a := range want {
		v, ok := got[k]
		switch {
		case !ok:
			bad = append(bad, "missing "+rsShow(k))
		case !bytes.Equal(v, a.Row.Value):
			bad = append(bad, fmt.Sprintf("%s = %x, want %x", rsShow(k), v, a.Row.Value))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			bad = append(bad, "unexpected "+rsShow(k))
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		t.Errorf("%s: %d differences:\n  %s", what, len(bad), strings.Join(bad[:min(len(bad), 20)], "\n  "))
	}
}

func rsSameTimers(t *testing.T, what string, got map[rsTimerID]int, want map[rsTimerID]int) {
	t.Helper()
	var bad []string
	for id := range want {
		if got[id] != 1 {
			bad = append(bad, fmt.Sprintf("op %d blob %q %s: %d times, want once", id.Op, id.Blob, id.rsTimer, got[id]))
		}
	}
	for id, n := range got {
		if _, ok := want[id]; !ok {
			bad = append(bad, fmt.Sprintf("unexpected op %d blob %q %s (%d times)", id.Op, id.Blob, id.rsTimer, n))
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		t.Errorf("%s: %d differences:\n  %s", what, len(bad), strings.Join(bad[:min(len(bad), 20)], "\n  "))
	}
}

func rsCheckCase(t *testing.T, c *rsCase, sp *savepoint.Savepoint, rep *transform.Report, out string) {
	t.Helper()
	newLayout := c.layoutNew()
	outSP := rsOpen(t, out, newLayout)

	// One file per new subtask, 0 .. sum(M)-1, listed by the marker.
	total := 0
	for _, g := range c.Groups {
		total += g.M
	}
	if len(outSP.Files) != total {
		t.Fatalf("output has %d files, want %d", len(outSP.Files), total)
	}
	for i, f := range outSP.Files {
		if f.Subtask != i {
			t.Fatalf("output file %d is subtask %d", i, f.Subtask)
		}
	}
	if outSP.Completed == nil || len(outSP.Completed.Subtasks) != total || outSP.Generation != 1 || outSP.Checkpoint != 17 {
		t.Errorf("output marker %+v, generation %d, checkpoint %d", outSP.Completed, outSP.Generation, outSP.Checkpoint)
	}

	// The report's rows per operator and slot after are the output's.
	stored := map[string]int64{}
	for _, f := range outSP.Files {
		for _, r := range f.Snapshot.Rows {
			stored[fmt.Sprintf("%d/%s", r.Op, savepoint.ParseKey(r.Key).SlotName())]++
		}
	}
	for _, sl := range rep.Slots {
		if k := fmt.Sprintf("%d/%s", sl.Op, sl.Slot); sl.After != stored[k] {
			t.Errorf("report: %d rows of op %d slot %q after, the output holds %d", sl.After, sl.Op, sl.Slot, stored[k])
		}
	}

	// Per group: a copied group is the input byte for byte; a rescaled group
	// holds exactly its keyed rows, by owner at M, and the merged operator
	// rows in every file.
	var wantRowsOut int64
	for gi, g := range c.Groups {
		if g.M == g.N {
			for k := 0; k < g.N; k++ {
				a, b := sp.File(g.First+k), outSP.File(g.NewFirst+k)
				if a.CRC32C != b.CRC32C || a.Size != b.Size {
					t.Errorf("group %d kept its parallelism: subtask %d -> %d is not a byte copy", gi, g.First+k, g.NewFirst+k)
				}
				wantRowsOut += int64(len(a.Snapshot.Rows))
			}
			continue
		}
		rsCheckGroupFiles(t, c, gi, sp, outSP)
		for k := 0; k < g.M; k++ {
			wantRowsOut += int64(len(outSP.File(g.NewFirst + k).Snapshot.Rows))
		}
	}
	// The report lists each new file of a rescaled group: its range, rows
	// and timers are the file's.
	// Timers are counted in the blobs of the group's own operators (those
	// with keyed rows in its old files, or every one when the group is the
	// tree); the others' blobs are frozen copies.
	var outputs []transform.RescaleOutput
	for _, g := range c.Groups {
		own := map[uint64]bool{}
		for k := 0; k < g.N; k++ {
			for _, r := range sp.File(g.First + k).Snapshot.Rows {
				if !r.IsOperatorState() && len(r.Key) > 0 {
					own[r.Op] = true
				}
			}
		}
		whole := len(c.Groups) == 1
		for k := 0; k < g.M && g.M != g.N; k++ {
			f := outSP.File(g.NewFirst + k)
			rng := savepoint.KeyGroupRangeForSubtask(k, g.M)
			o := transform.RescaleOutput{Subtask: g.NewFirst + k, KeyGroupStart: rng.First, KeyGroupEnd: rng.Last, Rows: int64(len(f.Snapshot.Rows))}
			for _, r := range f.Snapshot.Rows {
				if bytes.HasPrefix(r.Key, savepoint.TimerKeyPrefix) && (whole || own[r.Op]) {
					proc, event, err := savepoint.ParseTimers(r.Value)
					if err != nil {
						t.Fatalf("subtask %d: %v", o.Subtask, err)
					}
					o.Timers += int64(len(proc) + len(event))
				}
			}
			outputs = append(outputs, o)
		}
	}
	if !slices.Equal(rep.Rescale.Outputs, outputs) {
		t.Errorf("report: new files %+v, the output holds %+v", rep.Rescale.Outputs, outputs)
	}

	// The simulated restore at M: every keyed row and timer of the input,
	// each restored by exactly one subtask; unfiltered (chained) restores
	// see the same keyed rows, since no file holds rows outside its range
	// (copied groups aside, which keep their stale copies).
	restored := map[string][]byte{}
	timers := map[rsTimerID]int{}
	narrow := rsRestore(outSP, newLayout, true, true)
	wide := rsRestore(outSP, newLayout, false, true)
	allOpKeys := map[string]bool{}
	for _, f := range sp.Files {
		for _, r := range f.Snapshot.Rows {
			if rsIsOperator(r.Key) {
				allOpKeys[rsKey(r.Op, r.Key)] = true
			}
		}
	}
	for i := 0; i < total; i++ {
		res := narrow[i]
		gi := rsGroupOf(newLayout, i)
		if !res.HasFile {
			t.Errorf("new subtask %d has no file: clink refuses to restore it", i)
		}
		for k, v := range res.Keyed {
			if _, dup := restored[k]; dup {
				t.Errorf("%s restored by two subtasks", rsShow(k))
			}
			restored[k] = v
		}
		if g := c.Groups[gi]; g.M != g.N && (res.Dropped != 0 || len(wide[i].Keyed) != len(res.Keyed)) {
			t.Errorf("new subtask %d: %d rows outside its range %s", i, res.Dropped, res.Range)
		}
		if op := c.TimerOps[gi]; op != 0 {
			for id, n := range rsRestoredTimers(t, res, op) {
				timers[id] += n
			}
		}
		// Every subtask restores every operator key of the tree.
		for k := range allOpKeys {
			if _, ok := res.Oper[k]; !ok {
				t.Errorf("new subtask %d does not restore %s", i, rsShow(k))
			}
		}
	}
	rsSameKeyed(t, "keyed rows restored at the new layout", restored, c.Keyed)
	rsSameTimers(t, "timers restored at the new layout", timers, c.Timers)

	// Validate: no errors, and at M every group is where it must be.
	vopts := savepoint.ValidateOptions{}
	if len(c.Groups) == 1 {
		vopts.Parallelism = c.Groups[0].M
	}
	if vr := savepoint.Validate(outSP, vopts); vr.Errors() > 0 {
		var b strings.Builder
		_ = vr.WriteText(&b)
		t.Errorf("validate of the output: %d errors\n%s", vr.Errors(), b.String())
	}

	// The report.
	rsCheckReport(t, c, sp, rep, wantRowsOut)
}

// rsCheckGroupFiles checks the files of a rescaled group against the truth.
func rsCheckGroupFiles(t *testing.T, c *rsCase, gi int, sp, outSP *savepoint.Savepoint) {
	t.Helper()
	g := c.Groups[gi]
	// Expected operator rows: every (op, key) held by an old file of the
	// group, merged with clink's rule; the group's own timer blobs aside.
	copies := map[string]map[int][]byte{}
	for i := g.First; i < g.First+g.N; i++ {
		for _, r := range sp.File(i).Snapshot.Rows {
			if rsIsFiltered(r.Key) {
				continue
			}
			k := rsKey(r.Op, r.Key)
			if copies[k] == nil {
				copies[k] = map[int][]byte{}
			}
			copies[k][i] = r.Value
		}
	}
	keyedSeen := map[string]bool{}
	for j := g.NewFirst; j < g.NewFirst+g.M; j++ {
		f := outSP.File(j)
		rng := g.new().Range(j)
		ops := map[string][]byte{}
		for _, r := range f.Snapshot.Rows {
			k := rsKey(r.Op, r.Key)
			if rsIsFiltered(r.Key) {
				kg := int(r.Key[0])
				if !rng.Contains(kg) {
					t.Errorf("new subtask %d holds %s of key group %d outside its range %s", j, rsShow(k), kg, rng)
				}
				a, ok := c.Keyed[k]
				switch {
				case !ok || a.Group != gi:
					t.Errorf("new subtask %d holds %s, which is no authoritative row of group %d", j, rsShow(k), gi)
				case !bytes.Equal(a.Row.Value, r.Value):
					t.Errorf("new subtask %d holds %s = %x, want the owner's copy %x", j, rsShow(k), r.Value, a.Row.Value)
				}
				if keyedSeen[k] {
					t.Errorf("%s written twice", rsShow(k))
				}
				keyedSeen[k] = true
				continue
			}
			if _, dup := ops[k]; dup {
				t.Errorf("new subtask %d holds %s twice", j, rsShow(k))
			}
			ops[k] = r.Value
		}
		for k, cs := range copies {
			v, ok := ops[k]
			if !ok {
				t.Errorf("new subtask %d lacks %s", j, rsShow(k))
				continue
			}
			op, key := rsSplitKey(k)
			if op == c.TimerOps[gi] && bytes.HasPrefix(key, []byte(rsTimerBlobKey)) {
				ts, err := rsParseTimers(v)
				if err != nil {
					t.Errorf("new subtask %d: timer blob %s: %v", j, rsShow(k), err)
					continue
				}
				for _, tm := range ts {
					if kg := savepoint.KeyGroupOf([]byte(tm.Key)); !rng.Contains(kg) {
						t.Errorf("new subtask %d: timer blob %s holds %s outside its range %s", j, rsShow(k), tm, rng)
					}
				}
				continue
			}
			if want, _ := rsFold(cs); !bytes.Equal(v, want) {
				t.Errorf("new subtask %d: %s = %x, want %x (clink's merge of %d copies)", j, rsShow(k), v, want, len(cs))
			}
		}
		if len(ops) != len(copies) {
			t.Errorf("new subtask %d holds %d operator rows, want %d", j, len(ops), len(copies))
		}
		if !f.Snapshot.Versions.Equal(c.VM) {
			t.Errorf("new subtask %d: version map %q, want %q", j, f.Snapshot.Versions.Pack(), c.VM.Pack())
		}
	}
	for k, a := range c.Keyed {
		if a.Group == gi && !keyedSeen[k] {
			t.Errorf("group %d: %s was not written", gi, rsShow(k))
		}
	}
}

// rsCheckReport checks the report's rescale section against the truth.
func rsCheckReport(t *testing.T, c *rsCase, sp *savepoint.Savepoint, rep *transform.Report, rowsOut int64) {
	t.Helper()
	var rowsIn int64
	for _, f := range sp.Files {
		rowsIn += int64(len(f.Snapshot.Rows))
	}
	rr := rep.Rescale
	if rr == nil {
		t.Fatal("no rescale report")
	}
	if rep.RowsIn != rowsIn || rep.RowsWritten != rowsOut {
		t.Errorf("report rows %d in / %d written, want %d / %d", rep.RowsIn, rep.RowsWritten, rowsIn, rowsOut)
	}
	// Rows in = out + dropped; the dropped are the rules' drops, the
	// duplicates resolved and the operator copies merged into one, and
	// the rows written are those out and the copies of the operator rows
	// written into every new file of their group.
	if rep.RowsOut+rep.RowsDropped != rep.RowsIn || rep.RowsDropped != rr.StaleCopies+rr.Lost+rep.DuplicatesResolved+rr.OperatorIn-rr.OperatorDistinct || rep.RowsWritten != rep.RowsOut+rr.OperatorOut-rr.OperatorDistinct {
		t.Errorf("accounting: %d in, %d out, %d dropped, %d written; %d stale, %d lost, %d dupes, operator %d in, %d distinct, %d written",
			rep.RowsIn, rep.RowsOut, rep.RowsDropped, rep.RowsWritten, rr.StaleCopies, rr.Lost, rep.DuplicatesResolved, rr.OperatorIn, rr.OperatorDistinct, rr.OperatorOut)
	}
	// The rescale rule's drops are the keyed copies it left out.
	if last := rep.PerRule[len(rep.PerRule)-1]; last.Kind != "rescale" || last.Dropped != rr.StaleCopies+rr.Lost {
		t.Errorf("rescale rule %+v: dropped %d, want the %d stale and %d lost copies", last, last.Dropped, rr.StaleCopies, rr.Lost)
	}
	var keyedIn, stale, keyedOut, opIn, opDistinct, opOut, tIn, tStale, tOut int64
	wantMerges := map[string]transform.MergeChoice{}
	for gi, g := range c.Groups {
		if want := (transform.RescaleGroupReport{OldFirst: g.First, OldParallelism: g.N, NewFirst: g.NewFirst, NewParallelism: g.M, Action: map[bool]string{true: "copy", false: "rescale"}[g.M == g.N]}); gi >= len(rr.Groups) || rr.Groups[gi] != want {
			t.Errorf("report group %d: %+v, want %+v", gi, rr.Groups, want)
		}
		if g.M == g.N {
			continue
		}
		copies := map[string]map[int][]byte{}
		for i := g.First; i < g.First+g.N; i++ {
			for _, r := range sp.File(i).Snapshot.Rows {
				if rsIsFiltered(r.Key) {
					keyedIn++
					continue
				}
				opIn++
				k := rsKey(r.Op, r.Key)
				if copies[k] == nil {
					copies[k] = map[int][]byte{}
				}
				copies[k][i] = r.Value
			}
		}
		stale += c.Stale[gi]
		for _, a := range c.Keyed {
			if a.Group == gi {
				keyedOut++
			}
		}
		opDistinct += int64(len(copies))
		opOut += int64(len(copies) * g.M)
		tIn += c.TimersIn[gi]
		tStale += c.TimersStale[gi]
		for _, tg := range c.Timers {
			if tg == gi {
				tOut++
			}
		}
		for k, cs := range copies {
			op, key := rsSplitKey(k)
			if op == c.TimerOps[gi] && bytes.HasPrefix(key, []byte(rsTimerBlobKey)) {
				continue
			}
			distinct := map[string]bool{}
			for _, v := range cs {
				distinct[string(v)] = true
			}
			if len(distinct) > 1 {
				_, from := rsFold(cs)
				wantMerges[fmt.Sprintf("%d %d %s", gi, op, savepoint.RenderKey(key))] = transform.MergeChoice{Op: op, Key: savepoint.RenderKey(key), Values: len(distinct), FromOld: from}
			}
		}
	}
	got := [][2]int64{{rr.KeyedIn, keyedIn}, {rr.StaleCopies, stale}, {rr.KeyedOut, keyedOut}, {rr.OperatorIn, opIn}, {rr.OperatorDistinct, opDistinct}, {rr.OperatorOut, opOut}, {rr.TimersIn, tIn}, {rr.TimersStale, tStale}, {rr.TimersOut, tOut}}
	names := []string{"keyed in", "stale copies", "keyed out", "operator in", "operator distinct", "operator out", "timers in", "timers stale", "timers out"}
	for i, p := range got {
		if p[0] != p[1] {
			t.Errorf("report: %s = %d, want %d", names[i], p[0], p[1])
		}
	}
	gotMerges := map[string]transform.MergeChoice{}
	for _, m := range rr.Merges {
		k := fmt.Sprintf("%d %d %s", rsGroupOf(c.layoutOld(), m.FromOld), m.Op, m.Key)
		if _, dup := gotMerges[k]; dup {
			t.Errorf("report lists the merge of %s twice", k)
		}
		gotMerges[k] = m
	}
	for k, w := range wantMerges {
		m, ok := gotMerges[k]
		if !ok {
			t.Errorf("report lists no merge of %s (%d different values)", k, w.Values)
			continue
		}
		if m.Values != w.Values || m.FromOld != w.FromOld {
			t.Errorf("merge of %s: %d values from old subtask %d (%s), want %d values from old subtask %d", k, m.Values, m.FromOld, m.Rule, w.Values, w.FromOld)
		}
	}
	for k := range gotMerges {
		if _, ok := wantMerges[k]; !ok {
			t.Errorf("report lists a merge of %s, whose copies are equal", k)
		}
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, m := range rr.Merges {
		in := ""
		if len(rr.Groups) > 1 {
			in = " in group " + m.Group
		}
		if m.Group != savepoint.FormatGroups([]savepoint.Group{c.layoutOld()[rsGroupOf(c.layoutOld(), m.FromOld)]}) {
			t.Errorf("merge %+v: group %q, want the old group of subtask %d", m, m.Group, m.FromOld)
		}
		if line := fmt.Sprintf("merged op %d key %s%s: %d values", m.Op, m.Key, in, m.Values); !strings.Contains(text.String(), line) {
			t.Errorf("text report lacks %q", line)
		}
	}
}

// ---------------------------------------------------------------------------
// Fixtures from the independent writer.

// rsTruthEntry is one entry of a testdata/independent/<tree>.truth.json.
type rsTruthEntry struct {
	Subtask       int    `json:"subtask"`
	Op            string `json:"op_id"`
	Kind          string `json:"kind"`
	KeyHex        string `json:"key_hex"`
	ValueHex      string `json:"value_hex"`
	Origin        string `json:"origin"`
	Duplicate     bool   `json:"duplicate"`
	Authoritative bool   `json:"authoritative"`
}

// rsTruthKeyed returns the authoritative keyed and raw rows of a truth file
// (the copy restore keeps), by op+key, with the subtask holding it.
func rsTruthKeyed(t *testing.T, name string) (map[string]rsAuth, []rsTruthEntry) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "independent", name+".truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	var truth struct {
		Entries []rsTruthEntry `json:"entries"`
	}
	if err := json.Unmarshal(b, &truth); err != nil {
		t.Fatal(err)
	}
	out := map[string]rsAuth{}
	for _, e := range truth.Entries {
		if e.Kind == "operator" || (e.Duplicate && !e.Authoritative) {
			continue
		}
		op, err := strconv.ParseUint(e.Op, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		key, err1 := hex.DecodeString(e.KeyHex)
		val, err2 := hex.DecodeString(e.ValueHex)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		out[rsKey(op, key)] = rsAuth{Group: e.Subtask, Row: savepoint.Row{Op: op, Key: key, Value: val}}
	}
	return out, truth.Entries
}

// rsFixture is the path of a testdata tree.
func rsFixture(parts ...string) string {
	return filepath.Join(append([]string{"..", "testdata"}, parts...)...)
}

// rsRun applies a rule file to in and writes out.
func rsRun(t *testing.T, sp *savepoint.Savepoint, src, out string) *transform.Report {
	t.Helper()
	rep, err := transform.Run(context.Background(), sp, rsRules(t, src), transform.Options{Out: out})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return rep
}

// rsKeyedOf returns the key-group-filtered rows of every file of sp, by
// op+key, failing on a row held twice.
func rsKeyedOf(t *testing.T, sp *savepoint.Savepoint) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, f := range sp.Files {
		for _, r := range f.Snapshot.Rows {
			if rsIsFiltered(r.Key) {
				k := rsKey(r.Op, r.Key)
				if _, dup := out[k]; dup {
					t.Errorf("%s held twice in the output", rsShow(k))
				}
				out[k] = r.Value
			}
		}
	}
	return out
}

// rsCheckPlacement fails unless every key-group-filtered row of sp lies in
// the file of the subtask owning its key group within its group of layout.
func rsCheckPlacement(t *testing.T, sp *savepoint.Savepoint, layout []savepoint.Group) {
	t.Helper()
	for _, f := range sp.Files {
		gi := rsGroupOf(layout, f.Subtask)
		if gi < 0 {
			t.Errorf("subtask %d is in no group of %s", f.Subtask, savepoint.FormatGroups(layout))
			continue
		}
		for _, r := range f.Snapshot.Rows {
			if rsIsFiltered(r.Key) && layout[gi].Owner(int(r.Key[0])) != f.Subtask {
				t.Errorf("subtask %d holds %s of key group %d, owned by subtask %d", f.Subtask, rsShow(rsKey(r.Op, r.Key)), r.Key[0], layout[gi].Owner(int(r.Key[0])))
			}
		}
	}
}

// rsAuthOf returns the authoritative copies of the key-group-filtered rows
// of sp at layout (the owner's), and the number of other copies.
func rsAuthOf(sp *savepoint.Savepoint, layout []savepoint.Group) (map[string]rsAuth, int) {
	out := map[string]rsAuth{}
	stale := 0
	for _, f := range sp.Files {
		gi := rsGroupOf(layout, f.Subtask)
		for _, r := range f.Snapshot.Rows {
			if !rsIsFiltered(r.Key) {
				continue
			}
			if layout[gi].Owner(int(r.Key[0])) != f.Subtask {
				stale++
				continue
			}
			out[rsKey(r.Op, r.Key)] = rsAuth{Group: gi, Row: r}
		}
	}
	return out, stale
}

// rsTimersOf returns the timers of op's blobs in the files of sp in group g
// that lie in each file's own range (the authoritative ones), and how many
// others there are.
func rsTimersOf(t *testing.T, sp *savepoint.Savepoint, g savepoint.Group, op uint64) (map[rsTimerID]int, int) {
	t.Helper()
	out := map[rsTimerID]int{}
	stale := 0
	for i := g.First; i < g.First+g.Count; i++ {
		for _, r := range sp.File(i).Snapshot.Rows {
			if r.Op != op || !bytes.HasPrefix(r.Key, []byte(rsTimerBlobKey)) {
				continue
			}
			ts, err := rsParseTimers(r.Value)
			if err != nil {
				t.Fatalf("subtask %d: %v", i, err)
			}
			for _, tm := range ts {
				if g.Owner(savepoint.KeyGroupOf([]byte(tm.Key))) == i {
					out[rsTimerID{op, string(r.Key), tm}]++
				} else {
					stale++
				}
			}
		}
	}
	return out, stale
}

func rsValueIn(sp *savepoint.Savepoint, subtask int, op uint64, key string) ([]byte, bool) {
	for _, r := range sp.File(subtask).Snapshot.Rows {
		if r.Op == op && string(r.Key) == key {
			return r.Value, true
		}
	}
	return nil, false
}

// The operators of the independent trees (truth files' "operators").
const (
	rsOpSrc  uint64 = 18088258576788386267
	rsOpAgg  uint64 = 11678514624188656593
	rsOpProf uint64 = 9978822733527292523
	rsOpBC   uint64 = 42
	rsOpSink uint64 = 7
)

// TestRescaleTwoGroups rescales the independent two-group tree (groups 0-2
// and 3-4) group by group and checks the block renumbering, the frozen copy
// of the other group's timer blob, byte copies of unchanged groups, and the
// errors for group ranges that do not match the tree.
func TestRescaleTwoGroups(t *testing.T) {
	in := rsFixture("independent", "two-groups")
	truth, entries := rsTruthKeyed(t, "two-groups")
	// The stale copies, legacy raw keys apart, as the truth file tells
	// them: keyed rows of origin stale-copy, raw rows not authoritative.
	staleKeyed, staleRaw := 0, 0
	for _, e := range entries {
		switch {
		case e.Kind == "keyed" && e.Origin == "stale-copy":
			staleKeyed++
		case e.Kind == "raw" && e.Duplicate && !e.Authoritative:
			staleRaw++
		}
	}
	oldLayout := []savepoint.Group{{First: 0, Count: 3}, {First: 3, Count: 2}}
	sp := rsOpen(t, in, nil)
	if got := savepoint.FormatGroups(sp.Groups); got != "0-2,3-4" {
		t.Fatalf("inferred groups %s, want 0-2,3-4", got)
	}
	// The command line opens trees columnar (memory-mapped, no Rows): the
	// groups must be inferred the same way.
	if col, err := savepoint.Open(in, savepoint.OpenOptions{RequireValid: true, Columnar: true}); err != nil {
		t.Fatal(err)
	} else {
		if got := savepoint.FormatGroups(col.Groups); got != "0-2,3-4" {
			t.Errorf("groups inferred from the columnar open: %s, want 0-2,3-4", got)
		}
		col.Close()
	}
	auth, stale := rsAuthOf(sp, oldLayout)
	rsSameKeyed(t, "owner copies of the input vs the truth file", func() map[string][]byte {
		m := map[string][]byte{}
		for k, a := range auth {
			m[k] = a.Row.Value
		}
		return m
	}(), truth)
	groupOf := func(k string) int { return auth[k].Group }

	t.Run("0-2=5,3-4=1", func(t *testing.T) {
		out := filepath.Join(rsTempDir(t), "out")
		rep := rsRun(t, sp, "version: 1\nrules:\n  - rescale:\n      groups:\n        - {subtasks: \"0-2\", parallelism: 5}\n        - {subtasks: \"3-4\", parallelism: 1}\n", out)
		want := []transform.RescaleGroupReport{
			{OldFirst: 0, OldParallelism: 3, NewFirst: 0, NewParallelism: 5, Action: "rescale"},
			{OldFirst: 3, OldParallelism: 2, NewFirst: 5, NewParallelism: 1, Action: "rescale"},
		}
		if !slices.Equal(rep.Rescale.Groups, want) {
			t.Errorf("report groups %+v, want %+v", rep.Rescale.Groups, want)
		}
		if rep.Rescale.StaleCopies != int64(stale) || rep.Rescale.KeyedOut != int64(len(truth)) {
			t.Errorf("report: %d keyed written, %d stale; want %d, %d", rep.Rescale.KeyedOut, rep.Rescale.StaleCopies, len(truth), stale)
		}
		if staleRaw == 0 || rep.Rescale.StaleRaw != int64(staleRaw) || rep.Rescale.StaleCopies-rep.Rescale.StaleRaw != int64(staleKeyed) {
			t.Errorf("report: %d stale copies, %d of them raw; the truth: %d keyed, %d raw", rep.Rescale.StaleCopies, rep.Rescale.StaleRaw, staleKeyed, staleRaw)
		}
		// Each raw copy was its subtask's own state (an in-flight buffer):
		// the rescale says they are lost.
		rawWarned := fmt.Sprintf("%d copies of legacy raw keys dropped: held by subtasks that do not own", staleRaw)
		if !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.HasPrefix(w, rawWarned) }) {
			t.Errorf("no warning %q... among %q", rawWarned, rep.Warnings)
		}
		newLayout := []savepoint.Group{{First: 0, Count: 5}, {First: 5, Count: 1}}
		outSP := rsOpen(t, out, newLayout)
		if len(outSP.Files) != 6 || outSP.Files[5].Rel != filepath.Join("v1", "5", "checkpoint-17.snap") {
			t.Fatalf("output files: %d, last %s", len(outSP.Files), outSP.Files[len(outSP.Files)-1].Rel)
		}
		if got := fmt.Sprint(outSP.Completed.Subtasks); got != "[0 1 2 3 4 5]" {
			t.Errorf("marker lists %s", got)
		}
		rsCheckPlacement(t, outSP, newLayout)
		got := rsKeyedOf(t, outSP)
		rsSameKeyed(t, "keyed rows of the output vs the truth", got, truth)
		// The second group's rows all land in v1/5, the first group's in 0-4.
		for _, f := range outSP.Files {
			for _, r := range f.Snapshot.Rows {
				k := rsKey(r.Op, r.Key)
				if !rsIsFiltered(r.Key) {
					continue
				}
				if wantB := groupOf(k) == 1; wantB != (f.Subtask == 5) {
					t.Errorf("%s of group %d landed in subtask %d", rsShow(k), groupOf(k), f.Subtask)
				}
			}
		}
		// Group A's own timer blob (agg) is split by key group over 0-4; the
		// frozen copy in group B's files is merged as a plain row: subtask
		// 4's copy (both differ, not 8 bytes: the later), byte for byte.
		wantTimers, staleTimers := rsTimersOf(t, sp, oldLayout[0], rsOpAgg)
		if len(wantTimers) == 0 {
			t.Fatal("the fixture has no timers of agg")
		}
		if rep.Rescale.TimersOut != int64(len(wantTimers)) || rep.Rescale.TimersStale != int64(staleTimers) {
			t.Errorf("report timers: %d out, %d stale; want %d, %d", rep.Rescale.TimersOut, rep.Rescale.TimersStale, len(wantTimers), staleTimers)
		}
		gotTimers, outStale := rsTimersOf(t, outSP, newLayout[0], rsOpAgg)
		if outStale != 0 {
			t.Errorf("%d timers outside their file's range", outStale)
		}
		rsSameTimers(t, "agg's timers after the rescale", gotTimers, wantTimers)
		frozen3, _ := rsValueIn(sp, 3, rsOpAgg, rsTimerBlobKey)
		frozen4, _ := rsValueIn(sp, 4, rsOpAgg, rsTimerBlobKey)
		if bytes.Equal(frozen3, frozen4) {
			t.Fatal("the fixture's frozen copies are equal; the test needs them to differ")
		}
		if v, ok := rsValueIn(outSP, 5, rsOpAgg, rsTimerBlobKey); !ok || !bytes.Equal(v, frozen4) {
			t.Errorf("v1/5's frozen copy of agg's timer blob = %x, want subtask 4's copy %x unchanged", v, frozen4)
		}
		found := false
		for _, m := range rep.Rescale.Merges {
			if m.Op == rsOpAgg && m.Key == savepoint.RenderKey([]byte(rsTimerBlobKey)) {
				found = found || (m.FromOld == 4 && m.Rule == "highest-subtask")
			}
		}
		if !found {
			t.Errorf("report lists no merge of group B's frozen copies of agg's timer blob: %+v", rep.Rescale.Merges)
		}
		// Restore at the new layout.
		restored := map[string][]byte{}
		for _, res := range rsRestore(outSP, newLayout, true, true) {
			for k, v := range res.Keyed {
				restored[k] = v
			}
		}
		rsSameKeyed(t, "restore of the output", restored, truth)
		if vr := savepoint.Validate(outSP, savepoint.ValidateOptions{}); vr.Errors() > 0 {
			var b strings.Builder
			_ = vr.WriteText(&b)
			t.Errorf("validate: %s", b.String())
		}
	})

	t.Run("unchanged group shifts", func(t *testing.T) {
		out := filepath.Join(rsTempDir(t), "out")
		rep := rsRun(t, sp, "version: 1\nrules:\n  - rescale:\n      groups:\n        - {subtasks: \"0-2\", parallelism: 4}\n        - {subtasks: \"3-4\", parallelism: 2}\n", out)
		if g := rep.Rescale.Groups[1]; g.Action != "copy" || g.NewFirst != 4 {
			t.Errorf("group 2: %+v, want a copy to 4-5", g)
		}
		for old, nw := range map[int]int{3: 4, 4: 5} {
			for _, suffix := range []string{"", ".meta"} {
				a, err1 := os.ReadFile(filepath.Join(in, "v1", strconv.Itoa(old), "checkpoint-17.snap"+suffix))
				b, err2 := os.ReadFile(filepath.Join(out, "v1", strconv.Itoa(nw), "checkpoint-17.snap"+suffix))
				if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
					t.Errorf("v1/%d/checkpoint-17.snap%s is not a byte copy of v1/%d's (%v, %v)", nw, suffix, old, err1, err2)
				}
			}
		}
		newLayout := []savepoint.Group{{First: 0, Count: 4}, {First: 4, Count: 2}}
		outSP := rsOpen(t, out, newLayout)
		restored := map[string][]byte{}
		for _, res := range rsRestore(outSP, newLayout, true, true) {
			for k, v := range res.Keyed {
				restored[k] = v
			}
		}
		rsSameKeyed(t, "restore of the output", restored, truth)
	})

	t.Run("unchanged first group", func(t *testing.T) {
		out := filepath.Join(rsTempDir(t), "out")
		rep := rsRun(t, sp, "version: 1\nrules:\n  - rescale:\n      groups:\n        - {subtasks: \"0-2\", parallelism: 3}\n        - {subtasks: \"3-4\", parallelism: 1}\n", out)
		if g := rep.Rescale.Groups[0]; g.Action != "copy" {
			t.Errorf("group 1: %+v, want a copy", g)
		}
		for i := 0; i < 3; i++ {
			a, _ := os.ReadFile(filepath.Join(in, "v1", strconv.Itoa(i), "checkpoint-17.snap"))
			b, _ := os.ReadFile(filepath.Join(out, "v1", strconv.Itoa(i), "checkpoint-17.snap"))
			if len(a) == 0 || !bytes.Equal(a, b) {
				t.Errorf("v1/%d changed", i)
			}
		}
		outSP := rsOpen(t, out, []savepoint.Group{{First: 0, Count: 3}, {First: 3, Count: 1}})
		if len(outSP.Files) != 4 {
			t.Errorf("%d files, want 4", len(outSP.Files))
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct{ rule, want string }{
			{"rescale: {parallelism: 4}", "the tree has 2 chain groups (subtasks 0-2,3-4)"},
			{"rescale: {groups: [{subtasks: \"0-2\", parallelism: 5}, {subtasks: \"4\", parallelism: 1}]}", "rescale group 2 (subtasks 4) does not match the tree: its groups must tile its subtasks 0-4 in order (the tree's inferred chain groups are 0-2,3-4)"},
			{"rescale: {groups: [{subtasks: \"1-2\", parallelism: 5}, {subtasks: \"3-4\", parallelism: 1}]}", "rescale group 1 (subtasks 1-2) does not match the tree"},
			{"rescale: {groups: [{subtasks: \"0-2\", parallelism: 5}]}", "rescale groups 0-2 do not cover the tree's subtasks 0-4 (its inferred chain groups are 0-2,3-4)"},
			{"rescale: {groups: [{subtasks: \"0-2\", parallelism: 5}, {subtasks: \"3-5\", parallelism: 1}]}", "do not cover the tree's subtasks 0-4 (its inferred chain groups are 0-2,3-4)"},
		} {
			out := filepath.Join(rsTempDir(t), "out")
			_, err := transform.Run(context.Background(), sp, rsRules(t, "version: 1\nrules:\n  - "+tc.rule+"\n"), transform.Options{Out: out})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: error %v, want one containing %q", tc.rule, err, tc.want)
			}
			if _, err := os.Lstat(out); err == nil {
				t.Errorf("%s: output written", tc.rule)
			}
		}
		// Groups that tile the subtasks but differ from the inferred ones
		// are used, with a warning naming both. Read so, the tree holds
		// lost rows: the rescale refuses to drop them unless told to.
		wrong := "rescale: {groups: [{subtasks: \"0-1\", parallelism: 1}, {subtasks: \"2-4\", parallelism: 1}]"
		if _, err := transform.Run(context.Background(), sp, rsRules(t, "version: 1\nrules:\n  - "+wrong+"}\n"), transform.Options{DryRun: true}); err == nil || !strings.Contains(err.Error(), "lost keyed rows") {
			t.Errorf("rescale with the wrong groups: %v, want an error naming the lost rows", err)
		}
		rep, err := transform.Run(context.Background(), sp, rsRules(t, "version: 1\nrules:\n  - "+wrong+", drop_lost: true}\n"), transform.Options{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(rep.Warnings, func(w string) bool {
			return strings.Contains(w, "the rescale groups 0-1,2-4 differ from the chain groups inferred from the tree (0-2,3-4)")
		}) {
			t.Errorf("no warning about the groups: %q", rep.Warnings)
		}
		// The lost rows' error points at where the groups read came from:
		// the rule's own, here.
		if _, err := transform.Run(context.Background(), sp, rsRules(t, "version: 1\nrules:\n  - "+wrong+"}\n"), transform.Options{DryRun: true}); err == nil || !strings.Contains(err.Error(), "the wrong chain groups (the rescale rule's groups)") {
			t.Errorf("lost rows under the rule's groups: %v, want the rule's groups named", err)
		}

		// Groups given for the tree (--groups) that the rule's differ from
		// are refused, naming both, not replaced by the rule's; the same
		// groups in both are read as given.
		given := rsOpen(t, in, oldLayout)
		out := filepath.Join(rsTempDir(t), "out")
		_, err = transform.Run(context.Background(), given, rsRules(t, "version: 1\nrules:\n  - "+wrong+", drop_lost: true}\n"), transform.Options{Out: out})
		if err == nil || !strings.Contains(err.Error(), "the rescale groups 0-1,2-4 differ from the chain groups given for the tree (0-2,3-4, --groups)") {
			t.Errorf("rule groups that differ from the given ones: %v, want them refused, naming both", err)
		}
		if _, err := os.Lstat(out); err == nil {
			t.Errorf("output written with groups that differ from the given ones")
		}
		same := "rescale: {groups: [{subtasks: \"0-2\", parallelism: 5}, {subtasks: \"3-4\", parallelism: 1}]}"
		rep, err = transform.Run(context.Background(), given, rsRules(t, "version: 1\nrules:\n  - "+same+"\n"), transform.Options{DryRun: true})
		if err != nil {
			t.Fatalf("rule groups equal to the given ones: %v", err)
		}
		if slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, "rescale groups") }) {
			t.Errorf("a warning about groups that agree: %q", rep.Warnings)
		}
		// Given groups that leave rows lost are named as --groups.
		whole := rsOpen(t, in, []savepoint.Group{{First: 0, Count: 5}})
		if _, err := transform.Run(context.Background(), whole, rsRules(t, "version: 1\nrules:\n  - rescale: {parallelism: 3}\n"), transform.Options{DryRun: true}); err == nil || !strings.Contains(err.Error(), "the wrong chain groups (--groups)") {
			t.Errorf("lost rows under the given groups: %v, want --groups named", err)
		}
	})
}

// rsTimerTree builds a tree of two chain groups: group A (subtasks 0-2,
// operator 1 with keyed rows and a timer blob per subtask: processing- and
// event-time timers, one key with a timer of the same time in both domains,
// a stale copy of a timer and a stale timer in non-owners' blobs) and group
// B (subtasks 3-4, operator 2) whose files hold frozen copies of A's blob.
func rsTimerTree(t *testing.T, dir string) (map[rsTimerID]int, []byte, []byte) {
	t.Helper()
	a := savepoint.Group{First: 0, Count: 3}
	files := map[int][]savepoint.Row{0: nil, 1: nil, 2: nil, 3: nil, 4: nil}
	per := map[int][]rsTimer{}
	want := map[rsTimerID]int{}
	for i := 0; i < 40; i++ {
		uk := []byte("user-" + strconv.Itoa(i))
		key := savepoint.EncodeKeyedKey([]byte("s"), uk)
		files[a.Owner(int(key[0]))] = append(files[a.Owner(int(key[0]))], savepoint.Row{Op: 1, Key: key, Value: rsI64(int64(i))})
		var ts []rsTimer
		switch i % 3 {
		case 0:
			ts = []rsTimer{{Event: true, TS: 1000 + int64(i), Key: string(uk)}}
		case 1:
			ts = []rsTimer{{Event: false, TS: 2000 + int64(i), Key: string(uk)}}
		default: // the same time in both domains: two timers
			ts = []rsTimer{{Event: false, TS: 7, Key: string(uk)}, {Event: true, TS: 7, Key: string(uk)}}
		}
		o := a.Owner(savepoint.KeyGroupOf(uk))
		for _, tm := range ts {
			per[o] = append(per[o], tm)
			want[rsTimerID{1, rsTimerBlobKey, tm}] = 0
		}
	}
	// Stale: a copy of user-0's timer and a timer of user-1 nobody owns, in
	// blobs of subtasks that do not own their key group.
	for _, uk := range []string{"user-0", "user-1"} {
		o := a.Owner(savepoint.KeyGroupOf([]byte(uk)))
		other := (o + 1) % 3
		per[other] = append(per[other], rsTimer{Event: true, TS: 1000, Key: uk})
	}
	for i := 0; i < 3; i++ {
		files[i] = append(files[i], savepoint.Row{Op: 1, Key: []byte(rsTimerBlobKey), Value: rsEncodeTimers(per[i])})
	}
	b := savepoint.Group{First: 3, Count: 2}
	for i := 0; i < 20; i++ {
		key := savepoint.EncodeKeyedKey([]byte("t"), rsI64(int64(i)))
		files[b.Owner(int(key[0]))] = append(files[b.Owner(int(key[0]))], savepoint.Row{Op: 2, Key: key, Value: []byte("v")})
	}
	frozen3, frozen4 := rsEncodeTimers(per[0]), rsEncodeTimers(per[2])
	files[3] = append(files[3], savepoint.Row{Op: 1, Key: []byte(rsTimerBlobKey), Value: frozen3})
	files[4] = append(files[4], savepoint.Row{Op: 1, Key: []byte(rsTimerBlobKey), Value: frozen4})
	rsWriteTree(t, dir, files, savepoint.VersionMap{})
	return want, frozen3, frozen4
}

// TestRescaleTimers checks the timer merge: every timer of every old subtask
// survives into exactly one new subtask (the one owning kg(timer key) at M),
// none is duplicated, processing- and event-time timers stay in their
// domain, stale timers are dropped and counted, and a frozen copy of another
// group's timer blob is merged as a plain operator row, not split.
func TestRescaleTimers(t *testing.T) {
	dir := rsTempDir(t)
	in := filepath.Join(dir, "in")
	want, _, frozen4 := rsTimerTree(t, in)
	for _, m := range []int{1, 2, 5, 7, 64} {
		t.Run("M="+strconv.Itoa(m), func(t *testing.T) {
			sp := rsOpen(t, in, nil)
			if got := savepoint.FormatGroups(sp.Groups); got != "0-2,3-4" {
				t.Fatalf("groups %s", got)
			}
			out := filepath.Join(dir, fmt.Sprintf("out-%d", m))
			rep := rsRun(t, sp, fmt.Sprintf("version: 1\nrules:\n  - rescale: {groups: [{subtasks: \"0-2\", parallelism: %d}, {subtasks: \"3-4\", parallelism: 1}]}\n", m), out)
			rr := rep.Rescale
			if rr.TimersIn != int64(len(want)+2) || rr.TimersOut != int64(len(want)) || rr.TimersStale != 2 {
				t.Errorf("report timers: %d in, %d out, %d stale; want %d, %d, 2", rr.TimersIn, rr.TimersOut, rr.TimersStale, len(want)+2, len(want))
			}
			newA := savepoint.Group{First: 0, Count: m}
			outSP := rsOpen(t, out, []savepoint.Group{newA, {First: m, Count: 1}})
			got := map[rsTimerID]int{}
			for j := 0; j < m; j++ {
				v, ok := rsValueIn(outSP, j, 1, rsTimerBlobKey)
				if !ok {
					t.Errorf("new subtask %d has no timer blob", j)
					continue
				}
				ts, err := rsParseTimers(v)
				if err != nil {
					t.Fatalf("new subtask %d: %v", j, err)
				}
				for _, tm := range ts {
					if o := newA.Owner(savepoint.KeyGroupOf([]byte(tm.Key))); o != j {
						t.Errorf("new subtask %d holds %s, owned by %d", j, tm, o)
					}
					got[rsTimerID{1, rsTimerBlobKey, tm}]++
				}
			}
			// rsTimer carries its domain: a processing-time timer that moved
			// to the event-time list would be missing and unexpected here.
			rsSameTimers(t, "timers after the rescale", got, want)
			// The restore at the new layout fires each timer on one subtask.
			restored := map[rsTimerID]int{}
			for j, res := range rsRestore(outSP, []savepoint.Group{newA, {First: m, Count: 1}}, true, true) {
				if j < m {
					for id, n := range rsRestoredTimers(t, res, 1) {
						restored[id] += n
					}
				}
			}
			rsSameTimers(t, "timers restored", restored, want)
			// Group B's frozen copies: merged (subtask 4's, the later), not split.
			if v, _ := rsValueIn(outSP, m, 1, rsTimerBlobKey); !bytes.Equal(v, frozen4) {
				t.Errorf("group B's frozen copy of the timer blob was changed: %x, want %x", v, frozen4)
			}
		})
	}
}

// rsTimerOnlyTimer adds the i-th timer of op 9, the timer-only operator of
// the tests below, to the blob of its key's owner in g (per) and to want.
func rsTimerOnlyTimer(g savepoint.Group, i int, per map[int][]rsTimer, want map[rsTimerID]int) {
	tm := rsTimer{Event: i%2 == 0, TS: int64(i), Key: "k" + strconv.Itoa(i)}
	o := g.Owner(savepoint.KeyGroupOf([]byte(tm.Key)))
	per[o] = append(per[o], tm)
	want[rsTimerID{9, rsTimerBlobKey, tm}] = 0
}

// TestRescaleTimerOnlyOperator: in a tree of one chain group every operator
// runs in the group, so the timer blob of an operator without keyed state
// (a process function that only keeps timers) is split like any other.
func TestRescaleTimerOnlyOperator(t *testing.T) {
	dir := rsTempDir(t)
	g := savepoint.Group{First: 0, Count: 2}
	files := map[int][]savepoint.Row{}
	want := map[rsTimerID]int{}
	per := map[int][]rsTimer{}
	for i := 0; i < 30; i++ {
		key := savepoint.EncodeKeyedKey([]byte("s"), rsI64(int64(i)))
		files[g.Owner(int(key[0]))] = append(files[g.Owner(int(key[0]))], savepoint.Row{Op: 1, Key: key, Value: rsI64(1)})
		rsTimerOnlyTimer(g, i, per, want)
	}
	for i := 0; i < 2; i++ {
		files[i] = append(files[i], savepoint.Row{Op: 9, Key: []byte(rsTimerBlobKey), Value: rsEncodeTimers(per[i])})
	}
	in := rsWriteTree(t, filepath.Join(dir, "in"), files, savepoint.VersionMap{})
	out := filepath.Join(dir, "out")
	rep := rsRun(t, rsOpen(t, in, nil), "version: 1\nrules:\n  - rescale: {parallelism: 3}\n", out)
	newG := savepoint.Group{First: 0, Count: 3}
	restored := map[rsTimerID]int{}
	for _, res := range rsRestore(rsOpen(t, out, nil), []savepoint.Group{newG}, true, true) {
		for id, n := range rsRestoredTimers(t, res, 9) {
			restored[id] += n
		}
	}
	rsSameTimers(t, "timers of the timer-only operator restored at 3", restored, want)
	if rep.Rescale.TimersOut != int64(len(want)) {
		t.Errorf("report: %d timers written, want %d", rep.Rescale.TimersOut, len(want))
	}
}

// TestRescaleTimerOnlyOperatorGroups: in a tree of two chain groups, an
// operator that keeps timers but no keyed state in any group (op 9, run by
// group A, subtasks 0-2) cannot be told from a frozen copy by its rows; its
// blob is split in every group that holds it, so that the rescale of A
// keeps every timer, and says so. Merged, as a frozen copy is, the blob of
// one old subtask would have been written into every new file and the
// other subtasks' timers lost.
func TestRescaleTimerOnlyOperatorGroups(t *testing.T) {
	in, want := rsTwoGroupTimerTree(t, false)
	dir := filepath.Dir(in)
	sp := rsOpen(t, in, nil)
	if got := savepoint.FormatGroups(sp.Groups); got != "0-2,3-4" {
		t.Fatalf("groups %s, want 0-2,3-4", got)
	}
	out := filepath.Join(dir, "out")
	rep := rsRun(t, sp, "version: 1\nrules:\n  - rescale: {groups: [{subtasks: \"0-2\", parallelism: 5}, {subtasks: \"3-4\", parallelism: 2}]}\n", out)
	newA := savepoint.Group{First: 0, Count: 5}
	layout := []savepoint.Group{newA, {First: 5, Count: 2}}
	restored := map[rsTimerID]int{}
	for j, res := range rsRestore(rsOpen(t, out, layout), layout, true, true) {
		if j < newA.Count {
			for id, n := range rsRestoredTimers(t, res, 9) {
				restored[id] += n
			}
		}
	}
	rsSameTimers(t, "timers of the timer-only operator restored at 5", restored, want)
	var said bool
	for _, w := range rep.Warnings {
		if strings.Contains(w, "group 0-2: op 9 timer blob") && strings.Contains(w, "no chain group holds keyed rows") {
			said = true
		}
	}
	if !said {
		t.Errorf("no warning says op 9's blob was split without a known owner: %q", rep.Warnings)
	}
}

// rsTwoGroupTimerTree builds a tree of two chain groups: A (subtasks 0-2)
// runs op 1 and op 9, which keeps timers, and with keyed9 a keyed slot "x";
// B (subtasks 3-4) runs op 2, and its files hold frozen copies of op 9's
// blob, as a restore leaves them. It returns the tree and op 9's timers.
func rsTwoGroupTimerTree(t *testing.T, keyed9 bool) (string, map[rsTimerID]int) {
	dir := rsTempDir(t)
	a, b := savepoint.Group{First: 0, Count: 3}, savepoint.Group{First: 3, Count: 2}
	files := map[int][]savepoint.Row{0: nil, 1: nil, 2: nil, 3: nil, 4: nil}
	want := map[rsTimerID]int{}
	per := map[int][]rsTimer{}
	for i := 0; i < 30; i++ {
		key := savepoint.EncodeKeyedKey([]byte("s"), rsI64(int64(i)))
		files[a.Owner(int(key[0]))] = append(files[a.Owner(int(key[0]))], savepoint.Row{Op: 1, Key: key, Value: rsI64(1)})
		if keyed9 {
			key = savepoint.EncodeKeyedKey([]byte("x"), rsI64(int64(i)))
			files[a.Owner(int(key[0]))] = append(files[a.Owner(int(key[0]))], savepoint.Row{Op: 9, Key: key, Value: rsI64(1)})
		}
		key = savepoint.EncodeKeyedKey([]byte("t"), rsI64(int64(i)))
		files[b.Owner(int(key[0]))] = append(files[b.Owner(int(key[0]))], savepoint.Row{Op: 2, Key: key, Value: rsI64(2)})
		rsTimerOnlyTimer(a, i, per, want)
	}
	for i := 0; i < 3; i++ {
		files[i] = append(files[i], savepoint.Row{Op: 9, Key: []byte(rsTimerBlobKey), Value: rsEncodeTimers(per[i])})
	}
	files[3] = append(files[3], savepoint.Row{Op: 9, Key: []byte(rsTimerBlobKey), Value: rsEncodeTimers(per[0])})
	files[4] = append(files[4], savepoint.Row{Op: 9, Key: []byte(rsTimerBlobKey), Value: rsEncodeTimers(per[2])})
	return rsWriteTree(t, filepath.Join(dir, "in"), files, savepoint.VersionMap{}), want
}

// TestRescaleTimerOnlyAfterDrop: a rule drops op 9's only keyed slot, and
// op 9 keeps timers only: whether an operator has keyed rows is asked of
// the rules' output, so its blob is split, not merged, and every timer
// still fires.
func TestRescaleTimerOnlyAfterDrop(t *testing.T) {
	in, want := rsTwoGroupTimerTree(t, true)
	out := filepath.Join(filepath.Dir(in), "out")
	rsRun(t, rsOpen(t, in, nil), "version: 1\nrules:\n  - drop_slot: {op: 9, slot: x}\n  - rescale: {groups: [{subtasks: \"0-2\", parallelism: 5}, {subtasks: \"3-4\", parallelism: 2}]}\n", out)
	layout := []savepoint.Group{{First: 0, Count: 5}, {First: 5, Count: 2}}
	restored := map[rsTimerID]int{}
	for j, res := range rsRestore(rsOpen(t, out, layout), layout, true, true) {
		if j < 5 {
			for id, n := range rsRestoredTimers(t, res, 9) {
				restored[id] += n
			}
		}
	}
	rsSameTimers(t, "op 9 timers after drop_slot + rescale", restored, want)
}

// TestRescaleRemapFrozenCopy: after a remap of op 9 to 14, group A holds
// op 14's keyed rows, so group B's copies of its blob are frozen copies:
// merged, with no warning that no group holds keyed rows of op 14.
func TestRescaleRemapFrozenCopy(t *testing.T) {
	in, _ := rsTwoGroupTimerTree(t, true)
	out := filepath.Join(filepath.Dir(in), "out")
	rep := rsRun(t, rsOpen(t, in, nil), "version: 1\nrules:\n  - remap_operator: {from: 9, to: 14}\n  - rescale: {groups: [{subtasks: \"0-2\", parallelism: 5}, {subtasks: \"3-4\", parallelism: 3}]}\n", out)
	for _, w := range rep.Warnings {
		if strings.Contains(w, "no chain group holds keyed rows") {
			t.Errorf("warning of an operator with no keyed rows, though group A holds op 14's: %s", w)
		}
	}
}

// TestRescaleLegacyTimerBlob: a legacy unprefixed timer blob is a raw row
// of key group 95, moved whole to the new owner of 95; the rescale says how
// many of the timers its old owner fired fall outside the new owner's
// range and no longer fire, and keeps the blob's bytes.
func TestRescaleLegacyTimerBlob(t *testing.T) {
	dir := rsTempDir(t)
	g := savepoint.Group{First: 0, Count: 2}
	owner := g.Owner(95)
	files := map[int][]savepoint.Row{0: nil, 1: nil}
	for i := 0; i < 20; i++ {
		key := savepoint.EncodeKeyedKey([]byte("s"), rsI64(int64(i)))
		files[g.Owner(int(key[0]))] = append(files[g.Owner(int(key[0]))], savepoint.Row{Op: 7, Key: key, Value: rsI64(1)})
	}
	// Timers of the old owner's range, which fire, and of the other's.
	var timers []rsTimer
	for i := 0; i < 24; i++ {
		timers = append(timers, rsTimer{TS: int64(i), Key: "k" + strconv.Itoa(i)})
	}
	blob := rsEncodeTimers(timers)
	files[owner] = append(files[owner], savepoint.Row{Op: 7, Key: []byte("__clink_timers"), Value: blob})
	in := rsWriteTree(t, filepath.Join(dir, "in"), files, savepoint.VersionMap{})
	out := filepath.Join(dir, "out")
	rep := rsRun(t, rsOpen(t, in, nil), "version: 1\nrules:\n  - rescale: {parallelism: 5}\n", out)
	newG := savepoint.Group{First: 0, Count: 5}
	newOwner := newG.Owner(95)
	n, stop := 0, 0
	for _, tm := range timers {
		kg := savepoint.KeyGroupOf([]byte(tm.Key))
		if g.Owner(kg) == owner {
			if n++; newG.Owner(kg) != newOwner {
				stop++
			}
		}
	}
	if stop == 0 {
		t.Fatal("the fixture needs timers that change subtask")
	}
	want := fmt.Sprintf("op 7 legacy timer blob \"__clink_timers\" (unprefixed, a raw row of key group 95) moves whole from subtask %d to new subtask %d, the new owner of key group 95, and is not split: %d of the %d timers it fires", owner, newOwner, stop, n)
	said := false
	for _, w := range rep.Warnings {
		said = said || strings.Contains(w, want)
	}
	if !said {
		t.Errorf("warnings %q: none says %q", rep.Warnings, want)
	}
	if v, ok := rsValueIn(rsOpen(t, out, []savepoint.Group{newG}), newOwner, 7, "__clink_timers"); !ok || !bytes.Equal(v, blob) {
		t.Errorf("new subtask %d's legacy blob %x (%v), want the old owner's %x", newOwner, v, ok, blob)
	}
}

// TestRescaleUndecodableTimerBlob: a timer blob the rescale must split but
// cannot decode is an error naming the file that holds it, and nothing is
// written.
func TestRescaleUndecodableTimerBlob(t *testing.T) {
	dir := rsTempDir(t)
	g := savepoint.Group{First: 0, Count: 2}
	files := map[int][]savepoint.Row{0: nil, 1: nil}
	for i := 0; i < 20; i++ {
		key := savepoint.EncodeKeyedKey([]byte("s"), rsI64(int64(i)))
		files[g.Owner(int(key[0]))] = append(files[g.Owner(int(key[0]))], savepoint.Row{Op: 7, Key: key, Value: rsI64(1)})
	}
	files[0] = append(files[0], savepoint.Row{Op: 7, Key: savepoint.TimerKeyPrefix, Value: rsEncodeTimers(nil)})
	files[1] = append(files[1], savepoint.Row{Op: 7, Key: savepoint.TimerKeyPrefix, Value: []byte("\x05\x00\x00\x00junk")})
	in := rsWriteTree(t, filepath.Join(dir, "in"), files, savepoint.VersionMap{})
	sp := rsOpen(t, in, nil)
	out := filepath.Join(dir, "out")
	_, err := transform.Run(context.Background(), sp, rsRules(t, "version: 1\nrules:\n  - rescale: {parallelism: 3}\n"), transform.Options{Out: out})
	fe, ok := errors.AsType[*savepoint.FileError](err)
	if !ok || fe.Path != sp.Files[1].Path || sp.Files[1].Subtask != 1 || !strings.Contains(err.Error(), "timer blob") {
		t.Fatalf("error %v, want one naming %s and its timer blob", err, sp.Files[1].Path)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("output written: %v", err)
	}
}

// TestRescaleDuplicateRows: a file may hold a row twice (clink's restore
// keeps the later keyed row, section 1.6); the rescale keeps what restore
// keeps and its accounting holds.
func TestRescaleDuplicateRows(t *testing.T) {
	dir := rsTempDir(t)
	k := savepoint.EncodeKeyedKey([]byte("s"), []byte("alpha"))
	g := savepoint.Group{First: 0, Count: 2}
	o := g.Owner(int(k[0]))
	files := map[int][]savepoint.Row{0: nil, 1: nil}
	files[o] = append(files[o], savepoint.Row{Op: 1, Key: k, Value: []byte("first")}, savepoint.Row{Op: 1, Key: k, Value: []byte("second")})
	k2 := savepoint.EncodeKeyedKey([]byte("s"), []byte("beta"))
	files[g.Owner(int(k2[0]))] = append(files[g.Owner(int(k2[0]))], savepoint.Row{Op: 1, Key: k2, Value: []byte("b")})
	off := []byte("\xff__kafka_off__:0")
	files[0] = append(files[0], savepoint.Row{Op: 2, Key: off, Value: rsI64(9)}, savepoint.Row{Op: 2, Key: off, Value: rsI64(5)})
	files[1] = append(files[1], savepoint.Row{Op: 2, Key: off, Value: rsI64(7)})
	// Written as stored (the tree writer would canonicalise the rows).
	in := filepath.Join(dir, "in")
	for i, rows := range files {
		var b bytes.Buffer
		if err := savepoint.EncodeStreamAsIs(&b, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, nil); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(in, "v1", strconv.Itoa(i), "checkpoint-17.snap")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p+".meta", savepoint.NewSidecar(17, b.Bytes()).Marshal(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "out")
	rep, err := transform.Run(context.Background(), rsOpen(t, in, nil), rsRules(t, "version: 1\nrules:\n  - rescale: {parallelism: 3}\n"), transform.Options{Out: out})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	got := rsKeyedOf(t, rsOpen(t, out, nil))
	if v := got[rsKey(1, k)]; string(v) != "second" {
		t.Errorf("alpha = %q, want the later copy", v)
	}
	for j := 0; j < 3; j++ {
		if v, _ := rsValueIn(rsOpen(t, out, nil), j, 2, string(off)); rsLE(v) != 9 {
			t.Errorf("new subtask %d: offset %d, want 9", j, rsLE(v))
		}
	}
	rr := rep.Rescale
	// 6 in: 2 duplicates resolved and 1 operator copy merged into the
	// other dropped, 3 out, 5 written (the operator row in each of 3 files).
	if rep.RowsIn != 6 || rep.RowsOut != 3 || rep.RowsDropped != 3 || rep.RowsWritten != 5 || rep.DuplicatesResolved != 2 || rr.KeyedIn != 2 || rr.OperatorIn != 2 || rr.OperatorOut != 3 {
		t.Errorf("rows %d in, %d out, %d dropped, %d written, %d duplicates resolved; keyed in %d, operator in %d, out %d", rep.RowsIn, rep.RowsOut, rep.RowsDropped, rep.RowsWritten, rep.DuplicatesResolved, rr.KeyedIn, rr.OperatorIn, rr.OperatorOut)
	}
}

// rsExample returns the bundled example tree opened and its
// authoritative keyed rows.
func rsExample(t *testing.T) (*savepoint.Savepoint, map[string]rsAuth) {
	t.Helper()
	sp := rsOpen(t, rsFixture("example"), nil)
	auth, stale := rsAuthOf(sp, sp.Groups)
	if stale != 0 || len(auth) != 1100 {
		t.Fatalf("example: %d keyed rows, %d stale; want 1100, 0", len(auth), stale)
	}
	return sp, auth
}

// rsRestoredUnion restores sp at layout and returns the union of keyed rows,
// failing on a row restored by two subtasks or a subtask without a file.
func rsRestoredUnion(t *testing.T, sp *savepoint.Savepoint, layout []savepoint.Group, union bool) (map[string][]byte, map[int]*rsRestored) {
	t.Helper()
	all := rsRestore(sp, layout, true, union)
	got := map[string][]byte{}
	for i, res := range all {
		if !res.HasFile {
			t.Errorf("subtask %d has no file", i)
		}
		for k, v := range res.Keyed {
			if _, dup := got[k]; dup {
				t.Errorf("%s restored twice", rsShow(k))
			}
			got[k] = v
		}
	}
	return got, all
}

// TestRescaleAbove128: at a parallelism above 128 some subtasks have an empty
// key-group range: allowed with a warning, and every new subtask still gets
// a file with the operator rows (and an empty timer blob).
func TestRescaleAbove128(t *testing.T) {
	sp, auth := rsExample(t)
	out := filepath.Join(rsTempDir(t), "out")
	const m = 130
	rep := rsRun(t, sp, fmt.Sprintf("version: 1\nrules:\n  - rescale: {parallelism: %d}\n", m), out)
	var above []string
	for _, w := range rep.Warnings {
		if strings.Contains(w, "above 128") {
			above = append(above, w)
		}
	}
	if len(above) != 1 || !strings.Contains(above[0], "2 subtasks get no keyed state, only operator state") {
		t.Errorf("warnings about the parallelism above 128: %q, want one", above)
	}
	outSP := rsOpen(t, out, nil)
	if len(outSP.Files) != m {
		t.Fatalf("%d files, want %d", len(outSP.Files), m)
	}
	layout := []savepoint.Group{{First: 0, Count: m}}
	empty := 0
	for _, f := range outSP.Files {
		rng := savepoint.KeyGroupRangeForSubtask(f.Subtask, m)
		var keyed, oper int
		for _, r := range f.Snapshot.Rows {
			if rsIsFiltered(r.Key) {
				keyed++
			} else {
				oper++
			}
		}
		if oper != 3 {
			t.Errorf("subtask %d: %d operator rows, want 3 (two Kafka offsets, the timer blob)", f.Subtask, oper)
		}
		if rng.Empty() {
			empty++
			if keyed != 0 {
				t.Errorf("subtask %d has the empty range %s but %d keyed rows", f.Subtask, rng, keyed)
			}
			if v, _ := rsValueIn(outSP, f.Subtask, gen.OpAgg, rsTimerBlobKey); len(v) != 8 {
				t.Errorf("subtask %d: timer blob of %d bytes, want an empty one", f.Subtask, len(v))
			}
		}
	}
	if empty != m-savepoint.NumKeyGroups {
		t.Errorf("%d subtasks with an empty range, want %d", empty, m-savepoint.NumKeyGroups)
	}
	rsCheckPlacement(t, outSP, layout)
	got, _ := rsRestoredUnion(t, outSP, layout, true)
	rsSameKeyed(t, "restore at 130", got, auth)
	if vr := savepoint.Validate(outSP, savepoint.ValidateOptions{Parallelism: m}); vr.Errors() > 0 {
		var b strings.Builder
		_ = vr.WriteText(&b)
		t.Errorf("validate --parallelism %d: %s", m, b.String())
	}
}

// TestRescaleAfterPurge composes purge_keys and rescale in one rule file:
// the purged keys are gone from every operator and slot (composite keys of
// the expiring map included), everything else is rescaled.
func TestRescaleAfterPurge(t *testing.T) {
	sp, auth := rsExample(t)
	purged := []string{"user-1", "user-2", "user-30", "user-299"}
	src := `version: 1
slots:
  - {uid: enricher, slot: cart, key: string, composite: true}
rules:
  - name: erasure
    purge_keys: {keys: ["user-1", "user-2", "user-30", "user-299"], codec: string}
  - rescale: {parallelism: 3}
`
	want := map[string]rsAuth{}
	removed := 0
	for k, a := range auth {
		uk := savepoint.ParseKey(a.Row.Key).UserKey
		hit := false
		for _, p := range purged {
			hit = hit || string(uk) == p || (a.Row.Op == gen.OpEnricher && bytes.HasPrefix(uk, []byte(p+"\x1f")))
		}
		if hit {
			removed++
			continue
		}
		want[k] = a
	}
	if removed < 8 {
		t.Fatalf("only %d rows match the purged keys", removed)
	}
	out := filepath.Join(rsTempDir(t), "out")
	rep := rsRun(t, sp, src, out)
	if rs := rep.PerRule[0]; rs.Dropped != int64(removed) || rs.Purge == nil || rs.Purge.Remaining != 0 || len(rs.Purge.Found) != len(purged) {
		t.Errorf("purge: %d dropped (want %d), audit %+v", rs.Dropped, removed, rs.Purge)
	}
	if rep.Rescale.KeyedIn != int64(len(want)) || rep.Rescale.KeyedOut != int64(len(want)) {
		t.Errorf("rescale saw %d keyed rows, wrote %d; want %d", rep.Rescale.KeyedIn, rep.Rescale.KeyedOut, len(want))
	}
	layout := []savepoint.Group{{First: 0, Count: 3}}
	outSP := rsOpen(t, out, layout)
	if len(outSP.Files) != 3 {
		t.Fatalf("%d files", len(outSP.Files))
	}
	rsCheckPlacement(t, outSP, layout)
	rsSameKeyed(t, "output after purge and rescale", rsKeyedOf(t, outSP), want)
	got, _ := rsRestoredUnion(t, outSP, layout, true)
	rsSameKeyed(t, "restore after purge and rescale", got, want)
}

// TestDigestChangelogFile: a changelog+file tree's state is in its
// materialisation files, its payloads holding only their handles: the
// report's digests and byte counts take them in, so two erasures of the
// same tree that remove different rows report different outputs.
func TestDigestChangelogFile(t *testing.T) {
	in := rsFixture("independent", "changelog-file")
	dir := t.TempDir()
	var digests []string
	for i, key := range []string{"user-728", "user-410"} {
		rep := rsRun(t, rsOpen(t, in, nil), "version: 1\nrules:\n  - purge_keys: {keys: ["+key+"]}\n", filepath.Join(dir, strconv.Itoa(i)))
		if rep.RowsDropped == 0 {
			t.Fatalf("%s: nothing dropped", key)
		}
		var payloads int64
		for _, f := range rsOpen(t, in, nil).Files {
			payloads += f.Size
		}
		if rep.Input.Bytes <= payloads || rep.Output.Bytes <= int64(rep.Output.Files)*512 {
			t.Errorf("%s: input %d bytes (payloads alone %d), output %d bytes: the materialisations are not counted", key, rep.Input.Bytes, payloads, rep.Output.Bytes)
		}
		digests = append(digests, rep.Output.Digest)
	}
	if digests[0] == digests[1] {
		t.Errorf("two erasures of different keys report the same output digest %s", digests[0])
	}
}

// TestStateBaseURIRefused: a --state-base written as the job's state URI
// (changelog+file:///srv/...) would put the scheme into every handle, which
// names no file a restore opens; it is refused before anything is written.
func TestStateBaseURIRefused(t *testing.T) {
	sp := rsOpen(t, rsFixture("independent", "changelog-file"), nil)
	for _, base := range []string{"changelog+file:///srv/clink/state/7105", "file:///srv/clink/state/7105"} {
		out := filepath.Join(rsTempDir(t), "out")
		_, err := transform.Run(context.Background(), sp, rsRules(t, "version: 1\nrules:\n  - rescale: {parallelism: 2}\n"), transform.Options{Out: out, StateBase: base})
		if err == nil || !strings.Contains(err.Error(), "--state-base "+base) || !strings.Contains(err.Error(), "plain path") {
			t.Errorf("state base %s: err %v", base, err)
		}
		if _, err := os.Lstat(out); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("state base %s: output written (%v)", base, err)
		}
	}
}

// TestStateBaseControlRefused: a --state-base holding a control character
// (a newline pasted in) would be written into every handle, naming files
// no restore opens; it is refused before anything is written.
func TestStateBaseControlRefused(t *testing.T) {
	sp := rsOpen(t, rsFixture("independent", "changelog-file"), nil)
	for _, base := range []string{"/srv/clink/state\n", "/srv/clink\tstate"} {
		out := filepath.Join(rsTempDir(t), "out")
		_, err := transform.Run(context.Background(), sp, rsRules(t, "version: 1\nrules:\n  - rescale: {parallelism: 2}\n"), transform.Options{Out: out, StateBase: base})
		if err == nil || !strings.Contains(err.Error(), "holds a control character") {
			t.Errorf("state base %q: err %v", base, err)
		}
		if _, err := os.Lstat(out); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("state base %q: output written (%v)", base, err)
		}
	}
}

// TestStateBaseInsideRefused: a --state-base inside the output tree, or
// inside the input tree (its generation directory, given for the tree),
// puts handles on files the output does not hold (out/v1/v1/0/...), nor
// would an output moved into the input's place; it is refused before
// anything is written. The output itself, however spelled, is the default,
// and the input tree itself is what an output that replaces it is given.
func TestStateBaseInsideRefused(t *testing.T) {
	in := rsFixture("independent", "changelog-file")
	sp := rsOpen(t, in, nil)
	set := rsRules(t, "version: 1\nrules:\n  - rescale: {parallelism: 2}\n")
	for _, c := range []struct {
		tree string // "output" or "input": the tree the state base lies in
		subs []string
		want string
	}{
		{"output", []string{"v1", "v1/", "x/y"}, "lies inside the output"},
		{"input", []string{"v1", "v1/0"}, "lies inside the input tree"},
	} {
		// root is the tree's directory, for the output at out.
		root := func(out string) string {
			if c.tree == "input" {
				return in
			}
			return out
		}
		for _, sub := range c.subs {
			out := filepath.Join(rsTempDir(t), "out")
			base := filepath.Join(root(out), sub)
			_, err := transform.Run(context.Background(), sp, set, transform.Options{Out: out, StateBase: base})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("state base %s: err %v", base, err)
			}
			if _, err := os.Lstat(out); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("state base %s: output written (%v)", base, err)
			}
		}
		out := filepath.Join(rsTempDir(t), "out")
		if _, err := transform.Run(context.Background(), sp, set, transform.Options{Out: out, StateBase: root(out) + "/"}); err != nil {
			t.Errorf("state base the %s tree itself: %v", c.tree, err)
		}
	}
}

// TestStateBaseInsideThroughLink: a state base inside the input tree or
// the output is refused when either is reached through a symbolic link
// too: the handles would name <base>/v1/v1/0/..., which no restore finds.
func TestStateBaseInsideThroughLink(t *testing.T) {
	in, err := filepath.Abs(rsFixture("independent", "changelog-file"))
	if err != nil {
		t.Fatal(err)
	}
	set := rsRules(t, "version: 1\nrules:\n  - rescale: {parallelism: 2}\n")
	dir := rsTempDir(t)
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"in": in, "lnk": real} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Skip(err)
		}
	}
	for _, c := range []struct{ input, out, base, want string }{
		{in, filepath.Join(dir, "o1"), filepath.Join(dir, "in", "v1"), "lies inside the input tree"},
		{filepath.Join(dir, "in"), filepath.Join(dir, "o2"), filepath.Join(in, "v1"), "lies inside the input tree"},
		{in, filepath.Join(dir, "lnk", "o3"), filepath.Join(real, "o3", "v1"), "lies inside the output"},
	} {
		_, err := transform.Run(context.Background(), rsOpen(t, c.input, nil), set, transform.Options{Out: c.out, StateBase: c.base})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("input %s, output %s, state base %s: err %v, want %q", c.input, c.out, c.base, err, c.want)
		}
		if _, err := os.Lstat(c.out); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("output %s written (%v)", c.out, err)
		}
	}
}

// TestRescaleChangelogFile rescales a changelog+file tree: the output has the
// same form (changelog-<id>.snap holding a row_kind 3 handle into the output
// tree, the state in materializations/mat-<id>.bin, no sidecars) and reads
// back equal to the input's restorable state.
func TestRescaleChangelogFile(t *testing.T) {
	in := rsFixture("independent", "changelog-file")
	truth, _ := rsTruthKeyed(t, "changelog-file")
	sp := rsOpen(t, in, nil)
	if sp.Backend != savepoint.BackendChangelogFile {
		t.Fatalf("backend %s", sp.Backend)
	}
	auth, stale := rsAuthOf(sp, sp.Groups)
	inKeyed := map[string][]byte{}
	for k, a := range auth {
		inKeyed[k] = a.Row.Value
	}
	rsSameKeyed(t, "the input's owner copies vs the truth file", inKeyed, truth)
	// What the input's subtasks restore (this backend unions nothing).
	inRestored, _ := rsRestoredUnion(t, sp, sp.Groups, false)
	rsSameKeyed(t, "restore of the input", inRestored, truth)
	inOps := map[string]map[int][]byte{}
	for _, f := range sp.Files {
		for _, r := range f.Snapshot.Rows {
			if !rsIsFiltered(r.Key) {
				k := rsKey(r.Op, r.Key)
				if inOps[k] == nil {
					inOps[k] = map[int][]byte{}
				}
				inOps[k][f.Subtask] = r.Value
			}
		}
	}
	for _, tc := range []struct {
		m    int
		base string
	}{{3, ""}, {2, "/srv/clink/state/9001"}, {8, ""}} {
		t.Run(fmt.Sprintf("M=%d", tc.m), func(t *testing.T) {
			out := filepath.Join(rsTempDir(t), "out")
			rep, err := transform.Run(context.Background(), sp, rsRules(t, fmt.Sprintf("version: 1\nrules:\n  - rescale: {parallelism: %d}\n", tc.m)), transform.Options{Out: out, StateBase: tc.base})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Rescale.StaleCopies != int64(stale) {
				t.Errorf("%d stale copies, want %d", rep.Rescale.StaleCopies, stale)
			}
			abs, _ := filepath.Abs(out)
			base := tc.base
			if base == "" {
				base = abs
			}
			// The layout on disk.
			var files []string
			_ = filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					rel, _ := filepath.Rel(out, p)
					files = append(files, filepath.ToSlash(rel))
				}
				return err
			})
			wantFiles := []string{"_jobs/7105/COMPLETED-17"}
			for i := 0; i < tc.m; i++ {
				wantFiles = append(wantFiles, fmt.Sprintf("v1/%d/changelog-17.snap", i), fmt.Sprintf("v1/%d/materializations/mat-17.bin", i))
			}
			slices.Sort(files)
			slices.Sort(wantFiles)
			if !slices.Equal(files, wantFiles) {
				t.Errorf("output files:\n  %s\nwant:\n  %s", strings.Join(files, "\n  "), strings.Join(wantFiles, "\n  "))
			}
			layout := []savepoint.Group{{First: 0, Count: tc.m}}
			outSP := rsOpen(t, out, layout)
			if outSP.Backend != savepoint.BackendChangelogFile {
				t.Errorf("output backend %s", outSP.Backend)
			}
			for _, f := range outSP.Files {
				ci := f.Snapshot.Changelog
				wantHandle := fmt.Sprintf("%s/v1/%d/materializations/mat-17.bin", base, f.Subtask)
				if f.Snapshot.Variant != savepoint.Changelog || ci == nil || len(ci.Handles) != 1 || ci.Handles[0] != wantHandle || ci.LogRows != 0 {
					t.Errorf("subtask %d: variant %s, changelog %+v; want one row_kind 3 handle %s and no log", f.Subtask, f.Snapshot.Variant, ci, wantHandle)
				}
				// The materialisation is the canonical stream of the state.
				b, err := os.ReadFile(filepath.Join(out, "v1", strconv.Itoa(f.Subtask), "materializations", "mat-17.bin"))
				if err != nil {
					t.Fatal(err)
				}
				mat, err := savepoint.DecodeSnapshot(b, savepoint.ReadOptions{})
				if err != nil || mat.Variant != savepoint.Canonical {
					t.Fatalf("subtask %d materialisation: %v", f.Subtask, err)
				}
				if !slices.EqualFunc(mat.Rows, f.Snapshot.Rows, func(a, b savepoint.Row) bool { return a.Compare(b) == 0 && bytes.Equal(a.Value, b.Value) }) {
					t.Errorf("subtask %d: the materialisation's rows differ from the changelog's", f.Subtask)
				}
				// Operator rows: the input's, merged, in every file.
				n := 0
				for _, r := range f.Snapshot.Rows {
					if rsIsFiltered(r.Key) {
						continue
					}
					n++
					k := rsKey(r.Op, r.Key)
					if bytes.HasPrefix(r.Key, []byte(rsTimerBlobKey)) {
						continue // split by key group (checked by TestRescaleTimers)
					}
					if want, _ := rsFold(inOps[k]); !bytes.Equal(r.Value, want) {
						t.Errorf("subtask %d: %s = %x, want %x", f.Subtask, rsShow(k), r.Value, want)
					}
				}
				if n != len(inOps) {
					t.Errorf("subtask %d: %d operator rows, want %d", f.Subtask, n, len(inOps))
				}
			}
			rsCheckPlacement(t, outSP, layout)
			rsSameKeyed(t, "read back", rsKeyedOf(t, outSP), truth)
			got, _ := rsRestoredUnion(t, outSP, layout, false)
			rsSameKeyed(t, "restore of the output", got, truth)
			if vr := savepoint.Validate(outSP, savepoint.ValidateOptions{Parallelism: tc.m}); vr.Errors() > 0 {
				var b strings.Builder
				_ = vr.WriteText(&b)
				t.Errorf("validate: %s", b.String())
			}
		})
	}
}

// TestRescaleReport checks the report of a handcrafted rescale: the
// accounting, and every merge that had to choose between differing values
// (with clink's rule and the subtask chosen), and only those.
func TestRescaleReport(t *testing.T) {
	dir := rsTempDir(t)
	g := savepoint.Group{First: 0, Count: 3}
	files := map[int][]savepoint.Row{0: nil, 1: nil, 2: nil}
	var keyed int
	for i := 0; i < 60; i++ {
		key := savepoint.EncodeKeyedKey([]byte("c"), rsI64(int64(i)))
		files[g.Owner(int(key[0]))] = append(files[g.Owner(int(key[0]))], savepoint.Row{Op: 1, Key: key, Value: rsI64(int64(i))})
		keyed++
	}
	// One stale copy.
	sk := savepoint.EncodeKeyedKey([]byte("c"), rsI64(0))
	files[(g.Owner(int(sk[0]))+1)%3] = append(files[(g.Owner(int(sk[0]))+1)%3], savepoint.Row{Op: 1, Key: sk, Value: rsI64(-1)})
	ops := []struct {
		key    string
		values [3][]byte // nil: absent from that subtask
	}{
		{"\xff__kafka_off__:0", [3][]byte{rsI64(100), rsI64(700), rsI64(300)}},
		{"\xff__file_source_offset__", [3][]byte{rsI64(-5), rsI64(10), rsI64(3)}},
		{"\xffneg", [3][]byte{rsI64(-1), rsI64(1), rsI64(-100)}},
		{"\xffwinrow.wm", [3][]byte{[]byte("wm-000000"), []byte("wm-000002"), []byte("wm-000001")}},
		{"\xffmixed", [3][]byte{[]byte("nine-byte"), rsI64(5), rsI64(3)}},
		{"\xffrules|", [3][]byte{[]byte("{}"), []byte("{}"), []byte("{}")}},
		{"\xff_xo_pending_sub1_15", [3][]byte{nil, []byte("txn"), nil}},
		{"\xff__kafka_off__:1", [3][]byte{rsI64(4), nil, rsI64(4)}},
	}
	var opRows int
	for _, o := range ops {
		for i, v := range o.values {
			if v != nil {
				files[i] = append(files[i], savepoint.Row{Op: 2, Key: []byte(o.key), Value: v})
				opRows++
			}
		}
	}
	in := rsWriteTree(t, filepath.Join(dir, "in"), files, savepoint.VersionMap{})
	out := filepath.Join(dir, "out")
	rep := rsRun(t, rsOpen(t, in, nil), "version: 1\nrules:\n  - rescale: {parallelism: 2}\n", out)
	rr := rep.Rescale
	wantMerges := map[string]transform.MergeChoice{
		"\xff__kafka_off__:0":        {Values: 3, Rule: "greater-int64", FromOld: 1},
		"\xff__file_source_offset__": {Values: 3, Rule: "greater-int64", FromOld: 1},
		"\xffneg":                    {Values: 3, Rule: "greater-int64", FromOld: 1},
		"\xffwinrow.wm":              {Values: 3, Rule: "highest-subtask", FromOld: 2},
		// clink's pairwise rule in subtask order: 9 bytes, then 5 (not both
		// 8 bytes: the later), then 3 (both 8 bytes: the greater, 5).
		"\xffmixed": {Values: 3, Rule: "greater-int64", FromOld: 1},
	}
	got := map[string]transform.MergeChoice{}
	for _, m := range rr.Merges {
		got[m.Key] = m
	}
	for k, w := range wantMerges {
		m, ok := got[savepoint.RenderKey([]byte(k))]
		if !ok || m.Op != 2 || m.Values != w.Values || m.Rule != w.Rule || m.FromOld != w.FromOld {
			t.Errorf("merge of %q: %+v, want %+v", k, m, w)
		}
	}
	if len(rr.Merges) != len(wantMerges) {
		t.Errorf("%d merges listed, want %d: %+v", len(rr.Merges), len(wantMerges), rr.Merges)
	}
	outSP := rsOpen(t, out, nil)
	for k, want := range map[string][]byte{"\xff__kafka_off__:0": rsI64(700), "\xffneg": rsI64(1), "\xffmixed": rsI64(5), "\xffwinrow.wm": []byte("wm-000001"), "\xff__kafka_off__:1": rsI64(4), "\xff_xo_pending_sub1_15": []byte("txn")} {
		for j := 0; j < 2; j++ {
			if v, _ := rsValueIn(outSP, j, 2, k); !bytes.Equal(v, want) {
				t.Errorf("new subtask %d: %q = %x, want %x", j, k, v, want)
			}
		}
	}
	// Warnings: the file source offset (furthest position) and the 9-byte
	// watermark; not the Kafka offsets.
	var warned []string
	for _, w := range rep.Warnings {
		if strings.Contains(w, "op 2 key") {
			warned = append(warned, w)
		}
	}
	if len(warned) != 3 || !strings.Contains(strings.Join(warned, "\n"), "__file_source_offset__") || !strings.Contains(strings.Join(warned, "\n"), "furthest position") {
		t.Errorf("merge warnings: %q", warned)
	}
	// Accounting.
	if rep.RowsIn != int64(keyed+1+opRows) || rr.KeyedIn != int64(keyed+1) || rr.KeyedOut != int64(keyed) || rr.StaleCopies != 1 ||
		rr.OperatorIn != int64(opRows) || rr.OperatorDistinct != int64(len(ops)) || rr.OperatorOut != int64(2*len(ops)) ||
		rep.RowsOut != int64(keyed+len(ops)) || rep.RowsWritten != int64(keyed+2*len(ops)) {
		t.Errorf("accounting: rows %d in %d out %d written; rescale %+v", rep.RowsIn, rep.RowsOut, rep.RowsWritten, rr)
	}
	if rep.RowsIn != rep.RowsOut+rep.RowsDropped || rep.RowsDropped != rr.StaleCopies+rr.OperatorIn-rr.OperatorDistinct || rep.PerRule[len(rep.PerRule)-1].Dropped != 1 {
		t.Errorf("rows in != out + dropped (the stale copy and the operator copies merged)")
	}
	var before, after int64
	for _, s := range rep.Slots {
		before += s.Before
		after += s.After
	}
	if before != rep.RowsIn || after != rep.RowsWritten {
		t.Errorf("slot counts add up to %d / %d, want %d / %d", before, after, rep.RowsIn, rep.RowsWritten)
	}
	// The text and JSON forms list the merges.
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"rescale: 0-2 (p=3) -> 0-1 (p=2)",
		fmt.Sprintf("keyed rows and legacy raw keys: %d in, %d written, 1 stale copies dropped (", keyed+1, keyed),
		`merged op 2 key 0xff+"winrow.wm": 3 values, highest-subtask, from old subtask 2`,
		`merged op 2 key 0xff+"mixed": 3 values, greater-int64, from old subtask 1`,
	} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("text report lacks %q:\n%s", line, text.String())
		}
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Rescale struct {
			Merges []transform.MergeChoice `json:"merges"`
			Stale  int64                   `json:"stale_copies_dropped"`
		} `json:"rescale"`
	}
	if err := json.Unmarshal(b, &back); err != nil || len(back.Rescale.Merges) != len(wantMerges) || back.Rescale.Stale != 1 {
		t.Errorf("JSON report: %v, %+v", err, back.Rescale)
	}
}

// rsSptool runs the sptool command line in-process.
func rsSptool(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = cli.Main(context.Background(), args, &cli.Streams{In: strings.NewReader(""), Out: &o, Err: &e})
	return code, o.String(), e.String()
}

// TestRescaleValidate: `sptool validate OUT --parallelism M` exits 0 on the
// rescaled output and 1 on the input when M differs (rows outside their
// ranges: a resubmit at M would lose them); the rescale command's exit codes.
func TestRescaleValidate(t *testing.T) {
	in := rsFixture("example")
	dir := rsTempDir(t)
	out := filepath.Join(dir, "p7")
	for _, tc := range []struct {
		args []string
		code int
		want string // in stdout+stderr
	}{
		{[]string{"rescale", "--help"}, cli.ExitOK, "Usage: sptool rescale PATH -o OUT (--parallelism M | --group-parallelism 0-2=5,3-4=1)"},
		{[]string{"rescale", in, "-o", out}, cli.ExitError, "give exactly one of --parallelism and --group-parallelism"},
		{[]string{"rescale", in, "-o", out, "--parallelism", "7", "--group-parallelism", "0-3=7"}, cli.ExitError, "give exactly one of --parallelism and --group-parallelism"},
		{[]string{"rescale", in, "--parallelism", "7"}, cli.ExitError, "-o/--out is required"},
		{[]string{"rescale", in, "-o", out, "--group-parallelism", "0-3"}, cli.ExitError, `"0-3" is not RANGE=M`},
		{[]string{"rescale", rsFixture("independent", "two-groups"), "-o", out, "--parallelism", "3"}, cli.ExitError, "the tree has 2 chain groups (subtasks 0-2,3-4)"},
		{[]string{"rescale", in, "-o", out, "--parallelism", "7"}, cli.ExitOK, "rescale: 0-3 (p=4) -> 0-6 (p=7)"},
		{[]string{"rescale", in, "-o", out, "--parallelism", "7"}, cli.ExitError, "exists (use --force to replace it)"},
		{[]string{"validate", out, "--parallelism", "7"}, cli.ExitOK, "valid: 0 errors"},
		{[]string{"validate", in, "--parallelism", "7"}, cli.ExitFindings, "INVALID"},
		{[]string{"validate", in, "--parallelism", "4"}, cli.ExitOK, "valid: 0 errors"},
		{[]string{"validate", out, "--parallelism", "4"}, cli.ExitFindings, "the tree has 7 subtask files; a job at parallelism 4 restores 4"},
	} {
		code, o, e := rsSptool(tc.args...)
		if code != tc.code || !strings.Contains(o+e, tc.want) {
			t.Errorf("sptool %s: exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), code, tc.code, tc.want, o, e)
		}
	}
	// The library view of the same checks.
	outSP := rsOpen(t, out, nil)
	if vr := savepoint.Validate(outSP, savepoint.ValidateOptions{Parallelism: 7}); vr.Errors() != 0 {
		t.Errorf("validate output at 7: %d errors", vr.Errors())
	}
	vr := savepoint.Validate(rsOpen(t, in, nil), savepoint.ValidateOptions{Parallelism: 7})
	if n := len(vr.ByCheck(savepoint.CheckParallelism)); vr.Errors() == 0 || n == 0 {
		t.Errorf("validate input at 7: %d errors, %d parallelism findings", vr.Errors(), n)
	}
}

// A group kept at its parallelism is copied as it is, in clink's hash-map
// order when it came so; the report's rows per slot after must still be
// the output's (the recount goes by prefix runs, and only sorted files may
// be searched for their ends).
func TestRescaleSlotCountsUnsortedCopy(t *testing.T) {
	dir := t.TempDir()
	var a, b []savepoint.Row // group 0-1 (op 1, rescaled 2 -> 3); group 2 (op 2, kept, unsorted)
	for i := 0; i < 4000; i++ {
		uk := []byte(fmt.Sprintf("user-%05d", i))
		slot := []string{"agg", "count", "window"}[i%3]
		key := savepoint.EncodeKeyedKey([]byte(slot), uk)
		a = append(a, savepoint.Row{Op: 1, Key: key, Value: []byte{byte(i)}})
		b = append(b, savepoint.Row{Op: 2, Key: key, Value: []byte{byte(i)}})
	}
	shuffled := savepoint.Logical(b)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	files := map[int][]savepoint.Row{2: shuffled}
	for _, r := range savepoint.Logical(a) {
		s := savepoint.SubtaskForKeyGroup(int(r.Key[0]), 2)
		files[s] = append(files[s], r)
	}
	in := writeTreeAsIs(t, filepath.Join(dir, "in"), 5, files, savepoint.VersionMap{})
	sp, err := savepoint.Open(in, savepoint.OpenOptions{RequireValid: true, Columnar: true, Groups: []savepoint.Group{{First: 0, Count: 2}, {First: 2, Count: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	out := filepath.Join(dir, "out")
	set := parseRules(t, "version: 1\nrules:\n  - rescale: {groups: [{subtasks: \"0-1\", parallelism: 3}, {subtasks: \"2\", parallelism: 1}]}\n", nil)
	rep, err := transform.Run(context.Background(), sp, set, transform.Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	outSP, err := savepoint.Open(out, savepoint.OpenOptions{Groups: []savepoint.Group{{First: 0, Count: 3}, {First: 3, Count: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]int64{}
	for _, f := range outSP.Files {
		for _, r := range f.Snapshot.Rows {
			stored[fmt.Sprintf("%d/%s", r.Op, savepoint.ParseKey(r.Key).SlotName())]++
		}
	}
	if len(rep.Slots) != 6 {
		t.Fatalf("%d slots in the report, want 6", len(rep.Slots))
	}
	for _, sl := range rep.Slots {
		if k := fmt.Sprintf("%d/%s", sl.Op, sl.Slot); sl.After != stored[k] || sl.After == 0 {
			t.Errorf("report: %d rows of op %d slot %q after, the output holds %d", sl.After, sl.Op, sl.Slot, stored[k])
		}
	}
}

// TestRescaleLostRows checks that a keyed row held only outside its owner's
// file is reported as lost, apart from the stale copies whose owner holds
// the row, with the same count as Savepoint.Union's, and is not written.
func TestRescaleLostRows(t *testing.T) {
	dir := rsTempDir(t)
	g := savepoint.Group{First: 0, Count: 3}
	files := map[int][]savepoint.Row{0: nil, 1: nil, 2: nil}
	for i := 0; i < 60; i++ {
		key := savepoint.EncodeKeyedKey([]byte("c"), rsI64(int64(i)))
		files[g.Owner(int(key[0]))] = append(files[g.Owner(int(key[0]))], savepoint.Row{Op: 1, Key: key, Value: rsI64(int64(i))})
	}
	others := func(key []byte) (int, int, int) {
		o := g.Owner(int(key[0]))
		return o, (o + 1) % 3, (o + 2) % 3
	}
	// A stale copy: the owner holds key 0 too.
	sk := savepoint.EncodeKeyedKey([]byte("c"), rsI64(0))
	_, a, _ := others(sk)
	files[a] = append(files[a], savepoint.Row{Op: 1, Key: sk, Value: rsI64(-1)})
	// Lost: key 1000 in one other file, key 1001 in both others.
	l1 := savepoint.EncodeKeyedKey([]byte("c"), rsI64(1000))
	o1, a1, _ := others(l1)
	files[a1] = append(files[a1], savepoint.Row{Op: 1, Key: l1, Value: rsI64(1)})
	l2 := savepoint.EncodeKeyedKey([]byte("c"), rsI64(1001))
	o2, a2, b2 := others(l2)
	files[a2] = append(files[a2], savepoint.Row{Op: 1, Key: l2, Value: rsI64(2)})
	files[b2] = append(files[b2], savepoint.Row{Op: 1, Key: l2, Value: rsI64(3)})
	// Lost though the owner holds the key under another operator (one the
	// owner has no rows of); and lost
	// past the owner's last row.
	l3 := savepoint.EncodeKeyedKey([]byte("c"), rsI64(1002))
	o3, a3, _ := others(l3)
	files[o3] = append(files[o3], savepoint.Row{Op: 3, Key: l3, Value: rsI64(4)})
	files[a3] = append(files[a3], savepoint.Row{Op: 2, Key: l3, Value: rsI64(5)})
	l4 := savepoint.EncodeKeyedKey([]byte("c"), rsI64(5))
	o4, a4, _ := others(l4)
	files[a4] = append(files[a4], savepoint.Row{Op: 9, Key: l4, Value: rsI64(6)})
	// Operator 99, the last of every file: a stale copy, then in the same
	// run a row past the owner's last one.
	l5a := savepoint.EncodeKeyedKey([]byte("c"), rsI64(2000))
	l5b := l5a
	for i := int64(2001); l5b[0] != l5a[0] || bytes.Compare(l5b, l5a) <= 0; i++ {
		l5b = savepoint.EncodeKeyedKey([]byte("c"), rsI64(i))
	}
	o5, a5, _ := others(l5a)
	files[o5] = append(files[o5], savepoint.Row{Op: 99, Key: l5a, Value: rsI64(7)})
	files[a5] = append(files[a5], savepoint.Row{Op: 99, Key: l5a, Value: rsI64(8)}, savepoint.Row{Op: 99, Key: l5b, Value: rsI64(9)})
	in := rsWriteTree(t, filepath.Join(dir, "in"), files, savepoint.VersionMap{})
	sp := rsOpen(t, in, nil)
	_, ust := sp.UnionWithStats()
	out := filepath.Join(dir, "out")
	// Without drop_lost the rescale refuses, naming them, and writes
	// nothing.
	_, err := transform.Run(context.Background(), sp, rsRules(t, "version: 1\nrules:\n  - rescale: {parallelism: 2}\n"), transform.Options{Out: out})
	if err == nil || !strings.Contains(err.Error(), "the rescale would drop 6 lost keyed rows") || !strings.Contains(err.Error(), "drop_lost: true") {
		t.Errorf("rescale of a tree with lost rows: %v", err)
	}
	if _, serr := os.Lstat(out); serr == nil {
		t.Errorf("an output was written")
	}
	rep := rsRun(t, sp, "version: 1\nrules:\n  - rescale: {parallelism: 2, drop_lost: true}\n", out)
	rr := rep.Rescale
	if rr.StaleCopies != 2 || rr.Lost != 6 || int64(ust.Lost) != rr.Lost || rr.KeyedIn != 70 || rr.KeyedOut != 62 {
		t.Fatalf("stale %d, lost %d (union: %d), keyed %d in %d out; want 2, 6 (6), 70, 62", rr.StaleCopies, rr.Lost, ust.Lost, rr.KeyedIn, rr.KeyedOut)
	}
	want := map[string]transform.LostRow{}
	for _, l := range []struct {
		op             uint64
		key            []byte
		subtask, owner int
	}{{1, l1, a1, o1}, {1, l2, a2, o2}, {1, l2, b2, o2}, {2, l3, a3, o3}, {9, l4, a4, o4}, {99, l5b, a5, o5}} {
		want[fmt.Sprintf("%x@%d", l.key, l.subtask)] = transform.LostRow{Subtask: l.subtask, Owner: l.owner, Op: l.op, KeyGroup: int(l.key[0]), Key: fmt.Sprintf("%x", l.key)}
	}
	for _, e := range rr.LostExamples {
		k := e.Key + "@" + fmt.Sprint(e.Subtask)
		w, ok := want[k]
		if !ok || !strings.HasPrefix(e.File, fmt.Sprintf("v1/%d/", e.Subtask)) {
			t.Errorf("unexpected lost row %+v", e)
			continue
		}
		// The row named is the copy, as stored in the input.
		if r := sp.Files[e.Subtask].Snapshot.NewCursor().Row(e.Row); r.Op != e.Op || fmt.Sprintf("%x", r.Key) != e.Key {
			t.Errorf("lost row %+v: row %d of %s is op %d key %x", e, e.Row, e.File, r.Op, r.Key)
		}
		w.File, w.Row = e.File, e.Row
		if e != w {
			t.Errorf("lost row %+v, want %+v", e, w)
		}
		delete(want, k)
	}
	if len(rr.LostExamples) != 5 || len(want) != 1 {
		t.Errorf("%d lost rows listed, want 5 of 6; not listed: %v", len(rr.LostExamples), want)
	}
	if !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, "lost keyed rows dropped: 6") }) {
		t.Errorf("no warning of the lost rows: %q", rep.Warnings)
	}
	if rr.StaleRaw == 0 && slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, "legacy raw key") }) {
		t.Errorf("a warning of legacy raw keys, none of the stale copies being one: %q", rep.Warnings)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"2 stale copies dropped (their owner's input file holds the key, or its changelog erases it: the owner's state is the authoritative one), 6 lost rows dropped", fmt.Sprintf("lost: op 1 key group %d key %x", l1[0], l1)} {
		if !strings.Contains(text.String(), line) {
			t.Errorf("text report lacks %q:\n%s", line, text.String())
		}
	}
	for k := range rsKeyedOf(t, rsOpen(t, out, nil)) {
		if k == rsKey(1, l1) || k == rsKey(1, l2) || k == rsKey(2, l3) || k == rsKey(9, l4) || k == rsKey(99, l5b) {
			t.Errorf("lost row %q written", k)
		}
	}
}

// TestRescaleLostAgainstInput: whether the owner holds a stale row is asked
// of the owner's input, not of what the rules left of it: a copy whose
// owner's copy a rule dropped is stale, not lost. The owner's file is
// stored in order, then out of order (looked up in one pass), and then
// sorted through temporary files.
func TestRescaleLostAgainstInput(t *testing.T) {
	g := savepoint.Group{First: 0, Count: 2}
	key := func(i int64) []byte { return savepoint.EncodeKeyedKey([]byte("c"), rsI64(i)) }
	// Key 7: the owner's copy has value 0, the stale copy 5. Key 8: held
	// only outside its owner (lost).
	k7, k8 := key(7), key(8)
	for _, tc := range []struct{ asIs, spill bool }{{false, false}, {true, false}, {true, true}} {
		asIs := tc.asIs
		t.Run(fmt.Sprintf("as-is %v spill %v", tc.asIs, tc.spill), func(t *testing.T) {
			if tc.spill {
				defer transform.SetSpill(0, 2048)()
			}
			files := map[int][]savepoint.Row{0: nil, 1: nil}
			for i := int64(100); i < 140; i++ {
				k := key(i)
				files[g.Owner(int(k[0]))] = append(files[g.Owner(int(k[0]))], savepoint.Row{Op: 1, Key: k, Value: rsI64(i)})
			}
			o7 := g.Owner(int(k7[0]))
			files[o7] = append(files[o7], savepoint.Row{Op: 1, Key: k7, Value: rsI64(0)})
			files[1-o7] = append(files[1-o7], savepoint.Row{Op: 1, Key: k7, Value: rsI64(5)})
			o8 := g.Owner(int(k8[0]))
			files[1-o8] = append(files[1-o8], savepoint.Row{Op: 1, Key: k8, Value: rsI64(6)})
			dir := rsTempDir(t)
			tw, err := savepoint.CreateTree(filepath.Join(dir, "in"), savepoint.TreeOptions{Generation: 1, Checkpoint: 17})
			if err != nil {
				t.Fatal(err)
			}
			md := savepoint.CanonicalMetadata(nil, savepoint.VersionMap{})
			for s := range 2 {
				rows := savepoint.Logical(files[s])
				opts := savepoint.SnapshotOptions{}
				if asIs {
					slices.Reverse(rows)
					opts.AsIs = true
				}
				if _, err := tw.WriteSubtaskWith(s, md, savepoint.RowSlice(rows), opts); err != nil {
					t.Fatal(err)
				}
			}
			if err := tw.Commit("42", nil); err != nil {
				t.Fatal(err)
			}
			sp := rsOpen(t, filepath.Join(dir, "in"), []savepoint.Group{g})
			_, ust := sp.UnionWithStats()
			spills := transform.Spills()
			defer func() {
				if got := transform.Spills() > spills; got != tc.spill {
					t.Errorf("sorted through temporary files: %v, want %v", got, tc.spill)
				}
			}()
			// The split holds when the rules then move the rows: a remap
			// or a rename, undone to look the rows of a file sorted
			// through temporary files up in the owner's input.
			for _, move := range []string{"", "  - remap_operator: {from: 1, to: 2}\n", "  - rename_slot: {op: 1, from: c, to: d}\n", "  - rename_slot: {op: 1, from: c, to: d}\n  - remap_operator: {from: 1, to: 2}\n"} {
				out := filepath.Join(rsTempDir(t), "out")
				rep := rsRun(t, sp, "version: 1\nslots:\n  - {op: 1, slot: c, key: int64, value: int64}\nrules:\n  - drop: 'op == 1 && value == 0'\n"+move+"  - rescale: {parallelism: 1, drop_lost: true}\n", out)
				rr := rep.Rescale
				if rep.PerRule[0].Dropped != 1 || rr.StaleCopies != 1 || rr.Lost != 1 || ust.StaleCopies != 1 || ust.Lost != 1 {
					t.Errorf("%q: dropped %d, stale %d, lost %d (union: %d, %d); want 1, 1, 1 (1, 1)", move, rep.PerRule[0].Dropped, rr.StaleCopies, rr.Lost, ust.StaleCopies, ust.Lost)
				}
				if len(rr.LostExamples) != 1 || rr.LostExamples[0].Key != fmt.Sprintf("%x", k8) || rr.LostExamples[0].Op != 1 {
					t.Fatalf("%q: lost rows listed: %+v, want op 1 key %x", move, rr.LostExamples, k8)
				}
				// The row is named in the input, its operator and key as
				// stored; of a file sorted through temporary files, which
				// keep no input rows, it is looked up.
				e := rr.LostExamples[0]
				if e.Row < 0 || e.Row >= sp.Files[e.Subtask].Snapshot.NumRows() {
					t.Fatalf("%q: lost row %+v: no row of %s", move, e, e.File)
				}
				if r := sp.Files[e.Subtask].Snapshot.NewCursor().Row(e.Row); fmt.Sprintf("%x", r.Key) != e.Key || r.Op != e.Op {
					t.Errorf("%q: lost row %+v: row %d holds op %d key %x", move, e, e.Row, r.Op, r.Key)
				}
			}
		})
	}
}

// TestRescaleMissingSubtasks: a tree whose subtasks have a gap is refused,
// naming it: its chain groups cannot be told.
func TestRescaleMissingSubtasks(t *testing.T) {
	dir := rsTempDir(t)
	files := map[int][]savepoint.Row{}
	for _, s := range []int{0, 1, 3} {
		files[s] = []savepoint.Row{{Op: 1, Key: []byte("\xffoffsets"), Value: rsI64(int64(s))}}
	}
	sp := rsOpen(t, rsWriteTree(t, filepath.Join(dir, "in"), files, savepoint.VersionMap{}), nil)
	out := filepath.Join(dir, "out")
	_, err := transform.Run(context.Background(), sp, rsRules(t, "version: 1\nrules:\n  - rescale: {parallelism: 2}\n"), transform.Options{Out: out})
	if err == nil || !strings.Contains(err.Error(), "the tree's subtasks are not consecutive (it holds 0,1,3; subtask 2 has no directory)") {
		t.Errorf("rescale of subtasks 0,1,3: %v", err)
	}
	if _, serr := os.Stat(out); serr == nil {
		t.Errorf("an output was written")
	}
}

// TestRescaleUnknownMetadata: the new files of a rescaled group carry every
// unknown metadata key any old file of the group carries (the first value
// when they disagree, which is reported), not only the first file's.
func TestRescaleUnknownMetadata(t *testing.T) {
	dir := rsTempDir(t)
	extra := []savepoint.Metadata{
		nil,
		{{Key: "x.first", Value: "a"}, {Key: savepoint.MetaProvenance, Value: "tool=old;input=1"}},
		{{Key: "x.first", Value: "b"}, {Key: "x.second", Value: "c"}, {Key: savepoint.MetaProvenance, Value: "tool=old;input=2"}},
	}
	var rows [][]savepoint.Row
	var md []savepoint.Metadata
	for i, e := range extra {
		rows = append(rows, []savepoint.Row{{Op: 1, Key: []byte("\xff__off__"), Value: rsI64(int64(i))}})
		md = append(md, append(savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), e...))
	}
	rep, out := rsRescaleTo(t, dir, rsTree(t, dir, rows, md), 2)
	for _, f := range rsOpen(t, out, nil).Files {
		md := f.Snapshot.Metadata
		first, _ := md.Get("x.first")
		second, _ := md.Get("x.second")
		prov, _ := md.Get(savepoint.MetaProvenance)
		if first != "a" || second != "c" || strings.Contains(prov, "tool=old") {
			t.Errorf("subtask %d: x.first %q, x.second %q, provenance %q; want a, c and the output's own", f.Subtask, first, second, prov)
		}
	}
	var warned int
	for _, w := range rep.Warnings {
		if strings.Contains(w, `metadata key "x.first" has another value in subtask 2's file ("b") than the one the new files keep ("a")`) {
			warned++
		}
		if strings.Contains(w, "x.second") || strings.Contains(w, "provenance") {
			t.Errorf("warning %q", w)
		}
	}
	if warned != 1 {
		t.Errorf("warnings %q: want one about x.first", rep.Warnings)
	}
}

// TestRescaleVersionMapDisagreement: when the old files of a group carry
// different version maps, the new files carry the first non-empty one (as
// clink's merge keeps it), not the first file's absent map, and the
// disagreement is reported.
func TestRescaleVersionMapDisagreement(t *testing.T) {
	dir := rsTempDir(t)
	vm, err := savepoint.ParseVersionMap("100|counter|3|cnt")
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]savepoint.Row
	var md []savepoint.Metadata
	for i, v := range []savepoint.VersionMap{{}, vm, vm} {
		rows = append(rows, []savepoint.Row{{Op: 1, Key: []byte("\xff__off__"), Value: rsI64(int64(i))}})
		md = append(md, savepoint.CanonicalMetadata(nil, v))
	}
	rep, out := rsRescaleTo(t, dir, rsTree(t, dir, rows, md), 2)
	for _, f := range rsOpen(t, out, nil).Files {
		if got := f.Snapshot.Versions.Pack(); got != vm.Pack() {
			t.Errorf("subtask %d: version map %q, want %q", f.Subtask, got, vm.Pack())
		}
	}
	warned := false
	for _, w := range rep.Warnings {
		warned = warned || strings.Contains(w, `the old files carry 2 different version maps; every new file carries the first non-empty one, as clink's merge keeps it: "100|counter|3|cnt"`)
	}
	if !warned {
		t.Errorf("warnings %q: want the disagreement", rep.Warnings)
	}
}

// TestRescaleEmptyKey: the empty key is not operator state for clink's
// merge (format 1.6): of its copies a rescale keeps the later one, not the
// greater of two 8-byte values.
func TestRescaleEmptyKey(t *testing.T) {
	dir := rsTempDir(t)
	var rows [][]savepoint.Row
	for _, v := range [][]byte{[]byte("zero-in-0"), rsI64(9), rsI64(5)} {
		rows = append(rows, []savepoint.Row{{Op: 100, Key: nil, Value: v}})
	}
	_, out := rsRescaleTo(t, dir, rsTree(t, dir, rows, nil), 2)
	for j := range 2 {
		if v, _ := rsValueIn(rsOpen(t, out, nil), j, 100, ""); rsLE(v) != 5 {
			t.Errorf("new subtask %d: the empty key's value %x, want the later copy, 5", j, v)
		}
	}
}

// TestRescaleTimersOwnerWithoutBlob: a subtask without a timer blob of its
// own restores the others' blobs, merged (the later copy), and keeps the
// timers of its range from it, so a rescale keeps those timers; the timers
// of a subtask that has its own blob, found in another's, are stale.
func TestRescaleTimersOwnerWithoutBlob(t *testing.T) {
	g := savepoint.Group{First: 0, Count: 3}
	keyIn := func(sub, n int) []byte { // the n-th user key whose key group subtask sub owns
		for i := 0; ; i++ {
			k := []byte(fmt.Sprintf("u%d", i))
			if g.Owner(savepoint.KeyGroupOf(k)) == sub {
				if n == 0 {
					return k
				}
				n--
			}
		}
	}
	timers := []byte("\xff__clink_timers")
	for _, c := range []struct {
		name  string
		blobs map[int][]savepoint.Timer
		want  int // timers written
	}{
		// Only subtask 0 has a blob: 1 and 2 restore it and keep their ranges.
		{"one blob for all", map[int][]savepoint.Timer{0: {{Time: 1, Key: keyIn(0, 0)}, {Time: 2, Key: keyIn(1, 0)}, {Time: 3, Key: keyIn(2, 0)}}}, 3},
		// Subtask 1 has its own (empty) blob: its timers in 0's are stale;
		// 2, without one, restores the later blob, 1's, which has none.
		{"an empty blob of its own", map[int][]savepoint.Timer{0: {{Time: 1, Key: keyIn(0, 0)}, {Time: 2, Key: keyIn(1, 0)}, {Time: 3, Key: keyIn(2, 0)}}, 1: nil}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := rsTempDir(t)
			var rows [][]savepoint.Row
			for s := range 3 {
				r := []savepoint.Row{{Op: 1, Key: savepoint.EncodeKeyedKey([]byte("s"), keyIn(s, 1)), Value: []byte("v")}}
				if b, ok := c.blobs[s]; ok {
					r = append(r, savepoint.Row{Op: 1, Key: timers, Value: savepoint.EncodeTimers(nil, b)})
				}
				rows = append(rows, r)
			}
			rep, _ := rsRescaleTo(t, dir, rsTree(t, dir, rows, nil), 2)
			if rr := rep.Rescale; rr.TimersOut != int64(c.want) {
				t.Errorf("timers: %d in, %d written, %d stale; want %d written", rr.TimersIn, rr.TimersOut, rr.TimersStale, c.want)
			}
		})
	}
}

// rsTree writes a tree of one file per subtask (rows[i], with metadata
// md[i] after clink's own when md is not nil) at checkpoint 3 of job "j"
// under dir/in and returns its path.
func rsTree(t *testing.T, dir string, rows [][]savepoint.Row, md []savepoint.Metadata) string {
	t.Helper()
	in := filepath.Join(dir, "in")
	tw, err := savepoint.CreateTree(in, savepoint.TreeOptions{Generation: 1, Checkpoint: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Abort()
	for i, r := range rows {
		m := savepoint.CanonicalMetadata(nil, savepoint.VersionMap{})
		if md != nil {
			m = md[i]
		}
		if _, err := tw.WriteSubtask(i, m, r, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Commit("j", nil); err != nil {
		t.Fatal(err)
	}
	return in
}

// rsRescaleTo rescales the tree at in to parallelism p under dir/out and
// returns the report and the output's path.
func rsRescaleTo(t *testing.T, dir, in string, p int) (*transform.Report, string) {
	t.Helper()
	out := filepath.Join(dir, "out")
	rep, err := transform.Run(context.Background(), rsOpen(t, in, nil), rsRules(t, fmt.Sprintf("version: 1\nrules:\n  - rescale: {parallelism: %d}\n", p)), transform.Options{Out: out})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return rep, out
}

// A remap_operator with 'merge: true' of an operator run in one chain group
// into one run in another would leave the merged operator with keyed rows
// in both groups: an operator runs in one, and a restore at the layout loses
// the rows in the other's files. It is refused, nothing written; a merge
// within a group is not.
func TestMergeAcrossChainGroupsRefused(t *testing.T) {
	dir := t.TempDir()
	files := map[int][]savepoint.Row{}
	for i := 0; i < 200; i++ {
		uk := []byte(fmt.Sprintf("user-%03d", i))
		key := savepoint.EncodeKeyedKey([]byte("agg"), uk)
		s := savepoint.SubtaskForKeyGroup(int(key[0]), 2)
		files[s] = append(files[s], savepoint.Row{Op: 1, Key: key, Value: []byte{byte(i)}})
		files[s] = append(files[s], savepoint.Row{Op: 3, Key: savepoint.EncodeKeyedKey([]byte("seen"), uk), Value: []byte{byte(i)}})
		files[2] = append(files[2], savepoint.Row{Op: 2, Key: key, Value: []byte{byte(i)}})
	}
	for s := range files {
		files[s] = savepoint.Logical(files[s])
	}
	in := writeTreeAsIs(t, filepath.Join(dir, "in"), 5, files, savepoint.VersionMap{})
	groups := []savepoint.Group{{First: 0, Count: 2}, {First: 2, Count: 1}}
	for _, tc := range []struct{ rules, wantErr string }{
		{"  - remap_operator: {from: 1, to: 2, merge: true}\n", "rule 1 (remap_operator): merging operator 1 (keyed rows in chain group 0-1) into operator 2 (keyed rows in chain group 2)"},
		{"  - remap_operator: {from: 1, to: 3, merge: true}\n", ""},
		{"  - drop: 'op == 1'\n  - remap_operator: {from: 1, to: 2, merge: true}\n", ""},
	} {
		sp, err := savepoint.Open(in, savepoint.OpenOptions{RequireValid: true, Columnar: true, Groups: groups})
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out")
		os.RemoveAll(out)
		_, err = transform.Run(context.Background(), sp, parseRules(t, "version: 1\nrules:\n"+tc.rules, nil), transform.Options{Out: out})
		sp.Close()
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.rules, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: error %v, want one containing %q", tc.rules, err, tc.wantErr)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: refused, but an output was written", tc.rules)
		}
	}
}

// A changelog+file tree's restore takes no operator rows from other
// subtasks (format 1.7): a timer held in the blob of a subtask that does
// not own its key, whose owner has no blob, fires from no subtask, and a
// rescale must not make it fire. At parallelism 2, subtask 0's blob holds
// a timer of its own key and one of a key of subtask 1, which has no blob;
// rescaled to 1 and to 3, only the first is written, and the report counts
// the other as stale. (The other backends' union would give subtask 1 that
// blob, and the timer fires there: TestRescale* keep it.)
func TestRescaleChangelogFileStaleTimer(t *testing.T) {
	keyIn := func(prefix string, lo, hi int) []byte {
		for i := 0; ; i++ {
			if k := fmt.Appendf(nil, "%s-%d", prefix, i); savepoint.KeyGroupOf(k) >= lo && savepoint.KeyGroupOf(k) < hi {
				return k
			}
		}
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	tw, err := savepoint.CreateTree(in, savepoint.TreeOptions{Generation: 1, Checkpoint: 9, Backend: savepoint.BackendChangelogFile})
	if err != nil {
		t.Fatal(err)
	}
	const op = 77
	own, other := keyIn("a", 0, 64), keyIn("b", 64, 128)
	blob := savepoint.EncodeTimers([]savepoint.Timer{{Time: 100, Key: own}, {Time: 200, Key: other}}, nil)
	md := savepoint.CanonicalMetadata(nil, savepoint.VersionMap{})
	for i, rows := range [][]savepoint.Row{
		{{Op: op, Key: savepoint.EncodeKeyedKey([]byte("s"), own), Value: []byte("v0")}, {Op: op, Key: savepoint.TimerKeyPrefix, Value: blob}},
		{{Op: op, Key: savepoint.EncodeKeyedKey([]byte("s"), other), Value: []byte("v1")}},
	} {
		if _, err := tw.WriteSubtask(i, md, rows, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Commit("j", nil); err != nil {
		t.Fatal(err)
	}
	sp, err := savepoint.Open(in, savepoint.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	for _, m := range []int{1, 3} {
		out := filepath.Join(dir, fmt.Sprintf("out%d", m))
		rep, err := transform.Run(context.Background(), sp, parseRules(t, fmt.Sprintf("version: 1\nrules:\n  - rescale: {parallelism: %d}\n", m), nil), transform.Options{Out: out})
		if err != nil {
			t.Fatal(err)
		}
		if r := rep.Rescale; r.TimersIn != 2 || r.TimersOut != 1 || r.TimersStale != 1 {
			t.Errorf("p=%d: timers in %d, out %d, stale %d; want 2, 1, 1", m, r.TimersIn, r.TimersOut, r.TimersStale)
		}
		got, err := savepoint.Open(out, savepoint.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var fired []string
		for _, f := range got.Files {
			for _, r := range f.Snapshot.Rows {
				if bytes.Equal(r.Key, savepoint.TimerKeyPrefix) {
					proc, _, err := savepoint.ParseTimers(r.Value)
					if err != nil {
						t.Fatal(err)
					}
					for _, tm := range proc {
						fired = append(fired, fmt.Sprintf("%d:%s@%d", f.Subtask, tm.Key, tm.Time))
					}
				}
			}
		}
		got.Close()
		if want := fmt.Sprintf("%d:%s@100", savepoint.Group{First: 0, Count: m}.Owner(savepoint.KeyGroupOf(own)), own); !slices.Equal(fired, []string{want}) {
			t.Errorf("p=%d: the new blobs hold %v, want only %s", m, fired, want)
		}
	}
}

// TestRescaleTimersUnchosen: a subtask without a timer blob of its own
// restores one of its peers' blobs (clink: in directory order; sptool: the
// last). Its timers in the blob of a peer other than the last are dropped
// and counted apart from the stale copies, with a warning; those in the
// last peer's blob are kept, also when another peer holds them too.
func TestRescaleTimersUnchosen(t *testing.T) {
	dir := rsTempDir(t)
	in := filepath.Join(dir, "in")
	g := savepoint.Group{First: 0, Count: 3}
	files := map[int][]savepoint.Row{0: nil, 1: nil, 2: nil}
	per := map[int][]rsTimer{}
	var unchosen, kept int
	for i := 0; i < 60; i++ {
		uk := []byte("user-" + strconv.Itoa(i))
		key := savepoint.EncodeKeyedKey([]byte("s"), uk)
		o := g.Owner(savepoint.KeyGroupOf(uk))
		files[o] = append(files[o], savepoint.Row{Op: 1, Key: key, Value: rsI64(int64(i))})
		tm := rsTimer{Event: true, TS: 1000 + int64(i), Key: string(uk)}
		switch {
		case o != 0:
			per[o] = append(per[o], tm)
			kept++
		case i%3 == 0: // only in subtask 1's blob: unchosen
			per[1] = append(per[1], tm)
			unchosen++
		case i%3 == 1: // in the last peer's blob: kept
			per[2] = append(per[2], tm)
			kept++
		default: // in both: kept from the last, the other copy stale
			per[1] = append(per[1], tm)
			per[2] = append(per[2], tm)
			kept++
		}
	}
	if unchosen == 0 || kept == 0 {
		t.Fatal("the test needs timers of subtask 0 in each peer's blob")
	}
	for i := 1; i < 3; i++ {
		files[i] = append(files[i], savepoint.Row{Op: 1, Key: []byte(rsTimerBlobKey), Value: rsEncodeTimers(per[i])})
	}
	rsWriteTree(t, in, files, savepoint.VersionMap{})
	sp := rsOpen(t, in, nil)
	rep := rsRun(t, sp, "version: 1\nrules:\n  - rescale: {parallelism: 2}\n", filepath.Join(dir, "out"))
	rr := rep.Rescale
	if rr.TimersUnchosen != int64(unchosen) || rr.TimersOut != int64(kept) || rr.TimersIn != rr.TimersOut+rr.TimersStale+rr.TimersUnchosen {
		t.Errorf("report timers: %d in, %d out, %d stale, %d unchosen; want %d out, %d unchosen", rr.TimersIn, rr.TimersOut, rr.TimersStale, rr.TimersUnchosen, kept, unchosen)
	}
	if !slices.ContainsFunc(rep.Warnings, func(w string) bool {
		return strings.HasPrefix(w, fmt.Sprintf("timers dropped: %d, of subtasks without a timer blob", unchosen))
	}) {
		t.Errorf("warnings %q: want one on the unchosen timers", rep.Warnings)
	}
}

// A rescale merges the copies of an operator row replicated in every old
// file without copying them, and reads a row larger than a read's buffer
// through the map: four files of an 8 MiB broadcast state, rescaled to 2,
// allocate less than two copies of it (the merge's map of the values and
// a buffer of each row's size per file allocated eight, 64 MiB).
func TestRescaleReplicatedValueNotCopied(t *testing.T) {
	const size = 8 << 20
	dir := filepath.Join(rsTempDir(t), "tree")
	if err := gen.WriteBigTree(dir, gen.BigOptions{Broadcast: size}, 4); err != nil {
		t.Fatal(err)
	}
	sp, err := savepoint.Open(dir, savepoint.OpenOptions{Columnar: true, RequireValid: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	set := rsRules(t, "version: 1\nrules:\n  - rescale: {parallelism: 2}\n")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rep, err := transform.Run(context.Background(), sp, set, transform.Options{Out: filepath.Join(rsTempDir(t), "out")})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 2*size {
		t.Errorf("the rescale allocated %d bytes for 4 copies of a %d-byte value", alloc, size)
	}
	if rep.Rescale == nil || rep.Rescale.OperatorIn != 4 || rep.Rescale.OperatorDistinct != 1 || len(rep.Rescale.Merges) != 0 {
		t.Errorf("rescale report %+v: want 4 copies merged into 1, all equal", rep.Rescale)
	}
}

// rsShuffled returns the rows of each file in a random order that keeps the
// rows of one operator and key in their order (the case's model resolves
// a key stored twice by its copies' order), as clink's hash-map order
// leaves them.
func rsShuffled(files map[int][]savepoint.Row, seed uint64) map[int][]savepoint.Row {
	r := rand.New(rand.NewPCG(seed, 17))
	out := map[int][]savepoint.Row{}
	for s, rows := range files {
		rank := map[string]uint64{}
		for _, row := range rows {
			if _, ok := rank[rsKey(row.Op, row.Key)]; !ok {
				rank[rsKey(row.Op, row.Key)] = r.Uint64()
			}
		}
		rows = slices.Clone(rows)
		slices.SortStableFunc(rows, func(a, b savepoint.Row) int {
			return cmp.Compare(rank[rsKey(a.Op, a.Key)], rank[rsKey(b.Op, b.Key)])
		})
		out[s] = rows
	}
	return out
}

// rsWriteTreeAsIs is rsWriteTree with each file's rows in the order given.
func rsWriteTreeAsIs(t testing.TB, dir string, files map[int][]savepoint.Row, vm savepoint.VersionMap) string {
	t.Helper()
	return writeTreeAsIsOf(t, dir, 17, "42", savepoint.CanonicalMetadata(nil, vm), files)
}

// A rescale of files in no order sorts those of its rescaled groups before
// the rules pass (presorts). The random cases of TestRescaleProperty, their
// files in clink's hash-map order and sorted through temporary files from a
// few rows on, give the same output, byte for byte, and the same report as
// the rules pass over the files as stored, and the output passes the
// property test's checks. So do the cases with a keyed row stored twice and
// a lost row added to a rescaled group's files (and the rule's drop_lost):
// the copies of the key resolved as restore resolves them, and the lost
// row's example naming its row in the input.
func TestRescalePresorted(t *testing.T) {
	cases := 24
	if testing.Short() {
		cases = 8
	}
	defer transform.SetSpill(4, 1<<10)()
	dir := rsTempDir(t)
	presorted := transform.Presorts()
	for i := 0; i < cases; i++ {
		c := rsGenerate(uint64(1000 + i))
		for _, odd := range []bool{false, true} {
			name := c.String()
			if odd {
				name += " with a key stored twice and a lost row"
			}
			t.Run(name, func(t *testing.T) {
				files, rule := c.Files, rsRuleFor(c.Groups)
				if odd {
					files, rule = rsOddRows(t, c), rsRuleDropLost(c.Groups)
				}
				in := rsWriteTreeAsIs(t, filepath.Join(dir, fmt.Sprintf("in-%d-%v", i, odd)), rsShuffled(files, uint64(i)), c.VM)
				sp := rsOpen(t, in, c.layoutOld())
				if !odd {
					rsCheckInputTruth(t, c, sp)
				}
				run, err := savepoint.Open(in, savepoint.OpenOptions{RequireValid: true, Groups: c.layoutOld(), Columnar: true})
				if err != nil {
					t.Fatal(err)
				}
				defer run.Close()
				var reps, outs [2]string
				for k, on := range []bool{false, true} {
					restore := transform.SetPresort(on)
					outs[k] = filepath.Join(dir, fmt.Sprintf("out-%d-%v-%v", i, odd, on))
					spills, presorts := transform.Spills(), transform.Presorts()
					rep, err := transform.Run(context.Background(), run, rsRules(t, rule), transform.Options{Out: outs[k]})
					restore()
					if err != nil {
						t.Fatalf("presort %v: run: %v\n%s", on, err, rule)
					}
					if n, p := transform.Spills()-spills, transform.Presorts()-presorts; on && n != p {
						// A file that stores a key twice has its copies
						// folded in its sorted copy, not sorted again.
						t.Errorf("%d sorts through temporary files for %d files sorted first", n, p)
					}
					if odd && (rep.DuplicatesResolved == 0 || rep.Rescale.Lost == 0 || len(rep.Rescale.LostExamples) == 0) {
						t.Fatalf("test setup: %d duplicates resolved, %d lost", rep.DuplicatesResolved, rep.Rescale.Lost)
					}
					rep.Output.Path = ""
					j, err := json.Marshal(rep)
					if err != nil {
						t.Fatal(err)
					}
					reps[k] = string(j)
					if on && !odd {
						rsCheckCase(t, c, sp, rep, outs[k])
					}
				}
				if reps[0] != reps[1] {
					t.Errorf("the reports differ:\nas stored: %s\npresorted: %s", reps[0], reps[1])
				}
				rsSameTree(t, outs[0], outs[1])
			})
		}
		if t.Failed() {
			break
		}
	}
	if transform.Presorts() == presorted {
		t.Error("no file was sorted before the rules pass")
	}
}

// rsRuleDropLost is rsRuleFor's rule with drop_lost set.
func rsRuleDropLost(groups []rsGroup) string {
	return rsGroupsRule(groups, "      drop_lost: true\n")
}

// rsOddRows returns the files of case c with, in the last old file of its
// first rescaled group, a copy of a keyed row stored again with another
// value, and in the first a keyed row of a key group another subtask of
// the group owns, whose file does not hold it: a lost row, in a file that
// stores no key twice.
func rsOddRows(t *testing.T, c *rsCase) map[int][]savepoint.Row {
	t.Helper()
	files := map[int][]savepoint.Row{}
	for s, rows := range c.Files {
		files[s] = slices.Clone(rows)
	}
	for _, g := range c.Groups {
		if g.M == g.N || g.N < 2 {
			continue
		}
		og := g.old()
		last := g.First + g.N - 1
		i := slices.IndexFunc(files[last], func(r savepoint.Row) bool { return rsIsFiltered(r.Key) && og.Owner(int(r.Key[0])) == last })
		if i < 0 {
			continue
		}
		dup := files[last][i]
		dup.Value = append(slices.Clone(dup.Value), 0xEE)
		files[last] = append(files[last], dup)
		for n := 0; ; n++ {
			k := savepoint.EncodeKeyedKey([]byte("lost"), []byte(fmt.Sprintf("row-%d", n)))
			if og.Owner(int(k[0])) != g.First {
				files[g.First] = append(files[g.First], savepoint.Row{Op: dup.Op, Key: k, Value: []byte("v")})
				return files
			}
		}
	}
	t.Skip("no rescaled group of two or more files with a keyed row")
	return nil
}

// rsSameTree fails unless the trees a and b hold the same files, byte for
// byte.
func rsSameTree(t *testing.T, a, b string) {
	t.Helper()
	fa, fb := checksums(t, a), checksums(t, b)
	for _, rel := range slices.Sorted(maps.Keys(fa)) {
		if fa[rel] != fb[rel] {
			t.Errorf("%s differs", rel)
		}
	}
	if len(fa) != len(fb) {
		t.Errorf("%d files and directories against %d", len(fa), len(fb))
	}
}

// A file whose sort before the rules pass fails for want of a temporary
// directory is read as stored, and the rescale's own sort takes it as
// before: the output is that of a run with the directory.
func TestRescalePresortWithoutTempDir(t *testing.T) {
	defer transform.SetSpill(4, 1<<10)()
	dir := rsTempDir(t)
	c := rsGenerate(1003)
	in := rsWriteTreeAsIs(t, filepath.Join(dir, "in"), rsShuffled(c.Files, 3), c.VM)
	run, err := savepoint.Open(in, savepoint.OpenOptions{RequireValid: true, Groups: c.layoutOld(), Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	presorted := transform.Presorts()
	with, without := filepath.Join(dir, "with"), filepath.Join(dir, "without")
	if _, err := transform.Run(context.Background(), run, rsRules(t, rsRuleFor(c.Groups)), transform.Options{Out: with}); err != nil {
		t.Fatal(err)
	}
	if transform.Presorts() == presorted {
		t.Fatal("test setup: no file was sorted before the rules pass")
	}
	presorted = transform.Presorts()
	if _, err := transform.Run(context.Background(), run, rsRules(t, rsRuleFor(c.Groups)), transform.Options{Out: without, TempDir: filepath.Join(dir, "no such directory")}); err != nil {
		t.Fatalf("without a temporary directory: %v", err)
	}
	if n := transform.Presorts() - presorted; n != 0 {
		t.Errorf("%d files sorted before the rules pass without a temporary directory", n)
	}
	rsSameTree(t, with, without)
}
