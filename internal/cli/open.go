package cli

import (
	"context"

	"github.com/sptool/sptool/savepoint"
)

// opening is the open of a savepoint running on a goroutine of its own
// (see startOpen).
type opening struct {
	done chan opened
}

// opened is what an open came to.
type opened struct {
	sp       *savepoint.Savepoint
	err      error
	panicked any // a panic of the open, raised again where it is waited for
}

// startOpen runs open on a goroutine of its own: a command can do other
// work meanwhile, and stop waiting for it when it is cancelled (an open
// reads and checksums every input file, at disk speed for a savepoint not
// in the page cache, and writes nothing). A fault of a mapped input (cut
// short meanwhile) is an error.
func startOpen(open func() (*savepoint.Savepoint, error)) *opening {
	o := &opening{done: make(chan opened, 1)}
	go func() {
		var res opened
		defer func() {
			res.panicked = recover()
			o.done <- res
		}()
		res.err = savepoint.Guard(func() error {
			res.sp, res.err = open()
			return res.err
		})
	}()
	return o
}

// wait returns what the open returned, or ctx's error as soon as ctx is
// done, whichever comes first; an open it stops waiting for is abandoned.
// A panic of the open is raised again.
func (o *opening) wait(ctx context.Context) (*savepoint.Savepoint, error) {
	select {
	case res := <-o.done:
		if res.panicked != nil {
			panic(res.panicked)
		}
		return res.sp, res.err
	case <-ctx.Done():
		o.abandon()
		return nil, ctx.Err()
	}
}

// abandon leaves the open to end on its own and close what it opened; a
// panic of it is raised on its goroutine, where it ends the process.
func (o *opening) abandon() {
	go func() {
		res := <-o.done
		if res.sp != nil {
			res.sp.Close()
		}
		if res.panicked != nil {
			panic(res.panicked)
		}
	}()
}

// openUntil opens a savepoint with open, as startOpen and wait do.
func openUntil(ctx context.Context, open func() (*savepoint.Savepoint, error)) (*savepoint.Savepoint, error) {
	return startOpen(open).wait(ctx)
}
