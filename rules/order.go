package rules

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/vm/runtime"
)

// expr's min, max, sort and sortBy order numbers as its comparisons do
// (see exactCompare): a uint64 of 2^63 or more orders below 0, so that
// max(op, 1) is 1 for most operator ids and a set_value of max(value, 1)
// writes 1. exactOrder routes each of them, when an argument may hold such
// a number, through a function that orders integers by their values
// (exactLess) and anything else as expr does.

// exactOrder is an expr patch: min(…) and max(…) become __min(…) and
// __max(…), sort(list[, order]) becomes __sort(list[, order]), when their
// arguments may hold a wide unsigned integer, and sortBy(list, key[, order])
// becomes __sort_by(map(list, [#, key])[, order]) (the keys computed by
// expr's own map, whose predicate sees # as sortBy's does, the list
// evaluated once). Each function does what expr's built-in does, by calling
// it, unless a value it orders is such an integer.
type exactOrder struct{}

func (exactOrder) Visit(node *ast.Node) {
	n, ok := (*node).(*ast.BuiltinNode)
	if !ok {
		return
	}
	call := func(name string, args ...ast.Node) {
		ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: name}, Arguments: args})
	}
	switch n.Name {
	case "min", "max":
		if slices.ContainsFunc(n.Arguments, func(a ast.Node) bool { return mayHoldWide(a.Type()) }) {
			call("__"+n.Name, n.Arguments...)
		}
	case "sort":
		if len(n.Arguments) >= 1 && len(n.Arguments) <= 2 && mayHoldWide(n.Arguments[0].Type()) {
			call("__sort", n.Arguments...)
		}
	case "sortBy":
		// The key's type is the predicate's, which the checker does not
		// keep: every sortBy is routed.
		if len(n.Arguments) < 2 || len(n.Arguments) > 3 {
			return
		}
		pred, isPred := n.Arguments[1].(*ast.PredicateNode)
		if !isPred {
			return
		}
		pair := &ast.ArrayNode{Nodes: []ast.Node{&ast.PointerNode{}, pred.Node}}
		pairPred := &ast.PredicateNode{Node: pair}
		pairs := &ast.BuiltinNode{Name: "map", Arguments: []ast.Node{n.Arguments[0], pairPred}}
		for _, m := range []ast.Node{pair, pair.Nodes[0], pairPred, pairs} {
			m.SetLocation(n.Location()) // errors point at the sortBy
		}
		call("__sort_by", append([]ast.Node{pairs}, n.Arguments[2:]...)...)
	}
}

// mayHoldWide reports whether a value of type t may be, or be a list
// holding, an unsigned integer of 2^63 or more.
func mayHoldWide(t reflect.Type) bool {
	if mayBeWide(t) {
		return true
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return mayHoldWide(t.Elem())
	}
	return false
}

// holdsWide reports whether v is, or is a list holding at any depth, an
// unsigned integer of 2^63 or more.
func holdsWide(v any) bool {
	if neg, mag, isInt := intParts(v); isInt {
		return !neg && mag > math.MaxInt64
	}
	switch x := v.(type) {
	case []any:
		return slices.ContainsFunc(x, holdsWide)
	case []int, []int64, []float64, []string, []byte, nil:
		return false
	}
	rv := reflect.ValueOf(v)
	if k := rv.Kind(); k != reflect.Slice && k != reflect.Array {
		return false
	}
	for i := range rv.Len() {
		if holdsWide(rv.Index(i).Interface()) {
			return true
		}
	}
	return false
}

// exprBuiltin returns expr's built-in function of that name.
func exprBuiltin(name string) *builtin.Function {
	return builtin.Builtins[builtin.Index[name]]
}

