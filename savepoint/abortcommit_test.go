package savepoint

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// An Abort called while a Commit is under way (a caller giving up on
// another goroutine) waits for it: it removed the staging directory
// through an os.Root that followed it into place, and emptied the tree
// the Commit published, which returned nil. A Commit that returns nil
// leaves a whole tree at the output.
func TestTreeWriterAbortDuringCommit(t *testing.T) {
	bad := 0
	for i := range 100 {
		dir := t.TempDir()
		out := filepath.Join(dir, "tree")
		var wg sync.WaitGroup
		var tw *TreeWriter
		var aerr error
		delay := time.Duration(i%40) * 10 * time.Microsecond
		tw, err := CreateTree(out, TreeOptions{Generation: 1, Checkpoint: 7, BeforePublish: func() error {
			wg.Add(1)
			go func() { defer wg.Done(); aerr = tw.Abort() }() // a caller giving up
			time.Sleep(delay)
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tw.WriteSubtask(0, CanonicalMetadata(nil, VersionMap{}), []Row{{Op: 1, Key: []byte("k"), Value: []byte("v")}}, CompressNone); err != nil {
			t.Fatal(err)
		}
		cerr := tw.Commit("job1", nil)
		wg.Wait()
		if cerr != nil {
			continue
		}
		_, e1 := os.Stat(filepath.Join(out, "_jobs", "job1", "COMPLETED-7"))
		_, e2 := os.Stat(filepath.Join(out, "v1", "0", "checkpoint-7.snap"))
		if e1 != nil || e2 != nil {
			bad++
			if bad <= 3 {
				t.Errorf("Commit returned nil (Abort: %v) but the published tree lacks: marker %v, payload %v", aerr, e1, e2)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of 100 commits published a tree Abort emptied", bad)
	}
}

// A subtask write begun while Commit runs (BeforePublish stands for
// another goroutine's write that starts then) is refused: it was
// published, unlisted in the marker, and Commit returned nil. A Commit
// that fails before it publishes lets writes go on.
func TestTreeWriterWriteDuringCommit(t *testing.T) {
	out := filepath.Join(t.TempDir(), "tree")
	md := CanonicalMetadata(nil, VersionMap{})
	var tw *TreeWriter
	var werr error
	fail := true
	tw, err := CreateTree(out, TreeOptions{Generation: 1, Checkpoint: 7, BeforePublish: func() error {
		_, werr = tw.WriteSubtask(1, md, []Row{{Op: 1, Key: []byte("k2"), Value: []byte("v")}}, CompressNone)
		if fail {
			return errors.New("not now")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tw.WriteSubtask(0, md, []Row{{Op: 1, Key: []byte("k"), Value: []byte("v")}}, CompressNone); err != nil {
		t.Fatal(err)
	}
	if err := tw.Commit("job1", nil); err == nil || !errors.Is(werr, errCommitting) {
		t.Fatalf("Commit: %v; the write during it: %v", err, werr)
	}
	if _, err := tw.WriteSubtask(2, md, nil, CompressNone); err != nil {
		t.Errorf("a write after a Commit that failed: %v", err)
	}
	fail = false
	if err := tw.Commit("job1", nil); err != nil || !errors.Is(werr, errCommitting) {
		t.Fatalf("Commit: %v; the write during it: %v", err, werr)
	}
	if _, err := os.Stat(filepath.Join(out, "v1", "1")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("subtask 1, written during Commit, is in the tree: %v", err)
	}
}

// An Abort racing a subtask write under way waits for it: a changelog+file
// write made its materializations directory again after the Abort removed
// the staging directory, or the removal failed on it, leaving the staging
// directory behind.
func TestTreeWriterAbortRacesWrite(t *testing.T) {
	runs := 500
	if testing.Short() {
		runs = 50
	}
	for i := range runs {
		dir := t.TempDir()
		tw, err := CreateTree(filepath.Join(dir, "tree"), TreeOptions{Generation: 1, Checkpoint: 7, Backend: BackendChangelogFile})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			tw.WriteSubtask(0, CanonicalMetadata(nil, VersionMap{}), []Row{{Op: 1, Key: []byte("k"), Value: []byte("v")}}, CompressNone)
		}()
		time.Sleep(time.Duration(i%50) * time.Microsecond)
		aerr := tw.Abort()
		wg.Wait()
		if ents, _ := os.ReadDir(dir); len(ents) > 0 || aerr != nil {
			t.Fatalf("run %d: Abort (%v) racing a write left %v", i, aerr, ents)
		}
	}
}

// panicSource is a RowSource whose rows cannot be read: a fault of a
// mapped input, say.
type panicSource struct{}

func (panicSource) Len() int      { return 3 }
func (panicSource) Row(i int) Row { panic("fault reading the input") }

// A subtask write that panicked, recovered by its caller, is no subtask
// written: Commit refused nothing and published a tree whose marker listed
// it without its payload. The panic goes on to the caller.
func TestTreeWriterPanickedWrite(t *testing.T) {
	tw, err := CreateTree(filepath.Join(t.TempDir(), "tree"), TreeOptions{Generation: 1, Checkpoint: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Abort()
	func() {
		defer func() {
			if r := recover(); r != "fault reading the input" {
				t.Errorf("recovered %v, want the source's panic", r)
			}
		}()
		tw.WriteSubtaskFrom(0, CanonicalMetadata(nil, VersionMap{}), panicSource{}, CompressNone)
	}()
	if err := tw.Commit("job1", nil); err == nil || !strings.Contains(err.Error(), "subtask 0 not written") {
		t.Errorf("Commit after a write that panicked: %v", err)
	}
}
