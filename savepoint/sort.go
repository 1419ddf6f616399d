package savepoint

import (
	"bytes"
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

func keyPrefix(k []byte) (uint64, uint64) {
	if len(k) >= 16 {
		return binary.BigEndian.Uint64(k), binary.BigEndian.Uint64(k[8:])
	}
	var b [16]byte
	copy(b[:], k)
	return binary.BigEndian.Uint64(b[:]), binary.BigEndian.Uint64(b[8:])
}

// SortOrder returns the indexes of rows in canonical (op, key) order, stable:
// rows with equal (op, key) keep their stream order. It sorts in parallel on
// large inputs. at(i) returns the i-th row; n is the row count (at most
// 2^32-1).
func SortOrder(n int, at func(i int) (op uint64, key []byte)) []uint32 {
	order, _ := sortOrder(n, at, false)
	return order
}

// SortOrderTies is SortOrder that also returns, for each position of the
// order, whether its row has the same operator and first 16 key bytes as
// the row before it: only such rows can be duplicates, so a dedupe pass
// compares full keys for those alone (no random access for the others).
func SortOrderTies(n int, at func(i int) (op uint64, key []byte)) (order []uint32, tie []bool) {
	return sortOrder(n, at, true)
}

func sortOrder(n int, at func(i int) (op uint64, key []byte), ties bool) ([]uint32, []bool) {
	ents := make([]sortEnt, n)
	for i := range ents {
		op, k := at(i)
		p0, p1 := keyPrefix(k)
		ents[i] = sortEnt{op, p0, p1, uint32(i)}
	}
	cmp := func(a, b sortEnt) int {
		switch {
		case a.op != b.op:
			if a.op < b.op {
				return -1
			}
			return 1
		case a.p0 != b.p0:
			if a.p0 < b.p0 {
				return -1
			}
			return 1
		case a.p1 != b.p1:
			if a.p1 < b.p1 {
				return -1
			}
			return 1
		}
		_, ka := at(int(a.idx))
		_, kb := at(int(b.idx))
		if c := bytes.Compare(ka, kb); c != 0 {
			return c
		}
		if a.idx < b.idx {
			return -1
		}
		if a.idx > b.idx {
			return 1
		}
		return 0
	}
	parts := runtime.GOMAXPROCS(0)
	if n < 1<<16 || parts < 2 {
		slices.SortFunc(ents, cmp)
	} else {
		ents = parallelSort(ents, parts, cmp)
	}
	out := make([]uint32, n)
	var tie []bool
	if ties {
		tie = make([]bool, n)
	}
	for i, e := range ents {
		out[i] = e.idx
		if ties && i > 0 {
			p := ents[i-1]
			tie[i] = p.op == e.op && p.p0 == e.p0 && p.p1 == e.p1
		}
	}
	return out, tie
}

// parallelSort sorts parts chunks concurrently, then merges them pairwise.
func parallelSort(ents []sortEnt, parts int, cmp func(a, b sortEnt) int) []sortEnt {
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
	buf := make([]sortEnt, n)
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
