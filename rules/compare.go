package rules

import (
	"cmp"
	"math"
	"math/big"
	"reflect"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm/runtime"
)

// expr compares two integers as Go ints: a uint64 of 2^63 or more (most
// operator ids, the uint64 codec's large keys and values) orders as a
// negative number, below 42, and equals the negative int it wraps to
// (`op == -1` holds for the id 2^64-1). It compares an integer with a
// float by converting the integer to a float64, which holds integers
// exactly only up to 2^53: `op == 3714747266114981200.0` held for the id
// 3714747266114981297. Expressions are compiled with exactCompare, which
// routes a comparison that may meet such numbers through a function that
// compares integers of any width and signedness, and an integer with a
// float, by their values, and anything else as expr does.

// cmpFuncs names the function each comparison is routed through.
var cmpFuncs = map[string]string{"<": "__lt", "<=": "__le", ">": "__gt", ">=": "__ge", "==": "__eq", "!=": "__ne"}

// exactCompare is an expr patch: it replaces a comparison whose operands
// may hold an unsigned integer of 2^63 or more (see mayBeWide) with a call
// of its cmpFuncs function. The others keep expr's comparison, and the
// instructions expr compiles them to (two ints, two strings).
type exactCompare struct{}

func (exactCompare) Visit(node *ast.Node) {
	n, ok := (*node).(*ast.BinaryNode)
	if !ok {
		return
	}
	if n.Operator == "in" {
		if inNeedsExact(n) {
			ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: "__in"}, Arguments: []ast.Node{n.Left, n.Right}})
		}
		return
	}
	name, ok := cmpFuncs[n.Operator]
	if !ok || !needsExact(n) {
		return
	}
	ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: name}, Arguments: []ast.Node{n.Left, n.Right}})
}

// needsExact reports whether expr could get comparison n wrong: an operand
// may be a wide unsigned integer, and the other may be an integer that
// expr would compare with it as an int; or one may be an integer and the
// other a float. Two operands known to be unsigned are equal or not as
// expr finds them.
func needsExact(n *ast.BinaryNode) bool {
	l, r := n.Left.Type(), n.Right.Type()
	if isNil(n.Left) || isNil(n.Right) {
		return false
	}
	if mayBeInteger(l) && mayBeFloat(r) || mayBeFloat(l) && mayBeInteger(r) {
		return true
	}
	if !mayBeInteger(l) || !mayBeInteger(r) {
		return false
	}
	if !mayBeWide(l) && !mayBeWide(r) {
		return false
	}
	if (n.Operator == "==" || n.Operator == "!=") && isUnsigned(l) && isUnsigned(r) {
		return false
	}
	return true
}

// inNeedsExact reports whether expr could get `needle in list` wrong: the
// needle may be a wide unsigned integer, and the list may hold integers,
// or one of the needle and the elements may be an integer and the other a
// float (the list an array, or a value the checker cannot type). A map or
// a string keeps expr's `in`.
func inNeedsExact(n *ast.BinaryNode) bool {
	l, r := n.Left.Type(), n.Right.Type()
	if isNil(n.Left) || !mayBeInteger(l) && !mayBeFloat(l) {
		return false
	}
	if unknown(r) {
		return true
	}
	if k := r.Kind(); k != reflect.Slice && k != reflect.Array {
		return false
	}
	e := r.Elem()
	if mayBeInteger(l) && mayBeFloat(e) || mayBeFloat(l) && mayBeInteger(e) {
		return true // an integer and a float, compared by value
	}
	return mayBeInteger(l) && mayBeWide(l) && mayBeInteger(e) && !(isUnsigned(l) && isUnsigned(e))
}

func isNil(n ast.Node) bool {
	_, ok := n.(*ast.NilNode)
	return ok
}

// unknown reports whether the checker does not know what t holds.
func unknown(t reflect.Type) bool { return t == nil || t.Kind() == reflect.Interface }

// mayBeWide reports whether a value of type t may be an unsigned integer
// of 2^63 or more.
func mayBeWide(t reflect.Type) bool {
	return unknown(t) || t.Kind() == reflect.Uint64 || t.Kind() == reflect.Uint
}

// isUnsigned reports whether t is known to be a uint64 or a uint.
func isUnsigned(t reflect.Type) bool {
	return !unknown(t) && (t.Kind() == reflect.Uint64 || t.Kind() == reflect.Uint)
}

