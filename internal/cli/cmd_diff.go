package cli

import (
	"context"
	"fmt"

	"github.com/sptool/sptool/diff"
	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
)

func init() {
	register(&command{
		name:     "diff",
		synopsis: "compare the logical state of two savepoints per operator and slot, and their version maps (exit 1 if they differ)",
		usage:    "A B [--json] [--rules FILE] [--limit N]",
		run:      runDiff,
	})
}

func runDiff(ctx context.Context, s *Streams, args []string) int {
	c := commands["diff"]
	fs := flagSet(c)
	asJSON := fs.Bool("json", false, "print the comparison as JSON (stable format, see docs/diff-export.md)")
	rulesPath := fs.StringP("rules", "r", "", "rule file whose slots: declarations decode the samples' keys and values (its rules are not applied)")
	limit := intFlag(fs, "limit", diff.DefaultLimit, "samples shown per slot for each of added, removed and changed (0: counts only)")
	ckA := uint64Flag(fs, "checkpoint-a", 0, "checkpoint id to read from tree A (default: the newest with a COMPLETED marker, else the newest in every subtask directory)")
	ckB := uint64Flag(fs, "checkpoint-b", 0, "checkpoint id to read from tree B (default: the newest with a COMPLETED marker, else the newest in every subtask directory)")
	groupsA := fs.String("groups-a", "", "chain groups of tree A as subtask ranges, e.g. 0-2,3-4 (default: inferred)")
	groupsB := fs.String("groups-b", "", "chain groups of tree B (default: inferred)")
	allowUnverified := fs.Bool("allow-unverified", false, "accept payloads without a sidecar (as CLINK_ALLOW_UNVERIFIED_CHECKPOINTS does)")
	tempDir := fs.String("temp-dir", "", "where a large file in clink's hash-map order is sorted, a large changelog replayed, and a payload compressed as a whole decompressed, through temporary files (default: the system's temporary directory)")
	if done, code := parse(c, fs, s, args, exactly(2)); done {
		return code
	}
	if *limit < 0 {
		return usageError(s, c, errNegative("--limit"))
	}
	if err := checkTempDir(*tempDir, fs.Args()...); err != nil {
		return usageError(s, c, err)
	}
	opts := diff.Options{Limit: *limit, TempDir: *tempDir}
	if *rulesPath != "" {
		set, err := rules.LoadDeclarations(*rulesPath)
		if err != nil {
			return fail(s, c.name, err)
		}
		opts.Rules = set
	}
	open := func(path string, ck uint64, ckFlag, groupsFlag, groups string) (*savepoint.Savepoint, error) {
		o := savepoint.OpenOptions{Checkpoint: ck, CheckpointSet: fs.Changed(ckFlag), RequireValid: true, AllowMissingSidecar: *allowUnverified, Columnar: true, TempDir: *tempDir}
		if groups != "" {
			gs, err := savepoint.ParseGroups(groups)
			if err != nil {
				return nil, fmt.Errorf("--%s: %w", groupsFlag, err)
			}
			o.Groups = gs
		}
		return openRefusingTreeFlags(path, o, ckFlag, groupsFlag)
	}
	a, err := openUntil(ctx, func() (*savepoint.Savepoint, error) {
		return open(fs.Arg(0), *ckA, "checkpoint-a", "groups-a", *groupsA)
	})
	if err != nil {
		return fail(s, c.name, fmt.Errorf("A: %w", err))
	}
	defer a.Close()
	b, err := openUntil(ctx, func() (*savepoint.Savepoint, error) {
		return open(fs.Arg(1), *ckB, "checkpoint-b", "groups-b", *groupsB)
	})
	if err != nil {
		return fail(s, c.name, fmt.Errorf("B: %w", err))
	}
	defer b.Close()
	res, err := diff.Compare(ctx, a, b, opts)
	if err != nil {
		return fail(s, c.name, err)
	}
	if *asJSON {
		if err := writeJSON(s.Out, res); err != nil {
			return fail(s, c.name, err)
		}
	} else {
		for _, w := range res.TextWarnings() {
			fmt.Fprintf(s.Err, "sptool diff: warning: %s\n", w)
		}
		if err := res.WriteText(newTextWriter(s.Out)); err != nil {
			return fail(s, c.name, err)
		}
	}
	if !res.Identical {
		return ExitFindings
	}
	return ExitOK
}
