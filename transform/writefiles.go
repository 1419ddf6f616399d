package transform

import (
	"cmp"
	"context"
	"errors"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/sptool/sptool/savepoint"
)

// Writing the files of a tree several at once.
//
// A rescale's new files, and the files of a tree the rules rewrote, are
// written by up to Options.Jobs goroutines at once, one file each (or a
// share of them when there are fewer files), the largest first. Two files
// written at once by one goroutine each take less time than the two
// written one after the other with two goroutines each: writes to one file
// take its lock in turn, and one file's set-up and publication (fsync and
// rename) overlap the other's copying. On two CPUs a rescale of a 10M-row
// tree, 4 -> 7 files, is 8% faster, and a filter over it 18%.
//
// A file over its share of the work (the rows of the files left over the
// goroutines that would write them at once) would be left to finish alone
// on one goroutine: it is written first, alone, with all of them. The
// goroutines' writers hold what one file's writer with as many goroutines
// holds (a sink and a window each), so memory stays bounded by Jobs.

// fileWrite is what came of writing one output file.
type fileWrite struct {
	info savepoint.FileInfo
	err  error
}

// writeFiles calls write for each file, with up to jobs goroutines in all
// (0: the number of CPUs), and returns what came of each in the files'
// order. write is given how many goroutines the file's own writer may use.
// Once one fails (or ctx is done) no other file is started: those not
// started have ctx's error, or errSkipped. A panic in write is raised
// again in the caller.
func writeFiles(ctx context.Context, files []*newFile, jobs int, write func(nf *newFile, jobs int) (savepoint.FileInfo, error)) []fileWrite {
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	out := make([]fileWrite, len(files))
	var stop atomic.Bool
	run := func(i, jobs int) {
		if stop.Load() {
			out[i].err = errSkipped
			return
		}
		if err := ctx.Err(); err != nil {
			out[i].err = err
			stop.Store(true)
			return
		}
		out[i].info, out[i].err = write(files[i], jobs)
		if out[i].err != nil {
			stop.Store(true)
		}
	}
	// Copies of input files weigh nothing: the kernel copies them.
	weight := func(i int) int64 {
		if files[i].copyOf != nil {
			return 0
		}
		return int64(files[i].rows.Len())
	}
	order := make([]int, len(files))
	var total int64
	for i := range order {
		order[i] = i
		total += weight(i)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(weight(b), weight(a)) })
	// A file over its share of the goroutines' work is written alone.
	for len(order) > 0 && weight(order[0])*int64(min(jobs, len(order))) > total {
		total -= weight(order[0])
		run(order[0], jobs)
		order = order[1:]
	}
	rest := order
	if len(rest) == 0 {
		return out
	}
	workers := min(jobs, len(rest))
	per := max(1, jobs/workers)
	var next atomic.Int64
	var f savepoint.Faults
	for range workers {
		f.Go(func() {
			for {
				j := int(next.Add(1)) - 1
				if j >= len(rest) {
					return
				}
				run(rest[j], per)
			}
		})
	}
	f.Wait()
	return out
}

// errSkipped is the outcome of a file not written because another failed
// first.
var errSkipped = errors.New("not written: another file failed first")

// firstError returns the first error of ws in order, other than
// errSkipped.
func firstError(ws []fileWrite) error {
	for _, w := range ws {
		if w.err != nil && w.err != errSkipped {
			return w.err
		}
	}
	return nil
}
