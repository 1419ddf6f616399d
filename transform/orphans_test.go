package transform_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/transform"
)

// orphanTree writes a two-subtask tree (one chain group, so subtask 0 owns
// key groups 0-63 and subtask 1 owns 64-127) whose subtask 0 file holds,
// besides its own key "a", a stale copy of a key of subtask 1's range
// (value "old"), whose owner's copy holds "new"; and, unless owned is
// false, a key of subtask 1's range that subtask 1 does not hold (a row
// lost in the input), value "lost". asIs writes the files in the order
// given rather than canonical order. It returns the tree's path and the
// keys: own (group < 64), stale and lost (groups >= 64, each in a group of its own).
func orphanTree(t *testing.T, asIs bool) (dir string, own, stale, lost []byte) {
	t.Helper()
	var lo, hi [][]byte
	for i := 0; len(lo) < 1 || len(hi) < 3; i++ {
		k := fmt.Appendf(nil, "user-%d", i)
		switch kg := savepoint.KeyGroupOf(k); {
		case kg < 64:
			lo = append(lo, k)
		case !slices.ContainsFunc(hi, func(h []byte) bool { return savepoint.KeyGroupOf(h) == kg }):
			hi = append(hi, k) // each in a key group of its own
		}
	}
	key := func(k []byte) []byte { return savepoint.EncodeKeyedKey([]byte("agg"), k) }
	row := func(k []byte, v string) savepoint.Row {
		return savepoint.Row{Op: 7, Key: key(k), Value: []byte(v)}
	}
	files := map[int][]savepoint.Row{
		// Subtask 0's rows in the order clink's hash map might store them.
		0: {row(hi[2], "lost"), row(hi[0], "old"), row(lo[0], "a")},
		1: {row(hi[1], "b"), row(hi[0], "new")},
	}
	dir = filepath.Join(t.TempDir(), "in")
	if asIs {
		writeTreeAsIs(t, dir, 5, files, savepoint.VersionMap{})
	} else {
		writeTree(t, dir, 5, "j", files, savepoint.VersionMap{}, savepoint.CompressNone)
	}
	return dir, key(lo[0]), key(hi[0]), key(hi[2])
}

