package savepoint

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// leftoverName matches, after an output's base name, the temporary names
// of a run writing it: a payload or sidecar being written
// (.part.<suffix>, .meta.part.<suffix>), a tree being staged
// (.sptool-tmp-<suffix>) and an output, or a file output's sidecar, that a
// --force run moved aside (.sptool-old-<suffix>, .meta.sptool-old-<suffix>),
// the suffix being tempSuffix's.
var leftoverName = regexp.MustCompile(`^(?:(\.meta)?\.part\.|(?:\.meta)?\.sptool-(tmp|old)-)([0-9]+)\.[0-9]+\.[0-9a-z]+$`)

// isStagingTree reports whether root is named as the staging directory of
// a run writing a tree (CreateTree): an output's name followed by
// .sptool-tmp-<suffix> (leftoverName).
func isStagingTree(root string) bool {
	base := filepath.Base(filepath.Clean(root))
	i := strings.LastIndex(base, ".sptool-tmp-")
	return i > 0 && leftoverName.MatchString(base[i:])
}

// eachLeftover calls fn with each entry beside the output path out named
// as out followed by a temporary name of a run writing it (leftoverName)
// of a process no longer running: the entry's path, its name after out's,
// and the match. A directory that cannot be listed has none.
func eachLeftover(out string, fn func(p, rest string, m []string)) {
	eachTemporary(out, func(p, rest string, m []string, running bool) {
		if !running {
			fn(p, rest, m)
		}
	})
}

// eachTemporary is eachLeftover for every entry with a temporary name,
// saying whether the process whose id it carries is running (never this
// one: see processRunning).
func eachTemporary(out string, fn func(p, rest string, m []string, running bool)) {
	dir, base := filepath.Split(filepath.Clean(out))
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), base)
		if !ok {
			continue
		}
		if m := leftoverName.FindStringSubmatch(rest); m != nil {
			fn(filepath.Join(dir, e.Name()), rest, m, processRunning(m[3]))
		}
	}
}

// sidecarLeftover returns the sidecar of the payload at path that an
// interrupted run left beside it under a temporary name ("" when there is
// none), and whether a --force run had moved it aside: a run that put the
// payload in place and was killed before its sidecar left the new sidecar
// (.meta.part.<suffix>); a --force run killed between moving the old
// sidecar and the old payload aside left the old payload in place and its
// sidecar aside (.meta.sptool-old-<suffix>). Only a complete sidecar that
// describes the payload there (size and CRC-32C) counts, of a process no
// longer running: a run killed before its renames, or still running,
// leaves one beside a payload it did not write.
func sidecarLeftover(path string, size int64, crc uint32) (string, bool) {
	found, aside := "", false
	eachLeftover(path, func(p, rest string, m []string) {
		isAside := m[2] == "old" && strings.HasPrefix(rest, SidecarSuffix+".")
		if found != "" || m[1] != SidecarSuffix && !isAside {
			return
		}
		if sidecarDescribes(p, size, crc) {
			found, aside = p, isAside
		}
	})
	return found, aside
}

// Leftovers returns a warning for each entry beside the output path out
// that a run writing out left behind when it was killed, saying what it is
// and what to do with it. An entry whose name carries the id of a process
// still running may be that run's, being written: its warning says so,
// and what it is if no run writes out now (the id reused by another
// process, or the name written from another host or container). clink
// never restores from these names, but they take space, and an output
// moved aside by a --force run that was killed before the new one took
// its place may be the only copy of that output. A directory that cannot
// be listed gives no warnings.
func Leftovers(out string) []string { return leftoversNow(out, false) }

// ReportLeftovers is Leftovers for a --report file: what a --force run set
// aside there (SetAside) is a report, of the output that run was to
// replace, not an output to put back.
func ReportLeftovers(report string) []string { return leftoversNow(report, true) }

