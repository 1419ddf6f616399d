package savepoint

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// emptyOffsetsStream is a canonical stream of one zero-row record batch
// whose binary columns have no offsets buffer (length 0), as Arrow Java
// writes an empty batch, followed by a batch holding the fixture's rows.
func emptyOffsetsStream(t testing.TB) []byte {
	t.Helper()
	meta := arrow.NewMetadata([]string{MetaFormatVersion}, []string{"1"})
	schema := arrow.NewSchema(canonicalFields, &meta)
	none := []*memory.Buffer{nil, nil, nil}
	empty := array.NewRecordBatch(schema, []arrow.Array{
		array.MakeFromData(array.NewData(u64, 0, none[:2], nil, 0, 0)),
		array.MakeFromData(array.NewData(bin, 0, none, nil, 0, 0)),
		array.MakeFromData(array.NewData(bin, 0, none, nil, 0, 0)),
	}, 0)
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	for _, rec := range []arrow.RecordBatch{empty, arrowGoBatch(schema, fixtureRows)} {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// hostileSeeds are the inputs of the tests below, for the fuzz targets.
func hostileSeeds(t testing.TB) [][]byte {
	t.Helper()
	return [][]byte{
		emptyOffsetsStream(t),
		hostileStream(t, schemaShape{nest: 8, children: 64}),
		hostileStream(t, schemaShape{schemaMeta: 1100}),
		hostileStream(t, schemaShape{fieldMeta: 100, valueLen: 1 << 10}),
		hostileStream(t, schemaShape{sameField: 64, nameLen: 1 << 10}),
		batchMetadataStream(100, 1<<10),
		hostileStream(t, schemaShape{dictionary: true}),
		dictionaryBatchStream(t, 1<<46),
		unknownCodecStream(t, 0x80),
		declaring(t, fixtureRows, 1, 1000),
		overlappingStream(t),
		hiddenBatchStream(t),
	}
}

// hiddenBatchStream is the clink fixture's schema, an end-of-stream
// marker, then its batch and another marker: a stream ended early by a
// batch's length read as 0 (see TestHiddenStream).
func hiddenBatchStream(t testing.TB) []byte {
	fixture, err := os.ReadFile("../testdata/clink/snapshot-v1.snap")
	if err != nil {
		t.Fatal(err)
	}
	ms := messagesOf(t, fixture)
	eos := []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}
	return slices.Concat(fixture[:ms[0].end], eos, fixture[ms[1].start:ms[1].end], eos)
}

// A zero-row batch whose binary columns declare empty offsets buffers is a
// legal empty batch: it opens, columnar or not, as a batch with the single
// offset 0 (arrow-go's ValueOffsets panics on it, which used to kill the
// process on a columnar open).
func TestEmptyBatchWithoutOffsets(t *testing.T) {
	data := emptyOffsetsStream(t)
	path := filepath.Join(t.TempDir(), "empty-offsets.snap")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, columnar := range []bool{false, true} {
		sp, err := Open(path, OpenOptions{Columnar: columnar, AllowMissingSidecar: true})
		if err != nil {
			t.Fatalf("columnar %v: %v", columnar, err)
		}
		snap := sp.Files[0].Snapshot
		if len(snap.Batches) != 2 || snap.Batches[0].Len() != 0 {
			t.Fatalf("columnar %v: batches %v", columnar, snap.BatchRows)
		}
		for _, offs := range [][]int32{snap.Batches[0].KeyOffs, snap.Batches[0].ValOffs} {
			if len(offs) != 1 || offs[0] != 0 {
				t.Fatalf("columnar %v: offsets of the empty batch %v, want [0]", columnar, offs)
			}
		}
		var got []Row
		snap.EachRow(func(_ int, r Row) bool { got = append(got, r); return true })
		if !rowsEqual(got, fixtureRows) {
			t.Fatalf("columnar %v: rows %v", columnar, got)
		}
		sp.Close()
	}
}

// schemaShape shapes a hand-built schema message (see hostileStream): each
// count is of vector entries that all point at one table, as no writer
// lays them out but a flatbuffer allows.
type schemaShape struct {
	nest, children int  // op_id becomes nest levels of structs of that many children
	dictionary     bool // key_bytes is dictionary-encoded
	// entries of the schema's, value_bytes's and the message's metadata,
	// with values of valueLen bytes
	schemaMeta, fieldMeta, msgMeta, valueLen int
	// fields, all op_id, with a name of nameLen bytes when it is not 0
	sameField, nameLen int
	// the schema big-endian; the message's version (V5 unless versionSet)
	bigEndian, versionSet bool
	version               int16
}

// shapedSchema builds the metadata of a schema message of the canonical
// fields, shaped by s.
func shapedSchema(s schemaShape) []byte {
	b := flatbuffers.NewBuilder(1024)
	same := func(t flatbuffers.UOffsetT, n int) flatbuffers.UOffsetT {
		if n == 0 {
			return 0
		}
		b.StartVector(4, n, 4)
		for range n {
			b.PrependUOffsetT(t)
		}
		return b.EndVector(n)
	}
	kvs := func(n int) flatbuffers.UOffsetT {
		if n == 0 {
			return 0
		}
		k, v := b.CreateString("k"), b.CreateByteString(bytes.Repeat([]byte{'v'}, s.valueLen))
		b.StartObject(2)
		b.PrependUOffsetTSlot(0, k, 0)
		b.PrependUOffsetTSlot(1, v, 0)
		return same(b.EndObject(), n)
	}
	intType := func(bits int32, signed bool) flatbuffers.UOffsetT {
		b.StartObject(2)
		b.PrependInt32Slot(0, bits, 0)
		b.PrependBoolSlot(1, signed, false)
		return b.EndObject()
	}
	const typeInt, typeBinary, typeStruct = 2, 4, 13
	field := func(name string, typ byte, t, dict, children, meta flatbuffers.UOffsetT) flatbuffers.UOffsetT {
		n := b.CreateString(name)
		b.StartObject(7)
		b.PrependUOffsetTSlot(0, n, 0)
		b.PrependByteSlot(2, typ, 0)
		b.PrependUOffsetTSlot(3, t, 0)
		b.PrependUOffsetTSlot(4, dict, 0)
		b.PrependUOffsetTSlot(5, children, 0)
		b.PrependUOffsetTSlot(6, meta, 0)
		return b.EndObject()
	}
	empty := func() flatbuffers.UOffsetT { b.StartObject(0); return b.EndObject() }

	name := "op_id"
	if s.nameLen > 0 {
		name = strings.Repeat("o", s.nameLen)
	}
	op := field(name, typeInt, intType(64, false), 0, 0, 0)
	for range s.nest {
		op = field("s", typeStruct, empty(), 0, same(op, s.children), 0)
	}
	var dict flatbuffers.UOffsetT
	if s.dictionary {
		idx := intType(32, true)
		b.StartObject(4)
		b.PrependUOffsetTSlot(1, idx, 0)
		dict = b.EndObject()
	}
	key := field("key_bytes", typeBinary, empty(), dict, 0, 0)
	val := field("value_bytes", typeBinary, empty(), 0, 0, kvs(s.fieldMeta))
	var fs flatbuffers.UOffsetT
	if s.sameField > 0 {
		fs = same(op, s.sameField)
	} else {
		b.StartVector(4, 3, 4)
		b.PrependUOffsetT(val)
		b.PrependUOffsetT(key)
		b.PrependUOffsetT(op)
		fs = b.EndVector(3)
	}
	md := kvs(s.schemaMeta)
	b.StartObject(4) // Schema
	if s.bigEndian {
		b.PrependInt16Slot(0, 1, 0)
	}
	b.PrependUOffsetTSlot(1, fs, 0)
	b.PrependUOffsetTSlot(2, md, 0)
	schema := b.EndObject()
	mmd := kvs(s.msgMeta)
	b.StartObject(5) // Message
	version := int16(metadataV5)
	if s.versionSet {
		version = s.version
	}
	b.PrependInt16Slot(0, version, 0)
	b.PrependByteSlot(1, msgSchema, 0)
	b.PrependUOffsetTSlot(2, schema, 0)
	b.PrependUOffsetTSlot(4, mmd, 0)
	b.Finish(b.EndObject())
	return b.FinishedBytes()
}

// frame frames IPC message metadata (continuation, length, metadata padded
// to 8 bytes) followed by its body.
func frame(meta, body []byte) []byte {
	padded := append(bytes.Clone(meta), make([]byte, (8-len(meta)%8)%8)...)
	out := binary.LittleEndian.AppendUint32(nil, continuation)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(padded)))
	return append(append(out, padded...), body...)
}

