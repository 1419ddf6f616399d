package transform_test

import (
	"encoding/binary"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/transform"
)

// Under KeepOrder a rewritten file's rows are written in the order the
// input stores them: a file in no order (here the base rows stored in
// descending order) is not sorted, its output holds the rows a sorted
// run's holds, and every count of the report is the same. A file whose
// output would hold a key twice (a merge of two operators that share a
// key) is sorted all the same, its duplicate resolved. A plan with
// KeepOrder reports what apply does. A file that stores a key twice, one
// copy of which the rules drop, is not sorted: its output holds the key
// once. Nor is one whose copies the rules keep, in a file searched for
// them by input row: the copy a restore would not keep is dropped where it
// is. In a file too large for that search (1M rows or more) whose rules
// decide by no value, the copies meet one fate, and the file is sorted,
// its duplicate resolved.
func TestKeepOrder(t *testing.T) {
	zed := withOp(rE1, opDedup) // the merged key
	for _, c := range []struct {
		name, rules string
		merged      bool // the output holds zed twice before it is resolved
		storedTwice bool // subtask 0's file stores a row of op 7 slot agg twice, the copy of value 999 added
		large       bool // every file is searched for keys held twice as one of 1M rows or more is
	}{
		{"drop", "  - drop: 'slot == \"tmp\" || kind == \"raw\"'\n", false, false, false},
		{"purge_keys", "  - purge_keys: {keys: [alice]}\n", false, false, false},
		{"set_value", "  - set_value: {op: 7, slot: agg, expr: 'value * 2'}\n", false, false, false},
		{"rename_slot", "  - rename_slot: {op: 7, from: xseen, to: xseen2}\n", false, false, false},
		{"remap_operator merging a shared key", "  - remap_operator: {from: 13, to: 12, merge: true}\n", true, false, false},
		{"a key stored twice, one copy dropped", "  - drop: 'op == 7 && slot == \"agg\" && value == 999'\n", false, true, false},
		{"a key stored twice, both copies kept", "  - drop: 'slot == \"tmp\"'\n", false, true, false},
		{"a key stored twice in a large file", "  - drop: 'slot == \"tmp\"'\n", false, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.large {
				defer transform.SetShadowSearch(2, true)()
			}
			dir := t.TempDir()
			files := map[int][]savepoint.Row{0: nil, 1: nil}
			for _, l := range placeAll(baseRows) {
				files[l.Subtask] = append(files[l.Subtask], l.Row)
			}
			if c.storedTwice {
				i := slices.IndexFunc(files[0], func(r savepoint.Row) bool {
					k := savepoint.ParseKey(r.Key)
					return r.Op == 7 && string(k.Slot) == "agg"
				})
				if i < 0 {
					t.Fatal("test setup: subtask 0 holds no row of op 7 slot agg")
				}
				dup := files[0][i]
				dup.Value = binary.LittleEndian.AppendUint64(nil, 999)
				files[0] = append(files[0], dup)
			}
			for s, rows := range files {
				slices.SortFunc(rows, savepoint.Row.Compare)
				files[s] = reversed(rows)
			}
			in := writeTreeAsIs(t, filepath.Join(dir, "in"), 5, files, baseVersions(t))
			set := parseRules(t, slotDecls+c.rules, nil)
			sorted, kept := filepath.Join(dir, "sorted"), filepath.Join(dir, "kept")
			want, err := run(t, in, set, transform.Options{Out: sorted})
			if err != nil {
				t.Fatal(err)
			}
			got, err := run(t, in, set, transform.Options{Out: kept, KeepOrder: true})
			if err != nil {
				t.Fatal(err)
			}
			plan, err := run(t, in, set, transform.Options{DryRun: true, KeepOrder: true})
			if err != nil {
				t.Fatal(err)
			}
			if !c.storedTwice && c.merged != (want.DuplicatesResolved > 0) {
				t.Fatalf("test setup: %d duplicates resolved", want.DuplicatesResolved)
			}
			counts := func(r *transform.Report) string {
				j, err := json.Marshal([]any{r.RowsIn, r.RowsOut, r.RowsDropped, r.DuplicatesResolved, r.PerRule, r.Slots})
				if err != nil {
					t.Fatal(err)
				}
				return string(j)
			}
			for _, r := range []*transform.Report{got, plan} {
				if counts(r) != counts(want) {
					t.Errorf("dry run %v: counts %s, want those of a sorted run: %s", r.DryRun, counts(r), counts(want))
				}
			}
			sameRows(t, "kept order's output", readRows(t, kept), readRows(t, sorted))
			sp := open(t, kept)
			for _, f := range sp.Files {
				rows := f.Snapshot.Rows
				holdsZed := slices.ContainsFunc(rows, func(r savepoint.Row) bool { return r.Op == zed.Op && string(r.Key) == string(zed.Key) })
				if c.merged && holdsZed || c.large && f.Subtask == 0 {
					if !savepoint.Sorted(rows) {
						t.Errorf("subtask %d: a file whose output held a key twice is not sorted", f.Subtask)
					}
					continue
				}
				for i := 1; i < len(rows); i++ {
					if rows[i-1].Compare(rows[i]) <= 0 {
						t.Errorf("subtask %d: rows %d and %d are not in the input's (descending) order: %v, %v", f.Subtask, i-1, i, rows[i-1], rows[i])
					}
				}
			}
			if vr := savepoint.Validate(sp, savepoint.ValidateOptions{}); vr.Errors() != 0 {
				t.Errorf("output does not validate: %d errors", vr.Errors())
			}
		})
	}
}
