package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/expr-lang/expr/vm"
	"github.com/spf13/pflag"

	"github.com/sptool/sptool/export"
	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/transform"
)

func init() {
	register(&command{
		name:     "lint",
		synopsis: "check a rule file without reading state (exit 1 on problems)",
		usage:    "RULES",
		run:      runLint,
	})
	register(&command{
		name:     "plan",
		synopsis: "dry run: apply a rule file and report what would change, writing nothing",
		usage:    "-r RULES PATH [--json] [--strict]",
		run:      func(ctx context.Context, s *Streams, args []string) int { return runTransform(ctx, s, args, true) },
	})
	register(&command{
		name:     "apply",
		synopsis: "apply a rule file and write the transformed savepoint atomically",
		usage:    "-r RULES PATH -o OUT [--force] [--report FILE] [--json]",
		run:      func(ctx context.Context, s *Streams, args []string) int { return runTransform(ctx, s, args, false) },
	})
	newRowFilter = rulesRowFilter
}

func runLint(ctx context.Context, s *Streams, args []string) int {
	c := commands["lint"]
	fs := flagSet(c)
	if done, code := parse(c, fs, s, args, exactly(1)); done {
		return code
	}
	set, err := rules.Load(fs.Arg(0))
	out := newTextWriter(s.Out)
	var rerrs *rules.Errors
	if errors.As(err, &rerrs) {
		fmt.Fprintln(out, rerrs) // one line a problem, and one for those not listed
		// The warnings found beside the problems, so that one pass shows
		// every finding (what could not be checked among them).
		for _, w := range rerrs.Warnings {
			fmt.Fprintf(out, "warning: %s\n", w)
		}
		fmt.Fprintf(out, "%d problem(s)\n", rerrs.Len())
		return ExitFindings
	}
	if err != nil {
		return fail(s, c.name, err)
	}
	for _, w := range set.Warnings {
		fmt.Fprintf(out, "warning: %s\n", w)
	}
	rs, ds, ws := len(set.Rules), len(set.Slots), len(set.Warnings)
	fmt.Fprintf(out, "%s: ok (%d rule%s, %d slot declaration%s, %d warning%s)\n", fs.Arg(0), rs, pluralS(rs), ds, pluralS(ds), ws, pluralS(ws))
	return ExitOK
}

// transformFlags are the flags of plan and apply.
type transformFlags struct {
	rules, out, report, stateBase *string
	tempDir                       *string
	force, asJSON, allowUnverif   *bool
	allowMissingState             *bool
	quiet, decompress, strict     *bool
	keepOrder                     *bool   // plan and apply only
	auditKeys, auditKeyFile       *string // plan and apply only
	jobs, generation              *int
	checkpointID                  *uint64
	open                          openFlags
}

// check refuses, for a run that writes its output (dry false) or not, a
// missing -o/--out, a --temp-dir checkTempDir refuses for inputs, a
// --generation given below 1 (clink's generations start at 1) and a
// negative --jobs.
func (tf transformFlags) check(dry bool, inputs []string) error {
	if !dry && *tf.out == "" {
		return errors.New("-o/--out is required")
	}
	if !dry && *tf.out == "-" {
		// (export's -o - is its standard output; a savepoint is files.)
		return errors.New("-o -: a savepoint is written as files (a payload and its sidecar, or a tree), not to standard output; name a file or a directory")
	}
	if err := checkTempDir(*tf.tempDir, inputs...); err != nil {
		return err
	}
	if tf.generation != nil && tf.open.fs.Changed("generation") && *tf.generation < 1 {
		return fmt.Errorf("--generation %d: clink's generations start at 1", *tf.generation)
	}
	if *tf.jobs < 0 {
		return errNegative("--jobs")
	}
	if k := tf.auditKeys; k != nil && *k != "plain" && *k != "sha256" && *k != "hmac-sha256" {
		return fmt.Errorf("--audit-keys must be plain, sha256 or hmac-sha256, not %q", *k)
	}
	if k, f := tf.auditKeys, tf.auditKeyFile; k != nil && f != nil {
		switch {
		case *k == "hmac-sha256" && *f == "":
			return errors.New("--audit-keys hmac-sha256 needs --audit-key-file, the file of the secret the digests are keyed with (head -c 32 /dev/urandom > FILE makes one)")
		case *k != "hmac-sha256" && *f != "":
			return fmt.Errorf("--audit-key-file keys the digests of --audit-keys hmac-sha256; --audit-keys is %s", *k)
		}
	}
	if tf.stateBase != nil {
		// Before the input is opened, which for a large savepoint takes
		// minutes.
		if err := transform.CheckStateBase(*tf.stateBase); err != nil {
			return err
		}
	}
	return nil
}

