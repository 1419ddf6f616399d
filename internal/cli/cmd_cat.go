package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sptool/sptool/export"
	"github.com/sptool/sptool/internal/rowtext"
	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
)

func init() {
	register(&command{
		name:     "cat",
		synopsis: "print a savepoint's rows as stored, file by file, readably (text, jsonl or csv)",
		usage:    "PATH [--op N] [--slot S] [--where EXPR] [--rules FILE] [--format text|jsonl|csv] [--limit N] [--temp-dir DIR]",
		run:      runCat,
	})
}

// decode holds a row's key and value decoded with a rules file's codecs.
//
// Of a row the declaration decodes only in part (its codec fails on the
// value, a declared string is not UTF-8), the parts that did not decode
// are absent (nil): JSON Lines leaves them out of "decoded", the text
// format out of its brackets, and CSV shows them as stored, as it shows
// an undeclared row's. The TTL stamp of such a row is still shown: it is
// what purge_expired reads.
type decode struct {
	Key      *any   `json:"key,omitempty"`
	Value    *any   `json:"value,omitempty"`
	ExpireAt *int64 `json:"expire_at,omitempty"`
	// keyText and valueText are Key and Value as the text format shows
	// them (catShown), "" to show them as export.ShownText does.
	keyText, valueText string
}

