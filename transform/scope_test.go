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
		// An operator with no rows but version-map entries: the rule drops,
		// moves or rebinds them, so it does something.
		{"entries dropped", "  - set_version: {op: 999, state_type: T, version: 1}\n  - drop_operator: {op: 999}\n", ""},
		{"entries moved", "  - set_version: {op: 999, state_type: T, version: 1}\n  - remap_operator: {from: 999, to: 998}\n", ""},
		{"entry rebound", "  - set_version: {op: 999, state_type: T, version: 1, slot: s}\n  - rename_slot: {op: 999, from: s, to: s2}\n", ""},
		{"entry of another slot", "  - set_version: {op: 999, state_type: T, version: 1, slot: s}\n  - rename_slot: {op: 999, from: x, to: s2}\n",
			`rule 2 (rename_slot): operator 999 has no rows here; the rule does nothing`},
		{"every scope holds rows", "  - purge_keys: {keys: [alice], op: 8, slot: profile}\n  - drop: {slot: dedup, expr: 'key == \"zed\"'}\n  - remap_operator: {from: 12, to: 14}\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantOneWarning(t, in, slotDecls+c.rules, func(w string) bool { return strings.Contains(w, "the rule does nothing") }, c.want)
		})
	}
}

// A slot declaration whose operator holds no rows of the slot, and into
// which no rule renames or remaps rows, decodes nothing: a mistyped one
// leaves the slot undecoded, and the rules that need it (purge_expired
// takes the slots declared 'ttl: true') do nothing; plan and apply say so.
func TestDeclarationWarnings(t *testing.T) {
	dir := t.TempDir()
	in := writeBaseTree(t, filepath.Join(dir, "in"), baseRows)
	for _, c := range []struct {
		name, rules string
		want        string // "" for no warning
	}{
		{"slot mistyped", "slots:\n  - {op: 8, slot: profil, value: string, ttl: true}\nrules:\n  - purge_expired: {as_of: '2030-01-01T00:00:00Z'}\n",
			`slots: declaration 1 (line 3): operator 8 has no rows of slot "profil" here (its slots: "cart", "notes", "profile"); the declaration matches no row (a mistyped operator or slot?)`},
		{"operator absent", "slots:\n  - {op: 999, slot: agg, value: int64}\nrules: []\n",
			`slots: declaration 1 (line 3): operator 999 has no rows here; the declaration matches no row (a mistyped operator or slot?)`},
		{"slot renamed into", "slots:\n  - {op: 7, slot: tmp2, value: string}\nrules:\n  - rename_slot: {op: 7, from: tmp, to: tmp2}\n", ""},
		{"operator remapped into", "slots:\n  - {op: 14, slot: profile, value: string}\nrules:\n  - remap_operator: {from: 8, to: 14}\n", ""},
		{"declared slots hold rows", "slots:\n  - {op: 8, slot: profile, value: string}\n  - {op: 7, slot: agg, key: int64, value: int64}\nrules: []\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantOneWarning(t, in, "version: 1\n"+c.rules, func(w string) bool { return strings.HasPrefix(w, "slots: ") }, c.want)
		})
	}
}

