//go:build unix && !aix && !solaris

package savepoint

import (
	"os"
	"syscall"
)

// lockDir takes an exclusive lock on the directory dir (flock) and returns
// its release. Runs that publish into one directory take it around the
// renames that put a payload and its sidecar in place, so that two --force
// runs of the same output cannot interleave them and leave one's payload
// beside the other's sidecar. A directory that cannot be locked (a file
// system without flock) is not locked.
func lockDir(dir string) func() {
	d, err := os.Open(dir)
	if err != nil {
		return func() {}
	}
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX); err != nil {
		d.Close()
		return func() {}
	}
	return func() {
		syscall.Flock(int(d.Fd()), syscall.LOCK_UN)
		d.Close()
	}
}
