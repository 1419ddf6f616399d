package savepoint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sptool/sptool/internal/prefault"
)

// maxControlFileSize bounds the size of a sidecar or a COMPLETED marker
// (real ones are under 200 bytes; clink sets no bound, and reads past the
// keys it does not know, so a sidecar of thousands of them is valid to
// it).
const maxControlFileSize = 1 << 20

// fileKind names the kind of a file that is not a regular file, for errors:
// savepoint files are read only from regular files (a named pipe would block
// the reader, a device reads as empty or without end).
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a regular file"
}

// ReadControlFile reads a small control file of a tree (a COMPLETED or
// CONFIRMED marker, a sidecar): a regular file of at most 1 MiB (see
// ReadRegularFile).
func ReadControlFile(path string) ([]byte, error) {
	return ReadRegularFile(path, maxControlFileSize)
}

// ErrNotControlFile is wrapped by the error of ReadRegularFile when what
// is at the path is not a regular file (a directory, a device, a named
// pipe): it could not be a control file or sidecar clink wrote, nor one
// clink reads.
var ErrNotControlFile = errors.New("not a file sptool or clink reads")

// ReadRegularFile reads the file at path (symbolic links followed), which
// must be a regular file of at most max bytes. It reads the size the file
// had when opened. A file that does not exist is an error wrapping
// fs.ErrNotExist; one that is not a regular file, an error wrapping
// ErrNotControlFile; other errors (larger than max, say) name the file.
func ReadRegularFile(path string, max int64) ([]byte, error) {
	data, _, err := readRegularFileStamped(path, max)
	return data, err
}

// readRegularFileStamped is ReadRegularFile, which also returns the file's
// stamp as it was before its bytes were read (a change during the read
// moves it).
func readRegularFileStamped(path string, max int64) ([]byte, fileStamp, error) {
	fh, st, err := openRegularFile(path)
	if err != nil {
		return nil, fileStamp{}, err
	}
	defer fh.Close()
	data, err := readOpenedFile(fh, st, path, max)
	return data, stampOf(st), err
}

// openRegularFile opens the file at path (symbolic links followed), which
// must be a regular file: it is checked before it is opened (opening a
// named pipe would block), and once open (it may have been replaced in
// between). It returns the file and its metadata, which a change moves.
func openRegularFile(path string) (*os.File, os.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, notStdin(path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, nil, &kindError{ErrNotControlFile, fmt.Sprintf("%s is %s, not a regular file", path, fileKind(st.Mode()))}
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	if st, err = fh.Stat(); err != nil {
		fh.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		fh.Close()
		return nil, nil, &kindError{ErrNotControlFile, fmt.Sprintf("%s is %s, not a regular file", path, fileKind(st.Mode()))}
	}
	return fh, st, nil
}

// readOpenedFile reads the file fh opened at path (openRegularFile), of
// metadata st, whole: at most max bytes.
func readOpenedFile(fh *os.File, st os.FileInfo, path string, max int64) ([]byte, error) {
	if st.Size() > max {
		return nil, &tooLargeError{path, st.Size(), max}
	}
	data := make([]byte, st.Size())
	// Mapped in at once: the read would fault a fresh page at a time (a
	// keys file of 100,000 int64 keys, 684 KB, read in 1.5-2.6 ms).
	prefault.Writable(data)
	if _, err := io.ReadFull(fh, data); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

// ErrOutsideTree is wrapped by the error of a materialisation handle that
// sptool does not follow: to a file outside the subtask directory it names
// (symbolic links resolved), or from a changelog outside any tree. It is a
// rule of sptool's own, which keeps a savepoint from having it read any
// file on the machine; clink opens a handle's path as it is written.
var ErrOutsideTree = errors.New("sptool reads a materialisation only within the subtask directory of the tree its handle names")

// realWithin returns the absolute path, symbolic links resolved, of
// dir/rel, which must lie within dir both as named (".." components) and
// once its symbolic links are resolved (those of dir itself are
// followed): rel comes from a file being read, and must not lead
// elsewhere on the machine.
func realWithin(dir, rel string) (string, error) {
	path := filepath.Join(dir, rel)
	if !within(dir, path) {
		return "", fmt.Errorf("%s lies outside %s: %w", path, dir, ErrOutsideTree)
	}
	real, err := realPath(path)
	if err != nil {
		return "", err
	}
	realDir, err := realPath(dir)
	if err != nil {
		return "", err
	}
	if !within(realDir, real) {
		return "", fmt.Errorf("%s leads through a symbolic link to %s, outside %s: %w", path, real, dir, ErrOutsideTree)
	}
	return real, nil
}

// within reports whether path lies within dir (both clean, or both to be
// cleaned alike).
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && !filepath.IsAbs(rel) && !startsWithDotDot(rel)
}

// realPath returns the absolute path of p with its symbolic links resolved.
func realPath(p string) (string, error) {
	r, err := filepath.EvalSymlinks(p)
	var pe *fs.PathError
	if err != nil && !errors.As(err, &pe) {
		// A loop of links: EvalSymlinks' message names no path.
		return "", fmt.Errorf("%s: %w", p, err)
	}
	if err != nil {
		return "", err
	}
	return filepath.Abs(r)
}

// notStdin is err, of a path that does not exist, with a word on "-" when
// that is the path: it names a file like any other, not standard input.
func notStdin(path string, err error) error {
	if path == "-" && errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w (sptool reads its inputs from files, not from standard input: give the file's path)", err)
	}
	return err
}

// tooLargeError is the error of ReadRegularFile for a file of more than
// the bytes it allows.
type tooLargeError struct {
	path      string
	size, max int64
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("%s is %d bytes, more than the %d bytes allowed", e.path, e.size, e.max)
}