func addTransformFlags(fs *pflag.FlagSet, dry bool) transformFlags {
	f := transformFlags{rules: fs.StringP("rules", "r", "", "rule file (required)")}
	if !dry {
		f.out = fs.StringP("out", "o", "", "output path: a file for a file input, a directory for a tree (required; never the input)")
		f.force = fs.Bool("force", false, "replace an existing output")
		f.report = fs.String("report", "", "also write the report as JSON to this file")
		f.stateBase = fs.String("state-base", "", "changelog+file trees: the path the job will restore from (default: the output's absolute path)")
		f.generation = intFlag(fs, "generation", 0, "write the output tree under this generation (default: the input's)")
		f.checkpointID = uint64Flag(fs, "checkpoint-id", 0, "write the output tree as this checkpoint id (default: the input's)")
	}
	f.asJSON = fs.Bool("json", false, "print the report as JSON (stable format, see the README)")
	f.jobs = intFlag(fs, "jobs", 0, "workers: files processed at once, and the ranges of a large file processed at once (default: the number of CPUs)")
	f.allowUnverif = fs.Bool("allow-unverified", false, "accept payloads without a sidecar (as CLINK_ALLOW_UNVERIFIED_CHECKPOINTS does)")
	decompressUsage := "write uncompressed files, the only form clink restores: a file compressed as a whole (.gz, .zst, ...) is rewritten even when no rule changes it (default: compressed as its input; a rescaled group's new files are always plain)"
	missingUsage := "accept a tree's 0-byte payloads (or compressed around nothing; and a changelog+file tree's 0-byte materialisations) as empty state, written as zero-row streams (as CLINK_ALLOW_MISSING_RESTORE_STATE does for a file-backend tree)"
	if dry {
		decompressUsage = "report as a run that writes uncompressed files would: a file compressed as a whole (.gz, .zst, ...) counts as rewritten even when no rule changes it"
		missingUsage = "accept a tree's 0-byte payloads (or compressed around nothing; and a changelog+file tree's 0-byte materialisations) as empty state, as CLINK_ALLOW_MISSING_RESTORE_STATE does for a file-backend tree"
	}
	f.allowMissingState = fs.Bool("allow-missing-state", false, missingUsage)
	f.decompress = fs.Bool("decompress", false, decompressUsage)
	f.quiet = fs.BoolP("quiet", "q", false, "no progress on stderr (it is shown only when stderr is a terminal)")
	strictUsage := "treat the report's warnings as errors: with any, write nothing and exit 1 (the report is printed, as a dry run's)"
	if dry {
		strictUsage = "treat the report's warnings as errors: exit 1 with any"
	}
	f.strict = fs.Bool("strict", false, strictUsage)
	tempDefault := "the nearest existing directory above the output"
	if dry {
		tempDefault = "the system's temporary directory"
	}
	f.tempDir = fs.String("temp-dir", "", "where a large file in clink's hash-map order is sorted, a large changelog replayed, and a payload compressed as a whole decompressed, through temporary files (default: "+tempDefault+")")
	f.open = addOpenFlags(fs)
	return f
}

