package savepoint

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"unsafe"

	"github.com/sptool/sptool/internal/prefault"
	"github.com/sptool/sptool/internal/unaligned"
)

// External canonical sort.
//
// CanonicalPositions sorts an index of every row in memory (about 32 bytes a
// row) and leaves the rows where they are, so writing them in that order
// reads the input at random: for a large file in clink's own (hash-map)
// order that means memory in proportion to the rows and a cache miss or
// more per row and column. SortSpilled sorts the way databases sort more
// than fits in memory:
//
//  1. One pass over the rows in stream order appends each row to a bucket
//     by its operator and first key byte (the key group of a keyed row),
//     a block of rows at a time (see partition). Buckets fill small
//     buffers that are flushed, as chunks, to one temporary file.
//  2. Buckets are taken in canonical order. A bucket is read back and
//     sorted in memory with CanonicalPositions, which resolves its
//     duplicates; one larger than the budget is split again on the first
//     key byte where its keys differ, and one whose keys are all the same
//     is folded to its surviving row without being held.
//  3. The sorted rows are appended, column by column, to a second
//     temporary file as record batches, which is then mapped: the result
//     is a canonical Snapshot that long passes read in order (and the
//     writer copies a run at a time).
//
// Memory is bounded by the budget (and the first pass's blocks: about 0.6
// MiB a part for typical rows, up to 1.6 MiB for rows of empty keys and
// values, and one more while a bucket split again is drained), not by the
// rows; the temporary files
// hold the rows up to twice over while the sort runs (about 1.7 times for
// short rows: the first file's records are compact) and are unlinked as
// soon as they are created, so nothing is left behind whatever happens to
// the process.

// DefaultSpillBudget is how many bytes of rows SortSpilled holds in memory
// at once when SpillOptions.Budget is zero.
const DefaultSpillBudget = 16 << 20

// maxSpillBudget bounds SpillOptions.Budget: a bucket read back is indexed
// with 32-bit offsets.
const maxSpillBudget = 1 << 30

// SpillOptions control SortSpilled.
type SpillOptions struct {
	// Dir is where the temporary files are created ("" for os.TempDir()). It
	// needs room for up to twice the rows' bytes while the sort runs.
	Dir string
	// Budget bounds the bytes of rows held in memory at once (0:
	// DefaultSpillBudget).
	Budget int
	// Dropped, when not nil, is called with each row that loses to a
	// duplicate, resolved as CanonicalPositions does. The row's slices are
	// valid only during the call.
	Dropped func(Row)
	// Release, when not nil, is called now and then during the pass over the
	// source (long passes over memory maps use it to drop read pages from
	// the resident set): every ReleaseRows rows of each part (0: 256K; a
	// mapped file's File.ReleaseRows, so that long rows are released
	// before their pages fill memory).
	Release     func()
	ReleaseRows int
	// KeepDuplicates keeps every row: rows of one (op, key) stay in
	// stream order (a stable sort, as SortOrder), none is dropped.
	KeepDuplicates bool
	// Stop, when not nil, is asked now and then (every block of the pass
	// over the source, every bucket after it): once it reports true the
	// sort ends with an error that is context.Canceled (a run that was
	// cancelled does not sort every row first).
	Stop func() bool
	// Only, when not nil, chooses the rows sorted: a row of the source it
	// reports false for is left out, as if the source did not hold it
	// (not a duplicate: Dropped is not called). It is called in the pass
	// over the source, from several goroutines at once; key is valid only
	// during the call.
	Only func(op uint64, key []byte) bool
}

// stopped reports whether the sort is to end (SpillOptions.Stop).
func (o *SpillOptions) stopped() bool { return o.Stop != nil && o.Stop() }

// Spilled is a canonical copy of rows in an unlinked temporary file, mapped
// as the record batches of a Snapshot.
type Spilled struct {
	snap *Snapshot
	m    *mappedFile
}

// Snapshot returns the sorted rows as a columnar snapshot (metadata and
// version map empty).
func (s *Spilled) Snapshot() *Snapshot { return s.snap }

// ReleasePages drops the file's mapped pages from the resident set (none
// for a nil Spilled).
func (s *Spilled) ReleasePages() {
	if s != nil && s.m != nil {
		releasePages(s.m.data)
	}
}

// Close unmaps and closes the temporary file; the Snapshot must not be used
// after. Closing a nil Spilled, or one closed, does nothing.
func (s *Spilled) Close() error {
	if s == nil || s.m == nil {
		return nil
	}
	err := errors.Join(unmapFile(s.m.data), s.m.f.Close())
	s.m = nil
	return err
}

// SortSpilled returns the rows of src in canonical order, with duplicates
// of (op, key) resolved as CanonicalPositions resolves them (or all kept,
// in stream order: SpillOptions.KeepDuplicates), sorted through
// temporary files in opts.Dir so that memory stays within opts.Budget
// whatever the number of rows (see the comment above).
func SortSpilled(src ColumnSource, opts SpillOptions) (_ *Spilled, err error) {
	budget := opts.Budget
	if budget <= 0 {
		budget = DefaultSpillBudget
	}
	budget = min(budget, maxSpillBudget)
	chunks, err := createTempFile(opts.Dir, "spill")
	if err != nil {
		return nil, spillCreateError(err, opts.Dir)
	}
	defer chunks.Close()
	cw := &chunkWriter{f: chunks, dir: opts.Dir}
	top, err := partitionAll(cw, src, budget, &opts)
	if err != nil {
		return nil, err
	}
	out, err := newColWriter(opts.Dir, "sorted", budget)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			out.abort()
		}
	}()
	s := &spillSorter{chunks: cw, out: out, budget: budget, dropped: opts.Dropped, keep: opts.KeepDuplicates, stop: opts.stopped}
	err = s.drain(top)
	s.release() // drain has waited for every sort it started
	if err != nil {
		return nil, err
	}
	return out.finish()
}

// The buffers of finished sorts (sortSets: each set's records, order and
// gathered columns; colBufs: the sorted file's columns), for the next sort
// to reuse: a rescale sorts one file per group of subtasks, and memory
// touched for the first time costs several microseconds a page on some
// machines (a rescale of 10M rows in clink's order spent a quarter of its
// CPU growing these buffers afresh for each file).
var sortSets, colBufs sync.Pool

// release puts the sorter's sets in sortSets.
func (s *spillSorter) release() {
	for _, set := range s.sets {
		set.done, set.err = nil, nil
		sortSets.Put(set)
	}
	s.sets = nil
}