// hostileStream is the fixture's rows as arrow-go writes them, with the
// schema message replaced by one shaped by s.
func hostileStream(t testing.TB, s schemaShape) []byte {
	t.Helper()
	fx := streamOf(t, fields(false, u64, bin, bin), fv1, 1)
	rest := fx[8+binary.LittleEndian.Uint32(fx[4:]):]
	return append(frame(shapedSchema(s), nil), rest...)
}

// openWritten writes data to a file named name and opens it, columnar; the
// savepoint is closed when the test ends.
func openWritten(t testing.TB, name string, data []byte) *Savepoint {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := Open(path, OpenOptions{Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	return sp
}

// openBytes writes data to a file named name and opens it, columnar or not;
// a decode that takes longer than a minute fails the test.
func openBytes(t *testing.T, name string, data []byte, columnar bool) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		sp, err := Open(path, OpenOptions{Columnar: columnar, AllowMissingSidecar: true})
		if err == nil {
			sp.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil && !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name the file", err)
		}
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s: still decoding after a minute", name)
		return nil
	}
}

// The hand-built schema message decodes like arrow-go's own.
func TestHostileStreamBaseline(t *testing.T) {
	if err := openBytes(t, "baseline.snap", hostileStream(t, schemaShape{}), false); err != nil {
		t.Fatal(err)
	}
}

