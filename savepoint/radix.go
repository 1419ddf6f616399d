package savepoint

import (
	"math/bits"
	"slices"
)

// radixMax is the most entries sortEnts sorts with radixSortEnts: up to
// there the entries (32 bytes each) stay in the CPU's cache between the
// passes. It covers the buckets of the external sort (a 16 MiB bucket of
// rows of 40 bytes holds about 400K, most hold far fewer).
var radixMax = 1 << 16

// radixSortEnts returns ents in the order cmp gives (entCmp: operator, key
// prefix words, then the rest of the key and the position), sorted in
// place through scratch (grown when shorter): a most-significant-digit
// radix sort on the bytes of (op, p0, p1). Each group is split by the
// first byte that differs within it, which skips the bytes the same in
// every entry (in a bucket of the external sort the operator, the key
// group and most of the slot); groups of a few entries are sorted by
// insertion, and entries equal in all three words with cmp, which looks at
// the rest of their keys. A comparison sort calls cmp about 14 times an
// entry for 16K entries, and cmp is an indirect call; a least-significant-
// digit sort passes over every entry once for each byte that differs
// anywhere (about 15 in such a bucket: 2.5x slower), where two or three
// splits leave groups of a few entries here.
func radixSortEnts(ents, scratch []sortEnt, cmp func(a, b sortEnt) int) []sortEnt {
	if len(scratch) < len(ents) {
		scratch = make([]sortEnt, len(ents))
	}
	msdSort(ents, scratch[:len(ents)], cmp)
	return ents
}

// msdSmall is the largest group msdSort sorts by insertion.
const msdSmall = 24

// msdSort sorts ents in place (see radixSortEnts); scratch is as long.
func msdSort(ents, scratch []sortEnt, cmp func(a, b sortEnt) int) {
	n := len(ents)
	if n <= msdSmall {
		for i := 1; i < n; i++ {
			e, j := ents[i], i
			for ; j > 0 && entLess(e, ents[j-1], cmp); j-- {
				ents[j] = ents[j-1]
			}
			ents[j] = e
		}
		return
	}
	first := ents[0]
	var dOp, d0, d1 uint64
	for _, e := range ents[1:] {
		dOp |= e.op ^ first.op
		d0 |= e.p0 ^ first.p0
		d1 |= e.p1 ^ first.p1
	}
	// The most significant byte that differs: op's, then p0's, then p1's.
	w, diff := 2, dOp
	switch {
	case dOp != 0:
	case d0 != 0:
		w, diff = 1, d0
	case d1 != 0:
		w, diff = 0, d1
	default:
		slices.SortFunc(ents, cmp) // equal in all three: the rest of the keys
		return
	}
	shift := uint(63-bits.LeadingZeros64(diff)) &^ 7
	// next[d]: how many rows have digit d, then where the next of them
	// goes, then where they end. (The sums kept in a register: added up
	// in the array, each waited for the store before it, and the sort of
	// 10M rows in clink's order spent a quarter of msdSort there.)
	var next [256]int
	for i := range ents {
		next[byte(entWord(&ents[i], w)>>shift)]++
	}
	sum := 0
	for d := range len(next) {
		c := next[d]
		next[d], sum = sum, sum+c
	}
	for i := range ents {
		d := byte(entWord(&ents[i], w) >> shift)
		scratch[next[d]] = ents[i]
		next[d]++
	}
	copy(ents, scratch)
	lo := 0
	for d := range len(next) {
		if hi := next[d]; hi-lo > 1 {
			msdSort(ents[lo:hi], scratch[lo:hi], cmp)
		}
		lo = next[d]
	}
}

// entLess reports whether a sorts before b: by operator and key prefix
// words, then cmp.
func entLess(a, b sortEnt, cmp func(a, b sortEnt) int) bool {
	switch {
	case a.op != b.op:
		return a.op < b.op
	case a.p0 != b.p0:
		return a.p0 < b.p0
	case a.p1 != b.p1:
		return a.p1 < b.p1
	}
	return cmp(a, b) < 0
}

// entWord returns word w of e's sort key, least significant first: p1, p0,
// op.
func entWord(e *sortEnt, w int) uint64 {
	switch w {
	case 0:
		return e.p1
	case 1:
		return e.p0
	}
	return e.op
}
