package rules

import (
	"math"
	"strings"
	"testing"

	"github.com/expr-lang/expr/vm"

	"github.com/sptool/sptool/savepoint"
)

// Integer +, - and * in expressions fail on overflow instead of wrapping
// around, for signed and for unsigned operands; other arithmetic is
// expr's own.
func TestCheckedArithmetic(t *testing.T) {
	for _, c := range []struct {
		op   byte
		a, b any
		want any // nil: an overflow
	}{
		{'+', 1, 2, 3},
		{'+', math.MaxInt64, 1, nil},
		{'+', math.MinInt64, -1, nil},
		{'+', int64(math.MaxInt64), -1, math.MaxInt64 - 1}, // expr's result is an int
		{'-', math.MinInt64, 1, nil},
		{'-', 0, math.MinInt64, nil},
		{'-', -1, math.MinInt64, math.MaxInt64},
		{'*', 5, 100000000000000000, 500000000000000000},
		{'*', 100, 100000000000000000, nil},
		{'*', -1, math.MinInt64, nil},
		{'*', math.MinInt64, -1, nil},
		{'*', 1 << 31, 1 << 31, 1 << 62},
		{'*', 0, math.MinInt64, 0},
		{'+', uint64(math.MaxUint64), uint64(1), nil},
		{'-', uint64(1), uint64(2), -1}, // expr computes uint64s as ints: exact
		{'*', uint64(1 << 32), uint64(1 << 32), nil},
		{'*', uint64(1 << 32), uint64(1 << 31), nil}, // 2^63 is no int
		{'*', uint64(1 << 31), uint64(1 << 31), 1 << 62},
		{'*', uint64(7), 4611686018427387904, nil}, // an operator id and a literal
		{'+', 1.5, 2, 3.5},
		{'+', "a", "b", "ab"},
	} {
		got, err := checkedOp(c.op, c.a, c.b)
		switch {
		case c.want == nil && (err == nil || !strings.Contains(err.Error(), "integer overflow")):
			t.Errorf("%v %c %v: %v, %v; want an overflow", c.a, c.op, c.b, got, err)
		case c.want != nil && (err != nil || got != c.want):
			t.Errorf("%v %c %v: %v (%T), %v; want %v (%T)", c.a, c.op, c.b, got, got, err, c.want, c.want)
		}
	}
}

// A set_value expression and a filter that overflow fail, naming the
// operation; those that do not get expr's results.
func TestExpressionOverflow(t *testing.T) {
	set, err := Parse("r.yaml", []byte(`version: 1
slots:
  - {op: 7, slot: agg, key: int64, value: int64}
rules:
  - set_value: {op: 7, slot: agg, expr: 'value * 4611686018427387904'}
  - drop: 'op * 4611686018427387904 > 0'
  - set_value: {op: 7, slot: agg, expr: 'value * 3 - 1'}
`))
	if err != nil {
		t.Fatal(err)
	}
	var env Env
	if err := set.FillEnv(&env, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), le64(5)), Value: le64(5)}, 0); err != nil {
		t.Fatal(err)
	}
	var m vm.VM
	if v, err := set.Rules[0].SetValue.Program.Eval(&m, &env); err == nil || !strings.Contains(err.Error(), "integer overflow: 5 * 4611686018427387904 does not fit in 64 bits") {
		t.Errorf("set_value: %v, %v; want an overflow", v, err)
	}
	if v, err := set.Rules[1].Drop.Predicate.Eval(&m, &env); err == nil || !strings.Contains(err.Error(), "integer overflow") {
		t.Errorf("filter: %v, %v; want an overflow", v, err)
	}
	if v, err := set.Rules[2].SetValue.Program.Eval(&m, &env); err != nil || v != int64(14) && v != 14 {
		t.Errorf("set_value: %v (%T), %v; want 14", v, v, err)
	}
}
