package savepoint

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// gzipZeros returns n zero bytes compressed with gzip (deflate's best case,
// about 1030:1).
func gzipZeros(t *testing.T, n int) []byte {
	t.Helper()
	return compressed(t, CompressGzip, make([]byte, n))
}

// compressed returns data compressed whole with compression name.
func compressed(tb testing.TB, name string, data []byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw, err := NewCompressor(name, &buf)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := zw.Write(data); err != nil {
		tb.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// A compressed payload that expands past the decompression limit is an
// error naming the file, through both ways of reading it, not a
// decompression into memory without end.
func TestDecompressLimit(t *testing.T) {
	defer func(r, f, c int64) { decompressRatio, decompressFloor, decompressCeiling = r, f, c }(decompressRatio, decompressFloor, decompressCeiling)
	z := gzipZeros(t, 4<<20)
	// The file opened starts as a stream does (a message of 8 bytes), so
	// that its size is what fails.
	path := filepath.Join(t.TempDir(), "bomb.snap.gz")
	if err := os.WriteFile(path, compressed(t, CompressGzip, append([]byte{0xff, 0xff, 0xff, 0xff, 8, 0, 0, 0}, make([]byte, 4<<20-8)...)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name                  string
		ratio, floor, ceiling int64
	}{
		{"ratio", 100, 0, 1 << 40},
		{"ceiling", 1 << 20, 0, 1 << 20},
	} {
		decompressRatio, decompressFloor, decompressCeiling = c.ratio, c.floor, c.ceiling
		if _, _, err := Decompress(z); err == nil || !strings.Contains(err.Error(), "decompressed size exceeds") {
			t.Errorf("%s: Decompress of %d bytes of gzip to 4 MiB: %v, want the size limit", c.name, len(z), err)
		}
		for _, columnar := range []bool{false, true} {
			_, err := Open(path, OpenOptions{Columnar: columnar})
			if columnar && c.name == "ceiling" {
				// Mapped, the stream is decompressed to a temporary file:
				// memory does not bound it, and the bytes fail to decode.
				if err == nil || strings.Contains(err.Error(), "decompressed size exceeds") || !strings.Contains(err.Error(), path+" (offsets in the gzip-decompressed stream)") {
					t.Errorf("%s, columnar: Open: %v, want a decoding error naming %s", c.name, err, path)
				}
				continue
			}
			if err == nil || !strings.Contains(err.Error(), "decompressed size exceeds") || !strings.Contains(err.Error(), path) {
				t.Errorf("%s, columnar %v: Open: %v, want the size limit naming %s", c.name, columnar, err, path)
			}
		}
	}
	// A stream past the limit costs about the limit in memory, not twice
	// or three times it (a buffer that doubles as it fills, then a join).
	decompressRatio, decompressFloor, decompressCeiling = 1<<20, 0, 8<<20
	big := gzipZeros(t, 16<<20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, _, err := Decompress(big); err == nil {
		t.Fatal("16 MiB past a limit of 8 MiB: no error")
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 14<<20 {
		t.Errorf("decompressing past a limit of 8 MiB allocated %d MiB, want at most 14", got>>20)
	}
	// Within the limits: the floor lets small files expand more than the
	// ratio says.
	decompressRatio, decompressFloor, decompressCeiling = 100, 4<<20, 1<<40
	if plain, _, err := Decompress(z); err != nil || len(plain) != 4<<20 {
		t.Errorf("within the floor: %d bytes, %v", len(plain), err)
	}
	decompressRatio, decompressFloor = 1<<20, 0
	if plain, _, err := Decompress(z); err != nil || len(plain) != 4<<20 {
		t.Errorf("within the ratio: %d bytes, %v", len(plain), err)
	}
}

// A payload compressed whole whose first decompressed bytes start no
// stream (a file of zeros: a few kilobytes for 64 MiB) is refused at them,
// before the rest is decompressed into memory; one that starts as a stream
// does, or as a changelog's frame, is read on.
func TestDecompressPayloadStart(t *testing.T) {
	dir := t.TempDir()
	names := []string{CompressGzip, CompressZstd, CompressLZ4, CompressXZ}
	if testing.Short() {
		// The race detector's run, where compressing 64 MiB with lz4 and
		// xz took most of this test's 34 s.
		names = names[:2]
	}
	for _, name := range names {
		path := filepath.Join(dir, "zeros.snap"+CompressionSuffix(name))
		if err := os.WriteFile(path, compressed(t, name, make([]byte, 64<<20)), 0o644); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Open(path, OpenOptions{})
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "the decompressed bytes start 00 00 00 00 00 00 00 00, which start no Arrow IPC stream") || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: Open: %v, want the start refused, naming the file", name, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
			t.Errorf("%s: refusing 64 MiB of zeros allocated %d MiB, want at most 16", name, got>>20)
		}
	}
	for _, head := range [][]byte{{0xff, 0xff, 0xff, 0xff, 0x10, 0, 0, 0}, {0x10, 0, 0, 0, 0, 0, 0, 0}, []byte("CLMB\x01\x00\x00\x00"), {0xff}} {
		if err := streamStart(head, 1<<20); err != nil {
			t.Errorf("start % x: %v, want it read on", head, err)
		}
	}
	for _, head := range [][]byte{{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0x80}, {0, 0, 0, 0x80, 0, 0, 0, 0}, {0xff, 0xff, 0xff, 0xff, 0, 0, 0x20, 0}} {
		if err := streamStart(head, 1<<20); err == nil {
			t.Errorf("start % x: read on, want it refused", head)
		}
	}
}

// The default limit allows a payload no larger than the machine's memory.
// A file compressed whole with ZSTD whose frame asks for a window larger
// than all it may decompress to is refused before the decoder allocates
// the window (512 MiB for these 14 bytes); the same frame asking for 8 MiB
// is read.
func TestDecompressZstdWindow(t *testing.T) {
	frame := func(wd byte) []byte {
		return []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, wd, 0x29, 0, 0, 'h', 'e', 'l', 'l', 'o'}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := Decompress(frame(0x98))
	runtime.ReadMemStats(&after)
	const want = "open zstd stream: a frame asks for a 536870912-byte window, more than the 67108864 bytes the file may decompress to"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%v, want %q", err, want)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 32<<20 {
		t.Errorf("refusing the frame allocated %d MiB", got>>20)
	}
	if out, _, err := Decompress(frame(0x68)); err != nil || string(out) != "hello" {
		t.Errorf("a frame asking for 8 MiB: %q, %v", out, err)
	}
}

func TestDecompressLimitDefault(t *testing.T) {
	if decompressCeiling <= 0 || decompressCeiling > physicalMemory() {
		t.Errorf("ceiling %d, physical memory %d", decompressCeiling, physicalMemory())
	}
	// On Linux, physicalMemory is the kernel's MemTotal.
	if b, err := os.ReadFile("/proc/meminfo"); err == nil && runtime.GOOS == "linux" {
		var kb int64
		for _, l := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				kb, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			}
		}
		if got := physicalMemory(); kb == 0 || got < kb<<10*98/100 || got > kb<<10*102/100 {
			t.Errorf("physical memory %d bytes, MemTotal %d kB", got, kb)
		}
	}
	if got := decompressLimit(1 << 30); got > decompressCeiling || got < decompressFloor && decompressFloor <= decompressCeiling {
		t.Errorf("limit for 1 GiB: %d (floor %d, ceiling %d)", got, decompressFloor, decompressCeiling)
	}
}

