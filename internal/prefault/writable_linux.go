//go:build linux

package prefault

import (
	"runtime"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// madvPopulateWrite is MADV_POPULATE_WRITE (Linux 5.14).
const madvPopulateWrite = 23

// writableOff is set when the kernel refuses MADV_POPULATE_WRITE (before
// Linux 5.14), so that it is asked once.
var writableOff atomic.Bool

// Writable maps in the whole pages of b, writable, in one system call
// (MADV_POPULATE_WRITE), where writing them would take a page fault each.
// The contents are not changed. A fresh page costs its fault: about 11 us
// on the virtual machines measured, where populating a megabyte (256
// pages) at once takes 0.3 ms instead of 3.5 ms, and pages already mapped
// cost about 16 us a megabyte to walk. Buffers under WritableMin are left
// to fault. It reports whether the kernel did it (false for a small
// buffer, or where it refuses).
func Writable(b []byte) bool {
	if len(b) < WritableMin || writableOff.Load() {
		return false
	}
	page := uintptr(syscall.Getpagesize())
	at := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo, hi := (at+page-1)&^(page-1), (at+uintptr(len(b)))&^(page-1)
	if hi <= lo {
		return false
	}
	err := madvise(lo, hi, madvPopulateWrite)
	runtime.KeepAlive(b)
	if err == syscall.EINVAL {
		writableOff.Store(true)
	}
	return err == nil
}