func runTransform(ctx context.Context, s *Streams, args []string, dry bool) int {
	name := "apply"
	if dry {
		name = "plan"
	}
	c := commands[name]
	fs := flagSet(c)
	tf := addTransformFlags(fs, dry)
	keepUsage := "write each rewritten file's rows in the order the input stores them, not sorted into canonical (op, key) order: a file in clink's hash-map order is not sorted (no temporary files for it, and less time); one whose output would hold a key twice is sorted all the same (see the README)"
	if dry {
		keepUsage = "accepted as apply takes it: the order of the rows changes no count"
	}
	tf.keepOrder = fs.Bool("keep-order", false, keepUsage)
	tf.auditKeys = fs.String("audit-keys", "plain", "how the JSON report (--json, --report) lists the keys a purge_keys rule found and did not find: plain (as listed), sha256 (the SHA-256 of each key as listed, so that the report names no erased key) or hmac-sha256 (its HMAC-SHA256 under the secret of --audit-key-file, so that a guessable key cannot be found again from the report without the secret)")
	tf.auditKeyFile = fs.String("audit-key-file", "", "the file whose bytes, all of them, are the secret of --audit-keys hmac-sha256 (at least 16; keep it apart from the report)")
	if done, code := parse(c, fs, s, args, exactly(1)); done {
		return code
	}
	if *tf.rules == "" {
		return usageError(s, c, errors.New("-r/--rules is required"))
	}
	if err := tf.check(dry, fs.Args()); err != nil {
		return usageError(s, c, err)
	}
	return transformWith(ctx, s, c, fs, tf, func(o rules.ParseOptions) (*rules.Set, error) { return rules.LoadWithOptions(*tf.rules, o) }, dry)
}

