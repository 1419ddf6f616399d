package savepoint

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"runtime"
	"slices"
)

// sortEnt is a row's position with its sort key precomputed: the operator id
// and the first 16 key bytes big-endian (key-group byte, slot and separator
// take most of the first 8), so most comparisons are integer compares and
// only rows sharing all three look at the rest of the key.
type sortEnt struct {
	op, p0, p1 uint64
	idx        uint32
}

// keyPrefix returns the first 16 bytes of key k as two big-endian words,
// zero-padded. A key of 8 to 15 bytes (an int64 key behind a short slot)
// takes its second word from its last 8 bytes, shifted: copied into a
// zeroed array first, its bytes were stored one by one and loaded back as
// words, which the store buffer cannot forward (a quarter of sortOrder's
// time in the sort of 10M rows in clink's order).
func keyPrefix(k []byte) (uint64, uint64) {
	switch n := len(k); {
	case n >= 16:
		return binary.BigEndian.Uint64(k), binary.BigEndian.Uint64(k[8:])
	case n > 8:
		return binary.BigEndian.Uint64(k), binary.BigEndian.Uint64(k[n-8:]) << (8 * (16 - n))
	case n == 8:
		return binary.BigEndian.Uint64(k), 0
	}
	var w uint64
	for i, c := range k {
		w |= uint64(c) << (56 - 8*i)
	}
	return w, 0
}

// SortOrder returns the indexes of rows in canonical (op, key) order, stable:
// rows with equal (op, key) keep their stream order. It sorts in parallel on
// large inputs. at(i) returns the i-th row; n is the row count (at most
// 2^32-1).
func SortOrder(n int, at func(i int) (op uint64, key []byte)) []uint32 {
	order, _ := sortOrder(n, at, false, nil)
	return order
}

// SortOrderTies is SortOrder that also returns, for each position of the
// order, whether its row may have the same (op, key) as the row before it:
// true for every such row, false for every row whose operator or first 16
// key bytes differ from its predecessor's, so a dedupe pass compares full
// keys for the rows marked alone (no random access for the others).
func SortOrderTies(n int, at func(i int) (op uint64, key []byte)) (order []uint32, tie []bool) {
	return sortOrder(n, at, true, nil)
}

// sortOrder is SortOrder, with ties when asked; release, when not nil, is
// called between the passes over the rows of a large input (to drop mapped
// pages from the resident set).
func sortOrder(n int, at func(i int) (op uint64, key []byte), ties bool, release func()) ([]uint32, []bool) {
	return sortOrderEach(n, at, nil, ties, release)
}

// sortOrderEach is sortOrder for rows that each, when not nil, can also
// visit in stream order (Snapshot.EachKey: keys read in blocks with pread):
// the passes of a large input over every row go through it rather than
// through at, whose reads of a memory-mapped file fault page after page,
// once for every group of buckets.
func sortOrderEach(n int, at func(i int) (op uint64, key []byte), each func(fn func(i int, op uint64, key []byte) bool), ties bool, release func()) ([]uint32, []bool) {
	if n > sortGroupRows {
		return sortOrderGrouped(n, at, each, ties, release)
	}
	return new(sortScratch).sortOrder(n, at, ties)
}

// sortScratch holds the buffers of in-memory sorts that follow one another
// (the buckets of the external sort), so that each sort reuses the last
// one's instead of allocating about 70 bytes a row afresh: a 10M-row file
// in stream order allocated 540 MB in them, which set off dozens of the
// collector's cycles. The zero value is ready; the order and ties a sort
// returns are valid until the next sort through the same scratch.
type sortScratch struct {
	ents, tmp []sortEnt
	order     []uint32
	tie       []bool
}

