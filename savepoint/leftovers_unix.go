//go:build unix

package savepoint

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// processRunning reports whether the process of id pid (decimal) runs on
// this machine, other than this one: a run of this process writes names
// with its own id, and those it left are its own to remove.
func processRunning(pid string) bool {
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 || n == os.Getpid() {
		return false
	}
	err = syscall.Kill(n, 0)
	return (err == nil || errors.Is(err, syscall.EPERM)) && !zombie(n)
}

// zombie reports whether the process n has ended and only waits for its
// parent to collect its exit (state Z or X in /proc/<n>/stat, where the
// system has one): a run killed a moment ago, whose names are leftovers.
func zombie(n int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(n) + "/stat")
	if err != nil {
		return false
	}
	// "<pid> (<comm>) <state> ...": the name may hold ") ".
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}
