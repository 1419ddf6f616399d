package export_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log"

	"github.com/sptool/sptool/export"
	"github.com/sptool/sptool/savepoint"
)

// Export a savepoint's logical state as JSON Lines to any writer (WriteFile
// writes a file atomically, and Parquet by default): one object a row, in
// canonical order, of the union of the tree's files (the 12 operator rows,
// one copy in each of the 4 subtasks, are 3 there).
func ExampleWrite() {
	sp, err := savepoint.Open("../testdata/example", savepoint.OpenOptions{RequireValid: true, Columnar: true})
	if err != nil {
		log.Fatal(err)
	}
	defer sp.Close()

	var out bytes.Buffer
	res, err := export.Write(context.Background(), &out, sp, export.Options{Format: export.JSONL})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d rows, %d operators, %d slots\n", res.Rows, res.Operators, res.Slots)
	first, _ := bufio.NewReader(&out).ReadString('\n')
	fmt.Print(first)
	// Output:
	// 1103 rows, 3 operators, 6 slots
	// {"op":3714747266114981297,"kind":"keyed","key_group":64,"slot":"cart","key":"0x757365722d311f736b752d313030","value":"0x80096324a20100000100000000000000","key_hex":"40636172747c757365722d311f736b752d313030","value_hex":"80096324a20100000100000000000000","expire_at":null,"subtask":2,"key_decoded":null,"value_decoded":null}
}
