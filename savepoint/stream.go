package savepoint

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// continuation is the marker written before every IPC message (non-legacy framing).
const continuation = 0xFFFFFFFF

// maxMetadataLen bounds a single message's flatbuffer metadata. clink's
// metadata messages are a few hundred bytes; the bound protects against a
// corrupt length making the reader allocate or scan gigabytes.
const maxMetadataLen = 64 << 20

// sliceMessageReader is an ipc.MessageReader over an in-memory stream. Unlike
// arrow-go's stream reader it does not copy message bodies (column buffers
// alias data), it bounds-checks every length against the data, it reports the
// byte offset of every problem, and it requires the end-of-stream marker.
type sliceMessageReader struct {
	data  []byte
	whole bool  // data is a file from its start (readStreamReleasing)
	off   int64 // offset of the next message
	cur   int64 // offset of the message returned last
	msg   *ipc.Message
	eos   bool
	// codecs records the body compression of each record batch message.
	codecs []int8
	// cols are the columns of the stream's schema, for the bounds of
	// compressed buffers (nil: relative bounds only); schema is set once
	// the schema message is read.
	cols   []columnKind
	schema bool
	// rows counts the rows the record batches read so far declare.
	rows int64
	// inflated counts the bytes this stream's compressed buffers read so
	// far declare uncompressed.
	inflated int64
	// budget counts the bytes the compressed buffers of the file read so
	// far declare uncompressed.
	budget *inflateBudget
	// loose counts the bytes of the messages read so far that no row
	// holds and that are not zero (see looseBytes).
	loose int64
}

// inflateBudget bounds the bytes that the compressed record batches of one
// file declare uncompressed, over every stream the file holds (its CLMB
// blobs, their inline materialisations): at most what the file may
// decompress to by its size as stored (see decompressLimit), whether it is
// compressed whole or not.
type inflateBudget struct {
	size int   // the file's size as stored
	used int64 // bytes declared so far
	// tree, for a file of a tree, bounds the files' batches together.
	tree *treeInflate
}

// treeInflate bounds the bytes that the compressed record batches of a
// tree's files declare uncompressed, together: a file's own bound has a
// floor (decompressFloor), which each of a tree's files would otherwise
// have in full, so that a few kilobytes of ZSTD frames of zeros in each of
// many small files would be held as gigabytes. The tree's files may
// decompress to what one file as large as all of them may.
type treeInflate struct {
	size int // the bytes stored of the tree's payloads, set before any is read
	mu   sync.Mutex
	used int64 // bytes declared so far
}

// take counts n more bytes declared uncompressed; it returns the bytes
// declared so far, and whether they are within the bound.
func (t *treeInflate) take(n int64) (used int64, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.used += n
	return t.used, t.used <= decompressLimit(t.size)
}

// A stream may hold at most one record batch per bytesPerBatch bytes of it
// and of what its compressed buffers declare uncompressed, or minBatchCap: each batch is held (arrow-go's record, its columns and
// sptool's view of it) at about 2 KiB whatever its rows, so that a stream of
// empty batches, some 300 bytes each, would ask for seven times its size.
// Held to this, a stream's batches take about half its size at most.
// clink writes one batch, and another only where a column would pass
// 2 GiB; a writer that cuts its batches every 64K rows writes one every
// 2.5 MB of clink's rows.
const (
	bytesPerBatch = 4096
	minBatchCap   = 1024
)

// maxBatches returns how many record batches a stream of size bytes (with
// what its compressed buffers declare uncompressed) may hold.
func maxBatches(size int64) int { return int(max(minBatchCap, size/bytesPerBatch)) }

// MaxFileRows is the most rows a snapshot file may hold: sorting,
// filtering and writing number a file's rows with 32-bit positions. (At
// 16 bytes of operator and offsets a row, such a file is over 64 GiB.)
const MaxFileRows = math.MaxUint32

var _ ipc.MessageReader = (*sliceMessageReader)(nil)

func (r *sliceMessageReader) Retain()  {}
func (r *sliceMessageReader) Release() {}

// Message returns the next message, io.EOF at the end-of-stream marker, or an
// *offsetError describing what is wrong with the bytes.
func (r *sliceMessageReader) Message() (msg *ipc.Message, err error) {
	defer func() {
		if p := recover(); p != nil {
			msg, err = nil, &offsetError{r.cur, fmt.Sprintf("invalid message metadata (%v)", p)}
		}
	}()
	if r.eos {
		return nil, io.EOF
	}
	r.cur = r.off
	rest := r.data[r.off:]
	if len(rest) == 0 {
		return nil, &noEOSError{offsetError{r.off, "stream ends without the end-of-stream marker (truncated file?)"}}
	}
	if len(rest) < 4 {
		return nil, &offsetError{r.off, fmt.Sprintf("truncated message header: %d bytes left", len(rest))}
	}
	hdr := int64(4)
	metaLen := int64(int32(binary.LittleEndian.Uint32(rest)))
	if binary.LittleEndian.Uint32(rest) == continuation {
		if len(rest) < 8 {
			return nil, &offsetError{r.off, "truncated message length after the continuation marker"}
		}
		metaLen = int64(int32(binary.LittleEndian.Uint32(rest[4:])))
		hdr = 8
	}
	if metaLen == 0 {
		r.eos = true
		r.off += hdr
		return nil, io.EOF
	}
	// A file that does not even start as a stream (no continuation
	// marker, and no legacy message either) is most likely no savepoint:
	// say so beside what the bytes would mean.
	notStream := ""
	if r.whole && r.off == 0 && hdr == 4 {
		notStream = fmt.Sprintf(": the file starts % x, not with an Arrow IPC stream's continuation marker ff ff ff ff (is it a savepoint?)", rest[:4])
	}
	if metaLen < 0 || metaLen > maxMetadataLen {
		return nil, &offsetError{r.off, fmt.Sprintf("invalid message metadata length %d%s", metaLen, notStream)}
	}
	if hdr+metaLen > int64(len(rest)) {
		return nil, &offsetError{r.off, fmt.Sprintf("truncated message metadata: needs %d bytes, %d left%s", metaLen, int64(len(rest))-hdr, notStream)}
	}
	// Full slice expressions: flatbuffers and arrow-go slice by lengths read
	// from the bytes; capped capacities make a length that runs past the
	// message fail instead of reading the bytes that follow it.
	meta := rest[hdr : hdr+metaLen : hdr+metaLen]
	info, err := peekMessage(meta)
	if err != nil {
		return nil, &offsetError{r.off, err.Error() + notStream}
	}
	bodyStart := hdr + metaLen
	if info.bodyLen < 0 || info.bodyLen > int64(len(rest))-bodyStart {
		return nil, &offsetError{r.off + bodyStart, fmt.Sprintf("truncated message body: needs %d bytes, %d left", info.bodyLen, int64(len(rest))-bodyStart)}
	}
	body := rest[bodyStart : bodyStart+info.bodyLen : bodyStart+info.bodyLen]
	if info.typ == msgSchema {
		r.cols, r.schema = info.cols, true
	}
	if info.typ == msgRecordBatch && !r.schema {
		return nil, &offsetError{r.cur, "a record batch before the stream's schema: an Arrow IPC stream starts with its schema message (is the schema missing, or the messages out of order?)"}
	}
	if info.typ == msgRecordBatch {
		if most := maxBatches(int64(len(r.data)) + r.inflated); len(r.codecs) >= most {
			return nil, &offsetError{r.cur, fmt.Sprintf("more than %d record batches in a %d-byte stream (at most one per %d bytes of it and of what its compressed buffers declare uncompressed, or %d): each is held whatever its rows, about 2 KiB; clink writes one, and another only where a column would pass 2 GiB", most, len(r.data), bytesPerBatch, minBatchCap)}
		}
		if err := checkBatchVectors(info, r.cols); err != nil {
			return nil, &offsetError{r.cur, err.Error()}
		}
		if info.rows < 0 {
			return nil, &offsetError{r.cur, fmt.Sprintf("record batch declares %d rows", info.rows)}
		}
		if info.rows > MaxFileRows-r.rows {
			return nil, &offsetError{r.cur, fmt.Sprintf("record batches of more than %d rows; sptool handles at most that many rows a file", int64(MaxFileRows))}
		}
		r.rows += info.rows
	}
	if info.typ == msgRecordBatch && info.codec < 0 {
		if err := checkBuffers(meta, info, body, r.cols); err != nil {
			return nil, &offsetError{r.off + bodyStart, err.Error()}
		}
		r.loose += looseBytes(meta, info, body, r.cols)
	} else if info.typ != msgRecordBatch {
		r.loose += nonZero(body) // (a schema message has no body)
	}
	r.loose += info.custom
	if info.typ == msgRecordBatch && info.codec >= 0 {
		n, err := checkCompressedBuffers(meta, info, body, r.cols)
		if err != nil {
			return nil, &offsetError{r.off + bodyStart, err.Error()}
		}
		r.inflated += n
		// The batches are held decompressed together: a few kilobytes of
		// ZSTD frames of zeros, repeated batch after batch, would ask for
		// gigabytes. The file as a whole is held to the bound of a file
		// compressed whole (see decompressLimit and inflateBudget).
		b := r.budget
		if b.used += n; b.used > decompressLimit(b.size) {
			return nil, &offsetError{r.cur, fmt.Sprintf("the compressed record batches so far declare %d bytes uncompressed, more than a %d-byte file may decompress to (%d bytes: %d times its size or %d MiB, whichever is more, and at most the machine's memory)", b.used, b.size, decompressLimit(b.size), decompressRatio, decompressFloor>>20)}
		}
		if b.tree != nil {
			if used, ok := b.tree.take(n); !ok {
				size := b.tree.size
				return nil, &offsetError{r.cur, fmt.Sprintf("the compressed record batches of the tree's files read so far declare %d bytes uncompressed together, more than the tree's %d bytes of payloads may decompress to (%d bytes: %d times their size or %d MiB, whichever is more, and at most the machine's memory; the bound is the tree's, not each file's)", used, size, decompressLimit(size), decompressRatio, decompressFloor>>20)}
			}
		}
	}
	r.off += bodyStart + info.bodyLen
	if info.typ == msgRecordBatch {
		r.codecs = append(r.codecs, info.codec)
	}
	if r.msg != nil {
		r.msg.Release()
	}
	r.msg = ipc.NewMessage(memory.NewBufferBytes(meta), memory.NewBufferBytes(body))
	return r.msg, nil
}

