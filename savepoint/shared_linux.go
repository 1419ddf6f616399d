//go:build linux

package savepoint

import (
	"path/filepath"

	"golang.org/x/sys/unix"
)

// sharedWith tells, of the file or directory at path (not followed if it
// is a link), what replacing it would reach beyond the output: "a mount
// point" for the root of a mount (a bind mount of the input's directory,
// say, whose files a removal would delete; a file or directory mounted
// over, which no rename replaces), "a file with N hard links" for a
// regular file another name shares (the input's, say, whose link count
// and change time a removal would change); "" when neither, or the system
// cannot tell (statx reports mount roots from Linux 5.8 on; before, a
// mount of another file system is told by its device, a bind mount of the
// same one not).
func sharedWith(path string) string {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE|unix.STATX_NLINK, &st); err != nil {
		return ""
	}
	switch {
	case st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && st.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0:
		return "a mount point"
	case st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0 && otherDevice(path, st):
		return "a mount point"
	case st.Mode&unix.S_IFMT == unix.S_IFREG && st.Mask&unix.STATX_NLINK != 0 && st.Nlink > 1:
		return sharedFile(int64(st.Nlink))
	}
	return ""
}

// otherDevice reports whether the file at path, whose statx is st, lies on
// another device than the directory holding it: the root of a mount of
// another file system.
func otherDevice(path string, st unix.Statx_t) bool {
	var parent unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, filepath.Dir(path), 0, unix.STATX_TYPE, &parent); err != nil {
		return false
	}
	return parent.Dev_major != st.Dev_major || parent.Dev_minor != st.Dev_minor
}
