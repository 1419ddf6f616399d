package savepoint

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// openAsIs writes rows to a file in the order given and opens it memory-mapped,
// as the CLI does (vtOpen).
func openAsIs(t *testing.T, rows []Row) *Savepoint {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f.snap")
	if _, err := WriteSnapshotFile(path, nil, rows, SnapshotOptions{AsIs: true}); err != nil {
		t.Fatal(err)
	}
	return vtOpen(t, path, OpenOptions{AllowMissingSidecar: true})
}

// distinctKeys tells rows that share (op, key) from rows that only share a
// hash, and leaves to the sort what it has no memory for.
func TestDistinctKeys(t *testing.T) {
	rows := func(n int) []Row {
		var rs []Row
		for i := range n {
			op := uint64(1 + i%3)
			rs = append(rs, Row{Op: op, Key: EncodeKeyedKey([]byte("s"), fmt.Appendf(nil, "user-%d", i*7919%n)), Value: []byte{byte(i)}})
		}
		return rs
	}
	weak := func(_ maphash.Seed, op uint64, key []byte) uint64 { return uint64(len(key)) } // every row of a length collides
	coarse := func(seed maphash.Seed, op uint64, key []byte) uint64 { return rowHash(seed, op, key) >> 44 << 44 }
	for _, tc := range []struct {
		name     string
		rows     []Row
		hash     func(maphash.Seed, uint64, []byte) uint64
		maxBytes int64
		want     bool
	}{
		{"none", nil, rowHash, 1 << 20, true},
		{"one row", rows(1), rowHash, 1 << 20, true},
		{"distinct", rows(200000), rowHash, 1 << 30, true},
		{"a key stored twice, far apart", append(rows(200000), rows(200000)[3]), rowHash, 1 << 30, false},
		{"a key stored twice", append(rows(1000), rows(1000)[417]), rowHash, 1 << 30, false},
		{"keys stored twice and three times", append(rows(1000), rows(1000)[417], rows(1000)[2], rows(1000)[417]), rowHash, 1 << 30, false},
		{"the same key under two operators", append(rows(999), Row{Op: 9, Key: rows(999)[5].Key}), rowHash, 1 << 30, true},
		{"distinct, every hash colliding", rows(300), weak, 1 << 30, true},
		{"the same key under two operators, hashes colliding", append(rows(300), Row{Op: 9, Key: rows(300)[5].Key}), weak, 1 << 30, true},
		{"a key stored twice among colliding hashes", append(rows(300), rows(300)[0]), weak, 1 << 30, false},
		{"too little memory to look", rows(1000), rowHash, 8*1000 - 1, false},
		// 200,000 rows are hashed in parts: hashes of 20 bits collide
		// within and across parts, and are checked against the keys.
		{"distinct, hashes colliding across parts", rows(200000), coarse, 1 << 30, true},
		{"a key stored twice far apart, hashes colliding across parts", append(rows(200000), rows(200000)[3]), coarse, 1 << 30, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(h func(maphash.Seed, uint64, []byte) uint64) { distinctHash = h }(distinctHash)
			distinctHash = tc.hash
			for _, columnar := range []bool{false, true} {
				s := &Snapshot{Rows: tc.rows}
				if columnar {
					s = openAsIs(t, tc.rows).Files[0].Snapshot
				}
				if got := distinctKeys(s, tc.maxBytes); got != tc.want {
					t.Errorf("columnar %v: %v, want %v", columnar, got, tc.want)
				}
				// RepeatedKeys finds every group of rows of one
				// operator and key, as a map of them does.
				groups, ok := RepeatedKeys(s.NumRows(), s.EachKeyIn, tc.maxBytes)
				if wantOK := len(tc.rows) < 2 || int64(len(tc.rows))*8 <= tc.maxBytes; ok != wantOK {
					t.Fatalf("columnar %v: RepeatedKeys ok %v, want %v", columnar, ok, wantOK)
				}
				if ok && !reflect.DeepEqual(groups, repeatedOracle(tc.rows)) {
					t.Errorf("columnar %v: RepeatedKeys %v, want %v", columnar, groups, repeatedOracle(tc.rows))
				}
			}
		})
	}
}

