package savepoint

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// TestKeyedOps: the operators with keyed rows, and their key groups, are
// found whether the rows are read in place, in blocks with pread, across
// block ends, or told by the prefix runs found at open, including an
// operator whose only keyed row comes after many of its operator rows, and
// not an operator that has operator rows only.
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
	// Raw keys without a slot separator, of several first bytes: one prefix
	// run whose first and last keys do not say every key group.
	for _, k := range []string{"\x05raw", "\x40raw", "\x41raw", "\x70raw"} {
		rows = append(rows, Row{Op: 5, Key: []byte(k), Value: []byte("v")})
	}
	rows = append(rows, Row{Op: 3, Key: EncodeKeyedKey([]byte("s"), []byte("late")), Value: []byte("v")},
		Row{Op: 4, Key: []byte{}, Value: []byte("empty key")})
	// Keyed rows of twelve more operators, each after another's, as in
	// clink's hash-map order: more than the pass keeps beside its map.
	want := []uint64{1, 3, 5}
	for op := uint64(10); op < 22; op++ {
		want = append(want, op)
	}
	for i := range 3 {
		for op := uint64(10); op < 22; op++ {
			rows = append(rows, Row{Op: op, Key: EncodeKeyedKey([]byte("t"), []byte(fmt.Sprint(op, i))), Value: []byte("v")})
		}
	}
	var wantKGs [NumKeyGroups / 64]uint64
	for _, r := range rows {
		if len(r.Key) > 0 && r.Key[0] < NumKeyGroups {
			wantKGs[r.Key[0]/64] |= 1 << (r.Key[0] % 64)
		}
	}
	// As they come (the keys of operator 1 are not in order), and sorted:
	// a columnar open then finds the prefix runs, which say it.
	dir := t.TempDir()
	asIs, sorted := filepath.Join(dir, "as-is.snap"), filepath.Join(dir, "sorted.snap")
	if _, err := WriteSnapshotFile(asIs, nil, rows, SnapshotOptions{AsIs: true, Batches: []int{60, 112}}); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteSnapshotFile(sorted, nil, rows, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func(v int) { keyBlock = v }(keyBlock)
	for _, path := range []string{asIs, sorted} {
		for _, block := range []int{4096, 7} {
			keyBlock = block
			for _, columnar := range []bool{true, false} {
				sp, err := Open(path, OpenOptions{Columnar: columnar})
				if err != nil {
					t.Fatal(err)
				}
				snap := sp.Files[0].Snapshot
				if indexed := snap.Runs() != nil; indexed != (columnar && path == sorted) {
					t.Errorf("%s, columnar %v: prefix runs %v", filepath.Base(path), columnar, indexed)
				}
				for _, kgs := range []bool{false, true} {
					e := groupEvidence{ops: map[uint64]bool{}}
					keyedEvidence(snap, &e, kgs)
					if got := slices.Sorted(maps.Keys(e.ops)); !slices.Equal(got, want) {
						t.Errorf("%s, block %d, columnar %v, key groups %v: keyed operators %v, want %v", filepath.Base(path), block, columnar, kgs, got, want)
					}
					if kgs && e.kgs != wantKGs {
						t.Errorf("%s, block %d, columnar %v: key groups %x, want %x", filepath.Base(path), block, columnar, e.kgs, wantKGs)
					}
				}
				sp.Close()
			}
		}
	}
}

