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
			return &OutputExistsError{Path: path, Appeared: true}
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

// OutputExistsError is the error of an output path that is taken and may
// not be replaced: it was there when the command started, or something put
// it there while the output was being written. errors.Is(err, fs.ErrExist)
// holds for it.
//
// Its message says what is wrong, not how to proceed: a caller that lets
// its user replace outputs (sptool's --force, the Force fields of the
// options here) sets Hint to say how, and the message carries it in
// parentheses, before Note.
type OutputExistsError struct {
	// Path is the output's path.
	Path string
	// Appeared says the path was taken while the output was being
	// written, after the checks before it found it free.
	Appeared bool
	// Note, when not empty, follows the message: what else lies beside
	// the output (see LeftoversNote).
	Note string
	// Hint, when not empty, says how to replace the output.
	Hint string
}

// Error returns the message: "output PATH exists" or "output PATH
// appeared while writing", then the hint in parentheses and the note.
func (e *OutputExistsError) Error() string {
	msg := "output " + e.Path + " exists"
	if e.Appeared {
		msg = "output " + e.Path + " appeared while writing"
	}
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg + e.Note
}

// Is reports whether target is fs.ErrExist.
func (e *OutputExistsError) Is(target error) bool { return target == fs.ErrExist }
