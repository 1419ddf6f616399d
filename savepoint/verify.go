package savepoint

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"runtime"
	"slices"
	"unsafe"

	"github.com/sptool/sptool/internal/unaligned"
)

// Verifying a memory-mapped canonical file in one pass.
//
// Opening a mapped file needs three things of its bytes: the CRC-32C of
// all of them, binary offsets that bound their data, and the order of the
// rows (Snapshot.Order), which every rule, rescale and export asks for.
// Each used to be a pass of its own, and the rules read every key once
// more to find the runs of rows that share an operator and prefix. They
// read a 10M-row file nearly three times over.
//
// verifyMapped reads it once. The rows of each batch are cut into ranges,
// one goroutine each; a range is read as five spans of the file, one per
// buffer (operators, key offsets, keys, value offsets, values), each in
// order through a window of its own, so that the operator, offsets and key
// of a row are in hand together. Each span is checksummed as it is read;
// the bytes no span holds (headers, padding) are read on their own, and
// the spans' CRCs combine into the file's, as the parallel writer's
// pieces do. While it reads, a range checks its offsets, compares each row
// with the one before, and notes where the prefix runs start
// (PrefixRuns), so that the rules need not read the keys to find them.
//
// Anything unexpected (offsets that are not valid, buffers outside the
// map or overlapping, a read that fails) makes it give up: the caller
// then checksums and validates the file the old way, which says exactly
// what is wrong.

// verifyChunk is how many rows a range reads from its operator and offset
// spans at a time (a variable so tests can make it small).
var verifyChunk = 2048

// verifyBlock is how much a span reads at once; its window holds two
// blocks. Small enough that the windows of the ranges read at once (five
// each) touch little fresh memory, large enough that the system calls
// cost little: the 10M-row tree of 4 files opens in 98-113 ms with 64 KiB,
// 121-136 ms with 256 KiB (32 KiB is slower on one file). A variable so
// tests can make it small.
var verifyBlock = 64 << 10

// verifyMinRows is the fewest rows a range of a batch gets.
var verifyMinRows = 1 << 16

// errGiveUp makes verifyMapped leave the file to the old passes.
var errGiveUp = errors.New("verify: give up")

// spanReader reads bytes [at, end) of a file in order through a window,
// checksumming each byte as it is read. The slice next returns is valid
// until the next call, which moves it and returns it again as the slice
// before (a row's key is compared with the key before it).
type spanReader struct {
	fh        *os.File
	ctx       context.Context // when done, fill gives up (nil: never)
	start     int64           // the span's first byte
	at, end   int64           // the next byte to read and the span's end
	buf       []byte
	keep, pos int // buf[keep:pos] was returned last; buf[pos:] is unread
	crc       uint32
	pooled    bool
}

func (s *spanReader) init(fh *os.File, lo, hi int64) {
	*s = spanReader{fh: fh, start: lo, at: lo, end: hi}
	if hi > lo {
		s.buf, s.pooled = sizedBuf(hi-lo, 2*verifyBlock) // (see fill)
	}
}

// free returns the window to the pool.
func (s *spanReader) free() {
	if s.pooled {
		putBuf(s.buf)
	}
	s.buf, s.pooled = nil, false
}

// next returns the next n bytes of the span, and the bytes the call before
// returned (wherever the window moved them).
func (s *spanReader) next(n int) (b, before []byte, err error) {
	if len(s.buf)-s.pos < n {
		if err := s.fill(n); err != nil {
			return nil, nil, err
		}
	}
	before = s.buf[s.keep:s.pos:s.pos]
	b = s.buf[s.pos : s.pos+n : s.pos+n]
	s.keep, s.pos = s.pos, s.pos+n
	return b, before, nil
}

