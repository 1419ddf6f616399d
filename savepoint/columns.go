package savepoint

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Batch is one record batch of a canonical stream as columns. For an
// uncompressed file opened with OpenOptions.Columnar the slices alias the
// file's memory map: nothing is copied, and neither the Batch nor a row,
// key or value read from it may be used after the Savepoint is closed
// (reading unmapped memory ends the process, or, under Guard, is
// ErrClosed).
type Batch struct {
	Ops     []uint64
	KeyOffs []int32 // len(Ops)+1 offsets into Keys
	Keys    []byte
	ValOffs []int32 // len(Ops)+1 offsets into Vals
	Vals    []byte

	file *mappedFile // the file the slices map, if they do
	// The stretches of equal key and value lengths and of one operator
	// that the open noted, or nil (see stepCol).
	keySteps, valSteps *stepCol
	opRuns             *opCol
}

// Len returns the number of rows of the batch.
func (b *Batch) Len() int { return len(b.Ops) }

// Row returns row i of the batch (slices alias the batch's data).
func (b *Batch) Row(i int) Row {
	k0, k1 := b.KeyOffs[i], b.KeyOffs[i+1]
	v0, v1 := b.ValOffs[i], b.ValOffs[i+1]
	if !spans(k0, k1, len(b.Keys)) {
		b.changed(false, i)
	}
	if !spans(v0, v1, len(b.Vals)) {
		b.changed(true, i)
	}
	return Row{Op: b.Ops[i], Key: b.Keys[k0:k1:k1], Value: b.Vals[v0:v1:v1]}
}

// Key returns the key of row i. The offsets were validated at open, but a
// mapped file rewritten in place since may hold others: offsets out of
// bounds panic with an error wrapping ErrInputChanged and naming the file,
// which Guard returns (as it does the fault of a file cut short), where
// slicing would crash the process.
func (b *Batch) Key(i int) []byte {
	k0, k1 := b.KeyOffs[i], b.KeyOffs[i+1]
	if !spans(k0, k1, len(b.Keys)) {
		b.changed(false, i)
	}
	return b.Keys[k0:k1:k1]
}

// Value returns the value of row i, as Key does its key.
func (b *Batch) Value(i int) []byte {
	v0, v1 := b.ValOffs[i], b.ValOffs[i+1]
	if !spans(v0, v1, len(b.Vals)) {
		b.changed(true, i)
	}
	return b.Vals[v0:v1:v1]
}

// spans reports whether offsets o0 and o1 bound a slice of a buffer of n
// bytes (a negative offset, converted, is out of bounds). It is small
// enough to be inlined into the accessors, which read a row at a time.
func spans(o0, o1 int32, n int) bool {
	return uint32(o0) <= uint32(o1) && uint(o1) <= uint(n)
}

// changed panics for the key (or value) offsets of row i out of bounds:
// inputChangedPanic for a mapped file (rewritten in place), else a plain
// panic (a batch in memory does not change: a bug).
func (b *Batch) changed(values bool, i int) {
	what := "key offsets"
	if values {
		what = "value offsets"
	}
	err := &changedOffsets{what: what, lo: i, hi: i + 1}
	if b.file == nil {
		panic(fmt.Sprintf("savepoint: %s of row %d out of bounds in a batch in memory", what, i))
	}
	panic(inputChangedPanic{WithFile(b.file.f.Name(), err)})
}

// batchOf returns the columns of a validated canonical record batch.
// arrow-go's accessors trust the batch header: one they cannot follow is
// an error, not a crash.
func batchOf(rec arrow.RecordBatch, first int) (b Batch, err error) {
	defer func() {
		if p := recover(); p != nil {
			b, err = Batch{}, fmt.Errorf("malformed record batch: %s", malformedDetail(p))
		}
	}()
	keys := rec.Column(first + 1).(*array.Binary)
	vals := rec.Column(first + 2).(*array.Binary)
	return Batch{
		Ops:     rec.Column(first).(*array.Uint64).Values(),
		KeyOffs: binaryOffsets(keys),
		Keys:    binaryData(keys),
		ValOffs: binaryOffsets(vals),
		Vals:    binaryData(vals),
	}, nil
}