// clink's schemas are flat: a field with children is refused before
// arrow-go reads the schema, and before children entries that all point at
// one table make the pre-check visit 64^8 fields.
func TestNestedFieldsRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		shape schemaShape
	}{
		{"struct.snap", schemaShape{nest: 1, children: 1}},
		{"fan-out.snap", schemaShape{nest: 8, children: 64}},
	} {
		err := openBytes(t, c.name, hostileStream(t, c.shape), false)
		if err == nil || !strings.Contains(err.Error(), "field 0 has 1 children") && !strings.Contains(err.Error(), "field 0 has 64 children") {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// batchShape shapes a hand-built record batch message of the canonical
// columns (see batchMessage).
type batchShape struct {
	rows    int64      // each column's
	bufs    [][2]int64 // offset and length in the body; 8 empty when nil
	bodyLen int64
	zstd    bool
	// entries of the message's custom metadata, all one KeyValue with a
	// value of valueLen bytes
	meta, valueLen int
}

// batchMessage builds the metadata of a record batch message shaped by s.
func batchMessage(s batchShape) []byte {
	b := flatbuffers.NewBuilder(1024)
	k, v := b.CreateString("k"), b.CreateByteString(bytes.Repeat([]byte{'v'}, s.valueLen))
	b.StartObject(2)
	b.PrependUOffsetTSlot(0, k, 0)
	b.PrependUOffsetTSlot(1, v, 0)
	kv := b.EndObject()
	b.StartVector(4, s.meta, 4)
	for range s.meta {
		b.PrependUOffsetT(kv)
	}
	md := b.EndVector(s.meta)
	b.StartVector(16, 3, 8) // nodes: length and null count
	for range 3 {
		b.Prep(8, 16)
		b.PrependInt64(0)
		b.PrependInt64(s.rows)
	}
	nodes := b.EndVector(3)
	bs := s.bufs
	if bs == nil {
		bs = make([][2]int64, 8)
	}
	b.StartVector(16, len(bs), 8) // buffers: offset and length
	for i := len(bs) - 1; i >= 0; i-- {
		b.Prep(8, 16)
		b.PrependInt64(bs[i][1])
		b.PrependInt64(bs[i][0])
	}
	bufs := b.EndVector(len(bs))
	var comp flatbuffers.UOffsetT
	if s.zstd {
		b.StartObject(2) // BodyCompression
		b.PrependByteSlot(0, 1, 0)
		comp = b.EndObject()
	}
	b.StartObject(5) // RecordBatch
	b.PrependInt64Slot(0, s.rows, 0)
	b.PrependUOffsetTSlot(1, nodes, 0)
	b.PrependUOffsetTSlot(2, bufs, 0)
	b.PrependUOffsetTSlot(3, comp, 0)
	rb := b.EndObject()
	b.StartObject(5) // Message
	b.PrependInt16Slot(0, 4, 0)
	b.PrependByteSlot(1, msgRecordBatch, 0)
	b.PrependUOffsetTSlot(2, rb, 0)
	b.PrependInt64Slot(3, s.bodyLen, 0)
	b.PrependUOffsetTSlot(4, md, 0)
	b.Finish(b.EndObject())
	return b.FinishedBytes()
}

// batchMetadataStream is a canonical stream of one zero-row batch whose
// message metadata has n entries, all one KeyValue (see batchMessage).
func batchMetadataStream(n, valueLen int) []byte {
	out := frame(shapedSchema(schemaShape{}), nil)
	out = append(out, frame(batchMessage(batchShape{meta: n, valueLen: valueLen}), nil)...)
	return binary.LittleEndian.AppendUint64(out, continuation)
}

// Metadata vectors whose entries all point at one KeyValue made arrow-go
// copy its strings once an entry: entries times value bytes, from a few
// kilobytes of file. Too many entries, or more string bytes than the
// message's metadata holds, are refused; so are fields that all point at
// one long name.
func TestMetadataFanOutRefused(t *testing.T) {
	if err := openBytes(t, "batch-metadata.snap", batchMetadataStream(1, 16), false); err != nil {
		t.Fatalf("a batch with custom metadata: %v", err)
	}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"schema-entries.snap", hostileStream(t, schemaShape{schemaMeta: 2000, valueLen: 16}), "schema: custom metadata: 2000 entries, at most 1024 allowed"},
		{"schema-bytes.snap", hostileStream(t, schemaShape{schemaMeta: 1000, valueLen: 8 << 10}), "schema: custom metadata: entry 1: more string bytes than the"},
		{"field-bytes.snap", hostileStream(t, schemaShape{fieldMeta: 1000, valueLen: 8 << 10}), "schema: field 2 metadata: entry 1: more string bytes than the"},
		{"message-bytes.snap", hostileStream(t, schemaShape{msgMeta: 1000, valueLen: 8 << 10}), "message custom metadata: entry 1: more string bytes than the"},
		{"batch-bytes.snap", batchMetadataStream(1000, 8<<10), "message custom metadata: entry 1: more string bytes than the"},
		{"batch-entries.snap", batchMetadataStream(5000, 0), "message custom metadata: 5000 entries, at most 1024 allowed"},
		{"field-names.snap", hostileStream(t, schemaShape{sameField: 64, nameLen: 64 << 10}), "schema: field 1 name: more string bytes than the"},
	} {
		for _, columnar := range []bool{false, true} {
			if err := openBytes(t, c.name, c.data, columnar); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s (columnar %v): %v, want %q", c.name, columnar, err, c.want)
			}
		}
	}
}

// streamMessage is where one message of a stream lies: its metadata from
// meta, its body from body to end.
type streamMessage struct{ start, meta, body, end int }

// messagesOf splits a well-formed stream into its messages (the
// end-of-stream marker excluded).
func messagesOf(t testing.TB, data []byte) []streamMessage {
	t.Helper()
	var out []streamMessage
	for at := 0; ; {
		n := int(binary.LittleEndian.Uint32(data[at+4:]))
		if n == 0 {
			return out
		}
		meta := data[at+8 : at+8+n]
		msg, err := fbTable(meta, int(binary.LittleEndian.Uint32(meta)))
		if err != nil {
			t.Fatal(err)
		}
		m := streamMessage{start: at, meta: at + 8, body: at + 8 + n}
		m.end = m.body + int(fbUint(msg, 3, 8))
		out = append(out, m)
		at = m.end
	}
}

// batchTable returns the RecordBatch table of a record batch message, or of
// a dictionary batch message's batch, over data from the message's metadata.
func batchTable(t testing.TB, data []byte, m streamMessage) flatbuffers.Table {
	t.Helper()
	meta := data[m.meta:m.body]
	msg, err := fbTable(meta, int(binary.LittleEndian.Uint32(meta)))
	if err != nil {
		t.Fatal(err)
	}
	hdr, _, err := fbSubTable(msg, 2)
	if err == nil && fbUint(msg, 1, 1) == msgDictionary {
		hdr, _, err = fbSubTable(hdr, 1)
	}
	if err != nil {
		t.Fatal(err)
	}
	return hdr
}

// sizePrefix returns where in data the uncompressed size of buffer i of a
// compressed batch message lies.
func sizePrefix(t testing.TB, data []byte, m streamMessage, i int) int {
	t.Helper()
	rb := batchTable(t, data, m)
	p := fbField(rb, 2, 4)
	entry := p + int(binary.LittleEndian.Uint32(rb.Bytes[p:])) + 4 + 16*i
	return m.body + int(binary.LittleEndian.Uint64(rb.Bytes[entry:]))
}

