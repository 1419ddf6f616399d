package rules

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/expr-lang/expr/vm"

	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/savepoint/codec"
)

// mapSA returns a map<string,int64> value holding the key "a" once for
// each of vs, with that value.
func mapSA(vs ...int64) []byte {
	var entries []any
	for _, v := range vs {
		entries = append(entries, map[string]any{"key": "a", "value": v})
	}
	b, err := codec.MustParse("map<string,int64>").Encode(entries)
	if err != nil {
		panic(err)
	}
	return b
}

// mapAB is a map<string,int64> value holding "a": 1, "b": 2.
var mapAB = func() []byte {
	b, err := codec.MustParse("map<string,int64>").Encode(map[string]any{"a": 1, "b": 2})
	if err != nil {
		panic(err)
	}
	return b
}()

// mapSA1 returns a map<string,int64> value holding "a": 1, n times.
func mapSA1(n int) []byte { return mapSA(slices.Repeat([]int64{1}, n)...) }

func le64(v int64) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, uint64(v))
	return b
}

func ttlValue(at int64, payload []byte) []byte { return append(le64(at), payload...) }

const envRules = `version: 1
slots:
  - {op: 7, slot: agg, key: int64, value: int64}
  - {op: 7, slot: name, key: bytes, value: string}
  - {op: 7, slot: seen, key: string, value: "list<int64>", ttl: true}
  - {op: 7, slot: cart, key: string, ttl: true, composite: true}
  - {op: 7, slot: small, value: uint32}
rules:
  - keep: {op: 7, slot: agg, expr: 'value > 5 && key != 13'}
  - drop: 'expire_at != nil && expire_at <= 1000'
  - set_value: {op: 7, slot: agg, expr: 'value * 100'}
  - set_value: {op: 7, slot: name, expr: 'upper(value) + "!"'}
  - set_value: {op: 7, slot: seen, expr: 'map(value, # + 1)'}
  - set_value: {op: 7, slot: small, expr: 'value * 100000000'}
`

func TestFillEnv(t *testing.T) {
	set := parseOne(t, envRules)
	i64 := codec.MustParse("int64")
	aggKey, _ := i64.Encode(int64(42))
	list, _ := codec.MustParse("list<int64>").Encode([]any{int64(1), int64(2)})
	cases := []struct {
		name    string
		row     savepoint.Row
		subtask int
		want    Env
	}{
		{"declared int64", savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), aggKey), Value: le64(9)}, 3,
			Env{Op: 7, Kind: "keyed", KeyGroup: savepoint.KeyGroupOf(aggKey), Slot: "agg", Key: int64(42), KeyBytes: aggKey, Value: int64(9), ValueBytes: le64(9), Subtask: 3}},
		{"bytes key codec shows a string", savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("name"), []byte("k1")), Value: []byte("bob")}, -1,
			Env{Op: 7, Kind: "keyed", KeyGroup: savepoint.KeyGroupOf([]byte("k1")), Slot: "name", Key: "k1", KeyBytes: []byte("k1"), Value: "bob", ValueBytes: []byte("bob"), Subtask: -1}},
		{"ttl list", savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("seen"), []byte("u")), Value: ttlValue(1000, list)}, 0,
			Env{Op: 7, Kind: "keyed", KeyGroup: savepoint.KeyGroupOf([]byte("u")), Slot: "seen", Key: "u", KeyBytes: []byte("u"), Value: []any{int64(1), int64(2)}, ValueBytes: ttlValue(1000, list), ExpireAt: int64(1000)}},
		{"ttl value too short", savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("seen"), []byte("u")), Value: []byte{1, 2}}, 0,
			Env{Op: 7, Kind: "keyed", KeyGroup: savepoint.KeyGroupOf([]byte("u")), Slot: "seen", Key: "u", KeyBytes: []byte("u"), Value: nil, ValueBytes: []byte{1, 2}, shortTTL: true}},
		{"composite key is the whole key", savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("cart"), []byte("user1\x1fitemA")), Value: ttlValue(5, []byte("x"))}, 0,
			Env{Op: 7, Kind: "keyed", KeyGroup: savepoint.KeyGroupOf([]byte("user1\x1fitemA")), Slot: "cart", Key: "user1\x1fitemA", KeyBytes: []byte("user1\x1fitemA"), Value: []byte("x"), ValueBytes: ttlValue(5, []byte("x")), ExpireAt: int64(5)}},
		{"undeclared slot", savepoint.Row{Op: 8, Key: savepoint.EncodeKeyedKey([]byte("agg"), []byte("k")), Value: []byte("v")}, 1,
			Env{Op: 8, Kind: "keyed", KeyGroup: savepoint.KeyGroupOf([]byte("k")), Slot: "agg", Key: "k", KeyBytes: []byte("k"), Value: []byte("v"), ValueBytes: []byte("v"), Subtask: 1}},
		{"operator row", savepoint.Row{Op: 7, Key: []byte("\xff__kafka_off__:3"), Value: le64(77)}, 2,
			Env{Op: 7, Kind: "operator", KeyGroup: -1, Slot: "<raw>", Key: "__kafka_off__:3", KeyBytes: []byte("__kafka_off__:3"), Value: le64(77), ValueBytes: le64(77), Subtask: 2}},
		{"broadcast row of a declared slot name is not decoded", savepoint.Row{Op: 7, Key: []byte("\xffagg|"), Value: []byte("zz")}, 2,
			Env{Op: 7, Kind: "operator", KeyGroup: -1, Slot: "agg", Key: "", KeyBytes: []byte{}, Value: []byte("zz"), ValueBytes: []byte("zz"), Subtask: 2}},
		{"raw row", savepoint.Row{Op: 7, Key: []byte("_legacy"), Value: nil}, 0,
			Env{Op: 7, Kind: "raw", KeyGroup: -1, Slot: "<raw>", Key: "_legacy", KeyBytes: []byte("_legacy"), Value: []byte(nil)}},
	}
	env := &Env{ExpireAt: int64(-5), Value: "stale"} // every field is overwritten
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := set.FillEnv(env, tc.row, tc.subtask); err != nil {
				t.Fatal(err)
			}
			got := *env
			got.slots = nil // the interning cache is not part of the row model
			if got.Less == nil || !got.Equal(uint64(1<<63), uint64(1<<63)) || got.Less(uint64(1<<63), 1) {
				t.Errorf("the comparisons are not set, or not exact")
			}
			got.Less, got.LessEq, got.More, got.MoreEq, got.Equal, got.NotEqual, got.In = nil, nil, nil, nil, nil, nil, nil
			if len(got.KeyBytes) == 0 && len(tc.want.KeyBytes) == 0 {
				got.KeyBytes, tc.want.KeyBytes = nil, nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("env:\n got %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestFillEnvDecodeError(t *testing.T) {
	set := parseOne(t, envRules)
	var env Env
	err := set.FillEnv(&env, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), []byte("short")), Value: le64(1)}, 0)
	var de *DecodeError
	if !errors.As(err, &de) || de.Op != 7 || de.Slot != "agg" || de.Part != "key" || de.Codec != "int64" {
		t.Fatalf("err = %#v", err)
	}
	if d := set.SlotDecl(7, "agg"); !strings.Contains(err.Error(), `decode key of op 7 slot "agg" with codec int64`) || d == nil || d.Line == 0 ||
		!strings.Contains(err.Error(), fmt.Sprintf("does the declaration at line %d fit the slot's rows?", d.Line)) {
		t.Errorf("message = %v", err)
	}
	if env.Value != int64(1) || env.Key != "short" {
		t.Errorf("the rest of env is filled: %#v", env)
	}
	err = set.FillEnv(&env, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), le64(1)), Value: []byte("xyz")}, 0)
	if !errors.As(err, &de) || de.Part != "value" || env.Value != nil {
		t.Fatalf("err = %v, value %v", err, env.Value)
	}
}

