package rules

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
)

// expr's min, max, sort and sortBy order numbers as its comparisons do
// (see exactCompare): a uint64 of 2^63 or more orders below 0, so that
// max(op, 1) is 1 for most operator ids and a set_value of max(value, 1)
// writes 1. exactOrder routes each of them, when an argument may hold such
// a number, through a function that orders integers by their values
// (exactLess) and anything else as expr does.

// exactOrder is an expr patch: min(…) and max(…) become __min(…) and
// __max(…), sort(list[, order]) becomes __sort(list[, order]), and
// sortBy(list, key[, order]) becomes __sort_by(list, map(list, key)[, order])
// (the keys computed by expr's own map, whose predicate sees # as
// sortBy's does), when their arguments may hold a wide unsigned integer.
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
		if _, isPred := n.Arguments[1].(*ast.PredicateNode); !isPred {
			return
		}
		keys := &ast.BuiltinNode{Name: "map", Arguments: []ast.Node{n.Arguments[0], n.Arguments[1]}}
		call("__sort_by", append([]ast.Node{n.Arguments[0], keys}, n.Arguments[2:]...)...)
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

// orderOptions are the options that make min, max, sort and sortBy order
// integers by their values.
var orderOptions = []expr.Option{
	expr.Patch(exactOrder{}),
	expr.Function("__min", func(p ...any) (any, error) { return exactMinMax("min", p, exactMore) }),
	expr.Function("__max", func(p ...any) (any, error) { return exactMinMax("max", p, exactLess) }),
	expr.Function("__sort", func(p ...any) (any, error) {
		list, desc, err := sortArgs("sort", p, 1)
		if err != nil {
			return nil, err
		}
		slices.SortStableFunc(list, func(a, b any) int { return orderOf(a, b, desc) })
		return list, nil
	}),
	expr.Function("__sort_by", func(p ...any) (any, error) {
		list, desc, err := sortArgs("sortBy", p, 2)
		if err != nil {
			return nil, err
		}
		keys, ok := p[1].([]any)
		if !ok || len(keys) != len(list) {
			return nil, fmt.Errorf("sortBy: %d keys for %d elements", len(keys), len(list))
		}
		idx := make([]int, len(list))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(i, j int) int { return orderOf(keys[i], keys[j], desc) })
		out := make([]any, len(list))
		for i, j := range idx {
			out[i] = list[j]
		}
		return out, nil
	}),
}

// orderOf is the order of a and b by exactLess, reversed when desc.
func orderOf(a, b any, desc bool) int {
	if desc {
		a, b = b, a
	}
	switch {
	case exactLess(a, b):
		return -1
	case exactLess(b, a):
		return 1
	}
	return 0
}

// sortArgs returns a copy of sort's or sortBy's list (p[0]) as []any, and
// whether its order argument (p[order], if given) is "desc".
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

// maxOrderDepth bounds the nesting of lists min and max look into, as
// expr's own do.
const maxOrderDepth = 10000

// exactMinMax is expr's min or max (replace(best, v) reports whether v
// replaces the best so far): the numbers among args and, at any depth, in
// the lists among them; nil when there is none; an error for anything else.
func exactMinMax(name string, args []any, replace func(best, v any) bool) (any, error) {
	var best any
	var walk func(v any, depth int) error
	walk = func(v any, depth int) error {
		if depth > maxOrderDepth {
			return fmt.Errorf("%s: lists nested too deep", name)
		}
		if _, _, isInt := intParts(v); isInt {
			if best == nil || replace(best, v) {
				best = v
			}
			return nil
		}
		switch v.(type) {
		case float32, float64:
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