// orderOptions are the options that make min, max, sort and sortBy order
// integers by their values.
var orderOptions = []expr.Option{
	expr.Patch(exactOrder{}),
	expr.Function("__min", func(p ...any) (any, error) {
		if !slices.ContainsFunc(p, holdsWide) {
			return exprBuiltin("min").Func(p...)
		}
		return exactMinMax("min", p, exactMore)
	}),
	expr.Function("__max", func(p ...any) (any, error) {
		if !slices.ContainsFunc(p, holdsWide) {
			return exprBuiltin("max").Func(p...)
		}
		return exactMinMax("max", p, exactLess)
	}),
	expr.Function("__sort", func(p ...any) (any, error) {
		if len(p) == 0 || !holdsWide(p[0]) {
			v, _, err := exprBuiltin("sort").Safe(p...)
			return v, err
		}
		list, desc, err := sortArgs("sort", p, 1)
		if err != nil {
			return nil, err
		}
		sorted := &runtime.SortBy{Desc: desc, Array: list, Values: slices.Clone(list)}
		sort.Sort(exactSortBy{sorted})
		return sorted.Array, nil
	}),
	expr.Function("__sort_by", func(p ...any) (any, error) {
		if len(p) == 0 {
			return nil, fmt.Errorf("sortBy: no list")
		}
		list, desc, err := sortArgs("sortBy", p, 1)
		if err != nil {
			return nil, err
		}
		sorted := &runtime.SortBy{Desc: desc, Array: make([]any, len(list)), Values: make([]any, len(list))}
		wide := false
		for i, pair := range list {
			kv, ok := pair.([]any)
			if !ok || len(kv) != 2 {
				return nil, fmt.Errorf("sortBy: element %d is no (element, key) pair", i)
			}
			sorted.Array[i], sorted.Values[i] = kv[0], kv[1]
			wide = wide || holdsWide(kv[1])
		}
		if wide {
			sort.Sort(exactSortBy{sorted})
		} else {
			sort.Sort(sorted) // as expr's sortBy
		}
		return sorted.Array, nil
	}),
}

// exactSortBy is expr's runtime.SortBy with its keys compared by exactLess.
type exactSortBy struct{ *runtime.SortBy }

func (s exactSortBy) Less(i, j int) bool {
	a, b := s.Values[i], s.Values[j]
	if s.Desc {
		return exactLess(b, a)
	}
	return exactLess(a, b)
}

// sortArgs returns sort's or sortBy's list (p[0]) as []any, and whether
// its order argument (p[order], if given) is "desc".
func sortArgs(name string, p []any, order int) ([]any, bool, error) {
	if len(p) < order || len(p) > order+1 {
		return nil, false, fmt.Errorf("%s: invalid number of arguments (expected %d or %d, got %d)", name, order, order+1, len(p))
	}
	list, err := anyList(name, p[0])
	if err != nil {
		return nil, false, err
	}
	if len(p) == order {
		return list, false, nil
	}
	switch p[order] {
	case "asc":
		return list, false, nil
	case "desc":
		return list, true, nil
	}
	return nil, false, fmt.Errorf("%s: invalid order %v, expected asc or desc", name, p[order])
}

// anyList returns a copy of a list (an array or a slice of any element
// type) as []any; nil for nil.
func anyList(name string, v any) ([]any, error) {
	if v == nil {
		return nil, nil
	}
	rv := reflect.ValueOf(v)
	if k := rv.Kind(); k != reflect.Slice && k != reflect.Array {
		return nil, fmt.Errorf("%s: not a list (type %T)", name, v)
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, nil
}

// exactMinMax is expr's min or max for arguments holding a wide unsigned
// integer (replace(best, v) reports whether v replaces the best so far):
// the numbers among args and, at any depth, in the lists among them; an
// error for anything else.
func exactMinMax(name string, args []any, replace func(best, v any) bool) (any, error) {
	var best any
	var walk func(v any, depth int) error
	walk = func(v any, depth int) error {
		if depth > builtin.MaxDepth { // as expr's own
			return fmt.Errorf("%s: lists nested too deep", name)
		}
		_, _, number := intParts(v)
		switch v.(type) {
		case float32, float64:
			number = true
		}
		if number {
			if best == nil || replace(best, v) {
				best = v
			}
			return nil
		}
		rv := reflect.ValueOf(v)
		if k := rv.Kind(); v == nil || (k != reflect.Slice && k != reflect.Array) {
			return fmt.Errorf("invalid argument for %s (type %T)", name, v)
		}
		for i := range rv.Len() {
			if err := walk(rv.Index(i).Interface(), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	for _, a := range args {
		if err := walk(a, 0); err != nil {
			return nil, err
		}
	}
	return best, nil
}
