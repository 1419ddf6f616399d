package savepoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sptool/sptool/internal/testhook"
)

// TreeWriter writes a checkpoint tree. Everything is written into a staging
// directory beside the output and renamed into place by Commit, so a crash or
// kill at any moment leaves either no output or a complete one. Subtasks may
// be written (WriteSubtask*, CopySubtask) from several goroutines at once.
type TreeWriter struct {
	final, stage string
	out          string    // the output's path as given, for messages
	made         *MadeDirs // the output's parent directories CreateTree made
	gen          int
	ckpt         uint64
	backend      Backend
	stateBase    string
	force        bool
	markerExtra  []MetaEntry
	unlisted     []int
	before       func() error   // TreeOptions.BeforePublish
	life         sync.Mutex     // held by Commit and by Abort for their whole run
	mu           sync.Mutex     // guards subtasks, unfinished, committing, committed and aborted
	writes       sync.WaitGroup // the subtask writes under way (Abort waits for them)
	committing   bool           // Commit took the subtasks written: no more are
	subtasks     []int
	unfinished   map[int]bool // subtasks whose write began and has not succeeded
	committed    bool
	aborted      bool       // Abort was called: nothing more is written
	matMu        sync.Mutex // guards mats
	mats         map[int][]FileInfo
	spare        []*os.File // held for removing the staging directory (reserveFiles)
}

// spareFiles is how many descriptors a TreeWriter holds from CreateTree
// until its tree is published or removed: removing a tree opens its root
// and each directory down to the deepest (v<gen>/<subtask>/materializations,
// _jobs/<job>/receipts), and a write that failed because the process may
// open no more files (a tree of many subtasks, each payload held open while
// it is read) leaves none free for that.
const spareFiles = 4

// reserveFiles opens n descriptors (of the null device) to close when they
// are needed. Its error is that of a process that may open no more files
// (EMFILE, ENFILE); where the null device cannot be opened for another
// reason, it reserves what it could.
func reserveFiles(n int) ([]*os.File, error) {
	var files []*os.File
	for range n {
		f, err := os.Open(os.DevNull)
		if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
			closeAll(files)
			return nil, err
		}
		if err != nil {
			break
		}
		files = append(files, f)
	}
	return files, nil
}

// setCommitted records that Commit published the tree.
func (t *TreeWriter) setCommitted() {
	t.mu.Lock()
	t.committed = true
	t.mu.Unlock()
}

// releaseSpare closes the descriptors CreateTree reserved.
func (t *TreeWriter) releaseSpare() {
	closeAll(t.spare)
	t.spare = nil
}

// closeAll closes files.
func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// errCommitted is the error of a TreeWriter used after its Commit
// published the tree.
var errCommitted = errors.New("the tree was committed already: a TreeWriter writes and commits one tree")

// errCommitting is the error of a subtask written while Commit runs: the
// marker lists the subtasks written before it.
var errCommitting = errors.New("the tree is being committed: its subtasks are written before Commit")

// errAborted is the error of a TreeWriter used after its Abort removed
// the staging directory.
var errAborted = errors.New("the tree was aborted: a TreeWriter writes nothing once Abort is called")

// TreeOptions describe the tree to write.
type TreeOptions struct {
	// Generation is the tree's generation, its v<gen> directory (clink's
	// start at 1), and Checkpoint the checkpoint id of its files.
	Generation int
	Checkpoint uint64
	// Backend is the layout written ("": BackendFile).
	Backend Backend
	// StateBase is the base path the job will restore from, used in the
	// materialisation handles of a changelog+file tree (default: the
	// output directory's absolute path).
	StateBase string
	// Force replaces an existing output directory.
	Force bool
	// MarkerExtra are the lines of unknown keys the COMPLETED marker
	// carries after the known ones (Completed.Extra): the input marker's,
	// so that they survive a rewrite as unknown metadata keys do.
	MarkerExtra []MetaEntry
	// Unlisted are subtasks the COMPLETED marker leaves out of its list
	// though they are written: those of input files the input's marker did
	// not list (File.Unlisted) written in the same place. A restore starts
	// each from its own file and unions its operator rows into no other
	// subtask's state, as it did the input's.
	Unlisted []int
	// BeforePublish, when set, runs in Commit once the tree is whole and
	// the output it replaces, if any, was checked, just before it is put
	// in place; its error stops the commit (nothing published). Something
	// the new output makes stale goes there (the report --force replaces):
	// a run that stops before it leaves it, one killed after it leaves
	// neither it nor a tree that it would describe wrongly.
	BeforePublish func() error
}

// CreateTree starts writing a tree at out. It refuses an existing out unless
// opts.Force is set (an error for which errors.Is(err, fs.ErrExist) holds),
// an empty out, a generation below 0 or above MaxGeneration and a backend
// other than BackendFile and BackendChangelogFile ("" is BackendFile).
func CreateTree(out string, opts TreeOptions) (*TreeWriter, error) {
	switch {
	case out == "":
		return nil, errors.New("no output path")
	case opts.Generation < 0:
		return nil, fmt.Errorf("generation %d: a generation is 0 or more (clink's start at 1)", opts.Generation)
	case opts.Generation > MaxGeneration:
		return nil, fmt.Errorf("generation %d: above %d, the largest a COMPLETED marker holds", opts.Generation, MaxGeneration)
	case opts.Backend != "" && opts.Backend != BackendFile && opts.Backend != BackendChangelogFile:
		return nil, fmt.Errorf("backend %q: a tree is written for the %q or the %q backend", opts.Backend, BackendFile, BackendChangelogFile)
	}
	if _, err := os.Lstat(out); err == nil && !opts.Force {
		return nil, &OutputExistsError{Path: out}
	}
	abs := absPath(out)
	if opts.Backend == "" {
		opts.Backend = BackendFile
	}
	if opts.StateBase == "" {
		opts.StateBase = stateBaseOf(out, abs)
	}
	// Handles are the base, "/" and the path in the tree: "/srv/x/" is
	// written /srv/x/v1/..., not /srv/x//v1/... ("/" itself, /v1/...).
	opts.StateBase = strings.TrimRight(opts.StateBase, "/")
	if opts.Force {
		if err := CheckReplaceable(abs, true); err != nil {
			return nil, err
		}
	}
	// Taken before anything is made: a run that could not remove what it
	// made, were its write to fail, makes nothing.
	spare, err := reserveFiles(spareFiles)
	if err != nil {
		return nil, fmt.Errorf("keep %d files open to remove the staging directory should the write fail: %w", spareFiles, err)
	}
	made, err := MakeDirs(filepath.Dir(abs))
	if err != nil {
		closeAll(spare)
		return nil, fmt.Errorf("create output directory: %w", err)
	}
	// Mkdir, not MkdirAll: the staging directory is this run's alone.
	stage := abs + ".sptool-tmp-" + tempSuffix()
	if err := os.Mkdir(stage, 0o755); err != nil {
		closeAll(spare)
		made.Remove()
		return nil, fmt.Errorf("create staging directory: %w", err)
	}
	t := &TreeWriter{final: abs, out: out, stage: stage, made: made, gen: opts.Generation, ckpt: opts.Checkpoint, backend: opts.Backend, stateBase: opts.StateBase, force: opts.Force, markerExtra: opts.MarkerExtra, unlisted: opts.Unlisted, before: opts.BeforePublish, spare: spare}
	if err := os.Mkdir(filepath.Join(stage, "v"+strconv.Itoa(opts.Generation)), 0o755); err != nil {
		err = fmt.Errorf("create staging directory: %w", err)
		if left := t.Abort(); left != nil {
			err = &LeftError{Err: err, Left: left}
		}
		return nil, err
	}
	return t, nil
}

