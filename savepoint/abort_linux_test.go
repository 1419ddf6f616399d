package savepoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A Commit that fails once it wrote the COMPLETED marker (an output that
// appeared meanwhile) leaves a whole tree in the staging directory. Abort
// removes its marker first, then its sidecars, then the rest, as a
// replaced tree is removed: a run killed while it removes it leaves no
// marker beside part of a tree, which the next run would name as a whole
// tree to rename into place. The removals are watched with inotify, whose
// events come in the order they were made.
func TestAbortRemovesMarkerFirst(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	tw := stagedTree(t, out)
	if err := os.Mkdir(out, 0o755); err != nil { // another run's output
		t.Fatal(err)
	}
	if err := tw.Commit("job1", nil); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Commit over an output that appeared: %v, want fs.ErrExist", err)
	}
	if !hasCompletedMarker(tw.Stage()) {
		t.Fatal("the staging tree has no COMPLETED marker: the test needs one")
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	defer unix.Close(fd)
	dirs := map[int32]string{}
	err = filepath.WalkDir(tw.Stage(), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		wd, err := unix.InotifyAddWatch(fd, p, unix.IN_DELETE)
		dirs[int32(wd)] = p
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.Abort(); err != nil {
		t.Fatal(err)
	}
	var removed []string // the files removed, in order
	buf := make([]byte, 1<<16)
	for {
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EAGAIN) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for b := buf[:n]; len(b) >= unix.SizeofInotifyEvent; {
			wd := int32(binary.NativeEndian.Uint32(b[0:]))
			mask := binary.NativeEndian.Uint32(b[4:])
			size := int(binary.NativeEndian.Uint32(b[12:]))
			name := string(bytes.TrimRight(b[unix.SizeofInotifyEvent:unix.SizeofInotifyEvent+size], "\x00"))
			if mask&unix.IN_DELETE != 0 && mask&unix.IN_ISDIR == 0 {
				removed = append(removed, filepath.Join(dirs[wd], name))
			}
			b = b[unix.SizeofInotifyEvent+size:]
		}
	}
	if len(removed) == 0 || filepath.Base(removed[0]) != "COMPLETED-7" {
		t.Fatalf("files removed in the order %v, want the COMPLETED marker first", removed)
	}
	payload := false
	for _, p := range removed[1:] {
		switch {
		case strings.HasSuffix(p, ".snap"):
			payload = true
		case strings.HasSuffix(p, SidecarSuffix) && payload:
			t.Errorf("sidecar %s removed after a payload: %v", p, removed)
		}
	}
	if _, err := os.Lstat(tw.Stage()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the staging directory is still there: %v", err)
	}
}
