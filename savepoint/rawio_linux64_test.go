//go:build linux && (amd64 || arm64)

package savepoint

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"
)

// The same reads the usual way only (RWF_NOWAIT refused), and from a file
// whose pages were dropped from the page cache (the reads that would wait
// for the disk go the usual way).
func TestReadFileAtFallback(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 300<<6)
	f := openWith(t, data)

	defer func(v bool) { noWaitRefused.Store(v) }(noWaitRefused.Load())
	noWaitRefused.Store(true)
	testReadFileAt(t, f, data)
	noWaitRefused.Store(false)

	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Skipf("cannot drop the file's pages: %v", err)
	}
	if n := readCached(f, make([]byte, 64<<10), 128<<10); n == 64<<10 {
		t.Logf("the pages stayed cached: the reads below take the fast path")
	}
	testReadFileAt(t, f, data)
	if noWaitRefused.Load() {
		t.Logf("this kernel or file system refuses RWF_NOWAIT")
	}
}
