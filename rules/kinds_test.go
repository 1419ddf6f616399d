package rules

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/expr-lang/expr/vm"

	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/savepoint/codec"
)

func strp(s string) *string { return &s }

// normalize copies a spec with its compiled parts (programs, declarations,
// indexes) cleared, for comparison with a literal.
func normalize(spec any) any {
	switch s := spec.(type) {
	case *FilterSpec:
		c := *s
		c.Predicate, c.Decl = nil, nil
		return &c
	case *PurgeKeysSpec:
		c := *s
		c.index, c.filter, c.encoded = keyIndex{}, keyFilter{}, nil
		c.Path, c.FileDigest = "", ""
		return &c
	case *PurgeExpiredSpec:
		c := *s
		c.Targets = nil
		for _, t := range s.Targets {
			c.Targets = append(c.Targets, SlotTarget{Op: t.Op, Slot: t.Slot})
		}
		return &c
	case *SetValueSpec:
		c := *s
		c.Program, c.Decl, c.label = nil, nil, ""
		return &c
	}
	return spec
}

func parseOne(t *testing.T, src string) *Set {
	t.Helper()
	set, err := ParseWithOptions("t.yaml", []byte(src), ParseOptions{Now: func() time.Time { return fixedNow }, Dir: corpusDir})
	if err != nil {
		t.Fatalf("parse:\n%s\n%v", src, err)
	}
	return set
}

const decls = `version: 1
slots:
  - {op: 7, slot: agg, key: int64, value: int64}
  - {op: 7, slot: seen, key: string, value: bytes, ttl: true}
  - {uid: enricher, slot: cart, key: string, ttl: true, composite: true}
rules:
`

func TestRuleKinds(t *testing.T) {
	enricher := savepoint.OperatorIDFromUID("enricher")
	cases := []struct {
		name string
		rule string // one rule, indented as a list item under 'rules:'
		kind Kind
		want any
	}{
		{"keep", `  - keep: 'op != 99'`, KindKeep, &FilterSpec{Expr: "op != 99"}},
		{"drop", `  - drop: 'slot == "cache" && key_group >= 64'`, KindDrop, &FilterSpec{Expr: `slot == "cache" && key_group >= 64`}},
		{"drop scoped", `  - drop: {uid: enricher, slot: cart, expr: 'len(key) > 3'}`, KindDrop,
			&FilterSpec{Expr: "len(key) > 3", Scope: Scope{Op: &OpRef{ID: enricher, UID: "enricher"}, Slot: strp("cart")}}},
		{"keep scoped op only", `  - keep: {op: 7, expr: 'kind == "keyed"'}`, KindKeep,
			&FilterSpec{Expr: `kind == "keyed"`, Scope: Scope{Op: &OpRef{ID: 7}}}},
		{"drop_operator", `  - drop_operator: {op: 12}`, KindDropOperator, &DropOperatorSpec{Op: OpRef{ID: 12}}},
		{"drop_operator uid", `  - drop_operator: {uid: enricher}`, KindDropOperator, &DropOperatorSpec{Op: OpRef{ID: enricher, UID: "enricher"}}},
		{"drop_operator big id", `  - drop_operator: {op: 18088258576788386267}`, KindDropOperator, &DropOperatorSpec{Op: OpRef{ID: 18088258576788386267}}},
		{"remap_operator", `  - remap_operator: {from: 13, to: 14}`, KindRemapOperator,
			&RemapOperatorSpec{From: OpRef{ID: 13}, To: OpRef{ID: 14}, Merge: DefaultMerge}},
		{"remap_operator uids merge", `  - remap_operator: {from_uid: enricher, to_uid: enricher-v2, merge: true}`, KindRemapOperator,
			&RemapOperatorSpec{From: OpRef{ID: enricher, UID: "enricher"}, To: OpRef{ID: savepoint.OperatorIDFromUID("enricher-v2"), UID: "enricher-v2"}, Merge: true}},
		{"rename_slot", `  - rename_slot: {op: 7, from: agg, to: agg_v2}`, KindRenameSlot, &RenameSlotSpec{Op: OpRef{ID: 7}, From: "agg", To: "agg_v2"}},
		{"rename_slot to empty", `  - rename_slot: {op: 7, from: agg, to: ""}`, KindRenameSlot, &RenameSlotSpec{Op: OpRef{ID: 7}, From: "agg", To: ""}},
		{"drop_slot", `  - drop_slot: {op: 7, slot: tmp}`, KindDropSlot, &DropSlotSpec{Op: OpRef{ID: 7}, Slot: "tmp"}},
		{"purge_keys inline", `  - purge_keys: {keys: [user-42, "user-43", 7, user-42]}`, KindPurgeKeys,
			&PurgeKeysSpec{Codec: "string", Keys: []string{"user-42", "user-43", "7"}, Lines: []int{1, 2, 3}, Duplicates: 1}},
		{"purge_keys int64 scoped", `  - purge_keys: {op: 7, slot: agg, codec: int64, keys: [1, -1]}`, KindPurgeKeys,
			&PurgeKeysSpec{Scope: Scope{Op: &OpRef{ID: 7}, Slot: strp("agg")}, Codec: "int64",
				Keys: []string{"\x01\x00\x00\x00\x00\x00\x00\x00", "\xff\xff\xff\xff\xff\xff\xff\xff"}, Lines: []int{1, 2}}},
		{"purge_keys file", `  - purge_keys: {keys_file: erasure.txt}`, KindPurgeKeys,
			&PurgeKeysSpec{Codec: "string", KeysFile: "erasure.txt", Keys: []string{"user-42", "user-43", "user-7"}, Lines: []int{1, 2, 6}}},
		{"purge_keys int64 file", `  - purge_keys: {keys_file: int64-keys.txt, codec: int64}`, KindPurgeKeys,
			&PurgeKeysSpec{Codec: "int64", KeysFile: "int64-keys.txt", Keys: []string{int64Key(42), int64Key(7), int64Key(-1)}, Lines: []int{2, 3, 5}, Duplicates: 1}},
		{"purge_expired rfc3339", `  - purge_expired: {as_of: "2026-11-29T00:00:00Z"}`, KindPurgeExpired,
			&PurgeExpiredSpec{AsOfText: "2026-11-29T00:00:00Z", AsOf: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), AsOfMs: 1795910400000,
				Targets: []SlotTarget{{Op: 7, Slot: "seen"}, {Op: enricher, Slot: "cart"}}}},
		{"purge_expired rfc3339 lower case", `  - purge_expired: {as_of: "2026-11-29t00:00:00.5z"}`, KindPurgeExpired,
			&PurgeExpiredSpec{AsOfText: "2026-11-29t00:00:00.5z", AsOf: time.Date(2026, 11, 29, 0, 0, 0, 5e8, time.UTC), AsOfMs: 1795910400500,
				Targets: []SlotTarget{{Op: 7, Slot: "seen"}, {Op: enricher, Slot: "cart"}}}},
		{"purge_expired unquoted timestamp", `  - purge_expired: {as_of: 2026-11-29T01:00:00+01:00, op: 7}`, KindPurgeExpired,
			&PurgeExpiredSpec{Scope: Scope{Op: &OpRef{ID: 7}}, AsOfText: "2026-11-29T01:00:00+01:00",
				AsOf: time.Date(2026, 11, 29, 1, 0, 0, 0, time.FixedZone("", 3600)), AsOfMs: 1795910400000,
				Targets: []SlotTarget{{Op: 7, Slot: "seen"}}}},
		{"purge_expired epoch ms", `  - purge_expired: {as_of: 1795910400000, uid: enricher, slot: cart}`, KindPurgeExpired,
			&PurgeExpiredSpec{Scope: Scope{Op: &OpRef{ID: enricher, UID: "enricher"}, Slot: strp("cart")}, AsOfText: "1795910400000",
				AsOf: time.UnixMilli(1795910400000).UTC(), AsOfMs: 1795910400000, Targets: []SlotTarget{{Op: enricher, Slot: "cart"}}}},
		{"purge_expired now", `  - purge_expired: {as_of: now}`, KindPurgeExpired,
			&PurgeExpiredSpec{AsOfText: "now", AsOf: fixedNow, AsOfMs: fixedNow.UnixMilli(), Now: true,
				Targets: []SlotTarget{{Op: 7, Slot: "seen"}, {Op: enricher, Slot: "cart"}}}},
		{"set_value", `  - set_value: {op: 7, slot: agg, expr: 'value * 100'}`, KindSetValue, &SetValueSpec{Op: OpRef{ID: 7}, Slot: "agg", Expr: "value * 100"}},
		{"set_version", `  - set_version: {op: 7, state_type: UserCounter, version: 2, slot: agg_v2}`, KindSetVersion,
			&SetVersionSpec{Op: OpRef{ID: 7}, StateType: "UserCounter", Version: 2, Slot: "agg_v2", HasSlot: true}},
		{"set_version no slot max", `  - set_version: {op: 7, state_type: T, version: 4294967295}`, KindSetVersion,
			&SetVersionSpec{Op: OpRef{ID: 7}, StateType: "T", Version: 4294967295}},
		{"drop_version", `  - drop_version: {op: 12, state_type: Dedup}`, KindDropVersion, &DropVersionSpec{Op: OpRef{ID: 12}, StateType: "Dedup"}},
		{"rescale", `  - rescale: {parallelism: 8}`, KindRescale, &RescaleSpec{Parallelism: 8}},
		{"rescale dropping lost rows", `  - rescale: {parallelism: 8, drop_lost: true}`, KindRescale, &RescaleSpec{Parallelism: 8, DropLost: true}},
		{"rescale groups", "  - rescale:\n      groups:\n        - {subtasks: \"0-2\", parallelism: 5}\n        - {subtasks: 3, parallelism: 1}", KindRescale,
			&RescaleSpec{Groups: []RescaleGroup{
				{Subtasks: "0-2", First: 0, Last: 2, Parallelism: 5, Line: 10, Col: 11},
				{Subtasks: "3", First: 3, Last: 3, Parallelism: 1, Line: 11, Col: 11}}}},
	}
	seen := map[Kind]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := parseOne(t, decls+"  - name: the rule\n"+strings.Replace(tc.rule, "  - ", "    ", 1)+"\n")
			if len(set.Rules) != 1 {
				t.Fatalf("%d rules", len(set.Rules))
			}
			r := set.Rules[0]
			if r.Kind != tc.kind || r.Index != 1 || r.Name != "the rule" || r.Line != 8 || r.Col != 5 {
				t.Errorf("rule = %+v", r)
			}
			if got := normalize(r.Spec()); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("spec:\n got %#v\nwant %#v", got, tc.want)
			}
			// Exactly one spec pointer is set.
			v := reflect.ValueOf(*r)
			n := 0
			for i := 0; i < v.NumField(); i++ {
				if f := v.Field(i); v.Type().Field(i).IsExported() && f.Kind() == reflect.Pointer && !f.IsNil() {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d spec pointers set", n)
			}
			if want := `rule 1 "the rule" (` + string(tc.kind) + `)`; r.Label() != want {
				t.Errorf("Label() = %q, want %q", r.Label(), want)
			}
			seen[tc.kind] = true
		})
	}
	for _, k := range AllKinds {
		if !seen[k] {
			t.Errorf("no case for kind %s", k)
		}
	}
}

