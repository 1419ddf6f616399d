//go:build !linux

package savepoint

// renameExclusive renames from to to unless to exists (see
// renameExclusiveFallback: elsewhere than Linux there is no one call for
// it that every system has).
func renameExclusive(from, to string) error { return renameExclusiveFallback(from, to) }

// exchange reports that two paths cannot be swapped in one call here:
// the caller moves one aside, then renames the other into place.
func exchange(a, b string) (bool, error) { return false, nil }
