package transform

import (
	"encoding/binary"
	"slices"

	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
)

// Probe returns a probe of the purge lists of set for the pass at open
// (savepoint.OpenOptions.Probe), or nil when set purges no keys. A
// snapshot opened with it gives Run the rows whose user keys any of the
// lists may hold, so that a purge does not read every key a second time
// to find them: Run uses the hits of a snapshot only when they come from a
// probe of every list of its rules.
func Probe(set *rules.Set) savepoint.KeyProbe {
	var lists []*rules.PurgeKeysSpec
	for _, r := range set.Rules {
		if r.PurgeKeys != nil {
			lists = append(lists, r.PurgeKeys)
		}
	}
	return ProbeLists(lists)
}

// ProbeLists is Probe of a set whose purge lists are lists, given before
// the set is (see rules.ParseOptions.KeysReady): the probe asks only
// their filters, which are built by then, and a Run of the set uses the
// hits it found. Nil when lists is empty.
func ProbeLists(lists []*rules.PurgeKeysSpec) savepoint.KeyProbe {
	if len(lists) == 0 {
		return nil
	}
	return &purgeProbe{lists: slices.Clone(lists)}
}

// purgeProbe lets through the keys that any of its lists may hold.
type purgeProbe struct {
	lists []*rules.PurgeKeysSpec
}

// MayMatchColumn implements savepoint.KeyProbe. One list, the common
// case, is asked a block at a time, without a call per key; several are
// asked key by key.
func (p *purgeProbe) MayMatchColumn(keys []byte, offs []int32, base, skip int32, fn func(t int)) {
	if len(p.lists) == 1 {
		p.lists[0].MayMatchColumn(keys, offs, base, skip, fn)
		return
	}
	for t := 0; t+1 < len(offs); t++ {
		if p.mayMatch(keys[offs[t]-base+skip : offs[t+1]-base]) {
			fn(t)
		}
	}
}

// MayMatchWords implements savepoint.WordProbe, as MayMatchColumn does
// KeyProbe.
func (p *purgeProbe) MayMatchWords(words []uint64, fn func(t int)) {
	if len(p.lists) == 1 {
		p.lists[0].MayMatchWords(words, fn)
		return
	}
	var k [8]byte
	for t, w := range words {
		binary.BigEndian.PutUint64(k[:], w)
		if p.mayMatch(k[:]) {
			fn(t)
		}
	}
}

// mayMatch reports whether any of the lists may hold userKey.
func (p *purgeProbe) mayMatch(userKey []byte) bool {
	for _, l := range p.lists {
		if l.MayMatch(userKey) {
			return true
		}
	}
	return false
}

// covers reports whether the probe asks every purge list of the steps.
func (p *purgeProbe) covers(steps []step) bool {
	for i := range steps {
		if l := steps[i].rule.PurgeKeys; l != nil && !slices.Contains(p.lists, l) {
			return false
		}
	}
	return true
}

// keyHits returns the hits of snap when a probe of every purge list of
// the engine's steps found them, or nil.
func (e *engine) keyHits(snap *savepoint.Snapshot) *savepoint.KeyHits {
	h := snap.KeyHits()
	if h == nil {
		return nil
	}
	if p, ok := h.Probe.(*purgeProbe); ok && p.covers(e.steps) {
		return h
	}
	return nil
}
