package rules

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/sptool/sptool/internal/testhook"
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
	// About 1 in 600 at this size (26 bits a key); two bits in two words
	// let 1 in 180 through.
	if rate := float64(through) / (10 * n); rate > 0.004 {
		t.Errorf("%.3f%% of unlisted keys get through, want under 0.4%%", 100*rate)
	}
	var empty keyFilter
	if !empty.mayHave([]byte("x")) {
		t.Error("an unbuilt filter must let every key through")
	}
}

// The filter over int64 keys (8 bytes, keyHash8's single multiply) rules
// out as many unlisted keys as over strings, whatever bits the keys
// differ in: consecutive, strided, in the high bytes only, or at random.
func TestKeyFilterInt64(t *testing.T) {
	const n = 10000
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		what string
		key  func(i int) uint64
	}{
		{"consecutive", func(i int) uint64 { return uint64(i) }},
		{"every 7th", func(i int) uint64 { return uint64(7 * i) }},
		{"high bytes", func(i int) uint64 { return uint64(i) << 40 }},
		{"top byte and low byte", func(i int) uint64 { return uint64(i%256)<<56 | uint64(i/256) }},
		{"negative", func(i int) uint64 { return uint64(-int64(i) - 1) }},
		{"random", func(int) uint64 { return r.Uint64() }},
	} {
		f := newKeyFilter(n)
		var unlisted []uint64
		for i := range 11 * n {
			k := c.key(i)
			if i < n {
				f.addHash(keyHash8(k))
			} else {
				unlisted = append(unlisted, k)
			}
		}
		for i := range n {
			if k := c.key(i); c.what != "random" && !f.mayHave(binary.LittleEndian.AppendUint64(nil, k)) {
				t.Fatalf("%s: listed key %#x ruled out", c.what, k)
			}
		}
		through := 0
		for _, k := range unlisted {
			if f.mayHave(binary.LittleEndian.AppendUint64(nil, k)) {
				through++
			}
		}
		if rate := float64(through) / float64(len(unlisted)); rate > 0.004 {
			t.Errorf("%s: %.3f%% of unlisted keys get through, want under 0.4%%", c.what, 100*rate)
		}
	}
}

// MayMatchColumn lets through, in order, the keys of a column (from any
// row on) that MayMatch lets through, with their prefixes left out; an
// unbuilt filter lets all through.
func TestMayMatchColumn(t *testing.T) {
	p := listOf(1000, func(i int) string { return "user-" + strconv.Itoa(3*i) })
	var keys []byte
	offs := []int32{0}
	for i := range 3000 {
		keys = append(keys, "ab:user-"+strconv.Itoa(i)...)
		offs = append(offs, int32(len(keys)))
	}
	for _, c := range []struct {
		skip    int32
		from    int
		atLeast int  // the listed keys among them
		based   bool // keys given from row from's on, offsets counted from there
	}{{3, 0, 1000, false}, {3, 2400, 200, false}, {0, 0, 0, false}, {3, 2400, 200, true}, {0, 1, 0, true}} {
		var want, got []int
		for t := c.from; t < 3000; t++ {
			if p.MayMatch(keys[offs[t]+c.skip : offs[t+1]]) {
				want = append(want, t)
			}
		}
		col, base := keys, int32(0)
		if c.based {
			col, base = keys[offs[c.from]:], offs[c.from]
		}
		p.MayMatchColumn(col, offs[c.from:], base, c.skip, func(t int) { got = append(got, c.from+t) })
		if !slices.Equal(got, want) || len(got) < c.atLeast {
			t.Errorf("skip %d from row %d (based %v): let through %d keys, want %d (at least %d)", c.skip, c.from, c.based, len(got), len(want), c.atLeast)
		}
	}
	var unbuilt PurgeKeysSpec
	n := 0
	unbuilt.MayMatchColumn(keys, offs, 0, 3, func(int) { n++ })
	if n != 3000 {
		t.Errorf("an unbuilt filter let %d of 3000 keys through", n)
	}
}

