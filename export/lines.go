package export

import (
	"encoding/hex"
	"fmt"
	"io"
	"strconv"

	"github.com/sptool/sptool/internal/rowtext"
	"github.com/sptool/sptool/savepoint"
)

// jsonlSink writes each row as a line holding its Record as encoding/json
// writes it (HTML characters unescaped), built by appendRecord instead of
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
	b, err := appendRecord(s.out.Buf, op, e, s.dec.decode(op, e))
	if err != nil {
		return err
	}
	s.out.Buf = b
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

// appendRecord appends the line of record(op, e, d) (its JSON and a
// newline) to b, the bytes json.Encoder with SetEscapeHTML(false) writes
// for it (TestAppendRecordMatchesEncodingJSON).
func appendRecord(b []byte, op uint64, e *entry, d Decoded) ([]byte, error) {
	start := len(b)
	k := savepoint.ParseKey(e.key)
	b = append(b, `{"op":`...)
	b = strconv.AppendUint(b, op, 10)
	b = append(b, `,"kind":`...)
	b = rowtext.AppendJSONString(b, k.Kind.String())
	b = append(b, `,"key_group":`...)
	b = strconv.AppendInt(b, int64(k.KeyGroup), 10)
	b = append(b, `,"slot":`...)
	b = appendSlotJSON(b, e)
	var err error
	b = append(b, `,"key":`...)
	if d.Declared && d.KeyOK {
		b, err = rowtext.AppendJSONValue(b, JSONValue(d.Key))
	} else {
		if operatorByte(e, k) {
			b = rowtext.AppendJSONString(b, appendShownKey(nil, e, k))
		} else {
			b = appendRenderJSON(b, k.UserKey)
		}
	}
	if err == nil {
		b = append(b, `,"value":`...)
		if d.Declared && d.ValueOK {
			b, err = rowtext.AppendJSONValue(b, JSONValue(d.Value))
		} else {
			b = appendRenderJSON(b, e.value)
		}
	}
	if err != nil {
		return b[:start], fmt.Errorf("op %d key %s: %w", op, hex.EncodeToString(e.key), err)
	}
	b = append(b, `,"key_hex":"`...)
	b = hex.AppendEncode(b, e.key)
	b = append(b, `","value_hex":"`...)
	b = hex.AppendEncode(b, e.value)
	b = append(b, `","expire_at":`...)
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
	return append(b, "}\n"...), nil
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

// appendRenderJSON appends Render(v) as a JSON string.
func appendRenderJSON(b, v []byte) []byte {
	if verbatim(v) {
		return rowtext.AppendJSONString(b, v)
	}
	return appendHexJSON(b, v)
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
// line encoding/csv writes for them (appendCSVRecord), through a
// rowtext.LineWriter.
type csvSink struct{ lineSink }

func newCSVSink(w io.Writer, dec *decoder) *csvSink {
	s := &csvSink{newLineSink(w, dec)}
	s.out.Buf = rowtext.AppendCSVLine(s.out.Buf, CSVHeader...)
	return s
}

func (s *csvSink) add(op uint64, e *entry) error {
	s.out.Buf = appendCSVRecord(s.out.Buf, op, e, s.dec.decode(op, e))
	return s.out.MaybeFlush()
}

// appendCSVRecord appends the CSV line of record(op, e, d) to b: its
// fields in CSVHeader's order, a decoded key or value as Text gives it,
// empty when it has none (TestAppendCSVRecordMatchesEncodingCSV).
func appendCSVRecord(b []byte, op uint64, e *entry, d Decoded) []byte {
	k := savepoint.ParseKey(e.key)
	b = strconv.AppendUint(b, op, 10)
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
	b = append(b, ',')
	if operatorByte(e, k) && !(d.Declared && d.KeyOK) {
		b = rowtext.AppendCSVField(b, appendShownKey(nil, e, k))
	} else {
		b = appendCSVCell(b, k.UserKey, d.Declared && d.KeyOK, d.Key)
	}
	b = append(b, ',')
	b = appendCSVCell(b, e.value, d.Declared && d.ValueOK, d.Value)
	b = append(b, ',')
	b = hex.AppendEncode(b, e.key)
	b = append(b, ',')
	b = hex.AppendEncode(b, e.value)
	b = append(b, ',')
	if d.Declared && d.HasExpireAt {
		b = strconv.AppendInt(b, d.ExpireAt, 10)
	}
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(e.subtask), 10)
	b = append(b, ',')
	b = appendFlagCSV(b, d.KeyDecoded)
	b = append(b, ',')
	b = appendFlagCSV(b, d.ValueDecoded)
	return append(b, '\n')
}

// appendCSVCell appends the CSV field of a key or value: the decoded value
// as Text gives it when decoded is set, else raw rendered.
func appendCSVCell(b, raw []byte, decoded bool, v any) []byte {
	if decoded {
		t, _ := Text(JSONValue(v))
		return rowtext.AppendCSVField(b, t)
	}
	if verbatim(raw) {
		return rowtext.AppendCSVField(b, raw)
	}
	b = append(b, "0x"...)
	return hex.AppendEncode(b, raw)
}