func TestLabelWithoutName(t *testing.T) {
	set := parseOne(t, "version: 1\nrules:\n  - keep: 'true'\n  - drop_slot: {op: 1, slot: x}\n")
	if got := set.Rules[1].Label(); got != "rule 2 (drop_slot)" {
		t.Errorf("Label() = %q", got)
	}
}

func TestSpecExample(t *testing.T) {
	set, err := LoadWithOptions(corpusDir+"/spec-example.good.yaml", testOpts())
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Slots) != 3 || len(set.Rules) != 12 || set.Version != 1 {
		t.Fatalf("%d slots, %d rules", len(set.Slots), len(set.Rules))
	}
	wantKinds := []Kind{KindDropOperator, KindRemapOperator, KindRenameSlot, KindDropSlot, KindPurgeKeys, KindPurgeExpired,
		KindDrop, KindKeep, KindSetValue, KindSetVersion, KindDropVersion, KindRescale}
	for i, r := range set.Rules {
		if r.Kind != wantKinds[i] {
			t.Errorf("rule %d kind %s, want %s", i+1, r.Kind, wantKinds[i])
		}
	}
	if set.Rules[0].Name != "drop the retired dedup operator" || set.Rules[4].Name != "erasure request 2026-11-28" {
		t.Errorf("names: %q %q", set.Rules[0].Name, set.Rules[4].Name)
	}
	cart := set.Slots[2]
	if cart.Op.UID != "enricher" || cart.Op.ID != savepoint.OperatorIDFromUID("enricher") || !cart.TTL || !cart.Composite || cart.ValueCodec != nil {
		t.Errorf("cart decl = %+v", cart)
	}
	// set_value on agg_v2 finds agg's declaration through the rename.
	sv := set.Rules[8].SetValue
	if sv.Decl != set.Slots[0] || sv.Program.ResultType == nil || sv.Program.ResultType.Kind() != reflect.Int {
		t.Errorf("set_value decl %v, result %v", sv.Decl, sv.Program.ResultType)
	}
	if set.SlotDecl(7, "agg_v2") != set.Slots[0] || set.SlotDecl(7, "agg") != set.Slots[0] || set.SlotDecl(7, "tmp") != nil {
		t.Error("SlotDecl does not follow the rename")
	}
	if set.Rescale() == nil || set.Rescale().Parallelism != 8 {
		t.Error("Rescale()")
	}
	pk := set.Rules[4].PurgeKeys
	if pk.Len() != 3 || pk.Display(2) != "user-7" || !strings.HasSuffix(pk.Path, "testdata/rules/erasure.txt") || len(pk.FileDigest) != 64 {
		t.Errorf("purge_keys = %+v", pk)
	}
	pe := set.Rules[5].PurgeExpired
	if pe.Now || len(pe.Targets) != 2 || !pe.Applies(7, []byte("seen")) || pe.Applies(7, []byte("agg")) {
		t.Errorf("purge_expired = %+v", pe)
	}
}

// An 'as_of' in epoch seconds, read as milliseconds, is an instant of
// January 1970 that purges next to nothing: warned of, with the fix.
func TestAsOfInSecondsWarned(t *testing.T) {
	for _, c := range []struct {
		asOf string
		warn bool
	}{
		{"1795910400", true},
		{"1000000000", true},
		{"99999999999", true},
		{"1795910400000", false},
		{"999999999", false},
		{"100000000000", false},
		{"0", false},
		{"-1795910400", false},
		{`"2026-11-29T00:00:00Z"`, false},
	} {
		src := "version: 1\nslots:\n  - {op: 1, slot: s, ttl: true}\nrules:\n  - purge_expired: {as_of: " + c.asOf + "}\n"
		set, err := Parse("t.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		var all []string
		for _, w := range set.Warnings {
			all = append(all, w.String())
		}
		got := strings.Join(all, "\n")
		want := "t.yaml:5:28: rule 1: 'as_of' 1795910400 is read as epoch milliseconds, 1970-01-21T18:51:50.4Z; as seconds it would be 2026-11-29T00:00:00Z: write 1795910400000, or the time (\"2026-11-29T00:00:00Z\")"
		switch {
		case c.warn && !strings.Contains(got, "is read as epoch milliseconds"):
			t.Errorf("as_of %s: no warning of seconds in:\n%s", c.asOf, got)
		case !c.warn && strings.Contains(got, "epoch milliseconds"):
			t.Errorf("as_of %s: warned:\n%s", c.asOf, got)
		case c.asOf == "1795910400" && got != want:
			t.Errorf("as_of %s: warning\n%s\nwant\n%s", c.asOf, got, want)
		}
	}
}

func TestNowIsInjectedAndRecorded(t *testing.T) {
	calls := 0
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	src := "version: 1\nslots:\n  - {op: 1, slot: s, ttl: true}\nrules:\n  - purge_expired: {as_of: now}\n  - purge_expired: {as_of: now}\n"
	set, err := ParseWithOptions("t.yaml", []byte(src), ParseOptions{Now: func() time.Time { calls++; return at }})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range set.Rules {
		pe := r.PurgeExpired
		if !pe.Now || !pe.AsOf.Equal(at) || pe.AsOfMs != at.UnixMilli() || pe.AsOfText != "now" {
			t.Errorf("%+v", pe)
		}
		if !pe.Expired(at.UnixMilli()) || pe.Expired(at.UnixMilli()+1) {
			t.Error("Expired is not inclusive at as_of")
		}
	}
	if calls != 2 {
		t.Errorf("clock called %d times", calls)
	}
	// Without options, time.Now is used.
	set, err = Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(set.Rules[0].PurgeExpired.AsOf); d < 0 || d > time.Minute {
		t.Errorf("as_of now resolved to %v", set.Rules[0].PurgeExpired.AsOf)
	}
}

func TestErrorType(t *testing.T) {
	src := "version: 1\nrules:\n  - name: purge-old\n    drop_slot: {op: 7, slot: tmp, wehre: 1}\n  - keep: 'op +'\n"
	_, err := Parse("rules.yaml", []byte(src))
	var errs *Errors
	if !errors.As(err, &errs) || errs.Len() != 2 {
		t.Fatalf("err = %v", err)
	}
	e := errs.List[0]
	want := Error{File: "rules.yaml", Line: 4, Col: 35, Rule: 1, RuleName: "purge-old", Key: "wehre"}
	if e.File != want.File || e.Line != want.Line || e.Col != want.Col || e.Rule != want.Rule || e.RuleName != want.RuleName || e.Key != want.Key {
		t.Errorf("first = %+v", e)
	}
	if got := e.Error(); got != `rules.yaml:4:35: rule 1 ("purge-old"): unknown key 'wehre' in 'drop_slot' (want 'op', 'uid', 'slot')` {
		t.Errorf("Error() = %s", got)
	}
	// errors.As reaches each *Error through Unwrap() []error.
	var one *Error
	if !errors.As(err, &one) || one != e {
		t.Error("errors.As(*Error) failed")
	}
	if u := errs.Unwrap(); len(u) != 2 || u[1] != errs.List[1] {
		t.Errorf("Unwrap = %v", u)
	}
	if errs.List[1].Rule != 2 || errs.List[1].RuleName != "" || errs.List[1].Key != "keep" {
		t.Errorf("second = %+v", errs.List[1])
	}
	if lines := strings.Split(err.Error(), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], "rules.yaml:5:") {
		t.Errorf("Error() lines = %q", lines)
	}
}

func TestErrorsSortedAndKeysFileLast(t *testing.T) {
	// A keys-file problem sorts at the position of its 'keys_file' key.
	src := "version: 1\nrules:\n  - purge_keys: {keys_file: bad-int64-keys.txt, codec: int64}\n  - keep: 'op +'\n  - drop: 'x'\n"
	_, err := ParseWithOptions(corpusDir+"/x.yaml", []byte(src), testOpts())
	var errs *Errors
	if !errors.As(err, &errs) {
		t.Fatal(err)
	}
	var files []string
	for _, e := range errs.List {
		files = append(files, e.File)
	}
	if len(errs.List) != 4 || !strings.HasSuffix(files[0], "bad-int64-keys.txt") || !strings.HasSuffix(files[1], "bad-int64-keys.txt") ||
		errs.List[2].Line != 4 || errs.List[3].Line != 5 {
		t.Errorf("order:\n%v", err)
	}
}

