package savepoint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// leftovers returns the temporary files and staging directories left in
// dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		if strings.Contains(e.Name(), ".part.") || strings.Contains(e.Name(), ".sptool-") {
			left = append(left, e.Name())
		}
	}
	return left
}

// writeOnePair writes a payload of one row and its sidecar (checkpoint 3)
// at path, and returns the rows and what was written.
func writeOnePair(t *testing.T, path string) ([]Row, FileInfo) {
	t.Helper()
	rows := []Row{{Op: 1, Key: []byte{0, 0, 'k'}, Value: []byte("v")}}
	info, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), rows, SnapshotOptions{Sidecar: true, CheckpointID: 3})
	if err != nil {
		t.Fatal(err)
	}
	return rows, info
}

// A payload and its sidecar are put in place only after BeforePublish
// allows it; when it refuses, nothing is published, the file replaced is
// untouched, and no temporary file is left.
func TestBeforePublishRefuses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint-3.snap")
	rows, old := writeOnePair(t, path)
	oldPayload, _ := os.ReadFile(path)
	oldSidecar, _ := os.ReadFile(path + SidecarSuffix)
	refused := errors.New("the input changed")
	calls := 0
	_, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), append(rows, Row{Op: 2, Key: []byte{0, 0, 'x'}}), SnapshotOptions{
		Sidecar: true, CheckpointID: 3,
		BeforePublish: func() error {
			calls++
			if left := leftovers(t, dir); len(left) != 2 {
				t.Errorf("before publishing: temporary files %v, want the payload's and the sidecar's", left)
			}
			return refused
		},
	})
	if !errors.Is(err, refused) || calls != 1 {
		t.Fatalf("err %v after %d calls, want the refusal after 1", err, calls)
	}
	if p, _ := os.ReadFile(path); !bytes.Equal(p, oldPayload) {
		t.Error("the payload replaced changed")
	}
	if s, _ := os.ReadFile(path + SidecarSuffix); !bytes.Equal(s, oldSidecar) {
		t.Error("the sidecar replaced changed")
	}
	if left := leftovers(t, dir); len(left) > 0 {
		t.Errorf("left behind %v", left)
	}
	if info, err := readSidecarInfo(path); err != nil || info != old {
		t.Errorf("sidecar %+v (%v), want %+v", info, err, old)
	}
}

// readSidecarInfo parses the sidecar of path.
func readSidecarInfo(path string) (FileInfo, error) {
	b, err := os.ReadFile(path + SidecarSuffix)
	if err != nil {
		return FileInfo{}, err
	}
	sc, err := ParseSidecar(b)
	if err != nil {
		return FileInfo{}, err
	}
	return FileInfo{Size: int64(sc.PayloadBytes), CRC32C: sc.PayloadCRC32C}, nil
}

// Replacing a payload and its sidecar never leaves the new payload beside
// the old sidecar: the old sidecar is gone before the payload is renamed,
// and the new sidecar is renamed last, for a file written and for a copy.
func TestReplacePairOrder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint-3.snap")
	rows := []Row{{Op: 1, Key: []byte{0, 0, 'k'}, Value: []byte("v")}}
	if _, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), rows, SnapshotOptions{Sidecar: true, CheckpointID: 3}); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "other.snap")
	srcInfo, err := WriteSnapshotFile(src, CanonicalMetadata(nil, VersionMap{}), append(rows, Row{Op: 9, Key: []byte{0, 1, 'z'}}), SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var renames []string
	hookBeforeRename = func(tmp, final string) {
		_, err := os.Stat(path + SidecarSuffix)
		renames = append(renames, filepath.Base(final)+" sidecar-present="+map[bool]string{true: "yes", false: "no"}[err == nil])
	}
	defer func() { hookBeforeRename = nil }()
	want := []string{"checkpoint-3.snap sidecar-present=no", "checkpoint-3.snap.meta sidecar-present=no"}

	info, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), append(rows, Row{Op: 2, Key: []byte{0, 0, 'x'}}), SnapshotOptions{Sidecar: true, CheckpointID: 3})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(renames, "; ") != strings.Join(want, "; ") {
		t.Errorf("write: renames %q, want %q", renames, want)
	}
	if got, err := readSidecarInfo(path); err != nil || got != info {
		t.Errorf("write: sidecar %+v (%v), want %+v", got, err, info)
	}

	renames = nil
	if err := CopySnapshotFile(src, path, srcInfo, SidecarFor(4, srcInfo), PublishOptions{}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(renames, "; ") != strings.Join(want, "; ") {
		t.Errorf("copy: renames %q, want %q", renames, want)
	}
	if got, err := readSidecarInfo(path); err != nil || got != srcInfo {
		t.Errorf("copy: sidecar %+v (%v), want %+v", got, err, srcInfo)
	}
	if left := leftovers(t, dir); len(left) > 0 {
		t.Errorf("left behind %v", left)
	}
}

// A tree output at a symbolic link is refused as a link (to a directory,
// to a file, or leading nowhere), not as something that is not a
// directory: the link to a tree is what would be replaced.
func TestCheckReplaceableTreeLink(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "real", "v1", "0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for link, want := range map[string]string{
		"real":    "is a symbolic link to a directory: a checkpoint tree replaces no link",
		"file":    "is a symbolic link: a checkpoint tree replaces no link",
		"nothere": "is a symbolic link that leads nowhere: a checkpoint tree replaces no link",
	} {
		at := filepath.Join(dir, "to-"+link)
		if err := os.Symlink(link, at); err != nil {
			t.Fatal(err)
		}
		if err := CheckReplaceable(at, true); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("tree output at a link to %s: %v, want %q", link, err, want)
		}
	}
}

