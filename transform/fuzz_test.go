package transform_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/transform"
)

// fuzzOps are the operators fuzzed rows take, by their first byte.
var fuzzOps = []uint64{7, 8, 9, 12, 13}

// rowsBlob encodes rows for FuzzApply: per row, a byte choosing its
// operator (fuzzOps; other operators are left out), and the key and value
// each as a length byte then the bytes.
func rowsBlob(rows []savepoint.Row) []byte {
	var b []byte
	for _, r := range rows {
		i := 0
		for i < len(fuzzOps) && fuzzOps[i] != r.Op {
			i++
		}
		if i == len(fuzzOps) || len(r.Key) > 255 || len(r.Value) > 255 {
			continue
		}
		b = append(b, byte(i), byte(len(r.Key)))
		b = append(b, r.Key...)
		b = append(b, byte(len(r.Value)))
		b = append(b, r.Value...)
	}
	return b
}

// blobRows decodes rowsBlob's form; what is cut short is left out.
func blobRows(b []byte) []savepoint.Row {
	var rows []savepoint.Row
	for len(b) >= 3 {
		op := fuzzOps[int(b[0])%len(fuzzOps)]
		kl := int(b[1])
		if len(b) < 2+kl+1 {
			break
		}
		key := b[2 : 2+kl]
		b = b[2+kl:]
		vl := int(b[0])
		if len(b) < 1+vl {
			break
		}
		rows = append(rows, savepoint.Row{Op: op, Key: key, Value: b[1 : 1+vl]})
		b = b[1+vl:]
	}
	return rows
}