// createTempFile creates a temporary file in dir that has no name: an
// unnamed one where the system makes one, else a named one unlinked at
// once.
func createTempFile(dir, what string) (*os.File, error) {
	dir = tempDir(dir)
	if f, err := openUnnamed(dir); err == nil {
		return f, nil
	}
	f, err := os.CreateTemp(dir, ".sptool-"+what+"-*")
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("unlink temporary file: %w", err)
	}
	return f, nil
}

// A record, as buckets hold rows: key length and value length (uvarints),
// key, value. The operator is the bucket's: every row of a bucket has the
// same. Rows of savepoints are short (a 15-byte key and an 8-byte value
// are typical), so the record takes 25 bytes where fixed-width lengths and
// the operator would take 39, and the temporary file is a third smaller.
func appendRecord(b []byte, key, value []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = binary.AppendUvarint(b, uint64(len(value)))
	b = append(b, key...)
	return append(b, value...)
}

// recordSize is the length of the record of a row.
func recordSize(key, value []byte) int {
	return uvarintLen(len(key)) + uvarintLen(len(value)) + len(key) + len(value)
}

// uvarintLen is the length of the uvarint of n.
func uvarintLen(n int) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
}

// nextRecord returns the row (of operator op) of the record at the start of
// b and the record's length.
func nextRecord(b []byte, op uint64) (Row, int) {
	ks, ke, ve := recordBounds(b)
	return Row{Op: op, Key: b[ks:ke:ke], Value: b[ke:ve:ve]}, ve
}

// recordBounds returns where the key of the record at the start of b
// starts and ends, and where its value ends. (Bounds, not a Row: the
// sort of a bucket made a Row of each record and copied it through the
// stack, which stalled the loads after it: sortBucket took 131 ms of the
// CPU of a drop of 10M rows in clink's order, 31 ms without.)
func recordBounds(b []byte) (ks, ke, ve int) {
	k, n1 := binary.Uvarint(b)
	v, n2 := binary.Uvarint(b[n1:])
	ks = n1 + n2
	ke = ks + int(k)
	return ks, ke, ke + int(v)
}

// chunkWriter appends chunks of records to the spill file. The parts of
// the first pass append at once: a chunk is copied to a buffer under the
// lock, and a full buffer is written at its offset (pwrite) once the lock
// is let go, so that one part's write does not hold up the other's appends
// (each 1 MiB write through a bufio.Writer held the lock: 50-260 ms of
// waiting in the first pass over 10M rows).
type chunkWriter struct {
	f      *os.File
	dir    string // where f is (SpillOptions.Dir)
	mu     sync.Mutex
	pend   []byte // chunks not written yet: the file's bytes from at
	at     int64
	size   int64
	spare  [][]byte       // buffers written, to fill again
	writes sync.WaitGroup // writes of full buffers under way
	err    error
	buf    []byte // for reading chunks back
}

// chunkBufSize is the size of chunkWriter's buffers.
const chunkBufSize = 1 << 20

type chunk struct {
	off int64
	n   int
}

func (c *chunkWriter) write(b []byte) (chunk, error) {
	c.mu.Lock()
	if c.err != nil {
		defer c.mu.Unlock()
		return chunk{}, c.err
	}
	ch := chunk{c.size, len(b)}
	c.size += int64(len(b))
	var full []byte
	var fullAt int64
	if len(c.pend) > 0 && len(c.pend)+len(b) > chunkBufSize {
		full, fullAt = c.pend, c.at
		c.pend = c.takeSpare()
		c.writes.Add(1)
	}
	if len(c.pend) == 0 {
		c.at = ch.off
	}
	c.pend = append(c.pend, b...)
	c.mu.Unlock()
	if full != nil {
		c.writeFull(full, fullAt)
	}
	return ch, nil
}

// takeSpare returns an empty buffer (c.mu held).
func (c *chunkWriter) takeSpare() []byte {
	if n := len(c.spare); n > 0 {
		b := c.spare[n-1]
		c.spare = c.spare[:n-1]
		return b[:0]
	}
	return make([]byte, 0, chunkBufSize)
}

// tempDir is the directory temporary files go to when dir is where they
// were asked for ("": the system's, where os.CreateTemp would make them).
func tempDir(dir string) string {
	if dir == "" {
		return os.TempDir()
	}
	return dir
}

// spillWriteError is the error of a failed write to the sort's temporary
// file in dir (see tempDirHint).
func spillWriteError(err error, dir string) error {
	return fmt.Errorf("write the sort's temporary file in %s: %w%s", tempDir(dir), err, tempDirHint(err, "up to twice the bytes of the rows sorted"))
}

// spillCreateError is the error of a failed creation of the sort's
// temporary file in dir (see tempDirHint).
func spillCreateError(err error, dir string) error {
	return fmt.Errorf("create the sort's temporary file in %s: %w%s", tempDir(dir), err, tempDirHint(err, "up to twice the bytes of the rows sorted"))
}

// tempDirHint is what an error of a temporary file (the sort's, or the one
// a payload is decompressed into; its error names the directory, the
// default one or the one --temp-dir gave) adds about how to put it
// elsewhere: a full disk, a quota used up or a file size limit reached
// (the file system's, or the process's) says what the file needs; a
// directory that cannot be written says to name another.
func tempDirHint(err error, needs string) string {
	switch {
	case errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG):
		return " (it needs " + needs + " there: --temp-dir names a directory on a file system with room)"
	case errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS):
		return " (--temp-dir names a directory sptool can write)"
	}
	return ""
}

// writeFull writes buffer b at offset at, outside the lock.
func (c *chunkWriter) writeFull(b []byte, at int64) {
	defer c.writes.Done()
	_, err := c.f.WriteAt(b, at)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil && c.err == nil {
		c.err = spillWriteError(err, c.dir)
	}
	c.spare = append(c.spare, b)
}

// flush writes the buffered chunks to the file, once the writes under way
// are done (no chunk is written meanwhile).
func (c *chunkWriter) flush() error {
	c.writes.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil && len(c.pend) > 0 {
		if _, err := c.f.WriteAt(c.pend, c.at); err != nil {
			c.err = spillWriteError(err, c.dir)
		}
		c.pend = c.pend[:0]
	}
	return c.err
}

