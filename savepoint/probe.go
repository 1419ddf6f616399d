package savepoint

import (
	"sort"
	"sync/atomic"

	"github.com/sptool/sptool/internal/prefault"
	"github.com/sptool/sptool/internal/testhook"
)

// KeyProbe picks out, from a column of keyed rows' keys, the rows whose
// user keys a purge may be after: a filter that may let through keys it
// does not hold, never the reverse. The pass at open (see ProbeSlot) asks
// it of each run of rows of one prefix while the keys are in the CPU's
// cache, so that a purge need not read every key again. rules.PurgeKeysSpec
// is one.
type KeyProbe interface {
	// MayMatchColumn calls fn(t), in increasing t, for each key t that may
	// be held: key t is keys[offs[t]-base+skip : offs[t+1]-base] (the
	// offsets count from base, and skip bytes of prefix are left out), for
	// t from 0 to len(offs)-2. It is called from several goroutines at
	// once.
	MayMatchColumn(keys []byte, offs []int32, base, skip int32, fn func(t int))
}

// WordProbe is a KeyProbe that may also be asked about 8-byte user keys
// (int64 keys, the common case) given as words, which the pass at open
// keeps as it compares the keys: without their offsets, their lengths or
// their prefixes, its loop has little left to do.
type WordProbe interface {
	KeyProbe
	// MayMatchWords calls fn(t), in increasing t, for each key t that may
	// be held: key t is the 8 bytes of words[t], in big-endian order. It
	// is called from several goroutines at once.
	MayMatchWords(words []uint64, fn func(t int))
}

// ProbeSlot hands a KeyProbe to the opening of a savepoint that starts
// before the probe is ready (the open and the loading of a purge list run
// side by side). The pass at open asks the slot at each block of rows: the
// rows it reads once the probe is there are probed (see KeyHits), those
// before are not. A nil slot, or one set to nil, probes nothing.
type ProbeSlot struct{ p atomic.Pointer[probeSet] }

type probeSet struct{ probe KeyProbe }

// Set gives the slot its probe (nil: none). Only the first call counts.
func (s *ProbeSlot) Set(p KeyProbe) { s.p.CompareAndSwap(nil, &probeSet{p}) }

// get returns the slot's probe and whether it was set.
func (s *ProbeSlot) get() (KeyProbe, bool) {
	if s == nil {
		return nil, true
	}
	ps := s.p.Load()
	if ps == nil {
		return nil, false
	}
	return ps.probe, true
}

// KeyHits are the rows of a snapshot that a KeyProbe let through when the
// snapshot was opened, with their keys: for each stretch of rows that the
// pass at open probed, every row the probe would let through, and no
// other. Rows outside the stretches were not probed.
type KeyHits struct {
	// Probe is the probe that picked the rows.
	Probe     KeyProbe
	stretches []hitStretch
}

// hitStretch is a stretch of rows [from, to) that were probed, and the
// rows the probe let through: key t of rows[t] is keys[ends[t]:ends[t+1]].
type hitStretch struct {
	from, to int
	rows     []int
	ends     []int32
	keys     []byte
}

// Hits returns the rows of [i, j) that the probe let through, in order,
// and their keys (that of rows[t] is keys[ends[t]:ends[t+1]]), if every row
// of [i, j) was probed; ok is false otherwise.
func (h *KeyHits) Hits(i, j int) (rows []int, keys []byte, ends []int32, ok bool) {
	if h == nil {
		return nil, nil, nil, false
	}
	s := sort.Search(len(h.stretches), func(k int) bool { return h.stretches[k].to > i })
	if s == len(h.stretches) {
		return nil, nil, nil, false
	}
	st := &h.stretches[s]
	if i < st.from || j > st.to {
		return nil, nil, nil, false
	}
	a := sort.SearchInts(st.rows, i)
	b := a + sort.SearchInts(st.rows[a:], j)
	return st.rows[a:b], st.keys, st.ends[a : b+1], true
}

// ProbedFrom returns the first row from, between i and j, such that every
// row of [from, j) was probed in one stretch: j when row j-1 was not
// probed. A run of rows the probe came in the middle of, or that two
// ranges of the pass at open share, is probed from there on: Hits answers
// for [from, j), and only the rows before need reading.
func (h *KeyHits) ProbedFrom(i, j int) int {
	if h == nil || j <= i {
		return j
	}
	s := sort.Search(len(h.stretches), func(k int) bool { return h.stretches[k].to >= j })
	if s == len(h.stretches) || h.stretches[s].from >= j {
		return j
	}
	return max(i, h.stretches[s].from)
}

// KeyHits returns the rows its probe let through when the snapshot was
// opened (see OpenOptions.Probe), or nil when none was probed.
func (s *Snapshot) KeyHits() *KeyHits { return s.hits }

// rangeProbe is what one range of the pass at open probes.
type rangeProbe struct {
	slot  *ProbeSlot
	probe KeyProbe
	wp    WordProbe // probe, when it is one
	// words are the user keys of the chunk being read, when wp takes them
	// and every row of a slotted run has an 8-byte one (wordsOK).
	words   []uint64
	wordsOK bool
	off     bool     // nothing (more) to probe: no probe, or too many hits
	from    int      // the batch row the probing started at
	run     int      // the index of the range's run that the next block starts in
	max     int      // the most hits kept
	first   [2]int32 // the offsets of a chunk's first row
	hits    hitStretch
}

