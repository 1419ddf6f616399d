package rules

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/expr-lang/expr"
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

// % gives the exact remainder of integers of any width and sign (expr's
// own wrapped an id or a uint64 of 2^63 or more to a negative number
// first), an error for a zero divisor and for a remainder no int64 holds.
func TestCheckedModulo(t *testing.T) {
	for _, c := range []struct {
		a, b any
		want any // a string: the error's text
	}{
		{7, 3, 1},
		{-7, 3, -1}, // the sign of the dividend, as Go's %
		{7, -3, 1},
		{math.MinInt64, -1, 0},
		{int64(math.MaxInt64), 10, 7},
		{uint64(math.MaxUint64), 2, 1},
		{uint64(math.MaxUint64), 10, 5},
		{uint64(9223372036854775809), 2, 1},
		{uint64(1 << 63), uint64(3), 2},
		{5, uint64(math.MaxUint64), 5},
		{uint64(math.MaxUint64), uint64(math.MaxUint64 - 1), 1},
		{uint64(math.MaxUint64), uint64(1 << 63), math.MaxInt64},
		{uint64(math.MaxUint64 - 1), uint64(math.MaxUint64), "does not fit in a signed 64-bit integer"},
		{7, 0, "integer divide by zero"},
		{uint64(1 << 63), uint32(0), "integer divide by zero"},
	} {
		got, err := checkedMod(c.a, c.b)
		checkResult(t, fmt.Sprintf("%v %% %v", c.a, c.b), got, err, c.want)
	}
	// In a filter: every id here is odd.
	holdsForOps(t, "op % 2 == 1 && op % 10 == 5", math.MaxUint64, 9223372036854775815, 5, 15)
}

// holdsForOps checks that filter holds for rows of each of ops.
func holdsForOps(t *testing.T, filter string, ops ...uint64) {
	t.Helper()
	set, err := Parse("r.yaml", []byte("version: 1\nrules:\n  - drop: '"+filter+"'\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		var env Env
		if err := set.FillEnv(&env, savepoint.Row{Op: op, Key: savepoint.EncodeKeyedKey([]byte("agg"), le64(1)), Value: le64(1)}, 0); err != nil {
			t.Fatal(err)
		}
		var m vm.VM
		v, err := set.Rules[0].Drop.Predicate.Eval(&m, &env)
		if err != nil || !v {
			t.Errorf("%s, op %d: %v, %v; want true", filter, op, v, err)
		}
	}
}

// evalOnAgg evaluates expr as a rule of kind ("drop" or "set_value") on
// op 7's int64 slot agg, on a row whose value is value: its result, or its
// error's text.
func evalOnAgg(t *testing.T, kind, expr string, value int64) string {
	t.Helper()
	set, err := Parse("r.yaml", []byte("version: 1\nslots:\n  - {op: 7, slot: agg, key: int64, value: int64}\nrules:\n  - "+kind+": {op: 7, slot: agg, expr: '"+expr+"'}\n"))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	var env Env
	if err := set.FillEnv(&env, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), le64(1)), Value: le64(value)}, 0); err != nil {
		t.Fatal(err)
	}
	var m vm.VM
	var v any
	if kind == "drop" {
		v, err = set.Rules[0].Drop.Predicate.Eval(&m, &env)
	} else {
		v, err = set.Rules[0].SetValue.Program.Eval(&m, &env)
	}
	if err != nil {
		return err.Error()
	}
	return fmt.Sprint(v)
}