func runCat(ctx context.Context, s *Streams, args []string) int {
	c := commands["cat"]
	fs := flagSet(c)
	op := fs.String("op", "", "only rows of this operator: its id, or uid:NAME for the operator of uid NAME")
	slot := fs.String("slot", "", "only rows of this slot, named as cat prints it: \"<raw>\" for keys without a separator, 0x and hex digits for the slot of those bytes, a name in double quotes as Go quotes it, any other as it is (a name that itself is <raw>, starts with 0x or is in quotes: in hex)")
	format := fs.String("format", "text", "output format: text, jsonl or csv")
	limit := intFlag(fs, "limit", 0, "print at most N rows (0: all)")
	where := fs.String("where", "", "only rows for which this expr-lang expression is true (see the row model in the README)")
	rulesPath := fs.StringP("rules", "r", "", "rule file whose slots: declarations decode keys and values")
	allowUnverified := fs.Bool("allow-unverified", false, "accept payloads without a sidecar (as CLINK_ALLOW_UNVERIFIED_CHECKPOINTS does)")
	readCorrupt := fs.Bool("read-corrupt", false, "read the rows of payloads whose sidecar disagrees with them or cannot be read (corrupt, stale, or the payload changed since), to look at them; each is warned of (a payload without a sidecar is --allow-unverified's)")
	tempDir := fs.String("temp-dir", "", "where a large file in clink's hash-map order is sorted, a large changelog replayed, and a payload compressed as a whole decompressed, through temporary files (default: the system's temporary directory)")
	of := addOpenFlags(fs)
	if done, code := parse(c, fs, s, args, exactly(1)); done {
		return code
	}
	var slotIs func(savepoint.Key) bool
	slotNote := ""          // why --slot names a slot as it is, when it looks like another form
	slotShown := ""         // the slot --slot names, as cat prints it
	if fs.Changed("slot") { // --slot "" is the slot of empty name
		slotIs, slotShown, slotNote = slotMatcher(*slot)
	}
	if *format != "text" && *format != "jsonl" && *format != "csv" {
		return usageError(s, c, fmt.Errorf("--format must be text, jsonl or csv, not %q", *format))
	}
	if *limit < 0 {
		return usageError(s, c, errNegative("--limit"))
	}
	if err := checkTempDir(*tempDir, fs.Args()...); err != nil {
		return usageError(s, c, err)
	}
	var opID uint64
	if uid, ok := strings.CutPrefix(*op, "uid:"); ok {
		if uid == "" {
			return usageError(s, c, fmt.Errorf("--op %q names no uid (uid:NAME)", *op))
		}
		opID = savepoint.OperatorIDFromUID(uid) // as a rule's 'uid:' names it
	} else if fs.Changed("op") { // --op "" (an unset variable, say) names no operator, not every one
		v, err := strconv.ParseUint(*op, 10, 64)
		if err != nil {
			return usageError(s, c, fmt.Errorf("--op %q: %w (an operator id is an unsigned integer, at most %d; an operator's uid is given as uid:NAME)", *op, decimalErr(err), uint64(math.MaxUint64)))
		}
		opID = v
	}
	// With --op and --slot, --where is checked against the codecs of the
	// slot's declaration (inScope names the rows cat prints).
	var inScope func(uint64, []byte) bool
	if *op != "" && slotIs != nil {
		inScope = func(o uint64, slot []byte) bool { return o == opID && slotIs(savepoint.Key{HasSlot: true, Slot: slot}) }
	}
	filter, decoder, err := newRowFilter(*rulesPath, *where, inScope, func(w string) {
		fmt.Fprintf(s.Err, "sptool cat: warning: --where: %s\n", w)
	})
	if err != nil {
		return fail(s, c.name, err)
	}
	sp, err := openUntil(ctx, func() (*savepoint.Savepoint, error) {
		return of.openWith(fs.Arg(0), savepoint.OpenOptions{RequireValid: true, AllowMissingSidecar: *allowUnverified, AllowCorrupt: *readCorrupt, Columnar: true})
	})
	if err != nil {
		var verdict *savepoint.VerdictError
		if errors.As(err, &verdict) && !verdict.NoSidecar && verdict.Hint == "" {
			verdict.Hint = "--read-corrupt reads its rows anyway, unverified"
		}
		return fail(s, c.name, err)
	}
	defer sp.Close()
	if *readCorrupt {
		// What --read-corrupt let through (not the payloads without a
		// sidecar: --allow-unverified's).
		for _, f := range sp.Damaged() {
			fmt.Fprintf(s.Err, "sptool cat: warning: %s: integrity check %s (%s): its rows are read as they are, unverified\n", savepoint.ShowName(f.Path), f.Verdict, f.VerdictDetail)
		}
	}
	if err := sp.CheckTempDirApart(*tempDir); err != nil {
		return fail(s, c.name, fmt.Errorf("--temp-dir: %w", err))
	}
	for _, w := range append(sp.ReadWarnings(), sp.EmptyPayloadWarnings()...) {
		fmt.Fprintf(s.Err, "sptool cat: warning: %s\n", w)
	}
	// The rows --op and --slot choose: a file out of canonical order sorts
	// only those (see openCatFile).
	var pick func(op uint64, key []byte) bool
	if *op != "" || slotIs != nil {
		pick = func(o uint64, key []byte) bool {
			return (*op == "" || o == opID) && (slotIs == nil || slotIs(savepoint.ParseKey(key)))
		}
	}
	// Every line is built by an appender (appendCatText, appendCatJSON,
	// appendCatCSV) and written on a goroutine of its own while the next
	// are built.
	out := s.Out
	if *format == "text" {
		out = newTextWriter(out)
	}
	lines := rowtext.NewLineWriter(out)
	defer lines.Close(true) // what was printed before a failure stays printed
	if *format == "csv" {
		lines.Buf = rowtext.AppendCSVLine(lines.Buf, catCSVHeader...)
	}
	printed := 0
	lastHeader := ""
	var failures export.DecodeFailures
	defer func() {
		for _, w := range failures.Warnings("what did not decode printed as stored") {
			fmt.Fprintf(s.Err, "sptool cat: warning: %s\n", w)
		}
	}()
	// finish ends a cat that printed what it should, unless a file
	// changed while it was read: what was printed then mixes old and new
	// rows.
	finish := func() int {
		if code := catDone(s, c.name, lines); code != ExitOK {
			return code
		}
		if printed == 0 && slotNote != "" {
			fmt.Fprintf(s.Err, "sptool cat: warning: no rows printed; --slot %s names the slot %q as it is: %s\n", *slot, *slot, slotNote)
		} else if printed == 0 {
			// A mistyped operator or slot would look like absent state.
			var sel []string
			if *op != "" {
				sel = append(sel, "--op "+*op)
			}
			if fs.Changed("slot") {
				given := *slot
				if given == "" || strings.ContainsAny(given, " \t\n") {
					given = strconv.Quote(given)
				}
				sel = append(sel, "--slot "+given+" (the slot cat prints as slot="+slotShown+")")
			}
			// (--where alone answering nothing is an answer.)
			if len(sel) > 0 && *where != "" {
				sel = append(sel, "--where")
			}
			if len(sel) > 0 {
				fmt.Fprintf(s.Err, "sptool cat: warning: no rows printed: no row matches %s (sptool inspect lists the operators and slots)\n", strings.Join(sel, " and "))
			}
		}
		if err := sp.CheckUnchanged(); err != nil {
			return fail(s, c.name, fmt.Errorf("%w: what was printed mixes old and new rows", err))
		}
		return ExitOK
	}
	var scratch []byte
	var cf *catFile // the file being printed
	defer func() {
		if cf != nil {
			cf.close()
		}
	}()
	for _, orig := range sp.Files {
		header := savepoint.ShowName(orig.Rel)
		if orig.Subtask >= 0 {
			header = fmt.Sprintf("%s (subtask %d)", savepoint.ShowName(orig.Rel), orig.Subtask)
		}
		// A file in canonical order (as sptool writes them) is printed as
		// stored, its pages released as it goes; any other through an
		// index sorted into that order, or a sorted copy.
		first := 0
		if filter == nil && *limit > 0 {
			first = *limit - printed
		}
		var err error
		if cf, err = openCatFile(ctx, orig, *tempDir, pick, first); err != nil {
			return fail(s, c.name, err)
		}
		f, cur, order := cf.file, cf.cur, cf.order
		n := cur.Len()
		if order != nil {
			n = len(order)
		}
		every, left := cmp.Or(cf.release, f.ReleaseRows()), 0
		for at := range n {
			i := at
			if order != nil {
				i = int(order[at])
			}
			if left--; left <= 0 {
				f.ReleasePages() // what was printed stays cached, not resident
				left = every
			}
			var r savepoint.Row
			if cf.rows != nil {
				r = cf.rows[at]
			} else {
				r = cur.Row(i)
			}
			if ctx.Err() != nil {
				return fail(s, c.name, ctx.Err())
			}
			if *op != "" && r.Op != opID {
				continue
			}
			k := savepoint.ParseKey(r.Key)
			if slotIs != nil && !slotIs(k) {
				continue
			}
			if filter != nil {
				ok, err := filter(r, f.Subtask)
				if err != nil {
					return fail(s, c.name, fmt.Errorf("%s: %s %w", f.Rel, storedRowName(orig, cf.copy != nil, cur, i), err))
				}
				if !ok {
					continue
				}
			}
			printed++
			var dec *decode
			if decoder != nil {
				d, err := decoder(r, f.Subtask)
				var de *rules.DecodeError
				switch {
				case errors.As(err, &de):
					failures.Add(r.Op, k.Slot, de)
				case err != nil:
					return fail(s, c.name, fmt.Errorf("%s: %w", f.Rel, err))
				}
				dec = d
			}
			var err error
			switch *format {
			case "jsonl":
				scratch, err = writeCatJSON(lines, scratch, r, k, f.Subtask, dec)
			case "csv":
				scratch, err = writeCatCSV(lines, scratch, r, k, f.Subtask, dec)
			default:
				if header != lastHeader {
					lines.Buf = append(append(append(lines.Buf, "# "...), header...), '\n')
					lastHeader = header
				}
				lines.Buf = appendCatText(lines.Buf, r, k, dec)
			}
			if err != nil {
				return fail(s, c.name, fmt.Errorf("%s: %w", f.Rel, err))
			}
			if err := lines.MaybeFlush(); err != nil {
				return fail(s, c.name, err)
			}
			// Done once the last row asked for is printed: the rows after
			// it are not read (a row --where fails on among them does not
			// fail the run, nor is the rest of a tree scanned for none).
			if *limit > 0 && printed >= *limit {
				return finish()
			}
		}
		// Done with the file: its pages leave the resident set (a tree of
		// 64 files of 156K rows each kept 400 MB of them, none passing
		// the release every f.ReleaseRows() rows above), and its sorted
		// copy goes.
		f.ReleasePages()
		cf.close()
	}
	return finish()
}

