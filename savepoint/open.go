package savepoint

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/sptool/sptool/internal/testhook"
)

// OpenOptions control Open.
type OpenOptions struct {
	// Checkpoint selects the checkpoint id of a tree; 0 picks the newest one
	// with a COMPLETED marker, else the newest present in every subtask
	// directory, unless CheckpointSet asks for checkpoint 0 itself (the id
	// of clink's offline writer).
	Checkpoint    uint64
	CheckpointSet bool
	// Groups gives the chain groups of a tree explicitly (in subtask order,
	// covering every subtask directory). Nil infers them (see InferGroups).
	Groups []Group
	// RequireValid refuses a payload whose sidecar verdict is not valid, as
	// clink's restore does (inspect and validate report verdicts instead),
	// with a *VerdictError. As clink, it accepts a single file without a
	// sidecar (files outside a tree have none) and the payloads of a
	// changelog+file tree, whose backend writes no sidecars.
	RequireValid bool
	// AllowMissingSidecar accepts a payload without a sidecar even with
	// RequireValid, as clink does with CLINK_ALLOW_UNVERIFIED_CHECKPOINTS.
	AllowMissingSidecar bool
	// AllowCorrupt accepts, even with RequireValid, a payload whose
	// sidecar disagrees with it or cannot be read (its verdict stays on
	// the File): for a look at a damaged file, never for a restore. A
	// payload without a sidecar is still AllowMissingSidecar's to accept.
	AllowCorrupt bool
	// Columnar memory-maps uncompressed payloads and leaves Snapshot.Rows nil
	// for canonical streams: rows are read through Snapshot.Batches straight
	// from the mapping, so memory does not grow with the input. Call
	// Savepoint.Close when done. A payload compressed as a whole (.gz,
	// .zst, ...) is decompressed into an unnamed temporary file in TempDir,
	// which is mapped in turn, so memory does not grow with it either; it
	// is refused (as without Columnar) when it would decompress to more
	// than 1024 times its size, at least 64 MiB. A changelog payload of
	// 64K rows or more (its materialisations' and its log's) is replayed
	// through temporary files in TempDir into one holding its state, mapped
	// as Snapshot.Batches, and its materialisation files of 8 MiB or more
	// are mapped, not read whole: memory holds none of its rows (about 1
	// byte a row for its row_kind, 4 a key its log erases). A smaller
	// changelog is replayed into Snapshot.Rows, in memory, its mapped
	// materialisation files kept mapped until Close. Each mapped payload
	// holds a file descriptor and a mapping until Close (a tree of N
	// payloads, N of each), and a changelog replayed in a file one or two
	// more of each.
	Columnar bool
	// TempDir is where Columnar decompresses a payload compressed as a
	// whole ("" for os.TempDir()): the file takes the payload's size
	// decompressed while the savepoint is open, and is gone, as it has no
	// name, once it is closed or the process ends.
	TempDir string
	// Probe, with Columnar, has the pass at open ask a KeyProbe of the
	// keys of mapped canonical files, once the slot holds one, and keep
	// the rows it lets through (Snapshot.KeyHits).
	Probe *ProbeSlot
	// KeepUndecodable, for a tree, records a payload that is read whole
	// but does not decode (bytes clink's reader refuses: a malformed or
	// truncated stream, a nullable or mistyped column, a format version or
	// version map it rejects, offsets out of bounds) on its File
	// (File.Undecodable, with a nil Snapshot) and goes on with the other
	// files, where Open would fail naming it. Validate reports such a file
	// as an error finding beside the other files' findings, and Summarize
	// lists it; Union and its kin leave its rows out with a warning; the
	// readers that need every file's rows (transform.Run, diff.Compare,
	// export.Write) refuse such a savepoint: Savepoint.UndecodableError
	// says whether one is. So is a payload path that is no regular file
	// (a directory), and a subtask whose payload of the checkpoint is not
	// in the tree (File.Missing), where Open would fail naming them. A
	// file that cannot be read (its bytes, its sidecar, a changing file, a
	// stopped context) and a single-file input still fail Open.
	KeepUndecodable bool
	// KeepGaps, with KeepUndecodable, keeps each subtask below the
	// highest read that has no directory (or one without the checkpoint
	// that its marker leaves out) as a missing File too, where it would
	// be left out (Savepoint.MissingSubtasks): the tree is then read at
	// the layout its indices imply, subtasks 0 up to the highest, at which
	// its chain groups are inferred or given (--groups 0-3 for a tree of
	// 0,1,3) and its rows placed. Validate reports each as a missing
	// payload.
	KeepGaps bool
	// KeepUndecodableFile, with KeepUndecodable, keeps a single-file
	// input whose bytes are an Arrow IPC stream (or a CLMB frame, or a
	// payload compressed as a whole) that clink's reader refuses, as a
	// tree's such file is kept (File.Undecodable, a nil Snapshot): a
	// nullable or mistyped column, a format version or version map it
	// rejects, a stream cut short. A file that cannot be read, or whose
	// bytes do not start as a stream, still fails Open.
	KeepUndecodableFile bool
	// TolerateBadMarkers reads a tree whose COMPLETED marker, one that
	// could choose or describe the checkpoint read, does not parse or
	// cannot be read, as if that marker were not there, and records it
	// (Savepoint.IgnoredMarkers; validate warns), where Open would fail
	// naming it: clink's restore needs no marker, and uses the directory
	// listing when it finds no usable subtasks= line (format 5.3).
	TolerateBadMarkers bool
	// NewestPresent, with KeepUndecodable, reads the newest checkpoint
	// present in any subtask directory of a tree when none was asked for
	// and none has a COMPLETED marker or a file in every directory, where
	// Open would fail asking for one (a note names the checkpoint read);
	// the directories without it are missing payloads.
	NewestPresent bool

	ctx context.Context // OpenContext's; nil: never done
}

// OpenContext is Open, stopped when ctx is done: it then returns an error
// for which errors.Is(err, ctx.Err()) holds, having closed what it opened.
// It stops between files and between the blocks of a file's bytes it
// reads (read whole, or checked through the map with Columnar), and while
// a file compressed as a whole is decompressed with Columnar (read whole,
// it is decompressed to its end first).
func OpenContext(ctx context.Context, path string, opts OpenOptions) (*Savepoint, error) {
	opts.ctx = ctx
	return Open(path, opts)
}

// readOptions are the ReadOptions of a file Open reads.
func (o OpenOptions) readOptions(root string, resolve func(string) ([]byte, error)) ReadOptions {
	return ReadOptions{Resolve: resolve, Columnar: o.Columnar, tempDir: o.TempDir, probe: o.Probe, ctx: o.ctx,
		identify: func(h string) string {
			id, _ := handleIdentity(root, h)
			return id
		}}
}

// ctxErr is ctx's error, nil for a nil ctx.
func ctxErr(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	return ctx.Err()
}

// Open reads a savepoint: a snapshot file, a checkpoint directory
// (v<gen>/<subtask>/..., _jobs/...) or a generation directory v<gen>. Every
// file of the selected checkpoint is read, verified against its sidecar and
// decoded. An unreadable or undecodable file is an error naming it; integrity
// verdicts other than valid are recorded on the File, and returned only
// with OpenOptions.RequireValid.
func Open(path string, opts OpenOptions) (*Savepoint, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("open savepoint: %w", notStdin(path, err))
	}
	if !st.IsDir() {
		sp, err := openFile(path, opts)
		if err != nil {
			return nil, err
		}
		if err := sp.checkOpened(opts); err != nil {
			sp.Close()
			return nil, err
		}
		return sp, nil
	}
	sp := &Savepoint{Path: path, dirs: []dirStamp{{path, st}}}
	genDir := ""
	if g, ok := generationDir(path); ok {
		// (Both absolute when path is "." or "..", so that the files'
		// names are relative to the root.)
		sp.Kind, sp.Generation, sp.Root, genDir = InputGeneration, g, filepath.Dir(namedDir(path)), namedDir(path)
	} else {
		sp.Kind, sp.Root = InputTree, path
		gens, unusable, err := generations(path)
		if err != nil {
			return nil, err
		}
		if len(gens) == 0 {
			why := ""
			if len(unusable) > 0 {
				why = ": " + strings.Join(unusable, "; ")
			}
			return nil, fmt.Errorf("open savepoint %s: not a checkpoint directory: no v<generation> directory in it%s (give a snapshot file, a checkpoint directory or a v<generation> directory)", path, why)
		}
		sp.Generation = gens[len(gens)-1].n
		genDir = filepath.Join(path, "v"+strconv.Itoa(sp.Generation))
		if !isDir(genDir) {
			// Only a name with leading zeros (v01) parsed to it.
			return nil, fmt.Errorf("open savepoint %s: a directory names generation %d with leading zeros, but clink reads generation %d from v%d (section 5.3), which does not exist: rename the directory to v%d", path, sp.Generation, sp.Generation, sp.Generation, sp.Generation)
		}
		for _, g := range gens {
			switch {
			case g.name != "v"+strconv.Itoa(g.n):
				sp.Notes = append(sp.Notes, fmt.Sprintf("%s ignored: it names generation %d with leading zeros, and clink reads generation %d from v%d only (section 5.3)", g.name, g.n, g.n, g.n))
			case g.n != sp.Generation:
				sp.Notes = append(sp.Notes, fmt.Sprintf("older generation %s ignored (the highest, v%d, is read)", g.name, sp.Generation))
			}
		}
	}
	if err := sp.openGeneration(genDir, opts); err != nil {
		sp.Close()
		if derr := checkDirs(sp.dirs); derr != nil {
			// What looked wrong (a payload beside another's sidecar) came
			// of reading two trees.
			return nil, fmt.Errorf("open savepoint: %w", derr)
		}
		var eg *emptyGenerationError
		if older := olderGeneration(path, sp); older != "" && errors.As(err, &eg) {
			err = fmt.Errorf("%w; clink restores the highest generation, v%d, and refuses to start on one without a checkpoint: to read the older %s, name its directory (%s)", err, sp.Generation, older, filepath.Join(path, older))
		}
		return nil, err
	}
	if err := sp.checkOpened(opts); err != nil {
		sp.Close()
		return nil, err
	}
	return sp, nil
}

// checkOpened is checkVerdicts of a savepoint just opened, and checkDirs:
// a tree whose directory was replaced while it was listed is an input
// changed, and so is one that a verdict refuses and whose payload is no
// longer the file opened (another run replaced it meanwhile, and its
// sidecar was read beside the old payload): the change, not the pair,
// is what is wrong.
func (sp *Savepoint) checkOpened(opts OpenOptions) error {
	if err := sp.checkVerdicts(opts); err != nil {
		// (CheckUnchanged checks the directories first.)
		if cerr := sp.CheckUnchanged(); cerr != nil {
			return fmt.Errorf("open savepoint: %w", cerr)
		}
		return err
	}
	if err := checkDirs(sp.dirs); err != nil {
		return fmt.Errorf("open savepoint: %w", err)
	}
	return nil
}

// generationDir reports whether the directory path is a generation
// directory v<gen> of a tree (it holds subtask directories), and its
// generation.
func generationDir(path string) (int, bool) {
	g, ok := parseGeneration(filepath.Base(namedDir(path)))
	return g, ok && hasNumericSubdir(path)
}

// namedDir returns path cleaned, made absolute when it ends in "." or ".."
// (a generation directory given as ".", say), so that its base is the
// directory's own name and its parent the directory above it.
func namedDir(path string) string {
	clean := filepath.Clean(path)
	if base := filepath.Base(clean); base == "." || base == ".." {
		if abs, err := filepath.Abs(clean); err == nil {
			return abs
		}
	}
	return clean
}

// InputRoot returns what a savepoint read from path spans on disk: for a
// generation directory v<gen>, the checkpoint directory above it (a file
// put beside v<gen>, such as a v<gen+1>, changes what the tree restores);
// else path itself. Outputs must stay out of it.
func InputRoot(path string) string {
	if _, ok := generationDir(path); ok {
		return filepath.Dir(namedDir(path))
	}
	return path
}

// checkVerdicts applies OpenOptions.RequireValid to a tree's payloads. A
// single file without a sidecar is always accepted: snapshot files outside a
// tree (clink's own exports, archives) have none. A changelog+file tree's
// payloads are not verified (that backend writes no sidecars), but a single
// file's sidecar is, whatever its name: one that disagrees with the file
// says it is damaged.
func (sp *Savepoint) checkVerdicts(opts OpenOptions) error {
	if !opts.RequireValid || sp.ChangelogTree() {
		return nil
	}
	for _, f := range sp.Files {
		if f.Verdict == VerdictValid || f.Verdict == "" && f.Undecodable != nil {
			// (No verdict is made of a payload that is missing or no
			// regular file: UndecodableError names it.)
			continue
		}
		noSidecar := f.noSidecar()
		if noSidecar && (opts.AllowMissingSidecar || sp.Kind == InputFile) || !noSidecar && opts.AllowCorrupt {
			continue
		}
		return &VerdictError{Path: f.Path, Verdict: f.Verdict, Detail: f.VerdictDetail, NoSidecar: noSidecar, Unread: f.sidecarUnread}
	}
	return nil
}

// CheckIntegrity refuses, with a *VerdictError whose Note is note, a
// file-backend payload of sp whose integrity verdict makes clink refuse to
// restore it: a size or checksum that disagrees with its sidecar (an
// unfinished write, a damaged file), or a sidecar it cannot read. It is
// what transform.Run, diff.Compare and export.Write check however sp was
// opened (OpenOptions.RequireValid refuses such a payload at open): the
// rows of a damaged payload would pass for state. A payload without a
// sidecar is left to the open (RequireValid and AllowMissingSidecar
// decide about it), as is a missing payload. The payloads of a
// changelog+file tree have no verdict (that backend writes no sidecars);
// a single file's sidecar is checked whatever its name.
//
// It also refuses the staging tree of an sptool run that did not finish
// (named as CreateTree names it, and without a COMPLETED marker, which
// sptool writes last): it may lack the files of the subtasks the run had
// not begun, and nothing in it shows which.
func (sp *Savepoint) CheckIntegrity(note string) error {
	if d := sp.Damaged(); len(d) > 0 {
		f := d[0]
		return &VerdictError{Path: f.Path, Verdict: f.Verdict, Detail: f.VerdictDetail, Note: note, Unread: f.sidecarUnread}
	}
	if sp.Kind != InputFile && sp.Completed == nil && isStagingTree(sp.Root) {
		return fmt.Errorf("%s is the staging tree of an sptool run that did not finish (named .sptool-tmp-<suffix>, and without the COMPLETED marker sptool writes last): it may lack the files of some subtasks, which nothing in it shows; run that command again, and delete this directory", ShowName(sp.Root))
	}
	return nil
}

