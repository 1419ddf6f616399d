// Command spgen writes synthetic clink savepoints: the bundled example tree
// (testdata/example) and large snapshots for benchmarks.
//
//	go run ./internal/gen/spgen example DIR
//	go run ./internal/gen/spgen big FILE ROWS [--sorted] [--key-pad N]
//	go run ./internal/gen/spgen bigtree DIR ROWS SUBTASKS [--shuffled] [--key-pad N] [--broadcast BYTES]
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
		return fmt.Errorf("usage: spgen example DIR | spgen big FILE ROWS [--sorted] | spgen bigtree DIR ROWS SUBTASKS [--shuffled]")
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
		o := gen.BigOptions{Rows: n, Seed: 1}
		if err := bigFlags(args[3:], &o, true); err != nil {
			return err
		}
		return gen.WriteBig(args[1], o)
	case "bigtree":
		if len(args) < 4 {
			return fmt.Errorf("usage: spgen bigtree DIR ROWS SUBTASKS [--shuffled] [--broadcast BYTES]")
		}
		n, err1 := strconv.Atoi(args[2])
		p, err2 := strconv.Atoi(args[3])
		if err1 != nil || err2 != nil || n < 0 || p < 1 {
			return fmt.Errorf("ROWS and SUBTASKS must be positive integers")
		}
		o := gen.BigOptions{Rows: n, Seed: 1}
		if err := bigFlags(args[4:], &o, false); err != nil {
			return err
		}
		return gen.WriteBigTree(args[1], o, p)
	}
	return fmt.Errorf("unknown kind %q (example, big or bigtree)", args[0])
}

// bigFlags parses --key-pad N and, for a file, --sorted (a file is
// otherwise in clink's hash-map order), for a tree --shuffled (a tree's
// files are otherwise canonical) and --broadcast N (a broadcast state of
// N bytes in every file).
func bigFlags(args []string, o *gen.BigOptions, file bool) error {
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "--sorted" && file:
			o.Sorted = true
		case args[i] == "--shuffled" && !file:
			o.ShuffledTree = true
		case args[i] == "--key-pad" || args[i] == "--broadcast" && !file:
			if i+1 == len(args) {
				return fmt.Errorf("%s needs a byte count", args[i])
			}
			n, err := strconv.Atoi(args[i+1])
			if err != nil || n < 0 {
				return fmt.Errorf("%s %q is not a byte count", args[i], args[i+1])
			}
			if args[i] == "--key-pad" {
				o.KeyPad = n
			} else {
				o.Broadcast = n
			}
			i++
		default:
			return fmt.Errorf("unknown option %q", args[i])
		}
	}
	return nil
}
