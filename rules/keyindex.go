package rules

import "math/bits"

// keyIndex finds a purge list's keys by their hash: open addressing with
// linear probing, one int32 a slot, at most half the slots used. A Go map
// of 100,000 string keys takes 3-4 MB, and on machines where the first
// touch of a page is slow (about 17 us under some hypervisors) building it
// cost more than the rest of loading the keys file; this takes 1 MB, and a
// key is hashed once for both the Bloom filter and the index.
type keyIndex struct {
	slots []int32 // 1 + the index in keys of the key hashed here; 0: empty
	shift uint    // 64 - log2(len(slots))
	n     int     // keys held
}

// newKeyIndex returns an index with room for n keys.
func newKeyIndex(n int) keyIndex {
	lg := max(4, bits.Len(uint(2*n)))
	return keyIndex{slots: make([]int32, 1<<lg), shift: uint(64 - lg)}
}

// slot returns the first slot probed for hash h (Fibonacci hashing: the
// top bits of a multiple, independent of the filter's bits).
func (x *keyIndex) slot(h uint64) uint64 { return (h * 0x9e3779b97f4a7c15) >> x.shift }

// find returns the index in keys of key (hash h), or -1; and, when it is
// absent, the empty slot where it would go.
func find[K string | []byte](x *keyIndex, keys []string, key K, h uint64) (int, uint64) {
	if len(x.slots) == 0 {
		return -1, 0
	}
	mask := uint64(len(x.slots) - 1)
	for s := x.slot(h); ; s = (s + 1) & mask {
		v := x.slots[s]
		if v == 0 {
			return -1, s
		}
		if keys[v-1] == string(key) {
			return int(v - 1), s
		}
	}
}

// insert records that keys[i] has hash h; keys must not hold it already.
func (x *keyIndex) insert(keys []string, i int, h uint64) {
	if 2*(x.n+1) > len(x.slots) {
		old := x.slots
		*x = newKeyIndex(2 * max(x.n, 8))
		for _, v := range old {
			if v != 0 {
				x.insert(keys, int(v-1), keyHash(keys[v-1]))
			}
		}
	}
	_, s := find(x, keys, keys[i], h)
	x.slots[s] = int32(i + 1)
	x.n++
}
