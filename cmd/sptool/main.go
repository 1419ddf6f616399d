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
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/sptool/sptool/internal/cli"
	"github.com/sptool/sptool/savepoint"
	// Maps the executable's code in at once, before most packages
	// initialise (Linux; see the package).
	_ "github.com/sptool/sptool/internal/prefault"
)

func main() {
	// The engine's heap is small and mostly garbage from expression
	// evaluation; a tighter GC target keeps the resident set bounded (the
	// input is memory-mapped and released as it is read). GOGC overrides.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	stopProfiles := startProfiles(os.Getenv)
	code := run()
	if errs := stopProfiles(); len(errs) > 0 {
		for _, err := range errs {
			fmt.Fprintf(os.Stderr, "sptool: %v\n", err)
		}
		if code == cli.ExitOK {
			code = cli.ExitError
		}
	}
	os.Exit(code)
}

// startProfiles starts the CPU profile that SPTOOL_CPUPROFILE=FILE asks for
// and returns what ends the run's profiling: it writes that profile, and
// the heap profile that SPTOOL_MEMPROFILE=FILE asks for (its alloc_space
// shows what allocated most), for `go tool pprof`, each atomically as the
// other outputs are, and returns why one could not be written (a missing
// directory, a full disk).
func startProfiles(getenv func(string) string) func() []error {
	var errs []error
	var cpu bytes.Buffer // (a few hundred KB a minute)
	cpuPath := getenv("SPTOOL_CPUPROFILE")
	if cpuPath != "" {
		if err := pprof.StartCPUProfile(&cpu); err != nil {
			errs = append(errs, fmt.Errorf("SPTOOL_CPUPROFILE=%s: the profile was not written: %w", cpuPath, err))
			cpuPath = ""
		}
	}
	return func() []error {
		if cpuPath != "" {
			pprof.StopCPUProfile()
			errs = append(errs, saveProfile("SPTOOL_CPUPROFILE", cpuPath, func(w io.Writer) error {
				_, err := w.Write(cpu.Bytes())
				return err
			})...)
		}
		if path := getenv("SPTOOL_MEMPROFILE"); path != "" {
			errs = append(errs, saveProfile("SPTOOL_MEMPROFILE", path, func(w io.Writer) error {
				return pprof.Lookup("allocs").WriteTo(w, 0)
			})...)
		}
		return errs
	}
}

// saveProfile writes the profile that the variable env asks for at path,
// and returns the error, if any, naming both.
func saveProfile(env, path string, write func(io.Writer) error) []error {
	if err := savepoint.SaveFileAtomic(path, true, write); err != nil {
		return []error{fmt.Errorf("%s=%s: the profile was not written: %w", env, path, err)}
	}
	return nil
}

// sameSignal is how long after the first signal a second one is taken as
// the same request (see run).
const sameSignal = 250 * time.Millisecond

func run() int {
	// The first SIGINT, SIGTERM or SIGHUP (a terminal or an SSH session
	// closed under a run) cancels the run, which then removes what it
	// wrote and publishes nothing; a second one ends the process at once
	// (the default action, restored by stop). A second one sent with the
	// first (timeout(1) signals the process, then its process group, which
	// holds it too) is the same request, and is caught: only one that
	// comes sameSignal after the first ends the process.
	stopping := []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}
	ctx, stop := signal.NotifyContext(context.Background(), stopping...)
	echo := make(chan os.Signal, 4)
	signal.Notify(echo, stopping...)
	go func() {
		<-ctx.Done()
		time.Sleep(sameSignal)
		stop()
		signal.Stop(echo)
	}()
	code := cli.Main(ctx, os.Args[1:], &cli.Streams{
		In: os.Stdin, Out: os.Stdout, Err: os.Stderr,
		ErrIsTerminal: term.IsTerminal(int(os.Stderr.Fd())),
		OutIsTerminal: term.IsTerminal(int(os.Stdout.Fd())),
	})
	stop()
	return code
}