// keyHash takes keyHash8 for 8-byte keys, as []byte and as string, and
// the column scan over 8-byte keys and others lets through what MayMatch
// does.
func TestKeyHash8(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := []uint64{0, 1, 0xFF, 1 << 63, ^uint64(0), 0x0102030405060708}
	for range 10000 {
		vals = append(vals, r.Uint64())
	}
	for _, v := range vals {
		k := binary.LittleEndian.AppendUint64(nil, v)
		if got, want := keyHash(k), keyHash8(v); got != want {
			t.Fatalf("keyHash(%x) = %#x, keyHash8 %#x", k, got, want)
		}
		if got, want := keyHash(string(k)), keyHash8(v); got != want {
			t.Fatalf("keyHash(%q) = %#x, keyHash8 %#x", k, got, want)
		}
	}

	// int64 keys, every third listed, in a column with a 2-byte prefix
	// and a 9-byte key now and then.
	p := listOf(1000, func(i int) string { return int64Key(int64(3 * i)) })
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
	p.MayMatchColumn(keys, offs, 0, 2, func(t int) { got = append(got, t) })
	if !slices.Equal(got, want) || len(got) < 990 {
		t.Errorf("let through %d keys, want %d (the 990 listed among them)", len(got), len(want))
	}
	// The same column given from key 1000 on, its offsets counted from
	// there: the same keys let through.
	got = got[:0]
	p.MayMatchColumn(keys[offs[1000]:], offs[1000:], offs[1000], 2, func(t int) { got = append(got, 1000+t) })
	if from, _ := slices.BinarySearch(want, 1000); !slices.Equal(got, want[from:]) {
		t.Errorf("from key 1000: let through %d keys, want %d", len(got), len(want)-from)
	}
	// scan8 asks about the 8-byte keys up to the first 9-byte one (key 99,
	// then 199 from key 100, with the offsets counted from there), and
	// stops once it has found 64 hits (a list of every key).
	var hits [64]int32
	for _, c := range []struct {
		from int
		base int32
	}{{0, 0}, {100, offs[100]}} {
		n, x := p.filter.scan8(keys[c.base:], offs[c.from:], c.base, 2, &hits)
		if n != 99 || x < 33 {
			t.Errorf("scan8 from key %d (base %d) asked about %d keys with %d hits, want 99 and at least 33", c.from, c.base, n, x)
		}
		for _, h := range hits[:x] {
			if k := c.from + int(h); !p.MayMatch(keys[offs[k]+2 : offs[k+1]]) {
				t.Errorf("scan8 from key %d: hit %d not let through by MayMatch", c.from, k)
			}
		}
	}
	all := listOf(3000, func(i int) string { return int64Key(int64(i)) })
	if n, x := all.filter.scan8(keys, offs[200:], 0, 2, &hits); n != 64 || x != 64 || hits[63] != 63 {
		t.Errorf("scan8 with every key listed: asked about %d keys with %d hits (last %d), want 64, 64 and 63", n, x, hits[63])
	}
}

// listOf returns a purge list of the n keys key(0), ..., key(n-1), the
// key on line i+1, with its filter and index built.
func listOf(n int, key func(i int) string) *PurgeKeysSpec {
	p := &PurgeKeysSpec{}
	p.initFilter(n)
	for i := range n {
		p.add(key(i), i+1)
	}
	p.buildIndex()
	return p
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

// hashLoop is keyHash's own loop for lengths other than 8.
func TestHashLoop(t *testing.T) {
	for _, k := range []string{"", "a", "user-42", "customer-00000001", "123456789", "1234567"} {
		if got, want := keyHash(k), hashLoop([]byte(k)); got != want {
			t.Errorf("keyHash(%q) = %#x, hashLoop %#x", k, got, want)
		}
	}
}

// BenchmarkMayMatchColumn asks a filter of 100,000 int64 keys about a
// block of 2048 8-byte user keys behind a 12-byte prefix, 1 in 100 of
// them listed: a purge's scan of a savepoint, per key (ns/key).
func BenchmarkMayMatchColumn(b *testing.B) {
	p := listOf(100_000, func(i int) string { return int64Key(int64(7 * i)) })
	var keys []byte
	offs := []int32{0}
	for i := range 2048 {
		v := uint64(1<<40 + 3*i)
		if i%100 == 0 {
			v = uint64(7 * i)
		}
		keys = binary.LittleEndian.AppendUint64(append(keys, "prefix-bytes"...), v)
		offs = append(offs, int32(len(keys)))
	}
	hits := 0
	for b.Loop() {
		p.MayMatchColumn(keys, offs, 0, 12, func(int) { hits++ })
	}
	if hits == 0 {
		b.Fatal("no key let through")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*2048), "ns/key")
}

