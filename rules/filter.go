package rules

import "fmt"

// CompileFilter compiles a standalone boolean expression over the row model
// (as `sptool cat --where` uses it), with the same checks as a keep or drop
// rule. The error gives the column within src.
func (s *Set) CompileFilter(src string) (*Predicate, error) {
	c, e := compileExpr(src, nil, true, DefaultMaxExprNodes)
	if e != nil {
		if e.notBool {
			return nil, fmt.Errorf("expression is not boolean: %s", e.msg)
		}
		return nil, fmt.Errorf("column %d: %s", e.off+1, e.msg)
	}
	return &Predicate{Source: src, prog: c.prog, konst: c.konst, fields: c.fields, fast: c.fast}, nil
}
