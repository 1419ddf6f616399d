package rules

import (
	"encoding/binary"
	"math"
	"math/bits"
	"runtime"
	"unsafe"

	"github.com/sptool/sptool/internal/unaligned"
	"github.com/sptool/sptool/savepoint"
)

// keyFilter is a Bloom filter over the keys of a purge list, blocked: a
// key sets four bits of one 64-bit word, in about 16 bits a key. Most user
// keys of a savepoint are not listed, and it rules those out without an
// index lookup, with one memory access; about 1 in 400 gets through anyway
// and is looked up (two bits in two words, as before, let 1 in 120 through
// with two accesses).
type keyFilter struct {
	words []uint64 // a power of two of them, at most 2^32
	// exact holds the keys of a list of one or two keys, both 8 bytes
	// long, as big-endian words (the second a copy of the first for one),
	// when nexact is 1 or 2: an 8-byte key is compared with them instead
	// of asking the filter (the erasure of one key, an erasure's usual
	// list: 0.6 ns a key against the filter's 2-4; from three keys on,
	// comparing costs as much as the filter). nexact is -1 once a key of
	// another length, or a third key, was added.
	exact  [2]uint64
	nexact int
}

func newKeyFilter(n int) keyFilter {
	lg := max(4, bits.Len64(uint64(n)*16)-6)
	return keyFilter{words: make([]uint64, 1<<lg)}
}

// at returns the word of a key hash and the key's bits in it (filterBits).
func (f *keyFilter) at(h uint64) (uint64, uint64) {
	return wordOf(h, len(f.words)), filterBits(h)
}

// wordOf returns the word of n of a key hash: its top log2(n) bits, taken
// without a shift by a variable count (on amd64 such a shift ties up one
// register, which scan8's loop cannot spare).
func wordOf(h uint64, n int) uint64 { return (h >> 32) * uint64(n) >> 32 }

// filterBits returns the four bits of its word that a key of hash h sets:
// the pattern of filterMasks its low 12 bits pick.
func filterBits(h uint64) uint64 {
	return filterMasks[h&uint64(len(filterMasks)-1)]
}

// filterMasks are the patterns of four bits a key may set in its word,
// drawn once (splitmix64 from a fixed seed, so that a list's filter is the
// same from run to run). One load from this table (32 KiB, which a purge's
// scan keeps in the CPU's cache) takes the place of four shifts by a
// variable count, which on amd64 all wait for one register: the scan asks
// the filter about a key in 3.9 ns instead of 5.0 ns
// (BenchmarkMayMatchColumn, one run). 4096 patterns let through as many
// keys as four bits picked from the hash: 1 in 386 against 1 in 431 in a
// test of 5M keys against a list of 100,000 (1024 patterns: 1 in 192).
var filterMasks = func() (t [4096]uint64) {
	x := uint64(0x5eed)
	for i := range t {
		for bits.OnesCount64(t[i]) < 4 {
			x += 0x9e3779b97f4a7c15
			z := (x ^ x>>30) * 0xbf58476d1ce4e5b9
			z = (z ^ z>>27) * 0x94d049bb133111eb
			t[i] |= 1 << ((z ^ z>>31) & 63)
		}
	}
	return t
}()

// addHash adds the key of hash h (keyHash).
func (f *keyFilter) addHash(h uint64) {
	w, m := f.at(h)
	f.words[w] |= m
}

// addExact notes a key added to the filter for the exact set: its 8 bytes
// as a big-endian word, when eight (is8), else that the list holds a key
// of another length.
func (f *keyFilter) addExact(word uint64, is8 bool) {
	switch {
	case f.nexact < 0:
	case !is8 || f.nexact == len(f.exact):
		f.nexact = -1
	case f.nexact == 0:
		f.exact = [2]uint64{word, word}
		f.nexact = 1
	default:
		f.exact[f.nexact] = word
		f.nexact++
	}
}

// add adds a key to the filter and to the exact set.
func (f *keyFilter) add(key string) {
	f.addHash(keyHash(key))
	if len(key) == 8 {
		f.addExact(binary.BigEndian.Uint64([]byte(key)), true)
	} else {
		f.addExact(0, false)
	}
}

// exactHas reports whether the 8-byte key of big-endian word w is in the
// exact set (nexact > 0).
func (f *keyFilter) exactHas(w uint64) bool { return w == f.exact[0] || w == f.exact[1] }

// mayHave reports false when key is surely not in the list. A filter that
// was never built lets every key through.
func (f *keyFilter) mayHave(key []byte) bool {
	if f.words == nil {
		return true
	}
	if f.nexact > 0 {
		return len(key) == 8 && f.exactHas(binary.BigEndian.Uint64(key))
	}
	return f.mayHaveHash(keyHash(key))
}

