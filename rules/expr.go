package rules

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	exprparser "github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"

	"github.com/sptool/sptool/internal/textdist"
)

// Env is the row as expressions see it: the row model (see the README). The
// expr tags are the names an expression uses.
//
// Programs are compiled against Env{} (a value, so that the VM loads fields
// by index) and run on a *Env the caller owns and refills for every row
// (Set.FillEnv).
type Env struct {
	// Op is the operator id ('op').
	Op uint64 `expr:"op"`
	// Kind is "keyed", "operator" or "raw" ('kind').
	Kind string `expr:"kind"`
	// KeyGroup is 0..127 for keyed rows, -1 otherwise ('key_group').
	KeyGroup int `expr:"key_group"`
	// Slot is the slot name, "<raw>" for keys without a separator ('slot').
	Slot string `expr:"slot"`
	// Key is the user key decoded with the slot's key codec; by default the
	// raw bytes as a string ('key').
	Key any `expr:"key"`
	// KeyBytes is the user key's bytes ('key_bytes').
	KeyBytes []byte `expr:"key_bytes"`
	// Value is the value decoded with the slot's value codec, TTL prefix
	// removed; by default the raw bytes ('value').
	Value any `expr:"value"`
	// ValueBytes is the stored value, TTL prefix included ('value_bytes').
	ValueBytes []byte `expr:"value_bytes"`
	// ExpireAt is the TTL stamp in epoch ms (int64) for rows of slots
	// declared 'ttl: true' whose value has the 8-byte prefix, else nil
	// ('expire_at').
	ExpireAt any `expr:"expire_at"`
	// Subtask is the subtask directory the row came from, -1 for a single
	// file ('subtask').
	Subtask int `expr:"subtask"`

	// Less, LessEq, More, MoreEq, Equal, NotEqual and In are the
	// comparisons that an expression's <, <=, >, >=, ==, != and in call
	// where an operand may be an unsigned integer of 2^63 or more: they
	// compare integers of any width and signedness, and an integer with a
	// float, by their values, where expr would compare a uint64 of 2^63 or
	// more as a negative int, and an integer with a float as two float64s.
	// FillEnv sets them; as fields of the environment, they are called
	// without the argument list that a function of the expression's
	// options takes from the heap at each evaluation.
	Less     func(a, b any) bool `expr:"__lt"`
	LessEq   func(a, b any) bool `expr:"__le"`
	More     func(a, b any) bool `expr:"__gt"`
	MoreEq   func(a, b any) bool `expr:"__ge"`
	Equal    func(a, b any) bool `expr:"__eq"`
	NotEqual func(a, b any) bool `expr:"__ne"`
	In       func(a, b any) bool `expr:"__in"`

	slots map[string]string // interned slot names (see internSlot)
	// shortTTL is set when the row's slot is declared 'ttl: true' and its
	// value is shorter than the stamp (ExpireAt is nil).
	shortTTL bool
}

// DefaultMaxExprNodes bounds the size of one expression (expr.MaxNodes);
// ParseOptions.MaxExprNodes overrides it.
const DefaultMaxExprNodes = 10000

var (
	envType     = reflect.TypeOf(Env{})
	stringType  = reflect.TypeOf("")
	bytesType   = reflect.TypeOf([]byte(nil))
	anyType     = reflect.TypeOf((*any)(nil)).Elem()
	typedEnvs   sync.Map // typedEnvKey -> reflect.Type
	errNotBool  = errors.New("expression is not boolean")
	errNilValue = errors.New("expression returned nil")
	errNilBool  = errors.New("expression returned nil, not true or false (a field missing or null, read with ?. or from JSON?): write `(...) ?? false`, or `?? true`, to say what such a row does")
)

type typedEnvKey struct{ key, value, expireAt reflect.Type }