// An integer beyond 2^53 meets no float: / (always a float division) and
// +, -, * with a float operand are errors for it, where the float would
// not be the integer; int(a / b) divides it exactly. Below 2^53, and
// between integers, the results are expr's.
func TestFloatExact(t *testing.T) {
	const big = 1<<53 + 1
	for _, c := range []struct {
		expr  string
		value int64
		want  string // the result, or the error's text
	}{
		{"value / 1 > 0", big, "the integer 9007199254740993 is beyond 2^53"},
		{"value / 2 > 0", -big, "the integer -9007199254740993 is beyond 2^53"},
		{"1 / value > 0", big, "beyond 2^53"},
		{"value * 0.5 > 0", big, "9007199254740993 * 0.5: the integer 9007199254740993 is beyond 2^53"},
		{"value + 0.0 > 0", big, "beyond 2^53"},
		{"0.5 - value < 0", big, "beyond 2^53"},
		{"int(value / 2) == 4503599627370496", big, "true"},
		{"value / 2 == 4503599627370496", 1 << 53, "true"},
		{"value * 2 > 0", big, "true"},
		{"value * 0.5 == 10.5", 21, "true"},
		{"value / 4 == 5.25", 21, "true"},
	} {
		if got := evalOnAgg(t, "drop", c.expr, c.value); !strings.Contains(got, c.want) {
			t.Errorf("%s of %d: %s, want %s", c.expr, c.value, got, c.want)
		}
	}
	// A quotient is still a float64 to the checker: an integer slot's
	// set_value refuses it at load.
	_, err := Parse("r.yaml", []byte("version: 1\nslots:\n  - {op: 7, slot: agg, key: int64, value: int64}\nrules:\n  - set_value: {op: 7, slot: agg, expr: 'value / 2'}\n"))
	if err == nil || !strings.Contains(err.Error(), "'expr' yields float64") {
		t.Errorf("set_value of a quotient: %v, want it refused at load", err)
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
	if v, err := set.Rules[0].SetValue.Program.Eval(&m, &env); err == nil || !strings.Contains(err.Error(), "integer overflow: 5 * 4611686018427387904 does not fit in a signed 64-bit integer") {
		t.Errorf("set_value: %v, %v; want an overflow", v, err)
	}
	if v, err := set.Rules[1].Drop.Predicate.Eval(&m, &env); err == nil || !strings.Contains(err.Error(), "integer overflow") {
		t.Errorf("filter: %v, %v; want an overflow", v, err)
	}
	if v, err := set.Rules[2].SetValue.Program.Eval(&m, &env); err != nil || v != int64(14) && v != 14 {
		t.Errorf("set_value: %v (%T), %v; want 14", v, v, err)
	}
}

// Unary minus, abs, int() and sum fail where expr would wrap around, and
// compute what expr computes elsewhere.
func TestCheckedConversions(t *testing.T) {
	set, err := Parse("r.yaml", []byte(`version: 1
slots:
  - {op: 7, slot: agg, key: int64, value: int64}
  - {op: 7, slot: l, key: string, value: list<int64>}
rules:
  - set_value: {op: 7, slot: agg, expr: '-value'}
  - set_value: {op: 7, slot: agg, expr: 'abs(value)'}
  - set_value: {op: 7, slot: agg, expr: 'int(value * 1.5)'}
  - set_value: {op: 7, slot: agg, expr: 'int(float(value) * 2.0)'}
  - drop: {op: 7, slot: l, expr: 'sum(value) < 0'}
  - set_value: {op: 7, slot: agg, expr: 'int("12") + abs(-3) - -2 + int(2.9)'}
`))
	if err != nil {
		t.Fatal(err)
	}
	var m vm.VM
	eval := func(rule int, r savepoint.Row) (any, error) {
		var env Env
		if err := set.FillEnv(&env, r, 0); err != nil {
			t.Fatal(err)
		}
		if p := set.Rules[rule].SetValue; p != nil {
			return p.Program.Eval(&m, &env)
		}
		return set.Rules[rule].Drop.Predicate.Eval(&m, &env)
	}
	agg := func(v int64) savepoint.Row {
		return savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), le64(1)), Value: le64(v)}
	}
	lv, err := set.SlotDecl(7, "l").ValueCodec.Encode([]any{int64(math.MaxInt64), int64(1)})
	if err != nil {
		t.Fatal(err)
	}
	list := savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("l"), []byte("k")), Value: lv}
	for _, c := range []struct {
		rule int
		row  savepoint.Row
		want string
	}{
		{0, agg(math.MinInt64), "integer overflow: -"},
		{1, agg(math.MinInt64), "integer overflow: abs(-9223372036854775808)"},
		{2, agg(math.MaxInt64), "9223372036854775807 * 1.5: the integer 9223372036854775807 is beyond 2^53"},
		{3, agg(math.MaxInt64), "not an integer that fits in 64 bits"},
		{4, list, "integer overflow: 9223372036854775807 + 1"},
	} {
		if v, err := eval(c.rule, c.row); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("rule %d: %v, %v; want an error %q", c.rule+1, v, err, c.want)
		}
	}
	for rule, want := range map[int]int64{0: -5, 1: 5, 2: 7, 3: 10} {
		if v, err := eval(rule, agg(5)); err != nil || fmt.Sprint(v) != fmt.Sprint(want) {
			t.Errorf("rule %d of 5: %v, %v; want %d", rule+1, v, err, want)
		}
	}
	if v, err := eval(1, agg(-5)); err != nil || fmt.Sprint(v) != "5" {
		t.Errorf("abs(-5): %v, %v", v, err)
	}
	if v, err := eval(5, agg(0)); err != nil || fmt.Sprint(v) != "19" {
		t.Errorf("int(\"12\") + abs(-3) - -2 + int(2.9): %v, %v; want 19", v, err)
	}
}