// Damaged returns the payloads CheckIntegrity refuses, in file order: those
// whose sidecar disagrees with them or cannot be read (which
// OpenOptions.AllowCorrupt lets a savepoint open with).
func (sp *Savepoint) Damaged() []*File {
	if sp.ChangelogTree() {
		return nil
	}
	var out []*File
	for _, f := range sp.Files {
		switch {
		case f.Verdict == VerdictValid, f.Verdict == VerdictMissing:
			continue
		case f.noSidecar():
			continue
		case f.Verdict == "":
			continue // none made (a Savepoint built in memory)
		}
		out = append(out, f)
	}
	return out
}

// changelogWritesNoSidecar says why a changelog payload has no sidecar.
const changelogWritesNoSidecar = "as clink's changelog+file backend writes none for its changelog payloads"

func openFile(path string, opts OpenOptions) (*Savepoint, error) {
	sp := &Savepoint{Path: path, Root: filepath.Dir(path), Kind: InputFile, Backend: BackendFile}
	if base := filepath.Base(path); strings.HasPrefix(base, "changelog-") {
		if _, ok := checkpointOfName(base); ok {
			sp.Backend = BackendChangelogFile // the name the changelog+file backend gives its payloads, as in a tree
		}
	}
	f := &File{Subtask: -1, Path: path, Rel: filepath.Base(path)}
	// A changelog's handles are resolved in the tree its subtask directory
	// is part of; one outside such a directory has no tree to resolve them
	// in (the directory two up could be any, / included).
	root := ""
	if dir := filepath.Dir(path); isSubtaskDir(dir) {
		root = filepath.Join(dir, "..", "..")
	}
	ro := opts.readOptions(root, func(h string) ([]byte, error) {
		data, _, _, stamp, err := resolveHandleRel(root, h, mapInto(f, opts))
		if err == nil {
			f.matStamps = append(f.matStamps, stamp)
		}
		return data, err
	})
	if opts.KeepUndecodable && opts.KeepUndecodableFile {
		ro.keepUndecodable = true
		ro.keepOnly = func(err error) bool { return errors.Is(err, ErrBadFormat) && startsAsStream(path) }
	}
	if err := readSnapshotFile(f, true, ro); err != nil {
		sp.Files = []*File{f}
		sp.Close() // the map and file of a payload read before the error
		return nil, err
	}
	if ck, ok := checkpointOfName(filepath.Base(path)); ok {
		sp.Checkpoint = ck
	}
	if f.noSidecar() && f.Snapshot != nil && f.Snapshot.Variant == Changelog {
		// Not a checkpoint that was never published: the changelog+file
		// backend writes no sidecar for its changelog payloads.
		f.VerdictDetail = "no integrity sidecar beside " + ShowName(path) + ", " + changelogWritesNoSidecar
	}
	sp.Files = []*File{f}
	return sp, nil
}

// startsAsStream reports whether the file at path starts as a payload
// clink's reader would try to read: an Arrow IPC stream's continuation
// marker, a CLMB frame, or a whole-file compression sptool decompresses.
func startsAsStream(path string) bool {
	fh, err := os.Open(path)
	if err != nil {
		return false
	}
	defer fh.Close()
	head := make([]byte, 16)
	n, _ := io.ReadFull(fh, head)
	head = head[:n]
	return len(head) >= 4 && binary.LittleEndian.Uint32(head) == continuation ||
		bytes.HasPrefix(head, []byte("CLMB")) || DetectCompression(head) != CompressNone
}

// verifyStraySidecar verifies the sidecar beside a changelog+file payload,
// if there is one: that backend writes none and its restore reads none, so
// one found there is not required, but one that disagrees with the payload
// says the payload may have changed since (validate warns). Without one,
// f.Verdict stays "". One that cannot be read is such a verdict too, never
// an error: clink does not read it.
func verifyStraySidecar(f *File) {
	sc, err := ReadRegularFile(f.Path+SidecarSuffix, maxControlFileSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		// (Not unreadableSidecar's advice: clink reads no sidecar here.)
		f.Verdict, f.VerdictDetail = VerdictCorrupt, "unreadable sidecar: "+err.Error()
	default:
		f.Verdict, f.VerdictDetail, f.Sidecar = Verify(f.Path, true, f.Size, f.CRC32C, sc)
	}
}

// unreadableSidecar is the verdict detail of a sidecar that could not be
// read (err). One larger than maxControlFileSize is not read: real ones
// are under 200 bytes, and a file of gigabytes would be read in full.
// clink reads past the keys it does not know, and may find it valid.
func unreadableSidecar(err error) string {
	detail := "unreadable sidecar: " + err.Error()
	if errors.As(err, new(*tooLargeError)) {
		detail += " (real ones are under 200 bytes, and sptool reads none larger; clink reads past the keys it does not know, and may restore the payload: keep only the sidecar's clink_checkpoint_meta, checkpoint_id, payload_bytes and payload_crc32c lines)"
	}
	return detail
}

// parseGeneration parses "v<N>" with N >= 0.
func parseGeneration(name string) (int, bool) {
	if len(name) < 2 || name[0] != 'v' {
		return 0, false
	}
	n, err := strconv.Atoi(name[1:])
	if err != nil || n < 0 || strings.ContainsAny(name[1:], "+-") {
		return 0, false
	}
	return n, true
}

func hasNumericSubdir(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if _, ok := subtaskIndex(e.Name()); ok && isDir(filepath.Join(dir, e.Name())) {
			return true
		}
	}
	return false
}

func isDir(p string) bool {
	st, err := os.Stat(p) // follows symlinked subtask directories, as clink does
	return err == nil && st.IsDir()
}

func subtaskIndex(name string) (int, bool) {
	if name == "" {
		return 0, false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(name)
	return n, err == nil
}

func generations(root string) (gens []generation, unusable []string, err error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, nil, fmt.Errorf("open savepoint: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		g, ok := parseGeneration(name)
		if !ok {
			if len(name) > 1 && name[0] == 'v' && strings.Trim(name[1:], "0123456789") == "" {
				unusable = append(unusable, fmt.Sprintf("%s: generation number out of range", name))
			}
			continue
		}
		st, err := os.Stat(filepath.Join(root, name)) // follows links, as isDir
		switch {
		case err != nil:
			unusable = append(unusable, fmt.Sprintf("%s: %v", name, unwrapPath(err)))
		case !st.IsDir():
			unusable = append(unusable, fmt.Sprintf("%s: not a directory", name))
		default:
			gens = append(gens, generation{g, name})
		}
	}
	slices.SortFunc(gens, func(a, b generation) int {
		return cmp.Or(cmp.Compare(a.n, b.n), cmp.Compare(len(b.name), len(a.name)), strings.Compare(a.name, b.name))
	})
	return gens, unusable, nil
}

// generation is a v<generation> directory of a tree: its number and its
// name (which may have leading zeros: v01).
type generation struct {
	n    int
	name string
}

// emptyGenerationError is the error of a generation that holds no subtask
// directory or no checkpoint file: a job started and stopped before its
// first checkpoint leaves one above the generation it restored.
type emptyGenerationError struct{ msg string }

func (e *emptyGenerationError) Error() string { return e.msg }

// olderGeneration returns the name of the newest generation of tree sp
// (opened at path) below the one read that holds a subtask directory, as
// clink names it, or "" when there is none or sp was opened at a
// generation directory.
func olderGeneration(path string, sp *Savepoint) string {
	if sp.Kind != InputTree {
		return ""
	}
	gens, _, err := generations(path)
	if err != nil {
		return ""
	}
	for i := len(gens) - 1; i >= 0; i-- {
		g := gens[i]
		if g.n >= sp.Generation || g.name != "v"+strconv.Itoa(g.n) {
			continue
		}
		ents, _ := os.ReadDir(filepath.Join(path, g.name))
		if slices.ContainsFunc(ents, func(e os.DirEntry) bool {
			_, ok := subtaskIndex(e.Name())
			return ok && isDir(filepath.Join(path, g.name, e.Name()))
		}) {
			return g.name
		}
	}
	return ""
}

// unwrapPath returns the error under a *fs.PathError, whose path the
// message already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// generationHolding returns the directory of a generation of the tree at
// root, other than gen, that holds a file of checkpoint id in some subtask
// directory: --checkpoint selects within the generation read, and a user
// asking for an older generation's checkpoint is told where it is.
func generationHolding(root string, gen int, id uint64) (string, bool) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return "", false
	}
	for _, e := range ents {
		g, ok := parseGeneration(e.Name())
		if !ok || g == gen {
			continue
		}
		dir := filepath.Join(root, e.Name())
		subs, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, sub := range subs {
			if _, ok := subtaskIndex(sub.Name()); !ok {
				continue
			}
			for _, p := range []string{"checkpoint-", "changelog-"} {
				if _, err := os.Lstat(filepath.Join(dir, sub.Name(), p+strconv.FormatUint(id, 10)+".snap")); err == nil {
					return dir, true
				}
			}
		}
	}
	return "", false
}

// appliedListing returns the subtasks= line of the checkpoint's marker
// when clink applies it: the marker has one, and it is the checkpoint's
// only marker (format 5.3).
func (sp *Savepoint) appliedListing() ([]int, bool) {
	c := sp.Completed
	if c == nil || !c.HasSubtasks || len(sp.OtherCompleted) > 0 {
		return nil, false
	}
	return c.Subtasks, true
}

// checkpointOfName parses checkpoint-<id>.snap and changelog-<id>.snap.
func checkpointOfName(name string) (uint64, bool) {
	for _, p := range []string{"checkpoint-", "changelog-"} {
		if strings.HasPrefix(name, p) && strings.HasSuffix(name, ".snap") {
			id, err := strconv.ParseUint(name[len(p):len(name)-len(".snap")], 10, 64)
			return id, err == nil
		}
	}
	return 0, false
}

// decimalOf picks, of names that name one subtask or checkpoint, the one
// clink opens (decimal reports it), and returns the others; ok is false
// when there are several and clink opens none of them, or more than one.
func decimalOf(names []string, decimal func(string) bool) (name string, ignored []string, ok bool) {
	if len(names) == 1 {
		return names[0], nil, true
	}
	for _, n := range names {
		if decimal(n) {
			if name != "" {
				return "", nil, false
			}
			name = n
		} else {
			ignored = append(ignored, n)
		}
	}
	slices.Sort(ignored)
	return name, ignored, name != ""
}

// decimalCheckpointName reports whether name is the payload name clink
// opens for checkpoint id: checkpoint-<id>.snap or changelog-<id>.snap,
// the id in decimal.
func decimalCheckpointName(name string, id uint64) bool {
	d := strconv.FormatUint(id, 10)
	return name == "checkpoint-"+d+".snap" || name == "changelog-"+d+".snap"
}

// quoteAll quotes each of names, joined with ", ".
func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

type subtaskDir struct {
	index int
	name  string
	ckpts map[uint64]string // checkpoint id -> file name
	// absent says why a subtask the checkpoint's marker lists has no
	// directory ("" for a directory read).
	absent string
	// unlisted: the marker does not list it, below the highest it lists
	// (File.Unlisted).
	unlisted bool
}

// markMissing records f's payload as missing (File.Missing), for why, in
// a changelog+file tree or a file-backend one.
func (f *File) markMissing(why string, changelog bool) {
	f.Missing, f.missingWhy = true, why
	f.Undecodable = fmt.Errorf("%s: %w (%s): %s", f.Path, ErrMissingPayload, why, missingRestore(changelog, f.Subtask))
}

// missingRestore says what clink's restore does with subtask sub whose
// payload is missing, of a changelog+file tree or a file-backend one.
func missingRestore(changelog bool, sub int) string {
	if changelog {
		return fmt.Sprintf("clink's restore of subtask %d fails (\"'changelog+file' restore requested but snapshot not found\")", sub)
	}
	return fmt.Sprintf("clink refuses to restore subtask %d with empty state", sub)
}

// ErrBadFormat is wrapped by the error of a payload whose bytes are not
// what clink's reader takes (File.Undecodable, or Open's error for a
// single file): a stream that does not parse or is cut short, offsets out
// of bounds, a schema or format version it does not know, a compressed
// payload that does not decompress. errors.Is(err, ErrBadFormat) tells
// such input from a failure to read it (an *fs.PathError, a
// syscall.Errno, ErrInputChanged, ErrInputUnreadable, a *TempFileError) or
// a cancelled context.
var ErrBadFormat = errors.New("not a snapshot clink's reader takes")

// badFormat is an error of ErrBadFormat: its text is its cause's alone.
type badFormat struct{ err error }

func (e *badFormat) Error() string        { return e.err.Error() }
func (e *badFormat) Unwrap() error        { return e.err }
func (e *badFormat) Is(target error) bool { return target == ErrBadFormat }

