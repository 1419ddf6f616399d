package transform

import "math/bits"

// opSpans holds the operators of output rows that a rule gave another
// operator while keeping the input row's key and value (an operator
// remap), as spans of consecutive positions with one operator: a remap of
// an operator's rows in canonical order is a span or a few, not a row
// each. Spans are added in increasing order of position. A bitmap of the
// spans' first positions, with a count per word, finds the span of a
// position in O(1) (in clink's hash-map order a remapped operator's rows
// are spans of one row, millions of them); lookups are read-only (the
// writer's goroutines make them at once).
type opSpans struct {
	chunks [][]opSpan // the spans in chunks of modChunk: growing copies nothing
	n      int
	starts []uint64 // bit p%64 of word p/64: a span starts at position p
	ranks  []uint32 // spans starting below 64*w, for each word w
}

// span returns span k.
func (s *opSpans) span(k int) *opSpan { return &s.chunks[k>>modChunkBits][k&(modChunk-1)] }

// each calls fn with every span in order.
func (s *opSpans) each(fn func(opSpan)) {
	for _, c := range s.chunks {
		for _, sp := range c {
			fn(sp)
		}
	}
}

type opSpan struct {
	pos, n uint32 // positions [pos, pos+n)
	op     uint64
}

// set records op for position p, after every position set so far.
func (s *opSpans) set(p uint32, op uint64) { s.add(opSpan{pos: p, n: 1, op: op}) }

// add appends a span of positions after every position set so far, joining
// the last one when it continues it with the same operator.
func (s *opSpans) add(sp opSpan) {
	if s.n > 0 {
		if l := s.span(s.n - 1); l.pos+l.n == sp.pos && l.op == sp.op {
			l.n += sp.n
			return
		}
	}
	w := int(sp.pos >> 6)
	for len(s.starts) <= w {
		s.starts = append(s.starts, 0)
		s.ranks = append(s.ranks, uint32(s.n))
	}
	s.starts[w] |= 1 << (sp.pos & 63)
	if s.n&(modChunk-1) == 0 {
		s.chunks = append(s.chunks, make([]opSpan, 0, modChunk))
	}
	c := len(s.chunks) - 1
	s.chunks[c] = append(s.chunks[c], sp)
	s.n++
}

// last returns the index of the last span starting at or before p, or -1.
func (s *opSpans) last(p uint32) int {
	w := int(p >> 6)
	if w >= len(s.starts) {
		return s.n - 1
	}
	mask := uint64(1)<<(p&63)<<1 - 1 // bits 0..p%64 (all 64 when p%64 is 63)
	return int(s.ranks[w]) + bits.OnesCount64(s.starts[w]&mask) - 1
}

// at returns the operator set for position p, if any.
func (s *opSpans) at(p uint32) (uint64, bool) {
	if s.n == 0 {
		return 0, false
	}
	if k := s.last(p); k >= 0 {
		if sp := s.span(k); p < sp.pos+sp.n {
			return sp.op, true
		}
	}
	return 0, false
}

// next returns the first position at or after p that has an operator set.
func (s *opSpans) next(p uint32) (uint32, bool) {
	if s.n == 0 {
		return 0, false
	}
	k := s.last(p)
	if k >= 0 {
		if sp := s.span(k); p < sp.pos+sp.n {
			return p, true
		}
	}
	if k+1 < s.n {
		return s.span(k + 1).pos, true
	}
	return 0, false
}

// appendShifted appends the spans of t, their positions moved by offset
// (all after s's).
func (s *opSpans) appendShifted(t *opSpans, offset uint32) {
	t.each(func(sp opSpan) {
		sp.pos += offset
		s.add(sp)
	})
}
