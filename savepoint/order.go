package savepoint

import (
	"bytes"
	"runtime"
	"sync"

	"github.com/sptool/sptool/internal/gallop"
)

// orderInfo caches Snapshot.Order.
type orderInfo struct {
	once           sync.Once
	sorted, strict bool
}

// Order reports whether the rows, in stream order, are sorted by (op, key)
// (sorted) and strictly increasing, that is sorted without duplicates
// (strict). The answer is computed once, in parallel over ranges of rows,
// reading the columns of a columnar snapshot in place.
func (s *Snapshot) Order() (sorted, strict bool) {
	s.order.once.Do(func() { s.order.sorted, s.order.strict = s.computeOrder() })
	return s.order.sorted, s.order.strict
}

func (s *Snapshot) computeOrder() (sorted, strict bool) {
	n := s.NumRows()
	if n < 2 {
		return true, true
	}
	parts := min(runtime.NumCPU(), max(1, n/(1<<16)))
	type result struct{ sorted, strict bool }
	res := make([]result, parts)
	var ranges Faults
	for p := range parts {
		ranges.Go(func() {
			// Rows [lo, hi) are compared with the row before each.
			lo, hi := max(1, p*n/parts), (p+1)*n/parts
			res[p].sorted, res[p].strict = s.rangeOrder(lo, hi)
		})
	}
	ranges.Wait()
	sorted, strict = true, true
	for _, r := range res {
		sorted, strict = sorted && r.sorted, strict && r.strict
	}
	return sorted, strict
}

// rangeOrder compares each row of [lo, hi) (lo >= 1) with the row before it.
func (s *Snapshot) rangeOrder(lo, hi int) (sorted, strict bool) {
	sorted, strict = true, true
	check := func(prevOp uint64, prevKey []byte, op uint64, key []byte) bool {
		c := 0
		switch {
		case prevOp < op:
			c = -1
		case prevOp > op:
			c = 1
		default:
			c = bytes.Compare(prevKey, key)
		}
		if c > 0 {
			sorted, strict = false, false
			return false
		}
		strict = strict && c < 0
		return true
	}
	if !s.Columnar() {
		for i := lo; i < hi; i++ {
			if !check(s.Rows[i-1].Op, s.Rows[i-1].Key, s.Rows[i].Op, s.Rows[i].Key) {
				break
			}
		}
		return sorted, strict
	}
	// The keys are read a block at a time with pread (see KeyColumns);
	// prev keeps a copy of the last key of a block.
	c := s.NewCursor()
	var kc KeyColumns
	var prevOp uint64
	var prev []byte
	for i := lo - 1; i < hi; {
		b, j, left := c.Locate(i)
		kc.LoadOrMap(b, j, j+min(left, hi-i, keyBlock))
		m := kc.Hi - j // fewer rows than asked when their keys are large
		if i >= lo && !check(prevOp, prev, kc.Ops[0], kc.Key(j)) {
			return sorted, strict
		}
		for x := j; x+1 < j+m; x++ {
			if !check(kc.Ops[x-j], kc.Key(x), kc.Ops[x+1-j], kc.Key(x+1)) {
				return sorted, strict
			}
		}
		prevOp, prev = kc.Ops[m-1], append(prev[:0], kc.Key(j+m-1)...)
		i += m
	}
	return sorted, strict
}

// eachRun calls fn for the rows of s in stream order, a group at a time:
// a group is a run of consecutive rows of one operator whose keys share
// the prefix up to the slot separator (so one kind and one slot), its end
// found by binary search when the rows are strictly increasing, by a scan
// otherwise (in clink's hash-map order nearly every group is one row); a
// key without a separator, and every row of a snapshot not read in place,
// is a group of its own. fn gets the stream index and the first row of the
// group, its row count and the sums of its key and value lengths. release
// is called now and then.
//
// The runs are those found at open (Snapshot.Runs), when it found them.
// Otherwise they are found in the keys of blocks of keyBlock rows read
// with pread (see KeyColumns): a run that goes on past a block is reported
// in parts. The first row of a run has its operator and key only, the key
// valid only during the call.
func (s *Snapshot) eachRun(release func(), fn func(i int, first Row, n int, keyBytes, valueBytes int64)) {
	if !s.Columnar() {
		s.EachRow(func(i int, r Row) bool {
			if i&releaseEvery == 0 {
				release()
			}
			fn(i, r, 1, int64(len(r.Key)), int64(len(r.Value)))
			return true
		})
		return
	}
	runs := s.Runs()
	if runs == nil {
		s.eachRunIn(0, s.NumRows(), release, nil, fn)
		return
	}
	// The runs found at open: only the rows of runs without a slot (a
	// group each) are read.
	w := s.newRunWalk(release, fn)
	c := s.NewCursor()
	for k := range runs.Len() {
		r := runs.Run(k)
		if r.Slotted {
			fn(r.Start, Row{Op: r.Op, Key: r.First}, r.End-r.Start, r.KeyBytes, r.ValueBytes)
			continue
		}
		b, x, _ := c.Locate(r.Start)
		w.group(b, x, x+r.End-r.Start, r.Start)
	}
}