// formatError marks err, an error of decoding a payload's bytes, as
// ErrBadFormat, unless it is a failure to read them, or ctx's.
func formatError(ctx context.Context, err error) error {
	var pathErr *fs.PathError
	var tempErr *TempFileError
	var errno syscall.Errno // (a system call that failed: mmap of a decompressed payload's file)
	switch {
	case err == nil, ctxErr(ctx) != nil, InputFault(err), errors.As(err, &pathErr), errors.As(err, &tempErr), errors.As(err, &errno),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return &badFormat{err}
}

// ErrMissingPayload is File.Undecodable's error for a subtask of a tree
// whose payload of the checkpoint read is not there (File.Missing), and is
// wrapped by Open's error for such a subtask without
// OpenOptions.KeepUndecodable.
var ErrMissingPayload = errors.New("payload missing")

// kindError is an error of kind (errors.Is) whose text is msg alone: the
// sentinel's own text would only repeat what msg says.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string        { return e.msg }
func (e *kindError) Is(target error) bool { return target == e.kind }

func (sp *Savepoint) openGeneration(genDir string, opts OpenOptions) error {
	sp.noteDir(genDir)
	ents, err := os.ReadDir(genDir)
	if err != nil {
		return fmt.Errorf("open savepoint: %w", err)
	}
	var dirs []*subtaskDir
	// Two names of one subtask (01 and 1) or one checkpoint
	// (checkpoint-017.snap and checkpoint-17.snap): clink opens the one
	// in decimal only (format 5.1, 5.3), so the other is left out, with a
	// note; two names neither of which clink opens are an error.
	byIndex := map[int][]string{}
	for _, e := range ents {
		if idx, ok := subtaskIndex(e.Name()); ok && isDir(filepath.Join(genDir, e.Name())) {
			byIndex[idx] = append(byIndex[idx], e.Name())
		}
	}
	genRel, _ := filepath.Rel(sp.Root, genDir)
	for _, idx := range slices.Sorted(maps.Keys(byIndex)) {
		name, ignored, ok := decimalOf(byIndex[idx], func(n string) bool { return n == strconv.Itoa(idx) })
		if !ok {
			return fmt.Errorf("open savepoint %s: directories %s all name subtask %d, and clink reads none of them (it reads %s only: the index in decimal, section 5.3)", genDir, quoteAll(byIndex[idx]), idx, strconv.Itoa(idx))
		}
		for _, n := range ignored {
			sp.Notes = append(sp.Notes, fmt.Sprintf("subtask directory %s ignored: it names subtask %d with leading zeros, and clink reads subtask %d from %s only (section 5.3)", n, idx, idx, name))
			sp.Shadowed = append(sp.Shadowed, ShadowedName{Rel: filepath.Join(genRel, n), Read: filepath.Join(genRel, name)})
		}
		sd := &subtaskDir{index: idx, name: name, ckpts: map[uint64]string{}}
		sp.noteDir(filepath.Join(genDir, name))
		files, err := os.ReadDir(filepath.Join(genDir, name))
		if err != nil {
			return fmt.Errorf("open savepoint: %w", err)
		}
		byID := map[uint64][]string{}
		for _, f := range files {
			if id, ok := checkpointOfName(f.Name()); ok {
				byID[id] = append(byID[id], f.Name())
			}
		}
		for id, names := range byID {
			file, ignored, ok := decimalOf(names, func(n string) bool { return decimalCheckpointName(n, id) })
			if !ok {
				why := ""
				if slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "changelog-") }) && slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "checkpoint-") }) {
					// The file backend restores the one, the changelog+file
					// backend the other: which ran is the job's setting.
					why = fmt.Sprintf(": payloads of two backends (clink's file backend reads checkpoint-%d.snap, its changelog+file backend changelog-%d.snap), and sptool does not guess which one the job wrote: move the other out of the tree", id, id)
				}
				return fmt.Errorf("open savepoint: subtask directory %s holds %s, which all name checkpoint %d%s", filepath.Join(genDir, name), strings.Join(names, " and "), id, why)
			}
			for _, n := range ignored {
				sp.Notes = append(sp.Notes, fmt.Sprintf("%s ignored: it names checkpoint %d with leading zeros beside %s, the file clink opens (section 5.1)", filepath.Join(name, n), id, file))
				sp.Shadowed = append(sp.Shadowed, ShadowedName{Rel: filepath.Join(genRel, name, n), Read: filepath.Join(genRel, name, file), Checkpoint: true})
			}
			sd.ckpts[id] = file
		}
		dirs = append(dirs, sd)
	}
	if len(dirs) == 0 {
		return &emptyGenerationError{fmt.Sprintf("open savepoint %s: no subtask directories in it", genDir)}
	}
	slices.SortFunc(dirs, func(a, b *subtaskDir) int { return a.index - b.index })

	markers, ignored, bad, err := completedMarkers(sp.Root, opts.TolerateBadMarkers)
	if err != nil {
		return err
	}
	if testhook.TreeListed != nil {
		testhook.TreeListed(sp.Root)
	}
	for _, rel := range ignored {
		sp.Notes = append(sp.Notes, fmt.Sprintf("%s ignored: clink looks for COMPLETED-<id> with the id in decimal, so it is no marker clink finds (format 5.5)", ShowName(rel)))
	}
	asked := opts.CheckpointSet || opts.Checkpoint != 0
	all := checkpointsIn(dirs)
	if err := sp.selectCheckpoint(len(dirs), all, markers, opts.Checkpoint, asked, opts.KeepUndecodable && opts.NewestPresent); err != nil {
		return err
	}
	if err := sp.checkBadMarkers(bad, markers, all, asked, opts.TolerateBadMarkers); err != nil {
		return err
	}
	// Every subtask directory must hold the selected checkpoint's file,
	// but one the checkpoint's only marker does not list, which is left
	// out, holding the checkpoint or not: a leftover of another layout,
	// whose operator rows the union at restore skips (format 5.3), and
	// which a restore at the marker's parallelism does not read.
	//
	// One below the highest subtask the marker lists is read all the same
	// when it holds the checkpoint: a restore at the marker's layout starts
	// that subtask from its own file (the list only keeps its operator rows
	// out of the other subtasks' unions, format 5.3).
	listing, hasListing := sp.appliedListing()
	listed := map[int]bool{}
	highest := -1
	for _, i := range listing {
		listed[i] = true
		highest = max(highest, i)
	}
	var missing []string
	kept := dirs[:0]
	for _, d := range dirs {
		_, ok := d.ckpts[sp.Checkpoint]
		switch {
		case len(listed) > 0 && !listed[d.index] && ok && d.index < highest:
			rel, _ := filepath.Rel(sp.Root, filepath.Join(genDir, d.name, d.ckpts[sp.Checkpoint]))
			d.unlisted = true
			sp.Notes = append(sp.Notes, fmt.Sprintf("%s holds checkpoint %d, and %s does not list subtask %d, but lists subtask %d: read, as a restore at that layout reads it", rel, sp.Checkpoint, ShowName(sp.CompletedRel), d.index, highest))
		case len(listed) > 0 && !listed[d.index]:
			if name, holds := d.ckpts[sp.Checkpoint]; holds {
				// Validate warns of it: a restore at a parallelism that
				// takes in this subtask would read its keyed rows.
				rel, _ := filepath.Rel(sp.Root, filepath.Join(genDir, d.name, name))
				sp.Unlisted = append(sp.Unlisted, rel)
				sp.Notes = append(sp.Notes, fmt.Sprintf("%s holds checkpoint %d, but %s does not list subtask %d: left out", rel, sp.Checkpoint, ShowName(sp.CompletedRel), d.index))
				continue
			}
			sp.Notes = append(sp.Notes, fmt.Sprintf("subtask directory %s holds no checkpoint %d and %s does not list it: left out", d.name, sp.Checkpoint, ShowName(sp.CompletedRel)))
			if d.index < highest {
				sp.bareSubtasks = append(sp.bareSubtasks, d.index)
			}
			continue
		case ok:
		default:
			missing = append(missing, d.name)
		}
		kept = append(kept, d)
	}
	dirs = kept
	if len(dirs) > 0 && dirs[len(dirs)-1].index >= MaxParallelism {
		last := dirs[len(dirs)-1]
		// The subtasks below it would be a gap of as many. (One the
		// marker leaves out is set aside above, as clink's restore
		// leaves it.)
		return fmt.Errorf("open savepoint %s: subtask directory %s: above %d, the highest subtask index sptool reads (a parallelism of at most %d)", genDir, last.name, MaxParallelism-1, MaxParallelism)
	}
	// With KeepUndecodable, a subtask without its payload (a directory
	// without the checkpoint, or one the marker lists that is not there)
	// is kept as a File that says so (File.Missing), so that validate
	// lists it beside the other files' findings.
	if len(missing) > 0 && !opts.KeepUndecodable {
		return &kindError{ErrMissingPayload, fmt.Sprintf("open savepoint %s: checkpoint %d is missing from subtask director%s %s (clink refuses to restore a subtask with no state)", genDir, sp.Checkpoint, plural(len(missing), "y", "ies"), strings.Join(missing, ", "))}
	}
	if hasListing {
		for _, i := range listing {
			if _, ok := byIndex[i]; !ok {
				absent := func(gen string) string {
					msg := fmt.Sprintf("%s lists subtask %d but %s has no directory %d%s", ShowName(sp.CompletedRel), i, gen, i, notADir(filepath.Join(genDir, strconv.Itoa(i))))
					if g := sp.Completed.Generation; g != 0 && g != sp.Generation {
						msg += fmt.Sprintf(" (the marker says generation=%d, and v%d is read)", g, sp.Generation)
					}
					return msg
				}
				if !opts.KeepUndecodable {
					return &kindError{ErrMissingPayload, "open savepoint: " + absent(genDir)}
				}
				if i >= MaxParallelism {
					// Not a finding of its own: every subtask below it
					// would be one.
					return fmt.Errorf("open savepoint: %s, and %d is above %d, the highest subtask index sptool reads (a parallelism of at most %d)", absent(genDir), i, MaxParallelism-1, MaxParallelism)
				}
				// The finding names the generation within the tree.
				rel, err := filepath.Rel(sp.Root, genDir)
				if err != nil {
					rel = genDir
				}
				byIndex[i] = []string{strconv.Itoa(i)}
				dirs = append(dirs, &subtaskDir{index: i, name: strconv.Itoa(i), absent: absent(ShowName(rel))})
			}
		}
		slices.SortFunc(dirs, func(a, b *subtaskDir) int { return a.index - b.index })
	}
	// With KeepGaps, a subtask below the highest read that has no
	// directory (or one holding no checkpoint that the marker leaves out)
	// is kept as a missing File too: the indices imply the layout (subtasks
	// 0 up to the highest), at which the files' rows are placed and their
	// chain groups told, and the subtask is reported as missing.
	if opts.KeepUndecodable && opts.KeepGaps && len(dirs) > 0 {
		rel, err := filepath.Rel(sp.Root, genDir)
		if err != nil {
			rel = genDir
		}
		have := map[int]bool{}
		for _, d := range dirs {
			have[d.index] = true
		}
		top := dirs[len(dirs)-1].index
		for i := 0; i < top; i++ {
			if have[i] {
				continue
			}
			why := fmt.Sprintf("%s has no directory %d, though it holds subtask %d's", ShowName(rel), i, top)
			if slices.Contains(sp.bareSubtasks, i) {
				why = fmt.Sprintf("subtask directory %s holds no checkpoint %d, and %s does not list it", strconv.Itoa(i), sp.Checkpoint, ShowName(sp.CompletedRel))
			}
			dirs = append(dirs, &subtaskDir{index: i, name: strconv.Itoa(i), absent: why})
		}
		slices.SortFunc(dirs, func(a, b *subtaskDir) int { return a.index - b.index })
	}
	// The name a missing payload would have: the backend's of the
	// payloads there are, or, when none is, of the other checkpoints'.
	changelog, known := false, false
	for _, d := range dirs {
		if name, ok := d.ckpts[sp.Checkpoint]; ok {
			changelog, known = changelog || strings.HasPrefix(name, "changelog-"), true
		}
	}
	if !known {
		for _, d := range dirs {
			for _, name := range d.ckpts {
				changelog = changelog || strings.HasPrefix(name, "changelog-")
			}
		}
	}
	payloadName := "checkpoint-" + strconv.FormatUint(sp.Checkpoint, 10) + ".snap"
	if changelog {
		payloadName = "changelog-" + strconv.FormatUint(sp.Checkpoint, 10) + ".snap"
	}

	backends := map[Backend]bool{}
	files := make([]*File, len(dirs))
	errs := make([]error, len(dirs))
	// The files are read concurrently (checksum and decode), a few at a
	// time, started in subtask order; once one fails, those not started
	// are left unread. The error returned is the first in subtask order:
	// every file started is read to its end, and the files left unread
	// come after the one that failed.
	var wg sync.WaitGroup
	sem := make(chan struct{}, filesAtOnce)
	var failed atomic.Bool
	// The tree's bound on its compressed batches is that of one file as
	// large as all its payloads (their sizes taken before any is read, so
	// that the bound does not depend on which files are read first).
	inflated := new(treeInflate)
	for _, d := range dirs {
		if name, ok := d.ckpts[sp.Checkpoint]; ok {
			if fi, err := os.Stat(filepath.Join(genDir, d.name, name)); err == nil {
				inflated.size += int(fi.Size())
			}
		}
	}
	for i, d := range dirs {
		name, ok := d.ckpts[sp.Checkpoint]
		if !ok {
			path := filepath.Join(genDir, d.name, payloadName)
			rel, _ := filepath.Rel(sp.Root, path)
			why := d.absent
			if why == "" {
				why = fmt.Sprintf("subtask directory %s holds no checkpoint %d", d.name, sp.Checkpoint)
			}
			files[i] = &File{Subtask: d.index, Path: path, Rel: rel}
			files[i].markMissing(why, changelog)
			if !known {
				sp.Backend = map[bool]Backend{false: BackendFile, true: BackendChangelogFile}[changelog]
			}
			continue
		}
		b := BackendFile
		if strings.HasPrefix(name, "changelog-") {
			b = BackendChangelogFile
		}
		backends[b] = true
		sp.Backend = b
		path := filepath.Join(genDir, d.name, name)
		rel, _ := filepath.Rel(sp.Root, path)
		f := &File{Subtask: d.index, Path: path, Rel: rel, Unlisted: d.unlisted}
		// Every materialisation the file's handles name is listed (a
		// copy of the subtask copies them): those read, then those of
		// handle rows not read because another handle names their file
		// (a link to it, another base before v<gen>/), with the size
		// and CRC of the file read.
		read := map[string]FileInfo{} // by the file's identity
		var unread []unreadMat
		unreadSeen := map[string]bool{} // handles
		resolve := func(h string) ([]byte, error) {
			data, relMat, id, stamp, err := resolveHandleRel(sp.Root, h, mapInto(f, opts))
			if err == nil {
				f.matStamps = append(f.matStamps, stamp)
				info := FileInfo{Size: int64(len(data)), CRC32C: stamp.crc}
				f.Materializations = append(f.Materializations, relMat)
				f.MaterializationInfo = append(f.MaterializationInfo, info)
				read[id] = info
			}
			return data, err
		}
		skipped := func(h string) {
			if unreadSeen[h] {
				return // a handle repeated row after row is located once
			}
			unreadSeen[h] = true
			if id, rel := handleIdentity(sp.Root, h); rel != "" {
				unread = append(unread, unreadMat{rel, id})
			}
		}
		files[i] = f
		sem <- struct{}{}
		if failed.Load() {
			<-sem
			continue // a file started before it failed: it is left unread
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if fileRead != nil {
				fileRead(d.index)
			}
			ro := opts.readOptions(sp.Root, resolve)
			ro.keepUndecodable, ro.skipped, ro.tree = opts.KeepUndecodable, skipped, inflated
			if errs[i] = readSnapshotFile(f, b == BackendFile, ro); errs[i] != nil {
				failed.Store(true)
			} else if b != BackendFile {
				verifyStraySidecar(f)
			}
			for _, u := range unread {
				if info, ok := read[u.id]; ok && !slices.Contains(f.Materializations, u.rel) {
					f.Materializations = append(f.Materializations, u.rel)
					f.MaterializationInfo = append(f.MaterializationInfo, info)
				}
			}
		}()
	}
	wg.Wait()
	sp.Files = files
	for _, err := range errs {
		if err != nil { // the first in subtask order
			sp.Close()
			sp.Files = nil
			return err
		}
	}
	if len(backends) > 1 {
		return fmt.Errorf("open savepoint %s: checkpoint %d mixes checkpoint-%d.snap and changelog-%d.snap files", genDir, sp.Checkpoint, sp.Checkpoint, sp.Checkpoint)
	}
	if opts.Groups != nil {
		if err := sp.checkGroups(opts.Groups); err != nil {
			return err
		}
		sp.Groups = opts.Groups
		sp.GroupConflicts = groupConflicts(sp, opts.Groups)
	} else {
		sp.Groups, sp.GroupsInferred = InferGroups(sp.Files), true
	}
	return nil
}

// filesAtOnce is how many files of a tree are read at once (a variable
// so tests can read them one at a time).
var filesAtOnce = runtime.NumCPU()

// fileRead, when set (by tests), is called with the subtask of each file
// of a tree as its reading starts.
var fileRead func(subtask int)

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

type marker struct {
	rel string
	c   Completed
}

