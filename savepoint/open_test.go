package savepoint

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
)

// TestKeyedOps: the operators with keyed rows are found whether the rows
// are read in place or in blocks with pread, across block ends, including
// an operator whose only keyed row comes after many of its operator rows,
// and not an operator that has operator rows only.
func TestKeyedOps(t *testing.T) {
	var rows []Row
	for i := range 50 {
		rows = append(rows, Row{Op: 1, Key: EncodeKeyedKey([]byte("s"), []byte(fmt.Sprint(i))), Value: []byte("v")})
	}
	for i := range 50 {
		rows = append(rows, Row{Op: 2, Key: []byte(fmt.Sprintf("\xff__offset_%d", i)), Value: []byte("v")})
	}
	for i := range 30 {
		rows = append(rows, Row{Op: 3, Key: []byte(fmt.Sprintf("\xff__offset_%d", i)), Value: []byte("v")})
	}
	rows = append(rows, Row{Op: 3, Key: EncodeKeyedKey([]byte("s"), []byte("late")), Value: []byte("v")},
		Row{Op: 4, Key: []byte{}, Value: []byte("empty key")})
	path := filepath.Join(t.TempDir(), "checkpoint-1.snap")
	if _, err := WriteSnapshotFile(path, nil, rows, SnapshotOptions{AsIs: true, Batches: []int{60, 72}}); err != nil {
		t.Fatal(err)
	}
	defer func(v int) { keyBlock = v }(keyBlock)
	for _, block := range []int{4096, 7} {
		keyBlock = block
		for _, columnar := range []bool{true, false} {
			sp, err := Open(path, OpenOptions{Columnar: columnar})
			if err != nil {
				t.Fatal(err)
			}
			ops := map[uint64]bool{}
			keyedOps(sp.Files[0].Snapshot, ops)
			sp.Close()
			if got := slices.Sorted(maps.Keys(ops)); !slices.Equal(got, []uint64{1, 3}) {
				t.Errorf("block %d, columnar %v: keyed operators %v, want [1 3]", block, columnar, got)
			}
		}
	}
}
