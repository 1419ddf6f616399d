package savepoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mappedOrOpen reports whether the process maps path or holds it open.
func mappedOrOpen(t *testing.T, path string) bool {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	if strings.Contains(string(maps), path) {
		return true
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && target == path {
			return true
		}
	}
	return false
}

// An Open that fails releases the memory maps and files of the payloads it
// read: a single file that does not decode, or whose sidecar refuses it,
// and a tree whose sidecar refuses a payload.
func TestOpenFailureReleasesMaps(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.snap")
	if err := os.WriteFile(bad, append([]byte{0xff, 0xff, 0xff, 0xff, 0x40, 0, 0, 0}, make([]byte, 4096)...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(bad, OpenOptions{Columnar: true}); err == nil {
		t.Fatal("a file that does not decode opened")
	}
	if mappedOrOpen(t, bad) {
		t.Errorf("%s is still mapped or open after a failed Open", bad)
	}

	root := smallTree(t)
	payload := filepath.Join(root, "v1", "0", "checkpoint-7.snap")
	if err := os.WriteFile(payload+".meta", []byte("version=1\ncheckpoint_id=7\nbytes=1\ncrc32c=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{root, payload} {
		if _, err := Open(p, OpenOptions{Columnar: true, RequireValid: true}); err == nil {
			t.Fatalf("Open %s: a payload its sidecar refuses opened", p)
		}
		if mappedOrOpen(t, payload) {
			t.Errorf("Open %s: %s is still mapped or open after a failed Open", p, payload)
		}
	}
}
