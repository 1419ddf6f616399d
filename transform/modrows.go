package transform

import (
	"math"
	"math/bits"

	"github.com/sptool/sptool/savepoint"
)

// modRows holds the output rows the rules rewrote, by output position. Rows
// are rewritten as they are appended to the output, so positions come in
// order; a remap of an operator rewrites every row of it, so the rows are
// kept compact and found without a search:
//
//   - A bitmap of the positions, with the count of rows before each word,
//     finds a row's index in O(1) (read-only: the writer's goroutines look
//     rows up at once).
//   - The positions and rows are in chunks: growing never copies them nor
//     holds them twice.
//   - No pointers: the garbage collector does not scan them. A rewritten row
//     is its operator and where its key and value are, the input row's own
//     (a remap keeps both, a slot rename the value) or bytes copied into an
//     arena, itself in chunks.
//
// That is about 36 bytes a row plus the bytes rewritten.
type modRows struct {
	pos   [][]uint32   // positions in increasing order, in chunks of modChunk
	ents  [][]modEntry // the rows, likewise
	n     int
	bits  []uint64 // bit p%64 of word p/64: position p holds a row
	ranks []uint32 // rows at positions below 64*w, for each word w
	arena [][]byte // the rows' own bytes, in chunks of at least arenaChunk
}

// modChunk is the number of rows of a chunk; arenaChunk the least bytes.
const (
	modChunkBits = 15
	modChunk     = 1 << modChunkBits
	arenaChunk   = 1 << 20
)

// modEntry is a rewritten row.
type modEntry struct {
	op         uint64
	key, value bytesRef
}

// bytesRef is where a rewritten row's key or value is: n bytes at offset
// off&0xFFFFFFFF of arena chunk off>>32, or, when n is fromInput, the input
// row's.
type bytesRef struct {
	off uint64
	n   uint32
}

// fromInput marks a bytesRef of the input row's bytes.
const fromInput = math.MaxUint32

func (m *modRows) len() int {
	if m == nil {
		return 0
	}
	return m.n
}

// ref returns where b, the bytes of a rewritten row whose input row's are
// in, is: in the input row, or copied to the arena.
func (m *modRows) ref(b, in []byte) bytesRef {
	switch {
	case len(b) == 0:
		return bytesRef{}
	case sameSlice(b, in):
		return bytesRef{n: fromInput}
	}
	c := len(m.arena) - 1
	if c < 0 || cap(m.arena[c])-len(m.arena[c]) < len(b) {
		m.arena = append(m.arena, make([]byte, 0, max(arenaChunk, len(b))))
		c++
	}
	off := len(m.arena[c])
	m.arena[c] = append(m.arena[c], b...)
	return bytesRef{off: uint64(c)<<32 | uint64(off), n: uint32(len(b))}
}

// bytes returns the bytes of r; input returns the input row's.
func (m *modRows) bytes(r bytesRef, input func() []byte) []byte {
	if r.n == fromInput {
		return input()
	}
	if r.n == 0 {
		return nil
	}
	c, off := r.off>>32, r.off&0xFFFFFFFF
	end := off + uint64(r.n)
	return m.arena[c][off:end:end]
}

// set records r as the row at position p; in is the input row it was
// rewritten from (r's key or value that is in's own slice is not copied).
func (m *modRows) set(p uint32, r, in savepoint.Row) {
	m.put(p, modEntry{op: r.Op, key: m.ref(r.Key, in.Key), value: m.ref(r.Value, in.Value)})
}

