package savepoint

import (
	"math/rand/v2"
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
