package rules

import (
	"fmt"
	"math"
	"reflect"
	"unicode/utf8"

	"github.com/expr-lang/expr/vm"

	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/savepoint/codec"
)

// FillEnv fills env from a stored row, overwriting every field:
//
//   - op, kind, key_group, slot, key_bytes and value_bytes come from the row
//     (savepoint.ParseKey); subtask is the argument (-1 for a single file).
//   - For a keyed row of a declared slot (SlotDecl), key is the user key
//     decoded with the key codec (string for string and bytes codecs and
//     when no key codec is declared; the whole composite key as a string in
//     'composite: true' slots), and value is the value decoded with the
//     value codec ([]byte when none is declared). In 'ttl: true' slots
//     expire_at is the 8-byte stamp and value is decoded after it; a value
//     shorter than 8 bytes leaves expire_at and value nil (clink treats it
//     as missing).
//   - Every other row: key is the user key as a string, value the raw value
//     bytes, expire_at nil.
//
// A value or key the declared codec cannot decode yields a *DecodeError
// naming the operator and slot; env is then filled except for that field.
// key_bytes and value_bytes alias the row; key is a fresh string.
func (s *Set) FillEnv(env *Env, row savepoint.Row, subtask int) error {
	return s.FillEnvFields(env, row, subtask, AllFields)
}

// FillEnvFields is FillEnv for the fields in need only (the others keep
// stale values): the engine passes Set.Fields, so rows are not decoded for
// expressions that never read key or value.
func (s *Set) FillEnvFields(env *Env, row savepoint.Row, subtask int, need Fields) error {
	if s == nil {
		return fillEnv(&declIndex{}, env, row, subtask, need)
	}
	return fillEnv(&s.slotIndex, env, row, subtask, need)
}

// FillEnvAt is FillEnvFields as rule r sees the row: decoded with the
// declarations under the names they have at r's place in the file
// (Rule.SlotDecl), not under those later rules give them. The engine
// fills the environment of each rule so.
func (r *Rule) FillEnvAt(env *Env, row savepoint.Row, subtask int, need Fields) error {
	return fillEnv(r.decls, env, row, subtask, need)
}

func fillEnv(decls *declIndex, env *Env, row savepoint.Row, subtask int, need Fields) error {
	k := savepoint.ParseKey(row.Key)
	env.init()
	env.Op = row.Op
	env.Kind = k.Kind.String()
	env.KeyGroup = k.KeyGroup
	if need&FieldSlot != 0 {
		if k.HasSlot {
			env.Slot = env.internSlot(k.Slot)
		} else {
			env.Slot = rawSlot
		}
	}
	env.KeyBytes = k.UserKey
	env.ValueBytes = row.Value
	env.ExpireAt, env.shortTTL = nil, false
	env.Subtask = subtask
	if need&(FieldKey|FieldValue|FieldExpireAt) == 0 {
		return nil
	}

	var d *SlotDecl
	if k.HasSlot {
		if d = decls.get(row.Op, k.Slot); d != nil && !d.Describes(k, row.Key) {
			d = nil
		}
	}
	// key is a fresh string, and value a slice boxed in an interface: both
	// allocate, so each is filled only when an expression reads it (a drop
	// on len(value) over 10M rows: 2.84 -> 2.04 s). A key or value the
	// declared codec must decode is decoded anyway: a row it cannot decode
	// is an error whatever the expressions read.
	if d == nil {
		if need&FieldKey != 0 {
			env.Key = string(k.UserKey)
		}
		if need&FieldValue != 0 {
			env.Value = row.Value
		}
		return nil
	}

	var err error
	switch {
	case d.KeyCodec == nil || d.Composite || d.keyType == stringType:
		if need&FieldKey != 0 {
			env.Key = string(k.UserKey)
		}
	default:
		v, kerr := d.KeyCodec.Decode(k.UserKey)
		if kerr != nil {
			env.Key = string(k.UserKey)
			err = &DecodeError{Op: row.Op, Slot: d.Slot, Part: "key", Codec: d.KeyCodec.String(), Err: kerr, Line: d.Line}
		} else {
			env.Key = v
		}
	}

	payload := row.Value
	if d.TTL {
		at, p, ok := savepoint.SplitTTL(row.Value)
		if !ok {
			env.Value, env.shortTTL = nil, true
			return err
		}
		env.ExpireAt = at
		payload = p
	}
	if d.ValueCodec == nil {
		env.Value = payload
		return err
	}
	v, verr := d.ValueCodec.Decode(payload)
	if verr != nil {
		env.Value = nil
		if d.TTL {
			// The codec's byte offsets count from the end of the stamp,
			// not from the start of value_bytes.
			verr = fmt.Errorf("%w (decoding the bytes after the value's %d-byte TTL stamp: byte N of them is byte N+%d of value_bytes)", verr, savepoint.TTLPrefixLen, savepoint.TTLPrefixLen)
		}
		if de, ok := err.(*DecodeError); ok {
			de.ValueErr = verr // the key failed too: the error is the key's
			return err
		}
		return &DecodeError{Op: row.Op, Slot: d.Slot, Part: "value", Codec: d.ValueCodec.String(), Err: verr, Line: d.Line}
	}
	env.Value = v
	return err
}

