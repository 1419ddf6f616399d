package savepoint

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/sptool/sptool/internal/testhook"
)

// modProbe lets through the user keys whose last byte is a multiple of m.
type modProbe struct{ m byte }

func (p modProbe) may(k []byte) bool { return len(k) > 0 && k[len(k)-1]%p.m == 0 }

func (p modProbe) MayMatchColumn(keys []byte, offs []int32, base, skip int32, fn func(t int)) {
	for t := 0; t+1 < len(offs); t++ {
		if p.may(keys[offs[t]-base+skip : offs[t+1]-base]) {
			fn(t)
		}
	}
}

// wordProbe is modProbe that also takes 8-byte user keys as words
// (WordProbe), and counts those it was asked about.
type wordProbe struct {
	modProbe
	asked *atomic.Int64
}

func (p wordProbe) MayMatchWords(words []uint64, fn func(t int)) {
	p.asked.Add(int64(len(words)))
	for t, w := range words {
		if p.may(binary.BigEndian.AppendUint64(nil, w)) {
			fn(t)
		}
	}
}

// probeRows returns n keyed rows in canonical order (two operators, two
// slots, 8-byte user keys) and, for probe p, the rows it lets through.
func probeRows(n int, p modProbe) (rows []Row, hits []int) {
	return probeRowsOdd(n, p, 0)
}

// probeRowsOdd is probeRows with every odd-th user key 9 bytes long
// (none when odd is 0).
func probeRowsOdd(n int, p modProbe, odd int) (rows []Row, hits []int) {
	for i := 0; len(rows) < n; i++ {
		op, slot := uint64(3+6*(i%2)), []string{"a", "bb"}[i/2%2]
		uk := binary.BigEndian.AppendUint64(nil, uint64(i/4))
		if odd > 0 && i%odd == odd-1 {
			uk = append([]byte{1}, uk...)
		}
		rows = append(rows, Row{Op: op, Key: EncodeKeyedKey([]byte(slot), uk), Value: []byte{byte(i)}})
	}
	slices.SortFunc(rows, func(a, b Row) int { return a.Compare(b) })
	for i, r := range rows {
		if p.may(ParseKey(r.Key).UserKey) {
			hits = append(hits, i)
		}
	}
	return rows, hits
}

// checkHits checks that h gives for rows [i, j) the rows of want in it
// and their stored keys.
func checkHits(t *testing.T, what string, h *KeyHits, rows []Row, want []int, i, j int) {
	t.Helper()
	got, keys, ends, ok := h.Hits(i, j)
	if !ok {
		t.Fatalf("%s: rows %d-%d not probed", what, i, j)
	}
	var w []int
	for _, x := range want {
		if i <= x && x < j {
			w = append(w, x)
		}
	}
	if !slices.Equal(got, w) {
		t.Fatalf("%s: rows %d-%d: hits %v, want %v", what, i, j, got, w)
	}
	for k, x := range got {
		if key := keys[ends[k]:ends[k+1]]; !bytes.Equal(key, rows[x].Key) {
			t.Fatalf("%s: row %d: key %x, want %x", what, x, key, rows[x].Key)
		}
	}
}

// TestKeyHits: the pass at open keeps exactly the rows a probe lets
// through, with their keys, in ranges and blocks of any size; Hits answers
// only for rows that were probed.
// A probe that takes words (WordProbe) is asked for them, and gets the
// same hits, unless the rows' user keys are not all 8 bytes long (every
// 500th or every 3rd 9 bytes): those blocks are asked by their keys.
func TestKeyHits(t *testing.T) {
	defer func(a, b int) { verifyMinRows, verifyChunk = a, b }(verifyMinRows, verifyChunk)
	for _, pc := range []struct {
		what  string
		words bool
		odd   int
	}{{"keys", false, 0}, {"words", true, 0}, {"words, 9-byte keys now and then", true, 500}, {"words, 9-byte keys often", true, 3}} {
		var asked atomic.Int64
		var p KeyProbe = modProbe{7}
		if pc.words {
			p = wordProbe{modProbe{7}, &asked}
		}
		rows, want := probeRowsOdd(20_000, modProbe{7}, pc.odd)
		for _, c := range []struct{ minRows, chunk int }{{1 << 16, 2048}, {3000, 100}, {5000, 7}} {
			asked.Store(0)
			checkKeyHits(t, fmt.Sprintf("%s: ranges of %d rows or more, blocks of %d", pc.what, c.minRows, c.chunk), p, rows, want, c.minRows, c.chunk)
			if n := asked.Load(); pc.words && (n == 0) != (pc.odd == 3 && c.chunk > 7) {
				t.Errorf("%s, blocks of %d: asked about %d words", pc.what, c.chunk, n)
			}
		}
	}
}

