package rules

import (
	"fmt"
	"math"
	"math/big"

	"github.com/expr-lang/expr"
)

// expr's bit functions convert their operands to int, so an operator id or
// a uint64 value of 2^63 or more took part as the negative number it wraps
// to: bitor(op, 0) == op held for no such id, and bitshr(op, 1) was
// negative. checkedArith routes them through checkedBits, which gives
// expr's result where every operand fits in an int64 and otherwise
// computes on the integers' values (as two's complement of unbounded
// width, as math/big does): a result no 64-bit integer holds, such as
// bitnot(op) or bitxor(op, -1), is an error.

// bitArity gives the number of operands of each bit function checkedBits
// takes over (bitshl has checkedShl).
var bitArity = map[string]int{"bitand": 2, "bitor": 2, "bitxor": 2, "bitnand": 2, "bitnot": 1, "bitshr": 2, "bitushr": 2}

// bitOptions are the functions checkedArith routes expr's bit functions
// through: __checked_bitand for bitand, and so on.
func bitOptions() []expr.Option {
	var opts []expr.Option
	for name := range bitArity {
		opts = append(opts, expr.Function("__checked_"+name, func(p ...any) (any, error) { return checkedBits(name, p...) }))
	}
	return opts
}

// checkedBits is expr's bit function name of args: expr's own result when
// no operand is an unsigned integer above the largest int64, else the
// exact one (see above).
func checkedBits(name string, args ...any) (any, error) {
	wide := false
	for _, a := range args {
		if u, ok := a.(uint64); ok && u > math.MaxInt64 {
			wide = true
		} else if u, ok := a.(uint); ok && uint64(u) > math.MaxInt64 {
			wide = true
		}
	}
	if !wide {
		return exprBuiltin(name).Func(args...)
	}
	x, _ := bigInt(args[0])
	var y *big.Int
	if len(args) > 1 {
		y, _ = bigInt(args[1])
	}
	if x == nil || (len(args) > 1 && y == nil) {
		return exprBuiltin(name).Func(args...) // expr's error for what is not an integer
	}
	call := fmt.Sprintf("%s(%v)", name, args[0])
	if y != nil {
		call = fmt.Sprintf("%s(%v, %v)", name, args[0], args[1])
	}
	z := new(big.Int)
	switch name {
	case "bitand":
		z.And(x, y)
	case "bitor":
		z.Or(x, y)
	case "bitxor":
		z.Xor(x, y)
	case "bitnand":
		z.AndNot(x, y)
	case "bitnot":
		z.Not(x)
	default: // bitshr, bitushr
		if y.Sign() < 0 {
			return nil, fmt.Errorf("%s: a negative shift count", call)
		}
		n := uint(64)
		if y.IsInt64() && y.Int64() < 64 {
			n = uint(y.Int64())
		}
		if name == "bitushr" && x.Sign() < 0 {
			// expr's unsigned shift takes the int's 64 bits as unsigned.
			x.SetUint64(uint64(x.Int64()))
		}
		z.Rsh(x, n)
	}
	switch {
	case z.IsInt64():
		return int(z.Int64()), nil
	case z.IsUint64():
		return z.Uint64(), nil
	}
	return nil, fmt.Errorf("integer overflow: %s is %v, which no 64-bit integer holds", call, z)
}
