//go:build linux

package savepoint

import (
	"bytes"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// resident returns how many pages of b the process has mapped in.
func resident(t *testing.T, b []byte) int {
	t.Helper()
	vec := make([]byte, (len(b)+unix.Getpagesize()-1)/unix.Getpagesize())
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	if e != 0 {
		t.Fatal(e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// TestPrefault: prefault maps in the whole pages of a buffer, leaves its
// contents as they are, and leaves the pages outside it alone.
func TestPrefault(t *testing.T) {
	page := unix.Getpagesize()
	m, err := unix.Mmap(-1, 0, 64*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	if n := resident(t, m); n != 0 {
		t.Fatalf("a fresh map has %d pages in", n)
	}
	// Pages 1 and 40 written before, with a pattern; b covers pages 1-40
	// and half of page 0 and 41: the whole pages are 1 to 40.
	m[page], m[40*page+5] = 7, 9
	b := m[page/2 : 41*page+page/2]
	prefault(b)
	if prefaultOff.Load() {
		t.Skip("MADV_POPULATE_WRITE refused (Linux before 5.14)")
	}
	if n := resident(t, m[page:41*page]); n != 40 {
		t.Errorf("%d of the buffer's 40 whole pages are mapped in, want all", n)
	}
	if resident(t, m[:page]) != 0 || resident(t, m[41*page:]) != 0 {
		t.Errorf("pages outside the buffer's whole pages were mapped in")
	}
	// Small buffers are left to fault.
	prefault(m[48*page : 48*page+prefaultMin-1])
	if n := resident(t, m[48*page:]); n != 0 {
		t.Errorf("a buffer under prefaultMin had %d pages mapped in", n)
	}
	// (Reading the map maps in the pages read: this comes last.)
	want := make([]byte, len(m))
	want[page], want[40*page+5] = 7, 9
	if !bytes.Equal(m, want) {
		t.Errorf("prefault changed the buffer's contents")
	}
}

// TestPoolBufPrefault: poolBuf maps in the bytes its caller will use.
func TestPoolBufPrefault(t *testing.T) {
	b := poolBuf(sinkSize)
	defer putBuf(b)
	if cap(b) != sinkSize || len(b) != 0 {
		t.Fatalf("poolBuf: len %d cap %d", len(b), cap(b))
	}
	full := b[:sinkSize]
	if prefaultOff.Load() {
		t.Skip("MADV_POPULATE_WRITE refused")
	}
	// The buffer's whole pages (it may not start on a page).
	page := unix.Getpagesize()
	at := int(uintptr(unsafe.Pointer(&full[0])) % uintptr(page))
	inner := full[(page-at)%page:]
	inner = inner[:len(inner)/page*page]
	if n, want := resident(t, inner), len(inner)/page; n != want {
		t.Errorf("%d of %d pages of a pooled buffer are mapped in", n, want)
	}
}
