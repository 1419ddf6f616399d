package savepoint

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// exists reports whether p is there.
func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// MakeDirs makes the missing directories and reports only those; Remove
// takes them away again, innermost first, and nothing else: not a
// directory that was there, not one that holds what another put in it
// (nor, then, those above it), not one that another made in the place of
// one it made.
func TestMadeDirsRemovesOnlyItsOwn(t *testing.T) {
	root := t.TempDir()
	pre := filepath.Join(root, "pre")
	if err := os.Mkdir(pre, 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := MakeDirs(filepath.Join(pre, "a", "b", "c"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(pre, "a"), filepath.Join(pre, "a", "b"), filepath.Join(pre, "a", "b", "c")}; !slices.Equal(m.dirs, want) {
		t.Fatalf("made %v, want %v", m.dirs, want)
	}
	m.Remove()
	if !exists(pre) || exists(filepath.Join(pre, "a")) {
		t.Errorf("after Remove: pre there %v, pre/a there %v; want pre alone", exists(pre), exists(filepath.Join(pre, "a")))
	}

	// Something another put in a made directory keeps it, and those above.
	m, err = MakeDirs(filepath.Join(pre, "a", "b", "c"))
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(pre, "a", "b", "other")
	if err := os.WriteFile(other, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	m.Remove()
	if exists(filepath.Join(pre, "a", "b", "c")) || !exists(other) {
		t.Errorf("after Remove: c there %v (want not), other there %v (want so)", exists(filepath.Join(pre, "a", "b", "c")), exists(other))
	}
	if err := os.RemoveAll(filepath.Join(pre, "a")); err != nil {
		t.Fatal(err)
	}

	// A directory made in the place of one it made (moved aside, so that
	// the new one is not given its inode) is another's.
	m, err = MakeDirs(filepath.Join(pre, "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	b := filepath.Join(pre, "a", "b")
	if err := os.Rename(b, filepath.Join(root, "aside")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(b, 0o755); err != nil {
		t.Fatal(err)
	}
	m.Remove()
	if !exists(b) {
		t.Error("Remove took a directory it did not make")
	}

	// Nothing to make: nothing made, nothing removed.
	if m, err = MakeDirs(pre); err != nil || len(m.dirs) != 0 {
		t.Fatalf("MakeDirs of an existing directory: %v, %v", m.dirs, err)
	}
	m.Remove()
	(*MadeDirs)(nil).Remove()
	if !exists(pre) {
		t.Error("Remove took a directory that was there")
	}

	// A file in the way is an error, as os.MkdirAll's.
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{file, filepath.Join(file, "x")} {
		if _, err := MakeDirs(p); err == nil {
			t.Errorf("MakeDirs(%s) made it", p)
		}
	}
}

// The directories MakeDirs makes are durable, as the output renamed into
// the innermost is: the directory above each one it made is fsynced, or
// a crash after the run reported its output written could take the new
// directories, and the output with them.
func TestMakeDirsSyncsTheirParents(t *testing.T) {
	root := t.TempDir()
	var synced []string
	hookSyncDir = func(dir string) { synced = append(synced, dir) }
	defer func() { hookSyncDir = nil }()
	if _, err := MakeDirs(filepath.Join(root, "a", "b", "c")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{root, filepath.Join(root, "a"), filepath.Join(root, "a", "b")} {
		if !slices.Contains(synced, want) {
			t.Errorf("%s not fsynced (fsynced: %v)", want, synced)
		}
	}
}
