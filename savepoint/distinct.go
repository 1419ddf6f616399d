package savepoint

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sptool/sptool/internal/prefault"
)

// Showing that a file stores no (op, key) twice without sorting it.
//
// A file in clink's own order is a dump of a hash map, so it has no two rows
// with the same operator and key; but showing that by sorting its rows (an
// index of them, through the key column again and again, or through
// temporary files) costs more than everything else inspect, validate and
// plan do with it. A 64-bit hash of each
// row's operator and key shows it in one pass over the keys: rows whose
// hashes differ differ. The hashes are sorted, and those that occur twice
// are looked at again with their rows' keys; a true duplicate sends the
// caller back to the sort, which says which row restore keeps.

// distinctMaxCollisions is the most hashes seen twice that DistinctKeys
// and RepeatedKeys check against the keys; past it, they leave the question
// to the sort (a variable so tests can lower it). Below it the memory bound
// decides: each hash seen twice holds about repeatHeld bytes and its key's.
var distinctMaxCollisions = 1 << 24

// repeatHeld is what a hash seen twice holds while its rows' keys are
// compared, besides the key's bytes: its map entry, the key's record, and
// the group of rows it makes.
const repeatHeld = 192

// distinctKeys reports whether no two rows of s have the same operator and
// key, as far as it can tell with maxBytes of memory (see DistinctKeys).
func distinctKeys(s *Snapshot, maxBytes int64) bool {
	return DistinctKeys(s.NumRows(), s.EachKeyIn, maxBytes)
}

// DistinctKeys reports whether no two of n rows have the same operator and
// key, as far as it can tell with maxBytes of memory (8 bytes a row; the
// hashes' buckets take up to a sixteenth more, or 32 KiB a core): false
// means that two do, or that it did not look. eachIn calls fn with the
// operator and key of each row of [lo, hi) in turn (the key valid during the
// call only) until fn returns false; calls over disjoint ranges may run at
// once. It is for rows in no order (in order, duplicates are neighbours).
func DistinctKeys(n int, eachIn func(lo, hi int, fn func(i int, op uint64, key []byte) bool), maxBytes int64) bool {
	groups, ok := repeatedKeys(n, eachIn, maxBytes, true)
	return ok && len(groups) == 0
}

// RepeatedKeys returns the rows of n that share their operator and key with
// another: a group for each operator and key held more than once, its rows
// in increasing order, the groups in the order of their second rows. ok is
// false when it cannot tell with maxBytes of memory: 8 bytes a row for the
// hashes (and up to a sixteenth more, or 32 KiB a core), then, for each
// hash seen twice, its key and about 200 bytes while the keys are compared (a file of 1.2M rows storing 166,000 keys twice
// holds about 35 MB of them). eachIn is as for DistinctKeys.
func RepeatedKeys(n int, eachIn func(lo, hi int, fn func(i int, op uint64, key []byte) bool), maxBytes int64) (groups [][]int, ok bool) {
	return repeatedKeys(n, eachIn, maxBytes, false)
}

// repeatedKeys is RepeatedKeys; with first set it stops at the first
// operator and key found twice, which is then its only group.
func repeatedKeys(n int, eachIn func(lo, hi int, fn func(i int, op uint64, key []byte) bool), maxBytes int64, first bool) ([][]int, bool) {
	if n < 2 {
		return nil, true
	}
	// The bound counts the hashes' 8 bytes a row, not the room the buckets'
	// last chunks may leave unused (see hashChunkLen): callers size it for
	// the hashes.
	if int64(n)*8 > maxBytes {
		return nil, false
	}
	parts := min(runtime.GOMAXPROCS(0), 8, max(1, n>>16))
	h := newKeyHashes(n, parts)
	hashPasses.Add(1)
	ForEach(parts, func(p int) {
		hp := h.part(p)
		eachIn(hp.lo, hp.hi, func(i int, op uint64, key []byte) bool {
			hp.add(i, op, key)
			return true
		})
	})
	if !h.complete() {
		return nil, false // eachIn did not give each row in turn
	}
	return h.repeated(eachIn, maxBytes, first)
}

// hashPasses counts the passes repeatedKeys makes over the keys for their
// hashes (tests check that inspect and validate, which make them as they
// read the keys, make none).
var hashPasses atomic.Int64

