package codec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"slices"
)

// ---- scalars ----

type bytesNode struct{}

func (bytesNode) String() string { return "bytes" }

func (bytesNode) decode(b []byte, _ int) (any, error) { return bytes.Clone(b), nil }

func (bytesNode) encode(v any) ([]byte, error) {
	switch x := v.(type) {
	case []byte:
		return append([]byte{}, x...), nil
	case string:
		return []byte(x), nil
	}
	return nil, fmt.Errorf("bytes: got %s, want []byte or string", describe(v))
}

type stringNode struct{}

func (stringNode) String() string { return "string" }

func (stringNode) decode(b []byte, _ int) (any, error) { return string(b), nil }

func (stringNode) encode(v any) ([]byte, error) {
	switch x := v.(type) {
	case string:
		return []byte(x), nil
	case []byte:
		return append([]byte{}, x...), nil
	}
	return nil, fmt.Errorf("string: got %s, want a string", describe(v))
}

func needExact(name string, b []byte, base, n int) error {
	if len(b) != n {
		return fmt.Errorf("%s needs exactly %d bytes at byte %d, got %d", name, n, base, len(b))
	}
	return nil
}

type int64Node struct{}

func (int64Node) String() string { return "int64" }

func (int64Node) decode(b []byte, base int) (any, error) {
	if err := needExact("int64", b, base, 8); err != nil {
		return nil, err
	}
	return int64(binary.LittleEndian.Uint64(b)), nil
}

func (int64Node) encode(v any) ([]byte, error) {
	x, err := toInt64(v)
	if err != nil {
		return nil, fmt.Errorf("int64: %w", err)
	}
	return binary.LittleEndian.AppendUint64(nil, uint64(x)), nil
}

type uint64Node struct{}

func (uint64Node) String() string { return "uint64" }

func (uint64Node) decode(b []byte, base int) (any, error) {
	if err := needExact("uint64", b, base, 8); err != nil {
		return nil, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (uint64Node) encode(v any) ([]byte, error) {
	x, err := toUint64(v, math.MaxUint64)
	if err != nil {
		return nil, fmt.Errorf("uint64: %w", err)
	}
	return binary.LittleEndian.AppendUint64(nil, x), nil
}

type uint32Node struct{}

func (uint32Node) String() string { return "uint32" }

func (uint32Node) decode(b []byte, base int) (any, error) {
	if err := needExact("uint32", b, base, 4); err != nil {
		return nil, err
	}
	return int64(binary.LittleEndian.Uint32(b)), nil
}

func (uint32Node) encode(v any) ([]byte, error) {
	x, err := toUint64(v, math.MaxUint32)
	if err != nil {
		return nil, fmt.Errorf("uint32: %w", err)
	}
	return binary.LittleEndian.AppendUint32(nil, uint32(x)), nil
}

type doubleNode struct{}

func (doubleNode) String() string { return "double" }

func (doubleNode) decode(b []byte, base int) (any, error) {
	if err := needExact("double", b, base, 8); err != nil {
		return nil, err
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
}

func (doubleNode) encode(v any) ([]byte, error) {
	var f float64
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Float32, reflect.Float64:
		f = rv.Float()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if i := rv.Int(); i > 1<<53 || i < -1<<53 {
			return nil, fmt.Errorf("double: the integer %d is beyond 2^53, where a double holds only some integers (it would be written as %.17g)", i, float64(i))
		}
		f = float64(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if u := rv.Uint(); u > 1<<53 {
			return nil, fmt.Errorf("double: the integer %d is beyond 2^53, where a double holds only some integers (it would be written as %.17g)", u, float64(u))
		}
		f = float64(rv.Uint())
	default:
		return nil, fmt.Errorf("double: got %s, want a number", describe(v))
	}
	return binary.LittleEndian.AppendUint64(nil, math.Float64bits(f)), nil
}

// describe names a value's Go type (and the value when short) for errors.
func describe(v any) string {
	if v == nil {
		return "nil"
	}
	s := fmt.Sprintf("%v", v)
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return fmt.Sprintf("%T %s", v, s)
}

// toInt64 converts any Go integer, or a whole float below 2^53, to int64.
func toInt64(v any) (int64, error) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u := rv.Uint()
		if u > math.MaxInt64 {
			return 0, fmt.Errorf("value %d is out of range (max %d)", u, int64(math.MaxInt64))
		}
		return int64(u), nil
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		if err := wholeFloat(f); err != nil {
			return 0, err
		}
		return int64(f), nil // below 2^53 in magnitude
	}
	return 0, fmt.Errorf("got %s, want an integer", describe(v))
}

// toUint64 converts any non-negative Go integer, or a whole float below
// 2^53, to a uint64 no larger than max.
func toUint64(v any, max uint64) (uint64, error) {
	rv := reflect.ValueOf(v)
	var u uint64
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i := rv.Int()
		if i < 0 {
			return 0, fmt.Errorf("value %d is negative", i)
		}
		u = uint64(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u = rv.Uint()
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		if err := wholeFloat(f); err != nil {
			return 0, err
		}
		if f < 0 {
			return 0, fmt.Errorf("value %v is negative", f)
		}
		u = uint64(f) // below 2^53
	default:
		return 0, fmt.Errorf("got %s, want a non-negative integer", describe(v))
	}
	if u > max {
		return 0, fmt.Errorf("value %d is out of range (max %d)", u, max)
	}
	return u, nil
}

// wholeFloat returns an error unless f is a whole number an integer codec
// may take: of magnitude below 2^53, where a float64 holds every integer.
// Beyond it a float may be an integer rounded on its way (2^53+1 is 2^53
// as a float), and writing it would change the state without a word.
func wholeFloat(f float64) error {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f):
		return fmt.Errorf("value %v is not a whole number", f)
	case math.Abs(f) >= 1<<53:
		return fmt.Errorf("value %v is a float of 2^53 or more, where floats skip integers: it may be an integer rounded on its way; give an integer (int(a / b) divides integers exactly)", f)
	}
	return nil
}