// A tree output replaced with --force must hold nothing but what sptool
// and clink write in a checkpoint tree, at every level: files of a user's
// below v<gen>/ or _jobs/ are not deleted with it.
func TestCheckReplaceableDeep(t *testing.T) {
	whole := []string{
		"v1/0/checkpoint-7.snap", "v1/0/checkpoint-7.snap.meta", "v1/0/checkpoint-6.snap.part.3",
		"v1/0/checkpoint-7.snap.part.12.1.abc", "v1/1/changelog-7.snap", "v1/1/changelog-7.snap.meta",
		"v1/1/materializations/mat-7.bin", "v1/1/materializations/mat-7.bin.part.1.2.x", "v2/3/",
		"_jobs/job-1/COMPLETED-7", "_jobs/job-1/CONFIRMED-7", "_jobs/job-1/COMPLETED-7.tmp.12.3",
		"_jobs/job-1/receipts/sub0-7", "_jobs/job-1/receipts/sub1-7.unresolved", "_jobs/2/",
	}
	build := func(extra string) string {
		root := t.TempDir()
		for _, rel := range append(slices.Clone(whole), extra) {
			p := filepath.Join(root, rel)
			if strings.HasSuffix(rel, "/") {
				if err := os.MkdirAll(p, 0o755); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return root
	}
	if err := CheckReplaceable(build("v1/0/"), true); err != nil {
		t.Fatalf("a checkpoint tree: %v", err)
	}
	for foreign, named := range map[string]string{ // what is there: the entry refused
		"v2/docs/thesis.txt":                   "v2/docs",
		"v1/0/mydata.db":                       "v1/0/mydata.db",
		"v1/file.txt":                          "v1/file.txt",
		"v1/0/checkpoint-.snap":                "v1/0/checkpoint-.snap",
		"v1/0/checkpoints/":                    "v1/0/checkpoints",
		"v1/1/materializations/notes.bin":      "v1/1/materializations/notes.bin",
		"v1/1/materializations/mat-7.bin.d/":   "v1/1/materializations/mat-7.bin.d",
		"_jobs/notes.txt":                      "_jobs/notes.txt",
		"_jobs/job-1/todo.txt":                 "_jobs/job-1/todo.txt",
		"_jobs/job-1/receipts/todo.txt":        "_jobs/job-1/receipts/todo.txt",
		"_jobs/job-1/drafts/keep/checkpoint.x": "_jobs/job-1/drafts",
	} {
		err := CheckReplaceable(build(foreign), true)
		if want := "it holds " + filepath.FromSlash(named) + ","; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a tree holding %s: %v, want a refusal naming %s", foreign, err, named)
		}
	}
	if runtime.GOOS != "windows" {
		root := build("v1/0/")
		if err := os.Symlink("/etc/passwd", filepath.Join(root, "v1/0/checkpoint-8.snap")); err != nil {
			t.Fatal(err)
		}
		if err := CheckReplaceable(root, true); err == nil || !strings.Contains(err.Error(), "checkpoint-8.snap") {
			t.Errorf("a tree holding a symbolic link: %v, want a refusal naming it", err)
		}
	}
	// Every checkpoint tree of the test corpus may be replaced.
	trees, _ := filepath.Glob(filepath.Join("..", "testdata", "independent", "*"))
	for _, tree := range append(trees, filepath.Join("..", "testdata", "example")) {
		if isDir(tree) {
			if err := CheckReplaceable(tree, true); err != nil {
				t.Errorf("%s: %v", tree, err)
			}
		}
	}
}

// copyIntoTree writes a tree at out, of checkpoint ckpt, holding f copied
// unchanged as subtask 0 (root: the directory f was read from).
func copyIntoTree(t *testing.T, out string, ckpt uint64, f *File, root string) {
	t.Helper()
	tw, err := CreateTree(out, TreeOptions{Generation: 1, Checkpoint: ckpt})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.CopySubtask(0, f, root); err != nil {
		t.Fatal(err)
	}
	if err := tw.Commit("", nil); err != nil {
		t.Fatal(err)
	}
}

// An unchanged file copied into a tree gets a sidecar of the tree's
// checkpoint id, even when the input had none (--allow-unverified): clink
// refuses a payload without one.
func TestCopySubtaskMintsSidecar(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "checkpoint-3.snap")
	rows := []Row{{Op: 1, Key: []byte{0, 0, 'k'}, Value: []byte("v")}}
	if _, err := WriteSnapshotFile(src, CanonicalMetadata(nil, VersionMap{}), rows, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	sp, err := Open(src, OpenOptions{AllowMissingSidecar: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	out := filepath.Join(dir, "out")
	copyIntoTree(t, out, 8, sp.Files[0], dir)
	b, err := os.ReadFile(filepath.Join(out, "v1", "0", "checkpoint-8.snap.meta"))
	if err != nil {
		t.Fatalf("no sidecar: %v", err)
	}
	sc, err := ParseSidecar(b)
	if err != nil || sc.CheckpointID != 8 || int64(sc.PayloadBytes) != sp.Files[0].Size || sc.PayloadCRC32C != sp.Files[0].CRC32C {
		t.Errorf("sidecar %+v (%v), want checkpoint 8, %d bytes, crc %d", sc, err, sp.Files[0].Size, sp.Files[0].CRC32C)
	}
	again, err := Open(out, OpenOptions{RequireValid: true})
	if err != nil {
		t.Fatalf("the tree does not open as valid: %v", err)
	}
	again.Close()
}

// CheckReplaceable lets --force replace only what looks like an earlier
// output: a checkpoint tree (or an empty directory) for a tree, anything
// but a directory for a file.
func TestCheckReplaceable(t *testing.T) {
	dir := t.TempDir()
	mk := func(rel string, isDir bool) string {
		p := filepath.Join(dir, rel)
		if isDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		} else {
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	tree := mk("tree", true)
	mk("tree/v1/0", true)
	mk("tree/v12", true)
	mk("tree/_jobs/5", true)
	empty := mk("empty", true)
	home := mk("home", true)
	mk("home/v1", true)
	mk("home/notes.txt", false)
	fileAtV := mk("odd", true)
	mk("odd/v2", false) // a file named like a generation
	file := mk("out.snap", false)
	cases := []struct {
		path string
		tree bool
		ok   bool
	}{
		{filepath.Join(dir, "missing"), true, true},
		{filepath.Join(dir, "missing"), false, true},
		{tree, true, true},
		{empty, true, true},
		{home, true, false},
		{fileAtV, true, false},
		{file, true, false},
		{file, false, true},
		{tree, false, false},
	}
	for _, c := range cases {
		err := CheckReplaceable(c.path, c.tree)
		if (err == nil) != c.ok {
			t.Errorf("CheckReplaceable(%s, tree=%v) = %v, want ok=%v", filepath.Base(c.path), c.tree, err, c.ok)
		}
	}
	// A tree writer with Force refuses too, before writing anything.
	if _, err := CreateTree(home, TreeOptions{Generation: 1, Checkpoint: 1, Force: true}); err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Errorf("CreateTree over a directory of other files: %v", err)
	}
	if left := leftovers(t, dir); len(left) > 0 {
		t.Errorf("left behind %v", left)
	}
}

// An output reached through a symbolic link to the input, or to a
// directory inside it, is inside the input even when it does not exist
// yet.
func TestCheckOutputPathThroughLinks(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges on Windows")
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "ckpt")
	if err := os.MkdirAll(filepath.Join(in, "v1", "0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(in, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(in, "v1"), filepath.Join(dir, "gen")); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{
		filepath.Join(dir, "link"),
		filepath.Join(dir, "link", "v2"),
		filepath.Join(dir, "link", "v2", "deeper"),
		filepath.Join(dir, "gen", "new"),
	} {
		if err := CheckOutputPath(in, out); err == nil {
			t.Errorf("CheckOutputPath(%s, %s) = nil, want a refusal", in, out)
		}
	}
	// The input through a link to a directory above the output.
	if err := CheckOutputPath(filepath.Join(dir, "gen", "0"), filepath.Join(in, "v1")); err == nil {
		t.Error("an output that contains the input reached through a link: not refused")
	}
	// ".." after a link is taken where the link leads, as the system takes
	// it: sub/../0/f is the input's v1/0/f, not a 0/f beside the link.
	file := filepath.Join(in, "v1", "0", "checkpoint-1.snap")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(in, "v1", "0"), filepath.Join(dir, "sub")); err != nil {
		t.Fatal(err)
	}
	raw := dir + string(filepath.Separator) + strings.Join([]string{"sub", "..", "0", "checkpoint-1.snap"}, string(filepath.Separator))
	if err := CheckOutputPath(file, raw); !errors.Is(err, ErrOutputIsInput) {
		t.Errorf("CheckOutputPath(%s, %s) = %v, want ErrOutputIsInput", file, raw, err)
	}
	if err := CheckOutputPath(in, filepath.Join(dir, "elsewhere", "out")); err != nil {
		t.Errorf("an output beside the input: %v", err)
	}
}

// A changelog+file tree's materialisation is written as a plain stream
// whatever compression is asked for: clink, and Open, read it as one.
func TestChangelogMaterialisationUncompressed(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	tw, err := CreateTree(out, TreeOptions{Generation: 1, Checkpoint: 5, Backend: BackendChangelogFile})
	if err != nil {
		t.Fatal(err)
	}
	rows := []Row{{Op: 1, Key: []byte{0, 0, 'k'}, Value: []byte("v")}}
	if _, err := tw.WriteSubtaskWith(0, CanonicalMetadata(nil, VersionMap{}), RowSlice(rows), SnapshotOptions{Compression: CompressGzip}); err != nil {
		t.Fatal(err)
	}
	if err := tw.Commit("", nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "v1", "0", "materializations", "mat-5.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if c := DetectCompression(b); c != CompressNone {
		t.Errorf("materialisation compressed with %s", c)
	}
	sp, err := Open(out, OpenOptions{RequireValid: true})
	if err != nil {
		t.Fatalf("the tree does not open: %v", err)
	}
	defer sp.Close()
	if n := sp.Files[0].Snapshot.NumRows(); n != 1 {
		t.Errorf("%d rows, want 1", n)
	}
}

// A file read whole (not memory-mapped) may not be larger than the
// machine's memory: a sparse file of any size costs nothing on disk.
func TestReadWholeBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoint-1.snap")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 2<<20); err != nil { // sparse
		t.Fatal(err)
	}
	defer func(old int64) { wholeReadCeiling = old }(wholeReadCeiling)
	wholeReadCeiling = 1 << 20
	_, err := Open(path, OpenOptions{AllowMissingSidecar: true})
	if err == nil || !strings.Contains(err.Error(), "more than this machine's 1048576 bytes of memory") {
		t.Errorf("open read whole: %v, want the memory bound", err)
	}
}

