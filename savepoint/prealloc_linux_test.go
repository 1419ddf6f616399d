package savepoint

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// preallocate reserves the blocks without changing the file's size, so a
// file cut short reads as short, never as zeros; what is written after
// reads back as written; and a file it cannot reserve for (a pipe) is left
// as it was, without an error.
func TestPreallocate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.snap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const size = 4 << 20
	preallocate(f, size)
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != 0 {
		t.Fatalf("size %d after preallocate, want 0", st.Size())
	}
	if blocks := st.Sys().(*syscall.Stat_t).Blocks * 512; blocks < size {
		// Only where the file system cannot reserve.
		probe, err := os.Create(path + ".probe")
		if err != nil {
			t.Fatal(err)
		}
		defer probe.Close()
		if unix.Fallocate(int(probe.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, size) == nil {
			t.Fatalf("%d bytes reserved of %d", blocks, size)
		}
		t.Logf("this file system does not reserve blocks")
	}
	data := bytes.Repeat([]byte("clink"), 1000)
	if _, err := f.WriteAt(data, 100); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 100+len(data) || !bytes.Equal(got[100:], data) || !bytes.Equal(got[:100], make([]byte, 100)) {
		t.Fatalf("read back %d bytes, want %d as written", len(got), 100+len(data))
	}
	preallocate(f, 0)
	preallocate(f, -1)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	preallocate(w, size)
}
