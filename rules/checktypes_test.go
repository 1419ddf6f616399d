package rules

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/expr-lang/expr/vm"

	"github.com/sptool/sptool/savepoint"
)

// An expression scoped to a declared slot is type-checked with the types
// of its collections' elements and map entries, its optional's inner
// type and, in a 'ttl: true' slot, an int64 expire_at: what would fail at
// the first row, or read a missing entry field as nil and select the
// wrong rows, fails at load. What type-checks runs on the decoded rows
// ([]any, map entries as maps) as before.
func TestCheckTypesOfCollections(t *testing.T) {
	const decls = `version: 1
slots:
  - {op: 7, slot: mp, key: string, value: "map<string,int64>"}
  - {op: 7, slot: li, key: string, value: "list<int64>"}
  - {op: 7, slot: nest, key: string, value: "list<map<string,list<double>>>"}
  - {op: 7, slot: o, key: string, value: "optional<string>"}
  - {op: 7, slot: pr, key: string, value: "pair<int64,string>"}
  - {op: 7, slot: t, key: string, value: int64, ttl: true}
`
	for _, c := range []struct{ slot, src, want string }{
		{"mp", `any(value, .vlaue == 1)`, "an entry of map<string,int64> (fields key and value) has no field vlaue"},
		{"mp", `any(value, .key > 1)`, "mismatched types string and int"},
		{"li", `value[0] > "a"`, "mismatched types int64 and string"},
		{"nest", `any(value, any(#, .vlaue == nil))`, "an entry of map<string,list<double>> (fields key and value) has no field vlaue"},
		{"nest", `any(value, any(#, any(.value, # == "x")))`, "mismatched types float64 and string"},
		{"o", `value > 3`, "mismatched types string and int"},
		{"t", `expire_at > date("2026-01-01T00:00:00Z")`, "mismatched types int64 and time.Time"},
	} {
		_, err := Parse("r.yaml", []byte(decls+"rules:\n  - drop: {op: 7, slot: "+c.slot+", expr: '"+c.src+"'}\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.src, err, c.want)
		}
	}

	set, err := Parse("r.yaml", []byte(decls+"rules: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	row := func(slot string, key string, v any, ttl ...int64) savepoint.Row {
		b, err := set.SlotDecl(7, slot).ValueCodec.Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		if len(ttl) > 0 {
			b = savepoint.JoinTTL(ttl[0], b)
		}
		return savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte(slot), []byte(key)), Value: b}
	}
	entries := []any{map[string]any{"key": "ab", "value": int64(1)}, map[string]any{"key": "c", "value": int64(5)}}
	for _, c := range []struct {
		r    savepoint.Row
		src  string
		want bool
	}{
		{row("mp", "k", entries), `any(value, .value == 1 && .key startsWith "a")`, true},
		{row("mp", "k", entries), `all(value, .value > 1)`, false},
		{row("mp", "k", entries), `sum(map(value, .value)) == 6 && len(value) == 2`, true},
		{row("li", "k", []any{int64(1), int64(2)}), `sum(value) == 3 && value[1] == 2 && any(value, # > 1)`, true},
		{row("nest", "k", []any{[]any{map[string]any{"key": "x", "value": []any{1.5}}}}), `value[0][0].value[0] > 1.0 && value[0][0].key == "x" && any(value, any(#, any(.value, # == 1.5)))`, true},
		{row("o", "k", nil), `value == nil`, true},
		{row("o", "k", "abc"), `value != nil && value startsWith "a"`, true},
		{row("pr", "k", []any{int64(3), "x"}), `value[0] == 3 && value[1] == "x"`, true},
		{row("t", "k", int64(9), 1767225600000), `expire_at < date("2026-01-02T00:00:00Z").UnixMilli()`, true},
	} {
		k := savepoint.ParseKey(c.r.Key)
		set, err := Parse("r.yaml", []byte(decls+"rules:\n  - drop: {op: 7, slot: "+string(k.Slot)+", expr: '"+c.src+"'}\n"))
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		var env Env
		if err := set.FillEnv(&env, c.r, 0); err != nil {
			t.Fatal(err)
		}
		var m vm.VM
		if got, err := set.Rules[0].Drop.Predicate.Eval(&m, &env); err != nil || got != c.want {
			t.Errorf("%s: %v, %v; want %v", c.src, got, err, c.want)
		}
	}
}