// checkBatchVectors checks that a record batch describes every column of
// the schema (cols, nil when some column's type is not one fieldKind
// knows): a field node for each, and each column's buffers. arrow-go reads
// node i and buffer j of the message without looking at the vectors'
// lengths, so the entries a short vector lacks would be whatever bytes
// follow it: a buffer's offset, length and, compressed, the size to
// allocate.
func checkBatchVectors(info messageInfo, cols []columnKind) error {
	if cols == nil {
		return errors.New("record batch of a schema with a column type clink never writes (clink's columns are uint64, uint8 and binary)")
	}
	need := 0
	for _, c := range cols {
		need += c.buffers()
	}
	if info.nnode < len(cols) || info.nbuf < need {
		return fmt.Errorf("record batch describes %d columns in %d buffers; its schema's %d columns need %d", info.nnode, info.nbuf, len(cols), need)
	}
	return nil
}

// maxExpansion bounds how many times its compressed size a buffer of a
// compressed record batch may declare uncompressed: a ZSTD block of at most
// 128 KiB takes at least 4 bytes (an RLE block), an LZ4 frame expands
// about 255 times at most.
const maxExpansion = 1 << 15

// maxBodyExpansion bounds how many times the size of its body all the
// buffers of a compressed record batch may declare uncompressed together:
// maxExpansion, plus the 64 KiB each buffer may declare beyond it, for at
// most one buffer in 8 body bytes (each takes at least 8). Only buffers
// that overlap, as no writer lays them out, declare more.
const maxBodyExpansion = maxExpansion + 1<<13

// checkBuffers checks that each buffer of an uncompressed record batch lies
// in its body and, for a column of cols (checkBatchVectors ran), that its
// values or offsets buffer holds its declared rows' (a validity bitmap is
// checked by arrow-go, and nulls refused after). arrow-go slices the body
// by the buffers' offsets and lengths, and the values by the rows, as they
// are: a buffer past the body's end, or short of its rows, was a recovered
// panic reported as malformed metadata.
func checkBuffers(meta []byte, info messageInfo, body []byte, cols []columnKind) error {
	return eachBuffer(meta, info, cols, func(i, col, j int, off, n int64) error {
		if off < 0 || n < 0 || off > int64(len(body)) || n > int64(len(body))-off {
			return fmt.Errorf("record batch buffer %d (%d bytes at %d) does not fit in the %d-byte body", i, n, off, len(body))
		}
		if err := checkAligned(i, off, cppReads(meta, info, cols, col, j, n)); err != nil {
			return err
		}
		if col >= len(cols) || col >= info.nnode || j != 1 {
			return nil
		}
		rows := info.nodeRows(meta, col)
		need, role := cols[col].width*rows, "values"
		if cols[col].binary {
			need, role = 0, "offsets"
			if rows > 0 {
				need = cols[col].width * (rows + 1)
			}
		}
		if rows < 0 || rows > math.MaxInt64/16 || n < need {
			return fmt.Errorf("record batch buffer %d, the %s of column %d, holds %d bytes; its %d rows need %d", i, role, col, n, rows, need)
		}
		return nil
	})
}

