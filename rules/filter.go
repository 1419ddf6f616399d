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
	return s.compileFilter(src, typed)
}

// CompileFilterFor is CompileFilter for the rows of declared slot d alone
// (`sptool cat --op N --slot S --where`): the expression is type-checked
// against d's codecs, as a keep or drop rule scoped to the slot is, so
// 'value == "10"' over an int64 value is an error rather than a filter
// that matches no row.
// Reading 'expire_at' is an error when d is not declared 'ttl: true':
// it is nil on every row of the slot.
func (s *Set) CompileFilterFor(d *SlotDecl, src string) (*Predicate, error) {
	p, err := s.compileFilter(src, d.checkEnv)
	if err == nil && !d.TTL && p.ReadsExpireAt() {
		return nil, fmt.Errorf("'expire_at' is nil on every row: slot %q of op %s is not declared with 'ttl: true' (a TTL slot's value starts with its 8-byte expiry stamp, which 'ttl: true' reads)", d.Slot, d.Op)
	}
	return p, err
}

// ReadsExpireAt reports whether the expression reads 'expire_at' (by name:
// an expression that reads the whole row model, as a variable, is not
// taken to).
func (p *Predicate) ReadsExpireAt() bool {
	return p.fields&FieldExpireAt != 0 && p.fields != AllFields
}

func (s *Set) compileFilter(src string, typed reflect.Type) (*Predicate, error) {
	c, e := compileExpr(src, typed, true, DefaultMaxExprNodes)
	if e != nil {
		if e.notBool {
			return nil, fmt.Errorf("expression is not boolean: %s", e.msg)
		}
		return nil, fmt.Errorf("column %d: %s", e.off+1, e.msg)
	}
	p := c.predicate(src)
	if p.ReadsExpireAt() && (s == nil || !hasTTLSlot(s.Slots)) {
		return nil, fmt.Errorf("'expire_at' is nil on every row: %s (a TTL slot's value starts with its 8-byte expiry stamp, which a declaration with 'ttl: true' reads)", noTTLSlot)
	}
	return p, nil
}
