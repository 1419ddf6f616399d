package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/sptool/sptool/savepoint"
)

func init() {
	register(&command{
		name:     "inspect",
		synopsis: "summarise a savepoint: operators, slots, sizes, key-group histogram and skew, version map, sidecars",
		usage:    "PATH [--json] [--checkpoint ID] [--groups 0-2,3-4] [--temp-dir DIR]",
		run:      runInspect,
	})
	register(&command{
		name:     "validate",
		synopsis: "check a savepoint against clink's format and restore contract (exit 1 on errors)",
		usage:    "PATH [--json] [--parallelism M] [--checkpoint ID] [--groups 0-2,3-4] [--temp-dir DIR]",
		run:      runValidate,
	})
}

// openFlags are the flags every command reading a savepoint shares.
type openFlags struct {
	fs         *pflag.FlagSet
	checkpoint *uint64
	groups     *string
}

func addOpenFlags(fs *pflag.FlagSet) openFlags {
	return openFlags{
		fs:         fs,
		checkpoint: uint64Flag(fs, "checkpoint", 0, "checkpoint id to read from a tree (default: the newest with a COMPLETED marker, else the newest in every subtask directory)"),
		groups:     fs.String("groups", "", "chain groups of the tree as subtask ranges, e.g. 0-2,3-4 (default: inferred)"),
	}
}

func (o openFlags) open(path string) (*savepoint.Savepoint, error) {
	return o.openWith(path, savepoint.OpenOptions{Columnar: true})
}

// openWith opens path with base options plus the shared flags.
func (o openFlags) openWith(path string, opts savepoint.OpenOptions) (*savepoint.Savepoint, error) {
	opts.Checkpoint, opts.CheckpointSet = *o.checkpoint, o.fs.Changed("checkpoint")
	if f := o.fs.Lookup("temp-dir"); f != nil && opts.TempDir == "" {
		opts.TempDir = f.Value.String()
	}
	if *o.groups != "" {
		gs, err := savepoint.ParseGroups(*o.groups)
		if err != nil {
			return nil, fmt.Errorf("--groups: %w", err)
		}
		opts.Groups = gs
	}
	return openRefusingTreeFlags(path, opts, "checkpoint", "groups")
}

// openRefusingTreeFlags opens path with opts, and refuses a single
// snapshot file when opts choose a checkpoint or chain groups, which only
// a tree has: the flags (named ckFlag and groupsFlag) would be ignored.
func openRefusingTreeFlags(path string, opts savepoint.OpenOptions, ckFlag, groupsFlag string) (*savepoint.Savepoint, error) {
	sp, err := savepoint.Open(path, opts)
	if err != nil || sp.Kind != savepoint.InputFile {
		return sp, err
	}
	switch {
	case opts.CheckpointSet:
		err = fmt.Errorf("--%s picks a checkpoint of a tree; %s is a single snapshot file", ckFlag, path)
	case opts.Groups != nil:
		err = fmt.Errorf("--%s gives the chain groups of a tree; %s is a single snapshot file", groupsFlag, path)
	default:
		return sp, nil
	}
	sp.Close()
	return nil, err
}

func runInspect(ctx context.Context, s *Streams, args []string) int {
	c := commands["inspect"]
	fs := flagSet(c)
	asJSON := fs.Bool("json", false, "print the summary as JSON (stable format, see the README)")
	of := addOpenFlags(fs)
	tempDir := fs.String("temp-dir", "", "where a large changelog is replayed, and a payload compressed as a whole decompressed, through temporary files (default: the system's temporary directory)")
	if done, code := parse(c, fs, s, args, exactly(1)); done {
		return code
	}
	if err := checkTempDir(*tempDir, fs.Arg(0)); err != nil {
		return usageError(s, c, err)
	}
	// A tree's file that does not decode is shown with the rest of the
	// tree, and the run then fails naming it.
	open := func() (*savepoint.Savepoint, error) {
		return of.openWith(fs.Arg(0), savepoint.OpenOptions{Columnar: true, KeepUndecodable: true})
	}
	sp, err := openUntil(ctx, open)
	if err != nil {
		return fail(s, c.name, err)
	}
	defer sp.Close()
	sum := savepoint.Summarize(sp)
	if err := ctx.Err(); err != nil {
		return fail(s, c.name, err) // no report of a run the user stopped
	}
	if err := writeReport(s.Out, *asJSON, sum); err != nil {
		return fail(s, c.name, err)
	}
	if err := sp.UndecodableError(); err != nil {
		return fail(s, c.name, fmt.Errorf("%w; sptool validate lists every file's findings", err))
	}
	return ExitOK
}

func runValidate(ctx context.Context, s *Streams, args []string) int {
	c := commands["validate"]
	fs := flagSet(c)
	asJSON := fs.Bool("json", false, "print the findings as JSON (stable format, see the README)")
	par := intFlag(fs, "parallelism", 0, "also check what a job resubmitted at this parallelism restores: every keyed row in its subtask's key-group range, every timer its restore fires")
	of := addOpenFlags(fs)
	tempDir := fs.String("temp-dir", "", "where a large changelog is replayed, and a payload compressed as a whole decompressed, through temporary files (default: the system's temporary directory)")
	if done, code := parse(c, fs, s, args, exactly(1)); done {
		return code
	}
	if err := checkTempDir(*tempDir, fs.Arg(0)); err != nil {
		return usageError(s, c, err)
	}
	switch {
	case *par < 0:
		return usageError(s, c, errNegative("--parallelism"))
	case *par == 0 && fs.Changed("parallelism"):
		// 0 is the flag's "not given": said, it would check nothing silently.
		return usageError(s, c, errors.New("--parallelism 0: a job runs at least one subtask"))
	case *par > savepoint.MaxParallelism:
		return usageError(s, c, fmt.Errorf("--parallelism %d: a job runs at most %d subtasks", *par, savepoint.MaxParallelism))
	}
	// A file clink's reader refuses is a finding, a tree's beside the
	// other files' (exit 1); a single file that cannot be read, or whose
	// bytes do not start as a stream, is unreadable input (exit 2), with
	// --json its one finding. A subtask with no directory below the
	// highest is a missing payload, and the others are checked at the
	// layout the indices imply. A COMPLETED marker that does not parse is
	// a warning, and the tree is checked as if it had none. With no
	// checkpoint in every directory, the newest present is checked.
	open := func() (*savepoint.Savepoint, error) {
		return of.openWith(fs.Arg(0), savepoint.OpenOptions{Columnar: true, KeepUndecodable: true, KeepGaps: true, KeepUndecodableFile: true, TolerateBadMarkers: true, NewestPresent: true})
	}
	sp, err := openUntil(ctx, open)
	if err != nil {
		if *asJSON && ctx.Err() == nil {
			// The findings are what --json promises: an input that cannot
			// be read is one, printed as the rest are (the error is said
			// on stderr too, and the exit code is still 2).
			if jerr := writeJSON(s.Out, savepoint.UnreadableReport(fs.Arg(0), err)); jerr != nil {
				err = errors.Join(err, jerr)
			}
		}
		return fail(s, c.name, err)
	}
	defer sp.Close()
	rep := savepoint.Validate(sp, savepoint.ValidateOptions{Parallelism: *par})
	if err := ctx.Err(); err != nil {
		return fail(s, c.name, err) // no verdict on a run the user stopped
	}
	if err := writeReport(s.Out, *asJSON, rep); err != nil {
		return fail(s, c.name, err)
	}
	if rep.Errors() > 0 {
		return ExitFindings
	}
	return ExitOK
}
