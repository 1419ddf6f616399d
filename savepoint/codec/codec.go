// Package codec decodes and encodes clink value and key bytes according to a
// codec spec written in a rule file, such as "int64", "string" or
// "map<string,int64>" (sections 3.1–3.3 of the clink format).
//
// # Specs
//
// A spec is a type name, optionally with type arguments in angle brackets;
// whitespace between tokens is ignored. Names are case-sensitive:
//
//	bytes           raw bytes, no length, no terminator
//	string          raw bytes as a Go string (clink's string_codec); any bytes, UTF-8 or not
//	int64           8 bytes, two's complement little-endian (int64_codec)
//	uint64          8 bytes little-endian (uint64_codec)
//	uint32          4 bytes little-endian (uint32_codec)
//	double          8 bytes, IEEE-754 binary64 little-endian (trivial_codec<double> on x86/arm64)
//	list<E>         u32 LE count, then per element u32 LE length and the element bytes
//	                (vector_codec; set_codec is wire-identical; ListState values)
//	map<K,V>        MapState's layout: vector_codec(pair_codec(K,V)) = u32 LE count, then per
//	                entry u32 LE length of the pair, u32 LE length of K, K bytes, V bytes.
//	                This is NOT clink's map_codec layout.
//	optional<T>     00 = none; 01 followed by T's bytes = some (optional_codec)
//	pair<A,B>       u32 LE length of A, A bytes, then B bytes running to the end (pair_codec)
//
// Types nest arbitrarily, except that optional<optional<T>> is refused: its
// "none" and "some(none)" would decode to the same Go value.
//
// # Go values
//
// Decode returns, and Encode accepts, these Go values, chosen so that an
// expr-lang expression can use them directly (len(value), value[0],
// value[0].key, filter(value, .value > 3), ...):
//
//	bytes        []byte (Encode also takes a string)
//	string       string (Encode also takes a []byte)
//	int64        int64
//	uint64       uint64
//	uint32       int64 (so it mixes with other integers in expressions)
//	double       float64
//	list<E>      []any of E's values, in stored order
//	map<K,V>     []any of map[string]any{"key": k, "value": v}, in stored (insertion) order
//	optional<T>  nil for none, else T's value
//	pair<A,B>    []any{a, b}
//
// Encode is lenient about the Go types an expression may produce: integer
// codecs take any Go integer type and whole float64/float32 values below
// 2^53 in magnitude (beyond it a float may be a rounded integer), and
// refuse values out of their range; double takes floats and integers; list,
// pair and map take any slice or array ([]any, []int64, ...); a map entry may
// also be a two-element slice {k, v}; and a map<K,V> value may be a Go map
// (for example the expr literal {"a": 1, "b": 2}), whose entries are then
// written in the bytewise order of their encoded keys.
//
// For every b that Decode accepts, Encode(Decode(b)) returns exactly b:
// decoding is strict (exact lengths for fixed-size types, no trailing bytes
// after a list, map or optional none, optional flags 00 or 01 only).
// Decode copies the bytes it returns; the result never aliases the input.
package codec

import (
	"fmt"
	"strings"
)

// Codec decodes and encodes the bytes of one codec spec.
type Codec interface {
	// String returns the spec in canonical form, e.g. "map<string,int64>".
	String() string
	// Decode decodes b. The error says what is wrong and at which byte
	// offset of b.
	Decode(b []byte) (any, error)
	// Encode encodes v. Encode(Decode(b)) == b for every b Decode accepts.
	Encode(v any) ([]byte, error)
}

// node is the internal form of a codec: decode reports absolute offsets
// (base is the offset of b within the top-level input).
type node interface {
	String() string
	decode(b []byte, base int) (any, error)
	encode(v any) ([]byte, error)
}

// codec wraps a node to add the spec to errors at the top level.
type codec struct{ n node }

func (c codec) String() string { return c.n.String() }

func (c codec) Decode(b []byte) (any, error) {
	v, err := c.n.decode(b, 0)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", c.n.String(), err)
	}
	return v, nil
}

func (c codec) Encode(v any) ([]byte, error) {
	b, err := c.n.encode(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", c.n.String(), err)
	}
	return b, nil
}

// MustParse is like Parse but panics on error; for specs fixed in code.
func MustParse(spec string) Codec {
	c, err := Parse(spec)
	if err != nil {
		panic(err)
	}
	return c
}

// maxDepth bounds the nesting of type arguments.
const maxDepth = 64

// Names lists the type names Parse accepts.
var Names = []string{"bytes", "string", "int64", "uint64", "uint32", "double", "list", "map", "optional", "pair"}

// Parse parses a codec spec (see the package documentation). Errors quote
// the spec and give the 0-based byte offset of the problem.
func Parse(spec string) (Codec, error) {
	p := &parser{s: spec}
	p.skipSpace()
	if p.i == len(p.s) {
		return nil, fmt.Errorf("parse codec %q: empty spec", spec)
	}
	n, err := p.parseType(0)
	if err != nil {
		return nil, fmt.Errorf("parse codec %q: %w", spec, err)
	}
	p.skipSpace()
	if p.i != len(p.s) {
		return nil, fmt.Errorf("parse codec %q: unexpected %q at offset %d after the complete type %s", spec, p.s[p.i:], p.i, n.String())
	}
	return codec{n}, nil
}