// read returns the bytes of ch (valid until the next read).
func (c *chunkWriter) read(ch chunk) ([]byte, error) {
	if err := c.flush(); err != nil {
		return nil, err
	}
	c.buf = slices.Grow(c.buf[:0], ch.n)[:ch.n]
	if err := c.readInto(c.buf, ch); err != nil {
		return nil, err
	}
	return c.buf, nil
}

// readInto reads the bytes of ch, already flushed, into dst (len ch.n). It
// is safe for concurrent use: the sorting goroutines read with it.
func (c *chunkWriter) readInto(dst []byte, ch chunk) error {
	if _, err := c.f.ReadAt(dst, ch.off); err != nil {
		return fmt.Errorf("read the sort's temporary file: %w", err)
	}
	return nil
}

// bucket holds the records of rows that share an operator and, at a
// partition's depth d, their first d key bytes and the next one (or that
// are d bytes long: all the same key then).
type bucket struct {
	op     uint64
	id     int32   // its index in partition.buckets
	chunks []chunk // flushed records, in order
	tail   []byte  // records not flushed yet, after the chunks
	size   int64   // bytes of records in all
	rows   int
}

// records calls fn with the bucket's records in order, a chunk at a time.
func (b *bucket) records(c *chunkWriter, fn func(recs []byte) error) error {
	for _, ch := range b.chunks {
		recs, err := c.read(ch)
		if err != nil {
			return err
		}
		if err := fn(recs); err != nil {
			return err
		}
	}
	return fn(b.tail)
}

// eachRow calls fn with each row of the bucket in order.
func (b *bucket) eachRow(c *chunkWriter, fn func(Row) error) error {
	return b.records(c, func(recs []byte) error {
		for len(recs) > 0 {
			r, n := nextRecord(recs, b.op)
			if err := fn(r); err != nil {
				return err
			}
			recs = recs[n:]
		}
		return nil
	})
}

// partition routes rows to buckets by operator and the key byte at depth
// (index 0: keys depth bytes long; 1+b: key byte b).
//
// Rows are routed a block at a time. Appending each row's record to its
// bucket at once writes to as many places as there are buckets (640 for 5
// operators over 128 key groups), more than the CPU's cache holds the
// ends of: nearly every append missed it, and the first pass over 1M rows
// in clink's order spent half its time waiting on those writes. A block
// instead gathers the records of a few thousand rows in stream order
// (block.add), then groups them by bucket in a buffer that stays in the
// cache, and appends each bucket's group to it at once (flush): the same
// records, in the same order within each bucket.
type partition struct {
	c      *chunkWriter
	depth  int
	budget int
	ops    map[uint64]*[257]*bucket
	lastOp uint64
	last   *[257]*bucket
	// recent: the tables of the first operators seen, looked through
	// before ops: in hash-map order the operator changes at most rows,
	// and the map's lookups took 74 ms of the CPU of a drop of 10M rows.
	recent  [8]opTable
	nrecent int
	n       int       // buckets
	buckets []*bucket // by bucket.id
	blk     block
	tails   int // the capacity of the buckets' buffers (bucket.tail), in all
}

// block is a partition's rows routed but not yet appended to their
// buckets.
type block struct {
	recs    []byte  // the rows' records, in stream order
	ends    []int32 // where each record ends in recs
	ids     []int32 // the bucket of each
	touched []int32 // the buckets of the block's rows, each once
	// per bucket (by id): bytes and rows in the block, and where its
	// group starts in grouped.
	size, rows, at []int32
	grouped        []byte
}

// blockBytes is how many bytes of records a block gathers before it is
// flushed: with the grouped copy, about 0.6 MiB a part of the first pass,
// within a core's cache (with 8 bytes a row to find the records). Its
// groups are then about 400 bytes for 640 buckets: 64 KiB blocks (groups
// of 100 bytes) spared a tenth of the pass over 1M rows, 256 KiB blocks a
// fifth (BenchmarkPartition). A variable so tests can make blocks small.
var blockBytes = 256 << 10

func newPartition(c *chunkWriter, depth, budget int) *partition {
	return &partition{c: c, depth: depth, budget: budget, ops: map[uint64]*[257]*bucket{}}
}

// chunkLimit is how many bytes a bucket buffers before flushing: the
// budget shared by the buckets, between 4 KiB and 1 MiB.
func (p *partition) chunkLimit() int {
	return max(4<<10, min(1<<20, p.budget/max(1, p.n)))
}

// add adds the row of operator op, key key and value value. (Its parts,
// not a Row: addRange's rows, made by Batch.Row and copied into one
// through the stack, stalled the loads after them: addRange took 193 ms
// of the CPU of a drop of 10M rows in clink's order, 38 ms without.)
func (p *partition) add(op uint64, key, value []byte) error {
	t := p.last
	if t == nil || op != p.lastOp {
		t = p.table(op)
		p.last, p.lastOp = t, op
	}
	k := 0
	if len(key) > p.depth {
		k = 1 + int(key[p.depth])
	}
	b := t[k]
	if b == nil {
		b = &bucket{op: op, id: int32(len(p.buckets))}
		t[k] = b
		p.n++
		p.buckets = append(p.buckets, b)
		p.blk.size = append(p.blk.size, 0)
		p.blk.rows = append(p.blk.rows, 0)
		p.blk.at = append(p.blk.at, 0)
	}
	rec := recordSize(key, value)
	if rec > blockBytes/4 {
		// A long row goes on its own, after the rows before it.
		if err := p.flush(); err != nil {
			return err
		}
		return p.appendRecords(b, appendRecord(nil, key, value), 1)
	}
	if len(p.blk.recs)+rec > blockBytes {
		if err := p.flush(); err != nil {
			return err
		}
	}
	p.blk.add(b.id, key, value, rec)
	return nil
}

// opTable is an operator's table of buckets.
type opTable struct {
	op uint64
	t  *[257]*bucket
}

// table returns operator op's table of buckets, made if it is new.
func (p *partition) table(op uint64) *[257]*bucket {
	for _, r := range p.recent[:p.nrecent] {
		if r.op == op {
			return r.t
		}
	}
	t := p.ops[op]
	if t == nil {
		t = new([257]*bucket)
		p.ops[op] = t
		if p.nrecent < len(p.recent) {
			p.recent[p.nrecent] = opTable{op, t}
			p.nrecent++
		}
	}
	return t
}

// blockBufs holds the buffers of finished partitions' blocks (*blockBuf)
// for the next partition: a bucket larger than the budget is split again,
// level after level, each a partition of its own, and each made its
// block's buffers afresh.
var blockBufs sync.Pool

