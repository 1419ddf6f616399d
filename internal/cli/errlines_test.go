package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
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
