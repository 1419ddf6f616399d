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
	stop := func() bool { return ctxErr(opts.ctx) != nil }
	var sorted *Spilled
	if src := newMatSource(mats); src.Len() > 0 {
		if sorted, err = SortSpilled(src, SpillOptions{Dir: opts.tempDir, Release: opts.release, Stop: stop}); err != nil {
			return nil, replayFileError(err)
		}
		defer sorted.Close()
	}
	last := lastLogEntries(logs)
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
		if k%spillReleaseRows == spillReleaseRows-1 && stop() {
			return nil, ctxErr(opts.ctx)
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
			info.noteErased(r.Op, r.Key)
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
// (materialisation rows passed over), in canonical order of the keys.
func lastLogEntries(logs *changelogLog) []uint32 {
	rows := logs.rows
	order := SortOrder(rows.Len(), func(i int) (uint64, []byte) { return rows.Op(i), rows.Key(i) })
	last := order[:0] // (written behind the reads: a key's entries are one or more)
	for k := 0; k < len(order); {
		op, key := rows.Op(int(order[k])), rows.Key(int(order[k]))
		found := -1
		for ; k < len(order) && rows.Op(int(order[k])) == op && bytes.Equal(rows.Key(int(order[k])), key); k++ {
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

// noteErased records that the log's last entry of (op, key) erases it.
func (c *ChangelogInfo) noteErased(op uint64, key []byte) {
	if c.erased == nil {
		c.erased = map[string]bool{}
	}
	c.erased[changelogKey(op, key)] = true
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
