package savepoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestMissingPayload: a subtask of the tree without its payload of the
// checkpoint (a directory without it, or a subtask the marker lists that
// has no directory) fails Open naming it (ErrMissingPayload), and with
// KeepUndecodable is a
// File that says so, which validate reports as one error finding while
// the other files are checked under the layout the tree has, and which
// inspect shows and then fails on.
func TestMissingPayload(t *testing.T) {
	for _, tc := range []struct {
		name    string
		remove  string // under the tree's v1
		sub     int
		openErr string
		why     string
	}{
		{"payload", "2/checkpoint-7.snap", 2, "checkpoint 7 is missing from subtask directory 2", "subtask directory 2 holds no checkpoint 7"},
		{"directory", "2", 2, "lists subtask 2 but ", "_jobs/1001/COMPLETED-7 lists subtask 2 but v1 has no directory 2"},
		{"highest directory", "3", 3, "lists subtask 3 but ", "_jobs/1001/COMPLETED-7 lists subtask 3 but v1 has no directory 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := undecodableTree(t, nil)
			rm := filepath.Join(dir, "v1", tc.remove)
			if err := os.RemoveAll(rm); err != nil {
				t.Fatal(err)
			}
			os.Remove(rm + SidecarSuffix)
			if _, err := Open(dir, OpenOptions{}); !errors.Is(err, ErrMissingPayload) || !strings.Contains(err.Error(), tc.openErr) {
				t.Fatalf("Open without KeepUndecodable: %v, want ErrMissingPayload, %q", err, tc.openErr)
			}
			sp, err := Open(dir, OpenOptions{Columnar: true, KeepUndecodable: true})
			if err != nil {
				t.Fatal(err)
			}
			defer sp.Close()
			if len(sp.Files) != 4 {
				t.Fatalf("%d files, want 4", len(sp.Files))
			}
			f := sp.Files[tc.sub]
			if !f.Missing || f.Snapshot != nil || !errors.Is(f.Undecodable, ErrMissingPayload) || f.Rel != filepath.Join("v1", strconv.Itoa(tc.sub), "checkpoint-7.snap") {
				t.Fatalf("subtask %d: missing %v, snapshot %v, error %v, rel %s", tc.sub, f.Missing, f.Snapshot != nil, f.Undecodable, f.Rel)
			}
			for _, g := range sp.Files {
				if g != f && (g.Missing || g.Undecodable != nil) {
					t.Errorf("subtask %d: missing %v, %v", g.Subtask, g.Missing, g.Undecodable)
				}
			}
			if got := FormatGroups(sp.Groups); got != "0-3" {
				t.Errorf("groups %s, want 0-3: the missing subtask keeps its place", got)
			}
			if err := sp.UndecodableError(); !errors.Is(err, ErrMissingPayload) || !strings.Contains(err.Error(), tc.why) {
				t.Errorf("UndecodableError: %v", err)
			}
			if err := sp.CheckUnchanged(); err != nil {
				t.Errorf("CheckUnchanged: %v", err)
			}

			rep := Validate(sp, ValidateOptions{})
			var errs []Finding
			for _, fd := range rep.Findings {
				if fd.Severity == SeverityError {
					errs = append(errs, fd)
				}
				if strings.Contains(fd.Message, "does not decode") {
					t.Errorf("finding says the missing payload does not decode: %s", fd.Message)
				}
			}
			if len(errs) != 1 || errs[0].File != f.Rel || errs[0].Check != CheckSubtasks || !strings.Contains(errs[0].Message, "payload missing ("+tc.why+")") {
				t.Errorf("errors %+v, want the one missing payload", errs)
			}

			sum := Summarize(sp)
			fs := sum.Files[tc.sub]
			if fs.Variant != "missing" || fs.Undecodable != tc.why {
				t.Errorf("summary: variant %q, undecodable %q", fs.Variant, fs.Undecodable)
			}
			var b strings.Builder
			if err := sum.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{
				f.Rel + ": payload missing (" + tc.why + "): clink refuses to restore subtask " + strconv.Itoa(tc.sub) + " with empty state",
				"not read (the payload is missing): " + f.Rel,
			} {
				if !strings.Contains(b.String(), want) {
					t.Errorf("inspect text lacks %q:\n%s", want, b.String())
				}
			}
		})
	}
}