// fill reads on until n unread bytes are in the window, keeping the last
// slice returned.
func (s *spanReader) fill(n int) error {
	kept := copy(s.buf[:cap(s.buf)], s.buf[s.keep:])
	s.buf, s.pos, s.keep = s.buf[:kept], s.pos-s.keep, 0
	if need := s.pos + n; need > cap(s.buf) {
		grown := make([]byte, kept, need+verifyBlock)
		copy(grown, s.buf)
		if s.pooled {
			putBuf(s.buf)
		}
		s.buf, s.pooled = grown, false
	}
	// The window holds at most two blocks, or what n needs: the pooled
	// buffer's other pages are not touched (a fresh page costs more than
	// the read that fills it).
	limit := min(cap(s.buf), max(2*verifyBlock, s.pos+n))
	for len(s.buf)-s.pos < n {
		// A block at a time, so that it is still in the CPU's cache when
		// the CRC and the checks read it.
		want := min(int64(limit-len(s.buf)), s.end-s.at, int64(max(verifyBlock, n)))
		if want <= 0 {
			return errGiveUp // the span ends before the bytes asked for
		}
		if ctxErr(s.ctx) != nil {
			return errGiveUp // the caller's checksum returns the context's error
		}
		l := len(s.buf)
		k, err := readFileAt(s.fh, s.buf[l:l+int(want)], s.at)
		s.crc = crc32.Update(s.crc, castagnoli, s.buf[l:l+k])
		s.buf, s.at = s.buf[:l+k], s.at+int64(k)
		if k < int(want) {
			if err == nil || errors.Is(err, io.EOF) {
				return errGiveUp
			}
			return err
		}
	}
	return nil
}

// finish reads (and checksums) what is left of the span and returns it as
// a piece.
func (s *spanReader) finish() (piece, error) {
	for s.at < s.end {
		s.buf, s.pos, s.keep = s.buf[:0], 0, 0
		if err := s.fill(int(min(s.end-s.at, int64(verifyBlock)))); err != nil {
			return piece{}, err
		}
	}
	return piece{at: s.start, n: s.end - s.start, crc: s.crc}, nil
}

// verifyRange is the work and the outcome of one range of rows of a batch.
type verifyRange struct {
	batch  int
	b      *Batch
	offset int // the batch's first row in the snapshot
	lo, hi int // rows of the batch
	// kLo, kHi and vLo, vHi are the key and value offsets of rows lo and
	// hi, read before the pass.
	kLo, kHi, vLo, vHi int32

	pieces         []piece
	sorted, strict bool
	firstOp        uint64
	firstKey       []byte
	lastOp         uint64
	lastKey        []byte
	runs           PrefixRuns // row numbers are the snapshot's
	tooMany        bool       // more runs than maxRuns, or keys than maxKeys: no index
	maxRuns        int
	maxKeys        int // bytes of the runs' first and last keys
	probe          rangeProbe
	// The stretches of equal lengths and of one operator (see stepCol).
	keySteps, valSteps stepBuilder
	opRuns             opBuilder

	// cur is the prefix run the last row is in; fast is set by row.
	cur struct {
		op      uint64
		slotted bool
		plen    int
	}
	fast bool
}

