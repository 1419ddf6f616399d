package rules

import (
	"slices"
	"strconv"
	"testing"
)

// The index finds every listed key at its place in Keys, from a capacity
// far below the number of keys (it grows); it finds no other key; repeats
// are counted, not added; and a lookup allocates nothing.
func TestKeyIndex(t *testing.T) {
	var spec PurgeKeysSpec
	spec.initIndex(4)
	const n = 5000
	for i := range n {
		spec.add("user-"+strconv.Itoa(i), i+1)
	}
	for i := 0; i < n; i += 7 {
		spec.add("user-"+strconv.Itoa(i), n+i)
	}
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
	var spec PurgeKeysSpec
	spec.initIndex(100)
	for i := range 100 {
		spec.add("user-"+strconv.Itoa(i), i+1)
	}
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
