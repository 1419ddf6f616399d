// Package golden compares what a test produced with a golden file under
// testdata, which the test's -update flag rewrites.
package golden

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Check fails t unless got is the content of the file at path. With update
// it first writes got there, making the file's directory if need be. hint
// is the command that updates the file (say "go test ./diff -update"),
// which the failure messages name.
func Check(t testing.TB, path string, got []byte, update bool, hint string) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run %s to create it)", err, hint)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs (check the change, then run %s):\n%s", path, hint, got)
	}
}