// A TTL slot's value is decoded after its stamp: the codec's byte offsets
// count from there, which the error says, so that they are not read as
// offsets into value_bytes.
func TestFillEnvDecodeErrorAfterStamp(t *testing.T) {
	set := parseOne(t, envRules)
	var env Env
	// A list<int64> of one element of 0 bytes: the codec fails at byte 8
	// of the payload, byte 16 of the stored value.
	payload := []byte{1, 0, 0, 0, 0, 0, 0, 0}
	err := set.FillEnv(&env, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("seen"), []byte("k")), Value: ttlValue(5, payload)}, 0)
	var de *DecodeError
	if !errors.As(err, &de) || de.Part != "value" {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "at byte 8") || !strings.Contains(err.Error(), "after the value's 8-byte TTL stamp") {
		t.Errorf("message = %v, want it to say the offsets count from after the stamp", err)
	}
	// Without a stamp, the offsets are value_bytes' own: no such note.
	err = set.FillEnv(&env, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), le64(1)), Value: []byte("xyz")}, 0)
	if err == nil || strings.Contains(err.Error(), "TTL stamp") {
		t.Errorf("message = %v", err)
	}
}

// FillEnvFields fills key and value only when asked for them (each
// allocates), but decodes a declared key or value all the same: a row the
// codec cannot decode is an error whatever the expressions read.
func TestFillEnvFieldsNeed(t *testing.T) {
	set := parseOne(t, envRules)
	env := Env{Key: "stale", Value: "stale"}
	undeclared := savepoint.Row{Op: 9, Key: savepoint.EncodeKeyedKey([]byte("other"), []byte("k1")), Value: []byte("v1")}
	if err := set.FillEnvFields(&env, undeclared, 0, FieldValueBytes); err != nil {
		t.Fatal(err)
	}
	if env.Key != "stale" || env.Value != "stale" || string(env.ValueBytes) != "v1" || string(env.KeyBytes) != "k1" {
		t.Fatalf("key and value filled though not asked for: %#v", env)
	}
	if n := testing.AllocsPerRun(100, func() { set.FillEnvFields(&env, undeclared, 0, FieldValueBytes|FieldKeyBytes) }); n != 0 {
		t.Errorf("%v allocations a row for the bytes fields alone", n)
	}
	if err := set.FillEnvFields(&env, undeclared, 0, FieldKey); err != nil || env.Key != "k1" || env.Value != "stale" {
		t.Fatalf("key asked for: %v, %#v", err, env)
	}
	if err := set.FillEnvFields(&env, undeclared, 0, FieldValue); err != nil || !bytes.Equal(env.Value.([]byte), []byte("v1")) {
		t.Fatalf("value asked for: %v, %#v", err, env)
	}
	badKey := savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), []byte("short")), Value: le64(1)}
	var de *DecodeError
	if err := set.FillEnvFields(&env, badKey, 0, FieldValue); !errors.As(err, &de) || de.Part != "key" {
		t.Fatalf("an undecodable key, value asked for: %v", err)
	}
}

func TestPredicates(t *testing.T) {
	set := parseOne(t, envRules)
	keep, drop := set.Rules[0].Keep, set.Rules[1].Drop
	if keep.Decl != set.Slots[0] || drop.Decl != nil {
		t.Fatalf("decls %v %v", keep.Decl, drop.Decl)
	}
	var m vm.VM
	var env Env
	row := func(k int64, v int64) savepoint.Row {
		kb := le64(k)
		return savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), kb), Value: le64(v)}
	}
	for _, tc := range []struct {
		row  savepoint.Row
		keep bool
	}{{row(1, 6), true}, {row(1, 5), false}, {row(13, 100), false}, {row(2, 1<<40), true}} {
		if err := set.FillEnv(&env, tc.row, 0); err != nil {
			t.Fatal(err)
		}
		got, err := keep.Predicate.Eval(&m, &env)
		if err != nil || got != tc.keep {
			t.Errorf("keep on %v = %v, %v; want %v", env.Value, got, err, tc.keep)
		}
	}
	seen := savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("seen"), []byte("u")), Value: ttlValue(1000, []byte{0, 0, 0, 0})}
	for _, tc := range []struct {
		at   int64
		drop bool
	}{{999, true}, {1000, true}, {1001, false}} {
		seen.Value = ttlValue(tc.at, []byte{0, 0, 0, 0})
		if err := set.FillEnv(&env, seen, 0); err != nil {
			t.Fatal(err)
		}
		if got, err := drop.Predicate.Eval(&m, &env); err != nil || got != tc.drop {
			t.Errorf("drop at %d = %v, %v", tc.at, got, err)
		}
	}
	// Rows without a TTL stamp: expire_at is nil.
	if err := set.FillEnv(&env, row(1, 1), 0); err != nil {
		t.Fatal(err)
	}
	if got, err := drop.Predicate.Eval(&m, &env); err != nil || got {
		t.Errorf("drop without stamp = %v, %v", got, err)
	}
	if _, ok := keep.Predicate.Constant(); ok {
		t.Error("keep is not constant")
	}
	if keep.Predicate.Program() == nil || keep.Predicate.Source != "value > 5 && key != 13" {
		t.Error("Program/Source")
	}
	// Compiled against Env{} (a value): fields are loaded by index, not by
	// name through reflection (go-libraries.md section 4).
	if dis := drop.Predicate.Program().Disassemble(); !strings.Contains(dis, "OpLoadField") || strings.Contains(dis, "OpLoadConst") {
		t.Errorf("disassembly:\n%s", dis)
	}
}