// A set_value over typed collections type-checks and writes what the
// expression computes on the decoded rows.
func TestCheckTypesSetValue(t *testing.T) {
	for _, c := range []struct{ codec, src, in, want string }{
		{"map<string,int64>", `map(value, [.key, .value + 1])`, `[{"key":"a","value":1}]`, `[{"key":"a","value":2}]`},
		{"map<string,int64>", `filter(value, .value > 1)`, `[{"key":"a","value":1},{"key":"b","value":2}]`, `[{"key":"b","value":2}]`},
		{"list<int64>", `map(value, # * 2)`, `[1,2]`, `[2,4]`},
		{"optional<int64>", `value == nil ? 0 : value + 1`, `null`, `0`},
	} {
		set, err := Parse("r.yaml", []byte("version: 1\nslots:\n  - {op: 7, slot: s, key: string, value: \""+c.codec+"\"}\nrules:\n  - set_value: {op: 7, slot: s, expr: '"+c.src+"'}\n"))
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		sv := set.Rules[0].SetValue
		in, err := sv.Decl.ValueCodec.Encode(jsonValue(t, c.in))
		if err != nil {
			t.Fatal(err)
		}
		var env Env
		if err := set.FillEnv(&env, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("s"), []byte("k")), Value: in}, 0); err != nil {
			t.Fatal(err)
		}
		var m vm.VM
		out, err := sv.Apply(&m, &env)
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		want, err := sv.Decl.ValueCodec.Encode(jsonValue(t, c.want))
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != string(want) {
			t.Errorf("%s of %s: %x, want %x (%s)", c.src, c.in, out, want, c.want)
		}
	}
}

// jsonValue decodes JSON with integers as int64, as the codecs decode them.
func jsonValue(t *testing.T, s string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	var conv func(any) any
	conv = func(v any) any {
		switch x := v.(type) {
		case json.Number:
			n, err := x.Int64()
			if err != nil {
				t.Fatal(err)
			}
			return n
		case []any:
			for i := range x {
				x[i] = conv(x[i])
			}
		case map[string]any:
			for k := range x {
				x[k] = conv(x[k])
			}
		}
		return v
	}
	return conv(v)
}

// A field read of a map that lacks the field is an error at run time, in
// an expression the load could not type (not scoped to one declared
// slot), where expr reads it as nil; an optional read, ?., stays nil.
func TestStrictFields(t *testing.T) {
	set, err := Parse("r.yaml", []byte(`version: 1
slots:
  - {op: 7, slot: mp, key: string, value: "map<string,int64>"}
  - {op: 7, slot: li, key: string, value: "list<int64>"}
rules:
  - keep: 'slot != "mp" || any(value, .vlaue == 1)'
  - keep: 'slot != "mp" || any(value, .value == 1)'
  - keep: 'slot != "mp" || any(value, #?.vlaue == nil)'
  - keep: '{"a": 1}["a"] == 1 && date("2026-01-02T00:00:00Z").Year() == 2026'
`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := set.SlotDecl(7, "mp").ValueCodec.Encode([]any{map[string]any{"key": "a", "value": int64(1)}})
	if err != nil {
		t.Fatal(err)
	}
	var env Env
	if err := set.FillEnv(&env, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("mp"), []byte("k")), Value: b}, 0); err != nil {
		t.Fatal(err)
	}
	var m vm.VM
	for i, want := range []string{`no field "vlaue" in a map with the fields key, value`, "true", "true", "true"} {
		got, err := set.Rules[i].Keep.Predicate.Eval(&m, &env)
		s := fmt.Sprint(got)
		if err != nil {
			s = err.Error()
		}
		if !strings.Contains(s, want) {
			t.Errorf("rule %d: %s, want %s", i+1, s, want)
		}
	}
}

