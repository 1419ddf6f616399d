package savepoint

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
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
	made := map[int][]Row{} // each size made once, full: a case that appends to it appends to a copy
	rows := func(n int) []Row {
		if rs, ok := made[n]; ok {
			return rs
		}
		rs := make([]Row, 0, n)
		for i := range n {
			op := uint64(1 + i%3)
			rs = append(rs, Row{Op: op, Key: EncodeKeyedKey([]byte("s"), fmt.Appendf(nil, "user-%d", i*7919%n)), Value: []byte{byte(i)}})
		}
		made[n] = rs
		return rs
	}
	weak := func(_ hashSeed, op uint64, key []byte) uint64 { return uint64(len(key)) } // every row of a length collides
	coarse := func(seed hashSeed, op uint64, key []byte) uint64 { return rowHash(seed, op, key) >> 44 << 44 }
	for _, tc := range []struct {
		name     string
		rows     []Row
		hash     func(hashSeed, uint64, []byte) uint64
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
		// The hashes' 8 bytes a row fit: the room their buckets leave
		// unused is not counted against the bound.
		{"just enough memory to look", append(rows(999), rows(999)[998]), rowHash, 9000, false},
		// 200,000 rows are hashed in parts: hashes of 20 bits collide
		// within and across parts, and are checked against the keys.
		{"distinct, hashes colliding across parts", rows(200000), coarse, 1 << 30, true},
		{"a key stored twice far apart, hashes colliding across parts", append(rows(200000), rows(200000)[3]), coarse, 1 << 30, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(h func(hashSeed, uint64, []byte) uint64) { distinctHash = h }(distinctHash)
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
	defer func(h func(hashSeed, uint64, []byte) uint64, m int) { distinctHash, distinctMaxCollisions = h, m }(distinctHash, distinctMaxCollisions)
	distinctHash = func(_ hashSeed, op uint64, key []byte) uint64 { return uint64(len(key)) }
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

// The key-group histogram of a file out of order counts each (op, key)
// once: every row when the hashes show no duplicates, one less for a key
// stored twice.
func TestKeyGroupHistogramUnsorted(t *testing.T) {
	// Counted in one pass, then in parts that hash the rows as they go
	// (keyHashes), in blocks of keys that end within a part and across
	// parts' ends.
	defer func(v int) { keyBlock = v }(keyBlock)
	defer func(v int) { tallyPartRows = v }(tallyPartRows)
	for _, c := range []struct{ part, block int }{{1 << 18, 4096}, {1000, 4096}, {1000, 333}, {2400, 7}} {
		tallyPartRows, keyBlock = c.part, c.block
		t.Run(fmt.Sprintf("parts of %d rows, blocks of %d", c.part, c.block), testKeyGroupHistogramUnsorted)
	}
}

func testKeyGroupHistogramUnsorted(t *testing.T) {
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

// Inspect and validate of a file in no order find a key stored twice with
// the hashes their own walks over the keys make, in parts and in blocks of
// keys, without a pass of the check's own: here the only copy of the key
// is the first row of a block (row 0), its other copy the last row.
func TestDuplicateFoundByTheWalksHashes(t *testing.T) {
	defer func(v int) { keyBlock = v }(keyBlock)
	defer func(v int) { tallyPartRows = v }(tallyPartRows)
	defer func(v int) { checkRowsPart = v }(checkRowsPart)
	var rows []Row
	for i := range 5000 {
		rows = append(rows, Row{Op: uint64(1 + i%2), Key: EncodeKeyedKey([]byte("agg"), fmt.Appendf(nil, "k%d", (i*7919)%5000)), Value: []byte{byte(i)}})
	}
	for _, tc := range []struct {
		name string
		rows []Row
		dup  bool
	}{
		{"distinct", rows, false},
		{"the first row's key stored again last", append(slices.Clone(rows), rows[0]), true},
	} {
		sp := openAsIs(t, tc.rows)
		for _, c := range []struct{ part, block, check int }{{1000, 4096, 1 << 30}, {1000, 333, 16}, {2400, 7, 16}} {
			tallyPartRows, keyBlock, checkRowsPart = c.part, c.block, c.check
			name := fmt.Sprintf("%s: parts of %d rows, blocks of %d, checks in parts of %d", tc.name, c.part, c.block, c.check)
			passes := hashPasses.Load()
			h := Summarize(sp).KeyGroups
			if h.Rows != 5000 {
				t.Errorf("%s: the histogram counts %d rows, want 5000", name, h.Rows)
			}
			var dups []Finding
			for _, f := range Validate(sp, ValidateOptions{}).Findings {
				if f.Check == CheckDuplicate {
					dups = append(dups, f)
				}
			}
			if tc.dup != (len(dups) == 1) || len(dups) > 1 || tc.dup && !strings.Contains(dups[0].Message, "rows 0, 5000") {
				t.Errorf("%s: duplicate findings %+v", name, dups)
			}
			if n := hashPasses.Load() - passes; n != 0 {
				t.Errorf("%s: %d passes of their own over the keys for their hashes, want none", name, n)
			}
		}
	}
}

// An eachIn that does not number the rows as asked leaves DistinctKeys
// unable to tell, rather than blind to a key stored twice.
func TestDistinctKeysRowsOutOfTurn(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	const n = 200_000 // in three parts
	eachIn := func(lo, hi int, fn func(i int, op uint64, key []byte) bool) {
		for i := lo; i < hi; i++ {
			k := min(i, n-2) // the last two rows share a key
			if !fn(i-lo, 7, fmt.Appendf(nil, "user%d", k)) {
				return
			}
		}
	}
	if DistinctKeys(n, eachIn, 64<<20) {
		t.Error("DistinctKeys found no key stored twice")
	}
}

// keyHashes made by another pass are complete only when each part hashed
// its rows once each, in order; then they find the keys held twice as
// repeatedKeys does, and otherwise distinctKeysOf makes its own.
func TestKeyHashesInTurn(t *testing.T) {
	const n = 3000
	rows := make([]Row, n)
	for i := range rows {
		rows[i] = Row{Op: uint64(1 + i%3), Key: EncodeKeyedKey([]byte("agg"), fmt.Appendf(nil, "k%d", i)), Value: []byte{1}}
	}
	rows[2500].Op, rows[2500].Key = rows[10].Op, rows[10].Key // held twice, across the parts
	eachIn := func(lo, hi int, fn func(i int, op uint64, key []byte) bool) {
		for i := lo; i < hi; i++ {
			if !fn(i, rows[i].Op, rows[i].Key) {
				return
			}
		}
	}
	// fill hashes part p's rows [lo, hi) with add, those of [from, to)
	// again, then the rest of the part a block of 64 at a time.
	type fill func(h *keyHashes, p int)
	inOrder := func(h *keyHashes, p int) {
		hp := h.part(p)
		for i := hp.lo; i < hp.hi; i++ {
			hp.add(i, rows[i].Op, rows[i].Key)
		}
	}
	inBlocks := func(h *keyHashes, p int) {
		hp := h.part(p)
		var kc KeyColumns
		b := mappedBatch(t, rows)
		for x := hp.lo; x < hp.hi; x = kc.Hi {
			if err := kc.Load(b, x, min(hp.hi, x+64)); err != nil {
				t.Fatal(err)
			}
			hp.addBlock(x, &kc, x, kc.Hi)
		}
	}
	skipping := func(skip int) fill {
		return func(h *keyHashes, p int) {
			hp := h.part(p)
			for i := hp.lo; i < hp.hi; i++ {
				if i != skip {
					hp.add(i, rows[i].Op, rows[i].Key)
				}
			}
		}
	}
	twice := func(again, skip int) fill {
		return func(h *keyHashes, p int) {
			hp := h.part(p)
			for i := hp.lo; i < hp.hi; i++ {
				if i != skip {
					hp.add(i, rows[i].Op, rows[i].Key)
				}
				if i == again {
					hp.add(i, rows[i].Op, rows[i].Key)
				}
			}
		}
	}
	past := func(h *keyHashes, p int) {
		inOrder(h, p)
		hp := h.part(p)
		if hp.hi < n {
			hp.add(hp.hi, rows[hp.hi].Op, rows[hp.hi].Key)
		}
	}
	none := func(*keyHashes, int) {}
	for _, tc := range []struct {
		name     string
		fills    []fill
		complete bool
	}{
		{"in order", []fill{inOrder, inOrder}, true},
		{"in blocks", []fill{inBlocks, inOrder}, true},
		{"a row missed", []fill{inOrder, skipping(2999)}, false},
		{"a row twice", []fill{twice(7, -1), inOrder}, false},
		{"a row twice, another missed", []fill{inOrder, twice(1600, 2500)}, false},
		{"a row past the part", []fill{past, inOrder}, false},
		{"a part not made", []fill{inOrder, none}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newKeyHashes(n, len(tc.fills))
			for p, f := range tc.fills {
				f(h, p)
			}
			if h.complete() != tc.complete {
				t.Fatalf("complete %v, want %v", h.complete(), tc.complete)
			}
			if !tc.complete {
				return
			}
			groups, ok := h.repeated(eachIn, 64<<20, false)
			if want := [][]int{{10, 2500}}; !ok || !reflect.DeepEqual(groups, want) {
				t.Errorf("groups %v (ok %v), want %v", groups, ok, want)
			}
		})
	}
	// Incomplete hashes that miss the copy: distinctKeysOf asks again.
	sp := openAsIs(t, rows)
	h := newKeyHashes(n, 1)
	skipping(2500)(h, 0)
	if distinctKeysOf(sp.Files[0].Snapshot, h, 64<<20) {
		t.Error("distinctKeysOf took incomplete hashes for all of them")
	}
	if distinctKeysOf(sp.Files[0].Snapshot, nil, 64<<20) {
		t.Error("distinctKeysOf without hashes: the key held twice not found")
	}
	// Hashes used once are gone: a second question makes its own.
	h = newKeyHashes(n, 2)
	inOrder(h, 0)
	inOrder(h, 1)
	for try := range 2 {
		if distinctKeysOf(sp.Files[0].Snapshot, h, 64<<20) {
			t.Errorf("question %d: the key held twice not found", try+1)
		}
	}
}

// mappedBatch returns the batch of a file of rows, memory-mapped, to read
// with KeyColumns.
func mappedBatch(t *testing.T, rows []Row) *Batch {
	t.Helper()
	sp := openAsIs(t, rows)
	t.Cleanup(func() { sp.Close() })
	return &sp.Files[0].Snapshot.Batches[0]
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
			var got []uint64
			for c := range h.chunks[b] {
				if part := h.chunk(b, c); len(part) != 16 && c < len(h.chunks[b])-1 || len(part) == 0 {
					t.Fatalf("%d hashes: chunk %d of %d of bucket %d holds %d", n, c, len(h.chunks[b]), b, len(part))
				}
				got = append(got, h.chunk(b, c)...)
			}
			if !slices.Equal(got, want[b]) {
				t.Fatalf("%d hashes: bucket %d holds %x, want %x", n, b, got, want[b])
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

// hashSet names each hash added more than once, once, whatever its bits:
// hash 0 (the empty slot's mark) too, and hashes that differ only in their
// top bits (a test's weak hashes).
func TestHashSet(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var s hashSet
	for _, tc := range []struct {
		name string
		n    int
		mask uint64
	}{
		{"random", 40000, ^uint64(0)},
		{"top 20 bits only", 40000, 0xfffff << 44},
		{"few values", 1000, 0x7},
		{"one", 1, ^uint64(0)},
	} {
		want := map[uint64]int{}
		s.reset(tc.n)
		for range tc.n {
			h := r.Uint64() & tc.mask
			if r.IntN(50) == 0 {
				h = 0
			}
			want[h]++
			s.add(h)
		}
		var twice []uint64
		for h, c := range want {
			if c > 1 {
				twice = append(twice, h)
			}
		}
		slices.Sort(twice)
		if got := s.repeated(); !slices.Equal(got, twice) {
			t.Errorf("%s: repeated %d hashes, want %d (%x, want %x)", tc.name, len(got), len(twice), got[:min(len(got), 4)], twice[:min(len(twice), 4)])
		}
	}
}

// rowHash tells apart, under one seed, keys of every length up to 24 bytes
// (around its short keys' path of 8 to 16) that differ in one byte, in
// length alone (a zero byte appended, or one byte repeated), or by
// operator; and it depends on the seed.
func TestRowHash(t *testing.T) {
	seed := newHashSeed()
	seen := map[uint64]string{}
	add := func(op uint64, key []byte) {
		t.Helper()
		h := rowHash(seed, op, key)
		what := fmt.Sprintf("op %d key %x", op, key)
		if prev, ok := seen[h]; ok {
			t.Fatalf("%s and %s hash alike", prev, what)
		}
		seen[h] = what
	}
	base := []byte("0123456789abcdefghijklmn")
	for n := 0; n <= len(base); n++ {
		key := base[:n:n]
		add(1, key)
		add(2, key)
		for i := range n {
			k := bytes.Clone(key)
			k[i] ^= 0x80
			add(1, k)
		}
		add(1, append(bytes.Clone(key), 0)[:n+1])
	}
	for n := 0; n <= len(base); n++ {
		add(3, bytes.Repeat([]byte{'a'}, n)) // the same first and last eight bytes from 8 to 16
	}
	// Were the length XORed into the last word's top byte, these two
	// would collide under every seed.
	add(4, []byte("xccccccca"))
	add(4, []byte("xcccccccc"+string(rune('a'^9^10))))
	// Keys of two lengths with the same first and last words (x and x+x,
	// or one byte repeated) under two operators: were the length mixed in
	// as a constant times it, an operator could be chosen that cancels it
	// whatever the seed.
	var k, c uint64 = 0x9e3779b97f4a7c15, 0xc2b2ae3d27d4eb4f
	inv := k // k's inverse mod 2^64, by Newton's iteration
	for range 6 {
		inv *= 2 - k*inv
	}
	for n := 8; n <= 16; n++ {
		op := (1*k ^ 8*c ^ uint64(n)*c) * inv
		key := bytes.Repeat([]byte{'b'}, n)
		if rowHash(seed, op, key) == rowHash(seed, 1, key[:8]) && n != 8 {
			t.Errorf("op %#x key %q and op 1 key %q hash alike", op, key, key[:8])
		}
	}
	if rowHash(seed, 1, base[:12]) != rowHash(seed, 1, bytes.Clone(base[:12])) {
		t.Error("the same key hashes two ways under one seed")
	}
	other := newHashSeed()
	if rowHash(seed, 1, base[:12]) == rowHash(other, 1, base[:12]) && rowHash(seed, 1, base[:4]) == rowHash(other, 1, base[:4]) {
		t.Error("two seeds hash keys alike")
	}
}
