//go:build !unix

package savepoint

import (
	"io"
	"os"
)

func mapFile(f *os.File, size int64) ([]byte, error) {
	b := make([]byte, size)
	_, err := io.ReadFull(f, b)
	return b, err
}

func unmapFile([]byte) error { return nil }
func releasePages([]byte)    {}
