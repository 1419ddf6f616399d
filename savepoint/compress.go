package savepoint

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"strings"

	dsbzip2 "github.com/dsnet/compress/bzip2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/ulikunitz/xz"
	xzread "github.com/xi2/xz"
)

// Whole-file compressions recognised by their magic bytes. Archives keep
// savepoints this way; clink itself never writes them.
const (
	CompressNone  = ""
	CompressGzip  = "gzip"
	CompressZstd  = "zstd"
	CompressLZ4   = "lz4"
	CompressBzip2 = "bzip2"
	CompressXZ    = "xz"
)

// compressionSuffixes are the file name suffixes of the whole-file
// compressions.
var compressionSuffixes = map[string]string{
	CompressGzip: ".gz", CompressZstd: ".zst", CompressLZ4: ".lz4", CompressBzip2: ".bz2", CompressXZ: ".xz",
}

// CompressionOfName returns the whole-file compression that a file name's
// suffix stands for (".gz", ".zst", ".lz4", ".bz2", ".xz"), or
// CompressNone.
func CompressionOfName(name string) string {
	for c, suffix := range compressionSuffixes {
		if strings.HasSuffix(name, suffix) {
			return c
		}
	}
	return CompressNone
}

// CompressionSuffix returns the file name suffix of a whole-file
// compression ("" for CompressNone).
func CompressionSuffix(c string) string { return compressionSuffixes[c] }

var magics = []struct {
	name  string
	magic []byte
}{
	{CompressGzip, []byte{0x1f, 0x8b}},
	{CompressZstd, []byte{0x28, 0xb5, 0x2f, 0xfd}},
	{CompressLZ4, []byte{0x04, 0x22, 0x4d, 0x18}},
	{CompressLZ4, []byte{0x02, 0x21, 0x4c, 0x18}}, // the legacy frame (lz4 -l)
	{CompressBzip2, []byte("BZh")},
	{CompressXZ, []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}},
}

// DetectCompression names the whole-file compression of data from its magic
// bytes, or CompressNone. An Arrow IPC stream starts with 0xFFFFFFFF (or a
// legacy length) and a CLMB frame with "CLMB", neither of which collides.
// Skippable frames (magic 0x184D2A50-0x184D2A5F, a 4-byte little-endian
// size, then that many bytes), which zstd and lz4 share and archivers put
// ahead of a stream for their own metadata, are stepped over: the frame
// after them names the compression, and both readers skip them too
// (Decompress refuses them ahead of gzip, bzip2 or xz, whose readers do
// not).
func DetectCompression(data []byte) string {
	data, ok := skipFrames(data)
	if !ok {
		return CompressNone // cut short: nothing after it to name
	}
	for _, m := range magics {
		if bytes.HasPrefix(data, m.magic) {
			return m.name
		}
	}
	return CompressNone
}

// skipFrames returns data after its leading skippable frames, and false
// when one is cut short.
func skipFrames(data []byte) ([]byte, bool) {
	for len(data) >= 8 && data[0]&0xf0 == 0x50 && data[1] == 0x2a && data[2] == 0x4d && data[3] == 0x18 {
		size := uint64(binary.LittleEndian.Uint32(data[4:8]))
		if size > uint64(len(data)-8) {
			return nil, false
		}
		data = data[8+size:]
	}
	return data, true
}

// Whole-file decompression is bounded: a few megabytes of gzip can expand to
// gigabytes, and running out of memory is fatal to a Go program. A payload
// may decompress to at most decompressRatio times its compressed size
// (deflate tops out near 1032:1; real savepoints compress far less), or
// decompressFloor bytes for small files, and never to more than
// decompressCeiling, the machine's physical memory (see physicalMemory),
// which also bounds a materialisation file (read whole). Variables so tests
// can lower them.
var (
	decompressRatio   int64 = 1024
	decompressFloor   int64 = 64 << 20
	decompressCeiling       = physicalMemory()
)

