//go:build unix

package savepoint

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"
)

// mapTemp maps a new file of size bytes (all zero), closed at the end of the
// test, and returns its path and the mapping (the caller unmaps it).
func mapTemp(t *testing.T, size int) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fh.Close() })
	m, err := mapFile(fh, int64(size))
	if err != nil {
		t.Fatal(err)
	}
	return path, m
}

// A fault in a goroutine run by Faults reaches the Guard around Wait.
func TestFaultsReachGuard(t *testing.T) {
	path, m := mapTemp(t, 1<<20)
	defer unmapFile(m)
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	var sink byte
	err := Guard(func() error {
		var f Faults
		f.Go(func() { sink = m[1<<19] }) // past the end of the file now
		f.Go(func() {})
		f.Wait()
		return nil
	})
	if !errors.Is(err, ErrInputChanged) {
		t.Fatalf("fault in a goroutine: %v (read %d), want ErrInputChanged", err, sink)
	}
	want := path + ": " + ErrInputChanged.Error() + " (it now ends at byte 4096, at byte 1048576 when it was opened; byte 524288 was being read)"
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("fault in a goroutine: %q, want it to say %q", err, want)
	}
}

// A fault where the mapped file still has bytes is an I/O error, not a
// change: it is reported as ErrInputUnreadable, naming the file and the
// byte. (The kernel raises it when it cannot read the page in; here the
// fault's address is handed to faultError directly.) An address outside
// every mapping, as after the unmap, is reported as before.
func TestFaultErrorUnreadable(t *testing.T) {
	path, m := mapTemp(t, 3<<12)
	addr := uintptr(unsafe.Pointer(&m[0])) + 5000
	err := faultError(addr)
	if !errors.Is(err, ErrInputUnreadable) || errors.Is(err, ErrInputChanged) {
		t.Fatalf("fault inside an intact file: %v, want ErrInputUnreadable only", err)
	}
	if want := path + ": read at byte 5000: "; !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("fault inside an intact file: %q, want it to start %q", err, want)
	}
	// Cut short and grown again past the byte read: a change all the same.
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 4<<12); err != nil {
		t.Fatal(err)
	}
	if err := faultError(addr); !errors.Is(err, ErrInputChanged) || !strings.Contains(err.Error(), "now ends at byte 16384, at byte 12288 when it was opened") {
		t.Fatalf("fault inside a file of another size: %v, want ErrInputChanged naming both sizes", err)
	}
	if err := unmapFile(m); err != nil {
		t.Fatal(err)
	}
	// A fault in a file unmapped before it (by a Close that ran while no
	// panic unwound) is a read after Close, naming the file. (A fault
	// whose panic unwound past a deferred Close: TestFaultAfterUnmapNamesFile.)
	if err := faultError(addr); !errors.Is(err, ErrClosed) || errors.Is(err, ErrInputChanged) || err.Error() != path+": "+ErrClosed.Error()+" (read at byte 5000 after Close unmapped it)" {
		t.Fatalf("fault in a mapping since unmapped: %v, want ErrClosed naming the file", err)
	}
	err = faultError(1)
	if !errors.Is(err, ErrInputChanged) || !strings.Contains(err.Error(), "fault at 0x1") {
		t.Fatalf("fault outside every mapping: %v, want ErrInputChanged with the address", err)
	}
}

// A fault whose panic unwinds through the deferred unmap of its file, as
// a command's deferred Close of its savepoint does, is told with the file
// by the Guard around it.
func TestFaultAfterUnmapNamesFile(t *testing.T) {
	path, m := mapTemp(t, 1<<20)
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	var sink byte
	err := Guard(func() error {
		defer unmapFile(m)
		sink = m[1<<19]
		return nil
	})
	want := path + ": " + ErrInputChanged.Error() + " (it now ends at byte 4096, at byte 1048576 when it was opened; byte 524288 was being read)"
	if !errors.Is(err, ErrInputChanged) || !strings.Contains(err.Error(), want) {
		t.Fatalf("fault: %v (read %d), want it to say %q", err, sink, want)
	}
}

