package transform

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
)

// wordEnds returns the offsets in runes at which the last n words of line
// end.
func wordEnds(line string, n int) []int {
	rs := []rune(line)
	var ends []int
	for i, r := range rs {
		if r != ' ' && (i+1 == len(rs) || rs[i+1] == ' ') {
			ends = append(ends, i+1)
		}
	}
	return ends[max(0, len(ends)-n):]
}

// runeOffset is the offset in runes at which sub starts in line, -1 if it
// is not there.
func runeOffset(line, sub string) int {
	i := strings.Index(line, sub)
	if i < 0 {
		return -1
	}
	return utf8.RuneCountInString(line[:i])
}

// The report's tables size their columns to their widest cell, counted in
// runes: rule names, slot names and input files longer than the columns
// were meant for are shown whole, and the columns after them, and counts
// of more digits than they were meant for, stay in line with their
// headers.
func TestReportTablesFitWideCells(t *testing.T) {
	longRule := strings.Repeat("erasure request ", 4) + "PRIV-1182"
	longSlot := strings.Repeat("zähler_", 5) // 35 runes, 40 bytes
	longFile := "v1/12/checkpoint-1234567890123456789.snap"
	rep := &Report{
		Input: Input{Path: "in", Kind: "tree", Backend: "file"},
		PerRule: []*RuleStats{
			{Index: 1, Label: `rule 1 "` + longRule + `" (purge_keys)`, Matched: 7, Dropped: 7, Purge: &PurgeAudit{KeysListed: 1}},
			{Index: 2, Label: "rule 2 (drop)", Matched: 123456789012345, Dropped: 123456789012345},
		},
		Slots: []*SlotStats{
			{Op: 1, Slot: "a", HasSlot: true, Before: 3, After: 3},
			{Op: 2, Slot: longSlot, HasSlot: true, Before: 123456789012345, After: 0},
			{Op: 3, Slot: "zähler", HasSlot: true, Before: 5, After: 5},
		},
		Files: []*FileStats{
			{Input: "v1/0/checkpoint-7.snap", Action: "rewrite", RowsIn: 5, RowsOut: 5},
			{Input: longFile, Action: "rewrite", RowsIn: 123456789012345, RowsOut: 3},
		},
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	find := func(prefix string) int {
		for i, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return i
			}
		}
		t.Fatalf("no line starts with %q:\n%s", prefix, b.String())
		return -1
	}
	// aligned checks that the rows' names start where the header's name
	// column does, and that their last n words (the counts) end where the
	// header's do.
	aligned := func(header, column string, rows []string, names []string, n int) {
		t.Helper()
		for i, r := range rows {
			if got, want := runeOffset(r, names[i]), runeOffset(header, column); got != want {
				t.Errorf("%q starts at %d, its header at %d:\n%s\n%s", names[i], got, want, header, r)
			}
			if got, want := wordEnds(strings.TrimSuffix(r, " *"), n), wordEnds(header, n); !slices.Equal(got, want) {
				t.Errorf("counts end at %v, their headers at %v:\n%s\n%s", got, want, header, r)
			}
		}
	}
	h := find("#    rule")
	aligned(lines[h], "rule", []string{lines[h+1], lines[h+3]}, []string{`"` + longRule + `"`, "(drop)"}, 3)
	h = find("op  ")
	aligned(lines[h], "slot", lines[h+1:h+4], []string{`"a"`, `"` + longSlot + `"`, `"zähler"`}, 2)
	h = find("files:")
	if a, c := lines[h+1], lines[h+2]; !strings.Contains(c, longFile+" ") || runeOffset(a, "rewrite") != runeOffset(c, "rewrite") || runeOffset(a, "->") != runeOffset(c, "->") {
		t.Errorf("the files' lines are out of line:\n%s\n%s", a, c)
	}
}

// dryRunReport is the report of a dry run over a file of rows with a rule
// that changes nothing, and its text.
func dryRunReport(t *testing.T, rows []savepoint.Row) (*Report, string) {
	t.Helper()
	sp, set := fileAndRules(t, t.TempDir(), rows, "  - drop: 'false'\n")
	rep, err := Run(context.Background(), sp, set, Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	return rep, text.String()
}

// TestReportSlotNamesRendered: a slot name that is not printable UTF-8 (a
// newline, an escape sequence, bytes that are not UTF-8) is written in
// the text report as 0x and its hex, on one line, and the JSON gives its
// bytes in slot_hex where they are not valid UTF-8.
func TestReportSlotNamesRendered(t *testing.T) {
	rep, text := dryRunReport(t, []savepoint.Row{
		{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("a\nb\x1b[31m"), []byte("x")), Value: []byte("v")},
		{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("\xff\xfe"), []byte("y")), Value: []byte("v")},
		{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("plain"), []byte("z")), Value: []byte("v")},
	})
	if strings.Contains(text, "\x1b") || strings.Contains(text, "a\nb") {
		t.Errorf("the report writes a slot name's control characters:\n%q", text)
	}
	for _, want := range []string{"0x610a621b5b33316d", "0xfffe", "plain"} {
		if !strings.Contains(text, want) {
			t.Errorf("the report does not show slot %s:\n%s", want, text)
		}
	}
	hexOf := map[string]string{}
	for _, s := range rep.Slots {
		hexOf[s.Slot] = s.SlotHex
	}
	if hexOf["\xff\xfe"] != "fffe" || hexOf["plain"] != "" || hexOf["a\nb\x1b[31m"] != "" {
		t.Errorf("slot_hex %q: want fffe for the slot that is not UTF-8 only", hexOf)
	}
}

