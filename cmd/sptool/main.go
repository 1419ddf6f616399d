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
	"syscall"

	"golang.org/x/term"

	"github.com/sptool/sptool/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], &cli.Streams{
		In: os.Stdin, Out: os.Stdout, Err: os.Stderr,
		ErrIsTerminal: term.IsTerminal(int(os.Stderr.Fd())),
	})
	stop()
	os.Exit(code)
}