// binaryOffsets is ValueOffsets of a binary column, but a column of no
// rows may have an empty offsets buffer (Arrow Java writes one for an
// empty batch; ValueOffsets panics on it): its offsets are then [0].
func binaryOffsets(a *array.Binary) []int32 {
	if a.Len() == 0 {
		if offs := a.Data().Buffers()[1]; offs == nil || offs.Len() < 4 {
			return []int32{0}
		}
	}
	return a.ValueOffsets()
}

// binaryData is the whole data buffer of a binary column (ValueOffsets are
// offsets into it; ValueBytes would be sliced from the first offset).
func binaryData(a *array.Binary) []byte {
	if b := a.Data().Buffers()[2]; b != nil {
		return b.Bytes()
	}
	return nil
}

// NumRows returns the number of rows of the snapshot: its batches' rows for
// a columnar snapshot, else len(Rows).
func (s *Snapshot) NumRows() int {
	if s.Rows != nil || s.Batches == nil {
		return len(s.Rows)
	}
	n := 0
	for i := range s.Batches {
		n += s.Batches[i].Len()
	}
	return n
}

// Columnar reports whether the snapshot's rows are only in Batches (it was
// opened with OpenOptions.Columnar): Rows is nil then.
func (s *Snapshot) Columnar() bool { return s.Rows == nil && s.Batches != nil }

// EachRow calls fn for every row in stream order (batches in order), with
// the row's index; it stops when fn returns false.
func (s *Snapshot) EachRow(fn func(i int, r Row) bool) {
	if !s.Columnar() {
		for i, r := range s.Rows {
			if !fn(i, r) {
				return
			}
		}
		return
	}
	i := 0
	for bi := range s.Batches {
		b := &s.Batches[bi]
		for j := 0; j < b.Len(); j++ {
			if !fn(i, b.Row(j)) {
				return
			}
			i++
		}
	}
}

// EachKey calls fn with the stream index, operator and key of each row, in
// stream order, until fn returns false. The keys of a columnar snapshot are
// read a block of rows at a time with pread (see KeyColumns), not through
// the map: a key is valid only during the call.
func (s *Snapshot) EachKey(fn func(i int, op uint64, key []byte) bool) {
	s.EachKeyIn(0, s.NumRows(), fn)
}

// EachKeyIn is EachKey over the rows [lo, hi) only. Calls over disjoint
// ranges may run concurrently.
func (s *Snapshot) EachKeyIn(lo, hi int, fn func(i int, op uint64, key []byte) bool) {
	if !s.Columnar() {
		for i := lo; i < hi; i++ {
			if !fn(i, s.Rows[i].Op, s.Rows[i].Key) {
				return
			}
		}
		return
	}
	s.eachKeyBlockIn(lo, hi, func(i int, kc *KeyColumns, x, to int) bool {
		for y := x; y < to; y++ {
			if !fn(i+y-x, kc.Ops[y-kc.Lo], kc.Key(y)) {
				return false
			}
		}
		return true
	})
}

// eachKeyBlockIn calls fn with the rows [lo, hi) of a columnar snapshot a
// block at a time (keyBlock rows, within one batch), until fn returns
// false: rows [x, to) of the batch that kc holds, row x being row i of the
// snapshot. Calls over disjoint ranges may run concurrently.
func (s *Snapshot) eachKeyBlockIn(lo, hi int, fn func(i int, kc *KeyColumns, x, to int) bool) {
	var kc KeyColumns
	start := 0 // the stream index of batch bi's first row
	for bi := range s.Batches {
		b := &s.Batches[bi]
		from, to := max(lo-start, 0), min(hi-start, b.Len())
		for x := from; x < to; x = kc.Hi {
			kc.LoadOrMap(b, x, min(to, x+keyBlock))
			if !fn(start+x, &kc, x, kc.Hi) {
				return
			}
		}
		if start += b.Len(); start >= hi {
			return
		}
	}
}

