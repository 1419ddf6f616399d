package rules

import (
	"encoding/binary"
	"math/bits"
)

// keyFilter is a Bloom filter over the keys of a purge list, two bits a key
// in about 16 bits a key: most user keys of a savepoint are not listed, and
// it rules those out without an index lookup (about 1 in 70 gets through
// anyway and is looked up).
type keyFilter struct {
	bits []uint64
	mask uint64 // number of bits - 1 (a power of two)
}

func newKeyFilter(n int) keyFilter {
	m := uint64(1) << max(10, bits.Len64(uint64(n)*16))
	return keyFilter{bits: make([]uint64, m/64), mask: m - 1}
}

// positions returns the two bits of a key hash.
func (f *keyFilter) positions(h uint64) (uint64, uint64) {
	return h & f.mask, (h * 0x9e3779b97f4a7c15 >> 23) & f.mask
}

// addHash adds the key of hash h (keyHash).
func (f *keyFilter) addHash(h uint64) {
	a, b := f.positions(h)
	f.bits[a/64] |= 1 << (a % 64)
	f.bits[b/64] |= 1 << (b % 64)
}

// mayHave reports false when key is surely not in the list. A filter that
// was never built lets every key through.
func (f *keyFilter) mayHave(key []byte) bool {
	if f.bits == nil {
		return true
	}
	return f.mayHaveHash(keyHash(key))
}

// mayHaveHash is mayHave of the key of hash h (keyHash) in a built filter.
func (f *keyFilter) mayHaveHash(h uint64) bool {
	a, b := f.positions(h)
	return f.bits[a/64]&(1<<(a%64)) != 0 && f.bits[b/64]&(1<<(b%64)) != 0
}

// keyHash is a 64-bit hash of a key, inlined for the short keys of
// savepoints (8 bytes at a time, then murmur3's finaliser).
func keyHash[K string | []byte](k K) uint64 {
	h := uint64(len(k)) * 0x9e3779b97f4a7c15
	for len(k) >= 8 {
		h = (h ^ binary.LittleEndian.Uint64([]byte(k[:8]))) * 0xff51afd7ed558ccd
		h ^= h >> 32
		k = k[8:]
	}
	var tail uint64
	for i := len(k) - 1; i >= 0; i-- {
		tail = tail<<8 | uint64(k[i])
	}
	h ^= tail
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}