// dictionaryStream is the fixture's rows with key_bytes dictionary-encoded,
// written by arrow-go with ZSTD; the dictionary's data buffer declares
// declared bytes uncompressed. It returns the stream and its messages.
func dictionaryStream(t testing.TB, declared int64) ([]byte, []streamMessage) {
	t.Helper()
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: bin}
	fs := fields(false, u64, dt, bin)
	meta := arrow.NewMetadata([]string{MetaFormatVersion}, []string{"1"})
	schema := arrow.NewSchema(fs, &meta)
	n := len(fixtureRows)
	rec := arrowGoBatch(arrow.NewSchema(canonicalFields, nil), fixtureRows)
	db := array.NewBinaryBuilder(memory.DefaultAllocator, bin)
	db.Append(bytes.Repeat([]byte{'k'}, 1000))
	dict := db.NewArray()
	idx := array.NewInt32Builder(memory.DefaultAllocator)
	idx.AppendValues(make([]int32, n), nil)
	keys := array.NewDictionaryArray(dt, idx.NewArray(), dict)
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithZstd())
	if err := w.Write(array.NewRecordBatch(schema, []arrow.Array{rec.Column(0), keys, rec.Column(2)}, int64(n))); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	msgs := messagesOf(t, data)
	binary.LittleEndian.PutUint64(data[sizePrefix(t, data, msgs[1], 2):], uint64(declared))
	return data, msgs
}

// dictionaryBatchStream is the fixture's canonical stream with the
// dictionary batch of dictionaryStream(declared) after its schema.
func dictionaryBatchStream(t testing.TB, declared int64) []byte {
	t.Helper()
	dict, msgs := dictionaryStream(t, declared)
	fx := streamOf(t, fields(false, u64, bin, bin), fv1, 1)
	end := messagesOf(t, fx)[0].end
	return append(append(bytes.Clone(fx[:end]), dict[msgs[1].start:msgs[1].end]...), fx[end:]...)
}

// clink never writes dictionaries. A dictionary-encoded field, or a
// dictionary batch, is refused before arrow-go reads the batch (whose
// compressed buffers were not size-checked: one declaring 2^46 bytes
// had arrow-go allocate that much).
func TestDictionariesRefused(t *testing.T) {
	dict, _ := dictionaryStream(t, 1<<28)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"dictionary-field.snap", hostileStream(t, schemaShape{dictionary: true}), "schema: field 1 is dictionary-encoded"},
		{"dictionary-zstd.snap", dict, "schema: field 1 is dictionary-encoded"},
		{"dictionary-batch.snap", dictionaryBatchStream(t, 1<<28), "a dictionary batch; clink streams have no dictionaries"},
	} {
		for _, columnar := range []bool{false, true} {
			if err := openBytes(t, c.name, c.data, columnar); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s (columnar %v): %v, want %q", c.name, columnar, err, c.want)
			}
		}
	}
}

// codecAt returns where in data the compression codec of a compressed
// record batch message lies.
func codecAt(t testing.TB, data []byte, m streamMessage) int {
	t.Helper()
	comp, ok, err := fbSubTable(batchTable(t, data, m), 3)
	if !ok || err != nil {
		t.Fatalf("no body compression: %v", err)
	}
	return m.meta + fbField(comp, 0, 1)
}

// unknownCodecStream is zstdStream(50) with its batch's codec set to c.
func unknownCodecStream(t testing.TB, c byte) []byte {
	t.Helper()
	data := zstdStream(t, 50)
	data[codecAt(t, data, messagesOf(t, data)[1])] = c
	return data
}

// A codec byte other than LZ4 frame (0) and ZSTD (1) is refused, naming it
// (bytes from 0x80 read as a negative codec skipped the buffer checks, and
// arrow-go's missing decompressor panicked).
func TestUnknownCompressionCodec(t *testing.T) {
	for _, c := range []byte{2, 0x7f, 0x80, 0xff} {
		err := openBytes(t, "codec.snap", unknownCodecStream(t, c), false)
		if want := fmt.Sprintf("unknown compression codec %d", c); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("codec %d: %v, want %q", c, err, want)
		}
	}
}

// setBuffer points buffer i of a batch message at the given offset and
// length in its body.
func setBuffer(t testing.TB, data []byte, m streamMessage, i int, off, n int64) {
	t.Helper()
	rb := batchTable(t, data, m)
	p := fbField(rb, 2, 4)
	entry := m.meta + p + int(binary.LittleEndian.Uint32(rb.Bytes[p:])) + 4 + 16*i
	binary.LittleEndian.PutUint64(data[entry:], uint64(off))
	binary.LittleEndian.PutUint64(data[entry+8:], uint64(n))
}

// buffer returns the offset and length of buffer i of a batch message.
func buffer(t testing.TB, data []byte, m streamMessage, i int) (off, n int64) {
	t.Helper()
	rb := batchTable(t, data, m)
	p := fbField(rb, 2, 4)
	entry := p + int(binary.LittleEndian.Uint32(rb.Bytes[p:])) + 4 + 16*i
	return int64(binary.LittleEndian.Uint64(rb.Bytes[entry:])), int64(binary.LittleEndian.Uint64(rb.Bytes[entry+8:]))
}

// declaring is zstdStreamOf(rows) with buffer i declaring size bytes
// uncompressed.
func declaring(t testing.TB, rows []Row, i int, size int64) []byte {
	t.Helper()
	data := zstdStreamOf(t, rows)
	binary.LittleEndian.PutUint64(data[sizePrefix(t, data, messagesOf(t, data)[1], i):], uint64(size))
	return data
}

// overlappingStream is a canonical stream of one ZSTD batch of 2^24 rows
// whose five data buffers all are the one compressed buffer of its body,
// declaring 2^15 times its compressed size (as much as one buffer may).
func overlappingStream(t testing.TB) []byte {
	t.Helper()
	var z bytes.Buffer
	zw, err := zstd.NewWriter(&z)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(make([]byte, 1<<20))
	zw.Close()
	body := binary.LittleEndian.AppendUint64(nil, uint64(maxExpansion*z.Len()))
	body = append(body, z.Bytes()...)
	n := int64(len(body))
	body = append(body, make([]byte, (8-len(body)%8)%8)...)
	one := [2]int64{0, n}
	rb := batchMessage(batchShape{rows: 1 << 24, bufs: [][2]int64{{}, one, {}, one, one, {}, one, one}, bodyLen: int64(len(body)), zstd: true})
	out := frame(shapedSchema(schemaShape{}), nil)
	out = append(out, frame(rb, body)...)
	return binary.LittleEndian.AppendUint64(out, continuation)
}

