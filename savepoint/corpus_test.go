package savepoint

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The bad-input corpus lives in testdata/bad (regenerated with -update from
// the definitions below). Every file must fail to decode with a message that
// names what is wrong; none may panic.
const badDir = "../testdata/bad"

// fixtureRows are the rows of clink's snapshot-v1.snap (format section 8).
var fixtureRows = []Row{
	{42, hexBytes("24636f756e74737c0100000000000000"), hexBytes("6400000000000000")},
	{42, hexBytes("07636f756e74737c0200000000000000"), hexBytes("c800000000000000")},
	{42, hexBytes("62636f756e74737c0700000000000000"), hexBytes("bc02000000000000")},
}

// streamOf writes the fixture rows under an arbitrary schema, for wrong-schema cases.
func streamOf(t testing.TB, fields []arrow.Field, md map[string]string, batches int) []byte {
	t.Helper()
	var keys, vals []string
	for _, k := range sortedKeys(md) {
		keys, vals = append(keys, k), append(vals, md[k])
	}
	var meta *arrow.Metadata
	if md != nil {
		m := arrow.NewMetadata(keys, vals)
		meta = &m
	}
	schema := arrow.NewSchema(fields, meta)
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	for b := 0; b < batches; b++ {
		rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for _, r := range fixtureRows {
			for i, f := range fields {
				switch bld := rb.Field(i).(type) {
				case *array.Uint64Builder:
					bld.Append(r.Op)
				case *array.Int64Builder:
					bld.Append(int64(r.Op))
				case *array.Uint8Builder:
					bld.Append(1)
				case *array.BinaryBuilder:
					bld.Append(pick(f.Name, r))
				case *array.StringBuilder:
					bld.Append(string(pick(f.Name, r)))
				case *array.Float64Builder:
					bld.Append(float64(r.Op))
				default:
					t.Fatalf("unsupported builder %T", bld)
				}
			}
		}
		rec := rb.NewRecordBatch()
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		rb.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func pick(name string, r Row) []byte {
	if strings.Contains(name, "value") {
		return r.Value
	}
	return r.Key
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := range ks {
		for j := i + 1; j < len(ks); j++ {
			if ks[j] < ks[i] {
				ks[i], ks[j] = ks[j], ks[i]
			}
		}
	}
	return ks
}

var (
	u64  = arrow.PrimitiveTypes.Uint64
	bin  = arrow.BinaryTypes.Binary
	lbin = arrow.BinaryTypes.LargeBinary
	fv1  = map[string]string{MetaFormatVersion: "1"}
)

func fields(nullable bool, types ...arrow.DataType) []arrow.Field {
	names := []string{"op_id", "key_bytes", "value_bytes", "extra"}
	out := make([]arrow.Field, len(types))
	for i, ty := range types {
		out[i] = arrow.Field{Name: names[i], Type: ty, Nullable: nullable}
	}
	return out
}

type badCase struct {
	name string
	make func(t testing.TB, fixture []byte) []byte
	want string // substring of the error
}

var badCases = []badCase{
	{"truncated-body.snap", func(t testing.TB, fx []byte) []byte { return fx[:600] }, "truncated message body"},
	{"truncated-header.snap", func(t testing.TB, fx []byte) []byte { return fx[:100] }, "truncated message metadata"},
	{"truncated-eos.snap", func(t testing.TB, fx []byte) []byte { return fx[:len(fx)-8] }, "without the end-of-stream marker"},
	{"truncated-2-bytes.snap", func(t testing.TB, fx []byte) []byte { return fx[:2] }, "truncated message header"},
	{"bitflip-key-offsets.snap", func(t testing.TB, fx []byte) []byte {
		// key offsets live at body+24 (section 8); make them decrease.
		b := bytes.Clone(fx)
		binary.LittleEndian.PutUint32(b[568+24+8:], 1000)
		return b
	}, `column "key_bytes"`},
	{"short-op-buffer.snap", func(t testing.TB, fx []byte) []byte {
		// The op_id values buffer (offset 0, 24 bytes: 3 rows) declared 8
		// bytes long: the other two ids would be read from the buffers
		// after it.
		b := bytes.Clone(fx)
		binary.LittleEndian.PutUint64(b[opBufferEntry(t, b)+8:], 8)
		return b
	}, "record batch buffer 1, the values of column 0, holds 8 bytes; its 3 rows need 24"},
	{"buffer-past-body.snap", func(t testing.TB, fx []byte) []byte {
		// The op_id values buffer moved 1 MiB into a 128-byte body.
		b := bytes.Clone(fx)
		binary.LittleEndian.PutUint64(b[opBufferEntry(t, b):], 1<<20)
		return b
	}, "record batch buffer 1 (24 bytes at 1048576) does not fit in the 128-byte body"},
	{"rows-past-buffers.snap", func(t testing.TB, fx []byte) []byte {
		// The first column's node declares a billion rows.
		b := bytes.Clone(fx)
		node := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 3), 0)
		at := bytes.Index(b, bytes.Repeat(node, 3))
		if at < 0 {
			t.Fatal("the field nodes are not in the fixture's batch header")
		}
		binary.LittleEndian.PutUint64(b[at:], 1e9)
		return b
	}, "record batch buffer 1, the values of column 0, holds 24 bytes; its 1000000000 rows need 8000000000"},
	{"bitflip-metadata-length.snap", func(t testing.TB, fx []byte) []byte {
		b := bytes.Clone(fx)
		binary.LittleEndian.PutUint32(b[4:], 0x7fff0000)
		return b
	}, "invalid message metadata length"},
	{"bitflip-body-length.snap", func(t testing.TB, fx []byte) []byte {
		b := bytes.Clone(fx)
		// the record batch header's body length: make the body claim more bytes than the file has.
		i := bytes.Index(b[8+288:], []byte{128, 0, 0, 0, 0, 0, 0, 0})
		if i < 0 {
			t.Fatal("body length not found")
		}
		binary.LittleEndian.PutUint64(b[8+288+i:], 1<<40)
		return b
	}, "truncated message body"},
	{"not-arrow.snap", func(t testing.TB, fx []byte) []byte { return []byte("op_id,key_bytes,value_bytes\n42,abc,def\n") }, "invalid message metadata length"},
	{"wrong-names.snap", func(t testing.TB, fx []byte) []byte {
		f := fields(false, u64, bin, bin)
		f[1].Name = "key"
		return streamOf(t, f, fv1, 1)
	}, `column 1 is named "key", expected "key_bytes"`},
	{"wrong-type-utf8.snap", func(t testing.TB, fx []byte) []byte {
		return streamOf(t, fields(false, u64, arrow.BinaryTypes.String, bin), fv1, 1)
	}, `column "key_bytes" has type utf8, expected binary`},
	{"wrong-type-int64.snap", func(t testing.TB, fx []byte) []byte {
		return streamOf(t, fields(false, arrow.PrimitiveTypes.Int64, bin, bin), fv1, 1)
	}, `column "op_id" has type int64, expected uint64`},
	{"extra-column.snap", func(t testing.TB, fx []byte) []byte {
		return streamOf(t, fields(false, u64, bin, bin, bin), fv1, 1)
	}, "expected 3 columns, got 4"},
	{"nullable.snap", func(t testing.TB, fx []byte) []byte {
		return streamOf(t, fields(true, u64, bin, bin), fv1, 1)
	}, `column "op_id" is nullable`},
	{"large-binary.snap", func(t testing.TB, fx []byte) []byte {
		return streamOf(t, fields(false, u64, lbin, lbin), fv1, 1)
	}, `column "key_bytes" has type large_binary, expected binary`},
	{"polars-style.snap", func(t testing.TB, fx []byte) []byte {
		// what nodejs-polars writes: LargeBinary, nullable, 20 batches, no metadata.
		return streamOf(t, fields(true, u64, lbin, lbin), nil, 20)
	}, `column "op_id" is nullable`},
	{"format-version-2.snap", func(t testing.TB, fx []byte) []byte {
		return streamOf(t, fields(false, u64, bin, bin), map[string]string{MetaFormatVersion: "2"}, 1)
	}, "format version 2 but this build reads at most version 1"},
	{"format-version-1.0.snap", func(t testing.TB, fx []byte) []byte {
		return streamOf(t, fields(false, u64, bin, bin), map[string]string{MetaFormatVersion: "1.0"}, 1)
	}, `not a plain decimal number ("1.0")`},
	{"format-version-empty.snap", func(t testing.TB, fx []byte) []byte {
		return streamOf(t, fields(false, u64, bin, bin), map[string]string{MetaFormatVersion: ""}, 1)
	}, `not a plain decimal number ("")`},
	{"format-version-0.snap", func(t testing.TB, fx []byte) []byte {
		return streamOf(t, fields(false, u64, bin, bin), map[string]string{MetaFormatVersion: "0"}, 1)
	}, "format version 0, which does not exist"},
	{"corrupt-version-map.snap", func(t testing.TB, fx []byte) []byte {
		return streamOf(t, fields(false, u64, bin, bin), map[string]string{MetaFormatVersion: "1", MetaStateVersions: "42|counts"}, 1)
	}, "clink.state_versions"},
	{"conflicting-version-map.snap", func(t testing.TB, fx []byte) []byte {
		return streamOf(t, fields(false, u64, bin, bin), map[string]string{MetaFormatVersion: "1", MetaStateVersions: "42|T|1|a\n42|T|2|b"}, 1)
	}, "already bound to slot"},
	{"changelog-no-materialisation.snap", func(t testing.TB, fx []byte) []byte {
		f := []arrow.Field{{Name: "row_kind", Type: arrow.PrimitiveTypes.Uint8}, {Name: "op_id", Type: u64}, {Name: "key_bytes", Type: bin}, {Name: "value_bytes", Type: bin}}
		return streamOf(t, f, nil, 1) // row_kind 1 in every row
	}, "changelog snapshot is malformed: no materialisation row (row_kind 0 or 3)"},
	{"clmb-truncated.snap", func(t testing.TB, fx []byte) []byte {
		return FrameCLMB([][]byte{fx})[:200]
	}, "truncated CLMB frame"},
}

func TestBadCorpus(t *testing.T) {
	fixture, err := os.ReadFile("../testdata/clink/snapshot-v1.snap")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		os.MkdirAll(badDir, 0o755)
		for _, c := range badCases {
			if err := os.WriteFile(filepath.Join(badDir, c.name), c.make(t, fixture), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range badCases {
		t.Run(c.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(badDir, c.name))
			if err != nil {
				t.Fatalf("%v (run go test ./savepoint -run TestBadCorpus -update)", err)
			}
			if !bytes.Equal(data, c.make(t, fixture)) {
				t.Fatalf("%s differs from its definition; regenerate with -update", c.name)
			}
			_, err = Open(filepath.Join(badDir, c.name), OpenOptions{})
			if err == nil {
				t.Fatal("decoded without error")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not contain %q", err, c.want)
			}
			if !strings.Contains(err.Error(), c.name) {
				t.Fatalf("error %q does not name the file", err)
			}
			// Only a stream cut at a message boundary is one without its
			// marker, which clink's reader takes as complete.
			if got, want := errors.Is(err, ErrNoEndOfStream), c.name == "truncated-eos.snap"; got != want {
				t.Fatalf("errors.Is(%v, ErrNoEndOfStream) = %v", err, got)
			}
		})
	}
}

// FuzzDecodeSnapshot feeds arbitrary bytes to the decoder: it must return rows
// or an error, never panic; whatever decodes must re-encode and decode to the
// same logical state.
func FuzzDecodeSnapshot(f *testing.F) {
	fixture, err := os.ReadFile("../testdata/clink/snapshot-v1.snap")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(fixture)
	f.Add([]byte{})
	f.Add(FrameCLMB([][]byte{fixture, fixture}))
	f.Add(zstdStream(f, 50)) // compressed buffers
	// A changelog: the fixture materialised inline, then puts and erases of
	// its keys and others, and a row of a kind clink replays as a put.
	var changelog bytes.Buffer
	fixSnap, err := DecodeSnapshot(fixture, ReadOptions{})
	if err != nil {
		f.Fatal(err)
	}
	fixRows := fixSnap.Rows
	entries := []ChangelogEntry{{Kind: rowKindMaterialised, Row: Row{Value: fixture}}}
	for i, r := range fixRows {
		entries = append(entries, ChangelogEntry{Kind: []uint8{rowKindPut, rowKindErase, 9}[i%3], Row: Row{Op: r.Op, Key: r.Key, Value: []byte("new")}})
	}
	if err := EncodeChangelog(&changelog, entries); err != nil {
		f.Fatal(err)
	}
	f.Add(changelog.Bytes())
	for _, b := range hostileSeeds(f) {
		f.Add(b)
	}
	for _, c := range badCases {
		f.Add(c.make(f, fixture))
	}
	if ents, err := filepath.Glob("../testdata/independent/*/v*/*/*.snap"); err == nil {
		for _, p := range ents {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		snap, err := DecodeSnapshot(data, ReadOptions{Resolve: func(string) ([]byte, error) { return fixture, nil }})
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := EncodeStream(&buf, CanonicalMetadata(snap.Metadata, snap.Versions), snap.Rows); err != nil {
			if strings.Contains(err.Error(), "binary column limit") {
				return
			}
			t.Fatalf("re-encode: %v", err)
		}
		again, err := DecodeSnapshot(buf.Bytes(), ReadOptions{})
		if err != nil {
			t.Fatalf("decode of re-encoded stream: %v", err)
		}
		if !rowsEqual(Logical(snap.Rows), again.Rows) {
			t.Fatal("logical state changed through a write")
		}
	})
}

func rowsEqual(a, b []Row) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Op != b[i].Op || !bytes.Equal(a[i].Key, b[i].Key) || !bytes.Equal(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}

func hexBytes(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzOpenMapped opens arbitrary bytes as a file the way the commands do
// (memory-mapped, checksummed with pread while it is decoded, offsets
// validated and released a chunk at a time), checks the order, and writes
// the rows back from the map (runs read with pread through a window): it
// must return an error or bytes identical to writing the same rows from
// memory, never panic or fault. A key probe asked at open lets through
// exactly the keys it should (see KeyHits).
func FuzzOpenMapped(f *testing.F) {
	fixture, err := os.ReadFile("../testdata/clink/snapshot-v1.snap")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(fixture)
	f.Add([]byte{})
	f.Add(zstdStream(f, 50)) // compressed buffers: the copying reader
	var keyed bytes.Buffer   // sorted keyed rows: runs, and hits
	rows, _ := probeRows(300, modProbe{3})
	if err := WriteStream(&keyed, nil, RowSlice(rows)); err != nil {
		f.Fatal(err)
	}
	f.Add(keyed.Bytes())
	// Compressed as a whole: decompressed into a temporary file, mapped.
	f.Add(compressed(f, CompressZstd, fixture))
	f.Add(compressed(f, CompressGzip, keyed.Bytes()))
	for _, b := range hostileSeeds(f) {
		f.Add(b)
	}
	for _, c := range badCases {
		f.Add(c.make(f, fixture))
	}
	// Changelogs: replayed in memory and through temporary files alike.
	f.Add(changelogSeed(f, 40, 1))
	f.Add(changelogSeed(f, 200, 3))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "in.snap")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		slot := &ProbeSlot{}
		probe := modProbe{3}
		if len(data)%2 == 0 {
			// A probe that also takes 8-byte user keys as words.
			slot.Set(wordProbe{probe, new(atomic.Int64)})
		} else {
			slot.Set(probe)
		}
		sp, err := Open(path, OpenOptions{Columnar: true, Probe: slot})
		if err != nil {
			return
		}
		defer sp.Close()
		snap := sp.Files[0].Snapshot
		if snap.Variant == Changelog {
			checkReplayInFile(t, path)
		}
		if snap.Variant != Canonical || !snap.Columnar() {
			return
		}
		checkSteps(t, "fuzz", snap)
		if h := snap.KeyHits(); h != nil {
			cur := snap.NewCursor()
			for _, st := range h.stretches {
				var want []int
				for i := st.from; i < st.to; i++ {
					if k := cur.Key(i); separatorIndex(k) >= 0 && probe.may(k[separatorIndex(k)+1:]) {
						want = append(want, i)
					}
				}
				got, keys, ends, ok := h.Hits(st.from, st.to)
				if !ok || !slices.Equal(got, want) {
					t.Fatalf("rows %d-%d: hits %v, want %v", st.from, st.to, got, want)
				}
				for k, i := range got {
					if key := keys[ends[k]:ends[k+1]]; !bytes.Equal(key, cur.Key(i)) {
						t.Fatalf("row %d: hit's key %x, want %x", i, key, cur.Key(i))
					}
				}
			}
		}
		sorted, strict := snap.Order()
		if strict && !sorted {
			t.Fatal("strictly increasing but not sorted")
		}
		cur := snap.NewCursor()
		idx := make([]int, cur.Len())
		plain := make(RowSlice, cur.Len())
		for i := range idx {
			idx[i], plain[i] = i, cur.Row(i)
		}
		var a, b bytes.Buffer
		errA := WriteStream(&a, snap.Metadata, selection{cur: snap.NewCursor(), idx: idx})
		errB := WriteStream(&b, snap.Metadata, plain)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("writing from the map: %v; from memory: %v", errA, errB)
		}
		if errA == nil && !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatal("rows written from the map differ from the same rows written from memory")
		}
	})
}