// transformWith runs plan or apply of the rules load returns on the PATH
// argument. The savepoint is opened while the rules load: a purge's keys
// file of 100,000 keys has its filter built 5-10 ms in and its index
// 20-30 ms later, while the open uses every core. The pass at open asks the purge lists' filters about
// the keys it reads as soon as they are built, before the rest of the
// lists is (see rules.ParseOptions.KeysReady). A rules error is still the
// one reported when both fail, as soon as the rules have loaded; an open
// left behind then closes the savepoint when it is done.
func transformWith(ctx context.Context, s *Streams, c *command, fs *pflag.FlagSet, tf transformFlags, load func(rules.ParseOptions) (*rules.Set, error), dry bool) int {
	// plan has no --report; rescale --dry-run writes its report too.
	report, out, force := "", "", false
	if tf.report != nil {
		report, out, force = *tf.report, *tf.out, *tf.force
	}
	if report != "" {
		if err := checkReportPath(savepoint.InputRoot(fs.Arg(0)), out, report, force); err != nil {
			return fail(s, c.name, err)
		}
	}
	// The secret of keyed digests is read before the input, whose open
	// may take minutes.
	var secret []byte
	if tf.auditKeyFile != nil && *tf.auditKeyFile != "" {
		var err error
		if secret, err = readAuditKey(*tf.auditKeyFile); err != nil {
			return fail(s, c.name, err)
		}
	}
	// A dry run given the output it would write (rescale --dry-run -o)
	// checks it as the run would, so that it fails where the run would.
	if out != "" {
		if err := checkOutputFree(fs.Arg(0), out, force); err != nil {
			return fail(s, c.name, err)
		}
	}
	// The pass at open asks the purge lists of the rules, once their
	// filters are built, for the rows they may hold (see transform.Probe).
	var probe savepoint.ProbeSlot
	// A payload compressed as a whole is decompressed where the run's
	// sorts spill: beside the output a run writes.
	tmpOut := out
	if dry {
		tmpOut = ""
	}
	open := startOpen(func() (*savepoint.Savepoint, error) {
		return tf.open.openWith(fs.Arg(0), savepoint.OpenOptions{RequireValid: true, AllowMissingSidecar: *tf.allowUnverif, Columnar: true, Probe: &probe, TempDir: openTempDir(*tf.tempDir, tmpOut)})
	})
	set, err := load(rules.ParseOptions{KeysReady: func(lists []*rules.PurgeKeysSpec) { probe.Set(transform.ProbeLists(lists)) }})
	if err != nil {
		probe.Set(nil)
		open.abandon()
		return fail(s, c.name, err)
	}
	probe.Set(transform.Probe(set))
	if err := checkRuleFilesApart(set, tf.auditKeyFile, out, report); err != nil {
		open.abandon()
		return fail(s, c.name, err)
	}
	sp, err := open.wait(ctx)
	if err != nil {
		return fail(s, c.name, err)
	}
	defer sp.Close()
	opts := transform.Options{DryRun: dry, Jobs: *tf.jobs, Tool: "sptool/" + Version, TempDir: *tf.tempDir, Decompress: *tf.decompress, KeepOrder: tf.keepOrder != nil && *tf.keepOrder, AllowMissingState: *tf.allowMissingState, Strict: *tf.strict, Report: report}
	// The text report gives an erasure's counts of keys; its lists of keys
	// go only into JSON.
	opts.KeyCountsOnly = report == "" && !*tf.asJSON
	opts.KeyDigests = tf.auditKeys != nil && (*tf.auditKeys == "sha256" || *tf.auditKeys == "hmac-sha256")
	opts.KeyDigestKey = secret
	endProgress := func() {}
	if s.ErrIsTerminal && !*tf.quiet {
		p := newProgress(s.Err)
		opts.Progress, endProgress = p.update, p.finish
	}
	if !dry {
		opts.Out, opts.Force = *tf.out, *tf.force
	}
	if tf.stateBase != nil {
		// What the output is to be (rescale --dry-run takes it too): the
		// report warns of it, and --strict refuses it, as the run's would.
		opts.StateBase = *tf.stateBase
		opts.Generation, opts.Checkpoint, opts.CheckpointSet = *tf.generation, *tf.checkpointID, tf.open.fs.Changed("checkpoint-id")
		if dry && out != "" {
			// (The run refuses a state base inside its output.)
			if err := transform.CheckStateBaseApart(sp, opts.StateBase, out); err != nil {
				return fail(s, c.name, err)
			}
		}
	}
	// The report --force replaces describes the output it replaces: it is
	// set aside just before the new output is put in place, so that a run
	// killed after that leaves no report, rather than the old one beside
	// the new output, and put back when the output is not published.
	var reportAside string
	var putBack, dropOld func() error
	if report != "" && *tf.force && !dry {
		opts.BeforePublish = func() (err error) {
			if reportAside, putBack, dropOld, err = savepoint.SetAside(report); err != nil {
				return fmt.Errorf("move aside the report --force replaces, %s (nothing was written): %w", report, err)
			}
			return nil
		}
	}
	rep, err := transform.Run(ctx, sp, set, opts)
	endProgress() // its bar off the terminal before anything is printed
	// (The report was set aside only by a run about to publish: Run
	// returns no report when that run did not.)
	if rep == nil {
		if putBack != nil {
			if perr := putBack(); perr != nil {
				err = errors.Join(err, fmt.Errorf("the report --force was to replace is left at %s: %w", reportAside, perr))
			}
		}
		return fail(s, c.name, err)
	}
	var after []error
	if dropOld != nil {
		if derr := dropOld(); derr != nil {
			after = append(after, fmt.Errorf("the report it replaced, moved aside to %s, could not be removed: %w", reportAside, derr))
		}
	}
	rep.Command = c.name
	// From here the output, if any, is published: what fails after it is
	// said along with where the savepoint was written, and the report is
	// still printed when it could not be saved, and saved when it could
	// not be printed.
	var published *savepoint.PublishedError
	if errors.As(err, &published) {
		after = append(after, published.Err)
	}
	var strict *transform.WarningsError
	if errors.As(err, &strict) {
		dry = true // nothing was written
	}
	if ctx.Err() != nil && !dry {
		// The signal came while the output was being put in place, after
		// the last point a run stops at: the output is whole.
		fmt.Fprintf(s.Err, "sptool %s: %v came after the savepoint was put in place; %s is complete\n", c.name, context.Cause(ctx), out)
	}
	if report != "" {
		// What a killed run left beside the report, as beside the output:
		// Run named what was there before it (which --strict refuses);
		// what this run left there since (the report it set aside and
		// could not remove) is added.
		for _, w := range savepoint.ReportLeftovers(report) {
			if !slices.Contains(rep.Warnings, w) {
				rep.Warnings = append(rep.Warnings, w)
			}
		}
		if err := writeJSONFile(report, rep, *tf.force); err != nil {
			after = append(after, reportNotWritten(report, err))
		}
	}
	var perr error
	if *tf.asJSON {
		perr = writeJSON(s.Out, rep)
	} else {
		perr = rep.WriteText(newTextWriter(s.Out))
	}
	if perr != nil {
		after = append(after, fmt.Errorf("the report could not be printed: %w", perr))
	}
	msgs := make([]string, len(after))
	for i, e := range after {
		msgs[i] = e.Error()
	}
	what := strings.Join(msgs, "; and ")
	// Diagnostics go to stderr: a report sent to a file or a program must
	// not take with it the warning that an erasure matched nothing. On a
	// terminal, the text report shows them already; a warning that the
	// error below says is not repeated.
	if *tf.asJSON || !s.OutIsTerminal {
		errOut := newTextWriter(s.Err)
		for _, w := range rep.Warnings {
			if what == "" || !strings.Contains(what, w) {
				fmt.Fprintf(errOut, "sptool %s: warning: %s\n", c.name, w)
			}
		}
	}
	if strict != nil {
		if len(after) > 0 {
			return fail(s, c.name, fmt.Errorf("%w; and %s", strict, what))
		}
		fmt.Fprintf(s.Err, "sptool %s: %v\n", c.name, strict)
		return ExitFindings
	}
	if len(after) == 0 {
		return ExitOK
	}
	if !dry {
		what = fmt.Sprintf("the savepoint was written to %s, but %s", out, what)
	}
	return fail(s, c.name, errors.New(what))
}

