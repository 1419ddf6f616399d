package transform

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sptool/sptool/savepoint"
)

// rawSlotRows are rows of op 5 in a slot named "<raw>", in the empty slot,
// and under a key without a separator (which sptool shows as <raw>).
func rawSlotRows() []savepoint.Row {
	return []savepoint.Row{
		{Op: 5, Key: []byte("\x05<raw>|k"), Value: []byte("a")},
		{Op: 5, Key: []byte("\xffoffset"), Value: []byte("b")},
		{Op: 5, Key: []byte("\x05|k"), Value: []byte("c")},
	}
}

// A slot named "<raw>" and the keys without a separator are two lines of
// the report, which its JSON tells apart by has_slot (as inspect's).
func TestReportRawSlotApart(t *testing.T) {
	dir := t.TempDir()
	sp, set := fileAndRules(t, dir, rawSlotRows(), "  - drop: {op: 5, expr: 'kind == \"keyed\" && slot == \"<raw>\"'}\n")
	out := filepath.Join(dir, "out.snap")
	rep, err := Run(context.Background(), sp, set, Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	type line struct {
		Slot          string
		HasSlot       bool
		Before, After int64
	}
	var got []line
	for _, s := range rep.Slots {
		got = append(got, line{s.Slot, s.HasSlot, s.Before, s.After})
	}
	want := []line{{"", true, 1, 1}, {"<raw>", true, 1, 0}, {"<raw>", false, 1, 1}}
	if !slices.Equal(got, want) {
		t.Errorf("report slots %+v, want %+v", got, want)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // as the CLI writes it
	if err := enc.Encode(rep); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`{"op":5,"slot":"<raw>","has_slot":true,"before":1,"after":0}`, `{"op":5,"slot":"<raw>","has_slot":false,"before":1,"after":1}`} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("the JSON report lacks %s:\n%s", w, b.String())
		}
	}
	if len(rep.Warnings) > 0 {
		t.Errorf("warnings: %q", rep.Warnings)
	}
	res, err := savepoint.Open(out, savepoint.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	var keys []string
	for _, r := range res.Files[0].Snapshot.Rows {
		keys = append(keys, string(r.Key))
	}
	if !slices.Equal(keys, []string{"\x05|k", "\xffoffset"}) {
		t.Errorf("output keys %q, want the empty slot's and the key without a separator", keys)
	}
}
