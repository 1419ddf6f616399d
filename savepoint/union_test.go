package savepoint

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// utTruthEntry is the part of an independent fixture's truth entry the
// union tests read.
type utTruthEntry struct {
	Subtask       int    `json:"subtask"`
	Op            string `json:"op_id"`
	KeyHex        string `json:"key_hex"`
	ValueHex      string `json:"value_hex"`
	Duplicate     bool   `json:"duplicate"`
	Authoritative *bool  `json:"authoritative"`
	Origin        string `json:"origin"`
}

type utTruth struct {
	Counts struct {
		StaleKeyedCopies int `json:"stale_keyed_copies"`
	} `json:"counts"`
	Entries []utTruthEntry `json:"entries"`
}

func utHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestUnionIndependentFixtures checks Union against the truth of the trees
// written by an independent implementation: per (op, key) the authoritative
// copy for keyed rows (the owner's), clink's fold for operator rows.
func TestUnionIndependentFixtures(t *testing.T) {
	for _, name := range []string{"mixed-p4", "changelog-p4", "two-groups", "gen3-stale", "changelog-file"} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "testdata", "independent", name+".truth.json"))
			if err != nil {
				t.Fatal(err)
			}
			var tr utTruth
			if err := json.Unmarshal(b, &tr); err != nil {
				t.Fatal(err)
			}
			// Expected logical rows, from the truth alone.
			type group struct {
				op      uint64
				key     []byte
				entries []utTruthEntry
			}
			groups := map[string]*group{}
			for _, e := range tr.Entries {
				op, err := strconv.ParseUint(e.Op, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				k := e.Op + "/" + e.KeyHex
				g := groups[k]
				if g == nil {
					g = &group{op: op, key: utHex(t, e.KeyHex)}
					groups[k] = g
				}
				g.entries = append(g.entries, e)
			}
			want := map[string]UnionRow{}
			stale := 0
			for k, g := range groups {
				slices.SortStableFunc(g.entries, func(a, b utTruthEntry) int { return a.Subtask - b.Subtask })
				if len(g.key) > 0 && g.key[0] < NumKeyGroups {
					var pick *utTruthEntry
					for i := range g.entries {
						e := &g.entries[i]
						if len(g.entries) == 1 || (e.Authoritative != nil && *e.Authoritative) {
							pick = e
						}
					}
					if pick == nil {
						t.Fatalf("%s: no authoritative copy in the truth", k)
					}
					want[k] = UnionRow{Row: Row{g.op, g.key, utHex(t, pick.ValueHex)}, Subtask: pick.Subtask}
					for _, e := range g.entries {
						if e.Origin == "stale-copy" {
							stale++
						}
					}
					continue
				}
				// A chain group's frozen replicas of an operator another
				// group runs are folded only when no copy of the running
				// group holds the row (format section 10.3).
				fold := slices.DeleteFunc(slices.Clone(g.entries), func(e utTruthEntry) bool { return e.Origin == "replica" })
				if len(fold) == 0 {
					fold = g.entries
				}
				best := UnionRow{Row: Row{g.op, g.key, utHex(t, fold[0].ValueHex)}, Subtask: fold[0].Subtask}
				for _, e := range fold[1:] {
					in := Row{g.op, g.key, utHex(t, e.ValueHex)}
					both8 := len(best.Row.Value) == 8 && len(in.Value) == 8
					if !both8 || int64(le64(in.Value)) > int64(le64(best.Row.Value)) {
						best = UnionRow{Row: in, Subtask: e.Subtask}
					}
				}
				want[k] = best
			}
			if stale != tr.Counts.StaleKeyedCopies {
				t.Fatalf("truth: %d stale-copy entries, counts say %d", stale, tr.Counts.StaleKeyedCopies)
			}

			sp, err := Open(filepath.Join("..", "testdata", "independent", name), OpenOptions{RequireValid: true})
			if err != nil {
				t.Fatal(err)
			}
			got, st := sp.UnionWithStats()
			if !slices.IsSortedFunc(got, func(a, b UnionRow) int { return a.Row.Compare(b.Row) }) {
				t.Error("union not in canonical order")
			}
			for i := 1; i < len(got); i++ {
				if got[i-1].Row.Compare(got[i].Row) == 0 {
					t.Errorf("key %x of op %d twice", got[i].Row.Key, got[i].Row.Op)
				}
			}
			if len(got) != len(want) || st.Rows != len(want) {
				t.Errorf("%d rows (stats %d), truth %d", len(got), st.Rows, len(want))
			}
			for _, r := range got {
				k := strconv.FormatUint(r.Row.Op, 10) + "/" + hex.EncodeToString(r.Row.Key)
				w, ok := want[k]
				if !ok {
					t.Errorf("unexpected row %s", k)
					continue
				}
				if !bytes.Equal(w.Row.Value, r.Row.Value) {
					t.Errorf("row %s: value %x from subtask %d, truth %x from subtask %d", k, r.Row.Value, r.Subtask, w.Row.Value, w.Subtask)
				}
				if r.Row.Key[0] < NumKeyGroups && w.Subtask != r.Subtask {
					t.Errorf("row %s: from subtask %d, truth's owner copy is in %d", k, r.Subtask, w.Subtask)
				}
			}
			if st.StaleCopies < stale {
				t.Errorf("stale copies %d, truth has at least %d", st.StaleCopies, stale)
			}
			// The keyed ones are the truth's stale keyed copies (inspect's
			// count); the rest are legacy raw keys, counted apart.
			if keyed := st.StaleCopies - st.StaleRaw; keyed != tr.Counts.StaleKeyedCopies {
				t.Errorf("stale keyed copies %d (%d of %d stale copies raw), truth %d", keyed, st.StaleRaw, st.StaleCopies, tr.Counts.StaleKeyedCopies)
			}
			if st.Lost != 0 {
				t.Errorf("lost %d, want 0", st.Lost)
			}
			if st.StoredRows != len(tr.Entries) {
				t.Errorf("stored rows %d, truth %d", st.StoredRows, len(tr.Entries))
			}
			// Only a tree of several chain groups has frozen replicas: in
			// two-groups, each group's copies of the other's operator rows.
			if several := len(sp.Groups) > 1; several != (st.FrozenCopies > 0) {
				t.Errorf("%d chain groups, %d frozen copies left out", len(sp.Groups), st.FrozenCopies)
			}
			// Union's warnings are the stats' warnings.
			_, warns := sp.Union()
			if fmt.Sprint(warns) != fmt.Sprint(st.Warnings) {
				t.Errorf("warnings %q vs stats %q", warns, st.Warnings)
			}
			if st.StaleCopies > 0 && !strings.Contains(strings.Join(warns, "\n"), "stale keyed cop") {
				t.Errorf("no stale-copy warning in %q", warns)
			}
		})
	}
}