func TestPredicateRuntimeError(t *testing.T) {
	// A declaration elsewhere leaves an unscoped filter's 'value' untyped
	// (any) at load, so the bad comparison shows on the first bytes row.
	set := parseOne(t, "version: 1\nslots:\n  - {op: 9, slot: n, value: int64}\nrules:\n  - drop: 'value > 5'\n")
	var env Env
	if err := set.FillEnv(&env, savepoint.Row{Op: 1, Key: []byte("\x01s|k"), Value: []byte("x")}, 0); err != nil {
		t.Fatal(err)
	}
	var m vm.VM
	if _, err := set.Rules[0].Drop.Predicate.Eval(&m, &env); err == nil {
		t.Error("comparing bytes with an int did not fail at run time")
	}
}

// A filter whose value is nil for a row (a field read with ?. that the
// value lacks, a JSON null) is an error, not false: expr's AsBool cast
// would read it as false, and keep would drop the row silently, drop keep
// it. A non-boolean value is refused too; `?? false` says what nil does.
func TestPredicateNilRefused(t *testing.T) {
	for _, c := range []struct {
		expr, value string
		want        bool
		err         string
	}{
		{`fromJSON(value)?.paid`, `{"paid": true}`, true, ""},
		{`fromJSON(value)?.paid`, `{"paid": false}`, false, ""},
		{`fromJSON(value)?.paid`, `{"tier": "free"}`, false, "expression returned nil, not true or false"},
		{`fromJSON(value).paid`, `{"paid": null}`, false, "expression returned nil, not true or false"},
		{`fromJSON(value)?.paid ?? false`, `{"tier": "free"}`, false, ""},
		{`fromJSON(value)?.paid ?? true`, `{"tier": "free"}`, true, ""},
		{`fromJSON(value)?.tier`, `{"tier": "free"}`, false, "expression is not boolean: got string"},
	} {
		for _, kind := range []string{"keep", "drop"} {
			set := parseOne(t, "version: 1\nslots:\n  - {op: 7, slot: p, key: string, value: string}\nrules:\n  - "+kind+": {op: 7, slot: p, expr: '"+c.expr+"'}\n")
			var env Env
			if err := set.FillEnv(&env, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("p"), []byte("u")), Value: []byte(c.value)}, 0); err != nil {
				t.Fatal(err)
			}
			f := set.Rules[0].Keep
			if kind == "drop" {
				f = set.Rules[0].Drop
			}
			var m vm.VM
			got, err := f.Predicate.Eval(&m, &env)
			if c.err == "" && (err != nil || got != c.want) {
				t.Errorf("%s %s on %s: %v, %v; want %v", kind, c.expr, c.value, got, err, c.want)
			}
			if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Errorf("%s %s on %s: %v, %v; want an error %q", kind, c.expr, c.value, got, err, c.err)
			}
		}
	}
	// One that reads no field of the row has one value for every row: a
	// nil or a non-boolean one is refused at load, as the type check
	// refuses what it can tell.
	for _, c := range []struct{ expr, want string }{
		{`fromJSON("null")`, "it reads no field of the row and fails on every one: expression returned nil, not true or false"},
		{`fromJSON("1")`, "it reads no field of the row and fails on every one: expression is not boolean: got float64"},
	} {
		for _, kind := range []string{"keep", "drop"} {
			_, err := Parse("t.yaml", []byte("version: 1\nrules:\n  - "+kind+": '"+c.expr+"'\n"))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s %s: %v, want %q", kind, c.expr, err, c.want)
			}
		}
	}
}

// A runtime error's message may quote a row's key or value: their control
// characters are escaped, so that a key cannot forge a line of output or
// send a terminal an escape sequence.
func TestRuntimeErrorEscapesRowBytes(t *testing.T) {
	set := parseOne(t, "version: 1\nslots:\n  - {op: 7, slot: n, key: string, value: string}\nrules:\n  - drop: 'int(key) > 1'\n  - set_value: {op: 7, slot: n, expr: 'string(int(value))'}\n")
	var env Env
	key := "x\nwritten: out\x1b[31m\x1f"
	if err := set.FillEnv(&env, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("n"), []byte(key)), Value: []byte(key)}, 0); err != nil {
		t.Fatal(err)
	}
	var m vm.VM
	_, err1 := set.Rules[0].Drop.Predicate.Eval(&m, &env)
	_, err2 := set.Rules[1].SetValue.Apply(&m, &env)
	for _, err := range []error{err1, err2} {
		if err == nil {
			t.Fatal("int() of a text key did not fail")
		}
		msg, _, _ := strings.Cut(err.Error(), " (1:")
		if strings.ContainsAny(msg, "\n\x1b\x1f") || !strings.Contains(msg, `x\nwritten: out\x1b[31m\x1f`) {
			t.Errorf("error %q: want the key's control characters escaped", err)
		}
	}
}

