package gallop

import "testing"

// Search finds what sort.Search finds, probing only inside the range, in
// about 2 log2(answer) probes.
func TestSearch(t *testing.T) {
	for n := 0; n < 70; n++ {
		for want := 0; want <= n; want++ {
			probes := 0
			got := Search(n, func(i int) bool {
				probes++
				if i < 0 || i >= n {
					t.Fatalf("n %d: probe %d out of range", n, i)
				}
				return i >= want
			})
			if got != want {
				t.Fatalf("n %d, want %d: got %d", n, want, got)
			}
		}
	}
	// An answer near the start of a long range costs a few probes.
	probes := 0
	if got := Search(1<<30, func(i int) bool { probes++; return i >= 5 }); got != 5 {
		t.Fatalf("got %d, want 5", got)
	}
	if probes > 8 {
		t.Errorf("%d probes for an answer at 5 of 2^30, want at most 8", probes)
	}
}
