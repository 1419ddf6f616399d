//go:build unix

package cli

import "syscall"

// dirWritable reports why files cannot be created in the directory dir
// (a read-only file system, no permission), or nil.
func dirWritable(dir string) error {
	return syscall.Access(dir, 0x2) // W_OK
}
