//go:build linux

package savepoint

import (
	"os"

	"golang.org/x/sys/unix"
)

// cloneFile makes dst, an empty file, share the blocks of src (FICLONE)
// where the file system can (btrfs, XFS with reflinks, bcachefs), and
// reports whether it did. Elsewhere (ext4, tmpfs, across file systems) it
// fails at once and dst is left empty.
func cloneFile(dst, src *os.File) bool {
	sc, err := src.SyscallConn()
	if err != nil {
		return false
	}
	dc, err := dst.SyscallConn()
	if err != nil {
		return false
	}
	var cerr error
	if err := sc.Control(func(sfd uintptr) {
		if err := dc.Control(func(dfd uintptr) { cerr = unix.IoctlFileClone(int(dfd), int(sfd)) }); err != nil {
			cerr = err
		}
	}); err != nil {
		return false
	}
	return cerr == nil
}