// keyHashes are the hashes of the operators and keys of a file's n rows,
// made in parts: part p hashes rows [p*n/parts, (p+1)*n/parts) in order.
// repeatedKeys makes them in a pass of its own. Validate's checks of the
// rows and inspect's count of them, which read every key anyway, make them
// as they go, so that the keys are read once: validate of 10M rows in
// clink's order took 1.14 s of CPU against 1.32 s (11 runs interleaved).
// Inspect's took as long as before (1.63 s against 1.62 s, 15 runs): the
// hashing costs its walk over the rows what the pass of their own cost.
type keyHashes struct {
	seed  hashSeed
	chunk int
	parts []hashPart
}

// hashPart is the part of keyHashes that one goroutine makes.
type hashPart struct {
	hashBuckets
	seed   hashSeed
	lo, hi int // the rows it hashes
	next   int // the row it hashes next; past hi once a row came out of turn
}

// newKeyHashes returns the keyHashes of n rows in parts, none made yet.
func newKeyHashes(n, parts int) *keyHashes {
	h := &keyHashes{seed: newHashSeed(), chunk: hashChunkLen(n, parts), parts: make([]hashPart, parts)}
	for p := range h.parts {
		hp := &h.parts[p]
		hp.lo, hp.hi = p*n/parts, (p+1)*n/parts
		hp.next = hp.lo
	}
	return h
}

// keyHashesFor returns the keyHashes, in parts, that distinctKeys would
// make for snapshot s within maxBytes; nil when it would make none (too few
// rows, or too many for the bound).
func keyHashesFor(s *Snapshot, maxBytes int64, parts int) *keyHashes {
	if n := s.NumRows(); n >= 2 && int64(n)*8 <= maxBytes {
		return newKeyHashes(n, parts)
	}
	return nil
}

// part returns part p, its room made on first use (by the goroutine that
// fills it, which so takes the first touch of its pages); nil for a nil h
// (no hashes to make: hashPart's walks then make none).
func (h *keyHashes) part(p int) *hashPart {
	if h == nil {
		return nil
	}
	hp := &h.parts[p]
	if hp.slab == nil {
		hp.init(hp.hi-hp.lo, h.chunk)
		hp.seed = h.seed
	}
	return hp
}

// add adds the hash of row i's operator and key: the part's next row, or
// the part is left incomplete.
func (hp *hashPart) add(i int, op uint64, key []byte) {
	if !hp.turn(i, 1) {
		return
	}
	hp.hashBuckets.add(distinctHash(hp.seed, op, key))
}

// addBlock adds the hashes of rows [x, to) of the batch kc holds, the
// first of which is row i, as add would.
func (hp *hashPart) addBlock(i int, kc *KeyColumns, x, to int) {
	if !hp.turn(i, to-x) {
		return
	}
	for y := x; y < to; y++ {
		hp.hashBuckets.add(distinctHash(hp.seed, kc.Ops[y-kc.Lo], kc.Key(y)))
	}
}

// turn reports whether the n rows from i are the part's next, and moves
// past them; rows out of turn (missed, twice, or past the part) leave it
// incomplete for good.
func (hp *hashPart) turn(i, n int) bool {
	if i != hp.next || hp.slab == nil || n > hp.hi-i {
		hp.next = hp.hi + 1
		return false
	}
	hp.next += n
	return true
}

// complete reports whether every part holds the hashes of all its rows,
// each added once, in order (and repeated has not used them up): otherwise
// distinctKeysOf makes its own.
func (h *keyHashes) complete() bool {
	if len(h.parts) == 0 {
		return false
	}
	for p := range h.parts {
		if hp := &h.parts[p]; hp.next != hp.hi {
			return false
		}
	}
	return true
}

// distinctKeysOf is distinctKeys with the hashes of s's rows made by
// another pass over them; when h is nil or incomplete, it makes its own.
func distinctKeysOf(s *Snapshot, h *keyHashes, maxBytes int64) bool {
	if h == nil || !h.complete() {
		return distinctKeys(s, maxBytes)
	}
	groups, ok := h.repeated(s.EachKeyIn, maxBytes, true)
	return ok && len(groups) == 0
}

