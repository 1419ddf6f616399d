package savepoint

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// MadeDirs are the directories that MakeDirs made for an output, so that
// a run that fails before it publishes the output can remove them again
// (Remove), leaving the file system as it found it.
type MadeDirs struct {
	dirs  []string      // outermost first
	infos []fs.FileInfo // each one's Lstat once made: its identity
}

// MakeDirs makes dir and those of its parents that are missing, as
// os.MkdirAll does (mode 0755 before the umask), and returns the ones it
// made. A directory that was there, or that another process makes
// meanwhile, is not one of them. The directory above each one made is
// fsynced. On failure it removes what it made.
func MakeDirs(dir string) (*MadeDirs, error) {
	var missing []string // innermost first
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil {
			if !fi.IsDir() {
				return nil, &fs.PathError{Op: "mkdir", Path: p, Err: syscall.ENOTDIR}
			}
			break
		}
		missing = append(missing, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	m := &MadeDirs{}
	for i := len(missing) - 1; i >= 0; i-- {
		p := missing[i]
		if err := os.Mkdir(p, 0o755); err != nil {
			if fi, serr := os.Stat(p); serr == nil && fi.IsDir() {
				continue // made meanwhile, by another: not this run's
			}
			m.Remove()
			return nil, err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			m.Remove()
			return nil, err
		}
		m.dirs, m.infos = append(m.dirs, p), append(m.infos, fi)
		// The new directory's name is made durable, as the output's
		// will be in the innermost: else a crash after the run reported
		// its output written could take the directory, and the output.
		if err := SyncDir(filepath.Dir(p)); err != nil {
			m.Remove()
			return nil, err
		}
	}
	return m, nil
}

// Remove removes the directories MakeDirs made, innermost first, each
// only while it is still the directory made and empty: it stops at the
// first that holds something (the output, or what another process put
// there) or that is another directory now, since those above it are not
// empty either. A directory that is gone already is passed over. Nothing
// else is removed; m may be nil.
func (m *MadeDirs) Remove() {
	if m == nil {
		return
	}
	for i := len(m.dirs) - 1; i >= 0; i-- {
		fi, err := os.Lstat(m.dirs[i])
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil || !os.SameFile(fi, m.infos[i]):
			return
		}
		// rmdir, not os.Remove, which unlinks first: whatever another
		// process put in the directory's place since the check above is
		// not a directory, and stays.
		if syscall.Rmdir(m.dirs[i]) != nil {
			return
		}
	}
	m.dirs, m.infos = nil, nil
}
