package rules

import (
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/vm/runtime"
)

// expr adds, subtracts and multiplies 64-bit integers as Go does: an
// overflow wraps around, and `value * 100000000000000000` in a set_value
// would write a wrong number without a word. Expressions are compiled with
// checkedArith, which routes +, - and * through functions that compute
// what expr computes and fail, naming the operation, when the operands and
// expr's result are integers and that result is not the exact one (it
// wrapped around in the type expr chose). Other operands (floats, strings,
// times) get expr's result as it is. expr's % converts both operands to
// int first, so an id or a uint64 of 2^63 or more took its remainder as
// the negative number it wraps to (`op % 2 == 1` missed odd ids): % is
// routed through checkedMod, which computes the exact remainder.
//
// A float64 holds every integer only up to 2^53: beyond it, an integer
// converted to a float may change (2^53+1 becomes 2^53), and a result
// written back to integer state would differ from the exact one without a
// word. So an integer of magnitude above 2^53 takes part in no arithmetic
// with a float (+, -, * with a float operand, and /, which is always
// float division in expr): it is an error naming the operation. int(a / b)
// divides integers exactly, whatever their size.

// arithFuncs names the function each checked operator is routed through.
var arithFuncs = map[string]string{"+": "__checked_add", "-": "__checked_sub", "*": "__checked_mul", "%": "__checked_mod", "/": "__checked_div"}

// checkedArith is an expr patch: it replaces each +, -, *, % and / with a
// call of its arithFuncs function (int(a / b) with __int_div).
type checkedArith struct{}

func (checkedArith) Visit(node *ast.Node) {
	call := func(name string, args ...ast.Node) {
		ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: name}, Arguments: args})
	}
	switch n := (*node).(type) {
	case *ast.BinaryNode:
		if name, ok := arithFuncs[n.Operator]; ok {
			call(name, n.Left, n.Right)
		}
	case *ast.UnaryNode:
		if n.Operator == "-" {
			call("__checked_neg", n.Node)
		}
	case *ast.CallNode:
		// t.UnixNano() of a time outside 1678-2262 is "undefined" in Go:
		// a wrapped number.
		if m, ok := n.Callee.(*ast.MemberNode); ok && len(n.Arguments) == 0 && m.Node.Type() == timeType {
			if p, ok := m.Property.(*ast.StringNode); ok && p.Value == "UnixNano" {
				call("__unix_nano", m.Node)
			}
		}
	case *ast.BuiltinNode:
		// abs and int convert as expr does, failing where expr would
		// wrap around: abs of the least int64, int of a float or an
		// unsigned integer out of range; sum of a list adds with +.
		// int of a quotient, the way to divide integers (expr's / gives
		// a float64, which holds integers exactly only up to 2^53),
		// divides them exactly.
		if a, b, ok := intQuotient(n); ok {
			call("__int_div", a, b)
		} else if len(n.Arguments) == 1 && (n.Name == "abs" || n.Name == "int" || n.Name == "sum") {
			call("__checked_"+n.Name, n.Arguments[0])
		} else if len(n.Arguments) == 2 && n.Name == "bitshl" {
			// A shift that pushes bits out of the int64 wraps around.
			call("__checked_shl", n.Arguments[0], n.Arguments[1])
		} else if k, ok := bitArity[n.Name]; ok && len(n.Arguments) == k && !narrowInts(n.Arguments) {
			// The other bit functions, on an integer of 2^63 or more.
			call("__checked_"+n.Name, n.Arguments...)
		}
		// string of bytes (key_bytes, an undeclared slot's value) is
		// their text, where expr would print them as a list of numbers.
		if len(n.Arguments) == 1 && n.Name == "string" {
			call("__string", n.Arguments[0])
		}
	}
}

// intQuotient returns the operands of the division n is int() of:
// int(a / b), its / already routed through __checked_div (the patch visits
// a node's children first).
func intQuotient(n *ast.BuiltinNode) (a, b ast.Node, ok bool) {
	if n.Name != "int" || len(n.Arguments) != 1 {
		return nil, nil, false
	}
	switch div := n.Arguments[0].(type) {
	case *ast.BinaryNode:
		if div.Operator == "/" {
			return div.Left, div.Right, true
		}
	case *ast.CallNode:
		if id, isID := div.Callee.(*ast.IdentifierNode); isID && id.Value == arithFuncs["/"] && len(div.Arguments) == 2 {
			return div.Arguments[0], div.Arguments[1], true
		}
	}
	return nil, nil, false
}

