package savepoint

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// subtaskKeys returns n user keys whose keyed keys (slot "s") lie in
// subtask k's key-group range at parallelism p, each in another key group
// when the range allows.
func subtaskKeys(k, p, n int) [][]byte {
	r := KeyGroupRangeForSubtask(k, p)
	var keys [][]byte
	seen := map[byte]bool{}
	for i := 0; len(keys) < n && i < 1<<20; i++ {
		key := EncodeKeyedKey([]byte("s"), fmt.Appendf(nil, "u%d", i))
		if r.Contains(int(key[0])) && (!seen[key[0]] || len(seen) >= r.Last-r.First) {
			seen[key[0]] = true
			keys = append(keys, key)
		}
	}
	return keys
}

// evidence builds a file's groupEvidence from its operators and keys.
func evidence(ops []uint64, keys ...[]byte) groupEvidence {
	e := groupEvidence{ops: map[uint64]bool{}}
	for _, op := range ops {
		e.ops[op] = true
	}
	for _, k := range keys {
		e.kgs[k[0]/64] |= 1 << (k[0] % 64)
	}
	return e
}

func TestCutByKeyGroups(t *testing.T) {
	in := func(k, p, n int) [][]byte { return subtaskKeys(k, p, n) }
	stale := EncodeKeyedKey([]byte("s"), []byte("stale"))
	for _, tc := range []struct {
		name string
		ev   []groupEvidence
		want string // groups of subtasks 0..
	}{
		{"no keyed rows", []groupEvidence{evidence(nil), evidence(nil), evidence(nil)}, "0-2"},
		{"dense, one group", []groupEvidence{evidence([]uint64{1, 2}, in(0, 3, 20)...), evidence([]uint64{1, 2}, in(1, 3, 20)...), evidence([]uint64{1, 2}, in(2, 3, 20)...)}, "0-2"},
		{"sparse: no operator shared, two groups", []groupEvidence{
			evidence([]uint64{1}, in(0, 3, 2)...), evidence([]uint64{2}, in(1, 3, 2)...), evidence([]uint64{3}, in(2, 3, 2)...),
			evidence([]uint64{4}, in(0, 2, 2)...), evidence([]uint64{5}, in(1, 2, 2)...),
		}, "0-2,3-4"},
		{"files without keyed rows join the group before them", []groupEvidence{
			evidence([]uint64{1}, in(0, 5, 10)...), evidence([]uint64{1}, in(1, 5, 10)...), evidence([]uint64{1}, in(2, 5, 10)...),
			evidence(nil), evidence(nil),
		}, "0-4"},
		// A keyed chain at 3 whose every key lies in its own file's range,
		// then two files without rows (a keyless chain's first
		// checkpoint): read as one group of 5, two thirds of the keys
		// would be lost rows.
		{"empty files after a group its keys fit start a group", []groupEvidence{
			evidence([]uint64{1}, in(0, 3, 10)...), evidence([]uint64{1}, in(1, 3, 10)...), evidence([]uint64{1}, in(2, 3, 10)...),
			evidence(nil), evidence(nil),
		}, "0-2,3-4"},
		// A restore copies every operator's rows into every file (format
		// 10.3): a keyless chain's files then hold the keyed group's
		// operators too.
		{"a keyless chain holding the operator rows a restore copied", []groupEvidence{
			evidence([]uint64{1}, in(0, 2, 20)...), evidence([]uint64{1}, in(1, 2, 20)...), stateOnly(1, 9), stateOnly(1, 9),
		}, "0-1,2-3"},
		{"a chained group with stale copies and a file without keyed rows yet", chainedStale(), "0-3"},
		{"a keyless chain of other operators after a keyed group", []groupEvidence{
			evidence([]uint64{1}, in(0, 2, 20)...), evidence([]uint64{1}, in(1, 2, 20)...), stateOnly(9),
		}, "0-1,2"},
		{"a keyless chain of two subtasks", []groupEvidence{
			evidence([]uint64{1}, in(0, 2, 20)...), evidence([]uint64{1}, in(1, 2, 20)...), stateOnly(9), stateOnly(9),
		}, "0-1,2-3"},
		{"a keyless file of the group's operators joins it", []groupEvidence{
			evidence([]uint64{1}, in(0, 3, 20)...), evidence([]uint64{1}, in(1, 3, 20)...), stateOnly(1, 9),
		}, "0-2"},
		{"a keyless file of other operators joins a group its keys fit", []groupEvidence{
			evidence([]uint64{1}, in(0, 3, 20)...), evidence([]uint64{1}, in(1, 3, 20)...), stateOnly(9),
		}, "0-2"},
		{"a keyless source before a keyed group", []groupEvidence{
			stateOnly(8), evidence([]uint64{1}, in(0, 2, 20)...), evidence([]uint64{1}, in(1, 2, 20)...),
		}, "0,1-2"},
		{"a stale copy in a sparse group", []groupEvidence{
			evidence([]uint64{1}, in(0, 3, 8)...), evidence([]uint64{2}, append(in(1, 3, 8), in(0, 3, 1)...)...), evidence([]uint64{3}, in(2, 3, 8)...),
		}, "0-2"},
		{"an operator in files 0 and 2 holds 0-2 together", []groupEvidence{
			evidence([]uint64{1}, stale), evidence([]uint64{9}, stale), evidence([]uint64{1}, stale), evidence([]uint64{4}, stale),
		}, "0-2,3"},
		// A keyed group with stale copies, then a keyed group whose first
		// file holds only the operator rows a restore copies into every
		// file and whose second holds every key: the keyless file is the
		// second group's, which then explains its keys.
		{"the keyless first file of a keyed group after stale copies", []groupEvidence{
			evidence([]uint64{1}, append(in(0, 3, 20), in(1, 3, 1)...)...), evidence([]uint64{1}, in(1, 3, 20)...), evidence([]uint64{1}, in(2, 3, 20)...),
			stateOnly(1, 2, 9), evidence([]uint64{2}, in(1, 2, 30)...),
		}, "0-2,3-4"},
		// A group restored from fewer subtasks whose last file has no
		// keyed row yet, then another keyed group: the keyless file is not
		// a group of its own, though the group without it explains its
		// stale copies better.
		{"a chained group with stale copies and an empty file before another group", append(chainedStale(),
			evidence([]uint64{2}, in(0, 2, 30)...), evidence([]uint64{2}, in(1, 2, 30)...)), "0-3,4-5"},
		// The same with a sparse group of one file after it: its 3 keys
		// all in the upper half of the key groups (one time in 8 by
		// chance) are no evidence that the keyless file is its first.
		{"a chained group with stale copies and an empty file before a sparse group", append(chainedStale()[:3],
			stateOnly(11, 12, 20), evidence([]uint64{20}, in(1, 2, 3)...)), "0-3,4"},
		{"two singletons holding every key group", []groupEvidence{evidence([]uint64{1}, in(0, 1, 128)...), evidence([]uint64{2}, in(0, 1, 128)...)}, "0,1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FormatGroups(sizesGroups(cutByKeyGroups(tc.ev))); got != tc.want {
				t.Errorf("groups %s, want %s", got, tc.want)
			}
		})
	}
}

