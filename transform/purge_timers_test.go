package transform

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
)

// TestPurgeRemovesTimers: a GDPR purge also removes the erased keys' timers
// from the operators' timer blobs (they would fire for the subject after a
// restore), keeps every other timer, and the audit counts them.
func TestPurgeRemovesTimers(t *testing.T) {
	dir := t.TempDir()
	set, in := exampleWith(t, "  - purge_keys: {keys: [user-30, user-31]}\n")
	timersOf := func(sp *savepoint.Savepoint) map[string]int {
		keys := map[string]int{}
		for _, f := range sp.Files {
			f.Snapshot.EachRow(func(_ int, r savepoint.Row) bool {
				if bytes.HasPrefix(r.Key, savepoint.TimerKeyPrefix) {
					proc, event, err := savepoint.ParseTimers(r.Value)
					if err != nil {
						t.Fatal(err)
					}
					for _, tm := range append(proc, event...) {
						keys[string(tm.Key)]++
					}
				}
				return true
			})
		}
		return keys
	}
	before := timersOf(in)
	if before["user-30"] != 1 || len(before) < 20 {
		t.Fatalf("the example should hold one timer of user-30 among many: %v", before)
	}
	out := filepath.Join(dir, "out")
	rep, err := Run(context.Background(), in, set, Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	p := rep.PerRule[0].Purge
	if p.TimersKept != 0 {
		t.Errorf("timers kept %d by a purge not scoped to a slot", p.TimersKept)
	}
	if p.TimersRemoved != 1 || p.Remaining != 0 {
		t.Fatalf("timers removed %d, remaining %d; want 1 and 0", p.TimersRemoved, p.Remaining)
	}
	sp, err := savepoint.Open(out, savepoint.OpenOptions{RequireValid: true})
	if err != nil {
		t.Fatal(err)
	}
	after := timersOf(sp)
	if after["user-30"] != 0 {
		t.Fatal("user-30's timer survived the purge")
	}
	delete(before, "user-30")
	if len(after) != len(before) {
		t.Fatalf("%d other timers before, %d after", len(before), len(after))
	}
	for k, n := range before {
		if after[k] != n {
			t.Errorf("timer of %q: %d before, %d after", k, n, after[k])
		}
	}
}

// TestSlotScopedPurgeKeepsTimers: a purge scoped to a slot leaves the
// listed keys' timers (a timer belongs to the key, whose other slots keep
// their state), counts them and warns.
func TestSlotScopedPurgeKeepsTimers(t *testing.T) {
	dir := t.TempDir()
	set, in := exampleWith(t, "  - purge_keys: {keys: [user-30], codec: string, uid: agg, slot: seen}\n")
	rep, err := Run(context.Background(), in, set, Options{Out: filepath.Join(dir, "out")})
	if err != nil {
		t.Fatal(err)
	}
	p := rep.PerRule[0].Purge
	if p.TimersRemoved != 0 || p.TimersKept != 1 {
		t.Errorf("timers removed %d, kept %d; want 0 and 1", p.TimersRemoved, p.TimersKept)
	}
	if !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, "1 timers of listed keys were left") }) {
		t.Errorf("no warning of the timers left: %q", rep.Warnings)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil || !strings.Contains(text.String(), "1 timers of listed keys left in timer blobs (the rule is scoped to a slot)") {
		t.Errorf("text report (%v):\n%s", err, text.String())
	}

	// Counted on the output: a later rule that removes the timers leaves
	// none to report.
	for _, later := range []string{"  - purge_keys: {keys: [user-30], codec: string}\n", "  - drop_operator: {uid: agg}\n"} {
		set, _ := exampleWith(t, "  - purge_keys: {keys: [user-30], codec: string, uid: agg, slot: seen}\n"+later)
		rep, err := Run(context.Background(), in, set, Options{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if p := rep.PerRule[0].Purge; p.TimersKept != 0 || slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, "timers of listed keys were left") }) {
			t.Errorf("then %s: timers kept %d, warnings %q", strings.TrimSpace(later), p.TimersKept, rep.Warnings)
		}
	}
}