// repeated is repeatedKeys once the hashes of the rows are made: each
// bucket's hashes go into a set of them, which finds those seen twice, and
// the rows of those are looked at again with their keys.
func (h *keyHashes) repeated(eachIn func(lo, hi int, fn func(i int, op uint64, key []byte) bool), maxBytes int64, first bool) ([][]int, bool) {
	held, seed := h.parts, h.seed
	n := 0
	if len(held) > 0 {
		n = held[len(held)-1].hi
	}
	var repeats [256][]uint64
	ForEach(256, func(b int) {
		size := 0
		for p := range held {
			size += held[p].count(b)
		}
		if size < 2 {
			return
		}
		set := hashSets.Get().(*hashSet)
		defer hashSets.Put(set)
		set.reset(size)
		for p := range held {
			for c := range held[p].chunks[b] {
				for _, v := range held[p].chunk(b, c) {
					set.add(v)
				}
			}
		}
		repeats[b] = set.repeated()
	})
	var twice []uint64
	for _, r := range repeats {
		twice = append(twice, r...)
	}
	held, h.parts = nil, nil // used up: complete says no from here on
	if len(twice) > distinctMaxCollisions || int64(len(twice))*repeatHeld > maxBytes {
		return nil, false // too many to check
	}
	if len(twice) == 0 {
		return nil, true
	}
	// The rows of hashes seen twice: are their keys the same?
	type opKey struct {
		op    uint64
		key   []byte
		group int // index in groups once held twice, else -1
		row   int // the first row
	}
	seen := make(map[uint64][]*opKey, len(twice))
	for _, h := range twice {
		seen[h] = nil
	}
	var groups [][]int
	used, over := int64(len(twice))*repeatHeld, false
	eachIn(0, n, func(i int, op uint64, key []byte) bool {
		h := distinctHash(seed, op, key)
		held, ok := seen[h]
		if !ok {
			return true
		}
		for _, r := range held {
			if r.op == op && bytes.Equal(r.key, key) {
				if r.group < 0 {
					r.group = len(groups)
					groups = append(groups, []int{r.row})
				}
				groups[r.group] = append(groups[r.group], i)
				used += 8
				over = used > maxBytes
				return !first && !over
			}
		}
		if used += int64(len(key)); used > maxBytes {
			over = true
			return false
		}
		seen[h] = append(held, &opKey{op: op, key: bytes.Clone(key), group: -1, row: i})
		return true
	})
	if over {
		return nil, false
	}
	return groups, true
}

// hashBuckets holds a part's hashes by their top byte, in chunks of its
// own slab, as they are computed: a pass over the keys leaves them in
// buckets, each ready for its hashSet. (The hashes of all rows were written in row
// order and then partitioned in place by their top byte: one core,
// one cache miss after the other, about 230 ms for 10M rows, while the
// other cores waited.) A bucket's chunks are full but its last.
type hashBuckets struct {
	slab   []uint64
	used   int        // slab[:used] is in chunks
	size   int        // hashes a chunk holds
	next   [256]int   // where a bucket's next hash goes in slab
	end    [256]int   // where its last chunk ends
	chunks [256][]int // where its chunks start
}

// hashChunkLen is the length of hashBuckets' chunks for n rows hashed in
// parts (as repeatedKeys cuts them): long enough that a chunk is rarely
// started, short enough that the last chunks of the buckets, partly
// filled, take little room: at most a sixteenth of n, or 4,096 hashes.
func hashChunkLen(n, parts int) int {
	return min(1024, max(16, n/(parts*256*16)))
}

// init makes room for n hashes in chunks of chunk. The room for n is
// mapped in at once (prefault.Slice; the rest, which the buckets' last
// chunks may take, faults in as used): written a hash at a time, its fresh
// pages faulted in one by one, 8 bytes a row, and validate of 10M rows in
// clink's order took 0.86 -> 0.73 s of CPU with it, inspect 1.07 -> 1.01 s,
// the --keep-order drop 1.59 -> 1.50 s (nine runs interleaved), at the
// same peak memory.
func (h *hashBuckets) init(n, chunk int) {
	h.slab = make([]uint64, n+256*chunk)
	prefault.Slice(h.slab[:n:n])
	h.size = chunk
}

// add puts hash v in the bucket of its top byte.
func (h *hashBuckets) add(v uint64) {
	b := v >> 56
	if h.next[b] == h.end[b] {
		h.chunks[b] = append(h.chunks[b], h.used)
		h.next[b], h.end[b] = h.used, h.used+h.size
		h.used += h.size
	}
	h.slab[h.next[b]] = v
	h.next[b]++
}

// count returns how many hashes bucket b holds.
func (h *hashBuckets) count(b int) int {
	c := len(h.chunks[b])
	if c == 0 {
		return 0
	}
	return (c-1)*h.size + h.next[b] - h.chunks[b][c-1]
}

// chunk returns chunk c of bucket b: full, but for the bucket's last.
func (h *hashBuckets) chunk(b, c int) []uint64 {
	at := h.chunks[b][c]
	if c == len(h.chunks[b])-1 {
		return h.slab[at:h.next[b]]
	}
	return h.slab[at : at+h.size]
}