func TestSyntaxErrorLines(t *testing.T) {
	cases := []struct{ src, want string }{
		{"version: 1\nrules:\n\t- keep: 'true'\n", "t.yaml:3:1: YAML syntax error: found character that cannot start any token"},
		{"version: 1\nrules: [1, 2]]\n", "t.yaml:2:1: YAML syntax error: did not find expected key"},
		{"version: 1\nrules:\n  c: 1\n d: 2\n", "t.yaml:4:2: YAML syntax error: did not find expected key"},
		// yaml.v3 names the line where the block starts; the line at
		// fault is found, and the block's line named beside it.
		{"version: 1\nrules:\n  - purge_keys:\n      keys: [a]\n     codec: string\n", "t.yaml:5:6: YAML syntax error: did not find expected key (in the block that starts on line 3)"},
		{"version: 1\nrules:\n  - keep: 'true'\n  - drop: 'false'\n   - drop: 'true'\n", "t.yaml:5:4: YAML syntax error: did not find expected '-' indicator (in the block that starts on line 3)"},
		{"version: 1\nrules: x: y\n", "t.yaml:2:1: YAML syntax error: mapping values are not allowed in this context"},
		{"version: 1\nrules: []\n--- [\n", "t.yaml:4:1: YAML syntax error: did not find expected node content"},
		// The reader's errors carry no position: it is the first bad character's.
		{"version: 1\nrules:\n  - drop: \"op == 1\"\n  - name: \"\xc3\x28bad\"\n", "t.yaml:4:12: YAML syntax error: invalid trailing UTF-8 octet (byte 0xc3)"},
		{"version: 1\nrules:\n  - rename_slot: {op: 7, from: agg, to: \"a\x1fb\"}\n", "t.yaml:3:43: YAML syntax error: control characters are not allowed (byte 0x1f)"},
		{"\xef\xbb\xbfversion: 1\nrules: [] # Zoë \xff\n", "t.yaml:2:17: YAML syntax error: invalid leading UTF-8 octet (byte 0xff)"},
		{"\xef\xbb\xbfversion: 1\x7f\n", "t.yaml:1:11: YAML syntax error: control characters are not allowed (byte 0x7f)"},
	}
	for _, tc := range cases {
		_, err := Parse("t.yaml", []byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.src, err, tc.want)
		}
	}
}

func TestExprPositions(t *testing.T) {
	// Each expression has one type error at the marked column ('==' against
	// the string "s" on a number).
	cases := []struct {
		name, yaml string
		line, col  int
	}{
		{"plain", "  - drop: op == 1 && \"s\" == 1", 3, 26},
		{"single quoted", "  - drop: 'op == 1 && \"s\" == 1'", 3, 27},
		{"single quoted with ''", "  - drop: 'slot == ''a'' && \"s\" == 1'", 3, 33},
		{"double quoted with escapes", "  - drop: \"slot == \\\"a\\\" && \\u0022s\\u0022 == 1\"", 3, 43},
		{"flow mapping", "  - drop: {op: 1, expr: 'op == 1 && \"s\" == 1'}", 3, 41},
		{"literal block", "  - drop: |\n      op == 1 &&\n        \"s\" == 1", 5, 13},
		{"literal block keep", "  - drop: |+\n\n      op == 1 &&\n      \"s\" == 1\n", 6, 11},
		{"folded block", "  - drop: >\n      op == 1 &&\n      \"s\" == 1", 5, 11},
		{"folded block, blank line", "  - drop: >\n      op == 1 &&\n\n      \"s\" == 1", 6, 11},
		{"folded block, blank lines", "  - drop: >-\n      op == 1 &&\n\n\n      \"s\" == 1", 7, 11},
		{"folded block, more indented", "  - drop: >\n      op == 1 &&\n        op == 2 &&\n      \"s\" == 1", 6, 11},
		{"literal block, indentation indicator", "  - drop: |2\n        op == 1 &&\n      \"s\" == 1", 5, 11},
		{"folded block, indentation indicator", "  - drop: >2\n        op == 1 &&\n      \"s\" == 1", 5, 11},
		{"literal block, blank first", "  - drop: |\n\n      op == 1 &&\n      \"s\" == 1", 6, 11},
		{"plain multi-line", "  - drop: op == 1 &&\n      \"s\" == 1", 4, 11},
		{"non-ASCII", "  - drop: 'slot == \"é\" && \"s\" == 1'", 3, 31},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte("version: 1\nrules:\n"+tc.yaml+"\n"))
			var errs *Errors
			if !errors.As(err, &errs) || errs.Len() != 1 {
				t.Fatalf("err = %v", err)
			}
			e := errs.List[0]
			if e.Line != tc.line || e.Col != tc.col || !strings.Contains(e.Msg, "mismatched types string and int") {
				t.Errorf("got %d:%d %s, want %d:%d", e.Line, e.Col, e.Msg, tc.line, tc.col)
			}
		})
	}
}

// TestExprNesting: brackets nested deeper than maxExprNesting are refused
// at the first one too deep, before expr's parser recurses into them (a
// million parentheses overflowed its stack); brackets in strings do not
// count, and the deepest nesting allowed compiles.
func TestExprNesting(t *testing.T) {
	deep := func(n int, open, close string) string {
		return strings.Repeat(open, n) + "true" + strings.Repeat(close, n)
	}
	cases := []struct {
		name, expr string
		col        int // 0: compiles
	}{
		{"parens at the limit", deep(maxExprNesting, "(", ")"), 0},
		{"parens past it", deep(maxExprNesting+1, "(", ")"), 12 + maxExprNesting},
		{"a million parens", deep(1000000, "(", ")"), 12 + maxExprNesting},
		{"mixed brackets", "op in [" + deep(maxExprNesting, "(", ")") + "]", 18 + maxExprNesting},
		{"in strings", `slot == "` + strings.Repeat("([{", 400) + `" || slot == '` + strings.Repeat("(", 400) + `\''`, 0},
		{"closed ones do not add up", strings.Repeat("(true) && ", 400) + "true", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkExprLimit(t, tc.expr, tc.col, "nested", "brackets nested more than 256 deep") })
	}
}

// checkExprLimit parses a drop of expr: with col 0, no error mentioning
// word may come of it; else exactly one, at 3:col, saying msg.
func checkExprLimit(t *testing.T, expr string, col int, word, msg string) {
	t.Helper()
	_, err := Parse("t.yaml", []byte("version: 1\nrules:\n  - drop: '"+strings.ReplaceAll(expr, "'", "''")+"'\n"))
	if col == 0 {
		if err != nil && strings.Contains(err.Error(), word) {
			t.Fatalf("refused: %.200v", err)
		}
		return
	}
	var errs *Errors
	if !errors.As(err, &errs) || errs.Len() != 1 {
		t.Fatalf("err = %.200v", err)
	}
	if e := errs.List[0]; e.Line != 3 || e.Col != col || !strings.Contains(e.Msg, msg) {
		t.Errorf("got %d:%d %s, want 3:%d", e.Line, e.Col, e.Msg, col)
	}
}

// TestExprUnaryLimit: a chain of unary operators is refused past 256, at
// the first one too many, before expr's parser descends once for each (a
// million overflowed its stack); binary operators, != and strings do not
// count.
func TestExprUnaryLimit(t *testing.T) {
	for _, tc := range []struct {
		name, expr string
		col        int // 0: no unary error
	}{
		{"at the limit", strings.Repeat("!", maxExprUnary) + "true", 0},
		{"past it", strings.Repeat("!", maxExprUnary+1) + "true", 12 + maxExprUnary},
		{"a million !", strings.Repeat("!", 1000000) + "true", 12 + maxExprUnary},
		{"a million -", strings.Repeat("-", 1000000) + "1 > 0", 12 + maxExprUnary},
		{"not", strings.Repeat("not ", maxExprUnary+1) + "true", 12 + 4*maxExprUnary},
		{"binary operators", strings.Repeat("key_group - 1 + ", 400) + "1 != 0 && op not in [1]", 0},
		{"in strings", `slot != "` + strings.Repeat("!-", 400) + `"`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) { checkExprLimit(t, tc.expr, tc.col, "unary", "more than 256 unary operators") })
	}
}

// TestExprLimitsBehindComments: a quote in a comment opens no string
// literal for the nesting and unary limits, as it opens none for expr's
// lexer, which skips comments: the brackets and operators after it count
// (a million of them overflowed the parser's stack), and what a comment
// holds does not.
func TestExprLimitsBehindComments(t *testing.T) {
	deep := strings.Repeat("(", maxExprNesting+1) + "true" + strings.Repeat(")", maxExprNesting+1)
	t.Run("brackets", func(t *testing.T) {
		checkExprLimit(t, `/*"*/ `+deep, 18+maxExprNesting, "nested", "brackets nested more than 256 deep")
	})
	t.Run("unary", func(t *testing.T) {
		checkExprLimit(t, `/*"*/ `+strings.Repeat("!", maxExprUnary+1)+"true", 18+maxExprUnary, "unary", "more than 256 unary operators")
	})
	t.Run("in a comment", func(t *testing.T) {
		checkExprLimit(t, "/* "+deep+strings.Repeat("!", 300)+" */ true // "+deep, 0, "", "")
	})
	t.Run("line comment", func(t *testing.T) {
		_, e := compileExpr("// \"\n"+deep, nil, true, DefaultMaxExprNodes)
		if e == nil || e.off != 5+maxExprNesting || !strings.Contains(e.msg, "brackets nested") {
			t.Fatalf("got %+v", e)
		}
	})
	t.Run("in a string", func(t *testing.T) {
		checkExprLimit(t, `slot == "/*" && `+deep+` && slot != "*/"`, 28+maxExprNesting, "nested", "brackets nested more than 256 deep")
	})
	t.Run("nodes", func(t *testing.T) {
		ids := make([]string, 200)
		for i := range ids {
			ids[i] = strconv.Itoa(i)
		}
		_, e := compileExpr("op in ["+strings.Join(ids, ",")+"]", nil, true, 100)
		if e == nil || !strings.Contains(e.msg, "more than 100 nodes") || !strings.Contains(e.msg, "purge_keys") {
			t.Fatalf("got %+v", e)
		}
	})
}

