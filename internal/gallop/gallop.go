// Package gallop searches sorted ranges for answers expected near their
// start: the next row of another key in a run of equal keys, the end of a
// run a merge takes from one input.
package gallop

import "sort"

// Search is sort.Search for answers expected near the start: it returns the
// least i in [0, n) for which pred is true (n when there is none), pred
// being false then true over the range. It probes 0, 1, 3, 7, ... and then
// searches the last gap, so a run of m rows costs about 2 log2(m) probes
// that stay near its start in memory, whatever n.
func Search(n int, pred func(int) bool) int {
	lo, step := 0, 1
	for {
		hi := lo + step - 1
		if hi >= n {
			return lo + sort.Search(n-lo, func(i int) bool { return pred(lo + i) })
		}
		if pred(hi) {
			return lo + sort.Search(hi-lo, func(i int) bool { return pred(lo + i) })
		}
		lo, step = hi+1, step*2
	}
}
