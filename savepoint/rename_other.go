//go:build !linux

package savepoint

// renameExclusive renames from to to unless to exists (see
// renameExclusiveFallback: elsewhere than Linux there is no one call for
// it that every system has).
func renameExclusive(from, to string) error { return renameExclusiveFallback(from, to) }
