package rowtext

import (
	"unicode"
	"unicode/utf8"
)

// AppendCSVField appends field as encoding/csv's Writer (comma ',', lines
// ended by "\n") writes it: as it is, or quoted, with its quotes doubled,
// when it holds a comma, a quote, a carriage return or a line feed, starts
// with a space (unicode.IsSpace), or is exactly \. (which PostgreSQL reads
// as the end of its data).
func AppendCSVField[S string | []byte](dst []byte, field S) []byte {
	if !CSVQuoted(field) {
		return append(dst, field...)
	}
	dst = append(dst, '"')
	return append(AppendCSVQuotedBody(dst, field), '"')
}

// AppendCSVQuotedBody appends field with each quote doubled: what
// AppendCSVField writes between the quotes of a field it quotes. The
// pieces of a field, wherever it is cut, have its body end to end.
func AppendCSVQuotedBody[S string | []byte](dst []byte, field S) []byte {
	start := 0
	for i := 0; i < len(field); i++ {
		if field[i] == '"' {
			dst = append(dst, field[start:i+1]...)
			dst = append(dst, '"')
			start = i + 1
		}
	}
	return append(dst, field[start:]...)
}

// CSVQuoted reports whether AppendCSVField quotes field.
func CSVQuoted[S string | []byte](field S) bool {
	if len(field) == 0 {
		return false
	}
	if string(field) == `\.` {
		return true
	}
	for i := 0; i < len(field); i++ {
		switch field[i] {
		case '\n', '\r', '"', ',':
			return true
		}
	}
	r, _ := utf8.DecodeRuneInString(string(field[:min(len(field), utf8.UTFMax)]))
	return unicode.IsSpace(r)
}

// AppendCSVLine appends fields as encoding/csv's Writer writes them as one
// record: each as AppendCSVField gives it, separated by commas, ended by
// "\n".
func AppendCSVLine(dst []byte, fields ...string) []byte {
	for i, f := range fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendCSVField(dst, f)
	}
	return append(dst, '\n')
}
