// Command sptool processes savepoints of the clink stream engine offline.
//
// It reads a snapshot file or a whole checkpoint tree, inspects and validates
// it against clink's format contract, applies rules declared in YAML
// (filters, renames, operator remaps, GDPR key purges, TTL purges,
// version-map bumps, value rewrites, rescaling), and writes the result back
// in the canonical form clink restores.
//
//	sptool inspect ./checkpoints
//	sptool validate ./checkpoints
//	sptool cat ./checkpoints --slot counts --limit 20
//	sptool plan -r erasure.yaml ./checkpoints
//	sptool apply -r erasure.yaml ./checkpoints -o ./checkpoints-erased
//
// Run `sptool help` for every command.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"syscall"

	"golang.org/x/term"

	"github.com/sptool/sptool/internal/cli"
	// Maps the executable's code in at once, before most packages
	// initialise (Linux; see the package).
	_ "github.com/sptool/sptool/internal/prefault"
)

func main() {
	// SPTOOL_CPUPROFILE=FILE writes a CPU profile of the run, and
	// SPTOOL_MEMPROFILE=FILE a heap profile at its end (its alloc_space
	// shows what allocated most), for `go tool pprof`.
	// The engine's heap is small and mostly garbage from expression
	// evaluation; a tighter GC target keeps the resident set bounded (the
	// input is memory-mapped and released as it is read). GOGC overrides.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	profiling := false
	if path := os.Getenv("SPTOOL_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			profiling = pprof.StartCPUProfile(f) == nil
		}
	}
	code := run()
	if profiling {
		pprof.StopCPUProfile()
	}
	if path := os.Getenv("SPTOOL_MEMPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
	os.Exit(code)
}

func run() int {
	// The first SIGINT or SIGTERM cancels the run, which then removes what
	// it wrote and publishes nothing; a second one ends the process at once
	// (the default action, restored by stop).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := cli.Main(ctx, os.Args[1:], &cli.Streams{
		In: os.Stdin, Out: os.Stdout, Err: os.Stderr,
		ErrIsTerminal: term.IsTerminal(int(os.Stderr.Fd())),
		OutIsTerminal: term.IsTerminal(int(os.Stdout.Fd())),
	})
	stop()
	return code
}