// An unchanged file copied into a tree of the same checkpoint id keeps its
// own sidecar byte for byte (keys clink may add later included); under
// another checkpoint id it gets a new one.
func TestCopySubtaskKeepsSidecar(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "checkpoint-8.snap")
	rows := []Row{{Op: 1, Key: []byte{0, 0, 'k'}, Value: []byte("v")}}
	info, err := WriteSnapshotFile(src, CanonicalMetadata(nil, VersionMap{}), rows, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	own := append(SidecarFor(8, info), "a_key_from_the_future=7\n"...)
	if err := os.WriteFile(src+SidecarSuffix, own, 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := Open(src, OpenOptions{RequireValid: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	for _, c := range []struct {
		ckpt uint64
		want []byte
	}{{8, own}, {9, SidecarFor(9, info)}} {
		out := filepath.Join(dir, fmt.Sprintf("out%d", c.ckpt))
		copyIntoTree(t, out, c.ckpt, sp.Files[0], dir)
		got, err := os.ReadFile(filepath.Join(out, "v1", "0", fmt.Sprintf("checkpoint-%d.snap.meta", c.ckpt)))
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("checkpoint %d: sidecar %q (%v), want %q", c.ckpt, got, err, c.want)
		}
	}
}

// A tree output that appears while the tree is written is kept, and the
// error names it as the caller did (a relative path stays relative).
func TestTreeAppearedNamedAsGiven(t *testing.T) {
	t.Chdir(t.TempDir())
	tw, err := CreateTree("out", TreeOptions{Generation: 1, Checkpoint: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Abort()
	if _, err := tw.WriteSubtask(0, CanonicalMetadata(nil, VersionMap{}), []Row{{Op: 1, Key: []byte{0, 0, 'k'}, Value: []byte("v")}}, ""); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir("out", 0o755); err != nil {
		t.Fatal(err)
	}
	err = tw.Commit("", nil)
	var exists *OutputExistsError
	if !errors.As(err, &exists) || !exists.Appeared || err.Error() != "output out appeared while writing" {
		t.Fatalf("Commit: %v, want output out appeared while writing", err)
	}
}

// Without replacing (SnapshotOptions.NoReplace), an output that appears
// while the run writes its own is kept, whether the payload or its sidecar
// appears, and whether the kernel's exclusive rename or the fallback does
// it; nothing of the run's is left behind.
func TestNoReplaceKeepsWhatAppeared(t *testing.T) {
	rows := []Row{{Op: 1, Key: []byte{0, 0, 'k'}, Value: []byte("v")}}
	for _, fallback := range []bool{false, true} {
		for _, appears := range []string{"", SidecarSuffix} {
			t.Run(fmt.Sprintf("fallback=%v/appears=%q", fallback, appears), func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "checkpoint-3.snap")
				intruder := []byte("someone else's file")
				hookBeforeRename = func(tmp, final string) {
					if final == path+appears {
						if err := os.WriteFile(final, intruder, 0o644); err != nil {
							t.Error(err)
						}
					}
				}
				defer func() { hookBeforeRename = nil }()
				if fallback {
					renameExclusiveHook = renameExclusiveFallback
					defer func() { renameExclusiveHook = nil }()
				}
				_, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), rows, SnapshotOptions{Sidecar: true, CheckpointID: 3, NoReplace: true})
				var exists *OutputExistsError
				if !errors.Is(err, fs.ErrExist) || !errors.As(err, &exists) || !exists.Appeared || exists.Path != path+appears || !strings.Contains(err.Error(), "output "+path+appears+" appeared while writing") {
					t.Fatalf("err %v, want the output that appeared named", err)
				}
				if b, _ := os.ReadFile(path + appears); !bytes.Equal(b, intruder) {
					t.Errorf("%s holds %q, want what appeared there", path+appears, b)
				}
				other := path
				if appears == "" {
					other += SidecarSuffix
				}
				if _, err := os.Lstat(other); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s published beside what appeared (%v)", other, err)
				}
				if left := leftovers(t, dir); len(left) > 0 {
					t.Errorf("left behind %v", left)
				}
			})
		}
	}
	// With nothing in the way the pair is published, and a directory is
	// renamed exclusively too.
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint-4.snap")
	if _, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), rows, SnapshotOptions{Sidecar: true, CheckpointID: 4, NoReplace: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := readSidecarInfo(path); err != nil {
		t.Error(err)
	}
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := renameExclusive(a, b); !errors.Is(err, fs.ErrExist) {
		t.Errorf("directory renamed onto an empty one: %v", err)
	}
}