// FuzzApply runs rule files on snapshot files of arbitrary rows (in any
// order, duplicates included): a plan, then an apply whose output must open
// as a canonical snapshot holding as many rows as the report says, valid
// when the input is, or, when no rule changed the file, be a byte-for-byte
// copy of it; and an apply with KeepOrder, whose output must hold the same
// rows, with the same counts.
// Rule files that do not parse and inputs that are refused are skipped; a
// panic, a row the accounting misses (ErrAccounting) or an output that is
// not valid fails.
func FuzzApply(f *testing.F) {
	blob := rowsBlob(baseRows)
	for _, rule := range []string{
		"  - drop: 'slot == \"agg\" && key_group % 2 == 0'\n",
		"  - keep: {op: 8, slot: profile, expr: 'value contains \"a\"'}\n",
		"  - purge_keys: {keys: [1, 3, 99], codec: int64}\n  - purge_keys: {keys: [alice, nobody]}\n",
		"  - purge_expired: {as_of: 2000}\n",
		"  - rename_slot: {op: 7, from: agg, to: counts}\n",
		"  - rename_slot: {op: 7, from: seen, to: seen2}\n  - purge_expired: {as_of: 1000, op: 7}\n",
		"  - set_value: {op: 7, slot: agg, expr: 'value * 100'}\n  - set_value: {op: 8, slot: cart, expr: 'value + 10'}\n",
		"  - set_version: {op: 7, state_type: UserCounter, version: 2}\n  - drop_version: {op: 7, state_type: SeenTtl}\n",
		"  - remap_operator: {from: 12, to: 13, merge: true}\n",
		"  - drop_operator: {op: 9}\n  - drop_slot: {op: 7, slot: tmp}\n",
		"  - purge_keys: {keys_file: keys.txt, codec: int64, op: 7}\n  - purge_expired: {as_of: now}\n",
		"  - set_value: {op: 7, slot: agg, expr: 'max(value, 1) + min([value, 2])'}\n",
		"  - drop: 'sortBy([op, 1], -#)[0] == 1 || max(op, key_group) > 100 && sort([op, 3])[0] == 3'\n",
	} {
		f.Add(slotDecls+rule, blob)
	}
	// Two operators' timer blobs that a merge joins, one of them stored
	// twice, after a purge of one timer's key.
	timers := func(op uint64, ts ...int64) savepoint.Row {
		var ev []savepoint.Timer
		for _, t := range ts {
			ev = append(ev, savepoint.Timer{Time: t, Key: []byte("\x01\x00\x00\x00\x00\x00\x00\x00\x01")})
		}
		return savepoint.Row{Op: op, Key: savepoint.TimerKeyPrefix, Value: savepoint.EncodeTimers(ev[:1], ev[1:])}
	}
	f.Add(slotDecls+"  - purge_keys: {keys: [1], codec: int64}\n  - remap_operator: {from: 12, to: 13, merge: true}\n",
		rowsBlob(append(slices.Clone(baseRows), timers(12, 5, 6), timers(13, 5, 7), timers(12, 8, 9))))
	// A slot's broadcast state, declared, beside keyed rows of its name.
	broadcast := savepoint.Row{Op: 9, Key: savepoint.EncodeBroadcastKey([]byte("b")), Value: []byte{4, 0, 0, 0, 0, 0, 0, 0}}
	keyedB := savepoint.Row{Op: 9, Key: savepoint.EncodeKeyedKey([]byte("b"), []byte("k")), Value: []byte{6, 0, 0, 0, 0, 0, 0, 0}}
	f.Add(strings.Replace(slotDecls, "rules:\n", "  - {op: 9, slot: b, value: int64, broadcast: true}\nrules:\n", 1)+
		"  - drop: {op: 9, slot: b, expr: 'value > 5'}\n  - set_value: {op: 9, slot: b, expr: 'value * 2'}\n",
		rowsBlob(append(slices.Clone(baseRows), broadcast, keyedB)))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, src string, blob []byte) {
		// Keys files come from memory: a rule file may name any path.
		set, err := rules.ParseWithOptions(filepath.Join(dir, "rules.yaml"), []byte(src), rules.ParseOptions{
			Now: func() time.Time { return time.UnixMilli(1500) },
			ReadFile: func(name string) ([]byte, error) {
				if filepath.Base(name) == "keys.txt" {
					return []byte("1\n3\nalice\n"), nil
				}
				return nil, fs.ErrNotExist
			},
		})
		if err != nil || set.Rescale() != nil {
			return // a rescale needs a tree
		}
		rows := blobRows(blob)
		tmp := t.TempDir()
		in := filepath.Join(tmp, "checkpoint-3.snap")
		if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.SnapshotOptions{AsIs: true, Sidecar: true, CheckpointID: 3}); err != nil {
			return
		}
		sp, err := savepoint.Open(in, savepoint.OpenOptions{RequireValid: true, Columnar: true})
		if err != nil {
			return
		}
		defer sp.Close()
		ctx := context.Background()
		if _, err := transform.Run(ctx, sp, set, transform.Options{DryRun: true, Jobs: 2}); errors.Is(err, transform.ErrAccounting) {
			t.Fatalf("plan: %v", err)
		}
		out := filepath.Join(tmp, "out.snap")
		rep, err := transform.Run(ctx, sp, set, transform.Options{Out: out, Jobs: 2})
		if errors.Is(err, transform.ErrAccounting) {
			t.Fatalf("apply: %v", err)
		}
		if err != nil {
			if left, _ := filepath.Glob(out + "*"); len(left) > 0 {
				t.Fatalf("apply failed (%v) and left %v", err, left)
			}
			return
		}
		got, err := savepoint.Open(out, savepoint.OpenOptions{RequireValid: true, Columnar: true})
		if err != nil {
			t.Fatalf("the output does not open: %v", err)
		}
		defer got.Close()
		snap := got.Files[0].Snapshot
		if n := int64(snap.NumRows()); n != rep.RowsOut {
			t.Fatalf("the output holds %d rows, the report says %d", n, rep.RowsOut)
		}
		if rep.Files[0].Action == "copy" {
			// No rule changed the file: copied byte for byte, in whatever
			// order it came.
			a, _ := os.ReadFile(in)
			if b, _ := os.ReadFile(out); !bytes.Equal(a, b) {
				t.Fatal("a file no rule changed was not copied byte for byte")
			}
			return
		}
		if sorted, strict := snap.Order(); !sorted || !strict {
			t.Fatalf("the output is not in canonical order (sorted %v, no duplicates %v)", sorted, strict)
		}
		// KeepOrder writes the same rows, in another order at most, with
		// the same counts.
		kept := filepath.Join(tmp, "kept.snap")
		krep, err := transform.Run(ctx, sp, set, transform.Options{Out: kept, Jobs: 2, KeepOrder: true})
		if err != nil {
			t.Fatalf("apply with KeepOrder: %v (without it: no error)", err)
		}
		if krep.RowsOut != rep.RowsOut || krep.RowsDropped != rep.RowsDropped || krep.DuplicatesResolved != rep.DuplicatesResolved {
			t.Fatalf("KeepOrder: %d out, %d dropped, %d duplicates; sorted: %d, %d, %d", krep.RowsOut, krep.RowsDropped, krep.DuplicatesResolved, rep.RowsOut, rep.RowsDropped, rep.DuplicatesResolved)
		}
		kgot, err := savepoint.Open(kept, savepoint.OpenOptions{RequireValid: true, Columnar: true})
		if err != nil {
			t.Fatalf("the KeepOrder output does not open: %v", err)
		}
		defer kgot.Close()
		if a, b := sortedRowsOf(kgot.Files[0].Snapshot), sortedRowsOf(snap); !slices.Equal(a, b) {
			t.Fatalf("KeepOrder wrote other rows than a sorted run:\n%q\n%q", a, b)
		}
		os.Remove(kept)
		// The rules must not make a valid input invalid (an input that is
		// not valid may stay so).
		if savepoint.Validate(sp, savepoint.ValidateOptions{}).Errors() > 0 {
			return
		}
		if r := savepoint.Validate(got, savepoint.ValidateOptions{}); r.Errors() > 0 {
			var b strings.Builder
			r.WriteText(&b)
			t.Fatalf("the output does not validate:\n%s", b.String())
		}
		os.Remove(out)
	})
}

