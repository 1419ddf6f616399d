package rules

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The index finds every listed key at its place in Keys, with a filter
// sized for far fewer keys; it finds no other key; repeats are counted, not
// added; and a lookup allocates nothing.
func TestKeyIndex(t *testing.T) {
	var spec PurgeKeysSpec
	spec.initFilter(4)
	const n = 5000
	for i := range n {
		spec.add("user-"+strconv.Itoa(i), i+1)
	}
	for i := 0; i < n; i += 7 {
		spec.add("user-"+strconv.Itoa(i), n+i)
	}
	spec.buildIndex()
	if spec.Len() != n || spec.Duplicates != (n+6)/7 {
		t.Fatalf("%d keys, %d duplicates; want %d, %d", spec.Len(), spec.Duplicates, n, (n+6)/7)
	}
	for i := range n {
		if j, ok := spec.Lookup([]byte("user-" + strconv.Itoa(i))); !ok || j != i || spec.Lines[j] != i+1 {
			t.Fatalf("user-%d: index %d, %v; want %d", i, j, ok, i)
		}
	}
	for i := n; i < 3*n; i++ {
		if j, ok := spec.Lookup([]byte("user-" + strconv.Itoa(i))); ok {
			t.Fatalf("unlisted user-%d found at %d", i, j)
		}
	}
	if _, ok := spec.Lookup(nil); ok {
		t.Fatal("the empty key found")
	}
	key := []byte("user-42")
	if a := testing.AllocsPerRun(100, func() { spec.Lookup(key) }); a != 0 {
		t.Errorf("Lookup allocates %v times", a)
	}
	var empty PurgeKeysSpec
	if _, ok := empty.Lookup(key); ok {
		t.Error("a spec without keys found one")
	}
}

// PrefetchLookups changes nothing: the index and every lookup are as they
// were, for listed, unlisted and empty keys, over more than one batch; it
// does nothing for a spec without keys, and allocates nothing.
func TestPrefetchLookups(t *testing.T) {
	spec := listOf(100, func(i int) string { return "user-" + strconv.Itoa(i) })
	var asked [][]byte
	for i := 50; i < 50+3*prefetchBatch; i++ {
		asked = append(asked, []byte("user-"+strconv.Itoa(i)))
	}
	asked = append(asked, nil, []byte{})
	type found struct {
		i  int
		ok bool
	}
	var before []found
	for _, k := range asked {
		i, ok := spec.Lookup(k)
		before = append(before, found{i, ok})
	}
	slots := slices.Clone(spec.index.slots)
	key := func(i int) []byte { return asked[i] }
	spec.PrefetchLookups(len(asked), key)
	spec.PrefetchLookups(0, key)
	if !slices.Equal(slots, spec.index.slots) {
		t.Fatal("PrefetchLookups changed the index")
	}
	for x, k := range asked {
		if i, ok := spec.Lookup(k); (found{i, ok}) != before[x] {
			t.Errorf("%q: Lookup gives %d, %v after PrefetchLookups; %d, %v before", k, i, ok, before[x].i, before[x].ok)
		}
	}
	if a := testing.AllocsPerRun(10, func() { spec.PrefetchLookups(len(asked), key) }); a != 0 {
		t.Errorf("PrefetchLookups allocates %v times", a)
	}
	var empty PurgeKeysSpec
	empty.PrefetchLookups(len(asked), key)
}

// An index built a batch at a time (as buildIndex does) gives what keys
// added one at a time to a map give: the same list in the same order,
// lines, duplicates and lookups, across batch boundaries and with a batch
// not full at the end.
func TestBuildIndex(t *testing.T) {
	var spec PurgeKeysSpec
	spec.initFilter(10) // fewer than the keys: the index is sized by them
	n := 3*prefetchBatch + 5
	first := map[string]int{}
	var wantKeys []string
	var wantLines []int
	for i := range n {
		k := "k" + strconv.Itoa(i%(n-40)) // the last 40 repeat earlier ones
		spec.add(k, i+1)
		if _, ok := first[k]; !ok {
			first[k] = len(wantKeys)
			wantKeys, wantLines = append(wantKeys, k), append(wantLines, i+1)
		}
	}
	spec.buildIndex()
	if !slices.Equal(spec.Keys, wantKeys) || !slices.Equal(spec.Lines, wantLines) || spec.Duplicates != 40 {
		t.Fatalf("%d keys, %d duplicates; want %d, 40", spec.Len(), spec.Duplicates, len(wantKeys))
	}
	for k, i := range first {
		if j, ok := spec.Lookup([]byte(k)); !ok || j != i {
			t.Fatalf("%q: %d, %v; want %d", k, j, ok, i)
		}
	}
	if _, ok := spec.Lookup([]byte("k-absent")); ok {
		t.Fatal("an absent key found")
	}
}

