//go:build linux && (amd64 || arm64)

package savepoint

import (
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// noWaitRefused is set once the kernel or a file system refuses preadv2
// with RWF_NOWAIT: every read then goes the usual way.
var noWaitRefused atomic.Bool

// readFileAt reads len(b) bytes of f from off, as f.ReadAt does, reading
// what the page cache holds first with readCached.
func readFileAt(f *os.File, b []byte, off int64) (int, error) {
	n := readCached(f, b, off)
	if n == len(b) {
		return n, nil
	}
	k, err := f.ReadAt(b[n:], off+int64(n))
	return n + k, err
}

// readCached reads as much of b from off as the page cache holds, and
// returns how much. It makes the system call raw. Go's scheduler hands the
// processor of a goroutine in a system call of more than about 20 us to
// another thread, and copying 64 KiB from the page cache takes about that
// long: two goroutines reading a 390 MB file made 760 thread switches, and
// inspect took 160 ms (135 ms without them, on two CPUs). RWF_NOWAIT makes
// a read that would wait for the disk return EAGAIN instead, so no
// processor is held while the disk works: the caller reads the rest the
// usual way.
func readCached(f *os.File, b []byte, off int64) int {
	if len(b) == 0 || noWaitRefused.Load() {
		return 0
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	rc.Control(func(fd uintptr) {
		for n < len(b) {
			iov := unix.Iovec{Base: &b[n]}
			iov.SetLen(len(b) - n)
			at := off + int64(n)
			r, _, e := syscall.RawSyscall6(unix.SYS_PREADV2, fd, uintptr(unsafe.Pointer(&iov)), 1, uintptr(at), 0, unix.RWF_NOWAIT)
			switch e {
			case 0:
			case unix.EOPNOTSUPP, unix.EINVAL, unix.ENOSYS, unix.EPERM:
				noWaitRefused.Store(true)
				return
			default:
				return // EAGAIN (not cached), EINTR, or an error the usual way reports
			}
			if r == 0 {
				return // the end of the file (the usual way says so)
			}
			n += int(r)
		}
	})
	return n
}

// writeFileAt writes b to f at off, as f.WriteAt does, with raw pwrite
// system calls, for the reason readCached gives: the writer's 1 MiB writes
// to the page cache take about 270 us each, and each made the scheduler
// switch threads (a drop over 10M rows: 1,200-2,000 thread switches and
// 0.273 s; 200-370 and 0.244 s). ext4 refuses RWF_NOWAIT for writes, so a
// write that must wait (dirty pages over the kernel's limit pause a writer
// for up to 200 ms) holds its processor meanwhile, and other goroutines
// wait for that write at most (the writer's goroutines are as many as
// --jobs, one per CPU by default). On a file system that hangs (an NFS
// server gone), writes that hold every processor hold the signal handler
// too: an interrupt is handled when a write returns. A write that fails or
// stops short goes again the usual way, which says what is wrong.
func writeFileAt(f *os.File, b []byte, off int64) (int, error) {
	n := 0
	if rc, err := f.SyscallConn(); err == nil && len(b) > 0 {
		rc.Control(func(fd uintptr) {
			for n < len(b) {
				at := off + int64(n)
				r, _, e := syscall.RawSyscall6(unix.SYS_PWRITE64, fd, uintptr(unsafe.Pointer(&b[n])), uintptr(len(b)-n), uintptr(at), 0, 0)
				if e != 0 || r == 0 {
					return
				}
				n += int(r)
			}
		})
	}
	if n == len(b) {
		return n, nil
	}
	k, err := f.WriteAt(b[n:], off+int64(n))
	return n + k, err
}