// verifyMapped checksums, validates and orders the batches of snap, a
// canonical stream decoded from data (the map of fh, size bytes) with its
// binary offsets not yet checked. It returns the file's CRC-32C; false
// means it gave up, and the caller must checksum and validate the file
// itself. On success the snapshot's order is known and, when its rows
// strictly increase, its prefix runs.
func verifyMapped(ctx context.Context, fh *os.File, size int64, data []byte, snap *Snapshot, slot *ProbeSlot) (uint32, bool) {
	m := &mappedFile{f: fh, data: data}
	rows := snap.NumRows()
	maxRuns := max(4096, rows/32)
	var ranges []*verifyRange
	row := 0
	for bi := range snap.Batches {
		b := &snap.Batches[bi]
		n := b.Len()
		parts := max(1, min(runtime.NumCPU(), n/verifyMinRows))
		bounds := make([]int, parts+1)
		for p := range bounds {
			bounds[p] = p * n / parts
		}
		kb, err := readOffsets(m, b.KeyOffs, bounds, len(b.Keys))
		if err != nil {
			return 0, false
		}
		vb, err := readOffsets(m, b.ValOffs, bounds, len(b.Vals))
		if err != nil {
			return 0, false
		}
		for p := 0; p < parts; p++ {
			if bounds[p] == bounds[p+1] && n > 0 {
				continue
			}
			maxSteps := max(1024, (bounds[p+1]-bounds[p])/8)
			ranges = append(ranges, &verifyRange{batch: bi, b: b, offset: row, lo: bounds[p], hi: bounds[p+1],
				keySteps: stepBuilder{runBuilder[stepRun]{max: maxSteps}}, valSteps: stepBuilder{runBuilder[stepRun]{max: maxSteps}}, opRuns: opBuilder{runBuilder[opRun]{max: maxSteps}},
				kLo: kb[p], kHi: kb[p+1], vLo: vb[p], vHi: vb[p+1], maxRuns: maxRuns,
				maxKeys: max(64<<10, int(kb[p+1]-kb[p])/64),
				probe:   rangeProbe{slot: slot, off: slot == nil, max: max(4096, (bounds[p+1]-bounds[p])/16)}})
		}
		row += n
	}
	errs := make([]error, len(ranges))
	ForEach(len(ranges), func(i int) { errs[i] = Guard(func() error { return ranges[i].verify(ctx, m) }) })
	if errors.Join(errs...) != nil {
		return 0, false
	}
	var pieces []piece
	for _, r := range ranges {
		pieces = append(pieces, r.pieces...)
	}
	crc, err := tileCRC(fh, size, pieces)
	if err != nil {
		return 0, false
	}
	sorted, strict := true, true
	var runs PrefixRuns
	indexed := true
	var last *verifyRange // the last range before r that has rows
	for i, r := range ranges {
		sorted, strict = sorted && r.sorted, strict && r.strict
		if r.lo < r.hi {
			// Compared with the last row before, past any batch of no rows
			// (clink's merges write them): that batch's range has no last
			// row to compare with.
			if last != nil {
				c := compareRows(last.lastOp, last.lastKey, r.firstOp, r.firstKey)
				sorted, strict = sorted && c <= 0, strict && c < 0
			}
			last = r
		}
		indexed = indexed && !r.tooMany
		if indexed && strict {
			runs.join(&r.runs, i > 0 && ranges[i-1].batch == r.batch)
		}
	}
	snap.order.once.Do(func() { snap.order.sorted, snap.order.strict = sorted, strict })
	if strict && indexed && len(runs.runs) <= maxRuns {
		runs.rows = rows
		snap.runs = &runs
		var hits KeyHits
		for _, r := range ranges {
			if h, ok := r.probe.stretch(r.offset, r.hi); ok {
				hits.Probe = r.probe.probe
				hits.stretches = append(hits.stretches, h)
			}
		}
		if hits.stretches != nil {
			snap.hits = &hits
		}
	}
	setSteps(snap, ranges)
	return crc, true
}

// setSteps gives each batch of snap the stretches its ranges noted (see
// stepCol), for each column whose ranges all kept theirs.
func setSteps(snap *Snapshot, ranges []*verifyRange) {
	// The ranges come batch by batch, in order: each batch's are taken in
	// turn (looking through all of them for each batch took hours for a
	// file of a million empty batches).
	next := 0
	for bi := range snap.Batches {
		var keys, vals []stepRun
		var ops []opRun
		keysOK, valsOK, opsOK := true, true, true
		first := next
		for next < len(ranges) && ranges[next].batch == bi {
			next++
		}
		for _, r := range ranges[first:next] {
			if r.lo == r.hi {
				continue
			}
			keysOK = keysOK && !r.keySteps.over
			valsOK = valsOK && !r.valSteps.over
			opsOK = opsOK && !r.opRuns.over
			keys = append(keys, r.keySteps.runs...)
			vals = append(vals, r.valSteps.runs...)
			ops = append(ops, r.opRuns.runs...)
		}
		b := &snap.Batches[bi]
		if b.Len() == 0 {
			continue
		}
		if keysOK {
			b.keySteps = &stepCol{keys}
		}
		if valsOK {
			b.valSteps = &stepCol{vals}
		}
		if opsOK {
			b.opRuns = &opCol{ops}
		}
	}
}

