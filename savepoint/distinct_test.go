package savepoint

import (
	"fmt"
	"hash/maphash"
	"path/filepath"
	"slices"
	"testing"
)

// distinctKeys tells rows that share (op, key) from rows that only share a
// hash, and leaves to the sort what it has no memory for.
func TestDistinctKeys(t *testing.T) {
	rows := func(n int) []Row {
		var rs []Row
		for i := range n {
			op := uint64(1 + i%3)
			rs = append(rs, Row{Op: op, Key: EncodeKeyedKey([]byte("s"), fmt.Appendf(nil, "user-%d", i*7919%n)), Value: []byte{byte(i)}})
		}
		return rs
	}
	weak := func(_ maphash.Seed, op uint64, key []byte) uint64 { return uint64(len(key)) } // every row of a length collides
	for _, tc := range []struct {
		name     string
		rows     []Row
		hash     func(maphash.Seed, uint64, []byte) uint64
		maxBytes int64
		want     bool
	}{
		{"none", nil, rowHash, 1 << 20, true},
		{"one row", rows(1), rowHash, 1 << 20, true},
		{"distinct", rows(200000), rowHash, 1 << 30, true},
		{"a key stored twice, far apart", append(rows(200000), rows(200000)[3]), rowHash, 1 << 30, false},
		{"a key stored twice", append(rows(1000), rows(1000)[417]), rowHash, 1 << 30, false},
		{"the same key under two operators", append(rows(999), Row{Op: 9, Key: rows(999)[5].Key}), rowHash, 1 << 30, true},
		{"distinct, every hash colliding", rows(300), weak, 1 << 30, true},
		{"the same key under two operators, hashes colliding", append(rows(300), Row{Op: 9, Key: rows(300)[5].Key}), weak, 1 << 30, true},
		{"a key stored twice among colliding hashes", append(rows(300), rows(300)[0]), weak, 1 << 30, false},
		{"too little memory to look", rows(1000), rowHash, 8*1000 - 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(h func(maphash.Seed, uint64, []byte) uint64) { distinctHash = h }(distinctHash)
			distinctHash = tc.hash
			for _, columnar := range []bool{false, true} {
				s := &Snapshot{Rows: tc.rows}
				if columnar {
					path := filepath.Join(t.TempDir(), "f.snap")
					if _, err := WriteSnapshotFile(path, nil, tc.rows, SnapshotOptions{AsIs: true}); err != nil {
						t.Fatal(err)
					}
					sp, err := Open(path, OpenOptions{Columnar: true, AllowMissingSidecar: true})
					if err != nil {
						t.Fatal(err)
					}
					defer sp.Close()
					s = sp.Files[0].Snapshot
				}
				if got := distinctKeys(s, tc.maxBytes); got != tc.want {
					t.Errorf("columnar %v: %v, want %v", columnar, got, tc.want)
				}
			}
		})
	}
}

// repeated finds the values that occur more than once across sorted
// chunks, once each, and gives up past its limit.
func TestRepeated(t *testing.T) {
	chunks := func() [][]uint64 { return [][]uint64{{1, 3, 3, 7, 9}, {2, 3, 8, 9, 9}, {}, {10}} }
	if got := repeated(chunks(), 10); !slices.Equal(got, []uint64{3, 9}) {
		t.Errorf("repeated: %v, want [3 9]", got)
	}
	if got := repeated(chunks(), 1); got != nil {
		t.Errorf("repeated past the limit: %v, want nil", got)
	}
	if got := repeated([][]uint64{{1, 2}, {3}}, 10); got == nil || len(got) != 0 {
		t.Errorf("repeated with none: %v, want empty", got)
	}
}

// The key-group histogram of a file out of order counts each (op, key)
// once: every row when the hashes show no duplicates, one less for a key
// stored twice.
func TestKeyGroupHistogramUnsorted(t *testing.T) {
	var rows []Row
	for i := range 5000 {
		rows = append(rows, Row{Op: uint64(1 + i%2), Key: EncodeKeyedKey([]byte("agg"), fmt.Appendf(nil, "k%d", (i*7919)%5000)), Value: []byte{1}})
	}
	for _, tc := range []struct {
		name string
		rows []Row
		want int
	}{
		{"distinct", rows, 5000},
		{"a key stored twice", append(slices.Clone(rows), rows[1234]), 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.snap")
			if _, err := WriteSnapshotFile(path, nil, tc.rows, SnapshotOptions{AsIs: true}); err != nil {
				t.Fatal(err)
			}
			sp, err := Open(path, OpenOptions{Columnar: true, AllowMissingSidecar: true})
			if err != nil {
				t.Fatal(err)
			}
			defer sp.Close()
			if sorted, _ := sp.Files[0].Snapshot.Order(); sorted {
				t.Fatal("the file is sorted")
			}
			h := Summarize(sp).KeyGroups
			var kg [NumKeyGroups]int
			for _, r := range tc.rows[:5000] {
				kg[r.Key[0]]++
			}
			if h.Rows != tc.want || h.Counts != kg {
				t.Errorf("%d rows, want %d (counts match: %v)", h.Rows, tc.want, h.Counts == kg)
			}
		})
	}
}
