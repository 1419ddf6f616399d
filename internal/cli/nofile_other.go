//go:build !unix

package cli

// openFilesLimit reports no limit where the system has no RLIMIT_NOFILE.
func openFilesLimit() (uint64, bool) { return 0, false }