// A stream whose record batches have compressed bodies is held, all its
// batches decompressed together, to the bound of a file compressed whole:
// batch after batch of small ZSTD frames of zeros is refused once their
// declared sizes pass it, before arrow-go allocates them; within it, the
// same file opens.
func TestBodyDecompressLimit(t *testing.T) {
	defer func(r, f int64) { decompressRatio, decompressFloor = r, f }(decompressRatio, decompressFloor)
	rows := []Row{
		{Op: 1, Key: EncodeKeyedKey([]byte("s"), []byte("a")), Value: make([]byte, 1<<20)},
		{Op: 1, Key: EncodeKeyedKey([]byte("s"), []byte("b")), Value: make([]byte, 1<<20)},
	}
	schema := arrow.NewSchema(canonicalFields, nil)
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithZstd())
	for range 8 {
		if err := w.Write(arrowGoBatch(schema, rows)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "zeros.snap")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// 16 MiB of values from a file of a few kilobytes.
	if _, err := Open(path, OpenOptions{}); err != nil {
		t.Fatalf("within the default bound: %v", err)
	}
	decompressRatio, decompressFloor = 100, 4<<20
	_, err := Open(path, OpenOptions{})
	if err == nil || !strings.Contains(err.Error(), "the compressed record batches so far declare") || !strings.Contains(err.Error(), "may decompress to") {
		t.Errorf("past the bound: %v", err)
	}
}

