package transform_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sptool/sptool/diff"
	"github.com/sptool/sptool/export"
	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/transform"
)

// TestUndecodableRefused: a tree opened with KeepUndecodable, one of
// whose files does not decode, is refused by every reader that needs its
// rows, naming the file; nothing is written.
func TestUndecodableRefused(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	if err := os.CopyFS(in, os.DirFS("../testdata/example")); err != nil {
		t.Fatal(err)
	}
	bad, err := os.ReadFile("../testdata/bad/nullable.snap")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in, "v1", "2", "checkpoint-7.snap"), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := savepoint.Open(in, savepoint.OpenOptions{Columnar: true, KeepUndecodable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	good, err := savepoint.Open("../testdata/example", savepoint.OpenOptions{Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	ctx := context.Background()
	out := filepath.Join(dir, "out")
	set := parseRules(t, "version: 1\nrules:\n  - drop: 'key_group < 4'\n", nil)
	for name, call := range map[string]func() error{
		"transform.Run": func() error { _, err := transform.Run(ctx, sp, set, transform.Options{Out: out}); return err },
		"diff.Compare":  func() error { _, err := diff.Compare(ctx, good, sp, diff.Options{}); return err },
		"export.WriteFile": func() error {
			_, err := export.WriteFile(ctx, filepath.Join(dir, "x.parquet"), sp, export.Options{}, false)
			return err
		},
		"export.Write --per-file": func() error {
			_, err := export.Write(ctx, new(strings.Builder), sp, export.Options{Format: export.JSONL, PerFile: true})
			return err
		},
	} {
		err := call()
		if err == nil || !strings.Contains(err.Error(), filepath.Join(in, "v1", "2", "checkpoint-7.snap")) || !strings.Contains(err.Error(), "nullable") {
			t.Errorf("%s: %v, want the undecodable file named", name, err)
		}
	}
	for _, p := range []string{out, filepath.Join(dir, "x.parquet")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s: %v, want nothing written", p, err)
		}
	}
}
