package savepoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// undecodableTree copies the bundled example tree and puts each bad file
// given (testdata/bad/<name>) in place of the payload of its subtask.
func undecodableTree(t *testing.T, bad map[int]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tree")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "testdata", "example"))); err != nil {
		t.Fatal(err)
	}
	for sub, name := range bad {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "bad", name))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "v1", strconv.Itoa(sub), "checkpoint-7.snap")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestKeepUndecodable(t *testing.T) {
	dir := undecodableTree(t, map[int]string{1: "nullable.snap", 3: "truncated-eos.snap"})
	for _, columnar := range []bool{false, true} {
		// Without the option the first file that does not decode fails Open.
		if _, err := Open(dir, OpenOptions{Columnar: columnar}); err == nil || !strings.Contains(err.Error(), "v1/1/checkpoint-7.snap") || !strings.Contains(err.Error(), "nullable") {
			t.Fatalf("columnar %v: Open without KeepUndecodable: %v, want the nullable file's error", columnar, err)
		}
		sp, err := Open(dir, OpenOptions{Columnar: columnar, KeepUndecodable: true})
		if err != nil {
			t.Fatalf("columnar %v: %v", columnar, err)
		}
		if len(sp.Files) != 4 {
			t.Fatalf("columnar %v: %d files, want 4", columnar, len(sp.Files))
		}
		for _, f := range sp.Files {
			bad := f.Subtask == 1 || f.Subtask == 3
			if (f.Undecodable != nil) != bad || (f.Snapshot == nil) != bad {
				t.Errorf("columnar %v: subtask %d: Undecodable %v, Snapshot %v", columnar, f.Subtask, f.Undecodable, f.Snapshot != nil)
			}
			if f.Size == 0 || f.CRC32C == 0 || f.Verdict == "" {
				t.Errorf("columnar %v: subtask %d: size %d, crc %d, verdict %q: want them recorded", columnar, f.Subtask, f.Size, f.CRC32C, f.Verdict)
			}
		}
		err = sp.UndecodableError()
		if err == nil || !strings.Contains(err.Error(), "nullable") || !strings.Contains(err.Error(), "and file v1/3/checkpoint-7.snap, which does not decode either") {
			t.Errorf("columnar %v: UndecodableError: %v", columnar, err)
		}
		rep := Validate(sp, ValidateOptions{})
		var format, sidecar []string
		for _, f := range rep.Findings {
			switch {
			case f.Check == CheckFormat && f.Severity == SeverityError:
				format = append(format, f.File+": "+f.Message)
			case f.Check == CheckSidecar && f.Severity == SeverityError:
				sidecar = append(sidecar, f.File)
			}
		}
		if len(format) != 2 || !strings.HasPrefix(format[0], "v1/1/checkpoint-7.snap: clink's reader refuses this payload, and its restore of subtask 1 with it: schema mismatch: column \"op_id\" is nullable") ||
			!strings.HasPrefix(format[1], "v1/3/checkpoint-7.snap: ") || !strings.Contains(format[1], "end-of-stream marker") || strings.Contains(format[1], dir) {
			t.Errorf("columnar %v: format findings %q", columnar, format)
		}
		// The bad files' sidecars describe the files they replaced.
		if strings.Join(sidecar, ",") != "v1/1/checkpoint-7.snap,v1/3/checkpoint-7.snap" {
			t.Errorf("columnar %v: sidecar findings on %q", columnar, sidecar)
		}
		if rep.Errors() != 4 {
			t.Errorf("columnar %v: %d errors, want 4:\n%v", columnar, rep.Errors(), rep.Findings)
		}
		// A merge of operator rows stated without the unread copies says
		// so.
		ops := rep.ByCheck(CheckOperatorDivergence)
		if len(ops) == 0 {
			t.Errorf("columnar %v: no operator-divergence finding", columnar)
		}
		for _, f := range ops {
			if !strings.HasSuffix(f.Message, "; not counted: the copies of subtasks 1,3, whose payloads do not decode") {
				t.Errorf("columnar %v: %s", columnar, f.Message)
			}
		}
		// The union leaves their rows out, and says so.
		_, st := sp.UnionWithStats()
		if len(st.Warnings) < 2 || !strings.HasPrefix(st.Warnings[0], "v1/1/checkpoint-7.snap does not decode (schema mismatch") || !strings.HasSuffix(st.Warnings[1], "none of its rows is in the union") {
			t.Errorf("columnar %v: union warnings %q", columnar, st.Warnings)
		}
		if err := sp.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKeepUndecodableLimits: a single file, a stopped context and the
// files that decode are as without the option.
func TestKeepUndecodableLimits(t *testing.T) {
	if _, err := Open(filepath.Join("..", "testdata", "bad", "nullable.snap"), OpenOptions{KeepUndecodable: true}); err == nil {
		t.Error("a single file that does not decode was opened")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := undecodableTree(t, map[int]string{2: "truncated-body.snap"})
	if _, err := OpenContext(ctx, dir, OpenOptions{KeepUndecodable: true}); err == nil || !strings.Contains(err.Error(), context.Canceled.Error()) {
		t.Errorf("stopped: %v", err)
	}
	sp, err := Open(filepath.Join("..", "testdata", "example"), OpenOptions{KeepUndecodable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if err := sp.UndecodableError(); err != nil {
		t.Errorf("UndecodableError of a tree that decodes: %v", err)
	}
	if n := Validate(sp, ValidateOptions{}).Errors(); n != 0 {
		t.Errorf("%d errors in the example tree", n)
	}
}

// TestUndecodableInTwoGroups: in a tree of two chain groups, a payload
// that does not decode, wherever it is, leaves the groups inferred as
// they are, and the checks that would look for its rows say they could
// not (warnings and infos) instead of reporting rows lost: the errors are
// the payload's own.
func TestUndecodableInTwoGroups(t *testing.T) {
	src := filepath.Join("..", "testdata", "independent", "two-groups")
	bad, err := os.ReadFile(filepath.Join("..", "testdata", "bad", "nullable.snap"))
	if err != nil {
		t.Fatal(err)
	}
	for sub := range 5 {
		dir := filepath.Join(t.TempDir(), "tree")
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		rel := filepath.Join("v1", strconv.Itoa(sub), "checkpoint-17.snap")
		if err := os.WriteFile(filepath.Join(dir, rel), bad, 0o644); err != nil {
			t.Fatal(err)
		}
		sp, err := Open(dir, OpenOptions{Columnar: true, KeepUndecodable: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := FormatGroups(sp.Groups); got != "0-2,3-4" {
			t.Errorf("subtask %d undecodable: groups %s, want 0-2,3-4", sub, got)
		}
		rep := Validate(sp, ValidateOptions{})
		var errs []string
		notChecked := 0
		for _, f := range rep.Findings {
			if f.Severity == SeverityError {
				errs = append(errs, f.Check+" "+f.File)
			}
			if strings.Contains(f.Message, "not checked") {
				notChecked++
			}
		}
		want := []string{CheckFormat + " " + rel, CheckSidecar + " " + rel}
		if strings.Join(errs, ";") != strings.Join(want, ";") {
			t.Errorf("subtask %d undecodable: errors %q, want %q", sub, errs, want)
		}
		if notChecked == 0 {
			t.Errorf("subtask %d undecodable: no finding says what was not checked", sub)
		}
		// At parallelism 3 the second group's new subtasks 0 and 1 read
		// v1/3 and v1/4: a row of one whose new owner reads the other, which
		// does not decode, is not reported lost. (v1/3 holds rows its
		// new subtask 1 owns; v1/4 none that v1/3's owns.)
		if sub == 4 {
			warned := false
			for _, f := range Validate(sp, ValidateOptions{Parallelism: 3}).Findings {
				if f.Check == CheckParallelism && f.Severity == SeverityWarning && strings.HasPrefix(f.Message, "not checked at parallelism 3: key group") && strings.Contains(f.Message, fmt.Sprintf("reads %s, which does not decode", rel)) {
					warned = true
				}
			}
			if !warned {
				t.Errorf("subtask %d undecodable: no parallelism finding says it could not check", sub)
			}
		}
		sp.Close()
	}
}

// TestUndecodableChangelogMaterialization: the materialisation beside a
// changelog payload that does not decode is not reported as left over:
// its handle may be the payload's, which no one could read.
func TestUndecodableChangelogMaterialization(t *testing.T) {
	k := func(s string) Row { return vtKeyed(7, "agg", []byte(s), "v") }
	dir := vtChangelogTree(t, [][]Row{{k("a")}, {k("b")}})
	mats, err := filepath.Glob(filepath.Join(dir, "v1", "0", "materializations", "mat-*"))
	if err != nil || len(mats) != 1 {
		t.Fatalf("materialisations of subtask 0: %v %v", mats, err)
	}
	payload := filepath.Join(dir, "v1", "0", "changelog-7.snap")
	b, err := os.ReadFile(payload)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(payload, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := Open(dir, OpenOptions{KeepUndecodable: true})
	if err != nil {
		t.Fatal(err)
	}
	rep := Validate(sp, ValidateOptions{})
	if len(rep.ByCheck(CheckFormat)) != 1 || len(rep.ByCheck(CheckUnreferencedMaterialization)) != 0 {
		t.Errorf("want the payload's format error and no left-over materialisation:\n%s", vtDump(rep))
	}
}

// TestReadWarnings: a tree read otherwise than clink's restore reads it
// says so: a newer checkpoint marked complete without files, a subtask
// directory or payload named other than clink opens it.
func TestReadWarnings(t *testing.T) {
	dir := undecodableTree(t, nil)
	if w := mustOpen(t, dir).ReadWarnings(); len(w) != 0 {
		t.Fatalf("the example tree: %q", w)
	}
	marker, err := os.ReadFile(filepath.Join(dir, "_jobs", "1001", "COMPLETED-7"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "_jobs", "1001", "COMPLETED-9"), []byte(strings.Replace(string(marker), "checkpoint=7", "checkpoint=9", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "v1", "1"), filepath.Join(dir, "v1", "01")); err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{"", ".meta"} {
		if err := os.Rename(filepath.Join(dir, "v1", "2", "checkpoint-7.snap"+ext), filepath.Join(dir, "v1", "2", "checkpoint-07.snap"+ext)); err != nil {
			t.Fatal(err)
		}
	}
	sp := mustOpen(t, dir)
	got := sp.ReadWarnings()
	want := []string{
		"_jobs/1001/COMPLETED-9 marks a newer checkpoint complete, but v1 holds none of its files: checkpoint 7 was read instead",
		"directory v1/01 was read as subtask 1, but clink reads subtask 1 from v1/1",
		"v1/2/checkpoint-07.snap was read as checkpoint 7, but clink opens checkpoint-7.snap",
	}
	if len(got) != len(want) {
		t.Fatalf("warnings %q, want %d", got, len(want))
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("warning %d: %q, want %q", i, got[i], want[i])
		}
	}
}

func mustOpen(t *testing.T, path string) *Savepoint {
	t.Helper()
	sp, err := Open(path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	return sp
}

// TestChangelogTreeStraySidecar: a sidecar beside a changelog+file payload
// (a backend that writes none) is verified: one that agrees is fine, one
// that disagrees is a warning; the payloads without one are counted in the
// tree's note.
func TestChangelogTreeStraySidecar(t *testing.T) {
	k := func(s string) Row { return vtKeyed(7, "agg", []byte(s), "v") }
	dir := vtChangelogTree(t, [][]Row{{k("a")}, {k("b")}, {k("c")}})
	for i, body := range []string{"", "clink_checkpoint_meta=1\ncheckpoint_id=7\npayload_bytes=1\npayload_crc32c=1\n"} {
		p := filepath.Join(dir, "v1", strconv.Itoa(i+1), "changelog-7.snap")
		if body == "" {
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			body = string(SidecarFor(7, FileInfo{Size: st.Size(), CRC32C: CRC32C(b)}))
		}
		if err := os.WriteFile(p+SidecarSuffix, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A sidecar that cannot be read (a link to itself) is a verdict too.
	loop := filepath.Join(dir, "v1", "0", "changelog-7.snap"+SidecarSuffix)
	if err := os.Symlink(filepath.Base(loop), loop); err != nil {
		t.Fatal(err)
	}
	sp, err := Open(dir, OpenOptions{RequireValid: true})
	if err != nil {
		t.Fatalf("a stray sidecar fails the open: %v", err)
	}
	if f := sp.Files[0]; f.Verdict != VerdictCorrupt || !strings.Contains(f.VerdictDetail, "unreadable sidecar") {
		t.Errorf("a sidecar linked to itself: verdict %s (%s)", f.Verdict, f.VerdictDetail)
	}
	sp.Close()
	if err := os.Remove(loop); err != nil {
		t.Fatal(err)
	}
	sp, err = Open(dir, OpenOptions{RequireValid: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if v := []Verdict{sp.Files[0].Verdict, sp.Files[1].Verdict, sp.Files[2].Verdict}; v[0] != "" || v[1] != VerdictValid || v[2] == VerdictValid || v[2] == "" {
		t.Errorf("verdicts %q, want none, valid and a failed one", v)
	}
	rep := Validate(sp, ValidateOptions{})
	var got []string
	for _, f := range rep.ByCheck(CheckSidecar) {
		got = append(got, fmt.Sprintf("%s %s %s", f.Severity, f.File, f.Message))
	}
	if len(got) != 2 || !strings.HasPrefix(got[1], "warning v1/2/changelog-7.snap a .meta sidecar lies beside this changelog payload and disagrees with it") || !strings.Contains(got[0], "1 changelog+file payload carries no .meta sidecar") {
		t.Errorf("sidecar findings %q", got)
	}
}

// Every file of testdata/bad fails to open with an error of ErrBadFormat,
// memory-mapped or read whole, and so does a tree holding one (its
// File.Undecodable, kept with KeepUndecodable); a file that is not there,
// or a directory, is no ErrBadFormat: a caller tells the input's bytes
// from a failure to read them.
func TestBadFormatError(t *testing.T) {
	dir := filepath.Join("..", "testdata", "bad")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		for _, columnar := range []bool{false, true} {
			sp, err := Open(filepath.Join(dir, e.Name()), OpenOptions{Columnar: columnar})
			if err == nil {
				sp.Close()
				t.Errorf("%s: opened", e.Name())
				continue
			}
			if !errors.Is(err, ErrBadFormat) {
				t.Errorf("%s (columnar %v): %v is not ErrBadFormat", e.Name(), columnar, err)
			}
		}
	}
	for _, path := range []string{filepath.Join(t.TempDir(), "none.snap"), t.TempDir()} {
		if _, err := Open(path, OpenOptions{Columnar: true}); err == nil || errors.Is(err, ErrBadFormat) {
			t.Errorf("%s: %v", path, err)
		}
	}
	tree := smallTree(t)
	bad, err := os.ReadFile(filepath.Join(dir, "nullable.snap"))
	if err != nil {
		t.Fatal(err)
	}
	payload := filepath.Join(tree, "v1", "0", "checkpoint-7.snap")
	if err := os.WriteFile(payload, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := Open(tree, OpenOptions{Columnar: true, KeepUndecodable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if err := sp.UndecodableError(); !errors.Is(err, ErrBadFormat) {
		t.Errorf("tree: %v is not ErrBadFormat", err)
	}
	if _, err := Open(tree, OpenOptions{Columnar: true}); !errors.Is(err, ErrBadFormat) {
		t.Errorf("tree without KeepUndecodable: %v is not ErrBadFormat", err)
	}
}

// A single file clink's reader refuses is kept with KeepUndecodableFile,
// as a tree's is, and Validate reports it as a format error; a file that
// does not start as a stream still fails Open.
func TestKeepUndecodableFile(t *testing.T) {
	ents, err := os.ReadDir(filepath.Join("..", "testdata", "bad"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		path := filepath.Join("..", "testdata", "bad", e.Name())
		opts := OpenOptions{Columnar: true, KeepUndecodable: true, KeepUndecodableFile: true}
		switch e.Name() {
		case "not-arrow.snap", "truncated-2-bytes.snap":
			if _, err := Open(path, opts); err == nil {
				t.Errorf("%s: opened, want it unreadable", e.Name())
			}
			continue
		}
		if _, err := Open(path, OpenOptions{Columnar: true, KeepUndecodable: true}); err == nil {
			t.Errorf("%s: opened without KeepUndecodableFile", e.Name())
		}
		sp, err := Open(path, opts)
		if err != nil {
			t.Errorf("%s: %v", e.Name(), err)
			continue
		}
		if f := sp.Files[0]; f.Undecodable == nil || f.Snapshot != nil {
			t.Errorf("%s: Undecodable %v, Snapshot %v", e.Name(), f.Undecodable, f.Snapshot != nil)
		}
		for _, par := range []int{0, 4} {
			// (With a parallelism, its check says what it could not check.)
			rep := Validate(sp, ValidateOptions{Parallelism: par})
			if got := rep.ByCheck(CheckFormat); (par == 0 && rep.Errors() != 1) || len(got) != 1 || got[0].Severity != SeverityError || !strings.Contains(got[0].Message, "its rows are not read") {
				t.Errorf("%s: parallelism %d: %d errors, format findings %+v", e.Name(), par, rep.Errors(), got)
			}
		}
		sp.Close()
	}
}
