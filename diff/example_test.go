package diff_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/sptool/sptool/diff"
	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/transform"
)

// Compare a savepoint with the result of a migration, by logical state:
// what a restore at each side's layout holds, whatever the files' order,
// compression or parallelism.
func ExampleCompare() {
	before, err := savepoint.Open("../testdata/example", savepoint.OpenOptions{RequireValid: true, Columnar: true})
	if err != nil {
		log.Fatal(err)
	}
	defer before.Close()

	// The other side: the same tree with one operator's "cart" slot dropped.
	set, err := rules.Parse("inline.yaml", []byte("version: 1\nrules:\n  - drop: 'op == 3714747266114981297 && slot == \"cart\"'\n"))
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if _, err := transform.Run(context.Background(), before, set, transform.Options{Out: filepath.Join(dir, "after")}); err != nil {
		log.Fatal(err)
	}
	after, err := savepoint.Open(filepath.Join(dir, "after"), savepoint.OpenOptions{RequireValid: true, Columnar: true})
	if err != nil {
		log.Fatal(err)
	}
	defer after.Close()

	res, err := diff.Compare(context.Background(), before, after, diff.Options{})
	if err != nil {
		log.Fatal(err)
	}
	s := res.Summary
	fmt.Printf("identical: %v; %d removed, %d added, %d changed, %d unchanged; %d slot(s) changed\n",
		res.Identical, s.Removed, s.Added, s.Changed, s.Unchanged, s.SlotsChanged)
	// Output:
	// identical: false; 300 removed, 0 added, 0 changed, 803 unchanged; 1 slot(s) changed
}