// scan8 asks the filter about the keys of a column (key t is
// keys[offs[t]-base+skip : offs[t+1]-base]) while they are 8 bytes long,
// and puts in hits those it may hold until hits is full. It returns how
// many keys it asked about (it stops at a key of another length) and how
// many hits it found. A loop without a call keeps its state in registers:
// the scan of a 10M-row purge took 52 instructions a key when
// MayMatchColumn's loop, which calls back for each hit, held it.
func (f *keyFilter) scan8(keys []byte, offs []int32, base, skip int32, hits *[64]int32) (t, x int) {
	if len(offs) < 2 || skip < 0 || int(skip) > len(keys) {
		return 0, 0
	}
	// Key t's 8 bytes are uk[s:s+8] when it ends at s+8+skip, s its start
	// less base: they lie in uk when s is at most last.
	uk, kl, last := keys[skip:], 8+skip, int32(len(keys)-int(skip)-8)
	ws := f.words
	for s := offs[0] - base; t+1 < len(offs); {
		end := offs[t+1] - base
		if end-s != kl || s < 0 || s > last {
			break
		}
		h := keyHash8(unaligned.LE64(uk, int(s)))
		t, s = t+1, end
		if m := filterBits(h); ws[wordOf(h, len(ws))]&m == m {
			hits[x&(len(hits)-1)] = int32(t - 1)
			if x++; x == len(hits) {
				break
			}
		}
	}
	return t, x
}

// (scan8 and scanWords ask mayHaveHash's question with the filter's words
// in a local: through f, BenchmarkMayMatchWords took 2.0-2.5 ns a key
// against 1.9-2.2.)

// scanWords is scan8 for 8-byte keys given as words (big-endian, see
// savepoint.WordProbe): it puts in hits those of words the filter may hold
// until hits is full, and returns how many keys it asked about and how
// many hits it found. Its state is kept to a few variables, which the
// compiler keeps in registers.
func (f *keyFilter) scanWords(words []uint64, hits *[64]int32) (t, x int) {
	ws := f.words
	for t < len(words) {
		h := keyHash8(bits.ReverseBytes64(words[t]))
		t++
		if m := filterBits(h); ws[wordOf(h, len(ws))]&m == m {
			hits[x&(len(hits)-1)] = int32(t - 1)
			if x++; x == len(hits) {
				break
			}
		}
	}
	return t, x
}

// mayHaveHash is mayHave of the key of hash h (keyHash) in a built filter.
func (f *keyFilter) mayHaveHash(h uint64) bool {
	w, m := f.at(h)
	return f.words[w]&m == m
}

// keyHash is a 64-bit hash of a key, inlined for the short keys of
// savepoints (8 bytes at a time, then murmur3's finaliser). An 8-byte key
// (an int64 key, the common case of a purge's scan, which hashes every
// key of the savepoint) takes keyHash8 instead.
func keyHash[K string | []byte](k K) uint64 {
	if len(k) == 8 {
		return keyHash8(binary.LittleEndian.Uint64([]byte(k)))
	}
	h := uint64(len(k)) * 0x9e3779b97f4a7c15
	for len(k) >= 8 {
		h = keyMix(h, binary.LittleEndian.Uint64([]byte(k[:8])))
		k = k[8:]
	}
	var tail uint64
	for i := len(k) - 1; i >= 0; i-- {
		tail = tail<<8 | uint64(k[i])
	}
	return keyFinish(h ^ tail)
}

// keyHash8 is keyHash of an 8-byte key, given as its little-endian value:
// one 64x64->128-bit multiply, the two halves of the product folded (as
// wyhash and mum-hash mix), where the loop and murmur3's finaliser take
// three multiplies in a chain. Every bit of the key moves the high half,
// and the filter and the index take their bits from all over the hash.
// With MayMatchColumn's loop hashing 8-byte keys inline, a purge's scan
// asks the filter about a key in 4.3 ns, against 9 ns through keyHash and
// the finaliser (BenchmarkMayMatchColumn).
func keyHash8(k uint64) uint64 {
	hi, lo := bits.Mul64(k^0x9e3779b97f4a7c15, 0xff51afd7ed558ccd)
	return hi ^ lo
}

// keyMix takes 8 more bytes of a key, w, into its hash h.
func keyMix(h, w uint64) uint64 {
	h = (h ^ w) * 0xff51afd7ed558ccd
	return h ^ h>>32
}