// Stage returns the staging directory (for tests and progress messages).
func (t *TreeWriter) Stage() string { return t.stage }

func (t *TreeWriter) subtaskDir(i int) (string, error) {
	switch {
	case t.stage == "":
		// (The zero TreeWriter would write into the working directory.)
		return "", errors.New("a TreeWriter is made by CreateTree")
	case i < 0:
		return "", fmt.Errorf("subtask %d: subtask indexes start at 0", i)
	case i >= MaxParallelism:
		return "", fmt.Errorf("subtask %d: above %d, the highest subtask index sptool reads (a parallelism of at most %d)", i, MaxParallelism-1, MaxParallelism)
	}
	d := filepath.Join(t.stage, "v"+strconv.Itoa(t.gen), strconv.Itoa(i))
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.committed:
		// (It would make a staging directory again, which no Commit
		// or Abort removes.)
		return "", errCommitted
	case t.committing:
		// (It would be published, and not listed in the marker.)
		return "", errCommitting
	case t.aborted:
		// (It would make the staging directory again, which nothing
		// removes, and a Commit would publish the subtasks written since.)
		return "", errAborted
	}
	if slices.Contains(t.subtasks, i) {
		if t.unfinished[i] {
			return "", fmt.Errorf("subtask %d written twice (the first write failed, or has not returned)", i)
		}
		return "", fmt.Errorf("subtask %d written twice", i)
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", fmt.Errorf("create subtask directory: %w", err)
	}
	t.subtasks = append(t.subtasks, i)
	if t.unfinished == nil {
		t.unfinished = map[int]bool{}
	}
	t.unfinished[i] = true
	t.writes.Add(1)
	return d, nil
}

// finishing is deferred by a write of subtask i that subtaskDir let
// begin: it records the write's outcome, *err, or a failure when the write
// panicked (the panic goes on), so that a caller that recovers the panic
// cannot commit the subtask as written.
func (t *TreeWriter) finishing(i int, err *error) {
	if r := recover(); r != nil {
		t.finished(i, errWritePanicked)
		panic(r)
	}
	t.finished(i, *err)
}

// errWritePanicked is the outcome of a subtask write that panicked.
var errWritePanicked = errors.New("the write panicked")

// finished records that subtask i's write, which subtaskDir let begin,
// returned err: a subtask whose write failed stays unfinished, and Commit
// refuses the tree.
func (t *TreeWriter) finished(i int, err error) {
	defer t.writes.Done()
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.unfinished, i)
}

// PayloadName is the file name of a subtask's payload in this tree.
func (t *TreeWriter) PayloadName() string {
	if t.backend == BackendChangelogFile {
		return "changelog-" + strconv.FormatUint(t.ckpt, 10) + ".snap"
	}
	return "checkpoint-" + strconv.FormatUint(t.ckpt, 10) + ".snap"
}

// WriteSubtask writes subtask i's state as a canonical stream (file backend:
// payload then sidecar; changelog+file backend: the materialisation, then a
// changelog holding only its handle).
func (t *TreeWriter) WriteSubtask(i int, md Metadata, rows []Row, compression string) (FileInfo, error) {
	return t.WriteSubtaskFrom(i, md, RowSlice(Logical(rows)), compression)
}

// WriteSubtaskFrom is WriteSubtask for rows already in canonical order,
// streamed from src.
func (t *TreeWriter) WriteSubtaskFrom(i int, md Metadata, src RowSource, compression string) (FileInfo, error) {
	return t.WriteSubtaskWith(i, md, src, SnapshotOptions{Compression: compression})
}

// WriteSubtaskWith is WriteSubtaskFrom with the options of the payload
// (compression, progress, jobs, stop, and AsIs for a file-backend payload
// of rows in any order); sidecar and checkpoint id are the tree's.
func (t *TreeWriter) WriteSubtaskWith(i int, md Metadata, src RowSource, opts SnapshotOptions) (_ FileInfo, err error) {
	compression := opts.Compression
	d, err := t.subtaskDir(i)
	if err != nil {
		return FileInfo{}, err
	}
	defer t.finishing(i, &err)
	if t.backend == BackendChangelogFile {
		matName := "mat-" + strconv.FormatUint(t.ckpt, 10) + ".bin"
		if err := os.MkdirAll(filepath.Join(d, "materializations"), 0o755); err != nil {
			return FileInfo{}, fmt.Errorf("create materializations directory: %w", err)
		}
		// Uncompressed whatever the compression asked: clink reads a
		// materialisation as a plain stream, and so does Open.
		mat, err := WriteSnapshotFrom(filepath.Join(d, "materializations", matName), md, src, SnapshotOptions{Progress: opts.Progress, Jobs: opts.Jobs, Stop: opts.Stop})
		if err != nil {
			return FileInfo{}, err
		}
		handle := t.stateBase + "/v" + strconv.Itoa(t.gen) + "/" + strconv.Itoa(i) + "/materializations/" + matName
		var info FileInfo
		err = WriteFileAtomic(filepath.Join(d, t.PayloadName()), func(w io.Writer) error {
			cw := &countingWriter{w: w, h: NewCRC32C()}
			if err := EncodeChangelogHandle(cw, handle); err != nil {
				return err
			}
			info = FileInfo{Size: cw.n, CRC32C: cw.h.Sum32()}
			return nil
		})
		if err == nil {
			t.noteMaterializations(i, []FileInfo{mat})
		}
		return info, err
	}
	return WriteSnapshotFrom(filepath.Join(d, t.PayloadName()), md, src, SnapshotOptions{Compression: compression, Sidecar: true, CheckpointID: t.ckpt, Progress: opts.Progress, Jobs: opts.Jobs, AsIs: opts.AsIs, Stop: opts.Stop})
}

// noteMaterializations records the materialisation files written for
// subtask i (see MaterializationInfo).
func (t *TreeWriter) noteMaterializations(i int, infos []FileInfo) {
	t.matMu.Lock()
	defer t.matMu.Unlock()
	if t.mats == nil {
		t.mats = map[int][]FileInfo{}
	}
	t.mats[i] = infos
}

// MaterializationInfo returns the sizes and CRC-32Cs of the materialisation
// files written for subtask i of a changelog+file tree, in the order its
// payload references them: the subtask's state is in them, its payload
// holding their handles. It is nil for a file-backend tree.
func (t *TreeWriter) MaterializationInfo(i int) []FileInfo {
	t.matMu.Lock()
	defer t.matMu.Unlock()
	return t.mats[i]
}