// hashSet finds the hashes of a bucket seen more than once: open
// addressing with linear probing, at most half full (two thirds full, the
// probes took 40% longer), in the CPU's cache for a bucket of the hashes
// of 10M rows (1 MiB for its 39K). Each hash costs a probe or two, where
// sorting the bucket (partitioned by 12 more bits, then by insertion) took
// about 28 ns a hash: inspect and validate of 10M rows in clink's order
// spent 140 ms there. Hash 0 marks an empty slot, and is counted apart.
type hashSet struct {
	slots []uint64
	shift uint // 64 - log2(len(slots))
	zeros int  // hashes 0 added
	twice []uint64
}

// hashSets holds hashSets between buckets.
var hashSets = sync.Pool{New: func() any { return new(hashSet) }}

// reset empties the set, with room for n hashes.
func (s *hashSet) reset(n int) {
	lg := bits.Len(uint(2 * n))
	if cap(s.slots) < 1<<lg {
		s.slots = make([]uint64, 1<<lg)
	} else {
		s.slots = s.slots[:1<<lg]
		clear(s.slots)
	}
	s.shift = uint(64 - lg)
	s.zeros = 0
	s.twice = s.twice[:0]
}

// add adds hash h, noting it when it was added before.
func (s *hashSet) add(h uint64) {
	if h == 0 {
		if s.zeros++; s.zeros > 1 {
			s.twice = append(s.twice, 0)
		}
		return
	}
	// The slot from all of h's bits (Fibonacci hashing): a bucket's hashes
	// share their top byte, and hashes made weak by a test share more.
	mask := uint64(len(s.slots) - 1)
	for i := (h * 0x9e3779b97f4a7c15) >> s.shift; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case 0:
			s.slots[i] = h
			return
		case h:
			s.twice = append(s.twice, h)
			return
		}
	}
}

// repeated returns the hashes added more than once, each once, in order.
func (s *hashSet) repeated() []uint64 {
	if len(s.twice) == 0 {
		return nil
	}
	t := slices.Clone(s.twice)
	slices.Sort(t)
	return slices.Compact(t)
}

// DistinctBudget is the memory DistinctKeys may use for the rows of file f
// (or rows taken from it): a quarter of its bytes, or 64 MiB for a smaller
// one.
func DistinctBudget(f *File) int64 {
	return max(64<<20, f.Size/4)
}

// distinctHash is the hash distinctKeys uses (a variable so tests can make
// hashes collide).
var distinctHash = rowHash

// hashSeed is the secret of rowHash, new for each question: a file cannot
// be made so that its hashes collide.
type hashSeed struct {
	seed       maphash.Seed
	k0, k1, k2 uint64
}

// newHashSeed returns a random hashSeed.
func newHashSeed() hashSeed {
	s := hashSeed{seed: maphash.MakeSeed()}
	s.k0 = maphash.Bytes(s.seed, []byte("k0")) | 1
	s.k1 = maphash.Bytes(s.seed, []byte("k1")) | 1
	s.k2 = maphash.Bytes(s.seed, []byte("k2")) | 1
	return s
}

// rowHash is a 64-bit hash of a row's operator and key. A key of 8 to 16
// bytes (a key group, a slot and an int64 key: 13 to 16) is its first and
// last eight bytes, which may overlap, and its length: the two words are
// mixed with the seed's by a multiplication of 128 bits, as wyhash mixes,
// and the length, times a third secret word, is XORed in after, in a few
// instructions (maphash of such a key and its call took a tenth of the CPU
// of inspect of 10M rows in clink's order). Other keys go through maphash.
// No choice of keys and operators makes two rows' hashes collide whatever
// the seed: collisions cost only time (DistinctKeys checks them against the
// keys), but enough of them make it give the question up to the sort.
func rowHash(seed hashSeed, op uint64, key []byte) uint64 {
	var h uint64
	if n := len(key); n >= 8 && n <= 16 {
		a := binary.LittleEndian.Uint64(key) ^ seed.k0
		b := binary.LittleEndian.Uint64(key[n-8:]) ^ seed.k1
		hi, lo := bits.Mul64(a, b)
		// The length after the product, times a secret word: XORed into a
		// word before it, a key's bytes could undo it whatever the seed;
		// times a constant, the operator (XORed in below) could, between
		// keys of two lengths whose first and last words are the same (x
		// and x+x).
		h = hi ^ lo ^ uint64(n)*seed.k2
	} else {
		h = maphash.Bytes(seed.seed, key)
	}
	h ^= op * 0x9e3779b97f4a7c15
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	return h ^ h>>32
}