// A set_version that lowers an entry's version (YAML reads 'version: +1'
// as 1), that sets an entry an earlier set_version set, that adds one for
// an operator with no rows and no entries (a mistyped id), or whose
// explicit slot: "" unbinds an entry from its slot, that binds a slot
// without rows, or whose state type looks like a mistyping of one the
// operator has is warned of; a bump, or a new entry of an operator with
// rows, is not.
func TestSetVersionWarnings(t *testing.T) {
	dir := t.TempDir()
	in := writeBaseTree(t, filepath.Join(dir, "in"), baseRows)
	for _, c := range []struct {
		name, rules string
		want        []string
	}{
		{"lowered", "  - set_version: {op: 12, state_type: Dedup, version: +1}\n",
			[]string{`rule 1 (set_version): lowers operator 12's state type "Dedup" from version 3 to 1 (to bump it, give the new number: YAML reads 'version: +1' as 1)`}},
		{"set twice", "  - set_version: {op: 7, state_type: UserCounter, version: 2}\n  - set_version: {op: 7, state_type: UserCounter, version: 5}\n",
			[]string{`rule 2 (set_version): rule 1 (set_version) set operator 7's state type "UserCounter" already; the later version, 5, is the one written`}},
		{"unknown operator", "  - set_version: {op: 999, state_type: Ghost, version: 1, slot: g}\n",
			[]string{"rule 1 (set_version): operator 999 has no rows and no version entries here; the rule adds an entry for it"}},
		{"remapped into", "  - remap_operator: {from: 8, to: 14}\n  - set_version: {op: 14, state_type: Cart, version: 2}\n", nil},
		{"set before a remap into", "  - set_version: {op: 14, state_type: Notes, version: 2}\n  - remap_operator: {from: 8, to: 14}\n", nil},
		{"remapped away", "  - remap_operator: {from: 8, to: 14}\n  - set_version: {op: 8, state_type: Cart, version: 2}\n",
			[]string{"rule 2 (set_version): operator 8 has no rows and no version entries here; the rule adds an entry for it"}},
		{"dropped", "  - drop_operator: {op: 12}\n  - set_version: {op: 12, state_type: Dedup, version: 4}\n",
			[]string{"rule 2 (set_version): operator 12 has no rows and no version entries here; the rule adds an entry for it"}},
		{"bumped", "  - set_version: {op: 12, state_type: Dedup, version: 4}\n", nil},
		{"new type of an operator with rows", "  - set_version: {op: 8, state_type: Profile, version: 1, slot: profile}\n", nil},
		{"mistyped type", "  - set_version: {op: 7, state_type: SeenTTL, version: 2}\n",
			[]string{`rule 1 (set_version): operator 7 has no entry of state type "SeenTTL", but has "SeenTtl"; the rule adds an entry, and changes none (a mistyped name?)`}},
		{"type one edit away", "  - set_version: {op: 7, state_type: UserCountr, version: 2}\n",
			[]string{`rule 1 (set_version): operator 7 has no entry of state type "UserCountr", but has "UserCounter"; the rule adds an entry, and changes none (a mistyped name?)`}},
		{"new type extending one", "  - set_version: {op: 7, state_type: UserCounter2, version: 1}\n", nil},
		{"slot a later rename fills", "  - set_version: {op: 8, state_type: Cart, version: 2, slot: carts}\n  - rename_slot: {op: 8, from: cart, to: carts}\n", nil},
		{"slot without rows", "  - set_version: {op: 8, state_type: Cart, version: 2, slot: carts}\n",
			[]string{`rule 1 (set_version): operator 8 has no rows of slot "carts" here (its slots: "cart", "notes", "profile"); the entry binds a slot that holds no state`}},
		{"slot of an operator without slots", "  - set_version: {op: 9, state_type: Offsets, version: 1, slot: x}\n",
			[]string{`rule 1 (set_version): operator 9 has no rows of slot "x" here (its rows are of no slot: operator state or raw keys); the entry binds a slot that holds no state`}},
		{"slot unbound", "  - set_version: {op: 7, state_type: SeenTtl, version: 2, slot: \"\"}\n",
			[]string{`rule 1 (set_version): slot: "" unbinds operator 7's state type "SeenTtl" from slot "seen": an entry without a slot applies to every row of the operator, so a restore that migrates the state type migrates its timers, operator state and other slots too (leave 'slot' out to keep the entry's slot)`}},
		{"slot kept", "  - set_version: {op: 7, state_type: SeenTtl, version: 2}\n", nil},
		{"an entry that had no slot", "  - set_version: {op: 12, state_type: Dedup, version: 4, slot: \"\"}\n", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := planWarnings(t, in, c.rules, "(set_version)")
			if len(got) != len(c.want) {
				t.Fatalf("warnings %q, want %q", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("warning %q, want %q", got[i], c.want[i])
				}
			}
		})
	}
}

