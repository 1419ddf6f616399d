package rules

import (
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