// Past distinctMaxCollisions hashes seen twice, DistinctKeys does not
// look at the keys and says it cannot tell.
func TestDistinctKeysTooManyCollisions(t *testing.T) {
	defer func(h func(maphash.Seed, uint64, []byte) uint64, m int) { distinctHash, distinctMaxCollisions = h, m }(distinctHash, distinctMaxCollisions)
	distinctHash = func(_ maphash.Seed, op uint64, key []byte) uint64 { return uint64(len(key)) }
	var rows []Row
	for i := range 200 { // keys of 2 and 3 bytes: two hashes, each seen many times
		rows = append(rows, Row{Op: 1, Key: fmt.Appendf(nil, "%d", i+10)})
	}
	s := &Snapshot{Rows: rows}
	for _, tc := range []struct {
		max  int
		want bool
	}{{2, true}, {1, false}} {
		distinctMaxCollisions = tc.max
		if got := distinctKeys(s, 1<<20); got != tc.want {
			t.Errorf("at most %d hashes seen twice: %v, want %v", tc.max, got, tc.want)
		}
	}
}

// partitionBits orders values by their top byte (or other bits) in place,
// keeping each value, and says where each digit's values start; sortHashes
// sorts.
func TestPartitionBits(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 255, 10000} {
		a := make([]uint64, n)
		for i := range a {
			a[i] = r.Uint64()
			if i%3 == 0 {
				a[i] &= 0x03ffffffffffffff // crowd a few buckets
			}
		}
		want := slices.Clone(a)
		slices.Sort(want)
		for _, tc := range []struct{ shift, bits uint }{{56, 8}, {48, 8}, {0, 8}, {44, 12}, {3, 1}} {
			shift, nd := tc.shift, 1<<tc.bits
			count, starts := make([]int, nd), make([]int, nd+1)
			partitionBits(a, shift, count, starts)
			if starts[0] != 0 || starts[nd] != n {
				t.Fatalf("%d values, shift %d: starts %d..%d", n, shift, starts[0], starts[nd])
			}
			for d := range nd {
				for i := starts[d]; i < starts[d+1]; i++ {
					if int(a[i]>>shift&uint64(nd-1)) != d {
						t.Fatalf("%d values, %d bits at %d: value %#x at %d, in the part of %d", n, tc.bits, shift, a[i], i, d)
					}
				}
			}
			got := slices.Clone(a)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("%d values, shift %d: not the same values", n, shift)
			}
		}
		// A bucket of one top byte, large enough to be partitioned again,
		// with values repeated.
		bucket := make([]uint64, n)
		for i := range bucket {
			bucket[i] = 0x7f<<56 | r.Uint64()>>8
			if i%5 == 0 && i > 0 {
				bucket[i] = bucket[i/2]
			}
		}
		sorted := slices.Clone(bucket)
		slices.Sort(sorted)
		if sortHashes(bucket); !slices.Equal(bucket, sorted) {
			t.Fatalf("%d values: sortHashes did not sort them", n)
		}
	}
}

// The key-group histogram of a file out of order counts each (op, key)
// once: every row when the hashes show no duplicates, one less for a key
// stored twice.
func TestKeyGroupHistogramUnsorted(t *testing.T) {
	var rows []Row
	for i := range 5000 {
		rows = append(rows, Row{Op: uint64(1 + i%2), Key: EncodeKeyedKey([]byte("agg"), fmt.Appendf(nil, "k%d", (i*7919)%5000)), Value: []byte{1}})
	}
	for _, tc := range []struct {
		name string
		rows []Row
		want int
	}{
		{"distinct", rows, 5000},
		{"a key stored twice", append(slices.Clone(rows), rows[1234]), 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := openAsIs(t, tc.rows)
			if sorted, _ := sp.Files[0].Snapshot.Order(); sorted {
				t.Fatal("the file is sorted")
			}
			h := Summarize(sp).KeyGroups
			var kg [NumKeyGroups]int
			for _, r := range tc.rows[:5000] {
				kg[r.Key[0]]++
			}
			if h.Rows != tc.want || h.Counts != kg {
				t.Errorf("%d rows, want %d (counts match: %v)", h.Rows, tc.want, h.Counts == kg)
			}
		})
	}
}

