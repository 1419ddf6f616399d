//go:build !linux

package prefault

// Writable does nothing here (see writable_linux.go) and reports false.
func Writable([]byte) bool { return false }
