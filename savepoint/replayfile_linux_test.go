package savepoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A changelog opened mapped whose materialisation file is large is
// replayed through temporary files, the materialisation mapped rather than
// read: the same state, and the same keys erased by the log, as read whole,
// and nothing of it mapped or open once the savepoint is closed. Where no
// temporary file can be made, a changelog of fewer than InPlaceRows rows
// is replayed in memory, as a small one is.
func TestChangelogReplayedInFile(t *testing.T) {
	defer func(r int, m int64) { replayFileRows, matMapMin = r, m }(replayFileRows, matMapMin)
	replayFileRows, matMapMin = 100, 1024
	r := rand.New(rand.NewPCG(5, 6))
	key := func() (uint64, []byte) {
		op := uint64(1 + r.IntN(3))
		if r.IntN(8) == 0 {
			return op, EncodeBroadcastKey([]byte{byte('a' + r.IntN(20))})
		}
		return op, EncodeKeyedKey([]byte("s"), binary.BigEndian.AppendUint32(nil, uint32(r.IntN(2000))))
	}
	var mat []Row // keys stored twice, operator rows of 8-byte values merged by the greater
	for range 3000 {
		op, k := key()
		mat = append(mat, Row{Op: op, Key: k, Value: binary.LittleEndian.AppendUint64(nil, r.Uint64())})
	}
	const handle = "v1/0/materializations/mat-7.bin"
	entries := []ChangelogEntry{{Kind: RowKindHandle, Row: Row{Value: []byte("/srv/job/" + handle)}}}
	for range 800 {
		op, k := key()
		entries = append(entries, ChangelogEntry{Kind: []uint8{RowKindPut, RowKindErase, 9}[r.IntN(3)], Row: Row{Op: op, Key: k, Value: []byte{byte(r.IntN(256))}}})
	}
	root := filepath.Join(t.TempDir(), "cl")
	matPath := filepath.Join(root, handle)
	var b bytes.Buffer
	if err := EncodeStream(&b, nil, mat); err != nil {
		t.Fatal(err)
	}
	writeTreeFile(t, matPath, b.Bytes())
	b.Reset()
	if err := EncodeChangelog(&b, entries); err != nil {
		t.Fatal(err)
	}
	writeTreeFile(t, filepath.Join(root, "v1", "0", "changelog-7.snap"), b.Bytes())
	writeTreeFile(t, filepath.Join(root, "_jobs", "1", "COMPLETED-7"), []byte("job=1\ncheckpoint=7\ngeneration=1\nsubtasks=0\n"))

	whole, err := Open(root, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	want := snapRows(whole.Files[0].Snapshot)
	if len(want) < 1000 {
		t.Fatalf("%d rows replayed: the test wants more", len(want))
	}
	for _, c := range []struct {
		name, tempDir string
		inFile        bool
	}{
		{"temporary files", "", true},
		{"no temporary directory", filepath.Join(root, "missing"), false},
	} {
		tempFiles := openDeleted(t)
		sp, err := Open(root, OpenOptions{Columnar: true, TempDir: c.tempDir})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		f := sp.Files[0]
		// Replayed in a file, the materialisation's map is closed at once;
		// in memory, the rows are read from it until Close.
		if wantMaps := map[bool]int{true: 0, false: 1}[c.inFile]; len(f.matMaps) != wantMaps || (len(f.replayed) > 0) != c.inFile || f.Snapshot.Columnar() != c.inFile {
			t.Errorf("%s: %d materialisations mapped, replayed in a file %v, columnar %v; want %d, %v, %v", c.name, len(f.matMaps), len(f.replayed) > 0, f.Snapshot.Columnar(), wantMaps, c.inFile, c.inFile)
		}
		if c.inFile && mappedOrOpen(t, matPath) {
			t.Errorf("%s: %s still mapped or open once replayed", c.name, matPath)
		}
		if got := snapRows(f.Snapshot); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %d rows replayed, want the %d read whole", c.name, len(got), len(want))
		}
		for _, e := range entries[1:] {
			if got, want := f.Snapshot.ErasedByLog(e.Row.Op, e.Row.Key), whole.Files[0].Snapshot.ErasedByLog(e.Row.Op, e.Row.Key); got != want {
				t.Errorf("%s: ErasedByLog(%d, %x) = %v, want %v", c.name, e.Row.Op, e.Row.Key, got, want)
			}
		}
		f.ReleasePages()
		if err := sp.Close(); err != nil {
			t.Errorf("%s: Close: %v", c.name, err)
		}
		if mappedOrOpen(t, matPath) {
			t.Errorf("%s: %s still mapped or open after Close", c.name, matPath)
		}
		if n := openDeleted(t); n != tempFiles {
			t.Errorf("%s: %d temporary files open after Close, %d before Open", c.name, n, tempFiles)
		}
	}
}

// A payload cut short while its log is replayed (a fault reading the map,
// which Guard reports) leaves no temporary file open, as an error does.
func TestReplayInFileFaultClosesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "changelog-1.snap")
	if err := os.WriteFile(path, bytes.Repeat([]byte{7}, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	data, err := mapFile(fh, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer unmapFile(data)
	logs := changelogLog{}
	var rows []Row
	for i := range 100 {
		logs.kinds = append(logs.kinds, RowKindPut)
		rows = append(rows, Row{Op: 1, Key: EncodeKeyedKey([]byte("s"), []byte{byte(i)}), Value: data[i*600 : i*600+600]})
	}
	logs.rows = (&Snapshot{Rows: rows}).NewCursor()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	before := openDeleted(t)
	err = Guard(func() error {
		_, err := replayInFile(nil, &logs, &ChangelogInfo{}, ReadOptions{tempDir: tmp})
		return err
	})
	if !errors.Is(err, ErrInputChanged) {
		t.Fatalf("replay of a log in a file cut short: %v, want ErrInputChanged", err)
	}
	if after := openDeleted(t); after != before {
		t.Errorf("%d unlinked files open after the fault, %d before", after, before)
	}
}

// openDeleted counts the process's open files that have no name left.
func openDeleted(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasSuffix(target, " (deleted)") {
			n++
		}
	}
	return n
}
