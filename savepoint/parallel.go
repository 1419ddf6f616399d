package savepoint

import (
	"cmp"
	"context"
	"fmt"
	"hash/crc32"
	"os"
	"runtime"
	"slices"
	"sync"
)

// Writing one stream with several goroutines.
//
// The writer knows every byte's place before it writes any: a first pass
// over the rows (nextBatch, run by run) fixes the batches and their buffer
// sizes, so the rows of a batch can be cut into ranges whose ops, offsets,
// keys and values each go to a known offset of the file. Goroutines take
// ranges and write them with pwrite, each through its own sink, and
// checksum what they write; the small pieces between (schema, batch
// headers, the leading zero offsets, padding, end of stream) are written
// by the caller. The pieces must tile the file exactly, which is checked,
// and their CRCs combine into the file's. The bytes are those of
// writeStream.

// parallelMinRows is the fewest rows written by the parallel writer:
// below it the work is too small to share, and its set-up costs more than
// it saves.
var parallelMinRows = 1 << 18

// parallelChunkRows is the fewest rows of a range given to one goroutine.
var parallelChunkRows = 1 << 16

// writeJobs returns how many goroutines of the parallel writer write a
// stream of rows rows, or 0 when writeStream writes it: a compressed
// stream, one written as is, or a small one. With one goroutine the
// parallel writer is still the faster: its sink goes to the file with
// pwrite, where writeStream copies it once more through a buffered writer
// (a 10M-row filter with --jobs 1: 5% faster).
func writeJobs(opts SnapshotOptions, rows int) int {
	if opts.AsIs || (opts.Compression != "" && opts.Compression != CompressNone) || rows < parallelMinRows {
		return 0
	}
	if opts.Jobs > 0 {
		return opts.Jobs
	}
	return runtime.NumCPU()
}

// piece is a span of the file written, and its CRC-32C.
type piece struct {
	at, n int64
	crc   uint32
}

// rowRange is the rows [i, j) of a batch whose buffers are described by
// layout at body (the body's offset in the file); kBefore and vBefore are
// the sizes of the key and value data of the batch's rows before i, and
// kLen and vLen those of the range's.
type rowRange struct {
	body             int64
	layout           *batchLayout
	start            int // the batch's first row
	i, j             int
	kBefore, vBefore int64
	kLen, vLen       int64
}

// writeStreamParallel writes the stream of src, as writeStream would, to f
// from its start with up to jobs goroutines, and returns its size and
// CRC-32C. progress, if set, is called as SnapshotOptions.Progress says,
// and stop asked as SnapshotOptions.Stop says.
func writeStreamParallel(f *os.File, md Metadata, rs RowSource, jobs int, progress func(int64), stop func() bool) (FileInfo, error) {
	src := Columns(rs)
	schemaMsg, err := schemaMessage(md)
	if err != nil {
		return FileInfo{}, err
	}
	p := &parallelWrite{f: f, progress: progress, next: ReleaseEvery, stop: stop}
	p.fixed(0, schemaMsg)
	pos := int64(len(schemaMsg))
	// Four ranges a goroutine, of equal rows (cuts fall inside runs too), so
	// that none is left to finish alone, nor a range of a few rows (but for
	// the last of a batch that the column limit ends).
	every := max(parallelChunkRows, (src.Len()+4*jobs-1)/(4*jobs))
	var ranges []rowRange
	var zeros [8]byte
	kAll, vAll, allCuts, oneBatch := sizeOneBatch(src, every, jobs)
	for start, n := 0, src.Len(); ; {
		end, kLen, vLen, cuts := n, kAll, vAll, allCuts
		if !oneBatch {
			if end, kLen, vLen, cuts, err = nextBatch(src, start, every); err != nil {
				return FileInfo{}, err
			}
		}
		l := layoutOf(end-start, kLen, vLen)
		hdr := l.header()
		p.fixed(pos, hdr)
		body := pos + int64(len(hdr))
		for _, b := range [2]int{bufKeyOffs, bufValOffs} {
			p.fixed(body+l.offs[b], zeros[:4]) // the first offset
			p.fixed(body+l.offs[b]+l.lens[b], zeros[:pad8(l.lens[b])-l.lens[b]])
			p.fixed(body+l.offs[b+1]+l.lens[b+1], zeros[:pad8(l.lens[b+1])-l.lens[b+1]])
		}
		cuts = append(cuts, rowCut{end, kLen, vLen})
		from := rowCut{row: start}
		for _, c := range cuts {
			ranges = append(ranges, rowRange{body: body, layout: &l, start: start, i: from.row, j: c.row,
				kBefore: from.kLen, vBefore: from.vLen, kLen: c.kLen - from.kLen, vLen: c.vLen - from.vLen})
			from = c
		}
		pos = body + l.body
		start = end
		if start >= n {
			break
		}
	}
	p.fixed(pos, []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	size := pos + 8
	if p.err != nil {
		return FileInfo{}, p.err
	}
	// The output's blocks are reserved at once (see preallocate).
	preallocate(f, size)

	work := make(chan *rowRange)
	var wg sync.WaitGroup
	for w := 0; w < min(jobs, len(ranges)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := Guard(func() error { return p.worker(src, work) })
			p.fail(err)
			for range work { // drain after a failure
			}
		}()
	}
	for i := range ranges {
		work <- &ranges[i]
	}
	close(work)
	wg.Wait()
	if p.err != nil {
		return FileInfo{}, p.err
	}
	crc, err := p.combine(size)
	if err != nil {
		return FileInfo{}, err
	}
	return FileInfo{Size: size, CRC32C: crc}, nil
}