// TestVersionChangeHex: the report's version-map changes give a state type
// that is not valid UTF-8 in hex too (the JSON writes U+FFFD for its bad
// bytes), and the entries with their slot quoted; a remap moves such an
// entry to another operator.
func TestVersionChangeHex(t *testing.T) {
	dir := t.TempDir()
	vm, err := savepoint.ParseVersionMap("1|Caf\xe9|1|sl\xfft")
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in.snap")
	rows := []savepoint.Row{{Op: 1, Key: savepoint.EncodeKeyedKey([]byte("sl\xfft"), []byte("x")), Value: []byte("v")}}
	if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, vm), rows, savepoint.SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	sp, err := savepoint.Open(in, savepoint.OpenOptions{Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	set, err := rules.Parse(filepath.Join(dir, "r.yaml"), []byte("version: 1\nrules:\n  - remap_operator: {from: 1, to: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), sp, set, Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[uint64]VersionChange{}
	for _, c := range rep.VersionMap {
		got[c.Op] = c
	}
	want := `v1 slot "sl\xfft"`
	wantEntry := savepoint.VersionState{Version: 1, Slot: "sl\xfft", SlotHex: "736cff74"}
	if c := got[1]; c.StateTypeHex != "436166e9" || c.Before != want || c.After != "" || c.BeforeEntry == nil || *c.BeforeEntry != wantEntry || c.AfterEntry != nil {
		t.Errorf("op 1's change %+v: want state_type_hex 436166e9, before %s (%+v), no after", c, want, wantEntry)
	}
	if c := got[2]; c.StateTypeHex != "436166e9" || c.After != want || c.Before != "" || c.AfterEntry == nil || *c.AfterEntry != wantEntry || c.BeforeEntry != nil {
		t.Errorf("op 2's change %+v: want state_type_hex 436166e9, after %s (%+v)", c, want, wantEntry)
	}
	for _, c := range rep.VersionMap {
		if !utf8.ValidString(c.Before) || !utf8.ValidString(c.After) {
			t.Errorf("change %+v: an entry that is not valid UTF-8", c)
		}
	}
}

// TestReportPathsQuoted: a path holding a newline (a file named so on the
// command line) is quoted in the text report's header and files table, so
// that it makes no line of its own.
func TestReportPathsQuoted(t *testing.T) {
	rep := &Report{Input: Input{Kind: "file", Path: "in\nfake line.snap"}, Files: []*FileStats{{Subtask: -1, Input: "in\nfake line.snap", Action: "rewrite"}}}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(text.String(), "\n") {
		if strings.HasPrefix(line, "fake line") {
			t.Errorf("a line of its own from the path:\n%s", text.String())
		}
	}
}

// TestReportSlotNamesAsInspect: the text report shows slot names as
// inspect does, so that none of them reads as another: quoted when
// printable (the empty name as ""), else 0x and its hex, and the keys
// without a separator as <raw>, unquoted.
func TestReportSlotNamesAsInspect(t *testing.T) {
	_, text := dryRunReport(t, []savepoint.Row{
		{Op: 5, Key: savepoint.EncodeKeyedKey(nil, []byte("k")), Value: []byte("v")},
		{Op: 5, Key: savepoint.EncodeKeyedKey([]byte("<raw>"), []byte("k")), Value: []byte("v")},
		{Op: 5, Key: []byte("\xffoffset"), Value: []byte("v")},
		{Op: 5, Key: savepoint.EncodeKeyedKey([]byte("\x01"), []byte("k")), Value: []byte("v")},
		{Op: 5, Key: savepoint.EncodeKeyedKey([]byte("0x01"), []byte("k")), Value: []byte("v")},
	})
	var names []string
	for _, l := range strings.Split(text, "\n") {
		if f := strings.Fields(l); len(f) >= 4 && f[0] == "5" {
			names = append(names, f[1])
		}
	}
	if want := []string{`""`, "0x01", `"0x01"`, `"<raw>"`, "<raw>"}; !slices.Equal(names, want) {
		t.Errorf("the report's slots %q, want %q:\n%s", names, want, text)
	}
}

// A row's error names its slot as the report does: a slot named "<raw>"
// quoted, the keys without a separator as <raw>, unquoted.
func TestRowErrorSlotShown(t *testing.T) {
	for _, tc := range []struct {
		row  savepoint.Row
		want string
	}{
		{savepoint.Row{Op: 5, Key: savepoint.EncodeKeyedKey([]byte("<raw>"), []byte("k")), Value: []byte("v")}, `(op 5, slot "<raw>", key `},
		{savepoint.Row{Op: 5, Key: []byte("\xffoffset"), Value: []byte("v")}, "(op 5, slot <raw>, key "},
		{savepoint.Row{Op: 5, Key: savepoint.EncodeKeyedKey([]byte("\xfe\xfd"), []byte("k")), Value: []byte("v")}, "(op 5, slot 0xfefd, key "},
	} {
		sp, set := fileAndRules(t, t.TempDir(), []savepoint.Row{tc.row}, "  - drop: 'len(key_bytes) % (len(key_bytes) - len(key_bytes)) == 0'\n")
		_, err := Run(context.Background(), sp, set, Options{DryRun: true})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("row %q: %v, want %q in it", tc.row.Key, err, tc.want)
		}
	}
}