// sortedRowsOf returns the rows of snap, each as text, in canonical order.
func sortedRowsOf(snap *savepoint.Snapshot) []string {
	cur := snap.NewCursor()
	order := savepoint.SortOrder(cur.Len(), func(i int) (uint64, []byte) { return cur.Op(i), cur.Key(i) })
	rows := make([]string, len(order))
	for i, p := range order {
		r := cur.Row(int(p))
		rows[i] = fmt.Sprintf("%d/%x/%x", r.Op, r.Key, r.Value)
	}
	return rows
}

// appendTreeRow appends to blob, in treeRows' form, row r placed in the
// file of subtask s (taken modulo the tree's parallelism).
func appendTreeRow(blob []byte, s int, r savepoint.Row) []byte {
	return append(append(blob, byte(s)), rowsBlob([]savepoint.Row{r})...)
}

// treeRows decodes a blob of FuzzRescale and FuzzApplyTree into the rows of
// a tree of n subtask files: per row, a byte choosing its file (modulo n),
// then the row in rowsBlob's form; what is cut short is left out. Every
// file is present, empty or not.
func treeRows(n int, blob []byte) map[int][]savepoint.Row {
	files := map[int][]savepoint.Row{}
	for s := range n {
		files[s] = nil
	}
	for len(blob) > 0 {
		s := int(blob[0]) % n
		rows := blobRows(blob[1:])
		if len(rows) == 0 {
			break
		}
		files[s] = append(files[s], rows[0])
		blob = blob[1+len(rowsBlob(rows[:1])):]
	}
	return files
}