// string() of bytes is their text (expr would print a list of numbers), so
// that an undeclared slot's value and key_bytes compare with strings.
func TestStringOfBytes(t *testing.T) {
	set, err := Parse("r.yaml", []byte("version: 1\nrules:\n  - drop: 'string(value) == \"p\" && string(key_bytes) == \"user-7\" && string(7) == \"7\"'\n"))
	if err != nil {
		t.Fatal(err)
	}
	var env Env
	if err := set.FillEnv(&env, savepoint.Row{Op: 1, Key: savepoint.EncodeKeyedKey([]byte("s"), []byte("user-7")), Value: []byte("p")}, 0); err != nil {
		t.Fatal(err)
	}
	var m vm.VM
	if ok, err := set.Rules[0].Drop.Predicate.Eval(&m, &env); err != nil || !ok {
		t.Errorf("string of bytes: %v, %v; want true", ok, err)
	}
}

// int(a / b) of integers divides them exactly, truncating toward zero as
// int() of the quotient does, where expr's / gives a float64 that rounds
// integers above 2^53 (7261571945539477493 / 2 came out ...752, not
// ...746); dividing by zero, or the least int64 by -1, fails. Other
// operands get int() of expr's quotient.
func TestIntQuotient(t *testing.T) {
	for _, c := range []struct {
		expr  string
		value int64
		want  string // the result, or the error's text
	}{
		{"int(value / 2)", 7261571945539477493, "3630785972769738746"},
		{"int(value / 3)", -7, "-2"},
		{"int(value / -2)", 7, "-3"},
		{"int(value / (value - value))", 5, "integer division by zero"},
		{"int(value / -1)", math.MinInt64, "does not fit in a signed 64-bit integer"},
		{"int(value / 2.5)", 5, "2"},
		{"int(value / 4) * 4 + value % 4", 9007199254740993, "9007199254740993"},
	} {
		if got := evalOnAgg(t, "set_value", c.expr, c.value); !strings.Contains(got, c.want) {
			t.Errorf("%s of %d: %s, want %s", c.expr, c.value, got, c.want)
		}
	}
}

