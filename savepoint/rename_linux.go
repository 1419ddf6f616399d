//go:build linux

package savepoint

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// renameExclusive renames from to to unless to exists: one renameat2 with
// RENAME_NOREPLACE, which also covers directories. A file system that
// does not support the flag gets renameExclusiveFallback.
func renameExclusive(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return renameExclusiveFallback(from, to)
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return nil
}

// exchange swaps the directories (or files) at a and b in one renameat2
// with RENAME_EXCHANGE: b is never absent. It reports false, and changes
// nothing, where the file system does not support the flag.
func exchange(a, b string) (bool, error) {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return false, nil
	}
	if err != nil {
		return false, &os.LinkError{Op: "exchange", Old: a, New: b, Err: err}
	}
	return true, nil
}