// ofGeneration reports whether marker m is of the generation read: it
// says so, or names none (the pre-generation layout's markers).
func (sp *Savepoint) ofGeneration(m marker) bool {
	return m.c.Generation == 0 || m.c.Generation == sp.Generation
}

// badMarker is a COMPLETED marker that does not parse: its checkpoint id
// and why.
type badMarker struct {
	rel string
	id  uint64
	err error
}

// completedMarkers reads every _jobs/<job>/COMPLETED-<id> under root. A
// name whose id has leading zeros (COMPLETED-017) is none clink finds: it
// looks for the id in decimal (format 5.3, 5.5); those are returned apart,
// and so are the markers that do not parse (bad): clink reads the marker
// of the checkpoint it restores alone (format 5.3), so one of another
// checkpoint, or of an old layout, does not stop the tree being read
// (checkBadMarkers).
func completedMarkers(root string, tolerant bool) (_ map[uint64][]marker, ignored []string, bad []badMarker, _ error) {
	out := map[uint64][]marker{}
	jobs, err := os.ReadDir(filepath.Join(root, "_jobs"))
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil, nil, nil
	} else if err != nil {
		return nil, nil, nil, fmt.Errorf("open savepoint: %w", err)
	}
	for _, j := range jobs {
		if !j.IsDir() {
			// A job directory that is a link to one is read, as clink's
			// look for _jobs/*/COMPLETED-<id> follows it.
			if st, err := os.Stat(filepath.Join(root, "_jobs", j.Name())); err != nil || !st.IsDir() {
				continue
			}
		}
		ents, err := os.ReadDir(filepath.Join(root, "_jobs", j.Name()))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("open savepoint: %w", err)
		}
		for _, e := range ents {
			rest, ok := strings.CutPrefix(e.Name(), "COMPLETED-")
			if !ok {
				continue
			}
			id, err := strconv.ParseUint(rest, 10, 64)
			if err != nil {
				continue
			}
			rel := filepath.Join("_jobs", j.Name(), e.Name())
			if strconv.FormatUint(id, 10) != rest {
				ignored = append(ignored, rel)
				continue
			}
			b, err := ReadRegularFile(filepath.Join(root, rel), maxControlFileSize)
			if err != nil && tolerant {
				// (A marker that cannot be read, as one that does not
				// parse: checkBadMarkers records it.)
				bad = append(bad, badMarker{rel, id, fmt.Errorf("cannot be read: %w", err)})
				continue
			} else if err != nil {
				return nil, nil, nil, fmt.Errorf("read marker: %w (fix or remove it: clink's restore does not need one; sptool validate checks the tree without it)", err)
			}
			c, err := ParseCompleted(b)
			if err != nil {
				bad = append(bad, badMarker{rel, id, err})
				continue
			}
			if c.Job == "" {
				c.Job = j.Name()
			}
			out[id] = append(out[id], marker{rel, c})
		}
	}
	return out, ignored, bad, nil
}

// checkBadMarkers fails the open for a marker that does not parse of the
// checkpoint read (its subtasks= line decides which directories a restore
// unions), or, when the checkpoint was not asked for, of one of whose
// files the generation holds some that could have changed sptool's choice:
// a newer one, or any when the checkpoint read was chosen without a marker
// of its generation (the newest in every subtask directory). Of the
// others, which no restore of the checkpoint read looks at, it notes each
// (UnreadMarkers: validate warns).
func (sp *Savepoint) checkBadMarkers(bad []badMarker, markers map[uint64][]marker, all map[uint64]int, asked, tolerant bool) error {
	byMarker := slices.ContainsFunc(markers[sp.Checkpoint], sp.ofGeneration)
	for _, b := range bad {
		switch {
		case tolerant && (b.id == sp.Checkpoint || (!asked && all[b.id] > 0 && (b.id > sp.Checkpoint || !byMarker))):
			// With TolerateBadMarkers, one Open would fail for is read
			// as if it were not there; but a marker of the checkpoint
			// read is one more of its markers all the same, and clink
			// applies a subtasks= line only when exactly one exists.
			sp.IgnoredMarkers = append(sp.IgnoredMarkers, fmt.Sprintf("%s: %v", ShowName(b.rel), b.err))
			if b.id == sp.Checkpoint && sp.Completed != nil {
				sp.OtherCompleted = append(sp.OtherCompleted, b.rel)
			}
			continue
		case b.id == sp.Checkpoint:
			return fmt.Errorf("marker %s: %w (it marks the checkpoint read, whose subtasks= line a restore applies: fix it, or remove it, as clink's restore does not need one)", ShowName(b.rel), b.err)
		case asked || all[b.id] == 0:
		case b.id > sp.Checkpoint:
			return fmt.Errorf("marker %s: %w (it marks checkpoint %d, newer than %d, which would be read without it: fix or remove it, or choose the checkpoint with --checkpoint)", ShowName(b.rel), b.err, b.id, sp.Checkpoint)
		case !byMarker:
			return fmt.Errorf("marker %s: %w (it marks checkpoint %d, which would be read if it parsed: no marker of v%d parses, and checkpoint %d was chosen as the newest in every subtask directory; fix or remove it, or choose the checkpoint with --checkpoint)", ShowName(b.rel), b.err, b.id, sp.Generation, sp.Checkpoint)
		}
		sp.UnreadMarkers = append(sp.UnreadMarkers, fmt.Sprintf("%s: %v", ShowName(b.rel), b.err))
	}
	slices.Sort(sp.UnreadMarkers)
	slices.Sort(sp.IgnoredMarkers)
	return nil
}

// selectCheckpoint applies sptool's rule: the checkpoint asked for (want,
// if asked is set), else the newest with a COMPLETED marker of this
// generation, else the newest present in every one of the ndirs subtask
// directories (all counts the directories holding each, checkpointsIn).
func (sp *Savepoint) selectCheckpoint(ndirs int, all map[uint64]int, markers map[uint64][]marker, want uint64, asked, newest bool) error {
	pick := func(id uint64) {
		sp.Checkpoint = id
		if ms := markers[id]; len(ms) > 0 {
			// The job is the marker's of the generation read: another
			// job's marker of the same checkpoint id (an older job's, in
			// another generation) must not name it, whatever the order of
			// their directories.
			m, rank := ms[0], 0 // 2: it names this generation, 1: none
			for _, c := range ms {
				r := 0
				switch c.c.Generation {
				case sp.Generation:
					r = 2
				case 0:
					r = 1
				}
				if r > rank {
					m, rank = c, r
				}
			}
			if len(ms) > 1 {
				sp.Notes = append(sp.Notes, fmt.Sprintf("%d COMPLETED-%d markers found; %s is used for the job, and no marker's subtasks= line applies (clink applies one only when it is the only marker)", len(ms), id, ShowName(m.rel)))
				for _, o := range ms {
					if o.rel != m.rel {
						sp.OtherCompleted = append(sp.OtherCompleted, o.rel)
					}
				}
			}
			sp.Completed, sp.CompletedRel, sp.Job = &m.c, m.rel, m.c.Job
			switch dir := filepath.Base(filepath.Dir(m.rel)); {
			case CheckJobID(m.c.Job) != nil:
				// clink does not read the line; a path there must not
				// lead an output's marker out of its tree.
				sp.Job = dir
				sp.Notes = append(sp.Notes, fmt.Sprintf("%s says job=%s, which is no directory name; the job is taken to be its directory's name, %s", ShowName(m.rel), ShowName(m.c.Job), ShowName(dir)))
			case m.c.Job != dir:
				sp.Notes = append(sp.Notes, fmt.Sprintf("%s says job=%s, not its directory's name %s; an output's marker is written under _jobs/%s", ShowName(m.rel), ShowName(m.c.Job), ShowName(dir), ShowName(m.c.Job)))
			}
		}
	}
	if asked {
		if all[want] == 0 {
			hint := ""
			if dir, ok := generationHolding(sp.Root, sp.Generation, want); ok {
				hint = fmt.Sprintf("; it is in %s: give that directory as the path to read it", dir)
			}
			return fmt.Errorf("open savepoint: checkpoint %d is not in generation v%d (present: %s)%s", want, sp.Generation, idList(all), hint)
		}
		pick(want)
		sp.noteNewerCompleted(markers, all)
		slices.Sort(sp.Notes)
		return nil
	}
	var best uint64
	found := false
	for id, ms := range markers {
		if all[id] == 0 {
			continue
		}
		for _, m := range ms {
			if sp.ofGeneration(m) {
				if !found || id > best {
					best, found = id, true
				}
			}
		}
	}
	if !found {
		for id, n := range all {
			if n == ndirs && (!found || id > best) {
				best, found = id, true
			}
		}
		if found {
			sp.Notes = append(sp.Notes, fmt.Sprintf("no COMPLETED marker for generation v%d; checkpoint %d is the newest present in every subtask directory", sp.Generation, best))
		}
	}
	if !found && newest && len(all) > 0 {
		for id := range all {
			if !found || id > best {
				best, found = id, true
			}
		}
		sp.newestNote = fmt.Sprintf("no checkpoint of generation v%d has a COMPLETED marker or a file in every subtask directory (present: %s); checkpoint %d, the newest present, is read (--checkpoint chooses another)", sp.Generation, idList(all), best)
		sp.Notes = append(sp.Notes, sp.newestNote)
	}
	if !found {
		if len(all) == 0 {
			return &emptyGenerationError{fmt.Sprintf("open savepoint: generation v%d holds no checkpoint-<id>.snap or changelog-<id>.snap file", sp.Generation)}
		}
		return fmt.Errorf("open savepoint: no checkpoint of generation v%d has a COMPLETED marker or a file in every subtask directory (present: %s); choose one with --checkpoint", sp.Generation, idList(all))
	}
	pick(best)
	for id := range all {
		if id != best {
			sp.Notes = append(sp.Notes, fmt.Sprintf("checkpoint %d also present in v%d; %d is read", id, sp.Generation, best))
		}
	}
	sp.noteNewerCompleted(markers, all)
	slices.Sort(sp.Notes)
	return nil
}

// checkpointsIn counts, by checkpoint id, the subtask directories of dirs
// that hold its file.
func checkpointsIn(dirs []*subtaskDir) map[uint64]int {
	all := map[uint64]int{}
	for _, d := range dirs {
		for id := range d.ckpts {
			all[id]++
		}
	}
	return all
}

// noteNewerCompleted notes the markers of this generation for checkpoints
// newer than the one read that have no file in it (see NewerCompleted),
// and the markers of the job's newest completed checkpoint when they name
// an older generation and the generation read has no file of it (see
// OlderGenerationCompleted).
func (sp *Savepoint) noteNewerCompleted(markers map[uint64][]marker, all map[uint64]int) {
	// Only where no marker of the generation read says a checkpoint of
	// it is complete (the one read included): a job that completed one
	// there restores that.
	var newest uint64
	ofThis := false
	for id, ms := range markers {
		newest = max(newest, id)
		ofThis = ofThis || slices.ContainsFunc(ms, func(m marker) bool { return m.c.Generation == sp.Generation })
	}
	for _, m := range markers[newest] {
		if g := m.c.Generation; !ofThis && sp.Completed == nil && g != 0 && g < sp.Generation && all[newest] == 0 {
			sp.OlderGenerationCompleted = append(sp.OlderGenerationCompleted, m.rel)
		}
	}
	slices.Sort(sp.OlderGenerationCompleted)
	for id, ms := range markers {
		if id <= sp.Checkpoint || all[id] > 0 {
			continue
		}
		for _, m := range ms {
			if sp.ofGeneration(m) {
				sp.NewerCompleted = append(sp.NewerCompleted, m.rel)
				sp.Notes = append(sp.Notes, fmt.Sprintf("%s marks checkpoint %d complete, but v%d holds none of its files; checkpoint %d is read", m.rel, id, sp.Generation, sp.Checkpoint))
			}
		}
	}
	slices.Sort(sp.NewerCompleted)
}

