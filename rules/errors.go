package rules

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Error is one problem found in a rule file, with its position.
//
// Its text has the form
//
//	rules.yaml:12:7: rule 3 ("purge-old"): unknown key 'wehre' in 'drop_slot'
//
// File:Line:Col is the position of the offending key or value (1-based
// line and column). The context that follows names the rule by its 1-based
// index in 'rules:' and its name when it has one, or the slot declaration by
// its 1-based index in 'slots:'. Keys are quoted as spelled in the file with
// single quotes; values are quoted with %q.
type Error struct {
	// File is the rule file's name as given to Parse or Load (or the keys
	// file's path for a problem inside a keys file).
	File string
	// Line and Col are the 1-based position of the problem; 0 when unknown.
	Line, Col int
	// Rule is the 1-based index of the rule in 'rules:', 0 outside a rule.
	Rule int
	// RuleName is the rule's 'name:', "" when it has none.
	RuleName string
	// Slot is the 1-based index of the declaration in 'slots:', 0 outside
	// one.
	Slot int
	// Key is the YAML key the problem is about, as spelled; "" when none.
	Key string
	// Msg describes the problem.
	Msg string
	// Err is the error of a file the rule file names that could not be
	// read (a keys file), nil for any other problem: errors.Is(err,
	// fs.ErrNotExist) tells a missing keys file from a rule file's own
	// mistakes.
	Err error

	// sortLine and sortCol order the problem within its rule file: the
	// problem's own position, or that of the key naming the keys file.
	sortLine, sortCol int
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Error formats the problem on one line (see the type's documentation).
func (e *Error) Error() string {
	return formatDiag(e.File, e.Line, e.Col, e.Rule, e.RuleName, e.Slot, e.Msg)
}

func formatDiag(file string, line, col, rule int, name string, slot int, msg string) string {
	var b strings.Builder
	b.WriteString(file)
	if line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(line))
		if col > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(col))
		}
	}
	b.WriteString(": ")
	switch {
	case rule > 0 && name != "":
		fmt.Fprintf(&b, "rule %d (%q): ", rule, name)
	case rule > 0:
		fmt.Fprintf(&b, "rule %d: ", rule)
	case slot > 0:
		fmt.Fprintf(&b, "slot %d: ", slot)
	}
	b.WriteString(msg)
	return b.String()
}

// Errors is every problem found in one rule file. Parse and Load return it
// (as an error) when the file has at least one problem; use errors.As to
// get the list.
type Errors struct {
	// List holds the problems in file order (by line, then column).
	List []*Error
	// Warnings holds the lint findings made before the problems stopped
	// the load; they are not part of Error's text.
	Warnings []*Warning
	// Omitted counts the problems found past the first 1,000, which List
	// leaves out.
	Omitted int
}

// Error returns one line per problem, and one for those omitted.
func (e *Errors) Error() string {
	lines := make([]string, len(e.List), len(e.List)+1)
	for i, x := range e.List {
		lines[i] = x.Error()
	}
	if e.Omitted > 0 {
		file := ""
		if len(e.List) > 0 {
			file = e.List[0].File + ": "
		}
		lines = append(lines, fmt.Sprintf("%s%d more problems, not listed (the first %d are)", file, e.Omitted, len(e.List)))
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems as a []error, for errors.Is and errors.As.
func (e *Errors) Unwrap() []error {
	out := make([]error, len(e.List))
	for i, x := range e.List {
		out[i] = x
	}
	return out
}

// Len returns the number of problems.
func (e *Errors) Len() int { return len(e.List) + e.Omitted }

func (e *Errors) sort() {
	slices.SortStableFunc(e.List, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.sortLine, b.sortLine), cmp.Compare(a.sortCol, b.sortCol))
	})
}

// Warning is a lint finding: the file is valid, but a rule is suspicious
// (it can match nothing, it matches everything, a rule after it can never
// match, and so on). Its text has the same form as Error's.
type Warning struct {
	// File, Line and Col give the position, as in Error.
	File      string
	Line, Col int
	// Rule is the 1-based index of the rule, 0 outside a rule.
	Rule int
	// RuleName is the rule's name, "" when it has none.
	RuleName string
	// Slot is the 1-based index of the slot declaration, 0 outside one.
	Slot int
	// Msg describes the finding.
	Msg string
}

