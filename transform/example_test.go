package transform_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/transform"
)

// Apply a rule file to a checkpoint tree and write the result as a new
// tree, as `sptool apply` does: open the input requiring valid sidecars,
// parse the rules, run them, and read the report, whose counts account
// for every row. The output is published atomically, with a sidecar for
// every payload and the COMPLETED marker last.
func ExampleRun() {
	sp, err := savepoint.Open("../testdata/example", savepoint.OpenOptions{RequireValid: true, Columnar: true})
	if err != nil {
		log.Fatal(err)
	}
	defer sp.Close()

	set, err := rules.Parse("inline.yaml", []byte(`version: 1
rules:
  - name: forget carts
    drop: 'op == 3714747266114981297 && slot == "cart"'
`))
	if err != nil {
		log.Fatal(err) // an *rules.Errors: every problem of the file, positioned
	}

	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	rep, err := transform.Run(context.Background(), sp, set, transform.Options{Out: filepath.Join(dir, "out")})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("rows: %d in, %d out, %d dropped\n", rep.RowsIn, rep.RowsOut, rep.RowsDropped)
	for _, r := range rep.PerRule {
		fmt.Printf("rule %q: %d matched, %d dropped\n", r.Name, r.Matched, r.Dropped)
	}
	fmt.Println("files written:", rep.Output.Files)

	// The output reads back as a valid tree.
	out, err := savepoint.Open(rep.Output.Path, savepoint.OpenOptions{RequireValid: true})
	if err != nil {
		log.Fatal(err)
	}
	defer out.Close()
	fmt.Println("errors:", savepoint.Validate(out, savepoint.ValidateOptions{}).Errors())
	// Output:
	// rows: 1112 in, 812 out, 300 dropped
	// rule "forget carts": 300 matched, 300 dropped
	// files written: 4
	// errors: 0
}
