//go:build amd64 || arm64

package unaligned

import (
	"math/bits"
	"unsafe"
)

// BE64 returns the big-endian uint64 at b[s:s+8], which the caller has made
// sure lies in b (it is not checked). These machines load unaligned words.
func BE64(b []byte, s int) uint64 { return bits.ReverseBytes64(LE64(b, s)) }

// LE64 returns the little-endian uint64 at b[s:s+8], which the caller has
// made sure lies in b (it is not checked).
func LE64(b []byte, s int) uint64 {
	return *(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), s))
}
