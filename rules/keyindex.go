package rules

import (
	"encoding/binary"
	"math/bits"
	"sync/atomic"

	"github.com/sptool/sptool/internal/unaligned"
)

// keyIndex finds a purge list's keys by their hash: open addressing with
// linear probing, at most half the slots used. A slot holds 32 bits of
// the key's hash beside its index in the list, so that a probe compares
// keys only when those bits match: each key compared is a cache miss or
// two (its header, its bytes) in a list that a scan or a load of a large
// file has left cold, and a million keys loaded 30% faster so. A Go map
// of 100,000 string keys takes 3-4 MB, and on machines where the first
// touch of a page is slow (about 17 us under some hypervisors) building it
// cost more than the rest of loading the keys file; this takes 2 MB, and a
// key is hashed once for both the Bloom filter and the index.
type keyIndex struct {
	// slots: the key's hash tag (its low 32 bits) << 32 | 1 + its index
	// in keys; 0: empty.
	slots []uint64
	shift uint // 64 - log2(len(slots))
	n     int  // keys held
	// words, when not nil, holds keys i's 8 bytes at 8*i, every key
	// being 8 bytes long (an int64 keys file's, see compactEncoded): a
	// probe compares them there, without reading the key's string
	// header first, one cache miss where a cold list took two.
	words []byte
}

// newKeyIndex returns an index with room for n keys.
func newKeyIndex(n int) keyIndex {
	lg := max(4, bits.Len(uint(2*n)))
	return keyIndex{slots: make([]uint64, 1<<lg), shift: uint(64 - lg)}
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
		if uint32(v>>32) == uint32(h) && holds(x, keys, int(uint32(v)-1), key) {
			return int(uint32(v) - 1), s
		}
	}
}

// holds reports whether key i of keys, which x indexes, is key.
func holds[K string | []byte](x *keyIndex, keys []string, i int, key K) bool {
	if x.words != nil {
		return len(key) == 8 && unaligned.LE64(x.words, 8*i) == binary.LittleEndian.Uint64([]byte(key))
	}
	return keys[i] == string(key)
}

// insertAt records that keys[i] has hash h, at the empty slot s where
// find placed it. The index was made with room for every key (newKeyIndex):
// it never grows.
func (x *keyIndex) insertAt(i int, h, s uint64) {
	x.slots[s] = uint64(uint32(h))<<32 | uint64(i+1)
	x.n++
}

// prefetchBatch is how many keys PrefetchLookups takes a step further at
// once: enough for the loads of one step to overlap, few enough that what
// they bring in is still in the cache when the lookups come.
const prefetchBatch = 64

// prefetchSink keeps PrefetchLookups' loads from being left out as unused.
var prefetchSink atomic.Uint64

// PrefetchLookups reads, for each of n user keys (key(i)), the memory
// that Lookup of it will read, so that the lookups that follow find it in
// the CPU's cache. A lookup reads the key's word of the filter and an
// index slot, then the listed key the slot names, then that key's bytes:
// each one a cache miss when they are cold, the last two each waiting for
// the one before. A purge's scan streams the whole input through the
// cache, which leaves them cold: a lookup there took 400-600 ns, against
// 35 ns in a loop of its own. Here each step is taken for a batch of keys
// before the next, and the loads of different keys overlap. (Without the
// filter's word, the lookups after it took 4 ms of a 10M-row purge's CPU
// for 100,000 keys, against 2 ms.) It changes nothing.
func (p *PurgeKeysSpec) PrefetchLookups(n int, key func(i int) []byte) {
	x, f := &p.index, &p.filter
	if len(x.slots) == 0 || len(f.words) == 0 {
		return
	}
	var vs [prefetchBatch]uint32
	var sink uint64
	for lo := 0; lo < n; lo += prefetchBatch {
		m := min(prefetchBatch, n-lo)
		for i := range m {
			h := keyHash(key(lo + i))
			sink += f.words[wordOf(h, len(f.words))]
			v := x.slots[x.slot(h)]
			vs[i] = 0
			if uint32(v>>32) == uint32(h) {
				vs[i] = uint32(v)
			}
		}
		if x.words != nil {
			for i := range m {
				if v := vs[i]; v != 0 {
					sink += uint64(x.words[8*(v-1)])
				}
			}
			continue
		}
		for i := range m {
			if v := vs[i]; v != 0 {
				sink += uint64(len(p.Keys[v-1]))
			}
		}
		for i := range m {
			if v := vs[i]; v != 0 && len(p.Keys[v-1]) > 0 {
				sink += uint64(p.Keys[v-1][0])
			}
		}
	}
	prefetchSink.Add(sink)
}