// arithOptions are the options that make a compiled expression's integer
// arithmetic checked.
var arithOptions = append(bitOptions(),
	expr.Patch(checkedArith{}),
	expr.Function("__checked_add", func(p ...any) (any, error) { return checkedOp('+', p[0], p[1]) }),
	expr.Function("__checked_sub", func(p ...any) (any, error) { return checkedOp('-', p[0], p[1]) }),
	expr.Function("__checked_mul", func(p ...any) (any, error) { return checkedOp('*', p[0], p[1]) }),
	expr.Function("__checked_mod", func(p ...any) (any, error) { return checkedMod(p[0], p[1]) }),
	expr.Function("__checked_div", func(p ...any) (any, error) { return checkedDiv(p[0], p[1]) }),
	expr.Function("__checked_neg", func(p ...any) (any, error) { return checkedNeg(p[0]) }),
	expr.Function("__checked_abs", func(p ...any) (any, error) { return checkedAbs(p[0]) }),
	expr.Function("__checked_int", func(p ...any) (any, error) { return checkedInt(p[0]) }),
	expr.Function("__checked_sum", func(p ...any) (any, error) { return checkedSum(p[0]) }),
	expr.Function("__int_div", func(p ...any) (any, error) { return intDiv(p[0], p[1]) }),
	expr.Function("__checked_shl", func(p ...any) (any, error) { return checkedShl(p[0], p[1]) }),
	expr.Function("__unix_nano", func(p ...any) (any, error) { return unixNano(p[0]) }, new(func(time.Time) int64)),
	expr.Function("__string", func(p ...any) (any, error) {
		if b, ok := p[0].([]byte); ok {
			return string(b), nil
		}
		return builtin.String(p[0]), nil
	}),
)

// timeType is the type of expr's times (date(), now()).
var timeType = reflect.TypeFor[time.Time]()

// The times whose nanoseconds since 1970 an int64 holds.
var (
	minUnixNano = time.Unix(0, math.MinInt64)
	maxUnixNano = time.Unix(0, math.MaxInt64)
)

// unixNano is t.UnixNano(), an error where Go's would be "undefined" (a
// wrapped number): a time before 1678 or after 2262.
func unixNano(t any) (any, error) {
	tt, ok := t.(time.Time)
	if !ok {
		return nil, fmt.Errorf("UnixNano of %s, not a time", exprTypeName(reflect.TypeOf(t)))
	}
	if tt.Before(minUnixNano) || tt.After(maxUnixNano) {
		return nil, fmt.Errorf("integer overflow: %s.UnixNano(): nanoseconds since 1970 fit in a signed 64-bit integer only from %s to %s (UnixMilli covers them)", tt.Format(time.RFC3339Nano), minUnixNano.UTC().Format(time.RFC3339Nano), maxUnixNano.UTC().Format(time.RFC3339Nano))
	}
	return tt.UnixNano(), nil
}

// checkedMod returns a % b for integers a and b of any width and sign:
// the exact remainder, truncated toward zero as Go's % (its sign is a's),
// as an int; an error when b is 0, or when the remainder does not fit in
// an int64 (both operands unsigned and 2^63 or more). For other operands
// it is expr's %, which refuses them.
func checkedMod(a, b any) (any, error) {
	x, xs := signed(a)
	y, ys := signed(b)
	if xs && ys { // int and int64: the common case, without big numbers
		if y == 0 {
			return nil, fmt.Errorf("%v %% %v: integer divide by zero", a, b)
		}
		if y == -1 {
			return 0, nil // math.MinInt64 % -1 is 0, and so is every other
		}
		return int(x % y), nil
	}
	bx, ok1 := bigInt(a)
	by, ok2 := bigInt(b)
	if !ok1 || !ok2 {
		return runtime.Modulo(a, b), nil
	}
	if by.Sign() == 0 {
		return nil, fmt.Errorf("%v %% %v: integer divide by zero", a, b)
	}
	r := bx.Rem(bx, by)
	if !r.IsInt64() {
		return nil, fmt.Errorf("%v %% %v: the remainder does not fit in a signed 64-bit integer", a, b)
	}
	return int(r.Int64()), nil
}

// checkedNeg returns -x, or an error when x is an integer whose negation
// does not fit in an int64 (the least int64, an unsigned integer above
// 2^63). An unsigned integer's negation is an int (expr's would wrap
// around in the unsigned type); anything else's is expr's.
func checkedNeg(x any) (any, error) {
	if _, mag, ok := intParts(x); ok && isUnsignedValue(x) {
		// expr negates an unsigned integer in its own type, which wraps
		// around: -uint64(7) is 2^64-7. Its negation is a signed
		// integer, which holds down to -2^63.
		switch {
		case mag > 1<<63:
			return nil, fmt.Errorf("integer overflow: -%v does not fit in a signed 64-bit integer", x)
		case mag == 1<<63:
			return math.MinInt64, nil
		}
		return -int(mag), nil
	}
	r := runtime.Negate(x)
	if !exact('-', 0, x, r) {
		return nil, fmt.Errorf("integer overflow: -%v does not fit in a signed 64-bit integer", x)
	}
	return r, nil
}

