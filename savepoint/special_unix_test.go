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

// replaceSpecial replaces path with a named pipe (fifo) or a symbolic link
// to /dev/null.
func replaceSpecial(t *testing.T, path string, fifo bool) {
	t.Helper()
	if fifo {
		mkfifo(t, path)
		return
	}
	os.Remove(path)
	if err := os.Symlink("/dev/null", path); err != nil {
		t.Skipf("symlink: %v", err)
	}
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
			replaceSpecial(t, payload, c.name == "fifo")
			for _, path := range []string{root, payload} {
				err := openTimed(t, path, OpenOptions{Columnar: columnar})
				if err == nil || !strings.Contains(err.Error(), payload) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s payload, columnar %v, Open %s: %v, want an error naming %s: %s", c.name, columnar, path, err, payload, c.want)
				}
			}
		}
	}
}

// A sidecar or COMPLETED marker that is a named pipe or a device is an
// error naming it, not a read that blocks or never ends.
func TestControlFilesNotRegular(t *testing.T) {
	for _, which := range []string{"sidecar", "marker"} {
		for _, kind := range []struct{ name, want string }{{"device", "is a character device"}, {"fifo", "is a named pipe"}} {
			root := smallTree(t)
			payload := filepath.Join(root, "v1", "0", "checkpoint-7.snap")
			path := payload + ".meta"
			opens := []string{root, payload}
			if which == "marker" {
				path = filepath.Join(root, "_jobs", "job1", "COMPLETED-7")
				opens = opens[:1]
			}
			if kind.name == "fifo" {
				mkfifo(t, path)
			} else {
				os.Remove(path)
				if err := os.Symlink("/dev/null", path); err != nil {
					t.Skipf("symlink: %v", err)
				}
			}
			for _, p := range opens {
				if which == "sidecar" {
					checkSidecarRefused(t, p, path, kind.want)
					continue
				}
				err := openTimed(t, p, OpenOptions{})
				if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), kind.want) {
					t.Errorf("%s that is a %s, Open %s: %v, want an error naming %s: %s", which, kind.name, p, err, path, kind.want)
				}
			}
		}
	}
}

// A materialisation that is a named pipe, or a symbolic link to a device, is
// an error naming it, not a read that blocks or never ends.
func TestMaterializationNotRegular(t *testing.T) {
	for _, kind := range []struct{ name, want string }{{"device", "leads through a symbolic link to /dev/null, outside"}, {"fifo", "is a named pipe"}} {
		root, payload, mat := changelogTree(t)
		replaceSpecial(t, mat, kind.name == "fifo")
		for _, p := range []string{root, payload} {
			err := openTimed(t, p, OpenOptions{})
			if err == nil || !strings.Contains(err.Error(), payload) || !strings.Contains(err.Error(), kind.want) {
				t.Errorf("materialisation that is a %s, Open %s: %v, want an error naming %s: %s", kind.name, p, err, payload, kind.want)
			}
		}
	}
}

// TestCheckReplaceableSpecial: a file output replaces a regular file, or a
// link to one, never a named pipe or a device, nor a link to one: sptool
// renames its output into place, which would put a file where they were.
func TestCheckReplaceableSpecial(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	mkfifo(t, fifo)
	regular := filepath.Join(dir, "regular")
	if err := os.WriteFile(regular, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct{ name, to string }{{"to-fifo", fifo}, {"to-regular", regular}, {"to-null", "/dev/null"}} {
		if err := os.Symlink(l.to, filepath.Join(dir, l.name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		path, want string // want: "" for no error
	}{
		{regular, ""},
		{filepath.Join(dir, "to-regular"), ""},
		{filepath.Join(dir, "missing"), ""},
		{fifo, "is not a regular file (a named pipe)"},
		{filepath.Join(dir, "to-fifo"), "is not a regular file (a named pipe)"},
		{"/dev/null", "is not a regular file (a character device)"},
		{filepath.Join(dir, "to-null"), "is not a regular file (a character device)"},
		{dir, "is a directory"},
	} {
		err := CheckReplaceable(tc.path, false)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.path, err, tc.want)
		}
	}
}

// TestPublishRefusesSpecialAtLastMoment: a named pipe put at the output or
// its sidecar path while the file was written is not replaced: what is in
// place is looked at again just before the rename.
func TestPublishRefusesSpecialAtLastMoment(t *testing.T) {
	for _, which := range []string{"payload", "sidecar"} {
		dir := t.TempDir()
		out := filepath.Join(dir, "out.snap")
		target := out
		if which == "sidecar" {
			target = out + SidecarSuffix
		}
		_, err := WriteSnapshotFile(out, nil, []Row{{Op: 1, Key: []byte("k"), Value: []byte("v")}}, SnapshotOptions{Sidecar: true,
			BeforePublish: func() error { mkfifo(t, target); return nil },
		})
		if err == nil || !strings.Contains(err.Error(), "is not a regular file (a named pipe)") {
			t.Errorf("%s: %v, want a refusal naming the named pipe", which, err)
		}
		if st, serr := os.Lstat(target); serr != nil || st.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("%s: the named pipe was replaced (%v)", which, serr)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 {
			t.Errorf("%s: the directory holds %d entries, want the pipe alone", which, len(entries))
		}
	}
}

// TestBeforePublishNotRunWhenRefused: the hook that removes what the new
// output makes stale (the report --force replaces) runs only once the
// output it replaces passed its checks: an output that is refused then
// leaves it in place, beside the old output it describes.
func TestBeforePublishNotRunWhenRefused(t *testing.T) {
	dir := t.TempDir()
	called := 0
	before := func() error { called++; return nil }

	// A file output whose sidecar's place holds a named pipe.
	out := filepath.Join(dir, "out.snap")
	mkfifo(t, out+SidecarSuffix)
	if _, err := WriteSnapshotFile(out, nil, []Row{{Op: 1, Key: []byte("k"), Value: []byte("v")}}, SnapshotOptions{Sidecar: true, BeforePublish: before}); err == nil {
		t.Error("the named pipe was replaced")
	}

	// A tree that replaces one in which a file of another kind appeared.
	tree := filepath.Join(dir, "tree")
	if err := os.MkdirAll(filepath.Join(tree, "v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	tw, err := CreateTree(tree, TreeOptions{Generation: 1, Checkpoint: 7, Force: true, BeforePublish: before})
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Abort()
	if _, err := tw.WriteSubtask(0, CanonicalMetadata(nil, VersionMap{}), []Row{{Op: 1, Key: []byte("\xffk"), Value: []byte("v")}}, CompressNone); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "v1", "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := tw.Commit("job", nil); err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Errorf("commit over a foreign file: %v", err)
	}
	if called != 0 {
		t.Errorf("BeforePublish ran %d times for outputs that were refused", called)
	}
	// Where nothing refuses, it runs once.
	if err := os.Remove(filepath.Join(tree, "v1", "notes.txt")); err != nil {
		t.Fatal(err)
	}
	if err := tw.Commit("job", nil); err != nil || called != 1 {
		t.Errorf("commit: %v; BeforePublish ran %d times, want 1", err, called)
	}
}