// readOffsets reads the offsets at the rows bounds of a batch and checks
// that they could bound its data: at or above 0, not decreasing, at most
// dataLen.
func readOffsets(m *mappedFile, offs []int32, bounds []int, dataLen int) ([]int32, error) {
	if len(offs) <= bounds[len(bounds)-1] {
		return nil, errGiveUp // (validated at decoding: never)
	}
	raw := bytesOf(offs)
	out := make([]int32, len(bounds))
	var b [4]byte
	for p, x := range bounds {
		if err := m.readInto(b[:], raw[4*x:4*x+4]); err != nil {
			return nil, err
		}
		out[p] = int32(binary.LittleEndian.Uint32(b[:]))
		if out[p] < 0 || int(out[p]) > dataLen || p > 0 && out[p] < out[p-1] {
			return nil, errGiveUp
		}
	}
	return out, nil
}

// tileCRC checks that the pieces do not overlap, checksums the bytes of
// the file between them, and returns the CRC-32C of the size bytes.
func tileCRC(fh *os.File, size int64, pieces []piece) (uint32, error) {
	slices.SortFunc(pieces, func(a, b piece) int { return cmp.Compare(a.at, b.at) })
	crc := CRC32C(nil)
	var at int64
	gap := func(to int64) error {
		if to > at {
			c, err := checksumRange(context.Background(), fh, at, to)
			if err != nil {
				return err
			}
			crc = crc32cCombine(crc, c, to-at)
		}
		return nil
	}
	for _, pc := range pieces {
		if pc.at < at || pc.at+pc.n > size {
			return 0, errGiveUp
		}
		if err := gap(pc.at); err != nil {
			return 0, err
		}
		crc = crc32cCombine(crc, pc.crc, pc.n)
		at = pc.at + pc.n
	}
	if err := gap(size); err != nil {
		return 0, err
	}
	return crc, nil
}

