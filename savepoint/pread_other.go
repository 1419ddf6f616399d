//go:build !linux

package savepoint

import "os"

// readFileAt reads len(b) bytes of f from off (see the Linux version).
func readFileAt(f *os.File, b []byte, off int64) (int, error) { return f.ReadAt(b, off) }

