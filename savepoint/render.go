package savepoint

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
)

// RenderBytes renders b as clink's state tools do (render_bytes): bytes all in
// 0x20..0x7E as a quoted string, otherwise 0x followed by lowercase hex; an
// 8-byte input gets " (int64 N)" with its little-endian signed reading; input
// longer than max (max > 0) is cut there with "... [N bytes]". Empty is "0x".
func RenderBytes(b []byte, max int) string {
	return string(AppendRenderBytes(nil, b, max))
}

// AppendRenderBytes appends RenderBytes(b, max) to dst.
func AppendRenderBytes(dst, b []byte, max int) []byte {
	shown := b
	if max > 0 && len(b) > max {
		shown = b[:max]
	}
	dst = appendQuotedOrHex(dst, shown, len(b) > 0 && Printable(b))
	if len(shown) < len(b) {
		dst = append(dst, "... ["...)
		dst = strconv.AppendInt(dst, int64(len(b)), 10)
		dst = append(dst, " bytes]"...)
	}
	if len(b) == 8 {
		dst = append(dst, " (int64 "...)
		dst = strconv.AppendInt(dst, int64(binary.LittleEndian.Uint64(b)), 10)
		dst = append(dst, ')')
	}
	return dst
}

// AppendRenderName appends a name (a slot's) as RenderBytes renders bytes,
// whole and without the int64 reading an 8-byte input gets: the name
// quoted when printable, else 0x and its hex.
func AppendRenderName(dst, name []byte) []byte {
	return appendQuotedOrHex(dst, name, len(name) > 0 && Printable(name))
}

// appendQuotedOrHex appends b quoted, or as 0x and its hex.
func appendQuotedOrHex(dst, b []byte, quoted bool) []byte {
	if quoted {
		return strconv.AppendQuote(dst, string(b))
	}
	return hex.AppendEncode(append(dst, "0x"...), b)
}

// Printable reports whether every byte of b is in 0x20..0x7E.
func Printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// showNames returns the names ShowName shows.
func showNames(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = ShowName(n)
	}
	return out
}

// ShowName returns a name a savepoint carries (a directory's, a job's, a
// materialisation handle, a path under the tree) for a line of text
// output: as it is, or Go-quoted when it holds a control character, so that
// a newline or an escape in it cannot make a line of its own or act on a
// terminal.
func ShowName(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return strconv.Quote(s)
		}
	}
	return s
}

// RenderTimerKey renders the key of a timer, the user key it fires for (as
// its key codec wrote it, not a stored key), for a message: RenderBytes,
// cut at 32 bytes, and the key group a restore routes the timer by.
func RenderTimerKey(key []byte) string {
	return fmt.Sprintf("%s (key group %d)", RenderBytes(key, 32), KeyGroupOf(key))
}

// AppendRenderUserKey appends the text a row's key is shown as: its user
// key rendered (RenderBytes, cut at max), after "0x80+" (the first byte in
// hex) for an operator-state key whose first byte is 0x80-0xFE rather than
// the 0xFF of clink's operator code. key is the stored key, k its ParseKey.
// The user key alone would read as that of the 0xFF row of the same
// logical key; RenderBytes never writes a '+' after 0x and two hex digits.
func AppendRenderUserKey(dst, key []byte, k Key, max int) []byte {
	return AppendRenderBytes(AppendUserKeyPrefix(dst, key, k), k.UserKey, max)
}

// AppendUserKeyPrefix appends what AppendRenderUserKey writes before the
// user key: "0x80+" (the first byte in hex) for an operator-state key
// whose first byte is not 0xFF, else nothing.
func AppendUserKeyPrefix(dst, key []byte, k Key) []byte {
	if k.Kind == KindOperator && len(key) > 0 && key[0] != 0xFF {
		dst = fmt.Appendf(dst, "0x%02x+", key[0])
	}
	return dst
}
