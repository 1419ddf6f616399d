package rules

import (
	"strconv"
	"testing"
)

// The filter never rules out a listed key, and rules out most others.
func TestKeyFilter(t *testing.T) {
	const n = 10000
	f := newKeyFilter(n)
	for i := range n {
		f.addHash(keyHash("user-" + strconv.Itoa(i)))
	}
	for i := range n {
		if !f.mayHave([]byte("user-" + strconv.Itoa(i))) {
			t.Fatalf("listed key user-%d ruled out", i)
		}
	}
	through := 0
	for i := n; i < 11*n; i++ {
		if f.mayHave([]byte("user-" + strconv.Itoa(i))) {
			through++
		}
	}
	// About 1 in 700 at this size (26 bits a key); two bits in two words
	// let 1 in 180 through.
	if rate := float64(through) / (10 * n); rate > 0.004 {
		t.Errorf("%.3f%% of unlisted keys get through, want under 0.4%%", 100*rate)
	}
	var empty keyFilter
	if !empty.mayHave([]byte("x")) {
		t.Error("an unbuilt filter must let every key through")
	}
}
