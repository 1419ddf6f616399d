package transform

import "github.com/sptool/sptool/savepoint"

// SetSpill sets the fewest output rows sorted through temporary files and
// the sort's memory budget; it returns a function that restores them.
func SetSpill(minRows, budget int) (restore func()) {
	m, b := minSpillRows, spillBudget
	minSpillRows, spillBudget = minRows, budget
	return func() { minSpillRows, spillBudget = m, b }
}

// SetBeforeSpillSort sets a function called before an output is sorted
// through temporary files; it returns a function that removes it.
func SetBeforeSpillSort(fn func()) (restore func()) {
	beforeSpillSort = fn
	return func() { beforeSpillSort = nil }
}

// Spills returns how many outputs were sorted through temporary files.
func Spills() int64 { return spillCount.Load() }

// SetShadowSearch sets the fewest rows of an input searched for hidden
// copies with a hash of each key rather than sorted; with search false,
// such an input is not searched (the search has no memory). It returns a
// function that restores both.
func SetShadowSearch(rows int, search bool) (restore func()) {
	m, b := maxShadowSearchRows, shadowBudget
	maxShadowSearchRows = rows
	if !search {
		shadowBudget = func(*savepoint.File) int64 { return 0 }
	}
	return func() { maxShadowSearchRows, shadowBudget = m, b }
}

// CompositeLikeForTest is compositeLike.
func CompositeLikeForTest(uk []byte, codec string) bool { return compositeLike(uk, codec) }

// SetPresort turns the sort of a rescaled group's files before the rules
// pass (presorts) on or off; it returns a function that restores it.
func SetPresort(on bool) (restore func()) {
	was := noPresort
	noPresort = !on
	return func() { noPresort = was }
}

// Presorts returns how many files were sorted before the rules pass.
func Presorts() int64 { return presortCount.Load() }

// SetRunLog turns the use of the run logs (runLog.describes) on or off; it
// returns a function that restores it.
func SetRunLog(on bool) (restore func()) {
	was := noRunLog
	noRunLog = !on
	return func() { noRunLog = was }
}