// leftoversNow is judgedLeftovers with what is at out now.
func leftoversNow(out string, report bool) []string {
	_, err := os.Lstat(filepath.Clean(out))
	return judgedLeftovers(out, err == nil, report)
}

// LeftoversAfterPublish is Leftovers for a run that has just put its own
// output in place at out, where an output was (existed) or not before it:
// what a leftover was to the output before the run is judged by that, and
// no leftover is paired with the run's new payload (a sidecar moved aside
// from an older payload describes that payload, not the new one).
func LeftoversAfterPublish(out string, existed bool) []string {
	return judgedLeftovers(out, existed, false)
}

// judgedLeftovers is Leftovers, published saying whether an output was at out
// when the leftovers were left (before the run asking, for one that
// published since), report whether out is a --report file. Its warnings
// come by rank (what may be the only copy of an output first: see
// rankKeep), in the order of their names within one.
func judgedLeftovers(out string, published, report bool) []string {
	var ranked [leftoverRanks][]string
	add := func(r int, w string) { ranked[r] = append(ranked[r], w) }
	eachTemporary(out, func(p, rest string, m []string, running bool) {
		if running {
			what := "a temporary file"
			switch m[2] {
			case "old":
				what = "what a --force run moved aside (an earlier output, which may be its only copy)"
			case "tmp":
				what = "a staging tree"
			}
			add(rankRunning, fmt.Sprintf("%s carries the id of process %s, which is running: it is left alone as a name that run may be writing; if no run writes %s now (the id taken by another process, or the name written from another host or container), it is %s of an interrupted run: look at it before deleting it", p, m[3], filepath.Clean(out), what))
			return
		}
		switch m[2] {
		case "old":
			if report {
				add(rankKeep, fmt.Sprintf("%s is the report that was at %s before a --force run set it aside (the run was interrupted before it removed it, or put it back): it describes the output that was there before that run; delete it, or, if that run never put its own output in place, rename it back to %s", p, filepath.Clean(out), filepath.Clean(out)))
				break
			}
			add(rankKeep, asideLeftover(out, p, rest, published))
		case "tmp":
			if hasCompletedMarker(p) {
				// Killed after writing its marker: the new tree before it
				// was published, or, once a --force run on Linux swapped
				// the trees, the one it replaced.
				add(rankWholeTree, fmt.Sprintf("%s is the staging tree of an interrupted run (never restored from), and holds a whole tree: the output that run was about to publish, or the one a --force run was replacing; delete it, or rename it to %s if it is the output you want", p, filepath.Clean(out)))
				break
			}
			add(rankDelete, fmt.Sprintf("%s is the staging tree of an interrupted run (never restored from): delete it", p))
		default:
			if m[1] == SidecarSuffix && completesPayload(out, p) {
				add(rankKeep, fmt.Sprintf("%s is the sidecar of %s, which a run killed between the two put in place without it: %s is unfinished (clink refuses a payload without its sidecar); rename %s to %s to complete it, or write the output again with --force", p, filepath.Clean(out), filepath.Clean(out), p, filepath.Clean(out)+SidecarSuffix))
				break
			}
			add(rankDelete, fmt.Sprintf("%s is a temporary file of an interrupted run (never restored from): delete it", p))
		}
	})
	var warns []string
	for _, ws := range ranked {
		warns = append(warns, ws...)
	}
	return warns
}

// The ranks of judgedLeftovers' warnings, in the order they come: what may
// be the only copy of an output (what a --force run moved aside, a sidecar
// that completes the payload in place), a whole tree left staged, a name a
// running process may be writing, a temporary file to delete.
const (
	rankKeep = iota
	rankWholeTree
	rankRunning
	rankDelete
	leftoverRanks
)

// completesPayload reports whether the temporary sidecar at p describes
// the payload at out (size and CRC-32C), which has no sidecar of its own:
// a run that put the payload in place and was killed before its sidecar.
func completesPayload(out, p string) bool {
	if _, err := os.Lstat(out + SidecarSuffix); err == nil {
		return false
	}
	f, err := os.Open(out)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	crc, err := checksumFile(f, st.Size())
	return err == nil && sidecarDescribes(p, st.Size(), crc)
}