// sizeOneBatch sizes the rows of src as nextBatch(src, 0, every) would
// when they fit one batch (the common case: a column passes
// maxColumnBytes, 2 GiB, only in a very large file), with up to jobs
// goroutines, each sizing the rows between two cuts. On one goroutine the
// sizing of a 10M-row purge's output took 17-21 ms, with the other core
// idle once the report was done; on two, 11-14 ms. It reports false when
// the rows do not fit one batch, or sizing some of them failed: nextBatch
// then sizes them in turn, and says what is wrong.
func sizeOneBatch(src ColumnSource, every, jobs int) (kLen, vLen int64, cuts []rowCut, ok bool) {
	n := src.Len()
	parts := (n + every - 1) / every
	if parts < 2 || jobs < 2 {
		return 0, 0, nil, false
	}
	type size struct {
		k, v int64
		ok   bool
	}
	sizes := make([]size, parts)
	next := make(chan int, parts)
	for p := range parts {
		next <- p
	}
	close(next)
	ForEach(min(jobs, parts), func(int) {
		for p := range next {
			lo, hi := p*every, min(n, (p+1)*every)
			end, k, v, _, err := nextBatchTo(src, lo, hi, 0)
			sizes[p] = size{k, v, err == nil && end == hi}
		}
	})
	cuts = make([]rowCut, 0, parts-1)
	for p, s := range sizes {
		if !s.ok {
			return 0, 0, nil, false
		}
		if p > 0 {
			cuts = append(cuts, rowCut{p * every, kLen, vLen})
		}
		kLen, vLen = kLen+s.k, vLen+s.v
		if kLen > maxColumnBytes || vLen > maxColumnBytes {
			return 0, 0, nil, false
		}
	}
	return kLen, vLen, cuts, true
}

// parallelWrite is the state the goroutines of writeStreamParallel share.
type parallelWrite struct {
	f        *os.File
	progress func(int64)
	stop     func() bool // SnapshotOptions.Stop

	mu      sync.Mutex
	err     error
	pieces  []piece
	written int64
	next    int64 // when to call progress
}

func (p *parallelWrite) fail(err error) {
	if err == nil {
		return
	}
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
}

func (p *parallelWrite) failed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err != nil
}

// fixed writes b at offset at.
func (p *parallelWrite) fixed(at int64, b []byte) {
	if len(b) == 0 {
		return
	}
	_, err := writeFileAt(p.f, b, at)
	p.fail(err)
	p.done(piece{at: at, n: int64(len(b)), crc: CRC32C(b)})
}

