//go:build unix

package savepoint

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// mapFile maps a file read-only. A zero-length file maps to nil.
func mapFile(f *os.File, size int64) ([]byte, error) {
	if size == 0 {
		return nil, nil
	}
	if int64(int(size)) != size {
		return nil, fmt.Errorf("file of %d bytes is too large to map", size)
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	return b, nil
}

func unmapFile(b []byte) error {
	if b == nil {
		return nil
	}
	return syscall.Munmap(b)
}

// releasePages tells the kernel the process no longer needs these pages of a
// mapping resident: they stay in the page cache, but leave the process's
// resident set (they fault back in if touched again).
func releasePages(b []byte) {
	if len(b) > 0 {
		syscall.Madvise(b, syscall.MADV_DONTNEED)
	}
}

// releaseWithin releases the whole pages of b, a slice of the mapping m
// (madvise takes page-aligned ranges; the partial pages at the ends stay).
func releaseWithin(m, b []byte) {
	if len(b) == 0 || len(m) == 0 {
		return
	}
	page := uintptr(os.Getpagesize())
	base := uintptr(unsafe.Pointer(unsafe.SliceData(m)))
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b))) - base
	end := start + uintptr(len(b))
	start = (start + page - 1) &^ (page - 1)
	end &^= page - 1
	if end > start && end <= uintptr(len(m)) {
		syscall.Madvise(m[start:end], syscall.MADV_DONTNEED)
	}
}