// sortOrder is sortOrderEach for at most sortGroupRows rows, in the
// scratch's buffers.
func (sc *sortScratch) sortOrder(n int, at func(i int) (op uint64, key []byte), ties bool) ([]uint32, []bool) {
	sc.ents = slices.Grow(sc.ents[:0], n)[:n]
	ents := sc.ents
	for i := range ents {
		op, k := at(i)
		p0, p1 := keyPrefix(k)
		ents[i] = sortEnt{op, p0, p1, uint32(i)}
	}
	sc.tmp = slices.Grow(sc.tmp[:0], n)[:n]
	ents = sortEnts(ents, entCmp(at), sc.tmp)
	sc.order = slices.Grow(sc.order[:0], n)[:n]
	var tie []bool
	if ties {
		// fillOrder sets every tie but the first, which nothing sets.
		sc.tie = slices.Grow(sc.tie[:0], n)[:n]
		tie = sc.tie
	}
	fillOrder(sc.order, tie, ents)
	return sc.order, tie
}

// entCmp orders entries by operator, key and stream position, reading the
// keys of at when their first 16 bytes tie.
func entCmp(at func(i int) (op uint64, key []byte)) func(a, b sortEnt) int {
	return func(a, b sortEnt) int {
		switch {
		case a.op != b.op:
			return cmp.Compare(a.op, b.op)
		case a.p0 != b.p0:
			return cmp.Compare(a.p0, b.p0)
		case a.p1 != b.p1:
			return cmp.Compare(a.p1, b.p1)
		}
		_, ka := at(int(a.idx))
		_, kb := at(int(b.idx))
		if c := bytes.Compare(ka, kb); c != 0 {
			return c
		}
		return cmp.Compare(a.idx, b.idx)
	}
}

// sortEnts sorts ents, in parallel when there are many; the result may lie
// in scratch (grown when shorter than ents) instead.
func sortEnts(ents []sortEnt, cmp func(a, b sortEnt) int, scratch []sortEnt) []sortEnt {
	if len(ents) <= radixMax {
		return radixSortEnts(ents, scratch, cmp)
	}
	parts := runtime.GOMAXPROCS(0)
	if parts < 2 {
		slices.SortFunc(ents, cmp)
		return ents
	}
	return parallelSort(ents, parts, cmp, scratch)
}

// fillOrder stores the positions of sorted entries in out and, when tie
// is not nil, whether each shares its operator and key prefix with the one
// before.
func fillOrder(out []uint32, tie []bool, ents []sortEnt) {
	for i, e := range ents {
		out[i] = e.idx
		if tie != nil && i > 0 {
			p := ents[i-1]
			tie[i] = p.op == e.op && p.p0 == e.p0 && p.p1 == e.p1
		}
	}
}

// sortGroupRows is how many rows sortOrder sorts at once; larger inputs are
// sorted a group of buckets at a time (a variable so tests can lower it).
var sortGroupRows = 1 << 20

