package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sptool/sptool/internal/testhook"
	"github.com/sptool/sptool/savepoint"
)

// failingWriter stands in for a stdout that cannot be written (a full
// disk, a closed pipe).
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// applyExample runs apply of the README's erasure rules on the example
// tree with extra arguments, and returns the exit code and stderr.
func applyExample(t *testing.T, out, report string, stdout *bytes.Buffer, extra ...string) (int, string) {
	t.Helper()
	args := append([]string{"apply", "-r", "../../examples/rules/gdpr-erasure.yaml", "../../testdata/example", "-o", out, "--report", report}, extra...)
	var errs bytes.Buffer
	s := &Streams{Out: failingWriter{}, Err: &errs}
	if stdout != nil {
		s.Out = stdout
	}
	return Main(context.Background(), args, s), errs.String()
}

// checkPublished checks that the output validates and that the report
// file was written, with the warnings it should hold.
func checkPublished(t *testing.T, out, report string, warnings ...string) {
	t.Helper()
	var errs bytes.Buffer
	if code := Main(context.Background(), []string{"validate", out}, &Streams{Out: &bytes.Buffer{}, Err: &errs}); code != ExitOK {
		t.Fatalf("validate %s: exit %d: %s", out, code, errs.String())
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("the report was not written: %v", err)
	}
	var rep struct {
		PerRule []struct {
			Purge *struct {
				Found []json.RawMessage `json:"found"`
			} `json:"purge"`
		} `json:"per_rule"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.PerRule) == 0 || rep.PerRule[0].Purge == nil || len(rep.PerRule[0].Purge.Found) != 3 {
		t.Errorf("the report holds no erasure audit of 3 keys found: %s", b)
	}
	for _, w := range warnings {
		if !strings.Contains(strings.Join(rep.Warnings, "\n"), w) {
			t.Errorf("the report's warnings %q do not say %q", rep.Warnings, w)
		}
	}
}

// A stdout that cannot be written after the savepoint is published fails
// the command with a message that says the savepoint was written; the
// report file is written all the same.
func TestApplyStdoutFailsAfterPublish(t *testing.T) {
	dir := t.TempDir()
	out, report := filepath.Join(dir, "out"), filepath.Join(dir, "report.json")
	code, errs := applyExample(t, out, report, nil)
	if code != ExitError {
		t.Fatalf("exit %d, want %d; stderr: %s", code, ExitError, errs)
	}
	want := "sptool apply: the savepoint was written to " + out + ", but the report could not be printed: no space left on device\n"
	if errs != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", errs, want)
	}
	checkPublished(t, out, report)
}

// rescale publishes as apply does, and says so as apply does when its
// stdout then fails (sptool help's exit code 2).
func TestRescaleStdoutFailsAfterPublish(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	var errs bytes.Buffer
	code := Main(context.Background(), []string{"rescale", "../../testdata/example", "-o", out, "--parallelism", "2"}, &Streams{Out: failingWriter{}, Err: &errs})
	if code != ExitError {
		t.Fatalf("exit %d, want %d; stderr: %s", code, ExitError, errs.String())
	}
	want := "sptool rescale: the savepoint was written to " + out + ", but the report could not be printed: no space left on device\n"
	if errs.String() != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", errs.String(), want)
	}
	if code := Main(context.Background(), []string{"validate", out, "--parallelism", "2"}, &Streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}); code != ExitOK {
		t.Errorf("validate %s --parallelism 2: exit %d", out, code)
	}
}

// A --force over a tree whose old files cannot be removed publishes the
// new tree, prints and saves the report (which says where the old tree
// is left), and exits 2 saying the savepoint was written.
func TestApplyForceReplacedLeft(t *testing.T) {
	dir := t.TempDir()
	out, report := filepath.Join(dir, "out"), filepath.Join(dir, "report.json")
	if code, errs := applyExample(t, out, report, &bytes.Buffer{}); code != ExitOK {
		t.Fatalf("first apply: exit %d: %s", code, errs)
	}
	var left string
	testhook.RemoveReplaced = func(d string) error {
		left = d
		return errors.New("remove " + d + "/_jobs/1001/COMPLETED-7: operation not permitted")
	}
	t.Cleanup(func() { testhook.RemoveReplaced = nil })
	var stdout bytes.Buffer
	code, errs := applyExample(t, out, report, &stdout, "--force")
	if code != ExitError {
		t.Fatalf("exit %d, want %d; stderr: %s", code, ExitError, errs)
	}
	if !strings.HasPrefix(left, out+".sptool-old-") {
		t.Fatalf("the replaced output was moved aside to %q", left)
	}
	says := "the output it replaced, moved aside to " + left + ", could not be removed and is left there, whole or in part (remove it by hand): remove " + left
	if want := "sptool apply: the savepoint was written to " + out + ", but " + says; !strings.HasPrefix(errs, want) {
		t.Errorf("stderr:\n%s\nwant it to start with:\n%s", errs, want)
	}
	if !strings.Contains(stdout.String(), "warning: "+says) || !strings.Contains(stdout.String(), "3 found (8 rows removed)") {
		t.Errorf("the printed report does not hold the erasure audit and the warning:\n%s", stdout.String())
	}
	checkPublished(t, out, report, says)
	if _, err := os.Stat(filepath.Join(left, "_jobs")); err != nil {
		t.Errorf("the replaced tree is not left whole at %s: %v", left, err)
	}
}

// A --force over a file output whose old pair cannot be removed once moved
// aside says so, as for a tree: the payload and sidecar left aside are
// named in the report's warnings and on stderr.
func TestApplyForceFileReplacedLeft(t *testing.T) {
	dir := t.TempDir()
	out, report := filepath.Join(dir, "checkpoint-7.snap"), filepath.Join(dir, "report.json")
	in := "../../testdata/example/v1/0/checkpoint-7.snap"
	args := []string{"apply", "-r", "../../examples/rules/gdpr-erasure.yaml", in, "-o", out, "--report", report}
	if code := Main(context.Background(), args, &Streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}); code != ExitOK {
		t.Fatalf("first apply: exit %d", code)
	}
	var left []string
	testhook.RemoveReplaced = func(p string) error {
		left = append(left, p)
		return errors.New("operation not permitted")
	}
	t.Cleanup(func() { testhook.RemoveReplaced = nil })
	var stdout, errs bytes.Buffer
	code := Main(context.Background(), append(args, "--force"), &Streams{Out: &stdout, Err: &errs})
	if code != ExitError || len(left) != 2 {
		t.Fatalf("exit %d (want %d), %d files left aside (want the payload and its sidecar); stderr: %s", code, ExitError, len(left), errs.String())
	}
	// Removed payload first: a kill between leaves no older payload to
	// rename back beside the new sidecar.
	if !strings.HasPrefix(left[0], out+".sptool-old-") || !strings.HasPrefix(left[1], out+".meta.sptool-old-") {
		t.Errorf("moved aside to %s, want the payload removed before its sidecar", left)
	}
	says := "the output it replaced, moved aside to " + left[0] + " and " + left[1] + ", could not be removed and is left there, whole or in part (remove it by hand): operation not permitted\n"
	if !strings.HasSuffix(errs.String(), says) || !strings.Contains(stdout.String(), "warning: "+says) {
		t.Errorf("stderr %q or the printed report does not say %q", errs.String(), says)
	}
	if !strings.HasPrefix(errs.String(), "sptool apply: the savepoint was written to "+out+", but ") {
		t.Errorf("stderr: %s", errs.String())
	}
	var vout bytes.Buffer
	if code := Main(context.Background(), []string{"validate", out}, &Streams{Out: &vout, Err: &vout}); code != ExitOK {
		t.Errorf("validate %s: exit %d: %s", out, code, vout.String())
	}
	if _, err := os.Stat(report); err != nil {
		t.Errorf("the report was not written: %v", err)
	}
}

// A run cancelled by a signal says which, not "context canceled", and
// writes nothing.
func TestApplyInterrupted(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("interrupt signal received"))
	var errs bytes.Buffer
	code := Main(ctx, []string{"apply", "-r", "../../examples/rules/gdpr-erasure.yaml", "../../testdata/example", "-o", out}, &Streams{Out: &bytes.Buffer{}, Err: &errs})
	if want := "sptool apply: stopped: interrupt signal received\n"; code != ExitError || errs.String() != want {
		t.Errorf("exit %d, stderr %q; want %d, %q", code, errs.String(), ExitError, want)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("the run left %v (%v)", entries, err)
	}
}

// TestReadInterrupted: a command that only reads, cancelled by a signal,
// stops and says so, as one that writes does: it neither ignores the
// signal nor prints a report of a run the user stopped.
func TestReadInterrupted(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"inspect", "../../testdata/example"},
		{"validate", "../../testdata/example"},
		{"cat", "../../testdata/example"},
		{"diff", "../../testdata/example", "../../testdata/example"},
		{"export", "../../testdata/example", "-o", filepath.Join(dir, "out.parquet")},
	} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(errors.New("interrupt signal received"))
		var out, errs bytes.Buffer
		code := Main(ctx, args, &Streams{Out: &out, Err: &errs})
		if want := "sptool " + args[0] + ": stopped: interrupt signal received\n"; code != ExitError || errs.String() != want || out.Len() > 0 {
			t.Errorf("%s: exit %d, stdout %d bytes, stderr %q; want %d, none, %q", args[0], code, out.Len(), errs.String(), ExitError, want)
		}
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("export left %v (%v)", entries, err)
	}
}

// TestSignalAfterPublish: a signal that comes while the output is being
// put in place, after the last point a run stops at, leaves the output
// whole; the run says so rather than exiting in silence.
func TestSignalAfterPublish(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if code, errs := applyExample(t, out, filepath.Join(dir, "r1.json"), &bytes.Buffer{}); code != ExitOK {
		t.Fatalf("first apply: exit %d: %s", code, errs)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	testhook.RemoveReplaced = func(aside string) error {
		cancel(errors.New("interrupt signal received"))
		return os.RemoveAll(aside)
	}
	defer func() { testhook.RemoveReplaced = nil }()
	var errs bytes.Buffer
	args := []string{"apply", "-r", "../../examples/rules/gdpr-erasure.yaml", "../../testdata/example", "-o", out, "--force"}
	code := Main(ctx, args, &Streams{Out: &bytes.Buffer{}, Err: &errs})
	if code != ExitOK || !strings.Contains(errs.String(), "interrupt signal received came after the savepoint was put in place; "+out+" is complete") {
		t.Errorf("exit %d, stderr %q", code, errs.String())
	}
	checkPublished(t, out, filepath.Join(dir, "r1.json"))
}

// A run stopped by a signal that could not remove what it had written
// (its directory made read-only meanwhile) still names what is left.
func TestInterruptedNamesLeftBehind(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("interrupt signal received"))
	var errs bytes.Buffer
	left := errors.New("the staging directory is left behind: unlinkat /o/out.sptool-tmp-1.1.a: permission denied; delete it")
	err := fmt.Errorf("write: %w", &savepoint.LeftError{Err: context.Canceled, Left: left})
	if code := fail(&Streams{Err: &errs, ctx: ctx}, "apply", err); code != ExitError {
		t.Errorf("exit %d", code)
	}
	if want := "sptool apply: stopped: interrupt signal received (and " + left.Error() + ")\n"; errs.String() != want {
		t.Errorf("stderr %q, want %q", errs.String(), want)
	}
}
