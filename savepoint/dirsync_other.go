//go:build !windows

package savepoint

// dirSync is whether a directory can be fsynced (see dirsync_windows.go).
const dirSync = true