// verify reads the range's spans.
func (r *verifyRange) verify(ctx context.Context, m *mappedFile) error {
	b := r.b
	where := func(s []byte) (int64, error) {
		if len(s) == 0 {
			return 0, nil
		}
		off, ok := m.offsetOf(s)
		if !ok {
			return 0, errGiveUp
		}
		return off, nil
	}
	// The offsets of rows lo+1..hi (and of row 0 in the first range):
	// the spans of all ranges tile each buffer.
	kFrom, vFrom := r.lo+1, r.lo+1
	if r.lo == 0 {
		kFrom, vFrom = 0, 0
	}
	var sp [5]spanReader
	defer func() {
		for i := range sp {
			sp[i].free()
		}
	}()
	spans := [5]struct {
		buf    []byte
		lo, hi int
	}{
		{bytesOf(b.Ops), 8 * r.lo, 8 * r.hi},
		{bytesOf(b.KeyOffs), 4 * kFrom, 4 * (r.hi + 1)},
		{b.Keys, int(r.kLo), int(r.kHi)},
		{bytesOf(b.ValOffs), 4 * vFrom, 4 * (r.hi + 1)},
		{b.Vals, int(r.vLo), int(r.vHi)},
	}
	for i, s := range spans {
		if s.lo == s.hi {
			continue
		}
		off, err := where(s.buf[s.lo:s.hi])
		if err != nil {
			return err
		}
		sp[i].init(m.f, off, off+int64(s.hi-s.lo))
		sp[i].ctx = ctx
	}
	ops, kOffs, keys, vOffs := &sp[0], &sp[1], &sp[2], &sp[3] // sp[4], the values, is only checksummed
	if r.lo == 0 {
		// Row 0's start offsets: the first bytes of the offset spans.
		for _, o := range [2]struct {
			s    *spanReader
			want int32
		}{{kOffs, r.kLo}, {vOffs, r.vLo}} {
			v, _, err := o.s.next(4)
			if err != nil {
				return err
			}
			if int32(binary.LittleEndian.Uint32(v)) != o.want {
				return errGiveUp
			}
		}
	}
	r.sorted, r.strict = true, true
	var prevOp uint64
	var prev []byte
	kAt, vAt := r.kLo, r.vLo
	for x := r.lo; x < r.hi; {
		c := min(verifyChunk, r.hi-x)
		opb, _, err := ops.next(8 * c)
		if err != nil {
			return err
		}
		kb, _, err := kOffs.next(4 * c)
		if err != nil {
			return err
		}
		vb, _, err := vOffs.next(4 * c)
		if err != nil {
			return err
		}
		vEnds, okV := int32s(vb)
		if !okV || !r.valSteps.ascendingSteps(x, vEnds, vAt, r.vHi) {
			return errGiveUp
		}
		vFrom := vAt // the chunk's first value starts there
		vAt = vEnds[c-1]
		kEnds, okK := int32s(kb)
		if !okK || !ascending(kEnds, kAt, r.kHi) {
			return errGiveUp
		}
		opv := uint64s(opb)
		// The chunk's keys, and the previous chunk's (the last of which
		// is prev), wherever the window moved them.
		chunk, before, err := keys.next(int(kEnds[c-1] - kAt))
		if err != nil {
			return err
		}
		if x > r.lo {
			prev = before[len(before)-len(prev):]
		}
		base := kAt
		fast := r.fast
		opsEnd := -1 // the end of the rows from j on of operator prevOp
		// The rows' 8-byte user keys, as words, for a probe that takes
		// them (see WordProbe): nil when it does not, or not yet.
		words := r.probe.wordsFor(c)
		for j := 0; j < c; j++ {
			if l := len(prev); fast && l >= 8 && l <= 16 {
				if opsEnd < j {
					opsEnd = sameOps(opv, j, prevOp)
				}
				from := j
				pm := ^uint64(0) << (64 - 8*r.cur.plen) // (plen is 1 to 8 when fast)
				w := words
				if l-r.cur.plen != 8 {
					w = nil
				}
				j, kAt = fastRows(chunk, kEnds, j, opsEnd, kAt, base, int32(l),
					binary.BigEndian.Uint64(prev), binary.BigEndian.Uint64(prev[l-8:]), pm, w)
				if w == nil && j > from {
					r.probe.noWords()
				}
				if j > from {
					prev = chunk[kAt-base-int32(l) : kAt-base : kAt-base]
				}
				if j == c {
					break
				}
			}
			e := kEnds[j]
			key := chunk[kAt-base : e-base : e-base]
			kAt = e
			op := opv[j]
			vStart := vFrom
			if j > 0 {
				vStart = vEnds[j-1]
			}
			r.row(x+j, op, key, prevOp, prev, e-int32(len(key)), vStart)
			// (The rows fastRows passes over have the operator and the
			// key's length of the one before.)
			r.keySteps.add(x+j, e-int32(len(key)), int32(len(key)))
			r.opRuns.add(x+j, op)
			fast = r.fast
			if words != nil {
				if r.cur.slotted && len(key)-r.cur.plen == 8 {
					words[j] = binary.BigEndian.Uint64(key[len(key)-8:])
				} else {
					r.probe.noWords()
				}
			}
			if op != prevOp {
				opsEnd = -1
			}
			prevOp, prev = op, key
		}
		r.probeChunk(x, chunk, base, kEnds)
		x += c
	}
	if r.lo < r.hi {
		r.lastOp, r.lastKey = prevOp, bytes.Clone(prev)
		if r.strict && !r.tooMany {
			r.runs.end(prev, r.kHi, r.vHi)
		}
	}
	if kAt != r.kHi || vAt != r.vHi {
		return errGiveUp
	}
	for i := range sp {
		if sp[i].end == sp[i].start {
			continue
		}
		pc, err := sp[i].finish()
		if err != nil {
			return err
		}
		r.pieces = append(r.pieces, pc)
	}
	return nil
}

