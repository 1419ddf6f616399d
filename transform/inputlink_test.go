package transform_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sptool/sptool/transform"
)

// TestInputLinkIntoOutput: a payload of the input tree that is a symbolic
// link to a file of the output is refused before anything is written:
// replacing the output with --force would change what the input reads.
func TestInputLinkIntoOutput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	set := parseRules(t, "version: 1\nrules:\n  - drop: 'key_group < 4'\n", nil)
	if _, err := run(t, "../testdata/example", set, transform.Options{Out: out}); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in")
	if err := os.CopyFS(in, os.DirFS("../testdata/example")); err != nil {
		t.Fatal(err)
	}
	payload := filepath.Join(in, "v1", "2", "checkpoint-7.snap")
	target := filepath.Join(out, "v1", "2", "checkpoint-7.snap")
	for _, p := range []string{payload, payload + ".meta"} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(target, payload); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target+".meta", payload+".meta"); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	_, err = run(t, in, set, transform.Options{Out: out, Force: true})
	if err == nil || !strings.Contains(err.Error(), "input file "+payload+", a link to "+target) {
		t.Fatalf("err = %v, want the link named", err)
	}
	if after, _ := os.ReadFile(target); !bytes.Equal(before, after) {
		t.Error("the output the input links to was rewritten")
	}
}
