package savepoint

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Severity ranks a validation finding.
//
//   - SeverityError: clink would refuse the input or lose state on restore
//     (a misplaced row with no owner copy, a bad sidecar, a wrong key-group
//     byte, ...). sptool validate exits 1.
//   - SeverityWarning: what real clink trees carry and clink tolerates
//     (stale copies, replicated operator rows with differing values,
//     unsorted rows, ...).
//   - SeverityInfo: facts worth knowing that need no action.
type Severity string

// The severities of a Finding.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// The stable identifiers of Validate's checks (Finding.Check). Each check's
// doc comment gives its severities.
const (
	// CheckSidecar: a file-backend payload whose integrity verdict is not
	// valid (error; a single-file input without a sidecar is info), and the
	// missing sidecars of changelog+file payloads (info).
	CheckSidecar = "sidecar"
	// CheckFormat: a payload compressed as a whole (error: clink reads only a
	// bare Arrow IPC stream), a 0-byte payload in a tree (error: the file
	// backend treats it as absent and refuses to restore the subtask), a
	// 0-byte single file (info), compressed record-batch bodies (info), a
	// 0-byte changelog+file materialisation (warning: restored as empty
	// state, though clink never writes one empty), and a payload of a tree
	// that does not decode, with OpenOptions.KeepUndecodable (error: clink's
	// reader refuses it).
	CheckFormat = "format"
	// CheckMetadata: a schema metadata key stored more than once (warning:
	// clink reads the first, apache-arrow JS the last).
	CheckMetadata = "metadata"
	// CheckTrailingBytes: bytes after the end-of-stream marker (warning),
	// and bytes inside the stream that no row holds (Snapshot.LooseBytes,
	// info).
	CheckTrailingBytes = "trailing-bytes"
	// CheckKeyGroup: a keyed row whose stored key-group byte differs from
	// KeyGroupOf(user key) (error: the key's records are routed elsewhere,
	// so the row is never read).
	CheckKeyGroup = "key-group"
	// CheckSlotName: a keyed row whose slot name contains '\n' (warning:
	// clink's KeyedState refuses such a name, so no operator can open the
	// slot; the rows are restored but unreachable).
	CheckSlotName = "slot-name"
	// CheckZeroLengthKey: a row with an empty key (info: never filtered by
	// key group and not operator state; every restore of the file keeps it).
	CheckZeroLengthKey = "zero-length-key"
	// CheckOperatorKeyByte: a row whose first key byte is 0x80-0xFE
	// (warning: restore takes it for operator state, never filtered,
	// replicated and merged, but operator code reads only keys that start
	// with 0xFF, so no operator ever reads it; format 2.1).
	CheckOperatorKeyByte = "operator-key-byte"
	// CheckMisplacedRow: a keyed row (first key byte < 128, legacy raw keys
	// included) outside its subtask's key-group range whose owner subtask
	// holds no copy (error: a narrowed restore drops it, and a chained
	// subtask, restored unfiltered, keeps it where no record of its key
	// group arrives, sections 10.1 and 10.2); one whose
	// owner's payload does not decode (warning: not checked).
	CheckMisplacedRow = "misplaced-row"
	// CheckOperatorGroups: keyed rows of an operator in the files of more
	// than one chain group (error: an operator runs in one group, whose
	// subtasks alone restore its keyed state; the rows in the others are
	// never read by it, or the groups given with --groups are wrong).
	CheckOperatorGroups = "operator-groups"
	// CheckStaleCopy: a keyed row outside its subtask's range whose owner
	// subtask holds the same (op, key) (warning: the owner's copy is the one
	// restored).
	CheckStaleCopy = "stale-copy"
	// CheckDuplicate: an (op, key) stored more than once in one file
	// (warning; the message says which copy restore keeps).
	CheckDuplicate = "duplicate"
	// CheckUnsorted: a file whose rows are not in (op, key) order (warning,
	// once per file: clink reads rows in any order).
	CheckUnsorted = "unsorted"
	// CheckOperatorDivergence: an operator-state key held by several
	// subtask files with differing values. Warning when a value is not 8
	// bytes (clink picks in directory order, section 10.4); info when all
	// are 8 bytes (greater-wins) and the key is not a fixed-key source
	// offset.
	CheckOperatorDivergence = "operator-divergence"
	// CheckOffsetDivergence: a fixed-key source offset (…_source_offset__)
	// with differing 8-byte values (warning: greater-wins hands every
	// subtask the furthest position any of them reached, section 10.4).
	CheckOffsetDivergence = "offset-divergence"
	// CheckOperatorReplica: how many operator-state keys are replicated over
	// several subtask files (warning, one per tree, as the contract lists
	// them: what real trees carry and clink tolerates; section 10.3).
	CheckOperatorReplica = "operator-replica"
	// CheckVersionMapDisagreement: files of one tree carrying different
	// version maps, or some none (warning, section 10.6).
	CheckVersionMapDisagreement = "version-map-disagreement"
	// CheckVersionMapSlot: a version-map entry whose slot holds a carriage
	// return (warning, section 4.2: a 4-field line ending in CRLF keeps it
	// in the slot, and the migration then matches no row of the slot named
	// without it).
	CheckVersionMapSlot = "version-map-slot"
	// CheckCompleted: the COMPLETED marker. A listed subtask without a
	// directory is an error; a subtask directory not listed, a marker
	// whose checkpoint or generation differs from the tree's, an empty
	// subtasks= line, or a marker of another checkpoint that does not
	// parse (left unread: Savepoint.UnreadMarkers), a warning; no marker,
	// or no subtasks= line, info.
	CheckCompleted = "completed"
	// CheckGroups: placement errors (misplaced-row, operator-groups) found
	// under chain groups inferred from the rows (info, naming them: a stray
	// row can make the inference join groups).
	CheckGroups = "groups"
	// CheckCheckpointID: a tree of checkpoint 0 (error: clink takes a
	// restore_checkpoint_id of 0 for "no restore", and the job starts
	// without state, section 5.3).
	CheckCheckpointID = "checkpoint-id"
	// CheckSubtasks: subtasks below the tree's highest with no directory
	// of the checkpoint (error, one per tree: a job restoring at this
	// layout refuses to start them, section 5.3; no chain group is
	// inferred across them, and a rescale refuses the tree).
	CheckSubtasks = "subtasks"
	// CheckChangelogOnFileBackend: a changelog payload stored as
	// checkpoint-<id>.snap in a file-backend tree (error: clink's file
	// backend refuses it, its state tools read it).
	CheckChangelogOnFileBackend = "changelog-on-file-backend"
	// CheckCanonicalOnChangelogBackend: a canonical payload stored as
	// changelog-<id>.snap in a changelog+file tree (error: that backend
	// restores it as a changelog blob, which has no materialisation row,
	// and throws; section 1.7). apply writes it back as a changelog.
	CheckCanonicalOnChangelogBackend = "canonical-on-changelog-backend"
	// CheckChangelogMode: a changelog materialisation row of the wrong mode
	// for the tree's backend: row_kind 0 (inline) in a changelog+file tree
	// (error: the restore throws) or row_kind 3 (external handle) in a
	// file-backend tree (warning).
	CheckChangelogMode = "changelog-mode"
	// CheckUnreferencedMaterialization: a materializations/mat-<id>.bin no
	// changelog of the checkpoint references (info: left over; clink's
	// restore ignores it).
	CheckUnreferencedMaterialization = "unreferenced-materialization"
	// CheckMaterializationHandle: a changelog whose materialisation handle
	// leads into another subtask's directory (warning: a restore reads the
	// file there, filtered to the reading subtask's key groups; clink
	// writes each subtask's materialisation in its own directory).
	CheckMaterializationHandle = "materialization-handle"
	// CheckParallelism: with ValidateOptions.Parallelism M, a chain group
	// whose file count is not M, or a keyed row outside its subtask's range
	// at M with no copy in the file that owns it at M (error); a row outside
	// its range at M whose owner-at-M file holds a copy, or does not decode
	// (warning: not checked). For each
	// timer blob of an operator a chain group runs: timers that a restore at
	// the tree's layout fires and one at M does not (error: lost), or the
	// reverse (warning: stale copies that would fire again).
	CheckParallelism = "parallelism"
	// CheckTimers: the timer blobs (0xFF "__clink_timers…", format 3.4, and
	// the legacy unprefixed "__clink_timers…" raw key that
	// get_operator_state falls back to, format 2.1: IsTimerBlob, as the
	// purge takes them) of the operators a chain group runs (the others'
	// are frozen copies, section 10.3). A blob that does not decode
	// (error); timers outside its subtask's key-group range that no restore
	// fires (error: the blob the owner restores, its own or, without one,
	// the last, lacks them; a narrowed restore drops them, a chained
	// subtask, restored unfiltered, fires them away from their key's state,
	// section 10.2); such timers that the owner fires from the blob it
	// restores (warning: a chained subtask fires them twice), another blob
	// or this one, which an owner without a blob of its own takes through
	// the union; a blob of an
	// operator no group of a multi-group tree holds keyed rows of (info:
	// not checked); a chain group one of whose payloads does not decode
	// (info: its timers not checked). A legacy blob is a raw row: a restore
	// filters it as key group 95 and never unions it, so only the copy of
	// the subtask owning key group 95 fires (the timers of that subtask's
	// range), and the timers of another subtask's copy are lost (error) or
	// fired from that copy too (warning). One finding per blob and kind,
	// with counts.
	CheckTimers = "timers"
	// CheckUnreadable: the input could not be opened at all (error): a
	// path that does not exist or cannot be read, a single file that does
	// not decode, a tree whose layout cannot be made out. Validate never
	// reports it, as it is given a savepoint already open; UnreadableReport
	// makes the report that says it, so that validate --json prints a
	// report for every input it is given (the command still exits 2).
	CheckUnreadable = "unreadable"
)

// UnreadableReport returns the report of an input at path that could not be
// opened, err being why: one error of CheckUnreadable, whose File is path
// as given (there is no savepoint root to make it relative to).
func UnreadableReport(path string, err error) *Report {
	return &Report{Findings: []Finding{{Severity: SeverityError, Check: CheckUnreadable, File: path, Subtask: -1, Row: -1, Message: err.Error()}}}
}

// DefaultFindingLimit is how many findings of one check, severity and file
// Validate lists before summarising the rest in one finding (see
// ValidateOptions.Limit).
const DefaultFindingLimit = 20

// ValidateOptions control Validate.
type ValidateOptions struct {
	// Parallelism, when > 0, also checks the input against a job at that
	// parallelism resubmitted from it (docs/clink-format.md section 6.2: subtask
	// i reads only its own file v<G>/<i> and filters it by its new range).
	// Subtask i of the tree is taken as new subtask i. Every chain group is
	// checked on its own: its file count must be Parallelism and every keyed
	// row of its k-th file (k = subtask - the group's first subtask) must
	// lie in KeyGroupRangeForSubtask(k, Parallelism). For a multi-group tree
	// this therefore asks "can every chain group run at this parallelism";
	// a group already at it is covered by the misplaced-row and stale-copy
	// checks and not checked twice. A single-file input is taken as
	// subtask 0. 0 (or less) skips the check; above MaxParallelism it is
	// an error finding.
	Parallelism int
	// Limit is how many findings of one (check, severity, file) are listed
	// before the rest are summarised in one finding carrying their count in
	// Omitted. 0 means DefaultFindingLimit; a negative value lists all.
	Limit int
}