// CountOps adds the number of rows of each operator to counts. From a
// memory-mapped file it reads the operator column alone, with pread in
// blocks (not the keys and values, nor through the map); a file that
// changed since it was opened is an error.
func (s *Snapshot) CountOps(counts map[uint64]int64) error {
	add := func(ops []uint64) {
		for i := 0; i < len(ops); {
			j := i + 1
			for j < len(ops) && ops[j] == ops[i] {
				j++
			}
			counts[ops[i]] += int64(j - i)
			i = j
		}
	}
	if !s.Columnar() {
		for _, r := range s.Rows {
			counts[r.Op]++
		}
		return nil
	}
	var buf []uint64
	for bi := range s.Batches {
		b := &s.Batches[bi]
		for lo := 0; lo < b.Len(); lo += keyBlock {
			hi := min(b.Len(), lo+keyBlock)
			if b.file == nil || !littleEndian {
				add(b.Ops[lo:hi])
				continue
			}
			buf = slices.Grow(buf[:0], hi-lo)[:hi-lo]
			if err := b.file.readInto(bytesOf(buf), bytesOf(b.Ops[lo:hi])); err != nil {
				return err
			}
			add(buf)
		}
	}
	return nil
}

// Cursor gives random access to the rows of a columnar snapshot by stream
// index; it is cheap for a single batch and for increasing indexes. It is
// safe for concurrent use. Like the Batches it reads, it must not be used
// after the Savepoint is closed.
type Cursor struct {
	s     *Snapshot
	start []int        // first row index of each batch
	hint  atomic.Int32 // the batch of the last row located
}

// Snapshot returns the snapshot c reads.
func (c *Cursor) Snapshot() *Snapshot { return c.s }

// NewCursor returns a Cursor over s.
func (s *Snapshot) NewCursor() *Cursor {
	c := &Cursor{s: s}
	n := 0
	for i := range s.Batches {
		c.start = append(c.start, n)
		n += s.Batches[i].Len()
	}
	return c
}

// Columnar reports whether the cursor reads batches (not Rows).
func (c *Cursor) Columnar() bool { return c.s.Columnar() }

// Len returns the number of rows of the snapshot.
func (c *Cursor) Len() int { return c.s.NumRows() }

// EachKeyIn is Snapshot.EachKeyIn of the cursor's snapshot.
func (c *Cursor) EachKeyIn(lo, hi int, fn func(i int, op uint64, key []byte) bool) {
	c.s.EachKeyIn(lo, hi, fn)
}

// Op returns the operator id of row i.
func (c *Cursor) Op(i int) uint64 {
	if !c.s.Columnar() {
		return c.s.Rows[i].Op
	}
	b, j := c.locate(i)
	return b.Ops[j]
}

// Key returns the key of row i.
func (c *Cursor) Key(i int) []byte {
	if !c.s.Columnar() {
		return c.s.Rows[i].Key
	}
	b, j := c.locate(i)
	k0, k1 := b.KeyOffs[j], b.KeyOffs[j+1]
	if !spans(k0, k1, len(b.Keys)) {
		b.changed(false, j) // see Batch.Key
	}
	return b.Keys[k0:k1:k1]
}

// Value returns the value of row i.
func (c *Cursor) Value(i int) []byte {
	if !c.s.Columnar() {
		return c.s.Rows[i].Value
	}
	b, j := c.locate(i)
	v0, v1 := b.ValOffs[j], b.ValOffs[j+1]
	if !spans(v0, v1, len(b.Vals)) {
		b.changed(true, j) // see Batch.Key
	}
	return b.Vals[v0:v1:v1]
}

