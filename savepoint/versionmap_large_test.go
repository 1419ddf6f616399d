package savepoint

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// parseVersionMapBySet is ParseVersionMap as clink's unpack reads it: every
// line through Set, in order. ParseVersionMap must agree with it.
func parseVersionMapBySet(packed string) (VersionMap, error) {
	var m VersionMap
	for lineNo, line := range textLines(packed) {
		e, err := parseVersionLine(line)
		if err == nil {
			err = m.Set(e)
		}
		if err != nil {
			return VersionMap{}, fmt.Errorf("parse version map line %d %q: %w", lineNo, line, err)
		}
	}
	return m, nil
}

// A version map of many distinct entries (a few megabytes, within the
// metadata bound) parses in time linear in its size, not quadratic: eight
// times the entries take well under 64 times as long (the quickest of a
// few runs of each, measured together, so that the machine's load cancels
// out; linear is 8 times, quadratic 64).
func TestParseVersionMapLarge(t *testing.T) {
	packed := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "%d|state_%d|%d|slot\n", i%1000, n-i, i%7)
		}
		return b.String()
	}
	const n = 200_000
	small, large := packed(n/8), packed(n)
	quickest := func(src string, want int) time.Duration {
		best := time.Duration(1<<63 - 1)
		for range 3 {
			start := time.Now()
			m, err := ParseVersionMap(src)
			best = min(best, time.Since(start))
			if err != nil || m.Len() != want {
				t.Fatalf("%d entries: %d parsed, %v", want, m.Len(), err)
			}
		}
		return best
	}
	ts, tl := quickest(small, n/8), quickest(large, n)
	if ratio := float64(tl) / float64(max(ts, time.Microsecond)); ratio > 32 {
		t.Errorf("%d entries parsed in %v, %d in %v: %.0f times as long for 8 times the entries", n/8, ts, n, tl, ratio)
	}
}

// ParseVersionMap gives the map and the error (line and message) that
// reading every line through Set in order gives, on random maps with many
// duplicates, slot rebinding and conflicts, and malformed lines.
func TestParseVersionMapAsSet(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	lines := []string{"", "x", "1|t", "1|t|x", "1|t|1|a|b", "1|t|2|", "1|t|3\r"}
	for range 20_000 {
		var b strings.Builder
		for j := range r.IntN(12) {
			if j > 0 {
				b.WriteByte('\n')
			}
			if r.IntN(20) == 0 {
				b.WriteString(lines[r.IntN(len(lines))])
				continue
			}
			fmt.Fprintf(&b, "%d|%c|%d", r.IntN(3), 'a'+r.IntN(3), r.IntN(3))
			if s := r.IntN(4); s > 0 {
				fmt.Fprintf(&b, "|s%d", s)
			}
		}
		in := b.String()
		got, gotErr := ParseVersionMap(in)
		want, wantErr := parseVersionMapBySet(in)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || errors.Is(gotErr, ErrSlotConflict) != errors.Is(wantErr, ErrSlotConflict) || !got.Equal(want) {
			t.Fatalf("ParseVersionMap(%q) = %q, %v; line by line through Set: %q, %v", in, got.Pack(), gotErr, want.Pack(), wantErr)
		}
	}
}