// eachRunIn is eachRun over rows [lo, hi) of a columnar snapshot, its
// groups found in the keys read in blocks (not in the runs found at open),
// with the rows' hashes added to hashes when not nil (its part of a
// keyHashes: [lo, hi) must be its rows). Calls over disjoint ranges may run
// at once.
func (s *Snapshot) eachRunIn(lo, hi int, release func(), hashes *hashPart, fn func(i int, first Row, n int, keyBytes, valueBytes int64)) {
	w := s.newRunWalk(release, fn)
	w.hashes = hashes
	w.next = lo
	start := 0 // the stream index of batch bi's first row
	for bi := range s.Batches {
		b := &s.Batches[bi]
		if from, to := max(lo-start, 0), min(hi-start, b.Len()); from < to {
			w.group(b, from, to, start+from)
		}
		if start += b.Len(); start >= hi {
			return
		}
	}
}

// runWalk is eachRun's reading of groups of rows from their keys.
type runWalk struct {
	kc      KeyColumns
	next    int  // the row at which release is called next
	sorted  bool // the rows are strictly increasing: runs end where a binary search says
	release func()
	fn      func(i int, first Row, n int, keyBytes, valueBytes int64)
	// hashes, when set, takes the hash of each row's operator and key as
	// its block of keys is read (see keyHashes).
	hashes *hashPart
}

func (s *Snapshot) newRunWalk(release func(), fn func(i int, first Row, n int, keyBytes, valueBytes int64)) *runWalk {
	_, strict := s.Order()
	return &runWalk{kc: KeyColumns{values: true}, sorted: strict, release: release, fn: fn}
}

// group reports rows [x, to) of batch b, the first of which is row i, a
// group at a time, reading their keys.
func (w *runWalk) group(b *Batch, x, to, i int) {
	kc := &w.kc
	for x < to {
		if i >= w.next {
			w.release()
			w.next = i + releaseEvery + 1
		}
		if !kc.Holds(b, x) {
			kc.LoadOrMap(b, x, min(b.Len(), x+keyBlock))
			if w.hashes != nil {
				w.hashes.addBlock(i, kc, x, min(to, kc.Hi))
			}
		}
		// A run that goes on past the block is reported in parts.
		end := kc.PrefixRunEnd(x, min(to, kc.Hi), w.sorted)
		w.fn(i, Row{Op: kc.Ops[x-kc.Lo], Key: kc.Key(x)}, end-x, int64(kc.Offs[end-kc.Lo]-kc.Offs[x-kc.Lo]), kc.ValueBytes(x, end))
		i += end - x
		x = end
	}
}

// keyBlock is how many rows of a batch passes over every key read into a
// KeyColumns at once (a variable so tests can make it small).
var keyBlock = 4096

// PrefixRunEnd returns the end of the run of rows from x (before hi) of
// row x's operator whose keys share its prefix up to the slot separator:
// rows of one key group (or operator-state marker) and slot. A key without
// a separator is a run of one. In sorted rows such a run holds all of the
// prefix's rows and its end is found by galloping; otherwise by a scan.
func (b *Batch) PrefixRunEnd(x, hi int, sorted bool) int {
	return prefixRunEnd(b.Ops, b.KeyOffs, b.Keys, x, hi, sorted)
}

// PrefixRunEnd is Batch.PrefixRunEnd over the rows held: x and hi are rows
// of the batch, Lo <= x < hi <= Hi.
func (kc *KeyColumns) PrefixRunEnd(x, hi int, sorted bool) int {
	return kc.Lo + prefixRunEnd(kc.Ops, kc.Offs, kc.Keys, x-kc.Lo, hi-kc.Lo, sorted)
}

// prefixRunEnd is PrefixRunEnd over columns: row y has operator ops[y] and
// key keys[offs[y]:offs[y+1]].
func prefixRunEnd(ops []uint64, offs []int32, keys []byte, x, hi int, sorted bool) int {
	key := func(y int) []byte { return keys[offs[y]:offs[y+1]] }
	if k, o := offs[x], offs[x+1]; x+1 >= hi || ops[x+1] != ops[x] || o == k || o == offs[x+2] || keys[k] != keys[o] {
		// The next row has another operator or key group (or no key):
		// a run of one, told without looking for the separator. In
		// clink's hash-map order nearly every row is one, and inspect
		// spent a fifth of its count of the rows looking.
		return x + 1
	}
	sep := separatorIndex(key(x))
	if sep < 0 {
		return x + 1
	}
	op, prefix := ops[x], key(x)[:sep+1]
	other := func(y int) bool { return ops[y] != op || !bytes.HasPrefix(key(y), prefix) }
	end := x + 1
	if sorted {
		return end + gallop.Search(hi-end, func(y int) bool { return other(end + y) })
	}
	for end < hi && !other(end) {
		end++
	}
	return end
}