// storedRowName names the row at i of cur, the rows cat reads of orig, a
// file as stored, for an error (savepoint.RowName): by its index in orig.
// A file out of canonical order may be read through a sorted copy (copied;
// cur is then the copy's), whose rows of one operator and key keep their
// stream order: the row is then found again in orig as the occurrence of
// its operator and key that its place among them in the copy says.
func storedRowName(orig *savepoint.File, copied bool, cur *savepoint.Cursor, i int) string {
	replayed := orig.Snapshot.Variant == savepoint.Changelog
	if !copied {
		return savepoint.RowName(replayed, i)
	}
	stored := orig.Snapshot.NewCursor()
	op, key := cur.Op(i), cur.Key(i)
	rank := 0 // rows of op and key before i in the copy
	for j := i - 1; j >= 0 && cur.Op(j) == op && bytes.Equal(cur.Key(j), key); j-- {
		rank++
	}
	for j := range stored.Len() {
		if stored.Op(j) == op && bytes.Equal(stored.Key(j), key) {
			if rank == 0 {
				return savepoint.RowName(replayed, j)
			}
			rank--
		}
	}
	return savepoint.RowName(replayed, i)
}

// catSpillRows is the fewest rows of a file out of canonical order that cat
// reads through a sorted copy: from there on the copy is the faster, and
// it keeps memory within the sort's budget however many files a tree
// holds (a variable so tests can lower it).
var catSpillRows = 1 << 16

