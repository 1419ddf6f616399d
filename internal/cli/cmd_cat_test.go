package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sptool/sptool/export"
	"github.com/sptool/sptool/internal/rowtext"
	"github.com/sptool/sptool/savepoint"
)

// catSample is a row of catSamples.
type catSample struct {
	row     savepoint.Row
	k       savepoint.Key
	subtask int
	dec     *decode
}

// anyp returns a pointer to v, a part of a decode.
func anyp(v any) *any { return &v }

// catSamples pairs stored keys (keyed rows with slots and user keys that
// JSON or CSV escape, that are not UTF-8, longer than the text format's
// 32 bytes; keys without a separator) with values (printable or not, 8
// bytes or not, longer than the text format's 64), some decoded.
func catSamples() []catSample {
	at := int64(1700000000000)
	decodes := []*decode{nil, {Key: anyp("k"), Value: anyp(int64(3))}, {Key: anyp([]byte{1, 2}), Value: anyp(map[string]any{"<": 1.5}), ExpireAt: &at},
		{Key: anyp(nil), Value: anyp([]any{"x,y", uint64(7)})}, {Key: anyp("k"), ExpireAt: &at}, {Value: anyp(int64(3))}}
	keys := [][]byte{[]byte("\x05agg|user-001"), []byte("\x7fwin\"dow|k\\ey"), []byte("\x00\xff\xfe|\x00\n\x1f"),
		[]byte("\x03sl\u2028ot|\xc3\xa9<&>"), []byte("\x09|"), []byte("raw-key"), []byte("\xff"), nil,
		[]byte("\x01a|12345678"), []byte("\x02s, t|" + strings.Repeat("long user key ", 4)), []byte("\x04 lead| lead"),
		[]byte("\x80abc"), []byte("\xfe__clink_timers"), []byte("\xc0slot|k")}
	values := [][]byte{nil, []byte("v"), []byte("8 bytes!"), []byte("\x00\x01\x02\x03\x04\x05\x06\x07"), []byte("quote\"back\\slash"),
		[]byte("\xe2\x80\xa9 and more than eight"), bytes.Repeat([]byte("0123456789"), 8), []byte("a,b\nc")}
	var out []catSample
	for i, key := range keys {
		for j, value := range values {
			row := savepoint.Row{Op: uint64(i * j * 1000003), Key: key, Value: value}
			out = append(out, catSample{row, savepoint.ParseKey(row.Key), (i+j)%3 - 1, decodes[(i*len(values)+j)%len(decodes)]})
		}
	}
	return out
}

// longCatSamples are rows whose keys and values are long enough to be
// written a piece at a time: printable with quotes and backslashes (Go
// quotes them), not printable (hex), an operator key of first byte 0x80,
// some decoded.
func longCatSamples() []catSample {
	printable := bytes.Repeat([]byte(`say "hi", \ then, `), rowtext.PieceSize/8)
	binaryish := bytes.Repeat([]byte("\x00\x01\xff\"a"), rowtext.PieceSize/2)
	at := int64(1700000000000)
	var out []catSample
	for i, key := range [][]byte{append([]byte("\x05agg|"), printable...), append([]byte("\x80"), binaryish...), []byte("\x05agg|k")} {
		for j, value := range [][]byte{printable, binaryish, []byte("short")} {
			dec := []*decode{nil, {Key: anyp("k"), Value: anyp(int64(3)), ExpireAt: &at}}[(i+j)%2]
			row := savepoint.Row{Op: uint64(i + j), Key: key, Value: value}
			out = append(out, catSample{row, savepoint.ParseKey(row.Key), 1, dec})
		}
	}
	return out
}

// catLine returns what write (writeCatJSON or writeCatCSV) writes for c
// through a LineWriter, after "prev\n", with scratch, which it returns.
func catLine(t *testing.T, write func(*rowtext.LineWriter, []byte, savepoint.Row, savepoint.Key, int, *decode) ([]byte, error), scratch []byte, c catSample) ([]byte, []byte) {
	t.Helper()
	var out bytes.Buffer
	l := rowtext.NewLineWriter(&out)
	l.Buf = append(l.Buf, "prev\n"...)
	scratch, err := write(l, scratch, c.row, c.k, c.subtask, c.dec)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(true); err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), scratch
}