// changelogSeed returns a changelog payload: an inline materialisation of
// rows keys, then a log of as many puts and erases of those keys and
// others, in blobs blobs (CLMB framing when more than one).
func changelogSeed(tb testing.TB, rows, blobs int) []byte {
	tb.Helper()
	key := func(i int) []byte { return EncodeKeyedKey([]byte("s"), []byte{byte(i), byte(i >> 8)}) }
	var out bytes.Buffer
	for b := range blobs {
		var mat []Row
		for i := range rows {
			mat = append(mat, Row{Op: uint64(1 + i%2), Key: key(i + b), Value: []byte{byte(i)}})
		}
		var m bytes.Buffer
		if err := EncodeStream(&m, nil, mat); err != nil {
			tb.Fatal(err)
		}
		entries := []ChangelogEntry{{Kind: RowKindMaterialised, Row: Row{Value: m.Bytes()}}}
		for i := range rows {
			kind := []uint8{RowKindPut, RowKindErase, RowKindPut}[i%3]
			entries = append(entries, ChangelogEntry{Kind: kind, Row: Row{Op: uint64(1 + i%2), Key: key(i * 7 % (2 * rows)), Value: []byte{byte(i), 1}}})
		}
		var blob bytes.Buffer
		if err := EncodeChangelog(&blob, entries); err != nil {
			tb.Fatal(err)
		}
		if blobs == 1 {
			return blob.Bytes()
		}
		if b == 0 {
			out.WriteString("CLMB")
			out.Write(binary.LittleEndian.AppendUint32(nil, uint32(blobs)))
		}
		out.Write(binary.LittleEndian.AppendUint32(nil, uint32(blob.Len())))
		out.Write(blob.Bytes())
	}
	return out.Bytes()
}

