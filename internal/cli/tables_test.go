package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sptool/sptool/savepoint"
)

// runeOffset is the offset in runes at which sub starts in line, -1 if it
// is not there.
func runeOffset(line, sub string) int {
	i := strings.Index(line, sub)
	if i < 0 {
		return -1
	}
	return utf8.RuneCountInString(line[:i])
}

// section returns the lines of text from the one that starts with title
// to the first empty line after it.
func section(text, title string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if len(out) == 0 && !strings.HasPrefix(l, title) {
			continue
		}
		if l == "" {
			break
		}
		out = append(out, l)
	}
	return out
}

// The tables of inspect and of the plan report size their columns to
// their widest cell, counted in runes: a slot name of two-byte runes
// longer than a column was meant for is shown whole, and an operator whose
// value bytes take more digits than another's leaves the columns after
// them in line on every row.
func TestTablesFitWideCells(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "checkpoint-3.snap")
	long := "zählerstände_der_letzten_woche_je_kunde" // 39 runes, 43 bytes
	var rows []savepoint.Row
	for i := range 3 {
		rows = append(rows, savepoint.Row{Op: 1, Key: savepoint.EncodeKeyedKey([]byte("a"), []byte{byte('a' + i)}), Value: []byte("v")})
	}
	for i := range 10 {
		rows = append(rows, savepoint.Row{Op: 2, Key: savepoint.EncodeKeyedKey([]byte(long), []byte(fmt.Sprint(i))), Value: bytes.Repeat([]byte("w"), 2000)})
	}
	slices.SortFunc(rows, func(a, b savepoint.Row) int {
		if a.Op != b.Op {
			return int(a.Op) - int(b.Op)
		}
		return bytes.Compare(a.Key, b.Key)
	})
	if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.SnapshotOptions{Sidecar: true, CheckpointID: 3}); err != nil {
		t.Fatal(err)
	}
	rulesPath := filepath.Join(dir, "r.yaml")
	if err := os.WriteFile(rulesPath, []byte("version: 1\nrules:\n  - drop: 'false'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		var out, errs bytes.Buffer
		if code := Main(context.Background(), args, &Streams{Out: &out, Err: &errs}); code != ExitOK {
			t.Fatalf("%s: exit %d: %s", args[0], code, errs.String())
		}
		return out.String()
	}

	ops := section(run("inspect", in), "Operators")
	if len(ops) != 6 {
		t.Fatalf("inspect's Operators table: %d lines, want 6:\n%s", len(ops), strings.Join(ops, "\n"))
	}
	header := ops[1]
	for _, l := range ops[2:] {
		slot, per := "(all)", runeOffset(header, "ROWS PER SUBTASK")
		if strings.HasPrefix(l, "   ") {
			slot = `"` // a slot's line: the name, quoted
		} else if got := utf8.RuneCountInString(l[:strings.LastIndexByte(l, ' ')+1]); got != per {
			t.Errorf("inspect: the rows per subtask start at %d, under a header at %d:\n%s\n%s", got, per, header, l)
		}
		if got, want := runeOffset(l, slot), runeOffset(header, "SLOT"); got != want {
			t.Errorf("inspect: the slot starts at %d, under a header at %d:\n%s\n%s", got, want, header, l)
		}
	}
	if !strings.Contains(strings.Join(ops, "\n"), `"`+long+`"`) {
		t.Errorf("inspect: the slot name is not shown whole:\n%s", strings.Join(ops, "\n"))
	}

	slots := section(run("plan", "-r", rulesPath, in), "op ")
	if len(slots) != 3 {
		t.Fatalf("plan's slot table: %d lines, want 3:\n%s", len(slots), strings.Join(slots, "\n"))
	}
	for _, l := range slots[1:] {
		// The counts are on the right: every line ends where the header does.
		if utf8.RuneCountInString(l) != utf8.RuneCountInString(slots[0]) || runeOffset(l, " ") > runeOffset(slots[0], "slot") {
			t.Errorf("plan: a row out of line with the header:\n%s\n%s", slots[0], l)
		}
	}
	if !strings.Contains(slots[2], ` "`+long+`" `) {
		t.Errorf("plan: the slot name is not shown whole:\n%s", slots[2])
	}
}