// Without any slot declared, every row's key is a string and its value
// bytes: filters are type-checked against them at load.
func TestUndeclaredEnvChecks(t *testing.T) {
	for _, c := range []struct {
		rule string
		want string // "" for no error
	}{
		{"drop: 'len(value) > 5'", ""},
		{"drop: 'string(value) == \"x\"'", ""},
		{"drop: 'key startsWith \"user-\"'", ""},
		{"keep: {op: 7, slot: agg, expr: 'len(value) == 8'}", ""},
		{"drop: 'value'", "'drop' must be a boolean expression: expected bool, but got []uint8"},
		{"drop: 'value > 5'", "mismatched types []uint8 and int"},
		{"drop: 'value == \"x\"'", "mismatched types []uint8 and string"},
		{"keep: {op: 7, slot: agg, expr: 'value > 5'}", "mismatched types []uint8 and int"},
	} {
		_, err := Parse("t.yaml", []byte("version: 1\nrules:\n  - "+c.rule+"\n"))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.rule, err, c.want)
		}
	}
}

func TestTypedEnvChecks(t *testing.T) {
	base := "version: 1\nslots:\n  - {op: 7, slot: agg, key: int64, value: int64}\n  - {op: 7, slot: s, value: string}\n  - {op: 7, slot: raw}\n  - {op: 7, slot: f, value: double}\nrules:\n"
	cases := []struct {
		rule string
		ok   bool
	}{
		{"  - keep: {op: 7, slot: agg, expr: 'value > 5'}", true},
		{"  - keep: {op: 7, slot: agg, expr: 'value == \"x\"'}", false},
		{"  - keep: {op: 7, slot: agg, expr: 'key > 5'}", true},
		{"  - keep: {op: 7, slot: agg, expr: 'key startsWith \"x\"'}", false},
		{"  - keep: {op: 7, slot: s, expr: 'value startsWith \"x\"'}", true},
		{"  - keep: {op: 7, slot: s, expr: 'value > 5'}", false},
		{"  - keep: {op: 7, slot: raw, expr: 'len(value) > 5'}", true},
		{"  - keep: {op: 7, slot: raw, expr: 'value == \"x\"'}", false},
		{"  - keep: {op: 7, slot: undeclared, expr: 'value == \"x\"'}", true}, // untyped: any
		{"  - keep: 'value + \"x\" == \"y\"'", true},                          // untyped: any
		{"  - set_value: {op: 7, slot: agg, expr: 'value * 100'}", true},
		{"  - set_value: {op: 7, slot: agg, expr: 'value + \"x\"'}", false},
		{"  - set_value: {op: 7, slot: agg, expr: '\"x\"'}", false},
		{"  - set_value: {op: 7, slot: s, expr: 'value + \"x\"'}", true},
		{"  - set_value: {op: 7, slot: s, expr: '42'}", false},
		{"  - set_value: {op: 7, slot: f, expr: 'value * 2'}", true},
		{"  - set_value: {op: 7, slot: f, expr: '2'}", true},
		{"  - set_value: {op: 7, slot: f, expr: 'true'}", false},
	}
	for _, tc := range cases {
		_, err := Parse("t.yaml", []byte(base+tc.rule+"\n"))
		if (err == nil) != tc.ok {
			t.Errorf("%s: ok=%v, err=%v", tc.rule, tc.ok, err)
		}
	}
}

func TestSetValueApply(t *testing.T) {
	set := parseOne(t, envRules)
	var m vm.VM
	var env Env
	apply := func(rule int, row savepoint.Row) ([]byte, error) {
		t.Helper()
		if err := set.FillEnv(&env, row, 0); err != nil {
			t.Fatal(err)
		}
		return set.Rules[rule].SetValue.Apply(&m, &env)
	}
	out, err := apply(2, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), le64(1)), Value: le64(7)})
	if err != nil || !bytes.Equal(out, le64(700)) {
		t.Errorf("agg: %x, %v", out, err)
	}
	out, err = apply(3, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("name"), []byte("k")), Value: []byte("bob")})
	if err != nil || string(out) != "BOB!" {
		t.Errorf("name: %q, %v", out, err)
	}
	list, _ := codec.MustParse("list<int64>").Encode([]any{int64(1), int64(2)})
	want, _ := codec.MustParse("list<int64>").Encode([]any{int64(2), int64(3)})
	out, err = apply(4, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("seen"), []byte("u")), Value: ttlValue(123, list)})
	if err != nil || !bytes.Equal(out, ttlValue(123, want)) {
		t.Errorf("seen (TTL stamp kept): %x, %v", out, err)
	}
	_, err = apply(4, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("seen"), []byte("u")), Value: []byte{1}})
	var ee *EvalError
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "no 8-byte TTL stamp") || !strings.Contains(err.Error(), `drop: {op: 7, slot: "seen", expr: 'expire_at == nil'}`) {
		t.Errorf("short TTL value: %v", err)
	}
	// uint32: 100 * 100000000 does not fit, the codec refuses at run time.
	small := make([]byte, 4)
	binary.LittleEndian.PutUint32(small, 100)
	_, err = apply(5, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("small"), []byte("k")), Value: small})
	if !errors.As(err, &ee) || ee.Rule != "rule 6 (set_value)" || ee.Expr != "value * 100000000" {
		t.Errorf("overflow: %#v", err)
	}
}

// A keep or drop rule's runtime error is an *EvalError, as set_value's
// is, with the message a filter's error had: the rule, then expr's error
// (which shows the expression below it).
func TestFilterEvalError(t *testing.T) {
	set := parseOne(t, "version: 1\nslots:\n  - {op: 7, slot: agg, key: int64, value: int64}\nrules:\n"+
		"  - drop: {op: 7, slot: agg, expr: 'value % (value - value) == 0'}\n"+
		"  - name: ratio\n    keep: {op: 7, slot: agg, expr: 'value / 0 > 1'}\n")
	var m vm.VM
	var env Env
	if err := set.FillEnv(&env, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), le64(1)), Value: le64(7)}, 0); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"rule 1 (drop): 7 % 0: integer divide by zero (1:7)\n", "rule 2 \"ratio\" (keep): 7 / 0: division by zero (1:7)\n"} {
		f := set.Rules[i].Filter()
		_, err := f.Predicate.Eval(&m, &env)
		var ee *EvalError
		if !errors.As(err, &ee) || ee.Rule != set.Rules[i].Label() || ee.Expr != f.Expr || ee.Key != nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("rule %d: %#v, want an *EvalError %q...", i+1, err, want)
		}
	}
}

