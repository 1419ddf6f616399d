package transform_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sptool/sptool/internal/testhook"
	"github.com/sptool/sptool/transform"
)

// A tree write that fails once its staging directory holds files, and
// cannot remove it (its parent made read-only meanwhile), names it in its
// error, to delete, rather than leave it for a later run to find.
func TestFailedTreeWriteNamesStagingLeft(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	var asked []string
	testhook.RemoveTemp = func(name string) error {
		asked = append(asked, name)
		return &os.PathError{Op: "unlinkat", Path: name, Err: errors.New("permission denied")}
	}
	t.Cleanup(func() { testhook.RemoveTemp = nil })
	set := parseRules(t, "version: 1\nrules:\n  - drop: 'subtask == 0 && kind == \"keyed\"'\n", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancelled once files are written (a copy of an unchanged file
	// reports its bytes): the check before the tree is published stops it.
	sp := open(t, exampleTree)
	defer sp.Close()
	_, err := transform.Run(ctx, sp, set, transform.Options{Out: out, Jobs: 1, Progress: func(stage string, _, _ int64) {
		if stage == "write" {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want the cancellation", err)
	}
	if len(asked) != 1 || !strings.HasPrefix(asked[0], out+".sptool-tmp-") {
		t.Fatalf("asked to remove %v, want the staging directory", asked)
	}
	if want := "the staging directory is left behind: unlinkat " + asked[0] + ": permission denied; delete it"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}
