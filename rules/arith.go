package rules

import (
	"fmt"
	"math"
	"math/big"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm/runtime"
)

// expr adds, subtracts and multiplies 64-bit integers as Go does: an
// overflow wraps around, and `value * 100000000000000000` in a set_value
// would write a wrong number without a word. Expressions are compiled with
// checkedArith, which routes +, - and * through functions that compute
// what expr computes and fail, naming the operation, when the operands and
// expr's result are integers and that result is not the exact one (it
// wrapped around in the type expr chose). Other operands (floats, strings,
// times) get expr's result as it is.

// arithFuncs names the function each checked operator is routed through.
var arithFuncs = map[string]string{"+": "__checked_add", "-": "__checked_sub", "*": "__checked_mul"}

// checkedArith is an expr patch: it replaces each +, - and * with a call
// of its arithFuncs function.
type checkedArith struct{}

func (checkedArith) Visit(node *ast.Node) {
	b, ok := (*node).(*ast.BinaryNode)
	if !ok {
		return
	}
	name, ok := arithFuncs[b.Operator]
	if !ok {
		return
	}
	ast.Patch(node, &ast.CallNode{
		Callee:    &ast.IdentifierNode{Value: name},
		Arguments: []ast.Node{b.Left, b.Right},
	})
}

// arithOptions are the options that make a compiled expression's integer
// arithmetic checked.
var arithOptions = []expr.Option{
	expr.Patch(checkedArith{}),
	expr.Function("__checked_add", func(p ...any) (any, error) { return checkedOp('+', p[0], p[1]) }),
	expr.Function("__checked_sub", func(p ...any) (any, error) { return checkedOp('-', p[0], p[1]) }),
	expr.Function("__checked_mul", func(p ...any) (any, error) { return checkedOp('*', p[0], p[1]) }),
}

// checkedOp returns a op b as expr computes it, or an error when a and b
// are integers and expr's integer result is not the exact one.
func checkedOp(op byte, a, b any) (any, error) {
	var r any
	switch op {
	case '+':
		r = runtime.Add(a, b)
	case '-':
		r = runtime.Subtract(a, b)
	default:
		r = runtime.Multiply(a, b)
	}
	if !exact(op, a, b, r) {
		return nil, fmt.Errorf("integer overflow: %v %c %v does not fit in 64 bits", a, op, b)
	}
	return r, nil
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