// typedEnv returns a struct type laid out like Env, with the same expr tags,
// whose 'key', 'value' and 'expire_at' fields have the given types (nil
// keeps any). It is used only to type-check expressions scoped to one
// declared slot; the program that runs is compiled against Env.
func typedEnv(key, value, expireAt reflect.Type) reflect.Type {
	if key == nil {
		key = anyType
	}
	if value == nil {
		value = anyType
	}
	if expireAt == nil {
		expireAt = anyType
	}
	k := typedEnvKey{key, value, expireAt}
	if t, ok := typedEnvs.Load(k); ok {
		return t.(reflect.Type)
	}
	fields := make([]reflect.StructField, 0, envType.NumField())
	for i := range envType.NumField() {
		f := envType.Field(i)
		if !f.IsExported() {
			continue
		}
		switch f.Tag.Get("expr") {
		case "key":
			f.Type = key
		case "value":
			f.Type = value
		case "expire_at":
			f.Type = expireAt
		}
		fields = append(fields, reflect.StructField{Name: f.Name, Type: f.Type, Tag: f.Tag})
	}
	t := reflect.StructOf(fields)
	typedEnvs.Store(k, t)
	return t
}

// Predicate is a compiled boolean expression (keep, drop).
type Predicate struct {
	// Source is the expression as written.
	Source string
	prog   *vm.Program
	konst  int8 // 0: not constant, 1: always true, -1: always false
	fields Fields
	fast   FastPredicate
	rule   string // the label of the keep or drop rule it is of, for its errors
	warns  []string
}

// Warnings are what a rule file's check would warn of in the expression of
// a predicate compiled alone (Set.CompileFilter): a comparison of kind with
// a value no row has, which matches nothing. Each names the column.
func (p *Predicate) Warnings() []string { return p.warns }

// Eval runs the predicate on env with m, a VM the caller owns (one per
// goroutine, reused across rows; a zero vm.VM is ready to use). An error of
// a keep or drop rule's predicate (a runtime type error, a division by
// zero, a result that is not true or false) is an *EvalError naming the
// rule; one of a predicate of Set.CompileFilter is expr's error as it is.
func (p *Predicate) Eval(m *vm.VM, env *Env) (bool, error) {
	switch p.konst {
	case 1:
		return true, nil
	case -1:
		return false, nil
	}
	env.init()
	out, err := m.Run(p.prog, env)
	if err != nil {
		return false, p.evalError(runError(err, p.fields, env))
	}
	return p.filterValue(out)
}

// filterValue is a filter's value out: nil, which expr's AsBool cast would
// read as false, and what is not a bool are errors.
func (p *Predicate) filterValue(out any) (bool, error) {
	b, ok := out.(bool)
	if !ok {
		if out == nil {
			return false, p.evalError(errNilBool)
		}
		return false, p.evalError(fmt.Errorf("%w: got %T", errNotBool, out))
	}
	return b, nil
}

// evalError is err, an error of the predicate on a row, as an *EvalError
// when the predicate is a rule's.
func (p *Predicate) evalError(err error) error {
	if p.rule == "" {
		return err
	}
	return &EvalError{Rule: p.rule, Expr: p.Source, Err: err, filter: true}
}

// Constant reports whether the expression is a constant (after expr's
// constant folding) and its value.
func (p *Predicate) Constant() (value, ok bool) { return p.konst == 1, p.konst != 0 }

// Program returns the compiled expr program (for Disassemble, or to run
// with expr.Run on an Env that FillEnv or Init made ready: its
// comparisons call functions of the Env).
func (p *Predicate) Program() *vm.Program { return p.prog }

// ValueProgram is a compiled set_value expression.
type ValueProgram struct {
	// Source is the expression as written.
	Source string
	// ResultType is the result's static type from the type check; nil when
	// it is only known at run time. An integer type says the result is an
	// integer, not its width: a bit function's result of 2^63 or more, typed
	// int, is a uint64 at run time.
	ResultType reflect.Type
	prog       *vm.Program
	fields     Fields
}