// writeCatJSON writes what encoding/json wrote for a catRow, for every
// kind of key and value, decoded or not, long or short.
func TestWriteCatJSON(t *testing.T) {
	var scratch []byte
	for _, c := range append(catSamples(), longCatSamples()...) {
		var got []byte
		got, scratch = catLine(t, writeCatJSON, scratch, c)
		cr := newCatRow(c.row, c.k, c.subtask)
		if c.k.HasSlot {
			cr.Slot = string(export.AppendSlotText(nil, c.k.Slot)) // not valid UTF-8: hex
		}
		cr.Decoded = c.dec
		var want bytes.Buffer
		want.WriteString("prev\n")
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(cr); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("row %.80q = %.80q:\n%.300s\nwant\n%.300s", c.row.Key, c.row.Value, got, want.Bytes())
		}
	}
}

// Every format shows the first byte of an operator key that is not 0xff
// (0x80+"abc"): without it the row's key reads as the 0xff row's of the
// same logical key, which JSON Lines and CSV showed alike.
func TestCatOperatorByte(t *testing.T) {
	for _, c := range []struct{ key, want string }{{"\x80abc", `0x80+\"abc\"`}, {"\xffabc", `\"abc\"`}} {
		r := savepoint.Row{Op: 1, Key: []byte(c.key), Value: []byte("a")}
		k := savepoint.ParseKey(r.Key)
		got, _ := catLine(t, writeCatJSON, nil, catSample{r, k, 0, nil})
		if !bytes.Contains(got, []byte(`"key":"`+c.want+`"`)) {
			t.Errorf("JSON Lines of %q: %s, want key %s", c.key, got, c.want)
		}
		csv, _ := catLine(t, writeCatCSV, nil, catSample{r, k, 0, nil})
		if want := strings.ReplaceAll(c.want, `\"`, `""`); !bytes.Contains(csv, []byte(want)) {
			t.Errorf("CSV of %q: %s, want key %s", c.key, csv, want)
		}
	}
}

// appendCatText writes what writeTextRow wrote. An operator key whose first
// byte is not 0xff shows it.
func TestAppendCatText(t *testing.T) {
	r := savepoint.Row{Op: 1, Key: []byte("\x80abc"), Value: []byte("a")}
	if got := string(appendCatText(nil, r, savepoint.ParseKey(r.Key), nil)); got != "op=1 operator slot=<raw> key 0x80+\"abc\" = \"a\"\n" {
		t.Errorf("0x80 key: %q", got)
	}
	for _, c := range catSamples() {
		got := appendCatText([]byte("prev\n"), c.row, c.k, c.dec)
		cr := newCatRow(c.row, c.k, c.subtask)
		cr.Decoded = c.dec
		var want bytes.Buffer
		want.WriteString("prev\n")
		writeTextRow(&want, cr, c.row, c.k)
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("row %q = %q:\n%q\nwant\n%q", c.row.Key, c.row.Value, got, want.Bytes())
		}
	}
}

// writeCatCSV writes what encoding/csv wrote for cat's fields, the TTL
// stamp of a decoded row last, long or short.
func TestWriteCatCSV(t *testing.T) {
	var scratch []byte
	for _, c := range append(catSamples(), longCatSamples()...) {
		var got []byte
		got, scratch = catLine(t, writeCatCSV, scratch, c)
		cr := newCatRow(c.row, c.k, c.subtask)
		if c.k.HasSlot {
			cr.Slot = string(export.AppendSlotText(nil, c.k.Slot)) // not valid UTF-8: hex
		}
		vi := ""
		if cr.ValueInt64 != nil {
			vi = strconv.FormatInt(*cr.ValueInt64, 10)
		}
		key, val, expireAt := cr.Key, cr.Value, ""
		if c.dec != nil {
			// A part that did not decode is shown as stored.
			if c.dec.Key != nil {
				key, _ = export.Text(*c.dec.Key)
			}
			if c.dec.Value != nil {
				val, _ = export.Text(*c.dec.Value)
			}
			if c.dec.ExpireAt != nil {
				expireAt = strconv.FormatInt(*c.dec.ExpireAt, 10)
			}
		}
		var want bytes.Buffer
		want.WriteString("prev\n")
		w := csv.NewWriter(&want)
		w.Write([]string{strconv.Itoa(cr.Subtask), strconv.FormatUint(cr.Op, 10), cr.Kind, strconv.Itoa(cr.KeyGroup), cr.Slot, cr.KeyHex, cr.ValueHex, key, val, vi, expireAt})
		w.Flush()
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("row %.80q = %.80q:\n%.300q\nwant\n%.300q", c.row.Key, c.row.Value, got, want.Bytes())
		}
	}
}

