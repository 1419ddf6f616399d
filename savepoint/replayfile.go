package savepoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
)

// A changelog replayed into a temporary file.
//
// replay holds the state it restores as rows in memory: 56 bytes a key
// beside the materialisations' bytes, which for a large materialisation
// is more memory than the file. Opened memory-mapped (OpenOptions.Columnar,
// as the commands open), a changelog of replayFileRows rows or more is
// replayed through temporary files instead, in memory bounded by the log:
//
//  1. The materialisations, in turn, are sorted with SortSpilled, which
//     resolves their duplicates as the restore does (MergeDuplicate): a
//     canonical copy, read from the materialisations a block at a time.
//  2. The log is sorted in memory (4 bytes a row and a byte for its
//     row_kind, beside the payload's map, which holds its rows) and only
//     each key's last entry kept.
//  3. The two, both in canonical order, are merged into a second
//     temporary file, each key's last log entry deciding over its
//     materialised row (a put replaces it, an erase removes it), and that
//     file is mapped as the snapshot's batches.
//
// Both files are unlinked as soon as they are created; the first is closed
// once merged, the second when the savepoint is closed.

// replayFileRows is the fewest rows (the materialisations' and the
// log's) of a changelog replayed through temporary files (a variable for
// tests).
var replayFileRows = 1 << 16

// matSource is the rows of the materialisations restored, one after the
// other, as one ColumnSource (safe for concurrent use, as the Cursors).
type matSource struct {
	mats   []*Cursor
	starts []int // the first row of each, then the total
}

func newMatSource(mats []*Cursor) *matSource {
	s := &matSource{mats: mats, starts: make([]int, len(mats)+1)}
	for i, c := range mats {
		s.starts[i+1] = s.starts[i] + c.Len()
	}
	return s
}

// locate returns the materialisation holding row i and the row's index there.
func (s *matSource) locate(i int) (*Cursor, int) {
	if len(s.mats) == 1 {
		return s.mats[0], i
	}
	m := sort.SearchInts(s.starts, i+1) - 1
	return s.mats[m], i - s.starts[m]
}

func (s *matSource) Len() int { return s.starts[len(s.mats)] }

func (s *matSource) Row(i int) Row {
	c, j := s.locate(i)
	return c.Row(j)
}

func (s *matSource) Op(i int) uint64 {
	c, j := s.locate(i)
	return c.Op(j)
}

func (s *matSource) Key(i int) []byte {
	c, j := s.locate(i)
	return c.Key(j)
}

func (s *matSource) Value(i int) []byte {
	c, j := s.locate(i)
	return c.Value(j)
}

// replayInFile is replay through temporary files in opts.tempDir (see the
// comment above): it returns the replayed state, mapped, or an error of
// the files (a *TempFileError), of a read of the input, or opts.ctx's.
func replayInFile(mats []*Cursor, logs *changelogLog, info *ChangelogInfo, opts ReadOptions) (_ *Spilled, err error) {
	info.log = logs.rows
	stop := func() bool { return ctxErr(opts.ctx) != nil }
	var sorted *Spilled
	if src := newMatSource(mats); src.Len() > 0 {
		if sorted, err = SortSpilled(src, SpillOptions{Dir: opts.tempDir, Release: opts.release, Stop: stop}); err != nil {
			return nil, replayFileError(err)
		}
		defer sorted.Close()
	}
	last := lastLogEntries(logs, opts.release)
	out, err := newColWriter(opts.tempDir, "replayed", DefaultSpillBudget)
	if err != nil {
		return nil, replayFileError(err)
	}
	done := false
	defer func() {
		if !done { // an error, or a fault reading the input that Guard recovers
			out.abort()
		}
	}()
	var matRows RowSource = RowSlice(nil)
	if sorted != nil {
		matRows = sorted.Snapshot().NewCursor()
	}
	i, n := 0, matRows.Len()
	// mat copies the next materialised row, and now and then drops the
	// pages of the sorted copy read so far and sees whether to stop.
	mat := func() error {
		out.add(matRows.Row(i))
		if i++; i%spillReleaseRows == 0 {
			sorted.ReleasePages()
			if stop() {
				return ctxErr(opts.ctx)
			}
		}
		return nil
	}
	for k, j := range last {
		if k%spillReleaseRows == spillReleaseRows-1 {
			if opts.release != nil {
				opts.release() // the log's rows read at random so far
			}
			if stop() {
				return nil, ctxErr(opts.ctx)
			}
		}
		r := logs.rows.Row(int(j))
		c := 1
		for i < n {
			if c = matRows.Row(i).Compare(r); c >= 0 {
				break
			}
			if err := mat(); err != nil {
				return nil, err
			}
		}
		if c == 0 {
			i++ // the log decides
		}
		if logs.kinds[j] == rowKindErase {
			info.noteErased(int(j))
			continue
		}
		out.add(r)
	}
	for i < n {
		if err := mat(); err != nil {
			return nil, err
		}
	}
	sp, err := out.finish()
	done = true // (a writer that failed to finish has closed nothing, and is aborted)
	if err != nil {
		out.abort()
		return nil, replayFileError(err)
	}
	return sp, nil
}

// lastLogEntries returns the index in logs of each key's last log entry
// (materialisation rows passed over), in canonical order of the keys. The
// keys of rows the sort marks as alone are not compared: read at random
// through the payload's map, they took a quarter of the replay of a log
// of 5M rows. release, when not nil, drops the map's pages between the
// sort's passes.
func lastLogEntries(logs *changelogLog, release func()) []uint32 {
	rows := logs.rows
	order, tie := sortOrder(rows.Len(), func(i int) (uint64, []byte) { return rows.Op(i), rows.Key(i) }, true, release)
	// same reports whether the rows at positions k-1 and k of the order
	// have one key.
	same := func(k int) bool {
		if !tie[k] {
			return false
		}
		a, b := int(order[k-1]), int(order[k])
		return rows.Op(a) == rows.Op(b) && bytes.Equal(rows.Key(a), rows.Key(b))
	}
	last := order[:0] // (written behind the reads: a key's entries are one or more)
	for k := 0; k < len(order); {
		found := -1
		for first := k; k < len(order) && (k == first || same(k)); k++ {
			if logs.isLog(int(order[k])) {
				found = int(order[k]) // the sort is stable: the last found is the key's last entry
			}
		}
		if found >= 0 {
			last = append(last, uint32(found))
		}
	}
	return last
}

// noteErased records that the last entry of the key of log row j erases
// it. The replay notes keys in canonical order, so that ErasedByLog
// finds them by binary search: 4 bytes a key, where a map of the keys
// took about 100 (125 MB for the 1.25M keys a log of 5M rows erased).
func (c *ChangelogInfo) noteErased(j int) {
	c.erased = append(c.erased, uint32(j))
}

// replayFileError marks an error of the replay's temporary files as such
// (a *TempFileError), not the payload's: a payload that cannot be
// replayed there is not undecodable. A fault reading the input, and a
// stop, are left as they are.
func replayFileError(err error) error {
	var tfe *TempFileError
	if errors.As(err, &tfe) || InputFault(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &TempFileError{fmt.Errorf("replay the changelog through temporary files: %w", err)}
}
