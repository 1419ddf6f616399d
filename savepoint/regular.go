package savepoint

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// maxControlFileSize bounds the size of a sidecar or a COMPLETED marker
// (real ones are under 200 bytes).
const maxControlFileSize = 64 << 10

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

// readRegularFile reads the file at path (symbolic links followed), which
// must be a regular file of at most max bytes. It reads the size the file
// had when opened. A file that does not exist is an error wrapping
// fs.ErrNotExist; other errors name the file.
func readRegularFile(path string, max int64) ([]byte, error) {
	st, err := os.Stat(path) // before opening: opening a named pipe would block
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %s, not a regular file", path, fileKind(st.Mode()))
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	if st, err = fh.Stat(); err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %s, not a regular file", path, fileKind(st.Mode()))
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d bytes allowed", path, st.Size(), max)
	}
	data := make([]byte, st.Size())
	if _, err := io.ReadFull(fh, data); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}
