package savepoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A mapped input rewritten in place (same size, other offsets) after it was
// opened makes a pass that cannot report errors (EachKey, through
// LoadOrMap) fail with ErrInputChanged under Guard, naming the file, not
// panic on the map's offsets out of range.
func TestLoadOrMapRewrittenInput(t *testing.T) {
	if !littleEndian {
		t.Skip("offsets are read with pread on little-endian machines only")
	}
	sp, path := openCountedRows(t, 1000)
	defer sp.Close()
	f := sp.Files[0]
	b := &f.Snapshot.Batches[0]
	off, ok := f.mapped.offsetOf(bytesOf(b.KeyOffs))
	if !ok {
		t.Fatal("key offsets not in the map")
	}
	// Offsets far past the keys, written in place over the old ones.
	w, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	bad := make([]int32, len(b.KeyOffs))
	for i := range bad {
		bad[i] = int32(1<<30 + i)
	}
	if _, err := w.WriteAt(bytesOf(bad), off); err != nil {
		t.Fatal(err)
	}
	w.Close()

	var n int
	err = func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic: %v", p)
			}
		}()
		return Guard(func() error {
			f.Snapshot.EachKey(func(int, uint64, []byte) bool { n++; return true })
			return nil
		})
	}()
	if !errors.Is(err, ErrInputChanged) || !strings.Contains(err.Error(), path) {
		t.Fatalf("EachKey over a rewritten input (%d keys): %v, want ErrInputChanged naming %s", n, err, path)
	}

	// So does a pass through the map's offsets (the external sort's first
	// pass reads rows so), keys and values alike, and the sort itself.
	cur := f.Snapshot.NewCursor()
	for name, read := range map[string]func(){
		"Cursor.Key": func() { cur.Key(b.Len() / 2) },
		"Batch.Row":  func() { b.Row(3) },
		"SortSpilled": func() {
			if _, err := SortSpilled(cur, SpillOptions{Dir: t.TempDir(), Budget: 1 << 16}); err != nil {
				panic(err)
			}
		},
	} {
		err := func() (err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panic: %v", p)
				}
			}()
			return Guard(func() error { read(); return nil })
		}()
		if !errors.Is(err, ErrInputChanged) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s over a rewritten input: %v, want ErrInputChanged naming %s", name, err, path)
		}
	}

	// The panic Guard turns into the error says which file changed.
	var kc KeyColumns
	p := func() (p any) {
		defer func() { p = recover() }()
		kc.LoadOrMap(b, 0, b.Len())
		return nil
	}()
	if e, ok := p.(error); !ok || !errors.Is(e, ErrInputChanged) || !strings.Contains(e.Error(), path) {
		t.Errorf("LoadOrMap of a rewritten input: panic %v, want an error wrapping ErrInputChanged naming %s", p, path)
	}
}

// openCountedRows writes a snapshot of n rows of operator 1, keys k0000000,
// k0000001, ..., and opens it memory-mapped; it returns the savepoint and
// the file's path.
func openCountedRows(t *testing.T, n int) (*Savepoint, string) {
	t.Helper()
	rows := make([]Row, n)
	for i := range rows {
		rows[i] = Row{Op: 1, Key: []byte(fmt.Sprintf("k%07d", i)), Value: []byte("v")}
	}
	path := filepath.Join(t.TempDir(), "in.snap")
	if _, err := WriteSnapshotFile(path, nil, rows, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	sp, err := Open(path, OpenOptions{Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	return sp, path
}
