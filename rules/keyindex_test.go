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

// Keys added through a batch (as a keys file's are) end up as added one
// by one: the same list in the same order, lines, duplicates and index,
// across batch boundaries and with a batch left to flush.
func TestKeyBatch(t *testing.T) {
	var one, batched PurgeKeysSpec
	one.initIndex(10)
	batched.initIndex(10) // both grow
	var b keyBatch
	n := 3*prefetchBatch + 5
	for i := range n {
		k := "k" + strconv.Itoa(i%(n-40)) // the last 40 repeat earlier ones
		one.add(k, i+1)
		b.add(&batched, k, i+1)
	}
	if b.n == 0 {
		t.Fatal("nothing left in the batch to flush: the test does not test that")
	}
	b.flush(&batched)
	if !slices.Equal(one.Keys, batched.Keys) || !slices.Equal(one.Lines, batched.Lines) || one.Duplicates != batched.Duplicates || one.Duplicates != 40 {
		t.Fatalf("batched: %d keys, %d duplicates; one by one: %d, %d (want 40 duplicates)", batched.Len(), batched.Duplicates, one.Len(), one.Duplicates)
	}
	for i, k := range one.Keys {
		if j, ok := batched.Lookup([]byte(k)); !ok || j != i {
			t.Fatalf("%q: %d, %v; want %d", k, j, ok, i)
		}
	}
}