// TestInferSparseTree opens a tree of two chain groups whose files share no
// operator (one key each): the groups are found from where the keys lie,
// which the operators alone cannot tell.
func TestInferSparseTree(t *testing.T) {
	out := filepath.Join(t.TempDir(), "tree")
	tw, err := CreateTree(out, TreeOptions{Generation: 1, Checkpoint: 7, Backend: BackendFile})
	if err != nil {
		t.Fatal(err)
	}
	layout := []struct{ k, p int }{{0, 3}, {1, 3}, {2, 3}, {0, 2}, {1, 2}}
	var ev []groupEvidence
	for i, l := range layout {
		keys := subtaskKeys(l.k, l.p, 3)
		rows := []Row{{Op: 1 << 40, Key: []byte("\xffoffsets"), Value: []byte{1}}}
		for _, k := range keys {
			rows = append(rows, Row{Op: uint64(i + 1), Key: k, Value: []byte("v")})
		}
		ev = append(ev, evidence([]uint64{uint64(i + 1)}, keys...))
		if _, err := tw.WriteSubtask(i, CanonicalMetadata(nil, VersionMap{}), rows, CompressNone); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Commit("job1", nil); err != nil {
		t.Fatal(err)
	}
	if got := FormatGroups(sizesGroups(cutByOperators(ev))); got != "0,1,2,3,4" {
		t.Fatalf("the operators alone give %s: the test does not test the key groups", got)
	}
	for _, columnar := range []bool{false, true} {
		sp, err := Open(out, OpenOptions{Columnar: columnar})
		if err != nil {
			t.Fatal(err)
		}
		if got := FormatGroups(sp.Groups); got != "0-2,3-4" || !sp.GroupsInferred {
			t.Errorf("columnar %v: groups %s (inferred %v), want 0-2,3-4", columnar, got, sp.GroupsInferred)
		}
		if r := Validate(sp, ValidateOptions{}); r.Errors() > 0 {
			t.Errorf("columnar %v: validate finds %d errors", columnar, r.Errors())
		}
		// The key groups read for the inference are kept: each file's, and
		// no other.
		for i, l := range layout {
			want := map[int]bool{}
			for _, k := range subtaskKeys(l.k, l.p, 3) {
				want[int(k[0])] = true
			}
			for kg := range NumKeyGroups {
				if held, known := sp.Files[i].KeyGroupsHeld(kg); held != want[kg] || !known {
					t.Errorf("columnar %v: subtask %d holds key group %d: %v (known %v), want %v", columnar, i, kg, held, known, want[kg])
				}
			}
		}
		sp.Close()
	}
	// Given groups, the key groups are not read: every one may be held.
	sp, err := Open(out, OpenOptions{Groups: []Group{{First: 0, Count: 3}, {First: 3, Count: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if held, known := sp.Files[0].KeyGroupsHeld(127); !held || known {
		t.Errorf("given groups: key group 127 held %v (known %v), want held, not known", held, known)
	}
}

// stateOnly is the evidence of a file without keyed rows holding rows of
// the operators ops.
func stateOnly(ops ...uint64) groupEvidence {
	e := evidence(nil)
	e.stateOps = map[uint64]bool{}
	for _, op := range ops {
		e.stateOps[op] = true
	}
	return e
}

// sizesGroups turns group sizes into groups from subtask 0.
func sizesGroups(sizes []int) []Group {
	var gs []Group
	at := 0
	for _, n := range sizes {
		gs = append(gs, Group{First: at, Count: n})
		at += n
	}
	return gs
}

// chainedStale is the evidence of a chained group at parallelism 4 restored
// from one at 3, each subtask from its old file unfiltered (format 6.2,
// 10.2): files 0-2 hold their old range and their new one, for two
// operators; file 3 has no keyed rows yet.
func chainedStale() []groupEvidence {
	var ev []groupEvidence
	for i := range 3 {
		old, nw := KeyGroupRangeForSubtask(i, 3), KeyGroupRangeForSubtask(i, 4)
		e := evidence([]uint64{11, 12})
		for kg := min(old.First, nw.First); kg < max(old.Last, nw.Last); kg++ {
			e.kgs[kg/64] |= 1 << (kg % 64)
		}
		ev = append(ev, e)
	}
	return append(ev, evidence(nil))
}

// TestInferKeylessSink opens a tree of a keyed chain at parallelism 2 and a
// keyless one (a sink's operator state) at 1: the sink's file, of other
// operators than the file before it, starts a group of its own, and every
// keyed row is in its owner's file.
func TestInferKeylessSink(t *testing.T) {
	out := filepath.Join(t.TempDir(), "tree")
	tw, err := CreateTree(out, TreeOptions{Generation: 1, Checkpoint: 7, Backend: BackendFile})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		var rows []Row
		for _, k := range subtaskKeys(i, 2, 40) {
			rows = append(rows, Row{Op: 1, Key: k, Value: []byte("v")})
		}
		if _, err := tw.WriteSubtask(i, CanonicalMetadata(nil, VersionMap{}), rows, CompressNone); err != nil {
			t.Fatal(err)
		}
	}
	sink := []Row{{Op: 2, Key: []byte("\xff__committed__"), Value: []byte{1}}}
	if _, err := tw.WriteSubtask(2, CanonicalMetadata(nil, VersionMap{}), sink, CompressNone); err != nil {
		t.Fatal(err)
	}
	if err := tw.Commit("job1", nil); err != nil {
		t.Fatal(err)
	}
	for _, columnar := range []bool{false, true} {
		sp, err := Open(out, OpenOptions{Columnar: columnar})
		if err != nil {
			t.Fatal(err)
		}
		if got := FormatGroups(sp.Groups); got != "0-1,2" {
			t.Errorf("columnar %v: groups %s, want 0-1,2", columnar, got)
		}
		if r := Validate(sp, ValidateOptions{}); r.Errors() > 0 {
			t.Errorf("columnar %v: validate finds %d errors", columnar, r.Errors())
		}
		sp.Close()
	}
}

// Chain groups given that put an operator's keyed rows in the files of more
// than one group contradict the rows (an operator runs in one group): the
// open notes each such operator and the groups holding its rows, and its
// read warnings say so. Groups that fit the rows, the inferred ones or
// coarser, note nothing.
func TestGroupConflicts(t *testing.T) {
	example := filepath.Join("..", "testdata", "example")
	twoGroups := filepath.Join("..", "testdata", "independent", "two-groups")
	for _, c := range []struct {
		name, dir, groups string
		want              string // the conflicts, as "op:groups;..."
	}{
		{"one group split", example, "0-1,2-3", "3714747266114981297:0-1,2-3;11678514624188656593:0-1,2-3"},
		{"split in three", example, "0,1-2,3", "3714747266114981297:0,1-2,3;11678514624188656593:0,1-2,3"},
		{"the inferred group", example, "0-3", ""},
		{"the inferred groups", twoGroups, "0-2,3-4", ""},
		{"coarser than inferred", twoGroups, "0-4", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			gs, err := ParseGroups(c.groups)
			if err != nil {
				t.Fatal(err)
			}
			sp, err := Open(c.dir, OpenOptions{Columnar: true, Groups: gs})
			if err != nil {
				t.Fatal(err)
			}
			defer sp.Close()
			var got []string
			for _, gc := range sp.GroupConflicts {
				got = append(got, fmt.Sprintf("%d:%s", gc.Op, FormatGroups(gc.Groups)))
			}
			if s := strings.Join(got, ";"); s != c.want {
				t.Errorf("conflicts %q, want %q", s, c.want)
			}
			warned := slices.ContainsFunc(sp.ReadWarnings(), func(w string) bool {
				return strings.HasPrefix(w, "the chain groups given, "+c.groups+", do not fit the rows: op ")
			})
			if warned != (c.want != "") {
				t.Errorf("read warnings %q: warned %v, want %v", sp.ReadWarnings(), warned, c.want != "")
			}
		})
	}
}