func TestPurgeKeysMatch(t *testing.T) {
	set := parseOne(t, "version: 1\nrules:\n  - purge_keys: {keys: [user1, \"a\\x1fb\", \"\", x, \"x\\x1fy\"]}\n  - purge_keys: {codec: int64, keys: [31, -1]}\n")
	p := set.Rules[0].PurgeKeys
	for _, tc := range []struct {
		key       string
		composite bool
		idx       int
		ok        bool
	}{
		{"user1", false, 0, true},
		{"user1\x1fitemA", false, 0, false},
		{"user1\x1fitemA", true, 0, true},
		{"user10\x1fitemA", true, 0, false},
		{"a\x1fb\x1fc", true, 1, true}, // the key itself contains 0x1F
		{"a\x1fb", false, 1, true},
		{"", false, 2, true},
		{"\x1fx", true, 2, true},
		{"nobody", true, 0, false},
		// Two listed keys before a 0x1F: the longer one is matched.
		{"x\x1fy\x1fit", true, 4, true},
		{"x\x1fz", true, 3, true},
	} {
		i, ok := p.Match([]byte(tc.key), tc.composite)
		if ok != tc.ok || (ok && i != tc.idx) {
			t.Errorf("Match(%q, %v) = %d, %v", tc.key, tc.composite, i, ok)
		}
	}
	if i, ok := p.Lookup([]byte("user1\x1fx")); ok {
		t.Errorf("Lookup matched a composite key: %d", i)
	}
	q := set.Rules[1].PurgeKeys
	// int64 31 is 0x1F 00.. : a composite K ++ 0x1F split must not confuse it.
	if i, ok := q.Match(append(le64(31), 0x1f, 'x'), true); !ok || i != 0 {
		t.Errorf("int64 composite: %d %v", i, ok)
	}
	if q.Display(1) != "-1" || q.Display(0) != "31" || p.Display(0) != "user1" {
		t.Errorf("Display: %q %q", q.Display(1), q.Display(0))
	}
}

// TestKeysFileEncoding: a keys file is lines of UTF-8 text. A UTF-16 one
// is refused (each key would hold NUL bytes and match nothing); of a string
// list, a NUL byte, bytes that are not UTF-8 and a second byte order mark
// are warned of, with the line; a plain UTF-8 file, with or without its
// mark, gets no such warning.
func TestKeysFileEncoding(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, body, codec string
		err, warn         string // substrings; "" for none, warnings apart by "|"
	}{
		{"utf16le", "\xff\xfeu\x00s\x00\n\x00", "string", `keys file "k.txt" is UTF-16 (it starts with the byte order mark FFFE)`, ""},
		{"utf16be", "\xfe\xff\x00u\x00s", "string", "is UTF-16 (it starts with the byte order mark FEFF)", ""},
		{"utf16le int64", "\xff\xfe1\x00\n\x00", "int64", "is UTF-16", ""},
		{"nul", "alice\nb\x00o\x00b\n", "string", "", `keys file "k.txt" line 2 holds a NUL byte: is the file UTF-16 or binary?`},
		{"latin1", "alice\nbob\nJos\xe9\n", "string", "", `keys file "k.txt" line 3 is not valid UTF-8 (byte 0xe9)`},
		{"nul and latin1", "alice\nbad\xffkey\nnul\x00key\n", "string", "", `line 3 holds a NUL byte|line 2 is not valid UTF-8 (byte 0xff)`},
		{"two marks", "\xef\xbb\xbf\xef\xbb\xbfalice\n", "string", "", "starts with two UTF-8 byte order marks"},
		{"files joined", "\xef\xbb\xbfuser-1\nuser-2\n\xef\xbb\xbfuser-3\n", "string", "", `keys file "k.txt" line 3 starts with a UTF-8 byte order mark (files joined with cat?)`},
		{"joined, no first mark", "user-1\n\xef\xbb\xbfuser-3\n", "string", "", `line 2 starts with a UTF-8 byte order mark`},
		{"utf8 with mark", "\xef\xbb\xbfJosé\nZoë\n", "string", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(dir, "k.txt"), []byte(c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			src := "version: 1\nrules:\n  - purge_keys: {keys_file: k.txt, codec: " + c.codec + "}\n"
			set, err := ParseWithOptions(filepath.Join(dir, "r.yaml"), []byte(src), testOpts())
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range set.Warnings {
				if s := w.String(); strings.Contains(s, "UTF") || strings.Contains(s, "NUL") {
					got = append(got, s)
				}
			}
			var want []string
			if c.warn != "" {
				want = strings.Split(c.warn, "|")
			}
			ok := len(got) == len(want)
			for i := 0; ok && i < len(want); i++ {
				ok = strings.Contains(got[i], want[i])
			}
			if !ok {
				t.Errorf("warnings %q, want %q", got, want)
			}
		})
	}
}