// TestStaleCopyFollowsOwner: on a tree, a rule that drops a key's owner
// copy by where it is stored or by its value, not by its key, takes the
// stale copies of the key in other files with it (counted as
// OrphanedCopies, among RowsDropped), so that the output holds no copy
// without an owner copy that the input did not; a stale copy whose owner
// copy stays, and a row the input already held without one, are kept.
func TestStaleCopyFollowsOwner(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rules string
		// orphans is the stale copies the run drops with their owner's;
		// kept the keys subtask 0's output holds; outs the rows out.
		orphans int64
		stale   bool // subtask 0 keeps the stale copy
		outs    int64
	}{
		{"by subtask", "  - drop: 'subtask == 1 && key_group == %[1]d'\n", 1, false, 3},
		{"by value", "  - drop: 'string(value_bytes) == \"new\"'\n", 1, false, 3},
		{"keep by value", "  - keep: 'string(value_bytes) != \"new\"'\n", 1, false, 3},
		{"stale copy alone", "  - drop: 'string(value_bytes) == \"old\"'\n", 0, false, 4},
		{"owner copy kept", "  - drop: 'string(value_bytes) == \"b\"'\n", 0, true, 4},
	} {
		// The stale copies are found from the run log of the output rows
		// (in canonical or stream order), else in canonical order by
		// binary search, else in stream order row by row.
		for _, mode := range []struct{ asIs, keepOrder, log bool }{
			{false, false, true}, {true, true, true}, {false, false, false}, {true, true, false},
		} {
			keepOrder := mode.keepOrder
			t.Run(fmt.Sprintf("%s/as-is=%v/keep-order=%v/log=%v", tc.name, mode.asIs, keepOrder, mode.log), func(t *testing.T) {
				defer transform.SetRunLog(mode.log)()
				in, own, stale, lost := orphanTree(t, mode.asIs)
				out := filepath.Join(t.TempDir(), "out")
				rule := tc.rules
				if strings.Contains(rule, "%[1]d") {
					rule = fmt.Sprintf(rule, int(stale[0]))
				}
				set := parseRules(t, "version: 1\nrules:\n"+rule, nil)
				rep, err := run(t, in, set, transform.Options{Out: out, KeepOrder: keepOrder})
				if err != nil {
					t.Fatal(err)
				}
				if rep.OrphanedCopies != tc.orphans || rep.RowsOut != tc.outs {
					t.Errorf("orphans dropped %d, rows out %d; want %d, %d", rep.OrphanedCopies, rep.RowsOut, tc.orphans, tc.outs)
				}
				if rep.RowsIn != rep.RowsOut+rep.RowsDropped {
					t.Errorf("rows in %d != out %d + dropped %d", rep.RowsIn, rep.RowsOut, rep.RowsDropped)
				}
				var text strings.Builder
				if err := rep.WriteText(&text); err != nil {
					t.Fatal(err)
				}
				if said := strings.Contains(text.String(), "stale cop"); said != (tc.orphans > 0) {
					t.Errorf("report text names stale copies: %v, want %v:\n%s", said, tc.orphans > 0, text.String())
				}
				sp := open(t, out)
				defer sp.Close()
				var keys [][]byte
				cur := sp.File(0).Snapshot.NewCursor()
				for i := range cur.Len() {
					keys = append(keys, slices.Clone(cur.Key(i)))
				}
				has := func(k []byte) bool {
					return slices.ContainsFunc(keys, func(x []byte) bool { return string(x) == string(k) })
				}
				if !has(own) || !has(lost) || has(stale) != tc.stale {
					t.Errorf("subtask 0 holds own %v, lost %v, stale %v; want true, true, %v", has(own), has(lost), has(stale), tc.stale)
				}
				// The output's only error is the input's: the lost row.
				vr := savepoint.Validate(sp, savepoint.ValidateOptions{})
				if vr.Errors() != 1 {
					t.Errorf("the output has %d errors, want 1 (the row lost in the input):\n%v", vr.Errors(), vr.Findings)
				}
			})
		}
	}
}

// TestStaleCopyOfErasedKey: in a changelog+file tree, a copy of a key
// outside its owner's file whose owner's log erases it is stale; the
// owner's output, a snapshot, keeps no log, so the run drops the copy
// (whatever the rules) rather than write a row the output holds with no
// owner copy. Without the erase the row is lost in the input, and kept.
func TestStaleCopyOfErasedKey(t *testing.T) {
	for _, erase := range []bool{false, true} {
		t.Run(fmt.Sprintf("erase=%v", erase), func(t *testing.T) {
			in := ownerLogTree(t, erase, false)
			out := filepath.Join(t.TempDir(), "out")
			rep, err := run(t, in, parseRules(t, "version: 1\nrules:\n  - drop: 'op == 99'\n", nil), transform.Options{Out: out})
			if err != nil {
				t.Fatal(err)
			}
			want, errs := int64(0), 1
			if erase {
				want, errs = 1, 0
			}
			if rep.OrphanedCopies != want || rep.RowsIn != rep.RowsOut+rep.RowsDropped {
				t.Errorf("orphaned copies %d, want %d; rows in %d, out %d, dropped %d", rep.OrphanedCopies, want, rep.RowsIn, rep.RowsOut, rep.RowsDropped)
			}
			osp := open(t, out)
			defer osp.Close()
			if vr := savepoint.Validate(osp, savepoint.ValidateOptions{}); vr.Errors() != errs {
				t.Errorf("the output has %d errors, want %d:\n%v", vr.Errors(), errs, vr.Findings)
			}
		})
	}
}

// TestRawKeyOfErasedKey: a legacy raw key of another subtask's range whose
// owner's log erases the key is kept (each subtask's in-flight buffer is
// its own), and the warning says why its owner holds none: no rule
// dropped a row.
func TestRawKeyOfErasedKey(t *testing.T) {
	in := ownerLogTree(t, true, true)
	out := filepath.Join(t.TempDir(), "out")
	rep, err := run(t, in, parseRules(t, "version: 1\nrules:\n  - drop: 'op == 99'\n", nil), transform.Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OrphanedCopies != 0 || rep.RowsDropped != 0 {
		t.Errorf("orphaned copies %d, rows dropped %d; want 0, 0", rep.OrphanedCopies, rep.RowsDropped)
	}
	const want = "1 legacy raw key row outside its file's key-group range kept, though its owner's changelog erases the key in its log"
	if !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, want) }) {
		t.Errorf("warnings %q, want one holding %q", rep.Warnings, want)
	}
}