// writeJSON writes v to w as indented JSON, HTML characters unescaped,
// every list that has no element [] (see emptyLists): the form of every
// --json output and report.
func writeJSON(w io.Writer, v any) error {
	emptyLists(reflect.ValueOf(v))
	var compact bytes.Buffer
	enc := json.NewEncoder(&compact)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(appendIndented(make([]byte, 0, compact.Len()+compact.Len()/2), compact.Bytes()))
	return err
}

// textReport is a report that prints itself as text (inspect's summary,
// validate's findings).
type textReport interface{ WriteText(w io.Writer) error }

// writeReport prints r to w: as JSON (writeJSON) with --json, else as
// text through newTextWriter.
func writeReport(w io.Writer, asJSON bool, r textReport) error {
	if asJSON {
		return writeJSON(w, r)
	}
	return r.WriteText(newTextWriter(w))
}

// checkOutputFree checks the output as transform.Run will (see
// transform.CheckOutput), before the input is opened: Run checks it only
// once the open has read all of the input, which for a large savepoint
// takes minutes.
func checkOutputFree(in, out string, force bool) error {
	st, err := os.Stat(in)
	if err := transform.CheckOutput(in, err == nil && st.Mode().IsRegular(), out, force); err != nil {
		return err
	}
	return checkWritableAbove("-o", out)
}

// checkReportPath refuses, before any work, a --report path that would
// overwrite or lie in the input or the output, or replace an existing file
// without --force, or that cannot be written: the report is written after
// the savepoint, which should not then be published without it.
func checkReportPath(in, out, report string, force bool) error {
	if err := savepoint.CheckOutputName(report); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	for _, p := range []struct{ what, path string }{{"input", in}, {"output", out}} {
		if p.path == "" {
			continue // a dry run without -o
		}
		if err := savepoint.CheckOutputPath(p.path, report); errors.Is(err, savepoint.ErrDotDotAfterLink) {
			return fmt.Errorf("--report: %w", err)
		} else if err != nil {
			return fmt.Errorf("--report %s: the report must be a file apart from the %s %s, neither it, in it, nor holding it", report, p.what, p.path)
		}
	}
	if st, err := os.Stat(report); err == nil && st.IsDir() {
		return fmt.Errorf("--report %s is a directory", report)
	}
	// A link, dangling too, is a file there: the report's publish would
	// not replace it without --force.
	_, err := os.Lstat(report)
	// A device, a named pipe or a link to a standard stream is refused as
	// such, with or without --force.
	if rerr := savepoint.CheckReplaceable(report, false); rerr != nil {
		return fmt.Errorf("--report: %w (use --json for the report on stdout)", rerr)
	}
	switch {
	case err == nil && !force:
		return fmt.Errorf("--report %s exists (use --force to replace it)", report)
	case err != nil && !errors.Is(err, iofs.ErrNotExist):
		return fmt.Errorf("--report %s: %w", report, err)
	}
	return checkWritableAbove("--report", report)
}