// Locate returns the batch holding row i of a columnar snapshot, the row's
// index in it, and how many rows of the batch follow from there (the row
// included).
func (c *Cursor) Locate(i int) (*Batch, int, int) {
	b, j := c.locate(i)
	return b, j, b.Len() - j
}

// locate returns the batch holding row i and the row's index in it.
func (c *Cursor) locate(i int) (*Batch, int) {
	if len(c.start) == 1 {
		return &c.s.Batches[0], i
	}
	k := c.seek(i)
	return &c.s.Batches[k], i - c.start[k]
}

// seek returns the batch holding row i.
func (c *Cursor) seek(i int) int {
	k := int(c.hint.Load())
	if k < len(c.start) && i >= c.start[k] && (k+1 == len(c.start) || i < c.start[k+1]) {
		return k
	}
	lo, hi := 0, len(c.start)
	for lo < hi {
		m := (lo + hi) / 2
		if c.start[m] <= i {
			lo = m + 1
		} else {
			hi = m
		}
	}
	c.hint.Store(int32(lo - 1))
	return lo - 1
}

// Row returns row i.
func (c *Cursor) Row(i int) Row {
	if !c.s.Columnar() {
		return c.s.Rows[i]
	}
	b, j := c.locate(i)
	return b.Row(j)
}

// ErrInputChanged is wrapped by the error of a read of an input file that
// changed since it was opened: a memory-mapped file that shrank (the access
// faulted, see Guard), one that ends early or whose offsets differ from
// those validated at open, one whose size, times or identity differ
// (Savepoint.CheckUnchanged), or an unchanged file's copy that no longer
// matches what was read (CopyVerified).
var ErrInputChanged = errors.New("an input file changed while it was being read")

// Guard runs fn with memory faults turned into errors: a memory-mapped
// input truncated by another process raises SIGBUS on access, which would
// otherwise crash the process, and so does a page the system could not
// read. The error names the file and the byte: ErrInputChanged for a file
// that now ends before that byte, ErrInputUnreadable for one that still
// holds it. A read of the rows of a Savepoint after its Close (or of a
// Spilled after its Close), which faults on memory no longer mapped, is
// ErrClosed: a Close deferred inside fn, which runs as the fault's panic
// unwinds, leaves the fault reported as one of the file.
func Guard(fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if p := recover(); p != nil {
			if e, ok := p.(error); ok && errors.Is(e, ErrInputChanged) {
				err = e // a reader that found the file rewritten, naming it
				return
			}
			if re, ok := p.(interface{ Addr() uintptr }); ok {
				err = faultError(re.Addr())
				return
			}
			panic(p)
		}
	}()
	return fn()
}

// Faults runs goroutines that read memory-mapped input. A fault in one of
// them (the input cut short by another process) or any other panic is
// handed to the goroutine that calls Wait, where Guard turns a fault into
// ErrInputChanged; without it the process would die of the fault.
type Faults struct {
	wg    sync.WaitGroup
	mu    sync.Mutex
	first any
}

// Go runs fn in a new goroutine.
func (f *Faults) Go(fn func()) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			if p := recover(); p != nil {
				f.mu.Lock()
				if f.first == nil {
					f.first = p
				}
				f.mu.Unlock()
			}
		}()
		fn()
	}()
}

// Wait waits for the goroutines and re-raises the first panic among them.
func (f *Faults) Wait() {
	f.wg.Wait()
	if f.first != nil {
		panic(f.first)
	}
}

// ForEach calls fn(0) to fn(n-1), each in its own goroutine, at most one
// per CPU at once, and returns when all have returned. A fault or panic in
// any is re-raised in the caller, as Faults.Wait does.
func ForEach(n int, fn func(i int)) {
	var f Faults
	sem := make(chan struct{}, runtime.NumCPU())
	for i := range n {
		sem <- struct{}{}
		f.Go(func() {
			defer func() { <-sem }()
			fn(i)
		})
	}
	f.Wait()
}