// Unary minus negates an unsigned integer to a signed one (expr's own
// wrapped it around in the unsigned type, and the check then called -7 an
// overflow); / by zero is an error, where expr gives an infinity or NaN.
func TestCheckedNegationAndDivision(t *testing.T) {
	for _, c := range []struct {
		x    any
		want any // nil: an overflow
	}{
		{uint64(7), -7},
		{uint64(0), 0},
		{uint8(255), -255},
		{uint64(1 << 63), math.MinInt64},
		{uint64(1<<63 + 1), nil},
		{uint64(math.MaxUint64), nil},
		{7, -7},
		{math.MinInt64, nil},
		{int64(-5), int64(5)},
		{1.5, -1.5},
	} {
		got, err := checkedNeg(c.x)
		switch {
		case c.want == nil && (err == nil || !strings.Contains(err.Error(), "integer overflow")):
			t.Errorf("-%v: %v, %v; want an overflow", c.x, got, err)
		case c.want != nil && (err != nil || got != c.want):
			t.Errorf("-%v (%T): %v (%T), %v; want %v (%T)", c.x, c.x, got, got, err, c.want, c.want)
		}
	}
	for _, c := range []struct {
		a, b any
		want any // nil: division by zero
	}{
		{7, 2, 3.5},
		{7, 0, nil},
		{7.5, 0.0, nil},
		{-1.0, math.Copysign(0, -1), nil},
		{0, 0, nil},
		{uint64(3), uint8(0), nil},
		{3, 0.5, 6.0},
	} {
		got, err := checkedDiv(c.a, c.b)
		switch {
		case c.want == nil && (err == nil || !strings.Contains(err.Error(), "division by zero")):
			t.Errorf("%v / %v: %v, %v; want division by zero", c.a, c.b, got, err)
		case c.want != nil && (err != nil || got != c.want):
			t.Errorf("%v / %v: %v, %v; want %v", c.a, c.b, got, err, c.want)
		}
	}
	// A float operand is shown as one: 10 / 0.0, not 10 / 0.
	if _, err := checkedDiv(10, 0.0); err == nil || err.Error() != "10 / 0.0: division by zero" {
		t.Errorf("10 / 0.0: %v", err)
	}
	if _, err := checkedOp('+', int64(math.MaxInt64), 1.0); err == nil || !strings.Contains(err.Error(), "9223372036854775807 + 1.0: the integer") || strings.Contains(err.Error(), "int(a / b)") {
		t.Errorf("max int64 + 1.0: %v, want the float shown as one and no hint of int(a / b)", err)
	}
	if got, err := intDiv(7.0, 0.0); err == nil || !strings.Contains(err.Error(), "division by zero") {
		t.Errorf("int(7.0 / 0.0): %v, %v; want division by zero", got, err)
	}
	// In a rule: -value of a uint64 slot, -op.
	set, err := Parse("r.yaml", []byte(`version: 1
slots:
  - {op: 7, slot: u, key: uint64, value: uint64}
rules: []
`))
	if err != nil {
		t.Fatal(err)
	}
	var m vm.VM
	for src, want := range map[string]bool{"-value < 0": true, "-value == -1519": true, "-op == -7": true, "abs(-op) == 7": true, "value / 2 > 759": true} {
		p, err := set.CompileFilter(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		var env Env
		if err := set.FillEnv(&env, declaredRow(t, set, 7, "u", uint64(37), uint64(1519)), 0); err != nil {
			t.Fatal(err)
		}
		if got, err := p.Eval(&m, &env); err != nil || got != want {
			t.Errorf("%s: %v, %v; want %v", src, got, err, want)
		}
	}
}

// Durations and times: a sum, product or difference that a duration
// (nanoseconds in an int64) does not hold, and UnixNano of a time outside
// 1678-2262, are errors where expr wraps around or stops at the limit.
func TestDurationOverflow(t *testing.T) {
	for _, c := range []struct {
		src  string
		want any    // nil: an error
		err  string // the error holds it
	}{
		{`int(duration("2562047h") * 2)`, nil, "duration overflow: 2562047h0m0s * 2 does not fit in a duration"},
		{`int(duration("2562047h") + duration("2562047h"))`, nil, "duration overflow"},
		{`int(duration("-2562047h") - duration("2562047h"))`, nil, "duration overflow"},
		{`int(date("2262-01-01") - date("1700-01-01"))`, nil, "duration overflow"},
		{`date("2300-01-01").UnixNano()`, nil, "integer overflow: 2300-01-01T00:00:00Z.UnixNano()"},
		{`date("1600-01-01").UnixNano()`, nil, "integer overflow"},
		{`date("2200-01-01").UnixNano()`, int64(7258118400000000000), ""},
		{`date("2300-01-01").UnixMilli()`, int64(10413792000000), ""},
		{`int(duration("1h") * 3 - duration("1m"))`, 10740000000000, ""},
		{`int(date("2020-01-02") - date("2020-01-01"))`, 86400000000000, ""},
	} {
		p, err := expr.Compile(c.src, arithOptions...)
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		got, err := expr.Run(p, nil)
		switch {
		case c.want == nil && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s = %v, %v; want an error holding %q", c.src, got, err, c.err)
		case c.want != nil && (err != nil || got != c.want):
			t.Errorf("%s = %v (%T), %v; want %v (%T)", c.src, got, got, err, c.want, c.want)
		}
	}
	// UnixNano keeps its type: a set_value of it on an int64 slot loads.
	if _, err := Parse("r.yaml", []byte("version: 1\nslots:\n  - {op: 7, slot: s, key: int64, value: int64}\nrules:\n  - set_value: {op: 7, slot: s, expr: 'date(\"2200-01-01\").UnixNano()'}\n")); err != nil {
		t.Errorf("set_value of UnixNano: %v", err)
	}
}

// The bit functions take an id or a uint64 of 2^63 or more by its value,
// not as the negative int it wraps to; a result no 64-bit integer holds is
// an error; where every operand fits in an int64 the result is expr's.
func TestCheckedBits(t *testing.T) {
	const id = uint64(11678514624188656593) // 0xA212_6B2C_DEF8_2BD1
	for _, c := range []struct {
		name string
		args []any
		want any // a string: the error's text
	}{
		{"bitor", []any{id, 0}, id},
		{"bitand", []any{id, 255}, int(id & 255)},
		{"bitand", []any{id, -1}, id},
		{"bitand", []any{id, -256}, id &^ 255},
		{"bitxor", []any{id, id}, 0},
		{"bitxor", []any{id, uint64(1 << 63)}, int(id &^ (1 << 63))},
		{"bitxor", []any{id, -1}, "which no 64-bit integer holds"},
		{"bitor", []any{id, -2}, -1},
		{"bitnand", []any{id, uint64(1 << 63)}, int(id &^ (1 << 63))},
		{"bitnot", []any{id}, "integer overflow: bitnot(11678514624188656593)"},
		{"bitshr", []any{id, 1}, int(id >> 1)},
		{"bitshr", []any{id, 0}, id},
		{"bitshr", []any{id, 64}, 0},
		{"bitshr", []any{-8, uint64(1 << 63)}, -1},
		{"bitushr", []any{id, 4}, int(id >> 4)},
		{"bitushr", []any{id, 0}, id},
		{"bitushr", []any{-1, uint64(1 << 63)}, 0},
		{"bitshr", []any{id, -1}, "invalid operation: negative shift count -1 (type int)"},
		{"bitand", []any{id, uint32(0xFFFF_FFFF)}, int(id & 0xFFFF_FFFF)},
		{"bitor", []any{int8(-1), id}, -1},
		{"bitxor", []any{uint64(1<<63) - 1, uint64(1 << 63)}, uint64(math.MaxUint64)},
		{"bitnot", []any{uint64(1 << 63)}, "integer overflow: bitnot(9223372036854775808) is -9223372036854775809, which no"},
		{"bitand", []any{id, 1.5}, "cannot use float64"},
		// Every operand an int64: expr's results, its 64-bit patterns.
		{"bitushr", []any{-1, 1}, math.MaxInt64},
		{"bitnot", []any{5}, -6},
		{"bitxor", []any{-1, 5}, -6},
		{"bitand", []any{uint64(12), 10}, 8},
	} {
		got, err := checkedBits(c.name, exprBuiltin(c.name).Func, c.args)
		checkResult(t, fmt.Sprint(c.name, c.args), got, err, c.want)
	}
	for _, c := range []struct {
		a, b any
		want any // a string: the error's text
	}{
		{id, 0, id},
		{id, 1, "integer overflow: bitshl(11678514624188656593, 1) does not fit"},
		{uint64(5), uint32(2), 20},
		{-3, 1, -6},
		{-1, 63, math.MinInt64},
		{1, 63, "integer overflow"},
		{3, 63, "integer overflow"},
		{1, 64, "a shift of 64 bits"},
		{1, uint64(1 << 63), "a shift of 9223372036854775808 bits"},
		{1, -1, "a shift of -1 bits"},
		{1.5, 1, "want two integers"},
	} {
		got, err := checkedShl(c.a, c.b)
		checkResult(t, fmt.Sprintf("bitshl(%v, %v)", c.a, c.b), got, err, c.want)
	}
	// A call of no operands is no bit function's: now() is not routed.
	if _, err := expr.Compile("now()", slices.Concat([]expr.Option{expr.Env(Env{})}, exprFunctions, arithOptions)...); err != nil {
		t.Errorf("now() with the checked arithmetic: %v", err)
	}
	// In a filter, over ids on both sides of 2^63.
	holdsForOps(t, "bitor(op, 0) == op && bitshr(op, 1) >= 0 && bitand(op, 1) == op % 2", id, math.MaxUint64, 1<<63, 7, 42)
}

// checkResult checks the result of a checked operation, what: got and err
// against want, a value (of its type too) or, a string, text the error
// holds.
func checkResult(t *testing.T, what string, got any, err error, want any) {
	t.Helper()
	if w, ok := want.(string); ok {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %v, %v; want an error with %q", what, got, err, w)
		}
	} else if err != nil || got != want {
		t.Errorf("%s: %v (%T), %v; want %v (%T)", what, got, got, err, want, want)
	}
}