func idList(m map[uint64]int) string {
	ids := make([]uint64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatUint(id, 10)
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// wholeReadCeiling bounds a payload read whole rather than memory-mapped:
// the machine's physical memory (a variable so tests can lower it).
var wholeReadCeiling = physicalMemory()

// readSnapshotFile reads, verifies and decodes one payload. It fails when the
// file changes while it is read. With ro.Columnar an uncompressed payload is
// memory-mapped and decoded in place.
func readSnapshotFile(f *File, wantSidecar bool, ro ReadOptions) error {
	if err := ctxErr(ro.ctx); err != nil {
		return fmt.Errorf("read %s: %w", f.Path, err)
	}
	// Stat first: opening a named pipe would block.
	if st, err := os.Stat(f.Path); err != nil {
		if to, lerr := os.Readlink(f.Path); lerr == nil && errors.Is(err, fs.ErrNotExist) && ro.keepUndecodable && ro.keepOnly == nil {
			// A link to nothing: clink's restore finds no payload.
			f.markMissing(fmt.Sprintf("%s is a symbolic link to %s, which does not exist", filepath.Base(f.Path), to), !wantSidecar)
			return nil
		}
		return fmt.Errorf("read %s: %w", f.Path, err)
	} else if !st.Mode().IsRegular() {
		err := fmt.Errorf("read %s: is %s, not a snapshot file", f.Path, fileKind(st.Mode()))
		if ro.keepUndecodable && ro.keepOnly == nil {
			// No bytes to read, and none clink's reader takes: a finding
			// beside the other files', as a payload that does not decode.
			f.Undecodable = err
			return nil
		}
		return err
	}
	fh, err := os.Open(f.Path)
	if err != nil {
		return fmt.Errorf("read %s: %w", f.Path, err)
	}
	defer func() {
		if f.mapped == nil || f.mapped.f != fh {
			fh.Close()
		}
	}()
	before, err := fh.Stat()
	if err != nil {
		return fmt.Errorf("read %s: %w", f.Path, err)
	}
	if !before.Mode().IsRegular() { // replaced since the Stat above
		return fmt.Errorf("read %s: is %s, not a snapshot file", f.Path, fileKind(before.Mode()))
	}
	f.stamp = stampOf(before)
	var data []byte
	if ro.Columnar {
		if data, err = mapFile(fh, before.Size()); err != nil {
			return fmt.Errorf("read %s: %w", f.Path, err)
		}
		f.mapping = data
	} else {
		// Read whole: a file larger than the machine's memory (a sparse
		// one costs nothing on disk) would end the process.
		if before.Size() > wholeReadCeiling {
			return fmt.Errorf("read %s: %d bytes, more than this machine's %d bytes of memory; open it memory-mapped (the commands do)", f.Path, before.Size(), wholeReadCeiling)
		}
		data = make([]byte, before.Size())
		if err := readFullUntil(ro.ctx, fh, data); err != nil {
			return fmt.Errorf("read %s: %w", f.Path, err)
		}
	}
	f.Size = int64(len(data))
	var snap *Snapshot
	var comp string
	var crcErr, decodeErr error
	if f.mapping != nil {
		// A mapped canonical file is checksummed, validated and put in
		// order in one pass (verifyMapped); when it gives up, or the file
		// is another kind, the checksum is read on its own.
		// A payload compressed as a whole is mapped decompressed, from
		// f.plain: that is the stream verified and validated, while the
		// checksum is the payload's own.
		snap, comp, decodeErr = decodeFile(f, fh, data, ro)
		verified, mfh := false, fh
		if f.plain != nil {
			mfh = f.plain
		}
		if decodeErr == nil && f.mapping != nil && snap.Variant == Canonical && snap.Rows == nil {
			var crc uint32
			crc, verified = verifyMapped(ro.ctx, mfh, int64(len(f.mapping)), f.mapping, snap, ro.probe)
			if mfh == fh {
				f.CRC32C = crc
			}
		}
		if !verified || mfh != fh {
			f.CRC32C, crcErr = checksumFileUntil(ro.ctx, fh, f.Size)
			// (A checksum that failed, or was stopped, fails the read:
			// the offsets, a pass over the whole file, are not read.)
			if crcErr == nil && decodeErr == nil && f.mapping != nil && !verified && len(f.replayed) == 0 {
				where := ""
				if mfh != fh {
					where = " (offsets in the " + comp + "-decompressed stream)"
				}
				decodeErr = validateOffsetsOf(f, mfh, snap, where)
			}
		}
	} else {
		f.CRC32C = CRC32C(data)
		snap, comp, decodeErr = decodeFile(f, fh, data, ro)
	}
	if crcErr != nil {
		return fmt.Errorf("read %s: %w", f.Path, crcErr)
	}
	decodeErr = formatError(ro.ctx, decodeErr)
	if err := checkStamp(f.Path, f.stamp, f.CRC32C); err != nil {
		return fmt.Errorf("read %w", err)
	}
	if wantSidecar {
		sc, err := ReadRegularFile(f.Path+".meta", maxControlFileSize)
		var large *tooLargeError
		switch {
		case errors.Is(err, fs.ErrNotExist):
			f.Verdict, f.VerdictDetail, f.Sidecar = Verify(f.Path, true, f.Size, f.CRC32C, nil)
		case errors.Is(err, ErrNotControlFile), errors.As(err, &large):
			// A directory, a device or a named pipe where the sidecar
			// should be: clink cannot read it, and refuses the payload.
			// Or a sidecar larger than any real one, not read.
			f.Verdict, f.VerdictDetail = VerdictCorrupt, unreadableSidecar(err)
			f.sidecarUnread = large != nil
		case err != nil:
			return fmt.Errorf("read sidecar: %w", err)
		default:
			f.Verdict, f.VerdictDetail, f.Sidecar = Verify(f.Path, true, f.Size, f.CRC32C, sc)
		}
	}
	f.Compression = comp
	var tempErr *TempFileError
	if decodeErr != nil && ro.keepUndecodable && ctxErr(ro.ctx) == nil && !errors.Is(decodeErr, ErrInputChanged) && !errors.As(decodeErr, &tempErr) && (ro.keepOnly == nil || ro.keepOnly(decodeErr)) {
		// The sidecar's verdict, recorded above, is reported on its own.
		f.Undecodable = decodeErr
		return nil
	}
	if decodeErr != nil && strings.HasSuffix(f.Path, SidecarSuffix) {
		// A sidecar given for its payload (the two sort together).
		decodeErr = fmt.Errorf("%w (a %s file is the integrity sidecar of the payload beside it, %s: give that)", decodeErr, SidecarSuffix, strings.TrimSuffix(f.Path, SidecarSuffix))
	}
	if decodeErr != nil {
		if wantSidecar && f.Sidecar != nil && f.Verdict != VerdictValid {
			// The sidecar says what the file should be: a payload cut
			// short or overwritten since it was published.
			return fmt.Errorf("%w (sidecar verdict %s: %s)", decodeErr, f.Verdict, f.VerdictDetail)
		}
		return decodeErr
	}
	f.Snapshot = snap
	if f.mapping != nil {
		// The writer reads long runs of the batches from the file.
		f.mapped = &mappedFile{f: fh, data: f.mapping}
		if f.plain != nil {
			f.mapped.f = f.plain
		}
		for i := range snap.Batches {
			if len(f.replayed) == 0 { // (a replayed state's batches are in its own file)
				snap.Batches[i].file = f.mapped
			}
		}
	}
	releasePages(f.mapping) // validation read every offset; keep them cached, not resident
	return nil
}

// readFullUntil fills data from fh, as io.ReadFull does, a block of
// checksumBlock bytes at a time, stopped between blocks when ctx is done.
func readFullUntil(ctx context.Context, fh *os.File, data []byte) error {
	for off := 0; off < len(data); {
		if err := ctxErr(ctx); err != nil {
			return err
		}
		n, err := io.ReadFull(fh, data[off:min(off+checksumBlock, len(data))])
		off += n
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // the file ends before its size
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// decodeFile decompresses (if need be) and decodes a payload's bytes. A
// compressed payload's map is dropped: the decompressed stream is on the
// heap, or, mapped, in f.plain, which is mapped in its place.
func decodeFile(f *File, fh *os.File, data []byte, ro ReadOptions) (*Snapshot, string, error) {
	// A file compressed whole may hold compressed record batches: they
	// are bounded by the size of the file, not of its decompressed bytes.
	ro.budget = &inflateBudget{size: len(data), tree: ro.tree}
	var plain []byte
	var comp string
	var err error
	if f.mapping != nil {
		// Mapped, a payload compressed as a whole is decompressed into a
		// temporary file, mapped in turn: memory holds neither it nor its
		// decompressed stream.
		var size int64
		f.plain, size, comp, err = decompressToFile(ro.ctx, data, fh, ro.tempDir)
		if err == nil && f.plain != nil {
			unmapFile(f.mapping)
			f.mapping, plain = nil, nil
			if size > 0 {
				f.mapping, err = mapFile(f.plain, size)
				plain, fh = f.mapping, f.plain
			}
		} else {
			plain = data
		}
	} else {
		plain, comp, err = decompressPayload(data)
	}
	if err != nil {
		return nil, comp, fmt.Errorf("read %s: %w", f.Path, err)
	}
	if m := f.mapping; m != nil {
		// The offsets are validated after decoding (verifyMapped, or
		// validateOffsetsOf), read with pread: a large file's offsets never
		// enter the resident set, and no mapped page is touched for them
		// (see mappedFile).
		ro.readMapped = (&mappedFile{f: fh, data: m}).readInto
		ro.deferOffsets = true
		// A large changelog is replayed into a temporary file, which
		// the savepoint closes.
		ro.replayInFile, ro.release = true, f.ReleasePages
	}
	var snap *Snapshot
	err = Guard(func() (err error) {
		snap, err = DecodeSnapshot(plain, ro)
		return err
	})
	if snap != nil && snap.replayed != nil {
		f.replayed = snap.replayed // (closed with the savepoint, whatever happens next)
		// The state is in its own file: the materialisations mapped
		// are read no more.
		f.closeMatMaps()
	}
	if err != nil {
		where := ""
		if comp != CompressNone {
			where = " (offsets in the " + comp + "-decompressed stream)"
		}
		return nil, comp, fmt.Errorf("read %s%s: %w", f.Path, where, err)
	}
	return snap, comp, nil
}

// validateOffsetsOf checks the binary offsets of a mapped canonical
// snapshot whose decoding left them (ReadOptions.deferOffsets), as
// validateBatch would have; where, after the file's path in an error, says
// which bytes they are in (those it was decompressed to, for one
// compressed whole).
func validateOffsetsOf(f *File, fh *os.File, snap *Snapshot, where string) error {
	readMapped := (&mappedFile{f: fh, data: f.mapping}).readInto
	for bi := range snap.Batches {
		b := &snap.Batches[bi]
		for _, c := range [2]struct {
			name string
			offs []int32
			data []byte
		}{{"key_bytes", b.KeyOffs, b.Keys}, {"value_bytes", b.ValOffs, b.Vals}} {
			if err := validateOffsets(c.offs, len(c.data), readMapped); err != nil {
				return fmt.Errorf("read %s%s: record batch %d: column %q: %w", f.Path, where, bi, c.name, err)
			}
		}
	}
	return nil
}

// checksumFile computes the CRC-32C of the size bytes of a file that is
// also memory-mapped. It reads the file rather than the map: the first
// touch of each mapped page costs more than the copy of read(2), and
// reading leaves nothing in the resident set. A large file is read in parts
// by one goroutine per CPU, and the parts' CRCs combined (eachPart).
func checksumFile(fh *os.File, size int64) (uint32, error) {
	return checksumFileUntil(context.Background(), fh, size)
}

// checksumFileUntil is checksumFile, stopped when ctx is done.
func checksumFileUntil(ctx context.Context, fh *os.File, size int64) (uint32, error) {
	return eachPart(size, func(lo, hi int64) (uint32, error) { return checksumRange(ctx, fh, lo, hi) })
}

// eachPart calls part for the parts of [0, size) and returns the CRC-32C of
// the whole from theirs: one part for a file of fewer than 32 blocks of
// checksumBlock bytes, else one per CPU, each on a goroutine of its own.
// An error of a part is the first returned, in order. Parts run at most
// one per CPU at once whatever the files being read or copied at once (a
// tree's, up to --jobs of them), each with its buffer (partSlots).
func eachPart(size int64, part func(lo, hi int64) (uint32, error)) (uint32, error) {
	block := int64(checksumBlock)
	parts := int(min(int64(runtime.NumCPU()), size/(16*block)))
	part = slotted(part)
	if parts <= 1 {
		return part(0, size)
	}
	per := ((size+int64(parts)-1)/int64(parts) + block - 1) / block * block // parts*per >= size
	crcs := make([]uint32, parts)
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lo := min(size, int64(p)*per)
			crcs[p], errs[p] = part(lo, min(size, lo+per))
		}()
	}
	wg.Wait()
	crc := CRC32C(nil)
	for p := range parts {
		if errs[p] != nil {
			return 0, errs[p]
		}
		lo := min(size, int64(p)*per)
		crc = crc32cCombine(crc, crcs[p], min(size, lo+per)-lo)
	}
	return crc, nil
}

// partSlots bounds the parts of eachPart running at once, over every call:
// one per CPU.
var partSlots = make(chan struct{}, runtime.NumCPU())

// slotted is part run in a slot of partSlots.
func slotted(part func(lo, hi int64) (uint32, error)) func(lo, hi int64) (uint32, error) {
	return func(lo, hi int64) (uint32, error) {
		partSlots <- struct{}{}
		defer func() { <-partSlots }()
		return part(lo, hi)
	}
}

// checksumBlock is how much checksumFile reads at once (a variable so tests
// can make it small); a file of fewer than 32 blocks is read by one
// goroutine. A block that stays in the CPU's cache between the read and
// the CRC is read a third faster than one of 4 MiB (measured: 390 MB in
// 48-52 ms with 256 KiB blocks, 78-85 ms with 4 MiB, on two CPUs).
var checksumBlock = 256 << 10

// checksumRange returns the CRC-32C of bytes [lo, hi) of a file (see
// checksumFile).
func checksumRange(ctx context.Context, fh *os.File, lo, hi int64) (uint32, error) {
	var buf []byte
	if n := min(hi-lo, int64(checksumBlock)); n <= sinkSize {
		buf, _ = sizedBuf(n, int(n))
		buf = buf[:n]
		defer putBuf(buf)
	} else {
		buf = make([]byte, n)
	}
	var crc uint32
	for off := lo; off < hi; {
		if err := ctxErr(ctx); err != nil {
			return 0, err
		}
		n, err := readFileAt(fh, buf[:min(int64(len(buf)), hi-off)], off)
		crc = crc32.Update(crc, castagnoli, buf[:n])
		off += int64(n)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return 0, fmt.Errorf("%w (it ended at byte %d, before byte %d)", ErrInputChanged, off, hi)
			}
			return 0, err
		}
	}
	return crc, nil
}

// ErrClosed is the error of a Savepoint used after Close (see CheckUsable),
// and, from Guard, of a read of its rows after Close.
var ErrClosed = errors.New("savepoint: used after Close")

// CheckUsable returns an error for a nil Savepoint, a zero one (not made by
// Open: it holds no file), and one used after Close (ErrClosed): the
// functions that read a Savepoint and return an error call it first.
func (sp *Savepoint) CheckUsable() error {
	switch {
	case sp == nil:
		return errors.New("savepoint: none (a nil *Savepoint)")
	case sp.closed:
		return ErrClosed
	case len(sp.Files) == 0:
		return errors.New("savepoint: holds no file (a Savepoint is made by Open)")
	}
	return nil
}

// mustBeOpen panics with ErrClosed on a Savepoint used after Close, where
// reading its rows would fault on memory no longer mapped.
func (sp *Savepoint) mustBeOpen() {
	if sp.closed {
		panic(ErrClosed)
	}
}

// Close releases the memory maps of a savepoint opened with
// OpenOptions.Columnar. Neither the savepoint nor the rows of its snapshots
// may be used after. Closing it again does nothing.
func (sp *Savepoint) Close() error {
	sp.closed = true
	var errs []error
	for _, f := range sp.Files {
		if f.mapping != nil {
			errs = append(errs, unmapFile(f.mapping))
			f.mapping = nil
		}
		if f.mapped != nil {
			errs = append(errs, f.mapped.f.Close())
			if f.mapped.f == f.plain {
				f.plain = nil
			}
			f.mapped = nil
		}
		if f.plain != nil {
			// The decompressed copy of a payload that did not decode.
			errs = append(errs, f.plain.Close())
			f.plain = nil
		}
		errs = append(errs, f.closeMatMaps())
		for _, r := range f.replayed {
			errs = append(errs, r.Close())
		}
		f.replayed = nil
	}
	return errors.Join(errs...)
}

// noSidecar reports whether the payload was judged for want of a sidecar
// (verdict incomplete, no .meta file beside it), which
// OpenOptions.AllowMissingSidecar and --allow-unverified accept, unlike a
// sidecar that disagrees with it.
func (f *File) noSidecar() bool { return f.Verdict == VerdictIncomplete && f.Sidecar == nil }

// closeMatMaps unmaps and closes the materialisation files mapped for the
// file (matMaps).
func (f *File) closeMatMaps() error {
	var errs []error
	for _, m := range f.matMaps {
		errs = append(errs, unmapFile(m.data), m.f.Close())
	}
	f.matMaps = nil
	return errors.Join(errs...)
}

// ReleasePages drops the pages of the file's memory maps from the
// process's resident set (see Savepoint.ReleasePages): the payload's, a
// changelog's materialisations' and its replayed state's.
func (f *File) ReleasePages() {
	releasePages(f.mapping)
	for _, m := range f.matMaps {
		releasePages(m.data)
	}
	for _, r := range f.replayed {
		r.ReleasePages()
	}
}

// mappedBytes is the size of the memory maps that hold the file's rows:
// its replayed state's, when it has one, else the payload's.
func (f *File) mappedBytes() int64 {
	if len(f.replayed) > 0 && f.replayed[0].m != nil {
		return int64(len(f.replayed[0].m.data))
	}
	return int64(len(f.mapping))
}

