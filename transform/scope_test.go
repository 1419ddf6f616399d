package transform_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sptool/sptool/transform"
)

// A rule that names an operator, or a slot, that holds no row where the
// rule runs does nothing: most likely a typo, which plan and apply say in
// a warning (an erasure would otherwise just report its keys not found).
func TestScopeWarnings(t *testing.T) {
	dir := t.TempDir()
	in := writeBaseTree(t, filepath.Join(dir, "in"), baseRows)
	for _, c := range []struct {
		name, rules string
		want        string // "" for no warning
	}{
		{"slot mistyped", "  - purge_keys: {keys: [alice], op: 8, slot: profil}\n",
			`rule 1 (purge_keys): operator 8 has no rows of slot "profil" here (its slots: "cart", "notes", "profile"); the rule does nothing`},
		{"operator absent", "  - drop_operator: {op: 999}\n", "rule 1 (drop_operator): operator 999 has no rows here; the rule does nothing"},
		{"slot of no operator", "  - drop: {slot: nope, expr: 'key == \"a\"'}\n", `rule 1 (drop): no operator has rows of slot "nope" here; the rule does nothing`},
		{"slot renamed by an earlier rule", "  - rename_slot: {op: 7, from: tmp, to: tmp2}\n  - drop_slot: {op: 7, slot: tmp}\n",
			`rule 2 (drop_slot): operator 7 has no rows of slot "tmp" here (its slots:`},
		{"operator remapped by an earlier rule", "  - remap_operator: {from: 12, to: 14}\n  - drop: {op: 12, expr: 'true'}\n",
			"rule 2 (drop): operator 12 has no rows here; the rule does nothing"},
		{"slot renamed into", "  - rename_slot: {op: 7, from: tmp, to: tmp2}\n  - drop_slot: {op: 7, slot: tmp2}\n", ""},
		{"every scope holds rows", "  - purge_keys: {keys: [alice], op: 8, slot: profile}\n  - drop: {slot: dedup, expr: 'key == \"zed\"'}\n  - remap_operator: {from: 12, to: 14}\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep, err := run(t, in, parseRules(t, slotDecls+c.rules, nil), transform.Options{DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range rep.Warnings {
				if strings.Contains(w, "the rule does nothing") {
					got = append(got, w)
				}
			}
			switch {
			case c.want == "" && len(got) > 0:
				t.Errorf("warnings %q, want none", got)
			case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
				t.Errorf("warnings %q, want one with %q", got, c.want)
			}
		})
	}
}