func TestKeysFileFormat(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("s.txt", "\xef\xbb\xbfalice\r\n\r\n# comment\r\n   # indented comment\r\nbob \r\n  carol\nlast-without-newline")
	write("i.txt", "1\n +2\n\t-3\t\n")
	write("e.txt", "")
	write("c.txt", "# only comments\n\n")
	write("cr.txt", "alice\rbob\r")
	write("crcr.txt", "anna\r\r\nbob\r\r\n")
	// A keys file that lists no key is refused: an erasure request
	// exported empty must not pass for the erasure.
	for _, f := range []string{"e.txt", "c.txt"} {
		src := "version: 1\nrules:\n  - purge_keys: {keys_file: " + f + "}\n"
		if _, err := ParseWithOptions(filepath.Join(dir, "r.yaml"), []byte(src), testOpts()); err == nil || !strings.Contains(err.Error(), `keys file "`+f+`" lists no keys`) {
			t.Errorf("%s: %v, want an error: no keys", f, err)
		}
	}
	src := "version: 1\nrules:\n  - purge_keys: {keys_file: s.txt}\n  - purge_keys: {keys_file: i.txt, codec: int64}\n  - purge_keys: {keys: []}\n  - purge_keys: {keys_file: cr.txt}\n"
	set, err := ParseWithOptions(filepath.Join(dir, "r.yaml"), []byte(src), testOpts())
	if err != nil {
		t.Fatal(err)
	}
	s := set.Rules[0].PurgeKeys
	if !reflect.DeepEqual(s.Keys, []string{"alice", "bob ", "  carol", "last-without-newline"}) || !reflect.DeepEqual(s.Lines, []int{1, 5, 6, 7}) {
		t.Errorf("string keys %q lines %v", s.Keys, s.Lines)
	}
	i := set.Rules[1].PurgeKeys
	if !reflect.DeepEqual(i.Keys, []string{int64Key(1), int64Key(2), int64Key(-3)}) {
		t.Errorf("int64 keys %q", i.Keys)
	}
	var msgs []string
	for _, w := range set.Warnings {
		msgs = append(msgs, w.String())
	}
	all := strings.Join(msgs, "\n")
	if !strings.Contains(all, `keys file "s.txt": 2 lines start or end with blanks, which are part of their keys (the first: line 5)`) || !strings.Contains(all, "rule 3: purge_keys lists no keys") || strings.Contains(all, "'#'") ||
		!strings.Contains(all, `keys file "cr.txt": 1 key(s) hold a carriage return (the first: line 1)`) {
		t.Errorf("warnings:\n%s", all)
	}
	// A line ending CR CR LF keeps a carriage return in its key: one
	// warning says so, not a second one of blanks.
	set, err = ParseWithOptions(filepath.Join(dir, "r.yaml"), []byte("version: 1\nrules:\n  - purge_keys: {keys_file: crcr.txt}\n"), testOpts())
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Warnings) != 1 || !strings.Contains(set.Warnings[0].Msg, `keys file "crcr.txt": 2 key(s) hold a carriage return`) {
		t.Errorf("warnings %v", set.Warnings)
	}
	// A comment of one word may be a key that starts with '#': a string
	// list warns that it skipped it; an int64 list, whose keys are digits,
	// does not.
	write("h1.txt", "#anna\nbob\n")
	write("h2.txt", "# erasure request\n#anna\nbob\n\t#x \n#\n")
	write("h3.txt", "#7\n8\n")
	set, err = ParseWithOptions(filepath.Join(dir, "r.yaml"), []byte("version: 1\nrules:\n  - purge_keys: {keys_file: h1.txt}\n  - purge_keys: {keys_file: h2.txt}\n  - purge_keys: {keys_file: h3.txt, codec: int64}\n"), testOpts())
	if err != nil {
		t.Fatal(err)
	}
	if k := set.Rules[1].PurgeKeys.Keys; !reflect.DeepEqual(k, []string{"bob"}) {
		t.Errorf("keys of h2.txt: %q", k)
	}
	msgs = nil
	for _, w := range set.Warnings {
		msgs = append(msgs, w.String())
	}
	all = strings.Join(msgs, "\n")
	for _, want := range []string{
		`rule 1: keys file "h1.txt" line 1 starts with '#' and holds one word: it is a comment, not a key`,
		`rule 2: keys file "h2.txt": 2 lines of one word start with '#' (the first: line 2): they are comments, not keys`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no warning %q in:\n%s", want, all)
		}
	}
	if len(msgs) != 2 || strings.Contains(all, "anna") {
		t.Errorf("%d warnings, want 2, naming no key:\n%s", len(msgs), all)
	}
	// A file of decimal integers matched as text by default is warned
	// of, as an inline list of YAML integers is; with the codec said, or
	// with a key that is not one, it is not.
	write("n.txt", "7\n-7\n\n# ids\n")
	write("m.txt", "7\nalice\n")
	write("u.txt", "18446744073709551615\n9223372036854775808\n")
	for _, tc := range []struct {
		rule string
		warn bool
	}{
		{"{keys_file: n.txt}", true},
		{"{keys_file: u.txt}", true}, // uint64 keys of 2^63 or more
		{"{keys_file: u.txt, codec: uint64}", false},
		{"{keys_file: n.txt, codec: string}", false},
		{"{keys_file: n.txt, codec: int64}", false},
		{"{keys_file: m.txt}", false},
	} {
		set, err := ParseWithOptions(filepath.Join(dir, "r.yaml"), []byte("version: 1\nrules:\n  - purge_keys: "+tc.rule+"\n"), testOpts())
		if err != nil {
			t.Fatal(err)
		}
		file := strings.TrimSuffix(strings.TrimPrefix(tc.rule, "{keys_file: "), "}")
		file, _, _ = strings.Cut(file, ",")
		want := fmt.Sprintf(`keys file %q lists only decimal integers, but they are matched as text (codec string, the default)`, file)
		warned := slices.ContainsFunc(set.Warnings, func(w *Warning) bool { return strings.Contains(w.Msg, want) })
		if warned != tc.warn || len(set.Warnings) > 1 {
			t.Errorf("%s: warnings %v, want the integers' warning: %v", tc.rule, set.Warnings, tc.warn)
		}
	}
	// A slot declared with an integer key codec says it once, its way.
	set, err = ParseWithOptions(filepath.Join(dir, "r.yaml"), []byte("version: 1\nslots:\n  - {op: 7, slot: s, key: int64}\nrules:\n  - purge_keys: {op: 7, slot: s, keys_file: n.txt}\n"), testOpts())
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Warnings) != 1 || !strings.Contains(set.Warnings[0].Msg, "declares key codec int64 but purge_keys encodes keys with string") {
		t.Errorf("declared int64 slot: warnings %v, want the codec mismatch alone", set.Warnings)
	}
	// More than maxKeyErrors bad lines: the rest are counted.
	write("bad.txt", strings.Repeat("x\n", 25))
	_, err = ParseWithOptions(filepath.Join(dir, "r.yaml"), []byte("version: 1\nrules:\n  - purge_keys: {keys_file: bad.txt, codec: int64}\n"), testOpts())
	var errs *Errors
	if !errors.As(err, &errs) || errs.Len() != maxKeyErrors+1 || !strings.Contains(err.Error(), "15 more invalid int64 keys not listed (25 in all)") {
		t.Errorf("err = %v", err)
	}
}