// looseBytes counts the bytes of an uncompressed record batch's body (its
// buffers checked) that no row holds and that are not zero: those of a
// validity bitmap (clink's columns have no nulls), past a column's values
// or offsets, or outside the span of a binary column's data its offsets
// give, and those between and after the buffers. A writer leaves zeros
// there, as padding; a copy of the file would carry anything else, which
// no rule sees. The schema's columns must be known (cols): else 0, and
// the fields' check refuses the file.
func looseBytes(meta []byte, info messageInfo, body []byte, cols []columnKind) int64 {
	if cols == nil {
		return 0
	}
	type span struct{ lo, hi int64 }
	var held []span
	var offs []byte // the offsets buffer of the column walked, once read
	_ = eachBuffer(meta, info, cols, func(i, col, j int, off, n int64) error {
		if col >= len(cols) || col >= info.nnode {
			return nil
		}
		rows := info.nodeRows(meta, col)
		k := cols[col]
		switch {
		case j == 0:
			offs = nil // (a column's own offsets bound its data)
		case j == 1 && !k.binary:
			held = append(held, span{off, off + min(n, k.width*rows)})
		case j == 1 && rows > 0:
			need := min(n, k.width*(rows+1))
			held = append(held, span{off, off + need})
			offs = body[off : off+need]
		case j == 2 && rows > 0 && int64(len(offs)) == k.width*(rows+1):
			first, last := offsetAt(offs, k.width, 0), offsetAt(offs, k.width, rows)
			if 0 <= first && first <= last && last <= n {
				held = append(held, span{off + first, off + last})
			} else {
				held = append(held, span{off, off + n}) // (refused later)
			}
		}
		return nil
	})
	slices.SortFunc(held, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	var loose, at int64
	for _, h := range held {
		if h.lo > at {
			loose += nonZero(body[at:h.lo])
		}
		at = max(at, h.hi)
	}
	return loose + nonZero(body[min(at, int64(len(body))):])
}

// offsetAt returns the i-th offset of a binary column's offsets, of width
// 4 or 8 bytes.
func offsetAt(offs []byte, width, i int64) int64 {
	if width == 8 {
		return int64(binary.LittleEndian.Uint64(offs[8*i:]))
	}
	return int64(int32(binary.LittleEndian.Uint32(offs[4*i:])))
}

// nonZero counts the bytes of b that are not zero.
func nonZero(b []byte) int64 {
	var n int64
	for _, c := range b {
		if c != 0 {
			n++
		}
	}
	return n
}

// eachBuffer calls fn with each buffer of a record batch: its index i, the
// column col of cols it belongs to and its index j there (col is
// len(cols) or more past the schema's columns), and its offset and length
// in the body, as the metadata declares them. fn's error ends the walk.
func eachBuffer(meta []byte, info messageInfo, cols []columnKind, fn func(i, col, j int, off, n int64) error) error {
	col, j := 0, 0 // buffer i is buffer j of column col
	for i := 0; i < info.nbuf; i, j = i+1, j+1 {
		if col < len(cols) && j == cols[col].buffers() {
			col, j = col+1, 0
		}
		e := info.bufs + 16*i
		if err := fn(i, col, j, int64(binary.LittleEndian.Uint64(meta[e:])), int64(binary.LittleEndian.Uint64(meta[e+8:]))); err != nil {
			return err
		}
	}
	return nil
}

// checkCompressedBuffers checks the buffers of a compressed record batch
// before arrow-go reads them: each lies in the body and declares (its first
// 8 bytes) no more bytes uncompressed than its compressed bytes can hold,
// nor than its role in a column of cols allows (cols may be nil); all of
// them together no more than maxBodyExpansion times the body. arrow-go
// allocates each buffer by that declared length before decompressing it:
// a corrupt length would ask for any amount of memory. It returns the
// bytes the buffers declare uncompressed together.
func checkCompressedBuffers(meta []byte, info messageInfo, body []byte, cols []columnKind) (int64, error) {
	var total int64
	err := eachBuffer(meta, info, cols, func(i, col, j int, off, n int64) error {
		if err := checkAligned(i, off, cppReads(meta, info, cols, col, j, n)); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if off < 0 || n < 8 || off > int64(len(body))-n {
			return fmt.Errorf("compressed buffer %d (%d bytes at %d) does not fit in the %d-byte body", i, n, off, len(body))
		}
		size := int64(binary.LittleEndian.Uint64(body[off:]))
		if size == -1 {
			return nil // stored uncompressed: arrow-go slices the body
		}
		if size < 0 || size > maxExpansion*(n-8)+1<<16 {
			return fmt.Errorf("compressed buffer %d declares %d bytes uncompressed from %d compressed bytes", i, size, n-8)
		}
		if col < len(cols) && col < info.nnode {
			rows := info.nodeRows(meta, col)
			if most, role := cols[col].bound(j, rows); size > most {
				return fmt.Errorf("compressed buffer %d declares %d bytes uncompressed; the %s of column %d (%d rows) holds at most %d bytes", i, size, role, col, rows, most)
			}
		}
		if info.codec == 1 {
			if w := zstdWindow(body[off+8 : off+n]); w > zstdWindowAllowed(size) {
				return fmt.Errorf("compressed buffer %d declares %d bytes uncompressed in ZSTD frames that ask for a %d-byte window, more than the %d sptool decompresses a buffer of that size with (a decoder allocates the window whatever the frame holds)", i, size, w, zstdWindowAllowed(size))
			}
		}
		if total += size; total > maxBodyExpansion*int64(len(body)) {
			return fmt.Errorf("compressed buffers 0-%d declare %d bytes uncompressed in all, more than their %d-byte body can hold (buffers overlap)", i, total, len(body))
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	// arrow-go decompresses the declared bytes and ignores any more; Arrow
	// C++ refuses a buffer it reads that does not decompress to exactly
	// them. The buffers are decompressed once all their declared sizes are
	// bounded.
	err = eachBuffer(meta, info, cols, func(i, col, j int, off, n int64) error {
		if !cppReads(meta, info, cols, col, j, n) {
			return nil
		}
		size := int64(binary.LittleEndian.Uint64(body[off:]))
		if size == -1 {
			return nil
		}
		got, err := inflatedSize(info.codec, body[off+8:off+n], size)
		if err != nil {
			return fmt.Errorf("compressed buffer %d does not decompress: %w", i, err)
		}
		if got != size {
			what := fmt.Sprintf("%d bytes", got)
			if got > size {
				what = fmt.Sprintf("more than %d bytes", size)
			}
			return fmt.Errorf("compressed buffer %d decompresses to %s, not the %d it declares: clink's reader (Arrow C++) refuses it", i, what, size)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return total, nil
}

// checkAligned refuses buffer i at body offset off when Arrow C++ reads it
// (see cppReads) and it does not start on an 8-byte boundary: its reader
// refuses such a buffer ("did not start on 8-byte aligned offset"), where
// arrow-go reads it.
func checkAligned(i int, off int64, reads bool) error {
	if reads && off%8 != 0 {
		return fmt.Errorf("record batch buffer %d starts at body offset %d, not on an 8-byte boundary: clink's reader (Arrow C++) refuses it", i, off)
	}
	return nil
}

// cppReads reports whether Arrow C++'s reader reads buffer j of column col
// of cols, n bytes long, in a record batch: not a buffer past the schema's
// columns, nor a validity bitmap (read only with nulls, which sptool
// refuses), nor an empty buffer, nor the values of a column of no rows.
// Only those it reads it checks for alignment and decompresses.
func cppReads(meta []byte, info messageInfo, cols []columnKind, col, j int, n int64) bool {
	if col >= len(cols) || col >= info.nnode || j == 0 || n == 0 {
		return false
	}
	return cols[col].binary || info.nodeRows(meta, col) != 0
}

// columnKind is how a column of a flat schema lays out its buffers.
type columnKind struct {
	width  int64 // bytes of a value, or of an offset of a binary column
	binary bool  // validity, offsets and data; else validity and values
}

// buffers returns how many buffers a column of kind k has.
func (k columnKind) buffers() int {
	if k.binary {
		return 3
	}
	return 2
}

// bound returns the most bytes buffer j of a column of kind k and rows
// rows holds, rounded up to 64 (writers may pad), and the buffer's role.
func (k columnKind) bound(j int, rows int64) (int64, string) {
	if rows < 0 || rows > math.MaxInt64/16 {
		return math.MaxInt64, "buffer"
	}
	pad := func(n int64) int64 { return (n + 63) &^ 63 }
	switch {
	case j == 0:
		return pad(rows/8 + 1), "validity bitmap"
	case !k.binary:
		return pad(k.width * rows), "values buffer"
	case j == 1:
		return pad(k.width * (rows + 1)), "offsets buffer"
	case k.width == 4:
		return maxBinaryData, "data buffer" // int32 offsets
	}
	return math.MaxInt64, "data buffer"
}

// offsetError is a problem found at a byte offset of a stream.
type offsetError struct {
	Offset int64
	Msg    string
}

func (e *offsetError) Error() string { return fmt.Sprintf("byte offset %d: %s", e.Offset, e.Msg) }

// noEOSError is the offsetError of a stream without its end-of-stream
// marker; it unwraps to ErrNoEndOfStream.
type noEOSError struct{ offsetError }

func (e *noEOSError) Unwrap() error { return ErrNoEndOfStream }

// ErrNoEndOfStream is the error (errors.Is) of a stream that ends at a
// message boundary without its end-of-stream marker (a stream cut inside
// the marker is refused by Arrow C++'s reader too, as corrupted). sptool refuses it as
// truncated, though Arrow C++'s reader, and so clink's restore, takes it
// as complete: clink's writer always writes the marker, and such an end is
// what a file cut between two record batches looks like.
var ErrNoEndOfStream = errors.New("stream ends without the end-of-stream marker")

// Flatbuffer message header types (Message.header_type) used here.
const (
	msgSchema      = 1
	msgDictionary  = 2
	msgRecordBatch = 3
)

type messageInfo struct {
	typ     byte
	bodyLen int64
	codec   int8 // -1 none, 0 LZ4 frame, 1 ZSTD
	// bufs is where a record batch's buffers (16-byte structs: offset and
	// length in the body) start in the metadata; nbuf how many there are.
	bufs, nbuf int
	// rows is a record batch's declared length.
	rows int64
	// nodes is where a record batch's field nodes (16-byte structs: length
	// and null count) start; nnode how many there are.
	nodes, nnode int
	// cols are a schema's columns (nil unless all are of known kinds).
	cols []columnKind
	// custom counts the bytes of the keys and values of the message's
	// custom_metadata and, in a schema, of its fields' custom_metadata,
	// which no reader's rows or schema hold (clink ignores a field's
	// metadata, and no writer sptool or clink runs writes any).
	custom int64
}

// nodeRows returns the length field node col of a record batch's metadata
// declares (col below nnode): its column's rows.
func (info messageInfo) nodeRows(meta []byte, col int) int64 {
	return int64(binary.LittleEndian.Uint64(meta[info.nodes+16*col:]))
}

// peekMessage reads the few fields of an IPC Message flatbuffer the reader
// needs before handing it to arrow-go: header type, body length and, for a
// record batch, its body compression. Every offset is bounds-checked; a
// dictionary batch is refused.
func peekMessage(meta []byte) (info messageInfo, err error) {
	info.codec = -1
	if len(meta) < 4 {
		return info, errors.New("message metadata too short")
	}
	root := int(binary.LittleEndian.Uint32(meta))
	t, err := fbTable(meta, root)
	if err != nil {
		return info, fmt.Errorf("message metadata: %w", err)
	}
	info.typ = byte(fbUint(t, 1, 1))
	info.bodyLen = int64(fbUint(t, 3, 8))
	// Message.version (field 0; absent reads as V1): Arrow C++, clink's
	// reader, refuses a message before V4 or after V5, which arrow-go reads.
	if v := fbUint(t, 0, 2); v < metadataV4 || v > metadataV5 {
		return info, fmt.Errorf("message metadata version %s: clink's reader (Arrow C++) reads V4 and V5 only", metadataVersionName(v))
	}
	// The strings arrow-go copies out of the message may not add up to
	// more bytes than the message holds (see fbString).
	strBytes := len(meta)
	// Message.custom_metadata (field 4): a vector of KeyValue tables.
	if err := checkMetadataFB(t, 4, &strBytes); err != nil {
		return info, fmt.Errorf("message custom metadata: %w", err)
	}
	info.custom = int64(len(meta) - strBytes)
	if info.typ == msgDictionary {
		// arrow-go would read (and decompress) it before the schema is
		// checked.
		return info, errors.New("a dictionary batch; clink streams have no dictionaries")
	}
	if info.typ == msgSchema {
		// arrow-go allocates by the declared field counts before reading
		// them; bound them (a clink schema has 3 or 4 fields).
		hdr, ok, err := fbSubTable(t, 2)
		if err != nil {
			return info, fmt.Errorf("schema header: %w", err)
		}
		if ok {
			var fieldMeta int
			if info.cols, fieldMeta, err = checkSchemaFB(hdr, &strBytes); err != nil {
				return info, fmt.Errorf("schema: %w", err)
			}
			info.custom += int64(fieldMeta)
		}
	}
	if info.typ == msgRecordBatch {
		hdr, ok, err := fbSubTable(t, 2)
		if err != nil {
			return info, fmt.Errorf("record batch header: %w", err)
		}
		if ok {
			info.rows = int64(fbUint(hdr, 0, 8)) // RecordBatch.length
			// RecordBatch.nodes and .buffers: vectors of 16-byte structs.
			nnode, err := fbVector(hdr, 1, 16, -1)
			if err != nil {
				return info, fmt.Errorf("record batch nodes: %w", err)
			}
			if nnode > 0 {
				p := fbField(hdr, 1, 4)
				info.nodes, info.nnode = p+int(binary.LittleEndian.Uint32(hdr.Bytes[p:]))+4, nnode
			}
			nbuf, err := fbVector(hdr, 2, 16, -1)
			if err != nil {
				return info, fmt.Errorf("record batch buffers: %w", err)
			}
			if nbuf > 0 {
				p := fbField(hdr, 2, 4)
				info.bufs, info.nbuf = p+int(binary.LittleEndian.Uint32(hdr.Bytes[p:]))+4, nbuf
			}
			nvar, err := fbVector(hdr, 4, 8, -1)
			if err != nil {
				return info, fmt.Errorf("record batch variadic counts: %w", err)
			}
			// arrow-go allocates a view column's buffer list by its
			// declared variadic count before reading the buffers; each
			// variadic buffer is one of the message's.
			for j := 0; j < nvar; j++ {
				if c := fbVectorInt64(hdr, 4, j); c < 0 || c > int64(nbuf) {
					return info, fmt.Errorf("record batch declares %d variadic buffers for a column; the message has %d buffers", c, nbuf)
				}
			}
			comp, ok, err := fbSubTable(hdr, 3)
			if err != nil {
				return info, fmt.Errorf("record batch compression: %w", err)
			}
			if ok {
				// Only LZ4 frame and ZSTD exist: arrow-go has no
				// decompressor for another byte (and it must not read
				// as "none": the buffers would go unchecked).
				c := fbUint(comp, 0, 1)
				if c > 1 {
					return info, fmt.Errorf("record batch uses unknown compression codec %d", c)
				}
				info.codec = int8(c)
			}
		}
	}
	return info, nil
}

// The MetadataVersion values of V4 and V5 (V1 is 0).
const (
	metadataV4 = 3
	metadataV5 = 4
)

// metadataVersionName names a Message.version value: V1-V5, or the number.
func metadataVersionName(v uint64) string {
	if v <= metadataV5 {
		return fmt.Sprintf("V%d", v+1)
	}
	return fmt.Sprintf("%d (no version Arrow defines)", v)
}

// maxSchemaFields bounds the fields a schema may declare; clink's schemas
// have 3 or 4.
const maxSchemaFields = 64

// checkSchemaFB bounds the vectors of a Schema table (fields 1 and 2) and
// of its Field tables (children 5, custom_metadata 6), and refuses nested
// fields (clink's schemas are flat, and children entries that all point at
// one table would have a walk visit fields without end) and dictionary
// encoded ones (field 4; clink writes no dictionaries, and arrow-go reads
// dictionary batches before the schema is checked). The field names
// and metadata strings are taken from *strBytes (see fbString). It returns
// the kinds of the columns, or nil if one is of another type, and the bytes
// of the keys and values of the fields' custom_metadata.
func checkSchemaFB(schema flatbuffers.Table, strBytes *int) ([]columnKind, int, error) {
	// Schema.endianness (field 0): 1 is big-endian. Arrow C++ swaps such a
	// stream's buffers as it reads them; arrow-go would swap them in place,
	// in the read-only map of the file.
	if fbUint(schema, 0, 2) == 1 {
		return nil, 0, errors.New("a big-endian stream: sptool reads little-endian streams only, as clink and every Arrow writer on common machines write them (clink's reader converts a big-endian one); rewrite it little-endian with an Arrow tool")
	}
	n, err := fbVector(schema, 1, 4, maxSchemaFields)
	if err != nil {
		return nil, 0, fmt.Errorf("fields: %w", err)
	}
	if err := checkMetadataFB(schema, 2, strBytes); err != nil {
		return nil, 0, fmt.Errorf("custom metadata: %w", err)
	}
	if n == 0 {
		return nil, 0, nil
	}
	cols := make([]columnKind, 0, n)
	fieldMeta := 0
	p := fbField(schema, 1, 4)
	vec := p + int(binary.LittleEndian.Uint32(schema.Bytes[p:])) + 4
	for i := 0; i < n; i++ {
		ep := vec + 4*i
		f, err := fbTable(schema.Bytes, ep+int(binary.LittleEndian.Uint32(schema.Bytes[ep:])))
		if err != nil {
			return nil, 0, fmt.Errorf("field %d: %w", i, err)
		}
		kids, err := fbVector(f, 5, 4, -1)
		if err != nil {
			return nil, 0, fmt.Errorf("field %d children: %w", i, err)
		}
		if kids > 0 {
			return nil, 0, fmt.Errorf("field %d has %d children; clink's schemas have no nested fields", i, kids)
		}
		if fbField(f, 4, 4) != 0 {
			return nil, 0, fmt.Errorf("field %d is dictionary-encoded; clink streams have no dictionaries", i)
		}
		if err := fbString(f, 0, strBytes); err != nil {
			return nil, 0, fmt.Errorf("field %d name: %w", i, err)
		}
		before := *strBytes
		if err := checkMetadataFB(f, 6, strBytes); err != nil {
			return nil, 0, fmt.Errorf("field %d metadata: %w", i, err)
		}
		fieldMeta += before - *strBytes
		k, ok, err := fieldKind(f)
		if err != nil {
			return nil, 0, fmt.Errorf("field %d type: %w", i, err)
		}
		if ok && cols != nil {
			cols = append(cols, k)
		} else {
			cols = nil
		}
	}
	return cols, fieldMeta, nil
}

// Flatbuffer type tags (Field.type_type) of the columns fieldKind knows.
const (
	typeInt         = 2
	typeBinary      = 4
	typeUtf8        = 5
	typeLargeBinary = 19
	typeLargeUtf8   = 20
)

// fieldKind returns the kind of a field's column: an integer, or binary or
// UTF-8 (large or not); false for any other type. An integer's type table
// that does not lie in the buffer is an error: the Arrow reader might
// still take the column for an integer (arrow-go does), and its batches
// would then be read without the checks that need its kind.
func fieldKind(f flatbuffers.Table) (columnKind, bool, error) {
	switch fbUint(f, 2, 1) {
	case typeInt:
		t, ok, err := fbSubTable(f, 3)
		if err != nil {
			return columnKind{}, false, fmt.Errorf("Int table: %w", err)
		}
		if !ok {
			return columnKind{}, false, errors.New("an Int column without its Int table (bit width, signedness)")
		}
		switch bits := fbUint(t, 0, 4); bits {
		case 8, 16, 32, 64:
			return columnKind{width: int64(bits / 8)}, true, nil
		}
	case typeBinary, typeUtf8:
		return columnKind{width: 4, binary: true}, true, nil
	case typeLargeBinary, typeLargeUtf8:
		return columnKind{width: 8, binary: true}, true, nil
	}
	return columnKind{}, false, nil
}

// maxMetadataEntries bounds the entries of one metadata vector; clink
// writes at most 2.
const maxMetadataEntries = 1024

// checkMetadataFB checks the metadata vector field i of t (KeyValue
// tables): at most maxMetadataEntries entries, each a table whose key and
// value strings lie in the buffer, their bytes taken from *strBytes.
func checkMetadataFB(t flatbuffers.Table, i int, strBytes *int) error {
	n, err := fbVector(t, i, 4, -1)
	if err != nil {
		return err
	}
	if n > maxMetadataEntries {
		return fmt.Errorf("%d entries, at most %d allowed", n, maxMetadataEntries)
	}
	if n == 0 {
		return nil
	}
	p := fbField(t, i, 4)
	vec := p + int(binary.LittleEndian.Uint32(t.Bytes[p:])) + 4
	for j := 0; j < n; j++ {
		ep := vec + 4*j
		kv, err := fbTable(t.Bytes, ep+int(binary.LittleEndian.Uint32(t.Bytes[ep:])))
		if err == nil {
			err = fbString(kv, 0, strBytes)
		}
		if err == nil {
			err = fbString(kv, 1, strBytes)
		}
		if err != nil {
			return fmt.Errorf("entry %d: %w", j, err)
		}
	}
	return nil
}

// fbString checks that string field i of t lies in the buffer and takes
// its length from *strBytes, which starts at the buffer's length: arrow-go
// copies every string it reads, and entries that all point at one table
// (or string) would have it copy the same bytes again and again.
func fbString(t flatbuffers.Table, i int, strBytes *int) error {
	p := fbField(t, i, 4)
	if p == 0 {
		return nil
	}
	at := p + int(binary.LittleEndian.Uint32(t.Bytes[p:]))
	if at < 0 || at+4 > len(t.Bytes) {
		return fmt.Errorf("string offset %d out of range", at)
	}
	n := int(binary.LittleEndian.Uint32(t.Bytes[at:]))
	if n < 0 || n > len(t.Bytes)-at-4 {
		return fmt.Errorf("string of %d bytes does not fit in the metadata", n)
	}
	if *strBytes -= n; *strBytes < 0 {
		return fmt.Errorf("more string bytes than the %d-byte metadata holds (entries share strings)", len(t.Bytes))
	}
	return nil
}

// fbVector checks that vector field i of t (elements of elemSize bytes) lies
// inside the buffer and has at most max elements (max < 0: no bound beyond
// the buffer), and returns its length (0 when absent).
func fbVector(t flatbuffers.Table, i, elemSize, max int) (int, error) {
	p := fbField(t, i, 4)
	if p == 0 {
		return 0, nil
	}
	vec := p + int(binary.LittleEndian.Uint32(t.Bytes[p:]))
	if vec < 0 || vec+4 > len(t.Bytes) {
		return 0, fmt.Errorf("vector offset %d out of range", vec)
	}
	n := int(binary.LittleEndian.Uint32(t.Bytes[vec:]))
	if n < 0 || int64(n)*int64(elemSize) > int64(len(t.Bytes)-vec-4) {
		return 0, fmt.Errorf("vector of %d elements does not fit in the metadata", n)
	}
	if max >= 0 && n > max {
		return 0, fmt.Errorf("%d elements, at most %d allowed", n, max)
	}
	return n, nil
}

// fbVectorInt64 returns element j of vector field i of t, a vector of
// int64 that fbVector has checked.
func fbVectorInt64(t flatbuffers.Table, i, j int) int64 {
	p := fbField(t, i, 4)
	vec := p + int(binary.LittleEndian.Uint32(t.Bytes[p:]))
	return int64(binary.LittleEndian.Uint64(t.Bytes[vec+4+8*j:]))
}

// fbTable validates that a flatbuffer table and its vtable lie inside buf.
func fbTable(buf []byte, pos int) (flatbuffers.Table, error) {
	if pos < 0 || pos+4 > len(buf) {
		return flatbuffers.Table{}, fmt.Errorf("table offset %d out of range", pos)
	}
	vt := pos - int(int32(binary.LittleEndian.Uint32(buf[pos:])))
	if vt < 0 || vt+4 > len(buf) {
		return flatbuffers.Table{}, fmt.Errorf("vtable offset %d out of range", vt)
	}
	vtLen := int(binary.LittleEndian.Uint16(buf[vt:]))
	if vtLen < 4 || vt+vtLen > len(buf) || vtLen%2 != 0 {
		return flatbuffers.Table{}, fmt.Errorf("vtable length %d invalid", vtLen)
	}
	tLen := int(binary.LittleEndian.Uint16(buf[vt+2:]))
	if pos+tLen > len(buf) {
		return flatbuffers.Table{}, fmt.Errorf("table length %d out of range", tLen)
	}
	return flatbuffers.Table{Bytes: buf, Pos: flatbuffers.UOffsetT(pos)}, nil
}

// fbField returns the absolute position of field i of t, or 0 when absent.
func fbField(t flatbuffers.Table, i int, size int) int {
	vt := int(t.Pos) - int(int32(binary.LittleEndian.Uint32(t.Bytes[t.Pos:])))
	vtLen := int(binary.LittleEndian.Uint16(t.Bytes[vt:]))
	slot := 4 + 2*i
	if slot+2 > vtLen {
		return 0
	}
	off := int(binary.LittleEndian.Uint16(t.Bytes[vt+slot:]))
	if off == 0 || int(t.Pos)+off+size > len(t.Bytes) {
		return 0
	}
	return int(t.Pos) + off
}

func fbUint(t flatbuffers.Table, i, size int) uint64 {
	p := fbField(t, i, size)
	if p == 0 {
		return 0
	}
	switch size {
	case 1:
		return uint64(t.Bytes[p])
	case 2:
		return uint64(binary.LittleEndian.Uint16(t.Bytes[p:]))
	case 4:
		return uint64(binary.LittleEndian.Uint32(t.Bytes[p:]))
	case 8:
		return binary.LittleEndian.Uint64(t.Bytes[p:])
	}
	return 0
}

func fbSubTable(t flatbuffers.Table, i int) (flatbuffers.Table, bool, error) {
	p := fbField(t, i, 4)
	if p == 0 {
		return flatbuffers.Table{}, false, nil
	}
	sub, err := fbTable(t.Bytes, p+int(binary.LittleEndian.Uint32(t.Bytes[p:])))
	return sub, err == nil, err
}

// The exact schemas clink writes and reads (section 1.2 and 1.7).
var (
	canonicalFields = []arrow.Field{
		{Name: "op_id", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "key_bytes", Type: arrow.BinaryTypes.Binary},
		{Name: "value_bytes", Type: arrow.BinaryTypes.Binary},
	}
	changelogFields = []arrow.Field{
		{Name: "row_kind", Type: arrow.PrimitiveTypes.Uint8},
		{Name: "op_id", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "key_bytes", Type: arrow.BinaryTypes.Binary},
		{Name: "value_bytes", Type: arrow.BinaryTypes.Binary},
	}
)

// CanonicalSchemaString is the schema clink expects, as its error messages print it.
const CanonicalSchemaString = "[op_id:uint64, key_bytes:binary, value_bytes:binary] (all non-nullable)"

// checkFields compares a stream's fields with the expected ones exactly:
// names, order, types and nullability (field metadata is ignored, as clink's
// Schema::Equals(check_metadata=false) does).
func checkFields(got *arrow.Schema, want []arrow.Field) error {
	fs := got.Fields()
	if len(fs) != len(want) {
		return fmt.Errorf("schema mismatch: expected %d columns, got %d: %s", len(want), len(fs), describeFields(fs))
	}
	for i, f := range fs {
		w := want[i]
		switch {
		case f.Name != w.Name:
			return fmt.Errorf("schema mismatch: column %d is named %q, expected %q", i, f.Name, w.Name)
		case !arrow.TypeEqual(f.Type, w.Type):
			return fmt.Errorf("schema mismatch: column %q has type %s, expected %s", f.Name, f.Type, w.Type)
		case f.Nullable:
			return fmt.Errorf("schema mismatch: column %q is nullable; clink requires non-nullable fields", f.Name)
		}
	}
	return nil
}

func describeFields(fs []arrow.Field) string {
	s := "["
	for i, f := range fs {
		if i > 0 {
			s += ", "
		}
		s += f.Name + ":" + f.Type.String()
		if f.Nullable {
			s += "?"
		}
	}
	return s + "]"
}

// CheckFormatVersion applies clink's format-version gate (section 1.4): an
// absent key reads as version 1; the value must be 1 to 9 ASCII digits, not
// 0, and at most 1.
func CheckFormatVersion(md Metadata) error {
	v, ok := md.Get(MetaFormatVersion)
	if !ok {
		return nil
	}
	if len(v) < 1 || len(v) > 9 {
		return fmt.Errorf("snapshot format version is not a plain decimal number (%q); the stream is corrupt, or was not written by clink", v)
	}
	n := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return fmt.Errorf("snapshot format version is not a plain decimal number (%q); the stream is corrupt, or was not written by clink", v)
		}
		n = n*10 + int(c-'0')
	}
	if n == 0 {
		return errors.New("snapshot declares format version 0, which does not exist")
	}
	if n > 1 {
		return fmt.Errorf("snapshot is format version %d but this build reads at most version 1", n)
	}
	return nil
}

func metadataOf(s *arrow.Schema) Metadata {
	md := s.Metadata()
	keys, vals := md.Keys(), md.Values()
	out := make(Metadata, len(keys))
	for i := range keys {
		out[i] = MetaEntry{keys[i], vals[i]}
	}
	return out
}

var codecNames = map[int8]string{-1: "", 0: "lz4", 1: "zstd"}

// rawStream is a decoded IPC stream: its schema, metadata and batches.
type rawStream struct {
	schema      *arrow.Schema
	meta        Metadata
	batches     []arrow.RecordBatch
	compression string
	trailing    int64
	hidden      HiddenStream
	loose       int64 // see Snapshot.LooseBytes
}

// readStream decodes an Arrow IPC stream held in data, whose compressed
// record batches are counted against budget, the file's (see
// DecodeSnapshot). The format-version gate runs before the schema is
// returned; the caller checks the fields. Column buffers of uncompressed
// bodies alias data.
func readStream(data []byte, budget *inflateBudget) (rs *rawStream, err error) {
	return readStreamReleasing(data, budget, nil, false)
}

// readStreamReleasing is readStream telling release, when not nil, the
// bytes of each batch's message read (it releases the pages of the map
// data is). whole says data is a file's bytes from its start, not a stream
// inside one (a changelog's blob or inline materialisation): a first
// message that is no message then asks whether the file is a savepoint.
func readStreamReleasing(data []byte, budget *inflateBudget, release func(n int64), whole bool) (rs *rawStream, err error) {
	defer func() {
		if p := recover(); p != nil {
			rs, err = nil, fmt.Errorf("malformed Arrow IPC stream (%v)", p)
		}
	}()
	mr := &sliceMessageReader{data: data[:len(data):len(data)], budget: budget, whole: whole}
	rdr, err := ipc.NewReaderFromMessageReader(mr, ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return nil, unwrapIPC(err, mr)
	}
	defer rdr.Release()
	rs = &rawStream{schema: rdr.Schema(), meta: metadataOf(rdr.Schema())}
	if err := CheckFormatVersion(rs.meta); err != nil {
		return nil, err
	}
	if mr.cols == nil {
		// A column of a type clink never writes (see fieldKind): the
		// callers' schema checks refuse the stream, naming the column.
		// Its batches are not read: their buffers follow a layout that
		// checkBatchVectors and checkCompressedBuffers do not know. A
		// schema the Arrow reader read as one of clink's, whose columns
		// fieldKind did not know all the same, is refused here: its rows
		// would otherwise go unread, and the stream pass for empty.
		if checkFields(rs.schema, canonicalFields) == nil || checkFields(rs.schema, changelogFields) == nil {
			return nil, errors.New("schema: the Arrow reader reads clink's columns, but a column's type in the schema message is not one sptool can read: a damaged Field table?")
		}
		return rs, nil
	}
	for at := int64(0); rdr.Next(); {
		rec := rdr.RecordBatch()
		rec.Retain()
		rs.batches = append(rs.batches, rec)
		if release != nil {
			release(mr.off - at)
		}
		at = mr.off
	}
	if err := rdr.Err(); err != nil {
		return nil, unwrapIPC(err, mr)
	}
	if !mr.eos {
		// arrow-go stops quietly at a short read; the stream must end with EOS.
		return nil, &noEOSError{offsetError{mr.off, "stream ends without the end-of-stream marker (truncated file?)"}}
	}
	for _, c := range mr.codecs {
		if c >= 0 {
			rs.compression = codecNames[c]
		}
	}
	rs.trailing = int64(len(data)) - mr.off
	rs.hidden = hiddenStream(data[mr.off:], mr.off)
	rs.loose = mr.loose
	return rs, nil
}

// HiddenStream is what the bytes after a stream's end-of-stream marker
// hold of a stream: a damaged message length (a batch's length word read
// as 0, a continuation marker zeroed into an old-style marker, a schema
// length that swallows the batch after it) ends a stream early, and its
// later batches lie after the marker, where clink's reader, which stops
// there, never reads them.
type HiddenStream struct {
	// Batches counts the whole record batch messages found one after the
	// other from the first continuation marker at an 8-byte-aligned
	// offset (or right after the marker, in the old format) whose
	// message parses, and Rows their declared rows.
	Batches int
	Rows    int64
	// EndMarker: the bytes end with an end-of-stream marker
	// (continuation, then a length of 0), as a whole stream does.
	EndMarker bool
}

// Found reports whether the bytes after the marker look like more stream.
func (h HiddenStream) Found() bool { return h.Batches > 0 || h.EndMarker }

// String says what the bytes after the marker hold ("" when nothing of a
// stream), in words that follow "the bytes after its end-of-stream marker".
func (h HiddenStream) String() string {
	switch {
	case h.Batches > 0:
		return fmt.Sprintf("hold %d more record batch%s (%d row%s), which clink's reader, stopping at the marker, never reads: a damaged message length ended the stream early?", h.Batches, plural(h.Batches, "", "es"), h.Rows, plural(int(min(h.Rows, 2)), "", "s"))
	case h.EndMarker:
		return "end with another end-of-stream marker, where the stream ends: a damaged message length ended it early, and clink's reader, stopping at the first marker, never reads the rows after it?"
	}
	return ""
}

// hiddenStream looks at rest, the bytes after a stream's end-of-stream
// marker, which ends at byte off of the stream, for more stream (see
// HiddenStream).
func hiddenStream(rest []byte, off int64) (h HiddenStream) {
	n := len(rest)
	// (A second marker right after the first hides nothing.)
	h.EndMarker = n > 8 && binary.LittleEndian.Uint32(rest[n-8:]) == continuation && binary.LittleEndian.Uint32(rest[n-4:]) == 0
	batches, rows, end := messagesAt(rest, 0)
	if batches > 0 {
		h.Batches, h.Rows = batches, rows
		return h
	}
	// Messages start at 8-byte-aligned offsets of the stream. A chain of
	// messages without a batch is passed over whole, so that the scan
	// reads each byte once (a chain looked for again from each of its
	// messages would take a time that grows with its square); so is the
	// one right after the marker, just read.
	align := func(at int) int { return at + int((8-(off+int64(at))%8)%8) }
	for at := align(max(1, end)); at+8 <= n; {
		if binary.LittleEndian.Uint32(rest[at:]) != continuation {
			at += 8
			continue
		}
		batches, rows, end := messagesAt(rest, at)
		if batches > 0 {
			h.Batches, h.Rows = batches, rows
			return h
		}
		at = align(max(at+8, end))
	}
	return h
}

// messagesAt counts the record batch messages that follow one another in
// b from byte at, each whole and its metadata parsing (see peekMessage),
// up to an end-of-stream marker or anything else, and their declared rows
// (at most math.MaxInt64); end is where the messages end.
func messagesAt(b []byte, at int) (batches int, rows int64, end int) {
	for at+8 <= len(b) {
		hdr := 4
		metaLen := int(int32(binary.LittleEndian.Uint32(b[at:])))
		if binary.LittleEndian.Uint32(b[at:]) == continuation {
			hdr, metaLen = 8, int(int32(binary.LittleEndian.Uint32(b[at+4:])))
		}
		if metaLen <= 0 || metaLen > len(b)-at-hdr {
			break
		}
		info, err := peekMessage(b[at+hdr : at+hdr+metaLen])
		if err != nil || info.bodyLen < 0 || info.bodyLen > int64(len(b)-at-hdr-metaLen) {
			break
		}
		if info.typ == msgRecordBatch {
			batches++
			rows += min(max(info.rows, 0), math.MaxInt64-rows)
		}
		at += hdr + metaLen + int(info.bodyLen)
	}
	return batches, rows, at
}

// unwrapIPC prefers the message reader's own error (with its byte offset) to
// arrow-go's wrapping of it.
func unwrapIPC(err error, mr *sliceMessageReader) error {
	var ne *noEOSError
	if errors.As(err, &ne) {
		return ne
	}
	var oe *offsetError
	if errors.As(err, &oe) {
		return oe
	}
	return &offsetError{mr.cur, "cannot decode message: " + malformedDetail(err)}
}

// malformedDetail words what arrow-go's decoding of a message reported: a
// runtime error (an index or slice out of range, a nil pointer) means its
// flatbuffer metadata points outside the message, or to fields the format
// does not allow, which the checks before arrow-go reads a message do not
// cover; the runtime's words follow in parentheses.
func malformedDetail(what any) string {
	s := fmt.Sprint(what)
	if strings.Contains(s, "runtime error") {
		return "its flatbuffer metadata is malformed: a table, vector or field points outside the message or holds what the format does not allow (" + s + ")"
	}
	return s
}

// validateBatch runs arrow's full validation on every column of a batch and
// checks that no column holds nulls. Binary offsets are checked here, a
// chunk at a time, read with readMapped when it is not nil, unless
// deferOffsets leaves that walk to the caller (see validateOffsetsOf).
func validateBatch(rec arrow.RecordBatch, readMapped func(dst, src []byte) error, deferOffsets bool) (err error) {
	// arrow-go's accessors trust the batch header (a declared null count
	// with no validity bitmap panics in NullN): a malformed batch is an
	// error, not a crash.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("malformed record batch: %s", malformedDetail(p))
		}
	}()
	for i, col := range rec.Columns() {
		var err error
		switch c := col.(type) {
		case *array.Binary:
			if err = c.Validate(); err == nil && !deferOffsets {
				err = validateOffsets(binaryOffsets(c), len(binaryData(c)), readMapped)
			}
		case interface{ ValidateFull() error }:
			err = c.ValidateFull()
		case *array.Uint64:
			err = checkValuesBuffer(c.Data(), 8)
		case *array.Uint8:
			err = checkValuesBuffer(c.Data(), 1)
		}
		if err != nil {
			return fmt.Errorf("column %q: %w", rec.ColumnName(i), err)
		}
		if col.NullN() != 0 {
			return fmt.Errorf("column %q has %d null values; clink never writes nulls", rec.ColumnName(i), col.NullN())
		}
		if col.Len() != int(rec.NumRows()) {
			return fmt.Errorf("column %q has %d rows, the batch %d", rec.ColumnName(i), col.Len(), rec.NumRows())
		}
	}
	return nil
}

// checkValuesBuffer checks that the values buffer of a fixed-width column
// of width bytes a value declares room for its rows. arrow-go's Values
// slices the buffer's bytes by the rows alone, and a buffer read from a
// stream is a slice of the body whose capacity runs to its end: a buffer
// declared too short gave values read from the buffers after it.
func checkValuesBuffer(d arrow.ArrayData, width int) error {
	rows := d.Offset() + d.Len()
	have := 0
	if bufs := d.Buffers(); len(bufs) > 1 && bufs[1] != nil {
		have = bufs[1].Len()
	}
	if have/width < rows {
		return fmt.Errorf("values buffer holds %d bytes, %d values, for %d rows", have, have/width, rows)
	}
	return nil
}

// validateOffsets is the rest of arrow's ValidateFull for a binary column
// (after Validate, which checks the buffers' sizes): offsets that start at
// or above 0, never decrease and end within the dataLen bytes of data.
// They are read in chunks, with readMapped when it is not nil (a
// memory-mapped column is then read with pread, not through the map).
func validateOffsets(offs []int32, dataLen int, readMapped func(dst, src []byte) error) error {
	if len(offs) == 0 {
		return nil
	}
	const chunk = sinkSize / 4 // offsets read at once: one pooled buffer
	var buf []int32
	if readMapped != nil {
		raw := poolBuf(4 * min(chunk, len(offs)))[:4*min(chunk, len(offs))]
		defer putBuf(raw)
		buf = wordsOf[int32](raw)
	}
	prev := int32(0)
	for lo := 0; lo < len(offs); lo += chunk {
		part := offs[lo:min(lo+chunk, len(offs))]
		if readMapped != nil {
			if err := readMapped(bytesOf(buf[:len(part)]), bytesOf(part)); err != nil {
				return err
			}
			part = buf[:len(part)]
		}
		if lo == 0 {
			if part[0] < 0 {
				return fmt.Errorf("binary offsets start at %d, below 0", part[0])
			}
			prev = part[0]
		}
		for j, o := range part {
			if o < prev {
				return fmt.Errorf("binary offsets are not monotonically non-decreasing at index %d: %d < %d", lo+j-1, o, prev)
			}
			prev = o
		}
	}
	if int(prev) > dataLen {
		return fmt.Errorf("binary offsets end at %d, past the %d bytes of data", prev, dataLen)
	}
	return nil
}

// maxBinaryData is the most data one binary column of one batch may hold
// (int32 offsets).
const maxBinaryData = math.MaxInt32

// zstdDecoders are the decoders inflatedSize checks ZSTD buffers with.
var zstdDecoders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		return err
	}
	return d
}}

