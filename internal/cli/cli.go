// Package cli implements the sptool command line. cmd/sptool only calls Main;
// every command writes to the streams it is given, never to os.Stdout, so the
// commands are testable in-process.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/sptool/sptool/internal/textdist"
	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/transform"
)

// Exit codes shared by every command (see `sptool help`).
const (
	// ExitOK: success; for validate, no errors; for diff, no difference.
	ExitOK = 0
	// ExitFindings: the command worked and found problems or differences
	// (validate: errors; lint: rule problems; diff: the inputs differ;
	// plan, apply and rescale with --strict: warnings, nothing written).
	ExitFindings = 1
	// ExitError: unreadable input, bad usage, or the command failed; nothing
	// was written (but for what failed after the savepoint was published:
	// the report file or stdout, the removal of a replaced tree; the
	// message then says the savepoint was written).
	ExitError = 2
)

// Streams are the standard streams a command uses.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
	// ErrIsTerminal enables progress output on Err.
	ErrIsTerminal bool
	// OutIsTerminal says Out is shown on a terminal: plan's and apply's
	// text report, warnings included, is then read there, and the warnings
	// are not repeated on Err.
	OutIsTerminal bool

	ctx  context.Context // the command's, set by Main: what cancelled it
	args []string        // the command line, set by Main: what errors may name
}

type command struct {
	name     string
	synopsis string
	usage    string // the argument pattern after the name
	run      func(ctx context.Context, s *Streams, args []string) int
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// Main runs sptool with args (without the program name) and returns the exit code.
// A command whose output to s.Out was lost (stdout on a full disk, a
// closed pipe) exits with ExitError, whatever it returned.
func Main(ctx context.Context, args []string, s *Streams) int {
	out := &outWriter{w: s.Out}
	sc := *s
	sc.Out = out
	sc.args = args
	code := runMain(ctx, args, &sc)
	if out.err != nil && code != ExitError {
		name := "sptool"
		if len(args) > 0 {
			if _, ok := commands[args[0]]; ok {
				name += " " + args[0]
			}
		}
		fmt.Fprintf(s.Err, "%s: %v\n", name, out.err)
		code = ExitError
	}
	return code
}

// outWriter passes writes on to w and keeps the first error.
type outWriter struct {
	w   io.Writer
	err error
}

func (o *outWriter) Write(b []byte) (int, error) {
	n, err := o.w.Write(b)
	if err != nil && o.err == nil {
		o.err = err
	}
	return n, err
}

func runMain(ctx context.Context, args []string, s *Streams) int {
	if len(args) == 0 {
		printHelp(s.Err)
		return ExitError
	}
	switch args[0] {
	case "help", "-h", "--help":
		if len(args) > 2 {
			fmt.Fprintf(s.Err, "sptool help: takes at most one command, got %d arguments\nTry: sptool help\n", len(args)-1)
			return ExitError
		}
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				return c.run(ctx, s, []string{"--help"})
			}
			switch args[1] {
			case "version":
				return runMain(ctx, []string{"version", "--help"}, s)
			case "help", "-h", "--help":
				printHelp(s.Out)
				return ExitOK
			}
			fmt.Fprintf(s.Err, "sptool: unknown command %q%s\nTry: sptool help\n", args[1], nearCommand(args[1]))
			return ExitError
		}
		printHelp(s.Out)
		return ExitOK
	case "version", "--version":
		switch {
		case len(args) == 1:
			fmt.Fprintln(s.Out, "sptool", Version)
			return ExitOK
		case len(args) == 2 && (args[1] == "-h" || args[1] == "--help"):
			fmt.Fprint(s.Out, "Usage: sptool version\n\nprint sptool's version (also sptool --version)\n")
			return ExitOK
		}
		fmt.Fprintf(s.Err, "sptool version: takes no arguments, got %q\nTry: sptool version --help\n", args[1])
		return ExitError
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(s.Err, "sptool: unknown command %q%s\nTry: sptool help\n", args[0], nearCommand(args[0]))
		return ExitError
	}
	// An input memory-mapped by a command and cut short by another process
	// faults when read: an error naming the cause, not a crash.
	code := ExitError
	sc := *s
	sc.ctx = ctx
	s = &sc
	if err := savepoint.Guard(func() error { code = c.run(ctx, s, args[1:]); return nil }); err != nil {
		return fail(s, c.name, err)
	}
	return code
}

// Version is the sptool version, set at build time with -ldflags.
var Version = "dev"