// TestMillionKeys loads a keys file of a million keys; it must take well
// under a second.
func TestMillionKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	dir := t.TempDir()
	for _, c := range []string{"string", "int64"} {
		path := filepath.Join(dir, c+".txt")
		var b bytes.Buffer
		for i := 0; i < 1_000_000; i++ {
			if c == "string" {
				fmt.Fprintf(&b, "customer-%08d\n", i)
			} else {
				fmt.Fprintf(&b, "%d\n", int64(i)*7919-3_000_000)
			}
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		src := fmt.Sprintf("version: 1\nrules:\n  - purge_keys: {keys_file: %s, codec: %s}\n", filepath.Base(path), c)
		start := time.Now()
		set, err := ParseWithOptions(filepath.Join(dir, "r.yaml"), []byte(src), testOpts())
		elapsed := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		p := set.Rules[0].PurgeKeys
		if p.Len() != 1_000_000 || p.Lines[999_999] != 1_000_000 {
			t.Fatalf("%d keys", p.Len())
		}
		if i, ok := p.Lookup([]byte(p.Keys[123456])); !ok || i != 123456 {
			t.Errorf("lookup: %d %v", i, ok)
		}
		// The time is logged, not asserted: BenchmarkLoadMillionKeys measures it.
		t.Logf("%s: 1M keys loaded in %v", c, elapsed)
	}
}

func BenchmarkLoadMillionKeys(b *testing.B) {
	dir := b.TempDir()
	var buf bytes.Buffer
	for i := 0; i < 1_000_000; i++ {
		fmt.Fprintf(&buf, "customer-%08d\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "k.txt"), buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	src := []byte("version: 1\nrules:\n  - purge_keys: {keys_file: k.txt}\n")
	for b.Loop() {
		if _, err := ParseWithOptions(filepath.Join(dir, "r.yaml"), src, testOpts()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPredicateEval(b *testing.B) {
	set, err := Parse("b.yaml", []byte("version: 1\nrules:\n  - drop: 'slot == \"agg\" && key_group < 64 && op != 3'\n"))
	if err != nil {
		b.Fatal(err)
	}
	p := set.Rules[0].Drop.Predicate
	var env Env
	if err := set.FillEnv(&env, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), le64(5)), Value: le64(1)}, 0); err != nil {
		b.Fatal(err)
	}
	var m vm.VM
	for b.Loop() {
		if _, err := p.Eval(&m, &env); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFillEnv(b *testing.B) {
	set, err := Parse("b.yaml", []byte(envRules))
	if err != nil {
		b.Fatal(err)
	}
	row := savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), le64(5)), Value: le64(1)}
	var env Env
	for b.Loop() {
		if err := set.FillEnv(&env, row, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDisplayNotUTF8: a string key that is not UTF-8 is shown as 0x and
// its hex, so that the audit's JSON, which would turn each invalid byte
// into U+FFFD, keeps two such keys apart.
func TestDisplayNotUTF8(t *testing.T) {
	// (YAML text is Unicode: such keys come from keys files.)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "k.txt"), []byte("a\xff\na\xfe\nJosé\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := ParseWithOptions(filepath.Join(dir, "r.yaml"), []byte("version: 1\nrules:\n  - purge_keys: {keys_file: k.txt}\n"), testOpts())
	if err != nil {
		t.Fatal(err)
	}
	p := set.Rules[0].PurgeKeys
	var got []string
	for i := range p.Len() {
		got = append(got, p.Display(i))
	}
	if want := []string{"0x61ff", "0x61fe", "José"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Display: %q, want %q", got, want)
	}
}

// TestRuleSlotDecl: each rule sees the declarations under the names they
// have at its place; Set.SlotDecl finds them under every name.
func TestRuleSlotDecl(t *testing.T) {
	set, err := Parse("r.yaml", []byte("version: 1\nslots: [{op: 7, slot: t, ttl: true}]\nrules:\n  - keep: 'true'\n  - rename_slot: {op: 7, from: t, to: a}\n  - keep: 'true'\n"))
	if err != nil {
		t.Fatal(err)
	}
	decl := set.Slots[0]
	for i, want := range []struct{ t, a *SlotDecl }{{decl, nil}, {decl, nil}, {nil, decl}} {
		r := set.Rules[i]
		if r.SlotDecl(7, []byte("t")) != want.t || r.SlotDecl(7, []byte("a")) != want.a {
			t.Errorf("%s: t %v, a %v; want %v, %v", r.Label(), r.SlotDecl(7, []byte("t")), r.SlotDecl(7, []byte("a")), want.t, want.a)
		}
	}
	if set.SlotDecl(7, "t") != decl || set.SlotDecl(7, "a") != decl {
		t.Error("Set.SlotDecl does not find the declaration under both names")
	}
	if !set.Rules[0].SameDecls(set.Rules[1]) || set.Rules[1].SameDecls(set.Rules[2]) {
		t.Error("SameDecls: rules 1 and 2 see the same declarations, rule 3 others")
	}
	// Filled for rule 1, an 8-byte value of slot a is no TTL stamp.
	var env Env
	row := savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("a"), []byte("k")), Value: make([]byte, 8)}
	if err := set.Rules[0].FillEnvAt(&env, row, -1, AllFields); err != nil || env.ExpireAt != nil {
		t.Errorf("rule 1: expire_at %v, %v; want nil", env.ExpireAt, err)
	}
	if err := set.Rules[2].FillEnvAt(&env, row, -1, AllFields); err != nil || env.ExpireAt != int64(0) {
		t.Errorf("rule 3: expire_at %v, %v; want 0", env.ExpireAt, err)
	}
}

// A nil *Set is a rule file with no slots and no rules: cat --where without
// --rules compiles and evaluates against it.
func TestNilSet(t *testing.T) {
	var set *Set
	if set.SlotDecl(7, "a") != nil || set.Fields() != 0 || set.Rescale() != nil {
		t.Error("a nil Set declares something")
	}
	p, err := set.CompileFilter(`key == "k" && slot == "a"`)
	if err != nil {
		t.Fatal(err)
	}
	var env Env
	row := savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("a"), []byte("k")), Value: []byte("v")}
	if err := set.FillEnv(&env, row, 0); err != nil {
		t.Fatal(err)
	}
	var m vm.VM
	if got, err := p.Eval(&m, &env); err != nil || !got {
		t.Errorf("Eval = %v, %v; want true", got, err)
	}
}