// Finding is one result of Validate.
//
// Its JSON form is a stable interface:
//
//	{"severity": "error"|"warning"|"info",
//	 "check":    stable identifier (the Check* constants),
//	 "file":     the payload path relative to the savepoint root ("" for a finding about the whole tree;
//	             for check "unreadable", the input's path as given, see UnreadableReport),
//	 "subtask":  the global subtask index (-1 for a single-file input or a tree-level finding),
//	 "row":      the row's index in the file's rows (-1 when the finding is not about one row),
//	 "replayed": true when the row indexes a changelog payload's replayed rows (absent otherwise),
//	 "op":       the operator id of the row ("row" 0 or more) or of the key ("key" present); otherwise 0,
//	             which then names no operator (a finding of operator 0 always has a row or a key),
//	 "key":      the stored key in lowercase hex (absent when not about one key),
//	 "message":  a human-readable explanation,
//	 "omitted":  on a summary finding, how many further findings of this check, severity and file were not listed (absent otherwise)}
//
// Row indexes count a canonical file's rows in stream order (batches
// concatenated, duplicates kept); for a changelog file they index the
// replayed rows in canonical order.
type Finding struct {
	Severity Severity
	Check    string
	File     string
	Subtask  int
	Row      int
	Op       uint64
	Key      []byte
	Message  string
	// Replayed reports that Row indexes a changelog payload's replayed
	// rows, not its stream's (the text says "replayed row").
	Replayed bool
	// Omitted is set on a summary finding: the number of findings of this
	// check, severity and file that were not listed (see ValidateOptions.Limit).
	Omitted int
}

type findingJSON struct {
	Severity Severity `json:"severity"`
	Check    string   `json:"check"`
	File     string   `json:"file"`
	Subtask  int      `json:"subtask"`
	Row      int      `json:"row"`
	Replayed bool     `json:"replayed,omitempty"`
	Op       uint64   `json:"op"`
	Key      *string  `json:"key,omitempty"`
	Message  string   `json:"message"`
	Omitted  int      `json:"omitted,omitempty"`
}

// MarshalJSON writes the documented JSON form (the key in lowercase hex).
func (f Finding) MarshalJSON() ([]byte, error) {
	j := findingJSON{f.Severity, f.Check, f.File, f.Subtask, f.Row, f.Replayed, f.Op, nil, f.Message, f.Omitted}
	if f.Key != nil {
		h := hex.EncodeToString(f.Key)
		j.Key = &h
	}
	return marshalJSONNoEscape(j)
}

// marshalJSONNoEscape marshals v without HTML escaping ("<raw>" stays
// readable); an enclosing encoder still escapes if it is asked to.
func marshalJSONNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (f *Finding) UnmarshalJSON(b []byte) error {
	var j findingJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*f = Finding{Severity: j.Severity, Check: j.Check, File: j.File, Subtask: j.Subtask, Row: j.Row, Replayed: j.Replayed, Op: j.Op, Message: j.Message, Omitted: j.Omitted}
	if j.Key != nil {
		k, err := hex.DecodeString(*j.Key)
		if err != nil {
			return fmt.Errorf("finding key: %w", err)
		}
		f.Key = k
	}
	return nil
}

// count is how many problems the finding stands for.
func (f Finding) count() int {
	if f.Omitted > 0 {
		return f.Omitted
	}
	return 1
}

// Report is the result of Validate: every finding, in a stable order (the
// tree-level findings first, then per file in subtask order: file-level
// findings, then by row, then by check; summaries of omitted findings last).
//
// Its JSON form is {"errors": n, "warnings": n, "infos": n, "findings":
// [Finding...]} where the counts include omitted findings.
type Report struct {
	Findings []Finding `json:"findings"`
}

// MarshalJSON writes the documented JSON form.
func (r Report) MarshalJSON() ([]byte, error) {
	fs := r.Findings
	if fs == nil {
		fs = []Finding{}
	}
	return marshalJSONNoEscape(struct {
		Errors   int       `json:"errors"`
		Warnings int       `json:"warnings"`
		Infos    int       `json:"infos"`
		Findings []Finding `json:"findings"`
	}{r.Errors(), r.Warnings(), r.Infos(), fs})
}

func (r *Report) countOf(s Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == s {
			n += f.count()
		}
	}
	return n
}

// Errors returns the number of errors, omitted ones included.
func (r *Report) Errors() int { return r.countOf(SeverityError) }

// Warnings returns the number of warnings, omitted ones included.
func (r *Report) Warnings() int { return r.countOf(SeverityWarning) }

// Infos returns the number of infos, omitted ones included.
func (r *Report) Infos() int { return r.countOf(SeverityInfo) }

// WriteText renders the report for a terminal: the errors, the warnings
// and the infos listed apart, each finding on one line as
// "<file> row <n> [<check>] <key>: <message>" ("tree" for findings about the
// whole input), then a count line.
func (r *Report) WriteText(w io.Writer) error {
	var b bytes.Buffer
	for _, sev := range []Severity{SeverityError, SeverityWarning, SeverityInfo} {
		var lines []string
		for _, f := range r.Findings {
			if f.Severity != sev {
				continue
			}
			where := "tree"
			if f.File != "" {
				where = ShowName(f.File)
			}
			if f.Row >= 0 && f.Replayed {
				where += " replayed row " + strconv.Itoa(f.Row)
			} else if f.Row >= 0 {
				where += " row " + strconv.Itoa(f.Row)
			}
			what := ""
			if f.Key != nil && f.Row >= 0 {
				what = fmt.Sprintf(" op %d key %s", f.Op, RenderKey(f.Key))
			}
			lines = append(lines, fmt.Sprintf("  %s [%s]%s: %s\n", where, f.Check, what, f.Message))
		}
		if len(lines) == 0 {
			continue
		}
		title := map[Severity]string{SeverityError: "Errors", SeverityWarning: "Warnings", SeverityInfo: "Info"}[sev]
		fmt.Fprintf(&b, "%s (%d)\n", title, r.countOf(sev))
		for _, l := range lines {
			b.WriteString(l)
		}
		b.WriteByte('\n')
	}
	e, wn, in := r.Errors(), r.Warnings(), r.Infos()
	verdict := "valid"
	if e > 0 {
		verdict = "INVALID"
	}
	fmt.Fprintf(&b, "%s: %d error%s, %d warning%s, %d info%s\n", verdict, e, plural(e, "", "s"), wn, plural(wn, "", "s"), in, plural(in, "", "s"))
	_, err := w.Write(b.Bytes())
	return err
}

// ByCheck returns the listed findings of one check, in report order.
func (r *Report) ByCheck(check string) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Check == check {
			out = append(out, f)
		}
	}
	return out
}

// Validate runs every contract check of docs/clink-format.md over an opened
// savepoint and returns the findings (see the Check* constants for what is
// checked and at which severity). Errors mean clink would refuse the input
// or lose state on restore; warnings are what real clink trees carry and
// clink tolerates.
//
// Findings are capped: at most opts.Limit (default 20) per check, severity
// and file are listed, then one summary finding carries the count of the
// rest, so a tree with millions of bad rows gives a short report while
// Errors and Warnings still count every problem.
//
// Row placement is judged with sp.Groups (given to Open or inferred): a
// keyed row of global subtask i belongs in Group.Range(i) of i's chain
// group, and its owner is Group.Owner(kg) within that group. A single-file
// input has no placement to check.
//
// Validate reads the rows of sp; those of a savepoint opened with
// OpenOptions.Columnar are memory-mapped, and a file cut short meanwhile
// faults: call Validate under Guard, which turns the fault into an
// ErrInputChanged error (Validate itself returns none). sp must be non-nil,
// as for the methods of Savepoint.
func Validate(sp *Savepoint, opts ValidateOptions) *Report {
	sp.mustBeOpen()
	v := &validator{sp: sp, opts: opts, limit: opts.Limit, idx: map[*File]*valIndexEntry{}, counts: map[valCapKey]int{}}
	if v.limit == 0 {
		v.limit = DefaultFindingLimit
	}
	v.run()
	return v.report()
}

type valCapKey struct {
	check, file string
	sev         Severity
	subtask     int
}

type validator struct {
	sp    *Savepoint
	opts  ValidateOptions
	limit int

	// Files are checked at once: mu guards findings, counts and idx.
	mu       sync.Mutex
	findings []Finding
	counts   map[valCapKey]int
	idx      map[*File]*valIndexEntry
}

// valIndexEntry is a file's row index, built once by whichever check needs
// it first.
type valIndexEntry struct {
	once sync.Once
	ix   *valRowIndex
}

func (v *validator) isTree() bool { return v.sp.Kind != InputFile }

// add records a finding unless its (check, severity, file) is over the cap.
func (v *validator) add(f Finding) {
	v.mu.Lock()
	defer v.mu.Unlock()
	k := valCapKey{f.Check, f.File, f.Severity, f.Subtask}
	v.counts[k]++
	if v.limit > 0 && v.counts[k] > v.limit {
		return
	}
	v.findings = append(v.findings, f)
}

func (v *validator) fileFinding(f *File, sev Severity, check, msg string) {
	v.add(Finding{Severity: sev, Check: check, File: f.Rel, Subtask: f.Subtask, Row: -1, Message: msg})
}

func (v *validator) rowFinding(f *File, i int, sev Severity, check, msg string) {
	r := f.Snapshot.NewCursor().Row(i)
	v.add(Finding{Severity: sev, Check: check, File: f.Rel, Subtask: f.Subtask, Row: i, Op: r.Op, Key: r.Key, Message: msg, Replayed: f.Snapshot.Variant == Changelog})
}

func (v *validator) treeFinding(sev Severity, check string, op uint64, key []byte, msg string) {
	v.add(Finding{Severity: sev, Check: check, Subtask: -1, Row: -1, Op: op, Key: key, Message: msg})
}