// CopySubtask copies an unchanged input file byte for byte as subtask i: a
// file-backend payload with its sidecar (the input's own, byte for byte,
// when it verified the payload and the tree keeps its checkpoint id; else
// a new one for the tree's checkpoint id), a changelog+file payload with
// the materialisations it references. Each copy is verified against the
// size and CRC read at open.
func (t *TreeWriter) CopySubtask(i int, src *File, root string) (err error) {
	d, err := t.subtaskDir(i)
	if err != nil {
		return err
	}
	defer t.finishing(i, &err)
	dst := filepath.Join(d, t.PayloadName())
	if t.backend == BackendFile {
		err = CopySnapshotFile(src.Path, dst, FileInfo{Size: src.Size, CRC32C: src.CRC32C}, t.copiedSidecar(src), PublishOptions{})
	} else {
		err = CopyVerified(src.Path, dst, src.Size, src.CRC32C)
	}
	if err != nil {
		return err
	}
	t.noteMaterializations(i, src.MaterializationInfo)
	if len(src.MaterializationInfo) != len(src.Materializations) {
		return fmt.Errorf("internal error: %s lists %d materialisations and the sizes of %d", src.Path, len(src.Materializations), len(src.MaterializationInfo))
	}
	for m, rel := range src.Materializations {
		dst := filepath.Join(t.stage, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("create directory: %w", err)
		}
		// Checked against what was read at open, as the payload is: the
		// state is in them.
		info := src.MaterializationInfo[m]
		if err := CopyVerified(filepath.Join(root, rel), dst, info.Size, info.CRC32C); err != nil {
			return err
		}
	}
	return nil
}

// CopyVerified copies src to dst atomically (temporary file, fsync, rename,
// directory fsync). With size >= 0 the copy must have that size and
// CRC-32C (the input did not change since it was read): on a file system
// with reflinks the copy shares src's blocks and is read back to check
// them, elsewhere it is made with pread and pwrite, checking the bytes as
// they are written. With size < 0 it is made with copy_file_range, and not
// checked.
func CopyVerified(src, dst string, size int64, crc uint32) error {
	tmp, err := copyToTemp(src, dst, size, crc)
	if err != nil {
		return err
	}
	return publishPair(tmp, dst, nil, PublishOptions{})
}

// copiedSidecar returns the sidecar of an unchanged payload copied into
// the tree: the input's own, byte for byte, when it has one that verified
// it and the tree keeps its checkpoint id; else a new one for the tree's
// checkpoint id (an input without one, --allow-unverified: clink refuses a
// payload without a sidecar).
func (t *TreeWriter) copiedSidecar(src *File) []byte {
	if id, ok := checkpointOfName(filepath.Base(src.Path)); ok && id == t.ckpt && src.Verdict == VerdictValid {
		if b, err := ReadControlFile(src.Path + SidecarSuffix); err == nil {
			if sc, err := ParseSidecar(b); err == nil && int64(sc.PayloadBytes) == src.Size && sc.PayloadCRC32C == src.CRC32C {
				return b
			}
		}
	}
	return SidecarFor(t.ckpt, FileInfo{Size: src.Size, CRC32C: src.CRC32C})
}

// CopySnapshotFile copies the payload src, whose size and CRC-32C were
// read as info, to dst with the given sidecar, as WriteSnapshotFrom
// publishes a payload and its sidecar: a pair at dst is replaced, and with
// a nil sidecar the old sidecar is removed with the old payload.
func CopySnapshotFile(src, dst string, info FileInfo, sidecar []byte, opts PublishOptions) error {
	tmp, err := copyToTemp(src, dst, info.Size, info.CRC32C)
	if err != nil {
		return err
	}
	opts.payload = true // a nil sidecar takes the old one out too
	return publishPair(tmp, dst, sidecar, opts)
}

// copyToTemp copies src to a new temporary file for dst (see CopyVerified),
// fsynced and closed, and returns its name.
func copyToTemp(src, dst string, size int64, crc uint32) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", fmt.Errorf("copy %s: %w", src, err)
	}
	defer in.Close()
	return fillTemp(dst, os.O_RDWR, func(out *os.File) error {
		if size < 0 {
			if _, err := io.Copy(out, in); err != nil { // *os.File to *os.File: copy_file_range on Linux
				return fmt.Errorf("copy %s: %w", src, err)
			}
			return nil
		}
		if cloneFile(out, in) {
			// The blocks are shared, not copied: the copy is read back.
			st, err := out.Stat()
			if err != nil {
				return fmt.Errorf("verify copy of %s: %w", src, err)
			}
			got, err := checksumFile(out, min(st.Size(), size))
			if err != nil {
				return fmt.Errorf("verify copy of %s: %w", src, err)
			}
			if st.Size() != size || got != crc {
				return fmt.Errorf("copy %s: %w (size %d, crc %d; read as %d, %d)", src, ErrInputChanged, st.Size(), got, size, crc)
			}
			return nil
		}
		got, err := copyChecked(in, out, size)
		if err != nil {
			return fmt.Errorf("copy %s: %w", src, err)
		}
		if got != crc {
			return fmt.Errorf("copy %s: %w (crc %d; read as %d)", src, ErrInputChanged, got, crc)
		}
		return nil
	})
}

// copyChecked copies the size bytes of in to out, an empty file, with
// pread and pwrite, on one goroutine per CPU for a large file (see
// eachPart) into blocks reserved first (see preallocate), and returns the
// CRC-32C of the bytes it wrote; in must hold size bytes, no fewer and no
// more (else ErrInputChanged). On ext4 the copy of a 390 MB file took 78-83
// ms on two CPUs without the reservation, where copy_file_range (one
// thread, in the kernel) and reading the copy back for its CRC took 112-115
// ms, and cp 90 ms.
func copyChecked(in, out *os.File, size int64) (uint32, error) {
	preallocate(out, size)
	crc, err := eachPart(size, func(lo, hi int64) (uint32, error) { return copyRange(in, out, lo, hi) })
	if err != nil {
		return 0, err
	}
	var one [1]byte
	if n, err := readFileAt(in, one[:], size); n > 0 {
		return 0, fmt.Errorf("%w (it holds more than the %d bytes read before)", ErrInputChanged, size)
	} else if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	return crc, nil
}

// copyRange copies bytes [lo, hi) of in to the same place of out and
// returns their CRC-32C.
func copyRange(in, out *os.File, lo, hi int64) (uint32, error) {
	n := min(hi-lo, sinkSize)
	buf, _ := sizedBuf(n, int(n))
	buf = buf[:n]
	defer putBuf(buf)
	var crc uint32
	for off := lo; off < hi; {
		b := buf[:min(int64(len(buf)), hi-off)]
		k, err := readFileAt(in, b, off)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return 0, fmt.Errorf("%w (it ended at byte %d, before byte %d)", ErrInputChanged, off+int64(k), hi)
			}
			return 0, err
		}
		crc = crc32.Update(crc, castagnoli, b)
		if _, err := writeFileAt(out, b, off); err != nil {
			return 0, err
		}
		off += int64(k)
	}
	return crc, nil
}