// catDone ends a cat that printed what it should: the JSON lines still
// buffered are written, and a failed write is an error.
func catDone(s *Streams, name string, lines *rowtext.LineWriter) int {
	if lines != nil {
		if err := lines.Close(true); err != nil {
			return fail(s, name, err)
		}
	}
	return ExitOK
}

// writeCatJSON appends to l the line encoding/json writes for the catRow
// of r (HTML characters unescaped; TestWriteCatJSON compares them), and
// returns scratch, a buffer it reuses. A key or value of more than
// rowtext.PieceSize bytes is written a piece at a time (writeCatRendered).
// A row whose decoding JSON cannot hold fails with none of its line
// written.
func writeCatJSON(l *rowtext.LineWriter, scratch []byte, r savepoint.Row, k savepoint.Key, subtask int, dec *decode) ([]byte, error) {
	var decoded []byte // dec's JSON, made first when the line is written in pieces
	if dec != nil && (len(r.Key) > rowtext.PieceSize || len(r.Value) > rowtext.PieceSize) {
		var err error
		if decoded, err = rowtext.AppendJSONValue(nil, dec); err != nil {
			return scratch, fmt.Errorf("op %d key %s: %w", r.Op, hex.EncodeToString(r.Key), err)
		}
	}
	start := len(l.Buf)
	b := append(l.Buf, `{"subtask":`...)
	b = strconv.AppendInt(b, int64(subtask), 10)
	b = append(b, `,"op":`...)
	b = strconv.AppendUint(b, r.Op, 10)
	b = append(b, `,"kind":`...)
	b = rowtext.AppendJSONString(b, k.Kind.String())
	b = append(b, `,"key_group":`...)
	b = strconv.AppendInt(b, int64(k.KeyGroup), 10)
	b = append(b, `,"slot":`...)
	if k.HasSlot {
		// Not valid UTF-8: as hex, or names would merge into U+FFFD.
		scratch = export.AppendSlotText(scratch[:0], k.Slot)
		b = rowtext.AppendJSONString(b, scratch)
	} else {
		b = rowtext.AppendJSONString(b, savepoint.RawSlot)
	}
	l.Buf = append(b, `,"key":`...)
	scratch, err := writeCatRendered(l, scratch, savepoint.AppendUserKeyPrefix(nil, r.Key, k), k.UserKey, catJSON)
	if err == nil {
		l.Buf = append(l.Buf, `,"key_hex":"`...)
		err = rowtext.AppendHex(l, r.Key)
	}
	if err == nil {
		l.Buf = append(l.Buf, `","value":`...)
		scratch, err = writeCatRendered(l, scratch, nil, r.Value, catJSON)
	}
	if err == nil {
		l.Buf = append(l.Buf, `,"value_hex":"`...)
		err = rowtext.AppendHex(l, r.Value)
	}
	if err != nil {
		return scratch, err
	}
	b = append(l.Buf, '"')
	if len(r.Value) == 8 {
		b = append(b, `,"value_int64":`...)
		b = strconv.AppendInt(b, int64(binary.LittleEndian.Uint64(r.Value)), 10)
	}
	if dec != nil {
		b = append(b, `,"decoded":`...)
		if decoded != nil {
			b = append(b, decoded...)
		} else if b, err = rowtext.AppendJSONValue(b, dec); err != nil {
			l.Buf = b[:start] // (nothing of the line written yet)
			return scratch, fmt.Errorf("op %d key %s: %w", r.Op, hex.EncodeToString(r.Key), err)
		}
	}
	l.Buf = append(b, "}\n"...)
	return scratch, nil
}

