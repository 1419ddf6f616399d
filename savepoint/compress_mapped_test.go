package savepoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// Opened with Columnar, a payload compressed as a whole is decompressed
// into an unnamed file in OpenOptions.TempDir and mapped from there: its
// rows are the plain payload's, its checksum the compressed file's, memory
// does not hold the decompressed stream, and nothing is left in the
// directory.
func TestOpenCompressedMapped(t *testing.T) {
	// (Under -short, as the race detector runs it, a smaller stream, whose
	// heap growth the buffer pools' would hide, is read without that check.)
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	rows := make([]Row, n)
	for i := range rows {
		key := binary.BigEndian.AppendUint64([]byte{byte(i % 128), 'c', '|'}, uint64(i))
		rows[i] = Row{Op: 7, Key: key, Value: binary.LittleEndian.AppendUint64(nil, uint64(i)*3)}
	}
	slices.SortFunc(rows, func(a, b Row) int { return bytes.Compare(a.Key, b.Key) })
	var plain bytes.Buffer
	if err := WriteStream(&plain, CanonicalMetadata(nil, VersionMap{}), RowSlice(rows)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, comp := range []string{CompressZstd, CompressGzip, CompressXZ} {
		t.Run(comp, func(t *testing.T) {
			z := compressed(t, comp, plain.Bytes())
			path := filepath.Join(dir, "checkpoint-7.snap"+CompressionSuffix(comp))
			if err := os.WriteFile(path, z, 0o644); err != nil {
				t.Fatal(err)
			}
			tmp := t.TempDir()
			// (Two collections empty the buffer pool, which would
			// otherwise count as freed.)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&before)
			sp, err := Open(path, OpenOptions{Columnar: true, TempDir: tmp})
			if err != nil {
				t.Fatal(err)
			}
			defer sp.Close()
			f := sp.Files[0]
			if f.Compression != comp || f.CRC32C != CRC32C(z) || f.Size != int64(len(z)) {
				t.Errorf("compression %q, CRC %d, size %d; want %q, %d, %d", f.Compression, f.CRC32C, f.Size, comp, CRC32C(z), len(z))
			}
			if got := vtRows(f); !slices.EqualFunc(got, rows, func(a, b Row) bool {
				return a.Op == b.Op && bytes.Equal(a.Key, b.Key) && bytes.Equal(a.Value, b.Value)
			}) {
				t.Errorf("%d rows read, not the %d written", len(got), len(rows))
			}
			if sorted, _ := f.Snapshot.Order(); !sorted {
				t.Error("the decompressed stream's order was not found")
			}
			// The heap holds the decompressed stream of a payload read
			// whole, not of one mapped.
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&after)
			live := int64(after.HeapAlloc) - int64(before.HeapAlloc)
			t.Logf("live heap %d", live)
			if !testing.Short() && live > int64(plain.Len())/4 {
				t.Errorf("the heap grew by %d bytes while the savepoint is open, for a stream of %d decompressed", live, plain.Len())
			}
			if ents, err := os.ReadDir(tmp); err != nil || len(ents) != 0 {
				t.Errorf("the temporary directory holds %v (%v)", ents, err)
			}
			// The writer reads the runs of the batches from the file the
			// stream was decompressed into.
			var out bytes.Buffer
			if err := WriteStream(&out, CanonicalMetadata(nil, VersionMap{}), f.Snapshot.NewCursor()); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), plain.Bytes()) {
				t.Error("the stream written from the mapped decompressed payload differs from the one compressed")
			}
		})
	}
	// A temporary directory that is not there is an error naming the file.
	path := filepath.Join(dir, "checkpoint-7.snap.zst")
	_, err := Open(path, OpenOptions{Columnar: true, TempDir: filepath.Join(dir, "nowhere")})
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("a TempDir that is not there: %v", err)
	}
}

// A temporary directory that cannot take the decompressed stream fails the
// open of a tree read with KeepUndecodable, naming the directory: it is no
// fault of the payload, which is not recorded as undecodable for it.
func TestOpenCompressedTempDirUnusable(t *testing.T) {
	var files [][]Row
	for s := range 2 {
		files = append(files, []Row{vtKeyed(7, "agg", vtKeysIn(t, s*64, (s+1)*64, 1)[0], "v")})
	}
	tree := vtWriteTree(t, files, nil)
	p := filepath.Join(tree, "v1", "1", "checkpoint-7.snap")
	plain, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, compressed(t, CompressZstd, plain), 0o644); err != nil {
		t.Fatal(err)
	}
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(tree, OpenOptions{Columnar: true, KeepUndecodable: true, AllowMissingSidecar: true, TempDir: notADir})
	var te *TempFileError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "create the temporary file it is decompressed into, in "+notADir) || !strings.Contains(err.Error(), p) {
		t.Errorf("Open with a TempDir that is a file: %v, want a TempFileError naming it and the payload", err)
	}
}

// The window check walks a zstd stream's block headers from the file, a
// window of bytes at a time, as it does through a map: the same verdict on
// a stream of many empty blocks, a stream cut short and a real one.
func TestZstdWindowFromFile(t *testing.T) {
	many := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x48} // a frame asking for 1 MiB
	for range 100_000 {
		many = append(many, 0, 0, 0) // an empty raw block, not the last
	}
	many = append(many, 1, 0, 0) // the last
	for _, data := range [][]byte{many, many[:len(many)/2], compressed(t, CompressZstd, bytes.Repeat([]byte("savepoint"), 100_000))} {
		p := filepath.Join(t.TempDir(), "z")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := zstdWindowOf(int64(len(data)), fileBytes(f)), zstdWindow(data); got != want {
			t.Errorf("%d bytes: window %d from the file, %d from memory", len(data), got, want)
		}
		f.Close()
	}
}

// Offsets that do not bound their data, in a stream compressed whole, are
// said to be in the decompressed stream.
func TestOpenCompressedBadOffsets(t *testing.T) {
	fixture, err := os.ReadFile("../testdata/bad/bitflip-key-offsets.snap")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "bad.snap.zst")
	if err := os.WriteFile(p, compressed(t, CompressZstd, fixture), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(p, OpenOptions{Columnar: true})
	if err == nil || !strings.Contains(err.Error(), p+" (offsets in the zstd-decompressed stream): record batch 0") {
		t.Errorf("Open: %v", err)
	}
}