// Commit writes the COMPLETED marker listing every subtask written (but
// TreeOptions.Unlisted), with
// the lines of TreeOptions.MarkerExtra after them (and
// copies of the given extra control files, keyed by their paths within the
// tree), then renames the staging directory into place. job "" writes no
// marker; a job id that is no directory name (CheckJobID), an extra path
// leading outside the tree, or a subtask whose write failed (a subtask is
// written once) is refused before anything is written. The marker lists
// the subtasks written: a tree lacking one below its highest, which clink
// refuses to restore, is the caller's to refuse.
func (t *TreeWriter) Commit(job string, extra map[string][]byte) error {
	if t.stage == "" {
		// (The zero TreeWriter would write its marker into the working
		// directory.)
		return errors.New("a TreeWriter is made by CreateTree")
	}
	// An Abort waits for the Commit under way: removing the staging
	// directory while it is published would empty the published tree.
	t.life.Lock()
	defer t.life.Unlock()
	t.mu.Lock()
	if t.committed {
		t.mu.Unlock()
		return errCommitted
	}
	if t.aborted {
		t.mu.Unlock()
		return errAborted
	}
	var unfinished []int
	for i := range t.unfinished {
		unfinished = append(unfinished, i)
	}
	// No subtask is written from here on, unless this Commit fails
	// before it publishes the tree.
	t.committing = true
	subtasks := slices.Sorted(slices.Values(t.subtasks))
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.committing = t.committed
		t.mu.Unlock()
	}()
	if len(unfinished) > 0 {
		slices.Sort(unfinished)
		return fmt.Errorf("subtask %s not written (a write of it failed, or has not returned): the tree is not committed", FormatGroups(runsOf(unfinished)))
	}
	for rel := range extra {
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("control file %q: not a path within the tree", rel)
		}
	}
	if job != "" {
		listed := slices.DeleteFunc(slices.Clone(subtasks), func(i int) bool { return slices.Contains(t.unlisted, i) })
		c := Completed{Job: job, Checkpoint: t.ckpt, Generation: t.gen, Subtasks: listed, HasSubtasks: true, Extra: t.markerExtra}
		if err := CheckJobID(job); err != nil {
			return err
		}
		if err := c.Validate(); err != nil {
			return err
		}
		dir := filepath.Join(t.stage, "_jobs", job)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
		if err := WriteBytesAtomic(filepath.Join(dir, "COMPLETED-"+strconv.FormatUint(t.ckpt, 10)), c.Marshal()); err != nil {
			return err
		}
	}
	for rel, b := range extra {
		p := filepath.Join(t.stage, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("create directory: %w", err)
		}
		if err := WriteBytesAtomic(p, b); err != nil {
			return err
		}
	}
	if err := syncTree(t.stage); err != nil {
		return err
	}
	old := ""
	_, err := os.Lstat(t.final)
	exists := err == nil
	if exists && !t.force {
		return &OutputExistsError{Path: t.out, Appeared: true}
	}
	if exists {
		if err := CheckReplaceable(t.final, true); err != nil {
			return err
		}
	}
	if t.before != nil {
		if err := t.before(); err != nil {
			return err
		}
	}
	if exists {
		old = t.final + ".sptool-old-" + tempSuffix()
		// Where the system can, the new tree and the old swap places in
		// one rename, so that the output is never absent; the old one,
		// now at the staging name, is then moved aside as it is elsewhere.
		swapped, err := exchange(t.stage, t.final)
		if err != nil {
			return fmt.Errorf("publish %s: %w", t.out, err)
		}
		if swapped {
			t.setCommitted()
			t.releaseSpare()
			if err := os.Rename(t.stage, old); err != nil {
				old = t.stage
			}
			if hookAfterAside != nil {
				hookAfterAside(old)
			}
			if err := SyncDir(filepath.Dir(t.final)); err != nil {
				return &PublishedError{Out: t.final, Err: unsynced(err, old)}
			}
			return t.removeReplaced(old)
		}
		if err := os.Rename(t.final, old); err != nil {
			return fmt.Errorf("move aside %s: %w", t.out, err)
		}
		if hookAfterAside != nil {
			hookAfterAside(old)
		}
	}
	rename := os.Rename
	if !t.force {
		rename = renameExclusive // nor one that appears from now on
	}
	if err := rename(t.stage, t.final); err != nil {
		if errors.Is(err, fs.ErrExist) && !t.force {
			return &OutputExistsError{Path: t.out, Appeared: true}
		}
		if old != "" {
			if rerr := os.Rename(old, t.final); rerr != nil {
				return fmt.Errorf("publish %s: %w (and the output it was to replace is left at %s: %v)", t.out, err, old, rerr)
			}
		}
		return fmt.Errorf("publish %s: %w", t.out, err)
	}
	t.setCommitted()
	t.releaseSpare()
	if err := SyncDir(filepath.Dir(t.final)); err != nil {
		return &PublishedError{Out: t.final, Err: unsynced(err, old)}
	}
	if old != "" {
		return t.removeReplaced(old)
	}
	return nil
}

// removeReplaced removes the output tree that Commit replaced, now at
// old, once the new one is published. What is there is looked at again
// first: an output swapped for something else (a symbolic link to another
// tree, say) between the check before publishing and the rename is left
// where it is, not deleted.
func (t *TreeWriter) removeReplaced(old string) error {
	if err := CheckReplaceable(old, true); err != nil {
		return &PublishedError{Out: t.final, Err: replacedLeft(old, err)}
	}
	remove := removeTree
	if testhook.RemoveReplaced != nil {
		remove = testhook.RemoveReplaced
	}
	if err := remove(old); err != nil {
		return &PublishedError{Out: t.final, Err: replacedLeft(old, err)}
	}
	return nil
}

// replacedLeft is the error of an output replaced with force that could
// not be removed once moved aside to left.
func replacedLeft(left string, err error) error {
	return fmt.Errorf("the output it replaced, moved aside to %s, could not be removed and is left there, whole or in part (remove it by hand): %w", left, err)
}

// PublishedError is the error of a write that published its output, then
// failed: the output at Out is complete and in place.
type PublishedError struct {
	// Out is the output that was published.
	Out string
	// Err is what failed after it was.
	Err error
}

// Error says that Out was written, and what failed then.
func (e *PublishedError) Error() string {
	return fmt.Sprintf("%s was written, but %v", e.Out, e.Err)
}

// Unwrap returns Err.
func (e *PublishedError) Unwrap() error { return e.Err }

// unsynced is the error of a directory fsync that failed after a rename
// published the output; old, if not "", is where the output it replaced
// was moved, which is kept: the rename may not survive a crash.
func unsynced(err error, old string) error {
	if old == "" {
		return fmt.Errorf("the rename that put it there may not survive a crash: %w", err)
	}
	return fmt.Errorf("the rename that put it there may not survive a crash, so the output it replaced is kept, whole, at %s (remove it by hand once the new one is known to be safe): %w", old, err)
}