// Eval runs the expression on env with m (see Predicate.Eval) and returns
// its result, not yet encoded.
func (p *ValueProgram) Eval(m *vm.VM, env *Env) (any, error) {
	env.init()
	out, err := m.Run(p.prog, env)
	if err != nil {
		return nil, runError(err, p.fields, env)
	}
	return out, nil
}

// bytesHint follows an error of an operation on []uint8: what bytes are
// and how to compare them.
var bytesHint = "[]uint8 is bytes (the key or value of a slot no declaration describes, key_bytes, value_bytes): compare string(value) with a string, or declare the slot with a codec that decodes it (an integer codec for a number) and " + scopeHint("it")

// scopeHint says how to scope an expression to what (a slot): in a rule
// file, and in cat's --where.
func scopeHint(what string) string {
	return "scope the expression to " + what + " (a rule's {op: ..., slot: ..., expr: ...} form; cat's --op and --slot, with the slot declared in --rules)"
}

// runError returns err, an error of expr's VM, with the control characters
// and the invalid UTF-8 of its message escaped (\n, \x1b): the message may
// quote a row's key or value, bytes of the savepoint, which must not forge a
// line of sptool's output or reach a terminal as an escape sequence. The
// snippet of the expression below the message is left as it is.
func runError(err error, fields Fields, env *Env) error {
	fe, ok := err.(*file.Error)
	if ok && strings.HasPrefix(fe.Message, "invalid operation") && strings.Contains(fe.Message, "[]uint8") {
		c := *fe
		c.Message += ": " + bytesHint
		fe, err = &c, &c
	}
	if ok && strings.HasPrefix(fe.Message, "invalid operation") && strings.Contains(fe.Message, "<nil>") && fields&FieldExpireAt != 0 && env != nil && env.ExpireAt == nil {
		c := *fe
		why := "as on every row of a slot not declared 'ttl: true': " + scopeHint("the TTL slot") + ", or test expire_at != nil first"
		if env.shortTTL {
			why = fmt.Sprintf("whose value (%d bytes) is shorter than the 8-byte stamp the values of its TTL slot start with (clink reads it as no state): test expire_at != nil first, or drop such rows with a rule before this one (expire_at == nil)", len(env.ValueBytes))
		}
		c.Message += ": expire_at is nil on this row, " + why
		fe, err = &c, &c
	} else if ok && (strings.Contains(fe.Message, "<nil>") || strings.Contains(fe.Message, "is nil")) && fields&FieldValue != 0 && env != nil && env.shortTTL && env.Value == nil {
		// The slot's codec types value, which is nil on this row alone:
		// expr's own message ("<nil> > int", "interface {} is nil, not
		// string") names no cause. (An error of another operation, a
		// division by zero, is not of the nil value.)
		c := *fe
		c.Message += fmt.Sprintf(": value is nil on this row, whose value (%d bytes) is shorter than the 8-byte stamp the values of its TTL slot start with (clink reads it as no state): test expire_at != nil first, or drop such rows with a rule before this one (expire_at == nil)", len(env.ValueBytes))
		fe, err = &c, &c
	}
	if !ok || !strings.ContainsFunc(fe.Message, needsEscape) && utf8.ValidString(fe.Message) {
		return err
	}
	c := *fe
	var b strings.Builder
	for i, r := range fe.Message {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(fe.Message[i:], string(utf8.RuneError)):
			fmt.Fprintf(&b, `\x%02x`, fe.Message[i])
		case needsEscape(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	c.Message = b.String()
	return &c
}

// needsEscape reports whether r is a control character (C0, DEL, C1).
func needsEscape(r rune) bool { return unicode.IsControl(r) }

// Program returns the compiled expr program (see Predicate.Program).
func (p *ValueProgram) Program() *vm.Program { return p.prog }

// compiled is the outcome of compileExpr.
type compiled struct {
	fast       FastPredicate
	fields     Fields
	prog       *vm.Program
	resultType reflect.Type // nil when unknown (interface)
	konst      int8
	badKinds   []kindLiteral // see badKindLiterals
	constNil   bool          // reads no field of the row and is nil
	// stampGuarded: the expression tests expire_at for nil (==, != or ??
	// against it, or ?.), or reads the slot, which may keep the rows of
	// slots without a stamp from its use (see fieldsOf).
	stampGuarded bool
}

// predicate returns the compiled boolean expression src as a Predicate.
func (c *compiled) predicate(src string) *Predicate {
	p := &Predicate{Source: src, prog: c.prog, konst: c.konst, fields: c.fields, fast: c.fast}
	for _, k := range c.badKinds {
		p.warns = append(p.warns, fmt.Sprintf("column %d: %s", k.off+1, badKindMessage(k.value)))
	}
	return p
}

// maxExprNesting bounds how deep an expression's brackets nest. expr's
// parser descends once for each, and parentheses make no node for
// expr.MaxNodes to count: a million of them overflowed the goroutine's
// stack, which no recover catches.
const maxExprNesting = 256

// literals follows a scan of an expression through its string literals.
type literals struct {
	quote   rune // the open literal's quote, 0 outside one
	escaped bool
}

// skip reports whether r belongs to a string literal (its quotes
// included), and whether it closes one.
func (l *literals) skip(r rune) (skip, closed bool) {
	switch {
	case l.quote != 0:
		switch {
		case l.escaped:
			l.escaped = false
		case r == '\\' && l.quote != '`':
			l.escaped = true
		case r == l.quote:
			l.quote = 0
			return true, true
		}
		return true, false
	case r == '"' || r == '\'' || r == '`':
		l.quote = r
		return true, false
	}
	return false, false
}

// blankComments returns src with each rune of its comments (// to the end
// of the line, /* to */), outside its string literals, made a space: expr's
// lexer skips them, so a quote in one opens no string literal, and the
// brackets and operators after it count. The runes keep their offsets.
func blankComments(src string) string {
	if !strings.Contains(src, "/") {
		return src
	}
	rs := []rune(src)
	var lit literals
	for i := 0; i < len(rs); i++ {
		if skip, _ := lit.skip(rs[i]); skip || rs[i] != '/' || i+1 >= len(rs) || (rs[i+1] != '/' && rs[i+1] != '*') {
			continue
		}
		end := len(rs)
		if rs[i+1] == '/' {
			if n := slices.Index(rs[i:], '\n'); n >= 0 {
				end = i + n
			}
		} else {
			for j := i + 2; j+1 < len(rs); j++ {
				if rs[j] == '*' && rs[j+1] == '/' {
					end = j + 2
					break
				}
			}
		}
		for ; i < end; i++ {
			rs[i] = ' '
		}
		i--
	}
	return string(rs)
}

// nestingWithin reports whether the brackets ((), [] and {}) of src,
// outside its string literals, nest at most limit deep, and if not, the rune
// offset of the first bracket too deep.
func nestingWithin(src string, limit int) (int, bool) {
	depth, off := 0, 0
	var lit literals
	for _, r := range src {
		if skip, _ := lit.skip(r); !skip {
			switch r {
			case '(', '[', '{':
				if depth++; depth > limit {
					return off, false
				}
			case ')', ']', '}':
				depth = max(depth-1, 0)
			}
		}
		off++
	}
	return 0, true
}

// maxExprUnary bounds how many unary operators (!, -, +, not) an
// expression holds: expr's parser descends once for each, and a chain of
// a million of them overflowed the goroutine's stack as brackets did (a
// few hundred thousand took hundreds of MB before the node limit refused
// them).
const maxExprUnary = 256

// unaryWithin reports whether src, outside its string literals, holds at
// most limit unary operators (an operator in prefix position: at the start,
// or after an operator, an opening bracket, a comma, a colon or a
// question mark), and if not, the rune offset of the first one too many.
func unaryWithin(src string, limit int) (int, bool) {
	n := 0
	var lit literals
	operand := false // the last token ends an operand: an operator after it is binary
	rs := []rune(src)
	for off := 0; off < len(rs); off++ {
		r := rs[off]
		if skip, closed := lit.skip(r); skip {
			operand = operand || closed
			continue
		}
		switch {
		case unicode.IsSpace(r):
		case r == '!' || r == '-' || r == '+':
			if !operand && (r != '!' || off+1 >= len(rs) || rs[off+1] != '=') {
				if n++; n > limit {
					return off, false
				}
			}
			operand = false
		case unicode.IsLetter(r) || r == '_' || r == '$' || unicode.IsDigit(r) || r == '.':
			start := off
			for off+1 < len(rs) && (unicode.IsLetter(rs[off+1]) || unicode.IsDigit(rs[off+1]) || rs[off+1] == '_' || rs[off+1] == '$' || rs[off+1] == '.') {
				off++
			}
			switch word := string(rs[start : off+1]); word {
			case "not":
				if !operand {
					if n++; n > limit {
						return start, false
					}
				}
				operand = false
			case "and", "or", "in", "matches", "contains", "startsWith", "endsWith":
				operand = false
			default:
				operand = true
			}
		case r == ')' || r == ']' || r == '}':
			operand = true
		default:
			operand = false
		}
	}
	return 0, true
}

// exprErr is an expression error at a rune offset of the expression.
type exprErr struct {
	off     int
	msg     string
	notBool bool // AsBool refused a non-boolean result
}

// compileExpr type-checks src against typed (a typedEnv type, nil for Env)
// and compiles it against Env for execution.
func compileExpr(src string, typed reflect.Type, asBool bool, maxNodes uint) (c *compiled, e *exprErr) {
	defer func() {
		if r := recover(); r != nil {
			c, e = nil, &exprErr{msg: fmt.Sprintf("expression compiler failed: %v", r)}
		}
	}()
	scan := blankComments(src)
	if off, ok := nestingWithin(scan, maxExprNesting); !ok {
		return nil, &exprErr{off: off, msg: fmt.Sprintf("brackets nested more than %d deep", maxExprNesting)}
	}
	if off, ok := unaryWithin(scan, maxExprUnary); !ok {
		return nil, &exprErr{off: off, msg: fmt.Sprintf("more than %d unary operators (!, -, +, not)", maxExprUnary)}
	}
	// The type check refuses a filter of another static type than bool
	// (expr.AsBool); the program that runs has no AsBool, whose cast reads
	// nil as false: a filter whose value is nil for a row (`x?.paid` of a
	// value without the field) would silently drop that row under keep and
	// keep it under drop. Predicate.Eval refuses nil instead.
	opts := func(env any, asBool bool) []expr.Option {
		o := []expr.Option{expr.Env(env), expr.MaxNodes(maxNodes)}
		o = append(o, exprFunctions...)
		if asBool {
			o = append(o, expr.AsBool())
		}
		return o
	}
	// The expression is type-checked as written, against the slot's types
	// when it has them; what runs is compiled against Env with checked
	// integer arithmetic (see checkedArith), whose calls expr cannot type,
	// and exact integer comparisons (see exactCompare).
	var typeEnv any = Env{}
	if typed != nil && typed != envType {
		typeEnv = reflect.New(typed).Elem().Interface()
	}
	checked, err := expr.Compile(src, opts(typeEnv, asBool)...)
	if err != nil {
		e := toExprErr(err)
		if strings.Contains(e.msg, "exceeds maximum allowed nodes") {
			e.msg = fmt.Sprintf("the expression has more than %d nodes (literals, names, operators), the most one may hold: a long list of keys to drop belongs in purge_keys (keys or keys_file), which has no such bound", maxNodes)
		}
		return nil, e
	}
	checkedNode := checked.Node()
	if e := checkWritten(checkedNode); e != nil {
		return nil, e
	}
	p, err := expr.Compile(src, slices.Concat(opts(Env{}, false), arithOptions, compareOptions, orderOptions, memberOptions)...)
	if err != nil {
		return nil, toExprErr(err)
	}
	if e := checkCalls(p.Node()); e != nil {
		return nil, e
	}
	c = &compiled{prog: p}
	c.fields, c.stampGuarded = fieldsOf(p.Node())
	c.stampGuarded = c.stampGuarded || c.fields&FieldSlot != 0
	if asBool {
		c.fast = compileFast(p.Node())
	}
	if t := checkedNode.Type(); t != nil && t.Kind() != reflect.Interface {
		c.resultType = t
	}
	if b, ok := p.Node().(*ast.BoolNode); ok {
		c.konst = -1
		if b.Value {
			c.konst = 1
		}
	} else if c.fields == 0 {
		// An expression that reads no field of the row has one value for
		// every row (now(), the one function whose value moves, is
		// refused): found once here, as expr's folding finds `1 == 1`'s,
		// `duration("1h") > duration("1m")` is warned of as constant, and
		// one that fails, which would fail on every row, is refused.
		var m vm.VM
		var env Env
		env.init()
		out, err := m.Run(p, &env)
		b := false
		if err != nil {
			err = runError(err, 0, nil)
		} else if asBool {
			// (What Predicate.Eval refuses at every row: nil, or another
			// type than bool.)
			b, err = new(Predicate).filterValue(out) // (no rule: the error as it is)
		}
		if err != nil {
			return nil, &exprErr{msg: fmt.Sprintf("it reads no field of the row and fails on every one: %v", err)}
		}
		if asBool {
			c.konst = -1
			if b {
				c.konst = 1
			}
		}
		c.constNil = out == nil
	}
	if tree, err := exprparser.Parse(src); err == nil {
		c.badKinds = badKindLiterals(tree.Node)
	}
	return c, nil
}

// badKindLiterals returns the string literals an expression (as parsed,
// before expr's optimizer turns a literal list into a set) compares
// 'kind' with (==, !=, in a literal list) that are no kind: `kind ==
// "Keyed"` matches no row.
func badKindLiterals(node ast.Node) []kindLiteral {
	var bad []kindLiteral
	check := func(n ast.Node) {
		if s, ok := n.(*ast.StringNode); ok && !isKindName(s.Value) {
			bad = append(bad, kindLiteral{s.Value, max(s.Location().From, 0)})
		}
	}
	isKind := func(n ast.Node) bool {
		id, ok := n.(*ast.IdentifierNode)
		return ok && id.Value == "kind"
	}
	ast.Walk(&node, visitFunc(func(n *ast.Node) {
		b, ok := (*n).(*ast.BinaryNode)
		if !ok {
			return
		}
		switch {
		case (b.Operator == "==" || b.Operator == "!=") && isKind(b.Left):
			check(b.Right)
		case (b.Operator == "==" || b.Operator == "!=") && isKind(b.Right):
			check(b.Left)
		case b.Operator == "in" && isKind(b.Left):
			if a, ok := b.Right.(*ast.ArrayNode); ok {
				for _, e := range a.Nodes {
					check(e)
				}
			}
		}
	}))
	return bad
}

// kindLiteral is a string literal compared with 'kind', at byte offset off
// of its expression.
type kindLiteral struct {
	value string
	off   int
}

// isKindName reports whether s is a value of the row model's 'kind'.
func isKindName(s string) bool {
	for _, k := range kindNames {
		if string(k) == s {
			return true
		}
	}
	return false
}

// visitFunc is an ast.Visitor of a function.
type visitFunc func(*ast.Node)

func (f visitFunc) Visit(n *ast.Node) { f(n) }

func toExprErr(err error) *exprErr {
	var fe *file.Error
	if errors.As(err, &fe) {
		msg := fe.Message
		if strings.HasPrefix(msg, "invalid integer literal") && strings.Contains(msg, "out of range") {
			// An operator id of 2^63 or more, most likely.
			msg += `: integer literals are 64-bit signed; write an operator id of 2^63 or more as opid("18446744073709551615"), or uid("name")`
		}
		if strings.HasPrefix(msg, "invalid operation") && strings.Contains(msg, "[]uint8") {
			msg += ": " + bytesHint
		}
		if name, ok := strings.CutPrefix(msg, "unknown name "); ok {
			msg += nearField(name)
		}
		msg += syntaxHint(msg)
		return &exprErr{off: max(fe.From, 0), msg: entryNames.Replace(msg)}
	}
	msg := err.Error()
	return &exprErr{off: 0, msg: msg, notBool: strings.HasPrefix(msg, "expected bool")}
}

// syntaxHint returns a hint for the parser's message of a likely slip: a
// comparison written with = (or =! for !=), or a word operator in another
// case (startswith for startsWith), which the parser reports as an
// unexpected token; "" for any other message.
func syntaxHint(msg string) string {
	tok, ok := strings.CutPrefix(msg, "unexpected token ")
	if !ok {
		return ""
	}
	if strings.HasPrefix(tok, `Operator("=")`) {
		return ": compare with == (and != for not equal)"
	}
	if name, ok := strings.CutPrefix(tok, `Identifier("`); ok {
		name = strings.TrimSuffix(name, `")`)
		for _, op := range []string{"startsWith", "endsWith", "contains", "matches", "in", "not", "and", "or"} {
			if strings.EqualFold(name, op) || strings.EqualFold(strings.ReplaceAll(name, "_", ""), op) {
				return fmt.Sprintf(": did you mean the operator %s?", op)
			}
		}
	}
	return ""
}

// nearField returns " (did you mean 'key'?)" for the row-model field
// nearest to name (textdist.Nearest), or "".
func nearField(name string) string {
	names := slices.Sorted(maps.Keys(fieldNames))
	if f, ok := textdist.Nearest(name, names); ok {
		return fmt.Sprintf(" (did you mean '%s'?)", f)
	}
	return ""
}

// goTypeOf probes a codec's decoded Go type by decoding the shortest
// encodings of its scalar types and of empty collections. It returns nil
// when the type varies (optional<T>) or cannot be probed.
func goTypeOf(dec func([]byte) (any, error)) reflect.Type {
	for _, probe := range [][]byte{{}, make([]byte, 4), make([]byte, 8)} {
		v, err := dec(probe)
		if err == nil {
			if v == nil {
				return nil
			}
			return reflect.TypeOf(v)
		}
	}
	return nil
}

// resultFits reports whether a set_value result of static type res can be
// encoded by a codec whose decoded type is want. Unknown types (nil) fit.
func resultFits(res, want reflect.Type) bool {
	if res == nil || want == nil {
		return true
	}
	if res == want {
		return true
	}
	isInt := func(t reflect.Type) bool {
		switch t.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			return true
		}
		return false
	}
	isFloat := func(t reflect.Type) bool { return t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64 }
	switch {
	case isInt(want):
		return isInt(res)
	case isFloat(want):
		return isInt(res) || isFloat(res)
	case want == stringType || want == bytesType:
		return res == stringType || res == bytesType
	case want.Kind() == reflect.Slice:
		return res.Kind() == reflect.Slice || res.Kind() == reflect.Array || res.Kind() == reflect.Map
	}
	return true
}

// syntaxErr returns the syntax error of expression src, or nil: an
// expression that cannot be type-checked is still parsed.
func syntaxErr(src string) *exprErr {
	if _, err := exprparser.Parse(src); err != nil {
		return toExprErr(err)
	}
	return nil
}
