package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// readOnlyDir returns a directory in which nothing can be created: a
// read-only tmpfs mounted there for root (whom permissions do not stop),
// else one of mode 0555.
func readOnlyDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_RDONLY, "size=64k"); err != nil {
			t.Skipf("as root, a directory is read-only only on a read-only mount, which failed: %v", err)
		}
		t.Cleanup(func() { syscall.Unmount(dir, 0) })
		return dir
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	return dir
}

// A --report whose directory is still to be made, under one that cannot
// be written, is refused before any work, as one in an existing directory
// that cannot be written is: the savepoint is not published without it.
func TestReportUnderReadOnlyDirRefused(t *testing.T) {
	ro := readOnlyDir(t)
	for _, report := range []string{filepath.Join(ro, "r.json"), filepath.Join(ro, "sub", "dir", "r.json")} {
		out := filepath.Join(t.TempDir(), "out")
		var stderr bytes.Buffer
		code := Main(context.Background(), []string{"apply", "-r", "../../examples/rules/gdpr-erasure.yaml", "../../testdata/example", "-o", out, "--report", report}, &Streams{Out: &bytes.Buffer{}, Err: &stderr})
		if want := "sptool apply: --report " + report + ": " + ro + " cannot be written: "; code != ExitError || !strings.HasPrefix(stderr.String(), want) {
			t.Errorf("--report %s: exit %d, stderr %q; want exit 2 and %q", report, code, stderr.String(), want)
		}
		if _, err := os.Lstat(out); !os.IsNotExist(err) {
			t.Errorf("--report %s: the output was written (%v)", report, err)
		}
	}
}

// An output under a directory that cannot be written is refused before
// any work, with the directory named, by every command that writes one
// (and by a dry run given it, which fails where the run would).
func TestOutputUnderReadOnlyDirRefused(t *testing.T) {
	ro := readOnlyDir(t)
	for _, c := range []struct {
		cmd  string
		args []string
	}{
		{"apply", []string{"-r", "../../examples/rules/gdpr-erasure.yaml", "../../testdata/example"}},
		{"rescale", []string{"../../testdata/example", "--parallelism", "2"}},
		{"rescale", []string{"../../testdata/example", "--parallelism", "2", "--dry-run"}},
		{"export", []string{"../../testdata/example", "--format", "csv"}},
	} {
		for _, out := range []string{filepath.Join(ro, "out"), filepath.Join(ro, "sub", "out")} {
			var stderr bytes.Buffer
			code := Main(context.Background(), append([]string{c.cmd, "-o", out}, c.args...), &Streams{Out: &bytes.Buffer{}, Err: &stderr})
			if want := "sptool " + c.cmd + ": -o " + out + ": " + ro + " cannot be written: "; code != ExitError || !strings.HasPrefix(stderr.String(), want) {
				t.Errorf("%s %q -o %s: exit %d, stderr %q; want exit 2 and %q", c.cmd, c.args, out, code, stderr.String(), want)
			}
		}
	}
}
