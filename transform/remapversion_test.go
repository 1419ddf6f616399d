package transform

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
)

// A remap_operator that joins two operators' rows warns of each
// version-map entry without a slot that comes to apply to rows it did not
// apply to (format 4.4): the remapped operator's, which now applies to the
// target's rows, and the target's, which now applies to the rows remapped
// into it, merged or not. An entry with a slot, one both operators hold
// alike, and one moved to an operator without rows widen nothing.
func TestRemapWarnsOfUnboundVersionEntries(t *testing.T) {
	rows := []savepoint.Row{
		{Op: 7, Key: []byte("\x05b|k"), Value: []byte("1")},
		{Op: 7, Key: []byte("\xff__clink_timers"), Value: []byte("t")},
		{Op: 8, Key: []byte("\x06a|k"), Value: []byte("2")},
	}
	fromX := `rule 1 (remap_operator): operator 8's version-map entry for state type "X" (v1) has no slot, and an entry without a slot applies to every row of its operator (format 4.4): after the remap it applies to operator 7's rows too (slots "b", <raw>), so a restore that migrates "X" migrates them; bind the entry to its slot before this rule (set_version with 'slot'), or drop it (drop_version)`
	toY := `rule 1 (remap_operator): operator 7's version-map entry for state type "Y" (v2) has no slot, and an entry without a slot applies to every row of its operator (format 4.4): after the remap it applies to the rows remapped into it from operator 8 too (slots "a"), so a restore that migrates "Y" migrates them; bind the entry to its slot before this rule (set_version with 'slot'), or drop it (drop_version)`
	for _, tc := range []struct {
		name, versions, rule string
		rows                 []savepoint.Row
		want                 []string
	}{
		{"both ways", "8|X|1\n7|Y|2\n7|Z|1|b\n8|W|3|a", "{from: 8, to: 7, merge: true}", rows, []string{toY, fromX}},
		{"alike", "8|X|1\n7|X|1", "{from: 8, to: 7, merge: true}", rows, nil},
		{"into an operator without rows", "8|X|1", "{from: 8, to: 9}", rows, nil},
		{"into an operator without rows but an entry", "9|V|4", "{from: 8, to: 9}", rows, []string{`rule 1 (remap_operator): operator 9's version-map entry for state type "V" (v4) has no slot, and an entry without a slot applies to every row of its operator (format 4.4): after the remap it applies to the rows remapped into it from operator 8 too (slots "a"), so a restore that migrates "V" migrates them; bind the entry to its slot before this rule (set_version with 'slot'), or drop it (drop_version)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			vm, err := savepoint.ParseVersionMap(tc.versions)
			if err != nil {
				t.Fatal(err)
			}
			in := filepath.Join(dir, "in.snap")
			if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, vm), tc.rows, savepoint.SnapshotOptions{}); err != nil {
				t.Fatal(err)
			}
			sp, err := savepoint.Open(in, savepoint.OpenOptions{Columnar: true})
			if err != nil {
				t.Fatal(err)
			}
			defer sp.Close()
			set, err := rules.Parse(filepath.Join(dir, "r.yaml"), []byte("version: 1\nrules:\n  - remap_operator: "+tc.rule+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Run(context.Background(), sp, set, Options{DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rep.Warnings, tc.want) {
				t.Errorf("warnings:\n%q\nwant:\n%q", rep.Warnings, tc.want)
			}
		})
	}
}