// A mapped input cut short faults in the goroutines of Order's own pass
// (when the pass at open left the order unknown); the fault reaches the
// caller's Guard as ErrInputChanged.
func TestOrderFaultReachesGuard(t *testing.T) {
	sp, path := openCountedRows(t, 300_000)
	defer sp.Close()
	sp.ReleasePages()
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	err := Guard(func() error { sp.Files[0].Snapshot.computeOrder(); return nil })
	if !errors.Is(err, ErrInputChanged) {
		t.Fatalf("Order on a truncated mapped input: %v, want ErrInputChanged", err)
	}
}

// Rows of a columnar Savepoint read after its Close fault on memory no
// longer mapped: under Guard that is ErrClosed, naming the file, not an
// error of the input. A Close deferred in the Guarded function, which runs
// while the fault's panic unwinds, leaves the fault the file's.
func TestReadAfterCloseUnderGuard(t *testing.T) {
	sp, path := openCountedRows(t, 300_000)
	s := sp.Files[0].Snapshot
	if !s.Columnar() {
		t.Fatal("not columnar")
	}
	c := s.NewCursor()
	last := s.NumRows() - 1
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}
	var sink int
	for name, read := range map[string]func(){
		"Cursor.Row": func() { sink += len(c.Row(last).Key) },
		"Batch.Row":  func() { b := &s.Batches[len(s.Batches)-1]; sink += len(b.Row(b.Len() - 1).Value) },
	} {
		err := Guard(func() error { read(); return nil })
		if !errors.Is(err, ErrClosed) || InputFault(err) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s after Close: %v, want ErrClosed naming %s", name, err, path)
		}
	}

	sp, path = openCountedRows(t, 300_000)
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	err := Guard(func() error {
		defer sp.Close()
		s := sp.Files[0].Snapshot
		sink += len(s.NewCursor().Row(s.NumRows() - 1).Key)
		return nil
	})
	if !errors.Is(err, ErrInputChanged) || errors.Is(err, ErrClosed) {
		t.Errorf("fault, then a deferred Close: %v (read %d), want ErrInputChanged", err, sink)
	}
}

// A read after Close of a file made without a name (the sort's or a
// replay's temporary copy of rows, which its directory names) says it was
// a temporary file in that directory, not that the directory was read.
func TestReadAfterCloseOfUnnamedFile(t *testing.T) {
	dir := t.TempDir()
	f, err := openUnnamed(dir)
	if err != nil {
		t.Skipf("no unnamed temporary files here: %v", err)
	}
	defer f.Close()
	b := make([]byte, 4096) // (faultError looks the address up; nothing is mapped)
	addMapping(b, f)
	removeMapping(b)
	err = faultError(uintptr(unsafe.Pointer(&b[100])))
	if want := "a temporary file in " + dir + ": "; !errors.Is(err, ErrClosed) || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("%v, want ErrClosed, starting %q", err, want)
	}
}

// The last goneMappings mappings unmapped are told by their file, the
// latest first; older ones only by their address.
func TestGoneMappingsRing(t *testing.T) {
	path, m := mapTemp(t, 4096)
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	maps := [][]byte{m}
	for range goneMappings + 10 {
		b, err := mapFile(fh, 4096)
		if err != nil {
			t.Fatal(err)
		}
		maps = append(maps, b)
	}
	for _, b := range maps {
		if err := unmapFile(b); err != nil {
			t.Fatal(err)
		}
	}
	for i, b := range maps {
		addr := uintptr(unsafe.Pointer(&b[0])) + 7
		_, known := mappingAt(addr)
		if want := i >= len(maps)-goneMappings; known != want {
			t.Errorf("mapping %d of %d: told by its file %v, want %v", i, len(maps), known, want)
		}
	}
	if err := faultError(uintptr(unsafe.Pointer(&maps[len(maps)-1][0])) + 7); !errors.Is(err, ErrClosed) {
		t.Errorf("the last mapping unmapped: %v, want ErrClosed", err)
	}
}
