package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A --report path holding a dangling symbolic link is taken, as the
// report's publish takes it: without --force it is refused before any
// work, not once the savepoint was published (the check followed the
// link, and found nothing).
func TestReportDanglingLinkRefusedUpFront(t *testing.T) {
	dir := t.TempDir()
	report := filepath.Join(dir, "rep.json")
	if err := os.Symlink(filepath.Join(dir, "nowhere.json"), report); err != nil {
		t.Skip(err)
	}
	snap, err := filepath.Abs(filepath.Join("..", "..", "testdata", "clink", "snapshot-v1.snap"))
	if err != nil {
		t.Fatal(err)
	}
	rulesFile := filepath.Join(dir, "r.yaml")
	if err := os.WriteFile(rulesFile, []byte("version: 1\nrules:\n  - drop: 'op == 7'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.snap")
	var stderr bytes.Buffer
	code := Main(context.Background(), []string{"apply", "-q", "--allow-unverified", "-r", rulesFile, snap, "-o", out, "--report", report}, &Streams{Out: &bytes.Buffer{}, Err: &stderr})
	if _, err := os.Lstat(out); err == nil || code != ExitError || !strings.Contains(stderr.String(), "--report "+report+" exists") {
		t.Errorf("apply --report <dangling link>: exit %d, output written: %v, stderr %q; want exit 2 before any work", code, err == nil, stderr.String())
	}
}