// A compressed buffer may declare no more bytes uncompressed than its role
// in the batch allows (arrow-go allocates them before decompressing), and
// all of a batch's together no more than its body can hold (buffers may
// overlap: each within its own bounds, together they asked for any
// multiple of the body).
func TestCompressedBufferCaps(t *testing.T) {
	const n = 1000
	rows := make([]Row, n)
	for i := range rows {
		rows[i] = Row{Op: 7, Key: EncodeKeyedKey([]byte("s"), []byte{byte(i >> 8), byte(i)}), Value: []byte{byte(i)}}
	}
	// 128 KiB of values ZSTD cannot shrink: a value buffer that may
	// declare more than 2^31 bytes by its compressed size.
	noise := make([]Row, 1<<10)
	x := uint64(1)
	for i := range noise {
		v := make([]byte, 128)
		for j := range v {
			x = x*6364136223846793005 + 1442695040888963407
			v[j] = byte(x >> 56)
		}
		noise[i] = Row{Op: 7, Key: []byte{byte(i >> 8), byte(i)}, Value: v}
	}
	validity := zstdStreamOf(t, rows) // buffer 0 (no nulls: empty) made the ops buffer
	m := messagesOf(t, validity)[1]
	off, ln := buffer(t, validity, m, 1)
	setBuffer(t, validity, m, 0, off, ln)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"ops", declaring(t, rows, 1, 8*n+200), "compressed buffer 1 declares 8200 bytes uncompressed; the values buffer of column 0 (1000 rows) holds at most 8000 bytes"},
		{"key-offsets", declaring(t, rows, 3, 8*n), "compressed buffer 3 declares 8000 bytes uncompressed; the offsets buffer of column 1 (1000 rows) holds at most 4032 bytes"},
		{"validity", validity, "compressed buffer 0 declares 8000 bytes uncompressed; the validity bitmap of column 0 (1000 rows) holds at most 128 bytes"},
		{"value-data", declaring(t, noise, 7, 1<<31), "compressed buffer 7 declares 2147483648 bytes uncompressed; the data buffer of column 2 (1024 rows) holds at most 2147483647 bytes"},
		{"overlapping", overlappingStream(t), "bytes uncompressed in all, more than their"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := openBytes(t, c.name+".snap", c.data, false); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v, want %q", err, c.want)
			}
		})
	}
}

// A ZSTD frame may ask for a window much larger than what it holds, and
// the streaming decoders (the check's and arrow-go's) allocate the whole
// window before the first block: a buffer of a few bytes asking for 128
// MiB is refused, one asking for the 8 MiB every decoder supports is read,
// and zstdWindow finds a frame's window in either form.
func TestZstdWindowBounded(t *testing.T) {
	rows := make([]Row, 10)
	for i := range rows {
		rows[i] = Row{Op: 7, Key: EncodeKeyedKey([]byte("s"), []byte{byte(i)}), Value: []byte{byte(i)}}
	}
	// asking is the stream with its ops buffer's frame asking for the
	// window of descriptor wd (arrow-go's frames have one).
	asking := func(wd byte) []byte {
		data := zstdStreamOf(t, rows)
		m := messagesOf(t, data)[1]
		at := sizePrefix(t, data, m, 1) + 8
		_, n := buffer(t, data, m, 1)
		if binary.LittleEndian.Uint32(data[at:]) != 0xFD2FB528 || data[at+4]&0x20 != 0 {
			t.Fatalf("ops buffer's frame header % x: no window descriptor", data[at:at+6])
		}
		data[at+5] = wd
		if got, want := zstdWindow(data[at:at+int(n)-8]), int64(1)<<(10+wd>>3); got != want {
			t.Fatalf("window %d, want %d", got, want)
		}
		return data
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := openBytes(t, "window.snap", asking(0x88), true) // 2^27
	runtime.ReadMemStats(&after)
	const want = "compressed buffer 1 declares 80 bytes uncompressed in ZSTD frames that ask for a 134217728-byte window, more than the 8388608"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%v, want %q", err, want)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 32<<20 {
		t.Errorf("refusing the frame allocated %d MiB", got>>20)
	}
	for _, columnar := range []bool{false, true} {
		if err := openBytes(t, "8mib.snap", asking(0x68), columnar); err != nil { // 2^23
			t.Errorf("columnar %v: a frame asking for 8 MiB: %v", columnar, err)
		}
	}
	for _, c := range []struct {
		frame []byte
		want  int64
	}{
		{[]byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x88, 0x29, 0, 0, 'h', 'e', 'l', 'l', 'o'}, 1 << 27},
		{[]byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x51, 0x29, 0, 0, 'h', 'e', 'l', 'l', 'o'}, 1<<20 + 1<<17},
		{[]byte{0x28, 0xb5, 0x2f, 0xfd, 0x60, 0x05, 0x00, 0x29, 0, 0, 'h', 'e', 'l', 'l', 'o'}, 5 + 256},
		// a skippable frame, then a frame asking for 1 KiB and one for 2^30
		{[]byte{0x50, 0x2a, 0x4d, 0x18, 1, 0, 0, 0, 9, 0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x00, 0x13, 0, 0, 'x', 0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xa0, 0x13, 0, 0, 'y'}, 1 << 30},
		// a frame cut short, or with a block of the reserved type: the
		// decoder allocates its window before it finds the block wrong
		{[]byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x88, 0x29, 0, 0, 'h'}, 1 << 27},
		{[]byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x88, 0x2f, 0, 0, 'h'}, 1 << 27},
		// a frame asking for 1 KiB, then no frame
		{[]byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x00, 0x09, 0, 0, 'n', 'o', 't', ' ', 'a', ' ', 'f', 'r', 'a', 'm', 'e'}, 1 << 10},
		{[]byte("not a frame at all"), 0},
	} {
		if got := zstdWindow(c.frame); got != c.want {
			t.Errorf("zstdWindow(% x) = %d, want %d", c.frame, got, c.want)
		}
	}
}

