package export

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sptool/sptool/internal/rowtext"
	"github.com/sptool/sptool/savepoint"
)

// encodeRecord is the line encoding/json writes for a Record, as the JSON
// Lines export wrote its rows before writeRecord.
func encodeRecord(t testing.TB, r Record) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	return buf.String()
}

// randomRows returns n rows (operator, entry, decoding) whose keys,
// values and decoded values hold every class of byte and value the JSON
// and CSV writers tell apart: the slot separator, printable ASCII with
// the characters JSON and CSV escape, controls, spaces, UTF-8 valid and
// not, U+2028; keyed rows, 8-byte printable keys, keys of any bytes; and
// decoded strings, numbers (NaN too), bytes, lists and maps. With long
// above 0 the user keys, values and decoded strings and bytes are of
// long/2 to 3*long/2 bytes; the decoded strings are then UTF-8 of runes of
// every length, the ones JSON escapes among them, or not UTF-8.
func randomRows(seed uint64, n, long int) []testRow {
	r := rand.New(rand.NewPCG(seed, seed+1))
	alphabet := []byte("a|Z ,\"\\<&>\x00\n\r\t\x1f\x7f\xc2\xa0\xc3\xa9\xe2\x80\xa8\xff")
	randBytes := func(n int) []byte {
		if long > 0 {
			n = long/2 + r.IntN(long)
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return b
	}
	decodedValues := []any{nil, "text", " lead", "a,b", "q\"q", "<&>\u2028", "\xff bad", int64(-3), uint64(1 << 63), 12,
		2.5, 1e-9, math.NaN(), math.Inf(-1), true, []byte{0, 1}, []byte("print,able"),
		[]any{int64(1), "x,y", []byte{9}}, map[string]any{"k": 1.5}}
	var printable []byte // a long value Render shows as it is
	if long > 0 {
		runes := []string{"a", "\"", "\n", "\x01", "é", "€", "\u2028", "😀", "<&>"}
		var text strings.Builder
		for text.Len() < long {
			text.WriteString(runes[r.IntN(len(runes))])
		}
		printable = bytes.Repeat([]byte("print, \"able\" "), long/8)
		decodedValues = []any{text.String(), text.String()[1:] + "\xff", randBytes(0), printable, string(printable), int64(3)}
	}
	rows := make([]testRow, n)
	for i := range rows {
		var key []byte
		switch i % 4 {
		case 0: // keyed: key group, slot, separator, user key
			key = append(append(append([]byte{byte(r.IntN(128))}, randBytes(r.IntN(5))...), '|'), randBytes(r.IntN(10))...)
		case 1: // a printable user key of 8 bytes, as most are
			key = append([]byte{byte(r.IntN(128)), 'a', 'g', 'g', '|'}, "user-001"...)
		default:
			key = randBytes(r.IntN(8))
		}
		e := &entry{key: key, value: randBytes(r.IntN(10)), subtask: int32(r.IntN(5) - 1)}
		if printable != nil && i%2 == 1 {
			e.value = printable
		}
		e.sep = separator(e.key)
		var d Decoded
		if i%3 == 0 {
			d = Decoded{Declared: true, KeyOK: r.IntN(4) > 0, ValueOK: r.IntN(4) > 0, HasExpireAt: r.IntN(2) == 0,
				KeyDeclared: r.IntN(3) > 0, ValueDeclared: r.IntN(3) > 0,
				Key: decodedValues[r.IntN(len(decodedValues))], Value: decodedValues[r.IntN(len(decodedValues))],
				ExpireAt: r.Int64() - r.Int64()}
		}
		rows[i] = testRow{op: r.Uint64() >> r.IntN(64), e: e, d: d}
	}
	return rows
}

type testRow struct {
	op uint64
	e  *entry
	d  Decoded
}

// writeLines writes rows with write (writeRecord or writeCSVRecord)
// through a LineWriter, after "prev\n", and checks that each is the line
// want gives for it.
func writeLines(t *testing.T, write func(*rowtext.LineWriter, uint64, *entry, Decoded) error, want func(testRow) string, rows []testRow) {
	t.Helper()
	var out bytes.Buffer
	l := rowtext.NewLineWriter(&out)
	l.Buf = append(l.Buf, "prev\n"...)
	wanted := []string{"prev\n"}
	for _, row := range rows {
		if err := write(l, row.op, row.e, row.d); err != nil {
			t.Fatalf("row of key %s, value %s: %v", short(row.e.key), short(row.e.value), err)
		}
		wanted = append(wanted, want(row))
	}
	if err := l.Close(true); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for i, w := range wanted {
		if !strings.HasPrefix(got, w) {
			row := rows[i-1]
			t.Fatalf("row %d of key %s, value %s, declared %v:\n%.300q\nwant\n%.300q", i-1, short(row.e.key), short(row.e.value), row.d.Declared, got, w)
		}
		got = got[len(w):]
	}
	if got != "" {
		t.Fatalf("%d bytes more than the lines: %.300q", len(got), got)
	}
}

// lineOf returns what write (writeRecord or writeCSVRecord) writes for e,
// undecoded, of operator 1.
func lineOf(t *testing.T, write func(*rowtext.LineWriter, uint64, *entry, Decoded) error, e *entry) string {
	t.Helper()
	var out bytes.Buffer
	l := rowtext.NewLineWriter(&out)
	if err := write(l, 1, e, Decoded{}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(true); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// short shows a key or value of a failing row, cut when long.
func short(b []byte) string {
	if len(b) > 64 {
		return fmt.Sprintf("%q... (%d bytes)", b[:64], len(b))
	}
	return fmt.Sprintf("%q", b)
}

// longRows is how many rows of long fields the line tests write: fewer
// with -short (the race detector's runs), each of megabytes.
func longRows() int {
	if testing.Short() {
		return 4
	}
	return 12
}

// Rows of short fields, then rows whose keys, values and decoded values
// are long enough to be written piece by piece.
func TestRecordLineMatchesEncodingJSON(t *testing.T) {
	rows := append(randomRows(5, 5000, 0), randomRows(6, longRows(), 2*rowtext.PieceSize)...)
	writeLines(t, writeRecord, func(row testRow) string { return encodeRecord(t, record(row.op, row.e, row.d)) }, rows)
}

// The line of a long key and value is written as it is built: the
// buffers handed to the output stay near rowtext.LineWriterSize, where the
// line of an 8 MiB value (its text and its hex) is over 32 MiB.
func TestLongLineInBoundedBuffers(t *testing.T) {
	value := bytes.Repeat([]byte{0, 1, 2, 3, 'a', 'b', '"', 0xff}, 1<<20)
	e := &entry{key: append([]byte("\x05agg|"), value[:3<<20]...), value: value}
	e.sep = separator(e.key)
	for name, write := range map[string]func(*rowtext.LineWriter, uint64, *entry, Decoded) error{"jsonl": writeRecord, "csv": writeCSVRecord} {
		for _, d := range []Decoded{{}, {Declared: true, KeyOK: true, Key: string(e.key), ValueOK: true, Value: value}} {
			most, n := 0, 0
			l := rowtext.NewLineWriter(writerFunc(func(p []byte) (int, error) {
				most, n = max(most, cap(p)), n+len(p)
				return len(p), nil
			}))
			if err := write(l, 1, e, d); err != nil {
				t.Fatal(err)
			}
			last := cap(l.Buf) // (most is the writing goroutine's until Close)
			if err := l.Close(true); err != nil {
				t.Fatal(err)
			}
			most = max(most, last)
			if most > 4*rowtext.LineWriterSize || n < 32<<20 {
				t.Errorf("%s, declared %v: a line of %d bytes written from buffers of up to %d; want them near %d", name, d.Declared, n, most, rowtext.LineWriterSize)
			}
		}
	}
}

// writerFunc is an io.Writer of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// A value encoding/json refuses fails the row, naming it, with none of its
// line written, after a short key or a long one.
func TestWriteRecordRefusesUnencodable(t *testing.T) {
	for _, user := range [][]byte{[]byte("k"), bytes.Repeat([]byte("k"), 3*rowtext.LineWriterSize)} {
		e := &entry{key: append([]byte("\x05agg|"), user...), value: []byte("v")}
		e.sep = separator(e.key)
		d := Decoded{Declared: true, KeyOK: true, Key: string(user), ValueOK: true, Value: make(chan int)}
		var out bytes.Buffer
		l := rowtext.NewLineWriter(&out)
		err := writeRecord(l, 7, e, d)
		var ute *json.UnsupportedTypeError
		if !errors.As(err, &ute) || !strings.Contains(err.Error(), "op 7 key 05616767") {
			t.Fatalf("writeRecord: %v; want an unsupported type error naming the row", err)
		}
		if err := l.Close(true); err != nil || out.Len() > 0 {
			t.Errorf("a key of %d bytes: %d bytes of the refused row's line written (%v)", len(user), out.Len(), err)
		}
	}
}

func TestCSVLineMatchesEncodingCSV(t *testing.T) {
	rows := append(randomRows(11, 5000, 0), randomRows(12, longRows(), 2*rowtext.PieceSize)...)
	writeLines(t, writeCSVRecord, func(row testRow) string { return csvOfRecord(t, record(row.op, row.e, row.d)) }, rows)
}

// csvOfRecord is the line the CSV export wrote for a Record through
// encoding/csv before writeCSVRecord.
func csvOfRecord(t testing.TB, rec Record) string {
	t.Helper()
	cell := func(v any) string {
		s, _ := Text(v)
		return s
	}
	at := ""
	if rec.ExpireAt != nil {
		at = strconv.FormatInt(*rec.ExpireAt, 10)
	}
	flag := func(b *bool) string {
		if b == nil {
			return ""
		}
		return strconv.FormatBool(*b)
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write([]string{strconv.FormatUint(rec.Op, 10), rec.Kind, strconv.Itoa(rec.KeyGroup), rec.Slot, cell(rec.Key),
		cell(rec.Value), rec.KeyHex, rec.ValueHex, at, strconv.Itoa(rec.Subtask), flag(rec.KeyDecoded), flag(rec.ValueDecoded)})
	w.Flush()
	if err := w.Error(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// record is the Record of a row, as the exports built it for encoding/json and
// encoding/csv before the appenders: the oracle the appenders are tested
// against.
func record(op uint64, e *entry, d Decoded) Record {
	k := savepoint.ParseKey(e.key)
	rec := Record{
		Op: op, Kind: k.Kind.String(), KeyGroup: k.KeyGroup, Slot: string(e.appendSlotText(nil)),
		Key: string(appendShownKey(nil, e, k)), Value: Render(e.value),
		KeyHex: hex.EncodeToString(e.key), ValueHex: hex.EncodeToString(e.value),
		Subtask: int(e.subtask),
	}
	if d.Declared {
		if d.KeyOK {
			rec.Key = JSONValue(d.Key)
		}
		if d.ValueOK {
			rec.Value = JSONValue(d.Value)
		}
		if d.HasExpireAt {
			at := d.ExpireAt
			rec.ExpireAt = &at
		}
	}
	if v, ok := d.KeyDecoded(); ok {
		rec.KeyDecoded = &v
	}
	if v, ok := d.ValueDecoded(); ok {
		rec.ValueDecoded = &v
	}
	return rec
}

// An operator-state row whose first byte is not 0xFF shows its whole key
// (in hex, with that byte) in the key text of jsonl, csv and the query
// projection: its user key alone would read as the 0xFF row's of the
// same logical key.
func TestOperatorKeyText(t *testing.T) {
	for _, c := range []struct {
		key  string
		want string
	}{
		{"\xffabc", "abc"},
		{"\x80abc", "0x80+abc"},
		{"\xfe\x01", "0xfe+0x01"},
		{"\xff\x80", "0x80"},
		{"\x80", "0x80+"},
	} {
		e := &entry{key: []byte(c.key), value: []byte("v"), sep: -1}
		k := savepoint.ParseKey(e.key)
		line := lineOf(t, writeRecord, e)
		if want := `"key":"` + c.want + `"`; !strings.Contains(string(line), want) {
			t.Errorf("key %x: jsonl %s, want %s in it", c.key, line, want)
		}
		if csv := lineOf(t, writeCSVRecord, e); !strings.Contains(csv, ",<raw>,"+c.want+",") {
			t.Errorf("key %x: csv %q, want the key %s", c.key, csv, c.want)
		}
		if got := keyText(e, k, Decoded{}); got != c.want {
			t.Errorf("key %x: key text %q, want %q", c.key, got, c.want)
		}
	}
}

// A writer that panics under a JSON Lines or CSV export has its panic
// raised in the goroutine that called Write, where it can be recovered
// (the lines are written on a goroutine of their own).
func TestWritePanickingWriterRecoverable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.snap")
	rows := []savepoint.Row{{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), []byte("k")), Value: []byte("v")}}
	if _, err := savepoint.WriteSnapshotFile(path, nil, rows, savepoint.SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	sp, err := savepoint.Open(path, savepoint.OpenOptions{Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	for _, format := range []Format{JSONL, CSV} {
		got := func() (p any) {
			defer func() { p = recover() }()
			Write(context.Background(), panicWriter{}, sp, Options{Format: format})
			return nil
		}()
		if got != "client went away" {
			t.Errorf("%s: recovered %v, want the writer's panic", format, got)
		}
	}
}

type panicWriter struct{}

func (panicWriter) Write([]byte) (int, error) { panic("client went away") }