// TestSlotScopedPurgeUnreadableBlob: a purge scoped to a slot leaves the
// timer blobs alone, so one it cannot read does not fail the run.
func TestSlotScopedPurgeUnreadableBlob(t *testing.T) {
	dir := t.TempDir()
	rows := []savepoint.Row{
		{Op: 1, Key: savepoint.EncodeKeyedKey([]byte("c"), []byte("x")), Value: []byte("v")},
		{Op: 1, Key: []byte("\xff__clink_timers"), Value: []byte("garbage!")},
	}
	sp, set := fileAndRules(t, dir, rows, "  - purge_keys: {keys: [x], codec: string, op: 1, slot: c}\n")
	rep, err := Run(context.Background(), sp, set, Options{Out: filepath.Join(dir, "out.snap")})
	if err != nil {
		t.Fatalf("a slot-scoped purge failed on a timer blob it leaves: %v", err)
	}
	if rep.RowsDropped != 1 {
		t.Errorf("%d rows dropped, want 1", rep.RowsDropped)
	}
}

// TestPurgeLegacyTimerBlob: an old tree may keep an operator's timers
// under the unprefixed "__clink_timers" key, a raw row that
// get_operator_state falls back to: an unscoped purge removes the erased
// keys' timers from it as from a prefixed blob, and counts them.
func TestPurgeLegacyTimerBlob(t *testing.T) {
	dir := t.TempDir()
	timers := func(keys ...string) []byte {
		var proc []savepoint.Timer
		for i, k := range keys {
			proc = append(proc, savepoint.Timer{Time: int64(i + 1), Key: []byte(k)})
		}
		return savepoint.EncodeTimers(proc, nil)
	}
	rows := []savepoint.Row{
		{Op: 1, Key: savepoint.EncodeKeyedKey([]byte("c"), []byte("k5")), Value: []byte("v")},
		{Op: 1, Key: savepoint.EncodeKeyedKey([]byte("c"), []byte("k6")), Value: []byte("v")},
		{Op: 1, Key: []byte("__clink_timers"), Value: timers("k5", "k6")},
		{Op: 1, Key: []byte("\xff__clink_timers"), Value: timers("k5")},
	}
	sp, set := fileAndRules(t, dir, rows, "  - purge_keys: {keys: [k5], codec: string}\n")
	out := filepath.Join(dir, "out.snap")
	rep, err := Run(context.Background(), sp, set, Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if p := rep.PerRule[0].Purge; p.TimersRemoved != 2 || p.Remaining != 0 {
		t.Errorf("timers removed %d, remaining %d; want 2 and 0", p.TimersRemoved, p.Remaining)
	}
	got, err := savepoint.Open(out, savepoint.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	for _, r := range got.Files[0].Snapshot.Rows {
		if !savepoint.IsTimerBlob(r.Key) {
			continue
		}
		proc, _, err := savepoint.ParseTimers(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		for _, tm := range proc {
			if string(tm.Key) == "k5" {
				t.Errorf("blob %q keeps a timer of k5", r.Key)
			}
		}
	}
}

// exampleWith parses a rule file of the given rules and opens the bundled
// example tree (closed when the test ends).
func exampleWith(t *testing.T, rulesYAML string) (*rules.Set, *savepoint.Savepoint) {
	t.Helper()
	set, err := rules.Parse(filepath.Join(t.TempDir(), "r.yaml"), []byte("version: 1\nrules:\n"+rulesYAML))
	if err != nil {
		t.Fatal(err)
	}
	in, err := savepoint.Open("../testdata/example", savepoint.OpenOptions{Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	return set, in
}

// fileAndRules writes rows to a snapshot file in dir and opens it, and
// parses a rule file of the given rules.
func fileAndRules(t *testing.T, dir string, rows []savepoint.Row, rulesYAML string) (*savepoint.Savepoint, *rules.Set) {
	t.Helper()
	in := filepath.Join(dir, "in.snap")
	if _, err := savepoint.WriteSnapshotFile(in, nil, rows, savepoint.SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	sp, err := savepoint.Open(in, savepoint.OpenOptions{Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	set, err := rules.Parse(filepath.Join(dir, "r.yaml"), []byte("version: 1\nrules:\n"+rulesYAML))
	if err != nil {
		t.Fatal(err)
	}
	return sp, set
}

// TestUnscopedPurgeUnreadableBlob: a purge of every slot cannot leave an
// erased key's timers in a blob it cannot read: it fails, naming the row,
// the rule and the way out, and writes nothing.
func TestUnscopedPurgeUnreadableBlob(t *testing.T) {
	dir := t.TempDir()
	rows := []savepoint.Row{
		{Op: 1, Key: savepoint.EncodeKeyedKey([]byte("c"), []byte("x")), Value: []byte("v")},
		{Op: 1, Key: []byte("\xff__clink_timers"), Value: []byte("garbage!")},
	}
	sp, set := fileAndRules(t, dir, rows, "  - purge_keys: {keys: [x], codec: string}\n")
	out := filepath.Join(dir, "out.snap")
	_, err := Run(context.Background(), sp, set, Options{Out: out})
	if err == nil {
		t.Fatal("the purge ran over a timer blob it cannot read")
	}
	for _, want := range []string{"row 1", "rule 1 (purge_keys)", `timer blob 0xff+"__clink_timers"`, "scope the purge with 'slot:'"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("output written: %v", err)
	}
}

// TestPurgeDropsBlobTrailingBytes: the bytes of a timer blob after its
// timers, which a restore ignores, may hold a listed key (here the record
// of a timer of "anna" past a count cut short): a purge keeps none of them,
// whether or not it removed a timer from the blob, and counts the blob
// changed. The timers are kept.
func TestPurgeDropsBlobTrailingBytes(t *testing.T) {
	bob := []savepoint.Timer{{Time: 5, Key: []byte("bob")}}
	hidden := savepoint.EncodeTimers([]savepoint.Timer{{Time: 6, Key: []byte("anna")}}, nil)[4:]
	for _, keys := range []string{"[anna]", "[carl]"} {
		dir := t.TempDir()
		rows := []savepoint.Row{
			{Op: 1, Key: savepoint.EncodeKeyedKey([]byte("c"), []byte("bob")), Value: []byte("v")},
			{Op: 1, Key: []byte("\xff__clink_timers"), Value: append(savepoint.EncodeTimers(bob, nil), hidden...)},
		}
		sp, set := fileAndRules(t, dir, rows, "  - purge_keys: {keys: "+keys+"}\n")
		out := filepath.Join(dir, "out.snap")
		rep, err := Run(context.Background(), sp, set, Options{Out: out})
		if err != nil {
			t.Fatal(err)
		}
		got, err := savepoint.Open(out, savepoint.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var blob []byte
		got.Files[0].Snapshot.EachRow(func(_ int, r savepoint.Row) bool {
			if savepoint.IsTimerBlob(r.Key) {
				blob = bytes.Clone(r.Value)
			}
			return true
		})
		got.Close()
		if want := savepoint.EncodeTimers(bob, nil); !bytes.Equal(blob, want) {
			t.Errorf("keys %s: blob % x, want % x (its timers, nothing after them)", keys, blob, want)
		}
		if rs := rep.PerRule[0]; rs.Changed != 1 || rs.Purge.TimersRemoved != 0 {
			t.Errorf("keys %s: changed %d, timers removed %d; want 1 and 0", keys, rs.Changed, rs.Purge.TimersRemoved)
		}
	}
}
