package savepoint

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOutputPathThroughBindMount: a directory reached by a second name (a
// bind mount) is one directory: an output, its sidecar or a report named
// through it is compared with the input by what it reaches, existing or
// not. (It needs to mount: as root, on Linux; skipped elsewhere.)
func TestOutputPathThroughBindMount(t *testing.T) {
	dir := t.TempDir()
	real, alias := filepath.Join(dir, "real"), filepath.Join(dir, "alias")
	for _, d := range []string{filepath.Join(real, "tree", "v1", "0"), alias} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	snap := filepath.Join(real, "tree", "v1", "0", "checkpoint-7.snap")
	for _, p := range []string{snap, snap + ".meta"} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount(real, alias, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("bind mount: %v", err)
	}
	defer unix.Unmount(alias, 0)
	via := func(p string) string { r, _ := filepath.Rel(real, p); return filepath.Join(alias, r) }
	for _, c := range []struct {
		name, in, out string
		want          pathRel
	}{
		{"the payload", snap, via(snap), relSame},
		{"its sidecar", snap, via(snap + ".meta"), relPair},
		{"a payload beside the output's sidecar", via(snap + ".meta"), snap, relPair},
		{"a file not yet written in the tree", filepath.Join(real, "tree"), via(filepath.Join(real, "tree", "new", "r.json")), relInside},
		{"a tree around the input", snap, via(filepath.Join(real, "tree")), relContains},
		{"a file beside, apart", snap, via(filepath.Join(real, "tree", "v1", "0", "other.snap")), relNone},
		{"an output not yet made and a report in it", filepath.Join(real, "out"), via(filepath.Join(real, "out", "r.json")), relInside},
	} {
		rel, _, err := pathRelation(c.in, c.out)
		if err != nil || rel != c.want {
			t.Errorf("%s: relation %d (%v), want %d", c.name, rel, err, c.want)
		}
	}
	if err := CheckOutputPath(snap, via(snap+".meta")); !errors.Is(err, ErrOutputIsInput) {
		t.Errorf("CheckOutputPath of the sidecar through the mount: %v", err)
	}
	// The message names the input as the output's path reaches it, and
	// the output as the input's does.
	tree := filepath.Join(real, "tree")
	if err := CheckOutputPath(tree, via(filepath.Join(tree, "new", "r.json"))); err == nil || !strings.HasSuffix(err.Error(), "("+via(tree)+" is the input)") {
		t.Errorf("inside, through the mount: %v", err)
	}
	if err := CheckOutputPath(snap, via(tree)); err == nil || !strings.HasSuffix(err.Error(), "("+tree+" is the output)") {
		t.Errorf("containing, through the mount: %v", err)
	}
}