func printHelp(w io.Writer) {
	fmt.Fprint(w, `sptool processes clink savepoints offline: inspect, validate, transform with
YAML rules, rescale, diff and export.

Usage: sptool <command> [flags] [args]

Commands:
`)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, commands[n].synopsis)
	}
	fmt.Fprintf(w, "  %-9s %s\n", "version", "print sptool's version (also --version)")
	fmt.Fprint(w, `
PATH is a snapshot file (checkpoint-<id>.snap, possibly gzip/zstd/lz4/bzip2/xz
compressed), a checkpoint directory (v<gen>/<subtask>/..., _jobs/...) or a
generation directory v<gen>.

Exit codes:
  0  success (validate: no errors; diff: identical)
  1  findings (validate: errors; lint: problems; diff: differences; plan, apply,
     rescale with --strict: warnings, nothing written)
  2  error: unreadable input, bad usage, or failure (nothing written; but
     when apply or rescale fails after the savepoint was published, the
     message starts "the savepoint was written to OUT, but")

Run 'sptool help <command>' or 'sptool <command> --help' for a command's flags.
`)
}

// flagSet makes a command's flag set; usage errors are reported by parse.
func flagSet(c *command) *pflag.FlagSet {
	fs := pflag.NewFlagSet("sptool "+c.name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	return fs
}

// parse parses args; it returns done=true with the exit code when the
// command should stop (help printed, or a usage error reported).
func parse(c *command, fs *pflag.FlagSet, s *Streams, args []string, nargs func(int) bool) (done bool, code int) {
	fs.VisitAll(func(f *pflag.Flag) {
		if _, ok := f.Value.(*onceValue); !ok {
			f.Value = &onceValue{Value: f.Value}
		}
	})
	err := fs.Parse(args)
	var twice *givenTwice
	var bad *pflag.InvalidValueError
	if errors.As(err, &twice) && errors.As(err, &bad) {
		err = twice.explain(bad.GetFlag(), bad.GetValue())
	}
	if errors.Is(err, pflag.ErrHelp) {
		commandHelp(c, fs, s.Out)
		return true, ExitOK
	}
	if errors.As(err, &bad) && strings.Contains(bad.GetFlag().Value.Type(), "int") && isDecimal(bad.GetValue()) {
		// pflag says "must be an integer" of one too large for its type.
		err = fmt.Errorf("invalid argument %q for \"--%s\" flag: out of range", bad.GetValue(), bad.GetFlag().Name)
	}
	if err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
			err = fmt.Errorf("%w%s", err, nearFlag(fs, name))
		} else if _, arg, ok := strings.Cut(err.Error(), "' in -"); ok && strings.HasPrefix(err.Error(), "unknown shorthand flag: ") && len(arg) > 1 {
			// -json for --json
			err = fmt.Errorf("%w%s", err, nearFlag(fs, arg))
		}
	}
	if err == nil && !nargs(fs.NArg()) {
		err = argsError(c.usage, fs, args)
	}
	if i := slices.Index(fs.Args(), ""); err == nil && i >= 0 {
		err = fmt.Errorf("argument %d is empty: it must name a file or a directory", i+1)
	}
	if err != nil {
		fmt.Fprintf(s.Err, "sptool %s: %v\nUsage: sptool %s %s\nTry: sptool %s --help\n", c.name, err, c.name, c.usage, c.name)
		return true, ExitError
	}
	return false, 0
}

// onceValue is a flag's value that refuses a second, different value: each
// flag takes one, and pflag would silently keep the last (-r a.yaml -r
// b.yaml would apply b.yaml's rules alone, an erasure of a.yaml's lost
// without a word). The same value given again is harmless, and taken.
type onceValue struct {
	pflag.Value
	first string
	set   bool
}

// Set sets the value, or refuses a second one that sets another (the
// values are compared as set: --parallelism 4 and 04, --json and
// --json=1 are the same).
func (v *onceValue) Set(s string) error {
	before := v.Value.String()
	if err := v.Value.Set(s); err != nil {
		return err
	}
	if v.set && v.Value.String() != before {
		return &givenTwice{first: v.first}
	}
	if !v.set {
		v.first, v.set = s, true
	}
	return nil
}

