package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestLostOutputFails: a command whose output to stdout is lost exits 2
// and says so on stderr, whether it checks its writes (inspect) or not
// (lint, help, version); with stdout working, the same commands exit 0.
func TestLostOutputFails(t *testing.T) {
	rulesFile := filepath.Join("..", "..", "examples", "rules", "gdpr-erasure.yaml")
	snap := filepath.Join("..", "..", "testdata", "clink", "snapshot-v1.snap")
	for _, args := range [][]string{
		{"lint", rulesFile}, {"version"}, {"--version"}, {"help"}, {"help", "apply"}, {"inspect", snap}, {"version", "--help"},
	} {
		var stderr bytes.Buffer
		code := Main(context.Background(), args, &Streams{Out: failingWriter{}, Err: &stderr})
		if code != ExitError || !strings.Contains(stderr.String(), "no space left on device") {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 naming the write's error", args, code, stderr.String())
		}
		var stdout bytes.Buffer
		stderr.Reset()
		if code := Main(context.Background(), args, &Streams{Out: &stdout, Err: &stderr}); code != ExitOK || stdout.Len() == 0 {
			t.Errorf("%q with stdout working: exit %d, stdout %d bytes, stderr %q", args, code, stdout.Len(), stderr.String())
		}
	}
	var stderr bytes.Buffer
	if code := Main(context.Background(), []string{"version", "--bogus"}, &Streams{Out: &bytes.Buffer{}, Err: &stderr}); code != ExitError || !strings.Contains(stderr.String(), `takes no arguments, got "--bogus"`) {
		t.Errorf("version --bogus: exit %d, stderr %q", code, stderr.String())
	}
}

// A --report that cannot be written (here its name is too long for the
// file system) leaves none of the directories made for it, and leaves
// those that were there.
func TestReportFailureRemovesItsDirectories(t *testing.T) {
	pre := t.TempDir()
	if err := writeJSONFile(filepath.Join(pre, "new", "sub", strings.Repeat("x", 300)+".json"), map[string]int{"rows": 1}, false); err == nil {
		t.Fatal("a report named too long for the file system was written")
	}
	if left, err := os.ReadDir(pre); err != nil || len(left) > 0 {
		t.Errorf("the report's directory holds %v (%v), want it empty", left, err)
	}
}

// TestErrorsEscapeControls: an error or a usage error that quotes an
// argument shows its control characters as escapes, not as the escape
// sequence a terminal would act on.
func TestErrorsEscapeControls(t *testing.T) {
	for _, args := range [][]string{
		{"inspect", "\x1b[2Jnot-there"},          // an error naming the path
		{"cat", "--format", "\x1b[2J", "x.snap"}, // a usage error quoting the flag
	} {
		var stderr bytes.Buffer
		code := Main(context.Background(), args, &Streams{Out: &bytes.Buffer{}, Err: &stderr})
		if code != ExitError || strings.Contains(stderr.String(), "\x1b") || !strings.Contains(stderr.String(), `\x1b[2J`) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and the escape shown as \\x1b", args, code, stderr.String())
		}
	}
}

// A --report that could not be written says so; when a file is at its
// path (a --force run's), it says that that file is an earlier run's
// report, which does not describe this run's output.
func TestReportNotWrittenNamesStaleReport(t *testing.T) {
	report := filepath.Join(t.TempDir(), "report.json")
	full := errors.New("no space left on device")
	if err := reportNotWritten(report, full); err.Error() != "the report was not written to "+report+": no space left on device" || !errors.Is(err, full) {
		t.Errorf("no file there: %v", err)
	}
	if err := os.WriteFile(report, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "the report was not written to " + report + ": no space left on device; " + report + " still holds the report of an earlier run, which does not describe this output"
	if err := reportNotWritten(report, full); err.Error() != want || !errors.Is(err, full) {
		t.Errorf("an earlier report there: %v, want %s", err, want)
	}
	// One that appeared while the run wrote (no --force) is named so.
	appeared := fmt.Errorf("output %s appeared while writing (use --force to replace it): %w", report, fs.ErrExist)
	if err := reportNotWritten(report, appeared); strings.Contains(err.Error(), "earlier run") {
		t.Errorf("a report that appeared: %v", err)
	}
}

// A --report whose ".." follows a symbolic link is refused as such, not as
// a report that would overwrite or hold the input.
func TestReportDotDotAfterLinkRefusedAsSuch(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges on Windows")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "real", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(dir, "real", "sub"), link); err != nil {
		t.Fatal(err)
	}
	snap, rulesFile := fixtureAndDrop(t, dir)
	report := link + string(filepath.Separator) + ".." + string(filepath.Separator) + "rep.json"
	var stderr bytes.Buffer
	code := Main(context.Background(), []string{"apply", "-q", "-r", rulesFile, snap, "-o", filepath.Join(dir, "out.snap"), "--report", report}, &Streams{Out: &bytes.Buffer{}, Err: &stderr})
	if code != ExitError || !strings.Contains(stderr.String(), "symbolic link") || strings.Contains(stderr.String(), "apart from the input") {
		t.Errorf("apply --report %s: exit %d, stderr %q; want exit 2 naming the link's \"..\"", report, code, stderr.String())
	}
}

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
	snap, rulesFile := fixtureAndDrop(t, dir)
	out := filepath.Join(dir, "out.snap")
	var stderr bytes.Buffer
	code := Main(context.Background(), []string{"apply", "-q", "--allow-unverified", "-r", rulesFile, snap, "-o", out, "--report", report}, &Streams{Out: &bytes.Buffer{}, Err: &stderr})
	if _, err := os.Lstat(out); err == nil || code != ExitError || !strings.Contains(stderr.String(), "--report "+report+" exists") {
		t.Errorf("apply --report <dangling link>: exit %d, output written: %v, stderr %q; want exit 2 before any work", code, err == nil, stderr.String())
	}
}

// fixtureAndDrop returns the path of the real clink fixture and of a rule
// file in dir dropping its op 7.
func fixtureAndDrop(t *testing.T, dir string) (snap, rulesFile string) {
	t.Helper()
	snap, err := filepath.Abs(filepath.Join("..", "..", "testdata", "clink", "snapshot-v1.snap"))
	if err != nil {
		t.Fatal(err)
	}
	rulesFile = filepath.Join(dir, "r.yaml")
	if err := os.WriteFile(rulesFile, []byte("version: 1\nrules:\n  - drop: 'op == 7'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return snap, rulesFile
}
