//go:build unix

package savepoint

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps a file read-only. A zero-length file maps to nil. The
// mapping is recorded until unmapFile, so that Guard can name the file and
// the byte of a fault in it.
func mapFile(f *os.File, size int64) ([]byte, error) {
	if size == 0 {
		return nil, nil
	}
	if int64(int(size)) != size {
		return nil, fmt.Errorf("file of %d bytes is too large to map", size)
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	addMapping(b, f)
	return b, nil
}

func unmapFile(b []byte) error {
	if b == nil {
		return nil
	}
	removeMapping(b)
	return unix.Munmap(b)
}

// releasePages tells the kernel the process no longer needs these pages of a
// mapping resident: they stay in the page cache, but leave the process's
// resident set (they fault back in if touched again).
func releasePages(b []byte) {
	if len(b) > 0 {
		unix.Madvise(b, unix.MADV_DONTNEED)
	}
}