// Empty reports whether v, a value Apply returned, is an empty list or map
// (after the slot's TTL stamp, if it has one). clink's ListState and
// MapState never store one (update([]) and removing the last entry erase
// the key); with EraseEmpty the engine removes such a row instead of
// writing it.
func (s *SetValueSpec) Empty(v []byte) bool {
	if s.Decl.TTL {
		if len(v) < savepoint.TTLPrefixLen {
			return false
		}
		v = v[savepoint.TTLPrefixLen:]
	}
	return s.Decl.ValueCodec != nil && codec.EmptyCollection(s.Decl.ValueCodec, v)
}

// nonFinite returns the first float in v, through lists, maps and
// pointers, that is an infinity or NaN.
func nonFinite(v reflect.Value) (float64, bool) {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		return f, math.IsInf(f, 0) || math.IsNaN(f)
	case reflect.Interface, reflect.Pointer:
		if !v.IsNil() {
			return nonFinite(v.Elem())
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if f, bad := nonFinite(v.Index(i)); bad {
				return f, true
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if f, bad := nonFinite(it.Key()); bad {
				return f, true
			}
			if f, bad := nonFinite(it.Value()); bad {
				return f, true
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f, bad := nonFinite(v.Field(i)); bad {
				return f, true
			}
		}
	}
	return 0, false
}

// Apply evaluates the set_value expression on env (filled by Set.FillEnv
// from the row) and returns the new stored value: the result encoded with
// the slot's value codec, behind the row's original 8-byte TTL stamp in
// 'ttl: true' slots. Errors (a runtime failure, a result the codec cannot
// encode, a TTL value without its stamp) are *EvalError values naming the
// rule's expression; the engine reports them with the row.
func (s *SetValueSpec) Apply(m *vm.VM, env *Env) ([]byte, error) {
	wrap := func(err error) error { return &EvalError{Rule: s.label, Expr: s.Expr, Err: err} }
	if s.Decl.TTL && len(env.ValueBytes) < savepoint.TTLPrefixLen {
		return nil, wrap(fmt.Errorf("value of %d bytes has no 8-byte TTL stamp, so set_value cannot keep one (clink reads such a value as no state); drop such rows first, with a rule before this one: drop: {%s, slot: %q, expr: 'expire_at == nil'}", len(env.ValueBytes), s.Op.YAML(), s.Slot))
	}
	out, err := s.Program.Eval(m, env)
	if err != nil {
		return nil, wrap(err)
	}
	if out == nil && s.Decl.valueType != nil {
		return nil, wrap(errNilValue)
	}
	enc, err := s.Decl.ValueCodec.Encode(out)
	if err != nil {
		return nil, wrap(err)
	}
	stored := env.ValueBytes
	if s.Decl.TTL {
		stored = stored[savepoint.TTLPrefixLen:]
	}
	// The checks below leave a value stored so, written back as it is.
	changed := string(enc) != string(stored)
	if s.text && changed && !utf8.Valid(enc) {
		// A string slot holds text: bytes that are not would be shown,
		// exported and compared as none (cat: not decoded).
		return nil, wrap(fmt.Errorf("the result %q is not UTF-8 text, which slot %q (codec string) holds; declare the slot's value 'bytes' to write bytes", enc, s.Slot))
	}
	if s.floats && changed {
		// An overflow (1e300 * 1e10), or an infinity or NaN the
		// expression made: written, it would pass for a number.
		if f, bad := nonFinite(reflect.ValueOf(out)); bad {
			return nil, wrap(fmt.Errorf("the result holds %v, which a rule writes to no state (an overflow of a double, or an infinity or NaN the expression made)", f))
		}
	}
	if s.maps && changed {
		// A list of entries (concat(value, value)) may hold a key twice,
		// which no MapState does.
		if err := codec.CheckMapKeys(s.Decl.ValueCodec, enc); err != nil {
			return nil, wrap(fmt.Errorf("the result is not a map clink writes: %w", err))
		}
	}
	if !s.Decl.TTL {
		return enc, nil
	}
	b := make([]byte, 0, savepoint.TTLPrefixLen+len(enc))
	b = append(b, env.ValueBytes[:savepoint.TTLPrefixLen]...)
	return append(b, enc...), nil
}