// TestExprCallsRefused: now(), whose result moves from row to row and run
// to run, and Env's __ functions, which the comparison patches call, are
// refused where the expression calls them; date() of a literal is not.
func TestExprCallsRefused(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{`now().Nanosecond() % 2 == 0`, `3:12: rule 1: bad expression in 'drop': now() changes from row to row and from run to run`},
		{`expire_at != nil && expire_at < now().UnixMilli()`, `3:44: rule 1: bad expression in 'drop': now() changes`},
		{`__in(1, [2])`, `3:12: rule 1: bad expression in 'drop': unknown function __in`},
		{`op == 1 || $env.__lt(1, 2)`, `unknown function`},
		{`date("2026-01-01T00:00:00Z").Year() == 2026 && op in [1, 2]`, ``},
		{`op == 18446744073709551615`, `value out of range: integer literals are 64-bit signed; write an operator id of 2^63 or more as opid(`},
	} {
		_, err := Parse("t.yaml", []byte("version: 1\nrules:\n  - drop: '"+c.expr+"'\n"))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.expr, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.expr, err, c.want)
		}
	}
}

// TestKeyNamesShownSafely: an unknown or duplicate key holding a control
// character (an escape sequence would act on the terminal) or a quote is
// shown quoted, as Go quotes it; a plain one in single quotes.
func TestKeyNamesShownSafely(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"  - drop_operator: {op: 12, \"\\e[2Jx\": 1}\n", `unknown key "\x1b[2Jx" in 'drop_operator'`},
		{"  - drop_operator: {op: 12, \"it's\": 1}\n", `unknown key "it's" in 'drop_operator'`},
		{"  - drop_operator: {op: 12, force: 1}\n", `unknown key 'force' in 'drop_operator'`},
		{"  - drop_operator: {op: 12, op: 13}\n", `duplicate key 'op' in 'drop_operator'`},
	} {
		_, err := Parse("t.yaml", []byte("version: 1\nrules:\n"+c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.ContainsRune(err.Error(), 0x1b) {
			t.Errorf("%q: %v, want %q", c.src, err, c.want)
		}
	}
}

func TestDeclarationFollowsRemapAndRename(t *testing.T) {
	set := parseOne(t, `version: 1
slots:
  - {op: 13, slot: agg, key: string, value: int64}
rules:
  - remap_operator: {from: 13, to: 14}
  - rename_slot: {op: 14, from: agg, to: total}
  - set_value: {op: 14, slot: total, expr: 'value + 1'}
`)
	d := set.Slots[0]
	for _, k := range []struct {
		op   uint64
		slot string
	}{{13, "agg"}, {14, "agg"}, {14, "total"}} {
		if set.SlotDecl(k.op, k.slot) != d {
			t.Errorf("SlotDecl(%d, %q) is not the declaration", k.op, k.slot)
		}
	}
	if set.Rules[2].SetValue.Decl != d {
		t.Error("set_value did not find the declaration")
	}
	// A rename onto a slot declared differently is a conflict.
	_, err := Parse("t.yaml", []byte(`version: 1
slots:
  - {op: 7, slot: a, value: int64}
  - {op: 7, slot: b, value: string}
rules:
  - rename_slot: {op: 7, from: a, to: b}
`))
	if err == nil || !strings.Contains(err.Error(), "t.yaml:6:5: rule 1: after this rule slot \"b\" of op 7 would have two declarations that disagree") {
		t.Errorf("err = %v", err)
	}
}

func TestWarnings(t *testing.T) {
	cases := []struct {
		name, rules string
		want        []string
	}{
		{"keep true", "  - keep: 'true'\n", []string{"t.yaml:3:5: rule 1: keep: 'true' is constant: the rule does nothing"}},
		{"drop false folded", "  - drop: '1 == 2'\n", []string{"rule 1: drop: '1 == 2' is constant: the rule does nothing"}},
		{"drop everything", "  - drop: 'true'\n  - name: late\n    drop_slot: {op: 1, slot: x}\n", []string{
			"t.yaml:3:5: rule 1: drop: 'true' is constant: the rule drops every row",
			`t.yaml:5:5: rule 2 ("late"): rule 1 drops every row: this rule and every later one can match nothing`}},
		{"scoped keep false", "  - keep: {op: 3, expr: 'false'}\n", []string{"rule 1: keep: 'false' is constant: the rule drops every row of op 3"}},
		{"constant beyond folding", "  - keep: 'duration(\"1h\") > duration(\"1m\")'\n", []string{`rule 1: keep: 'duration("1h") > duration("1m")' is constant: the rule does nothing`}},
		{"constant of a uid", "  - drop: {op: 3, expr: 'uid(\"x\") == 7 || false'}\n", []string{"is constant: the rule does nothing"}},
		{"kind misspelt", "  - drop: 'kind == \"Keyed\" || kind in [\"raw\", \"operatr\"] || \"keyd\" != kind'\n", []string{
			`t.yaml:3:20: rule 1: 'drop': kind is "keyed", "operator" or "raw": "Keyed" is none of them, and no row has it`,
			`"operatr" is none of them`, `"keyd" is none of them`}},
		{"dropped op", "  - drop_operator: {op: 12}\n  - drop_slot: {op: 12, slot: x}\n", []string{
			"t.yaml:4:5: rule 2: op 12 has no rows any more (rule 1 moved or dropped them): this rule can match nothing"}},
		{"remapped op", "  - remap_operator: {from: 1, to: 2}\n  - purge_keys: {op: 1, keys: [a]}\n  - purge_keys: {op: 2, keys: [a]}\n", []string{
			"t.yaml:4:5: rule 2: op 1 has no rows any more (rule 1 moved or dropped them)"}},
		{"renamed slot", "  - rename_slot: {op: 7, from: a, to: b}\n  - drop_slot: {op: 7, slot: a}\n", []string{
			`t.yaml:4:5: rule 2: slot "a" of op 7 has no rows any more (rule 1 renamed or dropped it)`}},
		{"duplicate name", "  - name: x\n    keep: 'op != 1'\n  - name: x\n    keep: 'op != 2'\n", []string{`rule 2 ("x"): name "x" is also used by rule 1`}},
		{"empty keys", "  - purge_keys: {keys: []}\n", []string{"rule 1: purge_keys lists no keys: it matches nothing"}},
		{"duplicate keys", "  - purge_keys: {keys: [a, b, a]}\n", []string{"rule 1: purge_keys lists 1 duplicate key(s)"}},
		{"big parallelism", "  - rescale: {parallelism: 300}\n", []string{"t.yaml:3:28: rule 1: parallelism 300 is above 128: clink has 128 key groups, so 172 subtasks get no keyed state"}},
		{"parallelism one above", "  - rescale: {parallelism: 129}\n", []string{"so 1 subtask gets no keyed state"}},
		{"no rules", "", []string{"t.yaml:2:1: 'rules' is empty"}},
		{"remap into a purge's scope", "  - purge_keys: {op: 8, keys: [a]}\n  - remap_operator: {from: 7, to: 8}\n", []string{
			"t.yaml:4:5: rule 2: this rule moves rows next to those of rule 1 (purge_keys, op 8), which ran before it: rows of its listed keys among them are not purged; put the purge after this rule"}},
		{"remap next to a purged operator that moved", "  - purge_keys: {op: 8, keys: [a]}\n  - remap_operator: {from: 8, to: 9}\n  - remap_operator: {from: 7, to: 9, merge: true}\n", []string{
			"t.yaml:5:5: rule 3: this rule moves rows next to those of rule 1 (purge_keys, op 8)"}},
		{"rename next to a purged slot that moved", "  - purge_keys: {op: 7, slot: b, keys: [a]}\n  - rename_slot: {op: 7, from: b, to: c}\n  - rename_slot: {op: 7, from: a, to: c, merge: true}\n", []string{
			"t.yaml:5:5: rule 3: this rule moves rows next to those of rule 1"}},
		{"remap of another operator next to a purged op and slot that moved", "  - purge_keys: {op: 8, slot: b, keys: [a]}\n  - remap_operator: {from: 8, to: 9}\n  - remap_operator: {from: 7, to: 9, merge: true}\n", []string{
			"t.yaml:5:5: rule 3: this rule moves rows next to those of rule 1"}},
		{"rename next to a slot-only scope's rows that moved in one operator", "  - purge_keys: {slot: b, keys: [a]}\n  - rename_slot: {op: 7, from: b, to: c}\n  - rename_slot: {op: 7, from: a, to: c, merge: true}\n", []string{
			`t.yaml:5:5: rule 3: this rule moves rows next to those of rule 1 (purge_keys, slot "b")`}},
		{"remap next to a slot-only scope's rows a remap moved in", "  - purge_keys: {slot: seen, keys: [a]}\n  - rename_slot: {op: 7, from: seen, to: t}\n  - remap_operator: {from: 7, to: 999}\n  - rename_slot: {op: 999, from: t, to: u}\n  - rename_slot: {op: 8, from: pro, to: u}\n  - remap_operator: {from: 8, to: 999, merge: true}\n", []string{
			"t.yaml:8:5: rule 6: this rule moves rows next to those of rule 1"}},
		{"rename into a purge's scope", "  - purge_keys: {op: 7, slot: b, keys: [a]}\n  - rename_slot: {op: 7, from: a, to: b}\n", []string{
			`t.yaml:4:5: rule 2: this rule moves rows next to those of rule 1 (purge_keys, op 7 slot "b")`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rules := tc.rules
			if rules == "" {
				rules = "[]\n"
			} else {
				rules = "\n" + rules
			}
			set, err := Parse("t.yaml", []byte("version: 1\nrules: "+rules))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range set.Warnings {
				got = append(got, w.String())
			}
			all := strings.Join(got, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("missing warning %q in:\n%s", w, all)
				}
			}
		})
	}
	// Moves that bring no rows into a purge's scope are not warned about:
	// out of it, within it, into another operator or slot, before it.
	for _, src := range []string{
		"  - purge_keys: {op: 8, keys: [a]}\n  - remap_operator: {from: 8, to: 9}\n",
		"  - purge_keys: {slot: b, keys: [a]}\n  - remap_operator: {from: 7, to: 8}\n",
		"  - purge_keys: {op: 7, slot: b, keys: [a]}\n  - rename_slot: {op: 8, from: a, to: b}\n",
		"  - remap_operator: {from: 7, to: 8}\n  - purge_keys: {op: 8, keys: [a]}\n",
		"  - purge_keys: {keys: [a]}\n  - remap_operator: {from: 7, to: 8}\n",
		"  - purge_keys: {op: 8, keys: [a]}\n  - remap_operator: {from: 8, to: 9}\n  - remap_operator: {from: 7, to: 8}\n",           // op 8 is a fresh operator then
		"  - purge_keys: {slot: b, keys: [a]}\n  - rename_slot: {op: 7, from: b, to: c}\n  - rename_slot: {op: 7, from: a, to: b}\n", // op 7's b is a fresh slot then
	} {
		set, err := Parse("t.yaml", []byte("version: 1\nrules:\n"+src))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range set.Warnings {
			if strings.Contains(w.String(), "moves rows next to") {
				t.Errorf("%s: warned %q", src, w)
			}
		}
	}
	// A remap into an operator may bring back a slot an earlier rule
	// renamed or dropped there: a rule on it may match.
	for _, src := range []string{
		"  - drop_slot: {op: 8, slot: s}\n  - rename_slot: {op: 7, from: p, to: s}\n  - remap_operator: {from: 7, to: 8, merge: true}\n  - purge_keys: {keys: [a], op: 8, slot: s}\n",
		"  - rename_slot: {op: 8, from: s, to: t}\n  - drop_operator: {op: 8}\n  - remap_operator: {from: 7, to: 8}\n  - drop_slot: {op: 8, slot: s}\n",
	} {
		set, err := Parse("t.yaml", []byte("version: 1\nrules:\n"+src))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range set.Warnings {
			if strings.Contains(w.String(), "no rows any more") {
				t.Errorf("%s: warned %q", src, w)
			}
		}
	}
	// A clean file has no warnings.
	set := parseOne(t, decls+"  - keep: 'op != 99'\n  - purge_keys: {keys: [a]}\n")
	if len(set.Warnings) != 0 {
		t.Errorf("unexpected warnings: %v", set.Warnings[0])
	}
}