// inflatedSize decompresses data, a compressed record batch buffer of codec
// (0 LZ4 frame, 1 ZSTD) without its 8-byte length, to nowhere, and returns
// how many bytes it holds: size+1 when it holds more than size.
func inflatedSize(codec int8, data []byte, size int64) (int64, error) {
	var r io.Reader
	switch codec {
	case 0:
		if err := oneLZ4Frame(data); err != nil {
			return 0, err
		}
		r = lz4.NewReader(bytes.NewReader(data))
	case 1:
		v := zstdDecoders.Get()
		d, ok := v.(*zstd.Decoder)
		if !ok {
			return 0, v.(error)
		}
		defer zstdDecoders.Put(d)
		if err := d.Reset(bytes.NewReader(data)); err != nil {
			return 0, err
		}
		defer d.Reset(nil)
		r = d
	default:
		return 0, fmt.Errorf("unknown compression codec %d", codec)
	}
	return io.Copy(io.Discard, io.LimitReader(r, size+1))
}

// zstdMinWindow is the window a ZSTD buffer may always ask for: the 8 MiB
// the format's specification asks every decoder to support, and what
// encoders use at their highest regular levels.
const zstdMinWindow = 8 << 20

// zstdWindowAllowed is the largest window a ZSTD buffer declaring size
// bytes uncompressed may ask for: zstdMinWindow, or twice its size. An
// encoder that knows the size of what it compresses (Arrow C++ and
// arrow-go compress a buffer at once) declares a window no larger than
// twice it; one that streams, a window of its level, 8 MiB at most.
func zstdWindowAllowed(size int64) int64 {
	return max(zstdMinWindow, 2*size)
}