// wantOneWarning plans the rule file src over the tree in and checks that
// of the report's warnings that kind selects there is none (want "") or
// one, holding want.
func wantOneWarning(t *testing.T, in, src string, kind func(string) bool, want string) {
	t.Helper()
	rep, err := run(t, in, parseRules(t, src, nil), transform.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range rep.Warnings {
		if kind(w) {
			got = append(got, w)
		}
	}
	switch {
	case want == "" && len(got) > 0:
		t.Errorf("warnings %q, want none", got)
	case want != "" && (len(got) != 1 || !strings.Contains(got[0], want)):
		t.Errorf("warnings %q, want one with %q", got, want)
	}
}

// A drop_slot that empties a slot the output's version map still binds a
// state type to warns, naming the drop_version that removes the entry;
// not when a drop_version removes it, nor when rows still hold the slot.
func TestDropSlotVersionWarning(t *testing.T) {
	in := writeBaseTree(t, filepath.Join(t.TempDir(), "in"), baseRows)
	for _, c := range []struct {
		name, rules, want string
	}{
		{"entry left", "  - drop_slot: {op: 7, slot: seen}\n",
			`rule 1 (drop_slot): the version map keeps state type "SeenTtl" (version 1) of operator 7 bound to slot "seen", which holds no rows after the rules: if that state is gone, drop its entry too (drop_version: {op: 7, state_type: "SeenTtl"})`},
		{"entry dropped", "  - drop_slot: {op: 7, slot: seen}\n  - drop_version: {op: 7, state_type: SeenTtl}\n", ""},
		{"slot refilled", "  - drop_slot: {op: 7, slot: seen}\n  - rename_slot: {op: 7, from: xseen, to: seen}\n", ""},
		{"slot without an entry", "  - drop_slot: {op: 7, slot: tmp}\n", ""},
		{"operator remapped after", "  - drop_slot: {op: 7, slot: seen}\n  - remap_operator: {from: 7, to: 70}\n",
			`rule 1 (drop_slot): the version map keeps state type "SeenTtl" (version 1) of operator 70 (where a later remap_operator moves 7) bound to slot "seen", which holds no rows after the rules: if that state is gone, drop its entry too (drop_version: {op: 70, state_type: "SeenTtl"}, after the remap)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := planWarnings(t, in, c.rules, "the version map keeps")
			if c.want == "" && len(got) > 0 || c.want != "" && (len(got) != 1 || got[0] != c.want) {
				t.Errorf("warnings %q, want %q", got, c.want)
			}
		})
	}
}

// planWarnings plans the rules (the lines under 'rules:') over the tree in
// and returns the report's warnings that contain match.
func planWarnings(t *testing.T, in, rulesLines, match string) []string {
	t.Helper()
	rep, err := run(t, in, parseRules(t, "version: 1\nrules:\n"+rulesLines, nil), transform.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range rep.Warnings {
		if strings.Contains(w, match) {
			got = append(got, w)
		}
	}
	return got
}

// A drop whose expression holds for no row of its scope, and a keep whose
// expression holds for none (so that it drops them all), are warned of:
// a mistyped slot name or value in an expression otherwise makes a rule
// that quietly does nothing, or empties its scope. The slots of the scope
// are named when the expression reads slot. A filter that holds for some
// rows, a keep after a filter that dropped some of its scope's rows, and a
// scope without rows (scopeWarnings' case) are not warned of.
func TestFilterWarnings(t *testing.T) {
	in := writeBaseTree(t, filepath.Join(t.TempDir(), "in"), baseRows)
	for _, c := range []struct {
		name, rules, want string
	}{
		{"drop of a mistyped slot", "  - drop: 'slot == \"profil\"'\n",
			`rule 1 (drop): its expression held for none of its scope's 27 rows (slots "agg", "cart", "dedup", "notes", "profile", "seen", "small", "tmp", "xseen", <raw>): the rule drops nothing`},
		{"scoped drop of a mistyped value", "  - drop: {op: 8, slot: profile, expr: 'key == \"alicia\"'}\n",
			`rule 1 (drop): its expression held for none of its scope's 2 rows: the rule drops nothing`},
		{"scoped keep of none", "  - keep: {op: 8, expr: 'key_group > 200'}\n",
			`rule 1 (keep): its expression held for none of its scope's 8 rows: the rule drops every one`},
		{"named rule", "  - name: cleanup\n    drop: 'string(value_bytes) == \"nope\"'\n",
			`rule 1 "cleanup" (drop): its expression held for none of its scope's 27 rows: the rule drops nothing`},
		{"drop of some", "  - drop: 'slot == \"profile\"'\n", ""},
		{"keep of some", "  - keep: {op: 8, expr: 'slot == \"profile\"'}\n", ""},
		{"keep of all", "  - keep: 'true'\n", ""},
		{"scope without rows", "  - drop: {op: 999, expr: 'true'}\n", ""},
		// After a rule that dropped rows (not by operator or slot), the rows
		// that reach a filter are not known: it is not warned of.
		{"keep after a drop of some", "  - drop: {op: 8, slot: profile, expr: 'true'}\n  - keep: {op: 8, expr: 'slot == \"profile\"'}\n", ""},
		{"drop after a drop of all", "  - drop: {op: 8, expr: 'true'}\n  - drop: {op: 8, expr: 'true'}\n", ""},
		{"drop after a purge of its key", "  - purge_keys: {keys: [alice]}\n  - drop: 'string(key_bytes) endsWith \"|alice\"'\n", ""},
		{"drop after a drop_slot", "  - drop_slot: {op: 8, slot: cart}\n  - drop: {op: 8, expr: 'key_group > 200'}\n",
			`rule 2 (drop): its expression held for none of its scope's`},
		{"scope renamed by an earlier rule", "  - rename_slot: {op: 8, from: profile, to: prof}\n  - drop: {op: 8, slot: prof, expr: 'key == \"nobody\"'}\n",
			`rule 2 (drop): its expression held for none of its scope's 2 rows: the rule drops nothing`},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantOneWarning(t, in, slotDecls+c.rules, func(w string) bool { return strings.Contains(w, "its expression held for none") }, c.want)
		})
	}
}