func TestWarningsKeptWithErrors(t *testing.T) {
	_, err := Parse("t.yaml", []byte("version: 1\nrules:\n  - purge_keys: {keys: []}\n  - keep: 1 +\n"))
	var errs *Errors
	if !errors.As(err, &errs) || len(errs.Warnings) != 1 {
		t.Fatalf("err = %v, warnings %v", err, errs)
	}
}

func TestPurgeKeysCodecMismatchWarning(t *testing.T) {
	set := parseOne(t, decls+"  - purge_keys: {op: 7, slot: agg, keys: [a]}\n")
	if len(set.Warnings) != 1 || !strings.Contains(set.Warnings[0].Msg, "declares key codec int64 but purge_keys encodes keys with string") {
		t.Errorf("warnings = %v", set.Warnings)
	}
	// Keys match as bytes: uint64 keys are int64's 8 bytes, bytes keys a
	// string's; no other codec's encoding is either.
	for _, c := range []struct {
		key, purge string
		warn       bool
	}{
		{"uint64", "int64", false}, {"int64", "int64", false}, {"bytes", "string", false}, {"string", "string", false},
		{"uint64", "string", true}, {"string", "int64", true}, {"double", "int64", true}, {"uint32", "int64", true},
		{"list<string>", "string", true}, {`pair<string,int64>`, "string", true},
	} {
		src := fmt.Sprintf("version: 1\nslots:\n  - {op: 7, slot: s, key: %q}\nrules:\n  - purge_keys: {op: 7, slot: s, keys: [\"1\"], codec: %s}\n", c.key, c.purge)
		set := parseOne(t, src)
		if got := len(set.Warnings) == 1 && strings.Contains(set.Warnings[0].Msg, "they cannot match"); got != c.warn || len(set.Warnings) > 1 {
			t.Errorf("key codec %s, purge codec %s: warnings %v, want a mismatch warning: %v", c.key, c.purge, set.Warnings, c.warn)
		}
	}
}

// A purge of a wider scope than one slot is warned of when no slot declared
// in its scope has a key codec its own fits; a list of YAML integers
// matched as text (the default codec) is warned of too.
func TestPurgeKeysWideScopeWarnings(t *testing.T) {
	const slots = "version: 1\nslots:\n  - {op: 7, slot: a, key: int64}\n  - {op: 7, slot: b, key: uint64}\n  - {op: 8, slot: c, key: string}\n  - {op: 9, slot: d, key: string, composite: true}\nrules:\n"
	for _, c := range []struct {
		rule string
		want []string // substrings, one a warning
	}{
		{`purge_keys: {keys: ["7"]}`, nil}, // op 8's slot c fits
		{`purge_keys: {op: 7, keys: ["7"]}`, []string{"the slots declared in its scope have key codec int64, uint64, but purge_keys encodes keys with string"}},
		{`purge_keys: {op: 7, keys: [7], codec: int64}`, nil},
		{`purge_keys: {op: 8, keys: [7], codec: int64}`, []string{"key codec string, but purge_keys encodes keys with int64"}},
		{`purge_keys: {op: 9, keys: ["u"]}`, nil}, // composite: matched by its first component
		{`purge_keys: {op: 9, keys: [7], codec: int64}`, []string{"key codec string, but purge_keys encodes keys with int64"}},
		{`purge_keys: {slot: a, keys: ["u"]}`, []string{"key codec int64, but"}},
		{`purge_keys: {op: 10, keys: ["u"]}`, nil},
		{`purge_keys: {op: 8, keys: [7, 42]}`, []string{"lists its keys as integers, but matches them as text"}},
		{`purge_keys: {op: 7, keys: [7, 42]}`, []string{"key codec int64, uint64, but", "lists its keys as integers"}},
		{`purge_keys: {op: 8, keys: [7, "x"]}`, nil},
		// Booleans and floats are matched as typed; quoted, they say so.
		{`purge_keys: {op: 8, keys: ["x", 1.50, true, 2e3]}`, []string{`3 key(s) that YAML reads as booleans or floats (the first, 1.50, is a float): each is matched as the text typed, "1.50"`}},
		{`purge_keys: {op: 8, keys: [True]}`, []string{"(the first, True, is a boolean)"}},
		{`purge_keys: {op: 8, keys: ["1.50", "true", 2026-01-02]}`, nil},
		// The declarations as they stand at the rule: op 7's slots are op
		// 10's after a remap.
		{"remap_operator: {from: 7, to: 10}\n  - purge_keys: {op: 10, keys: [\"7\"]}", []string{"key codec int64, uint64, but purge_keys encodes keys with string"}},
	} {
		set := parseOne(t, slots+"  - "+c.rule+"\n")
		if len(set.Warnings) != len(c.want) {
			t.Errorf("%s: warnings %v, want %d", c.rule, set.Warnings, len(c.want))
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(set.Warnings[i].Msg, w) {
				t.Errorf("%s: warning %q, want %q", c.rule, set.Warnings[i].Msg, w)
			}
		}
	}
}

// TestPurgeKeysCodecWarningTakenBack: the warning of an unscoped purge
// whose codec fits none of the declared slots is taken back when another
// purge, of a codec that fits, has each of them in its scope (an erasure
// of text and integer keys); not when one is left out, nor for a purge
// scoped to an operator, which names the slots it means.
func TestPurgeKeysCodecWarningTakenBack(t *testing.T) {
	const slots = "version: 1\nslots:\n  - {op: 8, slot: c, key: string}\n  - {op: 9, slot: d, key: string, composite: true}\nrules:\n"
	const warning = "the slots declared in its scope have key codec string, but purge_keys encodes keys with int64"
	for _, c := range []struct {
		rules string
		warn  int // warnings of the codec
	}{
		{"  - purge_keys: {keys: [7], codec: int64}\n", 1},
		{"  - purge_keys: {keys: [7], codec: int64}\n  - purge_keys: {keys: [u]}\n", 0},
		{"  - purge_keys: {keys: [u]}\n  - purge_keys: {keys: [7], codec: int64}\n", 0},
		{"  - purge_keys: {keys: [7], codec: int64}\n  - purge_keys: {op: 8, keys: [u]}\n  - purge_keys: {op: 9, keys: [u]}\n", 0},
		{"  - purge_keys: {keys: [7], codec: int64}\n  - purge_keys: {op: 8, keys: [u]}\n", 1},
		{"  - purge_keys: {keys: [7], codec: int64}\n  - purge_keys: {keys: [8], codec: int64}\n", 2},
		{"  - purge_keys: {op: 8, keys: [7], codec: int64}\n  - purge_keys: {keys: [u]}\n", 1},
		// The other purge's scope names the slots before a rename.
		{"  - purge_keys: {keys: [7], codec: int64}\n  - rename_slot: {op: 8, from: c, to: e}\n  - purge_keys: {keys: [u]}\n", 1},
	} {
		set := parseOne(t, slots+c.rules)
		n := 0
		for _, w := range set.Warnings {
			if strings.Contains(w.Msg, warning) {
				n++
			}
		}
		if n != c.warn || len(set.Warnings) != n {
			t.Errorf("%s: warnings %v, want %d of the codec", c.rules, set.Warnings, c.warn)
		}
	}
}

