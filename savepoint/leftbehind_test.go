package savepoint

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sptool/sptool/internal/testhook"
)

// failRemoveTemp has every temporary name a failed write removes fail to
// be removed, as in a directory made read-only while the run wrote, and
// returns the names it was asked to remove.
func failRemoveTemp(t *testing.T) *[]string {
	t.Helper()
	var asked []string
	testhook.RemoveTemp = func(name string) error {
		asked = append(asked, name)
		return &os.PathError{Op: "unlinkat", Path: name, Err: errors.New("permission denied")}
	}
	t.Cleanup(func() { testhook.RemoveTemp = nil })
	return &asked
}

// A file write that fails once its temporary files are complete, and
// cannot remove them, says which it leaves behind, rather than leave them
// unnamed until a later run finds them.
func TestFailedWriteNamesTempLeft(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint-3.snap")
	asked := failRemoveTemp(t)
	refused := errors.New("the input changed")
	_, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), []Row{{Op: 1, Key: []byte{0, 0, 'k'}, Value: []byte("v")}}, SnapshotOptions{
		Sidecar: true, CheckpointID: 3, BeforePublish: func() error { return refused },
	})
	if !errors.Is(err, refused) {
		t.Fatalf("error %v, want the refusal", err)
	}
	left := leftovers(t, dir)
	if len(left) != 2 || len(*asked) != 2 {
		t.Fatalf("left %v, asked to remove %v: want the payload's and the sidecar's temporary files", left, *asked)
	}
	for _, name := range left {
		if want := filepath.Join(dir, name) + ": permission denied"; !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s, left behind", err, name)
		}
	}
	if !strings.Contains(err.Error(), "delete") {
		t.Errorf("error %q does not say to delete what is left", err)
	}
}

// A tree write that fails, and cannot remove its staging directory, says
// so when it is aborted: the directory is named, to delete.
func TestAbortNamesStagingLeft(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	tw, err := CreateTree(out, TreeOptions{Generation: 1, Checkpoint: 7})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tw.WriteSubtask(0, CanonicalMetadata(nil, VersionMap{}), []Row{{Op: 1, Key: []byte("k"), Value: []byte("v")}}, CompressNone); err != nil {
		t.Fatal(err)
	}
	asked := failRemoveTemp(t)
	err = tw.Abort()
	if !slices.Equal(*asked, []string{tw.Stage()}) {
		t.Fatalf("asked to remove %v, want the staging directory %s", *asked, tw.Stage())
	}
	if err == nil || !strings.Contains(err.Error(), tw.Stage()) || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("Abort: %v, want an error naming %s and why it is left", err, tw.Stage())
	}
	testhook.RemoveTemp = nil
	if err := tw.Abort(); err != nil {
		t.Errorf("Abort again, removable: %v", err)
	}
	if _, err := os.Lstat(tw.Stage()); !os.IsNotExist(err) {
		t.Errorf("the staging directory is still there: %v", err)
	}
	// Committed, there is nothing to abort.
	tw2, err := CreateTree(out, TreeOptions{Generation: 1, Checkpoint: 7})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw2.Commit("", nil); err != nil {
		t.Fatal(err)
	}
	if err := tw2.Abort(); err != nil {
		t.Errorf("Abort after Commit: %v", err)
	}
}
