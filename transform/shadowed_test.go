package transform_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/transform"
)

// A file that stores a key twice holds one logical entry, the copy a
// restore keeps (keyed: the later row; operator state: the greater 8-byte
// value). The rules act on that entry: dropping the copy that wins drops
// the key, and the copy it hid does not come back; dropping the hidden copy
// changes nothing of the entry. Plan and apply agree, in canonical order
// and in clink's hash-map order, with the hidden copies found by a sort
// (files under a million rows) and by a hash of each key (larger ones).
func TestShadowedCopies(t *testing.T) {
	a1 := keyed(opAgg, "agg", string(i64(1)), i64(10)) // hidden by a2
	a2 := keyed(opAgg, "agg", string(i64(1)), i64(20))
	b := keyed(opAgg, "agg", string(i64(2)), i64(30))
	o5 := operatorRow(opSrc, "__off", i64(5)) // wins: greater
	o3 := operatorRow(opSrc, "__off", i64(3))
	for _, c := range []struct {
		name    string
		rules   string
		want    []savepoint.Row
		dropped int64
		dupes   int64
	}{
		{"drop the keyed copy that wins", "  - drop: {op: 7, slot: agg, expr: 'value == 20'}\n", []savepoint.Row{b, o5}, 1, 2},
		{"drop the keyed copy that is hidden", "  - drop: {op: 7, slot: agg, expr: 'value == 10'}\n", []savepoint.Row{b, a2, o5}, 1, 1},
		{"drop the operator value that wins", "  - drop: 'kind == \"operator\" && value_bytes[0] == 5'\n", []savepoint.Row{b, a2}, 1, 2},
		{"set_value on every copy", "  - set_value: {op: 7, slot: agg, expr: 'value + 1'}\n", []savepoint.Row{keyed(opAgg, "agg", string(i64(2)), i64(31)), keyed(opAgg, "agg", string(i64(1)), i64(21)), o5}, 0, 2},
	} {
		for _, order := range []struct {
			name   string
			rows   []savepoint.Row
			hashed bool // searched with a hash of each key
		}{
			{"canonical", []savepoint.Row{b, a1, a2, o5, o3}, false}, // key 2's group (7) before key 1's (36)
			{"hash-map", []savepoint.Row{a1, o3, b, a2, o5}, false},
			{"hash-map, hashed", []savepoint.Row{a1, o3, b, a2, o5}, true},
			{"hash-map, hashed, copies apart", []savepoint.Row{o5, a1, b, o3, a2}, true},
		} {
			t.Run(fmt.Sprintf("%s/%s", c.name, order.name), func(t *testing.T) {
				if order.hashed {
					defer transform.SetShadowSearch(2, true)()
				}
				dir := t.TempDir()
				in := filepath.Join(dir, "checkpoint-3.snap")
				if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), order.rows, savepoint.SnapshotOptions{AsIs: true, Sidecar: true, CheckpointID: 3}); err != nil {
					t.Fatal(err)
				}
				set := parseRules(t, slotDecls+c.rules, nil)
				plan, err := run(t, in, set, transform.Options{DryRun: true})
				if err != nil {
					t.Fatal(err)
				}
				out := filepath.Join(dir, "out.snap")
				rep, err := run(t, in, set, transform.Options{Out: out})
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range []*transform.Report{plan, rep} {
					// The duplicates resolved are among the dropped.
					if r.RowsIn != 5 || r.RowsDropped != c.dropped+c.dupes || r.DuplicatesResolved != c.dupes || r.RowsOut != 5-c.dropped-c.dupes || r.RowsWritten != r.RowsOut {
						t.Errorf("dry run %v: %d in, %d out, %d dropped, %d duplicates, %d written; want 5, %d, %d, %d, %[6]d", r.DryRun, r.RowsIn, r.RowsOut, r.RowsDropped, r.DuplicatesResolved, r.RowsWritten, 5-c.dropped-c.dupes, c.dropped+c.dupes, c.dupes)
					}
				}
				got := readRows(t, out)
				if len(got) != len(c.want) {
					t.Fatalf("output %v, want %v", got, c.want)
				}
				for i, w := range c.want {
					if g := got[i].Row; g.Op != w.Op || !bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Value, w.Value) {
						t.Errorf("row %d: %v, want %v", i, g, w)
					}
				}
			})
		}
	}
}

// A file of a million rows or more that is not strictly increasing, and
// that the hash search cannot search within its memory bound, is not
// searched for hidden copies: the report says so, and that a dropped
// winning copy may have left the other.
func TestShadowedCopiesLargeFileWarns(t *testing.T) {
	defer transform.SetShadowSearch(2, false)()
	a1 := keyed(opAgg, "agg", string(i64(1)), i64(10))
	a2 := keyed(opAgg, "agg", string(i64(1)), i64(20))
	b := keyed(opAgg, "agg", string(i64(2)), i64(30))
	dir := t.TempDir()
	in := filepath.Join(dir, "checkpoint-3.snap")
	if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), []savepoint.Row{a1, b, a2}, savepoint.SnapshotOptions{AsIs: true, Sidecar: true, CheckpointID: 3}); err != nil {
		t.Fatal(err)
	}
	set := parseRules(t, slotDecls+"  - drop: {op: 7, slot: agg, expr: 'value == 30'}\n", nil)
	rep, err := run(t, in, set, transform.Options{Out: filepath.Join(dir, "out.snap")})
	if err != nil {
		t.Fatal(err)
	}
	if rep.DuplicatesResolved != 1 || !strings.Contains(strings.Join(rep.Warnings, "\n"), "checkpoint-3.snap was not searched for keys stored twice (over 1 rows not in canonical order") {
		t.Errorf("%d duplicates, warnings %q", rep.DuplicatesResolved, rep.Warnings)
	}
}

// Copies of a key that a file stores twice are resolved, as a restore
// resolves them, before a merging remap meets them with the other
// operator's: folding every copy of both in stream order would not give
// the same value when 8-byte and other values mix (the fold is not
// associative). Whether the file's copies are found by a sort or, in a
// large file, by a hash of each key.
func TestMergeAfterStoredCopies(t *testing.T) {
	key := []byte("\xffoff|y")
	row := func(op uint64, v []byte) savepoint.Row { return savepoint.Row{Op: op, Key: key, Value: v} }
	// op 7 restores -1 (the later of 4, "abc", -1); op 9 restores -3.
	rows := []savepoint.Row{row(7, i64(4)), row(7, []byte("abc")), row(7, i64(-1)),
		row(9, i64(1)), row(9, []byte("abc")), row(9, i64(-3)), keyed(7, "a", "k", []byte("x"))}
	for _, hashed := range []bool{false, true} {
		t.Run(fmt.Sprintf("hashed=%v", hashed), func(t *testing.T) {
			if hashed {
				defer transform.SetShadowSearch(2, true)()
			}
			dir := t.TempDir()
			in := filepath.Join(dir, "checkpoint-3.snap")
			if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.SnapshotOptions{AsIs: true, Sidecar: true, CheckpointID: 3}); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out.snap")
			if _, err := run(t, in, parseRules(t, "version: 1\nrules:\n  - remap_operator: {from: 9, to: 7, merge: true}\n", nil), transform.Options{Out: out}); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range readRows(t, out) {
				if bytes.Equal(l.Key, key) {
					got = append(got, fmt.Sprintf("%d:%x", l.Op, l.Value))
				}
			}
			if want := fmt.Sprintf("7:%x", i64(-1)); strings.Join(got, " ") != want {
				t.Errorf("off|y: %v, want %s (the greater of op 7's -1 and op 9's -3)", got, want)
			}
		})
	}
}
