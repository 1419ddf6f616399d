package cli

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// textWriter passes text output on to w with its control characters shown
// as escapes (\x1b, \u0085), but for newlines and tabs: the text a savepoint
// or a rule file carries (a metadata key, a job name, a marker's directory,
// a decoded string) may hold an escape sequence, which a terminal showing
// the output would act on (clear the screen, retitle the window). Output
// in a data format (JSON Lines, CSV, JSON) is written as it is: its
// encoders escape what their format requires, and CSV keeps the bytes.
type textWriter struct {
	w   io.Writer
	buf []byte
}

// newTextWriter returns w wrapped in a textWriter.
func newTextWriter(w io.Writer) io.Writer { return &textWriter{w: w} }

func (t *textWriter) Write(b []byte) (int, error) {
	clean := true
	for _, c := range b {
		if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f || c == 0xc2 {
			clean = false
			break
		}
	}
	if clean {
		return t.w.Write(b)
	}
	t.buf = appendEscaped(t.buf[:0], b)
	if _, err := t.w.Write(t.buf); err != nil {
		return 0, err
	}
	return len(b), nil
}

// appendEscaped appends b to dst with C0 controls (but newline and tab),
// DEL and the C1 controls (U+0080-U+009F) as Go escapes.
func appendEscaped(dst, b []byte) []byte {
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		switch {
		case size == 1 && (b[0] < 0x20 && b[0] != '\n' && b[0] != '\t' || b[0] == 0x7f):
			dst = fmt.Appendf(dst, `\x%02x`, b[0])
		case r >= 0x80 && r <= 0x9f && size == 2:
			dst = fmt.Appendf(dst, `\u%04x`, r)
		default:
			dst = append(dst, b[:size]...)
		}
		b = b[size:]
	}
	return dst
}