// A file of more rows than 32-bit row positions can number is refused,
// naming the count, before anything is sized by it.
func TestTooManyRowsRefused(t *testing.T) {
	data := frame(shapedSchema(schemaShape{}), nil)
	data = append(data, frame(batchMessage(batchShape{rows: MaxFileRows + 1}), nil)...)
	data = binary.LittleEndian.AppendUint64(data, continuation)
	for _, columnar := range []bool{false, true} {
		err := openBytes(t, "many.snap", data, columnar)
		if err == nil || !strings.Contains(err.Error(), "record batches of more than 4294967295 rows; sptool handles at most that many rows a file") {
			t.Errorf("columnar %v: %v, want the row limit", columnar, err)
		}
	}
}

// shortenVector sets the length of vector field f (1: nodes, 2: buffers)
// of a batch message to n.
func shortenVector(t testing.TB, data []byte, m streamMessage, f, n int) {
	t.Helper()
	rb := batchTable(t, data, m)
	p := fbField(rb, f, 4)
	if p == 0 {
		t.Fatalf("no vector field %d", f)
	}
	binary.LittleEndian.PutUint32(data[m.meta+p+int(binary.LittleEndian.Uint32(rb.Bytes[p:])):], uint32(n))
}

// A record batch whose nodes or buffers vector is shorter than its
// schema's columns need is refused before arrow-go reads it: arrow-go
// reads entry i past a vector's end, and a compressed batch with an empty
// buffers vector had it allocate the 1.7 TB that the bytes after the
// vector declared (found by fuzzing: the process died out of memory).
func TestShortBatchVectorsRefused(t *testing.T) {
	for _, c := range []struct {
		name   string
		stream func(testing.TB) []byte
		field  int
		n      int
		want   string
	}{
		{"zstd-no-buffers", func(t testing.TB) []byte { return zstdStream(t, 50) }, 2, 0, "record batch describes 3 columns in 0 buffers; its schema's 3 columns need 8"},
		{"zstd-7-buffers", func(t testing.TB) []byte { return zstdStream(t, 50) }, 2, 7, "in 7 buffers; its schema's 3 columns need 8"},
		{"zstd-2-nodes", func(t testing.TB) []byte { return zstdStream(t, 50) }, 1, 2, "record batch describes 2 columns in 8 buffers"},
		{"plain-no-buffers", func(t testing.TB) []byte { return streamOf(t, fields(false, u64, bin, bin), fv1, 1) }, 2, 0, "in 0 buffers; its schema's 3 columns need 8"},
		// A column type clink never writes: the schema is refused, naming
		// it, and the batch not read.
		{"float-no-buffers", func(t testing.TB) []byte {
			return streamOf(t, fields(false, arrow.PrimitiveTypes.Float64, bin, bin), fv1, 1)
		}, 2, 0, `column "op_id" has type float64, expected uint64`},
	} {
		data := c.stream(t)
		shortenVector(t, data, messagesOf(t, data)[1], c.field, c.n)
		for _, columnar := range []bool{false, true} {
			if err := openBytes(t, c.name+".snap", data, columnar); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s (columnar %v): %v, want %q", c.name, columnar, err, c.want)
			}
		}
	}
}

// A flipped byte that makes the schema's flatbuffer point outside its
// message is an error that says the metadata is malformed, not only what
// the Go runtime reported; so is every single-byte flip of the fixture's
// first 64 bytes that fails with a runtime error.
func TestMalformedFlatbufferWorded(t *testing.T) {
	fixture, err := os.ReadFile("../testdata/clink/snapshot-v1.snap")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	worded := 0
	for i := 0; i < 64 && i < len(fixture); i++ {
		for _, bit := range []byte{0x01, 0x80} {
			d := bytes.Clone(fixture)
			d[i] ^= bit
			path := filepath.Join(dir, "flip.snap")
			if err := os.WriteFile(path, d, 0o644); err != nil {
				t.Fatal(err)
			}
			sp, err := Open(path, OpenOptions{})
			if err == nil {
				sp.Close()
				continue
			}
			msg := err.Error()
			if strings.Contains(msg, "runtime error") {
				if !strings.Contains(msg, "flatbuffer metadata is malformed") {
					t.Errorf("byte %d ^ %#x: %v", i, bit, err)
				}
				worded++
			}
		}
	}
	if worded == 0 {
		t.Error("no flip failed with a runtime error: the test no longer covers the wording")
	}
}