// checkReplayInFile opens the changelog payload at path twice: replayed in
// memory, and through temporary files (as one of replayFileRows rows or
// more is). Both must open or neither, to the same state, counts and keys
// erased by the log.
func checkReplayInFile(t *testing.T, path string) {
	t.Helper()
	defer func(r int) { replayFileRows = r }(replayFileRows)
	var snaps [2]*Snapshot
	var errs [2]error
	for i, rows := range []int{math.MaxInt, 0} {
		replayFileRows = rows
		sp, err := Open(path, OpenOptions{Columnar: true})
		if errs[i] = err; err != nil {
			continue
		}
		defer sp.Close()
		snaps[i] = sp.Files[0].Snapshot
	}
	if (errs[0] == nil) != (errs[1] == nil) {
		t.Fatalf("replayed in memory: %v; through temporary files: %v", errs[0], errs[1])
	}
	if errs[0] != nil {
		return
	}
	mem, file := snaps[0], snaps[1]
	got, want := snapRows(file), snapRows(mem)
	for i := range max(len(got), len(want)) {
		if i >= len(got) || i >= len(want) || fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
			t.Fatalf("%d rows replayed through temporary files, %d in memory; first difference at row %d", len(got), len(want), i)
		}
	}
	a, b := *mem.Changelog, *file.Changelog
	if a.Blobs != b.Blobs || a.LogRows != b.LogRows || a.Puts != b.Puts || a.Erases != b.Erases ||
		!slices.Equal(a.Handles, b.Handles) || !slices.Equal(a.InBlob, b.InBlob) || len(a.erased) != len(b.erased) {
		t.Fatalf("changelog through temporary files %+v, in memory %+v", b, a)
	}
	for _, i := range a.erased {
		if r := a.log.Row(int(i)); !file.ErasedByLog(r.Op, r.Key) {
			t.Fatalf("op %d key %x: erased by the log in memory, not through temporary files", r.Op, r.Key)
		}
	}
}