// sidecarDescribes reports whether the file at p is a sidecar of a payload
// of size bytes and CRC-32C crc.
func sidecarDescribes(p string, size int64, crc uint32) bool {
	b, err := ReadRegularFile(p, maxControlFileSize)
	if err != nil {
		return false
	}
	sc, err := ParseSidecar(b)
	return err == nil && sc.PayloadBytes == uint64(size) && sc.PayloadCRC32C == crc
}

// LeftoversNote is what an error refusing to replace the output out
// without --force adds about the leftovers beside it (see Leftovers): ""
// when there are none, else the first (what may be the only copy of an
// output comes first) and how many more. A run killed
// while it published out may have left out unfinished (a payload whose
// sidecar is still under its temporary name), which the note names.
func LeftoversNote(out string) string {
	ws := Leftovers(out)
	switch len(ws) {
	case 0:
		return ""
	case 1:
		return "; beside it, " + ws[0]
	}
	return fmt.Sprintf("; beside it, %s (and %d more %s beginning with %s)", ws[0], len(ws)-1, plural(len(ws)-1, "name", "names"), filepath.Base(filepath.Clean(out)))
}

// asideLeftover is the warning for p, what a --force run moved aside from
// the output out (rest: p's name after out's), and what to do with it. The
// run removes what it moved aside once its own output is in place: a tree
// its COMPLETED marker first, a file output its payload before its
// sidecar. So, with an output in place, a tree aside without a marker,
// or a sidecar aside without its payload, is the remains of a removal and
// no older output to rename back, unless the sidecar describes the payload
// at out, which has none (the run was killed between moving the two
// aside). Without one, the run was killed before it published: what is
// aside is the only copy of the older output.
func asideLeftover(out, p, rest string, published bool) string {
	was := filepath.Clean(out)
	suffix := rest[strings.Index(rest, ".sptool-old-"):]
	if strings.HasPrefix(rest, SidecarSuffix+".") {
		if published && completesPayload(out, p) {
			// Killed between moving the sidecar aside and the payload:
			// the payload at out is the older output's, and this its
			// sidecar.
			return fmt.Sprintf("%s is the sidecar of %s, moved aside by a --force run that was interrupted before it moved the payload: rename it back to %s to have that output whole again (clink refuses a payload without its sidecar), or write the output again with --force", p, was, was+SidecarSuffix)
		}
		if _, err := os.Lstat(was + suffix); err != nil && published {
			return fmt.Sprintf("%s is the sidecar of what was at %s before a --force run replaced it, whose payload is gone (its removal was interrupted): delete it", p, was)
		}
		was += SidecarSuffix
	} else if published && isDir(p) && !hasCompletedMarker(p) {
		return fmt.Sprintf("%s holds what is left of the tree that was at %s before a --force run replaced it: no whole tree, its COMPLETED marker went first when its removal was interrupted; delete it", p, was)
	}
	return fmt.Sprintf("%s holds what was at %s before a --force run replaced it (the run was interrupted, or failed, before removing it): delete it, or rename it back to %s to have that older output again", p, was, was)
}

// hasCompletedMarker reports whether the tree at dir holds a COMPLETED
// marker (COMPLETED-<id> under _jobs/<job>/).
func hasCompletedMarker(dir string) bool {
	jobs, _ := os.ReadDir(filepath.Join(dir, "_jobs"))
	for _, j := range jobs {
		names, _ := os.ReadDir(filepath.Join(dir, "_jobs", j.Name()))
		for _, n := range names {
			if id, ok := strings.CutPrefix(n.Name(), "COMPLETED-"); ok && id != "" && strings.Trim(id, "0123456789") == "" {
				return true
			}
		}
	}
	return false
}