// removeTree deletes a checkpoint tree so that, if interrupted, what is left
// never looks complete: first its control records (the COMPLETED marker),
// then every sidecar (a payload without one is refused by clink), then the
// rest.
//
// It works inside the directory it looked at, opened once (os.Root): a
// link put in its place meanwhile is never followed, so what it points to
// is not touched.
func removeTree(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir) // never through a link
	}
	if hookRemoveTree != nil {
		hookRemoveTree(dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	if err := emptyTree(root, dir, fi); err != nil {
		root.Close()
		return err
	}
	// Closed first: Windows removes no directory that is open.
	if err := root.Close(); err != nil {
		return err
	}
	// Empty now; the name is removed only if it is still that directory.
	if now, err := os.Lstat(dir); err != nil || !os.SameFile(fi, now) {
		return replacedWhileRemoved(dir)
	}
	return os.Remove(dir)
}

// emptyTree removes, through root (open on dir, whose Lstat is fi), what
// dir holds: the control records, then the sidecars, then the rest.
func emptyTree(root *os.Root, dir string, fi fs.FileInfo) error {
	if opened, err := root.Lstat("."); err != nil {
		return err
	} else if !os.SameFile(fi, opened) {
		return replacedWhileRemoved(dir)
	}
	if err := root.RemoveAll("_jobs"); err != nil {
		return err
	}
	if err := syncDirWith(root.Open, ".", dir); err != nil {
		return err
	}
	err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && path.Ext(p) == ".meta" {
			err = root.Remove(p)
		}
		return err
	})
	if err != nil {
		return err
	}
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := root.RemoveAll(e.Name()); err != nil {
			return err
		}
	}
	return nil
}

// replacedWhileRemoved is removeTree's error when what is at dir is not
// the directory it looked at.
func replacedWhileRemoved(dir string) error {
	return fmt.Errorf("%s was replaced while it was being removed: left as it is", dir)
}

// hookRemoveTree, when set (tests), is called by removeTree between its
// look at the directory and its opening.
var hookRemoveTree func(dir string)

// Abort removes the staging directory, and the output's parent
// directories that CreateTree made, as far as they are empty; it is a
// no-op after Commit. Once it is called, the TreeWriter writes nothing:
// a write of a subtask, or a Commit, still to come (on another goroutine)
// is refused; a Commit or a write of a subtask under way is waited for (so
// an Abort must not be called from Commit's TreeOptions.BeforePublish, nor
// wait for a write's end that waits for it). The staging directory is removed as a replaced
// tree is, its COMPLETED markers first, then its sidecars, then the rest,
// without following a link put in its place: a Commit that failed once it
// wrote the COMPLETED marker leaves a whole tree there, and a run killed
// while removing it must not leave the marker beside part of the tree,
// which the next run would name as a whole tree. Its error names the staging directory when
// that could not be removed (its parent made read-only meanwhile, say):
// it is left behind, to delete. The descriptors CreateTree reserved are
// closed first, so that the removal can open the tree's directories even
// when the write failed for want of them.
func (t *TreeWriter) Abort() error {
	t.life.Lock()
	defer t.life.Unlock()
	t.releaseSpare()
	t.mu.Lock()
	committed := t.committed
	t.aborted = !committed
	t.mu.Unlock()
	if committed {
		return nil
	}
	// The writes under way end before the directory they write in is
	// removed (none begins from here on).
	t.writes.Wait()
	left := leftBehind("the staging directory", t.stage, removeTree)
	t.made.Remove()
	return left
}

// syncTree fsyncs every directory under root (files were fsynced when written).
func syncTree(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return SyncDir(p)
		}
		return nil
	})
}

// EncodeChangelogHandle writes a changelog stream (section 1.7) holding only
// its materialisation row: row_kind 3 with the handle, no log entries, no
// schema metadata, as clink's changelog+file backend writes right after a
// materialisation.
func EncodeChangelogHandle(w io.Writer, handle string) error {
	return EncodeChangelog(w, []ChangelogEntry{{Kind: RowKindHandle, Row: Row{Value: []byte(handle)}}})
}

// ChangelogEntry is one row of a changelog stream: its row_kind (the
// RowKind constants) and its op_id, key_bytes and value_bytes.
type ChangelogEntry struct {
	Kind uint8
	Row  Row
}

// EncodeChangelog writes a changelog stream (section 1.7) of the entries,
// in order, in one record batch, without schema metadata. Every blob clink
// restores holds a materialisation row (RowKindMaterialised or
// RowKindHandle); the log entries replay after it.
func EncodeChangelog(w io.Writer, entries []ChangelogEntry) error {
	schema := arrow.NewSchema(changelogFields, nil)
	mem := memory.DefaultAllocator
	kb := array.NewUint8Builder(mem)
	ob := array.NewUint64Builder(mem)
	keyB := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	valB := array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
	for _, b := range []array.Builder{kb, ob, keyB, valB} {
		defer b.Release()
	}
	for _, e := range entries {
		kb.Append(e.Kind)
		ob.Append(e.Row.Op)
		keyB.Append(append([]byte{}, e.Row.Key...)) // never nil: the columns are not nullable
		valB.Append(append([]byte{}, e.Row.Value...))
	}
	cols := []arrow.Array{kb.NewArray(), ob.NewArray(), keyB.NewArray(), valB.NewArray()}
	for _, c := range cols {
		defer c.Release()
	}
	rec := array.NewRecordBatch(schema, cols, int64(len(entries)))
	defer rec.Release()
	iw := ipc.NewWriter(w, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err := iw.Write(rec); err != nil {
		return fmt.Errorf("write changelog: %w", err)
	}
	return iw.Close()
}

// FrameCLMB packs several changelog blobs with clink's multi-blob framing.
func FrameCLMB(blobs [][]byte) []byte {
	out := append([]byte{}, clmbMagic...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(blobs)))
	for _, b := range blobs {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(b)))
		out = append(out, b...)
	}
	return out
}

