package savepoint

import (
	"os"
	"syscall"
)

// sysStamp is a file's change time, device and inode (Linux).
type sysStamp struct {
	ctimeSec, ctimeNsec int64
	dev, ino            uint64
}

// sameFile reports whether two stamps are of the same file (device and
// inode), whatever their change times.
func (s sysStamp) sameFile(o sysStamp) bool { return s.dev == o.dev && s.ino == o.ino }

func sysStampOf(fi os.FileInfo) sysStamp {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return sysStamp{}
	}
	return sysStamp{ctimeSec: int64(st.Ctim.Sec), ctimeNsec: int64(st.Ctim.Nsec), dev: uint64(st.Dev), ino: uint64(st.Ino)}
}
