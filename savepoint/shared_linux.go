//go:build linux

package savepoint

import "golang.org/x/sys/unix"

// sharedWith tells, of the file or directory at path (not followed if it
// is a link), what replacing it would reach beyond the output: "a mount
// point" for the root of a mount (a bind mount of the input's directory,
// say, whose files a removal would delete; a file or directory mounted
// over, which no rename replaces), "a file with N hard links" for a
// regular file another name shares (the input's, say, whose link count
// and change time a removal would change); "" when neither, or the system
// cannot tell (statx reports mount roots from Linux 5.8 on; a device
// number apart from its directory's is no sign of one: overlayfs and btrfs
// subvolumes give their files others).
func sharedWith(path string) string {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE|unix.STATX_NLINK, &st); err != nil {
		return ""
	}
	switch {
	case st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && st.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0:
		return "a mount point"
	case st.Mode&unix.S_IFMT == unix.S_IFREG && st.Mask&unix.STATX_NLINK != 0 && st.Nlink > 1:
		return sharedFile(int64(st.Nlink))
	}
	return ""
}
