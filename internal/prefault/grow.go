package prefault

// Grow makes room in s for n more elements, doubling its capacity when it
// grows. append grows a large slice by a quarter at a time, copying it each
// time: for slices that grow to many megabytes a row at a time those copies,
// into memory touched for the first time, cost more than the appends. The
// new memory is mapped in at once (Slice) before the elements are
// copied to it, rather than a page fault at a time as they are copied and
// appended: the elements copied and as many again as a quarter of them
// (or n, if more), so that the resident set does not take the whole new
// capacity before it is used.
func Grow[S ~[]E, E any](s S, n int) S {
	return GrowAtRate(s, n, 0, 0) // (no rows read: no rate)
}

// GrowAtRate is Grow for a slice that fills as rows are read, at a rate
// that holds: done rows read gave its len(s) elements, left rows are to
// come. Once it holds enough elements to tell the rate, it grows to what
// the rows left will bring at that rate, and an eighth more: one or two
// arrays where doubling allocates (and copies) twice what is kept. It
// grows at least as Grow does (doubling, the next part prefaulted), and to
// at most five times its length, so that a burst of elements early on
// does not reserve for them all the way.
func GrowAtRate[S ~[]E, E any](s S, n, done, left int) S {
	if len(s)+n <= cap(s) {
		return s
	}
	c := len(s) + max(n, len(s), 64) // at least double
	if done > 0 && len(s) >= 256 {
		rate := float64(len(s)) / float64(done)
		want := len(s) + n + int(min(rate*float64(left)*1.125, 4*float64(len(s))))
		c = max(c, want)
	}
	t := make(S, len(s), c)
	Slice(t[: len(s) : len(s)+max(n, len(s)/4)])
	copy(t, s)
	return t
}
