package savepoint

import (
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

// same reports whether two stamps of a file are equal.
func (s fileStamp) same(o fileStamp) bool {
	return s.size == o.size && s.mtime.Equal(o.mtime) && s.sys == o.sys
}
