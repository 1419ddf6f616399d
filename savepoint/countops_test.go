package savepoint

import (
	"errors"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// CountOps counts each operator's rows as the rows say, from a mapped file
// of several batches read in blocks (runs of one operator crossing block
// and batch ends) and from rows in memory; a mapped file cut short since it
// was opened is an error, not a panic or a wrong count.
func TestCountOps(t *testing.T) {
	defer func(v int) { keyBlock = v }(keyBlock)
	r := rand.New(rand.NewPCG(1, 2))
	var rows []Row
	want := map[uint64]int64{}
	for len(rows) < 5000 {
		op := uint64(r.IntN(4)) * 1000
		for n := 1 + r.IntN(300); n > 0; n-- {
			rows = append(rows, Row{Op: op, Key: []byte{byte(len(rows))}})
			want[op]++
		}
	}
	path := filepath.Join(t.TempDir(), "f.snap")
	if _, err := WriteSnapshotFile(path, nil, rows, SnapshotOptions{AsIs: true, Batches: []int{1700, 1700, len(rows) - 3400}}); err != nil {
		t.Fatal(err)
	}
	for _, block := range []int{7, 4096} {
		keyBlock = block
		for _, columnar := range []bool{true, false} {
			sp, err := Open(path, OpenOptions{Columnar: columnar, AllowMissingSidecar: true})
			if err != nil {
				t.Fatal(err)
			}
			got := map[uint64]int64{}
			err = sp.Files[0].Snapshot.CountOps(got)
			sp.Close()
			if err != nil || !maps.Equal(got, want) {
				t.Fatalf("blocks of %d, columnar %v: %v (%v), want %v", block, columnar, got, err, want)
			}
		}
	}
	sp, err := Open(path, OpenOptions{Columnar: true, AllowMissingSidecar: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if err := os.Truncate(path, 100); err != nil {
		t.Fatal(err)
	}
	if err := sp.Files[0].Snapshot.CountOps(map[uint64]int64{}); err == nil || !errors.Is(err, ErrInputChanged) {
		t.Fatalf("a file cut short: %v, want ErrInputChanged", err)
	}
}