// put records e, whose bytes are in m's arena, at position p. Positions
// come in increasing order from the engine; one before the last replaces
// the row there or, new, is inserted by building the index again (O(rows)).
func (m *modRows) put(p uint32, e modEntry) {
	if m.n > 0 && p <= m.posAt(m.n-1) {
		if k, ok := m.index(p); ok {
			*m.ent(k) = e // the bytes it replaces stay in the arena
			return
		}
		m.insert(p, e)
		return
	}
	if m.n&(modChunk-1) == 0 {
		m.pos = append(m.pos, make([]uint32, 0, modChunk))
		m.ents = append(m.ents, make([]modEntry, 0, modChunk))
	}
	c := len(m.pos) - 1
	m.pos[c], m.ents[c] = append(m.pos[c], p), append(m.ents[c], e)
	w := int(p >> 6)
	for len(m.bits) <= w {
		m.bits = append(m.bits, 0)
		m.ranks = append(m.ranks, uint32(m.n))
	}
	m.bits[w] |= 1 << (p & 63)
	m.n++
}

// putAll records the entries es, whose bytes are in m's arena, at the
// positions ps (increasing): entries at or before the last row held are
// merged into the rows in one rebuild, where put would rebuild for each.
func (m *modRows) putAll(ps []uint32, es []modEntry) {
	if m.n == 0 || len(ps) > 0 && ps[0] > m.posAt(m.n-1) {
		for i, p := range ps {
			m.put(p, es[i])
		}
		return
	}
	pos := make([]uint32, 0, m.n+len(ps))
	ents := make([]modEntry, 0, m.n+len(ps))
	i := 0
	m.each(func(q uint32, f modEntry) {
		for ; i < len(ps) && ps[i] < q; i++ {
			pos, ents = append(pos, ps[i]), append(ents, es[i])
		}
		if i < len(ps) && ps[i] == q {
			pos, ents = append(pos, q), append(ents, es[i]) // it replaces f
			i++
			return
		}
		pos, ents = append(pos, q), append(ents, f)
	})
	pos, ents = append(pos, ps[i:]...), append(ents, es[i:]...)
	arena := m.arena
	*m = modRows{arena: arena}
	for k, q := range pos {
		m.put(q, ents[k])
	}
}

// copyFrom records the entry e of src at position p of m.
func (m *modRows) copyFrom(p uint32, e modEntry, src *modRows) {
	for _, r := range []*bytesRef{&e.key, &e.value} {
		if r.n != fromInput {
			*r = m.ref(src.bytes(*r, nil), nil)
		}
	}
	m.put(p, e)
}

// insert puts e at position p, before the last row (see putAll).
func (m *modRows) insert(p uint32, e modEntry) { m.putAll([]uint32{p}, []modEntry{e}) }

func (m *modRows) posAt(k int) uint32  { return m.pos[k>>modChunkBits][k&(modChunk-1)] }
func (m *modRows) ent(k int) *modEntry { return &m.ents[k>>modChunkBits][k&(modChunk-1)] }

// rank returns the number of rows at positions below p.
func (m *modRows) rank(p uint32) int {
	w := int(p >> 6)
	if w >= len(m.bits) {
		return m.n
	}
	return int(m.ranks[w]) + bits.OnesCount64(m.bits[w]&(1<<(p&63)-1))
}

// index returns the index of the row at position p, if any.
func (m *modRows) index(p uint32) (int, bool) {
	w := int(p >> 6)
	if w >= len(m.bits) || m.bits[w]&(1<<(p&63)) == 0 {
		return 0, false
	}
	return m.rank(p), true
}

// get returns the rewritten row at position p, if any.
func (m *modRows) get(p uint32) (modEntry, bool) {
	if m.len() == 0 {
		return modEntry{}, false
	}
	k, ok := m.index(p)
	if !ok {
		return modEntry{}, false
	}
	return *m.ent(k), true
}

// next returns the first position at or after p that holds a rewritten
// row.
func (m *modRows) next(p uint32) (uint32, bool) {
	if m.len() == 0 {
		return 0, false
	}
	if k := m.rank(p); k < m.n {
		return m.posAt(k), true
	}
	return 0, false
}

// each calls fn with every rewritten row, in order of position.
func (m *modRows) each(fn func(p uint32, e modEntry)) {
	if m == nil {
		return
	}
	for c, pos := range m.pos {
		for k, p := range pos {
			fn(p, m.ents[c][k])
		}
	}
}