// zstdWindow returns the largest window the ZSTD frames of data ask for (a
// single-segment frame's is its content size), walking their headers and
// block headers (the ZSTD frame format); skippable frames ask for none.
// Where the walk finds what is not a frame (which the decoder reports) it
// returns the largest of the frames before, the one whose blocks it was
// walking included: a decoder allocates that one's window before it finds
// its blocks wrong. The streaming decoders that check a buffer and that arrow-go
// reads it with allocate a frame's whole window before its first block:
// a five-byte frame asking for 512 MiB allocated 512 MiB.
func zstdWindow(data []byte) int64 {
	return zstdWindowOf(int64(len(data)), func(off int64, n int) []byte { return data[off : off+int64(n)] })
}

// zstdWindowOf is zstdWindow of size bytes that peek returns n at a time
// from off (off+n never past size): a file read where its map would fault
// a page in for each block header.
func zstdWindowOf(size int64, peek func(off int64, n int) []byte) int64 {
	var most int64
	var pos int64 // the start of the frame walked
	for pos < size {
		left := size - pos
		if left < 8 {
			return most
		}
		head := peek(pos, int(min(left, 18))) // a frame header's most
		magic := binary.LittleEndian.Uint32(head)
		if magic&0xFFFFFFF0 == 0x184D2A50 { // a skippable frame
			n := int64(binary.LittleEndian.Uint32(head[4:]))
			if n > left-8 {
				return most
			}
			pos += 8 + n
			continue
		}
		if magic != 0xFD2FB528 {
			return most
		}
		fhd := head[4]
		single := fhd&0x20 != 0
		at := 5
		var window int64
		if !single {
			wd := head[at]
			at++
			base := int64(1) << (10 + wd>>3)
			window = base + base/8*int64(wd&7)
		}
		at += [4]int{0, 1, 2, 4}[fhd&3] // dictionary id
		fcsSize := [4]int{0, 2, 4, 8}[fhd>>6]
		if fcsSize == 0 && single {
			fcsSize = 1
		}
		if at+fcsSize > len(head) {
			return most
		}
		if single {
			var fcs uint64
			for k := fcsSize - 1; k >= 0; k-- {
				fcs = fcs<<8 | uint64(head[at+k])
			}
			if fcsSize == 2 {
				fcs += 256
			}
			window = int64(min(fcs, 1<<62))
		}
		off := pos + int64(at+fcsSize)
		most = max(most, window)
		for {
			if off+3 > size {
				return most
			}
			b := peek(off, 3)
			h := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16
			off += 3
			n := int64(h >> 3)
			switch h >> 1 & 3 {
			case 1: // RLE: one byte repeated n times
				n = 1
			case 3:
				return most
			}
			if n > size-off {
				return most
			}
			off += n
			if h&1 != 0 {
				break // the last block
			}
		}
		if fhd&0x04 != 0 {
			off += 4 // content checksum
		}
		if off > size {
			return most
		}
		pos = off
	}
	return most
}

