package savepoint

import (
	"fmt"
	"os"
	"time"
)

// fileStamp is what a file's metadata says of its contents: a rewrite in
// place changes it even when it keeps the size and sets the modification
// time back (touch -r), since that sets the change time (ctime) to now.
type fileStamp struct {
	size  int64
	mtime time.Time
	sys   sysStamp // the change time, device and inode, where known
}

// stampOf returns the stamp of a file from its metadata.
func stampOf(fi os.FileInfo) fileStamp {
	return fileStamp{size: fi.Size(), mtime: fi.ModTime(), sys: sysStampOf(fi)}
}

// stampChange is how a file's stamp moved.
type stampChange int

const (
	stampSame    stampChange = iota
	stampCtime               // only the change time: the contents may be the same
	stampChanged             // size, modification time, device or inode
)

// compare says how the stamp o differs from s.
func (s fileStamp) compare(o fileStamp) stampChange {
	switch {
	case s.size != o.size || !s.mtime.Equal(o.mtime) || !s.sys.sameFile(o.sys):
		return stampChanged
	case s.sys != o.sys:
		return stampCtime
	}
	return stampSame
}

// checkStamp reports ErrInputChanged when the file at path no longer has
// the stamp it had when opened. When only its change time moved, which a
// chmod, a hard link or a rename of the file does too (a backup that links
// the tree), its bytes are read again and compared by CRC-32C with crc,
// theirs when opened.
func checkStamp(path string, opened fileStamp, crc uint32) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	switch stampOf(st).compare(opened) {
	case stampSame:
		return nil
	case stampCtime:
		fh, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		defer fh.Close()
		now, err := checksumFile(fh, st.Size())
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if now == crc {
			return nil
		}
	}
	return fmt.Errorf("%s: %w", path, ErrInputChanged)
}

// dirStamp is a directory of a tree as Open listed it: its path and what
// it was (its device and inode).
type dirStamp struct {
	path string
	fi   os.FileInfo
}

// checkDirs reports ErrInputChanged when a directory Open listed is no
// longer the one at its path: replaced by a rename, as a run writing the
// tree with --force puts its new tree in place. Files opened after such a
// swap are another tree's, each whole and unchanged, so no file's stamp
// shows it, and a run would mix the listing and marker of one tree with
// the files of the other. Entries added or removed (a job writing its next
// checkpoint) are no change.
func checkDirs(dirs []dirStamp) error {
	for _, d := range dirs {
		st, err := os.Stat(d.path)
		if err != nil {
			return fmt.Errorf("%s: %w: %w", d.path, ErrInputChanged, err)
		}
		if !os.SameFile(st, d.fi) {
			return fmt.Errorf("%s: %w: the directory was replaced by another while the tree was read", d.path, ErrInputChanged)
		}
	}
	return nil
}

// noteDir adds directory path, as it is now, to the directories checkDirs
// checks; one that cannot be read is left to the read that follows.
func (sp *Savepoint) noteDir(path string) {
	if st, err := os.Stat(path); err == nil {
		sp.dirs = append(sp.dirs, dirStamp{path, st})
	}
}