// IsBoolFlag is the wrapped value's: pflag's help shows a bool flag as
// --flag[=true|false] by it.
func (v *onceValue) IsBoolFlag() bool {
	b, ok := v.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// givenTwice is onceValue's refusal of a second value.
type givenTwice struct{ first string }

func (e *givenTwice) Error() string { return fmt.Sprintf("given twice (first %q)", e.first) }

// explain returns the usage error of flag f given a second value, second.
func (e *givenTwice) explain(f *pflag.Flag, second string) error {
	name := "--" + f.Name
	if f.Shorthand != "" {
		name += " (-" + f.Shorthand + ")"
	}
	hint := ""
	if f.Name == "rules" {
		hint = "; to apply the rules of two files, put them in one file, in the order they are to run"
	}
	return fmt.Errorf("%s given twice, %q and %q: it takes one value%s", name, e.first, second, hint)
}

func commandHelp(c *command, fs *pflag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, "Usage: sptool %s %s\n\n%s\n", c.name, c.usage, c.synopsis)
	if fu := fs.FlagUsages(); strings.TrimSpace(fu) != "" {
		fmt.Fprintf(w, "\nFlags:\n%s", fu)
	}
}

// isDecimal reports whether v is an integer in decimal: digits, after an
// optional sign.
func isDecimal(v string) bool {
	if v != "" && (v[0] == '+' || v[0] == '-') {
		v = v[1:]
	}
	return v != "" && strings.Trim(v, "0123456789") == ""
}

func exactly(n int) func(int) bool { return func(k int) bool { return k == n } }

// fail reports err for command name on stderr and returns ExitError.
func fail(s *Streams, name string, err error) int {
	if s.ctx != nil && errors.Is(err, context.Canceled) && s.ctx.Err() != nil {
		// "context canceled" says nothing to a user who pressed Ctrl-C;
		// the cause of a signal.NotifyContext names the signal.
		// What the stopped run could not remove is still said.
		stopped := fmt.Errorf("stopped: %w", context.Cause(s.ctx))
		var left *savepoint.LeftError
		if errors.As(err, &left) {
			stopped = &savepoint.LeftError{Err: stopped, Left: left.Left}
		}
		err = stopped
	}
	// An output that exists is replaced with --force: every command that
	// writes one takes it.
	var hints []string
	var exists *savepoint.OutputExistsError
	if errors.As(err, &exists) && exists.Hint == "" {
		exists.Hint = "use --force to replace it"
		hints = append(hints, exists.Hint)
	}
	// So is a payload without a sidecar, by the commands that refuse one.
	var verdict *savepoint.VerdictError
	if errors.As(err, &verdict) && verdict.NoSidecar && verdict.Hint == "" {
		verdict.Hint = "--allow-unverified accepts payloads without a sidecar"
		hints = append(hints, verdict.Hint)
	}
	// And a tree holding 0-byte payloads, by those that write one.
	var missing *transform.MissingStateError
	if errors.As(err, &missing) && missing.Hint == "" {
		missing.Hint = "--allow-missing-state writes such payloads as empty state"
		hints = append(hints, missing.Hint)
	}
	// A tree of more payloads than the process may open files: each is
	// held open while the tree is read.
	if errors.Is(err, syscall.EMFILE) {
		hints = append(hints, tooManyFilesHint())
	}
	// A wrapper made with fmt.Errorf made its message before the hint was
	// set: the hint then follows the whole message.
	msg := err.Error()
	for _, h := range hints {
		if !strings.Contains(msg, "("+h+")") {
			msg += " (" + h + ")"
		}
	}
	// The message may quote what a savepoint, a rule file or an argument
	// holds: its control characters are shown as escapes (see textWriter),
	// a path given on the command line is quoted where it holds one (a
	// newline in it would make a line of its own), and each line of a
	// message of several (errors joined) is the command's.
	msg = quoteArgs(msg, s.args)
	w := newTextWriter(s.Err)
	for _, line := range strings.Split(msg, "\n") {
		// A library error that names the command itself ("diff: side B:
		// …") names it once.
		fmt.Fprintf(w, "sptool %s: %s\n", name, strings.TrimPrefix(line, name+": "))
	}
	return ExitError
}

// tooManyFilesHint says why a run ran out of file descriptors and what to do.
func tooManyFilesHint() string {
	h := "each payload of a tree is held open while the tree is read, a file descriptor each: raise the hard limit of open files"
	if n, ok := openFilesLimit(); ok {
		h += fmt.Sprintf(", now %d,", n)
	}
	return h + " with ulimit -Hn (LimitNOFILE in a systemd unit)"
}

