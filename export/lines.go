package export

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/sptool/sptool/internal/rowtext"
	"github.com/sptool/sptool/savepoint"
)

// jsonlSink writes each row as a line holding its Record as encoding/json
// writes it (HTML characters unescaped), built by writeRecord instead of
// through reflection, into buffers that a rowtext.LineWriter writes while the
// next rows are merged and encoded.
type jsonlSink struct{ lineSink }

// lineSink is what the JSON Lines and CSV sinks share: their lines'
// writer, and the decoder of their rows.
type lineSink struct {
	out *rowtext.LineWriter
	dec *decoder
}

func newLineSink(w io.Writer, dec *decoder) lineSink {
	return lineSink{out: rowtext.NewLineWriter(w), dec: dec}
}

func newJSONLSink(w io.Writer, dec *decoder) *jsonlSink {
	return &jsonlSink{newLineSink(w, dec)}
}

func (s *jsonlSink) add(op uint64, e *entry) error {
	if err := writeRecord(s.out, op, e, s.dec.decode(op, e)); err != nil {
		return err
	}
	return s.out.MaybeFlush()
}

// close writes the lines still buffered, unless the export failed.
func (s *lineSink) close(failed error) error {
	err := s.out.Close(failed == nil)
	if failed != nil {
		return failed
	}
	return err
}