// TestMissingPayloadDetails: a missing changelog+file payload is one that
// clink's restore fails on whatever CLINK_ALLOW_MISSING_RESTORE_STATE says,
// is not counted among the payloads without a sidecar, leaves the
// materialisations of its directory unreferenced, and makes a row its
// subtask owns, held elsewhere, lost; a sidecar left where a missing
// payload would be is warned of.
func TestMissingPayloadDetails(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tree")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "testdata", "independent", "changelog-file"))); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "v1", "1", "changelog-17.snap")); err != nil {
		t.Fatal(err)
	}
	sp, err := Open(dir, OpenOptions{KeepUndecodable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if err := sp.UndecodableError(); err == nil || !strings.Contains(err.Error(), `clink's restore of subtask 1 fails ("'changelog+file' restore requested but snapshot not found")`) {
		t.Errorf("UndecodableError of a missing changelog: %v", err)
	}
	rep := Validate(sp, ValidateOptions{})
	want := map[string]bool{
		`payload missing (subtask directory 1 holds no checkpoint 17): a job restoring this tree fails on subtask 1 ("'changelog+file' restore requested but snapshot not found", section 1.7), whatever CLINK_ALLOW_MISSING_RESTORE_STATE says`: false,
		"3 changelog+file payloads carry no .meta sidecar": false,
		"v1/1/materializations/mat-15.bin is referenced by no changelog of checkpoint 17: this subtask's changelog, which would hold its handle, is missing": false,
	}
	for _, fd := range rep.Findings {
		for w := range want {
			if strings.Contains(fd.Message, w) {
				want[w] = true
			}
		}
	}
	for w, seen := range want {
		if !seen {
			t.Errorf("no finding says %q", w)
		}
	}

	// A file-backend tree: a sidecar without its payload, and a row
	// outside its subtask's range whose owner's payload is missing.
	dir = filepath.Join(t.TempDir(), "mixed")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "testdata", "independent", "mixed-p4"))); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "v1", "2", "checkpoint-17.snap")); err != nil {
		t.Fatal(err)
	}
	sp, err = Open(dir, OpenOptions{KeepUndecodable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	rep = Validate(sp, ValidateOptions{})
	var sidecar, lost bool
	for _, fd := range rep.Findings {
		sidecar = sidecar || fd.Check == CheckSidecar && fd.Severity == SeverityWarning && strings.Contains(fd.Message, "checkpoint-17.snap.meta lies here without its payload")
		lost = lost || fd.Check == CheckMisplacedRow && fd.Severity == SeverityError && strings.Contains(fd.Message, "its owner, subtask 2, holds no copy (its payload is missing)")
		if strings.Contains(fd.Message, "is not known") {
			t.Errorf("finding: %s: the missing owner holds no copy, which is known", fd.Message)
		}
	}
	if !sidecar || !lost {
		t.Errorf("sidecar warned %v, lost row reported %v; want both", sidecar, lost)
	}
}

// TestUsedAfterClose: Validate and Summarize of a closed savepoint panic
// with ErrClosed, where reading its unmapped rows would fault, and
// CheckUsable returns it; closing again does nothing.
func TestUsedAfterClose(t *testing.T) {
	sp, err := Open(filepath.Join("..", "testdata", "example"), OpenOptions{Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.CheckUsable(); err != nil {
		t.Fatalf("open: %v", err)
	}
	if err := errors.Join(sp.Close(), sp.Close()); err != nil {
		t.Fatal(err)
	}
	if err := sp.CheckUsable(); !errors.Is(err, ErrClosed) {
		t.Errorf("CheckUsable after Close: %v", err)
	}
	for name, f := range map[string]func(){
		"Validate":  func() { Validate(sp, ValidateOptions{}) },
		"Summarize": func() { Summarize(sp) },
		"Union":     func() { sp.Union() },
		"StoredSeq": func() {
			for range sp.StoredSeq() {
			}
		},
	} {
		func() {
			defer func() {
				if r := recover(); r != ErrClosed {
					t.Errorf("%s after Close: recovered %v, want ErrClosed", name, r)
				}
			}()
			f()
		}()
	}
	if err := (&Savepoint{}).CheckUsable(); err == nil || !strings.Contains(err.Error(), "holds no file") {
		t.Errorf("zero Savepoint: %v", err)
	}
}

// TestMissingPayloadEdges: a marker listing a subtask index above any
// sptool reads fails Open at once (every subtask below it would be a
// missing one); RequireValid passes over a missing payload, which
// UndecodableError names; the subtasks below the highest a marker lists
// are read though it does not list them; and a tree whose every payload
// read is missing keeps its backend.
func TestMissingPayloadEdges(t *testing.T) {
	dir := undecodableTree(t, nil)
	marker := filepath.Join(dir, "_jobs", "1001", "COMPLETED-7")
	body, err := os.ReadFile(marker)
	if err != nil {
		t.Fatal(err)
	}
	setListing := func(list string) {
		t.Helper()
		var lines []string
		for _, l := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(l, "subtasks=") {
				l = "subtasks=" + list
			}
			lines = append(lines, l)
		}
		if err := os.WriteFile(marker, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setListing("0,1,2,3,2147483647")
	if _, err := Open(dir, OpenOptions{KeepUndecodable: true}); err == nil || !strings.Contains(err.Error(), "2147483647 is above 65534, the highest subtask index sptool reads") {
		t.Errorf("a listed subtask 2147483647: %v", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "v1", "70000"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A directory the marker does not list is set aside, as clink's
	// restore leaves it; without a listing it is read, and refused.
	setListing("0,1,2,3")
	if sp, err := Open(dir, OpenOptions{KeepUndecodable: true}); err != nil {
		t.Errorf("an unlisted subtask directory 70000: %v", err)
	} else {
		sp.Close()
	}
	setListing("")
	if _, err := Open(dir, OpenOptions{KeepUndecodable: true}); err == nil || !strings.Contains(err.Error(), "subtask directory 70000: above 65534") {
		t.Errorf("a subtask directory 70000: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "v1", "70000")); err != nil {
		t.Fatal(err)
	}

	setListing("0,1,2,3")
	if err := os.Remove(filepath.Join(dir, "v1", "2", "checkpoint-7.snap")); err != nil {
		t.Fatal(err)
	}
	sp, err := Open(dir, OpenOptions{KeepUndecodable: true, RequireValid: true})
	if err != nil {
		t.Fatalf("RequireValid with a missing payload: %v", err)
	}
	if err := sp.UndecodableError(); !errors.Is(err, ErrMissingPayload) {
		t.Errorf("UndecodableError: %v", err)
	}
	sp.Close()

	// The subtasks below the highest listed that hold the checkpoint are
	// read (a restore at that layout starts them from their own files);
	// the listed one with no directory is a missing payload.
	setListing("5")
	sp, err = Open(dir, OpenOptions{KeepUndecodable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	var read []string
	for _, f := range sp.Files {
		read = append(read, fmt.Sprintf("%d:%v:%v", f.Subtask, f.Missing, f.Unlisted))
	}
	if got := strings.Join(read, " "); got != "0:false:true 1:false:true 3:false:true 5:true:false" || sp.Backend != BackendFile {
		t.Errorf("listing 5: files (subtask:missing:unlisted) %s, want 0:false:true 1:false:true 3:false:true 5:true:false; backend %q", got, sp.Backend)
	}

	// With the directories above the subtask listed, they are left out:
	// the tree read is the listed subtask's missing payload alone, and
	// keeps the backend of the files left out.
	for _, s := range []string{"0", "1", "3"} {
		if err := os.Rename(filepath.Join(dir, "v1", s), filepath.Join(dir, "v1", "1"+s)); err != nil {
			t.Fatal(err)
		}
	}
	sp2, err := Open(dir, OpenOptions{KeepUndecodable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp2.Close()
	if len(sp2.Files) != 1 || !sp2.Files[0].Missing || sp2.Files[0].Subtask != 5 || sp2.Backend != BackendFile {
		t.Errorf("every payload missing: %d files, backend %q", len(sp2.Files), sp2.Backend)
	}
}

// A subtask directory the marker lists that is there but is none (a
// symbolic link that cannot be followed, one to a file, a regular file)
// is named with what it is, not as missing alone.
func TestListedSubtaskNotADirectory(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(p string) error
		want string
	}{
		{"link loop", func(p string) error { return os.Symlink("../v1/2", p) }, "(v1/2 is a symbolic link that cannot be followed: too many levels of symbolic links)"},
		{"dangling link", func(p string) error { return os.Symlink("nowhere", p) }, "(v1/2 is a symbolic link that cannot be followed: no such file or directory)"},
		{"link to a file", func(p string) error { return os.Symlink("../v1/0/checkpoint-7.snap", p) }, "(v1/2 is a symbolic link to a regular file, not a directory)"},
		{"file", func(p string) error { return os.WriteFile(p, []byte("x"), 0o644) }, "(v1/2 is a regular file, not a directory)"},
	} {
		dir := filepath.Join(t.TempDir(), "t")
		if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "testdata", "example"))); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "v1", "2")
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
		if err := c.make(p); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir, OpenOptions{})
		if err == nil || !strings.Contains(err.Error(), "lists subtask 2 but "+filepath.Join(dir, "v1")+" has no directory 2 "+c.want) {
			t.Errorf("%s: %v, want it to say %q", c.name, err, c.want)
		}
	}
}
