//go:build !linux

package savepoint

import "os"

// preallocate is a no-op here (see prealloc_linux.go).
func preallocate(*os.File, int64) {}
