//go:build !linux

package savepoint

import (
	"errors"
	"os"
)

// openUnnamed is not available: the caller creates a named file.
func openUnnamed(string) (*os.File, error) {
	return nil, errors.New("unnamed temporary files are Linux's")
}