func TestUnionSingleFileIsLogical(t *testing.T) {
	sp, err := Open(filepath.Join("..", "testdata", "clink", "snapshot-v1.snap"), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, warns := sp.Union()
	want := Logical(sp.Files[0].Snapshot.Rows)
	if len(warns) != 0 || len(got) != len(want) {
		t.Fatalf("got %d rows, warnings %q; want %d rows", len(got), warns, len(want))
	}
	for i := range want {
		if got[i].Subtask != -1 || got[i].Row.Compare(want[i]) != 0 || !bytes.Equal(got[i].Row.Value, want[i].Value) {
			t.Errorf("row %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// utRef is a straightforward (map-based) implementation of Union's rules,
// the reference for the k-way merge.
func utRef(sp *Savepoint) ([]UnionRow, UnionStats) {
	type copyOf struct {
		row Row
		sub int
	}
	all := map[string][]copyOf{}
	var st UnionStats
	for _, f := range sp.Files {
		st.StoredRows += len(f.Snapshot.Rows)
		l := Logical(f.Snapshot.Rows)
		st.FileDuplicates += len(f.Snapshot.Rows) - len(l)
		for _, r := range l {
			k := strconv.FormatUint(r.Op, 10) + "/" + string(r.Key)
			all[k] = append(all[k], copyOf{r, f.Subtask})
		}
	}
	var out []UnionRow
	for _, cs := range all {
		key := cs[0].row.Key
		if len(key) > 0 && key[0] < NumKeyGroups {
			kg := int(key[0])
			found := -1
			for i, c := range cs {
				g, ok := sp.GroupOf(c.sub)
				if sp.Kind == InputFile || !ok || g.Owner(kg) == c.sub {
					found = i
					break
				}
			}
			if found < 0 {
				st.Lost += len(cs)
				continue
			}
			st.StaleCopies += len(cs) - 1
			out = append(out, UnionRow{Row: cs[found].row, Subtask: cs[found].sub})
			continue
		}
		best := cs[0]
		for _, c := range cs[1:] {
			if len(best.row.Value) == 8 && len(c.row.Value) == 8 && best.row.IsOperatorState() {
				a, b := int64(le64(best.row.Value)), int64(le64(c.row.Value))
				if b > a {
					best = c
				}
				continue
			}
			best = c
		}
		out = append(out, UnionRow{Row: best.row, Subtask: best.sub})
	}
	slices.SortFunc(out, func(a, b UnionRow) int { return a.Row.Compare(b.Row) })
	st.Rows = len(out)
	return out, st
}

func le64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// TestUnionMatchesReference compares the k-way merge with the map-based
// reference on random trees: several chain groups, unsorted files with
// duplicates, stale and misplaced keyed rows, shared operator rows of 8 and
// other lengths, raw legacy keys, the empty key.
func TestUnionMatchesReference(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		groups := []Group{{0, 1 + r.IntN(4)}}
		if r.IntN(2) == 0 {
			groups = append(groups, Group{groups[0].Count, 1 + r.IntN(3)})
		}
		last := groups[len(groups)-1]
		n := last.First + last.Count
		sp := &Savepoint{Kind: InputTree, Groups: groups}
		keys := [][]byte{{}, []byte("__inflight__"), {0xff, 't'}, {0xfe, 'o', '|', 'x'}}
		for i := 0; i < 30; i++ {
			keys = append(keys, EncodeKeyedKey([]byte{'s', byte('a' + r.IntN(3))}, []byte(strconv.Itoa(r.IntN(50)))))
		}
		for sub := 0; sub < n; sub++ {
			var rows []Row
			for j := r.IntN(60); j > 0; j-- {
				val := make([]byte, []int{0, 8, 8, 9}[r.IntN(4)])
				for i := range val {
					val[i] = byte(r.IntN(4))
				}
				rows = append(rows, Row{Op: uint64(1 + r.IntN(3)), Key: keys[r.IntN(len(keys))], Value: val})
			}
			sp.Files = append(sp.Files, &File{Subtask: sub, Snapshot: &Snapshot{Rows: rows}})
		}
		want, wst := utRef(sp)
		got, st := sp.UnionWithStats()
		if len(got) != len(want) {
			t.Fatalf("seed %d: %d rows, reference %d", seed, len(got), len(want))
		}
		for i := range want {
			if got[i].Subtask != want[i].Subtask || got[i].Row.Compare(want[i].Row) != 0 || !bytes.Equal(got[i].Row.Value, want[i].Row.Value) {
				t.Fatalf("seed %d row %d: got op %d key %x = %x (subtask %d), reference op %d key %x = %x (subtask %d)", seed, i,
					got[i].Row.Op, got[i].Row.Key, got[i].Row.Value, got[i].Subtask, want[i].Row.Op, want[i].Row.Key, want[i].Row.Value, want[i].Subtask)
			}
		}
		if st.Lost != wst.Lost || st.StaleCopies != wst.StaleCopies || st.FileDuplicates != wst.FileDuplicates || st.StoredRows != wst.StoredRows || st.Rows != wst.Rows {
			t.Errorf("seed %d: stats %+v, reference %+v", seed, st, wst)
		}
		// The stored view yields every row once, in canonical order.
		var stored []UnionRow
		for u := range sp.StoredSeq() {
			stored = append(stored, u)
		}
		if len(stored) != st.StoredRows || !slices.IsSortedFunc(stored, func(a, b UnionRow) int {
			if c := a.Row.Compare(b.Row); c != 0 {
				return c
			}
			return a.Subtask - b.Subtask
		}) {
			t.Errorf("seed %d: stored view %d rows (want %d) or out of order", seed, len(stored), st.StoredRows)
		}
	}
}

func TestUnionSeqStopsEarly(t *testing.T) {
	sp, err := Open(filepath.Join("..", "testdata", "example"), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for range sp.UnionSeq(nil) {
		n++
		if n == 10 {
			break
		}
	}
	if n != 10 {
		t.Fatalf("visited %d", n)
	}
}

func TestUnionOperatorConflictWarning(t *testing.T) {
	sp := &Savepoint{Kind: InputTree, Groups: []Group{{0, 3}}}
	timer := []byte{0xff, 't'}
	off := []byte{0xff, 'o'}
	for sub := 0; sub < 3; sub++ {
		sp.Files = append(sp.Files, &File{Subtask: sub, Snapshot: &Snapshot{Rows: []Row{
			{Op: 1, Key: timer, Value: []byte("blob-" + strconv.Itoa(sub))},
			{Op: 1, Key: off, Value: []byte{byte(10 - sub), 0, 0, 0, 0, 0, 0, 0}},
		}}})
	}
	got, st := sp.UnionWithStats()
	if len(got) != 2 || string(got[0].Row.Value) != "\x0a\x00\x00\x00\x00\x00\x00\x00" || got[0].Subtask != 0 || string(got[1].Row.Value) != "blob-2" || got[1].Subtask != 2 {
		t.Fatalf("got %+v", got)
	}
	if st.OperatorShared != 2 || st.OperatorGreater != 1 || st.OperatorConflicts != 1 || len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], "subtask 2's copy is used") {
		t.Fatalf("stats %+v", st)
	}
}

// The empty key, held by several subtasks with different 8-byte values,
// is resolved by the later copy (it is not operator state, which alone the
// greater value decides), and the warning says that, not that the values
// are not all 8 bytes long.
func TestUnionEmptyKeyWarning(t *testing.T) {
	sp := &Savepoint{Kind: InputTree, Groups: []Group{{0, 2}}}
	for sub, v := range []byte{200, 100} {
		sp.Files = append(sp.Files, &File{Subtask: sub, Snapshot: &Snapshot{Rows: []Row{{Op: 7, Key: nil, Value: []byte{v, 0, 0, 0, 0, 0, 0, 0}}}}})
	}
	got, st := sp.UnionWithStats()
	if len(got) != 1 || got[0].Row.Value[0] != 100 || got[0].Subtask != 1 {
		t.Fatalf("got %+v", got)
	}
	want := "op 7, the empty key: 2 subtasks (0,1) hold different values; subtask 1's copy is used (clink's fold in subtask order keeps the later one: the greater of two 8-byte values decides operator keys only, and the empty key is none)"
	if st.OperatorConflicts != 1 || len(st.Warnings) != 1 || st.Warnings[0] != want {
		t.Fatalf("warnings %q, want %q", st.Warnings, want)
	}
}

// The logical view of a tree with a missing subtask directory says so
// first: no restore reads that layout.
func TestUnionWarnsOfMissingSubtask(t *testing.T) {
	var files [][]Row
	for s := range 3 {
		files = append(files, []Row{vtKeyed(7, "agg", vtKeysIn(t, s*128/3, (s+1)*128/3, 1)[0], "v")})
	}
	tree := vtWriteTree(t, files, nil)
	for _, p := range []string{filepath.Join(tree, "_jobs"), filepath.Join(tree, "v1", "1")} {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
	_, warns := vtOpen(t, tree, OpenOptions{}).Union()
	if len(warns) == 0 || !strings.HasPrefix(warns[0], "the tree's subtasks are not consecutive (it holds 0,2; subtask 1 has no directory): its chain groups are not inferred") {
		t.Errorf("warnings %q", warns)
	}
}

// A subtask whose file the checkpoint's only marker does not list, below
// the highest it lists, is read, as a restore at that layout reads it;
// validate warns of the marker, and names a missing directory beside it.
func TestMissingSubtaskUnlisted(t *testing.T) {
	var files [][]Row
	for s := range 4 {
		files = append(files, []Row{vtKeyed(7, "agg", vtKeysIn(t, s*32, (s+1)*32, 1)[0], "v")})
	}
	tree := vtWriteTree(t, files, nil)
	if err := os.RemoveAll(filepath.Join(tree, "v1", "1")); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(tree, "_jobs", "job1", "COMPLETED-7")
	if err := os.WriteFile(marker, []byte("job=job1\ncheckpoint=7\ngeneration=1\nsubtasks=0,1,3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Subtask 1 is listed and has no directory: the open fails.
	if _, err := Open(tree, OpenOptions{}); err == nil || !strings.Contains(err.Error(), "lists subtask 1") || strings.Contains(err.Error(), "the marker says generation") {
		t.Fatalf("open: %v", err)
	}
	// A marker of another generation than the one read is said to be.
	if err := os.WriteFile(marker, []byte("job=job1\ncheckpoint=7\ngeneration=2\nsubtasks=0,1,3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(tree, OpenOptions{}); err == nil || !strings.Contains(err.Error(), "(the marker says generation=2, and v1 is read)") {
		t.Fatalf("open with a marker of generation 2: %v", err)
	}
	if err := os.WriteFile(marker, []byte("job=job1\ncheckpoint=7\ngeneration=1\nsubtasks=0,3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sp := vtOpen(t, tree, OpenOptions{})
	// Subtask 2, unlisted below the listed 3, is read: a restore at this
	// layout starts it from its own file.
	want := "it holds 0,2,3; subtask 1 has no directory)"
	if err := sp.CheckConsecutive(); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("CheckConsecutive: %v, want %q in it", err, want)
	}
	if _, warns := sp.Union(); len(warns) == 0 || !strings.Contains(warns[0], want) {
		t.Errorf("union warnings %q", warns)
	}
	// A directory of subtask 2 without the checkpoint is as missing as
	// none, and said to be so.
	p2 := filepath.Join(tree, "v1", "2", "checkpoint-7.snap")
	if err := os.Rename(p2, p2+".aside"); err != nil {
		t.Fatal(err)
	}
	bare := vtOpen(t, tree, OpenOptions{})
	want2 := "it holds 0,3; subtask 1 has no directory; the directory of subtask 2 holds no checkpoint 7)"
	if err := bare.CheckConsecutive(); err == nil || !strings.Contains(err.Error(), want2) {
		t.Errorf("CheckConsecutive with a bare directory: %v, want %q in it", err, want2)
	}
	bare.Close()
	if err := os.Rename(p2+".aside", p2); err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(sp.ReadWarnings(), "\n"); !strings.Contains(w, "v1/2/checkpoint-7.snap holds checkpoint 7, and _jobs/job1/COMPLETED-7 does not list its subtask, but lists one above it: it is read") {
		t.Errorf("read warnings %q", w)
	}
	// validate says what clink does with each: a missing directory fails
	// the restore, an unlisted subtask's own file is restored all the same.
	sub := Validate(sp, ValidateOptions{}).ByCheck(CheckSubtasks)
	if len(sub) != 1 || !strings.Contains(sub[0].Message, "refuses to start a subtask without state") {
		t.Errorf("validate with a missing directory: %+v", sub)
	}
	sp.Close()
	if err := os.WriteFile(marker, []byte("job=job1\ncheckpoint=7\ngeneration=1\nsubtasks=0,1,3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(tree, "v1", "1"), os.DirFS(filepath.Join(tree, "v1", "2"))); err != nil {
		t.Fatal(err)
	}
	sp = vtOpen(t, tree, OpenOptions{})
	if err := sp.CheckConsecutive(); err != nil || len(sp.Files) != 4 || len(sp.Unlisted) != 0 {
		t.Errorf("an unlisted subtask below the highest listed: %d files read, unlisted %q, CheckConsecutive %v", len(sp.Files), sp.Unlisted, err)
	}
	vr := Validate(sp, ValidateOptions{})
	if sub := vr.ByCheck(CheckSubtasks); len(sub) != 0 {
		t.Errorf("validate with an unlisted subtask holding its file: %+v", sub)
	}
	comp := vr.ByCheck(CheckCompleted)
	if len(comp) != 1 || comp[0].Severity != SeverityWarning || comp[0].Subtask != 2 || !strings.Contains(comp[0].Message, "starts subtask 2 from its own file all the same, and sptool reads it") {
		t.Errorf("validate's finding of the unlisted subtask read: %+v", comp)
	}
}

// frozenTree is a tree of two chain groups, subtasks 0-1 and 2-3: each
// file holds its rows, and keyed rows of op 200 in the second group's.
func frozenTree(files [4][]Row) *Savepoint {
	sp := &Savepoint{Kind: InputTree, Groups: []Group{{First: 0, Count: 2}, {First: 2, Count: 2}}}
	for i, rows := range files {
		rows = append(rows, Row{Op: 200, Key: []byte{byte(64 * (i % 2)), 's', '|', byte(i)}, Value: []byte("y")})
		sp.Files = append(sp.Files, &File{Subtask: i, Snapshot: &Snapshot{Rows: Logical(rows)}})
	}
	return sp
}

// TestUnionFrozenReplicas: in a tree of several chain groups, an operator
// row is folded over the copies of the groups running its operator (whose
// files hold its keyed rows) when each of their subtasks holds one; the
// other groups' copies are frozen replicas no restore of the operator
// reads (format 5.3, 10.3). Where a running subtask holds none, it
// restores the union of all the others, frozen ones too, and so does the
// view; where no keyed row says which group runs the operator, the
// warning says that frozen copies may be among those folded.
func TestUnionFrozenReplicas(t *testing.T) {
	const x = 100
	keyed := func(s int) Row { return Row{Op: x, Key: []byte{byte(64 * s), 'a', '|', 'k'}, Value: []byte("v")} }
	legacy := func(v string) Row { return Row{Op: x, Key: []byte("__broadcast_main_inflight__"), Value: []byte(v)} }
	empty := Row{Op: x, Key: nil, Value: []byte("e")}
	wm := func(v string) Row { return vtOperator(x, "wm", []byte(v)) }
	off := func(v int64) Row { return vtOperator(x, "off", vtI64(v)) }
	for _, c := range []struct {
		name   string
		files  [4][]Row
		key    string // the operator row's logical key
		want   string // its value in the view, and the subtask of the copy
		frozen int
		warn   string
	}{
		{"every running subtask holds a copy", [4][]Row{{keyed(0), wm("live-0")}, {keyed(1), wm("live-1")}, {wm("frozen2")}, {wm("frozen3")}},
			"wm", "live-1@1", 2, "2 subtasks (0,1) hold different values, not all 8-byte operator values; subtask 1's copy is used (clink's fold in subtask order keeps the later one); the copies of subtasks 2,3, in chain groups that do not run the operator, are frozen replicas"},
		{"a running subtask holds none", [4][]Row{{keyed(0), off(5)}, {keyed(1)}, {off(9)}, {off(9)}},
			"off", "9@2", 0, ""},
		{"the empty key and legacy raw keys", [4][]Row{{empty, legacy("r0"), wm("live-0")}, {empty, legacy("r1"), wm("live-1")}, {wm("frozen2")}, {wm("frozen3")}},
			"wm", "live-1@1", 2, "the copies of subtasks 2,3"},
		{"no keyed rows", [4][]Row{{wm("a0")}, {wm("a1")}, {wm("f2")}, {wm("f3")}},
			"wm", "f3@3", 0, "op 100 has no keyed rows to tell which of the 2 chain groups runs it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rows, st := frozenTree(c.files).UnionWithStats()
			got := ""
			for _, r := range rows {
				if r.Row.Op == x && string(r.Row.Key) == "\xff"+c.key {
					v := string(r.Row.Value)
					if len(r.Row.Value) == 8 {
						v = strconv.FormatInt(int64(le64(r.Row.Value)), 10)
					}
					got = fmt.Sprintf("%s@%d", v, r.Subtask)
				}
			}
			if got != c.want || st.FrozenCopies != c.frozen {
				t.Errorf("got %s with %d frozen copies left out, want %s and %d", got, st.FrozenCopies, c.want, c.frozen)
			}
			if w := strings.Join(st.Warnings, "\n"); !strings.Contains(w, c.warn) {
				t.Errorf("warnings %q, want %q in them", st.Warnings, c.warn)
			}
		})
	}
}
