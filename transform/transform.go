// Package transform applies a compiled rule set (package rules) to an opened
// savepoint (package savepoint): one ordered pipeline of steps over every
// row of every file, with per-rule counters, the same code path for a dry run
// (plan) and a real one (apply), and an accounting check at the end of every
// run: rows in = rows out + rows dropped + duplicates resolved, plus the
// stale and lost copies and the operator rows merged and replicated of a
// rescale (see Report.RowsIn).
package transform

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"

	"github.com/expr-lang/expr/vm"

	"github.com/sptool/sptool/internal/gallop"
	"github.com/sptool/sptool/internal/prefault"
	"github.com/sptool/sptool/internal/textdist"
	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
)

// Options control a run.
type Options struct {
	// DryRun runs the whole pipeline and writes nothing (plan).
	DryRun bool
	// Strict refuses a run whose report carries warnings: Run then writes
	// nothing and returns the report, as a dry run's, with a
	// *WarningsError. For automation, where a warning (an erasure whose
	// keys matched no row, a rule on an operator that is not there) must
	// stop the pipeline rather than scroll by.
	Strict bool
	// Out is the output path: a file for a file input, a directory for a tree.
	Out string
	// Force replaces an existing output.
	Force bool
	// StateBase is the base path a changelog+file tree's handles point to
	// (default: the output directory's absolute path).
	StateBase string
	// Jobs bounds how many files are processed at once (default: the number
	// of CPUs).
	Jobs int
	// Tool identifies the writer in the provenance metadata key.
	Tool string
	// Progress, when set, is called as the run advances: stage "rows" with
	// the rows processed of all rows, then "write" with the bytes written
	// (total -1: not known in advance): for a file rewritten, each time
	// another savepoint.ReleaseEvery bytes (16 MiB) of it are written, so
	// that one of less makes no call; for a file copied unchanged, once,
	// with its size. It may be called from several goroutines at once.
	Progress func(stage string, done, total int64)
	// AllowMissingState accepts a tree holding a 0-byte payload, written as
	// a zero-row stream (empty state), as clink's restore accepts one with
	// CLINK_ALLOW_MISSING_RESTORE_STATE set, and a changelog+file tree
	// holding a 0-byte materialisation, written as an empty one. Without
	// it such a tree is refused with a *MissingStateError (see there).
	AllowMissingState bool
	// Generation, when not zero (it must be at least 1), and Checkpoint,
	// when not zero or when CheckpointSet is true (checkpoint 0 is the id
	// of clink's offline writer), replace the input tree's generation and
	// checkpoint id in the output (directory names, sidecars, COMPLETED
	// marker). A file input's output takes neither.
	Generation    int
	Checkpoint    uint64
	CheckpointSet bool
	// TempDir is where a file whose output rows must be sorted, and are too
	// many to sort in memory, is sorted through temporary files (about twice
	// its kept rows' bytes while it runs; unlinked at once). Default: the
	// nearest existing directory above Out (so the output's filesystem, not
	// a /tmp that may be memory), or os.TempDir() for a dry run.
	TempDir string
	// Decompress writes every output file as an uncompressed stream, the
	// only form clink restores. A file compressed as a whole (gzip, zstd,
	// ...) is then rewritten even when no rule changed it, in the
	// canonical form of every rewritten file; without Decompress, an
	// output is compressed as its input is.
	Decompress bool
	// KeepOrder writes each rewritten file's rows in the order its input
	// stores them instead of sorting them into canonical (op, key) order:
	// a file in clink's own (hash-map) order is then not sorted (no
	// temporary files for it, and in less time). The rows written and
	// every count of the report are those of a sorted run; the files
	// differ in order only, restore the same state, and are not canonical
	// (sptool validate warns of their order, as of clink's own files). A
	// file that stores a key twice keeps its order when its copies are
	// searched for by input row (under maxShadowSearchRows rows, or rules
	// that decide by value or merge keys): those a restore would not keep
	// are dropped where they are. A file whose output would still hold a
	// key twice (a larger one whose rules decide by no value, or a merge of
	// keys) is sorted all the same, its copies resolved as a restore
	// resolves them, and so is one whose keys cannot be checked for that
	// within DistinctBudget (a hash of 8 bytes a row); a rescaled group's
	// new files are always sorted.
	KeepOrder bool
	// KeyCountsOnly leaves out the lists of keys of each erasure audit
	// (PurgeAudit's Found, NotFound and NotFoundHex stay nil), for a caller
	// that shows only their counts (KeysFound, KeysNotFound): a list of
	// 100,000 keys is 6 MB of fresh memory and 100,000 strings, put
	// together while the output is written.
	KeyCountsOnly bool
	// KeyDigests gives each key of the erasure audits' lists (PurgeAudit's
	// Found and NotFound) as "sha256:" and the hex SHA-256 of the key as
	// listed (an integer key's decimal text, a string key's bytes) instead
	// of the key, and leaves out their hex forms (KeyFound.KeyHex,
	// NotFoundHex): a report kept as an erasure's record then names no
	// erased key, and whether a key was among those found is checked by
	// its digest (printf %s KEY | sha256sum).
	KeyDigests bool
	// KeyDigestKey, when not empty under KeyDigests, keys the digests: each
	// key is listed as "hmac-sha256:" and the hex HMAC-SHA256 of the key
	// as listed under this secret, and each audit gives the secret's
	// SHA-256 (PurgeAudit.DigestKey) to name it. A plain digest of a short
	// or guessable key (a numeric id, an email address) is found again by
	// hashing candidates; a keyed one only by whoever holds the secret.
	// It must be at least MinKeyDigestKey bytes.
	KeyDigestKey []byte
	// BeforePublish, when set, is called once the output is whole and
	// checked, just before it is put in place: an error stops the run
	// before anything is. A caller removes there what describes the output
	// being replaced (the report of the run that wrote it), so that a run
	// killed after the output is in place leaves nothing that describes
	// another output beside it.
	BeforePublish func() error
	// Report, when set, is where the caller saves the report: what an
	// interrupted run left beside it (savepoint.ReportLeftovers) is named
	// at the end of the report's warnings, which Strict counts.
	Report string
}

// ErrAccounting is returned when a run's counts do not add up; it means a
// bug, and nothing is written.
var ErrAccounting = errors.New("row accounting does not add up")

// CheckOutput returns the error Run gives for its output out as things
// are now: out is, lies in or holds the input in (a generation directory's
// input being its whole checkpoint directory: an output beside v<gen>, say
// v<gen+1>, would change which generation the input restores); out, or
// the sidecar of a file input's output (file), exists and force is not
// set (an error for which errors.Is(err, fs.ErrExist) holds); or it is not
// something an output may replace. Run checks it once the input is open;
// a caller may check it before, to fail early.
func CheckOutput(in string, file bool, out string, force bool) error {
	if err := savepoint.CheckOutputPath(savepoint.InputRoot(in), out); err != nil {
		return err
	}
	outs := []string{out}
	if file {
		outs = append(outs, out+savepoint.SidecarSuffix)
	}
	for _, o := range outs {
		// What --force would not replace either is refused as such first.
		if err := savepoint.CheckReplaceable(o, o == out && !file); err != nil {
			return err
		}
		if _, err := os.Lstat(o); err == nil && !force {
			return &savepoint.OutputExistsError{Path: o, Note: savepoint.LeftoversNote(out)}
		}
	}
	return nil
}

// WarningsError is Run's error under Options.Strict when the report
// carries warnings: nothing was written, and the report Run returns with
// it lists them.
type WarningsError struct {
	// Warnings counts the report's warnings; Dry is set for a dry run's.
	Warnings int
	Dry      bool
}

func (e *WarningsError) Error() string {
	n := fmt.Sprintf("%d warnings", e.Warnings)
	if e.Warnings == 1 {
		n = "1 warning"
	}
	if e.Dry {
		return fmt.Sprintf("the plan has %s, and strict mode refuses any (the report lists them)", n)
	}
	return fmt.Sprintf("the run has %s, and strict mode refuses any: nothing was written (the report lists them)", n)
}

// MissingStateError refuses a tree holding 0-byte payloads (or 0-byte
// materialisations, see Materializations): clink's restore
// takes such a file for an absent one and refuses to start its subtask
// with empty state (format 5.3) unless CLINK_ALLOW_MISSING_RESTORE_STATE
// is set, where sptool's output, a zero-row stream in its place, would
// restore as empty state with no complaint. A file cut short by a full disk
// or a crash loses its state that way; Options.AllowMissingState accepts
// the tree when empty state is meant.
type MissingStateError struct {
	// Files are the empty payloads, relative to the tree's root, Subtasks
	// their subtasks, and Compressed the compression of each (a payload
	// compressed as a whole around nothing; "": a 0-byte one).
	Files      []string
	Subtasks   []int
	Compressed []string
	// Changelog is set for a changelog+file tree, whose payloads are the
	// changelogs.
	Changelog bool
	// Materializations are a changelog+file tree's 0-byte materialisation
	// files its changelogs reference, relative to the root, and
	// MaterializationSubtasks their changelogs' subtasks: clink restores
	// such a file as empty materialised state without a word (format 1.7),
	// and the output would hold a well-formed empty one in its place, so
	// a materialisation cut short would lose its state unnoticed.
	Materializations        []string
	MaterializationSubtasks []int
	// Hint, when not empty, follows the message in parentheses: how the
	// caller's user accepts the tree (sptool's --allow-missing-state).
	Hint string
}

func (e *MissingStateError) Error() string {
	var msgs []string
	if len(e.Files) > 0 {
		why := "clink's restore takes a 0-byte payload for an absent one and refuses to start its subtask with empty state (format 5.3)"
		if e.Changelog {
			why = "a changelog+file subtask's changelog holds the handle of its materialised state and its log, and a 0-byte one neither (format 1.7)"
		}
		msgs = append(msgs, zeroByteList("payload", e.Files, e.Subtasks, e.Compressed)+": "+why+", where the zero-row stream sptool would write in its place restores empty; a payload cut short lost its state, and an older checkpoint may hold it")
	}
	if len(e.Materializations) > 0 {
		msgs = append(msgs, zeroByteList("materialisation", e.Materializations, e.MaterializationSubtasks, nil)+": clink restores it as empty materialised state without a word (format 1.7), and the output would hold a well-formed empty one in its place; a materialisation cut short lost its subtask's state, and an older checkpoint may hold it")
	}
	msg := strings.Join(msgs, "; ")
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// zeroByteList names 0-byte files of what kind ("payload") with their
// subtasks: "0-byte payloads v1/0/… (subtask 0), v1/2/… (subtask 2)"; a
// file compressed around nothing (compressed[i], when compressed is not
// nil) says so: "v1/1/… (subtask 1, 0 bytes once gzip-decompressed)".
func zeroByteList(what string, files []string, subtasks []int, compressed []string) string {
	parts := make([]string, len(files))
	for i, f := range files {
		how := ""
		if compressed != nil && compressed[i] != savepoint.CompressNone {
			how = ", 0 bytes once " + compressed[i] + "-decompressed"
		}
		parts[i] = fmt.Sprintf("%s (subtask %d%s)", savepoint.ShowName(f), subtasks[i], how)
	}
	if len(files) > 1 {
		what += "s"
	}
	return "0-byte " + what + " " + strings.Join(parts, ", ")
}

// missingState returns the empty payloads of a tree (File.EmptyPayload: 0
// bytes, or compressed around nothing); none of a single file, which is
// empty state to every reader of clink's.
func missingState(sp *savepoint.Savepoint) []*savepoint.File {
	if sp.Kind == savepoint.InputFile {
		return nil
	}
	var empty []*savepoint.File
	for _, f := range sp.Files {
		if f.EmptyPayload() {
			empty = append(empty, f)
		}
	}
	return empty
}

// checkMissingState refuses a tree holding 0-byte payloads unless allow
// (see MissingStateError).
func checkMissingState(sp *savepoint.Savepoint, allow bool) error {
	empty := missingState(sp)
	mats := sp.EmptyMaterializations()
	if allow || len(empty) == 0 && len(mats) == 0 {
		return nil
	}
	e := MissingStateError{Changelog: sp.ChangelogTree()}
	for _, f := range empty {
		e.Files = append(e.Files, f.Rel)
		e.Subtasks = append(e.Subtasks, f.Subtask)
		e.Compressed = append(e.Compressed, f.Compression)
	}
	for _, m := range mats {
		e.Materializations = append(e.Materializations, m.Rel)
		e.MaterializationSubtasks = append(e.MaterializationSubtasks, m.Subtask)
	}
	return &e
}

// Run applies set to sp. With opts.DryRun it only reports; otherwise it
// writes the result to opts.Out atomically (a tree is staged and renamed into
// place; a file is written to a temporary name and renamed, then its
// sidecar). The input is never modified.
//
// A payload of a file-backend input whose integrity verdict is not valid
// (savepoint.File.Verdict: a size or checksum that disagrees with its
// sidecar, or an unreadable sidecar) is refused, however sp was opened: its
// rows would be written with a fresh sidecar, which clink accepts. A tree's
// payload without a sidecar is refused by savepoint.Open with
// savepoint.OpenOptions.RequireValid, unless AllowMissingSidecar; a single
// file without one is accepted (clink's own exports have none).
//
// A Run that fails returns a nil report, except when its output was
// published before the failure: it then returns the report with a
// *savepoint.PublishedError. When ctx is done before the output is
// published, Run stops, writes nothing, and returns an error that
// errors.Is matches with ctx's error (context.Canceled, or
// context.DeadlineExceeded).
func Run(ctx context.Context, sp *savepoint.Savepoint, set *rules.Set, opts Options) (*Report, error) {
	rep, err := run(ctx, sp, set, opts)
	if cerr := ctx.Err(); err != nil && cerr != nil && !errors.Is(err, cerr) && !errors.As(err, new(*savepoint.PublishedError)) {
		// The writers stop with context.Canceled whatever stopped them.
		// (A run that published its output was not stopped before it.)
		err = &stoppedError{err, cerr}
	}
	return rep, err
}

// stoppedError is the error of a Run whose ctx is done, err being the
// error it stopped with, which is not ctx's (cause): errors.Is matches
// cause, and what err matches but context.Canceled, the writers' own word
// for a stop (a run past its deadline was not cancelled); errors.As finds
// what err and cause hold.
type stoppedError struct{ err, cause error }

func (e *stoppedError) Error() string { return fmt.Sprintf("%v (%v)", e.err, e.cause) }

// Is matches cause, and what err matches but context.Canceled.
func (e *stoppedError) Is(target error) bool {
	return target == e.cause || target != context.Canceled && errors.Is(e.err, target)
}

// As finds what err holds, and what cause does.
func (e *stoppedError) As(target any) bool {
	return errors.As(e.err, target) || errors.As(e.cause, target)
}

// run is Run, whose error may say canceled for a ctx past its deadline.
func run(ctx context.Context, sp *savepoint.Savepoint, set *rules.Set, opts Options) (*Report, error) {
	if err := sp.CheckUsable(); err != nil {
		return nil, fmt.Errorf("transform: %w", err)
	}
	if set == nil {
		return nil, errors.New("transform: no rule set (a nil *rules.Set)")
	}
	if err := set.Check(); err != nil {
		return nil, fmt.Errorf("transform: %w", err)
	}
	if err := sp.UndecodableError(); err != nil {
		return nil, err
	}
	if err := sp.CheckTempDirApart(opts.TempDir); err != nil {
		return nil, err
	}
	switch {
	case opts.Generation < 0:
		return nil, fmt.Errorf("generation %d: clink's generations start at 1", opts.Generation)
	case opts.Generation > savepoint.MaxGeneration:
		return nil, fmt.Errorf("generation %d: above %d, the largest a COMPLETED marker holds", opts.Generation, savepoint.MaxGeneration)
	case opts.Generation == 0 && sp.Kind != savepoint.InputFile && sp.Generation > savepoint.MaxGeneration:
		return nil, fmt.Errorf("the input's generation v%d is above %d, the largest a COMPLETED marker holds, so the output cannot keep it: give it another (--generation)", sp.Generation, savepoint.MaxGeneration)
	}
	if err := CheckStateBase(opts.StateBase); err != nil {
		return nil, err
	}
	if len(opts.KeyDigestKey) > 0 {
		if err := CheckKeyDigestKey(opts.KeyDigestKey); err != nil {
			return nil, fmt.Errorf("the secret of the audit's keyed digests (Options.KeyDigestKey): %w", err)
		}
	}
	if sp.Kind == savepoint.InputFile && (opts.Generation != 0 || opts.Checkpoint != 0 || opts.CheckpointSet) {
		return nil, errors.New("a generation or checkpoint id for the output (--generation, --checkpoint-id) applies to a tree; a snapshot file's output keeps its input's, in its sidecar")
	}
	if !opts.DryRun && opts.Out == "" {
		return nil, errors.New("no output path: set Options.Out to the path to write, or Options.DryRun to write nothing")
	}
	if sp.Kind == savepoint.InputFile && !opts.DryRun {
		// A file's output is compressed as its input is (unless
		// Decompress); its name must say so, and must not say otherwise
		// (clink restores only plain streams, and a .snap holding gzip
		// would look like one).
		in, named := sp.Files[0].Compression, savepoint.CompressionOfName(opts.Out)
		switch {
		case opts.Decompress && named != savepoint.CompressNone:
			return nil, fmt.Errorf("output %s: the name says %s, but --decompress writes an uncompressed stream; name it without the suffix", opts.Out, named)
		case opts.Decompress:
		case in != named && in == savepoint.CompressNone:
			return nil, fmt.Errorf("output %s: the name says %s, but the output is an uncompressed stream, as its input is; name it without the suffix", opts.Out, named)
		case in != named:
			return nil, fmt.Errorf("output %s: the output is %s-compressed, as its input is, and its name must say so (%s): clink restores only uncompressed streams; --decompress writes one it restores", opts.Out, in, filepath.Base(opts.Out)+savepoint.CompressionSuffix(in))
		}
	}
	if !opts.DryRun {
		if err := CheckOutput(sp.Path, sp.Kind == savepoint.InputFile, opts.Out, opts.Force); err != nil {
			return nil, err
		}
		if err := sp.CheckFilesApart(opts.Out); err != nil {
			return nil, err
		}
		if err := CheckStateBaseApart(sp, opts.StateBase, opts.Out); err != nil {
			return nil, err
		}
	}
	if err := sp.CheckIntegrity(", and its rewrite would carry a sidecar clink accepts"); err != nil {
		return nil, err
	}
	if err := checkMissingState(sp, opts.AllowMissingState); err != nil {
		return nil, err
	}
	if err := checkRemaps(sp, set); err != nil {
		return nil, err
	}
	if spec := set.Rescale(); spec != nil {
		// The layout is checked before any row is read (and again, with
		// its warnings, when the rows are sorted out).
		if _, _, _, err := rescaleGroups(sp, spec); err != nil {
			return nil, rescaleRuleErr(set, err)
		}
	}
	rep := newReport(sp, set, opts.DryRun)
	rep.Warnings = append(rep.Warnings, sp.ReadWarnings()...)
	if missing := sp.MissingSubtasks(); len(missing) > 0 {
		// (A rescale refuses such a tree above.)
		which, it := "subtask", "it"
		if len(missing) > 1 {
			which, it = "subtasks", "them"
		}
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: a job restoring it at this layout refuses to start %s %s, and one restoring the output too, which lacks %s as well; chain groups, which decide which copy of a row is kept, are not inferred across the gap (sptool validate says more)",
			sp.NotConsecutive(missing), which, savepoint.JoinInts(missing, ","), it))
	}
	if c := sp.Completed; c != nil && c.HasSubtasks && len(c.Subtasks) == 0 && len(sp.OtherCompleted) == 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s lists no subtask (an empty subtasks= line, which no coordinator writes): a restore of the input unions no other subtask's operator rows into a subtask (section 5.3), but the output's marker lists the subtasks written, and a restore of the output unions theirs; sptool read the tree as if the line were absent", savepoint.ShowName(sp.CompletedRel)))
	}
	for _, s := range sp.Shadowed {
		if !s.Checkpoint {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("subtask directory %s is not read, nor written to the output: clink reads the subtask's own state from %s (section 5.3), but its restore unions the operator rows of every numeric directory into every subtask, %s's too, if it holds a checkpoint-%d.snap: the output's restore unions none of them; if they matter, merge them into a file that is read before the run, else remove the directory", savepoint.ShowName(s.Rel), savepoint.ShowName(s.Read), savepoint.ShowName(filepath.Base(s.Rel)), sp.Checkpoint))
		}
	}
	for _, f := range sp.Files {
		if f.Snapshot == nil {
			continue
		}
		if why := f.Snapshot.Changelog.ModeConflict(sp.Backend); why != "" {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: clink's restore of it throws (%s, section 1.7): the output holds the state sptool replays from all its materialisation rows, which no restore of the input gave; check it (sptool validate says more)", savepoint.ShowName(f.Rel), why))
		}
		if f.Snapshot.TrailingBytes > 0 {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s holds %s after its end-of-stream marker, which clink's reader ignores: the output leaves them out (the file is written anew, not copied)", savepoint.ShowName(f.Rel), countOf(int(f.Snapshot.TrailingBytes), "byte")))
		}
	}
	for _, f := range missingState(sp) { // accepted: AllowMissingState
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s %s, accepted as empty state: subtask %d's output restores empty, where clink would refuse to restore the input's", savepoint.ShowName(f.Rel), f.EmptyHow(), f.Subtask))
	}
	// The leftovers beside the output as they are before the run (which
	// --strict refuses), judged again once the output is in place: a
	// sidecar moved aside from the older payload does not describe the
	// new one, which the advice of before would pair it with.
	leftAt, leftN, existed := len(rep.Warnings), 0, false
	if !opts.DryRun {
		_, err := os.Lstat(filepath.Clean(opts.Out))
		left := savepoint.Leftovers(opts.Out)
		rep.Warnings, leftN, existed = append(rep.Warnings, left...), len(left), err == nil
	}
	jobs := opts.Jobs
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	// A file, or a part of one, that fails stops those after it, in file
	// and row order, at their next row or block: the run fails with its
	// error, and their work would be thrown away. Those before it go on,
	// so that the error reported is the first in that order whatever the
	// timing (see engine.failAt).
	fileCtxs := make([]context.Context, len(sp.Files))
	cancels := make([]context.CancelFunc, len(sp.Files))
	for i := range sp.Files {
		fileCtxs[i], cancels[i] = context.WithCancel(ctx)
		defer cancels[i]()
	}
	eng := &engine{set: set, steps: compile(set), fields: set.Fields(), progress: opts.Progress, spill: newSpiller(opts, min(jobs, len(sp.Files))), dry: opts.DryRun, decompress: opts.Decompress, keepOrder: opts.KeepOrder, cancels: cancels}
	bindWarnings := bindSetVersions(sp, eng.steps)
	eng.failedAt.Store(math.MaxInt64)
	eng.passedOver = make([]atomic.Int64, len(eng.steps))
	defer eng.spill.close()
	defer context.AfterFunc(ctx, func() { eng.ended.Store(true) })()
	for _, f := range sp.Files {
		eng.total += int64(f.Snapshot.NumRows())
	}
	for i, st := range eng.steps {
		if st.rule.PurgeKeys != nil {
			eng.purges = append(eng.purges, i)
			if eng.purgedScopes == nil {
				eng.purgedScopes = make([]*rules.MovedScope, len(eng.steps))
			}
			eng.purgedScopes[i] = set.PurgedScope(st.rule)
		}
		if r := st.rule; r.RemapOperator != nil && r.RemapOperator.Merge || r.RenameSlot != nil && r.RenameSlot.Merge {
			eng.joinBlobs = true
		}
		eng.valueFates = eng.valueFates || decidesByValue(st.rule)
	}
	eng.mergeSteps = mergeSteps(eng.steps)
	eng.sortLater = eng.orphansPossible(sp)
	// (A fault of the mapped input while presorts looks at the files'
	// order leaves them to the rules pass, which names it.)
	_ = savepoint.Guard(func() error { eng.presort = presorts(sp, set, opts); return nil })
	eng.presortSlot = make(chan struct{}, presortsAtOnce)

	results := make([]*fileResult, len(sp.Files))
	// A file gets several workers over ranges of its rows when there are
	// fewer files than jobs.
	parts := max(1, jobs/max(1, len(sp.Files)))
	var wg sync.WaitGroup
	sem := make(chan struct{}, jobs)
	for i, f := range sp.Files {
		wg.Add(1)
		sem <- struct{}{}
		if eng.stopsAt(position(i, 0)) {
			// A file before it failed: it is not started.
			results[i] = eng.newResult()
			results[i].err = cmp.Or(ctx.Err(), context.Canceled)
			<-sem
			wg.Done()
			continue
		}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			// A fault of the mapped input (cut short meanwhile) in the
			// file's own goroutine, such as in the sort through temporary
			// files, is an error, not a crash of the process.
			err := savepoint.Guard(func() error {
				results[i] = eng.processFile(fileCtxs[i], f, i, parts)
				return nil
			})
			if err != nil {
				results[i] = eng.newResult()
				results[i].err = err
			}
			if results[i].err != nil {
				eng.failAt(position(i, 0))
			}
		}()
	}
	wg.Wait()
	if err := filesError(ctx, sp, results); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var orphanWarnings []string
	if eng.sortLater {
		// (A fault of the mapped input there, cut short meanwhile, is an
		// error, not a crash of the process.)
		err := savepoint.Guard(func() error {
			orphanWarnings = eng.dropOrphans(sp, results)
			eng.sortOutputs(sp, results, jobs)
			return nil
		})
		if err != nil {
			return nil, err
		}
		if err := filesError(ctx, sp, results); err != nil {
			return nil, err
		}
	}
	rep.merge(sp, eng, results, keyListingOf(opts))
	rep.Warnings = append(rep.Warnings, orphanWarnings...)
	if err := checkSlotMerges(set, rep.Slots); err != nil {
		return nil, err
	}
	if err := checkMergeGroups(sp, set, results); err != nil {
		return nil, err
	}
	rep.Warnings = append(rep.Warnings, reappliedWarnings(sp, set)...)
	rep.Warnings = append(rep.Warnings, declarationWarnings(set, rep.Slots)...)
	rep.Warnings = append(rep.Warnings, scopeWarnings(set, rep.Slots, versionEntriesMoved(sp, eng.steps))...)
	rep.Warnings = append(rep.Warnings, filterWarnings(set, eng.steps, rep.PerRule, rep.Slots)...)
	rep.Warnings = append(rep.Warnings, eng.compositeWarnings(results)...)
	rep.Warnings = append(rep.Warnings, eng.passedOverWarnings()...)
	rep.Warnings = append(rep.Warnings, dropVersionWarnings(sp, eng.steps, rep.PerRule)...)
	rep.Warnings = append(rep.Warnings, setVersionWarnings(sp, set, eng.steps, rep.Slots)...)
	rep.Warnings = append(rep.Warnings, bindWarnings...)
	rep.Warnings = append(rep.Warnings, renameVersionWarnings(sp, eng.steps, rep.PerRule)...)
	rep.Warnings = append(rep.Warnings, remapVersionWarnings(sp, set, eng.steps, rep.Slots)...)
	rep.Warnings = append(rep.Warnings, dropSlotVersionWarnings(sp, eng.steps, rep.PerRule, rep.Slots)...)
	// (The warnings on --state-base are made in a dry run too, which
	// rescale --dry-run gives it: its report is the run's, and --strict
	// refuses the same runs in both.)
	if opts.StateBase != "" && (sp.Kind == savepoint.InputFile || sp.Backend != savepoint.BackendChangelogFile) {
		// Only a changelog+file tree's changelogs hold handles.
		what := "a file-backend tree"
		if sp.Kind == savepoint.InputFile {
			what = "a snapshot file"
		}
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("--state-base %s is not used: the output is %s, which holds no materialisation handles (only a changelog+file tree's do)", opts.StateBase, what))
	} else if opts.StateBase != "" && sameDir(opts.StateBase, sp.Root) {
		// The usual way to write a tree that replaces its input; until it
		// does, its handles name the input's files.
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("--state-base %s is the input tree: the output's handles name the materialisations there, which are the input's (the state before the rules) until the output is moved into its place; restore a job from the output only once it is there", opts.StateBase))
	}
	if ckpt := outputCheckpoint(sp, opts); sp.Kind != savepoint.InputFile && ckpt == 0 {
		// (In a dry run too, of an input of checkpoint 0: the plan's report
		// is the apply's, and --strict refuses the run.)
		fix := "give the output another id with --checkpoint-id"
		if opts.CheckpointSet {
			fix = "give --checkpoint-id an id other than 0"
		}
		rep.Warnings = append(rep.Warnings, "the output tree is checkpoint 0, which clink does not restore: a restore_checkpoint_id of 0 means no restore, and the job would start without state (format 5.3); "+fix)
	}
	finished := rep.finish()
	defer func() { <-finished }() // the report is whole when Run returns
	var files []*newFile
	if spec := set.Rescale(); spec != nil {
		// The rescale reads the mapped input (it sorts the old files and
		// merges their rows): a fault there, the input cut short meanwhile,
		// is an error, not a crash of the process.
		eng.spill.alone() // the rescale sorts its old files one at a time
		err := savepoint.Guard(func() (err error) {
			if files, err = rescale(sp, spec, set.Source == rules.RescaleShorthand, results, eng.inputIDs, rep); err != nil {
				return rescaleRuleErr(set, err)
			}
			rep.recountAfterRescale(files, sp.ReleasePages)
			return nil
		})
		if err != nil {
			return nil, err
		}
	} else {
		for i, f := range sp.Files {
			files = append(files, sameLayoutFile(f, results[i], f.Subtask))
		}
	}
	if err := rep.checkAccounting(); err != nil {
		return nil, err
	}
	if w := compressedOutputWarning(sp, files, opts); w != "" {
		rep.Warnings = append(rep.Warnings, w)
	}
	if sp.Kind != savepoint.InputFile && sp.Job == "" {
		// (In a dry run too: --strict refuses the same runs in both.)
		rep.Warnings = append(rep.Warnings, "the input has no COMPLETED marker, so the output has none (clink does not need one to restore)")
	}
	var receipts map[string][]byte // those the output carries, for write
	if sp.Kind != savepoint.InputFile {
		// The receipts the output leaves behind (in a dry run too: the
		// plan's report is the apply's, and --strict refuses the run).
		placed, warns, err := receiptFates(sp, files, rep.Rescale != nil, outputCheckpoint(sp, opts))
		if err != nil {
			return nil, err
		}
		receipts = placed
		rep.Warnings = append(rep.Warnings, warns...)
	}
	// What lies beside the report the caller saves, last (after what the
	// write adds, if any, as the caller once added it after the run).
	reportAt := len(rep.Warnings)
	if opts.Report != "" {
		rep.Warnings = append(rep.Warnings, savepoint.ReportLeftovers(opts.Report)...)
	}
	if opts.Strict && len(rep.Warnings) > 0 {
		// Nothing written: the report is a dry run's.
		rep.DryRun = true
		return rep, &WarningsError{Warnings: len(rep.Warnings), Dry: opts.DryRun}
	}
	if opts.DryRun {
		return rep, nil
	}
	reportLeft := slices.Clone(rep.Warnings[reportAt:])
	rep.Warnings = rep.Warnings[:reportAt]
	if err := write(ctx, sp, set, files, rep, opts, receipts); err != nil {
		var published *savepoint.PublishedError
		if errors.As(err, &published) {
			rep.Warnings = append(rep.Warnings, reportLeft...)
			return rep, err
		}
		return nil, err
	}
	w := append([]string{}, rep.Warnings[:leftAt]...)
	w = append(w, savepoint.LeftoversAfterPublish(opts.Out, existed)...)
	rep.Warnings = append(append(w, rep.Warnings[leftAt+leftN:]...), reportLeft...)
	return rep, nil
}

