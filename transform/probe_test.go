package transform

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
)

// The probe of one purge list or of two lets through the same 8-byte keys
// given as words (savepoint.WordProbe) as given as a column of keys, and
// every listed one.
func TestPurgeProbeWords(t *testing.T) {
	for _, src := range []string{
		"version: 1\nrules:\n  - purge_keys: {keys: [3, 300, 3000], codec: int64}\n",
		"version: 1\nrules:\n  - purge_keys: {keys: [3, 300], codec: int64}\n  - purge_keys: {keys: [3000], codec: int64}\n",
	} {
		set, err := rules.Parse("t.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		p, ok := Probe(set).(savepoint.WordProbe)
		if !ok {
			t.Fatalf("%s: the probe takes no words", src)
		}
		// int64 keys 0..9999 behind a 2-byte prefix, and as words.
		var keys []byte
		offs := []int32{0}
		var words []uint64
		for i := range 10_000 {
			k := binary.LittleEndian.AppendUint64(nil, uint64(i))
			keys = append(append(keys, 0, 9), k...)
			offs = append(offs, int32(len(keys)))
			words = append(words, binary.BigEndian.Uint64(k))
		}
		var byKeys, byWords []int
		p.MayMatchColumn(keys, offs, 0, 2, func(t int) { byKeys = append(byKeys, t) })
		p.MayMatchWords(words, func(t int) { byWords = append(byWords, t) })
		if !slices.Equal(byKeys, byWords) {
			t.Errorf("%s: words let through %v, keys %v", src, byWords, byKeys)
		}
		for _, k := range []int{3, 300, 3000} {
			if !slices.Contains(byWords, k) {
				t.Errorf("%s: listed key %d ruled out", src, k)
			}
		}
		if len(byWords) > 100 {
			t.Errorf("%s: %d of 10,000 keys let through", src, len(byWords))
		}
	}
}