// writeRecord appends the line of record(op, e, d) (its JSON and a
// newline) to l, the bytes json.Encoder with SetEscapeHTML(false) writes
// for it (TestRecordLineMatchesEncodingJSON). The key and the value, as
// text and in hex, are appended piece by piece (rowtext.AppendPieces): the
// line of a value of hundreds of MB is written as it is built. A row whose
// decoded key or value JSON cannot hold fails with none of its line
// written.
func writeRecord(l *rowtext.LineWriter, op uint64, e *entry, d Decoded) error {
	k := savepoint.ParseKey(e.key)
	// A decoded value of another kind than text is encoded whole, and may
	// be refused: after a key written in pieces, it is encoded first.
	var value []byte
	if len(e.key) > rowtext.PieceSize && d.Declared && d.ValueOK {
		if _, _, text := textOf(d.Value); !text {
			var err error
			if value, err = rowtext.AppendJSONValue(nil, JSONValue(d.Value)); err != nil {
				return fmt.Errorf("op %d key %s: %w", op, hex.EncodeToString(e.key), err)
			}
		}
	}
	start := len(l.Buf)
	b := append(l.Buf, `{"op":`...)
	b = strconv.AppendUint(b, op, 10)
	b = append(b, `,"kind":`...)
	b = rowtext.AppendJSONString(b, k.Kind.String())
	b = append(b, `,"key_group":`...)
	b = strconv.AppendInt(b, int64(k.KeyGroup), 10)
	b = append(b, `,"slot":`...)
	b = appendSlotJSON(b, e)
	l.Buf = append(b, `,"key":`...)
	var err error
	switch {
	case d.Declared && d.KeyOK:
		err = writeJSONValue(l, d.Key)
	case operatorByte(e, k):
		l.Buf = rowtext.AppendJSONString(l.Buf, appendShownKey(nil, e, k))
	default:
		err = writeTextJSON(l, k.UserKey, !verbatim(k.UserKey))
	}
	if err == nil {
		l.Buf = append(l.Buf, `,"value":`...)
		switch {
		case value != nil:
			l.Buf = append(l.Buf, value...)
		case d.Declared && d.ValueOK:
			err = writeJSONValue(l, d.Value)
		default:
			err = writeTextJSON(l, e.value, !verbatim(e.value))
		}
	}
	if err == nil {
		l.Buf = append(l.Buf, `,"key_hex":"`...)
		err = rowtext.AppendHex(l, e.key)
	}
	if err == nil {
		l.Buf = append(l.Buf, `","value_hex":"`...)
		err = rowtext.AppendHex(l, e.value)
	}
	if err != nil {
		if u := (unencodable{}); errors.As(err, &u) {
			// Nothing of the line was handed to the writer: only a key
			// before the value could have been written in pieces, and
			// then the value was encoded first.
			l.Buf = l.Buf[:start]
			return fmt.Errorf("op %d key %s: %w", op, hex.EncodeToString(e.key), u.error)
		}
		return err
	}
	b = append(l.Buf, `","expire_at":`...)
	if d.Declared && d.HasExpireAt {
		b = strconv.AppendInt(b, d.ExpireAt, 10)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"subtask":`...)
	b = strconv.AppendInt(b, int64(e.subtask), 10)
	b = append(b, `,"key_decoded":`...)
	b = appendFlagJSON(b, d.KeyDecoded)
	b = append(b, `,"value_decoded":`...)
	b = appendFlagJSON(b, d.ValueDecoded)
	l.Buf = append(b, "}\n"...)
	return nil
}

// unencodable is the error of a decoded key or value that JSON cannot
// hold (encoding/json's), told apart from the error of a write.
type unencodable struct{ error }

func (u unencodable) Unwrap() error { return u.error }

// writeJSONValue appends v, a decoded key or value, as
// rowtext.AppendJSONValue appends JSONValue(v): a string or bytes piece by
// piece (writeTextJSON), anything else whole.
func writeJSONValue(l *rowtext.LineWriter, v any) error {
	if b, hexed, ok := textOf(v); ok {
		return writeTextJSON(l, b, hexed)
	}
	b, err := rowtext.AppendJSONValue(l.Buf, JSONValue(v))
	if err != nil {
		return unencodable{err}
	}
	l.Buf = b
	return nil
}

// textOf returns the bytes of v, a decoded key or value, if it is a string
// or bytes, and whether JSONValue and Text show them in hex after 0x (a
// string that is not UTF-8, bytes that Render does not show as they are).
func textOf(v any) (b []byte, hexed, ok bool) {
	switch x := v.(type) {
	case []byte:
		return x, !verbatim(x), true
	case string:
		return unsafe.Slice(unsafe.StringData(x), len(x)), !utf8.ValidString(x), true
	}
	return nil, false, false
}

// writeTextJSON appends b as a JSON string, or the JSON string of 0x and
// its hex when hexed, piece by piece.
func writeTextJSON(l *rowtext.LineWriter, b []byte, hexed bool) error {
	l.Buf = append(l.Buf, '"')
	var err error
	switch {
	case hexed:
		l.Buf = append(l.Buf, "0x"...)
		err = rowtext.AppendHex(l, b)
	case len(b) <= rowtext.PieceSize: // most: without the calls through func values
		l.Buf = rowtext.AppendJSONStringBody(l.Buf, b)
	default:
		err = rowtext.AppendPieces(l, b, rowtext.CutUTF8[[]byte], rowtext.AppendJSONStringBody[[]byte])
	}
	l.Buf = append(l.Buf, '"')
	return err
}

// appendFlagJSON appends the JSON of a key_decoded or value_decoded flag
// (Decoded.KeyDecoded): true, false, or null when nothing is declared.
func appendFlagJSON(b []byte, flag func() (bool, bool)) []byte {
	v, declared := flag()
	if !declared {
		return append(b, "null"...)
	}
	return strconv.AppendBool(b, v)
}

// appendFlagCSV appends the CSV field of a flag: as appendFlagJSON, null
// the empty field.
func appendFlagCSV(b []byte, flag func() (bool, bool)) []byte {
	if v, declared := flag(); declared {
		return strconv.AppendBool(b, v)
	}
	return b
}

// appendSlotJSON appends the slot text of e (see entry.appendSlotText) as a
// JSON string.
func appendSlotJSON(b []byte, e *entry) []byte {
	if !e.slotInHex() {
		return rowtext.AppendJSONString(b, e.slot())
	}
	return appendHexJSON(b, e.slot())
}

// appendHexJSON appends v as the JSON string of 0x and its hex.
func appendHexJSON(b, v []byte) []byte {
	b = append(b, `"0x`...)
	b = hex.AppendEncode(b, v)
	return append(b, '"')
}

// csvSink writes each row as a CSV line of the fields of CSVHeader, the
// line encoding/csv writes for them (writeCSVRecord), through a
// rowtext.LineWriter.
type csvSink struct{ lineSink }

func newCSVSink(w io.Writer, dec *decoder) *csvSink {
	s := &csvSink{newLineSink(w, dec)}
	s.out.Buf = rowtext.AppendCSVLine(s.out.Buf, CSVHeader...)
	return s
}

func (s *csvSink) add(op uint64, e *entry) error {
	if err := writeCSVRecord(s.out, op, e, s.dec.decode(op, e)); err != nil {
		return err
	}
	return s.out.MaybeFlush()
}

// writeCSVRecord appends the CSV line of record(op, e, d) to l: its fields
// in CSVHeader's order, a decoded key or value as Text gives it, empty
// when it has none (TestCSVLineMatchesEncodingCSV). The key and the value,
// as text and in hex, are appended piece by piece, as writeRecord appends
// them.
func writeCSVRecord(l *rowtext.LineWriter, op uint64, e *entry, d Decoded) error {
	k := savepoint.ParseKey(e.key)
	b := strconv.AppendUint(l.Buf, op, 10)
	b = append(b, ',')
	b = append(b, k.Kind.String()...)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(k.KeyGroup), 10)
	b = append(b, ',')
	if slot := e.slot(); !e.slotInHex() {
		b = rowtext.AppendCSVField(b, slot)
	} else {
		b = append(b, "0x"...)
		b = hex.AppendEncode(b, slot)
	}
	l.Buf = append(b, ',')
	var err error
	if operatorByte(e, k) && !(d.Declared && d.KeyOK) {
		l.Buf = rowtext.AppendCSVField(l.Buf, appendShownKey(nil, e, k))
	} else {
		err = writeCSVCell(l, k.UserKey, d.Declared && d.KeyOK, d.Key)
	}
	if err == nil {
		l.Buf = append(l.Buf, ',')
		err = writeCSVCell(l, e.value, d.Declared && d.ValueOK, d.Value)
	}
	if err == nil {
		l.Buf = append(l.Buf, ',')
		err = rowtext.AppendHex(l, e.key)
	}
	if err == nil {
		l.Buf = append(l.Buf, ',')
		err = rowtext.AppendHex(l, e.value)
	}
	if err != nil {
		return err
	}
	b = append(l.Buf, ',')
	if d.Declared && d.HasExpireAt {
		b = strconv.AppendInt(b, d.ExpireAt, 10)
	}
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(e.subtask), 10)
	b = append(b, ',')
	b = appendFlagCSV(b, d.KeyDecoded)
	b = append(b, ',')
	b = appendFlagCSV(b, d.ValueDecoded)
	l.Buf = append(b, '\n')
	return nil
}

