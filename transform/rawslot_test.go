package transform

import (
	"context"
	"encoding/json"
	"fmt"
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
// the report, which its JSON tells apart by has_slot (as inspect's), and
// a rule naming slot "<raw>" acts on the slot of that name alone.
func TestReportRawSlotApart(t *testing.T) {
	dir := t.TempDir()
	sp, set := fileAndRules(t, dir, rawSlotRows(), "  - drop_slot: {op: 5, slot: \"<raw>\"}\n")
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
	if got, _ := outputRows(t, out); !slices.Equal(got, []string{"\x05|k=c", "\xffoffset=b"}) {
		t.Errorf("output rows %q, want the empty slot's and the key without a separator", got)
	}
}

// The report's slots are in the order of their operator, then of their
// names' bytes, the keys without a separator as the text <raw> after a
// slot of that name, as export orders rows (inspect and diff list them
// after the named slots instead).
func TestReportSlotsOrder(t *testing.T) {
	dir := t.TempDir()
	rows := append(rawSlotRows(), savepoint.Row{Op: 5, Key: []byte("\x050x|k"), Value: []byte("d")}, savepoint.Row{Op: 5, Key: []byte("\x05a|k"), Value: []byte("e")}, savepoint.Row{Op: 4, Key: []byte("\x05z|k"), Value: []byte("f")})
	sp, set := fileAndRules(t, dir, rows, "  - drop: 'false'\n")
	rep, err := Run(context.Background(), sp, set, Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range rep.Slots {
		got = append(got, fmt.Sprintf("%d %q %v", s.Op, s.Slot, s.HasSlot))
	}
	want := []string{`4 "z" true`, `5 "" true`, `5 "0x" true`, `5 "<raw>" true`, `5 "<raw>" false`, `5 "a" true`}
	if !slices.Equal(got, want) {
		t.Errorf("report slots %q, want %q", got, want)
	}
}

// Every key of a rule that names a slot takes "<raw>", as the slot of that
// name: a rename out of it and into it, a set_value of its declared rows,
// a set_version bound to it; the keys without a separator are left, and a
// rename into "<raw>" does not meet them (no merge needed).
func TestRulesNameRawSlot(t *testing.T) {
	dir := t.TempDir()
	rows := append(rawSlotRows(), savepoint.Row{Op: 6, Key: []byte("\x07a|k"), Value: []byte("d")}, savepoint.Row{Op: 6, Key: []byte("\xfftimers"), Value: []byte("e")})
	sp, set := fileAndRules(t, dir, rows, `  - set_value: {op: 5, slot: "<raw>", expr: 'value + "!"'}
  - rename_slot: {op: 5, from: "<raw>", to: x}
  - rename_slot: {op: 6, from: a, to: "<raw>"}
  - set_version: {op: 6, state_type: T, version: 2, slot: "<raw>"}
slots:
  - {op: 5, slot: "<raw>", value: string}
`)
	out := filepath.Join(dir, "out.snap")
	rep, err := Run(context.Background(), sp, set, Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	got, vm := outputRows(t, out)
	want := []string{"\x05x|k=a!", "\x05|k=c", "\xffoffset=b", "\x07<raw>|k=d", "\xfftimers=e"}
	if !slices.Equal(got, want) {
		t.Errorf("output rows %q, want %q", got, want)
	}
	if vm != "6|T|2|<raw>" {
		t.Errorf("version map %q, want op 6's entry bound to slot <raw>", vm)
	}
	if len(rep.Warnings) > 0 {
		t.Errorf("warnings: %q", rep.Warnings)
	}
}

// A rule naming slot "<raw>" where the operator has only keys without a
// separator is warned of as one naming a slot with no rows, and the
// warning says how to select those keys where the rule's kind can (a
// filter's expression, a drop rule for a drop_slot), or that no slot names
// them.
func TestRawSlotRuleWarnsOfKeysWithoutSlot(t *testing.T) {
	rows := []savepoint.Row{
		{Op: 5, Key: []byte("\xffoffset"), Value: []byte("b")},
		{Op: 5, Key: []byte("\x05a|k"), Value: []byte("c")},
	}
	const head = `operator 5 has no rows of slot "<raw>" here (its slots: "a", <raw>); the rule does nothing (the rule's slot "<raw>" names a slot of that name; the keys without a slot, shown as <raw>, `
	for rule, want := range map[string]string{
		`drop_slot: {op: 5, slot: "<raw>"}`:             `rule 1 (drop_slot): ` + head + `are dropped with a drop rule: drop: 'slot == "<raw>"')`,
		`keep: {op: 5, slot: "<raw>", expr: "true"}`:    `rule 1 (keep): ` + head + `are selected with an expression: slot == "<raw>")`,
		`purge_keys: {op: 5, slot: "<raw>", keys: [k]}`: `rule 1 (purge_keys): ` + head + `are no slot a rule can name)`,
	} {
		sp, set := fileAndRules(t, t.TempDir(), rows, "  - "+rule+"\n")
		rep, err := Run(context.Background(), sp, set, Options{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(rep.Warnings, want) {
			t.Errorf("%s: warnings %q, want %q", rule, rep.Warnings, want)
		}
	}
}

// outputRows is the rows of the snapshot file at path, each as its key,
// "=" and its value, and its version map as text.
func outputRows(t *testing.T, path string) ([]string, string) {
	t.Helper()
	res, err := savepoint.Open(path, savepoint.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	var rows []string
	for _, r := range res.Files[0].Snapshot.Rows {
		rows = append(rows, string(r.Key)+"="+string(r.Value))
	}
	return rows, res.Files[0].Snapshot.Versions.String()
}