// checkWritableAbove refuses, before any work, an output path (flag's)
// under which nothing can be created: the directories missing above it
// are made in the nearest one that exists, which must then be a directory
// that can be written (a read-only file system, or one without
// permission, is refused here rather than once the input is read).
func checkWritableAbove(flag, path string) error {
	dir := filepath.Dir(path)
	for {
		st, err := os.Stat(dir)
		if errors.Is(err, iofs.ErrNotExist) && filepath.Dir(dir) != dir {
			dir = filepath.Dir(dir)
			continue
		}
		switch {
		case err != nil:
			return fmt.Errorf("%s %s: %w", flag, path, err)
		case !st.IsDir():
			return fmt.Errorf("%s %s: %s is not a directory", flag, path, dir)
		}
		if err := dirWritable(dir); err != nil {
			return fmt.Errorf("%s %s: %s cannot be written: %w", flag, path, dir, err)
		}
		return nil
	}
}

// checkRuleFilesApart refuses an output or a report that would replace
// the rule file or a keys file of set (with --force, a report named as the
// keys file replaced the erasure's own record), or the secret of keyed
// digests (keyFile, when not nil), or an output tree that holds one of
// them.
func checkRuleFilesApart(set *rules.Set, keyFile *string, out, report string) error {
	type input struct{ path, what string }
	files := []input{{set.Source, "a file the rules were read from"}}
	for _, r := range set.Rules {
		if p := r.PurgeKeys; p != nil && p.Path != "" {
			files = append(files, input{p.Path, "a file the rules were read from"})
		}
	}
	if keyFile != nil && *keyFile != "" {
		files = append(files, input{*keyFile, "the secret of the audit's digests (--audit-key-file)"})
	}
	for _, f := range files {
		if _, err := os.Stat(f.path); err != nil {
			continue // (no file: rescale's rules)
		}
		for _, o := range []struct{ what, path string }{{"output", out}, {"--report", report}} {
			if o.path != "" && savepoint.CheckOutputPath(f.path, o.path) != nil {
				return fmt.Errorf("%s %s would replace or hold %s, %s", o.what, o.path, f.path, f.what)
			}
		}
	}
	return nil
}

// readAuditKey reads the secret of --audit-keys hmac-sha256: every byte of
// file, as transform.CheckKeyDigestKey takes it.
func readAuditKey(file string) ([]byte, error) {
	secret, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--audit-key-file: %w", err)
	}
	if err := transform.CheckKeyDigestKey(secret); err != nil {
		return nil, fmt.Errorf("--audit-key-file %s: %w: head -c 32 /dev/urandom > %s makes one", file, err, file)
	}
	return secret, nil
}

// reportNotWritten is the error of a --report that could not be written
// (err), published savepoint or not. A file at its path that --force was
// to replace is an earlier run's report, which does not describe this
// run's output: the error says so, lest it be taken for this run's (one
// that appeared meanwhile, without --force, err names as such).
func reportNotWritten(report string, err error) error {
	appeared := errors.Is(err, iofs.ErrExist)
	err = fmt.Errorf("the report was not written to %s: %w", report, err)
	if _, serr := os.Lstat(report); serr == nil && !appeared {
		err = fmt.Errorf("%w; %s still holds the report of an earlier run, which does not describe this output", err, report)
	}
	return err
}

// writeJSONFile writes v as JSON to path atomically: over what is there
// if replace is set, else only if nothing has appeared there since the
// command checked. The directories it makes for path are removed again
// if the file cannot be written.
func writeJSONFile(path string, v any, replace bool) error {
	return savepoint.SaveFileMakingDirs(path, replace, func(w io.Writer) error { return writeJSON(w, v) })
}

