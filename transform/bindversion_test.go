package transform_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/transform"
)

// set_version without 'slot' keeps the entry's slot in every file: a file
// whose version map lacks the entry gets it bound to the slot the other
// files bind it to (not to no slot, which applies to every row of the
// operator); files that bind it to different slots are warned of, and the
// file without it then gets it unbound, as the warning says.
func TestSetVersionBindsMissingEntry(t *testing.T) {
	entry := func(slot string) savepoint.VersionMap {
		var vm savepoint.VersionMap
		if err := vm.Put(savepoint.VersionEntry{Op: 7, StateType: "T", Version: 1, Slot: slot}); err != nil {
			t.Fatal(err)
		}
		return vm
	}
	tree := func(maps ...savepoint.VersionMap) string {
		dir := filepath.Join(t.TempDir(), "in")
		tw, err := savepoint.CreateTree(dir, savepoint.TreeOptions{Generation: 1, Checkpoint: 3})
		if err != nil {
			t.Fatal(err)
		}
		defer tw.Abort()
		for s, vm := range maps {
			rows := []savepoint.Row{{Op: 7, Key: []byte("\xff__offset"), Value: []byte{byte(s), 0, 0, 0, 0, 0, 0, 0}}}
			if _, err := tw.WriteSubtask(s, savepoint.CanonicalMetadata(nil, vm), rows, ""); err != nil {
				t.Fatal(err)
			}
		}
		if err := tw.Commit("", nil); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	set := parseRules(t, "version: 1\nrules:\n  - set_version: {op: 7, state_type: T, version: 2}\n", nil)
	for _, c := range []struct {
		name  string
		in    string
		slots []string // each output file's entry's slot
		warn  string
	}{
		{"agree", tree(entry("a"), entry("a"), savepoint.VersionMap{}), []string{"a", "a", "a"}, ""},
		{"disagree", tree(entry("a"), entry("b"), savepoint.VersionMap{}), []string{"a", "b", ""}, `bind operator 7's state type "T" to different slots ("a", "b")`},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			rep, err := run(t, c.in, set, transform.Options{Out: out})
			if err != nil {
				t.Fatal(err)
			}
			all := strings.Join(rep.Warnings, "\n")
			if c.warn != "" && !strings.Contains(all, c.warn) || c.warn == "" && strings.Contains(all, "different slots") {
				t.Errorf("warnings %q, want one saying %q", rep.Warnings, c.warn)
			}
			sp := open(t, out)
			defer sp.Close()
			for i, f := range sp.Files {
				e, ok := f.Snapshot.Versions.Get(7, "T")
				if !ok || e.Version != 2 || e.Slot != c.slots[i] {
					t.Errorf("subtask %d: entry %+v (%v), want version 2 bound to %q", f.Subtask, e, ok, c.slots[i])
				}
			}
		})
	}
}
