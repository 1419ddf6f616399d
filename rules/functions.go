package rules

import (
	"fmt"
	"strconv"

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
