package transform_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/transform"
)

// A run that fails once it has made the output's missing directories (an
// input file changed while it was read, seen just before publishing)
// removes them again: the directory it was given to write in, which was
// there, is left as it was, empty. So for a file's output and a tree's,
// rewritten or copied.
func TestFailedRunRemovesItsDirectories(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "checkpoint-3.snap")
	if _, err := savepoint.WriteSnapshotFile(file, nil, baseRows, savepoint.SnapshotOptions{Sidecar: true, CheckpointID: 3}); err != nil {
		t.Fatal(err)
	}
	tree := writeTreeAsIs(t, filepath.Join(dir, "tree"), 3, map[int][]savepoint.Row{0: baseRows[:4], 1: baseRows[4:]}, savepoint.VersionMap{})
	for _, in := range []string{file, tree} {
		for _, rule := range []string{"  - drop_slot: {op: 7, slot: tmp}\n", "  - keep: 'true'\n"} {
			pre := filepath.Join(t.TempDir(), "pre")
			if err := os.Mkdir(pre, 0o755); err != nil {
				t.Fatal(err)
			}
			sp := open(t, in)
			later := time.Now().Add(time.Hour)
			for _, f := range sp.Files {
				if err := os.Chtimes(f.Path, later, later); err != nil {
					t.Fatal(err)
				}
			}
			_, err := transform.Run(context.Background(), sp, parseRules(t, slotDecls+rule, nil), transform.Options{Out: filepath.Join(pre, "new", "deeper", "out.snap"), Jobs: 1})
			sp.Close()
			if !errors.Is(err, savepoint.ErrInputChanged) {
				t.Fatalf("%s, %s: error %v, want %v", in, strings.TrimSpace(rule), err, savepoint.ErrInputChanged)
			}
			if left, err := os.ReadDir(pre); err != nil || len(left) > 0 {
				t.Errorf("%s, %s: the output's directory holds %v (%v), want it empty", in, strings.TrimSpace(rule), left, err)
			}
		}
	}
}
