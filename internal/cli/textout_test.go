package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sptool/sptool/savepoint"
)

// TestTextWriter: control characters other than newline and tab, DEL and
// the C1 controls are shown as escapes; the rest, UTF-8 included, passes
// as it is, in one write or split across writes.
func TestTextWriter(t *testing.T) {
	for in, want := range map[string]string{
		"plain\ttext\n":        "plain\ttext\n",
		"zähler·計数\n":          "zähler·計数\n",
		"\x1b[2Jcleared\a":     `\x1b[2Jcleared\x07`,
		"nul\x00del\x7f":       `nul\x00del\x7f`,
		"c1 \u0085 and \u009b": `c1 \u0085 and \u009b`,
		"\xc2 invalid \xff":    "\xc2 invalid \xff",
	} {
		var buf bytes.Buffer
		w := newTextWriter(&buf)
		if n, err := w.Write([]byte(in)); err != nil || n != len(in) {
			t.Fatalf("%q: wrote %d, %v", in, n, err)
		}
		if buf.String() != want {
			t.Errorf("%q: got %q, want %q", in, buf.String(), want)
		}
	}
}

// TestTextOutputEscapes: text that a savepoint carries (here a metadata
// key and a decoded string holding escape sequences and a newline) reaches
// inspect's and cat's text output escaped, so that a terminal does not act
// on it and a row stays on its line.
func TestTextOutputEscapes(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, "esc.snap")
	md := savepoint.Metadata{{Key: savepoint.MetaFormatVersion, Value: "1"}, {Key: "x.\x1b[31mevil", Value: "v"}}
	rows := []savepoint.Row{{Op: 1, Key: savepoint.EncodeKeyedKey([]byte("s"), []byte("k")), Value: []byte("\x1b[2Jline1\nline2")}}
	if _, err := savepoint.WriteSnapshotFile(snap, md, rows, savepoint.SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	rulesFile := filepath.Join(dir, "r.yaml")
	if err := os.WriteFile(rulesFile, []byte("version: 1\nslots:\n  - {op: 1, slot: s, key: string, value: string}\nrules: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"inspect", snap}, {"cat", snap, "--rules", rulesFile}} {
		var out, errs bytes.Buffer
		if code := Main(context.Background(), args, &Streams{Out: &out, Err: &errs}); code != ExitOK {
			t.Fatalf("%q: exit %d: %s", args, code, errs.String())
		}
		if bytes.ContainsRune(out.Bytes(), 0x1b) {
			t.Errorf("%q: an escape character reached the output:\n%s", args, out.String())
		}
		if args[0] == "cat" && !strings.Contains(out.String(), `value="\x1b[2Jline1\nline2"]`) {
			t.Errorf("cat: the decoded value is not quoted on its line:\n%s", out.String())
		}
	}
}
