package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sptool/sptool/internal/gen"
)

func TestProgressText(t *testing.T) {
	for _, c := range []struct {
		stage              string
		done, total, since int64
		elapsed            time.Duration
		want               string
	}{
		// The first report: no rate yet (progressbar's read billions of
		// rows a second there).
		{"rows", 46272, 10_000_000, 0, 0, "rows: 46k of 10M"},
		{"rows", 1_200_000, 10_000_000, 1_000_000, 199 * time.Millisecond, "rows: 1.2M of 10M"},
		{"rows", 1_200_000, 10_000_000, 1_000_000, 200 * time.Millisecond, "rows: 1.2M of 10M, 5.0M rows/s, about 2s left"},
		{"rows", 10_000_000, 10_000_000, 9_000_000, time.Second, "rows: 10M of 10M, 9.0M rows/s"},
		{"rows", 950, 1000, 900, time.Second, "rows: 950 of 1.0k, 900 rows/s, about 0s left"},
		{"write", 331_000_000, -1, 300_000_000, 200 * time.Millisecond, "writing: 331 MB, 1.5 GB/s"},
		{"write", 950, -1, 0, 0, "writing: 950 B"},
	} {
		if got := progressText(c.stage, c.done, c.total, c.since, c.elapsed); got != c.want {
			t.Errorf("%s %d/%d: %q, want %q", c.stage, c.done, c.total, got, c.want)
		}
	}
}

// finish takes the bar off the terminal (the report that follows starts
// a line of its own), also the spinner of a stage of unknown total, and
// may be called again.
func TestProgressFinishClears(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf)
	clock := time.Unix(1, 0)
	p.now = func() time.Time { return clock }
	p.update("rows", 10, 100)
	clock = clock.Add(time.Second)
	p.update("rows", 100, 100)
	p.update("write", 1000, -1)
	clock = clock.Add(time.Second)
	p.update("write", 5000, -1)
	p.finish()
	p.finish()
	out := buf.String()
	if !strings.Contains(out, "writing: 1.0 kB") {
		t.Errorf("no frame of the write stage in %q", out)
	}
	if !regexp.MustCompile(`\r +\r$`).MatchString(out) {
		t.Errorf("the bar is not cleared at the end of %q", out)
	}
}

// A run's bar is off the terminal before its report is printed: on a
// terminal, where both streams go to one screen, the report starts a line
// of its own, not after the last frame of the write's spinner (a stage of
// unknown total, which no count finishes). The output passes
// savepoint.ReleaseEvery bytes, so that the write reports.
func TestProgressClearedBeforeReport(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.snap")
	if err := gen.WriteBig(in, gen.BigOptions{Rows: 100_000, Sorted: true, KeyPad: 200}); err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(dir, "r.yaml")
	if err := os.WriteFile(rules, []byte("version: 1\nrules:\n  - drop: 'key_group < 1'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var screen bytes.Buffer // stdout and stderr, as a terminal shows them
	s := &Streams{Out: &screen, Err: &screen, ErrIsTerminal: true, OutIsTerminal: true}
	if code := Main(context.Background(), []string{"apply", "-r", rules, in, "-o", filepath.Join(dir, "out.snap")}, s); code != ExitOK {
		t.Fatalf("exit %d: %s", code, screen.String())
	}
	out := screen.String()
	at := strings.Index(out, "apply: file")
	if at < 0 {
		t.Fatalf("no report in %q", out)
	}
	before := out[:at]
	if !strings.Contains(before, "writing: ") {
		t.Errorf("no frame of the write in %q", before)
	}
	if !regexp.MustCompile(`\r +\r$`).MatchString(before) {
		t.Errorf("the report follows the bar's frame: %q", before[max(0, len(before)-200):])
	}
}
