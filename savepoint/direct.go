package savepoint

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/sptool/sptool/internal/prefault"
)

// RowSource gives the stream writer random access to the rows it writes, in
// the order they are written. Row must be cheap: the writer calls it several
// times per row (once per column) so the output is never held in memory.
type RowSource interface {
	// Len returns the number of rows.
	Len() int
	// Row returns row i, 0 <= i < Len().
	Row(i int) Row
}

// ColumnSource is a RowSource that can also return one column of a row
// without touching the others; the writer uses it when available, so each
// column pass reads only that column's memory.
type ColumnSource interface {
	RowSource
	// Op, Key and Value return the operator, the key and the value of
	// row i, as Row(i) does.
	Op(i int) uint64
	Key(i int) []byte
	Value(i int) []byte
}

// RunSource is a ColumnSource that can tell which output rows are
// consecutive, unmodified rows of one input batch; the writer then copies
// each column of such a run at once instead of row by row.
type RunSource interface {
	ColumnSource
	// Run returns the batch holding output row i and the batch-local range
	// [lo, lo+n) of the rows i, i+1, ..., i+n-1 when they are consecutive
	// rows of that batch as stored; ok is false when row i is not one
	// (a modified row).
	Run(i int) (b *Batch, lo, n int, ok bool)
}

// KeyValueRunSource is a RunSource some of whose rows have another
// operator than the stored rows they were read from, with the stored key
// and value (an operator remap). Run treats such rows as modified;
// KeyValueRun is Run for the key and value columns alone, which it copies
// as runs.
type KeyValueRunSource interface {
	RunSource
	// KeyValueRun is Run for the key and value columns alone: a row whose
	// operator alone was changed is part of a run.
	KeyValueRun(i int) (b *Batch, lo, n int, ok bool)
}

// keyValueRun returns KeyValueRun of src, or its Run, for row i.
func keyValueRun(src RunSource, i int) (b *Batch, lo, n int, ok bool) {
	if kv, isKV := src.(KeyValueRunSource); isKV {
		return kv.KeyValueRun(i)
	}
	return src.Run(i)
}

// Columns adapts any RowSource to a ColumnSource.
func Columns(src RowSource) ColumnSource {
	if cs, ok := src.(ColumnSource); ok {
		return cs
	}
	return rowColumns{src}
}

type rowColumns struct{ RowSource }

func (r rowColumns) Op(i int) uint64    { return r.Row(i).Op }
func (r rowColumns) Key(i int) []byte   { return r.Row(i).Key }
func (r rowColumns) Value(i int) []byte { return r.Row(i).Value }

// RowSlice is a RowSource over rows in memory.
type RowSlice []Row

// Len returns the number of rows.
func (s RowSlice) Len() int { return len(s) }

// Row returns row i.
func (s RowSlice) Row(i int) Row { return s[i] }

// WriteStream writes src as one canonical Arrow IPC stream to w, streaming
// each column straight from the source rows (two passes: sizes first, then
// the buffers), so memory does not grow with the output. The rows must
// already be in the order wanted (EncodeStream sorts and resolves
// duplicates first). One record batch, several only where a binary column
// would pass the 2 GiB limit; a zero-row batch for empty state. The bytes are
// identical to what arrow-go's IPC writer produces for the same batches.
func WriteStream(w io.Writer, md Metadata, src RowSource) error {
	return writeStream(w, md, src, nil)
}