// probeChunk probes the rows [x, x+len(ends)) of r's batch, whose keys are
// keys (the first starting at keys[0], the rest at the end of the one
// before; ends are their ends, counted from base). It is called in row
// order, after the rows' runs were noted.
func (r *verifyRange) probeChunk(x int, keys []byte, base int32, ends []int32) {
	p := &r.probe
	if p.off {
		return
	}
	if testhook.ProbeChunk != nil {
		testhook.ProbeChunk(p.slot)
	}
	if p.probe == nil {
		probe, set := p.slot.get()
		if !set {
			return // not ready yet: later blocks
		}
		if probe == nil {
			p.off = true
			return
		}
		p.probe, p.from = probe, x
		p.wp, _ = probe.(WordProbe)
		p.hits.ends = append(p.hits.ends[:0], 0)
	}
	if !r.strict || r.tooMany {
		p.stop() // no runs: the hits would not be used
		return
	}
	runs := r.runs.runs
	c := len(ends)
	first := r.offset + x // the chunk's rows, as the snapshot's
	for j := 0; j < c; {
		for p.run+1 < len(runs) && runs[p.run+1].start <= first+j {
			p.run++
		}
		run := &runs[p.run]
		k := c - j // the rows of the chunk in this run
		if p.run+1 < len(runs) {
			k = min(k, runs[p.run+1].start-(first+j))
		}
		if run.slotted {
			// Room for every row of the segment to be a hit, and its key.
			done, left := x+j-p.from, r.hi-(x+j)
			p.hits.rows = prefault.GrowAtRate(p.hits.rows, k, done, left)
			p.hits.ends = prefault.GrowAtRate(p.hits.ends, k, done, left)
			p.hits.keys = prefault.GrowAtRate(p.hits.keys, int(ends[j+k-1]-keyStart(ends, base, j)), done, left)
			if p.wordsOK {
				p.askWords(keys, ends, base, j, k, first)
			} else {
				p.askKeys(keys, ends, base, j, k, first, int32(run.plen))
			}
			if len(p.hits.rows) > p.max {
				p.stop()
				return
			}
		}
		j += k
	}
}

// wordsFor returns the words for the c user keys of the next chunk, when
// the probe takes them (nil otherwise); the chunk's rows then fill them
// in, or call noWords.
func (p *rangeProbe) wordsFor(c int) []uint64 {
	p.wordsOK = p.wp != nil && !p.off
	if !p.wordsOK {
		return nil
	}
	p.words = prefault.Grow(p.words[:0], c)[:c]
	return p.words
}

// noWords notes that some row of the chunk being read has no word: the
// chunk is probed by its keys.
func (p *rangeProbe) noWords() { p.wordsOK = false }

// askWords asks the probe about the words of rows [j, j+k) of a chunk (see
// probeChunk), the chunk's first being the snapshot's row first, and keeps
// its hits.
func (p *rangeProbe) askWords(keys []byte, ends []int32, base int32, j, k, first int) {
	p.wp.MayMatchWords(p.words[j:j+k], func(t int) {
		i := j + t
		p.keep(first+i, keys[keyStart(ends, base, i)-base:ends[i]-base])
	})
}

// keyStart returns where row i of a chunk's keys starts, counted from
// base as ends are (see probeChunk): row 0 at base, which ends does not
// hold.
func keyStart(ends []int32, base int32, i int) int32 {
	if i == 0 {
		return base
	}
	return ends[i-1]
}

// askKeys asks the probe about the keys of rows [j, j+k) of a chunk (see
// probeChunk; plen bytes of prefix), the chunk's first being the
// snapshot's row first, and keeps its hits.
func (p *rangeProbe) askKeys(keys []byte, ends []int32, base int32, j, k, first int, plen int32) {
	from := j // the first row asked with the ends before it
	if j == 0 {
		// Row 0 starts at base, which ends does not hold.
		p.first = [2]int32{base, ends[0]}
		p.ask(keys, p.first[:], base, plen, first)
		from = 1
	}
	if from < j+k {
		p.ask(keys, ends[from-1:j+k], base, plen, first+from)
	}
}

// ask asks the probe about the keys of a segment of rows (see
// KeyProbe.MayMatchColumn: offs from base, plen bytes of prefix), the
// first of which is the snapshot's row row, and keeps its hits.
func (p *rangeProbe) ask(keys []byte, offs []int32, base, plen int32, row int) {
	p.probe.MayMatchColumn(keys, offs, base, plen, func(t int) {
		p.keep(row+t, keys[offs[t]-base:offs[t+1]-base])
	})
}

// keep keeps the snapshot's row row, whose key is key, as a hit.
func (p *rangeProbe) keep(row int, key []byte) {
	h := &p.hits
	if len(h.rows) == cap(h.rows) {
		// Grown as prefault.Grow does: the hits of a purge of many keys
		// come to megabytes, whose fresh pages would each cost a fault.
		h.rows, h.ends = prefault.Grow(h.rows, 1), prefault.Grow(h.ends, 1)
	}
	h.keys = prefault.Grow(h.keys, len(key))
	h.rows = append(h.rows, row)
	h.keys = append(h.keys, key...)
	h.ends = append(h.ends, int32(len(h.keys)))
}

// stop ends the range's probing, its hits dropped.
func (p *rangeProbe) stop() {
	p.off, p.probe, p.hits = true, nil, hitStretch{}
}

// stretch returns the range's probed rows and hits, if it probed any; the
// range is rows [lo, hi) of its batch, the first of which is the
// snapshot's row offset.
func (p *rangeProbe) stretch(offset, hi int) (hitStretch, bool) {
	if p.probe == nil {
		return hitStretch{}, false
	}
	h := p.hits
	h.from, h.to = offset+p.from, offset+hi
	return h, true
}