// TestPurgeKeysIntegersAsTextWarned: a text list of integers alone over a
// slot declared with integer keys is warned of, though another purge of
// the integer codec covers the slot: its codec may have been forgotten.
// So is one whose covering purge names the slot before a rename.
func TestPurgeKeysIntegersAsTextWarned(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ids.txt"), []byte("42\n1001\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte("1001\n18446744073709551615\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const codecWarning = "key codec int64, but purge_keys encodes keys with string"
	for _, c := range []struct {
		rules string
		want  []string
	}{
		{"  - purge_keys: {keys_file: ids.txt}\n  - purge_keys: {keys: [1], codec: int64, op: 8, slot: u}\n", []string{codecWarning}},
		{"  - purge_keys: {keys_file: big.txt}\n  - purge_keys: {keys: [1], codec: uint64, op: 8, slot: u}\n", []string{codecWarning}},
		{"  - purge_keys: {keys: [42, 1001]}\n  - purge_keys: {keys: [1], codec: int64, op: 8, slot: u}\n", []string{codecWarning, "lists its keys as integers"}},
		{"  - purge_keys: {keys: [alice]}\n  - purge_keys: {keys: [1], codec: int64, op: 8, slot: u}\n", nil},
		{"  - purge_keys: {keys: [alice]}\n  - rename_slot: {op: 8, from: u, to: v}\n  - purge_keys: {keys: [1], codec: int64, op: 8, slot: u}\n", []string{codecWarning}},
	} {
		path := filepath.Join(dir, "r.yaml")
		if err := os.WriteFile(path, []byte("version: 1\nslots:\n  - {op: 8, slot: u, key: int64}\nrules:\n"+c.rules), 0o644); err != nil {
			t.Fatal(err)
		}
		set, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, w := range set.Warnings {
			if !strings.Contains(w.Msg, "has no rows") && !strings.Contains(w.Msg, "no declared slot") {
				got = append(got, w.Msg)
			}
		}
		ok := len(got) == len(c.want)
		for i := 0; ok && i < len(got); i++ {
			ok = strings.Contains(got[i], c.want[i])
		}
		if !ok {
			t.Errorf("%s: warnings %q, want %q", c.rules, got, c.want)
		}
	}
}

// A composite slot's key codec is its logical key's, which a purge's keys
// are matched against: a string purge over a composite string slot and an
// int64 slot is no mismatch (it was warned of, and refused by --strict).
func TestPurgeKeysCompositeCodecFits(t *testing.T) {
	const slots = "version: 1\nslots:\n  - {uid: enricher, slot: cart, key: string, value: int64, ttl: true, composite: true}\n  - {uid: agg, slot: counts, key: int64, value: int64}\nrules:\n"
	if set := parseOne(t, slots+"  - purge_keys: {keys: [user-20]}\n"); len(set.Warnings) != 0 {
		t.Errorf("string purge: warnings %v, want none", set.Warnings)
	}
	if set := parseOne(t, slots+"  - purge_keys: {keys: [20], codec: int64}\n"); len(set.Warnings) != 0 {
		t.Errorf("int64 purge: warnings %v, want none", set.Warnings)
	}
	// Declared composite alone, its codec is still checked.
	set := parseOne(t, slots+"  - purge_keys: {uid: enricher, keys: [20], codec: int64}\n")
	if len(set.Warnings) != 1 || !strings.Contains(set.Warnings[0].Msg, "key codec string, but purge_keys encodes keys with int64") {
		t.Errorf("int64 purge of the composite slot's operator: warnings %v, want a mismatch", set.Warnings)
	}
}

// clink's expiring collection states stamp every element (format 3.3): a
// composite slot not declared 'ttl: true' is left by purge_expired, which
// says so. Declared for a purge alone, it is not warned of.
func TestPurgeExpiredCompositeWithoutTTL(t *testing.T) {
	const slots = "version: 1\nslots:\n  - {op: 7, slot: seen, ttl: true}\n  - {op: 8, slot: cart, key: string, composite: true}\n"
	const want = `rule 1: slot "cart" of op 8 is declared 'composite: true' but not 'ttl: true'`
	for _, tc := range []struct {
		rules string
		warn  bool
	}{
		{"  - purge_expired: {as_of: 1000}\n", true},
		{"  - purge_expired: {as_of: 1000, op: 7}\n", false},
		{"  - purge_keys: {keys: [a]}\n", false},
	} {
		set, err := Parse("t.yaml", []byte(slots+"rules:\n"+tc.rules))
		if err != nil {
			t.Fatal(err)
		}
		warned := slices.ContainsFunc(set.Warnings, func(w *Warning) bool { return strings.Contains(w.String(), want) })
		if warned != tc.warn {
			t.Errorf("%s: warned %v, want %v: %v", tc.rules, warned, tc.warn, set.Warnings)
		}
	}
}

// TestOctalLookingRefused: an operator id or a version written with a
// leading 0 is refused, naming both readings: YAML would read it as octal,
// where a purge's int64 keys and slot names are taken as spelled.
func TestOctalLookingRefused(t *testing.T) {
	src := "version: 1\nrules:\n  - purge_keys: {keys: [037], codec: int64, op: 7, slot: counts}\n  - drop_operator: {op: 037}\n  - set_version: {op: 0x07, state_type: X, version: 010}\n  - drop_operator: {op: 0}\n"
	_, err := Parse("t.yaml", []byte(src))
	var errs *Errors
	if !errors.As(err, &errs) || errs.Len() != 2 {
		t.Fatalf("err = %v, want 2 errors", err)
	}
	for i, want := range []string{"4:25: rule 2: 'op' is written 037: YAML reads an integer with a leading 0 as octal", "5:53: rule 3: 'version' is written 010"} {
		if got := errs.List[i].Error(); !strings.Contains(got, want) {
			t.Errorf("error %d: %s, want %q in it", i, got, want)
		}
	}
}

// TestErrorsBounded: a file of many bad rules lists the first 1,000
// problems and counts the rest, instead of holding them all.
func TestErrorsBounded(t *testing.T) {
	src := "version: 1\nrules: [" + strings.Repeat("[], ", 2999) + "[]]\n"
	_, err := Parse("t.yaml", []byte(src))
	var errs *Errors
	if !errors.As(err, &errs) {
		t.Fatalf("err = %.200v", err)
	}
	if len(errs.List) != maxErrors || errs.Omitted != 3000-maxErrors || errs.Len() != 3000 {
		t.Errorf("%d listed, %d omitted, Len %d; want %d, %d, 3000", len(errs.List), errs.Omitted, errs.Len(), maxErrors, 3000-maxErrors)
	}
	if !strings.HasSuffix(errs.Error(), "t.yaml: 2000 more problems, not listed (the first 1000 are)") {
		t.Errorf("last line of %q", errs.Error()[len(errs.Error())-200:])
	}
}

// TestErrorsSaidOnce: an alias names its rule; an integer field tagged
// !!float is not an integer, not out of range; a declaration with a bad
// codec is not reported again as undeclared by the rule naming it.
func TestErrorsSaidOnce(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"version: 1\nrules:\n  - drop_operator: &x {op: 7}\n  - name: two\n    drop_operator: *x\n", `t.yaml:5:20: rule 2 ("two"): YAML alias '*x' is not supported`},
		{"version: 1\nrules:\n  - drop_operator: {op: !!float 6}\n", "t.yaml:3:25: rule 1: 'op' must be a non-negative integer, got float 6"},
		{"version: 1\nslots:\n  - {op: 7, slot: counts, value: \"map<,>\"}\nrules:\n  - set_value: {op: 7, slot: counts, expr: '1'}\n", `t.yaml:3:34: slot 1: bad codec in 'value'`},
	} {
		_, err := Parse("t.yaml", []byte(c.src))
		var errs *Errors
		if !errors.As(err, &errs) || errs.Len() != 1 || !strings.HasPrefix(errs.List[0].Error(), c.want) {
			t.Errorf("%q: %v, want the one error %s", c.src, err, c.want)
		}
	}
}

// TestExprFailsOnEveryRow: a filter that reads no field of the row and
// fails is refused at load (it would fail on the first row of every run);
// one that does not fail is constant.
func TestExprFailsOnEveryRow(t *testing.T) {
	for src, want := range map[string]string{
		`1/0 > 1`:                "it reads no field of the row and fails on every one: 1 / 0: division by zero",
		`len(1..1000000000) > 0`: "it reads no field of the row and fails on every one: memory budget exceeded",
		`int("x") == 1`:          "it reads no field of the row and fails on every one",
		`false && 1/0 > 1`:       "",
		`op / 0 > 1 && op == 1`:  "",
	} {
		_, err := Parse("t.yaml", []byte("version: 1\nrules:\n  - drop: '"+src+"'\n"))
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", src, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want %q", src, err, want)
		}
	}
}