type parser struct {
	s string
	i int
}

func (p *parser) skipSpace() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (p *parser) describeHere() string {
	if p.i >= len(p.s) {
		return fmt.Sprintf("end of spec at offset %d", p.i)
	}
	return fmt.Sprintf("%q at offset %d", p.s[p.i], p.i)
}

func arity(name string) int {
	switch name {
	case "list", "optional":
		return 1
	case "map", "pair":
		return 2
	}
	return 0
}

func (p *parser) parseType(depth int) (node, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("types nested deeper than %d at offset %d", maxDepth, p.i)
	}
	p.skipSpace()
	start := p.i
	for p.i < len(p.s) && isIdentByte(p.s[p.i]) {
		p.i++
	}
	name := p.s[start:p.i]
	if name == "" {
		return nil, fmt.Errorf("expected a type name, got %s", p.describeHere())
	}
	switch name {
	case "bytes", "string", "int64", "uint64", "uint32", "double", "list", "map", "optional", "pair":
	default:
		hint := ""
		if l := strings.ToLower(name); l != name && isKnown(l) {
			hint = fmt.Sprintf(" (names are lower case: %s)", l)
		}
		return nil, fmt.Errorf("unknown type %q at offset %d%s; known types: %s", name, start, hint, strings.Join(Names, ", "))
	}
	want := arity(name)
	p.skipSpace()
	if want == 0 {
		if p.i < len(p.s) && p.s[p.i] == '<' {
			return nil, fmt.Errorf("%s takes no type arguments, got '<' at offset %d", name, p.i)
		}
		return scalarNode(name), nil
	}
	if p.i >= len(p.s) || p.s[p.i] != '<' {
		return nil, fmt.Errorf("%s needs %d type argument(s) in <...>, got %s", name, want, p.describeHere())
	}
	p.i++
	var args []node
	argStart := []int{}
	for {
		p.skipSpace()
		argStart = append(argStart, p.i)
		a, err := p.parseType(depth + 1)
		if err != nil {
			return nil, err
		}
		args = append(args, a)
		p.skipSpace()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			continue
		}
		if p.i < len(p.s) && p.s[p.i] == '>' {
			p.i++
			break
		}
		return nil, fmt.Errorf("expected ',' or '>' in the arguments of %s, got %s", name, p.describeHere())
	}
	if len(args) != want {
		return nil, fmt.Errorf("%s takes %d type argument(s), got %d at offset %d", name, want, len(args), start)
	}
	switch name {
	case "list":
		return listNode{elem: args[0]}, nil
	case "optional":
		if _, nested := args[0].(optionalNode); nested {
			return nil, fmt.Errorf("optional<optional<...>> at offset %d is ambiguous (none and some(none) both decode to nil)", argStart[0])
		}
		return optionalNode{inner: args[0]}, nil
	case "map":
		return mapNode{key: args[0], val: args[1]}, nil
	default:
		return pairNode{a: args[0], b: args[1]}, nil
	}
}

func isKnown(name string) bool {
	for _, n := range Names {
		if n == name {
			return true
		}
	}
	return false
}

func scalarNode(name string) node {
	switch name {
	case "bytes":
		return bytesNode{}
	case "string":
		return stringNode{}
	case "int64":
		return int64Node{}
	case "uint64":
		return uint64Node{}
	case "uint32":
		return uint32Node{}
	default:
		return doubleNode{}
	}
}

// Collection reports whether c is a list or map codec.
func Collection(c Codec) bool {
	cc, ok := c.(codec)
	if !ok {
		return false
	}
	switch cc.n.(type) {
	case listNode, mapNode:
		return true
	}
	return false
}

// EmptyCollection reports whether b, a value of codec c, is an empty list
// or map. clink's ListState and MapState never store one (they erase the
// key when the last element goes, docs/clink-format.md 3.3); a ValueState
// or an accumulator of a list type may.
func EmptyCollection(c Codec, b []byte) bool {
	return Collection(c) && len(b) == 4 && b[0]|b[1]|b[2]|b[3] == 0
}

// Args returns the type arguments of a list, map, pair or optional codec,
// each a codec of its own (list<E>: E; map<K,V> and pair<A,B>: K and V, A
// and B; optional<T>: T), and nil for the other codecs. With String, it
// gives a codec's structure to a caller that types what it decodes to.
func Args(c Codec) []Codec {
	cc, ok := c.(codec)
	if !ok {
		return nil
	}
	switch n := cc.n.(type) {
	case listNode:
		return []Codec{codec{n.elem}}
	case mapNode:
		return []Codec{codec{n.key}, codec{n.val}}
	case pairNode:
		return []Codec{codec{n.a}, codec{n.b}}
	case optionalNode:
		return []Codec{codec{n.inner}}
	}
	return nil
}