// An expression that reads expire_at where no row it sees has a stamp (a
// slot declared without ttl: true, or a rule file with no TTL slot) is a
// load-time error, not a filter that fails on the first row or matches
// nothing.
func TestExpireAtNeedsTTL(t *testing.T) {
	const decls = `version: 1
slots:
  - {op: 7, slot: plain, key: string, value: string}
`
	const ttlDecl = "  - {op: 7, slot: t, key: string, value: int64, ttl: true}\n"
	for _, c := range []struct {
		decls, rule, want string // want "": loads
	}{
		{decls, `drop: {op: 7, slot: plain, expr: 'expire_at < 5'}`, `slot "plain" of op 7 is not declared with 'ttl: true'`},
		{decls, `drop: 'expire_at != nil && expire_at < 5'`, "no slot is declared with 'ttl: true'"},
		{"version: 1\n", `keep: 'expire_at == nil'`, "no slot is declared with 'ttl: true'"},
		{decls, `set_value: {op: 7, slot: plain, expr: 'string(expire_at)'}`, `slot "plain" of op 7 is not declared`},
		{decls, `drop: {op: 7, slot: other, expr: 'expire_at < 5'}`, "no slot is declared with 'ttl: true'"},
		{decls + ttlDecl, `drop: 'expire_at != nil && expire_at < 5'`, ""},
		{decls + ttlDecl, `drop: {op: 7, slot: t, expr: 'expire_at < 5'}`, ""},
		{decls + ttlDecl, `drop: {op: 7, slot: plain, expr: 'expire_at < 5'}`, `slot "plain" of op 7 is not declared`},
		{decls, `drop: {op: 7, slot: plain, expr: 'value == "x"'}`, ""},
		{decls + ttlDecl, `drop: {op: 7, slot: other, expr: 'expire_at < 5'}`, `slot "other" of op 7 is not declared`},
		// A slot a rule before moved away: lint warns that the rule matches nothing.
		{decls + ttlDecl, "rename_slot: {op: 7, from: t, to: t2}\n  - drop: {op: 7, slot: t, expr: 'expire_at < 5'}", ""},
	} {
		_, err := Parse("r.yaml", []byte(c.decls+"rules:\n  - "+c.rule+"\n"))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.rule, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "'expire_at' is nil on every row this expression reads")):
			t.Errorf("%s: %v, want an error with %q", c.rule, err, c.want)
		}
	}
}

// An expression that may see rows of slots without a stamp beside a TTL
// slot's, and compares expire_at without testing it for nil, is warned of
// at load (it fails on the first such row), and the error of that row
// says why; one that tests the stamp, or reads the slot, is not.
func TestExpireAtUnguarded(t *testing.T) {
	const decls = `version: 1
slots:
  - {op: 7, slot: plain, key: string, value: string}
  - {op: 7, slot: t, key: string, value: int64, ttl: true}
rules:
  - `
	const warning = "'expire_at' is nil on the rows of every slot not declared 'ttl: true', which this expression may see"
	for _, c := range []struct {
		rule string
		warn bool
	}{
		{`drop: 'expire_at < 5'`, true},
		{`drop: {op: 7, expr: 'expire_at < 5'}`, true},
		{`keep: 'expire_at >= 5 || key_group > 3'`, true},
		{`drop: 'expire_at != nil && expire_at < 5'`, false},
		{`drop: 'nil != expire_at && expire_at < 5'`, false},
		{`drop: '(expire_at ?? 9) < 5'`, false},
		{`drop: 'slot == "t" && expire_at < 5'`, false},
		{`drop: {op: 7, slot: t, expr: 'expire_at < 5'}`, false},
		{`drop: 'value_bytes == nil'`, false},
	} {
		set, err := Parse("r.yaml", []byte(decls+c.rule+"\n"))
		if err != nil {
			t.Fatalf("%s: %v", c.rule, err)
		}
		warned := slices.ContainsFunc(set.Warnings, func(w *Warning) bool { return strings.Contains(w.Msg, warning) })
		if warned != c.warn {
			t.Errorf("%s: warned %v, want %v (%v)", c.rule, warned, c.warn, set.Warnings)
		}
	}
	set, err := Parse("r.yaml", []byte(decls+"drop: 'expire_at < 5'\n"))
	if err != nil {
		t.Fatal(err)
	}
	var m vm.VM
	var env Env
	if err := set.FillEnv(&env, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("plain"), []byte("k")), Value: []byte("v")}, -1); err != nil {
		t.Fatal(err)
	}
	_, err = set.Rules[0].Drop.Predicate.Eval(&m, &env)
	if err == nil || !strings.Contains(err.Error(), "expire_at is nil on this row, as on every row of a slot not declared 'ttl: true'") {
		t.Errorf("a row without a stamp: %v, want the error to say why", err)
	}
	// A row of the TTL slot whose value is shorter than its stamp: the
	// expression is scoped already, so the error does not say to scope it.
	if err := set.FillEnv(&env, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("t"), []byte("k")), Value: []byte("abc")}, -1); err != nil {
		t.Fatal(err)
	}
	_, err = set.Rules[0].Drop.Predicate.Eval(&m, &env)
	if err == nil || !strings.Contains(err.Error(), "expire_at is nil on this row, whose value (3 bytes) is shorter than the 8-byte stamp") || strings.Contains(err.Error(), "scope the expression") {
		t.Errorf("a TTL row shorter than its stamp: %v, want the error to say so", err)
	}
	// The next row, of a slot without stamps, is told apart again.
	if err := set.FillEnv(&env, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("plain"), []byte("k")), Value: []byte("v")}, -1); err != nil {
		t.Fatal(err)
	}
	if _, err = set.Rules[0].Drop.Predicate.Eval(&m, &env); err == nil || !strings.Contains(err.Error(), "scope the expression") {
		t.Errorf("a row without a stamp after a short one: %v", err)
	}
}