// TestStaleCopyFates: a stale copy is judged by the key it had in the
// input, against the fate of its owner's copy of that key, whatever the
// rules did to either, and the same way whether the outputs are sorted in
// memory, through temporary files or not at all, in a plan as in an
// apply. Legacy raw keys, each subtask's own state, are kept, and named.
func TestStaleCopyFates(t *testing.T) {
	var hi, hi2 []byte
	for i := 0; hi2 == nil; i++ {
		if k := fmt.Appendf(nil, "user-%d", i); savepoint.KeyGroupOf(k) >= 64 {
			hi, hi2 = k, hi
		}
	}
	keyed := func(slot, v string) savepoint.Row {
		return savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte(slot), hi), Value: []byte(v)}
	}
	// A key of subtask 1's own, to drop there.
	zap := savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("x"), hi2), Value: []byte("zap")}
	raw := func(key, v string) savepoint.Row { return savepoint.Row{Op: 7, Key: []byte(key), Value: []byte(v)} }
	timers := func(t int64) savepoint.Row {
		return savepoint.Row{Op: 7, Key: []byte("__clink_timers"), Value: savepoint.EncodeTimers([]savepoint.Timer{{Time: t, Key: []byte("k")}}, nil)}
	}
	for _, tc := range []struct {
		name  string
		files map[int][]savepoint.Row
		rules string
		// orphans: the stale copies dropped; left: subtask 0's rows after
		// the run, as op/key/value text; warn: a warning holds it.
		orphans int64
		left    []string
		warn    string
		// dupes: the duplicates resolved, and storedDupes more when
		// the files are written as stored (their duplicates kept).
		dupes, storedDupes int64
	}{
		{
			// Merged onto a key the owner holds, the copy is a stale copy
			// of that key, which the owner's copy outranks.
			name: "dropped by value, then merged onto a key its owner keeps",
			files: map[int][]savepoint.Row{
				0: {keyed("a", "old")},
				1: {keyed("a", "new"), keyed("b", "y")},
			},
			rules: "  - drop: 'string(value_bytes) == \"new\"'\n  - rename_slot: {op: 7, from: a, to: b, merge: true}\n",
			left:  []string{fmt.Sprintf("7/%x/old", keyed("b", "").Key)},
		},
		{
			// The owner's merged copy dropped by a later rule: the copy the
			// merge resolved away does not come back, and the owner holds
			// no copy of b.
			name: "owner's merged copy dropped",
			files: map[int][]savepoint.Row{
				0: {keyed("b", "old")},
				1: {keyed("a", "new"), keyed("b", "y")},
			},
			rules:   "  - rename_slot: {op: 7, from: a, to: b, merge: true}\n  - drop: 'subtask == 1 && string(value_bytes) == \"y\"'\n",
			orphans: 1,
			dupes:   1,
			warn:    "1 stale copy dropped that no rule matched",
		},
		{
			name: "lost in the input, then merged",
			files: map[int][]savepoint.Row{
				0: {keyed("a", "old")},
				1: {keyed("b", "new")},
			},
			rules: "  - rename_slot: {op: 7, from: a, to: b, merge: true}\n  - drop: 'string(value_bytes) == \"new\"'\n",
			left:  []string{fmt.Sprintf("7/%x/old", keyed("b", "").Key)},
		},
		{
			name: "owner's copy renamed",
			files: map[int][]savepoint.Row{
				0: {keyed("a", "old")},
				1: {keyed("a", "new")},
			},
			rules: "  - rename_slot: {op: 7, from: a, to: b}\n  - drop: 'string(value_bytes) == \"old\" && subtask == 1'\n",
			left:  []string{fmt.Sprintf("7/%x/old", keyed("b", "").Key)},
		},
		{
			// The owner's copy of b lost the merge: the key's state is the
			// merged copy, which the owner holds; so whether the owner
			// dropped another row, and in which order the rules run, does
			// not matter.
			name: "owner's copy lost a merge, another row dropped",
			files: map[int][]savepoint.Row{
				0: {keyed("b", "old")},
				1: {keyed("c", "cval"), keyed("b", "bval"), zap},
			},
			rules: "  - rename_slot: {op: 7, from: c, to: b, merge: true}\n  - drop: 'string(value_bytes) == \"zap\"'\n",
			left:  []string{fmt.Sprintf("7/%x/old", keyed("b", "").Key)},
			dupes: 1,
		},
		{
			name: "owner's copy lost a merge, another row dropped first",
			files: map[int][]savepoint.Row{
				0: {keyed("b", "old")},
				1: {keyed("c", "cval"), keyed("b", "bval"), zap},
			},
			rules: "  - drop: 'string(value_bytes) == \"zap\"'\n  - rename_slot: {op: 7, from: c, to: b, merge: true}\n",
			left:  []string{fmt.Sprintf("7/%x/old", keyed("b", "").Key)},
			dupes: 1,
		},
		{
			// An unchanged file storing the stale copy twice: one is
			// resolved as a duplicate, the other counted, and warned of,
			// once.
			name: "stale copy stored twice",
			files: map[int][]savepoint.Row{
				0: {keyed("a", "old1"), keyed("a", "old2")},
				1: {keyed("a", "new")},
			},
			rules:       "  - drop: 'string(value_bytes) == \"new\"'\n",
			orphans:     1,
			storedDupes: 1,
			warn:        "1 stale copy dropped that no rule matched: a keyed row",
		},
		{
			name: "in-flight buffers and legacy timer blobs are each subtask's own",
			files: map[int][]savepoint.Row{
				0: {raw("__broadcast_main_inflight__", "mine"), timers(5)},
				1: {raw("__broadcast_main_inflight__", "theirs"), timers(6), keyed("a", "x")},
			},
			rules: "  - drop: 'subtask == 1 && kind == \"raw\"'\n",
			left:  []string{fmt.Sprintf("7/%x/mine", "__broadcast_main_inflight__"), fmt.Sprintf("7/%x/%x", "__clink_timers", timers(5).Value)},
			warn:  "2 legacy raw key rows outside their file's key-group range kept",
		},
	} {
		for _, mode := range []string{"sorted", "as-is", "keep-order", "spilled"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				spills := transform.Spills()
				if mode == "spilled" {
					defer transform.SetSpill(1, 0)()
				}
				// Subtask 0 gets two rows of its own range (operator 9), out
				// of order as stored but for "sorted", so that its output
				// is sorted if it is rewritten.
				files := maps.Clone(tc.files)
				files[0] = append([]savepoint.Row{{Op: 9, Key: []byte{2, 'x'}}, {Op: 9, Key: []byte{1, 'x'}}}, files[0]...)
				in := filepath.Join(t.TempDir(), "in")
				if mode == "sorted" {
					writeTree(t, in, 5, "j", files, savepoint.VersionMap{}, savepoint.CompressNone)
				} else {
					writeTreeAsIs(t, in, 5, files, savepoint.VersionMap{})
				}
				set := parseRules(t, "version: 1\nrules:\n"+tc.rules, nil)
				plan, err := run(t, in, set, transform.Options{DryRun: true, KeepOrder: mode == "keep-order"})
				if err != nil {
					t.Fatal(err)
				}
				out := filepath.Join(t.TempDir(), "out")
				rep, err := run(t, in, set, transform.Options{Out: out, KeepOrder: mode == "keep-order"})
				if err != nil {
					t.Fatal(err)
				}
				dupes := tc.dupes
				if mode != "sorted" {
					dupes += tc.storedDupes
				}
				for _, r := range []*transform.Report{plan, rep} {
					if r.OrphanedCopies != tc.orphans || r.RowsIn != r.RowsOut+r.RowsDropped || r.DuplicatesResolved != dupes {
						t.Errorf("orphaned copies %d, want %d; duplicates %d, want %d; rows in %d, out %d, dropped %d",
							r.OrphanedCopies, tc.orphans, r.DuplicatesResolved, dupes, r.RowsIn, r.RowsOut, r.RowsDropped)
					}
					warned := slices.ContainsFunc(r.Warnings, func(w string) bool { return tc.warn != "" && strings.Contains(w, tc.warn) })
					if warned != (tc.warn != "") || slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "duplicate") }) {
						t.Errorf("warnings %q; want one holding %q, none of duplicates", r.Warnings, tc.warn)
					}
				}
				if mode == "spilled" && rep.Files[0].Action == "rewrite" && transform.Spills() == spills {
					t.Error("subtask 0's output was not sorted through temporary files")
				}
				if plan.RowsOut != rep.RowsOut {
					t.Errorf("the plan counts %d rows out, the apply %d", plan.RowsOut, rep.RowsOut)
				}
				sp := open(t, out)
				defer sp.Close()
				var left []string
				cur := sp.File(0).Snapshot.NewCursor()
				for i := range cur.Len() {
					r := cur.Row(i)
					if r.Op == 9 {
						continue
					}
					left = append(left, fmt.Sprintf("%d/%x/%s", r.Op, r.Key, textOrHex(r.Value)))
				}
				slices.Sort(left)
				want := slices.Sorted(slices.Values(tc.left))
				if !slices.Equal(left, want) {
					t.Errorf("subtask 0 holds %q, want %q", left, want)
				}
			})
		}
	}
}