// Runs that replace one output at once leave a payload beside its own
// sidecar, whichever finishes last: the renames of a pair are made under a
// lock of the directory.
func TestConcurrentReplaceKeepsPairs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.snap")
	for round := range 40 {
		errs := make(chan error, 4)
		for w := range 4 {
			go func() {
				rows := []Row{vtKeyed(7, "agg", []byte("alpha"), string(rune('a'+w)))}
				for range w * 3 { // payloads of different sizes
					rows = append(rows, vtKeyed(7, "agg", []byte{byte(len(rows))}, "x"))
				}
				_, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), rows, SnapshotOptions{Sidecar: true, CheckpointID: 7})
				errs <- err
			}()
		}
		for range 4 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		sp, err := Open(path, OpenOptions{RequireValid: true})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if v := sp.Files[0].Verdict; v != VerdictValid {
			t.Fatalf("round %d: the pair left is %s: %s", round, v, sp.Files[0].VerdictDetail)
		}
		sp.Close()
	}
}

// A payload whose publish was interrupted before its sidecar (a temporary
// sidecar left beside it, no sidecar) is not a finished output: validate
// says so as an error, where a file that never had a sidecar is an info.
func TestValidateInterruptedPublish(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.snap")
	if _, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), []Row{vtKeyed(7, "agg", []byte("alpha"), "1")}, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	sev := func() []Finding {
		sp, err := Open(path, OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer sp.Close()
		return Validate(sp, ValidateOptions{}).ByCheck(CheckSidecar)
	}
	if f := sev(); len(f) != 1 || f[0].Severity != SeverityInfo {
		t.Errorf("no sidecar: %v", f)
	}
	// A temporary sidecar that does not describe the payload (a run killed
	// before its renames, beside a payload it did not write) says nothing.
	left := path + ".meta.part.999999999.1.abc"
	if err := os.WriteFile(left, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if f := sev(); len(f) != 1 || f[0].Severity != SeverityInfo {
		t.Errorf("with an unrelated temporary sidecar beside it: %v", f)
	}
	payload, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(left, NewSidecar(0, payload).Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	if f := sev(); len(f) != 1 || f[0].Severity != SeverityError || !strings.Contains(f[0].Message, "out.snap.meta.part.999999999.1.abc is: a run that published this payload was interrupted") {
		t.Errorf("with its own temporary sidecar beside it: %v", f)
	}
	// Its sidecar moved aside by a --force run killed before it moved the
	// payload: the older output, whole once the sidecar is renamed back.
	if err := os.Rename(left, path+".meta.sptool-old-999999999.2.k"); err != nil {
		t.Fatal(err)
	}
	if f := sev(); len(f) != 1 || f[0].Severity != SeverityError || !strings.Contains(f[0].Message, "but out.snap.meta.sptool-old-999999999.2.k, which describes it, is: a --force run replacing this output moved its sidecar aside and was interrupted; rename it back to out.snap.meta") {
		t.Errorf("with its own sidecar moved aside: %v", f)
	}
}

// A --force run moves the pair it replaces aside before it renames the new
// payload into place, and removes it once the new sidecar is in: a run
// killed in between leaves the old pair under names that the next run
// reports, with the name to rename each back to.
func TestReplaceMovesOldPairAside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.snap")
	rows, old := writeOnePair(t, path)
	var atPayload []string // the leftover warnings when the new payload is renamed in
	var aside []string
	hookBeforeRename = func(tmp, final string) {
		if final != path {
			return
		}
		for _, w := range Leftovers(path) { // (this run's temporary files too: its own)
			if strings.Contains(w, ".sptool-old-") {
				atPayload = append(atPayload, w)
			}
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.Contains(e.Name(), ".sptool-old-") {
				aside = append(aside, e.Name())
				// The old payload aside is the old one, whole.
				if b, _ := os.ReadFile(filepath.Join(dir, e.Name())); strings.HasPrefix(e.Name(), "out.snap.sptool-old-") && int64(len(b)) != old.Size {
					t.Errorf("%s: %d bytes, want the old payload's %d", e.Name(), len(b), old.Size)
				}
			}
		}
	}
	defer func() { hookBeforeRename = nil }()
	if _, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), append(rows, Row{Op: 2, Key: []byte{0, 0, 'x'}}), SnapshotOptions{Sidecar: true, CheckpointID: 3}); err != nil {
		t.Fatal(err)
	}
	if len(aside) != 2 || len(atPayload) != 2 {
		t.Fatalf("aside %q, warnings %q; want the payload and the sidecar", aside, atPayload)
	}
	for _, w := range atPayload {
		back := path
		if strings.Contains(w, ".meta.sptool-old-") {
			back += SidecarSuffix
		}
		if !strings.Contains(w, "rename it back to "+back+" to have") {
			t.Errorf("warning %q does not name %s", w, back)
		}
	}
	// Nothing is left once the new pair is in place.
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("left: %v", ents)
	}
	if got, err := readSidecarInfo(path); err != nil || got.Size == old.Size {
		t.Errorf("the new sidecar: %+v %v", got, err)
	}
}