// Streams clink's reader (Arrow C++) refuses and arrow-go reads are
// refused, naming why: a message of a metadata version before V4 or after
// V5 (the schema's, or a batch's), a buffer off an 8-byte boundary, a
// compressed buffer that decompresses to other than the bytes it declares.
// A big-endian stream, which Arrow C++ converts, is refused as one (arrow-go
// would swap it in the read-only map).
func TestArrowCppRefusals(t *testing.T) {
	const n = 1000
	rows := make([]Row, n)
	for i := range rows {
		rows[i] = Row{Op: 7, Key: EncodeKeyedKey([]byte("s"), []byte{byte(i >> 8), byte(i)}), Value: []byte{byte(i)}}
	}
	batchVersion := func(v uint16) []byte {
		data := streamOf(t, fields(false, u64, bin, bin), fv1, 1)
		m := messagesOf(t, data)[1]
		meta := data[m.meta:m.body]
		msg, err := fbTable(meta, int(binary.LittleEndian.Uint32(meta)))
		if err != nil {
			t.Fatal(err)
		}
		p := fbField(msg, 0, 2)
		if p == 0 {
			t.Fatal("no version field in the batch message")
		}
		binary.LittleEndian.PutUint16(meta[p:], v)
		return data
	}
	moved := func(i int, by int64) []byte {
		data := streamOf(t, fields(false, u64, bin, bin), fv1, 1)
		m := messagesOf(t, data)[1]
		off, ln := buffer(t, data, m, i)
		setBuffer(t, data, m, i, off+by, max(ln-by, 0))
		return data
	}
	// A batch of no rows whose buffer i is empty, at body offset at.
	emptyAt := func(i int, at int64) []byte {
		bufs := make([][2]int64, 8)
		bufs[i][0] = at
		out := frame(shapedSchema(schemaShape{}), nil)
		out = append(out, frame(batchMessage(batchShape{bufs: bufs, bodyLen: 8}), make([]byte, 8))...)
		return binary.LittleEndian.AppendUint64(out, continuation)
	}
	declared := func(i int, by int64) []byte {
		data := zstdStreamOf(t, rows)
		at := sizePrefix(t, data, messagesOf(t, data)[1], i)
		binary.LittleEndian.PutUint64(data[at:], uint64(int64(binary.LittleEndian.Uint64(data[at:]))+by))
		return data
	}
	for _, c := range []struct {
		name string
		data []byte
		want string // "" accepted
	}{
		{"schema-v1", hostileStream(t, schemaShape{versionSet: true, version: 0}), "message metadata version V1: clink's reader (Arrow C++) reads V4 and V5 only"},
		{"schema-v3", hostileStream(t, schemaShape{versionSet: true, version: 2}), "message metadata version V3:"},
		{"schema-v4", hostileStream(t, schemaShape{versionSet: true, version: metadataV4}), ""},
		{"schema-future", hostileStream(t, schemaShape{versionSet: true, version: 99}), "message metadata version 99 (no version Arrow defines)"},
		{"batch-after-v5", batchVersion(5), "message metadata version 5 (no version Arrow defines)"},
		{"big-endian", hostileStream(t, schemaShape{bigEndian: true}), "a big-endian stream: sptool reads little-endian streams only"},
		{"unaligned-data", moved(7, 1), "record batch buffer 7 starts at body offset"},
		{"unaligned-offsets", moved(3, 4), "record batch buffer 3 starts at body offset"},
		{"unaligned-empty-validity", moved(0, 3), ""}, // not read without nulls
		{"unaligned-empty-data", emptyAt(4, 3), ""},   // an empty buffer is not read
		{"unaligned-empty-batch-values", emptyAt(1, 3), ""},
		{"inflates-to-more", declared(4, -8), "compressed buffer 4 decompresses to more than"},
		{"inflates-to-less", declared(4, 8), "compressed buffer 4 decompresses to "},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, columnar := range []bool{false, true} {
				err := openBytes(t, c.name+".snap", c.data, columnar)
				if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
					t.Errorf("columnar %v: %v, want %q", columnar, err, c.want)
				}
			}
		})
	}
}

// A stream may hold at most one record batch per 4 KiB of it, or 1024:
// each is held at about 2 KiB whatever its rows, and a stream of 200,000
// empty batches (56 MB) took 438 MB to open.
func TestManyBatchesRefused(t *testing.T) {
	stream := func(n int) []byte {
		out := frame(shapedSchema(schemaShape{}), nil)
		b := frame(batchMessage(batchShape{}), nil)
		for range n {
			out = append(out, b...)
		}
		return binary.LittleEndian.AppendUint64(out, continuation)
	}
	if err := openBytes(t, "1024.snap", stream(minBatchCap), false); err != nil {
		t.Errorf("%d empty batches: %v", minBatchCap, err)
	}
	for _, columnar := range []bool{false, true} {
		err := openBytes(t, "1025.snap", stream(minBatchCap+1), columnar)
		if want := "more than 1024 record batches in a "; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("columnar %v: %v, want %q", columnar, err, want)
		}
	}
}

// An LZ4-compressed buffer must be one LZ4 frame to its last byte, as Arrow
// C++ decompresses it (the LZ4 reader reads frame after frame): two frames,
// bytes after the frame, a frame cut short or no frame at all are refused.
// arrow-go's LZ4 streams open.
func TestLZ4Frames(t *testing.T) {
	rows := make([]Row, 300)
	for i := range rows {
		rows[i] = Row{Op: 7, Key: EncodeKeyedKey([]byte("s"), []byte{byte(i >> 8), byte(i)}), Value: []byte{byte(i)}}
	}
	for _, columnar := range []bool{false, true} {
		if err := openBytes(t, "lz4.snap", compressedStreamOf(t, rows, ipc.WithLZ4()), columnar); err != nil {
			t.Errorf("arrow-go's LZ4 stream (columnar %v): %v", columnar, err)
		}
	}
	payload := bytes.Repeat([]byte("clink"), 100)
	var z bytes.Buffer
	zw := lz4.NewWriter(&z)
	if _, err := zw.Write(payload); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	frame := z.Bytes()
	size := int64(len(payload))
	for _, c := range []struct {
		name string
		data []byte
		size int64
		want string // "" accepted
	}{
		{"one", frame, size, ""},
		{"two", append(bytes.Clone(frame), frame...), 2 * size, "bytes after the LZ4 frame"},
		{"trailing", append(bytes.Clone(frame), 0), size, "1 bytes after the LZ4 frame"},
		{"cut", frame[:len(frame)-3], size, "LZ4 frame cut short"},
		{"none", nil, 0, "no LZ4 frame"},
		{"not", []byte("not a frame at all"), 18, "not an LZ4 frame"},
	} {
		got, err := inflatedSize(0, c.data, c.size)
		if c.want == "" && (err != nil || got != c.size) || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %d bytes, %v; want %d bytes or an error %q", c.name, got, err, c.size, c.want)
		}
	}
}

// A stream whose record batch comes before its schema (the first two
// messages swapped, the schema dropped) is refused saying so, at the
// batch.
func TestBatchBeforeSchemaRefused(t *testing.T) {
	data := streamOf(t, fields(false, u64, bin, bin), fv1, 1)
	msgs := messagesOf(t, data)
	schema, batch, rest := data[msgs[0].start:msgs[0].end], data[msgs[1].start:msgs[1].end], data[msgs[1].end:]
	const want = "byte offset 0: a record batch before the stream's schema"
	for name, d := range map[string][]byte{
		"swapped":   slices.Concat(batch, schema, rest),
		"no schema": slices.Concat(batch, rest),
	} {
		for _, columnar := range []bool{false, true} {
			if err := openBytes(t, "b.snap", d, columnar); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s (columnar %v): %v, want %q", name, columnar, err, want)
			}
		}
	}
}

