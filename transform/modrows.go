package transform

import (
	"slices"
	"sort"
	"sync/atomic"

	"github.com/sptool/sptool/savepoint"
)

// modRows holds the output rows the rules rewrote, by output position. Rows
// are rewritten as they are appended to the output, so positions come in
// order: they are kept in two slices searched by position (60 bytes a row,
// no rehashing as they grow) rather than a map (100 bytes or more a row, and
// a remap of an operator rewrites every row of it).
type modRows struct {
	pos  []uint32
	rows []savepoint.Row
	hint atomic.Int32 // where the last search ended: access is mostly in order
}

func (m *modRows) len() int {
	if m == nil {
		return 0
	}
	return len(m.pos)
}

// set records r as the row at position p.
func (m *modRows) set(p uint32, r savepoint.Row) {
	if n := len(m.pos); n == 0 || m.pos[n-1] < p {
		m.pos = savepoint.Grow(m.pos, 1)
		m.rows = savepoint.Grow(m.rows, 1)
		m.pos, m.rows = append(m.pos, p), append(m.rows, r)
		return
	}
	k := m.find(p)
	if k < len(m.pos) && m.pos[k] == p {
		m.rows[k] = r
		return
	}
	m.pos, m.rows = slices.Insert(m.pos, k, p), slices.Insert(m.rows, k, r)
}

// find returns the index of the first position at or after p.
func (m *modRows) find(p uint32) int {
	n := len(m.pos)
	k := min(int(m.hint.Load()), n)
	for range 2 { // the hint, then the one after it
		if (k == 0 || m.pos[k-1] < p) && (k == n || m.pos[k] >= p) {
			m.hint.Store(int32(k))
			return k
		}
		if k == n || m.pos[k] >= p {
			break
		}
		k++
	}
	k = sort.Search(n, func(j int) bool { return m.pos[j] >= p })
	m.hint.Store(int32(k))
	return k
}

// get returns the rewritten row at position p, if any.
func (m *modRows) get(p uint32) (savepoint.Row, bool) {
	if m.len() == 0 {
		return savepoint.Row{}, false
	}
	if k := m.find(p); k < len(m.pos) && m.pos[k] == p {
		return m.rows[k], true
	}
	return savepoint.Row{}, false
}

// next returns the first position at or after p that holds a rewritten
// row.
func (m *modRows) next(p uint32) (uint32, bool) {
	if m.len() == 0 {
		return 0, false
	}
	if k := m.find(p); k < len(m.pos) {
		return m.pos[k], true
	}
	return 0, false
}

// each calls fn with every rewritten row, in order of position.
func (m *modRows) each(fn func(p uint32, r savepoint.Row)) {
	if m == nil {
		return
	}
	for k, p := range m.pos {
		fn(p, m.rows[k])
	}
}
