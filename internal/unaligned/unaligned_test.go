package unaligned

import (
	"encoding/binary"
	"testing"
)

// The loads agree with encoding/binary at every offset, aligned or not.
func TestLoads(t *testing.T) {
	b := make([]byte, 40)
	for i := range b {
		b[i] = byte(i*37 + 11)
	}
	for s := 0; s+8 <= len(b); s++ {
		if got, want := BE64(b, s), binary.BigEndian.Uint64(b[s:]); got != want {
			t.Errorf("BE64 at %d = %#x, want %#x", s, got, want)
		}
		if got, want := LE64(b, s), binary.LittleEndian.Uint64(b[s:]); got != want {
			t.Errorf("LE64 at %d = %#x, want %#x", s, got, want)
		}
	}
}