// MayMatchWords lets through, in order, the 8-byte keys given as words
// that MayMatch lets through, in blocks of hits of any number: a list of
// every third key, of every key, and an unbuilt filter.
func TestMayMatchWords(t *testing.T) {
	var words []uint64
	for i := range 10_000 {
		words = append(words, binary.BigEndian.Uint64(binary.LittleEndian.AppendUint64(nil, uint64(i))))
	}
	for _, c := range []struct {
		what    string
		p       *PurgeKeysSpec
		atLeast int
	}{
		{"every third key", listOf(3334, func(i int) string { return int64Key(int64(3 * i)) }), 3334},
		{"every key", listOf(10_000, func(i int) string { return int64Key(int64(i)) }), 10_000},
		{"an unbuilt filter", &PurgeKeysSpec{}, 10_000},
	} {
		var want, got []int
		for i, w := range words {
			if c.p.MayMatch(binary.BigEndian.AppendUint64(nil, w)) {
				want = append(want, i)
			}
		}
		c.p.MayMatchWords(words, func(t int) { got = append(got, t) })
		if !slices.Equal(got, want) || len(got) < c.atLeast {
			t.Errorf("%s: let through %d keys, want %d (at least %d)", c.what, len(got), len(want), c.atLeast)
		}
	}
}

// A list of one or two 8-byte keys, from a keys file (int64 or string) or
// inline, is asked by comparing keys (the exact set): MayMatch and
// MayMatchWords let through exactly the listed keys. A third key, or a key
// of another length, leaves the filter to answer, which still lets every
// listed key through.
func TestExactSmallLists(t *testing.T) {
	probe := func(p *PurgeKeysSpec, key []byte) (may, word bool) {
		may = p.MayMatch(key)
		if len(key) == 8 {
			p.MayMatchWords([]uint64{binary.BigEndian.Uint64(key)}, func(int) { word = true })
		} else {
			word = may
		}
		return may, word
	}
	for _, c := range []struct {
		name, yaml string
		files      map[string]string
		listed     []string // as encoded
		exact      bool
	}{
		{"one int64 key", `{keys_file: k.txt, codec: int64}`, map[string]string{"k.txt": "7\n"}, []string{int64Key(7)}, true},
		{"two int64 keys", `{keys_file: k.txt, codec: int64}`, map[string]string{"k.txt": "-2\n7\n"}, []string{int64Key(-2), int64Key(7)}, true},
		{"one int64 key twice", `{keys_file: k.txt, codec: int64}`, map[string]string{"k.txt": "7\n7\n"}, []string{int64Key(7)}, true},
		{"three int64 keys", `{keys_file: k.txt, codec: int64}`, map[string]string{"k.txt": "1\n2\n3\n"}, []string{int64Key(1), int64Key(2), int64Key(3)}, false},
		{"string keys of 8 bytes", `{keys_file: k.txt}`, map[string]string{"k.txt": "user-001\nuser-002\n"}, []string{"user-001", "user-002"}, true},
		{"a string key of 7 bytes", `{keys_file: k.txt}`, map[string]string{"k.txt": "user-001\nuser-02\n"}, []string{"user-001", "user-02"}, false},
		{"inline", `{keys: ["user-001", "user-002"]}`, nil, []string{"user-001", "user-002"}, true},
		{"inline int64", `{keys: [7, -2], codec: int64}`, nil, []string{int64Key(7), int64Key(-2)}, true},
	} {
		dir := t.TempDir()
		for name, text := range c.files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		set, err := ParseWithOptions("r.yaml", []byte("version: 1\nrules:\n  - purge_keys: "+c.yaml+"\n"), ParseOptions{Dir: dir})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		p := set.Rules[0].PurgeKeys
		if got := p.filter.nexact > 0; got != c.exact {
			t.Fatalf("%s: exact set %v (nexact %d), want %v", c.name, got, p.filter.nexact, c.exact)
		}
		for _, k := range c.listed {
			if may, word := probe(p, []byte(k)); !may || !word {
				t.Errorf("%s: listed key %q not let through (MayMatch %v, MayMatchWords %v)", c.name, k, may, word)
			}
		}
		if c.exact {
			for _, k := range []string{int64Key(8), int64Key(-7), "user-003", "user-00", "user-0011", ""} {
				if may, word := probe(p, []byte(k)); may || word {
					t.Errorf("%s: key %q, not listed, let through (MayMatch %v, MayMatchWords %v)", c.name, k, may, word)
				}
			}
			// The self-check asks the exact set too: a set that lost its
			// keys is an internal error, not a purge that leaves their rows.
			for i := range p.filter.exact {
				p.filter.exact[i] ^= 1
			}
			if _, ok := p.selfCheck(); ok {
				t.Errorf("%s: selfCheck passed an exact set that lost its keys", c.name)
			}
		}
	}
}

