package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm/runtime"
)

// expr reads a field a map lacks as nil: in an expression over the
// entries of a decoded map, `.vlaue == 1` would be false for every entry,
// and a keep would erase the rows without a word. A scoped expression is
// type-checked with typed entries (see declCheckEnv), but one that is not
// scoped to a declared slot sees untyped values. So every field read
// `x.name` (or `x["name"]`) is compiled as a call of __field, which fails,
// naming the field and the ones there are, when x is a map without it.
// An optional read, `x?.name`, and method calls are left as expr has them.
type strictFields struct{}

func (strictFields) Visit(node *ast.Node) {
	n, ok := (*node).(*ast.MemberNode)
	if !ok || n.Optional || n.Method {
		return
	}
	name, ok := n.Property.(*ast.StringNode)
	if !ok {
		return
	}
	ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: "__field"}, Arguments: []ast.Node{n.Node, &ast.StringNode{Value: name.Value}}})
}

// memberOptions are the options that make a compiled expression's field
// reads strict.
var memberOptions = []expr.Option{
	expr.Patch(strictFields{}),
	expr.Function("__field", func(p ...any) (any, error) { return field(p[0], p[1].(string)) }),
}

// field returns from.name as expr reads it, or an error when from is a map
// that has no entry name.
func field(from any, name string) (any, error) {
	if m, ok := from.(map[string]any); ok {
		v, ok := m[name]
		if !ok {
			have := make([]string, 0, len(m))
			for k := range m {
				have = append(have, k)
			}
			slices.Sort(have)
			return nil, fmt.Errorf("no field %q in a map with the fields %s", name, strings.Join(have, ", "))
		}
		return v, nil
	}
	return runtime.Fetch(from, name), nil
}
