package savepoint

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// readFileAt reads what ReadAt reads: the bytes asked for, or those up to
// the end of the file with io.EOF.
func TestReadFileAt(t *testing.T) {
	data := make([]byte, 300<<10)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	testReadFileAt(t, openWith(t, data), data)
}

// openWith writes data to a new file and opens it for reading until the
// test ends.
func openWith(t *testing.T, data []byte) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func testReadFileAt(t *testing.T, f *os.File, data []byte) {
	t.Helper()
	size := int64(len(data))
	for _, c := range []struct{ off, n int64 }{
		{0, 0}, {0, 1}, {0, 64 << 10}, {12345, 200 << 10}, {size - 10, 10},
		{size - 10, 20}, {size, 5}, {size + 100, 5}, {0, size}, {0, size + 1},
	} {
		b := make([]byte, c.n)
		n, err := readFileAt(f, b, c.off)
		want := data[min(c.off, size):min(c.off+c.n, size)]
		if n != len(want) || !bytes.Equal(b[:n], want) {
			t.Errorf("%d bytes at %d: read %d, want %d (bytes equal: %v)", c.n, c.off, n, len(want), bytes.Equal(b[:n], want))
		}
		if wantEOF := int64(len(want)) < c.n; wantEOF != errors.Is(err, io.EOF) || !wantEOF && err != nil {
			t.Errorf("%d bytes at %d: error %v, want EOF: %v", c.n, c.off, err, wantEOF)
		}
	}
}

// writeFileAt writes at the offsets asked for, past the end too (leaving a
// hole of zeros); writing to a file opened read-only is an error.
func TestWriteFileAt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := make([]byte, 0, 3<<20)
	for i, c := range []struct {
		off int64
		n   int
	}{{0, 1000}, {1000, 1 << 20}, {3<<20 - 5, 5}, {1<<20 + 1000, 1 << 20}} {
		b := bytes.Repeat([]byte{byte('a' + i)}, c.n)
		if n, err := writeFileAt(f, b, c.off); n != c.n || err != nil {
			t.Fatalf("%d bytes at %d: wrote %d, %v", c.n, c.off, n, err)
		}
		if end := int(c.off) + c.n; end > len(want) {
			want = want[:end]
		}
		copy(want[c.off:], b)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("file of %d bytes (%v), want %d; equal: %v", len(got), err, len(want), bytes.Equal(got, want))
	}
	ro, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if n, err := writeFileAt(ro, []byte("x"), 0); n != 0 || err == nil {
		t.Fatalf("write to a read-only file: %d, %v; want an error", n, err)
	}
}