// sortOrderGrouped is sortOrder in bounded memory: entries of 32 bytes a
// row (and as much again to merge them) would be 64 bytes a row in all.
// A first pass counts the rows of each bucket, an operator and a first key
// byte (or an empty key), which are in canonical order as buckets go; then
// buckets are taken in groups of at most sortGroupRows rows (a larger
// bucket alone), and each group's entries are made, from a pass over the
// rows that picks the group's, sorted and stored at the group's place in
// the order. The bucket of each row is remembered (2 bytes a row) when
// there are few operators, so that the later passes read only the rows
// they pick (through at; through each, when given, every row is read, in
// blocks, which costs less than faulting in nearly every page of a mapped
// file). The order is the same as sorting every row at once. release is
// called every 256K rows of each pass through at, and after each pass: a
// group's rows lie all over the input, so each pass reads most of its
// pages, and keeping them would make the resident set the size of the
// columns read.
func sortOrderGrouped(n int, at func(i int) (op uint64, key []byte), each func(fn func(i int, op uint64, key []byte) bool), ties bool, release func()) ([]uint32, []bool) {
	if release == nil {
		release = func() {}
	}
	// visit calls fn with every row that want accepts (nil: every row).
	visit := func(want func(i int) bool, fn func(i int, op uint64, key []byte)) {
		if each != nil {
			each(func(i int, op uint64, key []byte) bool {
				if want == nil || want(i) {
					fn(i, op, key)
				}
				return true
			})
			release()
			return
		}
		for i := 0; i < n; i++ {
			if i&(1<<18-1) == 0 {
				release()
			}
			if want == nil || want(i) {
				op, k := at(i)
				fn(i, op, k)
			}
		}
		release()
	}
	// Operators get ids in order of appearance, then ranks by value.
	ids := map[uint64]int{}
	var ops []uint64
	lastOp, lastID := uint64(0), -1
	idOf := func(op uint64) int {
		if lastID >= 0 && op == lastOp {
			return lastID
		}
		id, ok := ids[op]
		if !ok {
			id = len(ops)
			ids[op] = id
			ops = append(ops, op)
		}
		lastOp, lastID = op, id
		return id
	}
	const perOp = 257
	bucketOf := func(id int, key []byte) int {
		if len(key) == 0 {
			return id * perOp
		}
		return id*perOp + 1 + int(key[0])
	}
	var counts []int
	small := make([]uint16, n) // the bucket of each row, while there are few
	visit(nil, func(i int, op uint64, k []byte) {
		b := bucketOf(idOf(op), k)
		if b >= len(counts) {
			counts = append(counts, make([]int, (len(ops))*perOp-len(counts))...)
		}
		counts[b]++
		if small != nil {
			if b > 0xffff {
				small = nil
			} else {
				small[i] = uint16(b)
			}
		}
	})
	// The buckets in canonical order.
	byValue := make([]int, len(ops)) // ids by operator value
	for i := range byValue {
		byValue[i] = i
	}
	slices.SortFunc(byValue, func(a, b int) int { return cmp.Compare(ops[a], ops[b]) })
	var buckets []int
	for _, id := range byValue {
		for k := 0; k < perOp; k++ {
			if counts[id*perOp+k] > 0 {
				buckets = append(buckets, id*perOp+k)
			}
		}
	}
	out := make([]uint32, n)
	var tie []bool
	if ties {
		tie = make([]bool, n)
	}
	compare := entCmp(at)
	inGroup := make([]bool, len(counts))
	var ents, scratch []sortEnt // reused by every group
	pos := 0
	for g := 0; g < len(buckets); {
		rows, end := 0, g
		for end < len(buckets) && (end == g || rows+counts[buckets[end]] <= sortGroupRows) {
			rows += counts[buckets[end]]
			inGroup[buckets[end]] = true
			end++
		}
		ents = slices.Grow(ents[:0], rows)
		var want func(i int) bool
		if small != nil {
			want = func(i int) bool { return inGroup[small[i]] }
		}
		visit(want, func(i int, op uint64, k []byte) {
			if small == nil && !inGroup[bucketOf(idOf(op), k)] {
				return
			}
			p0, p1 := keyPrefix(k)
			ents = append(ents, sortEnt{op, p0, p1, uint32(i)})
		})
		scratch = slices.Grow(scratch[:0], len(ents))[:len(ents)]
		sorted := sortEnts(ents, compare, scratch)
		var gtie []bool
		if tie != nil {
			gtie = tie[pos : pos+rows]
		}
		fillOrder(out[pos:pos+rows], gtie, sorted)
		pos += rows
		for _, b := range buckets[g:end] {
			inGroup[b] = false
		}
		g = end
	}
	return out, tie
}