// catField is how a rendered key or value stands in a line of cat's JSON
// Lines or CSV format.
type catField bool

const (
	catJSON catField = false // a JSON string
	catCSV  catField = true  // a CSV field
)

// writeCatRendered appends the text savepoint.AppendRenderBytes gives b
// (whole, after prefix: an operator key's first byte, "0x80+") to l as
// field: through scratch, which it returns, for b of up to
// rowtext.PieceSize bytes; else a piece at a time, the printable bytes
// Go-quoted or the others in hex after 0x, as AppendRenderBytes writes
// them (no int64 is shown for bytes that long), so that a line of a value
// of hundreds of MB is never held whole.
func writeCatRendered(l *rowtext.LineWriter, scratch, prefix, b []byte, field catField) ([]byte, error) {
	if len(b) <= rowtext.PieceSize {
		scratch = savepoint.AppendRenderBytes(append(scratch[:0], prefix...), b, 0)
		if field == catJSON {
			l.Buf = rowtext.AppendJSONString(l.Buf, scratch)
		} else {
			l.Buf = rowtext.AppendCSVField(l.Buf, scratch)
		}
		return scratch, nil
	}
	// A JSON string, or a CSV field quoted as the Go-quoted text holds
	// quotes; the prefix (0x, two hex digits, +) needs no escape in either.
	printable := savepoint.Printable(b)
	quoted := field == catJSON || printable
	if quoted {
		l.Buf = append(l.Buf, '"')
	}
	l.Buf = append(l.Buf, prefix...)
	var err error
	switch {
	case !printable:
		l.Buf = append(l.Buf, "0x"...)
		err = rowtext.AppendHex(l, b)
	case field == catJSON:
		// Go's quotes and escapes of '"' and '\', each escaped for JSON.
		l.Buf = append(l.Buf, `\"`...)
		err = rowtext.AppendPieces(l, b, nil, func(dst, p []byte) []byte { return appendQuoteEscaped(dst, p, `\\\"`, `\\\\`) })
		l.Buf = append(l.Buf, `\"`...)
	default:
		// Go's quotes and escapes, each quote doubled for CSV.
		l.Buf = append(l.Buf, `""`...)
		err = rowtext.AppendPieces(l, b, nil, func(dst, p []byte) []byte { return appendQuoteEscaped(dst, p, `\""`, `\\`) })
		l.Buf = append(l.Buf, `""`...)
	}
	if quoted {
		l.Buf = append(l.Buf, '"')
	}
	return scratch, err
}

