//go:build !(linux && (amd64 || arm64))

package savepoint

import "os"

// readFileAt reads len(b) bytes of f from off (see rawio_linux64.go).
func readFileAt(f *os.File, b []byte, off int64) (int, error) { return f.ReadAt(b, off) }

// writeFileAt writes b to f at off (see rawio_linux64.go).
func writeFileAt(f *os.File, b []byte, off int64) (int, error) { return f.WriteAt(b, off) }