// A whole-file compressed payload cut short is an error for every
// compression, wherever the cut falls: not the decompressed prefix, which
// may be a whole stream whose checksum was never read, or nothing at all,
// which reads as empty state.
func TestDecompressTruncated(t *testing.T) {
	fixture, err := os.ReadFile("../testdata/clink/snapshot-v1.snap")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{CompressGzip, CompressZstd, CompressLZ4, CompressBzip2, CompressXZ} {
		whole := compressed(t, name, fixture)
		if plain, _, err := Decompress(whole); err != nil || !bytes.Equal(plain, fixture) {
			t.Fatalf("%s: whole stream: %d bytes, %v", name, len(plain), err)
		}
		magic := 0
		for _, m := range magics {
			if m.name == name {
				magic = len(m.magic)
			}
		}
		for cut := magic; cut < len(whole); cut++ {
			// -short (the race detector's run, where this took 30 s):
			// the first and last 64 cuts, and every 7th between.
			if testing.Short() && cut >= magic+64 && cut < len(whole)-64 && (cut-magic)%7 != 0 {
				continue
			}
			if plain, _, err := Decompress(whole[:cut]); err == nil {
				t.Errorf("%s: cut at %d of %d bytes: %d bytes decompressed, no error", name, cut, len(whole), len(plain))
			}
		}
	}
}

// FuzzDecompress: whole-file compression is read from untrusted files. Any
// bytes decompress or fail without a panic, hang or more output than the
// limit; and data compressed with each compression decompresses back to
// itself, naming that compression. The floor is lowered so that a bomb
// the fuzzer finds costs little.
func FuzzDecompress(f *testing.F) {
	defer func(fl int64) { decompressFloor = fl }(decompressFloor)
	decompressFloor = 1 << 20
	names := []string{CompressNone, CompressGzip, CompressZstd, CompressLZ4, CompressBzip2, CompressXZ}
	fixture, err := os.ReadFile("../testdata/clink/snapshot-v1.snap")
	if err != nil {
		f.Fatal(err)
	}
	for i, name := range names {
		f.Add(uint8(i), compressed(f, name, fixture))
		f.Add(uint8(i), fixture[:64])
	}
	// A skippable frame ahead of a zstd stream, and a legacy lz4 frame.
	f.Add(uint8(0), append([]byte{0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 'a', 'b', 'c'}, compressed(f, CompressZstd, fixture)...))
	f.Add(uint8(0), []byte{0x02, 0x21, 0x4c, 0x18, 5, 0, 0, 0, 0x50, 'h', 'e', 'l', 'l', 'o'})
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		out, name, err := Decompress(data)
		if err == nil && int64(len(out)) > decompressLimit(len(data)) {
			t.Fatalf("%s: %d bytes decompress to %d, over the limit %d", name, len(data), len(out), decompressLimit(len(data)))
		}
		if name != DetectCompression(data) {
			t.Fatalf("Decompress names %q, DetectCompression %q", name, DetectCompression(data))
		}
		want := names[int(which)%len(names)]
		if want == CompressNone && DetectCompression(data) != CompressNone {
			return // uncompressed data that starts with a magic is not returned as is
		}
		back, name, err := Decompress(compressed(t, want, data))
		if err != nil || name != want || !bytes.Equal(back, data) {
			t.Fatalf("%s round trip of %d bytes: %q, %d bytes, equal %v, %v", want, len(data), name, len(back), bytes.Equal(back, data), err)
		}
	})
}

