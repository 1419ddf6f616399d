package savepoint

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
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