// decompressLimit returns how many bytes a payload of n compressed bytes may
// decompress to in memory: fileDecompressLimit, at most decompressCeiling.
func decompressLimit(n int) int64 {
	return min(fileDecompressLimit(n), decompressCeiling)
}

// fileDecompressLimit returns how many bytes a payload of n compressed
// bytes may decompress to in a file (decompressToFile): decompressRatio
// times n, or decompressFloor, whichever is more (less than math.MaxInt64:
// the readers read one byte more).
func fileDecompressLimit(n int) int64 {
	return min(max(int64(n)*decompressRatio, decompressFloor), math.MaxInt64-1)
}

// overLimitError is the error of a stream of n compressed bytes that
// decompresses past limit; bound says what else bounds it ("" for none).
func overLimitError(limit int64, n int, bound string) error {
	return fmt.Errorf("decompressed size exceeds %d bytes, the limit for %d compressed bytes (%d times their size, at least %d MiB%s)", limit, n, decompressRatio, decompressFloor>>20, bound)
}

// xzEndError returns an error when name is xz and data, the whole
// compressed file, does not end with a stream footer (see xzFooterAtEnd).
func xzEndError(name string, data []byte) error {
	if name == CompressXZ && !xzFooterAtEnd(data) {
		return fmt.Errorf("%w (no stream footer at the end)", io.ErrUnexpectedEOF)
	}
	return nil
}

// Decompress returns data decompressed as a stream according to its magic
// bytes, with the name of the compression, or data itself when it is not
// compressed. Data that decompresses to more than 1024 times its size or 64
// MiB, whichever is more, or to more than the machine's physical memory, is
// an error: it is no savepoint, or one too large to hold in memory.
func Decompress(data []byte) ([]byte, string, error) { return decompress(data, false) }

// decompressPayload is Decompress of a payload: its first bytes must
// start a stream sptool reads (see streamStart), checked before the rest
// is decompressed.
func decompressPayload(data []byte) ([]byte, string, error) { return decompress(data, true) }

func decompress(data []byte, payload bool) ([]byte, string, error) {
	limit := decompressLimit(len(data))
	r, name, done, err := openDecompressor(data, nil, payload, limit)
	if err != nil {
		return nil, name, err
	}
	if name == CompressNone {
		return data, name, nil
	}
	defer done()
	out, err := readChunked(r, limit)
	if err != nil && !errors.Is(err, errOverLimit) {
		return nil, name, fmt.Errorf("decompress %s stream: %w", name, err)
	}
	if err != nil {
		err = overLimitError(limit, len(data), ", at most the machine's physical memory")
	} else {
		err = xzEndError(name, data)
	}
	if err != nil {
		return nil, name, fmt.Errorf("decompress %s stream: %w", name, err)
	}
	return out, name, nil
}