// writeCSVCell appends the CSV field of a key or value: the decoded value
// as Text gives it when decoded is set, else raw rendered; text and bytes
// piece by piece.
func writeCSVCell(l *rowtext.LineWriter, raw []byte, decoded bool, v any) error {
	var hexed bool
	if decoded {
		var ok bool
		if raw, hexed, ok = textOf(v); !ok {
			t, _ := Text(JSONValue(v))
			l.Buf = rowtext.AppendCSVField(l.Buf, t)
			return nil
		}
	} else {
		hexed = !verbatim(raw)
	}
	if hexed {
		// 0x and hex digits: never quoted.
		l.Buf = append(l.Buf, "0x"...)
		return rowtext.AppendHex(l, raw)
	}
	if len(raw) <= rowtext.PieceSize {
		l.Buf = rowtext.AppendCSVField(l.Buf, raw)
		return nil
	}
	if !rowtext.CSVQuoted(raw) {
		return rowtext.AppendPieces(l, raw, nil, func(dst, p []byte) []byte { return append(dst, p...) })
	}
	l.Buf = append(l.Buf, '"')
	err := rowtext.AppendPieces(l, raw, nil, rowtext.AppendCSVQuotedBody[[]byte])
	l.Buf = append(l.Buf, '"')
	return err
}
