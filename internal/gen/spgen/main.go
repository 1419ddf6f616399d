// Command spgen writes synthetic clink savepoints: the bundled example tree
// (testdata/example) and large snapshots for benchmarks.
//
//	go run ./internal/gen/spgen example DIR
//	go run ./internal/gen/spgen big FILE ROWS [--sorted]
//	go run ./internal/gen/spgen bigtree DIR ROWS SUBTASKS
package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/sptool/sptool/internal/gen"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "spgen:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: spgen example DIR | spgen big FILE ROWS [--sorted]")
	}
	switch args[0] {
	case "example":
		return gen.WriteExample(args[1], gen.DefaultExample)
	case "big":
		if len(args) < 3 {
			return fmt.Errorf("usage: spgen big FILE ROWS [--sorted]")
		}
		n, err := strconv.Atoi(args[2])
		if err != nil || n < 0 {
			return fmt.Errorf("ROWS must be a non-negative integer, not %q", args[2])
		}
		return gen.WriteBig(args[1], gen.BigOptions{Rows: n, Seed: 1, Sorted: len(args) > 3 && args[3] == "--sorted"})
	case "bigtree":
		if len(args) < 4 {
			return fmt.Errorf("usage: spgen bigtree DIR ROWS SUBTASKS")
		}
		n, err1 := strconv.Atoi(args[2])
		p, err2 := strconv.Atoi(args[3])
		if err1 != nil || err2 != nil || n < 0 || p < 1 {
			return fmt.Errorf("ROWS and SUBTASKS must be positive integers")
		}
		return gen.WriteBigTree(args[1], gen.BigOptions{Rows: n, Seed: 1}, p)
	}
	return fmt.Errorf("unknown kind %q (example, big or bigtree)", args[0])
}
