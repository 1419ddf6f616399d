package export

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/sptool/sptool/savepoint"
)

// runHeap.less, which compares zero-padded 8-byte prefixes of the user keys
// first, orders runs as comparing the user keys, then the keys, in full:
// for keys shorter and longer than 8 bytes, with zero bytes (where padding
// and a real zero meet) and ties.
func TestRunHeapLess(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	var h runHeap
	mk := func() mergeRun {
		uk := make([]byte, r.IntN(12))
		for i := range uk {
			uk[i] = byte(r.IntN(3))
		}
		key := append([]byte{byte(r.IntN(2)), 'a', '|'}, uk...)
		var b [8]byte
		copy(b[:], uk)
		return mergeRun{head: savepoint.Row{Key: key}, uk: key[3:], ukp: binary.BigEndian.Uint64(b[:])}
	}
	for trial := 0; trial < 20000; trial++ {
		h.runs = append(h.runs[:0], mk(), mk())
		x, y := h.runs[0], h.runs[1]
		want := bytes.Compare(x.uk, y.uk)
		if want == 0 {
			want = bytes.Compare(x.head.Key, y.head.Key)
		}
		if got := h.less(0, 1); got != (want < 0) {
			t.Fatalf("user keys %x and %x (keys %x, %x): less %v, want %v", x.uk, y.uk, x.head.Key, y.head.Key, got, want < 0)
		}
	}
}

// replaceTop, after the top run's next row changes to any row (ties, equal
// sources, heaps of 1 and 2), leaves a heap: each run's row no less than
// its parent's, and the least row on top.
func TestReplaceTopKeepsHeap(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	row := func(m *mergeRun) {
		uk := make([]byte, r.IntN(10))
		for i := range uk {
			uk[i] = byte(r.IntN(3))
		}
		m.head = savepoint.Row{Key: append([]byte{byte(r.IntN(2)), 's', '|'}, uk...)}
		m.uk = uk
		var b [8]byte
		copy(b[:], uk)
		m.ukp = binary.BigEndian.Uint64(b[:])
		m.src = r.IntN(3)
	}
	for round := range 5000 {
		n := 1 + r.IntN(9)
		h := runHeap{runs: make([]mergeRun, n)}
		for k := range n {
			row(&h.runs[k])
			h.heap = append(h.heap, int32(k))
		}
		for i := n/2 - 1; i >= 0; i-- {
			h.down(i)
		}
		for range 20 {
			row(&h.runs[h.heap[0]])
			h.replaceTop()
			for i := 1; i < n; i++ {
				if h.less(h.heap[i], h.heap[(i-1)/2]) {
					t.Fatalf("round %d: run %d is less than its parent after replaceTop", round, h.heap[i])
				}
			}
		}
	}
}