// catRow is one row as cat's JSON Lines format prints it (the oracle of
// writeCatJSON: cat built its lines from it through encoding/json).
type catRow struct {
	Subtask    int     `json:"subtask"`
	Op         uint64  `json:"op"`
	Kind       string  `json:"kind"`
	KeyGroup   int     `json:"key_group"`
	Slot       string  `json:"slot"`
	Key        string  `json:"key"`
	KeyHex     string  `json:"key_hex"`
	Value      string  `json:"value"`
	ValueHex   string  `json:"value_hex"`
	ValueInt64 *int64  `json:"value_int64,omitempty"`
	Decoded    *decode `json:"decoded,omitempty"`
}

// newCatRow is the catRow of r.
func newCatRow(r savepoint.Row, k savepoint.Key, subtask int) catRow {
	cr := catRow{
		Subtask: subtask, Op: r.Op, Kind: k.Kind.String(), KeyGroup: k.KeyGroup, Slot: k.SlotName(),
		Key: operatorByte(r, k) + savepoint.RenderBytes(k.UserKey, 0), KeyHex: hex.EncodeToString(r.Key),
		Value: savepoint.RenderBytes(r.Value, 0), ValueHex: hex.EncodeToString(r.Value),
	}
	if len(r.Value) == 8 {
		v := int64(binary.LittleEndian.Uint64(r.Value))
		cr.ValueInt64 = &v
	}
	return cr
}

// operatorByte is the first byte of an operator key that is not 0xff, as
// the formats show it before the user key ("0x80+"), or "".
func operatorByte(r savepoint.Row, k savepoint.Key) string {
	if k.Kind == savepoint.KindOperator && r.Key[0] != 0xff {
		return fmt.Sprintf("0x%02x+", r.Key[0])
	}
	return ""
}

// writeTextRow writes cr's line of the text format (the oracle of
// appendCatText).
func writeTextRow(w io.Writer, cr catRow, r savepoint.Row, k savepoint.Key) {
	kg := ""
	if k.KeyGroup >= 0 {
		kg = fmt.Sprintf(" kg=%d", k.KeyGroup)
	}
	slot := savepoint.RenderBytes([]byte(cr.Slot), 0)
	switch {
	case !k.HasSlot:
		slot = savepoint.RawSlot
	case cr.Slot == "":
		slot = `""` // as inspect shows it (RenderBytes: 0x)
	}
	fmt.Fprintf(w, "op=%d %s%s slot=%s key %s%s = %s", r.Op, cr.Kind, kg, slot, operatorByte(r, k), savepoint.RenderBytes(k.UserKey, 32), savepoint.RenderBytes(r.Value, 64))
	if d := cr.Decoded; d != nil {
		// The parts that decoded, each in its place (a part that did not
		// is left out; one that decoded to nil is null).
		text := func(v any) string {
			switch x := v.(type) {
			case nil:
				return "null"
			case string:
				return strconv.Quote(x) // never read as another field
			}
			t, _ := export.Text(v)
			return t
		}
		var parts []string
		if d.Key != nil {
			parts = append(parts, "key="+text(*d.Key))
		}
		if d.Value != nil {
			parts = append(parts, "value="+text(*d.Value))
		}
		if d.ExpireAt != nil {
			parts = append(parts, fmt.Sprintf("expire_at=%d", *d.ExpireAt))
		}
		fmt.Fprintf(w, "  [%s]", strings.Join(parts, " "))
	}
	fmt.Fprintln(w)
}