// done records a piece written.
func (p *parallelWrite) done(pc piece) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pieces = append(p.pieces, pc)
	p.written += pc.n
	if p.progress != nil && p.written >= p.next {
		p.progress(p.written)
		p.next = p.written + ReleaseEvery
	}
}

// worker writes ranges of rows until there are none left or one fails.
func (p *parallelWrite) worker(src ColumnSource, work <-chan *rowRange) error {
	pw := &pieceWriter{p: p}
	out := newSink(pw, sinkSize)
	defer out.free()
	var steps []runStep // (kept from range to range)
	for r := range work {
		if p.failed() {
			return nil
		}
		if p.stop != nil && p.stop() {
			return context.Canceled
		}
		rw := newRangeWriter(src, r.j)
		rw.kvSteps.steps = steps
		err := p.writeRange(pw, out, rw, r)
		steps = rw.kvSteps.steps[:0]
		rw.free()
		if err != nil {
			return err
		}
	}
	return nil
}

// writeRange writes the ops, offsets, keys and values of a range of rows.
func (p *parallelWrite) writeRange(pw *pieceWriter, out *sink, rw *rangeWriter, r *rowRange) error {
	l, rows, rel := r.layout, int64(r.j-r.i), int64(r.i-r.start)
	at := func(buf int, skip int64) int64 { return r.body + l.offs[buf] + skip }
	if err := pw.piece(out, at(bufOps, 8*rel), 8*rows, func() { rw.ops(out, r.i, r.j) }); err != nil {
		return err
	}
	for col, c := range [2]struct {
		buf          int
		before, size int64
	}{{bufKeyOffs, r.kBefore, r.kLen}, {bufValOffs, r.vBefore, r.vLen}} {
		value := col == 1
		err := pw.piece(out, at(c.buf, 4+4*rel), 4*rows, func() { rw.offsets(out, value, r.i, r.j, uint32(c.before)) })
		if err != nil {
			return err
		}
		if err := pw.piece(out, at(c.buf+1, c.before), c.size, func() { rw.data(out, value, r.i, r.j) }); err != nil {
			return err
		}
	}
	return nil
}

// combine checks that the pieces tile the size bytes of the file exactly
// and returns the CRC-32C of the whole.
func (p *parallelWrite) combine(size int64) (uint32, error) {
	slices.SortFunc(p.pieces, func(a, b piece) int { return cmp.Compare(a.at, b.at) })
	var crc uint32
	var at int64
	for _, pc := range p.pieces {
		if pc.at != at {
			return 0, fmt.Errorf("internal error: parallel writer left bytes %d-%d unwritten or written twice", min(at, pc.at), max(at, pc.at))
		}
		crc = crc32cCombine(crc, pc.crc, pc.n)
		at += pc.n
	}
	if at != size {
		return 0, fmt.Errorf("internal error: parallel writer wrote %d bytes of %d", at, size)
	}
	return crc, nil
}

// pieceWriter writes to the file at an offset that advances, checksumming
// what it writes.
type pieceWriter struct {
	p   *parallelWrite
	at  int64
	n   int64
	crc uint32
}

func (w *pieceWriter) Write(b []byte) (int, error) {
	n, err := writeFileAt(w.p.f, b, w.at+w.n)
	w.crc = crc32.Update(w.crc, castagnoli, b[:n])
	w.n += int64(n)
	return n, err
}

// piece writes, through out, the size bytes that fill writes, at offset at.
func (w *pieceWriter) piece(out *sink, at, size int64, fill func()) error {
	w.at, w.n, w.crc = at, 0, 0
	fill()
	if err := out.flush(); err != nil {
		return err
	}
	if w.n != size {
		return fmt.Errorf("internal error: parallel writer wrote %d bytes at %d, want %d", w.n, at, size)
	}
	w.p.done(piece{at: at, n: size, crc: w.crc})
	return nil
}
