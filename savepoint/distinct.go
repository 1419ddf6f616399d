package savepoint

import (
	"bytes"
	"hash/maphash"
	"runtime"
	"slices"
	"sync"
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
// key, as far as it can tell with maxBytes of memory (8 bytes a row and a
// sixteenth, see hashBuckets): false
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
// hashes (and at most a sixteenth more, see hashBuckets), then, for each hash seen twice, its key and about 200 bytes while
// the keys are compared (a file of 1.2M rows storing 166,000 keys twice
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
	seed := maphash.MakeSeed()
	parts := min(runtime.GOMAXPROCS(0), 8, max(1, n>>16))
	chunk := hashChunkLen(n, parts)
	if int64(n+parts*256*chunk)*8 > maxBytes {
		return nil, false
	}
	// Each part puts its rows' hashes in buckets by their top byte as it
	// computes them (see hashBuckets); a bucket sorted, the hashes seen
	// twice are neighbours.
	held := make([]hashBuckets, parts)
	ForEach(parts, func(p int) {
		lo, hi := p*n/parts, (p+1)*n/parts
		hb := &held[p]
		hb.init(hi-lo, chunk)
		eachIn(lo, hi, func(i int, op uint64, key []byte) bool {
			hb.add(distinctHash(seed, op, key))
			return true
		})
	})
	var repeats [256][]uint64
	ForEach(256, func(b int) {
		size := 0
		for p := range held {
			size += held[p].count(b)
		}
		if size < 2 {
			return
		}
		sp := hashScratch.Get().(*[]uint64)
		defer hashScratch.Put(sp)
		bucket := (*sp)[:0]
		for p := range held {
			bucket = held[p].appendTo(bucket, b)
		}
		*sp = bucket
		sortHashes(bucket)
		for i := 1; i < len(bucket); i++ {
			if bucket[i] == bucket[i-1] && (i == 1 || bucket[i-2] != bucket[i]) {
				repeats[b] = append(repeats[b], bucket[i])
			}
		}
	})
	var twice []uint64
	for _, r := range repeats {
		twice = append(twice, r...)
	}
	held = nil
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
// buckets, ready to sort. (The hashes of all rows were written in row
// order and then partitioned in place by their top byte: one core,
// one cache miss after the other, about 230 ms for 10M rows, while the
// other cores waited.) A bucket's chunks are full but its last.
type hashBuckets struct {
	slab   []uint64
	used   int        // slab[:used] is in chunks
	chunk  int        // hashes a chunk holds
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

// init makes room for n hashes in chunks of chunk.
func (h *hashBuckets) init(n, chunk int) {
	h.slab = make([]uint64, n+256*chunk)
	h.chunk = chunk
}

// add puts hash v in the bucket of its top byte.
func (h *hashBuckets) add(v uint64) {
	b := v >> 56
	if h.next[b] == h.end[b] {
		h.chunks[b] = append(h.chunks[b], h.used)
		h.next[b], h.end[b] = h.used, h.used+h.chunk
		h.used += h.chunk
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
	return (c-1)*h.chunk + h.next[b] - h.chunks[b][c-1]
}

// appendTo appends the hashes of bucket b to dst.
func (h *hashBuckets) appendTo(dst []uint64, b int) []uint64 {
	for i, at := range h.chunks[b] {
		end := at + h.chunk
		if i == len(h.chunks[b])-1 {
			end = h.next[b]
		}
		dst = append(dst, h.slab[at:end]...)
	}
	return dst
}

// hashScratch holds the buffers a bucket of hashes is sorted in.
var hashScratch = sync.Pool{New: func() any { return new([]uint64) }}

// DistinctBudget is the memory DistinctKeys may use for the rows of file f
// (or rows taken from it): a quarter of its bytes, or 64 MiB for a smaller
// one.
func DistinctBudget(f *File) int64 {
	return max(64<<20, f.Size/4)
}

// distinctHash is the hash distinctKeys uses (a variable so tests can make
// hashes collide).
var distinctHash = rowHash

// rowHash is a 64-bit hash of a row's operator and key.
func rowHash(seed maphash.Seed, op uint64, key []byte) uint64 {
	h := maphash.Bytes(seed, key) ^ op*0x9e3779b97f4a7c15
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	return h ^ h>>32
}

// sortHashes sorts a bucket of hashes that share their top byte. A large
// one is partitioned in place by its next 12 bits first, and each part
// sorted by insertion: the hashes are uniform, so the parts are of about 10
// hashes, and the bucket (in the CPU's cache) is read twice more where a
// comparison sort of all of it goes over it about log2(len) times (a bucket
// of 39K hashes, the 10M rows of a file: 3.7x faster than slices.Sort).
func sortHashes(bucket []uint64) {
	if len(bucket) < 4096 {
		slices.Sort(bucket)
		return
	}
	t := hashTables.Get().(*hashSortTables)
	defer hashTables.Put(t)
	partitionBits(bucket, 44, t.count[:], t.starts[:])
	for b := range len(t.count) {
		part := bucket[t.starts[b]:t.starts[b+1]]
		for i := 1; i < len(part); i++ {
			v, j := part[i], i
			for ; j > 0 && part[j-1] > v; j-- {
				part[j] = part[j-1]
			}
			part[j] = v
		}
	}
}

// hashSortTables are sortHashes' tables, pooled: 64 KiB, more than a
// goroutine's stack should grow by for each bucket.
type hashSortTables struct {
	count  [1 << 12]int
	starts [1<<12 + 1]int
}

var hashTables = sync.Pool{New: func() any { return new(hashSortTables) }}

// partitionBits puts a's values in order of their len(count) bits at shift
// (len(count) a power of two; 8 bits at 56: the top byte), in place (each
// moved at most once, as in an American flag sort), and sets where each
// digit's values start: those of digit d are a[starts[d]:starts[d+1]].
// starts has one more element than count.
func partitionBits(a []uint64, shift uint, count, starts []int) {
	mask := uint64(len(count) - 1)
	clear(count)
	for _, v := range a {
		count[v>>shift&mask]++
	}
	starts[0] = 0
	for d, c := range count {
		starts[d+1] = starts[d] + c
	}
	next := count // the next place in each digit's part
	copy(next, starts)
	for d := range next {
		for next[d] < starts[d+1] {
			v := a[next[d]]
			// Carry v to its part, taking the value there on, until one
			// that belongs here comes back.
			for e := int(v >> shift & mask); e != d; e = int(v >> shift & mask) {
				a[next[e]], v = v, a[next[e]]
				next[e]++
			}
			a[next[d]] = v
			next[d]++
		}
	}
}