// quoteArgs returns msg with each argument of args that holds a control
// character, as given and as an absolute path, Go-quoted (ShowName).
func quoteArgs(msg string, args []string) string {
	for _, a := range args {
		if savepoint.ShowName(a) == a {
			continue
		}
		forms := []string{a}
		if abs, err := filepath.Abs(a); err == nil && abs != a {
			forms = append(forms, abs)
		}
		if c := filepath.Clean(a); c != a {
			forms = append(forms, c)
		}
		// The longest first: an absolute path holds the one given.
		slices.SortFunc(forms, func(x, y string) int { return len(y) - len(x) })
		for _, f := range forms {
			msg = strings.ReplaceAll(msg, f, savepoint.ShowName(f))
		}
	}
	return msg
}

func errNegative(flag string) error { return fmt.Errorf("%s must not be negative", flag) }

// nearCommand returns ` (did you mean "inspect"?)` for the command name
// nearest to name (textdist.Nearest), or "".
func nearCommand(name string) string {
	names := []string{"help", "version", "--help", "--version"}
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	if n, ok := textdist.Nearest(name, names); ok {
		return fmt.Sprintf(" (did you mean %q?)", n)
	}
	return ""
}

// nearFlag returns ` (did you mean --json?)` for the flag of fs nearest to
// name (a flag's name as given, without its dashes and value), hidden and
// deprecated flags left out, --help in; or "".
func nearFlag(fs *pflag.FlagSet, name string) string {
	name, _, _ = strings.Cut(name, "=")
	names := []string{"help"}
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Deprecated == "" {
			names = append(names, f.Name)
		}
	})
	slices.Sort(names)
	if n, ok := textdist.Nearest(name, names); ok {
		return fmt.Sprintf(" (did you mean --%s?)", n)
	}
	// A flag given once for each side (diff's --checkpoint-a and
	// --checkpoint-b): both are as near, and both are named.
	if a, b := name+"-a", name+"-b"; slices.Contains(names, a) && slices.Contains(names, b) {
		return fmt.Sprintf(" (did you mean --%s or --%s? one for each side)", a, b)
	}
	return ""
}

// argsError says why the arguments given (args, parsed into fs) are not
// those usage names (its words in capitals that are no flag's value: PATH,
// A B): a "true" or "false" given apart from the flag before it, which is
// on or off; a flag usage requires (one outside its brackets: -r RULES)
// left out, whose value is then taken for an argument; or which arguments
// are missing, or one too many.
func argsError(usage string, fs *pflag.FlagSet, args []string) error {
	for i := 1; i < len(args); i++ {
		if args[i] != "true" && args[i] != "false" || !strings.HasPrefix(args[i-1], "-") || strings.Contains(args[i-1], "=") {
			continue
		}
		f := fs.Lookup(strings.TrimLeft(args[i-1], "-"))
		if len(args[i-1]) == 2 {
			f = fs.ShorthandLookup(args[i-1][1:])
		}
		if f != nil && f.Value.Type() == "bool" {
			return fmt.Errorf("%q after %s is taken for an argument: a flag that is on or off takes its value after '=' (--%s=%s)", args[i], args[i-1], f.Name, args[i])
		}
	}
	var names []string
	words := strings.Fields(bracketed.ReplaceAllString(usage, " "))
	for i, w := range words {
		if strings.HasPrefix(w, "-") {
			if f := fs.ShorthandLookup(strings.TrimPrefix(w, "-")); len(w) == 2 && f != nil && !fs.Changed(f.Name) {
				return fmt.Errorf("-%s/--%s is required", f.Shorthand, f.Name)
			}
			continue
		}
		if strings.ToUpper(w) != w || i > 0 && strings.HasPrefix(words[i-1], "-") {
			continue
		}
		names = append(names, w)
	}
	got := fs.Args()
	if len(names) == 0 {
		return fmt.Errorf("wrong number of arguments (%d)", len(got))
	}
	if len(got) < len(names) {
		return fmt.Errorf("missing %s", strings.Join(names[len(got):], " and "))
	}
	extra := got[len(names):]
	if len(extra) > 1 {
		return fmt.Errorf("takes %s; %s are %d arguments too many", strings.Join(names, " "), quoteList(extra), len(extra))
	}
	return fmt.Errorf("takes %s; %s is one argument too many", strings.Join(names, " "), quoteList(extra))
}

// bracketed matches the optional ([...]) and alternative ((...)) parts
// of a usage line.
var bracketed = regexp.MustCompile(`\[[^\]]*\]|\([^)]*\)`)

// quoteList quotes each of args, comma-separated.
func quoteList(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return strings.Join(q, ", ")
}
