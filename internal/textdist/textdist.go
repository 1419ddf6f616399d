// Package textdist measures how far apart two names are, for the "did you
// mean" hints of rule files and the warnings of names that look mistyped.
package textdist

import "slices"

// Distance is the Levenshtein distance of a and b over their runes: the
// fewest insertions, deletions and substitutions that turn one into the
// other.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			c := 1
			if ra[i-1] == rb[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// Nearest returns the one of names nearest to name, for a "did you mean":
// within two edits, or one for a name of three runes or fewer, the same
// letters in another order counting as close enough ("kye" for "key"). It
// reports false when none is that near, or when several are equally near.
func Nearest(name string, names []string) (string, bool) {
	limit := 2
	if len([]rune(name)) <= 3 {
		limit = 1
	}
	best, bestD, ties := "", limit+1, 0
	for _, n := range names {
		d := Distance(name, n)
		if d > limit && sameLetters(name, n) {
			d = limit
		}
		switch {
		case n == best:
		case d < bestD:
			best, bestD, ties = n, d, 0
		case d == bestD:
			ties++
		}
	}
	return best, best != "" && ties == 0
}

// sameLetters reports whether a and b are made of the same runes.
func sameLetters(a, b string) bool {
	x, y := []rune(a), []rune(b)
	if len(x) != len(y) {
		return false
	}
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}
