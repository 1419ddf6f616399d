package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/transform"
)

func init() {
	register(&command{
		name:     "rescale",
		synopsis: "re-partition a checkpoint tree by key group for a new parallelism (shorthand for a one-rule rescale)",
		usage:    "PATH -o OUT (--parallelism M | --group-parallelism 0-2=5,3-4=1) [--drop-lost] [--force] [--dry-run] [--report FILE] [--json]",
		run:      runRescale,
	})
}

func runRescale(ctx context.Context, s *Streams, args []string) int {
	c := commands["rescale"]
	fs := flagSet(c)
	par := intFlag(fs, "parallelism", 0, "the new parallelism of a tree with one chain group (1..128; more leaves subtasks without keyed state)")
	groups := fs.String("group-parallelism", "", "the new parallelism of each chain group, as old subtask ranges: 0-2=5,3-4=1")
	dropLost := fs.Bool("drop-lost", false, "drop lost keyed rows (held only outside their owner's file, which no restore at the old layout holds) instead of failing")
	dry := fs.Bool("dry-run", false, "report what would be written, write nothing")
	tf := addTransformFlags(fs, false)
	fs.MarkHidden("rules")
	fs.Lookup("out").Usage = "output directory: the rescaled tree (required unless --dry-run; never the input)"
	fs.Lookup("temp-dir").Usage = "where a large file in clink's hash-map order is sorted, a large changelog replayed, and a payload compressed as a whole decompressed, through temporary files (default: the nearest existing directory above the output; with --dry-run, the system's temporary directory)"
	if done, code := parse(c, fs, s, args, exactly(1)); done {
		return code
	}
	if fs.Changed("parallelism") && *par < 1 {
		return usageError(s, c, fmt.Errorf("--parallelism %d: a job runs at least one subtask", *par))
	}
	if *par > rules.MaxParallelism {
		return usageError(s, c, fmt.Errorf("--parallelism %d: clink runs at most %d subtasks", *par, rules.MaxParallelism))
	}
	if (*par == 0) == (*groups == "") {
		return usageError(s, c, errors.New("give exactly one of --parallelism and --group-parallelism"))
	}
	if *tf.rules != "" {
		return usageError(s, c, errors.New("rescale takes no rule file; use `sptool apply -r` with a rescale rule to combine it with other rules"))
	}
	if err := tf.check(*dry, fs.Args()); err != nil {
		return usageError(s, c, err)
	}
	if st, err := os.Stat(fs.Arg(0)); err == nil && st.Mode().IsRegular() {
		// Before the output's checks, which take it for a file's.
		return fail(s, c.name, transform.ErrRescaleNeedsTree)
	}
	src, err := rescaleRuleFile(*par, *groups, *dropLost)
	if err != nil {
		return usageError(s, c, err)
	}
	if err := checkGroupsAgree(*tf.open.groups, *groups); err != nil {
		return usageError(s, c, err)
	}
	flag := "--parallelism"
	if *groups != "" {
		flag = "--group-parallelism"
	}
	return transformWith(ctx, s, c, fs, tf, func(o rules.ParseOptions) (*rules.Set, error) {
		set, err := rules.ParseWithOptions(rules.RescaleShorthand, []byte(src), o)
		return flagDiagnostics(flag, set, err)
	}, *dry)
}

// lineRef is a message's reference to another line of the rule file.
var lineRef = regexp.MustCompile(` \(line \d+\)`)

// flagDiagnostics puts the name of the flag in place of the position of
// each problem and warning of the one-rule file the rescale flags stand
// for: its lines and columns are sptool's own, not the user's.
func flagDiagnostics(flag string, set *rules.Set, err error) (*rules.Set, error) {
	var warns []*rules.Warning
	if set != nil {
		warns = set.Warnings
	}
	var errs *rules.Errors
	if errors.As(err, &errs) {
		for _, e := range errs.List {
			e.File, e.Line, e.Col, e.Rule, e.RuleName = flag, 0, 0, 0, ""
			e.Msg = lineRef.ReplaceAllString(e.Msg, "")
		}
		warns = append(warns, errs.Warnings...)
	}
	for _, w := range warns {
		w.File, w.Line, w.Col, w.Rule, w.RuleName = flag, 0, 0, 0, ""
		w.Msg = lineRef.ReplaceAllString(w.Msg, "")
	}
	return set, err
}

// checkGroupsAgree refuses --groups beside --group-parallelism ranges that
// cut the tree into other chain groups: the rescale reads the tree at its
// ranges, so the groups --groups states would not be used. Either flag
// that does not parse is left to the error it gets on its own.
func checkGroupsAgree(groups, groupPar string) error {
	if groups == "" || groupPar == "" {
		return nil
	}
	stated, err := savepoint.ParseGroups(groups)
	if err != nil {
		return nil
	}
	ranges, _, err := groupRanges(groupPar)
	if err != nil {
		return nil
	}
	given, err := savepoint.ParseGroups(strings.Join(ranges, ","))
	if err != nil {
		return nil
	}
	if a, b := savepoint.FormatGroups(stated), savepoint.FormatGroups(given); a != b {
		return fmt.Errorf("--groups %s and --group-parallelism %s give different chain groups (%s and %s); the rescale reads the tree at the ranges of --group-parallelism, so give the groups there alone, or the same groups in both", groups, groupPar, a, b)
	}
	return nil
}

// rescaleRuleFile writes the one-rule file the flags stand for. Without
// --drop-lost it is the file it always was: the outputs' provenance names
// its digest.
func rescaleRuleFile(par int, groups string, dropLost bool) (string, error) {
	opt := ""
	if dropLost {
		opt = ", drop_lost: true"
	}
	if par != 0 {
		return fmt.Sprintf("version: 1\nrules:\n  - rescale: {parallelism: %d%s}\n", par, opt), nil
	}
	var b strings.Builder
	b.WriteString("version: 1\nrules:\n  - rescale:\n")
	if dropLost {
		b.WriteString("      drop_lost: true\n")
	}
	b.WriteString("      groups:\n")
	ranges, pars, err := groupRanges(groups)
	if err != nil {
		return "", err
	}
	for i, rng := range ranges {
		fmt.Fprintf(&b, "        - {subtasks: %q, parallelism: %d}\n", rng, pars[i])
	}
	return b.String(), nil
}

// groupRanges splits --group-parallelism's RANGE=M,... into its ranges
// and parallelisms (the ranges as given: the rescale rule checks them).
func groupRanges(groups string) (ranges []string, pars []int, err error) {
	for _, part := range strings.Split(groups, ",") {
		rng, p, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(p)
		if !ok || err != nil {
			return nil, nil, fmt.Errorf("--group-parallelism: %q is not RANGE=M (like 0-2=5)", part)
		}
		ranges, pars = append(ranges, rng), append(pars, n)
	}
	return ranges, pars, nil
}