// blockBuf is the buffers of a block.
type blockBuf struct {
	recs, grouped []byte
	ends, ids     []int32
}

// add gathers the record of a row's key and value (rec bytes) for bucket
// id.
func (k *block) add(id int32, key, value []byte, rec int) {
	if k.recs == nil {
		if b, ok := blockBufs.Get().(*blockBuf); ok {
			k.recs, k.grouped, k.ends, k.ids = b.recs[:0], b.grouped, b.ends[:0], b.ids[:0]
		}
	}
	k.recs = appendRecord(k.recs, key, value)
	k.ends = append(k.ends, int32(len(k.recs)))
	k.ids = append(k.ids, id)
	if k.rows[id] == 0 {
		k.touched = append(k.touched, id)
	}
	k.size[id] += int32(rec)
	k.rows[id]++
}

// flush appends the block's records to their buckets, each bucket's at
// once and in stream order, and empties the block.
func (p *partition) flush() error {
	k := &p.blk
	if len(k.ids) == 0 {
		return nil
	}
	if cap(k.grouped) < len(k.recs) {
		k.grouped = make([]byte, len(k.recs))
	}
	k.grouped = k.grouped[:cap(k.grouped)]
	at := int32(0)
	for _, id := range k.touched {
		k.at[id] = at
		at += k.size[id]
	}
	// Each bucket's start moves on record by record: it ends at the end
	// of the bucket's group.
	start := int32(0)
	for j, id := range k.ids {
		end := k.ends[j]
		k.at[id] += int32(copy(k.grouped[k.at[id]:], k.recs[start:end]))
		start = end
	}
	var err error
	for _, id := range k.touched {
		to := k.at[id]
		from := to - k.size[id]
		if err == nil {
			err = p.appendRecords(p.buckets[id], k.grouped[from:to], int(k.rows[id]))
		}
		k.size[id], k.rows[id] = 0, 0
	}
	k.recs, k.ends, k.ids, k.touched = k.recs[:0], k.ends[:0], k.ids[:0], k.touched[:0]
	return err
}

// finish appends what the block holds to the buckets and lets its buffers
// go: the partition takes no more rows.
func (p *partition) finish() error {
	err := p.flush()
	k := &p.blk
	if k.recs != nil {
		blockBufs.Put(&blockBuf{recs: k.recs, grouped: k.grouped, ends: k.ends, ids: k.ids})
	}
	*k = block{size: k.size, rows: k.rows, at: k.at}
	return err
}

// appendRecords appends records (of rows rows) to bucket b, and flushes
// its buffered records to the file as a chunk when they reach the
// partition's chunk limit.
func (p *partition) appendRecords(b *bucket, recs []byte, rows int) error {
	limit := p.chunkLimit()
	if len(b.tail) > 0 && len(b.tail)+len(recs) > limit {
		if err := p.writeTail(b, limit); err != nil {
			return err
		}
	}
	b.size += int64(len(recs))
	b.rows += rows
	if len(recs) >= limit {
		// A group (or a long row) as large as the limit is a chunk of its
		// own, not copied to the bucket's buffer first, which would grow
		// for it and be dropped after (see writeTail).
		ch, err := p.c.write(recs)
		if err != nil {
			return err
		}
		b.chunks = append(b.chunks, ch)
		return nil
	}
	held := cap(b.tail)
	if b.tail == nil && p.tails+limit <= p.budget {
		// Filled to the limit before it is written: one array, where
		// growing it from 64 bytes allocated and copied twice as much.
		// Only while the buffers so allocated fit the budget together: a
		// bucket's limit is set when it gets its first rows, and the
		// first buckets of many get a larger one than the later (5,120
		// buckets that each got a row or two held 113 MB of buffers
		// allocated at their limits). A buffer beyond grows with its
		// records.
		b.tail = make([]byte, 0, limit)
	}
	b.tail = append(prefault.Grow(b.tail, len(recs)), recs...)
	p.tails += cap(b.tail) - held
	return nil
}

// writeTail writes b's buffered records to the file as a chunk.
func (p *partition) writeTail(b *bucket, limit int) error {
	ch, err := p.c.write(b.tail)
	if err != nil {
		return err
	}
	b.chunks = append(b.chunks, ch)
	b.tail = b.tail[:0]
	if cap(b.tail) > 2*limit {
		p.tails -= cap(b.tail)
		b.tail = nil // grown while the limit was higher (it falls as buckets come)
	}
	return nil
}

// spillPartRows is the fewest rows a part of the first pass gets (a
// variable so tests can lower it).
var spillPartRows = 1 << 18

// spillReleaseRows: the first pass calls SpillOptions.Release, and asks
// SpillOptions.Stop, every this many rows of a part (a variable so tests
// can lower it).
var spillReleaseRows = 1 << 18

// partitionAll routes every row of src to buckets by operator and first key
// byte. Parts of the rows are routed at once, one per CPU, each to buckets
// of its own; the buckets of the parts are then joined in the parts' order,
// so each bucket still holds its rows in stream order. opts gives its
// Release and Stop.
func partitionAll(c *chunkWriter, src ColumnSource, budget int, opts *SpillOptions) (*partition, error) {
	n := src.Len()
	parts := max(1, min(runtime.GOMAXPROCS(0), n/spillPartRows))
	ps := make([]*partition, parts)
	errs := make([]error, parts)
	var faults Faults // the parts read the source, maybe a memory map
	for i := range ps {
		ps[i] = newPartition(c, 0, budget/parts)
		faults.Go(func() { errs[i] = ps[i].addRange(src, i*n/parts, (i+1)*n/parts, opts) })
	}
	faults.Wait()
	if opts.Release != nil {
		opts.Release() // the rows read since each part's last release
	}
	// The parts write through one chunkWriter, whose error is sticky: a
	// full disk fails every part with the same error, said once.
	if err := cmp.Or(errs...); err != nil {
		return nil, err
	}
	if parts == 1 {
		return ps[0], nil
	}
	// top only gathers the parts' buckets: no row is added to it (its
	// buckets have no ids, and its block no room for them).
	top := newPartition(c, 0, budget)
	for _, p := range ps {
		for op, t := range p.ops {
			into := top.ops[op]
			if into == nil {
				into = new([257]*bucket)
				top.ops[op] = into
			}
			for k, b := range t {
				if b == nil {
					continue
				}
				if len(b.tail) > 0 {
					ch, err := c.write(b.tail)
					if err != nil {
						return nil, err
					}
					b.chunks, b.tail = append(b.chunks, ch), nil
				}
				if into[k] == nil {
					into[k] = &bucket{op: op}
				}
				m := into[k]
				m.chunks = append(m.chunks, b.chunks...)
				m.size += b.size
				m.rows += b.rows
			}
		}
	}
	return top, nil
}

