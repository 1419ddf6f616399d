package savepoint

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCheckReplaceableProcLinks: a path that is, or leads through links
// to, a process's open file in /proc (/dev/stdout, /dev/fd/N) is refused
// even when that file is a regular file: the rename would replace the
// link and write nothing where the stream goes.
func TestCheckReplaceableProcLinks(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "regular")
	if err := os.WriteFile(regular, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The test's standard output may be a pipe or a file; a descriptor
	// of its own is a regular file for sure.
	f, err := os.Create(filepath.Join(dir, "open"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	links := []struct{ name, to string }{
		{"to-fd", fd},
		{"chain", "to-fd"}, // relative, to the link above
		{"fds", "/proc/self/fd"},
		{"to-regular", regular},
	}
	for _, l := range links {
		if err := os.Symlink(l.to, filepath.Join(dir, l.name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		path, want string // want: "" for no error
	}{
		{filepath.Join(dir, "to-fd"), "leads to " + fd + ", a process's open file"},
		{filepath.Join(dir, "chain"), "leads to " + fd},
		{filepath.Join(dir, "fds", strconv.Itoa(int(f.Fd()))), "leads to /proc/"},
		{fd, "leads to " + fd},
		{filepath.Join(dir, "to-regular"), ""},
		{regular, ""},
	} {
		err := CheckReplaceable(tc.path, false)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.path, err, tc.want)
		}
	}
	if st, err := os.Lstat("/dev/stdout"); err == nil && st.Mode()&os.ModeSymlink != 0 {
		if err := CheckReplaceable("/dev/stdout", false); err == nil {
			t.Error("/dev/stdout: no error, want one")
		}
	}
}