// ---- length prefixes ----

func readU32(b []byte, off, base int, what string) (uint32, error) {
	if len(b)-off < 4 {
		return 0, fmt.Errorf("%s at byte %d needs 4 bytes, only %d left", what, base+off, len(b)-off)
	}
	return binary.LittleEndian.Uint32(b[off:]), nil
}

func appendLen(out []byte, n int, what string) ([]byte, error) {
	if uint64(n) > math.MaxUint32 {
		return nil, fmt.Errorf("%s %d does not fit the u32 length prefix", what, n)
	}
	return binary.LittleEndian.AppendUint32(out, uint32(n)), nil
}

// sequence returns the elements of a slice or array value.
func sequence(v any, what string) ([]any, error) {
	if xs, ok := v.([]any); ok {
		return xs, nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = rv.Index(i).Interface()
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: got %s, want a list", what, describe(v))
}

// ---- list<E> ----

type listNode struct{ elem node }

func (n listNode) String() string { return "list<" + n.elem.String() + ">" }

// decodeElements decodes the vector_codec framing, calling each for every
// element's bytes.
func decodeElements(b []byte, base int, what string, each func(i int, eb []byte, ebase int) (any, error)) ([]any, error) {
	count, err := readU32(b, 0, base, what+" count")
	if err != nil {
		return nil, err
	}
	off := 4
	out := make([]any, 0, min(int(count), (len(b)-4)/4))
	for i := 0; i < int(count); i++ {
		l, err := readU32(b, off, base, fmt.Sprintf("%s %d of %d: length prefix", what, i, count))
		if err != nil {
			return nil, err
		}
		off += 4
		if uint64(l) > uint64(len(b)-off) {
			return nil, fmt.Errorf("%s %d of %d: length %d at byte %d runs past the end (%d bytes left)", what, i, count, l, base+off-4, len(b)-off)
		}
		v, err := each(i, b[off:off+int(l)], base+off)
		if err != nil {
			return nil, fmt.Errorf("%s %d: %w", what, i, err)
		}
		out = append(out, v)
		off += int(l)
	}
	if off != len(b) {
		return nil, fmt.Errorf("%d trailing bytes at byte %d after the %d elements", len(b)-off, base+off, count)
	}
	return out, nil
}

func (n listNode) decode(b []byte, base int) (any, error) {
	return decodeElements(b, base, "list element", func(_ int, eb []byte, ebase int) (any, error) {
		return n.elem.decode(eb, ebase)
	})
}

func encodeElements(xs [][]byte, what string) ([]byte, error) {
	size := 4
	for _, x := range xs {
		size += 4 + len(x)
	}
	out, err := appendLen(make([]byte, 0, size), len(xs), what+" count")
	if err != nil {
		return nil, err
	}
	for i, x := range xs {
		if out, err = appendLen(out, len(x), fmt.Sprintf("%s %d length", what, i)); err != nil {
			return nil, err
		}
		out = append(out, x...)
	}
	return out, nil
}

func (n listNode) encode(v any) ([]byte, error) {
	xs, err := sequence(v, "list")
	if err != nil {
		return nil, err
	}
	enc := make([][]byte, len(xs))
	for i, x := range xs {
		if enc[i], err = n.elem.encode(x); err != nil {
			return nil, fmt.Errorf("list element %d: %w", i, err)
		}
	}
	return encodeElements(enc, "list")
}

// ---- pair<A,B> ----

type pairNode struct{ a, b node }

func (n pairNode) String() string { return "pair<" + n.a.String() + "," + n.b.String() + ">" }

func decodePair(a, bn node, b []byte, base int) (any, any, error) {
	la, err := readU32(b, 0, base, "pair first-length prefix")
	if err != nil {
		return nil, nil, err
	}
	if uint64(la) > uint64(len(b)-4) {
		return nil, nil, fmt.Errorf("pair first length %d at byte %d runs past the end (%d bytes left)", la, base, len(b)-4)
	}
	av, err := a.decode(b[4:4+int(la)], base+4)
	if err != nil {
		return nil, nil, fmt.Errorf("pair first: %w", err)
	}
	bv, err := bn.decode(b[4+int(la):], base+4+int(la))
	if err != nil {
		return nil, nil, fmt.Errorf("pair second: %w", err)
	}
	return av, bv, nil
}

func encodePair(a, bn node, av, bv any) ([]byte, error) {
	ab, err := a.encode(av)
	if err != nil {
		return nil, fmt.Errorf("pair first: %w", err)
	}
	bb, err := bn.encode(bv)
	if err != nil {
		return nil, fmt.Errorf("pair second: %w", err)
	}
	out, err := appendLen(make([]byte, 0, 4+len(ab)+len(bb)), len(ab), "pair first length")
	if err != nil {
		return nil, err
	}
	return append(append(out, ab...), bb...), nil
}

func (n pairNode) decode(b []byte, base int) (any, error) {
	av, bv, err := decodePair(n.a, n.b, b, base)
	if err != nil {
		return nil, err
	}
	return []any{av, bv}, nil
}

func (n pairNode) encode(v any) ([]byte, error) {
	xs, err := sequence(v, "pair")
	if err != nil {
		return nil, err
	}
	if len(xs) != 2 {
		return nil, fmt.Errorf("pair: got %d elements, want 2", len(xs))
	}
	return encodePair(n.a, n.b, xs[0], xs[1])
}

// ---- map<K,V> (MapState: vector of pair) ----

type mapNode struct{ key, val node }

func (n mapNode) String() string { return "map<" + n.key.String() + "," + n.val.String() + ">" }

func (n mapNode) decode(b []byte, base int) (any, error) {
	return decodeElements(b, base, "map entry", func(_ int, eb []byte, ebase int) (any, error) {
		k, v, err := decodePair(n.key, n.val, eb, ebase)
		if err != nil {
			return nil, err
		}
		return map[string]any{"key": k, "value": v}, nil
	})
}

// mapEntry extracts key and value from {key: k, value: v} or [k, v].
func mapEntry(e any) (any, any, error) {
	if m, ok := e.(map[string]any); ok {
		k, hasK := m["key"]
		v, hasV := m["value"]
		if !hasK || !hasV || len(m) != 2 {
			return nil, nil, fmt.Errorf("got a map with keys %v, want exactly \"key\" and \"value\"", sortedKeys(m))
		}
		return k, v, nil
	}
	rv := reflect.ValueOf(e)
	switch rv.Kind() {
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String || rv.Len() != 2 {
			break
		}
		k := rv.MapIndex(reflect.ValueOf("key").Convert(rv.Type().Key()))
		v := rv.MapIndex(reflect.ValueOf("value").Convert(rv.Type().Key()))
		if k.IsValid() && v.IsValid() {
			return k.Interface(), v.Interface(), nil
		}
	case reflect.Slice, reflect.Array:
		if rv.Len() == 2 {
			return rv.Index(0).Interface(), rv.Index(1).Interface(), nil
		}
	}
	return nil, nil, fmt.Errorf("got %s, want {key: ..., value: ...} or [key, value]", describe(e))
}

func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func (n mapNode) encode(v any) ([]byte, error) {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Map {
		return n.encodeGoMap(rv)
	}
	xs, err := sequence(v, "map")
	if err != nil {
		return nil, err
	}
	enc := make([][]byte, len(xs))
	for i, x := range xs {
		k, val, err := mapEntry(x)
		if err != nil {
			return nil, fmt.Errorf("map entry %d: %w", i, err)
		}
		if enc[i], err = encodePair(n.key, n.val, k, val); err != nil {
			return nil, fmt.Errorf("map entry %d: %w", i, err)
		}
	}
	return encodeElements(enc, "map")
}

// encodeGoMap writes a Go map's entries in the bytewise order of their
// encoded keys (a Go map has no order of its own).
func (n mapNode) encodeGoMap(rv reflect.Value) ([]byte, error) {
	type kv struct{ k, pair []byte }
	entries := make([]kv, 0, rv.Len())
	it := rv.MapRange()
	for it.Next() {
		k, v := it.Key().Interface(), it.Value().Interface()
		kb, err := n.key.encode(k)
		if err != nil {
			return nil, fmt.Errorf("map key %v: %w", k, err)
		}
		pb, err := encodePair(n.key, n.val, k, v)
		if err != nil {
			return nil, fmt.Errorf("map entry %v: %w", k, err)
		}
		entries = append(entries, kv{kb, pb})
	}
	slices.SortFunc(entries, func(a, b kv) int { return bytes.Compare(a.k, b.k) })
	enc := make([][]byte, len(entries))
	for i, e := range entries {
		if i > 0 && bytes.Equal(entries[i-1].k, e.k) {
			return nil, fmt.Errorf("map: two keys encode to the same bytes %x", e.k)
		}
		enc[i] = e.pair
	}
	return encodeElements(enc, "map")
}

// ---- optional<T> ----

type optionalNode struct{ inner node }

func (n optionalNode) String() string { return "optional<" + n.inner.String() + ">" }

func (n optionalNode) decode(b []byte, base int) (any, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("optional flag missing at byte %d", base)
	}
	switch b[0] {
	case 0:
		if len(b) != 1 {
			return nil, fmt.Errorf("%d trailing bytes at byte %d after optional none", len(b)-1, base+1)
		}
		return nil, nil
	case 1:
		v, err := n.inner.decode(b[1:], base+1)
		if err != nil {
			return nil, fmt.Errorf("optional value: %w", err)
		}
		return v, nil
	}
	return nil, fmt.Errorf("optional flag 0x%02x at byte %d, want 00 (none) or 01 (some)", b[0], base)
}

func (n optionalNode) encode(v any) ([]byte, error) {
	if v == nil {
		return []byte{0}, nil
	}
	b, err := n.inner.encode(v)
	if err != nil {
		return nil, fmt.Errorf("optional value: %w", err)
	}
	return append([]byte{1}, b...), nil
}
