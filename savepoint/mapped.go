package savepoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"unsafe"
)

// mappedFile is the file behind the batches of a memory-mapped snapshot.
// Long sequential passes (the writer's) read it with pread(2) instead of
// through the map: the first touch of each mapped page costs more than
// read's copy, and what is read that way never enters the resident set.
type mappedFile struct {
	f    *os.File
	data []byte // the map
}

// offsetOf returns the file offset of b when b lies in the map.
func (m *mappedFile) offsetOf(b []byte) (int64, bool) {
	if m == nil || len(b) == 0 || len(m.data) == 0 {
		return 0, false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(m.data)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if p < base || p+uintptr(len(b)) > base+uintptr(len(m.data)) {
		return 0, false
	}
	return int64(p - base), true
}

// readAt fills b with the file's bytes from off.
func (m *mappedFile) readAt(b []byte, off int64) error {
	n, err := readFileAt(m.f, b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return &FileError{Path: m.f.Name(), Err: fmt.Errorf("%w (it ends before byte %d)", ErrInputChanged, off+int64(len(b)))}
	}
	return err
}

// validOffsets reports whether offsets read again from a file still bound
// rows of data, as those validated at open did: they start at 0 or after,
// never decrease and end within data.
func validOffsets(offs []int32, data []byte) bool {
	return offs[0] >= 0 && int(offs[len(offs)-1]) <= len(data) && slices.IsSorted(offs)
}

// readInto fills dst with the bytes of src, a slice of the map of m, read
// from the file (src's own bytes when it is not in the map).
func (m *mappedFile) readInto(dst, src []byte) error {
	if off, ok := m.offsetOf(src); ok {
		return m.readAt(dst, off)
	}
	copy(dst, src)
	return nil
}

// windowSize is how much of a mapped file the writer reads at once (the
// size of the sink's buffer, so that they share a pool). A variable so
// tests can make windows small.
var windowSize = sinkSize

// boundsWindow is the least a window of run bounds reads at once. The
// bounds of long runs are two offsets per run, far apart: a window of 1 MiB
// reads mostly offsets nobody needs, and the map instead faults a page in
// for each (on some virtual machines several microseconds apiece, 25 ms of
// a 10M-row filter's 0.35 s). A page read with pread is cheaper than
// either. Short runs (a purge's) have their bounds close together, and a
// page would serve only a few: the window doubles while each read serves
// many views (up to boundsWindowMax), and halves back when one serves few.
const boundsWindow = 4 << 10

// boundsWindowMax is the most a window of run bounds reads at once: a read
// that fits in the CPU's cache is still there when the offsets are loaded.
const boundsWindowMax = 64 << 10

// boundsSize returns how much a bounds window reads next, and notes the
// views served so far.
func (w *window) boundsSize() int64 {
	served := w.views - w.lastViews
	w.lastViews = w.views
	least := int64(min(boundsWindow, windowSize))
	switch {
	case w.size == 0:
		return least
	case served >= 16:
		return min(2*w.size, int64(windowSize), boundsWindowMax)
	case served <= 4:
		return max(w.size/2, least)
	}
	return w.size
}

// window holds a range of a mapped file's bytes, read with pread. It pays
// off when reads go forward through the file; when they jump about (rows
// written in another order than stored) it stops reading and leaves the
// bytes to the map.
type window struct {
	m   *mappedFile
	off int64
	buf []byte // the file's bytes [off, off+len(buf))
	// bounds: the window serves the offsets that bound runs, and reads
	// size bytes at once (see boundsWindow); lastViews is the views served
	// when it last read.
	bounds          bool
	size, lastViews int64
	// refills, served and views: windows read, bytes served from them,
	// and views served.
	refills, served, views int64
	hint                   stepHint // offsets computed from a batch's stretches
}

// useful reports whether reading another window is worth it: the first few
// are, then only while each served a good part of what it read on average,
// or many small views (the offsets that bound runs).
func (w *window) useful() bool {
	return w.bounds || w.refills < 4 || w.served/w.refills >= int64(windowSize/16) || w.views/w.refills >= 256
}

// free returns the window's buffer to the pool.
func (w *window) free() {
	putBuf(w.buf)
	w.m, w.buf = nil, nil
}

// offset returns offsets[x], a validated offset of b's keys or values
// (data), read through the window rather than the map; an offset read
// that is not within data means the file changed since it was opened.
func (w *window) offset(b *Batch, offsets []int32, data []byte, x int) (int, error) {
	if b.file == nil || !littleEndian {
		return int(offsets[x]), nil
	}
	if c := b.stepsOf(offsets); c != nil {
		return int(c.at(x, &w.hint)), nil
	}
	v, err := w.view(b.file, bytesOf(offsets[x:x+1]))
	if err != nil {
		return 0, err
	}
	o := int(int32(binary.LittleEndian.Uint32(v)))
	if o < 0 || o > len(data) {
		return 0, fmt.Errorf("%w (an offset differs from the one read at open)", ErrInputChanged)
	}
	return o, nil
}

// span returns the bounds in data of b's rows [lo, lo+n) (see offset).
func (w *window) span(b *Batch, offsets []int32, data []byte, lo, n int) (int, int, error) {
	a, err := w.offset(b, offsets, data, lo)
	if err != nil {
		return 0, 0, err
	}
	e, err := w.offset(b, offsets, data, lo+n)
	if err == nil && e < a {
		err = fmt.Errorf("%w (offsets differ from those read at open)", ErrInputChanged)
	}
	return a, e, err
}

// view returns the bytes of b, a slice of the map of m (nil m: b is
// returned as it is), from the window, reading the file from b's offset
// when the window does not hold them. b must be at most windowSize long.
// On a read error the bytes are zeros and the error is returned.
func (w *window) view(m *mappedFile, b []byte) ([]byte, error) {
	off, ok := m.offsetOf(b)
	if !ok {
		return b, nil
	}
	end := off + int64(len(b))
	if w.m == m && off >= w.off && end <= w.off+int64(len(w.buf)) {
		w.served += int64(len(b))
		w.views++
		return w.buf[off-w.off : end-w.off], nil
	}
	if !w.useful() {
		return b, nil
	}
	w.refills++
	w.served += int64(len(b))
	w.views++
	size := int64(windowSize)
	if w.bounds {
		w.size = w.boundsSize()
		size = w.size
	}
	n := min(size, int64(len(m.data))-off)
	if n < int64(len(b)) {
		n = int64(len(b)) // windowSize changed by a test
	}
	if int64(cap(w.buf)) < n {
		if n <= sinkSize {
			use := sinkSize
			if w.bounds {
				use = boundsWindowMax
			}
			w.buf = poolBuf(use)
		} else {
			w.buf = make([]byte, 0, n) // windowSize changed by a test
		}
	}
	w.m, w.off, w.buf = m, off, w.buf[:n]
	if err := m.readAt(w.buf, off); err != nil {
		clear(w.buf)
		w.m = nil
		return w.buf[:len(b)], err
	}
	return w.buf[:len(b)], nil
}

// RowReader reads rows of a snapshot that come in order, such as a run of
// a sorted file, through buffers filled with pread when the rows are
// memory-mapped. Reading through the map instead maps, at each fault, the
// page cache's whole folio around the row (up to a megabyte or more on
// some kernels), so that a pass that advances through many runs at once
// would keep a large part of the file resident; the buffers hold a
// bounded number of rows. For rows in memory it reads them in place. Each
// run read at once needs its own RowReader.
type RowReader struct {
	s        *Snapshot // whose rows it holds
	b        *Batch
	lo, hi   int // the batch rows held
	base     int // the stream index of the batch's first row
	ops      []uint64
	koffs    []int32
	voffs    []int32
	keys     []byte
	vals     []byte
	k0, v0   int32 // the batch offsets keys and vals start at
	fromFile bool
	// MaxBytes bounds the bytes of keys and values read at once (0: 4 MiB),
	// but for a single row larger: a merge that reads many runs together
	// gives each reader its share of what it may hold.
	MaxBytes int
}

// rowReaderRows is how many rows a RowReader reads at once, and
// rowReaderBytes how many bytes of keys and values at most (but for a
// single row larger than that): rows of large values would otherwise make
// its buffers as large as rowReaderRows of them. Variables so tests can
// make them small.
var (
	rowReaderRows  = 2048
	rowReaderBytes = 4 << 20
)

// Row returns row i of cur's snapshot. Its slices stay valid until the next
// call on this reader. Reading a file that changed since it was opened is
// an error (ErrInputChanged).
func (r *RowReader) Row(cur *Cursor, i int) (Row, error) {
	if !cur.Columnar() {
		return cur.Row(i), nil
	}
	if r.b == nil || r.s != cur.s || i-r.base < r.lo || i-r.base >= r.hi {
		r.s = cur.s
		b, lo, left := cur.Locate(i)
		if err := r.load(b, lo, lo+min(left, rowReaderRows)); err != nil {
			return Row{}, err
		}
		r.base = i - lo
	}
	x := i - r.base
	if !r.fromFile {
		return r.b.Row(x), nil
	}
	j := x - r.lo
	k0, k1 := r.koffs[j]-r.k0, r.koffs[j+1]-r.k0
	v0, v1 := r.voffs[j]-r.v0, r.voffs[j+1]-r.v0
	return Row{Op: r.ops[j], Key: r.keys[k0:k1:k1], Value: r.vals[v0:v1:v1]}, nil
}

// load reads rows [lo, hi) of b.
func (r *RowReader) load(b *Batch, lo, hi int) error {
	r.b, r.lo, r.hi = nil, 0, 0
	if b.file == nil || !littleEndian {
		r.b, r.lo, r.hi, r.fromFile = b, lo, hi, false
		return nil
	}
	n := hi - lo
	r.ops = slices.Grow(r.ops[:0], n)[:n]
	r.koffs = slices.Grow(r.koffs[:0], n+1)[:n+1]
	r.voffs = slices.Grow(r.voffs[:0], n+1)[:n+1]
	read := b.file.readInto
	if err := errors.Join(read(bytesOf(r.ops), bytesOf(b.Ops[lo:hi])),
		read(bytesOf(r.koffs), bytesOf(b.KeyOffs[lo:hi+1])),
		read(bytesOf(r.voffs), bytesOf(b.ValOffs[lo:hi+1]))); err != nil {
		return err
	}
	// Validated through the map at open, the offsets read again must
	// still be valid, or the file changed.
	r.k0, r.v0 = r.koffs[0], r.voffs[0]
	if !validOffsets(r.koffs, b.Keys) || !validOffsets(r.voffs, b.Vals) {
		return fmt.Errorf("%w (the offsets of rows %d-%d differ from those read at open)", ErrInputChanged, lo, hi)
	}
	// As many of the rows as fit the bytes allowed, at least one.
	limit := int64(rowReaderBytes)
	if r.MaxBytes > 0 {
		limit = int64(r.MaxBytes)
	}
	n = 1 + sort.Search(n-1, func(m int) bool {
		return int64(r.koffs[m+2]-r.k0)+int64(r.voffs[m+2]-r.v0) > limit
	})
	hi = lo + n
	if n == 1 && int64(r.koffs[1]-r.k0)+int64(r.voffs[1]-r.v0) > limit {
		// A row larger than the bytes allowed is read through the map:
		// the buffers would grow to its size and keep it for the
		// reader's life, and a row kept past it (an operator row held
		// for a merge, a broadcast state of 50 MB in each of 16 files)
		// would keep a buffer of its own. Its pages stay cached, and
		// leave the resident set when the file's pages are released.
		r.b, r.lo, r.hi, r.fromFile = b, lo, hi, false
		return nil
	}
	r.ops, r.koffs, r.voffs = r.ops[:n], r.koffs[:n+1], r.voffs[:n+1]
	k1, v1 := r.koffs[n], r.voffs[n]
	r.keys = slices.Grow(r.keys[:0], int(k1-r.k0))[:k1-r.k0]
	r.vals = slices.Grow(r.vals[:0], int(v1-r.v0))[:v1-r.v0]
	if err := errors.Join(read(r.keys, b.Keys[r.k0:k1]), read(r.vals, b.Vals[r.v0:v1])); err != nil {
		return err
	}
	r.b, r.lo, r.hi, r.fromFile = b, lo, hi, true
	return nil
}

// KeyColumns holds the operators and keys of consecutive rows of a batch,
// for passes that read every key of a file in order. From a memory-mapped
// file they are read with pread into buffers that are used again, rather
// than through the map: the first touch of a mapped page costs more than
// read's copy (several times more on some virtual machines), and a pass
// through the map fills the resident set.
type KeyColumns struct {
	// Batch, Lo and Hi say which rows are held: Lo to Hi (excluded) of
	// Batch.
	Batch  *Batch
	Lo, Hi int
	// Ops and Offs hold the rows' operators and key offsets: row Lo+j has
	// operator Ops[j] and key Keys[Offs[j]:Offs[j+1]]. The bytes are
	// valid until the next Load.
	Ops  []uint64
	Offs []int32
	Keys []byte
	// buffers for rows read from a file
	ops  []uint64
	offs []int32
	keys []byte
	// values, when set before Load, has the value offsets of the rows
	// read too (see ValueBytes).
	values bool
	voffs  []int32 // row Lo+j's value ends at voffs[j+1]
	// noOps is set when Ops was not read (LoadKeys).
	noOps bool
}

// ValueBytes returns the size of the values of rows [x, end) of the batch
// held, Lo <= x <= end <= Hi (value offsets must have been read).
func (kc *KeyColumns) ValueBytes(x, end int) int64 {
	return int64(kc.voffs[end-kc.Lo] - kc.voffs[x-kc.Lo])
}

// Holds reports whether row x of b is held.
func (kc *KeyColumns) Holds(b *Batch, x int) bool {
	return kc.HoldsKeys(b, x) && !kc.noOps
}

// HoldsKeys reports whether the key of row x of b is held (by Load or
// LoadKeys).
func (kc *KeyColumns) HoldsKeys(b *Batch, x int) bool {
	return kc.Batch == b && x >= kc.Lo && x < kc.Hi
}

// Key returns the key of row x of the batch held.
func (kc *KeyColumns) Key(x int) []byte {
	j := x - kc.Lo
	return kc.Keys[kc.Offs[j]:kc.Offs[j+1]]
}

// LoadOrMap is Load for passes that cannot report an error: when the file
// cannot be read as it was at open, kc holds the rows in place in the map
// instead, as a pass through the map would read them (they fault if the
// file was cut short, and every command checks its input again before it
// publishes anything). When the offsets read differ from those validated
// at open (the file was rewritten in place), the map's would bound keys
// out of range: LoadOrMap panics with an error wrapping ErrInputChanged
// and naming the file, which Guard returns, as it does the error of a
// fault.
func (kc *KeyColumns) LoadOrMap(b *Batch, lo, hi int) {
	err := kc.Load(b, lo, hi)
	if err == nil {
		return
	}
	if _, ok := errors.AsType[*changedOffsets](err); ok {
		panic(inputChangedPanic{WithFile(b.file.f.Name(), err)})
	}
	kc.inPlace(b, lo, hi)
}

// changedOffsets is Load's error for offsets read again from a file that
// differ from those validated at open: the file was rewritten in place.
type changedOffsets struct {
	what   string // "key offsets" or "value offsets"
	lo, hi int    // the rows
}

func (e *changedOffsets) Error() string {
	return fmt.Sprintf("%v (the %s of rows %d-%d differ from those read at open)", ErrInputChanged, e.what, e.lo, e.hi)
}

func (e *changedOffsets) Unwrap() error { return ErrInputChanged }

// FileError is an error of the file at Path. WithFile makes one.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string { return e.Path + ": " + e.Err.Error() }

func (e *FileError) Unwrap() error { return e.Err }

// WithFile returns err as an error of the file at path: err itself when it
// names that file already (a *FileError of path in its chain), so that the
// name is said once; nil for nil.
func WithFile(path string, err error) error {
	if err == nil {
		return nil
	}
	if fe, ok := errors.AsType[*FileError](err); ok && fe.Path == path {
		return err
	}
	return &FileError{Path: path, Err: err}
}

// inputChangedPanic is the panic of a pass that cannot report an error
// (LoadOrMap) when a mapped file changed under it. Its Addr method, that
// of the runtime error of a memory fault, has Guard turn it into
// ErrInputChanged, as it does the fault of a file cut short (Faults hands
// it on to Guard as any panic).
type inputChangedPanic struct{ err error }

func (p inputChangedPanic) Error() string { return p.err.Error() }
func (p inputChangedPanic) Unwrap() error { return p.err }

// Addr returns 0: no address faulted.
func (inputChangedPanic) Addr() uintptr { return 0 }

// inPlace makes kc hold rows [lo, hi) of b as slices of its columns.
func (kc *KeyColumns) inPlace(b *Batch, lo, hi int) {
	kc.Batch, kc.Lo, kc.Hi = b, lo, hi
	kc.Ops, kc.Offs, kc.Keys = b.Ops[lo:hi], b.KeyOffs[lo:hi+1], b.Keys
	if kc.values {
		kc.voffs = b.ValOffs[lo : hi+1]
	}
}

// keyColumnsBytes bounds the key bytes a KeyColumns reads at once (a
// variable so tests can make it small).
var keyColumnsBytes int64 = 4 << 20

// Load makes kc hold rows [lo, hi) of b, or fewer from a mapped file when
// their keys would pass 4 MiB (but row lo at least): Hi says
// where they end. A file that changed since it was opened (offsets that
// differ from those validated then) is an error.
func (kc *KeyColumns) Load(b *Batch, lo, hi int) error { return kc.load(b, lo, hi, true) }

// LoadKeys is Load without the operators, for rows whose operator is
// known (a prefix run of the input's index): from a mapped file Ops is
// left nil, and Holds reports false until the next Load.
func (kc *KeyColumns) LoadKeys(b *Batch, lo, hi int) error { return kc.load(b, lo, hi, false) }

func (kc *KeyColumns) load(b *Batch, lo, hi int, withOps bool) error {
	kc.Batch, kc.noOps = nil, false
	if b.file == nil || !littleEndian {
		kc.inPlace(b, lo, hi)
		return nil
	}
	n := hi - lo
	kc.ops = slices.Grow(kc.ops[:0], n)[:n]
	kc.offs = slices.Grow(kc.offs[:0], n+1)[:n+1]
	m := b.file
	if withOps {
		if err := m.readInto(bytesOf(kc.ops), bytesOf(b.Ops[lo:hi])); err != nil {
			return err // (the offsets' read would fail as it did)
		}
	}
	if err := m.readInto(bytesOf(kc.offs), bytesOf(b.KeyOffs[lo:hi+1])); err != nil {
		return err
	}
	k0, k1 := kc.offs[0], kc.offs[n]
	if !validOffsets(kc.offs, b.Keys) {
		return &changedOffsets{"key offsets", lo, hi}
	}
	if int64(k1-k0) > keyColumnsBytes {
		// Fewer rows, so that the keys held stay bounded (one row at least).
		n = max(1, sort.Search(n+1, func(j int) bool { return int64(kc.offs[j]-k0) > keyColumnsBytes })-1)
		hi, k1 = lo+n, kc.offs[n]
		kc.ops, kc.offs = kc.ops[:n], kc.offs[:n+1]
	}
	for j := range kc.offs {
		kc.offs[j] -= k0
	}
	kc.keys = slices.Grow(kc.keys[:0], int(k1-k0))[:k1-k0]
	if err := m.readInto(kc.keys, b.Keys[k0:k1]); err != nil {
		return err
	}
	if kc.values {
		kc.voffs = slices.Grow(kc.voffs[:0], n+1)[:n+1]
		if err := m.readInto(bytesOf(kc.voffs), bytesOf(b.ValOffs[lo:hi+1])); err != nil {
			return err
		}
		if !validOffsets(kc.voffs, b.Vals) {
			return &changedOffsets{"value offsets", lo, hi}
		}
	}
	kc.Batch, kc.Lo, kc.Hi = b, lo, hi
	kc.Ops, kc.Offs, kc.Keys = kc.ops, kc.offs, kc.keys
	if !withOps {
		kc.Ops, kc.noOps = nil, true
	}
	return nil
}