// rulesRowFilter compiles cat's --where with the codecs of --rules.
func rulesRowFilter(rulesPath, where string, inScope func(op uint64, slot []byte) bool, warn func(string)) (func(savepoint.Row, int) (bool, error), func(savepoint.Row, int) (*decode, error), error) {
	if rulesPath == "" && where == "" {
		return nil, nil, nil
	}
	src := "version: 1\nrules: []\n"
	var set *rules.Set
	var err error
	if rulesPath != "" {
		set, err = rules.LoadDeclarations(rulesPath)
	} else {
		set, err = rules.Parse("(no rule file)", []byte(src))
	}
	if err != nil {
		return nil, nil, err
	}
	var pred *rules.Predicate
	if where != "" {
		// Scoped to one declared slot, the expression is type-checked
		// against its codecs.
		var scoped []*rules.SlotDecl
		for _, d := range set.Slots {
			if inScope != nil && !d.Broadcast && inScope(d.Op.ID, []byte(d.Slot)) {
				scoped = append(scoped, d)
			}
		}
		if len(scoped) == 1 {
			pred, err = set.CompileFilterFor(scoped[0], where)
		} else {
			pred, err = set.CompileFilter(where)
		}
		if err == nil && inScope != nil && len(scoped) == 0 && pred.ReadsExpireAt() {
			// --op and --slot name a slot no keyed declaration describes.
			err = errors.New("'expire_at' is nil on every row: no declaration with 'ttl: true' describes the rows --op and --slot name (broadcast state and keys without a slot have no expiry stamp; a keyed slot's is read by its declaration with 'ttl: true' in the rule file of --rules)")
		}
		if err != nil {
			return nil, nil, fmt.Errorf("--where: %w", err)
		}
		for _, w := range pred.Warnings() {
			warn(w)
		}
	}
	var m vm.VM
	var env rules.Env
	filter := func(r savepoint.Row, subtask int) (bool, error) {
		if pred == nil {
			return true, nil
		}
		// A key or value the codecs cannot decode fails only a filter
		// that reads it (rules.ReadsFailed), as it fails only the rules
		// that read it: both are decoded when either is read.
		err := set.FillEnvFields(&env, r, subtask, pred.Fields())
		if !rules.ReadsFailed(err, pred.Fields()) {
			err = nil
		}
		ok := false
		if err == nil {
			ok, err = pred.Eval(&m, &env)
		}
		if err != nil {
			k := savepoint.ParseKey(r.Key)
			return false, fmt.Errorf("(op %d, slot %s, key %s): --where: %w", r.Op, k.ShowSlot(), set.ShowKey(r.Op, k), err)
		}
		return ok, nil
	}
	var decoder func(savepoint.Row, int) (*decode, error)
	if rulesPath != "" {
		var denv rules.Env
		decoder = func(r savepoint.Row, subtask int) (*decode, error) {
			dd, err := export.DecodeRow(set, &denv, r, subtask)
			var de *rules.DecodeError
			if (err != nil && !errors.As(err, &de)) || !dd.Declared {
				return nil, err
			}
			userKey := savepoint.ParseKey(r.Key).UserKey
			key, value, at := dd.JSONFields(export.Render(userKey), export.Render(r.Value))
			d := &decode{Key: &key, Value: &value, ExpireAt: at}
			if de != nil {
				// A codec failed, or a declared string is not UTF-8 (whose
				// 0x hex would read as the text "0x..."): only what did
				// decode is shown, the TTL stamp included.
				if !dd.KeyOK {
					d.Key = nil
				}
				if !dd.ValueOK {
					d.Value = nil
				}
				if d.Key == nil && d.Value == nil && d.ExpireAt == nil {
					return nil, err
				}
			}
			// What the declaration does not decode is shown as stored.
			d.keyText = catShown(dd.KeyOK, dd.Key, userKey)
			d.valueText = catShown(dd.ValueOK, dd.Value, r.Value)
			if savepoint.IsBroadcastKey(r.Key) {
				d.Key = nil // broadcast state has no user key
			}
			return d, err
		}
	}
	return filter, decoder, nil
}
