//go:build unix

package savepoint

import (
	"errors"
	"os"
	"strconv"
	"syscall"
)

// processRunning reports whether the process of id pid (decimal) exists on
// this machine, other than this one: a run of this process writes names
// with its own id, and those it left are its own to remove.
func processRunning(pid string) bool {
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 || n == os.Getpid() {
		return false
	}
	err = syscall.Kill(n, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
