//go:build unix

package cli

import "syscall"

// openFilesLimit returns the hard limit of the files the process may hold
// open (RLIMIT_NOFILE): Go's runtime raises the soft limit to about it at
// start, so the hard limit is the one to raise.
func openFilesLimit() (uint64, bool) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, false
	}
	return uint64(l.Max), true // (int64 on some systems)
}
