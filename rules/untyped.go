package rules

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/expr-lang/expr/ast"
	exprparser "github.com/expr-lang/expr/parser"
	"go.yaml.in/yaml/v3"
)

// A filter that is not scoped to one declared slot is type-checked with
// 'key' and 'value' of any type, since the rows it sees are of several
// slots: 'slot == "counts" && value == "5"' over an int64 slot loads and
// matches no row, where the same filter scoped to the slot is refused.
// warnUntypable warns of such a filter when no row it can reach makes it
// type-check: it is type-checked once for each declaration it can reach
// (the ones its scope and its top-level 'slot == "…"' and 'op == N'
// conditions allow, as the declarations stand at the rule) and once as a
// row of an undeclared slot is typed (key a string, value bytes), and
// warned of when all of them refuse it: for each row it reaches, it
// compares values that are never equal or fails.

// untypedCandidate is one way a row a filter reaches is typed.
type untypedCandidate struct {
	env  reflect.Type
	what string
}

// warnUntypable warns of the filter src, held by n under key and scoped
// by sc, if it type-checks against none of the typings of the rows it can
// reach (see above). It does nothing for a rule file that declares no slot
// (its filters are typed as undeclared rows are, and refused).
func (p *parser) warnUntypable(n *yaml.Node, key, src string, sc Scope) {
	if len(p.set.Slots) == 0 {
		return
	}
	var op *uint64
	var slot *string
	if sc.Op != nil {
		op = &sc.Op.ID
	}
	slot = sc.Slot
	iop, islot, ok := conditions(src)
	if !ok {
		return
	}
	if iop != nil {
		if op != nil && *op != *iop {
			return // reaches no row: not this check's to say
		}
		op = iop
	}
	if islot != nil {
		if slot != nil && *slot != *islot {
			return
		}
		slot = islot
	}
	var cands []untypedCandidate
	declared := false
	for k, d := range p.view {
		if d == nil || op != nil && k.op != *op || slot != nil && k.slot != *slot {
			continue
		}
		if op != nil && slot != nil {
			declared = true
		}
		cands = append(cands, untypedCandidate{d.checkEnv, fmt.Sprintf("slot %q of op %d (declaration %d: %s)", k.slot, k.op, d.Index, declTyping(d))})
	}
	slices.SortFunc(cands, func(a, b untypedCandidate) int { return strings.Compare(a.what, b.what) })
	if !declared {
		cands = append(cands, untypedCandidate{typedEnv(stringType, bytesType, nil), "rows of slots no declaration describes (key a string, value bytes)"})
	}
	// Declarations typed alike are type-checked once.
	var first *exprErr
	tried := map[reflect.Type]bool{}
	for _, c := range cands {
		if tried[c.env] {
			continue
		}
		tried[c.env] = true
		_, e := compileExpr(src, c.env, true, p.opts.MaxExprNodes)
		if e == nil || e.notBool {
			return
		}
		if first == nil {
			first = e
		}
	}
	whats := make([]string, 0, len(cands))
	for i, c := range cands {
		if i == 4 && len(cands) > 5 {
			whats = append(whats, fmt.Sprintf("and %d more", len(cands)-i))
			break
		}
		whats = append(whats, c.what)
	}
	line, col := p.exprPos(n, first.off)
	p.warnAt(&yaml.Node{Line: line, Column: col}, "'%s' can hold for no row it reaches: typed as those rows are (%s), it does not type-check: %s; on each of them it compares values that are never equal, or fails (scoped to the slot, {op, slot, expr}, such a filter is refused at load)", key, strings.Join(whats, "; "), first.msg)
}

// declTyping describes the types d gives 'key' and 'value'.
func declTyping(d *SlotDecl) string {
	key, value := "bytes as a string", "bytes"
	if d.KeyCodec != nil {
		key = d.KeyCodec.String()
	}
	if d.ValueCodec != nil {
		value = d.ValueCodec.String()
	}
	return "key " + key + ", value " + value
}

// conditions returns the operator and slot that the top-level conditions
// of src ('op == N', 'slot == "s"', joined by &&) fix, if any; ok is false
// when src does not parse, or fixes two of either.
func conditions(src string) (op *uint64, slot *string, ok bool) {
	tree, err := exprparser.Parse(src)
	if err != nil {
		return nil, nil, false
	}
	ok = true
	var walk func(n ast.Node)
	walk = func(n ast.Node) {
		b, isBin := n.(*ast.BinaryNode)
		if !isBin {
			return
		}
		switch b.Operator {
		case "&&", "and":
			walk(b.Left)
			walk(b.Right)
		case "==":
			for _, side := range [2][2]ast.Node{{b.Left, b.Right}, {b.Right, b.Left}} {
				id, isID := side[0].(*ast.IdentifierNode)
				if !isID {
					continue
				}
				switch lit := side[1].(type) {
				case *ast.StringNode:
					if id.Value == "slot" {
						if slot != nil && *slot != lit.Value {
							ok = false
						}
						v := lit.Value
						slot = &v
					}
				case *ast.IntegerNode:
					if id.Value == "op" && lit.Value >= 0 {
						v := uint64(lit.Value)
						if op != nil && *op != v {
							ok = false
						}
						op = &v
					}
				}
			}
		}
	}
	walk(tree.Node)
	return op, slot, ok
}