// openDecompressor returns a reader of data decompressed, for a stream of
// at most limit bytes, with the name of its compression and what closes the
// reader; CompressNone and a nil reader when data is not compressed. With
// src, the file data maps, the compressed bytes and a zstd stream's block
// headers are read from the file, not through the map, whose pages would
// enter the resident set: the map is looked at for its first frames and
// its end alone. With
// payload, the first decompressed bytes must start a stream sptool reads
// (streamStart): they are read, checked and given back by the reader.
func openDecompressor(data []byte, src *os.File, payload bool, limit int64) (io.Reader, string, func(), error) {
	name := DetectCompression(data)
	if name == CompressNone {
		return nil, name, nil, nil
	}
	if rest, _ := skipFrames(data); len(rest) != len(data) && name != CompressZstd && name != CompressLZ4 {
		// Only zstd's and lz4's readers step over these frames; a gzip,
		// bzip2 or xz reader would call the file's first bytes garbage.
		return nil, name, nil, fmt.Errorf("open %s stream: it follows %d bytes of zstd/lz4 skippable frames, which no %s reader reads; strip them (the %s stream starts at byte %d)",
			name, len(data)-len(rest), name, name, len(data)-len(rest))
	}
	if name == CompressZstd {
		// The decoder allocates a frame's window before its first block, in
		// memory whatever the stream is decompressed to: one larger than
		// all the file may decompress to in memory is never used.
		w := zstdWindow
		if src != nil {
			w = func(data []byte) int64 { return zstdWindowOf(int64(len(data)), fileBytes(src)) }
		}
		if w, mem := w(data), decompressLimit(len(data)); w > max(mem, zstdMinWindow) {
			return nil, name, nil, fmt.Errorf("open %s stream: a frame asks for a %d-byte window, more than the %d bytes the file may decompress to (%d times its %d bytes, at least %d MiB), which the decoder would allocate whole; decompress it with zstd and read the plain file",
				name, w, mem, decompressRatio, len(data), decompressFloor>>20)
		}
	}
	var in io.Reader = bytes.NewReader(data)
	if src != nil {
		in = bufio.NewReaderSize(io.NewSectionReader(src, 0, int64(len(data))), 256<<10)
	}
	r, err := newDecompressor(name, in, max(decompressLimit(len(data)), zstdMinWindow))
	if err != nil {
		return nil, name, nil, fmt.Errorf("open %s stream: %w", name, err)
	}
	done := func() {
		if c, ok := r.(io.Closer); ok {
			c.Close()
		}
	}
	// The first bytes say whether a savepoint follows: garbage (a file of
	// zeros compressed, a few megabytes for a gigabyte) fails there, not
	// once all of it has been decompressed.
	if payload {
		head := make([]byte, 8)
		n, err := readFull(r, head)
		if err == nil || err == io.EOF {
			err = streamStart(head[:n], limit)
		}
		if err != nil {
			done()
			return nil, name, nil, fmt.Errorf("decompress %s stream: %w", name, err)
		}
		r = io.MultiReader(bytes.NewReader(head[:n]), r)
	}
	return r, name, done, nil
}

// TempFileError is an error of the temporary file a payload compressed as
// a whole is decompressed into (OpenOptions.TempDir): its directory cannot
// be written, or is full. It says nothing of the payload, which a tree
// opened with KeepUndecodable does not record as undecodable for it: the
// open fails.
type TempFileError struct{ Err error }

func (e *TempFileError) Error() string { return e.Err.Error() }
func (e *TempFileError) Unwrap() error { return e.Err }

// fileBytes returns a zstdWindowOf peek of f's bytes, read with pread a
// window of 64 KiB at a time, from the first byte asked for on (headers of
// blocks as short as a zstd stream may have them come many to a window): a
// byte that cannot be read is 0, and the decoder, which reads them after,
// reports the error.
func fileBytes(f *os.File) func(off int64, n int) []byte {
	const window = 64 << 10
	buf := make([]byte, window)
	var at int64 = -1 // buf holds the file's bytes [at, at+len(win))
	var win []byte
	return func(off int64, n int) []byte {
		if at < 0 || off < at || off+int64(n) > at+int64(len(win)) {
			m, _ := f.ReadAt(buf, off)
			at, win = off, buf[:m]
			if m < n {
				clear(buf[m:n])
				win = buf[:n]
			}
		}
		return win[off-at : off-at+int64(n)]
	}
}

