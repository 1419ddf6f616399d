package savepoint_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/sptool/sptool/savepoint"
)

// Open a checkpoint tree with its rows memory-mapped, visit its logical
// state (what a restore at its layout holds) and validate it. The reads of
// mapped rows run under Guard: a file cut short by another process meanwhile
// is then an error, not a fault that ends the process. Close releases the
// maps; no row may be used after it.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	tree := filepath.Join(dir, "ckpt")

	// A tree of two subtasks, each holding the keys of its key groups.
	tw, err := savepoint.CreateTree(tree, savepoint.TreeOptions{Generation: 1, Checkpoint: 7})
	if err != nil {
		log.Fatal(err)
	}
	rows := make([][]savepoint.Row, 2)
	for _, user := range []string{"alice", "bob", "carol"} {
		i := savepoint.SubtaskForKeyGroup(savepoint.KeyGroupOf([]byte(user)), 2)
		rows[i] = append(rows[i], savepoint.Row{Op: 1, Key: savepoint.EncodeKeyedKey([]byte("visits"), []byte(user)), Value: []byte{1}})
	}
	for i := range rows {
		if _, err := tw.WriteSubtask(i, nil, rows[i], savepoint.CompressNone); err != nil {
			tw.Abort()
			log.Fatal(err)
		}
	}
	if err := tw.Commit("job", nil); err != nil {
		log.Fatal(err)
	}

	sp, err := savepoint.Open(tree, savepoint.OpenOptions{RequireValid: true, Columnar: true})
	if err != nil {
		log.Fatal(err)
	}
	defer sp.Close()
	fmt.Println("files:", len(sp.Files), "checkpoint:", sp.Checkpoint)
	err = savepoint.Guard(func() error {
		for r := range sp.UnionSeq(nil) {
			k := savepoint.ParseKey(r.Row.Key)
			fmt.Printf("op %d slot %s key %s\n", r.Row.Op, k.SlotName(), k.UserKey)
		}
		rep := savepoint.Validate(sp, savepoint.ValidateOptions{})
		fmt.Println("errors:", rep.Errors(), "warnings:", rep.Warnings())
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// files: 2 checkpoint: 7
	// op 1 slot visits key alice
	// op 1 slot visits key bob
	// op 1 slot visits key carol
	// errors: 0 warnings: 0
}
