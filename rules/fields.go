package rules

import (
	"errors"
	"github.com/expr-lang/expr/ast"

	"github.com/sptool/sptool/savepoint"
)

// Fields is a set of row-model fields (the names of Env).
type Fields uint16

// The row-model fields an expression may use.
const (
	FieldOp Fields = 1 << iota
	FieldKind
	FieldKeyGroup
	FieldSlot
	FieldKey
	FieldKeyBytes
	FieldValue
	FieldValueBytes
	FieldExpireAt
	FieldSubtask

	// AllFields is every field of the row model.
	AllFields Fields = 1<<iota - 1
)

var fieldNames = map[string]Fields{
	"op": FieldOp, "kind": FieldKind, "key_group": FieldKeyGroup, "slot": FieldSlot,
	"key": FieldKey, "key_bytes": FieldKeyBytes, "value": FieldValue, "value_bytes": FieldValueBytes,
	"expire_at": FieldExpireAt, "subtask": FieldSubtask,
}

// fieldsOf returns, in one walk of an expression's AST, the row-model
// fields it names (anything it cannot see through, the $env variable,
// makes them AllFields) and whether it tests 'expire_at' for nil: compares
// it with nil (== or !=), gives it a default (??), or reads through it
// with ?. (expr's optional chaining).
func fieldsOf(node ast.Node) (fields Fields, stampGuarded bool) {
	v := &fieldVisitor{}
	ast.Walk(&node, v)
	return v.f, v.guarded
}

type fieldVisitor struct {
	f       Fields
	guarded bool
}

func (v *fieldVisitor) Visit(n *ast.Node) {
	isStamp := func(n ast.Node) bool {
		id, ok := n.(*ast.IdentifierNode)
		return ok && id.Value == "expire_at"
	}
	isNil := func(n ast.Node) bool {
		_, ok := n.(*ast.NilNode)
		return ok
	}
	switch b := (*n).(type) {
	case *ast.IdentifierNode:
		if f, ok := fieldNames[b.Value]; ok {
			v.f |= f
		} else if b.Value == "$env" {
			v.f = AllFields
		}
	case *ast.BinaryNode:
		switch b.Operator {
		case "==", "!=":
			v.guarded = v.guarded || isStamp(b.Left) && isNil(b.Right) || isNil(b.Left) && isStamp(b.Right)
		case "??":
			v.guarded = v.guarded || isStamp(b.Left)
		}
	case *ast.MemberNode:
		v.guarded = v.guarded || b.Optional && isStamp(b.Node)
	}
}

// Fields returns the row-model fields the predicate reads.
func (p *Predicate) Fields() Fields { return p.fields }

// Fields returns the row-model fields the expression reads.
func (p *ValueProgram) Fields() Fields { return p.fields }

// Fields returns the row-model fields any expression of the set reads: what
// FillEnvFields must fill for the rules to run.
func (s *Set) Fields() Fields {
	var f Fields
	if s == nil {
		return f
	}
	for _, r := range s.Rules {
		f |= r.Fields()
	}
	return f
}

// Fields returns the row-model fields the rule's expression reads (none
// for a rule without one).
func (r *Rule) Fields() Fields {
	switch {
	case r.Keep != nil:
		return r.Keep.Predicate.fields
	case r.Drop != nil:
		return r.Drop.Predicate.fields
	case r.SetValue != nil:
		// Apply keeps the TTL stamp from value_bytes. The value is
		// decoded even when the expression does not read it: the
		// declared codec encodes the new value, and a declaration that
		// does not fit the slot's rows must stop the run, not write over
		// them.
		return r.SetValue.Program.fields | FieldValueBytes | FieldValue
	}
	return 0
}

// ReadsFailed reports whether err, an error of filling an environment
// with the fields of several rules, concerns what a rule reading own
// reads: a *DecodeError of the key when own holds FieldKey, of the value
// when it holds FieldValue; any other error always. A rule that does not
// read the part a codec failed on runs on the row as the rules before it
// did, whatever the other rules read.
func ReadsFailed(err error, own Fields) bool {
	var de *DecodeError
	if err == nil || !errors.As(err, &de) {
		return err != nil
	}
	key := de.Part == "key" && own&FieldKey != 0
	value := (de.Part == "value" || de.ValueErr != nil) && own&FieldValue != 0
	return key || value
}

// internSlot returns slot as a string, reusing the string of an earlier
// call, so filling the environment does not allocate per row.
func (env *Env) internSlot(slot []byte) string {
	if s, ok := env.slots[string(slot)]; ok {
		return s
	}
	if env.slots == nil {
		env.slots = map[string]string{}
	}
	s := string(slot)
	if len(env.slots) < 4096 {
		env.slots[s] = s
	}
	return s
}

var rawSlot = savepoint.RawSlot