// appendQuoteEscaped appends p with each '"' replaced by quote and each '\'
// by backslash.
func appendQuoteEscaped(dst, p []byte, quote, backslash string) []byte {
	for len(p) > 0 {
		i := bytes.IndexAny(p, `"\`)
		if i < 0 {
			return append(dst, p...)
		}
		dst = append(dst, p[:i]...)
		if p[i] == '"' {
			dst = append(dst, quote...)
		} else {
			dst = append(dst, backslash...)
		}
		p = p[i+1:]
	}
	return dst
}

// catCSVHeader is the header line of cat --format csv. expire_at, the TTL
// stamp of a row of a slot that --rules declares 'ttl: true' (as the text
// and JSON Lines formats show it), comes last, after the columns it was
// added to, so that a reader taking columns by position reads them as
// before.
var catCSVHeader = []string{"subtask", "op", "kind", "key_group", "slot", "key_hex", "value_hex", "key", "value", "value_int64", "expire_at"}

// slotMatcher returns what selects the rows of the slot --slot names. A
// name says which slot by its form alone, so that it names one: "<raw>"
// the keys without a separator; 0x and an even number of hex digits the
// slot of those bytes (the empty one for 0x), as cat's text format prints
// a name that is not printable ASCII and its jsonl and csv formats one
// that is not UTF-8, starts with 0x or is <raw>; a name in double quotes,
// as the text format prints the others, the name Go's quoting gives; any
// other, the slot of that name. A name that starts like a form but is not
// one (0xZZ, "abc) names the slot as it is, and note says why, for cat to
// say when it printed nothing (a typo, most likely). shown is the slot
// named as the text format prints it, for the warning that nothing matched
// (--slot 0xab is the slot of byte 0xab, printed 0xab; --slot '"0xab"' the
// slot named 0xab, printed "0xab").
func slotMatcher(name string) (is func(k savepoint.Key) bool, shown, note string) {
	if name == savepoint.RawSlot {
		return func(k savepoint.Key) bool { return !k.HasSlot }, savepoint.RawSlot, ""
	}
	want := []byte(name)
	if h, ok := strings.CutPrefix(name, "0x"); ok {
		if b, err := hex.DecodeString(h); err == nil {
			want = b
		} else {
			note = "0x names a slot by its bytes only when an even number of hex digits follows"
		}
	} else if strings.HasPrefix(name, `"`) {
		if u, err := strconv.Unquote(name); err == nil {
			want = []byte(u)
		} else {
			note = "a name in double quotes is read as Go quotes it only when it is quoted whole"
		}
	}
	return func(k savepoint.Key) bool { return k.HasSlot && bytes.Equal(k.Slot, want) }, string(appendCatSlot(nil, want)), note
}

// appendCatText appends to b r's line of cat's text format (clink's
// state-cat rendering: the user key cut at 32 bytes, the value at 64; the
// decoded key and value after them, as export's text columns hold them:
// collections as JSON).
func appendCatText(b []byte, r savepoint.Row, k savepoint.Key, dec *decode) []byte {
	b = append(b, "op="...)
	b = strconv.AppendUint(b, r.Op, 10)
	b = append(b, ' ')
	b = append(b, k.Kind.String()...)
	if k.KeyGroup >= 0 {
		b = append(b, " kg="...)
		b = strconv.AppendInt(b, int64(k.KeyGroup), 10)
	}
	b = append(b, " slot="...)
	if k.HasSlot {
		b = appendCatSlot(b, k.Slot)
	} else {
		b = append(b, savepoint.RawSlot...)
	}
	b = append(b, " key "...)
	b = savepoint.AppendRenderUserKey(b, r.Key, k, 32)
	b = append(b, " = "...)
	b = savepoint.AppendRenderBytes(b, r.Value, 64)
	if dec != nil {
		var parts []string
		if dec.Key != nil {
			parts = append(parts, "key="+cmp.Or(dec.keyText, export.ShownText(*dec.Key)))
		}
		if dec.Value != nil {
			parts = append(parts, "value="+cmp.Or(dec.valueText, export.ShownText(*dec.Value)))
		}
		if dec.ExpireAt != nil {
			parts = append(parts, "expire_at="+strconv.FormatInt(*dec.ExpireAt, 10))
		}
		b = append(append(append(b, "  ["...), strings.Join(parts, " ")...), ']')
	}
	return append(b, '\n')
}

// appendCatSlot appends a slot name as cat's text format shows it: quoted,
// as clink's state-cat prints it, when it is printable text (UTF-8
// included: `slot="zähler"`, which --slot takes back; the empty name is
// `slot=""`, as inspect shows it), else as savepoint.AppendRenderName
// renders it (0x and its hex).
func appendCatSlot(b, slot []byte) []byte {
	if utf8.Valid(slot) && !bytes.ContainsFunc(slot, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return strconv.AppendQuote(b, string(slot))
	}
	return savepoint.AppendRenderName(b, slot)
}

// catShown is a key or value as the text format shows it among the
// decoded fields: as export.ShownText shows what a codec decoded, and the
// stored bytes where nothing decodes them as a slot name is (quoted when
// printable, else 0x and hex); so that "x value=y", "null" and "100",
// strings or bytes, read as what they are and not as more fields, a
// missing value or a number. decoded is the decoded value (nil when ok is
// false), stored the stored bytes.
func catShown(ok bool, decoded any, stored []byte) string {
	if !ok {
		return string(savepoint.AppendRenderName(nil, stored))
	}
	return export.ShownText(decoded)
}

// writeCatCSVText writes the CSV cell of a user key or value, raw: its
// text when a codec decoded it (decoded), else its bytes rendered after
// prefix (writeCatRendered); it returns scratch, as writeCatRendered does.
func writeCatCSVText(l *rowtext.LineWriter, scratch []byte, decoded *any, prefix, raw []byte) ([]byte, error) {
	if decoded != nil {
		text, _ := export.Text(*decoded)
		l.Buf = rowtext.AppendCSVField(l.Buf, text)
		return scratch, nil
	}
	return writeCatRendered(l, scratch, prefix, raw, catCSV)
}

// writeCatCSV appends to l r's line of cat's CSV format (the fields of
// catCSVHeader, as encoding/csv writes them; the decoded key and value as
// export's text columns hold them instead of the rendered ones, and the
// decoded TTL stamp, empty where there is none), and returns scratch, a
// buffer it reuses. A key or value of more than rowtext.PieceSize bytes
// is written a piece at a time (writeCatRendered).
func writeCatCSV(l *rowtext.LineWriter, scratch []byte, r savepoint.Row, k savepoint.Key, subtask int, dec *decode) ([]byte, error) {
	b := strconv.AppendInt(l.Buf, int64(subtask), 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, r.Op, 10)
	b = append(b, ',')
	b = append(b, k.Kind.String()...)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(k.KeyGroup), 10)
	b = append(b, ',')
	if k.HasSlot {
		scratch = export.AppendSlotText(scratch[:0], k.Slot)
		b = rowtext.AppendCSVField(b, scratch)
	} else {
		b = rowtext.AppendCSVField(b, savepoint.RawSlot)
	}
	l.Buf = append(b, ',')
	err := rowtext.AppendHex(l, r.Key)
	if err == nil {
		l.Buf = append(l.Buf, ',')
		err = rowtext.AppendHex(l, r.Value)
	}
	var decKey, decValue *any
	if dec != nil {
		decKey, decValue = dec.Key, dec.Value
	}
	if err == nil {
		l.Buf = append(l.Buf, ',')
		scratch, err = writeCatCSVText(l, scratch, decKey, savepoint.AppendUserKeyPrefix(nil, r.Key, k), k.UserKey)
	}
	if err == nil {
		l.Buf = append(l.Buf, ',')
		scratch, err = writeCatCSVText(l, scratch, decValue, nil, r.Value)
	}
	if err != nil {
		return scratch, err
	}
	b = append(l.Buf, ',')
	if len(r.Value) == 8 {
		b = strconv.AppendInt(b, int64(binary.LittleEndian.Uint64(r.Value)), 10)
	}
	b = append(b, ',')
	if dec != nil && dec.ExpireAt != nil {
		b = strconv.AppendInt(b, *dec.ExpireAt, 10)
	}
	l.Buf = append(b, '\n')
	return scratch, nil
}