// oneLZ4Frame checks that data is one LZ4 frame, to its last byte: Arrow
// C++ decompresses a buffer's one frame and refuses more ("contains more
// than one frame") or less, where the LZ4 reader reads frame after frame.
// It walks the frame's header, blocks, end mark and checksums (the LZ4
// frame format); the blocks' contents are decompressed after.
func oneLZ4Frame(data []byte) error {
	const magic = 0x184D2204
	if len(data) == 0 {
		return errors.New("no LZ4 frame, which clink's reader (Arrow C++) refuses")
	}
	if len(data) < 7 || binary.LittleEndian.Uint32(data) != magic {
		return errors.New("not an LZ4 frame (no frame magic number)")
	}
	flg := data[4]
	at := 7 // magic, FLG, BD, and the header checksum after the options
	if flg&0x08 != 0 {
		at += 8 // content size
	}
	if flg&0x01 != 0 {
		at += 4 // dictionary id
	}
	for {
		if at+4 > len(data) {
			return errors.New("LZ4 frame cut short")
		}
		n := int(binary.LittleEndian.Uint32(data[at:]) & 0x7FFFFFFF)
		at += 4
		if binary.LittleEndian.Uint32(data[at-4:]) == 0 {
			break // the end mark
		}
		if flg&0x10 != 0 {
			n += 4 // block checksum
		}
		if n > len(data)-at {
			return errors.New("LZ4 frame cut short")
		}
		at += n
	}
	if flg&0x04 != 0 {
		at += 4 // content checksum
	}
	switch {
	case at > len(data):
		return errors.New("LZ4 frame cut short")
	case at < len(data):
		return fmt.Errorf("%d bytes after the LZ4 frame (another frame?), which clink's reader (Arrow C++) refuses", len(data)-at)
	}
	return nil
}