// cat prints the same bytes whether a file out of canonical order goes
// through an index sorted in memory, through a sorted copy on disk (of the
// rows --op and --slot choose), or, under a --limit, through the first
// rows found in one pass, in every format, duplicates and all, and removes
// its copies.
func TestCatThroughSortedCopies(t *testing.T) {
	// A file in no order whose keys each come two or three times, with
	// other values: a copy must keep every row, duplicates in stream order.
	dupes := filepath.Join(t.TempDir(), "dupes.snap")
	var rows []savepoint.Row
	for i := range 3000 {
		k := (i * 7919) % 1000
		key := append([]byte{byte(k % 128)}, fmt.Sprintf("slot|key-%04d", k)...)
		rows = append(rows, savepoint.Row{Op: uint64(1 + k%3), Key: key, Value: []byte(fmt.Sprintf("v%d", i))})
	}
	if _, err := savepoint.WriteSnapshotFile(dupes, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.SnapshotOptions{AsIs: true}); err != nil {
		t.Fatal(err)
	}
	inputs := []string{dupes, filepath.Join("..", "..", "testdata", "example")}
	fixtures, err := filepath.Glob(filepath.Join("..", "..", "testdata", "independent", "*.truth.json"))
	if err != nil || len(fixtures) == 0 {
		t.Fatalf("no independent fixtures: %v", err)
	}
	for _, f := range fixtures {
		inputs = append(inputs, strings.TrimSuffix(f, ".truth.json"))
	}
	unsorted := 0
	for _, in := range inputs {
		sp, err := savepoint.Open(in, savepoint.OpenOptions{Columnar: true, AllowMissingSidecar: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range sp.Files {
			if _, strict := f.Snapshot.Order(); !strict {
				unsorted++
			}
		}
		sp.Close()
		for _, format := range []string{"text", "jsonl", "csv"} {
			for _, sel := range [][]string{nil, {"--limit", "7"}, {"--limit", "2500"}, {"--op", "2"}, {"--slot", "slot", "--limit", "40"}, {"--op", "3", "--slot", "slot", "--limit", "1"}, {"--op", "9", "--limit", "3"}} {
				// run prints in through sorted copies from spillRows rows,
				// and through the first rows found up to firstRows, whose
				// values are copied up to heldValues bytes.
				run := func(spillRows, firstRows, heldValues int) string {
					defer func(n, m, v int) { catSpillRows, catFirstRows, catHeldValues = n, m, v }(catSpillRows, catFirstRows, catHeldValues)
					catSpillRows, catFirstRows, catHeldValues = spillRows, firstRows, heldValues
					tmp := t.TempDir()
					var out, errs bytes.Buffer
					args := append([]string{"cat", "--allow-unverified", "--format", format, "--temp-dir", tmp, in}, sel...)
					if code := Main(context.Background(), args, &Streams{Out: &out, Err: &errs}); code != ExitOK {
						t.Fatalf("%v: exit %d: %s", args, code, errs.String())
					}
					if left, _ := os.ReadDir(tmp); len(left) > 0 {
						t.Fatalf("%v left %d temporary files", args, len(left))
					}
					return out.String()
				}
				inMemory, copied := run(1<<30, 0, 1<<30), run(1, 0, 1<<30)
				first, firstInPlace := run(1<<30, 1<<30, 1<<30), run(1<<30, 1<<30, 0)
				if sel == nil && inMemory == "" || inMemory != copied || inMemory != first || inMemory != firstInPlace {
					t.Fatalf("cat %s --format %s %v: %d bytes through a sorted index, %d through sorted copies, %d through the first rows (%d read in place), not the same", in, format, sel, len(inMemory), len(copied), len(first), len(firstInPlace))
				}
			}
		}
	}
	if unsorted == 0 {
		t.Fatal("no input has a file out of canonical order: the sorted copies are not tested")
	}
}

// The first rows of a file out of order are read at random; a file within
// the bytes of one release of its pages (File.ReleaseRows covers every row)
// has them released as any file's, not after every row, which made a
// --limit of thousands of rows several times slower than the sort it
// replaced.
func TestCatFirstRowsReleaseOfSmallFile(t *testing.T) {
	in := filepath.Join(t.TempDir(), "unsorted.snap")
	var rows []savepoint.Row
	for i := range 3000 {
		rows = append(rows, savepoint.Row{Op: 1, Key: append([]byte{byte(i % 128)}, fmt.Sprintf("s|key-%04d", 2999-i)...), Value: []byte("v")})
	}
	if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.SnapshotOptions{AsIs: true}); err != nil {
		t.Fatal(err)
	}
	sp, err := savepoint.Open(in, savepoint.OpenOptions{Columnar: true, AllowMissingSidecar: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	f := sp.Files[0]
	if sorted, _ := f.Snapshot.Order(); sorted || f.ReleaseRows() < len(rows) {
		t.Fatalf("the input is sorted (%v) or beyond one release (%d rows a release)", sorted, f.ReleaseRows())
	}
	cf, err := openCatFile(context.Background(), f, "", nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer cf.close()
	if len(cf.order) != 100 || cf.copy != nil {
		t.Fatalf("%d rows found, copy %v: want the first 100 found in one pass", len(cf.order), cf.copy != nil)
	}
	if cf.release != 0 {
		t.Fatalf("pages released every %d rows, want File.ReleaseRows' cadence", cf.release)
	}
}

// A row --where fails on is named by its index in the file as stored,
// whether the file is read through a sorted index or a sorted copy: a copy
// of a file in no order, whose keys come twice, names the second copy of
// a key by where the file holds it.
func TestCatWhereErrorNamesStoredRow(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "unsorted.snap")
	key := func(k int) []byte { return append([]byte{byte(k % 128)}, fmt.Sprintf("s|key-%04d", k)...) }
	var rows []savepoint.Row
	for i := range 200 {
		rows = append(rows, savepoint.Row{Op: 1, Key: key(199 - i), Value: binary.LittleEndian.AppendUint64(nil, uint64(i))})
	}
	// Row 200: key-0150 again, with a value int64 cannot decode.
	rows = append(rows, savepoint.Row{Op: 1, Key: key(150), Value: []byte{1}})
	if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.SnapshotOptions{AsIs: true}); err != nil {
		t.Fatal(err)
	}
	rulesFile := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rulesFile, []byte("version: 1\nslots:\n  - {op: 1, slot: s, value: int64}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, spill := range []int{1 << 30, 1} {
		func() {
			defer func(n int) { catSpillRows = n }(catSpillRows)
			catSpillRows = spill
			var out, errs bytes.Buffer
			code := Main(context.Background(), []string{"cat", "--allow-unverified", "--rules", rulesFile, "--where", "value >= 0", "--temp-dir", dir, in}, &Streams{Out: &out, Err: &errs})
			if code != ExitError || !strings.Contains(errs.String(), "unsorted.snap: row 200 (op 1, slot \"s\", key \"key-0150\" ") {
				t.Fatalf("sorted copies from %d rows: exit %d, stderr %q, want row 200 named", spill, code, errs.String())
			}
		}()
	}
}

// Decoded collections print as JSON in text and CSV, as export's text
// columns hold them: lists that %v would print alike stay apart.
func TestCatCollectionsAsJSON(t *testing.T) {
	r := savepoint.Row{Op: 1, Key: savepoint.EncodeKeyedKey([]byte("l"), []byte("k")), Value: []byte{0}}
	k := savepoint.ParseKey(r.Key)
	for _, c := range []struct {
		value any
		want  string
	}{
		{[]any{"a b", "c"}, `["a b","c"]`},
		{[]any{"a", "b c"}, `["a","b c"]`},
		{[]any{"<b>&"}, `["<b>&"]`},
	} {
		dec := &decode{Key: anyp("k"), Value: anyp(c.value)}
		text := string(appendCatText(nil, r, k, dec))
		csvLine, _ := catLine(t, writeCatCSV, nil, catSample{r, k, 0, dec})
		rec, err := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(csvLine, []byte("prev\n")))).Read()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text, "value="+c.want+"]") || rec[8] != c.want {
			t.Errorf("%v: text %q, csv value %q; want %s", c.value, text, rec[8], c.want)
		}
	}
}