// mayBeInteger reports whether a value of type t may be an integer.
func mayBeInteger(t reflect.Type) bool {
	if unknown(t) {
		return true
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// mayBeFloat reports whether a value of type t may be a float.
func mayBeFloat(t reflect.Type) bool {
	return unknown(t) || t.Kind() == reflect.Float64 || t.Kind() == reflect.Float32
}

// compareOptions are the options that make a compiled expression's
// integer comparisons exact.
var compareOptions = []expr.Option{expr.Patch(exactCompare{})}

// Init makes an Env built by hand ready for expr.Run of a Program: it sets
// the functions that its comparisons call (FillEnv and the Eval methods do
// it themselves).
func (env *Env) Init() { env.init() }

// init is Init, and does nothing to an Env it was done to.
func (env *Env) init() {
	if env.Less == nil {
		env.setComparisons()
	}
}

// setComparisons sets the functions exactCompare's calls find in env.
func (env *Env) setComparisons() {
	env.Less, env.LessEq, env.More, env.MoreEq, env.Equal, env.NotEqual = exactLess, exactLessEq, exactMore, exactMoreEq, exactEqual, exactNotEqual
	env.In = exactIn
}

// exactLess and the others compare integers of any width and signedness
// by their values, and anything else as expr does (which panics, as the
// comparison would, on operands it cannot compare).
func exactLess(a, b any) bool {
	if c, ok := compareInts(a, b); ok {
		return c < 0
	}
	return runtime.Less(a, b)
}

func exactLessEq(a, b any) bool {
	if c, ok := compareInts(a, b); ok {
		return c <= 0
	}
	return runtime.LessOrEqual(a, b)
}

func exactMore(a, b any) bool {
	if c, ok := compareInts(a, b); ok {
		return c > 0
	}
	return runtime.More(a, b)
}

func exactMoreEq(a, b any) bool {
	if c, ok := compareInts(a, b); ok {
		return c >= 0
	}
	return runtime.MoreOrEqual(a, b)
}

func exactEqual(a, b any) bool {
	if c, ok := compareInts(a, b); ok {
		return c == 0
	}
	return runtime.Equal(a, b)
}

func exactNotEqual(a, b any) bool { return !exactEqual(a, b) }

// exactIn is `needle in list` with the elements of a list (an array or a
// slice) compared by exactEqual; anything else (a map, a string) as expr
// does.
func exactIn(needle, list any) bool {
	v := reflect.ValueOf(list)
	if k := v.Kind(); k != reflect.Slice && k != reflect.Array {
		return runtime.In(needle, list)
	}
	for i := range v.Len() {
		if e := v.Index(i); e.IsValid() && exactEqual(e.Interface(), needle) {
			return true
		}
	}
	return false
}

// compareInts compares a and b by their values when both are integers,
// or one is an integer and the other a float that is a number (a NaN
// compares as expr compares it: unequal to everything).
func compareInts(a, b any) (int, bool) {
	an, am, ok1 := intParts(a)
	bn, bm, ok2 := intParts(b)
	switch {
	case ok1 && ok2:
		return compareParts(an, am, bn, bm), true
	case ok1:
		if f, ok := floatOf(b); ok {
			return compareIntFloat(an, am, f), true
		}
	case ok2:
		if f, ok := floatOf(a); ok {
			return -compareIntFloat(bn, bm, f), true
		}
	}
	return 0, false
}

// floatOf returns v as a float64 if it is a float that is not NaN.
func floatOf(v any) (float64, bool) {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case float32:
		f = float64(x)
	default:
		return 0, false
	}
	return f, !math.IsNaN(f)
}

// compareIntFloat compares the integer of sign neg and magnitude mag with
// f (not NaN) by their exact values.
func compareIntFloat(neg bool, mag uint64, f float64) int {
	x := new(big.Float).SetUint64(mag)
	if neg {
		x.Neg(x)
	}
	return x.Cmp(new(big.Float).SetFloat64(f))
}

// compareParts compares two integers given as sign and magnitude.
func compareParts(an bool, am uint64, bn bool, bm uint64) int {
	switch {
	case an && !bn:
		return -1
	case !an && bn:
		return 1
	case an:
		return cmp.Compare(bm, am)
	}
	return cmp.Compare(am, bm)
}

// intParts returns an integer of any width as its sign (negative) and
// magnitude; ok is false for anything else.
func intParts(v any) (neg bool, mag uint64, ok bool) {
	switch x := v.(type) {
	case int:
		return signedParts(int64(x))
	case int8:
		return signedParts(int64(x))
	case int16:
		return signedParts(int64(x))
	case int32:
		return signedParts(int64(x))
	case int64:
		return signedParts(x)
	case uint:
		return false, uint64(x), true
	case uint8:
		return false, uint64(x), true
	case uint16:
		return false, uint64(x), true
	case uint32:
		return false, uint64(x), true
	case uint64:
		return false, x, true
	}
	return false, 0, false
}

// signedParts is intParts of a signed integer (the least int64's magnitude,
// 2^63, fits a uint64).
func signedParts(x int64) (bool, uint64, bool) {
	if x < 0 {
		return true, uint64(-x), true
	}
	return false, uint64(x), true
}
