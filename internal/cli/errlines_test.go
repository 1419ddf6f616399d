package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// An error naming a path given with a newline in it quotes the path, so
// that the message stays one line; each line of a message of several
// errors joined is the command's.
func TestErrorLines(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad\nname.snap")
	if err := os.WriteFile(bad, []byte("not a savepoint"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errs strings.Builder
	if code := Main(context.Background(), []string{"cat", bad}, &Streams{Out: &out, Err: &errs}); code != ExitError {
		t.Fatalf("exit %d, want %d", code, ExitError)
	}
	lines := strings.Split(strings.TrimSuffix(errs.String(), "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "sptool cat: ") || !strings.Contains(lines[0], `bad\nname.snap"`) {
		t.Errorf("stderr %q, want one line quoting the path", errs.String())
	}
	errs.Reset()
	fail(&Streams{Err: &errs}, "export", errors.Join(errors.New("first"), errors.New("second")))
	if got, want := errs.String(), "sptool export: first\nsptool export: second\n"; got != want {
		t.Errorf("joined errors: %q, want %q", got, want)
	}
}

// A run out of file descriptors (a tree of more payloads than the process
// may open) says why and what to do, once, however deep the error is.
func TestTooManyFilesHint(t *testing.T) {
	var errs strings.Builder
	open := &os.PathError{Op: "open", Path: "t/v1/7/checkpoint-1.snap", Err: syscall.EMFILE}
	fail(&Streams{Err: &errs}, "inspect", fmt.Errorf("read sidecar: %w", open))
	got := errs.String()
	if !strings.HasPrefix(got, "sptool inspect: read sidecar: open t/v1/7/checkpoint-1.snap: too many open files (each payload") ||
		!strings.HasSuffix(got, "with ulimit -Hn (LimitNOFILE in a systemd unit))\n") || strings.Count(got, "held open") != 1 {
		t.Errorf("stderr %q, want the error and one hint to raise the limit", got)
	}
	if n, ok := openFilesLimit(); ok && !strings.Contains(got, fmt.Sprintf(", now %d,", n)) {
		t.Errorf("stderr %q does not give the limit, %d", got, n)
	}
	errs.Reset()
	fail(&Streams{Err: &errs}, "inspect", errors.New("open x: permission denied"))
	if strings.Contains(errs.String(), "ulimit") || strings.Contains(errs.String(), "held open") {
		t.Errorf("stderr %q: the hint follows another error", errs.String())
	}
}