// Of a row the declared codecs cannot decode, what did decode is shown
// (here the key), and the row is counted in a warning, as export does; a --where that does not read the value
// does not decode it, and one that does fails on that row.
func TestCatUndecodable(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "f.snap")
	key := func(k string) []byte { return savepoint.EncodeKeyedKey([]byte("n"), []byte(k)) }
	rows := []savepoint.Row{
		{Op: 1, Key: key("a"), Value: binary.LittleEndian.AppendUint64(nil, 7)},
		{Op: 1, Key: key("b"), Value: []byte{1, 2, 3}},
	}
	if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.SnapshotOptions{Sidecar: true}); err != nil {
		t.Fatal(err)
	}
	rulesPath := filepath.Join(dir, "r.yaml")
	if err := os.WriteFile(rulesPath, []byte("version: 1\nslots:\n  - {op: 1, slot: n, key: string, value: int64}\nrules: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cat := func(args ...string) (int, string, string) {
		var out, errs bytes.Buffer
		code := Main(context.Background(), append([]string{"cat", "--rules", rulesPath}, append(args, in)...), &Streams{Out: &out, Err: &errs})
		return code, out.String(), errs.String()
	}
	code, out, errs := cat("--format", "jsonl")
	if code != ExitOK || strings.Count(out, "\n") != 2 || !strings.Contains(out, `"decoded":{"key":"a","value":7}`) || !strings.Contains(out, `"value_hex":"010203","decoded":{"key":"b"}}`) ||
		!strings.Contains(errs, `sptool cat: warning: op 1 slot "n": 1 row the declared codecs could not decode (what did not decode printed as stored); first: decode value of op 1 slot "n" with codec int64`) {
		t.Errorf("cat: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := cat("--where", "key_group >= 0"); code != ExitOK || strings.Count(out, "\n") != 3 {
		t.Errorf("cat --where not reading the value: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := cat("--where", "value == 7"); code != ExitError || !strings.Contains(errs, "int64") {
		t.Errorf("cat --where reading the value: exit %d\n%s", code, errs)
	}
}

// The TTL stamp of a row whose payload the value codec cannot decode is
// still shown, in every format: it is what purge_expired reads.
func TestCatStampOfUndecodableValue(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "f.snap")
	key := func(k string) []byte { return savepoint.EncodeKeyedKey([]byte("t"), []byte(k)) }
	rows := []savepoint.Row{
		{Op: 1, Key: key("f"), Value: savepoint.JoinTTL(500, []byte{1, 2, 3})},
		{Op: 1, Key: key("h"), Value: savepoint.JoinTTL(1000, nil)},
		{Op: 1, Key: key("s"), Value: []byte{1, 2}}, // no whole stamp: nothing decodes but the key
	}
	if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.SnapshotOptions{Sidecar: true}); err != nil {
		t.Fatal(err)
	}
	rulesPath := filepath.Join(dir, "r.yaml")
	if err := os.WriteFile(rulesPath, []byte("version: 1\nslots:\n  - {op: 1, slot: t, key: string, value: int64, ttl: true}\nrules: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for format, want := range map[string][]string{
		"jsonl": {`"decoded":{"key":"f","expire_at":500}}`, `"decoded":{"key":"h","expire_at":1000}}`, `"value_hex":"0102","decoded":{"key":"s"}}`},
		"text":  {`= 0xf401000000000000010203  [key="f" expire_at=500]`, `= 0xe803000000000000 (int64 1000)  [key="h" expire_at=1000]`, `= 0x0102  [key="s"]`},
		"csv":   {`,f,0xf401000000000000010203,,500`, `,h,0xe803000000000000 (int64 1000),1000,1000`, `,s,0x0102,,`},
	} {
		var out, errs bytes.Buffer
		code := Main(context.Background(), []string{"cat", "--rules", rulesPath, "--format", format, in}, &Streams{Out: &out, Err: &errs})
		if code != ExitOK || !strings.Contains(errs.String(), "3 rows the declared codecs could not decode") {
			t.Errorf("%s: exit %d\n%s", format, code, errs.String())
		}
		for _, w := range want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: no %s in\n%s", format, w, out.String())
			}
		}
	}
}

