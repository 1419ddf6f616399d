package rules

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
)

// expr's bit functions convert their operands to int, so an operator id or
// a uint64 value of 2^63 or more took part as the negative number it wraps
// to: bitor(op, 0) == op held for no such id, and bitshr(op, 1) was
// negative. checkedArith routes them through the functions of bitOptions,
// which give expr's result where every operand fits in an int64 and
// otherwise compute on the integers' values, as two's complement of
// unbounded width: a result no 64-bit integer holds, such as bitnot(op) or
// bitxor(op, -1), is an error. A call whose operands are all of signed or
// narrower unsigned types (key_group, subtask, literals) is left to expr.

// bitArity gives the number of operands of each bit function bitOptions
// takes over (bitshl has checkedShl).
var bitArity = map[string]int{"bitand": 2, "bitor": 2, "bitxor": 2, "bitnand": 2, "bitnot": 1, "bitshr": 2, "bitushr": 2}

// bitOptions are the functions checkedArith routes expr's bit functions
// through: __checked_bitand for bitand, and so on.
func bitOptions() []expr.Option {
	var opts []expr.Option
	for name := range bitArity {
		builtin := exprBuiltin(name).Func
		opts = append(opts, expr.Function("__checked_"+name, func(p ...any) (any, error) { return checkedBits(name, builtin, p) }))
	}
	return opts
}

// checkedBits is bit function name of p: builtin's result (expr's) when
// no operand is an unsigned integer above the largest int64, else
// wideBits'.
func checkedBits(name string, builtin func(...any) (any, error), p []any) (any, error) {
	for _, a := range p {
		if isWide(a) {
			return wideBits(name, builtin, p)
		}
	}
	return builtin(p...)
}

// narrowInts reports whether every one of args is statically of an integer
// type that an int64 holds whole, so that expr's bit functions are exact
// for them.
func narrowInts(args []ast.Node) bool {
	for _, a := range args {
		t := a.Type()
		if t == nil {
			return false
		}
		switch t.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint8, reflect.Uint16, reflect.Uint32:
		default:
			return false
		}
	}
	return true
}

// isWide reports whether v is an integer above the largest int64 (an
// unsigned one).
func isWide(v any) bool {
	neg, mag, ok := intParts(v)
	return ok && !neg && mag > math.MaxInt64
}

// wideInt is an integer of up to 65 bits as the low 128 bits of its two's
// complement: hi, its high 64 bits, is 0 or -1 (its sign), lo the low 64.
type wideInt struct {
	hi int64
	lo uint64
}

// toWide returns v as a wideInt if it is an integer of any width.
func toWide(v any) (wideInt, bool) {
	neg, mag, ok := intParts(v)
	if neg {
		return wideInt{-1, -mag}, ok // (mag is 1 to 2^63)
	}
	return wideInt{0, mag}, ok
}

// int64 returns w as an int64, if one holds it.
func (w wideInt) int64() (int64, bool) {
	return int64(w.lo), w.hi == int64(w.lo)>>63
}

// value returns w as expr's integers are: an int when an int64 holds it,
// else a uint64 when one does; false when neither does.
func (w wideInt) value() (any, bool) {
	if x, ok := w.int64(); ok {
		return int(x), true
	}
	if w.hi == 0 {
		return w.lo, true
	}
	return nil, false
}

// shiftCount returns operand b of a shift, as expr takes it: an error when
// it is negative (expr's), 64 for any count of 64 or more.
func shiftCount(b any) (uint, error) {
	n, ok := toWide(b)
	if !ok {
		return 0, fmt.Errorf("cannot use %T as argument (type int)", b)
	}
	if n.hi < 0 {
		return 0, fmt.Errorf("invalid operation: negative shift count %v (type int)", b)
	}
	return uint(min(n.lo, 64)), nil
}

// wideBits is bit function name of p, one of which is an unsigned integer
// above the largest int64, computed on their values (builtin, expr's
// function, says what is wrong with an operand that is no integer).
func wideBits(name string, builtin func(...any) (any, error), p []any) (any, error) {
	x, ok := toWide(p[0])
	var y wideInt
	if len(p) > 1 && ok && !strings.HasSuffix(name, "shr") {
		y, ok = toWide(p[1])
	}
	if !ok {
		return builtin(p...) // expr's error for what is not an integer
	}
	var z wideInt
	switch name {
	case "bitand":
		z = wideInt{x.hi & y.hi, x.lo & y.lo}
	case "bitor":
		z = wideInt{x.hi | y.hi, x.lo | y.lo}
	case "bitxor":
		z = wideInt{x.hi ^ y.hi, x.lo ^ y.lo}
	case "bitnand":
		z = wideInt{x.hi &^ y.hi, x.lo &^ y.lo}
	case "bitnot":
		z = wideInt{^x.hi, ^x.lo}
	default: // bitshr, bitushr
		n, err := shiftCount(p[1])
		if err != nil {
			return nil, err
		}
		switch {
		case name == "bitushr":
			// expr's unsigned shift takes the operand's 64 bits, an
			// int's as unsigned.
			r := uint64(0)
			if n < 64 {
				r = x.lo >> n
			}
			if x.hi < 0 {
				return int(int64(r)), nil
			}
			z = wideInt{0, r}
		case n == 0:
			z = x
		case n < 64:
			z = wideInt{x.hi, x.lo>>n | uint64(x.hi)<<(64-n)}
		default:
			z = wideInt{x.hi, uint64(x.hi)}
		}
	}
	if v, ok := z.value(); ok {
		return v, nil
	}
	args := fmt.Sprint(p[0])
	if len(p) > 1 {
		args += fmt.Sprintf(", %v", p[1])
	}
	return nil, fmt.Errorf("integer overflow: %s(%s) is -%d, which no 64-bit integer holds", name, args, -z.lo)
}

// checkedShl returns bitshl(a, b), a shifted left by b bits, for integers
// a and b: an error where expr's would wrap around (a bit, or the sign,
// shifted out of the int64; an integer of 2^63 or more shifted at all) or
// where b is not a shift of 0 to 63 bits.
func checkedShl(a, b any) (any, error) {
	x, xs := toWide(a)
	n, ns := toWide(b)
	if !xs || !ns {
		return nil, fmt.Errorf("bitshl(%v, %v): want two integers", a, b)
	}
	if n.hi != 0 || n.lo > 63 {
		return nil, fmt.Errorf("bitshl(%v, %v): a shift of %v bits; an int64 shifts by 0 to 63", a, b, b)
	}
	if v, ok := x.int64(); ok {
		if r := v << n.lo; r>>n.lo == v {
			return int(r), nil
		}
	} else if n.lo == 0 {
		return x.lo, nil
	}
	return nil, fmt.Errorf("integer overflow: bitshl(%v, %v) does not fit in a signed 64-bit integer", a, b)
}
