package savepoint

import (
	"os"

	"golang.org/x/sys/unix"
)

// openUnnamed opens a file in dir that has no name (O_TMPFILE): a run
// killed at any moment leaves nothing behind, where a file created and
// then unlinked leaves its name if the run dies between the two. A file
// system that cannot make one returns an error, and the caller creates a
// named file instead.
func openUnnamed(dir string) (*os.File, error) {
	return os.OpenFile(dir, os.O_RDWR|unix.O_TMPFILE|unix.O_CLOEXEC, 0o600)
}