// A schema whose Int column's type table has a damaged vtable (an odd
// length, which no flatbuffer verifier passes: clink's reader, Arrow C++'s,
// refuses the stream) is refused, naming the table. arrow-go reads the
// column as uint64 all the same; the stream used to open as one without
// rows (its batches were left unread for a column of a type sptool did not
// know), so that a purge of it found nothing and copied the file, keys and
// all.
func TestDamagedIntTypeRefused(t *testing.T) {
	fixture, err := os.ReadFile("../testdata/clink/snapshot-v1.snap")
	if err != nil {
		t.Fatal(err)
	}
	// The schema message, its Schema table, field 0 (op_id) and its type
	// table (Field.type, field 3): the vtable of that Int table.
	m := messagesOf(t, fixture)[0]
	meta := fixture[m.meta:m.body]
	msg, err := fbTable(meta, int(binary.LittleEndian.Uint32(meta)))
	if err != nil {
		t.Fatal(err)
	}
	schema, _, err := fbSubTable(msg, 2)
	if err != nil {
		t.Fatal(err)
	}
	p := fbField(schema, 1, 4)
	vec := p + int(binary.LittleEndian.Uint32(meta[p:])) + 4
	field, err := fbTable(meta, vec+int(binary.LittleEndian.Uint32(meta[vec:])))
	if err != nil {
		t.Fatal(err)
	}
	intTable, ok, err := fbSubTable(field, 3)
	if !ok || err != nil {
		t.Fatalf("op_id's Int table: %v", err)
	}
	vt := m.meta + int(intTable.Pos) - int(int32(binary.LittleEndian.Uint32(meta[intTable.Pos:])))
	for _, vtLen := range []uint16{7, 0x7f, 0xff, 0xfff0} {
		data := slices.Clone(fixture)
		binary.LittleEndian.PutUint16(data[vt:], vtLen)
		for _, columnar := range []bool{false, true} {
			err := openBytes(t, "int.snap", data, columnar)
			if err == nil || !strings.Contains(err.Error(), "schema: field 0 type: Int table: vtable length") {
				t.Errorf("vtable length %d (columnar %v): open error %v, want the Int table refused", vtLen, columnar, err)
			}
		}
	}
}

// Bytes after the end-of-stream marker that hold more of a stream (a
// damaged message length ends it early: clink's reader stops at the
// marker, and the later batches' rows are never restored) are an error of
// validate's, and a read warning of every command's, naming the batches
// and rows found; other trailing bytes are a warning of validate's alone.
func TestHiddenStream(t *testing.T) {
	fixture, err := os.ReadFile("../testdata/clink/snapshot-v1.snap")
	if err != nil {
		t.Fatal(err)
	}
	ms := messagesOf(t, fixture)
	schema, batch := fixture[:ms[0].end], fixture[ms[1].start:ms[1].end]
	eos := []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}
	// The batch in the old framing: its length, no continuation marker.
	old := fixture[ms[1].start+4 : ms[1].end]
	for _, c := range []struct {
		name  string
		data  []byte
		want  HiddenStream
		error string // validate's finding, "" for a warning
	}{
		{"a batch after the marker", slices.Concat(schema, eos, batch, eos), HiddenStream{Batches: 1, Rows: 3, EndMarker: true}, "hold 1 more record batch (3 rows), which clink's reader"},
		{"an old-style marker", slices.Concat(schema, []byte{0, 0, 0, 0}, old, eos), HiddenStream{Batches: 1, Rows: 3, EndMarker: true}, "hold 1 more record batch (3 rows)"},
		{"a second stream", slices.Concat(fixture, fixture), HiddenStream{Batches: 1, Rows: 3, EndMarker: true}, "hold 1 more record batch (3 rows)"},
		{"a batch's length zeroed", slices.Concat(schema, eos, batch[8:], batch, eos), HiddenStream{Batches: 1, Rows: 3, EndMarker: true}, "hold 1 more record batch (3 rows)"},
		{"a batch's start lost", slices.Concat(schema, eos, batch[16:], eos), HiddenStream{EndMarker: true}, "end with another end-of-stream marker"},
		{"schemas, junk, then a batch", slices.Concat(schema, eos, bytes.Repeat(schema, 100), []byte("8 bytes!"), batch, eos), HiddenStream{Batches: 1, Rows: 3, EndMarker: true}, "hold 1 more record batch (3 rows)"},
		{"a doubled marker", slices.Concat(fixture, eos), HiddenStream{}, ""},
		{"junk", slices.Concat(fixture, []byte("not a stream at all, nor a marker")), HiddenStream{}, ""},
		{"zeros", slices.Concat(fixture, make([]byte, 64)), HiddenStream{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp := openWritten(t, "h.snap", c.data)
			s := sp.Files[0].Snapshot
			if s.Hidden != c.want {
				t.Errorf("hidden %+v, want %+v", s.Hidden, c.want)
			}
			var finding *Finding
			findings := Validate(sp, ValidateOptions{}).Findings
			for i, f := range findings {
				if f.Check == CheckTrailingBytes && f.Severity != SeverityInfo {
					finding = &findings[i]
				}
			}
			switch {
			case finding == nil:
				t.Errorf("no trailing-bytes finding")
			case c.error != "" && (finding.Severity != SeverityError || !strings.Contains(finding.Message, c.error)):
				t.Errorf("finding %s %q, want an error with %q", finding.Severity, finding.Message, c.error)
			case c.error == "" && finding.Severity != SeverityWarning:
				t.Errorf("finding %s %q, want a warning", finding.Severity, finding.Message)
			}
			warned := slices.ContainsFunc(sp.ReadWarnings(), func(w string) bool { return strings.Contains(w, "after its end-of-stream marker") })
			if warned != (c.error != "") {
				t.Errorf("read warnings %q: warned %v, want %v", sp.ReadWarnings(), warned, c.error != "")
			}
		})
	}
}
