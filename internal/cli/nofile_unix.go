//go:build unix

package cli

import "syscall"

// openFilesLimit returns the most files the process may hold open (its
// soft RLIMIT_NOFILE, which Go's runtime raises to the hard limit at start).
func openFilesLimit() (uint64, bool) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, false
	}
	return l.Cur, true
}
