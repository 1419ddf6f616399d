//go:build unix

package savepoint

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// holdAllFiles lowers the process's limit of open files and opens files
// until no more may be, as the payloads of a tree of many subtasks held
// open while it is read would; it returns what closes them and puts the
// limit back (also done at the end of the test).
func holdAllFiles(t *testing.T) (release func()) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	const low = 256
	if lim.Cur < low {
		t.Skipf("the limit of open files is %d already", lim.Cur)
	}
	lowered := lim
	lowered.Cur = low
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lowered); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	var held []*os.File
	release = func() {
		for _, f := range held {
			f.Close()
		}
		held = nil
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	t.Cleanup(release)
	for {
		f, err := os.Open(os.DevNull)
		if errors.Is(err, syscall.EMFILE) {
			return release
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(held) > low {
			t.Skip("the lowered limit of open files is not enforced")
		}
		held = append(held, f)
	}
}

// A tree write that fails because the process may open no more files (a
// tree of many subtasks, each payload held open while it is read, under a
// low ulimit -n) still removes its staging directory, though removing it
// opens the directories it holds and the descriptors the run holds are
// not given back before Abort; and a tree that could not be removed so is
// not begun: CreateTree makes nothing.
func TestAbortRemovesStagingWithNoFilesLeft(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	tw := stagedTree(t, out)
	release := holdAllFiles(t)
	err := tw.Abort()
	release()
	if err != nil {
		t.Errorf("Abort with no descriptor left to open: %v", err)
	}
	if _, err := os.Lstat(tw.Stage()); !os.IsNotExist(err) {
		t.Errorf("the staging directory is still there: %v", err)
	}

	parent := filepath.Join(t.TempDir(), "new")
	release = holdAllFiles(t)
	_, err = CreateTree(filepath.Join(parent, "out"), TreeOptions{Generation: 1, Checkpoint: 7})
	release()
	if !errors.Is(err, syscall.EMFILE) {
		t.Errorf("CreateTree with no descriptor left to open: %v, want EMFILE", err)
	}
	if _, err := os.Lstat(parent); !os.IsNotExist(err) {
		t.Errorf("CreateTree refused made %s: %v", parent, err)
	}
}
