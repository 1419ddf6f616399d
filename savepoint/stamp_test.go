package savepoint

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sptool/sptool/internal/testhook"
)

// A file rewritten in place while it is open is found changed even when
// the rewrite keeps its size and sets its modification time back (touch
// -r): its change time moved, and its bytes are read again. An untouched
// file, and one only linked or chmod'ed, is unchanged.
func TestCheckUnchangedSeesRewriteInPlace(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the change time is read on Linux")
	}
	path := filepath.Join(t.TempDir(), "checkpoint-7.snap")
	rows := []Row{vtKeyed(7, "agg", []byte("alpha"), "1"), vtKeyed(7, "agg", []byte("beta"), "2")}
	if _, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), rows, SnapshotOptions{Sidecar: true, CheckpointID: 7}); err != nil {
		t.Fatal(err)
	}
	sp, err := Open(path, OpenOptions{Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if err := sp.CheckUnchanged(); err != nil {
		t.Fatalf("untouched: %v", err)
	}
	// A hard link and a chmod move the change time, not the bytes: the
	// file is read again, and found unchanged.
	time.Sleep(10 * time.Millisecond)
	if err := os.Link(path, path+".bak"); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := sp.CheckUnchanged(); err != nil {
		t.Fatalf("linked and made read-only: %v", err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // a change time of its own
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-20] ^= 1
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := sp.CheckUnchanged(); !errors.Is(err, ErrInputChanged) {
		t.Errorf("rewritten in place, same size and time: %v, want ErrInputChanged", err)
	}
}

// A tree whose root, or one of whose subtask directories, is replaced by
// another while it is read (a --force run writing it renames its new tree
// into place) is found changed, at open and after: its files, each whole
// and unchanged, would be another tree's than its listing and marker.
// Entries added beside the files read are no change.
func TestTreeSwappedWhileRead(t *testing.T) {
	rows := func(v string) [][]Row {
		return [][]Row{{vtKeyed(7, "agg", vtKeysIn(t, 0, 64, 1)[0], v)}, {vtKeyed(7, "agg", vtKeysIn(t, 64, 128, 1)[0], v)}}
	}
	swap := func(t *testing.T, path, with string) {
		t.Helper()
		if err := os.Rename(path, path+".old"); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(with, path); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("after open", func(t *testing.T) {
		tree, other := vtWriteTree(t, rows("a"), nil), vtWriteTree(t, rows("b"), nil)
		sp := vtOpen(t, tree, OpenOptions{Columnar: true})
		defer sp.Close()
		// A job writing its next checkpoint beside the files read.
		if err := os.WriteFile(filepath.Join(tree, "v1", "0", "checkpoint-8.snap.part"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := sp.CheckUnchanged(); err != nil {
			t.Fatalf("an entry added: %v", err)
		}
		swap(t, filepath.Join(tree, "v1", "1"), filepath.Join(other, "v1", "1"))
		if err := sp.CheckUnchanged(); !errors.Is(err, ErrInputChanged) || !strings.Contains(err.Error(), filepath.Join("v1", "1")+": ") {
			t.Fatalf("a subtask directory replaced: %v", err)
		}
	})
	t.Run("during open", func(t *testing.T) {
		tree, other := vtWriteTree(t, rows("a"), nil), vtWriteTree(t, rows("b"), nil)
		testhook.TreeListed = func(string) {
			testhook.TreeListed = nil
			swap(t, tree, other)
		}
		defer func() { testhook.TreeListed = nil }()
		sp, err := Open(tree, OpenOptions{Columnar: true, RequireValid: true})
		if err == nil {
			sp.Close()
		}
		if !errors.Is(err, ErrInputChanged) || !strings.Contains(err.Error(), "replaced by another while the tree was read") {
			t.Fatalf("the tree replaced after its listing: %v", err)
		}
	})
}

// The staging tree of a run that did not finish (named .sptool-tmp-…,
// without the marker written last) is refused by the writers' integrity
// check: it may lack subtasks. Named so with its marker, or without the
// marker under another name, it is read.
func TestStagingTreeRefused(t *testing.T) {
	rows := [][]Row{{vtKeyed(7, "agg", vtKeysIn(t, 0, 64, 1)[0], "a")}, {vtKeyed(7, "agg", vtKeysIn(t, 64, 128, 1)[0], "b")}}
	for _, c := range []struct {
		name         string
		marker, want bool
	}{
		{"out.sptool-tmp-41.7.k3", false, true},
		{"out.sptool-tmp-41.7.k3", true, false},
		{"out", false, false},
	} {
		tree := vtWriteTree(t, rows, nil)
		if !c.marker {
			if err := os.RemoveAll(filepath.Join(tree, "_jobs")); err != nil {
				t.Fatal(err)
			}
		}
		dir := filepath.Join(t.TempDir(), c.name)
		if err := os.Rename(tree, dir); err != nil {
			t.Fatal(err)
		}
		sp := vtOpen(t, dir, OpenOptions{Columnar: true})
		err := sp.CheckIntegrity("")
		sp.Close()
		if got := err != nil && strings.Contains(err.Error(), "the staging tree of an sptool run that did not finish"); got != c.want {
			t.Errorf("%s, marker %v: %v", c.name, c.marker, err)
		}
	}
}

// A payload whose sidecar disagrees with it is refused as such, but for
// one no longer the file at its path (another run replaced the pair after
// the payload was opened, and its new sidecar was read beside the old
// payload): the input changed, and that is the error.
func TestVerdictOfReplacedPayload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint-7.snap")
	rows := []Row{vtKeyed(7, "agg", []byte("alpha"), "1")}
	info, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), rows, SnapshotOptions{CheckpointID: 7})
	if err != nil {
		t.Fatal(err)
	}
	// A sidecar of another payload: refused at open with RequireValid.
	if err := os.WriteFile(path+SidecarSuffix, SidecarFor(7, FileInfo{Size: info.Size + 8, CRC32C: info.CRC32C}), 0o644); err != nil {
		t.Fatal(err)
	}
	sp := vtOpen(t, path, OpenOptions{})
	var verdict *VerdictError
	if err := sp.checkOpened(OpenOptions{RequireValid: true}); !errors.As(err, &verdict) || errors.Is(err, ErrInputChanged) {
		t.Fatalf("the pair as opened: %v", err)
	}
	// The payload replaced since it was opened.
	other := filepath.Join(dir, "other.snap")
	if _, err := WriteSnapshotFile(other, CanonicalMetadata(nil, VersionMap{}), append(rows, vtKeyed(7, "agg", []byte("beta"), "2")), SnapshotOptions{CheckpointID: 7}); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	if err := sp.checkOpened(OpenOptions{RequireValid: true}); !errors.Is(err, ErrInputChanged) {
		t.Fatalf("the payload replaced: %v", err)
	}
}