// repeatedOracle is RepeatedKeys of rows, from a map: the rows of each
// operator and key held more than once, the groups in the order of their
// second rows.
func repeatedOracle(rows []Row) [][]int {
	at := map[string][]int{}
	var order []string
	for i, r := range rows {
		k := fmt.Sprintf("%d/%x", r.Op, r.Key)
		at[k] = append(at[k], i)
		if len(at[k]) == 2 {
			order = append(order, k)
		}
	}
	var groups [][]int
	for _, k := range order {
		groups = append(groups, at[k])
	}
	return groups
}

// RepeatedKeys holds the repeated keys within its memory bound, however
// many: 100,000 keys stored twice among 200,000 rows are all found with 64
// MiB (a fixed cap of 65,536 left a file storing 166,000 keys twice
// unsearched, and a rule that dropped a key's winning copy brought back
// the copy it hid), and none with a bound that holds the hashes but not
// the keys.
func TestRepeatedKeysWithinBound(t *testing.T) {
	const n = 200_000
	eachIn := func(lo, hi int, fn func(i int, op uint64, key []byte) bool) {
		for i := lo; i < hi; i++ {
			if !fn(i, 7, fmt.Appendf(nil, "user%d", i%(n/2))) {
				return
			}
		}
	}
	groups, ok := RepeatedKeys(n, eachIn, 64<<20)
	if !ok || len(groups) != n/2 {
		t.Fatalf("ok %v, %d groups, want %d", ok, len(groups), n/2)
	}
	for _, g := range groups {
		if len(g) != 2 || g[1] != g[0]+n/2 {
			t.Fatalf("group %v, want rows i and i+%d", g, n/2)
		}
	}
	if _, ok := RepeatedKeys(n, eachIn, 8*n+1<<20); ok {
		t.Error("the keys do not fit in the bound, but RepeatedKeys said it could tell")
	}
}

// hashBuckets gives back each bucket's hashes, in the order added, across
// chunks and with the last one partly filled.
func TestHashBuckets(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 15, 16, 17, 5000} {
		var h hashBuckets
		h.init(n, 16)
		want := make([][]uint64, 256)
		for range n {
			v := r.Uint64()
			if r.IntN(2) == 0 {
				v = v&^(0xff<<56) | uint64(r.IntN(3))<<56 // crowd three buckets
			}
			h.add(v)
			want[v>>56] = append(want[v>>56], v)
		}
		for b := range 256 {
			if got := h.count(b); got != len(want[b]) {
				t.Fatalf("%d hashes: bucket %d counts %d, want %d", n, b, got, len(want[b]))
			}
			if got := h.appendTo([]uint64{42}, b); !slices.Equal(got[1:], want[b]) || got[0] != 42 {
				t.Fatalf("%d hashes: bucket %d holds %x, want %x after 42", n, b, got, want[b])
			}
		}
		if h.used > n+256*16 {
			t.Fatalf("%d hashes: %d slots in chunks, more than the slab's %d", n, h.used, n+256*16)
		}
	}
}

// hashChunkLen leaves at most a sixteenth of the rows, or 4,096 hashes, of
// room unused in the buckets' last chunks.
func TestHashChunkLen(t *testing.T) {
	for _, n := range []int{2, 1000, 1 << 16, 1<<17 + 5, 1 << 20, 4 << 20, 10_000_000, 1 << 30} {
		for parts := 1; parts <= min(8, max(1, n>>16)); parts++ { // as repeatedKeys cuts them
			c := hashChunkLen(n, parts)
			if waste := parts * 256 * c; waste > max(n/16, 4096) {
				t.Errorf("%d rows in %d parts: chunks of %d leave up to %d unused", n, parts, c, waste)
			}
		}
	}
}
