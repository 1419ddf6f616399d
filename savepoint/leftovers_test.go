package savepoint

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestLeftovers: the names a killed run leaves beside an output are
// reported, each with what to do, and nothing else (not other outputs'
// names); a name of a process still running is reported as that: its run
// may be writing it, or the id was reused.
func TestLeftovers(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	dead := "999999999" // above any pid_max
	self := strconv.Itoa(os.Getpid())
	live := strconv.Itoa(os.Getppid())
	files := map[string]string{
		"out":                                                  "", // the output in place: a run published it
		"out.part." + dead + ".1.abc":                          "temporary file",
		"out.meta.part." + dead + ".2.x9":                      "temporary file",
		"out.part." + self + ".3.z":                            "temporary file",                                                                                                                                 // a killed run of the same id (a container)
		"out.part." + live + ".4.a":                            "carries the id of process " + live + ", which is running: it is left alone as a name that run may be writing; if no run writes " + out + " now", // a running process's, or a reused id's
		"out.partial":                                          "",
		"out2.part." + dead + ".5.a":                           "",
		"other.part." + dead + ".6.a":                          "",
		"out.part." + dead + ".7.ABC":                          "", // not a suffix sptool writes
		"out.sptool-tmp-" + dead + ".8.q":                      "staging tree of an interrupted run (never restored from): delete it",
		"out.sptool-tmp-" + dead + ".11.m/_jobs/j/COMPLETED-7": "",
		"out.sptool-tmp-" + dead + ".11.m":                     "and holds a whole tree: the output that run was about to publish, or the one a --force run was replacing; delete it, or rename it to " + out,
		// A file output and its sidecar moved aside; a sidecar aside whose
		// payload aside is gone (the removal of the pair was interrupted).
		"out.sptool-old-" + dead + ".9.r":       "before a --force run replaced it (the run was interrupted, or failed, before removing it): delete it, or rename it back to " + out + " to have",
		"out.meta.sptool-old-" + dead + ".9.r":  "rename it back to " + out + ".meta to have",
		"out.meta.sptool-old-" + dead + ".12.s": "whose payload is gone (its removal was interrupted): delete it",
		// A tree moved aside, whole; and what is left of one whose removal
		// (its marker first) was interrupted.
		"out.sptool-old-" + dead + ".13.t/_jobs/j/COMPLETED-7": "",
		"out.sptool-old-" + dead + ".13.t":                     "rename it back to " + out + " to have that older output again",
		"out.sptool-old-" + dead + ".10.r/v1":                  "",
		"out.sptool-old-" + dead + ".10.r":                     "what is left of the tree that was at " + out + " before a --force run replaced it: no whole tree",
	}
	for name := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(slices.Collect(maps.Keys(files)), func(o string) bool { return strings.HasPrefix(o, name+"/") }) {
			continue // a directory, made with what it holds
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := Leftovers(out)
	var want []string
	for name, what := range files {
		if what != "" {
			want = append(want, name)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d warnings, want %d: %q", len(got), len(want), got)
	}
	for _, name := range want {
		i := slices.IndexFunc(got, func(w string) bool { return strings.HasPrefix(w, filepath.Join(dir, name)+" ") })
		if i < 0 || !strings.Contains(got[i], files[name]) {
			t.Errorf("%s: warnings %q, want one saying %q", name, got, files[name])
		}
	}
	if got := Leftovers(filepath.Join(dir, "missing", "out")); got != nil {
		t.Errorf("an output in a directory that does not exist: %q", got)
	}
	// With no output in place, the run was killed before it published:
	// what is aside is the only copy of the older output, whole or not.
	if err := os.Remove(out); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"out.meta.sptool-old-" + dead + ".12.s", "out.sptool-old-" + dead + ".10.r"} {
		got := Leftovers(out)
		i := slices.IndexFunc(got, func(w string) bool { return strings.HasPrefix(w, filepath.Join(dir, name)+" ") })
		if i < 0 || !strings.Contains(got[i], "rename it back to "+out) {
			t.Errorf("%s, no output in place: warnings %q, want one saying to rename it back", name, got)
		}
	}
}

// TestLeftoverSidecarOfPayload: a run killed between putting a file
// output's payload in place and its sidecar leaves the payload without a
// sidecar and the sidecar under its temporary name: the warning says the
// output is unfinished and how to complete it, not to delete the sidecar.
// A temporary sidecar that does not describe the payload is one to delete.
func TestLeftoverSidecarOfPayload(t *testing.T) {
	out, info := oneRowOutput(t)
	part := out + ".meta.part.999999999.2.k9"
	if err := os.WriteFile(part, SidecarFor(7, info), 0o644); err != nil {
		t.Fatal(err)
	}
	got := Leftovers(out)
	if len(got) != 1 || !strings.Contains(got[0], "is unfinished") || !strings.Contains(got[0], "rename "+part+" to "+out+".meta to complete it") {
		t.Errorf("warnings %q", got)
	}
	if err := os.WriteFile(part, SidecarFor(7, FileInfo{Size: info.Size, CRC32C: info.CRC32C + 1}), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Leftovers(out); len(got) != 1 || !strings.Contains(got[0], "temporary file of an interrupted run (never restored from): delete it") {
		t.Errorf("a sidecar of another payload: warnings %q", got)
	}
}

// TestLeftoverSidecarAsideOfPayload: a --force run killed between moving
// the old output's sidecar aside and its payload leaves the payload in
// place without a sidecar and the sidecar aside: the warning says to
// rename it back, not that its payload is gone. One describing another
// payload is the remains of a removal, to delete.
func TestLeftoverSidecarAsideOfPayload(t *testing.T) {
	out, info := oneRowOutput(t)
	aside := out + ".meta.sptool-old-999999999.3.q"
	if err := os.WriteFile(aside, SidecarFor(7, info), 0o644); err != nil {
		t.Fatal(err)
	}
	got := Leftovers(out)
	if len(got) != 1 || !strings.Contains(got[0], aside+" is the sidecar of "+out+", moved aside by a --force run that was interrupted before it moved the payload: rename it back to "+out+".meta") {
		t.Errorf("warnings %q", got)
	}
	if note := LeftoversNote(out); !strings.Contains(note, "rename it back") || strings.Contains(note, "delete it") {
		t.Errorf("note %q", note)
	}
	if err := os.WriteFile(aside, SidecarFor(7, FileInfo{Size: info.Size, CRC32C: info.CRC32C + 1}), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Leftovers(out); len(got) != 1 || !strings.Contains(got[0], "whose payload is gone (its removal was interrupted): delete it") {
		t.Errorf("a sidecar of another payload: warnings %q", got)
	}
}

// TestReportLeftovers: a report a --force run set aside and left is named
// as a report, of the output that run was to replace, not as an output to
// rename back.
func TestReportLeftovers(t *testing.T) {
	dir := t.TempDir()
	report := filepath.Join(dir, "r.json")
	for _, p := range []string{report, report + ".sptool-old-999999999.1.abc"} {
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w := ReportLeftovers(report)
	if len(w) != 1 || !strings.Contains(w[0], "is the report that was at "+report+" before a --force run set it aside") || strings.Contains(w[0], "older output") {
		t.Errorf("report leftovers: %q", w)
	}
	if w := Leftovers(report); len(w) != 1 || !strings.Contains(w[0], "older output") {
		t.Errorf("as an output's: %q", w)
	}
}

// TestLeftoversNoteNamesWhatToKeepFirst: of the leftovers of a --force
// file replace killed midway (its new sidecar's temporary file, the old
// sidecar moved aside), the note of a run refused without --force names
// the one that restores the output first, whatever the order of the names.
func TestLeftoversNoteNamesWhatToKeepFirst(t *testing.T) {
	out, info := oneRowOutput(t)
	part := out + ".meta.part.999999999.2.k9" // sorts before the aside
	if err := os.WriteFile(part, []byte("half a sidecar"), 0o644); err != nil {
		t.Fatal(err)
	}
	aside := out + ".meta.sptool-old-999999999.3.q"
	if err := os.WriteFile(aside, SidecarFor(7, info), 0o644); err != nil {
		t.Fatal(err)
	}
	note := LeftoversNote(out)
	if !strings.HasPrefix(note, "; beside it, "+aside+" is the sidecar of "+out) || !strings.HasSuffix(note, "(and 1 more name beginning with o.snap)") {
		t.Errorf("note %q", note)
	}
	if got := Leftovers(out); len(got) != 2 || !strings.HasPrefix(got[0], aside) || !strings.HasPrefix(got[1], part) {
		t.Errorf("warnings %q", got)
	}
}

// oneRowOutput writes a snapshot of one row, without a sidecar, at o.snap
// in a new directory: the output beside which a test lays leftovers.
func oneRowOutput(t *testing.T) (string, FileInfo) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "o.snap")
	info, err := WriteSnapshotFile(out, nil, []Row{{Op: 1, Key: []byte{1, 'a'}, Value: []byte("v")}}, SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out, info
}
