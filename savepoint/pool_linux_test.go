//go:build linux

package savepoint

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sptool/sptool/internal/prefault"
)

// TestPoolBufPrefault: poolBuf maps in the bytes its caller will use.
func TestPoolBufPrefault(t *testing.T) {
	page := unix.Getpagesize()
	probe, err := unix.Mmap(-1, 0, prefault.WritableMin, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(probe)
	if !prefault.Writable(probe) {
		t.Skip("MADV_POPULATE_WRITE refused")
	}
	b := poolBuf(sinkSize)
	defer putBuf(b)
	if cap(b) != sinkSize || len(b) != 0 {
		t.Fatalf("poolBuf: len %d cap %d", len(b), cap(b))
	}
	full := b[:sinkSize]
	// The buffer's whole pages (it may not start on a page).
	at := int(uintptr(unsafe.Pointer(&full[0])) % uintptr(page))
	inner := full[(page-at)%page:]
	inner = inner[:len(inner)/page*page]
	vec := make([]byte, len(inner)/page)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&inner[0])), uintptr(len(inner)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	if n != len(vec) {
		t.Errorf("%d of %d pages of a pooled buffer are mapped in", n, len(vec))
	}
}