// ReleaseRows returns how many of the file's rows a long pass reads
// between two calls of ReleasePages: those of about 32 MB of the mapped
// file, at its average row, and at most 256K (a count of rows alone let a
// file of 4 KB keys keep its 400 MB resident).
func (f *File) ReleaseRows() int {
	if f.Snapshot == nil {
		return maxReleaseRows
	}
	return releaseRows(f.mappedBytes(), f.Snapshot.NumRows())
}

// ReleaseRows is File.ReleaseRows over all the savepoint's files: for a
// pass that reads them together.
func (sp *Savepoint) ReleaseRows() int {
	var bytes int64
	rows := 0
	for _, f := range sp.Files {
		if f.Snapshot != nil {
			bytes, rows = bytes+f.mappedBytes(), rows+f.Snapshot.NumRows()
		}
	}
	return releaseRows(bytes, rows)
}

// maxReleaseRows is the most rows read between two releases of mapped
// pages, and releaseBytes about the most bytes.
const (
	maxReleaseRows = 1 << 18
	releaseBytes   = 32 << 20
)

// releaseRows returns the rows of about releaseBytes, at the average of
// rows rows in bytes bytes, between 1 and maxReleaseRows.
func releaseRows(bytes int64, rows int) int {
	if rows == 0 || bytes <= releaseBytes*int64(rows)/maxReleaseRows {
		return maxReleaseRows
	}
	return int(max(1, releaseBytes*int64(rows)/bytes))
}

// A Pacer spaces out an action along a pass whose position (a row, or a
// count of rows or bytes) only grows: the long passes over a mapped input
// release its pages from the resident set every File.ReleaseRows rows, and
// ask whether to stop as often.
type Pacer struct{ next, every int }

// NewPacer returns a Pacer for an action every every units (at least 1),
// first due at position first.
func NewPacer(first, every int) Pacer { return Pacer{next: first, every: max(every, 1)} }

// Due reports whether the action is due at position at: at is the first
// position or, since it was last due, has moved on by every or more.
func (p *Pacer) Due(at int) bool {
	if at < p.next {
		return false
	}
	p.next = at + p.every
	return true
}

// Next returns the position from which the action is next due.
func (p *Pacer) Next() int { return p.next }

// ReleasePages drops the pages of the savepoint's memory maps from the
// process's resident set (they stay in the page cache and fault back in when
// read again). Long passes call it to keep memory bounded on inputs larger
// than memory.
func (sp *Savepoint) ReleasePages() {
	for _, f := range sp.Files {
		f.ReleasePages()
	}
}

// CheckUnchanged reports ErrInputChanged when a directory of the tree
// listed at open was replaced (see checkDirs), or when any payload, or any
// materialisation a changelog payload's handles named, is not as it was
// when read: its size, modification time, device or inode differ, or only
// its change time moved (a chmod, a hard link, a rename) and its bytes no
// longer have the CRC-32C they had. A writer must not publish a mix of old
// and new input. Files built in memory (no Path) have nothing to check.
func (sp *Savepoint) CheckUnchanged() error {
	if err := checkDirs(sp.dirs); err != nil {
		return err
	}
	for _, f := range sp.Files {
		if f.Path == "" || f.Missing {
			continue
		}
		if err := checkStamp(f.Path, f.stamp, f.CRC32C); err != nil {
			return err
		}
		// A changelog's state is in its materialisations, read at open.
		for _, m := range f.matStamps {
			if err := checkStamp(m.path, m.stamp, m.crc); err != nil {
				return err
			}
		}
	}
	return nil
}

// mapInto is the File resolveHandleRel maps f's large materialisations
// into: f, when opened Columnar; else nil.
func mapInto(f *File, opts OpenOptions) *File {
	if opts.Columnar {
		return f
	}
	return nil
}

// resolveHandleRel locates a materialisation handle inside the tree at root.
// Handles are paths written by the job (<base>/v<gen>/<idx>/materializations/
// mat-<id>.bin, absolute when the job's base was): the tail from the
// v<gen>/ component on locates the file within the copied tree, and must
// stay within its subtask directory v<gen>/<idx> (see realWithin). The
// handle itself is read only when it is relative to root, and must stay
// within root. The file must be a regular file; read whole, no larger
// than decompressCeiling. With into (a file opened Columnar), a file of
// matMapMin bytes or more is memory-mapped instead, and the map kept in
// into.matMaps. It returns the file's bytes, its path from root as the
// handle names it, and its real path (its identity: see handleIdentity).
func resolveHandleRel(root, handle string, into *File) (data []byte, rel, id string, stamp matStamp, err error) {
	rel, err = locateHandle(root, handle, func(dir, rel string) (err error) {
		if id, err = realWithin(dir, rel); err != nil {
			return err
		}
		data, stamp.stamp, stamp.crc, err = readMaterialization(id, into)
		return err
	})
	if err == nil {
		stamp.path = id
	}
	return data, rel, id, stamp, err
}

// matMapMin is the smallest materialisation file resolveHandleRel maps
// rather than reads whole (a variable for tests).
var matMapMin int64 = 8 << 20

// readMaterialization returns the bytes of the materialisation file at
// path (a regular file: openRegularFile), its stamp before they were read
// and their CRC-32C: mapped, into into.matMaps, when into is not nil and
// the file has matMapMin bytes or more (its CRC read with pread, which
// leaves no page resident), else read whole, of at most
// decompressCeiling bytes. The replay reads a mapped one a block at a time (see
// replayInFile), so that memory holds neither it nor its rows.
func readMaterialization(path string, into *File) (_ []byte, _ fileStamp, _ uint32, err error) {
	fh, st, err := openRegularFile(path)
	if err != nil {
		return nil, fileStamp{}, 0, err
	}
	if into == nil || st.Size() < matMapMin {
		defer fh.Close()
		data, err := readOpenedFile(fh, st, path, decompressCeiling)
		if err != nil {
			return nil, fileStamp{}, 0, err
		}
		return data, stampOf(st), CRC32C(data), nil
	}
	defer func() {
		if err != nil {
			fh.Close()
		}
	}()
	crc, err := checksumFile(fh, st.Size())
	if err != nil {
		return nil, fileStamp{}, 0, fmt.Errorf("read %s: %w", path, err)
	}
	data, err := mapFile(fh, st.Size())
	if err != nil {
		return nil, fileStamp{}, 0, fmt.Errorf("read %s: %w", path, err)
	}
	into.matMaps = append(into.matMaps, &mappedFile{f: fh, data: data})
	return data, stampOf(st), crc, nil
}

// unreadMat is the path rel from the root of a materialisation whose
// handle row was not read: another handle names its file, id (see
// handleIdentity).
type unreadMat struct {
	rel, id string
}

// notADir says why path, where a subtask directory was looked for, is
// none, if something is there: " (v1/2 is a symbolic link that cannot be
// followed: ...)", " (... is a regular file)"; "" when nothing is.
func notADir(path string) string {
	lst, err := os.Lstat(path)
	if err != nil {
		return ""
	}
	name := ShowName(filepath.Join(filepath.Base(filepath.Dir(path)), filepath.Base(path)))
	if lst.Mode()&fs.ModeSymlink != 0 {
		st, err := os.Stat(path)
		switch {
		case err != nil:
			return fmt.Sprintf(" (%s is a symbolic link that cannot be followed: %v)", name, errors.Unwrap(err))
		case !st.IsDir():
			return fmt.Sprintf(" (%s is a symbolic link to %s, not a directory)", name, dirKind(st.Mode()))
		}
		return ""
	}
	if !lst.IsDir() {
		return fmt.Sprintf(" (%s is %s, not a directory)", name, dirKind(lst.Mode()))
	}
	return ""
}

// dirKind names the kind of a file that is not a directory (m).
func dirKind(m fs.FileMode) string {
	if m.IsRegular() {
		return "a regular file"
	}
	return fileKind(m)
}

// handleIdentity returns the file a materialisation handle names in the
// tree at root, as resolveHandleRel finds it: id is its real path, the same
// for every handle naming that file (x/v1/0/materializations/mat-1.bin and
// y/v1/0/materializations/mat-1.bin alike), and rel its path from root as
// the handle names it. A handle that names no file there, or one that
// cannot be read, is its own identity, with no rel (reading it reports
// why).
func handleIdentity(root, handle string) (id, rel string) {
	var real string
	rel, err := locateHandle(root, handle, func(dir, rel string) (err error) {
		real, err = realWithin(dir, rel)
		return err
	})
	if err != nil {
		return "handle:" + handle, ""
	}
	return real, rel
}

// errNoTree is the error of a materialisation handle of a changelog file
// given alone, outside a subtask directory of a tree.
var errNoTree = fmt.Errorf("the changelog is not in a subtask directory (v<generation>/<subtask>/) of a checkpoint tree, in which its handles are resolved: give the tree, or the changelog in its place in it (%w)", ErrOutsideTree)

// isSubtaskDir reports whether dir is a subtask directory of a tree:
// v<generation>/<subtask>.
func isSubtaskDir(dir string) bool {
	_, sub := subtaskIndex(filepath.Base(dir))
	_, gen := parseGeneration(filepath.Base(filepath.Dir(dir)))
	return sub && gen
}