// addRange routes rows [lo, hi) of src, in order, calling opts.Release
// and asking opts.Stop every spillReleaseRows rows (or opts.ReleaseRows,
// when fewer).
func (p *partition) addRange(src ColumnSource, lo, hi int, opts *SpillOptions) error {
	runs, _ := src.(RunSource)
	every := spillReleaseRows
	if opts.ReleaseRows > 0 {
		every = min(every, opts.ReleaseRows)
	}
	pace := NewPacer(lo, every)
	for i := lo; i < hi; {
		if pace.Due(i) {
			if opts.Release != nil {
				opts.Release()
			}
			if opts.stopped() {
				return context.Canceled
			}
		}
		if opts.Only != nil {
			// (Row by row: the rows chosen are rarely whole runs.)
			if op, key := src.Op(i), src.Key(i); opts.Only(op, key) {
				if err := p.add(op, key, src.Value(i)); err != nil {
					return err
				}
			}
			i++
			continue
		}
		if runs != nil {
			if b, blo, m, ok := runs.Run(i); ok {
				// A run can be every row (rules that keep them all): it
				// stops at the next release, or the pages it read would
				// all stay resident, and Stop would not be asked.
				m = min(m, hi-i, pace.Next()-i)
				for j := blo; j < blo+m; j++ {
					if err := p.add(b.Ops[j], b.Key(j), b.Value(j)); err != nil {
						return err
					}
				}
				i += m
				continue
			}
		}
		if err := p.add(src.Op(i), src.Key(i), src.Value(i)); err != nil {
			return err
		}
		i++
	}
	return p.finish()
}

// spillSorter takes buckets in canonical order to the output.
type spillSorter struct {
	chunks  *chunkWriter
	out     *colWriter
	budget  int
	dropped func(Row)
	keep    bool        // SpillOptions.KeepDuplicates
	stop    func() bool // SpillOptions.stopped
	sets    []*sortSet  // buffers of the buckets being sorted, reused
}

// sortSet is a bucket read back and sorted: its records, their offsets,
// the order of the survivors and the rows that lost to a duplicate.
type sortSet struct {
	op          uint64
	buf         []byte
	at          []uint32 // three offsets a row (see recordView)
	order, lost []uint32
	sort        sortScratch // the buffers order is sorted in
	// sorted: the rows of order as columns, when sortBucket gathered them
	// (gathered), so that emit, which runs one bucket at a time, need
	// only append them.
	sorted   colBuf
	gathered bool
	err      error
	done     chan struct{}
}

// What drain does with a bucket.
const (
	bucketSort  = iota // read it back and sort it in memory
	bucketFold         // every key is the same: keep the survivor
	bucketSplit        // larger than the budget: partition it again
)

type drainItem struct {
	b    *bucket
	what int
	set  *sortSet // when its sort has started
}

