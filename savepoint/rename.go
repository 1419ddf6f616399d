package savepoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// renameExclusiveFallback renames from to to unless to exists. A file is
// hard-linked to its new name, which fails if the name is taken, and its
// old name removed; a directory, or a file where links are not supported,
// is renamed after a look at to, which leaves a moment in which a file
// created there would be replaced.
func renameExclusiveFallback(from, to string) error {
	st, err := os.Lstat(from)
	if err != nil {
		return err
	}
	if st.Mode().IsRegular() {
		err := os.Link(from, to)
		if err == nil {
			// The data is in place under both names: a failure to remove
			// the temporary name leaves a stray link, not a lost output.
			_ = os.Remove(from)
			return nil
		}
		if errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	if _, err := os.Lstat(to); err == nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: fs.ErrExist}
	}
	return os.Rename(from, to)
}

// publishName puts the complete temporary file tmp in place at path: over
// whatever is there when replace is set, else only if nothing is (an
// output that appeared while the run wrote its own is not replaced). It
// fsyncs the directory.
func publishName(tmp, path string, replace bool) error {
	if hookBeforeRename != nil {
		hookBeforeRename(tmp, path)
	}
	rename := os.Rename
	if !replace {
		rename = renameExclusive
		if renameExclusiveHook != nil {
			rename = renameExclusiveHook
		}
	}
	if err := rename(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return &appearedError{path}
		}
		return fmt.Errorf("publish %s: %w", path, err)
	}
	if hookAfterRename != nil {
		if err := hookAfterRename(path); err != nil {
			return err // as a failed fsync of the directory would
		}
	}
	return SyncDir(filepath.Dir(path))
}

// renameExclusiveHook, when set (tests), is used instead of
// renameExclusive.
var renameExclusiveHook func(from, to string) error

// appearedError is the error of an output that something else put in
// place while it was being written, and that was not replaced. It is an
// fs.ErrExist.
type appearedError struct{ path string }

func (e *appearedError) Error() string {
	return "output " + e.path + " appeared while writing (use --force to replace it)"
}

func (e *appearedError) Is(target error) bool { return target == fs.ErrExist }

// ExistsError returns an error with message msg, of an output that exists
// and may not be replaced: errors.Is(err, fs.ErrExist) holds for it.
func ExistsError(msg string) error { return &existsError{msg} }

type existsError struct{ msg string }

func (e *existsError) Error() string { return e.msg }

func (e *existsError) Is(target error) bool { return target == fs.ErrExist }
