package savepoint

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	flatbuffers "github.com/google/flatbuffers/go"
)

// recordBatchMessage builds the metadata of a record batch message with
// nbuf empty buffers and the given variadic buffer counts.
func recordBatchMessage(nbuf int, variadic []int64) []byte {
	b := flatbuffers.NewBuilder(0)
	b.StartVector(8, len(variadic), 8)
	for i := len(variadic) - 1; i >= 0; i-- {
		b.PrependInt64(variadic[i])
	}
	vc := b.EndVector(len(variadic))
	b.StartVector(16, nbuf, 8)
	for range nbuf {
		b.Prep(8, 16)
		b.PrependInt64(0) // length
		b.PrependInt64(0) // offset
	}
	bufs := b.EndVector(nbuf)
	b.StartObject(5) // RecordBatch
	b.PrependInt64Slot(0, 1, 0)
	b.PrependUOffsetTSlot(2, bufs, 0)
	b.PrependUOffsetTSlot(4, vc, 0)
	rb := b.EndObject()
	b.StartObject(5) // Message
	b.PrependInt16Slot(0, 4, 0)
	b.PrependByteSlot(1, msgRecordBatch, 0)
	b.PrependUOffsetTSlot(2, rb, 0)
	msg := b.EndObject()
	b.Finish(msg)
	return b.FinishedBytes()
}

// A record batch whose view column declares more variadic buffers than the
// message holds is refused before arrow-go allocates its buffer list by that
// count (a fuzzed count of 2^34 asked for a 128 GiB allocation and killed
// the process); counts the message can hold pass.
func TestPeekMessageVariadicCounts(t *testing.T) {
	for _, c := range []struct {
		nbuf     int
		variadic []int64
		bad      bool
	}{
		{3, nil, false},
		{3, []int64{0, 3}, false},
		{3, []int64{4}, true},
		{3, []int64{1<<34 + 1<<20}, true},
		{3, []int64{1, -1}, true},
	} {
		info, err := peekMessage(recordBatchMessage(c.nbuf, c.variadic))
		if c.bad != (err != nil) || c.bad && !strings.Contains(err.Error(), "variadic buffers") {
			t.Errorf("%d buffers, variadic counts %v: %v", c.nbuf, c.variadic, err)
		}
		if err == nil && info.typ != msgRecordBatch {
			t.Errorf("%d buffers, variadic counts %v: message type %d", c.nbuf, c.variadic, info.typ)
		}
	}
}

// A record batch compressed with ZSTD opens; one whose buffer declares more
// bytes uncompressed than its compressed bytes can hold is refused, naming
// the buffer, before arrow-go allocates that much.
func TestCompressedBufferSizes(t *testing.T) {
	n := 1000
	stream := zstdStream(t, n)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.snap")
	if err := os.WriteFile(good, stream, 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := Open(good, OpenOptions{Columnar: true, AllowMissingSidecar: true})
	if err != nil {
		t.Fatalf("a ZSTD-compressed batch: %v", err)
	}
	if got := sp.Files[0].Snapshot.NumRows(); got != n {
		t.Fatalf("%d rows, want %d", got, n)
	}
	sp.Close()
	// The ops buffer's prefix: its uncompressed size, 8 bytes a row.
	data := bytes.Clone(stream)
	at := bytes.Index(data, binary.LittleEndian.AppendUint64(nil, uint64(8*n)))
	if at < 0 {
		t.Fatal("the ops buffer's size prefix is not in the stream")
	}
	binary.LittleEndian.PutUint64(data[at:], 1<<37)
	bad := filepath.Join(dir, "bad.snap")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(bad, OpenOptions{Columnar: true, AllowMissingSidecar: true}); err == nil || !strings.Contains(err.Error(), "declares 137438953472 bytes uncompressed") {
		t.Fatalf("a buffer declaring 128 GiB: %v", err)
	}
}

// zstdStream is a snapshot of n rows of one operator, in canonical order,
// in one record batch whose buffers arrow-go compressed with ZSTD.
func zstdStream(t testing.TB, n int) []byte {
	t.Helper()
	rows := make([]Row, n)
	for i := range rows {
		rows[i] = Row{Op: 7, Key: EncodeKeyedKey([]byte("s"), []byte{byte(i >> 8), byte(i)}), Value: []byte{byte(i)}}
	}
	return zstdStreamOf(t, Logical(rows))
}

// zstdStreamOf is a snapshot of rows in one record batch whose buffers
// arrow-go compressed with ZSTD.
func zstdStreamOf(t testing.TB, rows []Row) []byte {
	t.Helper()
	return compressedStreamOf(t, rows, ipc.WithZstd())
}

// compressedStreamOf is a snapshot of rows in one record batch whose
// buffers arrow-go compressed as compression says.
func compressedStreamOf(t testing.TB, rows []Row, compression ipc.Option) []byte {
	t.Helper()
	md := CanonicalMetadata(nil, VersionMap{})
	keys, vals := make([]string, len(md)), make([]string, len(md))
	for i, e := range md {
		keys[i], vals[i] = e.Key, e.Value
	}
	meta := arrow.NewMetadata(keys, vals)
	schema := arrow.NewSchema(canonicalFields, &meta)
	var buf bytes.Buffer
	iw := ipc.NewWriter(&buf, ipc.WithSchema(schema), compression)
	if err := iw.Write(arrowGoBatch(schema, rows)); err != nil {
		t.Fatal(err)
	}
	if err := iw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