// drain sorts the buckets of p, in order, to the output. Buckets to sort in
// memory are read back and sorted by goroutines up to the number of CPUs
// ahead of the one being written out; a bucket that is split is drained
// with nothing in flight, so the buffers of each level are its own.
func (s *spillSorter) drain(p *partition) error {
	if err := s.chunks.flush(); err != nil {
		return err
	}
	ops := make([]uint64, 0, len(p.ops))
	for op := range p.ops {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	var items []drainItem
	for _, op := range ops {
		for k, b := range p.ops[op] {
			switch {
			case b == nil:
			case k == 0:
				items = append(items, drainItem{b: b, what: bucketFold}) // every key is the same
			case b.size > int64(s.budget):
				items = append(items, drainItem{b: b, what: bucketSplit})
			default:
				items = append(items, drainItem{b: b, what: bucketSort})
			}
		}
	}
	p.ops = nil
	ahead := max(1, runtime.GOMAXPROCS(0))
	if len(s.sets) < ahead+1 {
		s.sets = make([]*sortSet, ahead+1)
		for i := range s.sets {
			s.sets[i], _ = sortSets.Get().(*sortSet)
			if s.sets[i] == nil {
				s.sets[i] = &sortSet{}
			}
		}
	}
	// Items [i, started) have been looked at; those sorted in memory have
	// a goroutine. None starts past a bucket that is folded or split
	// before that bucket is done.
	started := 0
	var err error
	for i := range items {
		if err == nil && s.stop() {
			err = context.Canceled // the sorts started are still waited for
		}
		for ; started < len(items) && started <= i+ahead && err == nil; started++ {
			if started > i && items[started-1].what != bucketSort {
				break
			}
			if items[started].what == bucketSort {
				set := s.sets[started%len(s.sets)]
				set.done = make(chan struct{})
				items[started].set = set
				go s.sortBucket(items[started].b, set)
			}
		}
		it := &items[i]
		switch {
		case it.set != nil:
			<-it.set.done // also after an error: the goroutine uses the set
			if err == nil {
				err = s.emit(it.set)
			}
		case err != nil:
		case it.what == bucketFold:
			err = s.fold(it.b)
		case it.what == bucketSplit:
			err = s.split(it.b, p.depth)
		}
	}
	return err
}

// sortBucket reads bucket b into set and sorts it (in a goroutine of its
// own: it reads only chunks already flushed, with its own buffers).
func (s *spillSorter) sortBucket(b *bucket, set *sortSet) {
	defer close(set.done)
	set.buf, set.at, set.lost, set.err = set.buf[:0], set.at[:0], set.lost[:0], nil
	set.buf = slices.Grow(set.buf, int(b.size))
	set.at = slices.Grow(set.at, 3*b.rows)
	for _, ch := range b.chunks {
		at := len(set.buf)
		set.buf = set.buf[:at+ch.n]
		if set.err = s.chunks.readInto(set.buf[at:], ch); set.err != nil {
			return
		}
	}
	set.buf = append(set.buf, b.tail...)
	for off := 0; off < len(set.buf); {
		ks, ke, n := recordBounds(set.buf[off:])
		set.at = append(set.at, uint32(off+ks), uint32(off+ke), uint32(off+n))
		off += n
	}
	set.op = b.op
	v := recordView{set.buf, set.at, b.op}
	at := func(i int) (uint64, []byte) { return b.op, v.Key(i) }
	lost := func(pos uint32) { set.lost = append(set.lost, pos) }
	switch {
	case v.Len() > sortGroupRows && s.keep: // sorted in groups, in buffers of their own
		set.order = SortOrder(v.Len(), at)
	case v.Len() > sortGroupRows:
		set.order = CanonicalPositions(v, lost, nil)
	case s.keep:
		set.order, _ = set.sort.sortOrder(v.Len(), at, false)
	default:
		set.order = canonicalPositions(v, lost, &set.sort)
	}
	set.sorted.reset()
	if set.gathered = len(set.buf) <= s.budget/gatherShare; set.gathered {
		set.sorted.gather(v, set.order)
	}
}

// gatherShare: sortBucket gathers the sorted rows of a bucket of at most
// budget/gatherShare bytes, so that the sets in flight hold at most about
// that much more each. Buckets are much smaller as a rule (the 10M-row
// file of the benchmarks: 640 buckets of 350-400 KB; the budget is 16 MiB).
const gatherShare = 4

// emit writes a sorted bucket to the output and reports its losers.
func (s *spillSorter) emit(set *sortSet) error {
	if set.err != nil {
		return set.err
	}
	v := recordView{set.buf, set.at, set.op}
	if s.dropped != nil {
		for _, pos := range set.lost {
			s.dropped(v.Row(int(pos)))
		}
	}
	if set.gathered {
		s.out.addAll(&set.sorted)
		return s.out.err
	}
	for _, pos := range set.order {
		s.out.add(v.Row(int(pos)))
	}
	return s.out.err
}

// fold resolves a bucket of rows that all have the same operator and key
// to its surviving row, pairwise in stream order as CanonicalPositions
// does, holding one row at a time (with keep, writes them all).
func (s *spillSorter) fold(b *bucket) error {
	if s.keep { // every row, in stream order
		return b.eachRow(s.chunks, func(r Row) error {
			s.out.add(r)
			return s.out.err
		})
	}
	var held []byte // the surviving row so far, as a record
	err := b.eachRow(s.chunks, func(r Row) error {
		if held == nil {
			held = appendRecord(nil, r.Key, r.Value)
			return nil
		}
		h, _ := nextRecord(held, b.op)
		if IncomingWins(h, r) {
			if s.dropped != nil {
				s.dropped(h)
			}
			held = appendRecord(held[:0], r.Key, r.Value)
		} else if s.dropped != nil {
			s.dropped(r)
		}
		return nil
	})
	if err != nil || held == nil {
		return err
	}
	h, _ := nextRecord(held, b.op)
	s.out.add(h)
	return s.out.err
}

// split partitions a bucket larger than the budget on the first key byte
// where its keys differ (past depth, which they all share) and drains the
// parts. Each part is smaller: at that byte at least two differ.
func (s *spillSorter) split(b *bucket, depth int) error {
	var first []byte
	common := -1
	err := b.eachRow(s.chunks, func(r Row) error {
		if common < 0 {
			first = bytes.Clone(r.Key)
			common = len(first)
			return nil
		}
		n := min(common, len(r.Key))
		i := depth
		for i < n && first[i] == r.Key[i] {
			i++
		}
		common = i
		return nil
	})
	if err != nil {
		return err
	}
	p := newPartition(s.chunks, common, s.budget)
	if err := b.eachRow(s.chunks, func(r Row) error { return p.add(r.Op, r.Key, r.Value) }); err != nil {
		return err
	}
	if err := p.finish(); err != nil {
		return err
	}
	return s.drain(p)
}

// recordView is the ColumnSource of a bucket read back: its records, where
// each one's key starts and ends and its value ends (three offsets a row,
// read once, so that the sort's comparisons decode no lengths), and its
// operator.
type recordView struct {
	buf []byte
	at  []uint32
	op  uint64
}

func (v recordView) Len() int { return len(v.at) / 3 }

func (v recordView) Row(i int) Row {
	ks, ke, ve := v.at[3*i], v.at[3*i+1], v.at[3*i+2]
	return Row{Op: v.op, Key: v.buf[ks:ke:ke], Value: v.buf[ke:ve:ve]}
}

func (v recordView) Op(int) uint64 { return v.op }

func (v recordView) Key(i int) []byte {
	ks, ke := v.at[3*i], v.at[3*i+1]
	return v.buf[ks:ke:ke]
}

func (v recordView) Value(i int) []byte { return v.Row(i).Value }

// colWriter appends sorted rows to a temporary file as record batches of
// about limit bytes: each column of a batch in turn, in native byte order,
// 8-byte aligned, to be mapped as a Batch.
type colWriter struct {
	f     *os.File
	dir   string // where f is
	limit int
	colBuf
	err error
	// A full buffer is written by a goroutine of its own while the next
	// fills (the drain's writes to the sorted file took a third of its time
	// on the goroutine that appends the sorted buckets); spare is the
	// buffer written last, to fill next. pending is closed when the write
	// under way ends; until then, size, batches and werr are its own.
	spare   colBuf
	pending chan struct{}
	size    int64
	batches []colBatch
	werr    error
}

// colBuf holds rows as the columns of a batch: operators, key offsets
// (from 0), keys, value offsets and values.
type colBuf struct {
	ops   []uint64
	koffs []int32
	keys  []byte
	voffs []int32
	vals  []byte
}

// start gives an empty c the first offsets of its columns.
func (c *colBuf) start() {
	if len(c.koffs) == 0 {
		c.koffs = append(c.koffs, 0)
		c.voffs = append(c.voffs, 0)
	}
}

// add appends r.
func (c *colBuf) add(r Row) {
	c.start()
	c.ops = append(prefault.Grow(c.ops, 1), r.Op)
	c.keys = append(prefault.Grow(c.keys, len(r.Key)), r.Key...)
	c.koffs = append(prefault.Grow(c.koffs, 1), int32(len(c.keys)))
	c.vals = append(prefault.Grow(c.vals, len(r.Value)), r.Value...)
	c.voffs = append(prefault.Grow(c.voffs, 1), int32(len(c.vals)))
}

// appendAll appends the rows of d, whose columns are not too long to
// join c's.
func (c *colBuf) appendAll(d *colBuf) {
	c.start()
	c.ops = append(prefault.Grow(c.ops, len(d.ops)), d.ops...)
	for _, o := range [2]struct {
		offs *[]int32
		add  []int32
		base int32
	}{{&c.koffs, d.koffs, int32(len(c.keys))}, {&c.voffs, d.voffs, int32(len(c.vals))}} {
		at := len(*o.offs)
		*o.offs = prefault.Grow(*o.offs, len(o.add)-1)[:at+len(o.add)-1]
		for j, v := range o.add[1:] {
			(*o.offs)[at+j] = o.base + v
		}
	}
	c.keys = append(prefault.Grow(c.keys, len(d.keys)), d.keys...)
	c.vals = append(prefault.Grow(c.vals, len(d.vals)), d.vals...)
}

// gather appends the rows of v at positions order, in that order: the
// columns grown once for all of them (at most v's bytes each), then each
// row's key and value copied, without add's checks a row (a sorted
// bucket's rows, 640 buckets of 14K rows for 10M rows).
func (c *colBuf) gather(v recordView, order []uint32) {
	c.start()
	n := len(order)
	at := len(c.ops)
	c.ops = prefault.Grow(c.ops, n)[:at+n]
	for j := range c.ops[at:] {
		c.ops[at+j] = v.op
	}
	keys, vals := prefault.Grow(c.keys, len(v.buf)), prefault.Grow(c.vals, len(v.buf))
	koffs, voffs := prefault.Grow(c.koffs, n), prefault.Grow(c.voffs, n)
	for _, pos := range order {
		b := v.at[3*pos : 3*pos+3 : 3*pos+3]
		ks, ke, ve := int(b[0]), int(b[1]), int(b[2])
		kn, vn := len(keys), len(vals)
		if ke-ks <= 16 && ve-ke <= 16 && ks+32 <= len(v.buf) && kn+16 <= cap(keys) && vn+16 <= cap(vals) {
			// A short key and value (a key group, a slot and an int64
			// key; an 8-byte value) are copied as two words each, past
			// their ends into the room the columns have: a call of
			// memmove for each cost more than the copy.
			putWords(keys[kn:kn+16], v.buf, ks)
			putWords(vals[vn:vn+16], v.buf, ke)
			keys, vals = keys[:kn+ke-ks], vals[:vn+ve-ke]
		} else {
			keys = append(keys, v.buf[ks:ke]...)
			vals = append(vals, v.buf[ke:ve]...)
		}
		koffs = append(koffs, int32(len(keys)))
		voffs = append(voffs, int32(len(vals)))
	}
	c.keys, c.vals, c.koffs, c.voffs = keys, vals, koffs, voffs
}

// putWords copies the 16 bytes of src from s to dst (16 bytes long) as two
// words.
func putWords(dst, src []byte, s int) {
	binary.LittleEndian.PutUint64(dst[:8], unaligned.LE64(src, s))
	binary.LittleEndian.PutUint64(dst[8:16], unaligned.LE64(src, s+8))
}

// row returns row i.
func (c *colBuf) row(i int) Row {
	return Row{Op: c.ops[i], Key: c.keys[c.koffs[i]:c.koffs[i+1]], Value: c.vals[c.voffs[i]:c.voffs[i+1]]}
}

// bytes is the size of the columns, as colWriter counts it against its
// limit.
func (c *colBuf) bytes() int { return len(c.keys) + len(c.vals) + 16*len(c.ops) }

// reset empties c, keeping its memory.
func (c *colBuf) reset() {
	c.ops, c.koffs, c.keys, c.voffs, c.vals = c.ops[:0], c.koffs[:0], c.keys[:0], c.voffs[:0], c.vals[:0]
}

// colBatch is where a batch's columns lie in the file.
type colBatch struct {
	rows                       int
	ops, koffs, keys, voffs, v int64
	klen, vlen                 int
}

// newColWriter returns a colWriter to a new temporary file in dir (what
// names it, where it must have a name), with two buffers of half the
// budget: one fills while the other is written.
func newColWriter(dir, what string, budget int) (*colWriter, error) {
	f, err := createTempFile(dir, what)
	if err != nil {
		return nil, spillCreateError(err, dir)
	}
	w := &colWriter{f: f, dir: dir, limit: max(1, budget/2)}
	for _, cb := range []*colBuf{&w.colBuf, &w.spare} {
		if c, ok := colBufs.Get().(*colBuf); ok {
			*cb = *c
		}
	}
	return w, nil
}

// abort waits for the write under way and closes the file, for a writer
// that will not finish.
func (w *colWriter) abort() {
	w.wait()
	w.f.Close()
}

// add appends r.
func (w *colWriter) add(r Row) {
	if w.err != nil {
		return
	}
	w.flushFor(len(r.Key), len(r.Value))
	w.colBuf.add(r)
}

// flushFor flushes the rows buffered when they fill a batch, or when keys
// and values of klen and vlen bytes more would pass the column limit.
func (w *colWriter) flushFor(klen, vlen int) {
	if len(w.ops) > 0 && (w.colBuf.bytes() >= w.limit ||
		int64(len(w.keys)+klen) > maxColumnBytes || int64(len(w.vals)+vlen) > maxColumnBytes) {
		w.flush()
	}
}

// addAll appends the rows of c, at once when their columns fit in a batch.
func (w *colWriter) addAll(c *colBuf) {
	if w.err != nil || len(c.ops) == 0 {
		return
	}
	if int64(len(c.keys)) > maxColumnBytes || int64(len(c.vals)) > maxColumnBytes {
		for i := range c.ops {
			w.add(c.row(i))
		}
		return
	}
	w.flushFor(len(c.keys), len(c.vals))
	w.colBuf.appendAll(c)
}

// put writes b 8-byte aligned and returns its offset.
func (w *colWriter) put(b []byte) int64 {
	at := w.size
	if w.werr == nil {
		_, w.werr = w.f.Write(b)
	}
	var zeros [8]byte
	pad := pad8(int64(len(b))) - int64(len(b))
	if w.werr == nil && pad > 0 {
		_, w.werr = w.f.Write(zeros[:pad])
	}
	w.size += int64(len(b)) + pad
	return at
}

// bytesOf returns the memory of s as bytes (in the machine's byte order).
func bytesOf[T uint64 | uint32 | int32](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// wordsOf is bytesOf the other way: the memory of b as whole words, which
// b must be aligned for (the pool's buffers are).
func wordsOf[T uint64 | uint32 | int32](b []byte) []T {
	var w T
	if len(b) < int(unsafe.Sizeof(w)) {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/int(unsafe.Sizeof(w)))
}

func (w *colWriter) flush() {
	if len(w.ops) == 0 {
		return
	}
	w.wait()
	full := w.colBuf
	w.colBuf, w.spare = w.spare, colBuf{}
	w.reset()
	done := make(chan struct{})
	w.pending = done
	go func() {
		defer close(done)
		w.write(&full)
		full.reset()
		w.spare = full
	}()
}

// wait waits for the write under way, if any, and takes its error.
func (w *colWriter) wait() {
	if w.pending == nil {
		return
	}
	<-w.pending
	w.pending = nil
	if w.werr != nil && w.err == nil {
		w.err = spillWriteError(w.werr, w.dir)
	}
}

// write writes the rows of c as a batch.
func (w *colWriter) write(c *colBuf) {
	cb := colBatch{rows: len(c.ops), klen: len(c.keys), vlen: len(c.vals)}
	cb.ops = w.put(bytesOf(c.ops))
	cb.koffs = w.put(bytesOf(c.koffs))
	cb.keys = w.put(c.keys)
	cb.voffs = w.put(bytesOf(c.voffs))
	cb.v = w.put(c.vals)
	w.batches = append(w.batches, cb)
}

// finish writes what is buffered and maps the file as batches.
func (w *colWriter) finish() (*Spilled, error) {
	w.flush()
	w.wait()
	if w.err != nil {
		return nil, w.err
	}
	for _, c := range [2]colBuf{w.colBuf, w.spare} { // flushed: empty
		colBufs.Put(&c)
	}
	w.colBuf, w.spare = colBuf{}, colBuf{}
	data, err := mapFile(w.f, w.size)
	if err != nil {
		return nil, fmt.Errorf("map the sort's temporary file: %w", err)
	}
	m := &mappedFile{f: w.f, data: data}
	snap := &Snapshot{Variant: Canonical, Batches: make([]Batch, 0, len(w.batches))}
	for _, cb := range w.batches {
		snap.Batches = append(snap.Batches, Batch{
			Ops:     unsafe.Slice((*uint64)(unsafe.Pointer(&data[cb.ops])), cb.rows),
			KeyOffs: unsafe.Slice((*int32)(unsafe.Pointer(&data[cb.koffs])), cb.rows+1),
			Keys:    data[cb.keys : cb.keys+int64(cb.klen) : cb.keys+int64(cb.klen)],
			ValOffs: unsafe.Slice((*int32)(unsafe.Pointer(&data[cb.voffs])), cb.rows+1),
			Vals:    data[cb.v : cb.v+int64(cb.vlen) : cb.v+int64(cb.vlen)],
			file:    m,
		})
		snap.BatchRows = append(snap.BatchRows, cb.rows)
	}
	return &Spilled{snap: snap, m: m}, nil
}

// File returns a File whose Snapshot is the sorted rows, described as like
// (subtask, paths, sizes, metadata and version map of the file they came
// from), for code that takes a File; ReleasePages on it releases the
// sorted rows' pages.
func (s *Spilled) File(like *File) *File {
	f := *like
	snap := &Snapshot{Variant: s.snap.Variant, BatchRows: s.snap.BatchRows, Batches: s.snap.Batches}
	if like.Snapshot != nil {
		snap.Metadata, snap.Versions = like.Snapshot.Metadata, like.Snapshot.Versions
	}
	f.Snapshot = snap
	f.mapping, f.mapped = s.m.data, s.m
	return &f
}

// InOrder returns a view of sp in which each file of minRows rows or more
// that is not strictly in canonical order is replaced by a sorted copy in
// a temporary file in dir (SortSpilled, which resolves duplicates as
// Logical does; with keep, a file merely not sorted is, and its duplicates
// are all kept, in stream order, for StoredSeq), the number of rows those
// sorts dropped as duplicates (stored rows the view's union no longer
// sees), and a function that removes the copies. The union of the view (UnionSeq) then reads each
// file in order, a block at a time, instead of sorting an index of it and
// gathering its rows from all over its map. Without such files it returns
// sp itself. A file of fewer than InPlaceRows rows whose sort fails (no
// temporary directory, no room in it) is left in place, to be read as a
// smaller one is. Once ctx is done the sorts stop, and the error is
// ctx's.
func (sp *Savepoint) InOrder(ctx context.Context, dir string, minRows int, keep bool) (*Savepoint, int, func(), error) {
	if err := sp.CheckUsable(); err != nil {
		return nil, 0, func() {}, err
	}
	var copies []*Spilled
	done := func() {
		for _, c := range copies {
			c.Close()
		}
	}
	var files []*File
	dropped := 0
	for i, f := range sp.Files {
		if f.Snapshot == nil || f.Snapshot.NumRows() < minRows {
			continue
		}
		if sorted, strict := f.Snapshot.Order(); strict || keep && sorted {
			continue
		}
		lost := 0
		sorted, err := SortSpilled(f.Snapshot.NewCursor(), SpillOptions{
			Dir:            dir,
			Release:        f.ReleasePages,
			ReleaseRows:    f.ReleaseRows(),
			Dropped:        func(Row) { lost++ },
			KeepDuplicates: keep,
			Stop:           func() bool { return ctx.Err() != nil },
		})
		if err != nil && f.Snapshot.NumRows() < InPlaceRows && !InputFault(err) && !errors.Is(err, context.Canceled) {
			continue // read in place, as it was before there were sorted copies
		}
		if err != nil {
			done()
			return nil, 0, nil, fmt.Errorf("%s: sort the rows: %w", f.Path, err)
		}
		dropped += lost
		copies = append(copies, sorted)
		if files == nil {
			files = slices.Clone(sp.Files)
		}
		files[i] = sorted.File(f)
	}
	if files == nil {
		return sp, 0, done, nil
	}
	v := *sp
	v.Files = files
	return &v, dropped, done, nil
}

// InPlaceRows is the most rows of a file out of order that is read in
// place, through an index sorted in memory (about 36 bytes a row), when
// it cannot be sorted through temporary files.
const InPlaceRows = 1 << 20

// TempDirFor returns the directory temporary files for an output at out
// go to by default: the nearest existing directory above it (the output's
// filesystem, which must have room for it anyway, rather than a /tmp that
// may be memory), or "" (os.TempDir()) when there is none or out is "".
func TempDirFor(out string) string {
	if out == "" {
		return ""
	}
	d := absPath(out)
	for {
		parent := filepath.Dir(d)
		if fi, err := os.Stat(parent); err == nil && fi.IsDir() {
			return parent
		}
		if parent == d {
			return ""
		}
		d = parent
	}
}
