package rules

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// The filter never rules out a listed key, and rules out most others.
func TestKeyFilter(t *testing.T) {
	const n = 10000
	f := newKeyFilter(n)
	for i := range n {
		f.addHash(keyHash("user-" + strconv.Itoa(i)))
	}
	for i := range n {
		if !f.mayHave([]byte("user-" + strconv.Itoa(i))) {
			t.Fatalf("listed key user-%d ruled out", i)
		}
	}
	through := 0
	for i := n; i < 11*n; i++ {
		if f.mayHave([]byte("user-" + strconv.Itoa(i))) {
			through++
		}
	}
	// About 1 in 700 at this size (26 bits a key); two bits in two words
	// let 1 in 180 through.
	if rate := float64(through) / (10 * n); rate > 0.004 {
		t.Errorf("%.3f%% of unlisted keys get through, want under 0.4%%", 100*rate)
	}
	var empty keyFilter
	if !empty.mayHave([]byte("x")) {
		t.Error("an unbuilt filter must let every key through")
	}
}

// MayMatchColumn lets through, in order, the keys of a column (from any
// row on) that MayMatch lets through, with their prefixes left out; an
// unbuilt filter lets all through.
func TestMayMatchColumn(t *testing.T) {
	p := &PurgeKeysSpec{}
	p.initIndex(1000)
	for i := range 1000 {
		p.add("user-"+strconv.Itoa(3*i), i+1)
	}
	var keys []byte
	offs := []int32{0}
	for i := range 3000 {
		keys = append(keys, "ab:user-"+strconv.Itoa(i)...)
		offs = append(offs, int32(len(keys)))
	}
	for _, c := range []struct {
		skip    int32
		from    int
		atLeast int // the listed keys among them
	}{{3, 0, 1000}, {3, 2400, 200}, {0, 0, 0}} {
		var want, got []int
		for t := c.from; t < 3000; t++ {
			if p.MayMatch(keys[offs[t]+c.skip : offs[t+1]]) {
				want = append(want, t)
			}
		}
		p.MayMatchColumn(keys, offs[c.from:], c.skip, func(t int) { got = append(got, c.from+t) })
		if !slices.Equal(got, want) || len(got) < c.atLeast {
			t.Errorf("skip %d from row %d: let through %d keys, want %d (at least %d)", c.skip, c.from, len(got), len(want), c.atLeast)
		}
	}
	var unbuilt PurgeKeysSpec
	n := 0
	unbuilt.MayMatchColumn(keys, offs, 3, func(int) { n++ })
	if n != 3000 {
		t.Errorf("an unbuilt filter let %d of 3000 keys through", n)
	}
}

// keyHash8, keyHash's path for 8-byte keys, is the hash its loops give
// every other length (hashLoop, written out here), and the column scan
// over 8-byte keys and others lets through what MayMatch does.
func TestKeyHash8(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := []uint64{0, 1, 0xFF, 1 << 63, ^uint64(0), 0x0102030405060708}
	for range 10000 {
		vals = append(vals, r.Uint64())
	}
	for _, v := range vals {
		if got, want := keyHash8(v), hashLoop(binary.LittleEndian.AppendUint64(nil, v)); got != want {
			t.Fatalf("keyHash8(%#x) = %#x, the loops over its bytes %#x", v, got, want)
		}
	}

	// int64 keys, every third listed, in a column with a 2-byte prefix
	// and a 9-byte key now and then.
	p := &PurgeKeysSpec{}
	p.initIndex(1000)
	for i := range 1000 {
		p.add(int64Key(int64(3*i)), i+1)
	}
	var keys []byte
	offs := []int32{0}
	for i := range 3000 {
		keys = append(keys, 0, 9)
		keys = binary.LittleEndian.AppendUint64(keys, uint64(i))
		if i%100 == 99 {
			keys = append(keys, 0)
		}
		offs = append(offs, int32(len(keys)))
	}
	var want, got []int
	for t := range 3000 {
		if p.MayMatch(keys[offs[t]+2 : offs[t+1]]) {
			want = append(want, t)
		}
	}
	p.MayMatchColumn(keys, offs, 2, func(t int) { got = append(got, t) })
	if !slices.Equal(got, want) || len(got) < 990 {
		t.Errorf("let through %d keys, want %d (the 990 listed among them)", len(got), len(want))
	}
}

// hashLoop is keyHash for keys whose length is not 8.
func hashLoop(k []byte) uint64 {
	h := uint64(len(k)) * 0x9e3779b97f4a7c15
	for ; len(k) >= 8; k = k[8:] {
		h = keyMix(h, binary.LittleEndian.Uint64(k))
	}
	var tail uint64
	for i := len(k) - 1; i >= 0; i-- {
		tail = tail<<8 | uint64(k[i])
	}
	return keyFinish(h ^ tail)
}

// hashLoop is keyHash's own loop for other lengths.
func TestHashLoop(t *testing.T) {
	for _, k := range []string{"", "a", "user-42", "customer-00000001", "123456789"} {
		if got, want := keyHash(k), hashLoop([]byte(k)); got != want {
			t.Errorf("keyHash(%q) = %#x, hashLoop %#x", k, got, want)
		}
	}
}
