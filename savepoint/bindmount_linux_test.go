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

// TestReplaceRefusesSharedEntries: an output --force would replace that
// is or holds a mount point (here a bind mount of the input's subtask
// directory) or a file another name shares (a hard link to the input's
// payload) is refused: removing the old output would delete the input's
// files, or change their links and change time, and no rename replaces a
// mount point. (The mounts need root on Linux; the links do not.)
func TestReplaceRefusesSharedEntries(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	sub := filepath.Join(in, "v1", "0")
	for _, d := range []string{sub, filepath.Join(out, "v1", "0"), filepath.Join(out, "v1", "1")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	snap := filepath.Join(sub, "checkpoint-7.snap")
	for _, p := range []string{snap, snap + ".meta"} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := CheckReplaceable(out, true); err != nil {
		t.Fatalf("a plain tree: %v", err)
	}

	// A hard link to the input's payload, in a tree and as a file output.
	linked := filepath.Join(out, "v1", "1", "checkpoint-7.snap")
	if err := os.Link(snap, linked); err != nil {
		t.Fatal(err)
	}
	err := CheckReplaceable(out, true)
	if err == nil || !strings.Contains(err.Error(), "it holds v1/1/checkpoint-7.snap, a file with 2 hard links") {
		t.Errorf("a tree holding a hard link: %v", err)
	}
	if err := CheckReplaceable(linked, false); err == nil || !strings.Contains(err.Error(), "it is a file with 2 hard links") {
		t.Errorf("a file output that is a hard link: %v", err)
	}
	// A symbolic link is replaced, not what it leads to.
	sym := filepath.Join(dir, "sym.snap")
	if err := os.Symlink(snap, sym); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(snap, filepath.Join(dir, "second-name")); err != nil {
		t.Fatal(err)
	}
	if err := CheckReplaceable(sym, false); err != nil {
		t.Errorf("a symbolic link to a file of 3 links: %v", err)
	}
	if err := os.Remove(linked); err != nil {
		t.Fatal(err)
	}

	// A bind mount of the input's subtask directory in the old output.
	mnt := filepath.Join(out, "v1", "0")
	if err := unix.Mount(sub, mnt, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("bind mount: %v", err)
	}
	defer unix.Unmount(mnt, 0)
	err = CheckReplaceable(out, true)
	if err == nil || !strings.Contains(err.Error(), "it holds v1/0, a mount point") {
		t.Errorf("a tree holding a mount point: %v", err)
	}
	// The output itself a mount point: of a directory, of a file.
	for _, c := range []struct {
		src, at string
		tree    bool
	}{{in, filepath.Join(dir, "root"), true}, {snap, filepath.Join(dir, "file.snap"), false}} {
		var err error
		if c.tree {
			err = os.Mkdir(c.at, 0o755)
		} else {
			err = os.WriteFile(c.at, nil, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount(c.src, c.at, "", unix.MS_BIND, ""); err != nil {
			t.Fatal(err)
		}
		defer unix.Unmount(c.at, 0)
		if err := CheckReplaceable(c.at, c.tree); err == nil || !strings.Contains(err.Error(), "it is a mount point") {
			t.Errorf("an output that is a mount point (%s): %v", c.at, err)
		}
	}
}