// parallelSort sorts parts chunks concurrently, then merges them pairwise
// through buf (allocated when shorter than ents); the result lies in ents
// or in buf.
func parallelSort(ents []sortEnt, parts int, cmp func(a, b sortEnt) int, buf []sortEnt) []sortEnt {
	n := len(ents)
	var chunks [][]sortEnt
	for p := 0; p < parts; p++ {
		chunks = append(chunks, ents[p*n/parts:(p+1)*n/parts])
	}
	var sorts Faults // cmp reads keys of the input on prefix ties
	for _, c := range chunks {
		sorts.Go(func() { slices.SortFunc(c, cmp) })
	}
	sorts.Wait()
	if len(buf) < n {
		buf = make([]sortEnt, n)
	}
	for len(chunks) > 1 {
		var next [][]sortEnt
		off := 0
		var merges Faults
		for i := 0; i < len(chunks); i += 2 {
			if i+1 == len(chunks) {
				dst := buf[off : off+len(chunks[i])]
				copy(dst, chunks[i])
				next = append(next, dst)
				off += len(dst)
				continue
			}
			a, b := chunks[i], chunks[i+1]
			dst := buf[off : off+len(a)+len(b)]
			off += len(dst)
			next = append(next, dst)
			merges.Go(func() { mergeEnts(dst, a, b, cmp) })
		}
		merges.Wait()
		// The merged chunks live in buf; the old backing array becomes the
		// next round's buffer.
		oldBase := ents
		ents, buf = buf, oldBase
		chunks = next
	}
	return chunks[0]
}

func mergeEnts(dst, a, b []sortEnt, cmp func(a, b sortEnt) int) {
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if cmp(b[j], a[i]) < 0 {
			dst[k] = b[j]
			j++
		} else {
			dst[k] = a[i]
			i++
		}
		k++
	}
	k += copy(dst[k:], a[i:])
	copy(dst[k:], b[j:])
}

// CanonicalPositions returns the positions of src's rows in canonical order
// with duplicates of (op, key) resolved as clink's restore does: of rows
// with equal keys, kept in stream order, the survivor is decided pairwise by
// IncomingWins. dropped, when not nil, is called with the position of each
// row that loses. Only rows whose sort prefix equals their neighbour's are
// compared in full, so rows without duplicates are not read again. release,
// when not nil, is called now and then (long passes over memory maps use it
// to drop read pages from the resident set).
func CanonicalPositions(src ColumnSource, dropped func(pos uint32), release func()) []uint32 {
	order, tie := SortOrderTies(src.Len(), func(i int) (uint64, []byte) { return src.Op(i), src.Key(i) })
	return resolveDuplicates(src, order, tie, dropped, release)
}

// canonicalPositions is CanonicalPositions for at most sortGroupRows rows,
// sorted in sc's buffers: the positions it returns are valid until sc's
// next sort.
func canonicalPositions(src ColumnSource, dropped func(pos uint32), sc *sortScratch) []uint32 {
	order, tie := sc.sortOrder(src.Len(), func(i int) (uint64, []byte) { return src.Op(i), src.Key(i) }, true)
	return resolveDuplicates(src, order, tie, dropped, nil)
}

// resolveDuplicates compacts order, src's positions sorted with their ties
// (SortOrderTies), to the survivors of each (op, key) (see
// CanonicalPositions).
func resolveDuplicates(src ColumnSource, order []uint32, tie []bool, dropped func(pos uint32), release func()) []uint32 {
	if release != nil {
		release() // the sort read every key
	}
	out := order[:0] // compacted in place: out never overtakes the reading position
	for j, pos := range order {
		if release != nil && j&(1<<18-1) == 0 {
			release()
		}
		if j > 0 && tie[j] {
			held := out[len(out)-1]
			if src.Op(int(held)) == src.Op(int(pos)) && bytes.Equal(src.Key(int(held)), src.Key(int(pos))) {
				if IncomingWins(src.Row(int(held)), src.Row(int(pos))) {
					out[len(out)-1] = pos
					if dropped != nil {
						dropped(held)
					}
				} else if dropped != nil {
					dropped(pos)
				}
				continue
			}
		}
		out = append(out, pos)
	}
	return out
}
