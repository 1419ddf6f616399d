package prefault

import (
	"slices"
	"testing"
)

// TestGrowAtRate: a slice filled as rows are read grows as Grow does until
// there are enough of them to tell their rate, then to what the rows left
// will bring at that rate (an eighth more), and never past five times
// what they hold, however many rows are left.
func TestGrowAtRate(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		len, cap, n          int
		done, left           int
		wantMin, wantMax     int // the capacity
		wantSame, wantCopied bool
	}{
		{"room left", 10, 100, 5, 1000, 1000, 100, 100, true, false},
		{"too few to tell a rate", 100, 100, 50, 1000, 1_000_000, 200, 200, false, true},
		{"at the rate", 1000, 1000, 10, 10_000, 20_000, 3260, 3260, false, true},
		{"a burst early on", 1000, 1000, 10, 1000, 10_000_000, 5010, 5010, false, true},
		{"the last rows", 1000, 1000, 10, 99_000, 1000, 2000, 2000, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := make([]int32, tc.len, tc.cap)
			for i := range s {
				s[i] = int32(i)
			}
			g := GrowAtRate(s, tc.n, tc.done, tc.left)
			if c := cap(g); c < tc.wantMin || c > tc.wantMax || c < tc.len+tc.n {
				t.Errorf("cap = %d, want %d to %d", c, tc.wantMin, tc.wantMax)
			}
			if same := &g[:1][0] == &s[:1][0]; same != tc.wantSame {
				t.Errorf("same array: %v, want %v", same, tc.wantSame)
			}
			if !slices.Equal(g, s) {
				t.Errorf("elements not kept")
			}
		})
	}
}
