//go:build unix

package savepoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// smallTree writes a tree of one subtask file (checkpoint 7, generation 1,
// sidecar and COMPLETED marker) and returns its root.
func smallTree(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "tree")
	tw, err := CreateTree(out, TreeOptions{Generation: 1, Checkpoint: 7})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tw.WriteSubtask(0, CanonicalMetadata(nil, VersionMap{}), []Row{{Op: 1, Key: []byte("k"), Value: []byte("v")}}, CompressNone); err != nil {
		t.Fatal(err)
	}
	if err := tw.Commit("job1", nil); err != nil {
		t.Fatal(err)
	}
	return out
}

// mkfifo replaces path with a named pipe. A reader left blocked on it is
// released when the test ends.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	os.Remove(path)
	if err := unix.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Cleanup(func() {
		if w, err := os.OpenFile(path, os.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
}

// openTimed opens path, failing the test if Open does not return within a
// few seconds (it would block on a named pipe).
func openTimed(t *testing.T, path string, opts OpenOptions) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		sp, err := Open(path, opts)
		if sp != nil {
			sp.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("Open %s did not return in 10 s", path)
		return nil
	}
}

// A payload that is a named pipe or a device is an error naming it, not a
// read that blocks forever or an empty snapshot.
func TestOpenPayloadNotRegular(t *testing.T) {
	for _, c := range []struct{ name, want string }{{"device", "is a character device"}, {"fifo", "is a named pipe"}} {
		for _, columnar := range []bool{false, true} {
			root := smallTree(t)
			payload := filepath.Join(root, "v1", "0", "checkpoint-7.snap")
			if c.name == "fifo" {
				mkfifo(t, payload)
			} else {
				os.Remove(payload)
				if err := os.Symlink("/dev/null", payload); err != nil {
					t.Skipf("symlink: %v", err)
				}
			}
			for _, path := range []string{root, payload} {
				err := openTimed(t, path, OpenOptions{Columnar: columnar})
				if err == nil || !strings.Contains(err.Error(), payload) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s payload, columnar %v, Open %s: %v, want an error naming %s: %s", c.name, columnar, path, err, payload, c.want)
				}
			}
		}
	}
}