// CheckReplaceable refuses to replace (with --force) an existing output
// that does not look like one: a tree output (tree true) must replace a
// checkpoint tree, a directory holding nothing but v<generation>
// directories and _jobs (or nothing), which hold nothing but what a tree
// holds at each level in turn (the first entry that is not is named); a
// file output must replace a regular
// file (or a link to one), not a directory, a device, a named pipe or a
// socket, nor anything in /proc or /dev/fd or a link that leads there. A
// mistyped -o with --force then cannot delete a directory of other files,
// and `--report /dev/null --force` does not put a file in the place of
// the device. Nor is an output replaced whose removal would reach beyond
// it (a mount point in a tree, a file with other hard links; on Linux).
// A file output whose name ends with a separator is refused too. A path
// that does not exist is fine.
func CheckReplaceable(path string, tree bool) error {
	if !tree && path != "" && os.IsPathSeparator(path[len(path)-1]) {
		// (Its sidecar would go in a directory of that name, as ".meta".)
		return fmt.Errorf("output %s ends with %c, which names a directory: a file output takes the file's name", path, path[len(path)-1])
	}
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("output %s: %w", path, err)
	}
	if at, ok := procPath(path); ok {
		return fmt.Errorf("output %s leads to %s, a process's open file (a standard stream or /dev/fd), not a file sptool may replace: it would replace the link, not write the file", path, at)
	}
	if !tree {
		if st.Mode()&fs.ModeSymlink != 0 {
			if target, err := os.Stat(path); err == nil {
				st = target
			}
		}
		switch {
		case st.IsDir():
			return fmt.Errorf("output %s is a directory, which a file will not replace", path)
		case st.Mode()&fs.ModeSymlink == 0 && !st.Mode().IsRegular():
			return fmt.Errorf("output %s is not a regular file (%s), which sptool will not replace: it writes files under a temporary name and renames them into place", path, fileKind(st.Mode()))
		}
		if shared := sharedWith(path); shared != "" {
			// (A link is replaced, not what it leads to: its target's
			// links do not matter.)
			return fmt.Errorf("refusing to replace %s: it is %s: no rename replaces a mount point, and replacing a file another name shares would change that file's link count and change time (the input's, perhaps); remove it yourself or choose another output", path, shared)
		}
		return nil
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		// A tree output is replaced by renames of the directory itself:
		// the link would be replaced, not the tree it leads to.
		what := "a symbolic link"
		if target, err := os.Stat(path); err != nil {
			what = "a symbolic link that leads nowhere"
		} else if target.IsDir() {
			what = "a symbolic link to a directory"
		}
		return fmt.Errorf("output %s is %s: a checkpoint tree replaces no link (it would replace the link, not the tree it leads to); name the directory itself", path, what)
	}
	if !st.IsDir() {
		return fmt.Errorf("output %s is not a directory: a checkpoint tree will not replace it", path)
	}
	if shared := sharedWith(path); shared != "" {
		return fmt.Errorf("refusing to replace %s: it is %s, which no rename replaces, and whose files a removal would delete; remove it yourself or choose another output", path, shared)
	}
	if rel, shared, err := foreignEntry(path, "", treeLevel); err != nil {
		return fmt.Errorf("output %s: %w", path, err)
	} else if shared != "" {
		return fmt.Errorf("refusing to replace %s: it holds %s, %s: removing it would reach what lies beyond the output (the input's files, perhaps); remove it yourself or choose another output", path, rel, shared)
	} else if rel != "" {
		return fmt.Errorf("refusing to replace %s: it holds %s, which is not part of a checkpoint tree (v<generation>/<subtask>/ with checkpoint and changelog files, their sidecars and materializations/, and _jobs/<job>/ with markers and receipts); remove it yourself or choose another output", path, rel)
	}
	return nil
}

// sharedFile is sharedWith's text for a file of n links.
func sharedFile(n int64) string {
	return fmt.Sprintf("a file with %d hard links (another name shares its data)", n)
}

// treeEntry tells what a directory of a checkpoint tree may hold, for
// CheckReplaceable: whether an entry of the given name and kind belongs
// there, and if it is a directory, what it may hold in turn (nil: no
// directory belongs there).
type treeEntry func(name string, dir bool) (ok bool, sub treeEntry)

// The levels of a checkpoint tree (format 5.1): what sptool and clink
// write there, and the temporary files of both.
var (
	treeLevel treeEntry = func(name string, dir bool) (bool, treeEntry) {
		if _, gen := parseGeneration(name); gen && dir {
			return true, generationLevel
		}
		return dir && name == "_jobs", jobsLevel
	}
	generationLevel treeEntry = func(name string, dir bool) (bool, treeEntry) {
		_, ok := subtaskIndex(name)
		return ok && dir, subtaskLevel
	}
	subtaskLevel treeEntry = func(name string, dir bool) (bool, treeEntry) {
		if dir {
			return name == "materializations", materializationsLevel
		}
		return stateFileName(name, "checkpoint-", ".snap") || stateFileName(name, "changelog-", ".snap"), nil
	}
	materializationsLevel treeEntry = func(name string, dir bool) (bool, treeEntry) {
		return !dir && stateFileName(name, "mat-", ".bin"), nil
	}
	jobsLevel treeEntry = func(_ string, dir bool) (bool, treeEntry) { return dir, jobLevel }
	jobLevel  treeEntry = func(name string, dir bool) (bool, treeEntry) {
		if dir {
			return name == "receipts", receiptsLevel
		}
		return strings.HasPrefix(name, CompletedPrefix) || strings.HasPrefix(name, "CONFIRMED-") || strings.Contains(name, ".tmp."), nil
	}
	receiptsLevel treeEntry = func(name string, dir bool) (bool, treeEntry) {
		return !dir && strings.HasPrefix(name, "sub"), nil
	}
)

// stateFileName reports whether name is prefix, a decimal id and ext, and
// then anything (a sidecar's .meta, a temporary name's .part.<n>).
func stateFileName(name, prefix, ext string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	digits := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
	return ok && digits > 0 && strings.HasPrefix(rest[digits:], ext)
}

// foreignEntry returns the first entry under dir/rel, depth first, that
// level and the levels below it do not admit, as a path relative to dir
// ("" when there is none), or that a removal would reach beyond the tree
// through: shared then says how (see sharedWith). Entries are taken as
// they are: a symbolic link is no directory, nor a file of a tree.
func foreignEntry(dir, rel string, level treeEntry) (bad, shared string, err error) {
	entries, err := os.ReadDir(filepath.Join(dir, rel))
	if err != nil {
		return "", "", err
	}
	for _, e := range entries {
		p := filepath.Join(rel, e.Name())
		isDir := e.IsDir()
		ok, sub := level(e.Name(), isDir)
		if ok && !isDir && !e.Type().IsRegular() {
			ok = false
		}
		if !ok {
			return p, "", nil
		}
		if how := sharedWith(filepath.Join(dir, p)); how != "" {
			return p, how, nil
		}
		if isDir {
			if bad, shared, err := foreignEntry(dir, p, sub); bad != "" || err != nil {
				return bad, shared, err
			}
		}
	}
	return "", "", nil
}

// procPath returns the path in /proc that path is, or that its chain of
// symbolic links passes through, its directories' links resolved.
// /dev/stdout is a link to /proc/self/fd/1, and a process's open file is
// often a regular file (a shell's redirection): renaming a finished output
// over such a path replaces the link, in /dev or wherever it is, and
// writes nothing where the stream goes.
func procPath(path string) (string, bool) {
	p := path
	for range 40 { // the kernel's limit on links followed
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", false
		}
		if inProc(abs) {
			return abs, true
		}
		dir := filepath.Dir(abs)
		if d, err := filepath.EvalSymlinks(dir); err == nil {
			dir = d
		}
		p = filepath.Join(dir, filepath.Base(abs))
		if inProc(p) {
			return p, true
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", false // not a link (or gone): the chain ends here
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		p = target
	}
	return "", false
}