func writeStream(w io.Writer, md Metadata, rs RowSource, batches []int) error {
	src := Columns(rs)
	schemaMsg, err := schemaMessage(md)
	if err != nil {
		return err
	}
	if _, err := w.Write(schemaMsg); err != nil {
		return err
	}
	n := src.Len()
	start := 0
	for bi := 0; ; bi++ {
		var end int
		var kLen, vLen int64
		if batches != nil {
			if bi == len(batches) {
				break
			}
			end = start + batches[bi]
			for i := start; i < end; i++ {
				kLen += int64(len(src.Key(i)))
				vLen += int64(len(src.Value(i)))
			}
			if kLen > maxColumnBytes || vLen > maxColumnBytes {
				return fmt.Errorf("batch %d: a binary column would hold more than %d bytes", bi, maxColumnBytes)
			}
		} else if end, kLen, vLen, _, err = nextBatch(src, start, 0); err != nil {
			return err
		}
		if err := writeBatch(w, src, start, end, kLen, vLen); err != nil {
			return err
		}
		start = end
		if batches == nil && start >= n {
			break
		}
	}
	_, err = w.Write([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	return err
}

// rowCut is a row of a batch and the sizes of the key and value data of the
// batch's rows before it.
type rowCut struct {
	row        int
	kLen, vLen int64
}

// nextBatch returns the end of the batch starting at start (as many rows as
// fit under maxColumnBytes in both binary columns) and its data sizes. With
// every > 0 it also returns cuts of the batch every rows apart, after
// start and before end.
func nextBatch(rs RowSource, start, every int) (end int, kLen, vLen int64, cuts []rowCut, err error) {
	return nextBatchTo(rs, start, rs.Len(), every)
}

// nextBatchTo is nextBatch of the rows before n: the batch ends at n at the
// latest.
func nextBatchTo(rs RowSource, start, n, every int) (end int, kLen, vLen int64, cuts []rowCut, err error) {
	src := Columns(rs)
	runs, _ := src.(RunSource)
	warm := &warmer{src: src, end: n}
	release := newMapRelease(writerReleaseRows)
	// The offsets that bound runs, read with pread (see window.offset).
	kw, vw := window{bounds: true}, window{bounds: true}
	defer kw.free()
	defer vw.free()
	nextCut := start + every
	var choice runChoice
	for i := start; i < n; {
		if every > 0 && i >= nextCut {
			cuts = append(cuts, rowCut{i, kLen, vLen})
			nextCut = i + every
		}
		if runs != nil {
			// A whole run at once when it fits.
			b, lo, m, ok := keyValueRun(runs, i)
			m = min(m, n-i)
			if every > 0 {
				m = min(m, nextCut-i) // a cut may fall inside a run
			}
			if choice.run(ok, b, lo, m) {
				release.tick(b, m)
				k0, k1, err := kw.span(b, b.KeyOffs, b.Keys, lo, m)
				if err != nil {
					return 0, 0, 0, nil, err
				}
				v0, v1, err := vw.span(b, b.ValOffs, b.Vals, lo, m)
				if err != nil {
					return 0, 0, 0, nil, err
				}
				k, v := kLen+int64(k1-k0), vLen+int64(v1-v0)
				if k <= maxColumnBytes && v <= maxColumnBytes {
					kLen, vLen = k, v
					i += m
					continue
				}
			}
		}
		warm.ahead(i, warmKeys)
		warm.ahead(i, warmValues)
		k, v := kLen+int64(len(src.Key(i))), vLen+int64(len(src.Value(i)))
		if k > maxColumnBytes || v > maxColumnBytes {
			if i == start {
				return 0, 0, 0, nil, fmt.Errorf("row (op %d, key %x...) alone exceeds the %d-byte binary column limit", src.Op(i), prefix(src.Key(i), 16), maxColumnBytes)
			}
			if len(cuts) > 0 && cuts[len(cuts)-1].row == i {
				cuts = cuts[:len(cuts)-1]
			}
			return i, kLen, vLen, cuts, nil
		}
		kLen, vLen = k, v
		i++
	}
	return n, kLen, vLen, cuts, nil
}

var schemaCache sync.Map // metadata rendering -> schema message bytes

// schemaMessage returns the framed schema message arrow-go writes for the
// canonical schema with metadata md.
func schemaMessage(md Metadata) ([]byte, error) {
	var sb bytes.Buffer
	for _, e := range md {
		fmt.Fprintf(&sb, "%d:%s%d:%s", len(e.Key), e.Key, len(e.Value), e.Value)
	}
	if b, ok := schemaCache.Load(sb.String()); ok {
		return b.([]byte), nil
	}
	keys, vals := make([]string, len(md)), make([]string, len(md))
	for i, e := range md {
		keys[i], vals[i] = e.Key, e.Value
	}
	meta := arrow.NewMetadata(keys, vals)
	var buf bytes.Buffer
	iw := ipc.NewWriter(&buf, ipc.WithSchema(arrow.NewSchema(canonicalFields, &meta)))
	if err := iw.Close(); err != nil {
		return nil, fmt.Errorf("encode schema: %w", err)
	}
	b := buf.Bytes()
	b = b[:len(b)-8] // the stream of a schema alone ends with EOS
	schemaCache.Store(sb.String(), b)
	return b, nil
}

func pad8(n int64) int64 { return (n + 7) &^ 7 }

// batchLayout is where each buffer of a record batch's body lies. Buffers
// in body order: op validity, op data, key validity, key offsets, key data,
// value validity, value offsets, value data.
type batchLayout struct {
	rows       int64
	offs, lens [8]int64 // in the body
	body       int64
}

// Buffers of a batch's body (see batchLayout).
const (
	bufOps     = 1
	bufKeyOffs = 3
	bufKeys    = 4
	bufValOffs = 6
	bufVals    = 7
)

func layoutOf(rows int, kLen, vLen int64) batchLayout {
	n := int64(rows)
	offLen := 4 * (n + 1) // arrow-go writes the single 0 offset even for zero rows
	l := batchLayout{rows: n, lens: [8]int64{0, 8 * n, 0, offLen, kLen, 0, offLen, vLen}}
	for i, b := range l.lens {
		l.offs[i] = l.body
		l.body += pad8(b)
	}
	return l
}

// header returns the batch's framed message.
func (l batchLayout) header() []byte {
	return messageFrame(recordBatchHeader(l.rows, l.offs, l.lens, l.body))
}

// writeBatch writes rows [start, end) as one record batch message and body.
func writeBatch(w io.Writer, src ColumnSource, start, end int, kLen, vLen int64) error {
	l := layoutOf(end-start, kLen, vLen)
	if _, err := w.Write(l.header()); err != nil {
		return err
	}
	out := newSink(w, l.body)
	defer out.free()
	rw := newRangeWriter(src, end)
	defer rw.free()
	rw.ops(out, start, end)
	for col, buf := range [2]int{bufKeyOffs, bufValOffs} {
		out.buf = binary.LittleEndian.AppendUint32(out.buf, 0)
		rw.offsets(out, col == 1, start, end, 0)
		out.pad(l.lens[buf])
		rw.data(out, col == 1, start, end)
		out.pad(l.lens[buf+1])
	}
	return out.flush()
}

// rangeWriter writes the columns of ranges of a source's rows, each column
// of a run of consecutive input rows at once.
type rangeWriter struct {
	src     ColumnSource
	runs    RunSource // src, when it is one
	kv      bool      // a pass over keys or values: runs of KeyValueRun
	warm    warmer
	release *mapRelease
	bounds  window // the offsets that bound runs (see window.offset)
	choice  runChoice
	hint    stepHint // offsets written from a batch's stretches
	kvSteps runSteps // the steps of the first pass over keys or values
}

// runSteps are the steps, runs or single rows, of a pass over keys or
// values (see rangeWriter.run), kept for the passes after it over the same
// rows: the key offsets, the keys, the value offsets and the values of a
// range take the same steps. Asking the source for each run in every pass
// took the writer of a purge of 100,000 keys from 10M rows (a run about
// every 100 rows) 28 ms of CPU; with the steps replayed, the writer takes
// 26 ms less. A pass of more steps than maxRunSteps (rows in clink's
// order, one at a time) keeps none, and the passes after it over the same
// rows do not try again: a drop of one row in eight from a 10M-row file
// in clink's order (1.25M runs, more than a range's share) kept and threw
// away the steps of each pass afresh, in a new array each time.
type runSteps struct {
	steps     []runStep
	from, end int  // the rows of the pass the steps are of
	full      bool // steps are the whole pass
	over      bool // the pass over [from, end) took more steps than are kept
	record    bool // the pass under way adds its steps
	at        int  // the next step of a pass that replays them, or -1
	row       int  // the row of steps[at]
}

// runStep is a step of a pass: rangeWriter.run's answer for a row (the
// row after the step before it: the run's rows after a run, the next row
// after a single one). 16 bytes, so that a range of many short runs keeps
// them all.
type runStep struct {
	b  *Batch
	lo uint32
	n  uint32 // rows, with runStepRun set for a run
}

// runStepRun marks, in runStep.n, a step copied as a run.
const runStepRun = 1 << 31

// maxRunSteps is the most steps runSteps keeps (16 bytes each: 4 MiB).
var maxRunSteps = 1 << 18

// start starts a pass over rows [i, end): one that replays the steps kept
// when they are of those rows, else one that keeps its own unless a pass
// over those rows took too many.
func (s *runSteps) start(i, end int) {
	if s.from == i && s.end == end && (s.full || s.over) {
		s.at, s.row, s.record = 0, i, false
		if s.over {
			s.at = -1
		}
		return
	}
	s.steps, s.from, s.end, s.full, s.over, s.record, s.at = s.steps[:0], i, end, false, false, true, -1
}

// finish ends a pass that went through all its rows: the steps it kept,
// if it kept them all, are the pass's.
func (s *runSteps) finish() {
	if s.record {
		s.full, s.record = true, false
	}
}

// next returns the step kept for row i of a pass that replays them; ok is
// false when there is none.
func (s *runSteps) next(i int) (b *Batch, lo, n int, run, ok bool) {
	if s.at < 0 || s.at >= len(s.steps) || s.row != i {
		s.at = -1 // (not the steps of this pass: asked again)
		return nil, 0, 0, false, false
	}
	st := &s.steps[s.at]
	s.at++
	n, run = int(st.n&^runStepRun), st.n&runStepRun != 0
	if run {
		s.row += n
	} else {
		s.row++
	}
	return st.b, int(st.lo), n, run, true
}

// add keeps a step of a pass that keeps them: n rows from row lo of b,
// copied as a run or not.
func (s *runSteps) add(b *Batch, lo, n int, run bool) {
	if !s.record {
		return
	}
	if !run {
		lo, n = 0, 0 // (a row copied on its own: the caller takes the row after)
	}
	if len(s.steps) == maxRunSteps || uint(lo) >= runStepRun || uint(n) >= runStepRun {
		s.steps, s.record, s.over = s.steps[:0], false, true
		return
	}
	st := runStep{b: b, lo: uint32(lo), n: uint32(n)}
	if run {
		st.n |= runStepRun
	}
	s.steps = append(prefault.Grow(s.steps, 1), st)
}

// free returns the writer's buffers to the pool.
func (rw *rangeWriter) free() { rw.bounds.free() }

// newRangeWriter returns a writer of rows of src before end.
func newRangeWriter(src ColumnSource, end int) *rangeWriter {
	runs, _ := src.(RunSource)
	return &rangeWriter{src: src, runs: runs, warm: warmer{src: src, end: end}, release: newMapRelease(writerReleaseRows), bounds: window{bounds: true}}
}

// run returns the run of output rows starting at i, clipped to end (see
// runChoice).
func (rw *rangeWriter) run(i, end int) (*Batch, int, int, bool) {
	if rw.runs == nil {
		return nil, 0, 0, false
	}
	if rw.kv {
		if b, lo, n, run, ok := rw.kvSteps.next(i); ok {
			return b, lo, n, run
		}
	}
	var b *Batch
	var lo, n int
	var ok bool
	if rw.kv {
		b, lo, n, ok = keyValueRun(rw.runs, i)
	} else {
		b, lo, n, ok = rw.runs.Run(i)
	}
	n = min(n, end-i)
	run := rw.choice.run(ok, b, lo, n)
	if rw.kv {
		rw.kvSteps.add(b, lo, n, run)
	}
	return b, lo, n, run
}

// runChoice chooses, run after run, between copying a run of rows at once
// (through a pread window) and row by row (see run).
type runChoice struct {
	single bool   // the last row was copied on its own
	b      *Batch // the batch of the last run copied as a run
	end    int    // the batch row after it
}

// nearRows is how far in its batch a row may follow the run copied before
// it to be copied as a run itself.
const nearRows = 64

// run reports whether a run of n rows from row lo of b (ok: rows as
// stored) is copied as a run rather than row by row. Rows written in
// another order than stored come one at a time and are cheaper to copy so
// (the warmer loads them ahead through the map). But a lone row among runs
// is copied as a run, through the same window as its neighbours, and so
// is a row that follows the run before it closely in its batch: rows kept
// in order between dropped ones (a TTL purge, a filter on the value),
// which the window holding the rows before holds too. Through the map each
// first touch of a page costs more than read's copy on some machines.
func (c *runChoice) run(ok bool, b *Batch, lo, n int) bool {
	near := ok && b == c.b && lo >= c.end && lo-c.end <= nearRows
	run := ok && (n > 1 || !c.single || near)
	c.single = !ok || n == 1
	if run {
		c.b, c.end = b, lo+n
	}
	return run
}

// ops writes the operators of rows [i, end).
func (rw *rangeWriter) ops(out *sink, i, end int) {
	rw.choice, rw.kv = runChoice{}, false
	for i < end {
		if b, lo, k, ok := rw.run(i, end); ok {
			if b.opRuns != nil {
				out.writeOpRuns(b.opRuns, lo, k)
			} else {
				out.writeOps(b.file, b.Ops[lo:lo+k])
			}
			i += k
			continue
		}
		rw.warm.ahead(i, warmOps)
		out.buf = binary.LittleEndian.AppendUint64(out.buf, rw.src.Op(i))
		out.maybeFlush()
		i++
	}
}

// column returns a batch's offsets and data of keys, or of values.
func column(b *Batch, value bool) ([]int32, []byte) {
	if value {
		return b.ValOffs, b.Vals
	}
	return b.KeyOffs, b.Keys
}

// startPass starts a pass over the keys (or values) of rows [i, end): it
// returns how to get a row's and what the warmer loads for it.
func (rw *rangeWriter) startPass(value bool, i, end int) (func(int) []byte, int) {
	rw.choice, rw.kv = runChoice{}, true
	rw.kvSteps.start(i, end)
	if value {
		return rw.src.Value, warmValues
	}
	return rw.src.Key, warmKeys
}

// offsets writes the end offsets of the keys (or values) of rows [i, end),
// counted from off, the offset of row i's; it returns the last.
func (rw *rangeWriter) offsets(out *sink, value bool, i, end int, off uint32) uint32 {
	get, what := rw.startPass(value, i, end)
	for i < end {
		if b, lo, k, ok := rw.run(i, end); ok {
			offsets, _ := column(b, value)
			if c := b.stepsOf(offsets); c != nil {
				off = out.stepOffsets(c, &rw.hint, lo, k, off)
			} else {
				off = out.writeOffsets(b.file, offsets[lo:lo+k+1], off)
			}
			i += k
			continue
		}
		rw.warm.ahead(i, what)
		off += uint32(len(get(i)))
		out.buf = binary.LittleEndian.AppendUint32(out.buf, off)
		out.maybeFlush()
		i++
	}
	rw.kvSteps.finish()
	return off
}

// data writes the key (or value) bytes of rows [i, end).
func (rw *rangeWriter) data(out *sink, value bool, i, end int) {
	get, what := rw.startPass(value, i, end)
	for i < end {
		if b, lo, k, ok := rw.run(i, end); ok {
			rw.release.tick(b, k)
			offsets, data := column(b, value)
			from, to, err := rw.bounds.span(b, offsets, data, lo, k)
			if err != nil {
				out.setErr(err)
				return
			}
			out.writeFrom(b.file, data[from:to])
			i += k
			continue
		}
		rw.warm.ahead(i, what|warmData)
		out.write(get(i))
		i++
	}
	rw.kvSteps.finish()
}

// mapRelease drops a mapped input's pages from the resident set as work is
// done through the map: add counts the work (rows, bytes: the caller's
// unit) and releases the map once every units have been counted since the
// last release. The whole map is released: the few pages mapped lie
// anywhere in it, and walking the page tables of a range with few pages
// costs little. A nil *mapRelease, or a nil map, releases nothing.
type mapRelease struct {
	pace Pacer
	done int
}

// newMapRelease returns a mapRelease every every units.
func newMapRelease(every int) *mapRelease { return &mapRelease{pace: NewPacer(every, every)} }

func (r *mapRelease) add(m []byte, n int64) {
	if r == nil || m == nil {
		return
	}
	if r.done += int(n); r.pace.Due(r.done) {
		releasePages(m)
	}
}

// writerReleaseRows is how many rows of runs the writer copies between two
// releases of the input's pages (mapRelease). Runs are read with pread,
// but rows copied one at a time between them, and the warmer's loads ahead
// of those, go through the map, whose faults map the pages around them too
// (up to 64 KiB): a long write would otherwise leave them resident.
const writerReleaseRows = 1 << 18

// tick counts rows of batch b copied as a run.
func (r *mapRelease) tick(b *Batch, rows int) {
	if b.file != nil {
		r.add(b.file.data, int64(rows))
	}
}

// warmer loads, ahead of the writer, the rows it is about to copy one at a
// time: rows written in another order than stored sit anywhere in the
// input, and loads that do not depend on each other let the CPU overlap
// their cache and TLB misses instead of taking them one after the other.
// It loads only once two consecutive rows came one at a time: the rows
// after a single row among runs (a modified one) are mostly runs, which are
// read with pread, and loading them through the map would fault in their
// pages for nothing.
type warmer struct {
	src  ColumnSource
	end  int
	next [warmData << 1]int // per kind of pass: the first row not loaded yet
	// after, per kind of pass: the row after the last one asked for.
	after [warmData << 1]int
	x     byte // keeps the loads
}

// What a pass reads of a row.
const (
	warmOps    = 0
	warmKeys   = 1
	warmValues = 2
	warmData   = 4 // or'ed: the bytes too, not only the length
)

// warmBlock is how many rows warmer loads at once.
const warmBlock = 256

// ahead loads rows [i, i+warmBlock) for a pass of kind what, unless done
// or row i-1 did not come one at a time.
func (w *warmer) ahead(i, what int) {
	follows := w.after[what] == i
	w.after[what] = i + 1
	if i < w.next[what] || !follows {
		return
	}
	to := min(i+warmBlock, w.end)
	w.next[what] = to
	var x byte
	for j := i; j < to; j++ {
		switch what &^ warmData {
		case warmOps:
			x ^= byte(w.src.Op(j))
			continue
		case warmKeys:
			b := w.src.Key(j)
			if what&warmData != 0 && len(b) > 0 {
				x ^= b[0] ^ b[len(b)-1]
			}
			x ^= byte(len(b))
		case warmValues:
			b := w.src.Value(j)
			if what&warmData != 0 && len(b) > 0 {
				x ^= b[0] ^ b[len(b)-1]
			}
			x ^= byte(len(b))
		}
	}
	w.x ^= x
}

// sinkSize is the write buffer of the stream writer: larger than the
// file's buffer (WriteFileAtomic), so that a full sink goes to the file
// without another copy.
const sinkSize = 1 << 20

// littleEndian is whether this machine stores integers as Arrow does, so
// that a column of them can be written as it is in memory.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// writeOps writes operator ids as little-endian uint64s; m is the mapped
// file ops lie in, if any.
func (s *sink) writeOps(m *mappedFile, ops []uint64) {
	if littleEndian && len(ops) > 0 {
		s.writeFrom(m, bytesOf(ops))
		return
	}
	for _, op := range ops {
		s.buf = binary.LittleEndian.AppendUint64(s.buf, op)
		s.maybeFlush()
	}
}

// writeOffsets writes the end offsets of a run of binary values whose
// offsets in their batch are offsets (its start, then one end per value;
// a slice of m's map, if m is not nil), moved so that the run starts at
// off; it returns the run's end there.
func (s *sink) writeOffsets(m *mappedFile, offsets []int32, off uint32) uint32 {
	if !littleEndian {
		m = nil // the bytes are read as int32s below
	}
	raw := bytesOf(offsets)
	if at, ok := m.offsetOf(raw); ok && len(raw) > directMin {
		return s.directOffsets(m, at, len(offsets), off)
	}
	first, err := s.win.view(m, raw[:4])
	s.setErr(err)
	base := binary.LittleEndian.Uint32(first)
	raw = raw[4:]
	end := off
	for len(raw) > 0 {
		room := (cap(s.buf) - len(s.buf)) / 4
		if room == 0 {
			s.flush()
			continue
		}
		n := min(room, len(raw)/4, windowSize/4)
		src, err := s.win.view(m, raw[:4*n])
		s.setErr(err)
		at := len(s.buf)
		s.buf = s.buf[:at+4*n]
		end = moveOffsets(s.buf[at:], src[:4*n], off-base)
		raw = raw[4*n:]
	}
	return end
}

// directOffsets is writeOffsets for a long run of offsets, n of them at
// byte at of m's file: they are read straight into the buffer and moved
// there, not through the window (whose buffer a long run would fill for
// one use).
func (s *sink) directOffsets(m *mappedFile, at int64, n int, off uint32) uint32 {
	end, start := off, true
	var delta uint32
	for n > 0 {
		room := (cap(s.buf) - len(s.buf)) / 4
		if room < 2 {
			s.flush()
			continue
		}
		k := min(room, n)
		p := len(s.buf)
		got := s.buf[p : p+4*k]
		s.setErr(m.readAt(got, at))
		at, n = at+int64(4*k), n-k
		if start {
			// The run's start offset is not written: the ends are moved
			// down over it (room and n are at least 2, so an end follows).
			delta, start = off-binary.LittleEndian.Uint32(got), false
			got, k = got[4:], k-1
		}
		end = moveOffsets(s.buf[p:p+4*k], got, delta)
		s.buf = s.buf[:p+4*k]
	}
	return end
}

// moveOffsets writes to dst the little-endian uint32s of src (at least one)
// plus delta, modulo 2^32, and returns the last. Both are read and written
// as []uint32 when they are aligned (the common case). dst may overlap src
// if it starts at or before it.
func moveOffsets(dst, src []byte, delta uint32) uint32 {
	dst = dst[:len(src)]
	if littleEndian && uintptr(unsafe.Pointer(&dst[0]))%4 == 0 && uintptr(unsafe.Pointer(&src[0]))%4 == 0 {
		from, to := wordsOf[uint32](src), wordsOf[uint32](dst)
		to = to[:len(from)]
		for j, v := range from {
			to[j] = v + delta
		}
		return to[len(to)-1]
	}
	for j := 0; j+4 <= len(src); j += 4 {
		binary.LittleEndian.PutUint32(dst[j:j+4], binary.LittleEndian.Uint32(src[j:j+4])+delta)
	}
	return binary.LittleEndian.Uint32(dst[len(src)-4:])
}

// writeFrom writes b, which lies in the map of m if m is not nil: runs of
// more than directMin bytes are read from the file straight into the
// buffer, smaller ones through a window of the file.
func (s *sink) writeFrom(m *mappedFile, b []byte) {
	off, ok := m.offsetOf(b)
	if !ok {
		s.write(b)
		return
	}
	if len(b) <= min(directMin, windowSize/4) {
		v, err := s.win.view(m, b)
		s.setErr(err)
		s.write(v)
		return
	}
	for len(b) > 0 {
		if cap(s.buf)-len(s.buf) < 64<<10 {
			s.flush()
		}
		n := min(len(b), cap(s.buf)-len(s.buf))
		at := len(s.buf)
		s.buf = s.buf[:at+n]
		s.setErr(m.readAt(s.buf[at:], off))
		b, off = b[n:], off+int64(n)
	}
}

// directMin is the longest run writeFrom copies through its window. Longer
// ones are read straight into the sink: a window read of 1 MiB for runs of
// about 100 KiB also reads the rows between them, and copies each run
// twice (a filter of 10M rows whose runs are 94-175 KiB: 4% faster).
const directMin = 16 << 10

// bufPool holds buffers of sinkSize bytes between passes and files: the
// checksum and offset validation at open, then the writer's sinks and
// windows. Large fresh allocations cost more than reuse: the first touch
// of a page can cost several microseconds (about 17 us on some virtual
// machines, 4 ms a megabyte).
var bufPool sync.Pool

// poolBuf returns an empty buffer of sinkSize bytes' capacity whose first
// use bytes (the most the caller will write) are mapped in (see
// prefault.Writable): a new buffer's pages, and the pages of a pooled one
// that its earlier user left untouched, would otherwise take a page fault
// each as they are written.
func poolBuf(use int) []byte {
	b, ok := bufPool.Get().(*[]byte)
	if !ok {
		nb := make([]byte, 0, sinkSize)
		b = &nb
	}
	prefault.Writable((*b)[:min(use, sinkSize)])
	return (*b)[:0]
}

// smallBufMax is the largest buffer sizedBuf makes rather than takes from
// the pool.
const smallBufMax = 64 << 10

// sizedBuf returns an empty buffer for reads of up to n bytes at a time:
// poolBuf(use) when n is large, else a buffer of n bytes. A small file's
// reads (its spans at open, the bytes between them) each took a pooled
// megabyte, and the collector's cycles that those set off cost as much as
// the rest of inspecting it. It reports whether the buffer is pooled.
func sizedBuf(n int64, use int) ([]byte, bool) {
	if n > smallBufMax {
		return poolBuf(use), true
	}
	return make([]byte, 0, n), false
}

// putBuf returns b to the pool if it is one of poolBuf's; b must not be
// used after.
func putBuf(b []byte) {
	if cap(b) == sinkSize {
		b = b[:0]
		bufPool.Put(&b)
	}
}

// newSink returns a sink to w for a body of the given size.
func newSink(w io.Writer, body int64) *sink {
	s := &sink{w: w}
	if body >= sinkSize/4 {
		s.buf = poolBuf(sinkSize)
	} else {
		s.buf = make([]byte, 0, max(body, 64<<10))
	}
	return s
}

// free returns the sink's large buffers to the pool.
func (s *sink) free() {
	putBuf(s.buf)
	putBuf(s.win.buf)
	s.buf, s.win.buf = nil, nil
}

func (s *sink) setErr(err error) {
	if err != nil && s.err == nil {
		s.err = err
	}
}

// sink buffers the body so that the per-row appends are plain slice appends.
type sink struct {
	w   io.Writer
	buf []byte
	err error
	win window // the input file's bytes, for runs read with pread
}

func (s *sink) maybeFlush() {
	if len(s.buf) >= sinkSize-16 {
		s.flush()
	}
}

func (s *sink) flush() error {
	if s.err == nil && len(s.buf) > 0 {
		_, s.err = s.w.Write(s.buf)
	}
	s.buf = s.buf[:0]
	return s.err
}

func (s *sink) write(b []byte) {
	if len(s.buf)+len(b) > sinkSize {
		s.flush()
		if len(b) > sinkSize {
			if s.err == nil {
				_, s.err = s.w.Write(b)
			}
			return
		}
	}
	s.buf = append(s.buf, b...)
}

// pad writes the zero bytes that align a buffer of length l to 8 bytes.
func (s *sink) pad(l int64) {
	var zeros [8]byte
	s.write(zeros[:pad8(l)-l])
}

// recordBatchHeader builds the RecordBatch message flatbuffer with the same
// builder calls, in the same order, as arrow-go's writer (recordToFB and
// writeMessageFB), so the bytes match.
func recordBatchHeader(n int64, offs, lens [8]int64, body int64) []byte {
	b := flatbuffers.NewBuilder(0)
	// nodes: three fields, no nulls
	b.StartVector(16, 3, 8)
	for i := 0; i < 3; i++ {
		b.Prep(8, 16)
		b.PrependInt64(0) // null count
		b.PrependInt64(n) // length
	}
	nodes := b.EndVector(3)
	b.StartVector(16, 8, 8)
	for i := 7; i >= 0; i-- {
		b.Prep(8, 16)
		b.PrependInt64(lens[i])
		b.PrependInt64(offs[i])
	}
	buffers := b.EndVector(8)
	b.StartObject(5) // RecordBatch
	b.PrependInt64Slot(0, n, 0)
	b.PrependUOffsetTSlot(1, nodes, 0)
	b.PrependUOffsetTSlot(2, buffers, 0)
	rec := b.EndObject()
	b.StartObject(5)                        // Message
	b.PrependInt16Slot(0, 4, 0)             // MetadataVersion V5
	b.PrependByteSlot(1, msgRecordBatch, 0) // header type
	b.PrependUOffsetTSlot(2, rec, 0)        // header
	b.PrependInt64Slot(3, body, 0)          // body length
	b.PrependUOffsetTSlot(4, 0, 0)          // no custom metadata
	msg := b.EndObject()
	b.Finish(msg)
	return b.FinishedBytes()
}

// messageFrame returns a flatbuffer message framed as arrow-go writes it:
// the continuation marker, its padded length, the message and the padding
// (8-byte alignment).
func messageFrame(fb []byte) []byte {
	padded := pad8(int64(len(fb)) + 8)
	b := make([]byte, padded)
	binary.LittleEndian.PutUint32(b, continuation)
	binary.LittleEndian.PutUint32(b[4:], uint32(padded-8))
	copy(b[8:], fb)
	return b
}
