// Package testhook holds the hooks that tests of one package set to steer
// the code of another: nil, and never set, outside tests.
package testhook

// ProbeChunk, when set, is called by the pass at open of a snapshot (see
// savepoint.ProbeSlot) with the probe's slot (a *savepoint.ProbeSlot)
// before each block of rows is probed: a test sets the slot's probe there
// to have it come when the pass is under way.
var ProbeChunk func(slot any)

// PurgeFilter, when set, is called by the rules parser with the words of
// each purge list's filter once it is built: a test clears them to stand
// in for a filter that misses listed keys (the erasure audit must still
// see their rows).
var PurgeFilter func(words []uint64)

// RemoveReplaced, when set, is called by a tree's Commit with force, and
// by a file's publish with force, in place of removing the output it
// replaced (moved aside to dir): a test returns an error to stand in for
// a file there that cannot be removed.
var RemoveReplaced func(dir string) error

// RemoveTemp, when set, is called in place of removing a temporary file
// or a tree's staging directory that a write that failed leaves: a test
// returns an error to stand in for one that cannot be removed (its
// directory made read-only meanwhile).
var RemoveTemp func(name string) error

// TreeListed, when set, is called by the open of a tree with its root once
// its directories and markers are listed, before its files are opened: a
// test swaps the tree there for another (a --force run writing it).
var TreeListed func(root string)