// The bound on what compressed record batches declare uncompressed is the
// file's, by its size as stored: it is not renewed for each stream a file
// holds (CLMB blobs, inline materialisations), nor taken from the size of
// a file compressed whole once decompressed (whose trailing zeros would
// raise it at no cost). Each file below holds 4 MiB of values as ZSTD
// frames of a few kilobytes; each stream alone is within a bound of 1 MiB.
func TestBodyDecompressLimitPerFile(t *testing.T) {
	defer func(r, f int64) { decompressRatio, decompressFloor = r, f }(decompressRatio, decompressFloor)
	decompressRatio, decompressFloor = 8, 1<<20
	key := EncodeKeyedKey([]byte("s"), []byte("a"))
	// A changelog blob whose batch is compressed with ZSTD: an empty
	// materialisation and a put of 512 KiB of zeros.
	schema := arrow.NewSchema(changelogFields, nil)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer rb.Release()
	for i, kind := range []uint8{rowKindMaterialised, rowKindPut} {
		rb.Field(0).(*array.Uint8Builder).Append(kind)
		rb.Field(1).(*array.Uint64Builder).Append(7)
		rb.Field(2).(*array.BinaryBuilder).Append(key[:i*len(key)])
		rb.Field(3).(*array.BinaryBuilder).Append(make([]byte, i*512<<10))
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	var blob bytes.Buffer
	w := ipc.NewWriter(&blob, ipc.WithSchema(schema), ipc.WithZstd())
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	blobs := make([][]byte, 8)
	for i := range blobs {
		blobs[i] = blob.Bytes()
	}
	// A changelog blob of 8 inline materialisations of 512 KiB each.
	mat := zstdStreamOf(t, []Row{{Op: 7, Key: key, Value: make([]byte, 512<<10)}})
	kinds, mats := make([]uint8, 8), make([]Row, 8)
	for i := range mats {
		mats[i] = Row{Value: mat}
	}
	// A canonical stream of 4 MiB of values, padded with zeros after its
	// end-of-stream marker to just under the bound, compressed whole.
	plain := zstdStreamOf(t, []Row{
		{Op: 7, Key: EncodeKeyedKey([]byte("s"), []byte("a")), Value: make([]byte, 2<<20)},
		{Op: 7, Key: EncodeKeyedKey([]byte("s"), []byte("b")), Value: make([]byte, 2<<20)},
	})
	plain = append(plain, make([]byte, 1<<20-len(plain))...)
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"clmb.snap", FrameCLMB(blobs)},
		{"materialisations.snap", vtChangelogStream(t, kinds, mats)},
		{"padded.snap.gz", compressed(t, CompressGzip, plain)},
	} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(path, OpenOptions{AllowMissingSidecar: true})
		if err == nil || !strings.Contains(err.Error(), "the compressed record batches so far declare") || !strings.Contains(err.Error(), fmt.Sprintf("more than a %d-byte file may decompress to", len(c.data))) {
			t.Errorf("%s (%d bytes): %v, want the file's bound", c.name, len(c.data), err)
		}
	}
}