// FuzzRescale rescales trees of arbitrary rows: a tree of 1 to 4 subtask
// files (each row's file chosen by a byte of its own) to a parallelism of 1
// to 8. It may refuse a tree, but never panic or miss a row
// (ErrAccounting); a tree that validates must give one that validates at
// the new parallelism, every keyed row in its subtask's range.
func FuzzRescale(f *testing.F) {
	var blob []byte
	for i, r := range placeAll(baseRows) {
		blob = appendTreeRow(blob, r.Subtask+i%2*2, r.Row)
	}
	for _, shape := range [][2]byte{{2, 3}, {4, 1}, {1, 7}, {3, 8}} {
		f.Add(shape[0], shape[1], blob)
	}
	f.Fuzz(func(t *testing.T, oldPar, newPar byte, blob []byte) {
		old, par := int(oldPar%4)+1, int(newPar%8)+1
		files := treeRows(old, blob)
		dir := t.TempDir()
		in := writeTreeAsIs(t, filepath.Join(dir, "in"), 5, files, savepoint.VersionMap{})
		sp, err := savepoint.Open(in, savepoint.OpenOptions{RequireValid: true, Columnar: true})
		if err != nil {
			return
		}
		defer sp.Close()
		set, err := rules.Parse("rescale.yaml", []byte(fmt.Sprintf("version: 1\nrules:\n  - rescale: {parallelism: %d, drop_lost: true}\n", par)))
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out")
		_, err = transform.Run(context.Background(), sp, set, transform.Options{Out: out, Jobs: 2})
		if errors.Is(err, transform.ErrAccounting) {
			t.Fatalf("rescale %d -> %d: %v", old, par, err)
		}
		if err != nil {
			return
		}
		if savepoint.Validate(sp, savepoint.ValidateOptions{}).Errors() > 0 {
			return // an input that is not valid may give an output that is not
		}
		// One chain group (a rescale without groups asks for one), given:
		// inferring it from which files hold keyed rows may split a tree
		// of few rows.
		got, err := savepoint.Open(out, savepoint.OpenOptions{RequireValid: true, Columnar: true, Groups: []savepoint.Group{{First: 0, Count: par}}})
		if err != nil {
			t.Fatalf("the output does not open: %v", err)
		}
		defer got.Close()
		if r := savepoint.Validate(got, savepoint.ValidateOptions{Parallelism: par}); r.Errors() > 0 {
			var b strings.Builder
			r.WriteText(&b)
			t.Fatalf("rescale %d -> %d: the output does not validate:\n%s", old, par, b.String())
		}
	})
}