// textOrHex is b as text when it is printable ASCII, else in hex.
func textOrHex(b []byte) string {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return fmt.Sprintf("%x", b)
		}
	}
	return string(b)
}

// staleRules are the rules TestStaleCopiesRandom draws from: drops by
// value and by subtask, merges, a purge, a raw key's drop.
var staleRules = []string{
	"  - drop: 'string(value_bytes) == \"new\"'\n",
	"  - drop: 'subtask == 1 && kind == \"keyed\"'\n",
	"  - keep: 'string(value_bytes) != \"v2\"'\n",
	"  - rename_slot: {op: 7, from: a, to: b, merge: true}\n",
	"  - rename_slot: {op: 7, from: c, to: b, merge: true}\n",
	"  - remap_operator: {from: 8, to: 7, merge: true}\n",
	"  - purge_keys: {keys: [\"u3\", \"u5\"]}\n",
	"  - drop: 'slot == \"c\"'\n",
	"  - drop: 'subtask == 0 && string(value_bytes) == \"v1\"'\n",
	"  - drop: 'kind == \"raw\" && subtask == 1'\n",
	"  - drop: 'string(value_bytes) == \"old\"'\n",
}

// TestStaleCopiesRandom runs random rule files over random trees (2 to 4
// subtasks of one chain group, stale copies and keys stored twice in any
// file, in-flight buffers, rows in any order or sorted), each run five ways (groups
// inferred and given, --keep-order, every output sorted through temporary
// files, a plan): every way must give the same counts and warnings, every
// row be accounted for, and the output of a tree that validates validate
// (but for the legacy raw keys the run warns of). STALE_SEEDS sets how many
// trees (40 by default).
func TestStaleCopiesRandom(t *testing.T) {
	seeds := 40
	if s := os.Getenv("STALE_SEEDS"); s != "" {
		fmt.Sscan(s, &seeds)
	}
	vals := []string{"v1", "v2", "v3", "new", "old"}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 17))
		p := 2 + rng.IntN(3)
		files := map[int][]savepoint.Row{}
		for s := range p {
			files[s] = nil
		}
		for u := range 10 {
			for _, slot := range []string{"a", "b", "c"} {
				for _, op := range []uint64{7, 8} {
					if rng.IntN(2) == 0 {
						continue
					}
					key := savepoint.EncodeKeyedKey([]byte(slot), fmt.Appendf(nil, "u%d", u))
					owner := int(key[0]) * p / savepoint.NumKeyGroups
					for s := range p {
						copies := 0
						switch {
						case s == owner:
							copies = 1 + rng.IntN(4)/3 // sometimes twice
						case rng.IntN(3) == 0:
							copies = 1 + rng.IntN(5)/4
						}
						for range copies {
							files[s] = append(files[s], savepoint.Row{Op: op, Key: key, Value: []byte(vals[rng.IntN(len(vals))])})
						}
					}
				}
			}
		}
		if rng.IntN(2) == 0 {
			for s := range p {
				files[s] = append(files[s], savepoint.Row{Op: 7, Key: []byte("__broadcast_main_inflight__"), Value: []byte(vals[rng.IntN(len(vals))])})
			}
		}
		for s := range p {
			rng.Shuffle(len(files[s]), func(i, j int) { files[s][i], files[s][j] = files[s][j], files[s][i] })
		}
		var src string
		for range 1 + rng.IntN(3) {
			src += staleRules[rng.IntN(len(staleRules))]
		}
		dir := t.TempDir()
		// Every other tree sorted (its rows' copies resolved), so that the
		// owners' outputs are searched in canonical order too.
		in := filepath.Join(dir, "in")
		if seed%2 == 0 {
			writeTree(t, in, 5, "j", files, savepoint.VersionMap{}, savepoint.CompressNone)
		} else {
			writeTreeAsIs(t, in, 5, files, savepoint.VersionMap{})
		}
		set := parseRules(t, "version: 1\nrules:\n"+src, nil)
		groups := []savepoint.Group{{First: 0, Count: p}}
		var first string
		for _, mode := range []string{"given", "inferred", "keep-order", "spilled", "plan"} {
			opts := savepoint.OpenOptions{RequireValid: true, Columnar: true, Groups: groups}
			if mode == "inferred" {
				opts.Groups = nil
			}
			sp, err := savepoint.Open(in, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(sp.Groups, groups) {
				sp.Close()
				continue // (inferred otherwise from few rows)
			}
			valid := savepoint.Validate(sp, savepoint.ValidateOptions{}).Errors() == 0
			out := filepath.Join(dir, "out-"+mode)
			ropts := transform.Options{Out: out, Jobs: 2, KeepOrder: mode == "keep-order", DryRun: mode == "plan"}
			if mode == "plan" {
				ropts.Out = ""
			}
			restore := func() {}
			if mode == "spilled" {
				restore = transform.SetSpill(1, 0)
			}
			rep, err := transform.Run(context.Background(), sp, set, ropts)
			restore()
			sp.Close()
			if err != nil {
				t.Fatalf("seed %d, %s: %v\nrules:\n%s", seed, mode, err, src)
			}
			if rep.RowsIn != rep.RowsOut+rep.RowsDropped {
				t.Errorf("seed %d, %s: rows in %d, out %d, dropped %d", seed, mode, rep.RowsIn, rep.RowsOut, rep.RowsDropped)
			}
			var warns []string
			for _, w := range rep.Warnings {
				if strings.Contains(w, "stale cop") || strings.Contains(w, "legacy raw key") {
					warns = append(warns, w)
				}
			}
			sum := fmt.Sprintf("%d out, %d dropped, %d orphaned, %d duplicates; %q", rep.RowsOut, rep.RowsDropped, rep.OrphanedCopies, rep.DuplicatesResolved, warns)
			if first == "" {
				first = sum
			} else if sum != first {
				t.Errorf("seed %d, %s: %s\nthe first way: %s\nrules:\n%s", seed, mode, sum, first, src)
			}
			if mode == "plan" || !valid {
				continue
			}
			got, err := savepoint.Open(out, savepoint.OpenOptions{RequireValid: true, Groups: groups})
			if err != nil {
				t.Fatal(err)
			}
			r := savepoint.Validate(got, savepoint.ValidateOptions{})
			got.Close()
			for _, f := range r.Findings {
				warned := f.Check == savepoint.CheckMisplacedRow && savepoint.ParseKey(f.Key).Kind == savepoint.KindRaw &&
					slices.ContainsFunc(warns, func(w string) bool { return strings.Contains(w, "legacy raw key") })
				if f.Severity == savepoint.SeverityError && !warned {
					var b strings.Builder
					r.WriteText(&b)
					t.Errorf("seed %d, %s: the output of a valid tree does not validate:\n%s\nrules:\n%s", seed, mode, b.String(), src)
					break
				}
			}
		}
	}
}