// locateHandle calls use with the places in the tree at root where a
// materialisation handle may lie, in resolveHandleRel's order, until one
// is no fs.ErrNotExist, and returns the handle's path from root there.
func locateHandle(root, handle string, use func(dir, rel string) error) (string, error) {
	if root == "" {
		return "", errNoTree
	}
	parts := strings.Split(filepath.ToSlash(handle), "/")
	for i := 0; i+2 < len(parts); i++ {
		if _, ok := parseGeneration(parts[i]); !ok {
			continue
		}
		if _, ok := subtaskIndex(parts[i+1]); !ok {
			continue
		}
		err := use(filepath.Join(root, parts[i], parts[i+1]), filepath.Join(parts[i+2:]...))
		if err == nil {
			return filepath.Join(parts[i:]...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	if !filepath.IsAbs(handle) {
		err := use(root, handle)
		if err == nil {
			return handle, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("materialisation not found in the tree at %s (looked for the path from its v<generation>/ component on)", root)
}

// GroupConflict is an operator whose keyed rows the files of more than one
// chain group hold.
type GroupConflict struct {
	Op     uint64
	Groups []Group // in subtask order
}

// groupConflicts returns the operators whose keyed rows the files of more
// than one of groups hold, in operator order.
func groupConflicts(sp *Savepoint, groups []Group) []GroupConflict {
	if len(groups) < 2 {
		return nil
	}
	keyedOps := make([]map[uint64]bool, len(sp.Files))
	ForEach(len(sp.Files), func(i int) {
		ev := groupEvidence{ops: map[uint64]bool{}}
		if f := sp.Files[i]; f.Snapshot != nil {
			keyedEvidence(f.Snapshot, &ev, false)
			f.ReleasePages()
		}
		keyedOps[i] = ev.ops
	})
	files, ops := sp.keyedFilesByGroup(keyedOps)
	var out []GroupConflict
	for _, op := range ops {
		if len(files[op]) > 1 {
			out = append(out, GroupConflict{Op: op, Groups: groupsInOrder(files[op])})
		}
	}
	return out
}

// keyedFilesByGroup returns, of the operators whose keyed rows the files
// of sp hold (keyedOps[i]: those of sp.Files[i]), the indexes of the files
// holding each, by chain group, and the operators in order.
func (sp *Savepoint) keyedFilesByGroup(keyedOps []map[uint64]bool) (map[uint64]map[Group][]int, []uint64) {
	files := map[uint64]map[Group][]int{}
	var ops []uint64
	for i, f := range sp.Files {
		g, ok := sp.GroupOf(f.Subtask)
		if !ok {
			continue
		}
		for op := range keyedOps[i] {
			if files[op] == nil {
				files[op] = map[Group][]int{}
				ops = append(ops, op)
			}
			files[op][g] = append(files[op][g], i)
		}
	}
	slices.Sort(ops)
	return files, ops
}

// groupsInOrder returns the groups of m in subtask order.
func groupsInOrder[V any](m map[Group]V) []Group {
	return slices.SortedFunc(maps.Keys(m), func(a, b Group) int { return a.First - b.First })
}

// groupConflictWarning says what GroupConflicts holds, "" when nothing.
func (sp *Savepoint) groupConflictWarning() string {
	n := len(sp.GroupConflicts)
	if n == 0 {
		return ""
	}
	var ops []string
	for k, c := range sp.GroupConflicts[:min(n, 4)] {
		gs := make([]string, len(c.Groups))
		for i, g := range c.Groups {
			gs[i] = FormatGroups([]Group{g})
		}
		what := fmt.Sprintf("op %d in %s", c.Op, strings.Join(gs, " and "))
		if k == 0 {
			what = fmt.Sprintf("op %d has keyed rows in groups %s", c.Op, strings.Join(gs, " and "))
		}
		ops = append(ops, what)
	}
	if n > 4 {
		ops = append(ops, fmt.Sprintf("%d more operators likewise", n-4))
	}
	return fmt.Sprintf("the chain groups given, %s, do not fit the rows: %s; an operator runs in one chain group, and only its subtasks restore its keyed state, so under these groups the rows in the others are copies no restore reads (sptool validate names the files; without --groups, the groups are inferred from the rows, and sptool inspect shows them)", FormatGroups(sp.Groups), strings.Join(ops, ", "))
}

// InferGroups infers the chain groups of a tree from its keyed rows (first
// key byte below 128): which operators hold them in each subtask file, and
// in which key groups.
//
// An operator runs in one chain group, so the files from the first to the
// last that hold its keyed rows are in one group, and a file without keyed
// rows joins the group before it, unless it holds rows of other operators
// only than the file before it (a keyless chain: a sink, a source), or the
// group before it holds every keyed row in its own file's range (a keyless
// chain whose files hold the operator rows a restore copies into every
// file, or none), or the operators start a group at the next file with
// keyed rows whose key groups fit it clearly better with the keyless files
// as its first (a keyed group whose first file holds only the operator
// rows), when
// a group may start there. Within those bounds the tree is cut into
// the blocks that best explain where the keyed rows lie: in a group of N
// subtasks the k-th file holds the key groups of
// KeyGroupRangeForSubtask(k, N), so each distinct key group a file holds
// inside its range scores log(128/size of the range), and each outside it
// (a stale copy) costs log(128). Of the cuts scoring the most, the one with
// the fewest groups is taken. So a group whose files share no operator (a
// sparse tree: few keys per operator) is still found whole. A tree without
// keyed rows is one group, and so are adjacent groups without keyed state.
// Trees of more than 512 files are cut by operators alone (the search by
// key groups takes time cubic in the number of files). Otherwise it
// records in each file the key groups it read (File.KeyGroupsHeld).
func InferGroups(files []*File) []Group {
	// The files are read at once, one goroutine per CPU.
	ev := make([]groupEvidence, len(files))
	ForEach(len(files), func(i int) {
		ev[i].ops = map[uint64]bool{}
		ev[i].unread = files[i].Undecodable != nil
		if f := files[i]; f.Snapshot != nil {
			keyedEvidence(f.Snapshot, &ev[i], len(files) <= maxInferFiles)
			// (Kept for KeyGroupsHeld: read a key at a time when the
			// files are few enough.)
			f.kgs, f.kgsKnown = ev[i].kgs, len(files) <= maxInferFiles
			if len(ev[i].ops) == 0 {
				ev[i].stateOps = operatorsOf(f.Snapshot)
			}
			f.ReleasePages() // keep the pages read cached, not resident
		}
	})
	// A group is consecutive subtasks: no group spans a missing one (see
	// Savepoint.MissingSubtasks).
	var groups []Group
	for lo := 0; lo < len(files); {
		hi := lo + 1
		for hi < len(files) && files[hi].Subtask == files[hi-1].Subtask+1 {
			hi++
		}
		var sizes []int
		if len(files) <= maxInferFiles {
			sizes = cutByKeyGroups(ev[lo:hi])
		} else {
			sizes = cutByOperators(ev[lo:hi])
		}
		at := lo
		for _, n := range sizes {
			groups = append(groups, Group{First: files[at].Subtask, Count: n})
			at += n
		}
		lo = hi
	}
	return groups
}

// EmptyPayloadWarnings returns a warning for each empty payload of a tree
// (File.EmptyPayload), which the commands that only read (cat, export,
// diff) read as empty state: clink's restore refuses it (plan, apply and
// rescale refuse it too, unless told to accept it).
func (sp *Savepoint) EmptyPayloadWarnings() []string {
	if sp.Kind == InputFile {
		return nil
	}
	var out []string
	for _, f := range sp.Files {
		if f.EmptyPayload() {
			it := "it"
			if f.Size > 0 {
				it = "it, decompressed,"
			}
			out = append(out, fmt.Sprintf("%s %s, read as empty state: clink's restore treats %s as absent and refuses to restore subtask %d (section 5.3) unless CLINK_ALLOW_MISSING_RESTORE_STATE is set (sptool validate says more)", ShowName(f.Rel), f.EmptyHow(), it, f.Subtask))
		}
	}
	return out
}

// EmptyPayload reports whether the payload holds nothing: 0 bytes, or
// compressed as a whole around nothing, which is what a 0-byte payload
// becomes once compressed, and what a restore of the tree decompressed
// would take for an absent file.
func (f *File) EmptyPayload() bool {
	return f.Size == 0 || f.Compression != CompressNone && f.Snapshot != nil && f.Snapshot.Variant == Empty
}

// EmptyHow says how an empty payload (EmptyPayload) is empty: "is 0 bytes",
// or "decompresses (gzip) to 0 bytes".
func (f *File) EmptyHow() string {
	if f.Size == 0 {
		return "is 0 bytes"
	}
	return "decompresses (" + f.Compression + ") to 0 bytes"
}

// ReadWarnings says, one line each, where the tree was read otherwise than
// clink's restore reads it: the files of the checkpoint left out because
// the tree's only marker does not list their subtask (Unlisted: a command
// over the tree reads none of their rows, so an erasure does not reach
// them; one given the file itself does), those it does not list that are
// read (File.Unlisted), a newer checkpoint marked
// complete whose files are missing (NewerCompleted: an older one was
// read), and a subtask directory or payload whose name is not the one
// clink opens (v1/01, checkpoint-07.snap: read here, not by clink); chain
// groups given that the rows contradict (GroupConflicts), and bytes after
// a file's end-of-stream marker that hold more of a stream
// (Snapshot.Hidden). validate reports each as a finding.
func (sp *Savepoint) ReadWarnings() []string {
	var out []string
	for _, rel := range sp.Unlisted {
		out = append(out, fmt.Sprintf("%s holds checkpoint %d, but %s does not list its subtask: it is left out: none of its rows is read, nor written to an output (sptool validate says more; given the file itself, %s, a command reads it)", rel, sp.Checkpoint, ShowName(sp.CompletedRel), filepath.Join(sp.Root, rel)))
	}
	for _, f := range sp.Files {
		if f.Unlisted {
			out = append(out, fmt.Sprintf("%s holds checkpoint %d, and %s does not list its subtask, but lists one above it: it is read, as a restore at that layout starts the subtask from it, though that restore unions its operator rows into no other subtask's state; an output that keeps the file in place leaves it out of its marker's list too, which lists every new subtask of a rescaled group (sptool validate says more)", f.Rel, sp.Checkpoint, ShowName(sp.CompletedRel)))
		}
	}
	if w := sp.groupConflictWarning(); w != "" {
		out = append(out, w)
	}
	for _, f := range sp.Files {
		if s := f.Snapshot; s != nil && s.Hidden.Found() {
			out = append(out, fmt.Sprintf("%s: the %d bytes after its end-of-stream marker %s (sptool reads the rows before the marker, as clink restores them; sptool validate reports the file)", ShowName(f.Rel), s.TrailingBytes, s.Hidden))
		}
	}
	for _, rel := range sp.NewerCompleted {
		out = append(out, fmt.Sprintf("%s marks a newer checkpoint complete, but v%d holds none of its files: checkpoint %d was read instead (a job restoring the latest completed checkpoint finds no state; --checkpoint chooses one)", ShowName(rel), sp.Generation, sp.Checkpoint))
	}
	for _, m := range sp.UnreadMarkers {
		out = append(out, "marker "+m+": it does not parse, and is left unread (it marks another checkpoint than the one read, which a restore of that one does not look at)")
	}
	for _, m := range sp.EmptyMaterializations() {
		out = append(out, fmt.Sprintf("materialisation %s, which subtask %d's changelog references, is 0 bytes: read as empty materialised state, as clink's restore reads it without a word; a file cut short? (sptool validate says more)", ShowName(m.Rel), m.Subtask))
	}
	if sp.Kind == InputFile {
		return out
	}
	for _, f := range sp.Files {
		dir, name, wantDir, wantName := sp.clinkNames(f)
		if dir != wantDir {
			out = append(out, fmt.Sprintf("directory %s was read as subtask %d, but clink reads subtask %d from v%d/%s: a job restoring the tree as it is finds no state for it (sptool's outputs name it %s)", ShowName(filepath.ToSlash(filepath.Dir(f.Rel))), f.Subtask, f.Subtask, sp.Generation, wantDir, wantDir))
		}
		if name != wantName {
			out = append(out, fmt.Sprintf("%s was read as checkpoint %d, but clink opens %s: a job restoring the tree as it is finds no state for subtask %d (sptool's outputs name it %s)", ShowName(f.Rel), sp.Checkpoint, wantName, f.Subtask, wantName))
		}
	}
	return out
}

// EmptyMaterialization is a 0-byte materialisation file a changelog of a
// changelog+file tree references (see Savepoint.EmptyMaterializations).
type EmptyMaterialization struct {
	// Rel is its path relative to the tree's root; Subtask that of the
	// changelog referencing it.
	Rel     string
	Subtask int
}

// EmptyMaterializations returns the 0-byte materialisation files the
// changelogs of sp reference, in file order: clink's restore reads one as
// empty materialised state without a word, though its writer never writes
// one empty (a zero-row stream at least), so each is likely a file cut
// short. validate reports them; the writers refuse them unless told the
// state is meant to be empty.
func (sp *Savepoint) EmptyMaterializations() []EmptyMaterialization {
	var out []EmptyMaterialization
	for _, f := range sp.Files {
		for i, m := range f.MaterializationInfo {
			if m.Size == 0 && i < len(f.Materializations) {
				out = append(out, EmptyMaterialization{Rel: f.Materializations[i], Subtask: f.Subtask})
			}
		}
	}
	return out
}

// clinkNames returns the names of the subtask directory and the payload
// of tree file f, and the names clink opens for its subtask and the
// tree's checkpoint: both numbers in decimal (format 5.1, 5.3), so v1/01
// and checkpoint-017.snap are read here and not by clink. A name that
// does not end in .snap (a compressed payload) is given as its own want.
func (sp *Savepoint) clinkNames(f *File) (dir, name, wantDir, wantName string) {
	dir, name = filepath.Base(filepath.Dir(f.Path)), filepath.Base(f.Path)
	prefix := "checkpoint-"
	if strings.HasPrefix(name, "changelog-") {
		prefix = "changelog-"
	}
	wantName = name
	if strings.HasSuffix(name, ".snap") {
		wantName = prefix + strconv.FormatUint(sp.Checkpoint, 10) + ".snap"
	}
	return dir, name, strconv.Itoa(f.Subtask), wantName
}

// UndecodableError is nil when every file of sp decoded, and otherwise an
// error naming the files recorded as undecodable or missing
// (OpenOptions.KeepUndecodable, File.Missing: errors.Is finds
// ErrMissingPayload) and the first one's reason, joined with that reason
// (errors.Is and As see it): the readers other than Validate need every
// file's rows.
func (sp *Savepoint) UndecodableError() error {
	bad := sp.undecodable()
	if len(bad) == 0 {
		return nil
	}
	more := ""
	if len(bad) > 1 {
		names := make([]string, 0, len(bad)-1)
		for _, f := range bad[1:] {
			names = append(names, f.Rel)
		}
		why := notReadAll(bad[1:])
		if !slices.ContainsFunc(bad, func(f *File) bool { return f.Missing }) {
			why += " either" // as the first: none is missing
		}
		more = fmt.Sprintf(" (and %s %s, which %s)", plural(len(names), "file", "files"), strings.Join(names, ", "), why)
	}
	return fmt.Errorf("%w%s", bad[0].Undecodable, more)
}

// undecodable returns the files of sp that do not decode (File.Undecodable).
func (sp *Savepoint) undecodable() []*File {
	var bad []*File
	for _, f := range sp.Files {
		if f.Undecodable != nil {
			bad = append(bad, f)
		}
	}
	return bad
}

// CheckConsecutive fails when the tree read lacks a subtask below its
// highest (MissingSubtasks): its chain groups, which say which copy of a
// row is authoritative, cannot be told across the gap, and the rows of the
// missing subtask are not read.
func (sp *Savepoint) CheckConsecutive() error {
	missing := sp.MissingSubtasks()
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%s: its chain groups cannot be told across the gap (sptool validate says more)", sp.NotConsecutive(missing))
}

// NotConsecutive says that the tree lacks the subtasks missing (of
// MissingSubtasks), and why: "the tree's subtasks are not consecutive (it
// holds 0,1,3; subtask 2 has no directory)", the start of every message
// about such a tree.
func (sp *Savepoint) NotConsecutive(missing []int) string {
	return fmt.Sprintf("the tree's subtasks are not consecutive (it holds %s; %s)", sp.SubtaskList(), sp.DescribeMissing(missing))
}

// DescribeMissing says why the tree read lacks the subtasks missing (of
// MissingSubtasks): "subtask 2 has no directory", or, for a directory the
// checkpoint's only marker does not list, "the directory of subtask 2
// holds no checkpoint 7".
func (sp *Savepoint) DescribeMissing(missing []int) string {
	var absent, bare []int
	for _, i := range missing {
		if slices.Contains(sp.bareSubtasks, i) {
			bare = append(bare, i)
		} else {
			absent = append(absent, i)
		}
	}
	var parts []string
	if len(absent) > 0 {
		parts = append(parts, fmt.Sprintf("%s %s %s no directory", plural(len(absent), "subtask", "subtasks"), FormatGroups(runsOf(absent)), plural(len(absent), "has", "have")))
	}
	if len(bare) > 0 {
		parts = append(parts, fmt.Sprintf("the %s of %s %s %s no checkpoint %d", plural(len(bare), "directory", "directories"), plural(len(bare), "subtask", "subtasks"), FormatGroups(runsOf(bare)), plural(len(bare), "holds", "hold"), sp.Checkpoint))
	}
	return strings.Join(parts, "; ")
}

// MissingSubtasks returns the subtasks below the tree's highest that have
// no directory of the checkpoint read: a job restoring at this layout
// refuses to start such a subtask (format 5.3), and the tree's chain groups
// cannot span them. Nil for a file input.
func (sp *Savepoint) MissingSubtasks() []int {
	if sp.Kind == InputFile || len(sp.Files) == 0 {
		return nil
	}
	var missing []int
	next := 0
	for _, f := range sp.Files {
		for ; next < f.Subtask; next++ {
			missing = append(missing, next)
		}
		next = f.Subtask + 1
	}
	return missing
}

// maxInferFiles bounds the trees whose groups InferGroups finds from key
// groups: the search takes time cubic in the number of files.
const maxInferFiles = 512

// groupEvidence is what InferGroups reads of a file: the operators with
// keyed rows, and (when asked for) the key groups of those rows.
type groupEvidence struct {
	ops map[uint64]bool
	kgs [NumKeyGroups / 64]uint64
	// stateOps are the operators of a file without keyed rows (nil when
	// not read: a file with keyed rows, or too many rows).
	stateOps map[uint64]bool
	// unread: the file does not decode (File.Undecodable), so it says
	// nothing of its group: it may start one as well as join the one
	// before it, whichever explains the other files best.
	unread bool
}

// maxStateOpsRows is the most rows of a file without keyed rows whose
// operators InferGroups reads.
const maxStateOpsRows = 1 << 20

// operatorsOf returns the operators of the rows of s, or nil when s has
// more than maxStateOpsRows rows.
func operatorsOf(s *Snapshot) map[uint64]bool {
	if s.NumRows() > maxStateOpsRows {
		return nil
	}
	ops := map[uint64]bool{}
	cur := s.NewCursor()
	for i := range cur.Len() {
		ops[cur.Op(i)] = true
	}
	return ops
}

// startsGroup reports whether file i, which has no keyed rows, may start a
// chain group: it has rows, and they share no operator with the file
// before it (its keyed rows' operators, or the rows' of a file without
// keyed rows). The subtasks of one chain write the same operators' state,
// so a file of other operators (a keyless sink chained apart) is of
// another chain, while one with no rows, or with the operators before it
// (a subtask without keyed rows yet), stays in the group before it.
func startsGroup(ev []groupEvidence, i int) bool {
	e := ev[i]
	if i == 0 || len(e.ops) > 0 || len(e.stateOps) == 0 {
		return false
	}
	before := ev[i-1].ops
	if len(before) == 0 {
		if before = ev[i-1].stateOps; before == nil {
			return false // not read: no evidence against joining
		}
	}
	return !overlaps(before, e.stateOps)
}

// cutByOperators cuts the files where consecutive files share no keyed
// operator (a file without keyed rows joins the group before it) and
// returns the sizes of the groups.
func cutByOperators(ev []groupEvidence) []int {
	var sizes []int
	var cur map[uint64]bool
	for i, e := range ev {
		if i > 0 && (len(e.ops) == 0 || overlaps(cur, e.ops)) {
			sizes[len(sizes)-1]++
			for op := range e.ops {
				cur[op] = true
			}
			continue
		}
		sizes = append(sizes, 1)
		cur = maps.Clone(e.ops)
	}
	return sizes
}

// cutByKeyGroups returns the sizes of the groups of the best cut of the
// files (see InferGroups).
func cutByKeyGroups(ev []groupEvidence) []int {
	n := len(ev)
	// canCut[i]: no operator holds keyed rows both before file i and from
	// it on.
	last := map[uint64]int{}
	for i, e := range ev {
		for op := range e.ops {
			last[op] = i
		}
	}
	reach := make([]int, n+1) // reach[i]: the last file of an operator seen in files < i
	for i := range n {
		reach[i+1] = reach[i]
		for op := range ev[i].ops {
			reach[i+1] = max(reach[i+1], last[op])
		}
	}
	// A file without keyed rows joins the group before it, unless its
	// operators say it is of another chain (startsGroup): stale copies in
	// that group's files (chained subtasks leave them) could otherwise
	// make a smaller group explain them better.
	canCut := func(i int) bool {
		return i == n || reach[i] < i && (len(ev[i].ops) > 0 || ev[i].unread || startsGroup(ev, i))
	}
	// below[i][kg] counts file i's key groups below kg; all[i] all of them.
	below := make([][NumKeyGroups + 1]uint8, n)
	all := make([]int, n)
	for i, e := range ev {
		for kg := range NumKeyGroups {
			below[i][kg+1] = below[i][kg]
			if e.kgs[kg/64]&(1<<(kg%64)) != 0 {
				below[i][kg+1]++
			}
		}
		all[i] = int(below[i][NumKeyGroups])
	}
	const eps = 1e-9
	// A file without keyed rows whose operators do not tell it apart (a
	// restore copies every operator's rows into every file, format 10.3;
	// a first checkpoint may leave it empty) may still start a group
	// when the group before it holds every keyed row in its own file's
	// range: a keyed chain, then a keyless one (a sink).
	keylessCut := func(j int) bool { return j < n && reach[j] < j && len(ev[j].ops) == 0 }
	fits := func(i, j int) bool {
		for k := i; k < j; k++ {
			r := KeyGroupRangeForSubtask(k-i, j-i)
			if int(below[k][r.Last])-int(below[k][r.First]) != all[k] {
				return false
			}
		}
		return true
	}
	// Or when the operators cut the tree at the next file with keyed rows
	// (between): the keyless files before it are then the first of that
	// group (a keyed group with stale copies, then one whose first file
	// holds the operator rows alone) if its keys say so, that is if that
	// group, the keyed file on, explains them better with the keyless
	// files than without. Not a group of keyless files alone: dropping a
	// file with no keyed row yet from a group restored from fewer
	// subtasks, whose stale copies the smaller group explains better,
	// would cost nothing.
	firstKeyed := func(j int) int {
		for j < n && len(ev[j].ops) == 0 && !ev[j].unread {
			j++
		}
		return j
	}
	between := func(j int) bool {
		k := firstKeyed(j)
		return k < n && len(ev[k].ops) > 0 && canCut(k)
	}
	// How much better it must explain them: as much as two stale copies
	// cost. A few keys that fall in one half of the key groups by chance
	// (3 keys: one time in 8) would otherwise take a keyless file from a
	// group restored from fewer subtasks, whose stale copies the group
	// without it explains better, and hide the rows that group loses.
	betweenEvidence := 2 * logGain[1]
	// best[i] is the best cut of files i.., and onward[i] that of files
	// i.. starting with a group a cut between opens (see above).
	type cut struct {
		score         float64
		groups, next  int
		nextIsBetween bool
	}
	best, onward := make([]cut, n+1), make([]cut, n+1)
	for i := n - 1; i >= 0; i-- {
		best[i], onward[i] = cut{score: math.Inf(-1)}, cut{score: math.Inf(-1)}
		opens := keylessCut(i) && between(i)
		k := firstKeyed(i)
		for j := i + 1; j <= n; j++ {
			var rest cut
			isBetween := false
			switch {
			case canCut(j) || keylessCut(j) && fits(i, j):
				rest = best[j]
			case keylessCut(j) && between(j):
				rest, isBetween = onward[j], true
			default:
				continue
			}
			sc := blockScore(below[i:j], all[i:j])
			c := cut{score: sc + rest.score, groups: rest.groups + 1, next: j, nextIsBetween: isBetween}
			better := func(b cut) bool {
				tol := eps * max(1, math.Abs(c.score))
				return c.score > b.score+tol || c.score > b.score-tol && c.groups < b.groups
			}
			if better(best[i]) {
				best[i] = c
			}
			if opens && j > k && sc > blockScore(below[k:j], all[k:j])+betweenEvidence && better(onward[i]) {
				onward[i] = c
			}
		}
	}
	var sizes []int
	for i, c := 0, best[0]; i < n; {
		sizes = append(sizes, c.next-i)
		i = c.next
		if c.nextIsBetween {
			c = onward[i]
		} else {
			c = best[i]
		}
	}
	return sizes
}

// blockScore scores the files of block as one group (see InferGroups);
// below[k][kg] is the number of file k's key groups below kg.
func blockScore(below [][NumKeyGroups + 1]uint8, all []int) float64 {
	var sc float64
	n := len(below)
	for k := range below {
		r := KeyGroupRangeForSubtask(k, n)
		in := int(below[k][r.Last]) - int(below[k][r.First])
		if in > 0 {
			sc += float64(in) * logGain[r.Last-r.First]
		}
		sc -= float64(all[k]-in) * logGain[1]
	}
	return sc
}

// logGain[n] is log(128/n): what a key group inside a range of n key
// groups scores; logGain[1], log(128), is what one outside costs.
var logGain = func() (g [NumKeyGroups + 1]float64) {
	for n := 1; n <= NumKeyGroups; n++ {
		g[n] = math.Log(float64(NumKeyGroups) / float64(n))
	}
	return g
}()

// KeyedOperators returns the operators with keyed rows (first key byte
// below NumKeyGroups) in s, read as InferGroups reads them: from the prefix
// runs found at open when they say it, else mostly from the operator column
// (a block's keys are read only when it holds an operator not known yet to
// have keyed rows). A fault of a mapped input is raised in the caller (see
// Guard).
func (s *Snapshot) KeyedOperators() map[uint64]bool {
	e := groupEvidence{ops: map[uint64]bool{}}
	keyedEvidence(s, &e, false)
	return e.ops
}

// keyedEvidence adds to e.ops the operators with keyed rows (first key byte
// below NumKeyGroups) in s, and with keyGroups the key groups of those rows
// to e.kgs. The prefix runs found at open (Snapshot.Runs) say it without
// reading, when each run's keyed rows share their first byte. Otherwise,
// for the operators alone, once an operator is known to have one, its
// other rows need no look at their keys: mostly only the operator column
// is read, a block at a time with pread (through the map, each page's
// first touch would cost more than the read), and a block's keys only when
// it holds an operator not known yet. The key groups need every key read,
// a block at a time.
func keyedEvidence(s *Snapshot, e *groupEvidence, keyGroups bool) {
	ops := e.ops
	note := func(op uint64, key []byte) {
		if len(key) > 0 && key[0] < NumKeyGroups {
			ops[op] = true
			e.kgs[key[0]/64] |= 1 << (key[0] % 64)
		}
	}
	if !s.Columnar() {
		for _, r := range s.Rows {
			note(r.Op, r.Key)
		}
		return
	}
	if runs := s.Runs(); runs != nil && (!keyGroups || runsShareFirstByte(runs)) {
		for i := range runs.Len() {
			if r := runs.Run(i); r.KeyGroupByte {
				note(r.Op, r.First)
			}
		}
		return
	}
	if keyGroups {
		// Every key's first byte, a block at a time, in a loop that keeps
		// its state in registers: the key groups' bits and the row
		// before's operator; a keyed row of another operator goes to the
		// set (see opSet).
		set := opSet{m: ops}
		last, have := uint64(0), false
		s.eachKeyBlockIn(0, s.NumRows(), func(_ int, kc *KeyColumns, x, to int) bool {
			offs, keys := kc.Offs[x-kc.Lo:to-kc.Lo+1], kc.Keys
			var k0, k1 uint64
			prev, known := last, have
			for j, op := range kc.Ops[x-kc.Lo : to-kc.Lo] {
				o := offs[j]
				if o == offs[j+1] || keys[o] >= NumKeyGroups {
					continue
				}
				c := keys[o]
				bit, hi := uint64(1)<<(c&63), -uint64(c>>6) // hi: all ones for key groups 64-127
				k0, k1 = k0|bit&^hi, k1|bit&hi
				if !known || op != prev {
					prev, known = op, true
					set.add(op)
				}
			}
			e.kgs[0], e.kgs[1] = e.kgs[0]|k0, e.kgs[1]|k1
			last, have = prev, known
			return true
		})
		return
	}
	raw := poolBuf(8 * min(keyBlock, sinkSize/8))[:8*min(keyBlock, sinkSize/8)]
	defer putBuf(raw)
	block := wordsOf[uint64](raw)
	var kc KeyColumns
	for bi := range s.Batches {
		b := &s.Batches[bi]
		known, have := uint64(0), false
		for lo := 0; lo < b.Len(); lo += len(block) {
			hi := min(b.Len(), lo+len(block))
			blockOps := b.Ops[lo:hi]
			if b.file != nil && littleEndian {
				// On a failed read the map is read instead, as LoadOrMap
				// does: a file cut short faults there (see Guard).
				if b.file.readInto(bytesOf(block[:hi-lo]), bytesOf(b.Ops[lo:hi])) == nil {
					blockOps = block[:hi-lo]
				}
			}
			for j, op := range blockOps {
				if have && op == known || ops[op] {
					continue
				}
				if !kc.Holds(b, lo+j) {
					kc.LoadOrMap(b, lo+j, hi)
				}
				if key := kc.Key(lo + j); len(key) > 0 && key[0] < NumKeyGroups {
					ops[op] = true
					known, have = op, true
				}
			}
		}
	}
}

// opSet adds operators to a map (true), each once: an operator that is
// the one added last, or one of the first eight added, is not looked up in
// the map again. In clink's hash-map order the operator changes from row
// to row, and a pass over a file's keys that wrote each keyed row's
// operator to a map spent a third of its time there.
type opSet struct {
	m     map[uint64]bool
	first [8]uint64 // the first operators added; the slots not filled a copy of the first
	n     int       // how many of first are filled
	last  uint64
	has   bool // last is set
}

// add adds op.
func (s *opSet) add(op uint64) {
	if s.has && op == s.last {
		return
	}
	s.last, s.has = op, true
	if s.n > 0 && in8(&s.first, op) || s.n == len(s.first) && s.m[op] {
		return
	}
	s.m[op] = true
	switch {
	case s.n == 0:
		s.first = [8]uint64{op, op, op, op, op, op, op, op}
		s.n = 1
	case s.n < len(s.first):
		s.first[s.n] = op
		s.n++
	}
}

// in8 reports whether op is one of the eight of s, without a branch for
// each (min compiles to conditional moves on amd64).
func in8(s *[8]uint64, op uint64) bool {
	return min(s[0]^op, s[1]^op, s[2]^op, s[3]^op, s[4]^op, s[5]^op, s[6]^op, s[7]^op) == 0
}

// runsShareFirstByte reports whether the keyed rows of each run start with
// the same byte (the run's first and last keys do, and every key between
// lies between them).
func runsShareFirstByte(runs *PrefixRuns) bool {
	for i := range runs.Len() {
		if r := runs.Run(i); r.KeyGroupByte && (len(r.First) == 0 || len(r.Last) == 0 || r.First[0] != r.Last[0]) {
			return false
		}
	}
	return true
}

func overlaps(a, b map[uint64]bool) bool {
	for k := range b {
		if a[k] {
			return true
		}
	}
	return false
}

func (sp *Savepoint) checkGroups(gs []Group) error {
	next := 0
	if len(sp.Files) > 0 {
		next = sp.Files[0].Subtask
	}
	for _, g := range gs {
		if g.Count < 1 || g.First != next {
			return fmt.Errorf("chain groups %s do not match the tree: its subtask directories are %s", FormatGroups(gs), sp.SubtaskList())
		}
		next = g.First + g.Count
	}
	if len(sp.Files) == 0 || next != sp.Files[len(sp.Files)-1].Subtask+1 || len(sp.Files) != next-sp.Files[0].Subtask {
		return fmt.Errorf("chain groups %s do not match the tree: its subtask directories are %s", FormatGroups(gs), sp.SubtaskList())
	}
	return nil
}

// SubtaskList returns the subtasks of the tree's files, as "0,1,2".
func (sp *Savepoint) SubtaskList() string {
	s := make([]string, len(sp.Files))
	for i, f := range sp.Files {
		s[i] = strconv.Itoa(f.Subtask)
	}
	return strings.Join(s, ",")
}

// FormatGroups renders groups as "0-2,3-4".
func FormatGroups(gs []Group) string {
	s := make([]string, len(gs))
	for i, g := range gs {
		if g.Count == 1 {
			s[i] = strconv.Itoa(g.First)
		} else {
			s[i] = fmt.Sprintf("%d-%d", g.First, g.First+g.Count-1)
		}
	}
	return strings.Join(s, ",")
}

// ParseGroups parses "0-2,3-4" (each group a subtask range "a-b" or a single "a").
func ParseGroups(s string) ([]Group, error) {
	var out []Group
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		a, b, isRange := strings.Cut(part, "-")
		lo, err1 := strconv.Atoi(a)
		hi := lo
		var err2 error
		if isRange {
			hi, err2 = strconv.Atoi(b)
		}
		if err1 != nil || err2 != nil || lo < 0 || hi < lo {
			return nil, fmt.Errorf("bad chain group %q: want a subtask range like 0-2 or a single subtask", part)
		}
		if len(out) > 0 {
			prev := out[len(out)-1]
			if lo != prev.First+prev.Count {
				return nil, fmt.Errorf("chain group %q does not start right after the previous one (%d)", part, prev.First+prev.Count)
			}
		}
		out = append(out, Group{First: lo, Count: hi - lo + 1})
	}
	return out, nil
}

// JobVersions returns the job-wide version map: the map of the first file
// carrying a non-empty one, as clink's merge keeps it (the map is stamped in
// every file), and how many different maps the files carry (a file without
// a map counts as carrying the empty one).
func (sp *Savepoint) JobVersions() (VersionMap, int) {
	var vm VersionMap
	distinct := map[string]bool{}
	for _, f := range sp.Files {
		if f.Snapshot == nil {
			continue
		}
		distinct[f.Snapshot.Versions.Pack()] = true
		if vm.Len() == 0 {
			vm = f.Snapshot.Versions
		}
	}
	return vm, len(distinct)
}

// GroupOf returns the chain group holding global subtask i.
func (sp *Savepoint) GroupOf(i int) (Group, bool) {
	for _, g := range sp.Groups {
		if g.Contains(i) {
			return g, true
		}
	}
	return Group{}, false
}

// File returns the file of subtask i, or nil.
func (sp *Savepoint) File(i int) *File {
	for _, f := range sp.Files {
		if f.Subtask == i {
			return f
		}
	}
	return nil
}
