package savepoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRealPathLoopNamesPath: a loop of symbolic links is an error that
// names the path (filepath.EvalSymlinks' own message names none).
func TestRealPathLoopNamesPath(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "mat-1.bin")
	if err := os.Symlink("mat-1.bin", p); err != nil {
		t.Skip(err)
	}
	_, err := realPath(p)
	if err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("realPath of a link loop: %v, want an error naming %s", err, p)
	}
	// A missing file's error names it already, once.
	q := filepath.Join(dir, "absent")
	_, err = realPath(q)
	if err == nil || strings.Count(err.Error(), q) != 1 {
		t.Fatalf("realPath of a missing file: %v, want an error naming %s once", err, q)
	}
}