// checkKeyHits opens rows with probe p, in ranges of minRows or more and
// blocks of chunk rows, and checks its hits against want.
func checkKeyHits(t *testing.T, what string, p KeyProbe, rows []Row, want []int, minRows, chunk int) {
	t.Helper()
	{
		verifyMinRows, verifyChunk = minRows, chunk
		path := writeProbeFile(t, rows, []int{12_000, 8_000})
		slot := &ProbeSlot{}
		slot.Set(p)
		sp, err := Open(path, OpenOptions{Columnar: true, Probe: slot})
		if err != nil {
			t.Fatal(err)
		}
		snap := sp.Files[0].Snapshot
		h := snap.KeyHits()
		if h == nil || h.Probe != p {
			t.Fatalf("%s: hits %v", what, h)
		}
		// Each range's rows (a batch is cut into ranges of equal rows).
		for _, st := range h.stretches {
			checkHits(t, what, h, rows, want, st.from, st.to)
			checkHits(t, what, h, rows, want, st.from+5, st.to-3)
			checkHits(t, what, h, rows, want, st.from+5, st.from+5)
		}
		if n := len(h.stretches); minRows < 1<<16 && n < 3 {
			t.Fatalf("%s: %d ranges", what, n)
		}
		if _, _, _, ok := h.Hits(h.stretches[0].to-1, h.stretches[1].from+1); ok {
			t.Fatalf("%s: rows across two ranges answered", what)
		}
		// Rows across two ranges are probed from the second's first row.
		if got := h.ProbedFrom(h.stretches[0].to-1, h.stretches[1].from+1); got != h.stretches[1].from {
			t.Fatalf("%s: rows across two ranges probed from %d, want %d", what, got, h.stretches[1].from)
		}
		if _, _, _, ok := h.Hits(0, len(rows)+1); ok {
			t.Fatalf("%s: rows past the end answered", what)
		}
		sp.Close()
	}
}

// writeProbeFile writes rows to a new file in batches, as they are.
func writeProbeFile(t *testing.T, rows []Row, batches []int) string {
	t.Helper()
	_, path := writeMapped(t, rows, batches)
	return path
}

// TestKeyHitsNone: no hits without a probe, with a slot set to none or
// never set, when the probe lets through more than the pass keeps (one row
// in 16, or 4096), and for rows that do not strictly increase.
func TestKeyHitsNone(t *testing.T) {
	rows, _ := probeRows(20_000, modProbe{7})
	path := writeProbeFile(t, rows, nil)
	unsorted := slices.Clone(rows)
	unsorted[100], unsorted[101] = unsorted[101], unsorted[100]
	unsortedPath := writeProbeFile(t, unsorted, nil)
	set := func(p KeyProbe) *ProbeSlot {
		s := &ProbeSlot{}
		s.Set(p)
		return s
	}
	for _, c := range []struct {
		what string
		path string
		slot *ProbeSlot
	}{
		{"no slot", path, nil},
		{"a slot never set", path, &ProbeSlot{}},
		{"a slot set to none", path, set(nil)},
		{"a probe that lets every key through", path, set(modProbe{1})},
		{"a probe of words that lets every key through", path, set(wordProbe{modProbe{1}, new(atomic.Int64)})},
		{"unsorted rows", unsortedPath, set(modProbe{7})},
	} {
		sp, err := Open(c.path, OpenOptions{Columnar: true, Probe: c.slot})
		if err != nil {
			t.Fatal(err)
		}
		if h := sp.Files[0].Snapshot.KeyHits(); h != nil {
			t.Errorf("%s: %d stretches of hits", c.what, len(h.stretches))
		}
		sp.Close()
	}
}

// TestKeyHitsLate: a probe that comes when the pass at open is under way
// probes the blocks that follow; the rows before are not answered for.
func TestKeyHitsLate(t *testing.T) {
	defer func(a, b int) { verifyMinRows, verifyChunk = a, b }(verifyMinRows, verifyChunk)
	defer func() { testhook.ProbeChunk = nil }()
	verifyMinRows, verifyChunk = 1<<20, 1000 // one range, blocks of 1000 rows
	p := modProbe{5}
	rows, want := probeRows(20_000, p)
	path := writeProbeFile(t, rows, nil)
	slot := &ProbeSlot{}
	asked := 0
	testhook.ProbeChunk = func(s any) {
		if asked++; asked == 4 {
			s.(*ProbeSlot).Set(p)
		}
	}
	sp, err := Open(path, OpenOptions{Columnar: true, Probe: slot})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	h := sp.Files[0].Snapshot.KeyHits()
	if h == nil {
		t.Fatal("no hits")
	}
	checkHits(t, "late", h, rows, want, 3000, len(rows))
	if _, _, _, ok := h.Hits(2999, 4000); ok {
		t.Fatal("rows read before the probe came answered for")
	}
	for _, c := range []struct{ i, j, want int }{
		{0, len(rows), 3000}, {2999, 4000, 3000}, {3000, 4000, 3000}, {3500, 4000, 3500},
		{0, 2999, 2999}, {0, 3000, 3000}, {5, 5, 5}, {0, len(rows) + 1, len(rows) + 1},
	} {
		if got := h.ProbedFrom(c.i, c.j); got != c.want {
			t.Errorf("ProbedFrom(%d, %d) = %d, want %d", c.i, c.j, got, c.want)
		}
	}
	checkHits(t, "late, from", h, rows, want, h.ProbedFrom(100, 7000), 7000)
}