func (v *validator) report() *Report {
	for k, n := range v.counts {
		if v.limit > 0 && n > v.limit {
			v.findings = append(v.findings, Finding{
				Severity: k.sev, Check: k.check, File: k.file, Subtask: k.subtask, Row: -1, Omitted: n - v.limit,
				Message: fmt.Sprintf("%d more %s %s finding%s not listed (at most %d per check and file)", n-v.limit, k.check, k.sev, plural(n-v.limit, "", "s"), v.limit),
			})
		}
	}
	sevRank := map[Severity]int{SeverityError: 0, SeverityWarning: 1, SeverityInfo: 2}
	slices.SortStableFunc(v.findings, func(a, b Finding) int {
		if c := boolCmp(a.File != "", b.File != ""); c != 0 {
			return c
		}
		if a.Subtask != b.Subtask {
			return a.Subtask - b.Subtask
		}
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		if c := boolCmp(a.Omitted > 0, b.Omitted > 0); c != 0 {
			return c
		}
		if a.Row != b.Row {
			return a.Row - b.Row
		}
		if c := strings.Compare(a.Check, b.Check); c != 0 {
			return c
		}
		if c := sevRank[a.Severity] - sevRank[b.Severity]; c != 0 {
			return c
		}
		if a.Op != b.Op {
			return cmp.Compare(a.Op, b.Op)
		}
		if c := bytes.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return &Report{Findings: v.findings}
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

func (v *validator) run() {
	// Files are checked at once, one goroutine per CPU. Each file's
	// findings are added in its own order, and the per-file caps count
	// them per file, so the report is the one of a pass file after file.
	ForEach(len(v.sp.Files), func(i int) {
		v.checkFileLevel(v.sp.Files[i])
		v.checkRows(v.sp.Files[i])
	})
	if v.isTree() {
		v.checkSidecarlessChangelogs()
		perFile, legacyTimers, keyedOps := v.operatorRows()
		v.checkOperatorGroups(keyedOps)
		v.checkOperatorRows(perFile, keyedOps)
		v.checkTimers(perFile, legacyTimers, keyedOps)
		v.checkVersionMaps()
		v.checkCheckpointID()
		v.checkCompleted()
		v.checkSubtasks()
		v.checkUnreferencedMaterializations()
		v.noteInferredGroups()
	}
	if v.opts.Parallelism > 0 {
		v.checkParallelism(v.opts.Parallelism)
	}
}

// missingNote is " (its payload is missing)" when f is Missing, else "".
func missingNote(f *File) string {
	if f != nil && f.Missing {
		return " (its payload is missing)"
	}
	return ""
}

// checkMissing reports a payload that is missing (File.Missing), and a
// sidecar left where it would be.
func (v *validator) checkMissing(f *File) {
	restore := fmt.Sprintf("a job restoring this tree refuses to start subtask %d (section 5.3) unless CLINK_ALLOW_MISSING_RESTORE_STATE is set, which starts it with empty state", f.Subtask)
	if v.sp.Backend == BackendChangelogFile {
		restore = fmt.Sprintf("a job restoring this tree fails on subtask %d (\"'changelog+file' restore requested but snapshot not found\", section 1.7), whatever CLINK_ALLOW_MISSING_RESTORE_STATE says", f.Subtask)
	}
	v.fileFinding(f, SeverityError, CheckSubtasks, fmt.Sprintf("payload missing (%s): %s; the checks of this report that would look for its rows say so", undecodableReason(f), restore))
	if _, err := os.Lstat(f.Path + SidecarSuffix); err == nil {
		v.fileFinding(f, SeverityWarning, CheckSidecar, fmt.Sprintf("%s lies here without its payload: a payload removed, or never renamed into place?", filepath.Base(f.Path)+SidecarSuffix))
	}
}

// checkFileLevel covers the sidecar, the container and the metadata of one file.
func (v *validator) checkFileLevel(f *File) {
	sp := v.sp
	s := f.Snapshot
	if f.Missing {
		v.checkMissing(f)
		return
	}
	// Sidecar.
	if sp.Kind == InputFile {
		switch {
		case f.Verdict == VerdictValid:
		case f.noSidecar():
			if left, aside := sidecarLeftover(f.Path, f.Size, f.CRC32C); aside {
				v.fileFinding(f, SeverityError, CheckSidecar, fmt.Sprintf("no .meta sidecar beside the file, but %s, which describes it, is: a --force run replacing this output moved its sidecar aside and was interrupted; rename it back to %s to have this output whole again, or run that command again", filepath.Base(left), filepath.Base(f.Path)+SidecarSuffix))
				break
			} else if left != "" {
				v.fileFinding(f, SeverityError, CheckSidecar, fmt.Sprintf("no .meta sidecar beside the file, but %s is: a run that published this payload was interrupted before its sidecar, so the file is not a finished output (run it again)", filepath.Base(left)))
				break
			}
			if s != nil && s.Variant == Changelog {
				v.fileFinding(f, SeverityInfo, CheckSidecar, "no .meta sidecar beside the file, "+changelogWritesNoSidecar)
				break
			}
			v.fileFinding(f, SeverityInfo, CheckSidecar, "no .meta sidecar beside the file: clink's file backend refuses a payload without one (until `clink checkpoint-verify --repair` mints it); sptool writes one beside every such file it outputs")
		case f.Verdict != "":
			v.fileFinding(f, SeverityError, CheckSidecar, fmt.Sprintf("sidecar verdict %s: %s", f.Verdict, f.VerdictDetail))
		}
	} else if sp.Backend == BackendFile && f.Verdict != "" && f.Verdict != VerdictValid {
		// (No verdict: a payload that is no regular file, whose finding
		// follows.)
		refuses := "; clink's restore refuses this payload"
		if f.sidecarUnread {
			refuses = "" // (the detail says what clink may do)
		}
		v.fileFinding(f, SeverityError, CheckSidecar, fmt.Sprintf("sidecar verdict %s: %s%s", f.Verdict, f.VerdictDetail, refuses))
	} else if f.Verdict != "" && f.Verdict != VerdictValid && f.Sidecar == nil {
		v.fileFinding(f, SeverityWarning, CheckSidecar, fmt.Sprintf("a .meta sidecar lies beside this changelog payload and cannot be read (verdict %s: %s): clink's changelog+file backend writes none and does not read it on restore", f.Verdict, f.VerdictDetail))
	} else if f.Verdict != "" && f.Verdict != VerdictValid {
		v.fileFinding(f, SeverityWarning, CheckSidecar, fmt.Sprintf("a .meta sidecar lies beside this changelog payload and disagrees with it (verdict %s: %s): clink's changelog+file backend writes none and does not read it on restore, but the payload may have changed since the sidecar was written", f.Verdict, f.VerdictDetail))
	}
	// Container.
	if f.Compression != "" {
		v.fileFinding(f, SeverityError, CheckFormat, fmt.Sprintf("the payload is %s-compressed as a whole: clink reads only a bare Arrow IPC stream and refuses it (sptool reads it; decompress it, or write it with sptool)", f.Compression))
	}
	if f.Undecodable != nil {
		msg := fmt.Sprintf("clink's reader refuses this payload, and its restore of subtask %d with it: %s; its rows are not read, so no check of this report sees them (those that would look for them say so)", f.Subtask, undecodableReason(f))
		if errors.Is(f.Undecodable, ErrOutsideTree) {
			switch {
			case v.isTree():
				msg = fmt.Sprintf("sptool does not read this payload: %s; clink opens the handle's path as written and may restore subtask %d from it, but no command of sptool reads or rewrites the tree as it is (copy the materialisation into the subtask's own materializations/ directory); its rows are not read, so no check of this report sees them (those that would look for them say so)", undecodableReason(f), f.Subtask)
			case errors.Is(f.Undecodable, errNoTree):
				// (A file has no subtask, and the reason says to give
				// the tree.)
				msg = fmt.Sprintf("sptool does not read this payload: %s; its rows are not read, so no check of this report sees them", undecodableReason(f))
			default:
				msg = fmt.Sprintf("sptool does not read this payload: %s; clink opens the handle's path as written and may restore from it, but no command of sptool reads or rewrites the file as it is (copy the materialisation into its subtask directory's materializations/ directory); its rows are not read, so no check of this report sees them", undecodableReason(f))
			}
		} else if errors.Is(f.Undecodable, ErrNoEndOfStream) {
			msg = fmt.Sprintf("%s: sptool refuses it as truncated, though clink's reader (Arrow C++'s) takes a stream ending between two messages as complete and restores subtask %d with the rows before the end, which may have lost the batches after it (clink's writer always writes the marker); its rows are not read, so no check of this report sees them (those that would look for them say so)", undecodableReason(f), f.Subtask)
			if !v.isTree() {
				msg = fmt.Sprintf("%s: sptool refuses it as truncated, though clink's reader (Arrow C++'s) takes a stream ending between two messages as complete, with the rows before the end, which may have lost the batches after it (clink's writer always writes the marker); its rows are not read, so no check of this report sees them", undecodableReason(f))
			}
		} else if !v.isTree() {
			msg = fmt.Sprintf("clink's reader refuses this payload, and a restore of it: %s; its rows are not read, so no check of this report sees them", undecodableReason(f))
		}
		if sp.GroupsInferred && len(sp.Files) > 1 {
			msg += ", and the tree's chain groups were inferred without them (--groups gives them)"
		}
		v.fileFinding(f, SeverityError, CheckFormat, msg)
	}
	if s == nil {
		return
	}
	switch {
	case s.Variant == Empty && f.Compression != CompressNone && v.isTree():
		// clink refuses the compressed payload itself (the finding above).
		v.fileFinding(f, SeverityInfo, CheckFormat, fmt.Sprintf("the %s-compressed payload (%d bytes) decompresses to 0 bytes: decompressed, it is a 0-byte payload, which clink's restore takes for an absent one (section 5.3); sptool's writers refuse it as they refuse that, unless told the state is meant to be empty", f.Compression, f.Size))
	case s.Variant == Empty && f.Compression != CompressNone:
		v.fileFinding(f, SeverityInfo, CheckFormat, fmt.Sprintf("the %s-compressed payload (%d bytes) decompresses to 0 bytes, which sptool reads as empty state", f.Compression, f.Size))
	case s.Variant == Empty && v.isTree() && v.sp.ChangelogTree():
		v.fileFinding(f, SeverityError, CheckFormat, fmt.Sprintf("0-byte changelog: it holds neither the handle of subtask %d's materialised state nor its log (section 1.7): a file cut short?", f.Subtask))
	case s.Variant == Empty && v.isTree():
		v.fileFinding(f, SeverityError, CheckFormat, fmt.Sprintf("0-byte payload: clink's restore treats it as absent and refuses to restore subtask %d with empty state (section 5.3) unless CLINK_ALLOW_MISSING_RESTORE_STATE is set; write a zero-row stream instead", f.Subtask))
	case s.Variant == Empty:
		v.fileFinding(f, SeverityInfo, CheckFormat, "0-byte file: empty state (clink accepts it as such everywhere, but its file backend treats a 0-byte checkpoint payload as absent)")
	}
	for i, m := range f.MaterializationInfo {
		if m.Size == 0 && i < len(f.Materializations) {
			v.fileFinding(f, SeverityWarning, CheckFormat, fmt.Sprintf("materialisation %s is 0 bytes: the subtask restores no materialised state from it (clink reads empty bytes as empty state), though clink's writer never writes one empty (a zero-row stream at least): a file cut short?", ShowName(f.Materializations[i])))
		}
	}
	if s.Compression != "" {
		v.fileFinding(f, SeverityInfo, CheckFormat, fmt.Sprintf("record-batch bodies are %s-compressed: clink's writer never compresses them, and its reader needs an Arrow build with that codec", s.Compression))
	}
	if s.Hidden.Found() {
		v.fileFinding(f, SeverityError, CheckTrailingBytes, fmt.Sprintf("the %d byte%s after the end-of-stream marker %s", s.TrailingBytes, plural(int(s.TrailingBytes), "", "s"), s.Hidden))
	} else if s.TrailingBytes > 0 {
		v.fileFinding(f, SeverityWarning, CheckTrailingBytes, fmt.Sprintf("%d byte%s after the end-of-stream marker: clink ignores them; sptool's apply and rescale leave them out of their output (the file is written anew, not copied)", s.TrailingBytes, plural(int(s.TrailingBytes), "", "s")))
	}
	if s.LooseBytes > 0 {
		v.fileFinding(f, SeverityInfo, CheckTrailingBytes, fmt.Sprintf("%d byte%s that no row holds and that are not zero padding (in a validity bitmap, past a column's values or offsets, between buffers, or in custom metadata): clink's writer leaves none, and its reader skips them; an erasure (purge_keys) writes the file anew, where other runs copy a file no rule changed as it is", s.LooseBytes, plural(int(s.LooseBytes), "", "s")))
	}
	seen := map[string]int{}
	var order []string
	for _, e := range s.Metadata {
		if seen[e.Key] == 0 {
			order = append(order, e.Key)
		}
		seen[e.Key]++
	}
	for _, k := range order {
		if n := seen[k]; n > 1 {
			v.fileFinding(f, SeverityWarning, CheckMetadata, fmt.Sprintf("schema metadata key %q appears %d times: clink and arrow-go read the first value, apache-arrow JS the last; sptool keeps the first", k, n))
		}
	}
	for _, e := range s.Versions.Entries() {
		if strings.ContainsRune(e.Slot, '\r') {
			v.fileFinding(f, SeverityWarning, CheckVersionMapSlot, fmt.Sprintf("version-map entry %d|%s|%d binds slot %q, which holds a carriage return (a map written with CRLF line ends?): clink keeps it as part of the slot name (section 4.2), so a migration of that state type at restore matches no row of slot %q", e.Op, e.StateType, e.Version, e.Slot, strings.ReplaceAll(e.Slot, "\r", "")))
		}
	}
	if s.Variant == Canonical && sp.ChangelogTree() {
		v.fileFinding(f, SeverityError, CheckCanonicalOnChangelogBackend, fmt.Sprintf("canonical payload stored as %s: clink's changelog+file backend restores it as a changelog blob, which needs row 0 to be a materialisation row (row_kind 0 or 3), and throws \"Snapshot is malformed\" (section 1.7); apply writes it back as a changelog", filepath.Base(f.Rel)))
	}
	if s.Variant == Changelog && s.Changelog != nil && s.Changelog.OtherKinds > 0 {
		cl := s.Changelog
		rows := plural(cl.OtherKinds, "1 log row has", fmt.Sprintf("%d log rows have", cl.OtherKinds))
		v.fileFinding(f, SeverityWarning, CheckFormat, fmt.Sprintf("%s a row_kind clink does not write (not 1, a put, or 2, an erase; the first: %d): clink's restore replays any such row as a put without a check (section 1.7), as sptool does: a corrupt kind byte becomes a write of its row", rows, cl.OtherKind))
	}
	if cl := s.Changelog; s.Variant == Changelog && cl != nil && cl.mixedModes() {
		inline, handle := cl.modePlaces()
		v.fileFinding(f, SeverityError, CheckChangelogMode, fmt.Sprintf("%s holds an inline materialisation (row_kind 0) and %s an external materialisation handle (row_kind 3): clink's restore throws on one or the other whatever its store, with an external store on the inline one, without one on the handle (section 1.7), and so do its state tools", inline, handle))
	}
	if s.Variant == Changelog && s.Changelog != nil && s.Changelog.Blobs == 0 {
		v.fileFinding(f, SeverityWarning, CheckFormat, "a CLMB frame of no blob: clink's restore reads no blob from it and restores empty state without a word, though its writer frames two blobs or more (a scale-down's parents) and stores one alone unframed: a damaged or cut-short file?")
	}
	// Changelog payloads. A lone file's backend is known from its name
	// only when it is changelog-<id>.snap: a checkpoint-<id>.snap outside
	// a tree may be any tool's export.
	if s.Variant == Changelog && s.Changelog != nil && (v.isTree() || sp.Backend == BackendChangelogFile) {
		cl := s.Changelog
		if sp.Backend == BackendFile {
			msg := fmt.Sprintf("changelog payload stored as %s: clink's file backend refuses changelog payloads under checkpoint-<id>.snap (section 1.7: its restore expects the three-column schema); its state tools read them", filepath.Base(f.Rel))
			if cl.Blobs > 1 {
				msg += fmt.Sprintf(" except when CLMB-framed, as this one is (%d blobs): canonicalise needs a single IPC stream", cl.Blobs)
			}
			v.fileFinding(f, SeverityError, CheckChangelogOnFileBackend, msg)
		}
		if cl.mixedModes() {
			return // (said above, whatever the backend)
		}
		for i, inBlob := range cl.InBlob {
			where := cl.place(i)
			switch {
			case inBlob && sp.Backend == BackendChangelogFile:
				v.fileFinding(f, SeverityError, CheckChangelogMode, where+" holds an inline materialisation (row_kind 0), but the changelog+file backend restores with an external materialisation store and throws on this mode mismatch (section 1.7)")
			case !inBlob && sp.Backend == BackendFile:
				v.fileFinding(f, SeverityWarning, CheckChangelogMode, where+" is an external materialisation handle (row_kind 3), the changelog+file backend's form: an in-memory changelog restore (no external store) throws on this mode mismatch, and clink's tools resolve it only with --materialisation-store")
			}
		}
	}
}

// ModeConflict says why clink's restore of this changelog, a payload of
// a tree of the given backend, throws on its materialisation rows (format
// 1.7): it holds both an inline materialisation (row_kind 0) and an
// external handle (row_kind 3), whatever the backend, or an inline one
// where the changelog+file backend restores it with an external store.
// "" when it does not.
func (c *ChangelogInfo) ModeConflict(backend Backend) string {
	if c == nil {
		return ""
	}
	if c.mixedModes() {
		inline, handle := c.modePlaces()
		return fmt.Sprintf("%s holds an inline materialisation (row_kind 0) and %s an external handle (row_kind 3), and every restore throws on one of them", inline, handle)
	}
	if i := slices.Index(c.InBlob, true); i >= 0 && backend == BackendChangelogFile {
		return fmt.Sprintf("%s holds an inline materialisation (row_kind 0), which the changelog+file backend's restore throws on", c.place(i))
	}
	return ""
}

// mixedModes reports whether the changelog holds both an inline
// materialisation (row_kind 0) and an external handle (row_kind 3).
func (c *ChangelogInfo) mixedModes() bool {
	return slices.Contains(c.InBlob, true) && slices.Contains(c.InBlob, false)
}

// modePlaces names the changelog's first inline materialisation row and
// its first external handle row (see place), of a changelog of mixed
// modes.
func (c *ChangelogInfo) modePlaces() (inline, handle string) {
	return c.place(slices.Index(c.InBlob, true)), c.place(slices.Index(c.InBlob, false))
}

// place names materialisation row i of the changelog: "row R", and its
// blob when the file is CLMB-framed ("row R of blob B", both from 0).
func (c *ChangelogInfo) place(i int) string {
	if i >= len(c.places) {
		return "a materialisation row" // (not made by replayChangelog)
	}
	p := c.places[i]
	if c.Blobs > 1 {
		return fmt.Sprintf("row %d of blob %d", p.row, p.blob)
	}
	return fmt.Sprintf("row %d", p.row)
}

// unreadCopies is what the operator-row findings add when payloads of the
// tree are missing or do not decode: their copies are not known, and may
// change the merge they state.
func (v *validator) unreadCopies() string {
	bad := v.sp.undecodable()
	if len(bad) == 0 {
		return ""
	}
	subs := make([]int, len(bad))
	for i, f := range bad {
		subs[i] = f.Subtask
	}
	return fmt.Sprintf("; not counted: the copies of %s %s, whose payload%s %s", plural(len(subs), "subtask", "subtasks"), JoinInts(subs, ","), plural(len(subs), "", "s"), notReadAll(bad))
}

// notReadAll says why the rows of files, each with Undecodable set, are
// not read: "is missing", "do not decode", "are missing or do not
// decode".
func notReadAll(files []*File) string {
	var missing, undecodable bool
	for _, f := range files {
		missing = missing || f.Missing
		undecodable = undecodable || !f.Missing
	}
	return whyNotRead(missing, undecodable, len(files) > 1)
}

// whyNotRead says why payloads are not read, some missing, some not
// decoding, one (many false) or several: "is missing", "do not decode",
// "are missing or do not decode".
func whyNotRead(missing, undecodable, many bool) string {
	verb := map[bool][2]string{false: {"is", "does"}, true: {"are", "do"}}[many]
	switch {
	case missing && undecodable:
		return verb[0] + " missing or " + verb[1] + " not decode"
	case missing:
		return verb[0] + " missing"
	}
	return verb[1] + " not decode"
}

// undecodableReason is why f does not decode, without the "read <path>: "
// (or, of a missing payload, "<path>: ") its error starts with (the
// finding names the file).
func undecodableReason(f *File) string {
	if f.Missing {
		return f.missingWhy
	}
	return strings.TrimPrefix(f.Undecodable.Error(), "read "+f.Path+": ")
}

// notRead says why the rows of f, which has Undecodable set, are not
// read: "is missing" or "does not decode".
func (f *File) notRead() string { return whyNotRead(f.Missing, !f.Missing, false) }

// checkSidecarlessChangelogs notes once per tree that changelog+file payloads carry no sidecar.
func (v *validator) checkSidecarlessChangelogs() {
	if v.sp.Backend != BackendChangelogFile {
		return
	}
	n := 0
	for _, f := range v.sp.Files {
		if f.Verdict == "" && !f.Missing {
			n++
		}
	}
	if n > 0 {
		v.treeFinding(SeverityInfo, CheckSidecar, 0, nil, fmt.Sprintf("%d changelog+file payload%s carr%s no .meta sidecar: this backend writes none and does not verify its payloads on restore (section 1.7)", n, plural(n, "", "s"), plural(n, "ies", "y")))
	}
}

// releaseEvery: every this many rows (a power of two minus one) a check
// drops the file's mapped pages from the resident set.
const releaseEvery = 1<<18 - 1

// valRowIndex finds (op, key) pairs in a file's rows.
type valRowIndex struct {
	rows  *Cursor
	n     int
	order []uint32 // rows' indexes sorted by (op, key), stable; nil when rows are already in order
	tie   []bool   // with order: which rows may have the (op, key) of the one before (SortOrderTies)
}

func newValRowIndex(f *File) *valRowIndex {
	if f == nil || f.Snapshot == nil {
		return &valRowIndex{}
	}
	defer f.ReleasePages()
	ix := &valRowIndex{rows: f.Snapshot.NewCursor()}
	ix.n = ix.rows.Len()
	if sorted, _ := f.Snapshot.Order(); !sorted {
		at := func(i int) (uint64, []byte) { return ix.rows.Op(i), ix.rows.Key(i) }
		each := func(fn func(i int, op uint64, key []byte) bool) { f.Snapshot.EachKey(fn) }
		ix.order, ix.tie = sortOrderEach(ix.n, at, each, true, f.ReleasePages)
	}
	return ix
}

func (ix *valRowIndex) len() int { return ix.n }

// at returns the stream index of the i-th row in (op, key) order.
func (ix *valRowIndex) at(i int) int {
	if ix.order == nil {
		return i
	}
	return int(ix.order[i])
}

// row returns the i-th row in (op, key) order.
func (ix *valRowIndex) row(i int) Row { return ix.rows.Row(ix.at(i)) }

// sameAsPrev reports whether the i-th row in (op, key) order has the (op,
// key) of the one before; rows of an unsorted file are read only when their
// sort prefixes tie.
func (ix *valRowIndex) sameAsPrev(i int) bool {
	if i == 0 || (ix.tie != nil && !ix.tie[i]) {
		return false
	}
	return ix.row(i-1).Compare(ix.row(i)) == 0
}

func (ix *valRowIndex) has(op uint64, key []byte) bool {
	probe := Row{Op: op, Key: key}
	lo, hi := 0, ix.len()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ix.row(m).Compare(probe) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo < ix.len() && ix.row(lo).Compare(probe) == 0
}

func (v *validator) index(f *File) *valRowIndex {
	v.mu.Lock()
	e := v.idx[f]
	if e == nil {
		e = &valIndexEntry{}
		v.idx[f] = e
	}
	v.mu.Unlock()
	e.once.Do(func() { e.ix = newValRowIndex(f) })
	return e.ix
}

// holds reports whether file f stores a row (op, key).
func (v *validator) holds(f *File, op uint64, key []byte) bool {
	return f != nil && f.Snapshot != nil && v.index(f).has(op, key)
}

// checkRows covers every row of one file: key layout, placement, duplicates, order.
func (v *validator) checkRows(f *File) {
	s := f.Snapshot
	if s == nil {
		return
	}
	var group Group
	var rng KeyGroupRange
	placed, tree := false, v.isTree()
	if tree {
		if g, ok := v.sp.GroupOf(f.Subtask); ok {
			group, rng, placed = g, g.Range(f.Subtask), true
		}
	}
	// check reports what is wrong with row i through note; the placement
	// of a row outside the subtask's range (tree files only) looks at the
	// owner's file and goes to v directly.
	check := func(i int, op uint64, key []byte, note func(i int, sev Severity, check, msg string)) {
		if i&releaseEvery == 0 {
			f.ReleasePages()
		}
		if len(key) == 0 {
			note(i, SeverityInfo, CheckZeroLengthKey, "zero-length key: never filtered by key group and not operator state; every restore of this file keeps it")
			return
		}
		// A keyed row's parts are read without its Key, whose copy through
		// the stack stalled the loads after it (a third of this check's
		// time over 10M rows in clink's order).
		kind := KindKeyed
		if plen := KeyedPrefixLen(key); plen > 0 {
			if want := KeyGroupOf(key[plen:]); want != int(key[0]) {
				note(i, keyGroupMismatchSeverity(key), CheckKeyGroup, keyGroupMismatch(int(key[0]), want, key))
			}
			if slot := key[1 : plen-1]; bytes.IndexByte(slot, '\n') >= 0 {
				note(i, SeverityWarning, CheckSlotName, fmt.Sprintf("slot name %s contains '\\n': clink's KeyedState refuses such a name, so no operator can open this slot (the row is restored but unreachable)", renderSlot(slot, true)))
			}
		} else if kind = ParseKey(key).Kind; kind == KindOperator && key[0] != 0xFF {
			note(i, SeverityWarning, CheckOperatorKeyByte, fmt.Sprintf("first key byte 0x%02x: restore takes the row for operator state (never filtered, replicated into every subtask, merged), but operator code reads only keys that start with 0xff, so no operator reads it (format 2.1)", key[0]))
		}
		if !tree && kind != KindKeyed && IsTimerBlob(key) {
			// A tree's blobs are checked with the other copies of each
			// (checkTimers); a file's on their own.
			if _, trailing, err := parseTimerIDs(s.NewCursor().Row(i).Value); err != nil {
				note(i, SeverityError, CheckTimers, undecodableBlob(op, key, err))
			} else if trailing > 0 {
				note(i, SeverityWarning, CheckTimers, trailingBlob(op, key, trailing))
			}
		}
		kg, filtered := RestoreKeyGroup(key)
		if !filtered || !placed || rng.Contains(kg) {
			return
		}
		owner := group.Owner(kg)
		what := fmt.Sprintf("key group %d", kg)
		if kind == KindRaw {
			what += " (a legacy raw key, filtered by its first byte)"
		}
		if of := v.sp.File(owner); of != nil && of.Undecodable != nil && !of.Missing {
			v.rowFinding(f, i, SeverityWarning, CheckMisplacedRow, fmt.Sprintf("not checked: %s lies outside subtask %d's range %s, and the payload of its owner, subtask %d, does not decode: whether the owner holds a copy is not known", what, f.Subtask, rng, owner))
		} else if of != f && v.holds(of, op, key) {
			msg := fmt.Sprintf("stale copy: %s lies outside subtask %d's range %s; the owner's copy in subtask %d is restored", what, f.Subtask, rng, owner)
			if kind == KindRaw {
				// (Not a copy of the owner's state: its own.)
				msg += ", and a narrowed restore drops this one; but a legacy raw key is its subtask's own state (an in-flight buffer holds the records its subtask had in flight), which a chained subtask restores unfiltered (sections 10.1, 10.2)"
			}
			v.rowFinding(f, i, SeverityWarning, CheckStaleCopy, msg)
		} else if of != nil && of != f && of.Snapshot.ErasedByLog(op, key) {
			v.rowFinding(f, i, SeverityWarning, CheckStaleCopy, fmt.Sprintf("stale copy: %s lies outside subtask %d's range %s; the owner, subtask %d, erases this key in its changelog's log, the key's latest state, so a narrowed restore holds none (a chained subtask, restored unfiltered, keeps this copy where no record of its key group arrives)", what, f.Subtask, rng, owner))
		} else {
			v.rowFinding(f, i, SeverityError, CheckMisplacedRow, fmt.Sprintf("lost on restore: %s lies outside subtask %d's range %s and its owner, subtask %d, holds no copy%s: a narrowed restore drops it here, and a chained subtask, restored unfiltered, keeps it where no record of its key group arrives (sections 10.1, 10.2)", what, f.Subtask, rng, owner, missingNote(of)))
		}
	}
	// checkIn checks rows [lo, hi) in order, through note: a block of
	// rows at a time where the open found the file's runs (checkByRun),
	// else a row at a time. It adds the rows' hashes to hp, when not nil,
	// for checkOrder's question whether a key is held twice.
	checkIn := func(lo, hi int, note func(i int, sev Severity, check, msg string), hp *hashPart) {
		if !s.Columnar() {
			s.EachKeyIn(lo, hi, func(i int, op uint64, key []byte) bool {
				check(i, op, key, note)
				return true
			})
			return
		}
		var test func(i int, kc *KeyColumns, x, to int, note func(i int, sev Severity, check, msg string))
		if runs := s.Runs(); runs != nil {
			test = checkByRun(runs, placed, rng, check, f.ReleasePages)
		}
		s.eachKeyBlockIn(lo, hi, func(i int, kc *KeyColumns, x, to int) bool {
			if hp != nil {
				hp.addBlock(i, kc, x, to)
			}
			if test != nil {
				test(i, kc, x, to, note)
				return true
			}
			for y := x; y < to; y++ {
				check(i+y-x, kc.Ops[y-kc.Lo], kc.Key(y), note)
			}
			return true
		})
	}
	direct := func(i int, sev Severity, check, msg string) { v.rowFinding(f, i, sev, check, msg) }
	n := s.NumRows()
	parts := min(runtime.NumCPU(), n/checkRowsPart)
	if placed || parts < 2 {
		parts = 1
	}
	// The hashes checkOrder asks for when the rows are in no order; a
	// file not in clink's columns is hashed by checkOrder itself.
	var hashes *keyHashes
	if _, strict := s.Order(); s.Variant == Canonical && !strict && s.Columnar() {
		hashes = keyHashesFor(s, DistinctBudget(f), parts)
	}
	if parts == 1 {
		checkIn(0, n, direct, hashes.part(0))
	} else {
		// A file outside a tree's groups (nothing looks at other files):
		// its rows are checked in parts at once, and the parts' findings
		// added in row order, so the same ones are listed.
		notes := make([]rowNotes, parts)
		var faults Faults
		for p := range parts {
			notes[p] = rowNotes{limit: v.limit, counts: map[rowNoteKey]int{}}
			note := notes[p].note // (a method value made per row would be allocated per row)
			faults.Go(func() { checkIn(p*n/parts, (p+1)*n/parts, note, hashes.part(p)) })
		}
		faults.Wait()
		for p := range notes {
			notes[p].addTo(v, f)
		}
	}
	f.ReleasePages()
	v.checkOrder(f, hashes)
}

// rowTest reports what is wrong with row i (operator op, key key) through
// note.
type rowTest func(i int, op uint64, key []byte, note func(i int, sev Severity, check, msg string))

// keyGroupMismatch describes a keyed row (stored key key) whose stored
// key-group byte is stored, where its user key hashes to want.
func keyGroupMismatch(stored, want int, key []byte) string {
	msg := fmt.Sprintf("stored key-group byte %d, but the user key hashes to key group %d: clink routes the key's records by %d, so this row is never read (a narrowed restore files it under %d)", stored, want, want, stored)
	if rawLike(key) {
		msg += "; or it is a legacy raw key that holds '|' (it starts with \"__\", as clink's raw keys do, section 2.5), which a restore keeps under its first byte and operator code reads whole"
	}
	return msg
}

// keyGroupMismatchSeverity is the severity of keyGroupMismatch: an error,
// but a warning for a key that may be a legacy raw key (rawLike), which
// sptool cannot tell from a keyed row of a wrong key-group byte.
func keyGroupMismatchSeverity(key []byte) Severity {
	if rawLike(key) {
		return SeverityWarning
	}
	return SeverityError
}

// rawLike reports whether a stored key that parses as a keyed row may be
// a legacy raw key holding '|' (section 2.5): it starts with "__", as
// clink's raw keys (__iterate_inflight__ and the like) do, where a keyed
// row's key-group byte 95 ('_') would be followed by a slot named "_…".
func rawLike(key []byte) bool {
	return len(key) >= 2 && key[0] == '_' && key[1] == '_'
}

// checkByRun returns checkRows' test of a block of rows for a file whose
// prefix runs were found at open (runs): rows [x, to) of the batch kc
// holds, the first of which is row i. The rows of a keyed run whose slot
// name is clean and whose key group lies in the subtask's range (placed:
// the file has one) differ only in their user keys, and need only their
// key group checked, which keyGroupsIn computes a block of them at a time;
// the others go to check, one at a time. release drops the file's pages
// from the resident set, as check does every releaseEvery+1 rows. The
// function it returns is meant for the rows in order, by one goroutine.
func checkByRun(runs *PrefixRuns, placed bool, rng KeyGroupRange, check rowTest, release func()) func(i int, kc *KeyColumns, x, to int, note func(int, Severity, string, string)) {
	var kgs []uint8
	return func(i int, kc *KeyColumns, x, to int, note func(int, Severity, string, string)) {
		if i&^releaseEvery != (i+to-x-1)&^releaseEvery || i&releaseEvery == 0 {
			release()
		}
		for x < to {
			r := runs.Run(runs.Find(i))
			n := min(to-x, r.End-i)
			fast := r.Keyed()
			kg, plen := 0, len(r.Prefix)
			if fast {
				kg = int(r.Prefix[0])
				fast = bytes.IndexByte(r.Prefix[1:plen-1], '\n') < 0 && (!placed || rng.Contains(kg))
			}
			if !fast {
				for y := x; y < x+n; y++ {
					check(i+y-x, kc.Ops[y-kc.Lo], kc.Key(y), note)
				}
			} else {
				kgs = slices.Grow(kgs[:0], n)[:n]
				keyGroupsIn(kc.Keys, kc.Offs[x-kc.Lo:x-kc.Lo+n+1], int32(plen), kgs)
				for j, want := range kgs {
					if int(want) != kg {
						key := kc.Key(x + j)
						note(i+j, keyGroupMismatchSeverity(key), CheckKeyGroup, keyGroupMismatch(kg, int(want), key))
					}
				}
			}
			i, x = i+n, x+n
		}
	}
}

// checkRowsPart is the fewest rows checkRows gives a goroutine.
var checkRowsPart = 1 << 19

// rowNote is a finding about row i, held until the findings of the rows
// before it are added.
type rowNote struct {
	i          int
	sev        Severity
	check, msg string
}

type rowNoteKey struct {
	check string
	sev   Severity
}

// rowNotes holds a part of a file's row findings: the first limit of each
// check and severity (the rest only counted), so that adding the parts in
// row order lists the findings one pass would, in bounded memory.
type rowNotes struct {
	limit  int
	notes  []rowNote
	counts map[rowNoteKey]int
}

func (r *rowNotes) note(i int, sev Severity, check, msg string) {
	k := rowNoteKey{check, sev}
	r.counts[k]++
	if r.limit <= 0 || r.counts[k] <= r.limit {
		r.notes = append(r.notes, rowNote{i, sev, check, msg})
	}
}

// addTo adds the part's findings about file f to v, in row order.
func (r *rowNotes) addTo(v *validator, f *File) {
	listed := map[rowNoteKey]int{}
	for _, n := range r.notes {
		v.rowFinding(f, n.i, n.sev, n.check, n.msg)
		listed[rowNoteKey{n.check, n.sev}]++
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for k, c := range r.counts {
		v.counts[valCapKey{k.check, f.Rel, k.sev, f.Subtask}] += c - listed[k]
	}
}

// checkOrder reports duplicate (op, key) rows and unsorted rows of a
// canonical file; hashes are its rows' hashes when checkRows made them.
func (v *validator) checkOrder(f *File, hashes *keyHashes) {
	s := f.Snapshot
	if s.Variant != Canonical {
		return
	}
	defer f.ReleasePages()
	if _, strict := s.Order(); strict { // sorted, and no duplicates
		return
	}
	rows := s.NewCursor()
	for i := 1; i < rows.Len(); i++ {
		if rows.Row(i-1).Compare(rows.Row(i)) > 0 {
			v.fileFinding(f, SeverityWarning, CheckUnsorted, fmt.Sprintf("rows are not in (op, key) order (first out of order: row %d): clink reads rows in any order; sptool writes them sorted unless apply --keep-order keeps a file's order", i))
			break
		}
	}
	if distinctKeysOf(s, hashes, DistinctBudget(f)) {
		return // no duplicates, shown without sorting
	}
	ix := v.index(f)
	for a := 0; a < ix.len(); {
		b := a + 1
		for b < ix.len() && ix.sameAsPrev(b) {
			b++
		}
		if b-a > 1 {
			idxs := make([]int, 0, b-a)
			for j := a; j < b; j++ {
				idxs = append(idxs, ix.at(j))
			}
			kept := idxs[0]
			for _, j := range idxs[1:] {
				if IncomingWins(rows.Row(kept), rows.Row(j)) {
					kept = j
				}
			}
			rule := "keyed rows: the last in stream order wins"
			if rows.Row(kept).IsOperatorState() {
				rule = "operator state: the greater int64 when both values are 8 bytes, else the later row"
			}
			v.rowFinding(f, idxs[0], SeverityWarning, CheckDuplicate, fmt.Sprintf("(op, key) stored %d times in this file (rows %s); restore keeps row %d (%s)", len(idxs), joinSome(idxs, ", ", maxRowsListed), kept, rule))
		}
		a = b
	}
}

// maxRowsListed is how many rows a finding about the copies of one key
// lists: a key stored millions of times would make a message of megabytes.
const maxRowsListed = 10

// joinSome is JoinInts of the first most of xs, and how many more there
// are.
func joinSome(xs []int, sep string, most int) string {
	if len(xs) <= most {
		return JoinInts(xs, sep)
	}
	return fmt.Sprintf("%s%sand %d more", JoinInts(xs[:most], sep), sep, len(xs)-most)
}

// JoinInts renders xs in decimal, separated by sep.
func JoinInts(xs []int, sep string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, sep)
}

// isSourceOffsetKey reports whether an operator-state logical key is a
// fixed-key source offset (__vector_source_offset__, __file_source_offset__,
// __directory_file_source_offset__, __parquet_source_offset__, ...).
func isSourceOffsetKey(logical []byte) bool {
	return bytes.Contains(logical, []byte("source_offset"))
}

type valOpCopy struct {
	subtask int
	value   []byte
	// sum is valueSum(value): copies are told apart by it, not by a copy
	// of their bytes (a broadcast state of 50 MB in each of 16 files was
	// copied into a map, 800 MB, to count its distinct values).
	sum uint64
}

// valueSeed seeds valueSum.
var valueSeed = maphash.MakeSeed()

// valueSum returns a 64-bit hash of an operator row's value, which tells
// distinct values apart but for a chance of about 2^-64.
func valueSum(b []byte) uint64 { return maphash.Bytes(valueSeed, b) }

// operatorRows returns each file's operator-state rows and its legacy
// unprefixed timer blobs (raw rows IsTimerBlob names), each one per key as
// a restore keeps them, and the operators of its keyed rows. The files are
// read at once, their keys in blocks (only the value of a row returned is
// read, in place).
func (v *validator) operatorRows() (perFile, legacyTimers [][]Row, keyedOps []map[uint64]bool) {
	perFile = make([][]Row, len(v.sp.Files))
	legacyTimers = make([][]Row, len(v.sp.Files))
	keyedOps = make([]map[uint64]bool, len(v.sp.Files))
	ForEach(len(v.sp.Files), func(i int) {
		f := v.sp.Files[i]
		keyedOps[i] = map[uint64]bool{}
		if f.Snapshot == nil {
			return
		}
		cur := f.Snapshot.NewCursor()
		var rows, legacy []Row
		ops := opSet{m: keyedOps[i]}
		note := func(j int, op uint64, key []byte) bool {
			if (Row{Key: key}).IsOperatorState() {
				rows = append(rows, cur.Row(j))
				return true
			}
			if IsTimerBlob(key) {
				legacy = append(legacy, cur.Row(j))
			}
			if runsOperator(key) {
				ops.add(op)
			}
			return true
		}
		if runs := f.Snapshot.Runs(); runs != nil {
			// The rows of a keyed run (a key group's byte, a slot and its
			// separator) are neither operator state nor timer blobs, and
			// all tell that the group runs the operator: the others are
			// looked at row by row (every key of a 10M-row tree was read
			// for this once more, 40% of validate's time after the open).
			for k := range runs.Len() {
				if r := runs.Run(k); r.Keyed() {
					ops.add(r.Op)
				} else {
					f.Snapshot.EachKeyIn(r.Start, r.End, note)
				}
			}
		} else {
			f.Snapshot.EachKey(note)
		}
		perFile[i], legacyTimers[i] = Logical(rows), Logical(legacy)
		f.ReleasePages()
	})
	return perFile, legacyTimers, keyedOps
}

// checkOperatorGroups reports the files that hold keyed rows of an
// operator whose keyed rows other chain groups' files hold too (keyedOps:
// see operatorRows). The operator runs in one group: the one whose files
// hold most of its keyed state is taken for it (the first, on a tie), and
// each file of another group holding some is an error. The placement check
// of each row sees only its own group's key-group ranges, which such a row
// may well fit.
func (v *validator) checkOperatorGroups(keyedOps []map[uint64]bool) {
	if len(v.sp.Groups) < 2 {
		return
	}
	files, ops := v.sp.keyedFilesByGroup(keyedOps)
	for _, op := range ops {
		byGroup := files[op]
		if len(byGroup) < 2 {
			continue
		}
		groups := groupsInOrder(byGroup)
		hg := groups[0]
		for _, g := range groups {
			if len(byGroup[g]) > len(byGroup[hg]) {
				hg = g
			}
		}
		for _, g := range groups {
			if g == hg {
				continue
			}
			for _, i := range byGroup[g] {
				v.fileFinding(v.sp.Files[i], SeverityError, CheckOperatorGroups, fmt.Sprintf("holds keyed rows of op %d, which the files of chain group %s (subtasks %d-%d) hold too: an operator runs in one chain group, and only its subtasks restore its keyed state, so the copies in chain group %s are never read by op %d; if the groups are wrong, give them with --groups", op, FormatGroups([]Group{hg}), hg.First, hg.First+hg.Count-1, FormatGroups([]Group{g}), op))
			}
		}
	}
}

// checkOperatorRows compares the operator-state rows replicated over the
// tree's files (perFile and keyedOps: see operatorRows). Where the copies
// differ, the one named is the one a merge keeps: folded over the copies
// of the chain groups running the operator (liveOpCopies), as Union does.
func (v *validator) checkOperatorRows(perFile [][]Row, keyedOps []map[uint64]bool) {
	unread := v.unreadCopies()
	live := v.sp.newBlobLiveness(keyedOps)
	type entry struct {
		op     uint64
		key    []byte
		copies []valOpCopy
	}
	byKey := map[string]*entry{}
	var keys []string
	for i, f := range v.sp.Files {
		for _, r := range perFile[i] {
			k := string(binary.BigEndian.AppendUint64(nil, r.Op)) + string(r.Key)
			e := byKey[k]
			if e == nil {
				e = &entry{op: r.Op, key: r.Key}
				byKey[k] = e
				keys = append(keys, k)
			}
			e.copies = append(e.copies, valOpCopy{f.Subtask, r.Value, valueSum(r.Value)})
		}
		f.ReleasePages() // the values read to sum them stay cached, not resident
	}
	slices.Sort(keys)
	replicated, diverging := 0, 0
	for _, k := range keys {
		e := byKey[k]
		if len(e.copies) < 2 {
			continue
		}
		replicated++
		distinct := map[uint64]bool{}
		all8 := true
		for _, c := range e.copies {
			distinct[c.sum] = true
			all8 = all8 && len(c.value) == 8
		}
		if len(distinct) < 2 {
			continue
		}
		diverging++
		desc := describeCopies(e.copies, all8)
		copies := v.liveOpCopies(live, e.op, e.copies)
		frozen := ""
		if len(copies) < len(e.copies) {
			var subs []int
			for _, c := range e.copies {
				if !slices.ContainsFunc(copies, func(l valOpCopy) bool { return l.subtask == c.subtask }) {
					subs = append(subs, c.subtask)
				}
			}
			frozen = fmt.Sprintf("; the copies of %s %s, in chain groups that do not run op %d, are frozen replicas that no merge takes (section 10.3)", plural(len(subs), "subtask", "subtasks"), JoinInts(subs, ","), e.op)
			all8 = !slices.ContainsFunc(copies, func(c valOpCopy) bool { return len(c.value) != 8 })
		}
		unions := v.sp.Backend.UnionsOperatorRows()
		logical := e.key[1:]
		if all8 {
			best := copies[0]
			for _, c := range copies[1:] {
				if int64(binary.LittleEndian.Uint64(c.value)) > int64(binary.LittleEndian.Uint64(best.value)) {
					best = c
				}
			}
			bestV := int64(binary.LittleEndian.Uint64(best.value))
			if isSourceOffsetKey(logical) {
				v.treeFinding(SeverityWarning, CheckOffsetDivergence, e.op, e.key, fmt.Sprintf("op %d source offset %s differs across subtasks (%s): a merge (scale-down restore, rescale) keeps the greatest, %d (subtask %d), handing every subtask the furthest position any of them reached (section 10.4)%s%s", e.op, RenderKey(e.key), desc, bestV, best.subtask, frozen, unread))
			} else {
				v.treeFinding(SeverityInfo, CheckOperatorDivergence, e.op, e.key, fmt.Sprintf("op %d operator key %s has different 8-byte values across subtasks (%s): merges (scale-down restore, rescale) keep the greatest signed int64, %d (subtask %d) (section 6.3)%s%s", e.op, RenderKey(e.key), desc, bestV, best.subtask, frozen, unread))
			}
			continue
		}
		if IsTimerBlob(e.key) {
			// Each subtask's blob holds the timers it fires: a restore at
			// this layout keeps each subtask's own copy, and a rescale
			// splits them by key group (their places are checked apart).
			v.treeFinding(SeverityInfo, CheckOperatorDivergence, e.op, e.key, fmt.Sprintf("op %d timer blob %s differs across subtasks (%s): each subtask's blob holds the timers it fires (the timers check says whether each is where a restore fires it); a restore at this layout keeps each subtask's own copy, and sptool rescale splits the blobs by key group, but a scale-down restore by clink keeps one parent's blob and loses the other parents' timers (section 6.3)%s%s", e.op, RenderKey(e.key), desc, frozen, unread))
			continue
		}
		// Merged in subtask order as clink's merge does, pair by pair: the
		// greater of two 8-byte values, else the later copy.
		win := copies[0]
		for _, c := range copies[1:] {
			if IncomingWins(Row{Op: e.op, Key: e.key, Value: win.value}, Row{Op: e.op, Key: e.key, Value: c.value}) {
				win = c
			}
		}
		how := "clink resolves such non-8-byte collisions in directory order, which is unspecified (section 10.4)"
		if !unions {
			how = "this backend's restore unions no operator rows (each subtask keeps its own), but a merge (rescale, export) must pick one"
		}
		v.treeFinding(SeverityWarning, CheckOperatorDivergence, e.op, e.key, fmt.Sprintf("op %d operator key %s has %d different values across subtasks (%s): %s; merged in subtask order (the greater of two 8-byte values, else the later copy), subtask %d's copy wins%s%s", e.op, RenderKey(e.key), len(distinct), desc, how, win.subtask, frozen, unread))
	}
	if replicated > 0 {
		why := "every restore replicates operator rows into every subtask, section 10.3"
		if v.sp.Backend == BackendChangelogFile {
			why = "each subtask's own: the changelog+file restore unions no operator rows"
		}
		v.treeFinding(SeverityWarning, CheckOperatorReplica, 0, nil, fmt.Sprintf("%d operator-state key%s held by several subtask files (%s); %d of them with differing values%s", replicated, plural(replicated, " is", "s are"), why, diverging, unread))
	}
}

// liveOpCopies returns the copies of an operator row of op that a merge
// folds (Union's rule): in a tree of several chain groups, those of the
// groups running op (live: holding keyed rows of it), when every subtask of
// those groups holds one. The others are frozen replicas (section 10.3).
// A running subtask without a copy restores the union of every other
// directory's, frozen ones too; then, and when no group is known to run
// op, all copies.
func (v *validator) liveOpCopies(live *blobLiveness, op uint64, copies []valOpCopy) []valOpCopy {
	if len(v.sp.Groups) < 2 || !live.any[op] {
		return copies
	}
	running := 0
	for _, g := range v.sp.Groups {
		if live.state(g, op) == BlobLive {
			running += g.Count
		}
	}
	var buf []valOpCopy
	return foldedCopies(copies, &buf, running, func(c valOpCopy) bool {
		g, ok := v.sp.GroupOf(c.subtask)
		return ok && live.state(g, op) == BlobLive
	})
}

// describeCopies lists which subtasks hold which value.
func describeCopies(copies []valOpCopy, all8 bool) string {
	var order []valOpCopy // the first copy of each value
	subs := map[uint64][]int{}
	for _, c := range copies {
		if _, ok := subs[c.sum]; !ok {
			order = append(order, c)
		}
		subs[c.sum] = append(subs[c.sum], c.subtask)
	}
	parts := make([]string, len(order))
	for i, c := range order {
		var val string
		if all8 {
			val = strconv.FormatInt(int64(binary.LittleEndian.Uint64(c.value)), 10)
		} else {
			val = fmt.Sprintf("%d bytes %s", len(c.value), renderBytesShort(c.value, 12))
		}
		parts[i] = fmt.Sprintf("%s %s: %s", plural(len(subs[c.sum]), "subtask", "subtasks"), JoinInts(subs[c.sum], ","), val)
	}
	return strings.Join(parts, "; ")
}

// checkVersionMaps compares the version maps of the tree's files.
func (v *validator) checkVersionMaps() {
	var order []string
	files := map[string][]string{}
	counts := map[string]int{}
	for _, f := range v.sp.Files {
		if f.Snapshot == nil {
			continue
		}
		p := f.Snapshot.Versions.Pack()
		if _, ok := files[p]; !ok {
			order = append(order, p)
			counts[p] = f.Snapshot.Versions.Len()
		}
		files[p] = append(files[p], f.Rel)
	}
	if len(order) < 2 {
		return
	}
	parts := make([]string, len(order))
	for i, p := range order {
		what := fmt.Sprintf("map %c (%d entr%s)", 'A'+rune(i%26), counts[p], plural(counts[p], "y", "ies"))
		if p == "" {
			what = "no map"
		}
		parts[i] = fmt.Sprintf("%s: %s", what, strings.Join(files[p], ", "))
	}
	v.treeFinding(SeverityWarning, CheckVersionMapDisagreement, 0, nil, fmt.Sprintf("the files disagree on the job-wide version map (%s): merging keeps the first non-empty input's map (section 10.6), and a subtask restored from a file without the map reads every stamp as version 1", strings.Join(parts, "; ")))
}

// noteInferredGroups says, when placement errors were found under chain
// groups inferred from the rows, which groups those were: a stray row can
// make the inference join groups, and every row then looks misplaced.
func (v *validator) noteInferredGroups() {
	if !v.sp.GroupsInferred || len(v.sp.Files) < 2 {
		return
	}
	n := 0
	v.mu.Lock()
	for _, f := range v.findings {
		if f.Severity == SeverityError && (f.Check == CheckMisplacedRow || f.Check == CheckOperatorGroups) {
			n++
		}
	}
	v.mu.Unlock()
	if n == 0 {
		return
	}
	v.treeFinding(SeverityInfo, CheckGroups, 0, nil, fmt.Sprintf("the placement errors above were found under chain groups inferred from the rows, %s: if the job's groups are others, give them with --groups (sptool inspect shows the layout)", describeGroups(v.sp.Groups)))
}

// describeGroups writes groups as "0-2 (parallelism 3), 3-4 (parallelism 2)".
func describeGroups(groups []Group) string {
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = fmt.Sprintf("%s (parallelism %d)", FormatGroups([]Group{g}), g.Count)
	}
	return strings.Join(parts, ", ")
}

// checkCheckpointID refuses checkpoint 0, which no job restores.
func (v *validator) checkCheckpointID() {
	if v.sp.Checkpoint == 0 {
		v.treeFinding(SeverityError, CheckCheckpointID, 0, nil, "the tree holds checkpoint 0, which clink does not restore: a restore_checkpoint_id of 0 means no restore, and a job submitted to restore it starts without state (section 5.3); sptool apply --checkpoint-id writes it as another id")
	}
}

// checkCompleted compares the COMPLETED marker with the tree.
func (v *validator) checkCompleted() {
	sp := v.sp
	for _, rel := range sp.NewerCompleted {
		v.treeFinding(SeverityWarning, CheckCompleted, 0, nil, fmt.Sprintf("%s marks a checkpoint newer than %d complete, but v%d holds none of its files: restoring it (the job's latest completed checkpoint) finds no state and refuses to start; checkpoint %d was checked", rel, sp.Checkpoint, sp.Generation, sp.Checkpoint))
	}
	for _, rel := range sp.OlderGenerationCompleted {
		v.treeFinding(SeverityWarning, CheckCompleted, 0, nil, fmt.Sprintf("%s marks the job's newest completed checkpoint in an older generation than v%d, which holds none of its files: clink restores from the highest generation only, so restoring that checkpoint from this directory finds no state and refuses to start (checkpoint %d of v%d, which no marker says is complete, was checked)", rel, sp.Generation, sp.Checkpoint, sp.Generation))
	}
	for _, m := range sp.UnreadMarkers {
		v.treeFinding(SeverityWarning, CheckCompleted, 0, nil, fmt.Sprintf("marker %s: it cannot be read as a marker; it marks another checkpoint than %d, which a restore of checkpoint %d does not look at, so it was left unread (a restore of its own checkpoint would read its subtasks= line)", m, sp.Checkpoint, sp.Checkpoint))
	}
	for _, m := range sp.IgnoredMarkers {
		v.treeFinding(SeverityWarning, CheckCompleted, 0, nil, fmt.Sprintf("marker %s: it is not a marker sptool reads, and the tree was checked without it (checkpoint %d; a marker of that checkpoint still counts as one of its markers, and clink applies a subtasks= line only when exactly one exists); clink's restore needs no marker: it looks only for a usable subtasks= line, and otherwise unions operator rows from every subtask directory (section 5.3); apply and rescale refuse the tree until it is fixed or removed", m, sp.Checkpoint))
	}
	c := sp.Completed
	if c == nil && isStagingTree(sp.Root) {
		// sptool writes a tree's marker last: a staging tree without one
		// is what a run stopped or killed while writing it leaves, whose
		// subtasks not yet begun have no directory.
		v.treeFinding(SeverityError, CheckCompleted, 0, nil, fmt.Sprintf("no COMPLETED-%d marker in %s, the staging tree of an sptool run that did not finish (named .sptool-tmp-<suffix>; sptool writes a tree's marker last): it may lack the files of some subtasks, which nothing here shows; run the command again, and delete this directory", sp.Checkpoint, ShowName(filepath.Base(filepath.Clean(sp.Root)))))
		return
	}
	if c == nil && len(sp.IgnoredMarkers) > 0 {
		return // (the warning above says what a restore does without it)
	}
	if c == nil {
		v.treeFinding(SeverityInfo, CheckCompleted, 0, nil, fmt.Sprintf("no COMPLETED-%d marker: restore does not need one, but without its subtasks= line clink unions operator rows from every subtask directory", sp.Checkpoint))
		return
	}
	if c.Checkpoint != sp.Checkpoint {
		v.treeFinding(SeverityWarning, CheckCompleted, 0, nil, fmt.Sprintf("%s says checkpoint=%d, but it marks checkpoint %d", ShowName(sp.CompletedRel), c.Checkpoint, sp.Checkpoint))
	}
	if c.Generation != sp.Generation {
		v.treeFinding(SeverityWarning, CheckCompleted, 0, nil, fmt.Sprintf("%s says generation=%d, but the checkpoint was read from generation v%d", ShowName(sp.CompletedRel), c.Generation, sp.Generation))
	}
	if len(sp.OtherCompleted) > 0 {
		v.treeFinding(SeverityWarning, CheckCompleted, 0, nil, fmt.Sprintf("%d COMPLETED-%d markers (%s): clink applies a marker's subtasks= line only when exactly one marker exists, so it unions operator rows from every subtask directory, whatever each lists",
			1+len(sp.OtherCompleted), sp.Checkpoint, strings.Join(showNames(append([]string{sp.CompletedRel}, sp.OtherCompleted...)), ", ")))
		return
	}
	if !c.HasSubtasks {
		v.treeFinding(SeverityInfo, CheckCompleted, 0, nil, fmt.Sprintf("%s has no subtasks= line: clink unions operator rows from every subtask directory", ShowName(sp.CompletedRel)))
		return
	}
	if len(c.Subtasks) == 0 {
		v.treeFinding(SeverityWarning, CheckCompleted, 0, nil, fmt.Sprintf("%s lists no subtask (an empty subtasks= line, which no coordinator writes): clink's restore skips every subtask the line does not list, so each subtask restores its own file and unions no other subtask's operator rows (section 5.3); sptool reads every subtask directory, as if the line were absent", ShowName(sp.CompletedRel)))
		return
	}
	present := map[int]bool{}
	for _, f := range sp.Files {
		present[f.Subtask] = true
	}
	listed := map[int]bool{}
	for _, i := range c.Subtasks {
		if listed[i] {
			continue
		}
		listed[i] = true
		if !present[i] {
			v.treeFinding(SeverityError, CheckCompleted, 0, nil, fmt.Sprintf("%s lists subtask %d, but v%d has no directory %d: a job restoring that subtask finds no state and refuses to start", ShowName(sp.CompletedRel), i, sp.Generation, i))
		}
	}
	for _, sh := range sp.Shadowed {
		msg := fmt.Sprintf("payload %s is not read: its name, with leading zeros, names what %s names, which clink opens (section 5.1), so a restore leaves it out too; a stray copy, or a file meant to replace the other (remove or rename it)", ShowName(sh.Rel), ShowName(sh.Read))
		if !sh.Checkpoint {
			msg = fmt.Sprintf("subtask directory %s is not read: its name, with leading zeros, names what %s names, from which clink restores the subtask's own state (section 5.3); but a restore unions the operator rows of every numeric directory into every other subtask, this one's too, which sptool's outputs leave out; a stray copy, or a directory meant to replace the other (remove or rename it)", ShowName(sh.Rel), ShowName(sh.Read))
		}
		v.treeFinding(SeverityWarning, CheckSubtasks, 0, nil, msg)
	}
	for _, f := range sp.Files {
		if !f.Unlisted {
			continue
		}
		v.add(Finding{Severity: SeverityWarning, Check: CheckCompleted, File: f.Rel, Subtask: f.Subtask, Row: -1, Message: fmt.Sprintf("%s holds checkpoint %d, but %s does not list its subtask, though it lists subtasks above it: a restore at this layout starts subtask %d from its own file all the same, and sptool reads it; its operator rows join no other subtask's union at that restore (section 5.3), and an output of sptool's that keeps the file in place leaves the subtask out of its marker's list too (clink's coordinator lists every subtask of the checkpoint)", f.Rel, sp.Checkpoint, ShowName(sp.CompletedRel), f.Subtask)})
	}
	for _, rel := range sp.Unlisted {
		subtask := subtaskOfRel(rel)
		v.add(Finding{Severity: SeverityWarning, Check: CheckCompleted, File: rel, Subtask: subtask, Row: -1, Message: fmt.Sprintf("%s holds checkpoint %d, but %s does not list its subtask: it is not part of the checkpoint the marker describes, and is left out (clink's restore does not union its operator rows either, section 5.3; a restore at a parallelism that takes in that subtask would read its keyed rows)", rel, sp.Checkpoint, ShowName(sp.CompletedRel))})
	}
}

// subtaskOfRel returns the subtask of a payload's path within the tree
// (v1/2/checkpoint-7.snap: 2), or -1.
func subtaskOfRel(rel string) int {
	i, err := strconv.Atoi(filepath.Base(filepath.Dir(rel)))
	if err != nil {
		return -1
	}
	return i
}

// checkSubtasks reports the subtasks missing below the tree's highest.
func (v *validator) checkSubtasks() {
	for _, f := range v.sp.Files {
		dir, name, wantDir, wantName := v.sp.clinkNames(f)
		if dir != wantDir {
			v.fileFinding(f, SeverityError, CheckSubtasks, fmt.Sprintf("directory %s holds subtask %d's state, but clink reads subtask %d from v%d/%s (its index in decimal, section 5.3): a job restoring this tree finds no state for subtask %d and refuses to start it (the directory's operator rows still join every subtask's union); rename it to %s (sptool writes its outputs so)",
				dir, f.Subtask, f.Subtask, v.sp.Generation, wantDir, f.Subtask, wantDir))
		}
		if name != wantName {
			v.fileFinding(f, SeverityError, CheckSubtasks, fmt.Sprintf("file %s holds checkpoint %d's state, but clink opens %s (the id in decimal, section 5.1): a job restoring this tree finds no state for subtask %d and refuses to start it; rename it to %s (and its sidecar with it)",
				name, v.sp.Checkpoint, wantName, f.Subtask, wantName))
		}
	}
	if v.sp.newestNote != "" {
		v.treeFinding(SeverityInfo, CheckSubtasks, 0, nil, v.sp.newestNote+"; the directories without it are missing payloads")
	}
	missing := v.sp.MissingSubtasks()
	if len(missing) == 0 {
		return
	}
	what := "a job restoring at this layout refuses to start a subtask without state (section 5.3), and no chain group is inferred across the gap"
	v.treeFinding(SeverityError, CheckSubtasks, 0, nil, fmt.Sprintf("checkpoint %d of v%d lacks %s %s (it holds subtasks %s; %s): %s",
		v.sp.Checkpoint, v.sp.Generation, plural(len(missing), "subtask", "subtasks"), FormatGroups(runsOf(missing)), v.sp.SubtaskList(), v.sp.DescribeMissing(missing), what))
}

// runsOf returns the sorted, distinct ints xs as runs of consecutive ones.
func runsOf(xs []int) []Group {
	var gs []Group
	for _, x := range xs {
		if n := len(gs); n > 0 && gs[n-1].First+gs[n-1].Count == x {
			gs[n-1].Count++
			continue
		}
		gs = append(gs, Group{First: x, Count: 1})
	}
	return gs
}

// checkUnreferencedMaterializations lists materialisation files of a
// changelog+file tree that no changelog of the checkpoint references, and
// the handles that lead into another subtask's directory than their
// changelog's.
func (v *validator) checkUnreferencedMaterializations() {
	if v.sp.Backend != BackendChangelogFile {
		return
	}
	referenced := map[string]bool{}
	for _, f := range v.sp.Files {
		own := filepath.Dir(f.Rel) + string(filepath.Separator)
		for _, rel := range f.Materializations {
			referenced[rel] = true
			if !strings.HasPrefix(rel, own) {
				v.add(Finding{Severity: SeverityWarning, Check: CheckMaterializationHandle, File: f.Rel, Subtask: f.Subtask, Row: 0, Message: fmt.Sprintf("the materialisation handle leads to %s, outside this subtask's directory (%s): a restore of subtask %d reads that file, keeping only the rows of its own key groups; clink writes each subtask's materialisation in the subtask's directory, and apply writes it there", ShowName(filepath.ToSlash(rel)), ShowName(filepath.ToSlash(filepath.Dir(f.Rel))), f.Subtask)})
			}
		}
	}
	for _, f := range v.sp.Files {
		if f.Undecodable != nil && !f.Missing {
			// Its handles are unknown: a materialisation in its directory
			// may be the one it references (the payload's format finding
			// says so).
			continue
		}
		dir := filepath.Join(filepath.Dir(f.Path), "materializations")
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		relDir := filepath.Join(filepath.Dir(f.Rel), "materializations")
		for _, e := range ents {
			if e.IsDir() || !strings.HasPrefix(e.Name(), "mat-") {
				continue
			}
			rel := filepath.Join(relDir, e.Name())
			if referenced[rel] {
				continue
			}
			if f.Missing {
				v.add(Finding{Severity: SeverityInfo, Check: CheckUnreferencedMaterialization, File: f.Rel, Subtask: f.Subtask, Row: -1, Message: fmt.Sprintf("%s is referenced by no changelog of checkpoint %d: this subtask's changelog, which would hold its handle, is missing (a restore cannot reach it without one; sptool does not copy it)", ShowName(filepath.ToSlash(rel)), v.sp.Checkpoint)})
				continue
			}
			v.add(Finding{Severity: SeverityInfo, Check: CheckUnreferencedMaterialization, File: f.Rel, Subtask: f.Subtask, Row: -1, Message: fmt.Sprintf("%s is referenced by no changelog of checkpoint %d (left over from an earlier one; clink's restore ignores it, sptool does not copy it)", ShowName(filepath.ToSlash(rel)), v.sp.Checkpoint)})
		}
	}
}

// MaxParallelism is the largest parallelism sptool models, in the check of
// ValidateOptions.Parallelism and in a rescale (rules.MaxParallelism).
const MaxParallelism = 65535

// startAt returns the first global subtask index of chain group g of a
// tree resubmitted at parallelism m: every group takes m indices,
// allocated in order (format 5.1). A single file's group keeps its start.
func (v *validator) startAt(g Group, m int) int {
	if i := slices.Index(v.sp.Groups, g); i >= 0 && v.isTree() {
		return i * m
	}
	return g.First
}

// checkParallelism checks the input against a job resubmitted at parallelism m.
func (v *validator) checkParallelism(m int) {
	sp := v.sp
	if m > MaxParallelism {
		v.treeFinding(SeverityError, CheckParallelism, 0, nil, fmt.Sprintf("parallelism %d: not checked, a job runs at most %d subtasks", m, MaxParallelism))
		return
	}
	type block struct {
		g     Group
		files []*File
	}
	var blocks []block
	if !v.isTree() {
		blocks = []block{{Group{First: -1, Count: 1}, sp.Files}}
	} else {
		for _, g := range sp.Groups {
			b := block{g: g}
			for _, f := range sp.Files {
				if g.Contains(f.Subtask) {
					b.files = append(b.files, f)
				}
			}
			blocks = append(blocks, b)
		}
	}
	fileAt := map[int]*File{}
	for _, f := range sp.Files {
		fileAt[f.Subtask] = f
	}
	for _, b := range blocks {
		// A group's new subtask k reads v<G>/<base+k>, its own old file
		// only where the group does not move (6.2).
		base := v.startAt(b.g, m)
		moved := base != b.g.First
		if moved {
			v.treeFinding(SeverityError, CheckParallelism, 0, nil, fmt.Sprintf("chain group %s starts at subtask %d at parallelism %d (each group before it takes %d %s): its subtasks read v%d/%d to v%d/%d, not its own files, and lose the keyed rows those do not hold (section 6.2)", FormatGroups([]Group{b.g}), base, m, m, plural(m, "index", "indices"), sp.Generation, base, sp.Generation, base+m-1))
		}
		if len(b.files) != m {
			what := "the input has 1 file"
			switch {
			case v.isTree() && len(sp.Groups) == 1:
				what = fmt.Sprintf("the tree has %d subtask file%s", len(b.files), plural(len(b.files), "", "s"))
			case v.isTree():
				what = fmt.Sprintf("chain group %s has %d subtask file%s", FormatGroups([]Group{b.g}), len(b.files), plural(len(b.files), "", "s"))
			}
			v.treeFinding(SeverityError, CheckParallelism, 0, nil, fmt.Sprintf("%s; a job at parallelism %d restores %d (each subtask reads only its own file, section 6.2)", what, m, m))
		}
		if v.isTree() && b.g.Count == m && !moved {
			continue // the misplaced-row and stale-copy checks already judged this layout
		}
		for idx, f := range b.files {
			if f.Snapshot == nil {
				continue
			}
			k := idx
			if moved {
				k = f.Subtask - base
			}
			rng := KeyGroupRangeForSubtask(k, m)
			if k < 0 || k >= m {
				rng = KeyGroupRange{}
			}
			f.Snapshot.EachRow(func(i int, r Row) bool {
				kg, filtered := RestoreKeyGroup(r.Key)
				if !filtered || rng.Contains(kg) {
					return true
				}
				j := SubtaskForKeyGroup(kg, m)
				var of *File // the file new subtask j of this group reads, if the tree has one
				if v.isTree() {
					of = fileAt[base+j]
				}
				where := fmt.Sprintf("outside subtask %d's range %s at parallelism %d", k, rng, m)
				switch {
				case moved && (k < 0 || k >= m):
					where = fmt.Sprintf("in v%d/%d, which no subtask of its chain group reads at parallelism %d", sp.Generation, f.Subtask, m)
				case k >= m:
					where = fmt.Sprintf("in subtask %d, which does not exist at parallelism %d", k, m)
				}
				if moved {
					where += fmt.Sprintf(" (subtask %d reads v%d/%d there)", j, sp.Generation, base+j)
				}
				if of != nil && of.Undecodable != nil && !of.Missing {
					v.rowFinding(f, i, SeverityWarning, CheckParallelism, fmt.Sprintf("not checked at parallelism %d: key group %d lies %s, and subtask %d, which owns it there, reads %s, which does not decode: whether it holds a copy is not known", m, kg, where, j, of.Rel))
					return true
				}
				if of != nil && of != f && v.holds(of, r.Op, r.Key) {
					v.rowFinding(f, i, SeverityWarning, CheckParallelism, fmt.Sprintf("stale copy at parallelism %d: key group %d lies %s; subtask %d, which owns it there, holds a copy", m, kg, where, j))
					return true
				}
				v.rowFinding(f, i, SeverityError, CheckParallelism, fmt.Sprintf("key group %d lies %s, and subtask %d, which owns it there, holds no copy%s: a job resubmitted at parallelism %d loses this row", kg, where, j, missingNote(of), m))
				return true
			})
			f.ReleasePages()
		}
	}
}

// renderBytesShort renders b as clink's tools do: "text" when every byte is
// printable ASCII, else 0x<hex>; longer than max bytes it is cut with "…".
func renderBytesShort(b []byte, max int) string {
	cut := b
	if len(cut) > max {
		cut = cut[:max]
	}
	var s string
	if Printable(cut) {
		s = strconv.Quote(string(cut))
	} else {
		s = "0x" + hex.EncodeToString(cut)
	}
	if len(b) > max {
		s += "…"
	}
	return s
}

// RenderKey renders a stored key for a message: operator keys as 0xff
// followed by the logical key, keyed keys as kg/slot/user key.
func RenderKey(key []byte) string {
	k := ParseKey(key)
	switch {
	case len(key) == 0:
		return `""`
	case k.Kind == KindOperator:
		return fmt.Sprintf("0x%02x+%s", key[0], renderBytesShort(key[1:], 48))
	case k.Kind == KindKeyed:
		return fmt.Sprintf("kg %d slot %s key %s", k.KeyGroup, renderSlot(k.Slot, true), renderBytesShort(k.UserKey, 32))
	}
	return renderBytesShort(key, 48)
}
