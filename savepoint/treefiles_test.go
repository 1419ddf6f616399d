package savepoint

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// smallTree writes a tree of one subtask file (checkpoint 7, generation 1,
// sidecar and COMPLETED marker) and returns its root.
func smallTree(t *testing.T) string {
	t.Helper()
	return oneRowTree(t, filepath.Join(t.TempDir(), "tree"), BackendFile)
}

// oneRowTree writes at out a tree of one subtask holding one row
// (generation 1, checkpoint 7, job "job1") kept by backend.
func oneRowTree(t *testing.T, out string, backend Backend) string {
	t.Helper()
	oneRowWriter(t, out, backend)
	return out
}

// oneRowWriter is oneRowTree, returning the TreeWriter that committed it.
func oneRowWriter(t *testing.T, out string, backend Backend) *TreeWriter {
	t.Helper()
	tw, err := CreateTree(out, TreeOptions{Generation: 1, Checkpoint: 7, Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tw.WriteSubtask(0, CanonicalMetadata(nil, VersionMap{}), []Row{{Op: 1, Key: []byte("k"), Value: []byte("v")}}, CompressNone); err != nil {
		t.Fatal(err)
	}
	if err := tw.Commit("job1", nil); err != nil {
		t.Fatal(err)
	}
	return tw
}

// A TreeWriter used after its Abort (a worker finishing once its caller
// gave up) refuses, writing nothing: a WriteSubtask made the staging
// directory again, which nothing removed, and a Commit published a tree
// whose marker listed the subtask the Abort had removed. A subtask index
// past the highest sptool reads is refused too.
func TestTreeWriterUsedAfterAbort(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "tree")
	tw, err := CreateTree(out, TreeOptions{Generation: 1, Checkpoint: 7})
	if err != nil {
		t.Fatal(err)
	}
	md, rows := CanonicalMetadata(nil, VersionMap{}), []Row{{Op: 1, Key: []byte("k"), Value: []byte("v")}}
	if _, err := tw.WriteSubtask(MaxParallelism, md, rows, CompressNone); err == nil || !strings.Contains(err.Error(), "subtask 65535: above 65534, the highest subtask index sptool reads") {
		t.Errorf("WriteSubtask(%d): %v", MaxParallelism, err)
	}
	if _, err := tw.WriteSubtask(0, md, rows, CompressNone); err != nil {
		t.Fatal(err)
	}
	if err := tw.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.WriteSubtask(1, md, rows, CompressNone); !errors.Is(err, errAborted) {
		t.Errorf("WriteSubtask after Abort: %v", err)
	}
	if err := tw.Commit("job1", nil); !errors.Is(err, errAborted) {
		t.Errorf("Commit after Abort: %v", err)
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("beside the tree: %v, %v", ents, err)
	}
}

// A TreeWriter used after its Commit refuses, writing nothing: a second
// Commit or a WriteSubtask made a staging directory again, which nothing
// removed, and the second Commit named the published tree as one that
// appeared while it wrote.
func TestTreeWriterUsedAfterCommit(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "tree")
	tw := oneRowWriter(t, out, BackendFile)
	if err := tw.Commit("job1", nil); !errors.Is(err, errCommitted) {
		t.Errorf("second Commit: %v", err)
	}
	if _, err := tw.WriteSubtask(1, CanonicalMetadata(nil, VersionMap{}), nil, CompressNone); !errors.Is(err, errCommitted) {
		t.Errorf("WriteSubtask after Commit: %v", err)
	}
	if err := tw.Abort(); err != nil {
		t.Errorf("Abort after Commit: %v", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "tree" {
		t.Errorf("beside the tree: %v", ents)
	}
	sp, err := Open(out, OpenOptions{RequireValid: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if len(sp.Files) != 1 {
		t.Errorf("the published tree holds %d files", len(sp.Files))
	}
}

// A COMPLETED marker larger than any real one (they are under 200 bytes)
// is an error naming it, not read whole into memory; a sidecar so large
// is not read either, and makes its payload's verdict corrupt, as one
// clink cannot read does: the rest of the tree is read.
func TestControlFilesTooLarge(t *testing.T) {
	for _, which := range []string{"sidecar", "marker"} {
		root := smallTree(t)
		payload := filepath.Join(root, "v1", "0", "checkpoint-7.snap")
		path := payload + ".meta"
		if which == "marker" {
			path = filepath.Join(root, "_jobs", "job1", "COMPLETED-7")
		}
		big := []byte(strings.Repeat("x=1\n", 1<<20)) // 4 MiB
		if err := os.WriteFile(path, big, 0o644); err != nil {
			t.Fatal(err)
		}
		opens := []string{root}
		if which == "sidecar" {
			opens = append(opens, payload)
		}
		for _, p := range opens {
			if which == "sidecar" {
				checkSidecarRefused(t, p, path, "more than the 1048576 bytes allowed (real ones are under 200 bytes, and sptool reads none larger; clink reads past the keys it does not know, and may restore the payload")
				sp, err := Open(p, OpenOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if msg := Validate(sp, ValidateOptions{}).ByCheck(CheckSidecar)[0].Message; strings.Contains(msg, "clink's restore refuses") {
					t.Errorf("validate says clink refuses what it may restore: %s", msg)
				}
				sp.Close()
				if _, err := Open(p, OpenOptions{RequireValid: true}); err == nil || strings.Contains(err.Error(), "clink would refuse") || !strings.Contains(err.Error(), "sptool does not read the sidecar") {
					t.Errorf("the refusal says clink refuses what it may restore: %v", err)
				}
				continue
			}
			sp, err := Open(p, OpenOptions{})
			if err == nil {
				sp.Close()
			}
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "more than the 1048576 bytes") {
				t.Errorf("Open %s with a 4 MiB %s: %v, want an error naming %s", p, which, err, path)
			}
		}
	}
}

// checkSidecarRefused checks that the open of p, whose file's sidecar at
// path is not one clink could read, gives the file a corrupt verdict whose
// detail names path and says want (validate lists it as an error), and
// that an open requiring valid sidecars refuses it, saying the same.
func checkSidecarRefused(t *testing.T, p, path, want string) {
	t.Helper()
	sp, err := Open(p, OpenOptions{})
	if err != nil {
		t.Errorf("Open %s: %v, want the sidecar %s reported as corrupt", p, err, path)
		return
	}
	defer sp.Close()
	f := sp.Files[0]
	if f.Verdict != VerdictCorrupt || !strings.Contains(f.VerdictDetail, path) || !strings.Contains(f.VerdictDetail, want) {
		t.Errorf("Open %s: verdict %s (%s), want corrupt naming %s: %s", p, f.Verdict, f.VerdictDetail, path, want)
	}
	_, err = Open(p, OpenOptions{RequireValid: true})
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) {
		t.Errorf("Open %s requiring valid sidecars: %v, want an error naming %s: %s", p, err, path, want)
	}
}

// changelogTree writes a changelog+file tree of one subtask (checkpoint 7,
// generation 1) and returns its root, its changelog payload and its
// materialisation.
func changelogTree(t *testing.T) (root, payload, mat string) {
	t.Helper()
	root = oneRowTree(t, filepath.Join(t.TempDir(), "cl"), BackendChangelogFile)
	return root, filepath.Join(root, "v1", "0", "changelog-7.snap"), filepath.Join(root, "v1", "0", "materializations", "mat-7.bin")
}

// setHandle rewrites a changelog payload to hold only the given
// materialisation handle.
func setHandle(t *testing.T, payload, handle string) {
	t.Helper()
	if err := WriteFileAtomic(payload, func(w io.Writer) error { return EncodeChangelogHandle(w, handle) }); err != nil {
		t.Fatal(err)
	}
}

// A materialisation handle is read only within the tree: a handle whose
// ".." components, or a materialisation whose symbolic link, lead out of
// it is an error naming the handle, not a read of the file outside.
func TestMaterializationOutsideTree(t *testing.T) {
	root, payload, mat := changelogTree(t)
	outside := filepath.Join(filepath.Dir(root), "outside.snap")
	b, err := os.ReadFile(mat)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(outside, b, 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(what, handle, want string) {
		t.Helper()
		for _, p := range []string{root, payload} {
			sp, err := Open(p, OpenOptions{})
			if err == nil {
				sp.Close()
			}
			if err == nil || !strings.Contains(err.Error(), payload) || !strings.Contains(err.Error(), handle) || !strings.Contains(err.Error(), want) {
				t.Errorf("%s, Open %s: %v, want an error naming %s and handle %q: %s", what, p, err, payload, handle, want)
			}
		}
	}
	for _, h := range []string{"v1/0/../../../outside.snap", "../outside.snap", root + "/v1/0/../../../outside.snap"} {
		setHandle(t, payload, h)
		check("handle "+h, h, "outside")
	}

	// A materialisation that is a symbolic link out of the tree; one to a
	// file within the tree is read.
	setHandle(t, payload, root+"/v1/0/materializations/mat-7.bin")
	real := filepath.Join(filepath.Dir(mat), "real.bin")
	if err := os.Rename(mat, real); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, mat); err != nil {
		t.Skipf("symlink: %v", err)
	}
	check("symlink out of the tree", "mat-7.bin", "outside")
	// A rule of sptool's own, which validate does not lay at clink's door:
	// clink opens the handle's path as written.
	if _, err := Open(root, OpenOptions{}); !errors.Is(err, ErrOutsideTree) {
		t.Errorf("symlink out of the tree: %v, want ErrOutsideTree", err)
	}
	if sp, err := Open(root, OpenOptions{KeepUndecodable: true}); err != nil {
		t.Errorf("symlink out of the tree, KeepUndecodable: %v", err)
	} else {
		var msgs []string
		for _, f := range Validate(sp, ValidateOptions{}).Findings {
			msgs = append(msgs, f.Message)
		}
		sp.Close()
		if all := strings.Join(msgs, "\n"); !strings.Contains(all, "sptool does not read this payload") || strings.Contains(all, "clink's reader refuses") {
			t.Errorf("validate of a materialisation symlinked out of the tree: %q", msgs)
		}
	}
	os.Remove(mat)
	if err := os.Symlink("real.bin", mat); err != nil {
		t.Fatal(err)
	}
	// An absolute link, and the tree named by a relative path.
	abs := filepath.Join(t.TempDir(), "abs")
	if err := os.Symlink(real, abs); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Dir(root))
	for _, target := range []string{"real.bin", real, abs} {
		os.Remove(mat)
		if err := os.Symlink(target, mat); err != nil {
			t.Fatal(err)
		}
		sp, err := Open(filepath.Base(root), OpenOptions{})
		if err != nil {
			t.Fatalf("materialisation symlinked to %s within the tree: %v", target, err)
		}
		if n := sp.Files[0].Snapshot.NumRows(); n != 1 || !slices.Equal(sp.Files[0].Materializations, []string{filepath.Join("v1", "0", "materializations", "mat-7.bin")}) {
			t.Errorf("materialisation symlinked to %s within the tree: %d rows, materialisations %q", target, n, sp.Files[0].Materializations)
		}
		sp.Close()
	}
}

// A subtask directory that is a symbolic link is followed (as clink does),
// and the materialisation in it read.
func TestMaterializationInSymlinkedSubtask(t *testing.T) {
	root, _, _ := changelogTree(t)
	sub := filepath.Join(root, "v1", "0")
	elsewhere := filepath.Join(t.TempDir(), "0")
	if err := os.Rename(sub, elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, sub); err != nil {
		t.Skipf("symlink: %v", err)
	}
	sp, err := Open(root, OpenOptions{})
	if err != nil {
		t.Fatalf("symlinked subtask directory: %v", err)
	}
	if n := sp.Files[0].Snapshot.NumRows(); n != 1 {
		t.Errorf("symlinked subtask directory: %d rows, want 1", n)
	}
	sp.Close()
}

// A materialisation larger than the machine's memory (decompressCeiling,
// lowered here) is an error naming it, not read whole.
func TestMaterializationTooLarge(t *testing.T) {
	defer func(c int64) { decompressCeiling = c }(decompressCeiling)
	root, payload, mat := changelogTree(t)
	st, err := os.Stat(mat)
	if err != nil {
		t.Fatal(err)
	}
	decompressCeiling = st.Size() - 1
	_, err = Open(root, OpenOptions{})
	if err == nil || !strings.Contains(err.Error(), payload) || !strings.Contains(err.Error(), "mat-7.bin is") || !strings.Contains(err.Error(), "bytes allowed") {
		t.Errorf("materialisation over the limit: %v", err)
	}
	decompressCeiling = st.Size()
	sp, err := Open(root, OpenOptions{})
	if err != nil {
		t.Fatalf("materialisation at the limit: %v", err)
	}
	sp.Close()
}

// replacingWriter writes a one-row tree of checkpoint 7 at out, then
// returns a writer of checkpoint 8 that replaces it with force, its one
// subtask written and not yet committed.
func replacingWriter(t *testing.T, out string) *TreeWriter {
	t.Helper()
	oneRowTree(t, out, BackendFile)
	tw, err := CreateTree(out, TreeOptions{Generation: 1, Checkpoint: 8, Backend: BackendFile, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tw.WriteSubtask(0, CanonicalMetadata(nil, VersionMap{}), []Row{{Op: 2, Key: []byte("k"), Value: []byte("v")}}, CompressNone); err != nil {
		t.Fatal(err)
	}
	return tw
}

// A tree replaced with force is never absent: on Linux the new tree and
// the old swap places in one rename, and the old one is then moved aside
// and removed.
func TestReplaceTreeNeverAbsent(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("elsewhere the old tree is moved aside before the new one is renamed into place")
	}
	out := filepath.Join(t.TempDir(), "out")
	tw := replacingWriter(t, out)
	aside := ""
	hookAfterAside = func(name string) {
		aside = name
		if _, err := os.Stat(filepath.Join(out, "_jobs", "job1", "COMPLETED-8")); err != nil {
			t.Errorf("the new tree is not in place once the old one is aside: %v", err)
		}
		if _, err := os.Stat(filepath.Join(name, "_jobs", "job1", "COMPLETED-7")); err != nil {
			t.Errorf("the old tree is not whole at %s: %v", name, err)
		}
	}
	defer func() { hookAfterAside = nil }()
	if err := tw.Commit("job1", nil); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(aside, out+".sptool-old-") {
		t.Fatalf("the old tree was moved aside to %q", aside)
	}
	if _, err := os.Stat(aside); !os.IsNotExist(err) {
		t.Errorf("the old tree is left at %s: %v", aside, err)
	}
	if left, _ := filepath.Glob(out + ".sptool-*"); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// A tree replaced with force whose directory's fsync fails once it is in
// place keeps the tree it replaced, whole, and the error names where: the
// rename may not survive a crash. The fsync fails here because the parent
// directory is moved away just after the swap.
func TestUnsyncedReplaceNamesOldTree(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("elsewhere the old tree is moved aside before the new one is renamed into place")
	}
	if !syncEnabled {
		t.Skip("CLINK_STATE_FSYNC turns the directory's fsync off: it cannot fail")
	}
	base := t.TempDir()
	parent := filepath.Join(base, "p")
	out := filepath.Join(parent, "out")
	tw := replacingWriter(t, out)
	moved := filepath.Join(base, "q")
	aside := ""
	hookAfterAside = func(name string) {
		aside = name
		if err := os.Rename(parent, moved); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { hookAfterAside = nil }()
	err := tw.Commit("job1", nil)
	var pub *PublishedError
	if !errors.As(err, &pub) || !strings.Contains(err.Error(), "the output it replaced is kept, whole, at "+aside+" ") {
		t.Fatalf("Commit: %v; want a PublishedError naming %s", err, aside)
	}
	if _, err := os.Stat(filepath.Join(moved, filepath.Base(aside), "_jobs", "job1", "COMPLETED-7")); err != nil {
		t.Errorf("the replaced tree is not whole: %v", err)
	}
	if _, err := os.Stat(filepath.Join(moved, "out", "_jobs", "job1", "COMPLETED-8")); err != nil {
		t.Errorf("the new tree is not in place: %v", err)
	}
}

// What a --force run moved aside is looked at again before it is
// removed: an output swapped for a link to another tree between the check
// and the rename is left, and that tree untouched.
func TestRemoveReplacedLeavesLink(t *testing.T) {
	dir := t.TempDir()
	victim := oneRowTree(t, filepath.Join(dir, "victim"), BackendFile)
	aside := filepath.Join(dir, "out.sptool-old-1.2.x")
	if err := os.Symlink(victim, aside); err != nil {
		t.Fatal(err)
	}
	tw := &TreeWriter{final: filepath.Join(dir, "out")}
	err := tw.removeReplaced(aside)
	var pub *PublishedError
	if !errors.As(err, &pub) || !strings.Contains(err.Error(), "moved aside to "+aside+", could not be removed") {
		t.Errorf("removeReplaced of a link: %v, want a PublishedError naming %s", err, aside)
	}
	if _, err := os.Stat(filepath.Join(victim, "_jobs", "job1", "COMPLETED-7")); err != nil {
		t.Errorf("the linked tree lost its marker: %v", err)
	}
	if _, err := os.Lstat(aside); err != nil {
		t.Errorf("the link is gone: %v", err)
	}
	if err := removeTree(aside); err == nil {
		t.Error("removeTree went through a link")
	}
}

// A tree swapped for a link to another tree after removeTree looked at it
// is not removed, and the tree linked to keeps its marker and sidecars:
// removeTree works inside the directory it looked at, or not at all. A
// tree left alone is removed whole.
func TestRemoveTreeSwappedForLink(t *testing.T) {
	dir := t.TempDir()
	victim := oneRowTree(t, filepath.Join(dir, "victim"), BackendFile)
	old := oneRowTree(t, filepath.Join(dir, "old"), BackendFile)
	hookRemoveTree = func(d string) {
		if err := os.Rename(d, d+".moved"); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, d); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { hookRemoveTree = nil }()
	if err := removeTree(old); err == nil {
		t.Error("removeTree of a tree swapped for a link: no error")
	}
	for _, p := range []string{filepath.Join("_jobs", "job1", "COMPLETED-7"), filepath.Join("v1", "0", "checkpoint-7.snap.meta")} {
		if _, err := os.Stat(filepath.Join(victim, p)); err != nil {
			t.Errorf("the linked tree lost %s: %v", p, err)
		}
	}
	hookRemoveTree = nil
	if err := removeTree(old + ".moved"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(old + ".moved"); !os.IsNotExist(err) {
		t.Errorf("the tree is still there: %v", err)
	}
}

// A payload that does not decode says what its sidecar says of it: a file
// cut short since it was published.
func TestUndecodablePayloadNamesSidecarVerdict(t *testing.T) {
	root := smallTree(t)
	payload := filepath.Join(root, "v1", "0", "checkpoint-7.snap")
	st, err := os.Stat(payload)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(payload, st.Size()/2); err != nil {
		t.Fatal(err)
	}
	_, err = Open(root, OpenOptions{})
	if err == nil || !strings.Contains(err.Error(), "(sidecar verdict incomplete: "+payload+" is "+strconv.FormatInt(st.Size()/2, 10)+" bytes, sidecar declares "+strconv.FormatInt(st.Size(), 10)+")") {
		t.Errorf("Open of a tree with a payload cut short: %v", err)
	}
}

// A materialisation rewritten after it was read is an input that changed
// while it was being read, as a payload is: CheckUnchanged says so, naming
// it (a run then writes nothing); one whose change time alone moved, its
// bytes the same, is not.
func TestMaterializationChangedAfterRead(t *testing.T) {
	root, payload, mat := changelogTree(t)
	for _, p := range []string{root, payload} {
		sp, err := Open(p, OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := sp.CheckUnchanged(); err != nil {
			t.Fatalf("%s, unchanged: %v", p, err)
		}
		if err := os.Chmod(mat, 0o600); err != nil { // the change time alone
			t.Fatal(err)
		}
		if err := sp.CheckUnchanged(); err != nil {
			t.Errorf("%s, a materialisation chmod-ed: %v", p, err)
		}
		b, err := os.ReadFile(mat)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)-9] ^= 0xff
		if err := os.WriteFile(mat, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := sp.CheckUnchanged(); !errors.Is(err, ErrInputChanged) || !strings.Contains(err.Error(), "mat-7.bin") {
			t.Errorf("%s, a materialisation rewritten: %v, want ErrInputChanged naming it", p, err)
		}
		sp.Close()
		b[len(b)-9] ^= 0xff
		if err := os.WriteFile(mat, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A materialisation compressed as a whole, and a handle that names a
// changelog payload, are refused saying so, not as Arrow damage or as a
// handle that cannot be resolved.
func TestMaterializationOddFiles(t *testing.T) {
	root, payload, mat := changelogTree(t)
	b, err := os.ReadFile(mat)
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(b)
	zw.Close()
	if err := os.WriteFile(mat, z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(root, OpenOptions{}); err == nil || !strings.Contains(err.Error(), "is gzip-compressed as a whole: clink reads a materialisation as a bare Arrow IPC stream") {
		t.Errorf("gzip materialisation: %v", err)
	}
	if err := os.WriteFile(mat, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// The changelog's handle names a changelog (itself).
	setHandle(t, payload, "v1/0/changelog-7.snap")
	if _, err := Open(root, OpenOptions{}); err == nil || !strings.Contains(err.Error(), `materialisation "v1/0/changelog-7.snap" is itself a changelog stream`) {
		t.Errorf("handle naming a changelog: %v", err)
	}
}

// TestUnparseableMarkers: a COMPLETED marker that does not parse stops the
// open only where it decides what is read: the checkpoint read's own, or a
// newer checkpoint's whose files the generation holds (unless the
// checkpoint is chosen); that of another checkpoint, which a restore of the
// one read does not look at, is left unread, with a note and a warning.
func TestUnparseableMarkers(t *testing.T) {
	bad := []byte("job=old\ncheckpoint=2\n") // no generation= line
	write := func(t *testing.T, root, rel string, b []byte) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Of an older checkpoint, of another job: read, noted, warned of.
	root := smallTree(t)
	write(t, root, "_jobs/old/COMPLETED-2", bad)
	sp, err := Open(root, OpenOptions{Columnar: true})
	if err != nil {
		t.Fatalf("a bad marker of another checkpoint: %v", err)
	}
	if sp.Checkpoint != 7 || len(sp.UnreadMarkers) != 1 || !strings.HasPrefix(sp.UnreadMarkers[0], "_jobs/old/COMPLETED-2: ") {
		t.Errorf("checkpoint %d, unread markers %q", sp.Checkpoint, sp.UnreadMarkers)
	}
	if w := strings.Join(sp.ReadWarnings(), "\n"); !strings.Contains(w, "marker _jobs/old/COMPLETED-2: ") {
		t.Errorf("read warnings: %s", w)
	}
	rep := Validate(sp, ValidateOptions{})
	if rep.Errors() != 0 || !slices.ContainsFunc(rep.Findings, func(f Finding) bool {
		return f.Check == CheckCompleted && f.Severity == SeverityWarning && strings.Contains(f.Message, "_jobs/old/COMPLETED-2")
	}) {
		t.Errorf("validate: %+v", rep.Findings)
	}
	sp.Close()

	// The checkpoint read's own: an error that says why it matters.
	root = smallTree(t)
	write(t, root, "_jobs/job1/COMPLETED-7", []byte("job=job1\ncheckpoint=7\ngeneration=1\nsubtasks=0\nhello\n"))
	if _, err := Open(root, OpenOptions{Columnar: true}); err == nil || !strings.Contains(err.Error(), "it marks the checkpoint read") {
		t.Errorf("the checkpoint's own marker: %v", err)
	}

	// A newer checkpoint's, with a file in the generation: an error, unless
	// the checkpoint is chosen.
	root = smallTree(t)
	write(t, root, "v1/0/checkpoint-9.snap", nil)
	write(t, root, "_jobs/job1/COMPLETED-9", bad)
	if _, err := Open(root, OpenOptions{Columnar: true}); err == nil || !strings.Contains(err.Error(), "it marks checkpoint 9, newer than 7") {
		t.Errorf("a newer checkpoint's marker: %v", err)
	}
	sp, err = Open(root, OpenOptions{Columnar: true, Checkpoint: 7})
	if err != nil || len(sp.UnreadMarkers) != 1 {
		t.Errorf("checkpoint 7 chosen: %v", err)
	}
	if sp != nil {
		sp.Close()
	}

	// An older checkpoint's, with files, when no marker parses: it would
	// have chosen its checkpoint over the newest in every directory.
	root = smallTree(t)
	write(t, root, "v1/0/checkpoint-5.snap", nil)
	if err := os.Remove(filepath.Join(root, "_jobs", "job1", "COMPLETED-7")); err != nil {
		t.Fatal(err)
	}
	write(t, root, "_jobs/job1/COMPLETED-5", bad)
	if _, err := Open(root, OpenOptions{Columnar: true}); err == nil || !strings.Contains(err.Error(), "it marks checkpoint 5, which would be read if it parsed") {
		t.Errorf("an older checkpoint's marker, none parsing: %v", err)
	}
	// ... but when one of the checkpoint's markers is of the generation,
	// whatever the others (of another job, another generation), it was
	// chosen by it: the older one is left unread.
	write(t, root, "_jobs/job0/COMPLETED-7", []byte("job=job0\ncheckpoint=7\ngeneration=2\nsubtasks=0\n"))
	write(t, root, "_jobs/job1/COMPLETED-7", []byte("job=job1\ncheckpoint=7\ngeneration=1\nsubtasks=0\n"))
	sp, err = Open(root, OpenOptions{Columnar: true})
	if err != nil || sp.Checkpoint != 7 || len(sp.UnreadMarkers) != 1 {
		t.Errorf("a marker of v1 among others: %v", err)
	}
	if sp != nil {
		sp.Close()
	}
}

// TestMarkerThroughLinkedJobDir: a job directory under _jobs that is a
// symbolic link to one is read, as clink's look for the marker follows it.
func TestMarkerThroughLinkedJobDir(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links")
	}
	root := smallTree(t)
	elsewhere := filepath.Join(t.TempDir(), "job1")
	if err := os.Rename(filepath.Join(root, "_jobs", "job1"), elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(root, "_jobs", "job1")); err != nil {
		t.Fatal(err)
	}
	sp, err := Open(root, OpenOptions{Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if sp.Completed == nil || sp.Job != "job1" {
		t.Errorf("the marker through the link was not read: %+v, job %q", sp.Completed, sp.Job)
	}
}

// stagedTree creates a tree writer for out (generation 1, checkpoint 7)
// and writes three subtasks of one row each into its staging directory.
func stagedTree(t *testing.T, out string) *TreeWriter {
	t.Helper()
	tw, err := CreateTree(out, TreeOptions{Generation: 1, Checkpoint: 7})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := tw.WriteSubtask(i, CanonicalMetadata(nil, VersionMap{}), []Row{{Op: 1, Key: []byte{byte(i)}, Value: []byte("v")}}, CompressNone); err != nil {
			t.Fatal(err)
		}
	}
	return tw
}