// A publish that fails after one of its renames (the directory's fsync)
// takes what it put in place out again and puts the old output back: never
// a payload beside a sidecar that describes another, nor a new payload or
// sidecar alone.
func TestReplaceFailsAfterRename(t *testing.T) {
	rows := []Row{{Op: 1, Key: []byte{0, 0, 'k'}, Value: []byte("v")}}
	newRows := append(rows, Row{Op: 2, Key: []byte{0, 0, 'x'}})
	for _, c := range []struct {
		name           string
		old            string // "pair", "payload", "sidecar", "none"
		failAt         string // the rename after which the fsync fails
		force          bool
		payload, sidec bool // what is left at the output's names
		bare           bool // the new payload is written without a sidecar
	}{
		{"pair/payload", "pair", "out.snap", true, true, true, false},
		{"pair/sidecar", "pair", "out.snap.meta", true, true, true, false},
		{"sidecar only/payload", "sidecar", "out.snap", true, false, true, false},
		{"payload only/sidecar", "payload", "out.snap.meta", true, true, false, false},
		{"none/payload", "none", "out.snap", true, false, false, false},
		{"none/sidecar, no --force", "none", "out.snap.meta", false, false, false, false},
		{"pair/bare payload", "pair", "out.snap", true, true, true, true},
		{"sidecar only/bare payload", "sidecar", "out.snap", true, false, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "out.snap")
			if c.old != "none" {
				if _, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), rows, SnapshotOptions{Sidecar: true, CheckpointID: 3}); err != nil {
					t.Fatal(err)
				}
				switch c.old {
				case "payload":
					os.Remove(path + SidecarSuffix)
				case "sidecar":
					os.Remove(path)
				}
			}
			before := map[string][]byte{}
			for _, p := range []string{path, path + SidecarSuffix} {
				if b, err := os.ReadFile(p); err == nil {
					before[p] = b
				}
			}
			hookAfterRename = func(final string) error {
				if filepath.Base(final) == c.failAt {
					return errors.New("fsync failed")
				}
				return nil
			}
			defer func() { hookAfterRename = nil }()
			if _, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), newRows, SnapshotOptions{Sidecar: !c.bare, CheckpointID: 3, NoReplace: !c.force}); err == nil {
				t.Fatal("no error")
			}
			for p, want := range map[string]bool{path: c.payload, path + SidecarSuffix: c.sidec} {
				b, err := os.ReadFile(p)
				if (err == nil) != want {
					t.Errorf("%s present %v, want %v", filepath.Base(p), err == nil, want)
				}
				if err == nil && !bytes.Equal(b, before[p]) {
					t.Errorf("%s is not the old one", filepath.Base(p))
				}
			}
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if e.Name() != "out.snap" && e.Name() != "out.snap.meta" {
					t.Errorf("left: %s", e.Name())
				}
			}
		})
	}
}

