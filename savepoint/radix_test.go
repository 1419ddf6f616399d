package savepoint

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// The radix sort gives exactly the order of a comparison sort with entCmp:
// over operators, key prefixes that tie in 16 bytes (longer keys, keys
// that differ only in length, equal keys), entries in and out of position
// order, and sizes around one entry.
func TestRadixSortEnts(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for trial := 0; trial < 300; trial++ {
		n := r.IntN(3000)
		if trial < 4 {
			n = trial
		}
		ops := []uint64{7, 42, 1 << 40, 3714747266114981297}[:1+r.IntN(4)]
		keys := make([][]byte, n)
		rowOps := make([]uint64, n)
		for i := range keys {
			rowOps[i] = ops[r.IntN(len(ops))]
			switch r.IntN(4) {
			case 0: // short, often equal or equal but for a trailing zero
				keys[i] = []byte{byte(r.IntN(3)), 'a', byte(r.IntN(2))}[:2+r.IntN(2)]
			case 1: // 16-byte prefix shared, longer keys
				keys[i] = append([]byte("0123456789abcdef"), byte(r.IntN(4)), byte(r.IntN(3)))
			default: // keyed rows: key group, slot, separator, 8-byte key
				keys[i] = append([]byte{byte(r.IntN(128))}, []byte("agg|")...)
				keys[i] = append(keys[i], byte(r.IntN(256)), byte(r.IntN(4)), 0, 0, 0, 0, 0, byte(r.IntN(2)))
			}
		}
		at := func(i int) (uint64, []byte) { return rowOps[i], keys[i] }
		ents := make([]sortEnt, n)
		for i := range ents {
			p0, p1 := keyPrefix(keys[i])
			ents[i] = sortEnt{rowOps[i], p0, p1, uint32(i)}
		}
		if trial%3 == 1 {
			r.Shuffle(n, func(i, j int) { ents[i], ents[j] = ents[j], ents[i] })
		}
		want := slices.Clone(ents)
		slices.SortFunc(want, entCmp(at))
		var scratch []sortEnt
		if trial%2 == 0 {
			scratch = make([]sortEnt, n+3)
		}
		got := radixSortEnts(slices.Clone(ents), scratch, entCmp(at))
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("trial %d (%d entries): radix order differs from the comparison sort's", trial, n)
		}
	}
}

// sortEnts takes the radix sort up to radixMax entries and the parallel
// comparison sort beyond: both give entCmp's order.
func TestSortEntsEitherSide(t *testing.T) {
	defer func(v int) { radixMax = v }(radixMax)
	r := rand.New(rand.NewPCG(9, 9))
	n := 5000
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte{byte(r.IntN(4)), 's', '|', byte(r.IntN(256)), byte(r.IntN(256))}
	}
	at := func(i int) (uint64, []byte) { return uint64(i % 3), keys[i] }
	var orders []string
	for _, max := range []int{n, 100} {
		radixMax = max
		order, _ := sortOrder(n, at, false, nil)
		orders = append(orders, fmt.Sprint(order))
	}
	if orders[0] != orders[1] {
		t.Error("the radix and the comparison sorts order the rows differently")
	}
}

// Sorts through one scratch, larger then smaller then larger, with and
// without ties and across the radix sort's limit, give the order and ties
// of sorts of their own: nothing of one sort shows through in the next
// (ties left set by a larger sort, entries of a longer one).
func TestSortScratchReuse(t *testing.T) {
	defer func(v int) { radixMax = v }(radixMax)
	radixMax = 1500 // the larger sorts go through parallelSort
	r := rand.New(rand.NewPCG(7, 11))
	var sc sortScratch
	for trial, n := range []int{2000, 3, 700, 0, 1, 2500, 40, 1200} {
		keys := make([][]byte, n)
		for i := range keys {
			// Few distinct keys in the larger sorts: many ties.
			keys[i] = []byte{byte(r.IntN(2)), 's', '|', byte(r.IntN(1 + n/50)), byte(r.IntN(4))}
		}
		at := func(i int) (uint64, []byte) { return uint64(i % 2), keys[i] }
		ties := trial%2 == 0
		wantOrder, wantTie := sortOrder(n, at, ties, nil)
		order, tie := sc.sortOrder(n, at, ties)
		if !slices.Equal(order, wantOrder) {
			t.Fatalf("sort %d (%d rows): order %v through the scratch, want %v", trial, n, order, wantOrder)
		}
		if !slices.Equal(tie, wantTie) {
			t.Fatalf("sort %d (%d rows): ties %v through the scratch, want %v", trial, n, tie, wantTie)
		}
	}
}

// BenchmarkRadixSortEnts sorts a bucket of the external sort: 16K keyed
// rows of one key group, four slots, random 8-byte keys.
func BenchmarkRadixSortEnts(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	slots := []string{"agg|", "count|", "window|", "timers|"}
	const n = 16 << 10
	keys := make([][]byte, n)
	ents := make([]sortEnt, n)
	for i := range keys {
		k := append([]byte{5}, slots[r.IntN(len(slots))]...)
		keys[i] = binary.BigEndian.AppendUint64(k, r.Uint64())
		p0, p1 := keyPrefix(keys[i])
		ents[i] = sortEnt{42, p0, p1, uint32(i)}
	}
	cmp := entCmp(func(i int) (uint64, []byte) { return 42, keys[i] })
	work, scratch := make([]sortEnt, n), make([]sortEnt, n)
	b.ResetTimer()
	for range b.N {
		copy(work, ents)
		radixSortEnts(work, scratch, cmp)
	}
}

// TestKeyPrefix: keyPrefix gives the first 16 bytes of keys of every
// length up to 20 as the big-endian words of the key zero-padded.
func TestKeyPrefix(t *testing.T) {
	key := []byte("\x05window|\x01\x02\x03\x04\x05\x06\x07\x08\xff\xfe")
	for n := 0; n <= len(key); n++ {
		var b [32]byte
		copy(b[:], key[:n])
		w0, w1 := keyPrefix(key[:n])
		if w0 != binary.BigEndian.Uint64(b[:]) || w1 != binary.BigEndian.Uint64(b[8:]) {
			t.Errorf("keyPrefix of %d bytes: %016x %016x, want %016x %016x", n, w0, w1, binary.BigEndian.Uint64(b[:]), binary.BigEndian.Uint64(b[8:]))
		}
	}
}