// TestSetValueNilRefused: a set_value that yields nil for every row, into
// a slot whose codec has no nil, is refused at load.
func TestSetValueNilRefused(t *testing.T) {
	const decls = "version: 1\nslots:\n  - {op: 7, slot: agg, key: int64, value: int64}\n  - {op: 7, slot: o, key: int64, value: \"optional<int64>\"}\nrules:\n"
	if _, err := Parse("t.yaml", []byte(decls+"  - set_value: {op: 7, slot: agg, expr: 'nil'}\n")); err == nil || !strings.Contains(err.Error(), `t.yaml:6:42: rule 1: 'expr' yields nil for every row, and slot "agg" stores int64`) {
		t.Errorf("nil into int64: %v", err)
	}
	for _, rule := range []string{"set_value: {op: 7, slot: agg, expr: '42'}", "set_value: {op: 7, slot: o, expr: 'nil'}"} {
		if _, err := Parse("t.yaml", []byte(decls+"  - "+rule+"\n")); err != nil {
			t.Errorf("%s: %v", rule, err)
		}
	}
}

// TestBytesComparisonHint: a comparison of bytes with a number fails
// naming bytes, and how to compare them.
func TestBytesComparisonHint(t *testing.T) {
	set, err := Parse("t.yaml", []byte("version: 1\nslots:\n  - {op: 7, slot: agg, key: int64, value: int64}\nrules:\n  - drop: 'value > 1000'\n"))
	if err != nil {
		t.Fatal(err)
	}
	var env Env
	if err := set.FillEnv(&env, savepoint.Row{Op: 8, Key: savepoint.EncodeKeyedKey([]byte("x"), []byte("k")), Value: []byte("v")}, 0); err != nil {
		t.Fatal(err)
	}
	var m vm.VM
	_, err = set.Rules[0].Drop.Predicate.Eval(&m, &env)
	if err == nil || !strings.Contains(err.Error(), "[]uint8 is bytes") || !strings.Contains(err.Error(), "declare the slot with a codec that decodes it (an integer codec for a number) and scope the expression to it (") {
		t.Errorf("err = %v", err)
	}
}

// TestCodecCommaHint: a codec cut at its comma by a {...} mapping's plain
// scalar says to quote it; one malformed in a block mapping does not.
func TestCodecCommaHint(t *testing.T) {
	_, err := Parse("t.yaml", []byte("version: 1\nslots:\n  - {op: 7, slot: m, key: string, value: map<string,int64>}\nrules: []\n"))
	if err == nil || !strings.Contains(err.Error(), `(a codec with a comma is quoted in a {...} mapping: value: "map<string,int64>")`) {
		t.Errorf("flow: %v", err)
	}
	_, err = Parse("t.yaml", []byte("version: 1\nslots:\n  - op: 7\n    slot: a\n    value: list<int64\nrules: []\n"))
	if err == nil || !strings.Contains(err.Error(), `parse codec "list<int64"`) || strings.Contains(err.Error(), "quoted") {
		t.Errorf("block: %v", err)
	}
}

// A set_value whose slot is undeclared, declared without a value codec, or
// with a codec that does not parse still has its expression parsed: every
// error of the file is reported in one pass.
func TestSetValueSyntaxReportedWithSlotError(t *testing.T) {
	for _, c := range []struct{ src, slotErr, exprErr string }{
		{"version: 1\nrules:\n  - set_value: {op: 7, slot: tmp, expr: 'value +'}\n",
			`t.yaml:3:30: rule 1: slot "tmp" of op 7 is not declared`, "t.yaml:3:48: rule 1: bad expression in 'expr': unexpected token EOF"},
		{"version: 1\nslots:\n  - {op: 7, slot: tmp, key: string}\nrules:\n  - set_value: {op: 7, slot: tmp, expr: ')'}\n",
			"declared without a 'value' codec", "rule 1: bad expression in 'expr': unexpected token Bracket"},
		{"version: 1\nslots:\n  - {op: 7, slot: tmp, value: \"list<int65>\"}\nrules:\n  - set_value: {op: 7, slot: tmp, expr: ')'}\n",
			`bad codec in 'value'`, "rule 1: bad expression in 'expr': unexpected token Bracket"},
	} {
		_, err := Parse("t.yaml", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.slotErr) || !strings.Contains(err.Error(), c.exprErr) {
			t.Errorf("%s: %v, want both %q and %q", c.src, err, c.slotErr, c.exprErr)
		}
	}
}

// A set_value whose expression yields what its slot does not store names
// both types as the rule language does (bytes, a list), not as
// Go does ([]uint8, []interface {}).
func TestSetValueTypeNames(t *testing.T) {
	for _, c := range []struct{ decl, expr, want string }{
		{"{op: 7, slot: s, key: string, value: \"list<int64>\"}", `"x"`, `'expr' yields string but slot "s" stores a list (codec list<int64>)`},
		{"{op: 7, slot: s, key: string, value: bytes}", `[1, 2]`, `'expr' yields a list but slot "s" stores bytes`},
	} {
		_, err := Parse("t.yaml", []byte("version: 1\nslots:\n  - "+c.decl+"\nrules:\n  - set_value: {op: 7, slot: s, expr: '"+c.expr+"'}\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s, expr %s: %v, want %q", c.decl, c.expr, err, c.want)
		}
	}
}

// An 'as_of' of epoch milliseconds past int64, which YAML reads as a
// float, is said to be out of range, not to be a float.
func TestAsOfOutOfRange(t *testing.T) {
	_, err := Parse("t.yaml", []byte("version: 1\nslots: [{op: 7, slot: s, ttl: true}]\nrules:\n  - purge_expired: {as_of: 99999999999999999999}\n"))
	if err == nil || !strings.Contains(err.Error(), "t.yaml:4:28: rule 1: 'as_of' 99999999999999999999 is out of the range of epoch milliseconds") {
		t.Errorf("%v", err)
	}
}

// A filter not scoped to one declared slot, which no typing of the rows
// it can reach lets type-check, is warned of (scoped to the slot it is
// refused); one that some of them let type-check is not.
func TestUntypableFilterWarnings(t *testing.T) {
	const decls = "slots:\n  - {op: 7, slot: a, key: string, value: int64}\n  - {op: 8, slot: a, key: string, value: string}\n"
	const warned = "can hold for no row it reaches"
	for _, c := range []struct {
		rule string
		want string // "" for no such warning
	}{
		{`drop: 'op == 7 && slot == "a" && value == "5"'`, `t.yaml:6:44: rule 1: 'drop' can hold for no row it reaches: typed as those rows are (slot "a" of op 7 (declaration 1: key string, value int64)), it does not type-check: invalid operation: == (mismatched types int64 and string)`},
		{`drop: {op: 7, expr: 'value == "x"'}`, `slot "a" of op 7 (declaration 1: key string, value int64); rows of slots no declaration describes (key a string, value bytes)), it does not type-check`},
		{`keep: 'slot == "a" && op == 7 && value > "3"'`, `'keep' can hold for no row it reaches`},
		{`drop: 'slot == "a" && value == "5"'`, ""},        // op 8's slot a holds strings
		{`drop: 'value == 5 || slot == "b"'`, ""},          // op 7's values are integers
		{`drop: 'op == 7 && value > 3'`, ""},               // so are they here
		{`drop: 'op == 7 && op == 8 && value == "x"'`, ""}, // reaches no row: not this warning's
		{`drop: 'slot == "zz" && value == 5'`, "(rows of slots no declaration describes (key a string, value bytes)), it does not type-check: invalid operation: == (mismatched types []uint8 and int)"},
		{`drop: 'op == 7 && slot == "a" && value != nil'`, ""}, // compiles
	} {
		set, err := Parse("t.yaml", []byte("version: 1\n"+decls+"rules:\n  - "+c.rule+"\n"))
		if err != nil {
			t.Fatalf("%s: %v", c.rule, err)
		}
		var got []string
		for _, w := range set.Warnings {
			if strings.Contains(w.String(), warned) {
				got = append(got, w.String())
			}
		}
		switch {
		case c.want == "" && len(got) > 0:
			t.Errorf("%s: warned %q", c.rule, got)
		case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
			t.Errorf("%s: warnings %q, want one holding %q", c.rule, got, c.want)
		}
	}
	// Declarations typed alike are listed, a few of them.
	var many strings.Builder
	many.WriteString("version: 1\nslots:\n")
	for op := 1; op <= 9; op++ {
		fmt.Fprintf(&many, "  - {op: %d, slot: a, key: string, value: int64}\n", op)
	}
	many.WriteString("rules:\n  - drop: 'slot == \"a\" && value == \"x\"'\n")
	set, err := Parse("t.yaml", []byte(many.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Warnings) != 1 || !strings.Contains(set.Warnings[0].String(), "; and 6 more), it does not type-check") {
		t.Errorf("warnings %v, want one listing 4 declarations and 6 more", set.Warnings)
	}
}

// TestSyntaxOnlyAfterBadDeclaration: an expression whose types come from a
// declaration that has an error is checked for its syntax alone (the types
// of an undeclared slot would give errors of their own), and a warning says
// what was not checked; a syntax error is still reported.
func TestSyntaxOnlyAfterBadDeclaration(t *testing.T) {
	const decls = "version: 1\nslots:\n  - {op: 7, slot: c, key: int46, value: int64}\nrules:\n"
	for _, tc := range []struct {
		name, rule string
		problems   int
	}{
		{"set_value", `  - set_value: {op: 7, slot: c, expr: 'value * "a"'}`, 1},
		{"scoped drop", `  - drop: {op: 7, slot: c, expr: 'value * "a" > 1'}`, 1},
		{"scoped keep with a syntax error", `  - keep: {op: 7, slot: c, expr: 'value >'}`, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("r.yaml", []byte(decls+tc.rule+"\n"))
			var errs *Errors
			if !errors.As(err, &errs) {
				t.Fatalf("err = %v", err)
			}
			if errs.Len() != tc.problems || strings.Contains(err.Error(), "mismatched types") {
				t.Errorf("%d problems, want %d (the declaration's, and a syntax error):\n%v", errs.Len(), tc.problems, err)
			}
			if len(errs.Warnings) != 1 || !strings.Contains(errs.Warnings[0].String(), "rule 1: 'expr' is checked for its syntax alone: the declaration of slot \"c\" of op 7 has an error") {
				t.Errorf("warnings: %v", errs.Warnings)
			}
		})
	}
}