// fastRows passes over the rows of a chunk from row j up to row end
// while they take verify's shortcut, the common case: rows (of one
// operator, up to end) whose keys have the length of the key before,
// klen, from 8 to 16 bytes, and strictly increase within a run whose
// prefix is at most 8 bytes, compared as two big-endian words (see
// compareRows): the key before's are hi and lo, and pm masks the prefix's
// bits of the first. Such a row needs nothing noted. It returns the first
// row that does not take the shortcut (or end) and where its key starts.
// The chunk's keys start at byte base of the batch's keys, row j's at at,
// and end at kEnds. When words is not nil, the keys' last 8 bytes (their
// user keys) are kept in it, as big-endian words (see WordProbe). A loop
// of its own, without a call, keeps its state in registers: inside
// verify's, spilled to the stack around row's call, it took 97
// instructions a row.
func fastRows(chunk []byte, kEnds []int32, j, end int, at, base int32, klen int32, hi, lo, pm uint64, words []uint64) (int, int32) {
	s, k := int(at-base), int(klen)
	if s < 0 || k < 8 {
		return j, at
	}
	// The rows whose keys, klen bytes each from s on, lie in the chunk.
	end = min(end, len(kEnds), j+(len(chunk)-s)/k)
	for ; j < end && kEnds[j] == at+klen; j++ {
		h, l := unaligned.BE64(chunk, s), unaligned.BE64(chunk, s+k-8)
		if !(hi < h || hi == h && lo < l) || (hi^h)&pm != 0 {
			break
		}
		if words != nil {
			words[j] = l
		}
		hi, lo, at, s = h, l, at+klen, s+k
	}
	return j, at
}

// sameOps returns the first row from j on whose operator (in opv) is not
// op, or len(opv).
func sameOps(opv []uint64, j int, op uint64) int {
	for j < len(opv) && opv[j] == op {
		j++
	}
	return j
}

// row checks the order of row x of the batch (operator op, key key, whose
// key and value start at kStart and vStart in the batch's data) after the
// row before it and notes whether it starts a prefix run. It
// sets fast when the next rows may take verify's shortcut: the rows so far
// strictly increase, the runs are tracked, and the current run's prefix
// is slotted and at most 8 bytes long.
func (r *verifyRange) row(x int, op uint64, key []byte, prevOp uint64, prev []byte, kStart, vStart int32) {
	if x == r.lo {
		r.firstOp, r.firstKey = op, bytes.Clone(key)
	} else if r.sorted {
		if c := compareRows(prevOp, prev, op, key); c >= 0 {
			r.strict = false
			if c > 0 {
				r.sorted = false
			}
		}
	}
	r.fast = false
	if !r.strict || r.tooMany {
		return
	}
	// A new run unless the row has the operator and the slotted prefix of
	// the one before (or, unslotted, the operator of an unslotted run).
	cur := &r.cur
	same := x > r.lo && op == cur.op
	if same && cur.slotted {
		same = len(key) >= cur.plen && bytes.Equal(key[:cur.plen], prev[:cur.plen])
	} else if same {
		same = separatorIndex(key) < 0
	}
	if !same {
		if x > r.lo {
			r.runs.end(prev, kStart, vStart)
		}
		sep := separatorIndex(key)
		cur.op, cur.slotted, cur.plen = op, sep >= 0, sep+1
		r.runs.start(r.offset+x, op, cur.slotted, key, max(0, cur.plen), kStart, vStart)
		r.tooMany = len(r.runs.runs) > r.maxRuns || len(r.runs.keys) > r.maxKeys
	}
	if len(key) > 0 && key[0] < NumKeyGroups && !r.tooMany {
		// (A slotted run's keys share their first byte: its first row
		// sets this for all of them.)
		r.runs.runs[len(r.runs.runs)-1].kgByte = true
	}
	r.fast = cur.slotted && cur.plen <= 8 && !r.tooMany
}