// A payload written without a sidecar over a pair takes the old sidecar
// out with the old payload: left in place, it would describe another
// payload. A write that must not replace anything is refused by a sidecar
// alone, and a plain atomic write (a report) leaves a ".meta" file beside
// it alone.
func TestPayloadWithoutSidecarReplacesPair(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint-3.snap")
	md := CanonicalMetadata(nil, VersionMap{})
	rows, _ := writeOnePair(t, path)
	more := append(rows, Row{Op: 2, Key: []byte{0, 0, 'x'}})
	if _, err := WriteSnapshotFile(path, md, more, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path + SidecarSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the old sidecar is still beside the new payload (stat: %v)", err)
	}
	sp, err := Open(path, OpenOptions{AllowMissingSidecar: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := sp.Files[0].Snapshot.NumRows(); n != 2 {
		t.Errorf("%d rows in place, want the new payload's 2", n)
	}
	sp.Close()
	if left := leftovers(t, dir); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}

	// A lone sidecar refuses a payload that must not replace anything.
	lone := filepath.Join(dir, "checkpoint-4.snap")
	if err := os.WriteFile(lone+SidecarSuffix, []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteSnapshotFile(lone, md, rows, SnapshotOptions{NoReplace: true}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("a payload beside a stale sidecar: err %v, want fs.ErrExist", err)
	}
	if _, err := os.Lstat(lone); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused payload was published (stat: %v)", err)
	}

	// Other files keep whatever ".meta" file is beside them.
	report := filepath.Join(dir, "report.json")
	if err := os.WriteFile(report+SidecarSuffix, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := WriteFileAtomic(report, func(w io.Writer) error { _, err := io.WriteString(w, "{}"); return err }); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile(report + SidecarSuffix); err != nil || string(b) != "mine" {
		t.Errorf("a report's neighbour: %q, %v; want it untouched", b, err)
	}
}

// A pair replaced is moved aside sidecar first, and put back payload
// first: a kill between the two renames leaves the old payload without
// its sidecar (unpublished: clink refuses it), never a sidecar without its
// payload, which a restore would take for a subtask with no state.
func TestReplaceNeverLeavesLoneSidecar(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint-3.snap")
	md := CanonicalMetadata(nil, VersionMap{})
	rows, _ := writeOnePair(t, path)
	lone := func(when string) {
		_, perr := os.Lstat(path)
		_, serr := os.Lstat(path + SidecarSuffix)
		if perr != nil && serr == nil {
			t.Errorf("%s: a sidecar without its payload", when)
		}
	}
	var moved []string
	hookAfterAside = func(name string) {
		moved = append(moved, filepath.Base(name))
		lone("after moving " + filepath.Base(name) + " aside")
	}
	defer func() { hookAfterAside = nil }()
	// Moved aside, then put back when the publish fails after the new
	// payload's rename.
	hookAfterRename = func(final string) error {
		if final == path {
			lone("after the new payload's rename")
			return errors.New("fsync failed")
		}
		return nil
	}
	defer func() { hookAfterRename = nil }()
	if _, err := WriteSnapshotFile(path, md, append(rows, Row{Op: 2, Key: []byte{0, 0, 'x'}}), SnapshotOptions{Sidecar: true, CheckpointID: 3}); err == nil {
		t.Fatal("no error")
	}
	if want := []string{"checkpoint-3.snap.meta", "checkpoint-3.snap"}; !slices.Equal(moved, want) {
		t.Errorf("moved aside %v, want %v", moved, want)
	}
	lone("after the pair was put back")
	if left := leftovers(t, dir); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// A relative path is taken from the working directory the system has: from
// one reached through a symbolic link (as $PWD names it), "../x" is x
// beside the link's target, and an output given so is compared, and
// written, there. A ".." after a link in the output's own path, which the
// writers would clean away, is refused.
func TestOutputPathFromLinkedWorkingDir(t *testing.T) {
	dir := linkTestDir(t)
	for _, d := range []string{"data/work", "home", "tree/v1/0"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "data", "work"), filepath.Join(dir, "home", "work")); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "data", "in.snap")
	if err := os.WriteFile(in, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(dir, "home", "work")) // $PWD goes through the link
	if err := CheckOutputPath(in, "../in.snap"); !errors.Is(err, ErrOutputIsInput) {
		t.Errorf("CheckOutputPath(%s, ../in.snap) = %v, want ErrOutputIsInput", in, err)
	}
	if err := CheckOutputPath("../in.snap", in); !errors.Is(err, ErrOutputIsInput) {
		t.Errorf("CheckOutputPath(../in.snap, %s) = %v, want ErrOutputIsInput", in, err)
	}
	if err := CheckOutputPath(in, "../out"); err != nil {
		t.Fatalf("an output beside the input: %v", err)
	}
	tw, err := CreateTree("../out", TreeOptions{Generation: 1, Checkpoint: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Abort()
	if got := filepath.Dir(tw.Stage()); got != filepath.Join(dir, "data") {
		t.Errorf("the tree ../out is staged in %s, want %s", got, filepath.Join(dir, "data"))
	}
	// The link's ".." in the output's own path.
	tree := filepath.Join(dir, "tree")
	if err := os.Symlink(filepath.Join(dir, "data"), filepath.Join(tree, "link")); err != nil {
		t.Fatal(err)
	}
	raw := tree + string(filepath.Separator) + strings.Join([]string{"link", "..", "out"}, string(filepath.Separator))
	if err := CheckOutputPath(tree, raw); err == nil {
		t.Errorf("CheckOutputPath(%s, %s) = nil, want a refusal: cleaned, it lies inside the input", tree, raw)
	}
}

// A changelog+file tree's handles name, by default, the output as the
// working directory is named ($PWD) when that reaches it: a job's state
// base reached through a link is named by the link. A "../" that leaves
// the link's target takes the system's path.
func TestStateBaseFromLinkedWorkingDir(t *testing.T) {
	dir := linkTestDir(t)
	if err := os.MkdirAll(filepath.Join(dir, "data", "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "data", "work"), filepath.Join(dir, "state")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(dir, "state")) // $PWD goes through the link
	for out, want := range map[string]string{
		"out":    filepath.Join(dir, "state", "out"),
		"../out": filepath.Join(dir, "data", "out"),
	} {
		tw, err := CreateTree(out, TreeOptions{Generation: 1, Checkpoint: 1, Backend: BackendChangelogFile})
		if err != nil {
			t.Fatal(err)
		}
		if tw.stateBase != want {
			t.Errorf("CreateTree(%s): state base %s, want %s", out, tw.stateBase, want)
		}
		if err := tw.Abort(); err != nil {
			t.Fatal(err)
		}
	}
}

// linkTestDir returns a temporary directory for a test of symbolic links,
// its own links resolved (as the system names it); it skips the test where
// making links needs privileges.
func linkTestDir(t *testing.T) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges on Windows")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// CreateTree refuses an existing output without Force with an error that
// is an fs.ErrExist, as the one of an output that appears before Commit is.
func TestCreateTreeExistsIsErrExist(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := CreateTree(out, TreeOptions{Generation: 1, Checkpoint: 1}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("CreateTree over an existing output: %v, want an fs.ErrExist", err)
	}
}

// CreateTree refuses what would not give a tree Open reads: an empty output
// path (the staging directory would go beside the working directory), a
// negative generation, an unknown backend; WriteSubtask refuses a negative
// subtask index, and a TreeWriter not made by CreateTree writes nothing
// (not into the working directory).
func TestCreateTreeRefusesBadArguments(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		out  string
		opts TreeOptions
	}{
		{"", TreeOptions{Generation: 1}},
		{filepath.Join(dir, "neg-gen"), TreeOptions{Generation: -1}},
		{filepath.Join(dir, "backend"), TreeOptions{Generation: 1, Backend: "rocksdb"}},
	} {
		if tw, err := CreateTree(tc.out, tc.opts); err == nil {
			tw.Abort()
			t.Errorf("CreateTree(%q, %+v): no error", tc.out, tc.opts)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	rows := []Row{{Op: 1, Key: EncodeKeyedKey([]byte("s"), []byte("k")), Value: []byte("v")}}
	tw, err := CreateTree(filepath.Join(dir, "out"), TreeOptions{Generation: 1, Checkpoint: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Abort()
	if _, err := tw.WriteSubtask(-1, nil, rows, CompressNone); err == nil {
		t.Error("WriteSubtask(-1): no error")
	}
	if _, err := tw.WriteSubtask(0, nil, rows, CompressNone); err != nil {
		t.Errorf("WriteSubtask(0): %v", err)
	}
	wd := t.TempDir()
	t.Chdir(wd)
	var zero TreeWriter
	if _, err := zero.WriteSubtask(0, nil, rows, CompressNone); err == nil {
		t.Error("WriteSubtask of a zero TreeWriter: no error")
	}
	if err := zero.Commit("job", map[string][]byte{"_jobs/job/CONFIRMED-0": []byte("x")}); err == nil {
		t.Error("Commit of a zero TreeWriter: no error")
	}
	if left, _ := os.ReadDir(wd); len(left) > 0 {
		t.Errorf("a zero TreeWriter wrote %v into the working directory", left)
	}
}

// An OutputExistsError says what is wrong; the hint a caller sets and the
// note of leftovers follow in that order.
func TestOutputExistsErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		err  OutputExistsError
		want string
	}{
		{OutputExistsError{Path: "out"}, "output out exists"},
		{OutputExistsError{Path: "out", Appeared: true}, "output out appeared while writing"},
		{OutputExistsError{Path: "out", Hint: "use --force to replace it", Note: "; beside it, x"}, "output out exists (use --force to replace it); beside it, x"},
		{OutputExistsError{Path: "out", Note: "; beside it, x"}, "output out exists; beside it, x"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.err, got, tc.want)
		}
		if !errors.Is(fmt.Errorf("wrapped: %w", &tc.err), fs.ErrExist) {
			t.Errorf("%+v is not fs.ErrExist", tc.err)
		}
	}
}

// Commit refuses, before writing anything, a tree with a subtask whose
// write failed (its marker would list a subtask with no payload), a job id
// that is no directory name and a control file outside the tree; CreateTree
// refuses a generation no marker holds.
func TestCommitRefusesUnfinishedAndEscapes(t *testing.T) {
	dir := t.TempDir()
	rows := []Row{{Op: 1, Key: EncodeKeyedKey([]byte("s"), []byte("k")), Value: []byte("v")}}
	newTree := func(name string) *TreeWriter {
		t.Helper()
		tw, err := CreateTree(filepath.Join(dir, name), TreeOptions{Generation: 1, Checkpoint: 9})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tw.Abort() })
		if _, err := tw.WriteSubtask(0, nil, rows, CompressNone); err != nil {
			t.Fatal(err)
		}
		return tw
	}

	tw := newTree("failed")
	if _, err := tw.WriteSubtask(1, nil, rows, "bogus"); err == nil {
		t.Fatal("WriteSubtask with an unknown compression: no error")
	}
	if _, err := tw.WriteSubtask(1, nil, rows, CompressNone); err == nil || !strings.Contains(err.Error(), "the first write failed") {
		t.Errorf("second write of a failed subtask: %v", err)
	}
	if err := tw.Commit("j", nil); err == nil || !strings.Contains(err.Error(), "subtask 1 not written") {
		t.Errorf("Commit after a failed write: %v", err)
	}

	for name, tc := range map[string]struct {
		job   string
		extra map[string][]byte
		want  string
	}{
		"job-path":   {"../../escaped", nil, "not a directory name"},
		"job-dotdot": {"..", nil, "not a directory name"},
		"extra-up":   {"j", map[string][]byte{"../../escaped": []byte("x")}, "not a path within the tree"},
		"extra-abs":  {"j", map[string][]byte{filepath.Join(dir, "escaped"): []byte("x")}, "not a path within the tree"},
	} {
		tw := newTree(name)
		if err := tw.Commit(tc.job, tc.extra); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Commit = %v; want %q", name, err, tc.want)
		}
	}
	left, _ := os.ReadDir(dir)
	for _, e := range left {
		if !strings.Contains(e.Name(), ".sptool-") {
			t.Errorf("written outside a staging directory: %s", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escaped")); err == nil {
		t.Error("a control file was written outside the tree")
	}

	if tw, err := CreateTree(filepath.Join(dir, "gen"), TreeOptions{Generation: MaxGeneration + 1}); err == nil {
		tw.Abort()
		t.Error("CreateTree with a generation above MaxGeneration: no error")
	}
}

// TestCopySubtaskChecksMaterializations: a changelog+file subtask copied
// unchanged has its materialisations checked against what was read at
// open, as its payload is: one rewritten since (same size, other bytes) is
// refused, not copied into the output.
func TestCopySubtaskChecksMaterializations(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(filepath.Join("..", "testdata", "independent", "changelog-file"))); err != nil {
		t.Fatal(err)
	}
	sp, err := Open(root, OpenOptions{Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	var f *File
	for _, x := range sp.Files {
		if len(x.Materializations) > 0 {
			f = x
		}
	}
	if f == nil {
		t.Fatal("test setup: no file with materialisations")
	}
	// As read: copied.
	out := filepath.Join(t.TempDir(), "out")
	tw, err := CreateTree(out, TreeOptions{Generation: 1, Checkpoint: 17, Backend: BackendChangelogFile})
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.CopySubtask(f.Subtask, f, root); err != nil {
		t.Fatalf("an unchanged subtask: %v", err)
	}
	tw.Abort()
	// One byte of a materialisation changed since: refused.
	mat := filepath.Join(root, f.Materializations[0])
	b, err := os.ReadFile(mat)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0xff
	if err := os.WriteFile(mat, b, 0o644); err != nil {
		t.Fatal(err)
	}
	tw, err = CreateTree(out, TreeOptions{Generation: 1, Checkpoint: 17, Backend: BackendChangelogFile})
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Abort()
	if err := tw.CopySubtask(f.Subtask, f, root); !errors.Is(err, ErrInputChanged) {
		t.Errorf("a materialisation changed since it was read: %v, want ErrInputChanged", err)
	}
}

// TestSetAside: a file set aside is put back, or removed; a missing one
// gives no-ops; one whose place was taken meanwhile is not put back over
// the newcomer.
func TestSetAside(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "report.json")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	aside, putBack, remove, err := SetAside(p)
	if err != nil || !strings.HasPrefix(aside, p+".sptool-old-") {
		t.Fatalf("set aside: %q, %v", aside, err)
	}
	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("still in place: %v", err)
	}
	if err := putBack(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "old" {
		t.Errorf("put back: %q, %v", b, err)
	}
	aside, _, remove, err = SetAside(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := remove(); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left: %v", entries)
	}
	aside, putBack, remove, err = SetAside(p)
	if err != nil || aside != "" || putBack() != nil || remove() != nil {
		t.Errorf("a missing file: %q, %v", aside, err)
	}
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	aside, putBack, _, err = SetAside(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := putBack(); err == nil {
		t.Error("put back over a file that took its place")
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Errorf("the newcomer was replaced: %q", b)
	}
	if _, err := os.Lstat(aside); err != nil {
		t.Errorf("the file set aside is gone: %v", err)
	}
}

// A write whose callback panics (a service that recovers panics goes on)
// leaves no temporary file, and no output; the panic goes on.
func TestWriteFileAtomicPanic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want the callback's panic", r)
			}
		}()
		WriteFileAtomic(path, func(w io.Writer) error {
			io.WriteString(w, strings.Repeat("x", 1<<20))
			panic("boom")
		})
	}()
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("left in the directory: %v, %v", ents, err)
	}
}

// CreateFileAtomic refuses a path that exists before it writes anything,
// saying so (not that the file appeared while it wrote).
func TestCreateFileAtomicExisting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	called := false
	err := CreateFileAtomic(path, func(w io.Writer) error { called = true; return nil })
	var exists *OutputExistsError
	if !errors.Is(err, fs.ErrExist) || !errors.As(err, &exists) || exists.Appeared || err.Error() != "output "+path+" exists" || called {
		t.Errorf("CreateFileAtomic over a file: %v (written: %v)", err, called)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("the file holds %q", b)
	}
}
