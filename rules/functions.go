package rules

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"

	"github.com/sptool/sptool/savepoint"
)

// exprFunctions are the functions expressions may call besides expr's
// built-ins. Operator ids derived from uids are usually 2^63 or more, which
// an integer literal cannot hold:
//
//	uid("enricher")             the operator id of a uid, hashed as clink does
//	opid("18088258576788386267") an operator id written in decimal
//
// Compiled to Go closures (see Predicate.Fast), a call with a literal
// argument is evaluated once, at compile time.
var exprFunctions = []expr.Option{
	expr.Function("uid", func(params ...any) (any, error) {
		return savepoint.OperatorIDFromUID(params[0].(string)), nil
	}, new(func(string) uint64)),
	expr.Function("opid", func(params ...any) (any, error) {
		v, err := strconv.ParseUint(params[0].(string), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("opid(%q): not an operator id (an unsigned 64-bit decimal)", params[0])
		}
		return v, nil
	}, new(func(string) uint64)),
}

// constOpID evaluates uid("…") or opid("…") with a literal argument.
func constOpID(call *ast.CallNode) (uint64, bool) {
	id, ok := call.Callee.(*ast.IdentifierNode)
	if !ok || len(call.Arguments) != 1 {
		return 0, false
	}
	arg, ok := call.Arguments[0].(*ast.StringNode)
	if !ok {
		return 0, false
	}
	switch id.Value {
	case "uid":
		return savepoint.OperatorIDFromUID(arg.Value), true
	case "opid":
		v, err := strconv.ParseUint(arg.Value, 10, 64)
		return v, err == nil
	}
	return 0, false
}

// checkWritten refuses, in an expression as written (before the comparison
// and arithmetic patches, which add calls to Env's __ functions), a call to
// now(), whose result changes from row to row and from run to run, so that
// a plan and its apply, or two runs of one rule file, could keep different
// rows; and a call to one of Env's __ functions, which are the patches'
// and not part of the rule language.
func checkWritten(node ast.Node) *exprErr {
	var err *exprErr
	ast.Find(node, func(n ast.Node) bool {
		if b, ok := n.(*ast.BuiltinNode); ok && b.Name == "now" {
			err = &exprErr{off: max(b.Location().From, 0), msg: `now() changes from row to row and from run to run, so a plan and its apply could keep different rows: compare with a fixed instant, date("2026-11-29T00:00:00Z"), or purge with purge_expired: {as_of: now}, resolved once at load and recorded in the report`}
		}
		if call, ok := n.(*ast.CallNode); ok {
			name := ""
			switch c := call.Callee.(type) {
			case *ast.IdentifierNode:
				name = c.Value
			case *ast.MemberNode: // $env.__lt(...), $env["__lt"](...)
				if p, ok := c.Property.(*ast.StringNode); ok {
					name = p.Value
				}
			}
			if strings.HasPrefix(name, "__") {
				err = &exprErr{off: max(call.Callee.Location().From, 0), msg: fmt.Sprintf("unknown function %s", name)}
			}
		}
		return err != nil
	})
	return err
}

// checkCalls rejects, at compile time, an opid("…") whose literal is not an
// operator id (it would otherwise fail on every row).
func checkCalls(node ast.Node) *exprErr {
	v := &callChecker{}
	ast.Walk(&node, v)
	return v.err
}

type callChecker struct{ err *exprErr }

func (c *callChecker) Visit(n *ast.Node) {
	call, ok := (*n).(*ast.CallNode)
	if !ok || c.err != nil {
		return
	}
	if id, ok := call.Callee.(*ast.IdentifierNode); ok && id.Value == "opid" && len(call.Arguments) == 1 {
		if arg, ok := call.Arguments[0].(*ast.StringNode); ok {
			if _, err := strconv.ParseUint(arg.Value, 10, 64); err != nil {
				c.err = &exprErr{off: max(arg.Location().From, 0), msg: fmt.Sprintf("opid(%q): not an operator id (an unsigned 64-bit decimal)", arg.Value)}
			}
		}
	}
}