// ascending reports whether offsets, following from, never decrease and
// end at most at max.
func ascending(offs []int32, from, max int32) bool {
	for _, o := range offs {
		if o < from {
			return false
		}
		from = o
	}
	return from <= max
}

// int32s returns the little-endian int32s of b as a slice of its memory,
// or a copy when b is not aligned for them or the machine is big-endian;
// false when b's length is not a multiple of 4.
func int32s(b []byte) ([]int32, bool) {
	if len(b)%4 != 0 {
		return nil, false
	}
	if littleEndian && uintptr(unsafe.Pointer(unsafe.SliceData(b)))%4 == 0 {
		return wordsOf[int32](b), true
	}
	out := make([]int32, len(b)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, true
}

// uint64s is int32s for little-endian uint64s.
func uint64s(b []byte) []uint64 {
	if littleEndian && uintptr(unsafe.Pointer(unsafe.SliceData(b)))%8 == 0 {
		return wordsOf[uint64](b)
	}
	out := make([]uint64, len(b)/8)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return out
}

// compareRows compares rows by (op, key): -1, 0 or +1. Keys of one length
// from 8 to 16 bytes, the common case, are compared as two big-endian
// words (the first 8 bytes and the last 8, which overlap below 16: the
// bytes in common are equal when the first words are).
func compareRows(aOp uint64, a []byte, bOp uint64, b []byte) int {
	if aOp != bOp {
		return cmp.Compare(aOp, bOp)
	}
	if l := len(a); l == len(b) && l >= 8 && l <= 16 {
		ah, bh := binary.BigEndian.Uint64(a), binary.BigEndian.Uint64(b)
		if ah != bh {
			return cmp.Compare(ah, bh)
		}
		al, bl := binary.BigEndian.Uint64(a[l-8:]), binary.BigEndian.Uint64(b[l-8:])
		return cmp.Compare(al, bl)
	}
	return bytes.Compare(a, b)
}

// PrefixRuns are the prefix runs of a columnar snapshot whose rows strictly
// increase, found when it was opened: the longest stretches of rows of
// one batch with one operator whose keys share the prefix up to and
// including the slot separator (so one key group, or operator-state
// marker, and one slot). Rows whose keys have no separator make runs too,
// of one operator each, that are not slotted: their keys share nothing.
type PrefixRuns struct {
	runs []prefixRun
	keys []byte // the runs' first and last keys
	rows int    // the snapshot's rows
}

type prefixRun struct {
	start       int // the run's first row
	op          uint64
	slotted     bool
	kgByte      bool   // see PrefixRun.KeyGroupByte
	plen        int    // the prefix's length in the first key
	first, last [2]int // the first and last keys, in keys
	// kStart, kEnd, vStart and vEnd bound the run's keys and values in
	// its batch's data.
	kStart, kEnd, vStart, vEnd int32
}

// PrefixRun is one run of PrefixRuns: rows [Start, End).
type PrefixRun struct {
	Start, End int
	Op         uint64
	// Slotted is whether the keys have a slot separator: they share
	// Prefix, the first key up to and including it.
	Slotted bool
	Prefix  []byte
	// KeyGroupByte is whether some key of the run starts with a byte below
	// NumKeyGroups (a key group's: restore filters such rows by it).
	KeyGroupByte bool
	// First and Last are the keys of rows Start and End-1.
	First, Last []byte
	// KeyBytes and ValueBytes are the lengths of the run's keys and values.
	KeyBytes, ValueBytes int64
}

// Keyed reports whether the run's rows are keyed rows: their shared
// prefix is a key group's byte, a slot and its separator (a separator is
// never a key's first byte, so the prefix is 2 bytes at least).
func (r *PrefixRun) Keyed() bool {
	return r.Slotted && len(r.Prefix) >= 2 && r.Prefix[0] < NumKeyGroups
}

func (x *PrefixRuns) start(row int, op uint64, slotted bool, key []byte, plen int, kStart, vStart int32) {
	at := len(x.keys)
	x.keys = append(x.keys, key...)
	x.runs = append(x.runs, prefixRun{start: row, op: op, slotted: slotted, plen: plen, first: [2]int{at, len(x.keys)},
		kStart: kStart, vStart: vStart})
}

// end ends the last run: key is its last key, and its keys and values end
// at kEnd and vEnd.
func (x *PrefixRuns) end(key []byte, kEnd, vEnd int32) {
	at := len(x.keys)
	x.keys = append(x.keys, key...)
	r := &x.runs[len(x.runs)-1]
	r.last, r.kEnd, r.vEnd = [2]int{at, len(x.keys)}, kEnd, vEnd
}

// join appends the runs of the next range, merging its first run into the
// last one when they go on in the same batch with the same operator and
// slotted prefix (or are both unslotted, of one operator).
func (x *PrefixRuns) join(y *PrefixRuns, sameBatch bool) {
	rs := y.runs
	if len(rs) > 0 && len(x.runs) > 0 && sameBatch {
		a, b := x.Run(len(x.runs)-1), y.Run(0)
		if a.Op == b.Op && a.Slotted == b.Slotted && (!a.Slotted || bytes.Equal(a.Prefix, b.Prefix)) {
			last := &x.runs[len(x.runs)-1]
			at := len(x.keys)
			x.keys = append(x.keys, b.Last...)
			last.last, last.kEnd, last.vEnd = [2]int{at, len(x.keys)}, rs[0].kEnd, rs[0].vEnd
			last.kgByte = a.KeyGroupByte || b.KeyGroupByte
			rs = rs[1:]
		}
	}
	shift := len(x.keys)
	x.keys = append(x.keys, y.keys...)
	for _, r := range rs {
		r.first[0], r.first[1] = r.first[0]+shift, r.first[1]+shift
		r.last[0], r.last[1] = r.last[0]+shift, r.last[1]+shift
		x.runs = append(x.runs, r)
	}
}

// Len returns the number of runs.
func (x *PrefixRuns) Len() int { return len(x.runs) }

// Run returns run i.
func (x *PrefixRuns) Run(i int) PrefixRun {
	r := &x.runs[i]
	end := x.rows
	if i+1 < len(x.runs) {
		end = x.runs[i+1].start
	}
	first := x.keys[r.first[0]:r.first[1]:r.first[1]]
	return PrefixRun{Start: r.start, End: end, Op: r.op, Slotted: r.slotted, Prefix: first[:r.plen:r.plen],
		KeyGroupByte: r.kgByte, First: first, Last: x.keys[r.last[0]:r.last[1]:r.last[1]],
		KeyBytes: int64(r.kEnd - r.kStart), ValueBytes: int64(r.vEnd - r.vStart)}
}

// Find returns the index of the run holding row i.
func (x *PrefixRuns) Find(i int) int {
	j, _ := slices.BinarySearchFunc(x.runs, i, func(r prefixRun, i int) int { return cmp.Compare(r.start, i) })
	if j == len(x.runs) || x.runs[j].start > i {
		j--
	}
	return j
}

// Runs returns the prefix runs found when the snapshot was opened (see
// PrefixRuns): only for a columnar snapshot of a file read in one pass
// whose rows strictly increase, and whose runs are not too many (at most
// one per 32 rows, or 4096, their first and last keys at most 1/64 of the
// key bytes, or 64 KiB a range of rows); nil otherwise.
func (s *Snapshot) Runs() *PrefixRuns { return s.runs }

// String describes the runs for tests and debugging.
func (x *PrefixRuns) String() string {
	var b bytes.Buffer
	for i := range x.runs {
		r := x.Run(i)
		fmt.Fprintf(&b, "[%d,%d) op %d slotted %v prefix %q kg byte %v first %q last %q bytes %d+%d\n", r.Start, r.End, r.Op, r.Slotted, r.Prefix, r.KeyGroupByte, r.First, r.Last, r.KeyBytes, r.ValueBytes)
	}
	return b.String()
}