// decompressToFile decompresses data, a payload compressed as a whole and
// the map of fh, into an unnamed temporary file in dir ("" for
// os.TempDir()), stopping between blocks when ctx is done: memory holds the
// decoder's window, not the stream (fh is read, not the map), and the file
// is memory-mapped as a plain payload is. It returns
// the file, the decompressed size and the compression's name (CompressNone
// and no file when data is not compressed). The stream may be decompressRatio
// times data's size, or decompressFloor bytes, whichever is more.
func decompressToFile(ctx context.Context, data []byte, fh *os.File, dir string) (*os.File, int64, string, error) {
	limit := fileDecompressLimit(len(data))
	r, name, done, err := openDecompressor(data, fh, true, limit)
	if err != nil || name == CompressNone {
		return nil, 0, name, err
	}
	defer done()
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := createTempFile(dir, "decompressed")
	if err != nil {
		return nil, 0, name, &TempFileError{fmt.Errorf("decompress %s stream: create the temporary file it is decompressed into, in %s: %w%s", name, dir, err, tempDirHint(err, "the stream's decompressed size"))}
	}
	fail := func(err error) (*os.File, int64, string, error) {
		f.Close()
		return nil, 0, name, fmt.Errorf("decompress %s stream: %w", name, err)
	}
	buf := poolBuf(sinkSize)[:sinkSize]
	defer putBuf(buf)
	var total int64
	for {
		if err := ctxErr(ctx); err != nil {
			return fail(err)
		}
		n, rerr := readFull(r, buf)
		if total += int64(n); total > limit {
			return fail(overLimitError(limit, len(data), ""))
		}
		if _, err := f.Write(buf[:n]); err != nil {
			f.Close()
			return nil, 0, name, &TempFileError{fmt.Errorf("decompress %s stream: write the decompressed bytes to a temporary file in %s: %w%s", name, dir, err, tempDirHint(err, "the stream's decompressed size"))}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return fail(rerr)
		}
	}
	if err := xzEndError(name, data); err != nil {
		return fail(err)
	}
	return f, total, name, nil
}

// streamStart returns an error if b, the first 8 bytes (or all, if
// fewer) of a decompressed payload of at most limit bytes, starts neither
// an Arrow IPC stream (0xFFFFFFFF and the first message's length, or a
// legacy length alone: a positive int32 within limit) nor a changelog's
// CLMB frame. Fewer than 8 bytes are left to the decoder to judge.
func streamStart(b []byte, limit int64) error {
	if len(b) < 8 || bytes.HasPrefix(b, clmbMagic) {
		return nil
	}
	l := int32(binary.LittleEndian.Uint32(b))
	if l == -1 { // the continuation marker
		l = int32(binary.LittleEndian.Uint32(b[4:]))
	}
	if l <= 0 || int64(l) > limit {
		return fmt.Errorf("the decompressed bytes start % x, which start no Arrow IPC stream (0xFFFFFFFF and a message's length) nor a changelog frame (CLMB): the file holds no savepoint", b)
	}
	return nil
}

// xzFooterAtEnd reports whether data ends with an xz stream footer (its
// CRC-32 and the magic "YZ"), after any stream padding. The xz reader takes
// a stream cut short just before a block header for a stream that ended.
func xzFooterAtEnd(data []byte) bool {
	for len(data) >= 4 && bytes.Equal(data[len(data)-4:], []byte{0, 0, 0, 0}) {
		data = data[:len(data)-4]
	}
	if len(data) < 12 {
		return false
	}
	f := data[len(data)-12:]
	return f[10] == 'Y' && f[11] == 'Z' && crc32.ChecksumIEEE(f[4:10]) == binary.LittleEndian.Uint32(f[:4])
}

// errOverLimit is readChunked's error for a stream longer than its limit.
var errOverLimit = errors.New("over the limit")

