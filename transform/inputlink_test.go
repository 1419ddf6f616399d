package transform_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sptool/sptool/savepoint"
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

// TestOutputInLinkedSubtaskDir: an output inside a subtask directory of
// the input reached through a symbolic link (clink follows such links)
// is refused before anything is written: it would add to the input's
// directory, which the check of the input's root alone let through.
func TestOutputInLinkedSubtaskDir(t *testing.T) {
	dir, in, sub := linkedSubtaskTree(t)
	set := parseRules(t, "version: 1\nrules:\n  - drop: 'key_group < 4'\n", nil)
	out := filepath.Join(sub, "out")
	_, err := run(t, in, set, transform.Options{Out: out, Force: true})
	if !errors.Is(err, savepoint.ErrOutputIsInput) || !strings.Contains(err.Error(), "lies inside the input's directory "+filepath.Join(in, "v1", "0")+", a link to "+sub) {
		t.Errorf("output %s: %v, want ErrOutputIsInput naming the linked directory", out, err)
	}
	if _, err := run(t, in, set, transform.Options{Out: sub, Force: true}); err == nil {
		t.Errorf("output %s, the linked directory itself: written", sub)
	}
	ents, err := os.ReadDir(sub)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 2 {
		t.Errorf("the input's linked subtask directory holds %d entries, want its payload and sidecar", len(ents))
	}
	// Beside it, the output is written.
	if _, err := run(t, in, set, transform.Options{Out: filepath.Join(dir, "out")}); err != nil {
		t.Fatal(err)
	}
}

// TestTempDirInLinkedSubtaskDir: a temporary directory inside a subtask
// directory of the input reached through a symbolic link is refused
// before anything is written, as an output there is: the sort's files
// would be made in the input's directory.
func TestTempDirInLinkedSubtaskDir(t *testing.T) {
	dir, in, sub := linkedSubtaskTree(t)
	set := parseRules(t, "version: 1\nrules:\n  - drop: 'key_group < 4'\n", nil)
	out := filepath.Join(dir, "out")
	for _, tmp := range []string{sub, filepath.Join(sub, "tmp")} {
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, dry := range []bool{false, true} {
			_, err := run(t, in, set, transform.Options{Out: out, TempDir: tmp, DryRun: dry})
			if err == nil || !strings.Contains(err.Error(), "temporary directory "+tmp+" lies inside the input's directory "+filepath.Join(in, "v1", "0")+", a link to "+sub) {
				t.Errorf("temp dir %s (dry run %v): %v, want the linked directory named", tmp, dry, err)
			}
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("output written: %v", err)
	}
	// Beside it, the run goes ahead.
	if _, err := run(t, in, set, transform.Options{Out: out, TempDir: dir}); err != nil {
		t.Fatal(err)
	}
}

// linkedSubtaskTree copies the example tree to in, under a new directory
// dir, with subtask 0's directory moved to sub, beside in, and linked
// from where it was.
func linkedSubtaskTree(t *testing.T) (dir, in, sub string) {
	return linkedTree(t, filepath.Join("v1", "0"), "sub0")
}

// linkedTree copies the example tree to in, under a new directory dir,
// with its directory rel moved to dir/name, beside in, and linked from
// where it was (to).
func linkedTree(t *testing.T, rel, name string) (dir, in, to string) {
	t.Helper()
	dir = t.TempDir()
	in = filepath.Join(dir, "in")
	if err := os.CopyFS(in, os.DirFS("../testdata/example")); err != nil {
		t.Fatal(err)
	}
	to = filepath.Join(dir, name)
	if err := os.Rename(filepath.Join(in, rel), to); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(to, filepath.Join(in, rel)); err != nil {
		t.Fatal(err)
	}
	return dir, in, to
}

// TestTempDirInLinkedGenerationDir: so is one inside the generation
// directory when it is the link out of the tree.
func TestTempDirInLinkedGenerationDir(t *testing.T) {
	_, in, gen := linkedGenerationTree(t)
	set := parseRules(t, "version: 1\nrules:\n  - drop: 'key_group < 4'\n", nil)
	_, err := run(t, in, set, transform.Options{DryRun: true, TempDir: gen})
	if err == nil || !strings.Contains(err.Error(), "temporary directory "+gen+" lies inside the input's directory "+filepath.Join(in, "v1")+", a link to "+gen) {
		t.Errorf("temp dir %s: %v, want the linked generation directory named", gen, err)
	}
}

// TestOutputInLinkedGenerationDir: and so is an output there, which would
// add a directory to the input's generation directory.
func TestOutputInLinkedGenerationDir(t *testing.T) {
	dir, in, gen := linkedGenerationTree(t)
	set := parseRules(t, "version: 1\nrules:\n  - drop: 'key_group < 4'\n", nil)
	out := filepath.Join(gen, "out")
	_, err := run(t, in, set, transform.Options{Out: out})
	if err == nil || !strings.Contains(err.Error(), "output "+out+" lies inside the input's directory "+filepath.Join(in, "v1")+", a link to "+gen) {
		t.Errorf("output %s: %v, want the linked generation directory named", out, err)
	}
	if _, err := os.Lstat(out); !os.IsNotExist(err) {
		t.Errorf("output written into the input's generation directory: %v", err)
	}
	// Beside it, the output is written.
	if _, err := run(t, in, set, transform.Options{Out: filepath.Join(dir, "out")}); err != nil {
		t.Fatal(err)
	}
}

// linkedGenerationTree copies the example tree to in, under a new
// directory dir, with its generation directory v1 moved to gen, beside
// in, and linked from where it was.
func linkedGenerationTree(t *testing.T) (dir, in, gen string) {
	return linkedTree(t, "v1", "gen")
}
