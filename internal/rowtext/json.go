// Package rowtext appends the rows of the JSON Lines and CSV outputs to
// byte slices exactly as encoding/json (HTML escaping off, as
// json.Encoder.SetEscapeHTML(false) writes) and encoding/csv write them,
// and writes the lines on a goroutine of their own (LineWriter).
//
// encoding/json finds a struct's fields by reflection and boxes every
// value, and encoding/csv takes a []string a row; for the millions of rows
// of a savepoint that was most of the time of an export. Callers here write
// each row's fields themselves, in their struct's or header's order, with
// these appenders and strconv's, and get the bytes the standard packages
// would give (the tests compare the two on every kind of string and value).
package rowtext

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// safe[b] reports whether ASCII byte b stands for itself inside a JSON
// string: everything from the space up, DEL included, but '"' and '\'.
var safe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// AppendJSONString appends s as a JSON string, as encoding/json writes it with
// HTML escaping off: '"' and '\' escaped, control characters as \b, \f, \n,
// \r, \t or \u00XX, bytes that are not valid UTF-8 as \ufffd (one per
// byte), and U+2028 and U+2029 as \u2028 and \u2029.
func AppendJSONString[S string | []byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	return append(AppendJSONStringBody(dst, s), '"')
}

// AppendJSONStringBody appends what AppendJSONString does between the
// quotes. A string cut where CutUTF8 cuts it has the body of its pieces,
// end to end, as its body.
func AppendJSONStringBody[S string | []byte](dst []byte, s S) []byte {
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if safe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(string(s[i:min(len(s), i+utf8.UTFMax)]))
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, s[start:]...)
}

// CutUTF8 returns where a piece of s that should end near at ends so that
// AppendJSONStringBody reads the pieces as it reads s: the first byte from
// at on that does not continue a UTF-8 sequence (the encoder's steps start
// at every such byte), or at+3, which no sequence of at most four bytes
// starting before at can reach past; len(s) at the most.
func CutUTF8[S string | []byte](s S, at int) int {
	for j := at; j < min(len(s), at+3); j++ {
		if utf8.RuneStart(s[j]) {
			return j
		}
	}
	return min(len(s), at+3)
}

// AppendJSONFloat appends f as encoding/json writes a float64: the shortest
// decimal that reads back as f, in exponent form below 1e-6 and from 1e21
// up, with a one-digit exponent written without its leading zero. It
// reports false, appending nothing, for NaN and the infinities, which JSON
// cannot hold.
func AppendJSONFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 -> e-9, as encoding/json does.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

// AppendJSONValue appends v as encoding/json writes it with HTML escaping off:
// strings, integers, floats, booleans and nil directly, anything else
// through encoding/json itself (its error returned, dst unchanged).
func AppendJSONValue(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return AppendJSONString(dst, x), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case uint64:
		return strconv.AppendUint(dst, x, 10), nil
	case int:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case bool:
		return strconv.AppendBool(dst, x), nil
	case float64:
		if out, ok := AppendJSONFloat(dst, x); ok {
			return out, nil
		}
	}
	return appendMarshalled(dst, v)
}

// appendMarshalled appends what json.Encoder (HTML escaping off) writes for
// v, without its newline.
func appendMarshalled(dst []byte, v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return dst, err
	}
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})...), nil
}
