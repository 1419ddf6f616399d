package transform_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sptool/sptool/transform"
)

// Options.BeforePublish is called once the output is whole, before it is
// put in place (the output it replaces, under Force, is still there), for
// a file and for a tree; its error stops the run with nothing put in place
// and the replaced output as it was.
func TestBeforePublish(t *testing.T) {
	set := parseRules(t, "version: 1\nrules:\n  - drop: 'key_group < 64'\n", nil)
	for _, c := range []struct{ name, in, out string }{
		{"file", "../testdata/clink/snapshot-v1.snap", "o.snap"},
		{"tree", exampleTree, "tree"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), c.out)
			calls := 0
			opts := transform.Options{Out: out, BeforePublish: func() error {
				calls++
				if _, err := os.Lstat(out); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("output present when BeforePublish is called: %v", err)
				}
				return nil
			}}
			if _, err := run(t, c.in, set, opts); err != nil || calls != 1 {
				t.Fatalf("run: %v, %d calls", err, calls)
			}
			old, err := os.Stat(out)
			if err != nil {
				t.Fatal(err)
			}
			stop := errors.New("stop here")
			opts = transform.Options{Out: out, Force: true, BeforePublish: func() error {
				if now, err := os.Stat(out); err != nil || !os.SameFile(now, old) {
					t.Errorf("the output --force replaces is not in place when BeforePublish is called: %v", err)
				}
				return stop
			}}
			if _, err := run(t, c.in, set, opts); !errors.Is(err, stop) {
				t.Fatalf("run: %v, want BeforePublish's error", err)
			}
			if now, err := os.Stat(out); err != nil || !os.SameFile(now, old) {
				t.Errorf("after BeforePublish failed, the output is not the old one: %v", err)
			}
			entries, _ := os.ReadDir(filepath.Dir(out))
			if c.name == "file" && len(entries) != 2 || c.name == "tree" && len(entries) != 1 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("left beside the output: %q", names)
			}
		})
	}
}
