package savepoint

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sptool/sptool/internal/testhook"
)

// maxColumnBytes is the most data one binary column of one record batch may
// hold. clink's reader uses int32 offsets; arrow-go wraps silently past it,
// so the writer starts a new batch before a column would exceed it. A
// variable so tests can exercise the split with small data.
var maxColumnBytes int64 = maxBinaryData

// CanonicalMetadata returns the schema metadata sptool writes: the format
// version "1" first, the packed version map when it is non-empty, then every
// other key of in, in its order (unknown keys are carried over; duplicates of
// the two clink keys are dropped).
func CanonicalMetadata(in Metadata, versions VersionMap) Metadata {
	out := Metadata{{MetaFormatVersion, "1"}}
	if versions.Len() > 0 {
		out = append(out, MetaEntry{MetaStateVersions, versions.Pack()})
	}
	for _, e := range in {
		if e.Key == MetaFormatVersion || e.Key == MetaStateVersions {
			continue
		}
		out = append(out, e)
	}
	return out
}

// EncodeStream writes rows as one canonical Arrow IPC stream to w: the exact
// schema of section 1.2 with the metadata md in the given order, the rows in
// canonical order with duplicates resolved as clink's restore does (Logical),
// one record batch (several only when a column would pass the 2 GiB binary
// limit; a zero-row batch for empty state), and the end-of-stream marker.
func EncodeStream(w io.Writer, md Metadata, rows []Row) error {
	return encodeStream(w, md, Logical(rows), nil)
}

// EncodeStreamAsIs writes rows exactly as given: their order, duplicates and,
// when batches is non-nil, the row count of each record batch (which must add
// up to len(rows)). It exists to produce inputs shaped like what clink's
// merges and hash-map iteration write; sptool's outputs use EncodeStream.
func EncodeStreamAsIs(w io.Writer, md Metadata, rows []Row, batches []int) error {
	if batches != nil {
		n := 0
		for _, b := range batches {
			n += b
		}
		if n != len(rows) {
			return fmt.Errorf("batch sizes add up to %d, not %d rows", n, len(rows))
		}
	}
	return encodeStream(w, md, rows, batches)
}

func encodeStream(w io.Writer, md Metadata, rows []Row, batches []int) error {
	return writeStream(w, md, RowSlice(rows), batches)
}