// A zstd frame may ask for a window up to what its file may decompress to
// (zstd --long=30 asks for 1 GiB): the decoder's own bound (512 MiB) does
// not refuse it.
func TestDecompressZstdLongWindow(t *testing.T) {
	data := make([]byte, 1200000) // 1.2 MB of noise: 1.2 GB may come of it
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	z := compressed(t, CompressZstd, data)
	if z[4]&0x20 != 0 || len(z) < 1<<20 {
		t.Fatalf("test setup: frame header descriptor %08b (single segment: no window descriptor), %d bytes", z[4], len(z))
	}
	z[5] = 20 << 3 // window log 30: 1 GiB
	out, _, err := Decompress(z)
	if err != nil || !bytes.Equal(out, data) {
		t.Errorf("a frame asking for a 1 GiB window in a %d-byte file: %d bytes, %v", len(z), len(out), err)
	}
}

// An xz block asking for a dictionary larger than its file may decompress
// to is refused before the decoder allocates it; the same file with its
// own dictionary is read.
func TestDecompressXZDictionary(t *testing.T) {
	data := []byte(strings.Repeat("state of a subtask ", 5000))
	x := compressed(t, CompressXZ, data)
	if out, _, err := Decompress(x); err != nil || !bytes.Equal(out, data) {
		t.Fatalf("xz of %d bytes: %d bytes, %v", len(data), len(out), err)
	}
	// Streams joined (as cat joins files) are read one after the other.
	two := slices.Concat(x, compressed(t, CompressXZ, []byte("and more")))
	if out, _, err := Decompress(two); err != nil || string(out) != string(data)+"and more" {
		t.Fatalf("two xz streams: %d bytes, %v", len(out), err)
	}
	// The block header follows the 12-byte stream header: its size, its
	// flags, the sizes the flags say it holds, then the LZMA2 filter (id
	// 0x21, 1 byte of properties: the dictionary size) and a CRC32.
	h := x[12 : 12+(int(x[12])+1)*4]
	i := 2
	for _, bit := range []byte{0x40, 0x80} {
		if h[1]&bit != 0 {
			for h[i]&0x80 != 0 {
				i++
			}
			i++
		}
	}
	if h[i] != 0x21 || h[i+1] != 1 {
		t.Fatalf("test setup: block header % x: no LZMA2 filter at %d", h, i)
	}
	h[i+2] = 40 // 4 GiB
	binary.LittleEndian.PutUint32(h[len(h)-4:], crc32.ChecksumIEEE(h[:len(h)-4]))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := Decompress(x)
	runtime.ReadMemStats(&after)
	const want = "a block asks for an LZMA2 dictionary larger than the 67108864 bytes the file may decompress to"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%v, want %q", err, want)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 32<<20 {
		t.Errorf("refusing the block allocated %d MiB", got>>20)
	}
}

// The bound on what compressed record batches declare uncompressed is the
// tree's as well as each file's: the files of a tree may decompress to what
// one file as large as all of them may. Each file's bound has a floor, which
// each of a tree's files would otherwise have in full: a few kilobytes of
// ZSTD frames of zeros in each of many files would be held as gigabytes.
// Each file below holds 1.5 MiB of zeros in a few kilobytes, within a
// file's bound of 4 MiB; two of them are within the tree's, four are not.
func TestBodyDecompressLimitPerTree(t *testing.T) {
	defer func(r, f int64) { decompressRatio, decompressFloor = r, f }(decompressRatio, decompressFloor)
	decompressRatio, decompressFloor = 8, 4<<20
	data := zstdStreamOf(t, []Row{{Op: 7, Key: []byte{0xff, 'x'}, Value: make([]byte, 3<<19)}})
	for _, c := range []struct {
		files int
		ok    bool
	}{{1, true}, {2, true}, {4, false}} {
		dir := t.TempDir()
		for i := range c.files {
			p := filepath.Join(dir, "v1", fmt.Sprint(i), "checkpoint-3.snap")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		sp, err := Open(dir, OpenOptions{Columnar: true})
		if err == nil {
			sp.Close()
		}
		switch {
		case c.ok && err != nil:
			t.Errorf("%d files: %v, want the tree read", c.files, err)
		case !c.ok && (err == nil || !strings.Contains(err.Error(), "the compressed record batches of the tree's files read so far declare")):
			t.Errorf("%d files: %v, want the tree's bound", c.files, err)
		}
	}
}