// TestSetValueShortTTLHint: the rule the error of a value without its TTL
// stamp suggests names the operator and slot as the set_value rule does:
// its uid, and the slot's name after an earlier rename.
func TestSetValueShortTTLHint(t *testing.T) {
	for _, tc := range []struct{ src, slot, want string }{
		{"version: 1\nslots:\n  - {uid: enricher, slot: seen, value: int64, ttl: true}\nrules:\n  - set_value: {uid: enricher, slot: seen, expr: 'value + 1'}\n",
			"seen", `drop: {uid: "enricher", slot: "seen", expr: 'expire_at == nil'}`},
		{"version: 1\nslots:\n  - {op: 7, slot: seen, value: int64, ttl: true}\nrules:\n  - rename_slot: {op: 7, from: seen, to: seen2}\n  - set_value: {op: 7, slot: seen2, expr: 'value + 1'}\n",
			"seen2", `drop: {op: 7, slot: "seen2", expr: 'expire_at == nil'}`},
	} {
		set, err := Parse("h.yaml", []byte(tc.src))
		if err != nil {
			t.Fatal(err)
		}
		r := set.Rules[len(set.Rules)-1]
		var env Env
		var m vm.VM
		if err := set.FillEnv(&env, savepoint.Row{Op: r.SetValue.Op.ID, Key: savepoint.EncodeKeyedKey([]byte(tc.slot), []byte("k")), Value: []byte{1}}, len(set.Rules)-1); err != nil {
			t.Fatal(err)
		}
		_, err = r.SetValue.Apply(&m, &env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %s", tc.slot, err, tc.want)
		}
		// The suggested rule loads before the set_value.
		lines := strings.Split(tc.src, "\n")
		at := len(lines) - 2
		fixed := strings.Join(append(append(slices.Clone(lines[:at]), "  - "+tc.want), lines[at:]...), "\n")
		if _, err := Parse("fixed.yaml", []byte(fixed)); err != nil {
			t.Errorf("the suggested rule does not load: %v\n%s", err, fixed)
		}
	}
}

// set_value writes no number that would pass for another: an infinity or
// NaN the expression made (1e300 * 1e10, float("inf")), an integer beyond
// 2^53 written as a double (rounded), a bitshl that pushes bits out of the
// int64. A NaN stored, written back as it is, is left.
func TestSetValueNoSilentNumbers(t *testing.T) {
	f64 := func(f float64) []byte { return binary.LittleEndian.AppendUint64(nil, math.Float64bits(f)) }
	for _, c := range []struct {
		name, slot, expr string
		value            []byte
		want             []byte // nil: an error holding err
		err              string
	}{
		{"overflow", "value: double", "value * 1e10", f64(1e300), nil, "the result holds +Inf"},
		{"inf", "value: double", `float("inf")`, f64(1), nil, "the result holds +Inf"},
		{"nan in a list", "value: list<double>", `[1.0, float("NaN")]`, []byte{0, 0, 0, 0}, nil, "the result holds NaN"},
		{"nan stored, kept", "value: double", "value", f64(math.NaN()), f64(math.NaN()), ""},
		{"2^53+1", "value: double", "9007199254740993", f64(1), nil, "the integer 9007199254740993 is beyond 2^53"},
		{"2^53", "value: double", "9007199254740992", f64(1), f64(1 << 53), ""},
		{"finite", "value: double", "value * 2", f64(1.5), f64(3), ""},
		{"bitshl wraps", "value: int64", "bitshl(value, 62)", le64(10), nil, "integer overflow: bitshl(10, 62)"},
		{"bitshl too far", "value: int64", "bitshl(value, 64)", le64(1), nil, "a shift of 64 bits"},
		{"bitshl", "value: int64", "bitshl(value, 3)", le64(5), le64(40), ""},
		{"bitshl negative", "value: int64", "bitshl(value, 1)", le64(-3), le64(-6), ""},
		{"not UTF-8", "value: string", "string(key_bytes) + string(value_bytes[0:1])", []byte("\xc3\xa9"), nil, "is not UTF-8 text, which slot \"s\" (codec string) holds"},
		{"UTF-8", "value: string", "value + \"!\"", []byte("\xc3\xa9"), []byte("\xc3\xa9!"), ""},
		{"not UTF-8 stored, kept", "value: string", "value", []byte{0xc3}, []byte{0xc3}, ""},
		{"map key twice", `value: "map<string,int64>"`, "concat(value, value)", mapSA1(1), nil, `the result is not a map clink writes: map entries 0 and 1 hold the key "a": a map holds a key once`},
		{"map key twice stored, kept", `value: "map<string,int64>"`, "value", mapSA1(2), mapSA1(2), ""},
		{"map key once", `value: "map<string,int64>"`, `concat(value, [{"key": "b", "value": 2}])`, mapSA1(1), mapAB, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			set := parseOne(t, "version: 1\nslots:\n  - {op: 7, slot: s, key: string, "+c.slot+"}\nrules:\n  - set_value: {op: 7, slot: s, expr: '"+c.expr+"'}\n")
			var m vm.VM
			var env Env
			if err := set.FillEnv(&env, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("s"), []byte("k")), Value: c.value}, 0); err != nil {
				t.Fatal(err)
			}
			out, err := set.Rules[0].SetValue.Apply(&m, &env)
			switch {
			case c.want == nil && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("%x, %v; want an error holding %q", out, err, c.err)
			case c.want != nil && (err != nil || !bytes.Equal(out, c.want)):
				t.Errorf("%x, %v; want %x", out, err, c.want)
			}
		})
	}
}
