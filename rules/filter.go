package rules

import (
	"fmt"
	"reflect"
)

// CompileFilter compiles a standalone boolean expression over the row model
// (as `sptool cat --where` uses it), with the same checks as a keep or drop
// rule: with no slot declared (s nil or empty, as `cat --where` without
// `--rules`), against 'key' a string and 'value' bytes, so 'value > 15' is
// an error here rather than at the first row, and so is reading
// 'expire_at' when no slot is declared with 'ttl: true'. The error gives
// the column within src.
func (s *Set) CompileFilter(src string) (*Predicate, error) {
	var typed reflect.Type
	if s == nil || len(s.Slots) == 0 {
		typed = typedEnv(stringType, bytesType, nil)
	}
	c, e := compileExpr(src, typed, true, DefaultMaxExprNodes)
	if e != nil {
		if e.notBool {
			return nil, fmt.Errorf("expression is not boolean: %s", e.msg)
		}
		return nil, fmt.Errorf("column %d: %s", e.off+1, e.msg)
	}
	if c.fields&FieldExpireAt != 0 && c.fields != AllFields && (s == nil || !hasTTLSlot(s.Slots)) {
		return nil, fmt.Errorf("'expire_at' is nil on every row: %s (a TTL slot's value starts with its 8-byte expiry stamp, which a declaration with 'ttl: true' reads)", noTTLSlot)
	}
	return &Predicate{Source: src, prog: c.prog, konst: c.konst, fields: c.fields, fast: c.fast}, nil
}