// A keys file that cannot be read is a problem of the rule file that
// unwraps to the read's error: errors.Is tells a missing file (to retry,
// or to report as such) from the rule file's own mistakes, as for a
// missing rule file.
func TestKeysFileReadErrorUnwraps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.yaml")
	src := "version: 1\nrules:\n  - purge_keys: {keys_file: nope.txt}\n  - drop: 'op == 1'\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing keys file: %v does not unwrap to fs.ErrNotExist", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Rule != 1 || e.Key != "keys_file" {
		t.Errorf("missing keys file: %#v", e)
	}
	if _, err := Load(filepath.Join(dir, "none.yaml")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing rule file: %v", err)
	}
	if _, err := Parse("t.yaml", []byte("version: 1\nrules:\n  - drop_slot: {op: 1}\n")); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a mistake of the rule file: %v", err)
	}
}

// An int64 key out of range is said to be so, inline as in a keys file,
// with how a uint64 key of 2^63 or more is listed (the int64 of its 8
// bytes); an inline key that is no scalar is named by its place in the
// list; and a uint64 key listed so matches what a uint64 slot stores.
func TestPurgeKeysListMessages(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte("18446744073709551615\n99999999999999999999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "r.yaml")
	src := `version: 1
rules:
  - purge_keys: {keys: [18446744073709551615, "9223372036854775808", 1.5, null], codec: int64}
  - purge_keys: {keys: [a, null, [b]]}
  - purge_keys: {keys_file: big.txt, codec: int64}
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	got := problemLines(t, err)
	want := []string{
		`r.yaml:3:25: key 1 is out of int64 range: "18446744073709551615" (a uint64 key: say 'codec: uint64', or list it as the int64 of its 8 bytes, the key minus 2^64: -1)`,
		`r.yaml:3:47: key 2 is out of int64 range: "9223372036854775808" (a uint64 key: say 'codec: uint64', or list it as the int64 of its 8 bytes, the key minus 2^64: -9223372036854775808)`,
		`r.yaml:3:70: key 3 is not a decimal int64: "1.5"`,
		`r.yaml:3:75: key 4 in 'keys' must be a decimal int64, got null`,
		`r.yaml:4:28: key 2 in 'keys' must be a string, got null`,
		`r.yaml:4:34: key 3 in 'keys' must be a string, got a list`,
		`big.txt:1:1: invalid int64 key "18446744073709551615": out of int64 range (a uint64 key: say 'codec: uint64', or list it as the int64 of its 8 bytes, the key minus 2^64: -1)`,
		`big.txt:2:1: invalid int64 key "99999999999999999999": out of int64 range`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	set, err := Parse("t.yaml", []byte("version: 1\nrules:\n  - purge_keys: {keys: [-1], codec: int64}\n"))
	if err != nil {
		t.Fatal(err)
	}
	u, err := codec.Parse("uint64")
	if err != nil {
		t.Fatal(err)
	}
	key, err := u.Encode(uint64(18446744073709551615))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := set.Rules[0].PurgeKeys.Match(key, false); !ok {
		t.Errorf("the int64 key -1 does not match the uint64 key 18446744073709551615 (%x)", key)
	}
}

// The unsigned codecs: uint64 keys (up to 2^64-1, listed as they are) and
// uint32 keys (4 bytes), inline and in a keys file, parsed within their
// range, negative ones refused; each matches what a slot of its codec
// stores, is shown as the decimal listed, and fits that slot's codec.
func TestPurgeKeysUnsignedCodecs(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"u64.txt":     "18446744073709551615\n  7 \n+9\n",
		"u32.txt":     "4294967295\n-00\n",
		"u64bad.txt":  "-1\n18446744073709551616\nx\n",
		"u32bad.txt":  "4294967296\n-0x1\n",
		"u32dupe.txt": "5\n05\n+5\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	load := func(rules string) (*Set, error) {
		path := filepath.Join(dir, "r.yaml")
		if err := os.WriteFile(path, []byte("version: 1\nrules:\n"+rules), 0o644); err != nil {
			t.Fatal(err)
		}
		return Load(path)
	}
	_, err := load(`  - purge_keys: {keys: [-1, 18446744073709551616, "3 4"], codec: uint64}
  - purge_keys: {keys: [4294967296, -7], codec: uint32}
  - purge_keys: {keys_file: u64bad.txt, codec: uint64}
  - purge_keys: {keys_file: u32bad.txt, codec: uint32}
`)
	got := problemLines(t, err)
	want := []string{
		`r.yaml:3:25: key 1 is negative: "-1" (a uint64 key is 0 or more)`,
		`r.yaml:3:29: key 2 is out of uint64 range: "18446744073709551616"`,
		`r.yaml:3:51: key 3 is not a decimal uint64: "3 4"`,
		`r.yaml:4:25: key 1 is out of uint32 range: "4294967296"`,
		`r.yaml:4:37: key 2 is negative: "-7" (a uint32 key is 0 or more)`,
		`u64bad.txt:1:1: invalid uint64 key "-1": negative (a uint64 key is 0 or more)`,
		`u64bad.txt:2:1: invalid uint64 key "18446744073709551616": out of uint64 range`,
		`u64bad.txt:3:1: invalid uint64 key "x": not a decimal integer`,
		`u32bad.txt:1:1: invalid uint32 key "4294967296": out of uint32 range`,
		`u32bad.txt:2:1: invalid uint32 key "-0x1": not a decimal integer`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	set, err := load(`  - purge_keys: {keys: [18446744073709551615, "-0"], codec: uint64}
  - purge_keys: {keys_file: u64.txt, codec: uint64}
  - purge_keys: {keys: [4294967295, "+12"], codec: uint32}
  - purge_keys: {keys_file: u32.txt, codec: uint32}
  - purge_keys: {keys_file: u32dupe.txt, codec: uint32}
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rule    int
		codec   string
		display []string
	}{
		{0, "uint64", []string{"18446744073709551615", "0"}},
		{1, "uint64", []string{"18446744073709551615", "7", "9"}},
		{2, "uint32", []string{"4294967295", "12"}},
		{3, "uint32", []string{"4294967295", "0"}},
		{4, "uint32", []string{"5"}},
	} {
		p := set.Rules[c.rule].PurgeKeys
		var shown []string
		for i := range p.Keys {
			shown = append(shown, p.Display(i))
		}
		if !slices.Equal(shown, c.display) {
			t.Errorf("rule %d: keys %q, want %q", c.rule+1, shown, c.display)
		}
		kc, err := codec.Parse(c.codec)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range c.display {
			u, _ := strconv.ParseUint(d, 10, 64)
			var v any = u
			if c.codec == "uint32" {
				v = uint32(u)
			}
			key, err := kc.Encode(v)
			if err != nil {
				t.Fatal(err)
			}
			if j, ok := p.Match(key, false); !ok || j != i {
				t.Errorf("rule %d: the %s key %s (%x) matches %d, %v; want key %d", c.rule+1, c.codec, d, key, j, ok, i)
			}
			if mayHave(p, key) == 0 {
				t.Errorf("rule %d: the filter does not let the %s key %s through", c.rule+1, c.codec, d)
			}
		}
	}
	if set.Rules[4].PurgeKeys.Duplicates != 2 {
		t.Errorf("duplicates %d, want 2 (5, 05 and +5 are one uint32 key)", set.Rules[4].PurgeKeys.Duplicates)
	}
	for _, c := range []struct {
		slot, purge string
		fits        bool
	}{
		{"uint64", "uint64", true}, {"int64", "uint64", true}, {"uint64", "int64", true},
		{"uint32", "uint32", true}, {"uint32", "int64", false}, {"int64", "uint32", false},
		{"string", "uint32", false}, {"uint32", "string", false},
	} {
		if got := purgeCodecFits(c.slot, c.purge); got != c.fits {
			t.Errorf("purgeCodecFits(%s, %s) = %v, want %v", c.slot, c.purge, got, c.fits)
		}
	}
}

// mayHave asks p's filter, as a purge's scan does, about one key: 1 when
// it lets the key through.
func mayHave(p *PurgeKeysSpec, key []byte) int {
	n := 0
	p.MayMatchColumn(key, []int32{0, int32(len(key))}, 0, 0, func(int) { n++ })
	return n
}

// problemLines returns the problems of err, a load's *Errors, as
// "file:line:col: message" with the file's base name.
func problemLines(t *testing.T, err error) []string {
	t.Helper()
	var errs *Errors
	if !errors.As(err, &errs) {
		t.Fatalf("load: %v", err)
	}
	var got []string
	for _, e := range errs.List {
		got = append(got, fmt.Sprintf("%s:%d:%d: %s", filepath.Base(e.File), e.Line, e.Col, e.Msg))
	}
	return got
}