// checkedAbs is expr's abs, failing on the least int64 (whose absolute
// value does not fit).
func checkedAbs(x any) (any, error) {
	if v, ok := signed(x); ok && v == math.MinInt64 {
		return nil, fmt.Errorf("integer overflow: abs(%d) does not fit in a signed 64-bit integer", v)
	}
	return builtin.Abs(x), nil
}

// checkedInt is expr's int, failing where the conversion would wrap
// around: a float that is not a number or out of the int64 range, an
// unsigned integer above the largest int64.
func checkedInt(x any) (any, error) {
	switch v := x.(type) {
	case float64:
		if math.IsNaN(v) || v >= math.MaxInt64 || v < math.MinInt64 {
			return nil, fmt.Errorf("int(%v): not an integer that fits in 64 bits", v)
		}
	case float32:
		if f := float64(v); math.IsNaN(f) || f >= math.MaxInt64 || f < math.MinInt64 {
			return nil, fmt.Errorf("int(%v): not an integer that fits in 64 bits", v)
		}
	case uint64:
		if v > math.MaxInt64 {
			return nil, fmt.Errorf("int(%d): does not fit in a signed 64-bit integer", v)
		}
	case uint:
		if uint64(v) > math.MaxInt64 {
			return nil, fmt.Errorf("int(%d): does not fit in a signed 64-bit integer", v)
		}
	}
	return builtin.Int(x), nil
}

// intDiv is int(a / b): for integers a and b, their exact quotient
// truncated toward zero (what int() of the float64 quotient is where that
// float is exact), an error when b is 0 or the quotient does not fit in
// an int64; for other operands, checkedInt of expr's a / b.
func intDiv(a, b any) (any, error) {
	x, ok1 := bigInt(a)
	y, ok2 := bigInt(b)
	if !ok1 || !ok2 {
		if isZero(b) {
			return nil, fmt.Errorf("int(%v / %v): division by zero", a, b)
		}
		return checkedInt(runtime.Divide(a, b))
	}
	if y.Sign() == 0 {
		return nil, fmt.Errorf("int(%v / %v): integer division by zero", a, b)
	}
	q := x.Quo(x, y)
	if !q.IsInt64() {
		return nil, fmt.Errorf("int(%v / %v): the quotient does not fit in a signed 64-bit integer", a, b)
	}
	return int(q.Int64()), nil
}

