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

// sidecarLeftover returns the temporary sidecar that an interrupted run
// publishing the payload at path left beside it ("" when there is none):
// the run put the payload in place and was killed before its sidecar. Only
// a complete sidecar that describes the payload there (size and CRC-32C)
// counts, of a process no longer running: a run killed before its renames,
// or still running, leaves one beside a payload it did not write.
func sidecarLeftover(path string, size int64, crc uint32) string {
	dir, base := filepath.Split(filepath.Clean(path))
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), base)
		if !ok {
			continue
		}
		m := leftoverName.FindStringSubmatch(rest)
		if m == nil || m[1] != SidecarSuffix || processRunning(m[3]) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		b, err := ReadRegularFile(p, maxControlFileSize)
		if err != nil {
			continue
		}
		if sc, err := ParseSidecar(b); err == nil && sc.PayloadBytes == uint64(size) && sc.PayloadCRC32C == crc {
			return p
		}
	}
	return ""
}

// Leftovers returns a warning for each entry beside the output path out
// that a run writing out left behind when it was killed, saying what it is
// and what to do with it; entries of a process still running (the process
// id in the name) are left out, since that run may be writing them. clink
// never restores from these names, but they take space, and an output
// moved aside by a --force run that was killed before the new one took
// its place may be the only copy of that output. A directory that cannot
// be listed gives no warnings.
func Leftovers(out string) []string {
	dir, base := filepath.Split(filepath.Clean(out))
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var warns []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), base)
		if !ok {
			continue
		}
		m := leftoverName.FindStringSubmatch(rest)
		if m == nil || processRunning(m[3]) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		switch m[2] {
		case "old":
			was := filepath.Join(dir, base)
			if strings.HasPrefix(rest, SidecarSuffix+".") {
				was += SidecarSuffix
			}
			warns = append(warns, fmt.Sprintf("%s holds what was at %s before a --force run that was interrupted: delete it, or rename it back to %s to have that older output again", p, was, was))
		case "tmp":
			warns = append(warns, fmt.Sprintf("%s is the staging tree of an interrupted run (never restored from): delete it", p))
		default:
			warns = append(warns, fmt.Sprintf("%s is a temporary file of an interrupted run (never restored from): delete it", p))
		}
	}
	return warns
}