func prefix(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// FileInfo is what was written: the payload's size and CRC-32C.
type FileInfo struct {
	Size   int64
	CRC32C uint32
}

// SnapshotOptions control WriteSnapshotFile.
type SnapshotOptions struct {
	// Compression compresses the whole file (CompressNone for a plain stream).
	Compression string
	// Sidecar writes <path>.meta for CheckpointID after the payload.
	// Without it a sidecar already at <path>.meta is removed with the
	// payload it describes.
	Sidecar      bool
	CheckpointID uint64
	// AsIs writes the rows in the order given, duplicates included, split
	// into Batches when non-nil (see EncodeStreamAsIs). For test inputs only.
	AsIs    bool
	Batches []int
	// Progress, when set, is called after every ReleaseEvery bytes written
	// with the bytes written so far; streaming writers use it to release
	// the input pages they have read and to report progress. Calls never
	// overlap, but may come from different goroutines.
	Progress func(written int64)
	// Jobs bounds the goroutines that write one file at once
	// (WriteSnapshotFrom; 0: the number of CPUs).
	Jobs int
	// Stop, when not nil, is asked as the payload is written (every
	// buffer written, every range of rows of the parallel writer): once
	// it reports true the write ends with an error that is
	// context.Canceled, and nothing is published (a run that was
	// cancelled does not write the rest of a large file first).
	Stop func() bool
	// BeforePublish, when set, runs once the payload and its sidecar are
	// complete and durable under temporary names, before either is renamed
	// into place. An error leaves nothing published and is returned (a
	// check that the input did not change while it was read).
	BeforePublish func() error
	// NoReplace leaves a file (or sidecar) that is at path when the output
	// is put in place, and fails with an fs.ErrExist: a command that was
	// not told to replace its output checks that none is there when it
	// starts, and this keeps one that appeared since.
	NoReplace bool
}

// PublishOptions control how a complete payload is put in place (see
// SnapshotOptions: its BeforePublish and NoReplace).
type PublishOptions struct {
	// Before runs before anything is put in place; its error publishes
	// nothing.
	Before func() error
	// NoReplace leaves what is at the path, and its sidecar's, in place.
	NoReplace bool
	// payload: the file published is a payload, whose sidecar is replaced
	// with it even when none is written (the old one would describe
	// another payload).
	payload bool
}

// ReleaseEvery is how many bytes a writer writes between Progress calls.
const ReleaseEvery = 16 << 20

// WriteSnapshotFile writes rows as a canonical stream to path atomically
// (temporary file, fsync, rename, directory fsync), then, if asked, its
// sidecar the same way. An existing file at path is replaced, and so is
// its sidecar: without SnapshotOptions.Sidecar the old one is removed, as
// it describes the old payload. With SnapshotOptions.NoReplace a payload
// or a sidecar already there is kept and the write fails.
func WriteSnapshotFile(path string, md Metadata, rows []Row, opts SnapshotOptions) (FileInfo, error) {
	if opts.AsIs {
		return writeSnapshot(path, opts, func(w io.Writer) error { return EncodeStreamAsIs(w, md, rows, opts.Batches) })
	}
	return writeSnapshot(path, opts, func(w io.Writer) error { return EncodeStream(w, md, rows) })
}

// WriteSnapshotFrom is WriteSnapshotFile for rows that are already in
// canonical order (sorted by (op, key), no duplicates), streamed from src
// without holding the output in memory. An uncompressed output of many
// rows is written by several goroutines at once (SnapshotOptions.Jobs).
func WriteSnapshotFrom(path string, md Metadata, src RowSource, opts SnapshotOptions) (FileInfo, error) {
	if jobs := writeJobs(opts, src.Len()); jobs > 0 {
		return writeSnapshotWith(path, opts, func(f *os.File) (info FileInfo, err error) {
			err = Guard(func() (err error) {
				info, err = writeStreamParallel(f, md, src, jobs, opts.Progress, opts.Stop)
				return err
			})
			return info, err
		})
	}
	return writeSnapshot(path, opts, func(w io.Writer) error { return WriteStream(w, md, src) })
}

// writeSnapshot writes the payload that encode streams (compressed as
// asked), then its sidecar.
func writeSnapshot(path string, opts SnapshotOptions, encode func(io.Writer) error) (FileInfo, error) {
	return writeSnapshotWith(path, opts, func(f *os.File) (FileInfo, error) {
		bw := fileWriter(f)
		defer releaseFileWriter(bw)
		cw := &countingWriter{w: bw, h: NewCRC32C(), progress: opts.Progress, next: ReleaseEvery, stop: opts.Stop}
		zw, err := NewCompressor(opts.Compression, cw)
		if err != nil {
			return FileInfo{}, err
		}
		if err := Guard(func() error { return encode(zw) }); err != nil {
			return FileInfo{}, err
		}
		if err := zw.Close(); err != nil {
			return FileInfo{}, fmt.Errorf("finish %s stream: %w", opts.Compression, err)
		}
		if err := bw.Flush(); err != nil {
			return FileInfo{}, err
		}
		return FileInfo{Size: cw.n, CRC32C: cw.h.Sum32()}, nil
	})
}

// fileWriters holds the 1 MiB buffered writers of fileWriter: a tree of many
// small files would otherwise allocate and clear one per file.
var fileWriters sync.Pool

// fileWriter returns a 1 MiB buffered writer to f; releaseFileWriter gives
// it back once the file is written or abandoned.
func fileWriter(f *os.File) *bufio.Writer {
	if bw, ok := fileWriters.Get().(*bufio.Writer); ok {
		bw.Reset(f)
		return bw
	}
	return bufio.NewWriterSize(f, 1<<20)
}

// releaseFileWriter drops what bw still holds and its file, and pools it.
func releaseFileWriter(bw *bufio.Writer) {
	bw.Reset(nil)
	fileWriters.Put(bw)
}

// writeSnapshotWith publishes the payload that fill writes to a temporary
// file at path, with its sidecar if asked (see publishPair).
func writeSnapshotWith(path string, opts SnapshotOptions, fill func(*os.File) (FileInfo, error)) (FileInfo, error) {
	var info FileInfo
	tmp, err := fillTemp(path, os.O_WRONLY, func(f *os.File) (err error) {
		if info, err = fill(f); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return nil
	})
	if err != nil {
		return info, err
	}
	var sidecar []byte
	if opts.Sidecar {
		sidecar = SidecarFor(opts.CheckpointID, info)
	}
	return info, publishPair(tmp, path, sidecar, PublishOptions{Before: opts.BeforePublish, NoReplace: opts.NoReplace, payload: true})
}

// publishPair puts the complete, durable temporary payload tmp in place at
// path and, unless sidecar is nil, the sidecar beside it. The sidecar is
// written and fsynced under a temporary name first, so that a failure to
// write it publishes nothing; then before (if set) may still refuse. A
// pair it replaces is moved aside first (.sptool-old-<suffix>, its sidecar
// .meta.sptool-old-<suffix>), the payload is renamed into place and the
// new sidecar last, and only then is the old pair removed: a kill at any
// moment leaves the old pair (in place, or aside, where the next run
// names it), a payload without a sidecar (which clink refuses to restore
// as unpublished, with the temporary sidecar beside it, which validate
// reports) or the new pair, never a payload beside a sidecar that
// describes another. If the new pair cannot be put in place, the new
// payload is removed and the old pair put back. On error the temporary
// files are removed. A payload published without a sidecar
// (PublishOptions.payload) takes the old sidecar out with the old payload,
// and with NoReplace is refused when a sidecar is there.
func publishPair(tmp, path string, sidecar []byte, opts PublishOptions) (err error) {
	side := path + SidecarSuffix
	sideTmp := ""
	done := false // the new pair is in place
	defer func() {
		if !done { // an error, or a panic
			err = removeTemp(err, "its temporary file", tmp)
			if sideTmp != "" {
				err = removeTemp(err, "its temporary file", sideTmp)
			}
		}
	}()
	if sidecar != nil {
		if sideTmp, err = fillTemp(side, os.O_WRONLY, func(f *os.File) error {
			if _, err := f.Write(sidecar); err != nil {
				return fmt.Errorf("write %s: %w", side, err)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	// The renames below, and the looks before them, are made under a lock
	// of the directory: another run publishing the same output meanwhile
	// would otherwise leave its payload beside this one's sidecar. The
	// lock is taken first, so that a run that waited for it is looked at
	// (cancelled, its input changed) after the wait.
	defer lockDir(filepath.Dir(path))()
	// What is in place is looked at again just before it is replaced (the
	// commands check it before they start): a device or a named pipe that
	// appeared meanwhile is not replaced. It is looked at before Before
	// too, so that what Before removes (the report --force replaces) stays
	// when the output is refused.
	pair := sidecar != nil || opts.payload
	check := func() error {
		if err := CheckReplaceable(path, false); err != nil {
			return err
		}
		if pair {
			return CheckReplaceable(side, false)
		}
		return nil
	}
	if err := check(); err != nil {
		return err
	}
	if opts.Before != nil {
		if err := opts.Before(); err != nil {
			return err
		}
		if err := check(); err != nil {
			return err
		}
	}
	var aside *asidePair
	if pair {
		if opts.NoReplace {
			if _, err := os.Lstat(side); err == nil {
				return &OutputExistsError{Path: side, Appeared: true}
			}
		} else if aside, err = moveAside(path, side); err != nil {
			return err
		}
	}
	// Whatever the new pair put in place is taken out again on an error or
	// a panic (a rename may have been made before its directory's fsync
	// failed), and the old pair is put back; once the new pair is in, the
	// old one goes.
	defer func() {
		if done {
			if rerr := aside.remove(); rerr != nil && err == nil {
				err = &PublishedError{Out: path, Err: rerr}
			}
			return
		}
		if sideTmp != "" && gone(sideTmp) {
			err = removeTemp(err, "the new sidecar", side)
		}
		if gone(tmp) {
			err = removeTemp(err, "the new payload", path)
		}
		if perr := aside.putBack(); perr != nil {
			err = errors.Join(err, perr)
		}
	}()
	if err := publishName(tmp, path, !opts.NoReplace); err != nil {
		return err
	}
	if sidecar != nil {
		if err := publishName(sideTmp, side, !opts.NoReplace); err != nil {
			return fmt.Errorf("%w (the payload put in place before it was removed again)", err)
		}
	}
	done = true
	return nil
}

// gone reports whether the temporary file p no longer exists: it was
// renamed into place.
func gone(p string) bool {
	_, err := os.Lstat(p)
	return errors.Is(err, fs.ErrNotExist)
}

// asidePair is a payload and sidecar a --force run moved aside.
type asidePair struct {
	moved [][2]string // (the name aside, the name it had)
}

// moveAside renames the payload path and its sidecar side, those that
// exist, to names beside them that a later run reports (see Leftovers).
func moveAside(path, side string) (*asidePair, error) {
	a := &asidePair{}
	suffix := tempSuffix()
	// The sidecar first: a kill between the two renames leaves the old
	// payload without its sidecar, which clink refuses to restore as
	// unpublished, not a sidecar without its payload.
	for _, p := range []string{side, path} {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		old := p + ".sptool-old-" + suffix
		if err := os.Rename(p, old); err != nil {
			return nil, errors.Join(fmt.Errorf("move %s aside to replace it: %w", p, err), a.putBack())
		}
		a.moved = append(a.moved, [2]string{old, p})
		if hookAfterAside != nil {
			hookAfterAside(p)
		}
	}
	if len(a.moved) > 0 {
		if err := SyncDir(filepath.Dir(path)); err != nil {
			return nil, errors.Join(err, a.putBack())
		}
	}
	return a, nil
}

// putBack renames what was moved aside back to its name, in the reverse
// order (the payload before its sidecar); an error names what stays aside.
// A nil pair has nothing aside.
func (a *asidePair) putBack() error {
	if a == nil {
		return nil
	}
	var errs []error
	for _, m := range slices.Backward(a.moved) {
		if err := os.Rename(m[0], m[1]); err != nil {
			errs = append(errs, fmt.Errorf("the output replaced stays at %s (rename it back to %s): %w", m[0], m[1], err))
		}
	}
	return errors.Join(errs...)
}

// remove removes what was moved aside: the new pair is in place.
func (a *asidePair) remove() error {
	if a == nil {
		return nil
	}
	remove := os.Remove
	if testhook.RemoveReplaced != nil {
		remove = testhook.RemoveReplaced
	}
	var left []string
	var first error
	// The payload before its sidecar: a kill between leaves a sidecar
	// aside without its payload, which the next run calls remains to
	// delete, not an older payload that renamed back would sit beside the
	// new sidecar.
	for _, m := range slices.Backward(a.moved) {
		if err := remove(m[0]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			left = append(left, m[0])
			first = cmp.Or(first, err)
		}
	}
	if first == nil {
		return nil
	}
	return replacedLeft(strings.Join(left, " and "), first)
}

// SidecarFor returns the sidecar of a payload: checkpoint id, size and
// CRC-32C of info.
func SidecarFor(checkpointID uint64, info FileInfo) []byte {
	sc := Sidecar{Version: 1, HasVersion: true, CheckpointID: checkpointID, PayloadBytes: uint64(info.Size), PayloadCRC32C: info.CRC32C}
	return sc.Marshal()
}

// WriteSidecar writes the sidecar of the payload at path (checkpoint id,
// size and CRC-32C of info) atomically, as <path>.meta. Publish the payload
// first: a sidecar must never describe a payload that is not in place.
func WriteSidecar(path string, checkpointID uint64, info FileInfo) error {
	return WriteBytesAtomic(path+SidecarSuffix, SidecarFor(checkpointID, info))
}

type countingWriter struct {
	w        io.Writer
	h        hash.Hash32
	n        int64
	progress func(int64)
	next     int64
	stop     func() bool // SnapshotOptions.Stop
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.stop != nil && c.stop() {
		return 0, context.Canceled
	}
	n, err := c.w.Write(p)
	c.h.Write(p[:n])
	c.n += int64(n)
	if c.progress != nil && c.n >= c.next {
		c.progress(c.n)
		c.next = c.n + ReleaseEvery
	}
	return n, err
}

var tempSeq atomic.Uint64

// syncEnabled is false when CLINK_STATE_FSYNC=0|false, as clink honours it;
// fsyncs are skipped then (tests and benchmarks on throwaway disks).
var syncEnabled = os.Getenv("CLINK_STATE_FSYNC") != "0" && os.Getenv("CLINK_STATE_FSYNC") != "false"

// hookBeforeRename, when set (tests), runs after a temporary file is complete
// and before it is renamed into place.
var hookBeforeRename func(tmp, final string)

// hookAfterAside, when set (tests), runs after moveAside has renamed the
// file at name aside, or a tree's Commit the tree it replaces: what is
// then at the output's names is what a kill at that moment would leave.
var hookAfterAside func(name string)

// hookAfterRename, when set (tests), runs after a temporary file is renamed
// to final; an error it returns is publishName's, as a failed fsync of the
// directory after the rename would be.
var hookAfterRename func(final string) error

// WriteFileAtomic creates path through a temporary file in the same
// directory: write fills it through a buffer, then it is flushed, fsynced,
// renamed over path and the directory is fsynced. On any error the temporary
// file is removed and path is untouched.
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	return SaveFileAtomic(path, true, write)
}

// CreateFileAtomic is WriteFileAtomic for a path that must not exist: if
// a file appears there while it is written, it is left as it is, and the
// error is an fs.ErrExist.
func CreateFileAtomic(path string, write func(io.Writer) error) error {
	return SaveFileAtomic(path, false, write)
}

// SaveFileAtomic is WriteFileAtomic when replace is true and
// CreateFileAtomic when it is not: the choice a command's --force makes
// for an output that is not a savepoint (a report, an export).
func SaveFileAtomic(path string, replace bool, write func(io.Writer) error) error {
	if !replace {
		// Said before anything is written (a file that appears while it
		// is written is found when it is published).
		if _, err := os.Lstat(path); err == nil {
			return &OutputExistsError{Path: path}
		}
	}
	return writeAtomic(path, replace, func(f *os.File) error {
		bw := fileWriter(f)
		defer releaseFileWriter(bw)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	})
}

// SaveFileMakingDirs is SaveFileAtomic that first makes the missing
// directories above path (MakeDirs), and removes those it made again when
// the file is not saved: the outputs of a command that are not savepoints
// (an export, a report) are left as a failed savepoint output is.
func SaveFileMakingDirs(path string, replace bool, write func(io.Writer) error) error {
	made, err := MakeDirs(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	if err := SaveFileAtomic(path, replace, write); err != nil {
		made.Remove()
		return err
	}
	return nil
}

// writeAtomic is SaveFileAtomic for a write that fills the temporary
// file itself.
func writeAtomic(path string, replace bool, write func(*os.File) error) error {
	tmp, err := fillTemp(path, os.O_WRONLY, func(f *os.File) error {
		if err := write(f); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return publishPair(tmp, path, nil, PublishOptions{NoReplace: !replace})
}

// fillTemp creates a temporary file for path (see createTemp, with mode),
// has fill write it, fsyncs and closes it, and returns its name. On error
// the file is removed and fill's error returned as it is.
func fillTemp(path string, mode int, fill func(*os.File) error) (string, error) {
	f, tmp, err := createTemp(path, mode)
	if err != nil {
		return "", err
	}
	returned := false
	defer func() {
		if !returned { // fill panicked: the panic goes on, the file does not stay
			f.Close()
			removeTemp(nil, "its temporary file", tmp)
		}
	}()
	if err = fill(f); err == nil {
		err = closeDurable(f, tmp)
	}
	returned = true
	if err != nil {
		f.Close() // (again, if closeDurable's close failed: no harm)
		return "", removeTemp(err, "its temporary file", tmp)
	}
	return tmp, nil
}

// removeTemp removes the file name (a temporary file, or what a publish
// that then failed put in place) of a write that failed with err (nil: a
// panic) and returns err, saying so when what it is is left behind (see
// leftBehind).
func removeTemp(err error, what, name string) error {
	if left := leftBehind(what, name, os.Remove); left != nil && err != nil {
		return &LeftError{Err: err, Left: left}
	}
	return err
}

// LeftError is the error of a write that failed with Err and could not
// remove what it had written so far: Left says what is left behind, and
// why, to delete by hand.
type LeftError struct {
	Err, Left error
}

// Error says what failed, then what is left behind.
func (e *LeftError) Error() string { return fmt.Sprintf("%v (and %v)", e.Err, e.Left) }

// Unwrap returns the error the write failed with.
func (e *LeftError) Unwrap() error { return e.Err }

// leftBehind removes name, a temporary file or staging directory of a
// write that failed, with remove, and returns nil, or, when name cannot be
// removed (its directory made read-only meanwhile, say), an error saying
// that what is left behind and why, to delete. A name already gone is no
// error.
func leftBehind(what, name string, remove func(string) error) error {
	if testhook.RemoveTemp != nil {
		remove = testhook.RemoveTemp
	}
	if err := remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s is left behind: %w; delete it", what, err)
	}
	return nil
}

// createTemp creates the temporary file a payload is written to before it
// is published at path: in the same directory, named
// <path>.part.<pid>.<seq>.<random>. The random part keeps a run from
// colliding with what a killed run left behind: in a container every run
// may have the same process id.
func createTemp(path string, mode int) (*os.File, string, error) {
	tmp := path + ".part." + tempSuffix()
	f, err := os.OpenFile(tmp, mode|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, "", fmt.Errorf("create %s: %w", tmp, err)
	}
	return f, tmp, nil
}

// SetAside moves the file at path out of its place, to a name beside it
// (path.sptool-old-<suffix>, which Leftovers names if the run is killed
// meanwhile), and returns that name, what puts the file back (unless
// something took its place meanwhile) and what removes it; with no file
// at path, both do nothing and the name is "". A file that an output makes
// stale (the report --force replaces) is set aside just before the output
// is published, and put back if it is not.
func SetAside(path string) (aside string, putBack, remove func() error, err error) {
	old := path + ".sptool-old-" + tempSuffix()
	if err := os.Rename(path, old); errors.Is(err, fs.ErrNotExist) {
		nop := func() error { return nil }
		return "", nop, nop, nil
	} else if err != nil {
		return "", nil, nil, err
	}
	putBack = func() error { return renameExclusive(old, path) }
	remove = func() error { return os.Remove(old) }
	return old, putBack, remove, nil
}

// tempSuffix returns <pid>.<seq>.<random>, unique to this call.
func tempSuffix() string {
	return strconv.Itoa(os.Getpid()) + "." + strconv.FormatUint(tempSeq.Add(1), 10) + "." + strconv.FormatUint(uint64(rand.Uint32()), 36)
}

// closeDurable fsyncs and closes the temporary file tmp.
func closeDurable(f *os.File, tmp string) error {
	if syncEnabled {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("fsync %s: %w", tmp, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	return nil
}

// WriteBytesAtomic writes b to path atomically (see WriteFileAtomic), in
// one write: no buffer (a sidecar is some 40 bytes, and WriteFileAtomic's
// buffer is 1 MiB of fresh memory).
func WriteBytesAtomic(path string, b []byte) error {
	return writeAtomic(path, true, func(f *os.File) error {
		_, err := f.Write(b)
		return err
	})
}

// SyncDir fsyncs a directory so that renames into it are durable.
func SyncDir(dir string) error {
	if hookSyncDir != nil {
		hookSyncDir(dir)
	}
	return syncDirWith(os.Open, dir, dir)
}

// hookSyncDir, when set (tests), is called with each directory SyncDir
// is asked to fsync.
var hookSyncDir func(dir string)

// syncDirWith fsyncs the directory open opens as name, called dir in
// errors (unless CLINK_STATE_FSYNC=0, or on Windows: see dirSync).
func syncDirWith(open func(string) (*os.File, error), name, dir string) error {
	if !syncEnabled || !dirSync {
		return nil
	}
	d, err := open(name)
	if err != nil {
		return fmt.Errorf("open directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync directory %s: %w", dir, err)
	}
	return nil
}