// opBufferEntry returns where the fixture's batch header describes the
// op_id values buffer (offset 0, 24 bytes: 3 rows), followed by the key
// column's empty validity bitmap (at 24).
func opBufferEntry(t testing.TB, fx []byte) int {
	at := bytes.Index(fx, binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 0), 24), 24), 0))
	if at < 0 {
		t.Fatal("the op_id buffer's entry is not in the fixture's batch header")
	}
	return at
}

// TestCutIntoEndOfStream: a stream that ends where its end-of-stream
// marker would start is one without it (ErrNoEndOfStream, which clink's
// reader takes as complete); one cut inside the marker, or inside a
// record batch, is not (Arrow C++'s reader refuses both as corrupted).
func TestCutIntoEndOfStream(t *testing.T) {
	fx, err := os.ReadFile(filepath.Join("..", "testdata", "clink", "snapshot-v1.snap"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(fx, []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}) {
		t.Fatal("the fixture does not end with the marker")
	}
	for cut := 1; cut <= 8; cut++ {
		_, err := DecodeSnapshot(fx[:len(fx)-cut], ReadOptions{})
		if err == nil || errors.Is(err, ErrNoEndOfStream) != (cut == 8) {
			t.Errorf("cut %d bytes: %v, want ErrNoEndOfStream only for the whole marker", cut, err)
		}
	}
	if _, err := DecodeSnapshot(fx[:len(fx)-20], ReadOptions{}); err == nil || errors.Is(err, ErrNoEndOfStream) {
		t.Errorf("cut inside the last message: %v, want another error", err)
	}
}