// A declared string that is not valid UTF-8 is not shown as decoded: its
// 0x hex would read as the text "0x...". It is left out of what decoded,
// and the row counted, as export does, in a warning that says it decodes
// (rules read it as a string of its bytes), not that it does not.
func TestCatStringNotUTF8(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "f.snap")
	rows := []savepoint.Row{
		{Op: 1, Key: savepoint.EncodeKeyedKey([]byte("s"), []byte("ok")), Value: []byte("v")},
		{Op: 1, Key: savepoint.EncodeKeyedKey([]byte("s"), []byte("k\xff")), Value: []byte("v")},
		{Op: 1, Key: savepoint.EncodeKeyedKey([]byte("s"), []byte("0x6bff")), Value: []byte("v\xfe")},
	}
	if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.SnapshotOptions{Sidecar: true}); err != nil {
		t.Fatal(err)
	}
	rulesPath := filepath.Join(dir, "r.yaml")
	if err := os.WriteFile(rulesPath, []byte("version: 1\nslots:\n  - {op: 1, slot: s, key: string, value: string}\nrules: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	code := Main(context.Background(), []string{"cat", "--rules", rulesPath, "--format", "jsonl", in}, &Streams{Out: &out, Err: &errs})
	if code != ExitOK || !strings.Contains(out.String(), `"decoded":{"key":"ok","value":"v"}`) ||
		!strings.Contains(out.String(), `"key_hex":"4f737c6bff","value":"\"v\"","value_hex":"76","decoded":{"value":"v"}}`) ||
		!strings.Contains(out.String(), `"value":"0x76fe","value_hex":"76fe","decoded":{"key":"0x6bff"}}`) ||
		!strings.Contains(errs.String(), `sptool cat: warning: op 1 slot "s": 2 rows holding a declared string that is not valid UTF-8, given as stored (0x and hex), which as text would read as other text; first: key of op 1 slot "s" with codec string is not valid UTF-8: it decodes, and a rule reads it as a string of its bytes (which string functions such as upper or replace write as U+FFFD where they are not UTF-8; declare bytes for string to work on the bytes)`) ||
		strings.Contains(errs.String(), "could not decode") || strings.Contains(errs.String(), "fit the slot's rows") {
		t.Errorf("cat: exit %d\n%s%s", code, out.String(), errs.String())
	}
}

// --slot names one slot, by any form cat prints it in (the text format
// prints a name as it is, quoted or in hex, without the int64 reading of
// 8 bytes that keys and values get): each slot of a file
// is asked for by the name the text format prints (quotes and all, or 0x
// and hex), by the one jsonl prints (unless in quotes, which --slot reads
// as quoted: such a name is given in hex), by 0x and its hex, and by the
// name itself where it has no other reading (not <raw>, not 0x..., not in
// quotes), and each gives its one row and no other: slots named 0xff and
// <raw> are not the byte ff and the keys without a separator, nor 0x the
// empty name.
func TestCatSlotAsPrinted(t *testing.T) {
	p := filepath.Join(t.TempDir(), "checkpoint-7.snap")
	names := []string{"agg", "0xab", "\xab", "z\u00e4hler", "", "0x", "\xff\xfe", "0xff", "\xff", "<raw>", `"q"`, "abcdefgh", "a b", "\x01\x02\x03\x04\x05\x06\x07\x08"}
	rows := []savepoint.Row{{Op: 1, Key: []byte("\x07nosep"), Value: []byte("v")}} // no separator: <raw>
	for _, n := range names {
		rows = append(rows, savepoint.Row{Op: 1, Key: []byte("\x07" + n + "|k"), Value: []byte("v")})
	}
	slices.SortFunc(rows, func(a, b savepoint.Row) int { return bytes.Compare(a.Key, b.Key) })
	if _, err := savepoint.WriteSnapshotFile(p, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.SnapshotOptions{Sidecar: true, CheckpointID: 7}); err != nil {
		t.Fatal(err)
	}
	cat := func(args ...string) string {
		t.Helper()
		var out, errs bytes.Buffer
		if code := Main(context.Background(), append([]string{"cat", p}, args...), &Streams{Out: &out, Err: &errs}); code != 0 {
			t.Fatalf("cat %q: exit %d: %s", args, code, errs.String())
		}
		return out.String()
	}
	printed := map[string][]string{} // per format, each row's slot as printed
	for _, line := range strings.Split(strings.TrimSpace(cat()), "\n") {
		if i := strings.Index(line, " slot="); i >= 0 {
			// The name as printed: quoted (spaces and all), or a word.
			s := line[i+len(" slot="):]
			if q, err := strconv.QuotedPrefix(s); err == nil {
				s = q
			} else {
				s = strings.Fields(s)[0]
			}
			if rest := strings.TrimPrefix(line[i+len(" slot="):], s); !strings.HasPrefix(rest, " key ") {
				t.Errorf("text line: the slot %s is followed by %q, not the key", s, rest)
			}
			printed["text"] = append(printed["text"], s)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(cat("--format", "jsonl")), "\n") {
		var r struct{ Slot string }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		printed["jsonl"] = append(printed["jsonl"], r.Slot)
	}
	for i, r := range rows {
		k := savepoint.ParseKey(r.Key)
		asked := []string{printed["text"][i]}
		if j := printed["jsonl"][i]; !strings.HasPrefix(j, `"`) {
			asked = append(asked, j) // (a name in quotes is read as quoted)
		}
		if k.HasSlot {
			asked = append(asked, "0x"+hex.EncodeToString(k.Slot))
		}
		if s := string(k.Slot); k.HasSlot && s != savepoint.RawSlot && !strings.HasPrefix(s, "0x") && !strings.HasPrefix(s, `"`) {
			asked = append(asked, s)
		}
		for _, name := range asked {
			out := cat("--slot", name, "--format", "jsonl")
			if n := strings.Count(out, "\n"); n != 1 || !strings.Contains(out, `"key_hex":"`+hex.EncodeToString(r.Key)+`"`) {
				t.Errorf("--slot %q (slot %q, printed %q and %q): %d rows:\n%s", name, k.Slot, printed["text"][i], printed["jsonl"][i], n, out)
			}
		}
	}
}

// The text format quotes a string a codec decoded, so that no two decoded
// rows read alike: a string holding " value=", the string "null" and a
// missing value, the string "100" and a number.
func TestCatTextQuotesDecodedStrings(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "r.yaml")
	if err := os.WriteFile(rules, []byte("version: 1\nslots:\n  - {op: 7, slot: s, key: string, value: string}\n  - {op: 7, slot: o, key: string, value: 'optional<string>'}\n  - {op: 7, slot: n, key: int64, value: int64}\n  - {op: 7, slot: b, key: string}\n  - {op: 7, slot: v, value: bytes}\nrules: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, decoder, err := rulesRowFilter(rules, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		slot, key string
		value     []byte
		want      string
	}{
		{"s", "a", []byte("x value=y"), `[key="a" value="x value=y"]`},
		{"s", "a value=x", []byte("y"), `[key="a value=x" value="y"]`},
		{"o", "b", []byte{0}, `[key="b" value=null]`},
		{"o", "b", []byte("\x01null"), `[key="b" value="null"]`},
		{"s", "c", []byte("100"), `[key="c" value="100"]`},
		{"n", "\x64\x00\x00\x00\x00\x00\x00\x00", []byte("\x64\x00\x00\x00\x00\x00\x00\x00"), `[key=100 value=100]`},
		// Bytes, undecoded or of the bytes codec, as a slot name is shown.
		{"b", "k", []byte("100"), `[key="k" value="100"]`},
		{"b", "k", []byte("null"), `[key="k" value="null"]`},
		{"b", "k", []byte(`"x"`), `[key="k" value="\"x\""]`},
		{"b", "k", []byte{0, 1}, `[key="k" value=0x0001]`},
		{"v", "a value=b", []byte("y"), `[key="a value=b" value="y"]`},
	} {
		r := savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte(c.slot), []byte(c.key)), Value: c.value}
		d, err := decoder(r, -1)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(appendCatText(nil, r, savepoint.ParseKey(r.Key), d)); !strings.HasSuffix(got, "  "+c.want+"\n") {
			t.Errorf("%s %q = %q: %s, want %s", c.slot, c.key, c.value, got, c.want)
		}
	}
}

