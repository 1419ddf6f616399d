package transform

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

// SetShadowSearch sets the fewest rows of an input not searched for hidden
// copies; it returns a function that restores it.
func SetShadowSearch(rows int) (restore func()) {
	m := maxShadowSearchRows
	maxShadowSearchRows = rows
	return func() { maxShadowSearchRows = m }
}
