package savepoint

import (
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"strings"
)

// RenderBytes renders b as clink's state tools do (render_bytes): bytes all in
// 0x20..0x7E as a quoted string, otherwise 0x followed by lowercase hex; an
// 8-byte input gets " (int64 N)" with its little-endian signed reading; input
// longer than max (max > 0) is cut there with "... [N bytes]". Empty is "0x".
func RenderBytes(b []byte, max int) string {
	var sb strings.Builder
	shown := b
	if max > 0 && len(b) > max {
		shown = b[:max]
	}
	if len(b) > 0 && Printable(b) {
		sb.WriteString(strconv.Quote(string(shown)))
	} else {
		sb.WriteString("0x")
		sb.WriteString(hex.EncodeToString(shown))
	}
	if len(shown) < len(b) {
		sb.WriteString("... [")
		sb.WriteString(strconv.Itoa(len(b)))
		sb.WriteString(" bytes]")
	}
	if len(b) == 8 {
		sb.WriteString(" (int64 ")
		sb.WriteString(strconv.FormatInt(int64(binary.LittleEndian.Uint64(b)), 10))
		sb.WriteString(")")
	}
	return sb.String()
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
