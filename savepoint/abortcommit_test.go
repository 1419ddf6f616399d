package savepoint

import (
	"os"
	"path/filepath"
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