// BenchmarkMayMatchWords is BenchmarkMayMatchColumn for the same keys
// given as words (savepoint.WordProbe).
func BenchmarkMayMatchWords(b *testing.B) {
	p := listOf(100_000, func(i int) string { return int64Key(int64(7 * i)) })
	var words []uint64
	for i := range 2048 {
		v := uint64(1<<40 + 3*i)
		if i%100 == 0 {
			v = uint64(7 * i)
		}
		words = append(words, binary.BigEndian.Uint64(binary.LittleEndian.AppendUint64(nil, v)))
	}
	hits := 0
	for b.Loop() {
		p.MayMatchWords(words, func(int) { hits++ })
	}
	if hits == 0 {
		b.Fatal("no key let through")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*2048), "ns/key")
}

// parseInt64 agrees with strconv.ParseInt(s, 10, 64) on every input: the
// limits, signs, 18 and 19 digits, and what is not a decimal integer.
func TestParseInt64(t *testing.T) {
	for _, s := range []string{
		"0", "-0", "+0", "7", "-7", "+7", "007", "123456789012345678", "-123456789012345678",
		"999999999999999999", "1000000000000000000", "9223372036854775807", "9223372036854775808",
		"-9223372036854775808", "-9223372036854775809", "99999999999999999999",
		"", "+", "-", "--1", "+-1", "1_000", "0x10", "1e3", " 1", "1 ", "١", "12a", "a12",
	} {
		checkParseInt64(t, s)
	}
}

func checkParseInt64(t *testing.T, s string) {
	t.Helper()
	want, err := strconv.ParseInt(s, 10, 64)
	got, ok := parseInt64(s)
	if ok != (err == nil) || ok && got != want {
		t.Fatalf("parseInt64(%q) = %d, %v; strconv: %d, %v", s, got, ok, want, err)
	}
}

// FuzzParseInt64: parseInt64, the keys files' fast path, agrees with
// strconv on any input.
func FuzzParseInt64(f *testing.F) {
	for _, s := range []string{"0", "-42", "+9223372036854775807", "-9223372036854775808", "12345678901234567890", "1x"} {
		f.Add(s)
	}
	f.Fuzz(checkParseInt64)
}

