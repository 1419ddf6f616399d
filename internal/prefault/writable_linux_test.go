//go:build linux

package prefault

import (
	"bytes"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mappedIn returns how many pages of b the process has mapped in.
func mappedIn(t *testing.T, b []byte) int {
	t.Helper()
	at := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	vec, ok := resident(at, at+uintptr(len(b)))
	if !ok {
		t.Fatal("mincore failed")
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// TestWritable: Writable maps in the whole pages of a buffer, leaves its
// contents as they are, and leaves the pages outside it alone; Slice does
// so for a slice's capacity.
func TestWritable(t *testing.T) {
	page := unix.Getpagesize()
	m, err := unix.Mmap(-1, 0, 64*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	if n := mappedIn(t, m); n != 0 {
		t.Fatalf("a fresh map has %d pages in", n)
	}
	// Pages 1 and 40 written before, with a pattern; b covers pages 1-40
	// and half of page 0 and 41: the whole pages are 1 to 40.
	m[page], m[40*page+5] = 7, 9
	b := m[page/2 : 41*page+page/2]
	if !Writable(b) {
		if writableOff.Load() {
			t.Skip("MADV_POPULATE_WRITE refused (Linux before 5.14)")
		}
		t.Fatal("Writable did not map a large buffer in")
	}
	if n := mappedIn(t, m[page:41*page]); n != 40 {
		t.Errorf("%d of the buffer's 40 whole pages are mapped in, want all", n)
	}
	if mappedIn(t, m[:page]) != 0 || mappedIn(t, m[41*page:]) != 0 {
		t.Errorf("pages outside the buffer's whole pages were mapped in")
	}
	// Small buffers are left to fault.
	if Writable(m[48*page : 48*page+WritableMin-1]) {
		t.Error("Writable reports mapping in a buffer under WritableMin")
	}
	if n := mappedIn(t, m[48*page:]); n != 0 {
		t.Errorf("a buffer under WritableMin had %d pages mapped in", n)
	}
	// (Reading the map maps in the pages read: this comes last.)
	want := make([]byte, len(m))
	want[page], want[40*page+5] = 7, 9
	if !bytes.Equal(m, want) {
		t.Errorf("Writable changed the buffer's contents")
	}

	// Slice: a slice of 8-byte elements, by its capacity (32 pages).
	m2, err := unix.Mmap(-1, 0, 40*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m2)
	s := unsafe.Slice((*uint64)(unsafe.Pointer(&m2[0])), 32*page/8)[:0]
	if !Slice(s) {
		t.Fatal("Slice did not map a large slice in")
	}
	if in, after := mappedIn(t, m2[:32*page]), mappedIn(t, m2[32*page:]); in != 32 || after != 0 {
		t.Errorf("Slice mapped in %d of the slice's 32 pages and %d after it", in, after)
	}
	if Slice([]uint64(nil)) {
		t.Error("Slice of nothing reports mapping it in")
	}
}
