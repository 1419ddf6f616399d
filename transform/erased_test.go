package transform_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/transform"
)

// TestRescaleErasedByOwnerLog: in a changelog+file tree, a copy of a key
// outside its owner's file whose owner's log erases it is a stale copy:
// the rescale drops it as such, without drop_lost, and says so. Without
// the erase it is a lost row, which the rescale refuses.
func TestRescaleErasedByOwnerLog(t *testing.T) {
	for _, erase := range []bool{false, true} {
		in := ownerLogTree(t, erase, false)
		set := parseRules(t, "version: 1\nrules:\n  - rescale: {parallelism: 1}\n", nil)
		rep, err := transform.Run(context.Background(), open(t, in), set, transform.Options{Out: filepath.Join(t.TempDir(), "out")})
		if !erase {
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte("would drop 1 lost keyed rows")) {
				t.Errorf("without the erase: %v, want the lost row refused", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if rr := rep.Rescale; rr.StaleCopies != 1 || rr.Lost != 0 || rep.RowsDropped != 1 || rep.RowsOut != 2 {
			t.Errorf("stale %d, lost %d, dropped %d, out %d; want 1, 0, 1, 2", rr.StaleCopies, rr.Lost, rep.RowsDropped, rep.RowsOut)
		}
	}
}

// ownerLogTree writes a changelog+file tree of two subtasks whose subtask
// 0 holds a key of its own and a copy of a key that subtask 1 owns (with
// raw, its in-flight buffer, a legacy raw key of subtask 1's range), and
// whose subtask 1 holds another key of its own and, when erase is set,
// erases the copied key in its changelog's log (without the erase the copy
// is a row lost in the input).
func ownerLogTree(t *testing.T, erase, raw bool) string {
	t.Helper()
	var lo, hi [][]byte
	for i := 0; len(lo) < 1 || len(hi) < 2; i++ {
		k := []byte{byte(i), 0, 0, 0, 0, 0, 0, 0}
		if savepoint.KeyGroupOf(k) < 64 {
			lo = append(lo, k)
		} else {
			hi = append(hi, k)
		}
	}
	row := func(k []byte, v string) savepoint.Row {
		return savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), k), Value: []byte(v)}
	}
	stale := row(hi[0], "old")
	if raw {
		stale = savepoint.Row{Op: 7, Key: []byte("__broadcast_main_inflight__"), Value: []byte("mine")}
	}
	in := filepath.Join(t.TempDir(), "in")
	tw, err := savepoint.CreateTree(in, savepoint.TreeOptions{Generation: 1, Checkpoint: 7, Backend: savepoint.BackendChangelogFile})
	if err != nil {
		t.Fatal(err)
	}
	for i, rows := range [][]savepoint.Row{{row(lo[0], "a"), stale}, {row(hi[1], "b")}} {
		if _, err := tw.WriteSubtask(i, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), savepoint.Logical(rows), savepoint.CompressNone); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Commit("job1", nil); err != nil {
		t.Fatal(err)
	}
	sp := open(t, in)
	handle := sp.File(1).Snapshot.Changelog.Handles[0]
	sp.Close()
	kinds, rows := []uint8{3}, []savepoint.Row{{Value: []byte(handle)}}
	if erase {
		kinds, rows = append(kinds, 2), append(rows, savepoint.Row{Op: 7, Key: stale.Key})
	}
	if err := os.WriteFile(filepath.Join(in, "v1", "1", "changelog-7.snap"), changelogStream(t, kinds, rows), 0o644); err != nil {
		t.Fatal(err)
	}
	return in
}

// changelogStream encodes a changelog snapshot of rows of the given
// row_kinds (savepoint.RowKind*).
func changelogStream(t *testing.T, kinds []uint8, rows []savepoint.Row) []byte {
	t.Helper()
	entries := make([]savepoint.ChangelogEntry, len(rows))
	for i, r := range rows {
		entries[i] = savepoint.ChangelogEntry{Kind: kinds[i], Row: r}
	}
	var b bytes.Buffer
	if err := savepoint.EncodeChangelog(&b, entries); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestChangelogModeConflictWarned: a changelog+file tree whose payload
// clink's restore throws on (an inline materialisation beside a handle, or
// alone, where that backend restores with an external store) is read and
// rewritten all the same, with a warning naming the rows, which --strict
// turns into a refusal.
func TestChangelogModeConflictWarned(t *testing.T) {
	in := ownerLogTree(t, true, false)
	sp := open(t, in)
	handles := [2]string{sp.File(0).Snapshot.Changelog.Handles[0], sp.File(1).Snapshot.Changelog.Handles[0]}
	sp.Close()
	put := savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), []byte("p")), Value: []byte("v")}
	payloads := [2][]byte{
		changelogStream(t, []uint8{0}, []savepoint.Row{{}}),
		changelogStream(t, []uint8{3, 1, 0}, []savepoint.Row{{Value: []byte(handles[1])}, put, {}}),
	}
	for i, b := range payloads {
		if err := os.WriteFile(filepath.Join(in, "v1", strconv.Itoa(i), "changelog-7.snap"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set := parseRules(t, "version: 1\nrules: []\n", nil)
	rep, err := transform.Run(context.Background(), open(t, in), set, transform.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		filepath.FromSlash("v1/0/changelog-7.snap") + ": clink's restore of it throws (row 0 holds an inline materialisation (row_kind 0), which the changelog+file backend's restore throws on, section 1.7)",
		filepath.FromSlash("v1/1/changelog-7.snap") + ": clink's restore of it throws (row 2 holds an inline materialisation (row_kind 0) and row 0 an external handle (row_kind 3), and every restore throws on one of them, section 1.7)",
	}
	for _, w := range want {
		if !slices.ContainsFunc(rep.Warnings, func(s string) bool { return strings.HasPrefix(s, w) }) {
			t.Errorf("warnings %q, want one starting %q", rep.Warnings, w)
		}
	}
	if _, err := transform.Run(context.Background(), open(t, in), set, transform.Options{Out: filepath.Join(t.TempDir(), "out"), Strict: true}); err == nil {
		t.Error("--strict wrote the output")
	}
}