// TestPurgeSelfCheck: a purge list whose filter would miss its keys (the
// filter cleared here, standing in for a fault) fails the parse, naming
// the key: the purge would leave the key's rows, and the audit, which asks
// the same lookup, would not see them. A sound list passes, over several
// of the check's blocks of keys.
func TestPurgeSelfCheck(t *testing.T) {
	var b strings.Builder
	for i := range 150000 {
		fmt.Fprintf(&b, "%d\n", i*7)
	}
	files := map[string]string{"keys.txt": b.String()}
	opts := ParseOptions{ReadFile: func(name string) ([]byte, error) { return []byte(files[filepath.Base(name)]), nil }}
	for _, src := range []string{"  - purge_keys: {keys: [u1, u2]}\n", "  - purge_keys: {keys_file: keys.txt, codec: int64}\n"} {
		if _, err := ParseWithOptions("r.yaml", []byte("version: 1\nrules:\n"+src), opts); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
	}
	testhook.PurgeFilter = func(words []uint64) { clear(words) }
	defer func() { testhook.PurgeFilter = nil }()
	_, err := ParseWithOptions("r.yaml", []byte("version: 1\nrules:\n  - purge_keys: {keys: [u1, u2]}\n"), opts)
	if err == nil || !strings.Contains(err.Error(), `internal error: the purge's key filter or index does not find listed key "u1" (line 1)`) {
		t.Fatalf("err = %v, want the self-check's error naming u1", err)
	}
}

// TestPurgeSelfCheckBlocks: the check finds a key its filter misses in a
// later block of keys, whether it reads the keys where they are (an int64
// keys file's, end to end in one buffer, its repeats moved out of the
// way) or copies them into a column (a string keys file's).
func TestPurgeSelfCheckBlocks(t *testing.T) {
	const n, bad = 150_000, 140_000 // bad: in the check's third block
	const block = 1 << 16           // as selfCheck's
	for _, tc := range []struct {
		name, codec string
		line        func(i int) string
		wantView    bool
	}{
		{"int64", "int64", func(i int) string { return strconv.Itoa(i * 7) }, true},
		{"int64 with a repeat", "int64", func(i int) string {
			if i == 135_000 {
				i-- // a repeat: its encoding is left out of Keys
			}
			return strconv.Itoa(i * 7)
		}, true},
		{"string", "string", func(i int) string { return "user-" + strconv.Itoa(i) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			for i := range n {
				b.WriteString(tc.line(i) + "\n")
			}
			opts := ParseOptions{ReadFile: func(string) ([]byte, error) { return []byte(b.String()), nil }}
			set, err := ParseWithOptions("r.yaml", []byte("version: 1\nrules:\n  - purge_keys: {keys_file: keys.txt, codec: "+tc.codec+"}\n"), opts)
			if err != nil {
				t.Fatal(err)
			}
			p := set.Rules[0].PurgeKeys
			lo := bad / block * block
			_, size, joined := p.column(lo, block)
			if _, viewed := p.inEncoded(lo, size, joined); viewed != tc.wantView {
				t.Fatalf("keys read in place: %v, want %v", viewed, tc.wantView)
			}
			// Key bad changed where it lies: the filter and the index were
			// built without it.
			k := unsafe.Slice(unsafe.StringData(p.Keys[bad]), len(p.Keys[bad]))
			k[0] ^= 0x5a
			k[len(k)-1] ^= 0xa5
			if i, ok := p.selfCheck(); ok || i != bad {
				t.Fatalf("selfCheck = %d, %v; want %d, false", i, ok, bad)
			}
		})
	}
}

// BenchmarkSelfCheck checks a list of 100,000 int64 keys (its filter and
// index find every key), as loading a purge's keys file does.
func BenchmarkSelfCheck(b *testing.B) {
	p := listOf(100_000, func(i int) string { return int64Key(int64(7 * i)) })
	for b.Loop() {
		if i, ok := p.selfCheck(); !ok {
			b.Fatalf("key %d missed", i)
		}
	}
}