// checkedSum is expr's sum of a list, adding with checkedOp's +.
func checkedSum(list any) (any, error) {
	v := reflect.ValueOf(list)
	if v.Kind() != reflect.Slice && v.Kind() != reflect.Array {
		return nil, fmt.Errorf("sum: %T is not a list", list)
	}
	var acc any = 0
	for i := range v.Len() {
		var err error
		if acc, err = checkedOp('+', acc, v.Index(i).Interface()); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

// checkedDiv is expr's a / b (a float64), or an error when an operand is
// an integer that no float64 holds exactly (see floatExact), or when b is
// zero: expr's quotient would be an infinity or NaN, which a rule then
// compares or writes without a word.
func checkedDiv(a, b any) (any, error) {
	if err := floatExact('/', a, b, true); err != nil {
		return nil, err
	}
	if isZero(b) {
		return nil, fmt.Errorf("%v / %v: division by zero", num{a}, num{b})
	}
	return runtime.Divide(a, b), nil
}

// isZero reports whether v is a number equal to zero (an integer of any
// width, or a float, -0 included).
func isZero(v any) bool {
	switch x := v.(type) {
	case float64:
		return x == 0
	case float32:
		return x == 0
	}
	_, mag, ok := intParts(v)
	return ok && mag == 0
}

// isUnsignedValue reports whether v is an unsigned integer.
func isUnsignedValue(v any) bool {
	switch v.(type) {
	case uint, uint8, uint16, uint32, uint64:
		return true
	}
	return false
}

// maxExactFloatInt is 2^53: every integer of at most this magnitude is a
// float64, and so is its conversion back.
const maxExactFloatInt = 1 << 53

// floatExact returns an error when a op b converts an integer operand of
// magnitude above 2^53 to a float64 (which may change it): always for /,
// else (+, -, *) when the other operand is a float.
func floatExact(op byte, a, b any, division bool) error {
	_, af := a.(float64)
	_, bf := b.(float64)
	if _, ok := a.(float32); ok {
		af = true
	}
	if _, ok := b.(float32); ok {
		bf = true
	}
	for _, c := range [...]struct {
		x     any
		other bool
	}{{a, bf}, {b, af}} {
		if !division && !c.other {
			continue
		}
		if x, ok := bigInt(c.x); ok && x.CmpAbs(big.NewInt(maxExactFloatInt)) > 0 {
			hint := ""
			if division {
				hint = " (int(a / b) divides integers exactly)"
			}
			return fmt.Errorf("%v %c %v: the integer %v is beyond 2^53, where a float64 cannot hold every integer, and this operation makes it one%s", num{a}, op, num{b}, c.x, hint)
		}
	}
	return nil
}

// num is an operand as a message shows it: a float with its point (1.0,
// 0.0), so that it does not read as an integer operand.
type num struct{ v any }

func (n num) String() string {
	var f float64
	switch x := n.v.(type) {
	case float64:
		f = x
	case float32:
		f = float64(x)
	default:
		return fmt.Sprint(n.v)
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEnN") { // not 1.5, 1e+21, NaN, Inf
		s += ".0"
	}
	return s
}

// checkedOp returns a op b as expr computes it, or an error when a and b
// are integers and expr's integer result is not the exact one, or when an
// integer beyond 2^53 meets a float (see floatExact).
func checkedOp(op byte, a, b any) (any, error) {
	if err := floatExact(op, a, b, false); err != nil {
		return nil, err
	}
	var r any
	switch op {
	case '+':
		r = runtime.Add(a, b)
	case '-':
		r = runtime.Subtract(a, b)
	default:
		r = runtime.Multiply(a, b)
	}
	if d, ok := r.(time.Duration); ok {
		// A duration is nanoseconds in an int64 (about 292 years): a sum
		// or product past it wraps around, and a difference of two times
		// stops at its limit.
		if !exactDuration(op, a, b, d) {
			return nil, fmt.Errorf("duration overflow: %v %c %v does not fit in a duration (nanoseconds in a signed 64-bit integer, about 292 years)", a, op, b)
		}
		return r, nil
	}
	if !exact(op, a, b, r) {
		return nil, fmt.Errorf("integer overflow: %v %c %v does not fit in a signed 64-bit integer", a, op, b)
	}
	return r, nil
}

// exactDuration reports whether d, expr's duration result of a op b, is
// the exact one.
func exactDuration(op byte, a, b any, d time.Duration) bool {
	if ta, ok := a.(time.Time); ok {
		tb, ok := b.(time.Time)
		return !ok || tb.Add(d).Equal(ta) // time - time
	}
	return exact(op, asInt64(a), asInt64(b), int64(d))
}

// asInt64 returns a duration as its int64 of nanoseconds, and anything
// else as it is.
func asInt64(v any) any {
	if d, ok := v.(time.Duration); ok {
		return int64(d)
	}
	return v
}

// exact reports whether r, expr's result of a op b, is the exact result
// when a, b and r are integers (of whatever signedness and width expr
// chose for r); anything else is taken as exact.
func exact(op byte, a, b, r any) bool {
	x, xs := signed(a)
	y, ys := signed(b)
	z, zs := signed(r)
	if xs && ys && zs { // int and int64: the common case, without big numbers
		switch op {
		case '+':
			return !((x > 0 && y > 0 && z < 0) || (x < 0 && y < 0 && z >= 0))
		case '-':
			return !((x >= 0 && y < 0 && z < 0) || (x < 0 && y > 0 && z >= 0))
		default:
			if x == 0 || y == 0 {
				return true
			}
			if (x == -1 && y == math.MinInt64) || (y == -1 && x == math.MinInt64) {
				return false
			}
			return z/y == x
		}
	}
	bx, ok1 := bigInt(a)
	by, ok2 := bigInt(b)
	bz, ok3 := bigInt(r)
	if !ok1 || !ok2 || !ok3 {
		return true
	}
	switch op {
	case '+':
		bx.Add(bx, by)
	case '-':
		bx.Sub(bx, by)
	default:
		bx.Mul(bx, by)
	}
	return bx.Cmp(bz) == 0
}

// signed returns v as an int64 if it is an int or an int64.
func signed(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

// bigInt returns v as a big integer if it is an integer of any width.
func bigInt(v any) (*big.Int, bool) {
	switch x := v.(type) {
	case int:
		return big.NewInt(int64(x)), true
	case int8:
		return big.NewInt(int64(x)), true
	case int16:
		return big.NewInt(int64(x)), true
	case int32:
		return big.NewInt(int64(x)), true
	case int64:
		return big.NewInt(x), true
	case uint:
		return new(big.Int).SetUint64(uint64(x)), true
	case uint8:
		return new(big.Int).SetUint64(uint64(x)), true
	case uint16:
		return new(big.Int).SetUint64(uint64(x)), true
	case uint32:
		return new(big.Int).SetUint64(uint64(x)), true
	case uint64:
		return new(big.Int).SetUint64(x), true
	}
	return nil, false
}