// inProc reports whether the absolute path p lies in /proc, or in /dev/fd
// (a link to /proc/self/fd on Linux; on the BSDs and macOS the file
// system of open files itself).
func inProc(p string) bool {
	for _, dir := range []string{"/proc", "/dev/fd"} {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// ErrOutputIsInput is wrapped by the error of an output path that is the
// input, lies inside it or contains it, or is the input's sidecar or the
// payload of its sidecar (CheckOutputPath), or lies inside the directory
// of one of a tree's payloads (Savepoint.CheckFilesApart).
var ErrOutputIsInput = errors.New("the output must not be the input")

// overlapf is an error of ErrOutputIsInput with the text of fmt.Sprintf.
func overlapf(format string, a ...any) error {
	return &kindError{ErrOutputIsInput, fmt.Sprintf(format, a...)}
}

// ErrDotDotAfterLink is returned (wrapped) when an output path holds a
// ".." that follows a symbolic link (see CheckOutputPath).
var ErrDotDotAfterLink = errors.New("it follows a symbolic link")

// MaxOutputName is the longest name, in bytes, an output may have: the
// names of its temporary and moved-aside files (the longest,
// <name>.meta.sptool-old-<pid>.<seq>.<random>) add up to 48 bytes to it,
// and file systems allow 255.
const MaxOutputName = 255 - 48

// CheckOutputName refuses an output whose name is longer than
// MaxOutputName.
func CheckOutputName(out string) error {
	if n := len(filepath.Base(out)); n > MaxOutputName {
		return fmt.Errorf("output %s: its name is too long: %d bytes, at most %d (the names of its temporary files add up to %d bytes to it, and a file system allows 255)", out, n, MaxOutputName, 255-MaxOutputName)
	}
	return nil
}

// CheckOutputPath refuses an output that is the input, lies inside it, or
// contains it (ErrOutputIsInput), and one whose name is longer than
// MaxOutputName (it would fail once the work is done, when its temporary
// file is made). Symbolic links are resolved, in the output's case through
// its deepest existing directory (the output itself need not exist), and
// the directories above each path are compared by identity too (a bind
// mount, a case-insensitive file system), not only by name; a relative
// path is taken from the working directory the system has, not the one
// $PWD names. An output whose ".." follows a symbolic link is refused too
// (ErrDotDotAfterLink): the system takes it where the link leads, and the
// writers, which clean the path, beside the link.
func CheckOutputPath(in, out string) error {
	if err := CheckOutputName(out); err != nil {
		return err
	}
	rel, at, err := pathRelation(in, out)
	switch rel {
	case relSame:
		if filepath.Clean(in) != filepath.Clean(out) {
			// Named otherwise (a symbolic link, a bind mount, another
			// spelling): both names are given.
			return fmt.Errorf("%w (%s is the input %s)", ErrOutputIsInput, out, in)
		}
		return fmt.Errorf("%w (%s)", ErrOutputIsInput, out)
	case relPair:
		return fmt.Errorf("%w: %s and %s are a payload and its sidecar", ErrOutputIsInput, in, out)
	case relInside:
		if at != "" {
			return overlapf("output %s lies inside the input %s (%s is the input)", out, in, at)
		}
		return overlapf("output %s lies inside the input %s", out, in)
	case relContains:
		if at != "" {
			return overlapf("output %s contains the input %s (%s is the output)", out, in, at)
		}
		return overlapf("output %s contains the input %s", out, in)
	}
	if err != nil {
		return err
	}
	return checkOutputCleaned(out)
}

// checkOutputCleaned refuses an output whose path names one place to the
// system and another once cleaned (absPath), as the writers take it: a
// ".." that follows a symbolic link is taken by the system where the link
// leads, and by cleaning beside the link. The output, its temporary files
// and the directories made for it would be written, checked and removed
// in two places.
func checkOutputCleaned(out string) error {
	cleaned, err1 := resolvePath(absPath(out))
	sys, err2 := resolvePath(out)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("resolve paths: %w", err)
	}
	if cleaned != sys {
		return fmt.Errorf("output %s is %s to the system but %s once its \"..\" is cleaned away, as %w: give the output's path without it", out, sys, cleaned, ErrDotDotAfterLink)
	}
	return nil
}

// CheckFilesApart refuses an output that any file sp reads reaches:
// CheckOutputPath compares the output with the input's root, but a payload,
// a sidecar or a materialisation inside the tree may be a symbolic link to
// a file of the output, which writing the output would change under it.
// Of a tree, it also refuses an output inside the directory of a payload
// or that directory's generation directory (either may be a link
// elsewhere): writing it there would add to the input's directories.
func (sp *Savepoint) CheckFilesApart(out string) error {
	if err := sp.checkOutsidePayloadDirs("output", out, false); err != nil {
		return err
	}
	var paths []string
	for _, f := range sp.Files {
		paths = append(paths, f.Path)
		if _, err := os.Lstat(f.Path + SidecarSuffix); err == nil {
			paths = append(paths, f.Path+SidecarSuffix)
		}
		for _, rel := range f.Materializations {
			paths = append(paths, filepath.Join(sp.Root, rel))
		}
	}
	for _, p := range paths {
		if err := CheckOutputPath(p, out); err != nil {
			if to, lerr := filepath.EvalSymlinks(p); lerr == nil && to != filepath.Clean(p) {
				return fmt.Errorf("input file %s, a link to %s: %w", p, to, err)
			}
			return fmt.Errorf("input file %s: %w", p, err)
		}
	}
	return nil
}

// CheckTempDir refuses a directory for temporary files that is the input,
// or lies inside it: files made there, even unlinked at once, change the
// input's directories, and a run killed before it unlinks one leaves it in
// the input. A directory that contains the input is fine.
func CheckTempDir(in, dir string) error {
	switch rel, at, err := pathRelation(in, dir); rel {
	case relSame, relPair, relInside:
		if at != "" {
			return fmt.Errorf("temporary directory %s lies inside the input %s (%s is the input)", dir, in, at)
		}
		return fmt.Errorf("temporary directory %s lies inside the input %s", dir, in)
	default:
		return err
	}
}

// CheckTempDirApart refuses a directory for temporary files ("" is
// fine) that CheckTempDir refuses for the input's root or, of a tree,
// that is or lies inside the directory of one of its payloads or that
// directory's generation directory: either may be a symbolic link out of
// the tree (clink follows such links), which the check of the root alone
// lets through.
func (sp *Savepoint) CheckTempDirApart(dir string) error {
	if dir == "" {
		return nil
	}
	if sp.Path == "" {
		// A union's parts were checked as they were opened; its files are
		// checked below.
	} else if err := CheckTempDir(InputRoot(sp.Path), dir); err != nil {
		return err
	}
	return sp.checkOutsidePayloadDirs("temporary directory", dir, true)
}

// checkOutsidePayloadDirs refuses a path p (what names it: "output",
// "temporary directory") that is or lies inside the directory of one of a
// tree's payloads, or that directory's generation directory: either may
// be a symbolic link out of the tree, which a check against the tree's
// root lets through. A path that cannot be resolved is an error when
// strict is set, and passes otherwise (the output's own checks name it).
func (sp *Savepoint) checkOutsidePayloadDirs(what, p string, strict bool) error {
	if sp.Kind == InputFile {
		return nil
	}
	seen := map[string]bool{}
	for _, f := range sp.Files {
		sub := filepath.Dir(f.Path)
		for _, fdir := range []string{filepath.Dir(sub), sub} {
			if seen[fdir] {
				continue
			}
			seen[fdir] = true
			rel, _, err := pathRelation(fdir, p)
			if err != nil && strict {
				return err
			}
			if err != nil || rel != relSame && rel != relInside {
				continue
			}
			errorf := fmt.Errorf
			if what == "output" {
				errorf = overlapf
			}
			if to, err := filepath.EvalSymlinks(fdir); err == nil && to != filepath.Clean(fdir) {
				return errorf("%s %s lies inside the input's directory %s, a link to %s, which holds input file %s", what, p, fdir, to, f.Path)
			}
			return errorf("%s %s lies inside the input's directory %s, which holds input file %s", what, p, fdir, f.Path)
		}
	}
	return nil
}

// PathInside reports whether path lies under dir, not dir itself, both
// taken from the working directory and resolved as the system resolves
// them: their symbolic links followed as far as they exist, and, where two
// names reach one directory (a bind mount, a second name of a file
// system), by its identity.
func PathInside(path, dir string) (bool, error) {
	rel, _, err := pathRelation(dir, path)
	return rel == relInside, err
}

// pathRel is how an output path stands to an input path.
type pathRel int

const (
	relNone pathRel = iota
	relSame
	relPair // a payload and its sidecar
	relInside
	relContains
)

// pathRelation returns how out stands to in (see CheckOutputPath); at
// names the directory found to be the other path by identity, when one
// was.
func pathRelation(in, out string) (rel pathRel, at string, err error) {
	ai, err1 := resolvePath(in)
	ao, err2 := resolvePath(out)
	if err1 != nil || err2 != nil {
		return relNone, "", fmt.Errorf("resolve paths: %w", errors.Join(err1, err2))
	}
	if ai == ao {
		return relSame, "", nil
	}
	// A file output comes with a sidecar: neither may be the input's file
	// or its sidecar.
	if ao == ai+".meta" || ao+".meta" == ai {
		return relPair, "", nil
	}
	if r, err := filepath.Rel(ai, ao); err == nil && r != ".." && !filepath.IsAbs(r) && !startsWithDotDot(r) {
		return relInside, "", nil
	}
	if r, err := filepath.Rel(ao, ai); err == nil && !startsWithDotDot(r) {
		return relContains, "", nil
	}
	return relationByIdentity(ai, ao)
}

// idLevel is a directory (or file) above a path, found to exist, and the
// rest of the path below it.
type idLevel struct {
	path string
	st   os.FileInfo
	rest string
}

// existingLevels returns the levels of p, p included, that exist, nearest
// first.
func existingLevels(p string) []idLevel {
	var out []idLevel
	rest := ""
	for q := p; ; {
		if st, err := os.Stat(q); err == nil {
			out = append(out, idLevel{q, st, rest})
		}
		dir := filepath.Dir(q)
		if dir == q {
			return out
		}
		rest = filepath.Join(filepath.Base(q), rest)
		q = dir
	}
}

// relationByIdentity finds how out stands to in where they differ in name
// but are, or meet in, one file reached by two names (a link resolved
// elsewhere, a bind mount, a second mount of a file system, a
// case-insensitive one): the nearest of each and the directories above it
// that are the same file, and the rest of each path below it, compared by
// name. Paths that do not exist yet (an output, its sidecar, a report) are
// placed so too, by their deepest existing directory. at is the other's
// name for the one inside: the input as the output's path reaches it, or
// the output as the input's does.
func relationByIdentity(in, out string) (pathRel, string, error) {
	outLevels := existingLevels(out)
	for _, li := range existingLevels(in) {
		for _, lo := range outLevels {
			if !os.SameFile(li.st, lo.st) {
				continue
			}
			ri, ro := li.rest, lo.rest
			switch {
			case ri == ro:
				return relSame, "", nil
			case filepath.Dir(ri) == filepath.Dir(ro) && (ro == ri+".meta" || ro+".meta" == ri):
				return relPair, "", nil
			case ri == "" || ro != "" && strings.HasPrefix(ro, ri+string(filepath.Separator)):
				return relInside, filepath.Join(lo.path, ri), nil
			case ro == "" || strings.HasPrefix(ri, ro+string(filepath.Separator)):
				return relContains, filepath.Join(li.path, ro), nil
			}
			return relNone, "", nil // two paths apart below one directory
		}
	}
	return relNone, "", nil
}

// resolvePath returns the absolute path the system reaches by p: its
// symbolic links resolved as far as it exists, and the rest appended to
// its deepest existing directory. The ".." of p are taken after the links
// before them, as the system takes them ("link/../x" is x beside the
// link's target, not beside the link): p is not cleaned first, and a
// relative p is taken from the working directory the system has
// (systemPath).
func resolvePath(p string) (string, error) {
	p = systemPath(p)
	rest := ""
	for q := p; ; {
		if r, err := filepath.EvalSymlinks(q); err == nil {
			abs, err := filepath.Abs(r)
			return filepath.Join(abs, rest), err
		}
		dir, base := splitLast(q)
		if dir == q {
			return filepath.Abs(p)
		}
		rest = filepath.Join(base, rest)
		q = dir
	}
}

// stateBaseOf returns the absolute path of the output out (abs, see
// absPath) that its handles name by default: the one the working directory
// is named by ($PWD, through filepath.Abs) when it reaches the same place,
// as a job's state base reached through a link is named by the link, and
// abs when it does not (a "../" from a working directory reached through a
// link).
func stateBaseOf(out, abs string) string {
	named, err := filepath.Abs(out)
	if err != nil || named == abs {
		return abs
	}
	a, err1 := resolvePath(named)
	b, err2 := resolvePath(abs)
	if err1 != nil || err2 != nil || a != b {
		return abs
	}
	return named
}

// absPath returns p made absolute and cleaned, a relative p taken from the
// working directory the system has (see systemPath), not the one $PWD
// names: from a working directory reached through a symbolic link,
// filepath.Abs("../x") is x beside the link, where the system's ../x is x
// beside the link's target.
func absPath(p string) string {
	return filepath.Clean(systemPath(p))
}

// systemPath returns p, if relative, joined to the working directory as
// the system has it, its symbolic links resolved, and not cleaned: the
// system takes a relative path from there, and os.Getwd may give instead
// the path the shell went through ($PWD), whose ".." is another directory
// when it passes a link.
func systemPath(p string) string {
	if p == "" || filepath.IsAbs(p) || filepath.VolumeName(p) != "" || os.IsPathSeparator(p[0]) {
		return p
	}
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	if real, err := filepath.EvalSymlinks(wd); err == nil {
		wd = real
	}
	return wd + string(filepath.Separator) + p
}

// splitLast splits p before its last element, without cleaning it: dir is
// "." for a lone element, and p itself when nothing is left to split.
func splitLast(p string) (dir, base string) {
	vol := len(filepath.VolumeName(p))
	end := len(p)
	for end > vol+1 && os.IsPathSeparator(p[end-1]) {
		end-- // trailing separators
	}
	i := end - 1
	for i >= vol && !os.IsPathSeparator(p[i]) {
		i--
	}
	switch {
	case i < vol && end > vol:
		return p[:vol] + ".", p[vol:end] // a lone element
	case i < vol || end <= i+1:
		return p, "" // a root, or nothing
	case i == vol:
		return p[:vol+1], p[i+1 : end] // an element under the root
	}
	return p[:i], p[i+1 : end]
}

func startsWithDotDot(rel string) bool {
	return rel == ".." || len(rel) >= 3 && rel[:3] == ".."+string(filepath.Separator)
}
