package savepoint

import "slices"

// radixMax is the most entries sortEnts sorts with radixSortEnts: up to
// there the entries (32 bytes each) stay in the CPU's cache between the
// passes. It covers the buckets of the external sort (a 16 MiB bucket of
// rows of 40 bytes holds about 400K, most hold far fewer).
var radixMax = 1 << 16

// radixSortEnts returns ents in the order cmp gives (entCmp: operator, key
// prefix words, then the rest of the key and the position), sorted through
// scratch (grown when shorter): a stable least-significant-digit radix sort
// on the bytes of (op, p0, p1), skipping the bytes that are the same in
// every entry (in a bucket of the external sort the operator, the key group
// and most of the slot), then each run of entries equal in all three
// sorted with cmp, which looks at the rest of their keys. A comparison
// sort calls cmp about 14 times an entry for 16K entries, and cmp is an
// indirect call; a radix pass costs a read and a write an entry.
func radixSortEnts(ents, scratch []sortEnt, cmp func(a, b sortEnt) int) []sortEnt {
	n := len(ents)
	if n < 2 {
		return ents
	}
	// Which bytes of each word differ somewhere.
	first := ents[0]
	var dOp, d0, d1 uint64
	for _, e := range ents[1:] {
		dOp |= e.op ^ first.op
		d0 |= e.p0 ^ first.p0
		d1 |= e.p1 ^ first.p1
	}
	if len(scratch) < n {
		scratch = make([]sortEnt, n)
	}
	src, dst := ents, scratch[:n]
	var count [256]int
	// Least significant first: p1's bytes, then p0's, then op's.
	for w, diff := range [3]uint64{d1, d0, dOp} {
		for shift := uint(0); shift < 64; shift += 8 {
			if diff>>shift&0xff == 0 {
				continue // the same in every entry
			}
			clear(count[:])
			for i := range src {
				count[byte(entWord(&src[i], w)>>shift)]++
			}
			at := 0
			for d, c := range count {
				count[d] = at
				at += c
			}
			for i := range src {
				d := byte(entWord(&src[i], w) >> shift)
				dst[count[d]] = src[i]
				count[d]++
			}
			src, dst = dst, src
		}
	}
	// Runs equal in (op, p0, p1): the rest of the key and the position.
	for i := 0; i < n; {
		j := i + 1
		for j < n && src[j].op == src[i].op && src[j].p0 == src[i].p0 && src[j].p1 == src[i].p1 {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(src[i:j], cmp)
		}
		i = j
	}
	return src
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