// String formats the warning on one line.
func (w *Warning) String() string {
	return formatDiag(w.File, w.Line, w.Col, w.Rule, w.RuleName, w.Slot, w.Msg)
}

// ErrNotUTF8 is the Err of a DecodeError that package export and the CLI
// give a key or value that decodes, with the string codec or as a string
// inside a collection, but is not valid UTF-8: rules read it as a string of
// its bytes (Set.FillEnv gives no error), while text output cannot show it
// as text without its being read as other text ("0x...").
var ErrNotUTF8 = errors.New("not valid UTF-8")

// DecodeError reports a key or value of a stored row that the codec declared
// for its slot cannot decode (Set.FillEnv), or, with Err ErrNotUTF8, one
// that decodes to a string that is not valid UTF-8.
type DecodeError struct {
	// Op and Slot name the declared slot.
	Op   uint64
	Slot string
	// Part is "key" or "value".
	Part string
	// Codec is the codec's spec, e.g. "int64".
	Codec string
	// Err is the codec's error.
	Err error
	// Line is the line of the slot's declaration in the rule file (0:
	// not known).
	Line int
	// ValueErr, in an error of the key, is the value codec's error when
	// the value does not decode either (nil: it does, or was not decoded).
	ValueErr error
}

// ValueFailed reports whether the row's value did not decode: the error
// is the value's, or the key's with the value's failure noted.
func (e *DecodeError) ValueFailed() bool { return e.Part == "value" || e.ValueErr != nil }

// Error names the operator, slot, part and codec, and the declaration:
// a value every row of the slot must decode, whatever an expression
// reads, so a declaration that does not fit the slot's rows stops a
// filter of other slots too.
func (e *DecodeError) Error() string {
	if errors.Is(e.Err, ErrNotUTF8) {
		return fmt.Sprintf("%s of op %d slot %q with codec %s is not valid UTF-8: it decodes, and a rule reads it as a string of its bytes (which string functions such as upper or replace write as U+FFFD where they are not UTF-8; declare bytes for string to work on the bytes)", e.Part, e.Op, e.Slot, e.Codec)
	}
	msg := fmt.Sprintf("decode %s of op %d slot %q with codec %s: %v", e.Part, e.Op, e.Slot, e.Codec, e.Err)
	if e.ValueErr != nil {
		msg += fmt.Sprintf("; the value does not decode either: %v", e.ValueErr)
	}
	if e.Line > 0 {
		msg += fmt.Sprintf(" (a rule that reads it decodes every row of the declared slot; does the declaration at line %d fit the slot's rows? 'sptool cat' shows them)", e.Line)
	}
	return msg
}

// Unwrap returns the codec's error.
func (e *DecodeError) Unwrap() error { return e.Err }

// EvalError reports an expression of a rule that failed on a row at run
// time: a runtime type error or a division by zero in a keep, drop or
// set_value expression, a filter's result that is not true or false, a
// set_value result the slot's codec cannot encode (the errors of a rule's
// Predicate.Eval and of SetValueSpec.Apply, and those of transform.Run that
// they cause).
type EvalError struct {
	// Rule is the rule's label (Rule.Label).
	Rule string
	// Expr is the expression's source.
	Expr string
	// Err is the underlying error.
	Err error
	// Op, Key and Row name the row the expression failed on, in an error
	// of transform.Run: its operator, its stored key (savepoint.ParseKey
	// reads the slot and user key from it), and its index in its file's
	// stream, or, in a file that stores a changelog, in the state its
	// replay restores (the row the message names). Key is nil when the
	// row is not known (Predicate.Eval and SetValueSpec.Apply leave these
	// unset).
	Op  uint64
	Key []byte
	Row int

	// filter is set in a keep or drop rule's error, whose message names
	// the rule only: expr's runtime errors show the expression below
	// their message.
	filter bool
}

// Error names the rule and, for set_value, the expression.
func (e *EvalError) Error() string {
	if e.filter {
		return e.Rule + ": " + e.Err.Error()
	}
	return fmt.Sprintf("%s: evaluate %q: %v", e.Rule, e.Expr, e.Err)
}

// Unwrap returns the underlying error.
func (e *EvalError) Unwrap() error { return e.Err }