// TestNoGenerationSaysWhy: a directory with no usable v<generation>
// directory is refused, and the message says why each entry named like one
// is not one.
func TestNoGenerationSaysWhy(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(t *testing.T, dir string)
		want string
	}{
		{"out of range", func(t *testing.T, dir string) {
			mustMkdir(t, filepath.Join(dir, "v99999999999999999999"))
		}, "v99999999999999999999: generation number out of range"},
		{"link loop", func(t *testing.T, dir string) {
			if err := os.Symlink("v1", filepath.Join(dir, "v1")); err != nil {
				t.Skip(err)
			}
		}, "v1: too many levels of symbolic links"},
		{"file", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "v3"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "v3: not a directory"},
		{"empty", func(t *testing.T, dir string) {}, "no v<generation> directory in it (give"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			c.make(t, dir)
			sp, err := Open(dir, OpenOptions{})
			if err == nil {
				sp.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// countdownCtx is a context whose Err is nil for its first n calls and
// context.Canceled after: OpenContext's checks, counted, are each where it
// stops in one of the runs below.
type countdownCtx struct {
	context.Context
	n atomic.Int64
}

func (c *countdownCtx) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// OpenContext stops when its context is done: before any file, between a
// tree's files, and within a file's bytes (the mapped pass at open, and
// the checksum it falls back to), returning the context's error and
// nothing open. A context done at none of its checks opens as Open does.
func TestOpenContextStops(t *testing.T) {
	defer func(b int) { checksumBlock = b }(checksumBlock)
	checksumBlock = 4096
	dir := t.TempDir()
	var rows []Row
	for i := range 20000 {
		rows = append(rows, Row{Op: 7, Key: EncodeKeyedKey([]byte("agg"), []byte(strconv.Itoa(i))), Value: []byte("value")})
	}
	file := filepath.Join(dir, "in.snap")
	if _, err := WriteSnapshotFile(file, CanonicalMetadata(nil, VersionMap{}), rows, SnapshotOptions{Sidecar: true}); err != nil {
		t.Fatal(err)
	}
	tree := vtWriteTree(t, [][]Row{rows[:1], rows[1:2], rows[2:3]}, nil)
	for _, path := range []string{file, tree} {
		for _, columnar := range []bool{true, false} {
			stopped := 0
			for n := int64(0); ; n++ {
				ctx := &countdownCtx{Context: context.Background()}
				ctx.n.Store(n)
				sp, err := OpenContext(ctx, path, OpenOptions{Columnar: columnar, RequireValid: true})
				if err == nil {
					if want, _ := Open(path, OpenOptions{Columnar: columnar}); len(sp.Files) != len(want.Files) || sp.Files[0].CRC32C != want.Files[0].CRC32C {
						t.Errorf("%s columnar %v: opened after %d checks differs from Open", path, columnar, n)
					}
					sp.Close()
					break
				}
				if !errors.Is(err, context.Canceled) || sp != nil {
					t.Fatalf("%s columnar %v, done after %d checks: %v, %v; want context.Canceled", path, columnar, n, sp, err)
				}
				stopped++
			}
			// Besides the check before each file, the mapped file is
			// stopped within its bytes, block by block.
			if path == file && columnar && stopped < 4 {
				t.Errorf("%s: stopped at %d checks only", path, stopped)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := OpenContext(ctx, tree, OpenOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled before: %v", err)
	}
}

// OpenContext stops within the bytes of a file it reads whole (without
// Columnar), block by block, as it does within a mapped one.
func TestOpenContextStopsReadingWhole(t *testing.T) {
	defer func(b int) { checksumBlock = b }(checksumBlock)
	checksumBlock = 4096
	var rows []Row
	for i := range 20000 {
		rows = append(rows, Row{Op: 7, Key: EncodeKeyedKey([]byte("agg"), []byte(strconv.Itoa(i))), Value: []byte("value")})
	}
	file := filepath.Join(t.TempDir(), "in.snap")
	info, err := WriteSnapshotFile(file, CanonicalMetadata(nil, VersionMap{}), rows, SnapshotOptions{Sidecar: true})
	if err != nil {
		t.Fatal(err)
	}
	blocks := int64((info.Size + 4095) / 4096)
	for _, n := range []int64{1, 2, blocks / 2, blocks} {
		ctx := &countdownCtx{Context: context.Background()}
		ctx.n.Store(n)
		if sp, err := OpenContext(ctx, file, OpenOptions{}); !errors.Is(err, context.Canceled) || sp != nil {
			t.Errorf("done after %d of the %d blocks' checks: %v, want context.Canceled", n, blocks, err)
		}
	}
	ctx := &countdownCtx{Context: context.Background()}
	ctx.n.Store(blocks + 1)
	sp, err := OpenContext(ctx, file, OpenOptions{})
	if err != nil {
		t.Fatalf("done after every block's check: %v", err)
	}
	if sp.Files[0].CRC32C != info.CRC32C || sp.Files[0].Snapshot.NumRows() != len(rows) {
		t.Errorf("opened: CRC %d rows %d, want %d, %d", sp.Files[0].CRC32C, sp.Files[0].Snapshot.NumRows(), info.CRC32C, len(rows))
	}
	sp.Close()
}

// A tree whose highest generation is empty cannot be restored (clink reads
// that one only), and the error names the newest older generation that
// holds subtask directories, to read.
func TestEmptyHighestGenerationNamesOlder(t *testing.T) {
	root := filepath.Join(t.TempDir(), "tree")
	if err := os.CopyFS(root, os.DirFS(vtFixturePath("mixed-p4"))); err != nil {
		t.Fatal(err)
	}
	// The fixture's generation moves to v0, and an empty v1 between it
	// and v2 is passed over.
	if err := os.Rename(filepath.Join(root, "v1"), filepath.Join(root, "v0")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dirs []string
		want string
	}{
		{nil, "no subtask directories in it"},
		{[]string{"v2/0", "v2/1"}, "generation v2 holds no checkpoint-<id>.snap"},
	} {
		if err := os.MkdirAll(filepath.Join(root, "v2"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, d := range c.dirs {
			if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		_, err := Open(root, OpenOptions{})
		hint := "clink restores the highest generation, v2, and refuses to start on one without a checkpoint: to read the older v0, name its directory (" + filepath.Join(root, "v0") + ")"
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasSuffix(err.Error(), hint) {
			t.Errorf("v2 holding %v: err %v, want %q ending %q", c.dirs, err, c.want, hint)
		}
	}
}

// opSet adds each operator to its map once it has come, whatever the
// order: runs of one, operators changing row to row, more than the eight
// it keeps beside the map, and a map holding others (some false) already.
func TestOpSet(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, distinct := range []int{1, 2, 8, 9, 20} {
		m := map[uint64]bool{1000: true, 1001: false}
		want := map[uint64]bool{1000: true, 1001: false}
		set := opSet{m: m}
		for range 500 {
			op := uint64(r.IntN(distinct))
			if r.IntN(4) == 0 {
				op = 1001
			}
			for range 1 + r.IntN(3) {
				set.add(op)
			}
			want[op] = true
		}
		if !maps.Equal(m, want) {
			t.Errorf("%d operators: map %v, want %v", distinct, m, want)
		}
	}
}
