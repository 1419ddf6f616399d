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
// replayed through temporary files instead, in bounded memory:
//
//  1. The materialisations, in turn, are sorted with SortSpilled, which
//     resolves their duplicates as the restore does (MergeDuplicate): a
//     canonical copy, read from the materialisations a block at a time.
//  2. The log is sorted with SortSpilled too, every entry of a key kept in
//     stream order, each value led by its row_kind (logSource).
//  3. The two, both in canonical order and read in order, are merged into
//     a temporary file, each key's last log entry deciding over its
//     materialised row (a put replaces it, an erase removes it), and that
//     file is mapped as the snapshot's batches.
//
// The keys the log erases last go to a third file, where ErasedByLog
// finds them. The files are unlinked as soon as they are created; the
// sorted copies are closed once merged, the state's file and the erased
// keys' when the savepoint is closed. Nothing is read at random, and
// memory holds none of the rows.

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

// newMatSource returns the rows of mats, one after the other. Its Len,
// Row, Op, Key and Value are ColumnSource's.
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

// logSource is the log's rows as the external sort reads them: each
// value led by its row's row_kind, in a copy of its own (the sort copies
// it at once, from several goroutines); a materialisation row's value is
// left out (an inline one is the whole materialisation).
type logSource struct{ l *changelogLog }

func (s logSource) Len() int         { return s.l.rows.Len() }
func (s logSource) Op(i int) uint64  { return s.l.rows.Op(i) }
func (s logSource) Key(i int) []byte { return s.l.rows.Key(i) }
func (s logSource) Row(i int) Row    { return Row{Op: s.Op(i), Key: s.Key(i), Value: s.Value(i)} }

func (s logSource) Value(i int) []byte {
	if !s.l.isLog(i) {
		return []byte{s.l.kinds[i]}
	}
	v := s.l.rows.Value(i)
	return append(append(make([]byte, 0, 1+len(v)), s.l.kinds[i]), v...)
}

// isLogKind reports whether a row of row_kind k is a log row: 1, 2, or
// any other kind but a materialisation's 0 and 3 (replayed as a put).
func isLogKind(k uint8) bool { return k != rowKindMaterialised && k != rowKindHandle }

// replayInFile is replay through temporary files in opts.tempDir (see the
// comment above): it returns the replayed state, mapped (its file first,
// then, when the log erases keys, a file of those keys, which ErasedByLog
// reads), or an error of the files (a *TempFileError), of a read of the
// input, or opts.ctx's.
func replayInFile(mats []*Cursor, logs *changelogLog, info *ChangelogInfo, opts ReadOptions) (_ []*Spilled, err error) {
	stop := func() bool { return ctxErr(opts.ctx) != nil }
	sortIn := func(src ColumnSource, keep bool) (*Spilled, *Cursor, error) {
		if src.Len() == 0 {
			return nil, (&Snapshot{}).NewCursor(), nil
		}
		sp, err := SortSpilled(src, SpillOptions{Dir: opts.tempDir, Release: opts.release, Stop: stop, KeepDuplicates: keep})
		if err != nil {
			return nil, nil, replayFileError(err)
		}
		return sp, sp.Snapshot().NewCursor(), nil
	}
	matCopy, matRows, err := sortIn(newMatSource(mats), false)
	if err != nil {
		return nil, err
	}
	defer matCopy.Close()
	logCopy, logRows, err := sortIn(logSource{logs}, true)
	if err != nil {
		return nil, err
	}
	defer logCopy.Close()
	out, err := newColWriter(opts.tempDir, "replayed", DefaultSpillBudget)
	if err != nil {
		return nil, replayFileError(err)
	}
	var gone *colWriter // the keys the log erases last (created at the first)
	done := false
	defer func() {
		if !done { // an error, or a fault reading the input that Guard recovers
			out.abort()
			if gone != nil {
				gone.abort()
			}
		}
	}()
	info.log, info.erased = nil, info.erased[:0]
	i, n := 0, matRows.Len()
	// Now and then the pages of the copies read so far are dropped, and
	// the stop asked.
	read, release := 0, NewPacer(spillReleaseRows, spillReleaseRows)
	tick := func() error {
		if read++; !release.Due(read) {
			return nil
		}
		matCopy.ReleasePages()
		logCopy.ReleasePages()
		return ctxErr(opts.ctx)
	}
	// mat copies the next materialised row.
	mat := func() error {
		out.add(matRows.Row(i))
		i++
		return tick()
	}
	for li, ln := 0, logRows.Len(); li < ln; {
		// The entries of log row li's key, in stream order: the last log
		// entry decides.
		first, last := logRows.Row(li), -1
		for start := li; li < ln; li++ {
			r := logRows.Row(li)
			if li > start && (r.Op != first.Op || !bytes.Equal(r.Key, first.Key)) {
				break
			}
			if isLogKind(r.Value[0]) {
				last = li
			}
			if err := tick(); err != nil {
				return nil, err
			}
		}
		if last < 0 {
			continue // materialisation rows only
		}
		r := logRows.Row(last)
		kind := r.Value[0]
		r.Value = r.Value[1:]
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
		if kind == rowKindErase {
			if gone == nil {
				if gone, err = newColWriter(opts.tempDir, "erased", erasedBudget); err != nil {
					return nil, replayFileError(err)
				}
			}
			info.noteErased(len(info.erased)) // (row i of gone's file)
			gone.add(Row{Op: r.Op, Key: r.Key})
			continue
		}
		out.add(r)
	}
	for i < n {
		if err := mat(); err != nil {
			return nil, err
		}
	}
	files, err := finishAll(out, gone)
	done = true // (finishAll aborts what it does not finish)
	if err != nil {
		return nil, replayFileError(err)
	}
	if len(files) > 1 {
		info.log = files[1].Snapshot().NewCursor()
	}
	return files, nil
}

// erasedBudget is the memory of the writer of the keys a log erases.
const erasedBudget = 1 << 20

// finishAll finishes each writer that is not nil, in turn, and returns
// their files; when one fails, it closes the files finished and aborts
// the writers after it, and returns the error.
func finishAll(ws ...*colWriter) ([]*Spilled, error) {
	var files []*Spilled
	for k, w := range ws {
		if w == nil {
			continue
		}
		sp, err := w.finish()
		if err == nil {
			files = append(files, sp)
			continue
		}
		w.abort() // (a writer that failed to finish has closed nothing)
		for _, f := range files {
			f.Close()
		}
		for _, w := range ws[k+1:] {
			if w != nil {
				w.abort()
			}
		}
		return nil, err
	}
	return files, nil
}

// noteErased records that the log's last entry of the key of row j of
// c.log (the log's rows, or the file of erased keys replayInFile writes)
// erases it. The replay notes keys in canonical order, so that
// ErasedByLog finds them by binary search: 4 bytes a key, where a map of
// the keys took about 100 (125 MB for the 1.25M keys a log of 5M rows
// erased).
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