// keyFinish is murmur3's finaliser: every bit of h moves every bit of the
// hash.
func keyFinish(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// selfCheck asks the list's filter, the way the scan of a purge asks it
// (MayMatchColumn, over a column of the listed keys), its exact set if it
// has one, and its index (Lookup) about every listed key: each must find
// every one, or the purge
// would leave the key's rows (and the erasure audit, which asks the same
// lookup, would not see them). It returns the first key one of them
// misses. The lookups, a cache miss or two each, are most of its cost and
// run on every core: about 20 ms of CPU for 100,000 keys, 1.5 s for 10M
// (lint of a 10M-key list: 4.4 s against 3.4 s without the check).
func (p *PurgeKeysSpec) selfCheck() (int, bool) {
	if p.filter.nexact > 0 {
		// The exact set, which the probes of 8-byte keys ask instead.
		for i, k := range p.Keys {
			if len(k) != 8 || !p.filter.exactHas(binary.BigEndian.Uint64([]byte(k))) {
				return i, false
			}
		}
	}
	const block = 1 << 16 // keys a column (its offsets must fit an int32)
	var buf []byte        // the column, when the keys are not one already
	offs := make([]int32, 0, min(block, len(p.Keys))+1)
	for lo := 0; lo < len(p.Keys); {
		hi, size, joined := p.column(lo, block)
		if hi == lo {
			// A key too long for a column of its own: asked alone.
			if !p.filter.mayHave([]byte(p.Keys[lo])) {
				return lo, false
			}
			lo++
			continue
		}
		offs = append(offs[:0], 0)
		col, ok := p.inEncoded(lo, size, joined)
		if ok {
			// The keys lie end to end in the buffer of their encodings:
			// they are the column, read where they are.
			for _, k := range p.Keys[lo:hi] {
				offs = append(offs, offs[len(offs)-1]+int32(len(k)))
			}
		} else {
			if cap(buf) < size {
				buf = make([]byte, 0, size)
			}
			col = buf[:0]
			for _, k := range p.Keys[lo:hi] {
				col = append(col, k...)
				offs = append(offs, int32(len(col)))
			}
		}
		next, missed := 0, -1
		p.MayMatchColumn(col, offs, 0, 0, func(t int) {
			if missed < 0 && t != next {
				missed = next
			}
			next = t + 1
		})
		if missed < 0 && next != hi-lo {
			missed = next
		}
		if missed >= 0 {
			return lo + missed, false
		}
		lo = hi
	}
	parts := min(runtime.GOMAXPROCS(0), max(1, len(p.Keys)>>14))
	first := make([]int, parts) // each part's first miss, or -1
	savepoint.ForEach(parts, func(x int) {
		first[x] = -1
		for i := x * len(p.Keys) / parts; i < (x+1)*len(p.Keys)/parts; i++ {
			if j, ok := p.Lookup([]byte(p.Keys[i])); !ok || j != i {
				first[x] = i
				return
			}
		}
	})
	for _, i := range first {
		if i >= 0 {
			return i, false
		}
	}
	return 0, true
}

// column returns the keys [lo, hi) that selfCheck asks as one column: at
// most block of them, of size bytes in all (at most math.MaxInt32; hi is
// lo when key lo alone is longer), and whether they lie end to end in
// memory, each starting where the one before ends.
func (p *PurgeKeysSpec) column(lo, block int) (hi, size int, joined bool) {
	joined = true
	var next uintptr // where key hi starts if it follows the one before
	for hi = lo; hi < min(lo+block, len(p.Keys)); hi++ {
		k := p.Keys[hi]
		if size+len(k) > math.MaxInt32 {
			break
		}
		d := uintptr(unsafe.Pointer(unsafe.StringData(k)))
		if hi > lo && d != next {
			joined = false
		}
		next = d + uintptr(len(k))
		size += len(k)
	}
	return hi, size, joined
}

// inEncoded returns the size bytes from key lo on as a slice of the
// buffer of the keys' encodings, if the keys from lo on lie end to end
// (joined, see column) within it.
func (p *PurgeKeysSpec) inEncoded(lo, size int, joined bool) ([]byte, bool) {
	if !joined || size == 0 || len(p.encoded) == 0 {
		return nil, false
	}
	off := uintptr(unsafe.Pointer(unsafe.StringData(p.Keys[lo]))) - uintptr(unsafe.Pointer(&p.encoded[0]))
	if off > uintptr(len(p.encoded)) || uintptr(size) > uintptr(len(p.encoded))-off {
		return nil, false
	}
	return p.encoded[off : int(off)+size], true
}