// sameDir reports whether the paths a and b name one existing directory.
func sameDir(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil || !sa.IsDir() {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// compressedOutputWarning warns, unless opts.Decompress, of the output
// files written compressed as a whole (gzip, zstd, ...) as their inputs
// were: clink's reader restores only an uncompressed stream.
func compressedOutputWarning(sp *savepoint.Savepoint, files []*newFile, opts Options) string {
	if opts.Decompress || sp.Backend == savepoint.BackendChangelogFile {
		return "" // (a changelog+file tree's files are written plain)
	}
	var names []string
	for _, nf := range files {
		if outCompression(nf.compression, opts) != savepoint.CompressNone {
			names = append(names, fmt.Sprintf("%s (%s)", savepoint.ShowName(nf.from), nf.compression))
		}
	}
	if len(names) == 0 {
		return ""
	}
	what := "the output file made of " + names[0] + " is"
	if len(names) > 1 {
		what = fmt.Sprintf("the %d output files made of %s are", len(names), strings.Join(names, ", "))
	}
	return what + " written compressed as a whole, as the input is: clink's reader restores only an uncompressed stream, so a restore of the output fails there (sptool validate reports it); --decompress writes plain streams"
}

// filesError returns the error of the first file, in order, that failed
// of itself: a file stopped because another failed (its error is
// context.Canceled while ctx, the run's, is not done) is passed over.
func filesError(ctx context.Context, sp *savepoint.Savepoint, results []*fileResult) error {
	var stopped error
	for i, res := range results {
		if res.err == nil {
			continue
		}
		err := savepoint.WithFile(sp.Files[i].Path, res.err)
		if ctx.Err() == nil && errors.Is(res.err, context.Canceled) {
			stopped = cmp.Or(stopped, err)
			continue
		}
		return err
	}
	return stopped
}

// recountAfterRescale makes the report's output side describe the rescaled
// files: rows written, rows per operator and slot after, and the fate of the
// input files of rescaled groups.
func (rep *Report) recountAfterRescale(files []*newFile, release func()) {
	rep.RowsWritten = 0
	counts := &slotCounts{}
	// Files are counted in parallel, each into its own counts.
	per := make([]*slotCounts, len(files))
	for _, f := range files {
		rep.RowsWritten += int64(f.rows.Len())
		if f.rescaled {
			rep.Rescale.Outputs = append(rep.Rescale.Outputs, RescaleOutput{Subtask: f.subtask, KeyGroupStart: f.keyGroups.First, KeyGroupEnd: f.keyGroups.Last, Rows: int64(f.rows.Len()), Timers: f.timers})
		}
	}
	savepoint.ForEach(len(files), func(i int) { // the rows are read from the input
		if per[i] = files[i].counts; per[i] == nil {
			per[i] = &slotCounts{}
			countSlots(files[i].rows, files[i].canonical, per[i], release)
		}
	})
	for _, c := range per {
		c.each(func(k slotKey, n int64) { counts.addKey(k, n) })
	}
	after := map[slotKey]int64{}
	counts.each(func(k slotKey, n int64) { after[k] += n })
	seen := map[slotKey]bool{}
	for _, s := range rep.Slots {
		k := s.key()
		s.After, seen[k] = after[k], true
	}
	for k, n := range after {
		if !seen[k] {
			s := slotStats(k)
			s.After = n
			rep.Slots = append(rep.Slots, s)
		}
	}
	sortSlots(rep.Slots)
	for _, fs := range rep.Files {
		for _, g := range rep.Rescale.Groups {
			if g.Action == "rescale" && fs.Subtask >= g.OldFirst && fs.Subtask < g.OldFirst+g.OldParallelism {
				fs.Action = "rescale"
				fs.RowsOut -= rep.Rescale.left[fs.Subtask] // its stale and lost copies stayed behind
			}
		}
	}
	last := rep.PerRule[len(rep.PerRule)-1]
	last.Matched = rep.Rescale.KeyedIn + rep.Rescale.OperatorIn
	// The keyed copies the rescale left out are its rule's drops.
	last.Dropped = rep.Rescale.StaleCopies + rep.Rescale.Lost
}

// checkAccounting verifies that every row is accounted for, and sets the
// report's rows out and rows dropped from the rows written (RowsWritten)
// and the rules' drops (PerRule). The rows written and the rules' drops,
// the duplicates resolved and, for a rescale (whose rule's drops are its
// stale and lost keyed copies), the operator rows read less those written
// must add up to the rows in; so must the rows out, each row read that the
// output holds counted once (a rescale's merged operator rows once, not
// once in each new file), and the rows dropped, every row read it does
// not hold.
func (rep *Report) checkAccounting() error {
	var rulesDropped int64
	for _, rs := range rep.PerRule {
		rulesDropped += rs.Dropped
	}
	written := rep.RowsWritten + rulesDropped + rep.DuplicatesResolved + rep.OrphanedCopies
	extra := ""
	if rep.OrphanedCopies > 0 {
		extra = fmt.Sprintf(" + %d stale copies left without an owner copy", rep.OrphanedCopies)
	}
	rep.RowsOut, rep.RowsDropped = rep.RowsWritten, rulesDropped+rep.DuplicatesResolved+rep.OrphanedCopies
	if r := rep.Rescale; r != nil {
		if r.KeyedIn != r.KeyedOut+r.StaleCopies+r.Lost {
			return fmt.Errorf("%w: rescale: %d keyed rows in, %d out + %d stale copies + %d lost", ErrAccounting, r.KeyedIn, r.KeyedOut, r.StaleCopies, r.Lost)
		}
		if r.TimersIn != r.TimersOut+r.TimersStale+r.TimersUnchosen {
			return fmt.Errorf("%w: rescale: %d timers in, %d out + %d stale + %d unchosen", ErrAccounting, r.TimersIn, r.TimersOut, r.TimersStale, r.TimersUnchosen)
		}
		written += r.OperatorIn - r.OperatorOut
		extra += fmt.Sprintf(" + %d operator rows in - %d operator rows written", r.OperatorIn, r.OperatorOut)
		rep.RowsOut -= r.OperatorOut - r.OperatorDistinct
		rep.RowsDropped += r.OperatorIn - r.OperatorDistinct
	}
	if written != rep.RowsIn {
		return fmt.Errorf("%w: %d in, %d written + %d dropped by the rules + %d duplicates resolved%s = %d", ErrAccounting, rep.RowsIn, rep.RowsWritten, rulesDropped, rep.DuplicatesResolved, extra, written)
	}
	if rep.RowsIn != rep.RowsOut+rep.RowsDropped {
		return fmt.Errorf("%w: %d in, %d out + %d dropped = %d", ErrAccounting, rep.RowsIn, rep.RowsOut, rep.RowsDropped, rep.RowsOut+rep.RowsDropped)
	}
	return nil
}

// checkRemaps refuses a remap_operator into an operator that already has
// state, unless the rule says merge: true (or an earlier rule dropped it),
// or the operator remapped has none there.
// It reads the operator column alone, before any rule runs, and follows
// the operators' rows through the rules that drop and remap operators.
// Those of slot rules stay with their operator: a drop_slot or rename_slot
// leaves the operator's other slots, its operator state and its timers
// (the empty slot name is one a slot may have, not the whole operator).
func checkRemaps(sp *savepoint.Savepoint, set *rules.Set) error {
	if !slices.ContainsFunc(set.Rules, func(r *rules.Rule) bool { return r.RemapOperator != nil }) {
		return nil // no remap: no need to read every row for the operators present
	}
	present := map[uint64]int64{}
	for _, f := range sp.Files {
		if err := f.Snapshot.CountOps(present); err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	// Each such rule is refused, in rule order, in one run.
	var errs []error
	for _, r := range set.Rules {
		switch {
		case r.DropOperator != nil:
			delete(present, r.DropOperator.Op.ID)
		case r.RemapOperator != nil:
			s := r.RemapOperator
			// An operator with no rows there merges nothing: the rule does
			// nothing to the rows (scopeWarnings says so), as on a second
			// run of a migration over its own output.
			if n := present[s.To.ID]; !s.Merge && n > 0 && present[s.From.ID] > 0 {
				errs = append(errs, fmt.Errorf("%s: operator %s already has state (%d rows); remapping %s into it would merge the two (set 'merge: true' to do that)", ruleAt(set, r), s.To, n, s.From))
			}
			if s.From.ID != s.To.ID {
				present[s.To.ID] += present[s.From.ID]
				delete(present, s.From.ID)
			}
		}
	}
	return errors.Join(errs...)
}

// slotsBefore returns the input's rows per (operator, slot) of a report's
// slots, for followSlots.
func slotsBefore(slots []*SlotStats) map[slotKey]int64 {
	present := map[slotKey]int64{}
	for _, s := range slots {
		if s.Before > 0 {
			present[s.key()] += s.Before
		}
	}
	return present
}

// followSlots calls visit for each rule of set in order, with the rows
// per (operator, slot) the rule finds: present (the input's, before any
// rule; changed in place) moved along by the rules before it that drop,
// remap and rename operators and slots. A rule that keeps or drops rows by
// expression is taken to keep them all. visit's error ends the walk.
func followSlots(set *rules.Set, present map[slotKey]int64, visit func(r *rules.Rule, present map[slotKey]int64) error) error {
	for _, r := range set.Rules {
		if err := visit(r, present); err != nil {
			return err
		}
		switch {
		case r.DropOperator != nil:
			for k := range present {
				if k.op == r.DropOperator.Op.ID {
					delete(present, k)
				}
			}
		case r.DropSlot != nil:
			delete(present, slotKey{op: r.DropSlot.Op.ID, slot: r.DropSlot.Slot})
		case r.RemapOperator != nil:
			s := r.RemapOperator
			for k, n := range present {
				if k.op == s.From.ID {
					delete(present, k)
					k.op = s.To.ID
					present[k] += n
				}
			}
		case r.RenameSlot != nil:
			s := r.RenameSlot
			from := slotKey{op: s.Op.ID, slot: s.From}
			if n := present[from]; n > 0 {
				delete(present, from)
				present[slotKey{op: s.Op.ID, slot: s.To}] += n
			}
		}
	}
	return nil
}

// checkSlotMerges refuses, as checkRemaps does for operators, a rename_slot
// without 'merge: true' into a slot that holds rows at that rule (see
// followSlots): the rows of the two slots would be merged, and a key held
// in both keep one value, silently.
func checkSlotMerges(set *rules.Set, slots []*SlotStats) error {
	if !slices.ContainsFunc(set.Rules, func(r *rules.Rule) bool { return r.RenameSlot != nil && !r.RenameSlot.Merge }) {
		return nil
	}
	// Each such rule is refused, in rule order, in one run.
	var errs []error
	_ = followSlots(set, slotsBefore(slots), func(r *rules.Rule, present map[slotKey]int64) error { // (it returns visit's errors: none)
		s := r.RenameSlot
		if s == nil || s.Merge {
			return nil
		}
		from, to := present[slotKey{op: s.Op.ID, slot: s.From}], present[slotKey{op: s.Op.ID, slot: s.To}]
		if from > 0 && to > 0 {
			errs = append(errs, fmt.Errorf("%s: operator %s already has slot %q (%d rows); renaming slot %q (%d rows) into it would merge the two, a key held in both keeping one value (set 'merge: true' to do that)", ruleAt(set, r), s.Op, s.To, to, s.From, from))
		}
		return nil
	})
	return errors.Join(errs...)
}

// checkMergeGroups refuses a remap_operator with 'merge: true' that joins
// two operators whose keyed rows lie in different chain groups of a tree,
// when the merged operator still holds keyed rows in more than one group
// after the rules: an operator runs in one chain group, so a restore at the
// tree's layout would lose the rows in the other group's files (sptool
// validate reports them as errors). The groups an operator's keyed rows lie
// in are read from the input and followed through the remaps and
// drop_operator rules; the output is read only when a merge joins groups.
func checkMergeGroups(sp *savepoint.Savepoint, set *rules.Set, results []*fileResult) error {
	if len(sp.Groups) < 2 || !slices.ContainsFunc(set.Rules, func(r *rules.Rule) bool { return r.RemapOperator != nil && r.RemapOperator.Merge }) {
		return nil
	}
	type groupSet = map[savepoint.Group]bool
	// keyedGroups gives each operator the groups of the files where each
	// calls keyed with it: the operators with keyed rows there.
	keyedGroups := func(each func(i int, keyed func(op uint64))) map[uint64]groupSet {
		m := map[uint64]groupSet{}
		for i, f := range sp.Files {
			g, ok := sp.GroupOf(f.Subtask)
			if !ok {
				continue
			}
			each(i, func(op uint64) {
				if m[op] == nil {
					m[op] = groupSet{}
				}
				m[op][g] = true
			})
		}
		return m
	}
	var err error
	cur := keyedGroups(func(i int, keyed func(uint64)) {
		if s := sp.Files[i].Snapshot; s != nil && err == nil {
			// The input is mapped: a file cut short since is an error.
			err = savepoint.Guard(func() error {
				for op := range s.KeyedOperators() {
					keyed(op)
				}
				return nil
			})
		}
	})
	if err != nil {
		return err
	}
	format := func(gs groupSet) string {
		return savepoint.FormatGroups(slices.SortedFunc(maps.Keys(gs), func(a, b savepoint.Group) int { return a.First - b.First }))
	}
	type joined struct {
		rule     *rules.Rule
		op       uint64 // the merged operator's id, followed through later remaps
		from, to string
	}
	var joins []*joined
	for _, r := range set.Rules {
		switch {
		case r.DropOperator != nil:
			delete(cur, r.DropOperator.Op.ID)
			joins = slices.DeleteFunc(joins, func(j *joined) bool { return j.op == r.DropOperator.Op.ID })
		case r.RemapOperator != nil:
			from, to := r.RemapOperator.From.ID, r.RemapOperator.To.ID
			fg, tg := cur[from], cur[to]
			u := groupSet{}
			maps.Copy(u, fg)
			maps.Copy(u, tg)
			if r.RemapOperator.Merge && len(fg) > 0 && len(tg) > 0 && len(u) > len(fg) && len(u) > len(tg) {
				joins = append(joins, &joined{rule: r, op: to, from: format(fg), to: format(tg)})
			}
			for _, j := range joins {
				if j.op == from {
					j.op = to
				}
			}
			delete(cur, from)
			if len(u) > 0 {
				cur[to] = u
			}
		}
	}
	if len(joins) == 0 {
		return nil
	}
	out := keyedGroups(func(i int, keyed func(uint64)) {
		res := results[i]
		if res == nil || res.out == nil || err != nil {
			return
		}
		err = savepoint.Guard(func() error {
			for j := 0; j < res.out.Len(); j++ {
				if _, ok := savepoint.RestoreKeyGroup(res.out.Key(j)); ok {
					keyed(res.out.Op(j))
				}
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	for _, j := range joins {
		if gs := out[j.op]; len(gs) > 1 {
			m := j.rule.RemapOperator
			return fmt.Errorf("%s: merging operator %s (keyed rows in chain group %s) into operator %s (keyed rows in chain group %s) leaves operator %d with keyed rows in chain groups %s, and an operator runs in one: a restore at this layout loses the rows in the other group's files (sptool validate lists them); remap into an operator of the same group, or drop one side's keyed rows first", ruleAt(set, j.rule), m.From, j.from, m.To, j.to, j.op, format(gs))
		}
	}
	return nil
}

// reappliedWarnings warns when the input was written by the same rule file
// (its files' sptool.provenance carry the set's digest) and the file holds
// a set_value, whose expression applied again to its own result compounds
// (value * 100 twice). Running a migration step again on its own output is
// the mistake it catches. Every other kind does nothing more the second
// time (a filter or purge finds nothing left, a rename or remap finds its
// source gone and is warned of, set_version sets what is set), and a
// recurring erasure runs the same rule file with a new keys file on its
// own output by design. The digest is the rule file's bytes', so a keys
// file's contents do not change it; the rule files of earlier runs, before
// a rescale for one, are remembered too (inputDigests).
func reappliedWarnings(sp *savepoint.Savepoint, set *rules.Set) []string {
	if set.Source == rules.RescaleShorthand || set.Digest == "" || !slices.ContainsFunc(set.Rules, func(r *rules.Rule) bool { return r.SetValue != nil }) {
		return nil
	}
	var first string
	n, all := 0, 0
	for _, f := range sp.Files {
		if f.Snapshot == nil {
			continue
		}
		all++
		if slices.Contains(inputDigests(f.Snapshot.Metadata), set.Digest) {
			if n++; n == 1 {
				first = savepoint.ShowName(f.Rel)
			}
		}
	}
	if n == 0 {
		return nil
	}
	which := first + " carries"
	if all > 1 {
		which = fmt.Sprintf("%d of its %d files (%s among them) carry", n, all, first)
	}
	return []string{fmt.Sprintf("the input was written by these same rules: %s their digest (%s... in sptool.provenance); applying them again applies each set_value to its own result", which, short(set.Digest))}
}

// scopeWarnings returns a warning for each rule that names an operator, or
// a slot of one, that holds no row where the rule runs (see followSlots):
// such a rule does nothing, most likely because of a mistyped name, which
// an erasure's audit would otherwise report as keys not found. A rule that
// changes version-map entries there (movesVersions) does something.
func scopeWarnings(set *rules.Set, slots []*SlotStats, movesVersions func(*rules.Rule) bool) []string {
	var warns []string
	followSlots(set, slotsBefore(slots), func(r *rules.Rule, present map[slotKey]int64) error {
		op, slot := ruleScope(r)
		if op == nil && slot == nil {
			return nil
		}
		var opSlots []string
		unslotted := false // rows of keys without a slot in scope
		for k, n := range present {
			if n <= 0 || (op != nil && k.op != op.ID) {
				continue
			}
			if slot == nil || !k.noSlot && k.slot == *slot {
				return nil
			}
			unslotted = unslotted || k.noSlot
			if op != nil {
				opSlots = append(opSlots, k.show())
			}
		}
		if movesVersions(r) {
			return nil
		}
		// A rule's slot "<raw>" names the slot of that name, not the
		// keys without a slot that sptool shows so.
		rawNote := ""
		switch {
		case slot == nil || *slot != savepoint.RawSlot || !unslotted:
		case r.Keep != nil || r.Drop != nil:
			rawNote = " (the rule's slot \"<raw>\" names a slot of that name; the keys without a slot, shown as <raw>, are selected with an expression: slot == \"<raw>\")"
		case r.DropSlot != nil:
			rawNote = " (the rule's slot \"<raw>\" names a slot of that name; the keys without a slot, shown as <raw>, are dropped with a drop rule: drop: 'slot == \"<raw>\"')"
		default:
			rawNote = " (the rule's slot \"<raw>\" names a slot of that name; the keys without a slot, shown as <raw>, are no slot a rule can name)"
		}
		switch {
		case op == nil:
			warns = append(warns, fmt.Sprintf("%s: no operator has rows of slot %q here; the rule does nothing%s", r.Label(), *slot, rawNote))
		case slot == nil || len(opSlots) == 0:
			warns = append(warns, fmt.Sprintf("%s: operator %s has no rows here; the rule does nothing%s", r.Label(), op, nearUIDNote(set, op, present)))
		default:
			slices.Sort(opSlots)
			warns = append(warns, fmt.Sprintf("%s: operator %s has no rows of slot %q here (its slots: %s); the rule does nothing%s", r.Label(), op, *slot, strings.Join(opSlots, ", "), rawNote))
		}
		return nil
	})
	return warns
}

// filterWarnings returns a warning for each drop whose expression held for
// no row, and each keep whose expression held for none of the rows of its
// scope, so that it dropped them all: most likely a mistyped name or value
// (slot == "agg2"), which the run would otherwise carry out without a word.
// The rows of a rule's scope are those followSlots finds where it runs (a
// rule whose scope holds none is scopeWarnings' to warn of), which are the
// rows that reach it only while no rule before it dropped rows but by
// operator or slot: after one that did (a filter, a purge, a set_value that
// erases), the rule is not warned of, as a drop that matched nothing may
// have seen nothing, and a keep that dropped every row it saw cannot be
// told from one that did not.
func filterWarnings(set *rules.Set, steps []step, stats []*RuleStats, slots []*SlotStats) []string {
	byRule := map[*rules.Rule]*RuleStats{}
	for i, st := range steps {
		if i < len(stats) {
			byRule[st.rule] = stats[i]
		}
	}
	var warns []string
	unfollowed := false // a rule before dropped rows that followSlots does not follow
	followSlots(set, slotsBefore(slots), func(r *rules.Rule, present map[slotKey]int64) error {
		rs, f := byRule[r], r.Filter()
		if rs == nil {
			return nil
		}
		defer func() { unfollowed = unfollowed || rs.Dropped > 0 && r.DropOperator == nil && r.DropSlot == nil }()
		if f == nil || unfollowed {
			return nil
		}
		var rows int64
		names := map[string]bool{} // the slots of the scope, quoted
		for k, n := range present {
			if n > 0 && (f.Scope.Op == nil || k.op == f.Scope.Op.ID) && (f.Scope.Slot == nil || !k.noSlot && k.slot == *f.Scope.Slot) {
				rows += n
				names[k.show()] = true
			}
		}
		var what string
		switch {
		case rows == 0:
			return nil
		case r.Drop != nil && rs.Matched == 0:
			what = "the rule drops nothing"
		case r.Keep != nil && rs.Matched == rows:
			what = "the rule drops every one"
		default:
			return nil
		}
		held := "its expression held for none of its scope's " + countOf(int(rows), "row")
		if f.Scope.Slot == nil && strings.Contains(f.Expr, "slot") {
			held += " (slots " + listSome(slices.Sorted(maps.Keys(names)), 12) + ")"
		}
		warns = append(warns, r.Label()+": "+held+": "+what)
		return nil
	})
	return warns
}

// listSome joins the first most of names with commas, and says how many
// more there are.
func listSome(names []string, most int) string {
	if len(names) <= most {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:most], ", "), len(names)-most)
}

// versionEntriesMoved reports of a drop_operator, remap_operator or
// rename_slot rule whether some file's version map, where the rule runs,
// holds an entry of its operator (bound to its slot, for rename_slot),
// which the rule drops, moves or rebinds. It looks only at the rules it is
// asked of (those with no rows in scope).
func versionEntriesMoved(sp *savepoint.Savepoint, steps []step) func(*rules.Rule) bool {
	return func(r *rules.Rule) bool {
		if r.DropOperator == nil && r.RemapOperator == nil && r.RenameSlot == nil {
			return false
		}
		i := slices.IndexFunc(steps, func(st step) bool { return st.rule == r })
		op, slot := ruleScope(r)
		for _, vm := range versionsAt(sp, steps, i) {
			for _, e := range vm.Entries() {
				if e.Op == op.ID && (slot == nil || e.Slot == *slot) {
					return true
				}
			}
		}
		return false
	}
}

// nearUIDNote says, of an operator named by a uid that has no rows in
// present, which uids the rule file names elsewhere that have rows and
// that it may be a mistyping of (equal but for case, or at most two edits
// apart): " (uid \"enricher\", named
// elsewhere in the rule file, has rows: a mistyped uid?)", or "".
func nearUIDNote(set *rules.Set, op *rules.OpRef, present map[slotKey]int64) string {
	if op.UID == "" {
		return ""
	}
	hasRows := func(id uint64) bool {
		for k, n := range present {
			if k.op == id && n > 0 {
				return true
			}
		}
		return false
	}
	named := map[string]bool{}
	for _, d := range set.Slots {
		if d.Op.UID != "" && hasRows(d.Op.ID) {
			named[d.Op.UID] = true
		}
	}
	for _, r := range set.Rules {
		if o, _ := ruleScope(r); o != nil && o.UID != "" && hasRows(o.ID) {
			named[o.UID] = true
		}
	}
	var like []string
	for _, n := range slices.Sorted(maps.Keys(named)) {
		// (Unlike state types, a uid one letter longer is a typo too.)
		if n != op.UID && (strings.EqualFold(n, op.UID) || len(n) >= 4 && textdist.Distance(n, op.UID) <= 2) {
			like = append(like, n)
		}
	}
	if len(like) == 0 {
		return ""
	}
	what := "uid " + quotedList(like) + ", named elsewhere in the rule file, has rows"
	if len(like) > 1 {
		what = "uids " + quotedList(like) + ", named elsewhere in the rule file, have rows"
	}
	return " (" + what + ": a mistyped uid?)"
}

// declarationWarnings returns a warning for each slot declaration whose
// operator holds no rows of the slot in the input, and into which no rule
// renames a slot or remaps an operator: it decodes nothing, most likely
// because of a mistyped name, and the rules that take the declared slots
// (purge_expired, of those declared 'ttl: true') pass over the real one.
func declarationWarnings(set *rules.Set, slots []*SlotStats) []string {
	present := slotsBefore(slots)
	made, remapped := map[slotKey]bool{}, map[uint64]bool{}
	for _, r := range set.Rules {
		if s := r.RenameSlot; s != nil {
			made[slotKey{op: s.Op.ID, slot: s.To}] = true
		}
		if s := r.RemapOperator; s != nil {
			remapped[s.To.ID] = true
		}
	}
	var warns []string
	for _, d := range set.Slots {
		k := slotKey{op: d.Op.ID, slot: d.Slot}
		if present[k] > 0 || made[k] || remapped[d.Op.ID] {
			continue
		}
		var opSlots []string
		for k, n := range present {
			if k.op == d.Op.ID && n > 0 {
				opSlots = append(opSlots, k.show())
			}
		}
		where := fmt.Sprintf("operator %s has no rows here", d.Op)
		if len(opSlots) > 0 {
			slices.Sort(opSlots)
			where = fmt.Sprintf("operator %s has no rows of slot %q here (its slots: %s)", d.Op, d.Slot, strings.Join(opSlots, ", "))
		}
		warns = append(warns, fmt.Sprintf("slots: declaration %d (line %d): %s; the declaration matches no row (a mistyped operator or slot?)", d.Index, d.Line, where))
	}
	return warns
}

// dropVersionWarnings returns a warning for each drop_version step that
// removed no entry from any file's version map: a mistyped state type
// leaves the old stamp, and with it the migrations the job runs on
// restore. It names the operator's state types in the version maps as the
// step saw them, the steps before it applied (a remap moves entries).
func dropVersionWarnings(sp *savepoint.Savepoint, steps []step, stats []*RuleStats) []string {
	var warns []string
	for i, st := range steps {
		dv := st.rule.DropVersion
		if dv == nil || i >= len(stats) || stats[i].VersionEntries > 0 || droppedWithOperator(sp, steps, i) {
			continue
		}
		types := map[string]bool{}
		for _, vm := range versionsAt(sp, steps, i) {
			for _, e := range vm.Entries() {
				if e.Op == dv.Op.ID {
					types[strconv.Quote(e.StateType)] = true
				}
			}
		}
		have := "it has none"
		if len(types) > 0 {
			have = "its state types: " + strings.Join(slices.Sorted(maps.Keys(types)), ", ")
		}
		warns = append(warns, fmt.Sprintf("%s: the version map has no entry of operator %s for state type %q here (%s); the rule does nothing", st.rule.Label(), dv.Op, dv.StateType, have))
	}
	return warns
}

// droppedWithOperator reports whether a drop_operator step before step i,
// a drop_version, took the entry it names out of the version map: the
// rule file says twice what is done once (as the contract's example does),
// and no warning is due.
func droppedWithOperator(sp *savepoint.Savepoint, steps []step, i int) bool {
	dv := steps[i].rule.DropVersion
	for j, st := range steps[:i] {
		if do := st.rule.DropOperator; do == nil || do.Op.ID != dv.Op.ID {
			continue
		}
		for _, vm := range versionsAt(sp, steps, j) {
			if _, ok := vm.Get(dv.Op.ID, dv.StateType); ok {
				return true
			}
		}
	}
	return false
}

// bindSetVersions gives each set_version step without 'slot' the slot a
// file whose version map lacks the entry binds it to: the one the other
// files' entries are bound to where the step runs. Without it, such a file
// (a subtask of a changelog+file tree with no version map, say) got an
// entry bound to no slot, which applies to every row of the operator,
// timers and operator state included (format 4.4), while the report said
// the slot was kept. Files that bind the entry to different slots are
// warned of; a file without the entry then gets it unbound, as when no file
// has it.
func bindSetVersions(sp *savepoint.Savepoint, steps []step) []string {
	var warns []string
	for i, st := range steps {
		sv := st.rule.SetVersion
		if sv == nil || sv.HasSlot {
			continue
		}
		slots := map[string]bool{}
		missing := false // a file (its map empty, or none) without the entry
		for _, vm := range versionsAt(sp, steps, i) {
			if e, ok := vm.Get(sv.Op.ID, sv.StateType); ok {
				slots[e.Slot] = true
			} else {
				missing = true
			}
		}
		switch {
		case len(slots) == 1:
			for slot := range slots {
				steps[i].versions = setVersionStep(sv, slot)
			}
		case len(slots) > 1 && missing:
			quoted := make([]string, 0, len(slots))
			for _, slot := range slices.Sorted(maps.Keys(slots)) {
				quoted = append(quoted, strconv.Quote(slot))
			}
			warns = append(warns, fmt.Sprintf("%s: the files' version maps bind operator %s's state type %q to different slots (%s), so the files without the entry get it bound to no slot, which applies to every row of the operator (format 4.4); give 'slot' to bind it", st.rule.Label(), sv.Op, sv.StateType, strings.Join(quoted, ", ")))
		}
	}
	return warns
}

// versionsAt returns the version map of each file of sp that has one, as
// step i finds it: the steps before it applied.
func versionsAt(sp *savepoint.Savepoint, steps []step, i int) []savepoint.VersionMap {
	var vms []savepoint.VersionMap
	for _, f := range sp.Files {
		if f.Snapshot == nil {
			continue
		}
		vm := f.Snapshot.Versions
		for _, before := range steps[:i] {
			if before.versions != nil {
				if v, err := before.versions(vm); err == nil {
					vm = v
				}
			}
		}
		vms = append(vms, vm)
	}
	return vms
}

// renameVersionWarnings returns a warning for each rename_slot step
// without 'merge: true' that moves rows into a slot name the version map
// binds another state type of the operator to (its rows dropped, its entry
// left): a restore that migrates that state type migrates the rows of the
// slot it names (format 4.4), the renamed ones included.
func renameVersionWarnings(sp *savepoint.Savepoint, steps []step, stats []*RuleStats) []string {
	var warns []string
	for i, st := range steps {
		rs := st.rule.RenameSlot
		if rs == nil || rs.Merge || i >= len(stats) || stats[i].Matched == 0 {
			continue
		}
		types := map[string]bool{}
		for _, vm := range versionsAt(sp, steps, i) {
			for _, e := range vm.Entries() {
				if e.Op == rs.Op.ID && e.Slot == rs.To && rs.To != "" {
					types[strconv.Quote(e.StateType)] = true
				}
			}
		}
		for _, t := range slices.Sorted(maps.Keys(types)) {
			warns = append(warns, fmt.Sprintf("%s: the version map binds state type %s of operator %s to slot %q, which the renamed rows take: a restore that migrates %s would migrate them (format 4.4); if that state is gone, drop its entry with a drop_version rule", st.rule.Label(), t, rs.Op, rs.To, t))
		}
	}
	return warns
}

// remapVersionWarnings returns a warning for each version-map entry
// without a slot that a remap_operator step makes apply to rows it did not
// apply to: such an entry applies to every row of its operator (format
// 4.4), so where the step joins two operators' rows (merge: true), the
// remapped operator's entry comes to apply to the target's rows, and an
// entry of the target to the rows remapped into it. An entry both
// operators hold alike applied to all of those rows already. The rows are
// those followSlots finds where the step runs.
func remapVersionWarnings(sp *savepoint.Savepoint, set *rules.Set, steps []step, slots []*SlotStats) []string {
	if !slices.ContainsFunc(set.Rules, func(r *rules.Rule) bool { return r.RemapOperator != nil }) {
		return nil
	}
	// The slots of each remap's two operators that hold rows where it runs.
	type opSlots struct{ from, to []string }
	held := map[*rules.Rule]opSlots{}
	followSlots(set, slotsBefore(slots), func(r *rules.Rule, present map[slotKey]int64) error {
		s := r.RemapOperator
		if s == nil || s.From.ID == s.To.ID {
			return nil
		}
		var o opSlots
		for k, n := range present {
			switch {
			case n <= 0:
			case k.op == s.From.ID:
				o.from = append(o.from, k.show())
			case k.op == s.To.ID:
				o.to = append(o.to, k.show())
			}
		}
		slices.Sort(o.from)
		slices.Sort(o.to)
		held[r] = o
		return nil
	})
	var warns []string
	said := map[string]bool{}
	for i, st := range steps {
		s := st.rule.RemapOperator
		o, ok := held[st.rule]
		if s == nil || !ok {
			continue
		}
		for _, vm := range versionsAt(sp, steps, i) {
			for _, e := range vm.Entries() {
				if e.Slot != "" || e.Op != s.From.ID && e.Op != s.To.ID {
					continue
				}
				other, owner, gains, whose := s.To.ID, s.From, o.to, fmt.Sprintf("operator %s's rows too", s.To)
				if e.Op == s.To.ID {
					other, owner, gains, whose = s.From.ID, s.To, o.from, fmt.Sprintf("the rows remapped into it from operator %s too", s.From)
				}
				if len(gains) == 0 {
					continue
				}
				if alike, ok := vm.Get(other, e.StateType); ok && alike.Slot == "" && alike.Version == e.Version {
					continue // it applied to those rows already
				}
				w := fmt.Sprintf("%s: operator %s's version-map entry for state type %q (v%d) has no slot, and an entry without a slot applies to every row of its operator (format 4.4): after the remap it applies to %s (slots %s), so a restore that migrates %q migrates them; bind the entry to its slot before this rule (set_version with 'slot'), or drop it (drop_version)", st.rule.Label(), owner, e.StateType, e.Version, whose, listSome(gains, 12), e.StateType)
				if !said[w] {
					said[w] = true
					warns = append(warns, w)
				}
			}
		}
	}
	return warns
}

// dropSlotVersionWarnings returns a warning for each drop_slot step that
// dropped rows of a slot the output's version map still binds a state type
// of the operator to, while the slot holds no rows after the rules: the
// entry outlives its state (a restore would migrate a state nobody holds),
// which a drop_version rule removes, if the state type is gone.
func dropSlotVersionWarnings(sp *savepoint.Savepoint, steps []step, stats []*RuleStats, slots []*SlotStats) []string {
	after := map[slotKey]int64{}
	for _, s := range slots {
		after[s.key()] += s.After
	}
	var final []savepoint.VersionMap
	var warns []string
	for i, st := range steps {
		ds := st.rule.DropSlot
		if ds == nil || i >= len(stats) || stats[i].Dropped == 0 {
			continue
		}
		// The operator the entry ends under: remap_operator moves its
		// entries, and rows moved into the slot after are under it too.
		op := ds.Op.ID
		for _, later := range steps[i+1:] {
			if r := later.rule.RemapOperator; r != nil && r.From.ID == op {
				op = r.To.ID
			}
		}
		if after[slotKey{op: op, slot: ds.Slot}] > 0 {
			continue
		}
		if final == nil {
			final = versionsAt(sp, steps, len(steps))
		}
		bound := map[string]uint32{}
		for _, vm := range final {
			for _, e := range vm.Entries() {
				if e.Op == op && e.Slot == ds.Slot && e.Slot != "" {
					bound[e.StateType] = e.Version
				}
			}
		}
		for _, t := range slices.Sorted(maps.Keys(bound)) {
			who, ref, where := ds.Op.String(), ds.Op.YAML(), ""
			if op != ds.Op.ID {
				who, ref, where = fmt.Sprintf("%d (where a later remap_operator moves %s)", op, ds.Op), fmt.Sprintf("op: %d", op), ", after the remap"
			}
			warns = append(warns, fmt.Sprintf("%s: the version map keeps state type %q (version %d) of operator %s bound to slot %q, which holds no rows after the rules: if that state is gone, drop its entry too (drop_version: {%s, state_type: %q}%s)", st.rule.Label(), t, bound[t], who, ds.Slot, ref, t, where))
		}
	}
	return warns
}

// setVersionWarnings returns a warning for each set_version step that
// lowers an entry's version (YAML reads 'version: +1' as 1: a bump is the
// new number), that sets an entry a set_version before it set to another
// version, or that adds an entry for an operator with no rows and no
// entries here (a mistyped id, or one that a drop_operator or
// remap_operator before it emptied: clink would stamp a state nobody
// owns). An operator a later remap_operator moves rows into is not one.
// It also warns of an entry bound to a slot of the operator that holds no
// rows there, and of a state type new to an operator whose entries hold
// one it may be a mistyping of (nearNames): a mistyped slot or state type
// adds an entry where one was meant to change.
func setVersionWarnings(sp *savepoint.Savepoint, set *rules.Set, steps []step, slots []*SlotStats) []string {
	present := map[*rules.Rule]bool{}     // per set_version: its operator has rows where it runs
	opSlots := map[*rules.Rule][]string{} // and the slots of those rows
	followSlots(set, slotsBefore(slots), func(r *rules.Rule, rows map[slotKey]int64) error {
		if sv := r.SetVersion; sv != nil {
			for k, n := range rows {
				if k.op == sv.Op.ID && n > 0 {
					present[r] = true
					if !k.noSlot {
						opSlots[r] = append(opSlots[r], k.slot)
					}
				}
			}
			slices.Sort(opSlots[r])
		}
		return nil
	})
	remappedLater := func(i int, op uint64) bool {
		for _, st := range steps[i+1:] {
			if r := st.rule.RemapOperator; r != nil && r.To.ID == op {
				return true
			}
		}
		return false
	}
	renamedLater := func(i int, op uint64, slot string) bool {
		for _, st := range steps[i+1:] {
			if r := st.rule.RenameSlot; r != nil && r.Op.ID == op && r.To == slot {
				return true
			}
		}
		return false
	}
	var warns []string
	setBy := map[[2]string]*rules.Rule{}
	for i, st := range steps {
		sv := st.rule.SetVersion
		if sv == nil {
			continue
		}
		key := [2]string{strconv.FormatUint(sv.Op.ID, 10), sv.StateType}
		if first := setBy[key]; first != nil {
			warns = append(warns, fmt.Sprintf("%s: %s set operator %s's state type %q already; the later version, %d, is the one written", st.rule.Label(), first.Label(), sv.Op, sv.StateType, sv.Version))
		}
		setBy[key] = st.rule
		lowered, known := map[uint32]bool{}, present[st.rule] || remappedLater(i, sv.Op.ID)
		unbound := map[string]bool{} // the slots an explicit slot: "" unbinds
		types := map[string]bool{}   // the operator's state types
		for _, vm := range versionsAt(sp, steps, i) {
			for _, e := range vm.Entries() {
				if e.Op != sv.Op.ID {
					continue
				}
				known = true
				types[e.StateType] = true
				if e.StateType == sv.StateType && e.Version > sv.Version {
					lowered[e.Version] = true
				}
				if e.StateType == sv.StateType && sv.HasSlot && sv.Slot == "" && e.Slot != "" {
					unbound[e.Slot] = true
				}
			}
		}
		for _, slot := range slices.Sorted(maps.Keys(unbound)) {
			warns = append(warns, fmt.Sprintf("%s: slot: \"\" unbinds operator %s's state type %q from slot %q: an entry without a slot applies to every row of the operator, so a restore that migrates the state type migrates its timers, operator state and other slots too (leave 'slot' out to keep the entry's slot)", st.rule.Label(), sv.Op, sv.StateType, slot))
		}
		if len(lowered) > 0 {
			from := slices.Sorted(maps.Keys(lowered))
			warns = append(warns, fmt.Sprintf("%s: lowers operator %s's state type %q from version %d to %d (to bump it, give the new number: YAML reads 'version: +1' as 1)", st.rule.Label(), sv.Op, sv.StateType, from[len(from)-1], sv.Version))
		}
		if !known {
			warns = append(warns, fmt.Sprintf("%s: operator %s has no rows and no version entries here; the rule adds an entry for it", st.rule.Label(), sv.Op))
		}
		if like := nearNames(sv.StateType, slices.Sorted(maps.Keys(types))); !types[sv.StateType] && len(like) > 0 {
			warns = append(warns, fmt.Sprintf("%s: operator %s has no entry of state type %q, but has %s; the rule adds an entry, and changes none (a mistyped name?)", st.rule.Label(), sv.Op, sv.StateType, quotedList(like)))
		}
		if sv.HasSlot && sv.Slot != "" && present[st.rule] && !slices.Contains(opSlots[st.rule], sv.Slot) && !remappedLater(i, sv.Op.ID) && !renamedLater(i, sv.Op.ID, sv.Slot) {
			its := "its slots: " + quotedList(opSlots[st.rule])
			if len(opSlots[st.rule]) == 0 {
				its = "its rows are of no slot: operator state or raw keys"
			}
			warns = append(warns, fmt.Sprintf("%s: operator %s has no rows of slot %q here (%s); the entry binds a slot that holds no state", st.rule.Label(), sv.Op, sv.Slot, its))
		}
	}
	return warns
}

// nearNames returns the names of names that name may be a mistyping of:
// equal but for case, or (both at least 4 bytes long) at most 2 edits
// (insertions, deletions, substitutions of a rune) apart, but not name
// made by adding to one (Cart2 beside Cart: a new type by design).
func nearNames(name string, names []string) []string {
	var out []string
	for _, n := range names {
		if n != name && (strings.EqualFold(n, name) || len(n) >= 4 && len(name) >= 4 && textdist.Distance(n, name) <= 2 && !strings.HasPrefix(name, n)) {
			out = append(out, n)
		}
	}
	return out
}

// quotedList lists names Go-quoted, comma-separated.
func quotedList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// ruleScope returns the operator and slot a rule acts on (nil: any); both
// nil for a rule that is not limited to rows of some operator or slot, or
// that acts on the version map.
func ruleScope(r *rules.Rule) (*rules.OpRef, *string) {
	switch {
	case r.Keep != nil:
		return r.Keep.Scope.Op, r.Keep.Scope.Slot
	case r.Drop != nil:
		return r.Drop.Scope.Op, r.Drop.Scope.Slot
	case r.PurgeKeys != nil:
		return r.PurgeKeys.Scope.Op, r.PurgeKeys.Scope.Slot
	case r.PurgeExpired != nil:
		return r.PurgeExpired.Scope.Op, r.PurgeExpired.Scope.Slot
	case r.SetValue != nil:
		return &r.SetValue.Op, &r.SetValue.Slot
	case r.DropOperator != nil:
		return &r.DropOperator.Op, nil
	case r.DropSlot != nil:
		return &r.DropSlot.Op, &r.DropSlot.Slot
	case r.RenameSlot != nil:
		return &r.RenameSlot.Op, &r.RenameSlot.From
	case r.RemapOperator != nil:
		return &r.RemapOperator.From, nil
	}
	return nil, nil
}

// fileResult is one file's outcome.
type fileResult struct {
	err     error
	out     *outRows // the output rows
	changed bool     // some row changed or was dropped, or the version map changed
	// canonical: the output rows strictly increase (sorted, no duplicates).
	canonical bool
	versions  savepoint.VersionMap
	rowsIn    int64
	dupes     int64
	// timerBlobsLost and timersLost count the timer blobs, holding timers,
	// removed as duplicates, and their timers.
	timerBlobsLost, timersLost int64
	// blobs are the timer blobs kept, as the rules left them (noteBlob);
	// timersMerged counts the timers that joining two operators' blobs
	// into one added to the blob kept (unionTimerBlobs).
	blobs        []blobCopy
	timersMerged int64
	// blobsJoined counts the copies of joined blobs (one a stored blob's
	// that a restore keeps) that the duplicates resolved away: their
	// timers are in the copy kept.
	blobsJoined int64
	// hiddenLegacy are the legacy timer blobs a merge moved next to a
	// prefixed blob of the same name (hiddenLegacyBlobs).
	hiddenLegacy []hiddenBlob
	warnings     []string
	// unchecked: the input is large and not strictly increasing, and its
	// copies that a restore would not keep were not looked for (see
	// outRows.dropShadowed).
	unchecked bool
	rules     []ruleCounts
	before    *slotCounts
	after     *slotCounts
	purged    [][]int64 // per purge rule: rows per key index
	hits      [][]int32 // per purge rule: key indexes found, not yet counted in purged
	short     []int64   // per rule: TTL values without a stamp
	remain    []int64   // per purge rule: output rows still matching its keys
	// elems counts, per purge rule and slot (as the rule sees it), the
	// rows in its scope, in a slot not declared composite, that it
	// passed over while their key is a listed key, 0x1F and an element
	// (see purgeStep); nil until one is found.
	elems  map[elemKey]int64
	timers []int64 // per purge rule: timers removed from timer blobs
	// keyTimers, per purge rule: timers removed per key index (nil until
	// one is).
	keyTimers [][]int64
	// timersKept, per purge rule scoped to a slot: timers of listed keys
	// in the output's timer blobs (see auditOut).
	timersKept []int64
	vmRules    []bool // per rule: changed this file's version map
	// joined are the timer blobs that unionTimerBlobs joined (nil when
	// none).
	joined map[timerBlobKey]bool
	// orphans counts the stale copies dropped with their owner's copy
	// (see dropOrphans).
	orphans int64
}

// ruleCounts are a rule's rows matched, dropped and changed, and for a
// set_value the rows written with an empty list or map (without
// erase_empty) and the values changed that were not UTF-8 (a string slot's).
type ruleCounts struct{ matched, dropped, changed, empty, nonUTF8 int64 }

// slotKey names a slot of an operator, or, with noSlot, the rows of its
// keys without a separator, shown as the pseudo-slot RawSlot: a slot may
// be named RawSlot too, and is another one.
type slotKey struct {
	op     uint64
	slot   string
	noSlot bool
}

// rawSlotKey is the slotKey of op's keys without a separator.
func rawSlotKey(op uint64) slotKey { return slotKey{op: op, slot: savepoint.RawSlot, noSlot: true} }

// show is the slot as a message names it, as the report's table does
// (savepoint.QuoteSlot), or RawSlot unquoted for the keys without a
// separator.
func (k slotKey) show() string {
	if k.noSlot {
		return savepoint.RawSlot
	}
	return savepoint.QuoteSlot([]byte(k.slot))
}

// engine holds the compiled steps; it is shared by the file workers.
type engine struct {
	set   *rules.Set
	steps []step
	// presort holds the files (by index in the savepoint) whose rows are
	// sorted before the rules pass (see presorts); presortSlot lets
	// presortsAtOnce such sorts run at a time.
	presort     map[int]bool
	presortSlot chan struct{}
	// purges are the indexes of the purge_keys steps; purgedScopes,
	// indexed by step, where the rows in the scope of each are once the
	// rules after it have run (nil for one of every row).
	purges       []int
	purgedScopes []*rules.MovedScope
	// joinBlobs: a rule merges (remap_operator or rename_slot with
	// merge), so the copies of two keys may meet: the timer blobs kept
	// are noted to be joined (see unionTimerBlobs), and each file's own
	// stored copies are resolved first (dropShadowed).
	joinBlobs bool
	// fields are the row-model fields the expressions read.
	fields rules.Fields
	// progress reports rows processed (see Options.Progress).
	progress func(stage string, done, total int64)
	done     atomic.Int64
	total    int64
	// ended is set when the run's context ends, and failedAt holds the
	// position (see position) of the first part that failed: the parts
	// after it stop (stopsAt), so that an expression that takes long on
	// each row is not run on the rows left of a 64K-row block.
	ended    atomic.Bool
	failedAt atomic.Int64
	// cancels[i] cancels the context of file i (see failAt).
	cancels []context.CancelFunc
	spill   *spiller
	dry     bool // a plan: nothing is written
	// decompress: every output is an uncompressed stream (Options.Decompress).
	decompress bool
	// keepOrder: rows are written in stream order, never sorted
	// (Options.KeepOrder).
	keepOrder bool
	// valueFates: a rule may drop a row or keep it by its value
	// (decidesByValue), so two stored copies of a key may meet different
	// fates.
	valueFates bool
	// sortLater: the files' outputs are sorted once every file's rules
	// have run (see sortOutputs), not each at the end of its own pass:
	// dropOrphans may drop rows of any of them, and finds the stale copies
	// by their input rows.
	sortLater bool
	// mergeSteps are the merging remap_operator and rename_slot steps
	// that a step deciding by value follows (see mergeLosers).
	mergeSteps []int
	// compositeLike are the slots not declared composite that a
	// purge_keys step looks at, sampled for keys that look composite
	// (noteCompositeLike); mu guards it.
	mu            sync.Mutex
	compositeLike map[elemKey]*compositeSamples
	// passedOver counts, by step, the rows of a declared slot's name its
	// declaration does not describe that a filter scoped to the slot, or a
	// set_value, passed over (see filterStep).
	passedOver []atomic.Int64
}

// processFile runs every row of f through the steps. It records the
// outcome compactly (the index of each kept row in output order, and the
// rows a rule modified) rather than copying rows, so memory does not grow
// with the input for a columnar snapshot.
func (e *engine) processFile(ctx context.Context, f *savepoint.File, file, parts int) *fileResult {
	snap := f.Snapshot
	n := snap.NumRows()
	rows := rowSource{snap: snap, release: f.ReleasePages}
	if e.presort[file] {
		sorted, err := e.sortFirst(f, position(file, 0))
		switch {
		case err == nil:
			rows = sorted
		case savepoint.InputFault(err) || errors.Is(err, context.Canceled):
			res := e.newResult()
			res.err = err
			return res
		}
		// Otherwise (no temporary directory, no room in it) the rows are
		// read as stored, and the rescale's own sort says what it can do.
	}
	if n < minRowsPerPart*2 {
		parts = 1
	}
	parts = min(parts, n/minRowsPerPart+1)
	ranges := make([]*rangeResult, parts)
	if parts == 1 {
		ranges[0] = e.processRange(ctx, f, rows, position(file, 0), 0, n)
	} else {
		var wg sync.WaitGroup
		for p := range ranges {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lo, hi := p*n/parts, (p+1)*n/parts
				ranges[p] = e.processRange(ctx, f, rows, position(file, p), lo, hi)
			}()
		}
		wg.Wait()
	}
	res, sorted := e.mergeRanges(ranges)
	res.rowsIn = int64(n)
	res.canonical = sorted
	res.out.spilled, res.out.presorted = rows.presorted, rows.presorted
	// res.after holds the changes to the counts: add the counts before.
	res.before.each(func(k slotKey, n int64) { res.after.addKey(k, n) })
	if res.err != nil {
		return res
	}
	// The version map: job-wide, stamped in every file; rules apply per file.
	res.versions = snap.Versions
	for i, st := range e.steps {
		if st.versions == nil {
			continue
		}
		before := res.versions.Pack()
		v, err := st.versions(res.versions)
		if err != nil {
			res.err = e.stepError(i, fmt.Errorf("version map: %w", err))
			return res
		}
		res.versions = v
		if v.Pack() != before {
			res.vmRules[i] = true
			res.changed = true
		}
	}
	if f.Size == 0 {
		// A 0-byte payload (clink reads it as an absent file) is written
		// as the canonical empty stream, never copied: sptool writes no
		// 0-byte .snap (format 1.1).
		res.changed = true
	}
	if e.decompress && f.Compression != savepoint.CompressNone {
		res.changed = true // its copy would stay compressed
	}
	if snap.Variant == savepoint.Changelog {
		// A changelog payload (a file backend's refuses one, format 1.7)
		// is written in canonical form, never copied.
		res.changed = true
	}
	if snap.TrailingBytes > 0 || len(e.purges) > 0 && !onlyRows(f) {
		// A copy carries every byte of the file, rows or not: bytes after
		// the end-of-stream marker, which clink's reader ignores, and
		// under an erasure any other byte no row holds, which no rule
		// sees and which may hold an erased key. Written anew, the file
		// holds its rows alone.
		res.changed = true
	}
	joined, warnings := e.unionTimerBlobs(res)
	res.warnings = append(res.warnings, warnings...)
	res.hiddenLegacy = hiddenLegacyBlobs(res.blobs)
	res.joined = joined
	if res.changed {
		if e.resolveCopies(f, res); !e.sortLater {
			e.sortOut(f, res)
		}
	}
	return res
}

// dropper returns what is called with each output row of res that is
// dropped after the rules (a copy a restore would not keep, a stale copy
// that lost its owner's): it takes the row out of the slot counts, the
// erasure audit and the timers counted.
func (e *engine) dropper(res *fileResult) func(savepoint.Row) {
	comp := &compositeMemo{e: e}
	return func(r savepoint.Row) {
		k := savepoint.ParseKey(r.Key)
		res.after.addN(r.Op, k.Slot, k.HasSlot, -1)
		if res.joined != nil && res.joined[timerBlobKey{r.Op, string(r.Key)}] {
			return // (audited, and its timers counted, by unionTimerBlobs)
		}
		e.auditOut(res, r, k, -1, comp)
		if savepoint.IsTimerBlob(r.Key) {
			// A timer blob is one value: the copy a duplicate loses takes
			// its timers with it (a file that stores a blob twice, or
			// blobs that unionTimerBlobs could not read).
			if proc, event, err := savepoint.ParseTimers(r.Value); err == nil && len(proc)+len(event) > 0 {
				res.timerBlobsLost++
				res.timersLost += int64(len(proc) + len(event))
			}
		}
	}
}

// resolveCopies drops, from the output rows of file f, which is rewritten
// (res.changed), the copies of a key that a restore of f would not keep.
func (e *engine) resolveCopies(f *savepoint.File, res *fileResult) {
	out, dropped := res.out, e.dropper(res)
	// The rules saw every stored row; the copies a restore would not
	// keep go now, so that dropping or renaming the copy that wins does
	// not bring back one that it hid.
	var shadowed []uint64
	// A merge meets a key's copies with another key's: the file's own are
	// resolved first, as a restore resolves them, or the fold of them all
	// in stream order might keep another value (mixed 8-byte and other
	// operator values do not fold associatively).
	dupes, shadowed, unchecked := out.dropShadowed(f, e.valueFates || e.joinBlobs, dropped)
	res.dupes, res.unchecked = res.dupes+dupes, unchecked
	// So do the copies a merge resolved away, which a later rule saw
	// beside the copy kept.
	lost, err := e.mergeLosers(f, shadowed)
	if err != nil {
		res.err = err
		return
	}
	if lost != nil {
		res.dupes += out.dropMarked(lost, dropped)
	}
}

// sortOut sorts the output rows of file f, which is rewritten
// (res.changed), into canonical order, resolving the copies of a key that
// the rules made meet, but where a plan or KeepOrder leaves them in stream
// order.
func (e *engine) sortOut(f *savepoint.File, res *fileResult) {
	if res.canonical || res.err != nil {
		return
	}
	if (e.dry || e.keepOrder) && e.distinctOut(f, res.out) {
		// With no duplicate to take back, sorting the rows would change no
		// count: a plan writes nothing, and under KeepOrder the rows are
		// written in stream order.
		return
	}
	dupes, err := res.out.canonicalise(e.dropper(res))
	res.dupes, res.err = res.dupes+dupes, err
	res.canonical = true
}

// distinctOut reports whether out, the output rows of file f, hold no
// operator and key twice, as far as savepoint.DistinctKeys can tell. When
// no step may change a row's operator or key (a merge is a remap or a
// rename), the output's rows are some of the input's, each once, with the
// operator and key they had: an input that holds no key twice shows it for
// them, and its keys are read in stream order, without the output's index
// (on the benchmarks' 10M-row file in clink's order, nine runs
// interleaved: the --keep-order purge of 100,000 keys 1.78 -> 1.63 s, its
// plan 1.34 -> 1.20 s). Otherwise, or when the input holds a key twice
// (the rules may have dropped one copy), the output's keys are read.
func (e *engine) distinctOut(f *savepoint.File, out *outRows) bool {
	budget := savepoint.DistinctBudget(f)
	rekeys := slices.ContainsFunc(e.steps, func(st step) bool { return st.rekeys })
	if snap := f.Snapshot; !rekeys && savepoint.DistinctKeys(snap.NumRows(), snap.EachKeyIn, budget) {
		return true
	}
	return savepoint.DistinctKeys(out.Len(), out.eachKeyIn, budget)
}

// onlyRows reports whether every byte of file f that is not its stream's
// framing, schema or zero padding is a row's: none loose (LooseBytes),
// none after the stream, and no compression, whose frames the open does
// not look into for such bytes.
func onlyRows(f *savepoint.File) bool {
	s := f.Snapshot
	return s.LooseBytes == 0 && s.TrailingBytes == 0 && s.Compression == "" && f.Compression == savepoint.CompressNone
}

// releaseRows: every this many rows (a power of two minus one) a pass that
// has no file's File.ReleaseRows at hand drops the input's mapped pages
// from the resident set.
const releaseRows = 1<<18 - 1

// minRowsPerPart is the fewest rows a parallel part of one file gets.
var minRowsPerPart = 1 << 18

// rangeResult is the outcome of a range of a file's rows.
type rangeResult struct {
	res    *fileResult
	sorted bool // the kept rows are strictly increasing
	// first and last are the operator and key of the first and last kept
	// rows (copies: keepRun is given keys that do not last).
	first, last savepoint.Row
}

func (e *engine) newResult() *fileResult {
	res := &fileResult{
		rules:      make([]ruleCounts, len(e.steps)),
		before:     &slotCounts{},
		after:      &slotCounts{},
		purged:     make([][]int64, len(e.steps)),
		keyTimers:  make([][]int64, len(e.steps)),
		hits:       make([][]int32, len(e.steps)),
		short:      make([]int64, len(e.steps)),
		vmRules:    make([]bool, len(e.steps)),
		remain:     make([]int64, len(e.steps)),
		timers:     make([]int64, len(e.steps)),
		timersKept: make([]int64, len(e.steps)),
	}
	for i, st := range e.steps {
		if st.rule.PurgeKeys != nil {
			res.purged[i] = make([]int64, st.rule.PurgeKeys.Len())
			prefault.Slice(res.purged[i]) // counted at random
		}
	}
	return res
}

// rowSource is where the rules pass reads a file's rows: its snapshot, or
// a sorted copy of it (engine.sortFirst), and what drops their mapped pages
// from the resident set. presorted is set for the copy.
type rowSource struct {
	snap      *savepoint.Snapshot
	release   func()
	presorted bool
}

// presorts returns the files of sp whose rows the rules pass reads from a
// sorted copy: under a rule file of a rescale alone, the files of the
// groups it rescales that are large enough to be sorted through temporary
// files (minSpillRows), stored in no order (clink's hash-map order) and
// rewritten for no reason of their own (see sortFirst). The rescale sorts
// them anyway; sorted first, the rules pass goes a prefix run at a time
// instead of a row at a time (a rescale of 10M rows in clink's order from 4
// files to 7 spent 0.57 s of its 4.2 s of CPU there), and the rescale's
// own sort finds them sorted.
func presorts(sp *savepoint.Savepoint, set *rules.Set, opts Options) map[int]bool {
	spec := set.Rescale()
	if spec == nil || len(set.Rules) != 1 || rowByRow || noPresort {
		return nil
	}
	groups, pars, _, err := rescaleGroups(sp, spec)
	if err != nil {
		return nil // the rescale reports it
	}
	byIndex := fileIndexes(sp)
	var out map[int]bool
	for gi, g := range groups {
		if pars[gi] == g.Count {
			continue // kept as it is
		}
		for s := g.First; s < g.First+g.Count; s++ {
			i, ok := byIndex[s]
			if !ok {
				continue
			}
			f := sp.Files[i]
			snap := f.Snapshot
			if snap == nil || !snap.Columnar() || snap.Variant != savepoint.Canonical || snap.NumRows() < minSpillRows ||
				f.Size == 0 || snap.TrailingBytes > 0 || opts.Decompress && f.Compression != savepoint.CompressNone {
				continue
			}
			if sorted, _ := snap.Order(); sorted {
				continue
			}
			if out == nil {
				out = map[int]bool{}
			}
			out[i] = true
		}
	}
	return out
}

// presortsAtOnce is how many sorts before the rules pass run at once,
// whatever --jobs, each with its share of the whole budget: each uses every
// core already. One at a time, the rescales of the shuffled 10M-row trees of
// 4 and 16 files to 7 took 1.93 and 2.21 s, two at a time 1.60 and 1.78 s,
// at 123-126 and 117-130 MB; as many at once as --jobs 16 held 281-303 MB
// (a 6M-row tree of 16 files, against 114-119 MB before the sort first).
const presortsAtOnce = 2

// noPresort turns presorts off (tests compare the two ways).
var noPresort = false

// presortCount counts the files sorted before the rules pass (tests check
// that they took that path).
var presortCount atomic.Int64

// sortFirst sorts the rows of file f through temporary files, every row
// kept (those of one operator and key in stream order), for the rules pass
// to read (see presorts). The rules see every stored row, as they would in
// the file; the rescale resolves the copies of a key as it would have.
func (e *engine) sortFirst(f *savepoint.File, pos int64) (rowSource, error) {
	e.presortSlot <- struct{}{}
	defer func() { <-e.presortSlot }()
	snap := f.Snapshot
	o := &outRows{cur: snap.NewCursor(), release: f.ReleasePages, releaseRows: f.ReleaseRows(), spill: e.spill, stop: func() bool { return e.stopsAt(pos) }}
	o.idx.appendRun(0, snap.NumRows())
	if _, _, err := o.canonicaliseSpilled(nil, true, e.spill.soleBudget()/presortsAtOnce); err != nil {
		return rowSource{}, err
	}
	presortCount.Add(1)
	return rowSource{snap: o.cur.Snapshot(), release: o.release, presorted: true}, nil
}

// processRange runs rows [lo, hi) of f (read from rows: its snapshot's,
// or their sorted copy) through the steps, with its own worker (VM and
// environment); it records the kept rows' indexes. Keyed rows go a run at a time: consecutive
// rows of one prefix share what the steps do to them (see prefixPlan), so
// a run that every step passes or one step drops whole costs a scan of its
// keys.
func (e *engine) processRange(ctx context.Context, f *savepoint.File, rows rowSource, pos int64, lo, hi int) *rangeResult {
	res := e.newResult()
	snap := rows.snap
	out := &outRows{cur: snap.NewCursor(), release: rows.release, releaseRows: f.ReleaseRows(), spill: e.spill, stop: func() bool { return e.stopsAt(pos) }, restored: snap.Variant == savepoint.Changelog}
	res.out = out
	rr := &rangeResult{res: res, sorted: true}
	w := &worker{e: e, res: res, subtask: f.Subtask, rr: rr, comp: compositeMemo{e: e}, pos: pos}
	cur := out.cur
	var runs *savepoint.PrefixRuns
	if cur.Columnar() && !rowByRow {
		runs = snap.Runs()
		w.hits = e.keyHits(snap)
	}
	res.err = savepoint.Guard(func() error {
		release := savepoint.NewPacer(lo+out.releaseRows, out.releaseRows) // of the input's pages
		for c := lo; c < hi; {
			// Every 64K rows: cancellation, progress and the resident set.
			end := min(hi, (c|0xFFFF)+1)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if e.stopsAt(pos) {
				return context.Canceled // a part before it failed
			}
			if release.Due(c) {
				rows.release() // what was read stays cached but leaves the resident set
			}
			ones := 0    // runs of one row in a row, this block
			aloneAt := c // where alone may be asked next
			took := 0    // the rows alone took when last asked
			i := c
			for i < end {
				if ones >= onesAlone && runs == nil && !w.rr.sorted && i >= aloneAt {
					// clink's hash-map order: the rows that pass or
					// drop whole, without the run machinery.
					at := i
					var err error
					if i, err = w.alone(i, end); err != nil {
						return err
					}
					if i > at {
						took = i - at
						continue
					}
					// A row it could not take has read, parsed and
					// planned it for nothing; so will the rows after it
					// when a step must see each of them. Where it took
					// rows before this one (a purge's listed keys among
					// unlisted ones), it is asked again after it.
					aloneAt = i + aloneBackoff
					if took > 0 {
						aloneAt = i + 1
					}
					took = 0
				}
				if !rowByRow {
					// Operator and key only: from the input's index of
					// prefix runs, or read with pread from a mapped file
					// (see scanRow).
					r, err := w.runAt(runs, i)
					if err != nil {
						return err
					}
					if p := w.keyedPlan(r.Op, r.Key); p != nil && !p.generic {
						at := out.Len()
						var n int
						switch {
						case w.hasKnown:
							// The run's end is known, and its rows are
							// read with pread, not through the map
							// (whose pages the block's end releases):
							// it may go on past the block.
							n, err = w.run(i, hi, r, p)
						case ones >= onesAlone:
							n, err = w.runOfOne(i, r, p)
						default:
							n, err = w.run(i, end, r, p)
						}
						if err != nil {
							return err
						}
						if n == 1 {
							ones++
						} else {
							ones = 0
						}
						out.log.add(p.outOp, p.kg, p.slot, true, out.Len()-at, false)
						i += n
						continue
					}
				}
				r, err := w.rows.Row(cur, i) // see worker.run
				if err != nil {
					return err
				}
				k := savepoint.ParseKey(r.Key)
				if err := w.one(i, r, k); err != nil {
					return err
				}
				i++
			}
			if e.progress != nil {
				e.progress("rows", e.done.Add(int64(i-c)), e.total)
			}
			c = i
		}
		return nil
	})
	if res.err != nil {
		e.failAt(pos) // the parts of the file after it, and the files after it
	}
	res.countHits()
	return rr
}

// hitsMax is how many found keys a purge rule's log holds before they are
// counted.
const hitsMax = 1 << 14

// hit records that purge rule i found key j in a row. The count per key
// is a cache miss when it is written as each row is found (the index of
// 100,000 keys and their counts are cold in a scan); logged, a batch of
// counts is written at once, and their misses overlap.
func (res *fileResult) hit(i, j int) {
	h := append(res.hits[i], int32(j))
	if len(h) == hitsMax {
		res.countHit(i, h)
		h = h[:0]
	}
	res.hits[i] = h
}

// countHits counts the keys logged by hit.
func (res *fileResult) countHits() {
	for i, h := range res.hits {
		res.countHit(i, h)
		res.hits[i] = h[:0]
	}
}

// countHit adds the keys of log h to purge rule i's counts.
func (res *fileResult) countHit(i int, h []int32) {
	c := res.purged[i]
	for _, j := range h {
		c[j]++
	}
}

// runAt returns the operator and key of row i, and sets w.known to the
// keyed prefix run holding it when runs (the input's index, if any) has
// one: the run's first key is then the row's own when i starts it, and
// nothing is read.
func (w *worker) runAt(runs *savepoint.PrefixRuns, i int) (savepoint.Row, error) {
	w.hasKnown = false
	if runs != nil {
		run := runs.Run(runs.Find(i))
		if run.Keyed() {
			w.known, w.hasKnown = run, true
			if i == run.Start {
				return savepoint.Row{Op: run.Op, Key: run.First}, nil
			}
		}
	}
	return w.scanRow(i)
}

// aloneBackoff is how many rows processRange takes the general way after
// a row worker.alone could not take, before it asks alone again: with a
// step that must see every row (a filter on the key, say), asking at each
// row read each row twice (8% more CPU for such a filter over 10M rows).
const aloneBackoff = 64

// onesAlone is how many runs of one row in a row make processRange take
// each row as a run of its own without looking for the rest of its run, to
// the end of its block of rows: in clink's hash-map order nearly every row
// has another prefix than the one before.
const onesAlone = 8

// rowByRow turns runs off: every row takes the general path (tests compare
// the two).
var rowByRow = false

// rowError names the row a step failed on (rules.Set.ShowKey): its index
// in the file's stream, or, for a file that stores a changelog, in the
// state its replay restores (the order sptool cat lists it in).
func (w *worker) rowError(i int, r savepoint.Row, k savepoint.Key, err error) error {
	if ee := (*rules.EvalError)(nil); errors.As(err, &ee) && ee.Key == nil {
		ee.Op, ee.Key, ee.Row = r.Op, append([]byte{}, r.Key...), i // (r.Key may be the input's mapped bytes)
	}
	replayed := w.res.out != nil && w.res.out.restored // (no output in the pass over merge losers)
	return fmt.Errorf("%s (op %d, slot %s, key %s): %w", savepoint.RowName(replayed, i), r.Op, k.ShowSlot(), w.e.set.ShowKey(r.Op, k), err)
}

// one runs row i through every step.
func (w *worker) one(i int, r savepoint.Row, k savepoint.Key) error {
	res, out := w.res, w.res.out
	res.before.add(r.Op, k.Slot, k.HasSlot)
	nr, keep, err := w.row(r, k)
	if err != nil {
		return w.rowError(i, r, k, err)
	}
	if !keep {
		res.changed = true
		res.after.addN(r.Op, k.Slot, k.HasSlot, -1) // after = before - dropped
		if k.Kind != savepoint.KindKeyed && w.e.joinBlobs {
			res.noteBlob(-1, i, r, savepoint.Row{})
		}
		return nil
	}
	if nr.Op != r.Op || !sameSlice(nr.Key, r.Key) || !sameSlice(nr.Value, r.Value) {
		res.changed = true
		if sameSlice(nr.Key, r.Key) && sameSlice(nr.Value, r.Value) {
			out.ops.set(uint32(out.Len()), nr.Op) // a remap: the key and value are copied as they are
		} else {
			out.modify(out.Len(), nr, r)
		}
		if nr.Op != r.Op || !sameSlice(nr.Key, r.Key) {
			res.after.addN(r.Op, k.Slot, k.HasSlot, -1)
			if !sameSlice(nr.Key, r.Key) {
				k = savepoint.ParseKey(nr.Key)
			}
			res.after.addN(nr.Op, k.Slot, k.HasSlot, 1)
		}
	}
	w.e.auditOut(res, nr, k, 1, &w.comp)
	if k.Kind != savepoint.KindKeyed && w.e.joinBlobs {
		res.noteBlob(out.Len(), i, r, nr)
	}
	w.keepRun(i, 1, &nr, &nr, true)
	kg, _ := savepoint.RestoreKeyGroup(nr.Key)
	out.log.add(nr.Op, kg, k.Slot, k.HasSlot, 1, true)
	return nil
}

// keepRun appends input rows [i, i+n) to the output and keeps track of
// whether the output so far is strictly increasing: first and last are the
// first and last of the rows as written, inc that they strictly increase
// among themselves.
func (w *worker) keepRun(i, n int, first, last *savepoint.Row, inc bool) {
	w.track(w.res.out.Len() == 0, first, last, inc)
	w.res.out.idx.appendRun(i, n)
}

// track is keepRun's bookkeeping of order for rows first to last appended
// after the output so far (empty: none).
func (w *worker) track(empty bool, first, last *savepoint.Row, inc bool) {
	rr := w.rr
	if !rr.sorted {
		// The range is out of order for good: its first and last rows no
		// longer matter (see mergeRanges), and in clink's hash-map order
		// copying each row's key as the last cost a copy a row.
		return
	}
	if empty {
		rr.first = savepoint.Row{Op: first.Op, Key: bytes.Clone(first.Key)}
	} else if first.Compare(rr.last) <= 0 {
		rr.sorted = false
	}
	rr.sorted = rr.sorted && inc
	rr.last = savepoint.Row{Op: last.Op, Key: append(rr.last.Key[:0], last.Key...)}
}

// mergeRanges joins the results of consecutive ranges of one file, in order.
func (e *engine) mergeRanges(ranges []*rangeResult) (*fileResult, bool) {
	res := ranges[0].res
	sorted := ranges[0].sorted
	last, have := ranges[0].last, ranges[0].res.out.Len() > 0
	for _, rr := range ranges[1:] {
		p := rr.res
		// The first error, but a part's own before the cancellation
		// that a failing part put the parts before it to.
		if p.err != nil && (res.err == nil || errors.Is(res.err, context.Canceled) && !errors.Is(p.err, context.Canceled)) {
			res.err = p.err
		}
		res.changed = res.changed || p.changed
		for i := range res.rules {
			res.rules[i].matched += p.rules[i].matched
			res.rules[i].dropped += p.rules[i].dropped
			res.rules[i].changed += p.rules[i].changed
			res.rules[i].empty += p.rules[i].empty
			res.rules[i].nonUTF8 += p.rules[i].nonUTF8
			res.short[i] += p.short[i]
			res.remain[i] += p.remain[i]
			res.timers[i] += p.timers[i]
			res.timersKept[i] += p.timersKept[i]
			res.purged[i] = addCounts(res.purged[i], p.purged[i])
			res.keyTimers[i] = addCounts(res.keyTimers[i], p.keyTimers[i])
		}
		for k, n := range p.elems {
			res.addElems(k, n)
		}
		p.before.each(func(k slotKey, n int64) { res.before.addKey(k, n) })
		p.after.each(func(k slotKey, n int64) { res.after.addKey(k, n) })
		offset := uint32(res.out.Len())
		for _, b := range p.blobs {
			if b.pos >= 0 { // (-1: dropped)
				b.pos += int(offset)
			}
			res.blobs = append(res.blobs, b)
		}
		res.timersMerged += p.timersMerged
		res.blobsJoined += p.blobsJoined
		if p.out.mod.len() > 0 && res.out.mod == nil {
			res.out.mod = &modRows{}
		}
		p.out.mod.each(func(pos uint32, e modEntry) { res.out.mod.copyFrom(pos+offset, e, p.out.mod) })
		res.out.ops.appendShifted(&p.out.ops, offset)
		res.out.idx.appendIndex(&p.out.idx)
		res.out.log.appendLog(&p.out.log)
		if p.out.Len() > 0 {
			sorted = sorted && rr.sorted && (!have || rr.first.Compare(last) > 0)
			last, have = rr.last, true
		}
	}
	return res, sorted
}

// auditOut is the erasure audit of an output row (delta 1), or takes it back
// for a row removed as a duplicate (delta -1): no row (or timer) of a purged
// key may remain in the output.
func (e *engine) auditOut(res *fileResult, r savepoint.Row, k savepoint.Key, delta int64, comp *compositeMemo) {
	if len(e.purges) == 0 {
		return
	}
	if k.Kind != savepoint.KindKeyed && savepoint.IsTimerBlob(r.Key) {
		for _, j := range e.purges {
			p := e.steps[j].rule.PurgeKeys
			if !p.Scope.MatchOp(r.Op) && !e.purgedScopes[j].MatchOp(r.Op) {
				continue
			}
			n, err := countTimers(r.Value, func(key []byte) bool { _, ok := p.Match(key, false); return ok })
			switch {
			case err != nil: // (a blob a purge could not read failed the run; one it leaves is not counted)
			case p.Scope.Slot != nil:
				// Scoped to a slot, the purge leaves the timers: a timer
				// belongs to the key, not to one slot, and the key's other
				// slots keep their state. They are counted, for the report.
				res.timersKept[j] += delta * int64(n)
			default:
				res.remain[j] += delta * int64(n)
			}
		}
		return
	}
	if k.Kind != savepoint.KindKeyed {
		return
	}
	for _, j := range e.purges {
		p := e.steps[j].rule.PurgeKeys
		if e.inPurgeScope(j, r.Op, k) {
			if _, ok := p.Match(k.UserKey, comp.of(r.Op, k.Slot)); ok {
				res.remain[j] += delta
			}
		}
	}
}

// inPurgeScope reports whether a row of operator op and key k is where
// purge_keys step j's audit looks: its scope as named, and where the rows
// in it went after the rules that follow (rows of listed keys a later move
// put beside them, which the purge did not see).
func (e *engine) inPurgeScope(j int, op uint64, k savepoint.Key) bool {
	return e.steps[j].rule.PurgeKeys.Scope.Match(op, k.Slot, k.HasSlot) || e.purgedScopes[j].Match(op, k.Slot, k.HasSlot)
}

// elemKey names a purge_keys step and a slot, as the step sees it (its
// operator and name after the rules before it), of fileResult.elems and
// engine.compositeLike.
type elemKey struct {
	step int
	slot slotKey
}

// addElems adds n to res.elems[k].
func (res *fileResult) addElems(k elemKey, n int64) {
	if res.elems == nil {
		res.elems = map[elemKey]int64{}
	}
	res.elems[k] += n
}

// outRows is a file's output: the input rows kept, in output order, with
// the rows some rule modified. It is a savepoint.RowSource for the writer.
type outRows struct {
	cur *savepoint.Cursor
	// release drops the input's mapped pages from the resident set (long
	// passes call it now and then: every releaseRows rows, 0 for the
	// default of the pass).
	release     func()
	releaseRows int
	idx         rowIndex // the input row of each output row
	// mod holds the rows the rules rewrote, by output position; nil when
	// no rule rewrote a row.
	mod *modRows
	// ops holds the operators of rows that only their operator changed
	// (not in mod): their keys and values are the input's, copied as runs.
	ops opSpans
	// spill sorts outputs too large to sort in memory (nil: never), and
	// stop says when such a sort is to stop (the run stopped).
	spill *spiller
	stop  func() bool
	// log describes the rows by operator, key group and slot (see runLog).
	log runLog
	// spilled is set once the rows were sorted through temporary files:
	// cur then reads the sorted rows, no longer the input's. presorted is
	// set when they were so sorted before the rules pass, every copy of a
	// key kept (engine.sortFirst): canonicalise folds the copies then.
	spilled, presorted bool
	// restored is set when the input file stores a changelog: its rows
	// are those its replay restores, in canonical order, not stored rows
	// (rowError names them so).
	restored bool
}

// Len returns the number of output rows.
func (o *outRows) Len() int { return o.idx.Len() }

// Run returns the run of output rows from i on that are consecutive,
// unmodified rows of one input batch (see savepoint.RunSource).
func (o *outRows) Run(i int) (*savepoint.Batch, int, int, bool) {
	if !o.cur.Columnar() {
		return nil, 0, 0, false
	}
	return o.run(i, true)
}

// KeyValueRun is Run for the keys and values alone: rows whose operator
// alone changed are as stored (see savepoint.KeyValueRunSource).
func (o *outRows) KeyValueRun(i int) (*savepoint.Batch, int, int, bool) {
	if !o.cur.Columnar() {
		return nil, 0, 0, false
	}
	return o.run(i, false)
}

// run is Run; withOps, rows with another operator are modified rows.
func (o *outRows) run(i int, withOps bool) (*savepoint.Batch, int, int, bool) {
	next, modified := o.mod.next(uint32(i))
	if withOps {
		if p, ok := o.ops.next(uint32(i)); ok && (!modified || p < next) {
			next, modified = p, true
		}
	}
	if modified && next == uint32(i) {
		return nil, 0, 0, false
	}
	start, n := o.idx.run(i)
	b, lo, left := o.cur.Locate(start)
	n = min(n, left)
	if modified {
		n = min(n, int(next)-i) // up to the next rewritten row
	}
	return b, lo, n, true
}

// Op returns the operator of output row i.
func (o *outRows) Op(i int) uint64 {
	if e, ok := o.mod.get(uint32(i)); ok {
		return e.op
	}
	if op, ok := o.ops.at(uint32(i)); ok {
		return op
	}
	return o.cur.Op(o.idx.at(i))
}

// opKey returns the operator and key of output row i, as Op and Key do,
// but reads an input row's with pread into kc, where the key stays valid
// until kc's next load.
func (o *outRows) opKey(i int, kc *savepoint.KeyColumns) (uint64, []byte) {
	if _, ok := o.mod.get(uint32(i)); ok || !o.cur.Columnar() {
		return o.Op(i), o.Key(i)
	}
	b, x, _ := o.cur.Locate(o.idx.at(i))
	if !kc.Holds(b, x) && kc.Load(b, x, x+1) != nil {
		return o.Op(i), o.Key(i) // the map says what is wrong (see savepoint.Guard)
	}
	op := kc.Ops[x-kc.Lo]
	if v, ok := o.ops.at(uint32(i)); ok {
		op = v
	}
	return op, kc.Key(x)
}

// Key returns the key of output row i.
func (o *outRows) Key(i int) []byte {
	if e, ok := o.mod.get(uint32(i)); ok {
		return o.mod.bytes(e.key, func() []byte { return o.cur.Key(o.idx.at(i)) })
	}
	return o.cur.Key(o.idx.at(i))
}

// Value returns the value of output row i.
func (o *outRows) Value(i int) []byte {
	if e, ok := o.mod.get(uint32(i)); ok {
		return o.mod.bytes(e.value, func() []byte { return o.cur.Value(o.idx.at(i)) })
	}
	return o.cur.Value(o.idx.at(i))
}

// Row returns output row i.
func (o *outRows) Row(i int) savepoint.Row {
	if e, ok := o.mod.get(uint32(i)); ok {
		return savepoint.Row{
			Op:    e.op,
			Key:   o.mod.bytes(e.key, func() []byte { return o.cur.Key(o.idx.at(i)) }),
			Value: o.mod.bytes(e.value, func() []byte { return o.cur.Value(o.idx.at(i)) }),
		}
	}
	r := o.cur.Row(o.idx.at(i))
	if op, ok := o.ops.at(uint32(i)); ok {
		r.Op = op
	}
	return r
}

// eachKeyIn calls fn with the operator and key of output rows [lo, hi) in
// turn until it returns false (see savepoint.DistinctKeys). Before the
// rows are sorted they are a subsequence of the input in order: the input
// rows from the first to the last are read in blocks, those dropped
// skipped.
func (o *outRows) eachKeyIn(lo, hi int, fn func(i int, op uint64, key []byte) bool) {
	if lo >= hi {
		return
	}
	visit := func(p int, op uint64, key []byte) bool {
		if e, ok := o.mod.get(uint32(p)); ok {
			in := key
			op, key = e.op, o.mod.bytes(e.key, func() []byte { return in })
		} else if o2, ok := o.ops.at(uint32(p)); ok {
			op = o2
		}
		return fn(p, op, key)
	}
	x := &o.idx
	if x.dense != nil {
		for p := lo; p < hi; p++ {
			if !fn(p, o.Op(p), o.Key(p)) {
				return
			}
		}
		return
	}
	k := x.span(lo)
	o.cur.EachKeyIn(x.at(lo), x.at(hi-1)+1, func(j int, op uint64, key []byte) bool {
		for j >= int(x.spans[k].start+x.spans[k].n) {
			k++
		}
		if j < int(x.spans[k].start) {
			return true // dropped
		}
		return visit(x.spanStart(k)+j-int(x.spans[k].start), op, key)
	})
}

// modify records r as output row pos, rewritten from the input row in.
func (o *outRows) modify(pos int, r, in savepoint.Row) {
	if o.mod == nil {
		o.mod = &modRows{}
	}
	o.mod.set(uint32(pos), r, in)
}

// keyedRun returns how many output rows from j are keyed rows (first key
// byte below 128) of one operator and key group, read as one run of an
// input batch (at least one when row j is keyed); keyed is false when row
// j is not a keyed row. The output must be canonical: within a run the
// operator and then the first key byte never decrease, so the end of the
// key group is found by galloping. The keys of a run are read into kc, a
// block of rows at a time (see savepoint.KeyColumns), but no further than
// the run's end; a short run's are read through the map instead. An
// output sorted in memory from clink's hash-map order is runs of a row or
// two anywhere in the input: a block read for each took a rescale of 1M
// rows in 4 files 5 s, all of it in pread.
func (o *outRows) keyedRun(j int, kc *savepoint.KeyColumns) (n int, op uint64, kg int, keyed bool, err error) {
	b, lo, m, ok := o.Run(j)
	if !ok {
		kg, keyed := savepoint.RestoreKeyGroup(o.Key(j))
		if !keyed {
			return 1, 0, -1, false, nil
		}
		return 1, o.Op(j), kg, true, nil
	}
	if m < keyedRunBlock {
		if n, op, kg, keyed, ok := shortKeyedRun(b, lo, m); ok {
			return n, op, kg, keyed, nil
		}
		// Offsets that bound no key: the file changed since it was
		// validated, which the block read below reports, naming it.
	}
	for n < m {
		x := lo + n
		if !kc.Holds(b, x) {
			if err := kc.Load(b, x, min(b.Len(), lo+m, x+scanBlock)); err != nil {
				return 0, 0, 0, false, err
			}
		}
		first := func(y int) int { // the first key byte of batch row y, or -1
			if key := kc.Key(y); len(key) > 0 {
				return int(key[0])
			}
			return -1
		}
		if n == 0 {
			op, kg = kc.Ops[x-kc.Lo], first(x)
			if kg < 0 || kg >= savepoint.NumKeyGroups {
				return 1, op, -1, false, nil
			}
		} else if kc.Ops[x-kc.Lo] != op || first(x) != kg {
			break
		}
		avail := min(kc.Hi, lo+m) - x
		k := 1 + gallop.Search(avail-1, func(y int) bool { return kc.Ops[x+1+y-kc.Lo] != op || first(x+1+y) != kg })
		n += k
		if k < avail {
			break
		}
	}
	return n, op, kg, true, nil
}

// keyedRunBlock is the shortest run of input rows whose keys keyedRun
// reads as a block with pread rather than row by row through the map.
const keyedRunBlock = 64

// shortKeyedRun is keyedRun for the m rows of b from lo, read through the
// map: how many from lo are keyed rows of the first one's operator and key
// group. ok is false when an offset read bounds no key of the batch (the
// file was rewritten in place since it was validated).
func shortKeyedRun(b *savepoint.Batch, lo, m int) (n int, op uint64, kg int, keyed, ok bool) {
	bad := false
	first := func(x int) int { // the first key byte of batch row x, or -1
		k0, k1 := b.KeyOffs[x], b.KeyOffs[x+1]
		switch {
		case k0 < 0 || k1 < k0 || int(k1) > len(b.Keys):
			bad = true
		case k0 < k1:
			return int(b.Keys[k0])
		}
		return -1
	}
	op, kg = b.Ops[lo], first(lo)
	if bad {
		return 0, 0, 0, false, false
	}
	if kg < 0 || kg >= savepoint.NumKeyGroups {
		return 1, op, -1, false, true
	}
	n = 1
	for n < m && b.Ops[lo+n] == op && first(lo+n) == kg {
		n++
	}
	return n, op, kg, true, !bad
}

// dropShadowed removes the output rows that come from a copy of a key that
// the input file f stores twice and that a restore of f would not keep
// (see savepoint.CanonicalPositions), after calling dropped with each, and
// returns how many it removed and those copies, marked by input row (nil
// when there are none, or none were looked for). A strictly increasing input, or one whose
// keys are distinct, has no such copy. An input of maxShadowSearchRows
// rows or more that is not strictly increasing is searched only when a
// rule decides by value or merges keys (search: otherwise every copy of a
// key meets the same fate, and the copies kept are resolved as a restore
// resolves them when the output is sorted), with a
// hash of each key (savepoint.RepeatedKeys: 8 bytes a row; a value-based
// drop over 10M rows in clink's order took a quarter longer, and twice the
// memory), not sorted in memory; one it cannot search within its bound (a
// quarter of the file's bytes, or 64 MiB: the hashes, then the repeated
// keys) is not looked at (unchecked).
func (o *outRows) dropShadowed(f *savepoint.File, search bool, dropped func(savepoint.Row)) (n int64, shadowed []uint64, unchecked bool) {
	snap := f.Snapshot
	if _, strict := snap.Order(); strict {
		return 0, nil, false
	}
	if snap.NumRows() >= maxShadowSearchRows && !search {
		// Every stored copy of a key met the same fate, and no other
		// key's joined them: the copies kept are resolved as a restore
		// resolves them when the output is sorted, and none dropped hid
		// one kept.
		return 0, nil, false
	}
	shadowed = make([]uint64, (snap.NumRows()+63)/64) // by input row
	if snap.NumRows() >= maxShadowSearchRows {
		groups, ok := savepoint.RepeatedKeys(snap.NumRows(), snap.EachKeyIn, shadowBudget(f))
		if !ok {
			return 0, nil, true
		}
		if len(groups) == 0 {
			return 0, nil, false
		}
		// Each group folded in stream order, as a restore and
		// resolveDuplicates fold copies: all but the copy kept are
		// shadowed.
		cur := snap.NewCursor()
		for _, rows := range groups {
			held := rows[0]
			for _, i := range rows[1:] {
				if savepoint.IncomingWins(cur.Row(held), cur.Row(i)) {
					held, i = i, held
				}
				shadowed[i/64] |= 1 << (i % 64)
			}
		}
	} else {
		if savepoint.DistinctKeys(snap.NumRows(), snap.EachKeyIn, savepoint.DistinctBudget(f)) {
			return 0, nil, false
		}
		in := &outRows{cur: snap.NewCursor(), release: f.ReleasePages, releaseRows: f.ReleaseRows()}
		in.idx.appendRun(0, snap.NumRows())
		savepoint.CanonicalPositions(in, func(pos uint32) { shadowed[pos/64] |= 1 << (pos % 64) }, f.ReleasePages)
	}
	return o.dropMarked(shadowed, dropped), shadowed, false
}

// dropMarked removes the output rows that come from the input rows marked
// in the bit set marked, after calling dropped (if not nil) with each, and
// returns how many it removed.
func (o *outRows) dropMarked(marked []uint64, dropped func(savepoint.Row)) int64 {
	keep := make([]uint32, 0, o.Len())
	for pos := range o.Len() {
		if i := o.idx.at(pos); marked[i/64]&(1<<(i%64)) != 0 {
			if dropped != nil {
				dropped(o.Row(pos))
			}
			continue
		}
		keep = append(keep, uint32(pos))
	}
	n := int64(o.Len() - len(keep))
	if n > 0 {
		o.keepPositions(keep)
	}
	return n
}

// compositeLooking returns the slots, as the purge_keys steps that
// sampled them see them, most of whose samples looked composite to
// noteCompositeLike, in order of step, operator and slot.
func (e *engine) compositeLooking() []elemKey {
	var out []elemKey
	for k, c := range e.compositeLike {
		if 2*c.like > c.n {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, compareElemKeys)
	return out
}

// compareElemKeys orders elemKeys by step, operator and slot.
func compareElemKeys(a, b elemKey) int {
	return cmp.Or(a.step-b.step, cmp.Compare(a.slot.op, b.slot.op), strings.Compare(a.slot.slot, b.slot.slot))
}

// passedOverWarnings warns of the rows each filter scoped to a declared
// slot, or set_value, passed over: those its declaration does not describe
// (see filterStep).
func (e *engine) passedOverWarnings() []string {
	var warns []string
	for i := range e.passedOver {
		if n := e.passedOver[i].Load(); n > 0 {
			st := e.steps[i]
			var d *rules.SlotDecl
			if f := st.rule.Filter(); f != nil {
				d = f.Decl
			} else if sv := st.rule.SetValue; sv != nil {
				d = sv.Decl
			}
			tail := "; they are left as they are"
			if d.Broadcast {
				if st.rule.SetValue == nil {
					tail = fmt.Sprintf("; select such rows by expression on kind and slot (kind == \"keyed\" && slot == %q for the keyed ones), which reads their key and value as bytes", d.Slot)
				}
				warns = append(warns, fmt.Sprintf("%s: passed over %s of slot %q that are not its broadcast state (keyed rows, or operator rows other than the one at key 0xFF slot '|'): the rule's expression reads the key or value as the slot's declaration decodes them, and a 'broadcast: true' declaration describes the row at key 0xFF slot '|' only%s", st.rule.Label(), countOf(int(n), "row"), d.Slot, tail))
				continue
			}
			if st.rule.SetValue == nil {
				tail = fmt.Sprintf("; select such rows by expression (kind == \"operator\" && slot == %q), which reads their key and value as bytes", d.Slot)
			}
			warns = append(warns, fmt.Sprintf("%s: passed over %s of slot %q (broadcast state, key 0xFF slot '|'): the rule's expression reads the key or value as the slot's declaration decodes them, and it describes keyed rows only (declare the slot 'broadcast: true' to decode its broadcast state instead)%s", st.rule.Label(), countOf(int(n), "operator row"), d.Slot, tail))
		}
	}
	return warns
}

// compositeWarnings warns of the slots compositeLooking names: the purge
// matched their keys whole, so it left the elements of listed keys they
// hold, which it counted where it looked (elems, of results).
func (e *engine) compositeWarnings(results []*fileResult) []string {
	var warns []string
	for _, k := range e.compositeLooking() {
		var n int64
		for _, res := range results {
			n += res.elems[k]
		}
		left := "so it leaves the elements of a listed key there; it found none of the listed keys' (counted in the key groups whose first key looks composite)"
		switch {
		case n == 1:
			// (A key group whose first key in the slot is plain is not
			// counted: there may be more.)
			left = "and it left at least 1 element of a listed key there (counted in the key groups whose first key looks composite)"
		case n > 1:
			left = fmt.Sprintf("and it left at least %d elements of listed keys there (counted in the key groups whose first key looks composite)", n)
		}
		warns = append(warns, fmt.Sprintf("%s: slot %s of op %d is not declared 'composite: true', but its keys look composite (a key, 0x1F, an element, as clink's ExpiringMapState and ExpiringListState store them): the purge matches them whole, %s (the audit's elements_left); declare the slot with 'composite: true' under 'slots:' to purge them", e.steps[k.step].rule.Label(), k.slot.show(), k.slot.op, left))
	}
	return warns
}

// The fields of a row, beside its operator and key, by which a rule may
// drop it or keep it (see decidesBy): its value, and where it is stored.
const (
	byValue = rules.FieldValue | rules.FieldValueBytes | rules.FieldExpireAt
	byStore = rules.FieldSubtask
)

// decidesBy reports whether rule r may drop a row or keep it by one of the
// fields: a filter that reads one (or whose fields are not known), and,
// for byValue, a purge_expired or a set_value that erases empty results.
// The other rules give every stored copy of a key the same fate.
func decidesBy(r *rules.Rule, fields rules.Fields) bool {
	for _, f := range []*rules.FilterSpec{r.Keep, r.Drop} {
		if f != nil && (f.Predicate == nil || f.Predicate.Fields()&fields != 0) {
			return true
		}
	}
	return fields&byValue != 0 && (r.PurgeExpired != nil || r.SetValue != nil && r.SetValue.EraseEmpty)
}

// decidesByValue reports whether rule r may drop a row or keep it by the
// row's value (see decidesBy).
func decidesByValue(r *rules.Rule) bool { return decidesBy(r, byValue) }

// maxShadowSearchRows is the fewest rows of an input that dropShadowed
// searches with a hash of each key rather than sorts (a variable so tests
// can lower it).
var maxShadowSearchRows = 1 << 20

// shadowBudget is the memory dropShadowed's hash search may use for the
// rows of file f (a variable so tests can take it away).
var shadowBudget = savepoint.DistinctBudget

// canonicalise sorts the output rows by (op, key) and resolves duplicates as
// clink's restore does; it returns how many duplicates it resolved, after
// calling dropped (if not nil) with each row removed. Outputs of at least
// spill.minRows rows are sorted through temporary files (see spiller).
func (o *outRows) canonicalise(dropped func(savepoint.Row)) (int64, error) {
	if o.presorted && o.mod.len() == 0 && o.ops.n == 0 {
		return o.foldCopies(dropped)
	}
	if o.spill != nil && o.Len() >= o.spill.minRows {
		n, dropping, err := o.canonicaliseSpilled(dropped, false, o.spill.budget)
		if err == nil || dropping || o.Len() >= savepoint.InPlaceRows || savepoint.InputFault(err) || errors.Is(err, context.Canceled) {
			return n, err
		}
		// A smaller output whose sort through temporary files failed
		// before it dropped a row (no temporary directory, no room in
		// it) is sorted in memory, as it was before it took that path;
		// one that stopped because the run did is not.
	}
	var lost func(pos uint32)
	if dropped != nil {
		lost = func(pos uint32) { dropped(o.Row(int(pos))) }
	}
	keep := savepoint.CanonicalPositions(o, lost, o.release)
	dupes := int64(o.Len() - len(keep))
	o.keepPositions(keep)
	return dupes, nil
}

// foldCopies is canonicalise for an output read from a sorted copy that
// kept every copy of a key, together and in stream order (engine.sortFirst;
// no row rewritten): each run of copies is folded in order, as
// resolveDuplicates folds them, in one pass over the keys, instead of a
// second sort through temporary files (which held the rows twice over on
// disk, and took half again the CPU of the rescale of a tree whose files
// each stored a key twice).
func (o *outRows) foldCopies(dropped func(savepoint.Row)) (int64, error) {
	type copies struct{ start, end int } // output rows [start, end) share their operator and key
	var runs []copies
	var prevOp uint64
	var prev []byte
	o.eachKeyIn(0, o.Len(), func(j int, op uint64, key []byte) bool {
		if j > 0 && op == prevOp && bytes.Equal(key, prev) {
			if k := len(runs) - 1; k >= 0 && runs[k].end == j {
				runs[k].end = j + 1
			} else {
				runs = append(runs, copies{j - 1, j + 1})
			}
		}
		prevOp, prev = op, append(prev[:0], key...)
		return true
	})
	if len(runs) == 0 {
		return 0, nil
	}
	var idx rowIndex
	keep := func(from, to int) { // output rows [from, to), as the input rows they are
		for p := from; p < to; {
			start, n := o.idx.run(p)
			n = min(n, to-p)
			idx.appendRun(start, n)
			p += n
		}
	}
	var dupes int64
	next := 0
	for _, r := range runs {
		held := r.start
		for j := r.start + 1; j < r.end; j++ {
			lost := j
			if savepoint.IncomingWins(o.Row(held), o.Row(j)) {
				held, lost = j, held
			}
			dupes++
			if dropped != nil {
				dropped(o.Row(lost))
			}
		}
		keep(next, r.start)
		keep(held, held+1)
		next = r.end
	}
	keep(next, o.Len())
	o.idx = rowIndex{spans: idx.spans, ends: idx.ends}
	o.log.drop()
	return dupes, nil
}

// keepPositions makes the output the rows at the positions keep, in that
// order.
func (o *outRows) keepPositions(keep []uint32) {
	o.idx.makeDense() // the positions kept may come in any order
	newOrder := make([]uint32, len(keep))
	var newMod *modRows
	var newOps opSpans
	for at, pos := range keep {
		newOrder[at] = uint32(o.idx.at(int(pos)))
		if m, ok := o.mod.get(pos); ok {
			if newMod == nil {
				newMod = &modRows{}
			}
			newMod.copyFrom(uint32(at), m, o.mod)
		} else if op, ok := o.ops.at(pos); ok {
			newOps.set(uint32(at), op)
		}
	}
	o.idx = rowIndex{dense: newOrder}
	o.mod, o.ops = newMod, newOps
	o.log.drop()
}

// canonicaliseSpilled is canonicalise through savepoint.SortSpilled: the
// output rows become the rows of the sorted temporary file, one run. On
// error, dropping says whether dropped was called for a row already. With
// keepDups, rows of one operator and key are all kept, in order
// (SpillOptions.KeepDuplicates), and dropped is never called. budget is
// the sort's SpillOptions.Budget.
func (o *outRows) canonicaliseSpilled(dropped func(savepoint.Row), keepDups bool, budget int) (_ int64, dropping bool, _ error) {
	if beforeSpillSort != nil {
		beforeSpillSort()
	}
	var dupes int64
	sp, err := savepoint.SortSpilled(o, savepoint.SpillOptions{
		Dir:            o.spill.dir,
		Budget:         budget,
		Release:        o.release,
		ReleaseRows:    o.releaseRows,
		Stop:           o.stop,
		KeepDuplicates: keepDups,
		Dropped: func(r savepoint.Row) {
			dupes++
			if dropped != nil {
				dropped(r)
			}
		},
	})
	if err != nil {
		return 0, dupes > 0, fmt.Errorf("sort the output rows: %w", err)
	}
	o.spill.keep(sp)
	spillCount.Add(1)
	sorted := sp.Snapshot()
	release := o.release
	o.cur = sorted.NewCursor()
	o.release = func() {
		release()
		sp.ReleasePages()
	}
	o.idx = rowIndex{}
	o.idx.appendRun(0, sorted.NumRows())
	o.mod, o.ops = nil, opSpans{}
	o.log.drop()
	o.spilled = true
	return dupes, false, nil
}

// spiller holds what sorting through temporary files needs in a run, and
// the sorted files until the run ends.
type spiller struct {
	dir     string
	minRows int
	budget  int // SpillOptions.Budget of each sort
	mu      sync.Mutex
	open    []*savepoint.Spilled
}

// minSpillRows is the fewest output rows sorted through temporary files:
// below it the in-memory sort (about 36 bytes a row, and random reads of
// the input when writing) costs little. From 64K rows on, the sort through
// temporary files is the faster, and its memory is its budget's: a drop
// over 500K rows in clink's order took 0.30-0.42 s in memory and 0.17 s
// so, a rescale of 4M rows in 8 files 2.7 s and 252 MB against 0.9-1.0 s
// and 105-111 MB (the in-memory sort's writer reads the input at random). A
// variable so tests can lower it.
var minSpillRows = 1 << 16

// beforeSpillSort, set by tests only, is called before an output is sorted
// through temporary files.
var beforeSpillSort func()

// spillBudget is SpillOptions.Budget (0: the default); tests lower it.
var spillBudget = 0

// spillCount counts the outputs sorted through temporary files (tests
// check that they took that path).
var spillCount atomic.Int64

// newSpiller returns the spiller of a run that sorts up to sorts files
// at once. The sorts share the default budget: each sort holds about
// three times its budget (its buckets' buffers, the buckets being sorted
// ahead, the sorted columns being written), and a drop over a 10M-row
// tree of 16 files in clink's order, two files at once, peaked at 0.55x
// the input with a budget each.
func newSpiller(opts Options, sorts int) *spiller {
	dir := opts.TempDir
	if dir == "" {
		dir = savepoint.TempDirFor(opts.Out)
	}
	budget := spillBudget
	if budget == 0 {
		budget = max(minSharedBudget, savepoint.DefaultSpillBudget/max(1, sorts))
	}
	return &spiller{dir: dir, minRows: minSpillRows, budget: budget}
}

// minSharedBudget is the least share of the sort's budget a file sorted
// at the same time as others gets.
const minSharedBudget = 2 << 20

// alone gives the sorts that follow the whole budget: they run one at a
// time (a rescale's, once the files are processed).
func (s *spiller) alone() { s.budget = s.soleBudget() }

// soleBudget is the budget of a sort that runs alone: the whole default
// budget, or the one tests set.
func (s *spiller) soleBudget() int {
	if spillBudget == 0 {
		return savepoint.DefaultSpillBudget
	}
	return s.budget
}

func (s *spiller) keep(sp *savepoint.Spilled) {
	s.mu.Lock()
	s.open = append(s.open, sp)
	s.mu.Unlock()
}

// close closes the sorted files (they were unlinked when created).
func (s *spiller) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sp := range s.open {
		sp.Close()
	}
	s.open = nil
}

// countSlots adds the rows of src to counts, a prefix at a time where src
// gives runs of input rows; sorted says the rows are in canonical order.
func countSlots(rs savepoint.RowSource, sorted bool, counts *slotCounts, release func()) {
	src := savepoint.Columns(rs)
	runs, _ := src.(savepoint.RunSource)
	var kc savepoint.KeyColumns
	pace := savepoint.NewPacer(0, releaseRows+1)
	for i := 0; i < src.Len(); {
		if pace.Due(i) {
			release()
		}
		if runs != nil {
			if b, lo, n, ok := runs.Run(i); ok && n > 1 {
				if n < 64 {
					countBatchSlots(b, lo, n, sorted, counts)
				} else {
					countKeyColumns(b, lo, n, sorted, counts, &kc)
				}
				i += n
				continue
			}
		}
		k := savepoint.ParseKey(src.Key(i))
		counts.add(src.Op(i), k.Slot, k.HasSlot)
		i++
	}
}

// countKeyColumns is countBatchSlots reading the keys into kc, a block of
// rows at a time (see savepoint.KeyColumns): a run's gallop then probes
// memory already read rather than pages of the map.
func countKeyColumns(b *savepoint.Batch, lo, n int, sorted bool, counts *slotCounts, kc *savepoint.KeyColumns) {
	for x := lo; x < lo+n; {
		kc.LoadOrMap(b, x, min(lo+n, x+scanBlock))
		for hi := kc.Hi; x < hi; {
			k := savepoint.ParseKey(kc.Key(x))
			end := kc.PrefixRunEnd(x, hi, sorted)
			counts.addN(kc.Ops[x-kc.Lo], k.Slot, k.HasSlot, int64(end-x))
			x = end
		}
	}
}

// countBatchSlots adds rows [lo, lo+n) of b to counts a prefix run at a
// time (Batch.PrefixRunEnd): the rows of a run are in one slot.
func countBatchSlots(b *savepoint.Batch, lo, n int, sorted bool, counts *slotCounts) {
	for x := lo; x < lo+n; {
		k := savepoint.ParseKey(b.Key(x))
		end := b.PrefixRunEnd(x, lo+n, sorted) // x+1 for a key without a separator
		counts.addN(b.Ops[x], k.Slot, k.HasSlot, int64(end-x))
		x = end
	}
}

// slotCounts counts rows per operator and slot without allocating per row;
// the last counter used is cached, as rows in canonical order come grouped
// by operator, key group and slot. The rows of keys without a separator
// are counted apart from every slot (RawSlot is a slot name too).
type slotCounts struct {
	m        map[uint64]map[string]*int64
	raw      map[uint64]*int64
	lastOp   uint64
	lastSlot []byte
	lastHas  bool
	last     *int64
}

func (c *slotCounts) add(op uint64, slot []byte, hasSlot bool) { c.addN(op, slot, hasSlot, 1) }

func (c *slotCounts) addN(op uint64, slot []byte, hasSlot bool, delta int64) {
	*c.counter(op, slot, hasSlot) += delta
}

// addKey adds n to the count of k.
func (c *slotCounts) addKey(k slotKey, n int64) { c.addN(k.op, []byte(k.slot), !k.noSlot, n) }

// counter returns the count of (op, slot), made zero if new. It stays
// valid: callers that count a prefix again and again keep it (see
// worker.counts).
func (c *slotCounts) counter(op uint64, slot []byte, hasSlot bool) *int64 {
	if c.last != nil && c.lastOp == op && c.lastHas == hasSlot && bytes.Equal(c.lastSlot, slot) {
		return c.last
	}
	if !hasSlot {
		if c.raw == nil {
			c.raw = map[uint64]*int64{}
		}
		p := c.raw[op]
		if p == nil {
			p = new(int64)
			c.raw[op] = p
		}
		c.lastOp, c.lastSlot, c.lastHas, c.last = op, c.lastSlot[:0], false, p
		return p
	}
	if c.m == nil {
		c.m = map[uint64]map[string]*int64{}
	}
	inner := c.m[op]
	if inner == nil {
		inner = map[string]*int64{}
		c.m[op] = inner
	}
	p, ok := inner[string(slot)]
	if !ok {
		p = new(int64)
		inner[string(slot)] = p
	}
	// A copy: callers pass slices of buffers they reuse (the external
	// sort's, for rows removed as duplicates).
	c.lastOp, c.lastSlot, c.lastHas, c.last = op, append(c.lastSlot[:0], slot...), true, p
	return p
}

// each calls fn for every (op, slot) count.
func (c *slotCounts) each(fn func(k slotKey, n int64)) {
	for op, inner := range c.m {
		for slot, n := range inner {
			fn(slotKey{op: op, slot: slot}, *n)
		}
	}
	for op, n := range c.raw {
		fn(rawSlotKey(op), *n)
	}
}

// composite reports whether (op, slot) is declared a composite-key slot.
func (e *engine) composite(op uint64, slot []byte) bool {
	d := e.set.SlotDecl(op, string(slot))
	return d != nil && d.Composite
}

// worker evaluates the steps for the rows of one file; it owns the VM and the
// expression environment (neither is safe for concurrent use).
type worker struct {
	e       *engine
	res     *fileResult
	rr      *rangeResult
	pos     int64 // the part of the run it works on (see position)
	subtask int
	plans   planCache
	comp    compositeMemo
	vm      vm.VM
	env     rules.Env
	view    rules.RowView
	envRow  savepoint.Row
	envOK   bool
	envRule *rules.Rule // the rule env was filled for: its declarations
	envErr  error       // the error of that filling, for every rule's fields
	// keys holds the operators and keys of the rows being scanned (see
	// scanRow); runFirst, runLast, streakFirst and lastKey are copies of
	// keys read there that must outlive the next read.
	keys                                    savepoint.KeyColumns
	runFirst, runLast, streakFirst, lastKey []byte
	// listed are the rows of a run the purge lists may hold, and
	// listedKeys their keys (purgeRun).
	listed     []listedRow
	listedKeys []byte
	// known is the prefix run of the input's index (savepoint.PrefixRuns)
	// that the run being processed lies in, when there is one: its end
	// and its last key need no reading.
	known    savepoint.PrefixRun
	hasKnown bool
	// hits are the rows the pass at open found a purge list may hold
	// (see Probe), or nil.
	hits *savepoint.KeyHits
	// rows reads the rows of a run whose steps look at each row (see
	// worker.run).
	rows savepoint.RowReader
}

// position orders the parts of a run: part part (a range of rows) of file
// file.
func position(file, part int) int64 { return int64(file)<<32 | int64(part) }

// stopsAt reports whether the part at pos is to stop: the run's context
// ended, or a part before it failed.
func (e *engine) stopsAt(pos int64) bool { return e.ended.Load() || e.failedAt.Load() < pos }

// failAt records that the part at pos failed, which stops the parts after
// it in file and row order (their contexts too, for the files after its
// own), not those before it: whatever the timing, the first part that
// fails of itself, in that order, is the one whose error the run reports,
// and within a part, rows are taken in order.
func (e *engine) failAt(pos int64) {
	for {
		cur := e.failedAt.Load()
		if pos >= cur || e.failedAt.CompareAndSwap(cur, pos) {
			break
		}
	}
	for j := int(pos>>32) + 1; j < len(e.cancels); j++ {
		e.cancels[j]()
	}
}

// fill prepares the expression environment of rule i for r, once per row
// version and set of declarations: a rule decodes a row with the slot
// declarations under the names they have at its place in the file.
func (w *worker) fill(r savepoint.Row, i int) error {
	if w.e.stopsAt(w.pos) {
		return context.Canceled
	}
	rule := w.e.steps[i].rule
	own := w.e.steps[i].fields
	if w.envOK && w.envRule.SameDecls(rule) && w.envRow.Op == r.Op && sameSlice(w.envRow.Key, r.Key) && sameSlice(w.envRow.Value, r.Value) {
		return filledFor(w.envErr, own)
	}
	w.envRow, w.envOK, w.envRule = r, true, rule
	w.envErr = rule.FillEnvAt(&w.env, r, w.subtask, w.e.fields)
	return filledFor(w.envErr, own)
}

// filledFor is err, the error of filling an environment with the fields of
// every rule, as a rule reading own sees it: a codec's failure on a part
// it does not read is none of its business (rules.ReadsFailed).
func filledFor(err error, own rules.Fields) error {
	if rules.ReadsFailed(err, own) {
		return err
	}
	return nil
}

func sameSlice(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// row runs r through every step; it returns the row as transformed and
// whether it is kept.
func (w *worker) row(r savepoint.Row, k savepoint.Key) (savepoint.Row, bool, error) {
	return w.through(r, k, len(w.e.steps))
}

// through runs r through the first n steps, as row runs it through all.
func (w *worker) through(r savepoint.Row, k savepoint.Key, n int) (savepoint.Row, bool, error) {
	w.envOK = false
	for i := range n {
		st := &w.e.steps[i]
		if st.apply == nil {
			continue
		}
		out, keep, err := st.apply(w, i, r, k)
		if err != nil {
			return r, false, w.e.stepError(i, err)
		}
		if !keep {
			w.res.rules[i].dropped++
			return r, false, nil
		}
		if out.Op != r.Op || !sameSlice(out.Key, r.Key) {
			k = savepoint.ParseKey(out.Key)
		}
		r = out
	}
	return r, true, nil
}

// ruleFileAt is where rule r is in the file of set, as the errors of
// loading it say ("rules.yaml:3:5: "), "" when not known or when the rule
// is a command's (sptool rescale's flags).
func ruleFileAt(set *rules.Set, r *rules.Rule) string {
	if set.Source == "" || set.Source == rules.RescaleShorthand || r.Line <= 0 {
		return ""
	}
	return fmt.Sprintf("%s:%d:%d: ", set.Source, r.Line, r.Col)
}

// ruleAt names rule r of set for an error: where it is in its file, and
// its label.
func ruleAt(set *rules.Set, r *rules.Rule) string { return ruleFileAt(set, r) + r.Label() }

// stepError names the rule of step i in err, unless it does already, and
// where the rule is in its file.
func (e *engine) stepError(i int, err error) error {
	r := e.steps[i].rule
	at := ruleFileAt(e.set, r)
	var named *rules.EvalError
	if errors.As(err, &named) {
		if at == "" {
			return err
		}
		return fmt.Errorf("%s%w", at, err)
	}
	return fmt.Errorf("%s%s: %w", at, r.Label(), err)
}

// newReport fills the input side of a report.
func newReport(sp *savepoint.Savepoint, set *rules.Set, dry bool) *Report {
	rep := &Report{
		DryRun: dry,
		Input: Input{
			Path: sp.Path, Kind: sp.Kind.String(), Backend: string(sp.Backend),
			Generation: sp.Generation, Checkpoint: sp.Checkpoint, Files: len(sp.Files),
		},
		Rules:    RulesInfo{Source: set.Source, Digest: set.Digest},
		Warnings: []string{},
	}
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	for _, f := range sp.Files {
		rep.Input.Bytes += addFileDigest(h, savepoint.FileInfo{Size: f.Size, CRC32C: f.CRC32C}, f.MaterializationInfo)
	}
	rep.Input.Digest = "crc32c:" + strconv.FormatUint(uint64(h.Sum32()), 10)
	for _, w := range set.Warnings {
		rep.Warnings = append(rep.Warnings, w.String())
	}
	return rep
}

// The lists of keys an erasure audit gives (Options.KeyCountsOnly and
// KeyDigests).
const (
	noKeyLists = iota
	plainKeyLists
	digestKeyLists
)

// MinKeyDigestKey is the fewest bytes Options.KeyDigestKey may hold: 128
// bits, so that the secret cannot be found by trying candidates either.
const MinKeyDigestKey = 16

// keyListing is what opts asks the erasure audits for: which lists of
// keys (noKeyLists, plainKeyLists, digestKeyLists) and, for digests, the
// secret that keys them (none: SHA-256 alone).
type keyListing struct {
	lists  int
	secret []byte
}

// keyListingOf returns the lists of keys opts asks the erasure audits for.
func keyListingOf(opts Options) keyListing {
	switch {
	case opts.KeyCountsOnly:
		return keyListing{lists: noKeyLists}
	case opts.KeyDigests:
		return keyListing{lists: digestKeyLists, secret: opts.KeyDigestKey}
	}
	return keyListing{lists: plainKeyLists}
}

// CheckKeyDigestKey refuses a secret for Options.KeyDigestKey shorter than
// MinKeyDigestKey (Run does too; a caller that reads the secret checks it
// before it opens the input, which for a large savepoint takes minutes).
func CheckKeyDigestKey(secret []byte) error {
	if n := len(secret); n < MinKeyDigestKey {
		return fmt.Errorf("%d bytes; the secret takes at least %d (128 bits), or it is found by trying candidates", n, MinKeyDigestKey)
	}
	return nil
}

// merge adds the per-file results to the report; listing says which lists
// of keys each erasure audit gives (see keyListingOf).
func (rep *Report) merge(sp *savepoint.Savepoint, e *engine, results []*fileResult, listing keyListing) {
	before, after := map[slotKey]int64{}, map[slotKey]int64{}
	composite := e.compositeLooking()
	for i, st := range e.steps {
		rs := &RuleStats{Index: st.rule.Index, Name: st.rule.Name, Kind: string(st.rule.Kind), Label: st.rule.Label()}
		// The first file's counts of a purge's keys become the sums (no
		// result is read after this): a fresh array of 100,000 keys is 800
		// KB of pages to fault in on the way to the end of the run.
		var purged, keyTimers []int64
		for _, res := range results {
			rc := res.rules[i]
			rs.Matched += rc.matched
			rs.Dropped += rc.dropped
			rs.Changed += rc.changed
			rs.EmptyWritten += rc.empty
			rs.NonUTF8Changed += rc.nonUTF8
			if res.vmRules[i] {
				rs.VersionEntries++
			}
			purged = addCounts(purged, res.purged[i])
			keyTimers = addCounts(keyTimers, res.keyTimers[i])
			if rs.Expired == nil && st.rule.PurgeExpired != nil {
				rs.Expired = expiredInfo(st.rule.PurgeExpired)
			}
			if rs.Expired != nil {
				rs.Expired.ShortValues += res.short[i]
			}
		}
		if p := st.rule.PurgeKeys; p != nil {
			if purged == nil {
				purged = make([]int64, p.Len())
			}
			var remaining, timers, kept, elems int64
			for _, res := range results {
				remaining += res.remain[i]
				timers += res.timers[i]
				kept += res.timersKept[i]
			}
			if kept > 0 {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: %d timers of listed keys were left in the operators' timer blobs: the rule is scoped to a slot, and a timer belongs to the key, not to one slot (they fire for the key after a restore; purge without 'slot' to remove them)", st.rule.Label(), kept))
			}
			// The audit lists every key listed, found or not (100,000
			// keys: 4 MB of fresh memory, about 20 ms on one core), and
			// nothing before the end of the run reads it: it is put
			// together while the output is written (see Report.finish).
			var unchecked []string
			for _, k := range composite {
				if k.step == i {
					unchecked = append(unchecked, fmt.Sprintf("op %d slot %s", k.slot.op, k.slot.show()))
					for _, res := range results {
						elems += res.elems[k]
					}
				}
			}
			rep.pending = append(rep.pending, func() {
				rs.Purge = purgeAudit(p, purged, keyTimers, listing)
				rs.Purge.Remaining, rs.Purge.TimersRemoved, rs.Purge.TimersKept = remaining, timers, kept
				rs.Purge.ElementsLeft = elems
				rs.Purge.CompositeLooking = unchecked
				rs.Purge.moved = e.purgedScopes[i].Moved()
			})
		}
		if sv := st.rule.SetValue; sv != nil && rs.EmptyWritten > 0 && !sv.Decl.Broadcast {
			// (Broadcast state is one value, kept when empty.)
			rows, hold := "rows", "hold"
			if rs.EmptyWritten == 1 {
				rows, hold = "row", "holds"
			}
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: after it, %d %s of op %d slot %q %s an empty list or map; clink's ListState and MapState never store one (they erase the key): if the slot is one of them, add 'erase_empty: true' to remove such rows", st.rule.Label(), rs.EmptyWritten, rows, sv.Op.ID, sv.Slot, hold))
		}
		if sv := st.rule.SetValue; sv != nil && rs.NonUTF8Changed > 0 {
			were, them := "were", "them"
			if rs.NonUTF8Changed == 1 {
				were, them = "was", "it"
			}
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: it changed %s of op %d slot %q that %s not valid UTF-8: the expression saw %s as text, and string functions (upper, trim, replace, ...) write each byte that is not UTF-8 as U+FFFD; if the bytes matter, declare the slot's value codec 'bytes' to work on them as they are, and check the output with sptool diff", st.rule.Label(), countOf(int(rs.NonUTF8Changed), "value"), sv.Op.ID, sv.Slot, were, them))
		}
		rep.PerRule = append(rep.PerRule, rs)
	}
	for i, res := range results {
		f := sp.Files[i]
		rep.RowsIn += res.rowsIn
		rep.RowsWritten += int64(res.out.Len())
		rep.DuplicatesResolved += res.dupes
		rep.OrphanedCopies += res.orphans
		action := "copy"
		if res.changed || sp.ChangelogTree() {
			action = "rewrite"
		}
		rep.Files = append(rep.Files, &FileStats{Subtask: f.Subtask, Input: f.Rel, RowsIn: res.rowsIn, RowsOut: int64(res.out.Len()), Action: action})
		res.before.each(func(k slotKey, n int64) { before[k] += n })
		res.after.each(func(k slotKey, n int64) { after[k] += n })
	}
	keys := map[slotKey]bool{}
	for k := range before {
		keys[k] = true
	}
	for k := range after {
		keys[k] = true
	}
	for k := range keys {
		s := slotStats(k)
		s.Before, s.After = before[k], after[k]
		rep.Slots = append(rep.Slots, s)
	}
	sortSlots(rep.Slots)
	rep.VersionMap = versionChanges(sp, results)
	var joined, timersMerged int64
	for _, res := range results {
		joined, timersMerged = joined+res.blobsJoined, timersMerged+res.timersMerged
	}
	joined = min(joined, rep.DuplicatesResolved) // (they are among them)
	const restoreRule = "as clink's restore does (keyed: the later row; operator state: the greater 8-byte value)"
	joinedWhat := fmt.Sprintf("copies of timer blobs that a merge made meet, which were joined rather than resolved as a restore resolves a duplicate (one copy kept whole): the copy kept holds the timers of every blob that met there, identical ones once (%d timers in the joined blobs)", timersMerged)
	switch others := rep.DuplicatesResolved - joined; {
	case joined > 0 && others > 0:
		were := fmt.Sprintf("%d of them were", joined)
		if joined == 1 {
			were = "1 of them was one of the"
		}
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d rows had the same (op, key) as another row after the rules ran (or were stored twice): %s %s; the others were resolved %s", rep.DuplicatesResolved, were, joinedWhat, restoreRule))
	case joined > 0:
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d rows had the same (op, key) as another row after the rules ran: %s", rep.DuplicatesResolved, joinedWhat))
	case rep.DuplicatesResolved > 0:
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d rows had the same (op, key) as another row after the rules ran (or were stored twice); each was resolved %s", rep.DuplicatesResolved, restoreRule))
	}
	var blobsLost, timersLost int64
	hidden := map[hiddenBlob]int{} // files
	for _, res := range results {
		blobsLost, timersLost = blobsLost+res.timerBlobsLost, timersLost+res.timersLost
		rep.TimersMerged += res.timersMerged
		rep.Warnings = append(rep.Warnings, res.warnings...)
		for _, h := range res.hiddenLegacy {
			hidden[h]++
		}
	}
	rep.Warnings = append(rep.Warnings, hiddenLegacyWarnings(hidden)...)
	if blobsLost > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d timer blob(s) holding %d timer(s) removed as duplicates: a timer blob is one value of its operator, and a restore keeps one copy whole (the later), so the timers of the other copy do not fire after a restore (a file that stores a blob twice, or a blob that could not be read to be merged)", blobsLost, timersLost))
	}
	for i, res := range results {
		if res.unchecked {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s was not searched for keys stored twice (over %d rows not in canonical order, and more repeated keys, or smaller rows, than the search's memory bound allows): the rules acted on every stored copy, and where one dropped the copy a restore keeps, the other copy may be left, or a merge may have met every copy of a key where a restore keeps one (compare with sptool diff)", sp.Files[i].Rel, maxShadowSearchRows-1))
		}
	}
}

// finish runs the parts of the report that merge left pending in a
// goroutine, and returns a channel closed when they are done.
func (rep *Report) finish() <-chan struct{} {
	done := make(chan struct{})
	pending := rep.pending
	rep.pending = nil
	go func() {
		defer close(done)
		for _, f := range pending {
			f()
		}
	}()
	return done
}

func sortSlots(s []*SlotStats) {
	slices.SortFunc(s, func(a, b *SlotStats) int {
		if a.Op != b.Op {
			return cmp.Compare(a.Op, b.Op)
		}
		if c := bytes.Compare([]byte(a.Slot), []byte(b.Slot)); c != 0 {
			return c
		}
		// A slot named "<raw>" before the keys without a separator.
		switch {
		case a.HasSlot == b.HasSlot:
			return 0
		case a.HasSlot:
			return -1
		}
		return 1
	})
}

// versionChanges compares the job-wide version map before and after: the
// union over files (first file wins, as clink's merge keeps the first
// non-empty map).
func versionChanges(sp *savepoint.Savepoint, results []*fileResult) []VersionChange {
	before, _ := sp.JobVersions()
	var after savepoint.VersionMap
	for _, res := range results {
		if after.Len() == 0 {
			after = res.versions
		}
	}
	type k struct {
		op uint64
		t  string
	}
	render := func(e savepoint.VersionEntry) string {
		s := "v" + strconv.FormatUint(uint64(e.Version), 10)
		if e.Slot != "" {
			s += " slot " + strconv.Quote(e.Slot)
		}
		return s
	}
	all := map[k][2]*savepoint.VersionEntry{}
	for side, m := range [2]savepoint.VersionMap{before, after} {
		for _, e := range m.Entries() {
			v := all[k{e.Op, e.StateType}]
			v[side] = &e
			all[k{e.Op, e.StateType}] = v
		}
	}
	show := func(e *savepoint.VersionEntry) (string, *savepoint.VersionState) {
		if e == nil {
			return "", nil
		}
		return render(*e), e.State()
	}
	var out []VersionChange
	for key, v := range all {
		c := VersionChange{Op: key.op, StateType: key.t, StateTypeHex: savepoint.HexUnlessUTF8(key.t)}
		c.Before, c.BeforeEntry = show(v[0])
		c.After, c.AfterEntry = show(v[1])
		if c.Before != c.After {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b VersionChange) int {
		if a.Op != b.Op {
			return cmp.Compare(a.Op, b.Op)
		}
		return bytes.Compare([]byte(a.StateType), []byte(b.StateType))
	})
	return out
}

func expiredInfo(p *rules.PurgeExpiredSpec) *ExpiredInfo {
	e := &ExpiredInfo{AsOf: p.AsOf.UTC().Format("2006-01-02T15:04:05.000Z07:00"), AsOfMs: p.AsOfMs, AsOfIsNow: p.Now}
	for _, t := range p.Targets {
		e.Slots = append(e.Slots, fmt.Sprintf("op %d slot %q", t.Op, t.Slot))
	}
	return e
}

// addCounts adds the counts of b to a and returns the sum: b itself when
// a is nil (no copy; the caller owns b from then on, and may add into it).
func addCounts(a, b []int64) []int64 {
	if a == nil {
		return b
	}
	for j, n := range b {
		a[j] += n
	}
	return a
}

// purgeAudit is the erasure audit of purge rule p: rows and timers removed
// per listed key. A key counts as found when either was. Without lists of
// keys (keys.lists), only the counts of keys found and not found are
// given.
func purgeAudit(p *rules.PurgeKeysSpec, rows, timers []int64, keys keyListing) *PurgeAudit {
	timersOf := func(i int) int64 {
		if timers == nil {
			return 0
		}
		return timers[i]
	}
	found := 0
	for i, n := range rows {
		if n > 0 || timersOf(i) > 0 {
			found++
		}
	}
	a := &PurgeAudit{KeysListed: p.Len(), KeysFile: p.KeysFile, KeysDigest: p.FileDigest,
		KeysFound: found, KeysNotFound: len(rows) - found, Scope: p.Scope.String(),
		scoped: p.Scope.Op != nil || p.Scope.Slot != nil, slotScoped: p.Scope.Slot != nil}
	if keys.lists == noKeyLists {
		return a
	}
	var digest keyDigester
	if keys.lists == digestKeyLists {
		digest = newKeyDigester(keys.secret)
		if len(keys.secret) > 0 {
			sum := sha256.Sum256(keys.secret)
			a.DigestKey = hex.EncodeToString(sum[:])
		}
	}
	// Sized up front: a list of 100,000 keys grown by appends touched
	// twice the memory, and fresh pages are slow on some machines.
	a.Found, a.NotFound = make([]KeyFound, 0, found), make([]string, 0, len(rows)-found)
	prefault.Slice(a.Found) // 2.4 MB for 100,000 keys, filled at once
	prefault.Slice(a.NotFound)
	for i, n := range rows {
		key, hexKey := p.Display(i), ""
		switch {
		case keys.lists == digestKeyLists:
			key = digest.of(p, i)
		case p.KeyWidth() == 0:
			hexKey = savepoint.HexUnlessUTF8(p.Keys[i])
		}
		if t := timersOf(i); n > 0 || t > 0 {
			a.Found = append(a.Found, KeyFound{Key: key, KeyHex: hexKey, Rows: n, Timers: t})
		} else {
			a.NotFound = append(a.NotFound, key)
			if hexKey != "" {
				a.NotFoundHex = append(a.NotFoundHex, hexKey)
			}
		}
	}
	return a
}

// keyDigester names the keys of an erasure audit under Options.KeyDigests:
// by the SHA-256 of each key as listed, or by its HMAC-SHA256 under a
// secret (Options.KeyDigestKey).
type keyDigester struct {
	mac hash.Hash // nil: SHA-256 alone
	sum []byte
}

// newKeyDigester returns the digester of keys under secret (none: SHA-256
// alone).
func newKeyDigester(secret []byte) keyDigester {
	if len(secret) == 0 {
		return keyDigester{}
	}
	return keyDigester{mac: hmac.New(sha256.New, secret)}
}

// of is the audit's name of key i of p: "sha256:" and the hex SHA-256 of
// the key as listed (an integer key's decimal text, as Display gives it,
// a string key's bytes), or "hmac-sha256:" and the hex HMAC of those bytes.
func (d *keyDigester) of(p *rules.PurgeKeysSpec, i int) string {
	b := []byte(p.Keys[i])
	if p.KeyWidth() > 0 {
		b = []byte(p.Display(i))
	}
	if d.mac == nil {
		sum := sha256.Sum256(b)
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	d.mac.Reset()
	d.mac.Write(b)
	d.sum = d.mac.Sum(d.sum[:0])
	return "hmac-sha256:" + hex.EncodeToString(d.sum)
}

// CheckStateBase refuses a state base (Options.StateBase) that a
// materialisation handle cannot hold: one given as a URI
// (changelog+file:///srv/state), where a handle is a plain path,
// <base>/v<gen>/<idx>/materializations/mat-<id>.bin (format 1.7), and one
// that starts with a scheme names no file a restore finds; and one that
// holds a control character.
func CheckStateBase(base string) error {
	if scheme, ok := uriScheme(base); ok {
		return fmt.Errorf("--state-base %s: give the path the job restores from, without %s://: a materialisation handle is a plain path, <base>/v<gen>/<idx>/materializations/mat-<id>.bin (format 1.7), and one that starts with a URI scheme names no file a restore finds", base, scheme)
	}
	if strings.ContainsFunc(base, unicode.IsControl) {
		// A path may hold one, but the job's configuration is unlikely
		// to: handles written with it would name files no restore finds.
		return fmt.Errorf("--state-base %q holds a control character (a newline, a tab): give the path the job restores from as its configuration spells it", base)
	}
	return nil
}

// CheckStateBaseApart refuses, for an output of sp at out, a state base
// (Options.StateBase) that lies inside out or inside the input tree, when
// the output holds handles (a changelog+file tree): Run refuses it before
// it writes anything; a dry run given the output it would be (rescale
// --dry-run -o) checks it here.
func CheckStateBaseApart(sp *savepoint.Savepoint, base, out string) error {
	if sp.Kind == savepoint.InputFile || sp.Backend != savepoint.BackendChangelogFile {
		return nil
	}
	if err := checkStateBaseApart(base, out); err != nil {
		return err
	}
	if base != "" && strictlyInside(base, sp.Root) {
		return fmt.Errorf("--state-base %s lies inside the input tree %s: the handles name %s, which neither the input nor an output moved into its place holds, and no restore finds it; give the path of the directory that is to hold the tree's v<generation>/ directories (the input tree's own, %s, for an output that is to replace it)", base, sp.Root, handlePattern(base), sp.Root)
	}
	return nil
}

// checkStateBaseApart refuses a state base (Options.StateBase) that lies
// inside the output tree out, both taken from the working directory: its
// handles, <base>/v<gen>/<idx>/materializations/mat-<id>.bin, would name
// files under the output's own directories (out/v1/v1/0/... for a base
// of out/v1, the generation directory) that the output does not hold and
// that no move of it can make, so that the job's restore finds none.
func checkStateBaseApart(base, out string) error {
	if base == "" || !strictlyInside(base, out) {
		return nil
	}
	return fmt.Errorf("--state-base %s lies inside the output %s: the handles name %s, a file the output does not hold, and no restore finds it; give the path of the directory that is to hold the tree's v<generation>/ directories (the output itself, the default, or where the output will be moved)", base, out, handlePattern(base))
}

// strictlyInside reports whether path lies under dir, not dir itself, both
// taken from the working directory, their symbolic links resolved (see
// savepoint.PathInside): a state base reached through a link to the
// input tree or the output is inside it as much as one named plainly.
func strictlyInside(path, dir string) bool {
	inside, err := savepoint.PathInside(path, dir)
	if err != nil { // (paths the system cannot resolve: compared as named)
		p, err1 := filepath.Abs(path)
		d, err2 := filepath.Abs(dir)
		if err1 != nil || err2 != nil {
			return false
		}
		rel, err := filepath.Rel(d, p)
		return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	return inside
}

// handlePattern is the path of the handles a state base gives.
func handlePattern(base string) string {
	return filepath.Join(base, "v<gen>", "<idx>", "materializations", "mat-<id>.bin")
}

// uriScheme returns the scheme of s when s starts like a URI (scheme://,
// the scheme a letter followed by letters, digits, '+', '-' or '.', as in
// changelog+file:///srv/state), which a path given for a materialisation
// handle must not.
func uriScheme(s string) (string, bool) {
	scheme, _, ok := strings.Cut(s, "://")
	if !ok || scheme == "" {
		return "", false
	}
	for i, c := range scheme {
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return "", false
		}
	}
	return scheme, true
}
