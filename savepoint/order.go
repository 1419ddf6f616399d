package savepoint

import (
	"bytes"
	"runtime"
	"sync"
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
	c := s.NewCursor()
	prevOp, prevKey := c.Op(lo-1), c.Key(lo-1)
	for i := lo; i < hi; {
		b, j, left := c.Locate(i)
		m := min(left, hi-i)
		for x := j; x < j+m; x++ {
			if x&releaseEvery == 0 && b.file != nil {
				releasePages(b.file.data) // keep what was read cached, not resident
			}
			key := b.Keys[b.KeyOffs[x]:b.KeyOffs[x+1]]
			if !check(prevOp, prevKey, b.Ops[x], key) {
				return sorted, strict
			}
			prevOp, prevKey = b.Ops[x], key
		}
		i += m
	}
	return sorted, strict
}
