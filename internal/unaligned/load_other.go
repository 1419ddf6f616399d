//go:build !amd64 && !arm64

package unaligned

import "encoding/binary"

// BE64 returns the big-endian uint64 at b[s:s+8].
func BE64(b []byte, s int) uint64 { return binary.BigEndian.Uint64(b[s:]) }

// LE64 returns the little-endian uint64 at b[s:s+8].
func LE64(b []byte, s int) uint64 { return binary.LittleEndian.Uint64(b[s:]) }