// TestIndexInt64Words: an int64 keys file's keys, their repeats dropped,
// lie end to end at the start of their buffer, where the index compares
// them; each is found at its place in Keys, a key one byte off is not,
// and neither is a key of another length.
func TestIndexInt64Words(t *testing.T) {
	var b strings.Builder
	var want []int64
	seen := map[int64]bool{}
	for i := range 5000 {
		v := int64(i*7919%3001) - 1500 // negatives too
		if i%4 == 3 {
			v = want[i/8] // a repeat among the first of each
		}
		fmt.Fprintln(&b, v)
		if !seen[v] {
			seen[v] = true
			want = append(want, v)
		}
	}
	opts := ParseOptions{ReadFile: func(string) ([]byte, error) { return []byte(b.String()), nil }}
	set, err := ParseWithOptions("r.yaml", []byte("version: 1\nrules:\n  - purge_keys: {keys_file: keys.txt, codec: int64}\n"), opts)
	if err != nil {
		t.Fatal(err)
	}
	p := set.Rules[0].PurgeKeys
	if p.index.words == nil || len(p.Keys) != len(want) || p.Duplicates != 5000-len(want) {
		t.Fatalf("%d keys, %d repeats, words kept: %v; want %d keys", len(p.Keys), p.Duplicates, p.index.words != nil, len(want))
	}
	for i, v := range want {
		k := int64Key(v)
		if p.Keys[i] != k || string(p.index.words[8*i:8*i+8]) != k {
			t.Fatalf("key %d: %x, at %x; want %x", i, p.Keys[i], p.index.words[8*i:8*i+8], k)
		}
		if j, ok := p.Lookup([]byte(k)); !ok || j != i {
			t.Fatalf("%d: found at %d, %v; want %d", v, j, ok, i)
		}
		if _, ok := p.Lookup([]byte(int64Key(v + 1<<40))); ok {
			t.Fatalf("%d: found", v+1<<40)
		}
		if _, ok := p.Lookup([]byte(k + "x")); ok {
			t.Fatalf("%d and a byte more: found", v)
		}
	}
}

// KeysReady gets the rule file's purge lists once, in rule order, with
// their filters built and before their keys are indexed; goroutines may
// ask the filters while the parse goes on; the Set holds the same lists,
// indexed, their repeats counted. It is not called for a file without
// purge lists, nor for one with an error, even in a rule after them.
func TestKeysReady(t *testing.T) {
	const n = 20_000
	var file strings.Builder
	for i := range n {
		fmt.Fprintf(&file, "%d\n", 3*i)
	}
	file.WriteString("0\n3\n") // two repeats
	opts := testOpts()
	opts.ReadFile = func(string) ([]byte, error) { return []byte(file.String()), nil }
	parse := func(src string) (*Set, [][]*PurgeKeysSpec, error) {
		var calls [][]*PurgeKeysSpec
		var wg sync.WaitGroup
		o := opts
		o.KeysReady = func(lists []*PurgeKeysSpec) {
			calls = append(calls, lists)
			for _, l := range lists {
				if l.Len() != 0 && l.KeysFile != "" {
					t.Errorf("a keys file's list holds %d keys when its filter is handed over", l.Len())
				}
				// Ask the filter from another goroutine while the parse
				// goes on (the race detector watches).
				wg.Add(1)
				go func() {
					defer wg.Done()
					// A listed key, then one that is not.
					keys, offs := []byte(int64Key(3*(n-1))+int64Key(1)), []int32{0, 8, 16}
					if l.Codec == "string" {
						keys, offs = []byte("bzz"), []int32{0, 1, 3}
					}
					hit := 0
					for range 200 {
						l.MayMatchColumn(keys, offs, 0, 0, func(int) { hit++ })
					}
					if hit < 200 {
						t.Errorf("a listed key ruled out by the filter handed over (%d of 200)", hit)
					}
				}()
			}
		}
		set, err := ParseWithOptions("r.yaml", []byte(src), o)
		wg.Wait()
		return set, calls, err
	}
	src := "version: 1\nrules:\n" +
		"  - purge_keys: {keys_file: k.txt, codec: int64}\n" +
		"  - drop: 'slot == \"x\"'\n" +
		"  - purge_keys: {keys: [a, b, a]}\n"
	set, calls, err := parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || len(calls[0]) != 2 || calls[0][0] != set.Rules[0].PurgeKeys || calls[0][1] != set.Rules[2].PurgeKeys {
		t.Fatalf("KeysReady calls %v, want one with the lists of rules 1 and 3", calls)
	}
	f, in := set.Rules[0].PurgeKeys, set.Rules[2].PurgeKeys
	if f.Len() != n || f.Duplicates != 2 || in.Len() != 2 || in.Duplicates != 1 {
		t.Fatalf("lists of %d and %d keys with %d and %d repeats; want %d and 2, 2 and 1", f.Len(), in.Len(), f.Duplicates, in.Duplicates, n)
	}
	if i, ok := f.Lookup([]byte(int64Key(3 * 7))); !ok || i != 7 || f.Lines[i] != 8 {
		t.Errorf("key 21: %d, %v", i, ok)
	}
	if len(set.Warnings) != 2 {
		t.Errorf("warnings %v, want one for the repeats of each list", set.Warnings)
	}
	for _, bad := range []string{
		"version: 1\nrules:\n  - purge_keys: {keys_file: k.txt, codec: int64}\n  - drop: 'nonsense +'\n",
		"version: 1\nrules:\n  - purge_keys: {keys: [x, 'y'], codec: int64}\n",
		"version: 1\nrules:\n  - drop: 'slot == \"x\"'\n",
	} {
		if _, calls, _ := parse(bad); len(calls) != 0 {
			t.Errorf("KeysReady called for %q", bad)
		}
	}
}