// TestAppendCatSlot: a slot name is quoted when it is printable text, UTF-8
// included, as clink's state-cat prints it; else it is 0x and its hex.
func TestAppendCatSlot(t *testing.T) {
	for name, want := range map[string]string{
		"counts":     `"counts"`,
		"zähler·計数":  `"zähler·計数"`,
		"a\x01":      `0x6101`,
		"\xff\xfe":   `0xfffe`,
		"tab\there":  `0x7461620968657265`,
		"":           `""`, // as inspect shows it
		"say \"hi\"": `"say \"hi\""`,
	} {
		if got := string(appendCatSlot(nil, []byte(name))); got != want {
			t.Errorf("appendCatSlot(%q) = %s, want %s", name, got, want)
		}
	}
}

// A payload whose sidecar disagrees with it is refused, with the flag
// that reads it anyway; with --read-corrupt its rows are printed after a
// warning naming it.
func TestCatReadCorrupt(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("..", "..", "testdata", "example", "v1", "2", "checkpoint-7.snap")
	in := filepath.Join(dir, "checkpoint-7.snap")
	for _, suffix := range []string{"", ".meta"} {
		b, err := os.ReadFile(src + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if suffix == "" {
			b[len(b)/2] ^= 0x40 // a byte of the body: the stream still decodes
		}
		if err := os.WriteFile(in+suffix, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errs strings.Builder
	if code := Main(context.Background(), []string{"cat", "--limit", "1", in}, &Streams{Out: &out, Err: &errs}); code != ExitError || out.Len() != 0 ||
		!strings.Contains(errs.String(), "integrity check corrupt") || !strings.Contains(errs.String(), "(--read-corrupt reads its rows anyway, unverified)") {
		t.Errorf("without --read-corrupt: exit %d, stdout %q, stderr %q", code, out.String(), errs.String())
	}
	out.Reset()
	errs.Reset()
	if code := Main(context.Background(), []string{"cat", "--read-corrupt", "--limit", "1", in}, &Streams{Out: &out, Err: &errs}); code != ExitOK ||
		!strings.Contains(out.String(), "op=") || !strings.HasPrefix(errs.String(), "sptool cat: warning: "+in+": integrity check corrupt (") {
		t.Errorf("with --read-corrupt: exit %d, stdout %q, stderr %q", code, out.String(), errs.String())
	}
	// A single file without a sidecar is read as always, with no warning;
	// a tree's payload without one is still --allow-unverified's.
	if err := os.Remove(in + ".meta"); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errs.Reset()
	if code := Main(context.Background(), []string{"cat", "--read-corrupt", "--limit", "1", in}, &Streams{Out: &out, Err: &errs}); code != ExitOK || errs.Len() != 0 {
		t.Errorf("a file without a sidecar, --read-corrupt: exit %d, stderr %q", code, errs.String())
	}
	tree := filepath.Join(dir, "tree")
	if err := os.CopyFS(tree, os.DirFS(filepath.Join("..", "..", "testdata", "example"))); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(tree, "v1", "1", "checkpoint-7.snap.meta")); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errs.Reset()
	if code := Main(context.Background(), []string{"cat", "--read-corrupt", tree}, &Streams{Out: &out, Err: &errs}); code != ExitError ||
		!strings.Contains(errs.String(), "integrity check incomplete") || !strings.Contains(errs.String(), "--allow-unverified") {
		t.Errorf("a tree's payload without a sidecar, --read-corrupt: exit %d, stderr %q", code, errs.String())
	}
}