// openTempDir returns where a command writing out decompresses a payload
// compressed as a whole: --temp-dir (dir) if given, else beside the output
// (savepoint.TempDirFor), else the system's temporary directory ("").
func openTempDir(dir, out string) string {
	if dir != "" || out == "" || out == "-" {
		return dir
	}
	return savepoint.TempDirFor(out)
}

// checkTempDir refuses a --temp-dir that is not an existing directory
// before any work, rather than when a sort first needs it.
func checkTempDir(dir string, inputs ...string) error {
	if dir == "" {
		return nil
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("--temp-dir %s: not an existing directory", dir)
	}
	for _, in := range inputs {
		if err := savepoint.CheckTempDir(savepoint.InputRoot(in), dir); err != nil {
			return fmt.Errorf("--temp-dir: %w", err)
		}
	}
	return nil
}

func usageError(s *Streams, c *command, err error) int {
	fmt.Fprintf(newTextWriter(s.Err), "sptool %s: %v\nUsage: sptool %s %s\nTry: sptool %s --help\n", c.name, err, c.name, c.usage, c.name)
	return ExitError
}

// newRowFilter compiles --where against the row model (with the codecs of
// --rules, if given; inScope, if not nil, names the operator and slot the
// rows shown are of, whose declaration types the expression); the filter's error names the row's operator, slot
// and key ("(op N, slot S, key K): --where: ..."). warn is given what a rule
// file's check would warn of in the expression (a kind no row has). Filled
// in by the rules integration.
var newRowFilter = func(rulesPath, where string, inScope func(op uint64, slot []byte) bool, warn func(string)) (func(savepoint.Row, int) (bool, error), func(savepoint.Row, int) (*decode, error), error) {
	if where != "" || rulesPath != "" {
		return nil, nil, fmt.Errorf("--where and --rules need the rules engine")
	}
	return nil, nil, nil
}