// A row of a TTL slot whose value is shorter than its stamp has no value
// (clink reads it as no state): an expression that fails on the nil value
// says why, whatever its own error, which quotes no codec's type.
func TestShortTTLValueNil(t *testing.T) {
	const decls = `version: 1
slots:
  - {op: 7, slot: t, key: string, value: int64, ttl: true}
  - {op: 7, slot: s, key: string, value: string, ttl: true}
rules:
  - `
	const why = "value is nil on this row, whose value (3 bytes) is shorter than the 8-byte stamp"
	for _, c := range []struct{ slot, expr string }{
		{"t", "value > 5"},
		{"t", "value + 1 > 3"},
		{"s", "len(value) > 0"},
		{"s", "upper(value) == \"X\""},
		{"s", "value + \"x\" == \"y\""},
	} {
		set, err := Parse("r.yaml", []byte(decls+"drop: {op: 7, slot: "+c.slot+", expr: '"+c.expr+"'}\n"))
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		var m vm.VM
		var env Env
		if err := set.FillEnv(&env, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte(c.slot), []byte("k")), Value: []byte("abc")}, -1); err != nil {
			t.Fatal(err)
		}
		_, err = set.Rules[0].Drop.Predicate.Eval(&m, &env)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%s on a TTL row shorter than its stamp: %v, want the error to say why value is nil", c.expr, err)
		}
		// A row with its stamp fails for its own reasons, not this one.
		if err := set.FillEnv(&env, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte(c.slot), []byte("k")), Value: append(savepoint.JoinTTL(1, nil), "\xff\xff\xff\xff\xff\xff\xff\x7f"...)}, -1); err != nil {
			t.Fatal(err)
		}
		if _, err = set.Rules[0].Drop.Predicate.Eval(&m, &env); err != nil && strings.Contains(err.Error(), "value is nil") {
			t.Errorf("%s on a row with its stamp: %v", c.expr, err)
		}
	}
	// An expression reading both: the stamp's explanation, once.
	set, err := Parse("r.yaml", []byte(decls+"drop: {op: 7, slot: t, expr: 'expire_at < 5 && value > 5'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var m vm.VM
	var env Env
	if err := set.FillEnv(&env, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("t"), []byte("k")), Value: []byte("abc")}, -1); err != nil {
		t.Fatal(err)
	}
	_, err = set.Rules[0].Drop.Predicate.Eval(&m, &env)
	if err == nil || strings.Count(err.Error(), "shorter than the 8-byte stamp") != 1 {
		t.Errorf("expire_at and value on a short row: %v, want one explanation", err)
	}
}

// An expression reading value that fails on a TTL row shorter than its
// stamp for another reason (a division by zero, a conversion of the key)
// is not said to fail on the nil value.
func TestShortTTLOtherErrorNotValueNil(t *testing.T) {
	for _, e := range []string{`len(key) % (len(key) - 1) == 0 || value > 5`, `int(key) > 3 || value > 5`} {
		set, err := Parse("r.yaml", []byte("version: 1\nslots:\n  - {op: 7, slot: t, key: string, value: int64, ttl: true}\nrules:\n  - drop: {op: 7, slot: t, expr: '"+e+"'}\n"))
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		var m vm.VM
		var env Env
		if err := set.FillEnv(&env, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("t"), []byte("k")), Value: []byte("abc")}, -1); err != nil {
			t.Fatal(err)
		}
		_, err = set.Rules[0].Drop.Predicate.Eval(&m, &env)
		if err == nil {
			t.Fatalf("%s: no error", e)
		}
		if strings.Contains(err.Error(), "value is nil") {
			t.Errorf("%s: %v, an error not of the nil value said to be", e, err)
		}
	}
}
