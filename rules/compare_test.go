package rules

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/sptool/sptool/savepoint"
)

// Comparisons of integers are by value: an operator id, a uint64 key or a
// uint64 value of 2^63 or more is above every int, not a negative number as
// expr's own comparison makes it. The VM and the closures agree.
func TestExactIntegerComparisons(t *testing.T) {
	set, err := Parse("r.yaml", []byte(`version: 1
slots:
  - {op: 18446744073709551615, slot: u, key: uint64, value: uint64}
  - {op: 7, slot: u, key: uint64, value: uint64}
  - {op: 9223372036854775809, slot: i, key: int64, value: int64}
  - {op: 7, slot: s, key: string, value: string}
rules: []
`))
	if err != nil {
		t.Fatal(err)
	}
	row := func(op uint64, slot string, key, value any) savepoint.Row {
		return declaredRow(t, set, op, slot, key, value)
	}
	const top = math.MaxUint64
	big := row(top, "u", uint64(1)<<63, uint64(top))
	small := row(7, "u", uint64(5), uint64(9))
	neg := row(1<<63+1, "i", int64(-3), int64(math.MinInt64))
	str := row(7, "s", "m", "x")
	cases := []struct {
		src     string
		row     savepoint.Row
		want    bool
		closure bool // compiled to a closure (see Predicate.Fast)
	}{
		{"op > 42", big, true, true},
		{"op < 42", big, false, true},
		{"42 < op", big, true, true},
		{"op >= 0", big, true, true},
		{"op == -1", big, false, false},
		{"op != -1", big, true, false},
		{"op > -1", small, true, false},
		{"op <= -1", small, false, false},
		{`op > opid("9223372036854775808")`, big, true, true},
		{`op < opid("9223372036854775808")`, neg, false, true},
		{`op > opid("9223372036854775808")`, neg, true, true},
		{`op == opid("18446744073709551615")`, big, true, true},
		{"op > 6 && op < 8", small, true, true},
		{"key > 100", big, true, false},
		{"key >= 9223372036854775807", big, true, false},
		{"key < 0", big, false, false},
		{"value > key", big, true, false},
		{"key < value", big, true, false},
		{"value == key", big, false, false},
		{"value > 8", small, true, false},
		{"key == 5", small, true, false},
		{"value > op", small, true, false},
		{"key < 0", neg, true, false},
		{"value < key", neg, true, false},
		{"value < -9223372036854775807", neg, true, false},
		{"op > value", neg, true, false},
		{"key_group >= 0 && key_group < 128", big, true, true},
		{"op > 1.5", big, true, false},
		{"float(op) > 1e19", big, true, false}, // 2^64-1 as a float
		// An integer and a float compare by their exact values: a float64
		// holds integers exactly only up to 2^53.
		{"op == 18446744073709551615.0", big, false, false}, // the float is 2^64
		{"op < 18446744073709551615.0", big, true, false},
		{"18446744073709551616.0 > op", big, true, false},
		{"op == 1.8446744073709552e19", big, false, false},
		{"op != 1.8446744073709552e19", big, true, false},
		{"value > 9.223372036854775807e18", neg, false, false},
		{"value == -9.223372036854775808e18", neg, true, false}, // -2^63 is a float64
		{"value >= -9.223372036854775808e18", neg, true, false},
		{"key > -2.5", neg, false, false},
		{"key < -2.5", neg, true, false},
		{"key == 5.0", small, true, false},
		{"5.5 > key", small, true, false},
		{"value > 0.0/1.0", small, true, false},
		{"op in [18446744073709551615.0]", big, false, false},
		{`op in [1.5, opid("18446744073709551615")]`, big, true, false},
		{"3714747266114981297 in [3714747266114981200.0]", small, false, false},
		{"5.0 in [key]", small, true, false},
		{`key < "n" && value == "x"`, str, true, false},
		{"value != nil", big, true, false},
		{"op in [-1]", big, false, false},
		{`op in [42, opid("18446744073709551615")]`, big, true, false},
		{"-1 in [op]", big, false, false},
		{"value in [-1, 5]", big, false, false},
		{"key in [5, 6]", small, true, false},
		{"value in 1..10", small, true, false},
		{`slot in ["u", "x"]`, big, true, false},
		{`"u" in {"u": 1}`, big, true, false},
	}
	var m vm.VM
	for _, c := range cases {
		p, err := set.CompileFilter(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		var env Env
		if err := set.FillEnv(&env, c.row, 0); err != nil {
			t.Fatal(err)
		}
		if got, err := p.Eval(&m, &env); err != nil || got != c.want {
			t.Errorf("%s on %v: %v, %v; want %v", c.src, c.row, got, err, c.want)
		}
		if f := p.Fast(); f != nil {
			if got := f(&RowView{Op: c.row.Op, Key: savepoint.ParseKey(c.row.Key)}); got != c.want {
				t.Errorf("%s on %v: closure %v; want %v", c.src, c.row, got, c.want)
			}
		} else if c.closure {
			t.Errorf("%s: no closure", c.src)
		}
	}
	// Operands that cannot be compared fail as expr's comparison does.
	p, err := set.CompileFilter(`value < "a"`)
	if err != nil {
		t.Fatal(err)
	}
	var env Env
	if err := set.FillEnv(&env, big, 0); err != nil {
		t.Fatal(err)
	}
	if got, err := p.Eval(&m, &env); err == nil || !strings.Contains(err.Error(), "invalid operation") {
		t.Errorf(`value < "a" on a uint64: %v, %v; want an error`, got, err)
	}
}

// The comparisons order integers of every width and signedness by value.
func TestCompareExact(t *testing.T) {
	vals := []any{int(-1), int8(-128), int16(7), int32(-7), int64(math.MinInt64), int64(math.MaxInt64),
		uint(0), uint8(255), uint16(7), uint32(math.MaxUint32), uint64(1 << 63), uint64(math.MaxUint64)}
	exactly := func(v any) (neg bool, mag uint64) {
		n, m, ok := intParts(v)
		if !ok {
			t.Fatalf("%T is no integer", v)
		}
		return n, m
	}
	for _, a := range vals {
		for _, b := range vals {
			an, am := exactly(a)
			bn, bm := exactly(b)
			// The order by value, computed on strings of the sign and
			// zero-padded magnitude.
			key := func(n bool, m uint64) string {
				if n {
					return fmt.Sprintf("0%020d", math.MaxUint64-m)
				}
				return fmt.Sprintf("1%020d", m)
			}
			want := strings.Compare(key(an, am), key(bn, bm))
			for op, c := range map[string]struct {
				f     func(a, b any) bool
				holds bool
			}{"<": {exactLess, want < 0}, "<=": {exactLessEq, want <= 0}, ">": {exactMore, want > 0}, ">=": {exactMoreEq, want >= 0}, "==": {exactEqual, want == 0}, "!=": {exactNotEqual, want != 0}} {
				if got, holds := c.f(a, b), c.holds; got != holds {
					t.Errorf("%v (%T) %s %v (%T): %v, want %v", a, a, op, b, b, got, holds)
				}
			}
		}
	}
}

// An Env built by hand, not filled by FillEnv, runs rewritten comparisons
// through Eval; expr.Run of the Program needs Init.
func TestComparisonsOnHandBuiltEnv(t *testing.T) {
	set, err := Parse("r.yaml", []byte("version: 1\nrules: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := set.CompileFilter("op > 42")
	if err != nil {
		t.Fatal(err)
	}
	var m vm.VM
	if ok, err := p.Eval(&m, &Env{Op: 1<<64 - 1}); err != nil || !ok {
		t.Errorf("Eval on a hand-built Env: %v, %v", ok, err)
	}
	env := &Env{Op: 50}
	env.Init()
	if out, err := expr.Run(p.Program(), env); err != nil || out != true {
		t.Errorf("expr.Run after Init: %v, %v", out, err)
	}
}

// declaredRow is a row of slot (op, slot) of set holding key and value,
// encoded with the slot's codecs.
func declaredRow(t *testing.T, set *Set, op uint64, slot string, key, value any) savepoint.Row {
	t.Helper()
	d := set.SlotDecl(op, slot)
	k, err := d.KeyCodec.Encode(key)
	if err != nil {
		t.Fatal(err)
	}
	v, err := d.ValueCodec.Encode(value)
	if err != nil {
		t.Fatal(err)
	}
	return savepoint.Row{Op: op, Key: savepoint.EncodeKeyedKey([]byte(slot), k), Value: v}
}

// filterOn compiles src as a filter of set and evaluates it on row.
func filterOn(t *testing.T, set *Set, src string, row savepoint.Row) (bool, error) {
	t.Helper()
	p, err := set.CompileFilter(src)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	var env Env
	if err := set.FillEnv(&env, row, 0); err != nil {
		t.Fatal(err)
	}
	var m vm.VM
	return p.Eval(&m, &env)
}
