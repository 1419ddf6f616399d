package transform

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/sptool/sptool/savepoint"
)

// filesOf returns output files of the given row counts (subtask i has
// rows[i]); a negative count makes a copy of an input file.
func filesOf(rows ...int) []*newFile {
	files := make([]*newFile, len(rows))
	for i, n := range rows {
		files[i] = &newFile{subtask: i, rows: savepoint.RowSlice(make([]savepoint.Row, max(n, 0)))}
		if n < 0 {
			files[i].copyOf = &savepoint.File{}
		}
	}
	return files
}

// A tree's files are written several at once, one goroutine each, the
// largest first; a file larger than its share first and alone, with every
// goroutine; with one goroutine, one after the other, largest first.
func TestWriteFilesSchedule(t *testing.T) {
	type call struct{ subtask, jobs int }
	for _, c := range []struct {
		name  string
		rows  []int
		jobs  int
		first []call // the calls made before any other, in order
		jobOf map[int]int
	}{
		{"equal files", []int{100, 100, 100, 100, 100, 100, 100}, 2, nil,
			map[int]int{0: 1, 1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1}},
		{"one file over its share", []int{10, 1000, 10, 10}, 2, []call{{1, 2}},
			map[int]int{0: 1, 1: 2, 2: 1, 3: 1}},
		{"two files over their share", []int{10, 500, 600, 10}, 4, []call{{2, 4}, {1, 4}},
			map[int]int{0: 2, 1: 4, 2: 4, 3: 2}},
		{"fewer files than goroutines", []int{100, 100}, 4, nil, map[int]int{0: 2, 1: 2}},
		{"copies weigh nothing", []int{-1, 100, -1}, 2, []call{{1, 2}}, map[int]int{0: 1, 1: 2, 2: 1}},
		{"one goroutine", []int{10, 30, 20}, 1, []call{{1, 1}, {2, 1}, {0, 1}}, map[int]int{0: 1, 1: 1, 2: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var calls []call
			busy, most := 0, 0
			files := filesOf(c.rows...)
			ws := writeFiles(context.Background(), files, c.jobs, func(nf *newFile, jobs int) (savepoint.FileInfo, error) {
				mu.Lock()
				calls = append(calls, call{nf.subtask, jobs})
				busy++
				most = max(most, busy)
				mu.Unlock()
				defer func() { mu.Lock(); busy--; mu.Unlock() }()
				return savepoint.FileInfo{Size: int64(nf.subtask)}, nil
			})
			if len(calls) != len(files) {
				t.Fatalf("%d calls for %d files: %v", len(calls), len(files), calls)
			}
			if most > c.jobs {
				t.Errorf("%d files written at once with %d goroutines", most, c.jobs)
			}
			if got := calls[:len(c.first)]; len(c.first) > 0 && !reflect.DeepEqual(got, c.first) {
				t.Errorf("first calls %v, want %v", got, c.first)
			}
			got := map[int]int{}
			for _, cl := range calls {
				got[cl.subtask] = cl.jobs
			}
			if !reflect.DeepEqual(got, c.jobOf) {
				t.Errorf("goroutines per file %v, want %v", got, c.jobOf)
			}
			for i, w := range ws {
				if w.err != nil || w.info.Size != int64(i) {
					t.Errorf("file %d: outcome %+v, want its own", i, w)
				}
			}
		})
	}
}

// Once a file fails no other starts; the error reported is the failure,
// not that of a file skipped after it (but before it in the files' order). A done context starts none. A panic in
// a file's writer is raised again in the caller.
func TestWriteFilesFailure(t *testing.T) {
	boom := errors.New("boom")
	var started []int
	ws := writeFiles(context.Background(), filesOf(10, 20, 30), 1, func(nf *newFile, jobs int) (savepoint.FileInfo, error) {
		started = append(started, nf.subtask)
		if nf.subtask == 1 {
			return savepoint.FileInfo{}, boom
		}
		return savepoint.FileInfo{}, nil
	})
	if !reflect.DeepEqual(started, []int{2, 1}) {
		t.Errorf("files started %v, want [2 1]", started)
	}
	if err := firstError(ws); !errors.Is(err, boom) {
		t.Errorf("first error %v, want %v", err, boom)
	}
	if !errors.Is(ws[0].err, errSkipped) {
		t.Errorf("file after the failure: %v, want it skipped", ws[2].err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ws = writeFiles(ctx, filesOf(10, 10, 10), 2, func(nf *newFile, jobs int) (savepoint.FileInfo, error) {
		t.Errorf("file %d written after the context was done", nf.subtask)
		return savepoint.FileInfo{}, nil
	})
	if err := firstError(ws); !errors.Is(err, context.Canceled) {
		t.Errorf("done context: %v, want %v", err, context.Canceled)
	}

	defer func() {
		if p := recover(); fmt.Sprint(p) != "bad file" {
			t.Errorf("recovered %v, want the writer's panic", p)
		}
	}()
	writeFiles(context.Background(), filesOf(10, 10, 10), 2, func(nf *newFile, jobs int) (savepoint.FileInfo, error) {
		if nf.subtask == 2 {
			panic("bad file")
		}
		return savepoint.FileInfo{}, nil
	})
	t.Error("a panic in a writer was lost")
}
