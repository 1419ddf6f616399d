package transform_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/transform"
)

// A value its declared codec cannot decode is an error of the rules that
// read it, not of one that reads only value_bytes, whatever the other
// rules read: here rule 1 drops the row it cannot decode (the way the
// README gives to be rid of such rows) though rule 2 reads values.
func TestDecodeFailureOnlyForRulesReadingIt(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.snap")
	rows := []savepoint.Row{
		{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("o"), []byte("bad")), Value: []byte{2}},
		{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("o"), []byte("good")), Value: []byte{1, 5, 0, 0, 0, 0, 0, 0, 0}},
	}
	if _, err := savepoint.WriteSnapshotFile(in, nil, rows, savepoint.SnapshotOptions{Sidecar: true}); err != nil {
		t.Fatal(err)
	}
	decl := "version: 1\nslots:\n  - {op: 7, slot: o, key: string, value: \"optional<int64>\"}\nrules:\n"
	for _, c := range []struct {
		name, rules string
		want        string // "" for a run that drops the bad row
	}{
		{"value_bytes, then value", "  - drop: {op: 7, slot: o, expr: 'value_bytes[0] == 2'}\n  - set_value: {op: 7, slot: o, expr: 'value'}\n", ""},
		{"value", "  - drop: {op: 7, slot: o, expr: 'value == nil'}\n", "decode value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep, err := run(t, in, parseRules(t, decl+c.rules, nil), transform.Options{Out: filepath.Join(t.TempDir(), "out.snap")})
			switch {
			case c.want == "" && (err != nil || rep.RowsDropped != 1 || rep.RowsOut != 1):
				t.Errorf("run: %v, want the bad row dropped (report %+v)", err, rep)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("run: %v, want an error holding %q", err, c.want)
			}
		})
	}
}