// readChunked reads r to its end, at most limit bytes (more is
// errOverLimit), into chunks that grow to 4 MiB, then joins them: what it
// holds is at most what was read plus a chunk, where a buffer that doubles
// as it fills holds up to three times as much while it grows (a stream
// that decompresses past its limit took 356 MB of memory for a limit of
// 64 MiB). Joining takes the chunks' size again, once, for a stream that
// is read whole.
func readChunked(r io.Reader, limit int64) ([]byte, error) {
	r = io.LimitReader(r, limit+1)
	var chunks [][]byte
	size := 64 << 10
	total := 0
	for {
		b := make([]byte, size)
		n, err := readFull(r, b)
		if int64(total+n) > limit {
			return nil, errOverLimit
		}
		if n > 0 {
			chunks = append(chunks, b[:n])
			total += n
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		size = min(2*size, 4<<20)
	}
	if len(chunks) == 1 {
		return chunks[0], nil
	}
	out := make([]byte, 0, total)
	for i, c := range chunks {
		out = append(out, c...)
		chunks[i] = nil
	}
	return out, nil
}

// readFull reads into b until it is full or r ends, as io.ReadFull does, but
// returns io.EOF only for the reader's own end of stream: an
// io.ErrUnexpectedEOF is the decompressor's word for input cut short, which
// io.ReadFull would make indistinguishable from a last short chunk.
func readFull(r io.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// newDecompressor returns a reader of the named whole-file compression's
// stream r, whose decoder may hold a window (zstd) or a dictionary (xz) of
// up to window bytes: the readers allocate what a frame or a block asks
// for, before its first byte, whatever it holds. The zstd frames' windows
// are checked before (openDecompressor), and the decoder refuses any larger;
// xz's reader refuses a dictionary larger (see xzError).
func newDecompressor(name string, r io.Reader, window int64) (io.Reader, error) {
	switch name {
	case CompressGzip:
		return gzip.NewReader(r)
	case CompressZstd:
		d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(uint64(min(window, zstdMaxWindow))))
		if err != nil {
			return nil, err
		}
		return d.IOReadCloser(), nil
	case CompressLZ4:
		return lz4.NewReader(r), nil
	case CompressBzip2:
		return bzip2.NewReader(r), nil
	case CompressXZ:
		// (ulikunitz/xz, which writes xz, reads a dictionary of any size
		// a block header declares: 4 GiB for a few bytes.)
		x, err := newXZReader(r, window)
		if err != nil {
			return nil, xzError(err, window)
		}
		return xzReader{x, window}, nil
	}
	return nil, fmt.Errorf("unknown compression %q", name)
}

// zstdMaxWindow is the largest window the zstd decoder takes (its
// WithDecoderMaxWindow's bound).
const zstdMaxWindow = 1<<41 + 7<<38

// xzReader is an xz stream's reader that says why it refuses a block whose
// dictionary is larger than window bytes.
type xzReader struct {
	r      *xzread.Reader
	window int64
}

func (x xzReader) Read(p []byte) (n int, err error) {
	defer recoverXZ(&err)
	n, err = x.r.Read(p)
	return n, xzError(err, x.window)
}

// newXZReader is xzread.NewReader with a dictionary bound of window bytes.
func newXZReader(r io.Reader, window int64) (_ *xzread.Reader, err error) {
	defer recoverXZ(&err)
	return xzread.NewReader(r, uint32(min(window, math.MaxUint32)))
}

// recoverXZ makes a panic of the xz reader (a port of C code, reading
// untrusted bytes) the error of a malformed stream, not a crash.
func recoverXZ(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("malformed xz stream (%v)", p)
	}
}

// xzError says why the xz reader refused a block for its dictionary
// (ErrMemlimit), which it reads when the block starts.
func xzError(err error, window int64) error {
	if errors.Is(err, xzread.ErrMemlimit) {
		return fmt.Errorf("a block asks for an LZMA2 dictionary larger than the %d bytes the file may decompress to (%d times its size, at least %d MiB), which the decoder would allocate whole; decompress it with xz and read the plain file", window, decompressRatio, decompressFloor>>20)
	}
	return err
}

// NewCompressor wraps w so that what is written to it is compressed with the
// named whole-file compression; Close flushes the compressed stream (it does
// not close w). CompressNone returns a no-op wrapper.
func NewCompressor(name string, w io.Writer) (io.WriteCloser, error) {
	switch name {
	case CompressNone:
		return nopWriteCloser{w}, nil
	case CompressGzip:
		return gzip.NewWriter(w), nil
	case CompressZstd:
		return zstd.NewWriter(w, zstd.WithEncoderConcurrency(1))
	case CompressLZ4:
		return lz4.NewWriter(w), nil
	case CompressBzip2:
		return dsbzip2.NewWriter(w, &dsbzip2.WriterConfig{Level: dsbzip2.DefaultCompression})
	case CompressXZ:
		return xz.NewWriter(w)
	}
	return nil, fmt.Errorf("unknown compression %q", name)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// fixedMemoryCap stands for the machine's physical memory where it is not
// known (see physicalMemory): 16 GiB, or the most a slice can hold.
const fixedMemoryCap = min(16<<30, math.MaxInt)
