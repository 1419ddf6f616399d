package savepoint

import (
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// Combining the CRCs of the parts of random data, cut anywhere (empty parts
// included), gives the CRC of the whole.
func TestCRC32CCombine(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	data := make([]byte, 1<<16)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	for trial := 0; trial < 500; trial++ {
		n := r.IntN(len(data) + 1)
		whole := data[:n]
		crc, at := CRC32C(nil), 0
		for at < n {
			part := whole[at : at+r.IntN(n-at+1)]
			crc = crc32cCombine(crc, CRC32C(part), int64(len(part)))
			at += len(part)
		}
		if want := CRC32C(whole); crc != want {
			t.Fatalf("trial %d: %d bytes combined to %08x, want %08x", trial, n, crc, want)
		}
	}
	// Long lengths (every bit of the length is used).
	a, b := CRC32C(data[:3]), CRC32C(data[3:])
	if got, want := crc32cCombine(a, b, int64(len(data)-3)), CRC32C(data); got != want {
		t.Fatalf("combined %08x, want %08x", got, want)
	}
}

// Combining works for parts of 512 MiB and more, whose length in bits
// passes 2^32 (a table of x^(2^k) wrapped at 32 entries, as zlib's is for
// its own polynomial, gets these wrong for Castagnoli's): a part of zeros
// 2^29+3 bytes long, checksummed by streaming, combined after a random
// prefix, gives the CRC of streaming both.
func TestCRC32CCombineLong(t *testing.T) {
	if testing.Short() {
		t.Skip("streams a gigabyte through the CRC")
	}
	r := rand.New(rand.NewPCG(4, 4))
	a := make([]byte, 100)
	for i := range a {
		a[i] = byte(r.Uint32())
	}
	zeros := make([]byte, 1<<20)
	const n = 1<<29 + 3
	stream := func(crc uint32) uint32 {
		for left := n; left > 0; left -= min(left, len(zeros)) {
			crc = crc32.Update(crc, castagnoli, zeros[:min(left, len(zeros))])
		}
		return crc
	}
	whole := stream(CRC32C(a))
	if got := crc32cCombine(CRC32C(a), stream(0), n); got != whole {
		t.Fatalf("combined %08x, want %08x", got, whole)
	}
}

// checksumFile reads a large file in parts on several goroutines and
// combines their CRCs into the file's; a file shorter than its size is an
// ErrInputChanged.
func TestChecksumFileInParts(t *testing.T) {
	defer func(v int) { checksumBlock = v }(checksumBlock)
	checksumBlock = 64
	r := rand.New(rand.NewPCG(3, 3))
	path := filepath.Join(t.TempDir(), "f")
	for _, size := range []int{0, 1, 63, 64*32 - 1, 64 * 32, 64*32*2 + 7, 100000} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		crc, err := checksumFile(f, int64(size))
		if err != nil || crc != CRC32C(data) {
			t.Errorf("%d bytes: CRC %08x, %v; want %08x", size, crc, err, CRC32C(data))
		}
		if _, err := checksumFile(f, int64(size)+1); !errors.Is(err, ErrInputChanged) {
			t.Errorf("%d bytes read as %d: %v, want ErrInputChanged", size, size+1, err)
		}
		f.Close()
	}
}