// FuzzApplyTree runs rule files on trees of arbitrary rows: 1 to 4 subtask
// files of one chain group (each row's file chosen by a byte of its own,
// so that keyed rows may be stale copies, or lost, anywhere). It may
// refuse a tree, but never panic or miss a row (ErrAccounting); a plan
// counts what the apply does; an apply that fails leaves no output; and
// the rules must not make a tree that validates one that does not (a
// stale copy left without its owner's copy, say).
func FuzzApplyTree(f *testing.F) {
	var blob []byte
	for i, r := range placeAll(baseRows) {
		blob = appendTreeRow(blob, r.Subtask+i%3*2, r.Row)
	}
	// A valid tree of parallelism 2 (each row in its owner's file) with a
	// stale copy in subtask 0 of a key that subtask 1 owns.
	var valid []byte
	stale := false
	for _, r := range placeAll(baseRows) {
		valid = appendTreeRow(valid, r.Subtask, r.Row)
		if k := savepoint.ParseKey(r.Key); !stale && r.Subtask == 1 && k.Kind == savepoint.KindKeyed {
			valid = appendTreeRow(valid, 0, withValue(r.Row, []byte("older")))
			stale = true
		}
	}
	f.Add(byte(1), slotDecls+"  - drop: 'subtask == 1 && kind == \"keyed\"'\n", valid)
	f.Add(byte(0x81), slotDecls+"  - drop: 'subtask == 1 && kind == \"keyed\"'\n", valid)
	f.Add(byte(1), slotDecls+"  - drop: 'len(value_bytes) != 5'\n", valid)
	for _, rule := range []string{
		"  - drop: 'subtask == 1'\n",
		"  - drop: {op: 7, slot: agg, expr: 'value > 2'}\n",
		"  - keep: {op: 8, slot: profile, expr: 'value contains \"a\"'}\n  - remap_operator: {from: 7, to: 9, merge: true}\n",
		"  - rename_slot: {op: 7, from: agg, to: seen, merge: true}\n  - drop: 'len(value_bytes) % 2 == subtask % 2'\n",
		"  - purge_keys: {keys: [1, 3, 99], codec: int64}\n  - purge_expired: {as_of: 2000}\n",
		"  - set_value: {op: 7, slot: agg, expr: 'value - 2'}\n  - drop: {op: 7, slot: agg, expr: 'value < 0'}\n",
	} {
		for par := range byte(4) {
			f.Add(par, slotDecls+rule, blob)
		}
		f.Add(byte(0x81), slotDecls+rule, blob)
	}
	f.Fuzz(func(t *testing.T, oldPar byte, src string, blob []byte) {
		set, err := rules.ParseWithOptions("rules.yaml", []byte(src), rules.ParseOptions{
			Now:      func() time.Time { return time.UnixMilli(1500) },
			ReadFile: func(string) ([]byte, error) { return nil, fs.ErrNotExist },
		})
		if err != nil || set.Rescale() != nil {
			return // (FuzzRescale fuzzes the rescale)
		}
		old := int(oldPar%4) + 1
		files := treeRows(old, blob)
		dir := t.TempDir()
		in := writeTreeAsIs(t, filepath.Join(dir, "in"), 5, files, savepoint.VersionMap{})
		// One chain group, given; or, with the high bit of oldPar, the
		// groups inferred from the rows (the open then reads each file's
		// key groups, which the search for stale copies asks), and the
		// output read under the same.
		var groups []savepoint.Group
		if oldPar&0x80 == 0 {
			groups = []savepoint.Group{{First: 0, Count: old}}
		}
		sp, err := savepoint.Open(in, savepoint.OpenOptions{RequireValid: true, Columnar: true, Groups: groups})
		if err != nil {
			return
		}
		defer sp.Close()
		groups = sp.Groups
		ctx := context.Background()
		plan, err := transform.Run(ctx, sp, set, transform.Options{DryRun: true, Jobs: 2})
		if errors.Is(err, transform.ErrAccounting) {
			t.Fatalf("plan: %v", err)
		}
		out := filepath.Join(dir, "out")
		rep, err := transform.Run(ctx, sp, set, transform.Options{Out: out, Jobs: 2})
		if errors.Is(err, transform.ErrAccounting) {
			t.Fatalf("apply: %v", err)
		}
		if err != nil {
			if _, serr := os.Lstat(out); serr == nil {
				t.Fatalf("apply failed (%v) and left %s", err, out)
			}
			return
		}
		if plan == nil || plan.RowsOut != rep.RowsOut || plan.RowsDropped != rep.RowsDropped || plan.OrphanedCopies != rep.OrphanedCopies {
			t.Fatalf("the plan (%+v) does not count what the apply did: %d out, %d dropped, %d orphaned", plan, rep.RowsOut, rep.RowsDropped, rep.OrphanedCopies)
		}
		got, err := savepoint.Open(out, savepoint.OpenOptions{RequireValid: true, Columnar: true, Groups: groups})
		if err != nil {
			t.Fatalf("the output does not open: %v", err)
		}
		defer got.Close()
		var n int64
		for _, f := range got.Files {
			n += int64(f.Snapshot.NumRows())
		}
		if n != rep.RowsWritten {
			t.Fatalf("the output holds %d rows, the report says %d written", n, rep.RowsWritten)
		}
		if savepoint.Validate(sp, savepoint.ValidateOptions{}).Errors() > 0 {
			return // an input that is not valid may give an output that is not
		}
		// (But for a legacy raw key whose owner's row the rules dropped:
		// each subtask's is its own, kept, and the run warns of it.)
		r := savepoint.Validate(got, savepoint.ValidateOptions{})
		for _, f := range r.Findings {
			if f.Severity == savepoint.SeverityError && !(f.Check == savepoint.CheckMisplacedRow && savepoint.ParseKey(f.Key).Kind == savepoint.KindRaw &&
				slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, "legacy raw key") })) {
				var b strings.Builder
				r.WriteText(&b)
				t.Fatalf("the output does not validate:\n%s", b.String())
			}
		}
	})
}
