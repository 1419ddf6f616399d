package rules

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// fixedNow is the clock every test parses with.
var fixedNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func testOpts() ParseOptions { return ParseOptions{Now: func() time.Time { return fixedNow }} }

const corpusDir = "testdata/rules"

// badCorpus maps every testdata/rules/*.bad.yaml to the messages its load
// must report (substrings of the error text, each with file:line:col).
// wantCount, when set, is the exact number of problems.
var badCorpus = map[string]struct {
	want      []string
	wantCount int
}{
	"unmatchable-slot.bad.yaml": {want: []string{
		`unmatchable-slot.bad.yaml:3:30: rule 1: 'slot' can never match a slot: "a|b" holds '|' (byte 1), the separator that ends a slot name in a stored key`,
		`unmatchable-slot.bad.yaml:4:35: rule 2: 'slot' can never match a slot: "c|d" holds '|' (byte 1)`,
		`unmatchable-slot.bad.yaml:5:25: rule 3: 'slot' can never match a slot: "e|f" holds '|' (byte 1)`,
		`unmatchable-slot.bad.yaml:6:32: rule 4: 'from' can never match a slot: "g|h" holds '|' (byte 1)`}, wantCount: 4},
	"unknown-top-key.bad.yaml": {want: []string{
		"unknown-top-key.bad.yaml:3:1: unknown key 'rulez' in the rule file (did you mean 'rules'?)"}, wantCount: 1},
	"unknown-key-keep.bad.yaml": {want: []string{
		"unknown-key-keep.bad.yaml:3:19: rule 1: unknown key 'exp' in 'keep'",
		"unknown-key-keep.bad.yaml:3:5: rule 1: missing 'expr' in 'keep'"}},
	"unknown-key-drop.bad.yaml": {want: []string{
		`unknown-key-drop.bad.yaml:8:7: rule 1 ("scoped"): unknown key 'wehre' in 'drop' (want 'op', 'uid', 'slot', 'expr')`}, wantCount: 1},
	"unknown-key-drop_operator.bad.yaml": {want: []string{
		"unknown-key-drop_operator.bad.yaml:3:29: rule 1: unknown key 'force' in 'drop_operator'"}, wantCount: 1},
	"unknown-key-remap_operator.bad.yaml": {want: []string{
		"unknown-key-remap_operator.bad.yaml:3:40: rule 1: unknown key 'merge_into' in 'remap_operator' (want 'from', 'from_uid', 'to', 'to_uid', 'merge')"}, wantCount: 1},
	"unknown-key-rename_slot.bad.yaml": {want: []string{
		"unknown-key-rename_slot.bad.yaml:3:26: rule 1: unknown key 'form' in 'rename_slot' (did you mean 'from'?)",
		"unknown-key-rename_slot.bad.yaml:3:5: rule 1: missing 'from' in 'rename_slot'"}, wantCount: 2},
	"unknown-key-drop_slot.bad.yaml": {want: []string{
		`unknown-key-drop_slot.bad.yaml:6:35: rule 3 ("purge-old"): unknown key 'wehre' in 'drop_slot'`}, wantCount: 1},
	"unknown-key-purge_keys.bad.yaml": {want: []string{
		"unknown-key-purge_keys.bad.yaml:3:32: rule 1: unknown key 'codecs' in 'purge_keys' (did you mean 'codec'?)"}, wantCount: 1},
	"unknown-key-purge_expired.bad.yaml": {want: []string{
		"unknown-key-purge_expired.bad.yaml:5:21: rule 1: unknown key 'asof' in 'purge_expired' (did you mean 'as_of'?)",
		"unknown-key-purge_expired.bad.yaml:5:5: rule 1: missing 'as_of' in 'purge_expired'"}, wantCount: 2},
	"unknown-key-set_value.bad.yaml": {want: []string{
		"unknown-key-set_value.bad.yaml:5:54: rule 1: unknown key 'codec' in 'set_value'"}, wantCount: 1},
	"unknown-key-set_version.bad.yaml": {want: []string{
		"unknown-key-set_version.bad.yaml:3:51: rule 1: unknown key 'versoin' in 'set_version' (did you mean 'version'?)",
		"unknown-key-set_version.bad.yaml:3:5: rule 1: missing 'version' in 'set_version'"}, wantCount: 2},
	"unknown-key-drop_version.bad.yaml": {want: []string{
		"unknown-key-drop_version.bad.yaml:3:47: rule 1: unknown key 'slot' in 'drop_version'"}, wantCount: 1},
	"unknown-key-rescale.bad.yaml": {want: []string{
		"unknown-key-rescale.bad.yaml:3:31: rule 1: unknown key 'subtasks' in 'rescale'"}, wantCount: 1},
	"unknown-key-slot-decl.bad.yaml": {want: []string{
		"unknown-key-slot-decl.bad.yaml:3:38: slot 1: unknown key 'tll' in slot declaration (did you mean 'ttl'?)"}, wantCount: 1},
	"wrong-type-string-for-int.bad.yaml": {want: []string{
		`wrong-type-string-for-int.bad.yaml:3:25: rule 1: 'op' must be a non-negative integer, got string "12"`}, wantCount: 1},
	"wrong-type-list-for-map.bad.yaml": {want: []string{
		"wrong-type-list-for-map.bad.yaml:3:16: rule 1: 'drop_slot' must be a mapping, got a list"}, wantCount: 1},
	"wrong-type-bool.bad.yaml": {want: []string{
		`wrong-type-bool.bad.yaml:3:30: slot 1: 'ttl' must be true or false, got string "yes"`}, wantCount: 1},
	"wrong-type-rules.bad.yaml": {want: []string{
		"wrong-type-rules.bad.yaml:3:3: 'rules' must be a list of rules, got a mapping"}, wantCount: 1},
	"top-level-list.bad.yaml": {want: []string{
		"top-level-list.bad.yaml:1:1: a rule file must be a mapping with 'version' and 'rules', got a list"}, wantCount: 1},
	"duplicate-key.bad.yaml": {want: []string{
		"duplicate-key.bad.yaml:6:7: rule 1: duplicate key 'slot' in 'drop_slot' (first at line 5:7)"}, wantCount: 1},
	"duplicate-top-key.bad.yaml": {want: []string{
		"duplicate-top-key.bad.yaml:3:1: duplicate key 'version' in the rule file (first at line 1:1)"}, wantCount: 1},
	"second-document.bad.yaml": {want: []string{
		"second-document.bad.yaml:4:1: a second YAML document is not allowed"}, wantCount: 1},
	"two-kinds.bad.yaml": {want: []string{
		`two-kinds.bad.yaml:5:5: rule 1 ("confused"): rule has two kinds, 'keep' and 'drop'`}, wantCount: 1},
	"no-kind.bad.yaml": {want: []string{
		`no-kind.bad.yaml:4:5: rule 2 ("lonely"): rule has no kind: give one of 'keep', 'drop'`}, wantCount: 1},
	"misspelt-kind.bad.yaml": {want: []string{
		"misspelt-kind.bad.yaml:3:5: rule 1: unknown key 'purge_key' in a rule (did you mean 'purge_keys'?)"}, wantCount: 1},
	"version-missing.bad.yaml": {want: []string{
		"version-missing.bad.yaml:1:1: missing 'version' (want 'version: 1' at the top level)"}, wantCount: 1},
	"version-2.bad.yaml": {want: []string{
		"version-2.bad.yaml:1:10: unsupported 'version' 2: this sptool reads version 1"}, wantCount: 1},
	"version-string.bad.yaml": {want: []string{
		`version-string.bad.yaml:1:10: 'version' must be an integer, got string "1"`}, wantCount: 1},
	"bad-expression.bad.yaml": {want: []string{
		"bad-expression.bad.yaml:3:41: rule 1: bad expression in 'drop': invalid operation: >= (mismatched types int and string)"}, wantCount: 1},
	"bad-expression-unknown-name.bad.yaml": {want: []string{
		"bad-expression-unknown-name.bad.yaml:3:24: rule 1: bad expression in 'keep': unknown name keygroup (did you mean 'key_group'?)"}, wantCount: 1},
	"bad-expression-block.bad.yaml": {want: []string{
		"bad-expression-block.bad.yaml:5:19: rule 1: bad expression in 'drop': invalid operation: > (mismatched types int and string)"}, wantCount: 1},
	"bad-expression-syntax.bad.yaml": {want: []string{
		"bad-expression-syntax.bad.yaml:3:21: rule 1: bad expression in 'keep': unexpected token EOF"}, wantCount: 1},
	"non-boolean-filter.bad.yaml": {want: []string{
		"non-boolean-filter.bad.yaml:3:12: rule 1: 'keep' must be a boolean expression: expected bool, but got int"}, wantCount: 1},
	"rename-slot-pipe.bad.yaml": {want: []string{
		`rename-slot-pipe.bad.yaml:3:41: rule 1: 'to': invalid slot name "agg|v2": byte 3 is '|'`}, wantCount: 1},
	"rename-slot-same.bad.yaml": {want: []string{
		`rename-slot-same.bad.yaml:3:41: rule 1: 'from' and 'to' are the same slot "agg"; nothing to rename`}, wantCount: 1},
	"unknown-codec.bad.yaml": {want: []string{
		`unknown-codec.bad.yaml:3:43: slot 1: bad codec in 'value': parse codec "int65"`}, wantCount: 1},
	"malformed-codec.bad.yaml": {want: []string{
		`malformed-codec.bad.yaml:6:12: slot 1: bad codec in 'value': parse codec "map<string"`}, wantCount: 1},
	"keys-file-missing.bad.yaml": {want: []string{
		`keys-file-missing.bad.yaml:4:29: rule 1 ("erasure"): read keys file "no-such-keys.txt": stat testdata/rules/no-such-keys.txt: no such file or directory`}, wantCount: 1},
	"keys-file-bad-int64.bad.yaml": {want: []string{
		`bad-int64-keys.txt:3:1: rule 1 ("erasure"): invalid int64 key "4x2": not a decimal integer`,
		`bad-int64-keys.txt:6:1: rule 1 ("erasure"): invalid int64 key "99999999999999999999": out of int64 range`}, wantCount: 2},
	"set-value-undeclared.bad.yaml": {want: []string{
		`set-value-undeclared.bad.yaml:5:30: rule 1: slot "counts" of op 7 is not declared under 'slots:'; set_value needs its value codec`}, wantCount: 1},
	"set-value-no-value-codec.bad.yaml": {want: []string{
		`set-value-no-value-codec.bad.yaml:5:30: rule 1: slot "agg" of op 7 is declared without a 'value' codec (slot 1, line 3)`}, wantCount: 1},
	"set-value-erase-empty-scalar.bad.yaml": {want: []string{
		`set-value-erase-empty-scalar.bad.yaml:5:69: rule 1: 'erase_empty' needs a list or map value codec; slot "agg" of op 7 stores int64`}, wantCount: 1},
	"set-value-type-error.bad.yaml": {want: []string{
		"set-value-type-error.bad.yaml:5:48: rule 1: bad expression in 'expr': invalid operation: + (mismatched types int64 and string)"}, wantCount: 1},
	"set-value-float-result.bad.yaml": {want: []string{
		`set-value-float-result.bad.yaml:5:42: rule 1: 'expr' yields float64 but slot "agg" stores int64 (codec int64) (wrap it in int(), which fails on a value that does not fit)`}, wantCount: 1},
	"keep-scoped-type-error.bad.yaml": {want: []string{
		"keep-scoped-type-error.bad.yaml:5:43: rule 1: bad expression in 'expr': invalid operation: == (mismatched types int64 and string)"}, wantCount: 1},
	"op-and-uid.bad.yaml": {want: []string{
		"op-and-uid.bad.yaml:3:24: rule 1: both 'op' and 'uid' given in 'drop_slot'; name the operator once"}, wantCount: 1},
	"no-op.bad.yaml": {want: []string{
		"no-op.bad.yaml:3:5: rule 1: missing 'op' in 'drop_slot' (give the operator as 'op: <id>' or 'uid: <uid>')"}, wantCount: 1},
	"slot-op-and-uid.bad.yaml": {want: []string{
		"slot-op-and-uid.bad.yaml:3:13: slot 1: both 'op' and 'uid' given in slot declaration"}, wantCount: 1},
	"remap-same.bad.yaml": {want: []string{
		"remap-same.bad.yaml:3:42: rule 1: 'from' and 'to' are the same operator"}, wantCount: 1},
	"purge-expired-no-as-of.bad.yaml": {want: []string{
		"purge-expired-no-as-of.bad.yaml:5:5: rule 1: missing 'as_of' in 'purge_expired'"}, wantCount: 1},
	"purge-expired-bad-date.bad.yaml": {want: []string{
		`purge-expired-bad-date.bad.yaml:5:28: rule 1: 'as_of' must be an RFC 3339 time such as "2026-11-29T00:00:00Z", epoch milliseconds, or "now"; got string "2026-13-01T00:00:00Z"`}, wantCount: 1},
	"purge-expired-no-ttl.bad.yaml": {want: []string{
		"purge-expired-no-ttl.bad.yaml:5:5: rule 1: no slot is declared 'ttl: true'; purge_expired only affects slots declared with 'ttl: true'"}, wantCount: 1},
	"purge-expired-slot-not-ttl.bad.yaml": {want: []string{
		`purge-expired-slot-not-ttl.bad.yaml:6:5: rule 1: slot "seen" of op 7 is not declared 'ttl: true'`}, wantCount: 1},
	"purge-keys-both.bad.yaml": {want: []string{
		"purge-keys-both.bad.yaml:3:29: rule 1: both 'keys' and 'keys_file' given in 'purge_keys'; use one"}, wantCount: 1},
	"purge-keys-bad-codec.bad.yaml": {want: []string{
		`purge-keys-bad-codec.bad.yaml:3:36: rule 1: 'codec' must be 'string', 'int64', 'uint64' or 'uint32', got "double"`}, wantCount: 1},
	"rescale-not-last.bad.yaml": {want: []string{
		"rescale-not-last.bad.yaml:3:5: rule 1: rescale must be the last rule (rule 2 follows it at line 4)"}, wantCount: 1},
	"rescale-parallelism-0.bad.yaml": {want: []string{
		"rescale-parallelism-0.bad.yaml:3:28: rule 1: 'parallelism' must be in 1..65535, got 0"}, wantCount: 1},
	"rescale-parallelism-big.bad.yaml": {want: []string{
		"rescale-parallelism-big.bad.yaml:3:28: rule 1: 'parallelism' must be in 1..65535, got 65536"}, wantCount: 1},
	"rescale-overlap.bad.yaml": {want: []string{
		`rescale-overlap.bad.yaml:6:22: rule 1: subtasks "3-5" overlap or precede the previous group's "0-3" (line 5)`}, wantCount: 1},
	"rescale-bad-range.bad.yaml": {want: []string{
		`rescale-bad-range.bad.yaml:5:22: rule 1: bad 'subtasks' "4-2": want "a-b" or "a"`}, wantCount: 1},
	"op-too-large.bad.yaml": {want: []string{
		"op-too-large.bad.yaml:3:25: rule 1: 'op' is out of range for a 64-bit unsigned integer: 18446744073709551616"}, wantCount: 1},
	"rescale-groups-empty.bad.yaml": {want: []string{
		"rescale-groups-empty.bad.yaml:3:23: rule 1: 'groups' must be a non-empty list of {subtasks, parallelism}, got an empty list"}, wantCount: 1},
	"rescale-both.bad.yaml": {want: []string{
		"rescale-both.bad.yaml:3:31: rule 1: both 'parallelism' and 'groups' given in 'rescale'; use one"}, wantCount: 1},
	"set-version-out-of-range.bad.yaml": {want: []string{
		"set-version-out-of-range.bad.yaml:3:60: rule 1: 'version' is out of range for a 32-bit unsigned integer: 4294967296"}, wantCount: 1},
	"state-type-pipe.bad.yaml": {want: []string{
		`state-type-pipe.bad.yaml:3:39: rule 1: 'state_type' must not contain '|' or a newline, got "User|Counter"`}, wantCount: 1},
	"tab-indent.bad.yaml": {want: []string{
		"tab-indent.bad.yaml:3:1: YAML syntax error: found character that cannot start any token (a tab; indent with spaces)"}, wantCount: 1},
	"syntax-error.bad.yaml": {want: []string{
		"syntax-error.bad.yaml:4:3: YAML syntax error: did not find expected ',' or '}'"}, wantCount: 1},
	"empty.bad.yaml": {want: []string{
		"empty.bad.yaml:1:1: empty rule file: want 'version: 1' and 'rules:'"}, wantCount: 1},
	"comments-only.bad.yaml": {want: []string{
		"comments-only.bad.yaml:1:1: empty rule file"}, wantCount: 1},
	"broadcast.bad.yaml": {want: []string{
		`broadcast.bad.yaml:3:32: slot 1: slot "rules" is declared 'broadcast: true': broadcast state is one row at key 0xFF slot '|' whose value is the whole state, with no user key, TTL stamp or elements, so 'key' does not apply`,
		`broadcast.bad.yaml:4:29: slot 2: slot "r2" is declared 'broadcast: true': broadcast state is one row at key 0xFF slot '|' whose value is the whole state, with no user key, TTL stamp or elements, so 'ttl' does not apply`,
		`broadcast.bad.yaml:6:20: slot 4: slot "r3" of op 42 is already declared (slot 3, line 5): a declaration describes either the slot's keyed rows or, 'broadcast: true', its broadcast state, not both`,
		// The empty slot name's bad declaration is its only error: the
		// set_value on it is not told the slot is undeclared.
		`broadcast.bad.yaml:8:29: slot 6: slot "" is declared 'broadcast: true': broadcast state is one row at key 0xFF slot '|' whose value is the whole state, with no user key, TTL stamp or elements, so 'key' does not apply`,
		`broadcast.bad.yaml:10:60: rule 1: 'erase_empty' erases a keyed row whose collection became empty, as clink's keyed collections do; slot "r4" of op 42 is declared 'broadcast: true' (slot 5, line 7), whose row clink keeps when empty`,
	}, wantCount: 5},
	"duplicate-slot.bad.yaml": {want: []string{
		`duplicate-slot.bad.yaml:5:19: slot 3: slot "agg" of op 7 is already declared (slot 1, line 3)`}, wantCount: 1},
	"rename-into-vacated.bad.yaml": {want: []string{
		`rename-into-vacated.bad.yaml:6:72: rule 2 ("counters take the name a"): slot "b" of op 7 is not declared, but "a" was (slot 1 at line 3) until rule 1 moved it away: declarations are looked up by name, so the rows renamed here would be decoded with it; declare slot "b" of op 7, or rename in another order`}, wantCount: 1},
	"remap-into-vacated.bad.yaml": {want: []string{
		`rule 2: op 7 had slot "a" declared (slot 1 at line 3) until rule 1 moved it away: declarations are looked up by name, so op 8's rows of that slot, remapped here, would be decoded with it; declare slot "a" of op 8, or remap in another order`}, wantCount: 1},
	"alias.bad.yaml": {want: []string{
		"alias.bad.yaml:4:16: rule 2: YAML alias '*tmp' is not supported in a rule file"}, wantCount: 1},
	"name-wrong-type.bad.yaml": {want: []string{
		"name-wrong-type.bad.yaml:3:11: rule 1: 'name' must be a string, got a list"}, wantCount: 1},
	// A rule's error does not hide its others: the keys are read, and an
	// expression's syntax checked, when its scope or codec has one.
	"one-pass.bad.yaml": {want: []string{
		`one-pass.bad.yaml:6:29: rule 1: read keys file "no-such-keys.txt": stat testdata/rules/no-such-keys.txt: no such file or directory`,
		`one-pass.bad.yaml:6:54: rule 1: 'codec' must be 'string', 'int64', 'uint64' or 'uint32', got "strnig"`,
		`one-pass.bad.yaml:7:29: rule 2: read keys file "no-such-keys.txt"`,
		`one-pass.bad.yaml:7:53: rule 2: 'slot' can never match a slot: "a|b"`,
		`one-pass.bad.yaml:8:29: rule 3: read keys file "no-such-keys.txt"`,
		`one-pass.bad.yaml:8:51: rule 3: 'op' must be a non-negative integer, got string "x"`,
		`one-pass.bad.yaml:9:24: rule 4: 'keys' must be a list of keys, got string "k"`,
		`one-pass.bad.yaml:9:36: rule 4: 'codec' must be 'string', 'int64', 'uint64' or 'uint32', got "int32"`,
		`one-pass.bad.yaml:10:16: rule 5: 'op' must be a non-negative integer, got string "x"`,
		`one-pass.bad.yaml:10:30: rule 5: bad expression in 'expr': unexpected token EOF`,
		`one-pass.bad.yaml:11:21: rule 6: 'op' must be a non-negative integer, got string "x"`,
		`one-pass.bad.yaml:11:48: rule 6: bad expression in 'expr': unexpected token EOF`,
		`one-pass.bad.yaml:12:46: rule 7: bad expression in 'expr': invalid operation: + (mismatched types int64 and string)`,
		`one-pass.bad.yaml:12:67: rule 7: 'erase_empty' needs a list or map value codec; slot "a" of op 7 stores int64`,
	}, wantCount: 14},
	"many-errors.bad.yaml": {want: []string{
		`many-errors.bad.yaml:3:55: slot 1: 'ttl' must be true or false, got string "maybe"`,
		`many-errors.bad.yaml:6:35: rule 1 ("purge-old"): unknown key 'wehre' in 'drop_slot'`,
		"many-errors.bad.yaml:7:17: rule 2: bad expression in 'keep': invalid operation: == (mismatched types string and int)",
		`many-errors.bad.yaml:8:39: rule 3: 'to': invalid slot name "b|c"`,
		// A rescale rule with an error of its own is placed too.
		"many-errors.bad.yaml:9:5: rule 4: rescale must be the last rule (rule 5 follows it at line 10)",
		"many-errors.bad.yaml:9:28: rule 4: 'parallelism' must be in 1..65535, got 0",
		"many-errors.bad.yaml:10:5: rule 5: missing 'op' in 'drop_operator'",
	}, wantCount: 7},
}

func TestBadCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.bad.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Fatalf("only %d bad fixtures", len(files))
	}
	onDisk := map[string]bool{}
	for _, f := range files {
		onDisk[filepath.Base(f)] = true
		if _, ok := badCorpus[filepath.Base(f)]; !ok {
			t.Errorf("%s has no entry in badCorpus", f)
		}
	}
	names := make([]string, 0, len(badCorpus))
	for name := range badCorpus {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		tc := badCorpus[name]
		t.Run(name, func(t *testing.T) {
			if !onDisk[name] {
				t.Fatalf("fixture %s does not exist", name)
			}
			set, err := LoadWithOptions(filepath.Join(corpusDir, name), testOpts())
			if err == nil {
				t.Fatalf("loaded without error (%d rules)", len(set.Rules))
			}
			if set != nil {
				t.Errorf("a Set was returned with the error")
			}
			var errs *Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error is %T, not *Errors: %v", err, err)
			}
			text := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("missing %q in:\n%s", w, text)
				}
			}
			if tc.wantCount > 0 && errs.Len() != tc.wantCount {
				t.Errorf("got %d problems, want %d:\n%s", errs.Len(), tc.wantCount, text)
			}
			if n := strings.Count(text, "\n") + 1; n != errs.Len() {
				t.Errorf("Error() has %d lines for %d problems", n, errs.Len())
			}
			for _, e := range errs.List {
				if e.Line < 1 || e.Col < 1 || e.File == "" {
					t.Errorf("problem without a position: %+v", e)
				}
			}
		})
	}
}

func TestGoodCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.good.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("only %d good fixtures", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			set, err := LoadWithOptions(f, testOpts())
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if len(set.Rules) == 0 {
				t.Fatal("no rules")
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			// Parse of the same bytes gives the same digest.
			again, err := ParseWithOptions(f, src, testOpts())
			if err != nil || again.Digest != set.Digest || len(set.Digest) != 64 {
				t.Fatalf("reparse: %v, digest %q vs %q", err, again.Digest, set.Digest)
			}
			for i, r := range set.Rules {
				if r.Index != i+1 || r.Spec() == nil || !r.Kind.Valid() || r.Line < 1 {
					t.Errorf("rule %d malformed: %+v", i+1, r)
				}
			}
		})
	}
}
