// Package diff compares the logical state of two savepoints: what a restore
// of each would hold (savepoint.Union), per operator and slot, plus their
// version maps and schema metadata.
//
// Both sides are merged in canonical order (op, key bytes) in one pass; no
// side is loaded into a map. Per operator and slot the result counts the
// rows added (only in B), removed (only in A), changed (same key, different
// value bytes) and unchanged, with up to Options.Limit samples of each kind,
// rendered as clink's state tools render bytes and decoded with the codecs
// of a rule file's slot declarations when one is given.
//
// What counts as a difference (Result.Identical is false, `sptool diff`
// exits 1): any added, removed or changed row; any version-map change (per
// operator and state type: version or slot); any change of a schema
// metadata key other than clink's own two (whose content is compared as the
// version map, or is always "1") and sptool.provenance. sptool.provenance
// records which tool, rules and input produced a file; it changes whenever
// sptool rewrites a file, so its changes are reported but do not make two
// savepoints differ. The layout (parallelism, files, batches, compression,
// sidecars) is not state and is not compared; the sides' summaries show it.
//
// The JSON form of Result (snake_case tags) is a stable interface.
package diff

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sptool/sptool/export"
	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
)

// DefaultLimit is the default number of samples per slot and change kind.
const DefaultLimit = 5

// Options control a comparison.
type Options struct {
	// Limit is the number of samples kept per slot for each of added,
	// removed and changed (0: none).
	Limit int
	// Rules, when set, decodes the samples' keys and values with its slot
	// declarations (its rules are not applied).
	Rules *rules.Set
	// TempDir is where files of 64K rows or more in clink's hash-map order
	// are sorted, through temporary files ("" for os.TempDir()); files
	// under a million rows are read in place when that fails.
	TempDir string
}

// sortRows is the fewest rows of a file out of order that Compare reads
// through a sorted copy: from there on the copy is the faster, and it
// keeps memory within the sort's budget however many files a tree holds
// (a variable so tests can lower it).
var sortRows = 1 << 16

// Result is the outcome of a comparison.
type Result struct {
	// A and B describe the two inputs.
	A Side `json:"a"`
	B Side `json:"b"`
	// Identical reports that nothing counted as a difference (see the package comment).
	Identical bool `json:"identical"`
	// Summary adds up the differences.
	Summary Summary `json:"summary"`
	// Operators lists every operator present on either side, ascending,
	// with every slot, changed or not.
	Operators []Operator `json:"operators"`
	// Versions lists the version-map changes per (op, state type).
	Versions []VersionChange `json:"versions"`
	// Metadata lists the schema metadata keys whose values differ.
	Metadata []MetadataChange `json:"metadata"`
	// Warnings are, prefixed "A: " or "B: ", where each side was read
	// otherwise than clink reads it (Savepoint.ReadWarnings) and the
	// sides' union warnings.
	Warnings []string `json:"warnings"`
}

// Side describes one input.
type Side struct {
	Path       string `json:"path"`
	Kind       string `json:"kind"`
	Backend    string `json:"backend"`
	Generation int    `json:"generation"`
	Checkpoint uint64 `json:"checkpoint"`
	// Files is the number of snapshot files; Groups the chain groups ("0-3").
	Files  int    `json:"files"`
	Groups string `json:"groups"`
	// StoredRows counts the rows as stored; Rows the logical rows compared.
	StoredRows int `json:"stored_rows"`
	Rows       int `json:"rows"`
	// StaleCopies and Lost are the union's counts (see savepoint.UnionStats),
	// keyed rows and legacy raw keys; StaleRaw and LostRaw the raw keys
	// among them.
	StaleCopies int `json:"stale_copies"`
	Lost        int `json:"lost"`
	StaleRaw    int `json:"stale_raw_keys"`
	LostRaw     int `json:"lost_raw_keys"`
}

// Counts are the rows of a slot, an operator or the whole comparison by outcome.
type Counts struct {
	Added     int64 `json:"added"`
	Removed   int64 `json:"removed"`
	Changed   int64 `json:"changed"`
	Unchanged int64 `json:"unchanged"`
}

// Differs reports whether any row was added, removed or changed.
func (c Counts) Differs() bool { return c.Added+c.Removed+c.Changed > 0 }

func (c *Counts) add(o Counts) {
	c.Added += o.Added
	c.Removed += o.Removed
	c.Changed += o.Changed
	c.Unchanged += o.Unchanged
}

// Summary adds up a Result.
type Summary struct {
	Counts
	// OperatorsChanged and SlotsChanged count those with an added, removed
	// or changed row.
	OperatorsChanged int `json:"operators_changed"`
	SlotsChanged     int `json:"slots_changed"`
	// VersionChanges is len(Versions); MetadataChanges the metadata changes
	// that count as differences (all but sptool.provenance).
	VersionChanges  int `json:"version_changes"`
	MetadataChanges int `json:"metadata_changes"`
}

// Operator is one operator's comparison.
type Operator struct {
	Op uint64 `json:"op"`
	Counts
	// Slots lists the slots: named ones by slot bytes, then "<raw>".
	Slots []Slot `json:"slots"`
}

// Slot is one slot's comparison.
type Slot struct {
	// Slot is the name ("<raw>" for keys without a separator), SlotHex its
	// bytes, HasSlot false for "<raw>", Display the name as text output
	// shows it (quoted, or 0x hex when not printable).
	Slot    string `json:"slot"`
	SlotHex string `json:"slot_hex"`
	HasSlot bool   `json:"has_slot"`
	Display string `json:"display"`
	Counts
	// Samples holds up to Options.Limit rows of each outcome, in canonical order.
	Samples Samples `json:"samples"`
}

// Samples are example rows of a slot by outcome.
type Samples struct {
	Added   []Sample `json:"added"`
	Removed []Sample `json:"removed"`
	Changed []Sample `json:"changed"`
}

// Sample is one added, removed or changed row.
type Sample struct {
	// Kind is the row model's kind; KeyGroup its key group (-1 unless keyed).
	Kind     string `json:"kind"`
	KeyGroup int    `json:"key_group"`
	// Key is the user key rendered as clink's tools do (cut at 32 bytes);
	// KeyHex the whole stored key in hex.
	Key    string `json:"key"`
	KeyHex string `json:"key_hex"`
	// DecodedKey is the user key decoded with the slot's declared key codec
	// (null when the slot is not declared).
	DecodedKey any `json:"decoded_key"`
	// A and B are the value on each side (null where the row is absent).
	A *Value `json:"a"`
	B *Value `json:"b"`
	// Note, for operator state, says what differs when the values shown
	// (the copies the union chose) may not: the timers of a timer blob,
	// or the values some subtasks restore, each its own copy, on each
	// side (the first few; omitted when empty).
	Note string `json:"note,omitempty"`
}

// Value is a row's value on one side.
type Value struct {
	// Value is rendered as clink's tools do (cut at 64 bytes); Hex is the
	// whole stored value.
	Value string `json:"value"`
	Hex   string `json:"hex"`
	// Decoded is the value decoded with the slot's declared value codec,
	// TTL stamp removed (null when not declared or not decodable);
	// ExpireAt the TTL stamp of a 'ttl: true' slot (else null).
	Decoded  any    `json:"decoded"`
	ExpireAt *int64 `json:"expire_at"`
	// Subtask is the subtask whose copy this is (-1 for a single file).
	Subtask int `json:"subtask"`
}

// VersionChange is a version-map entry that differs. StateTypeHex, and
// an entry's SlotHex, give the state type and the slot in hex when they are
// not valid UTF-8 (absent otherwise: savepoint.HexUnlessUTF8).
type VersionChange struct {
	Op           uint64 `json:"op"`
	StateType    string `json:"state_type"`
	StateTypeHex string `json:"state_type_hex,omitempty"`
	// A and B are the entry on each side (null when absent).
	A *VersionEntry `json:"a"`
	B *VersionEntry `json:"b"`
}

// VersionEntry is a version-map entry's version and slot ("" = every row of
// the op); SlotHex gives the slot in hex when it is not valid UTF-8 (absent
// otherwise). The report of plan and apply gives its entries so too.
type VersionEntry = savepoint.VersionState

// MetadataChange is a schema metadata key whose values differ. KeyHex
// gives the key in hex when it is not valid UTF-8, and AHex (BHex) every
// value of A (B) in hex, in the same order, when one of them is not (absent
// otherwise: JSON text cannot hold such bytes).
type MetadataChange struct {
	Key    string `json:"key"`
	KeyHex string `json:"key_hex,omitempty"`
	// A and B are the distinct values the side's files carry, sorted (empty when absent).
	A    []string `json:"a"`
	B    []string `json:"b"`
	AHex []string `json:"a_hex,omitempty"`
	BHex []string `json:"b_hex,omitempty"`
	// CountsAsDifference is false for sptool.provenance (see the package comment).
	CountsAsDifference bool `json:"counts_as_difference"`
}

type slotKey struct {
	op   uint64
	has  bool
	name string
}

type differ struct {
	opts  Options
	slots map[slotKey]*Slot
	env   rules.Env
	// a and b are the sides; sameLayout reports that they have the same
	// subtasks and chain groups, so that what each subtask restores can
	// be compared subtask by subtask.
	a, b       *savepoint.Savepoint
	sameLayout bool
	// keyed are, per side of a tree of several chain groups, the groups
	// holding keyed rows of the operator merged last: the groups that run
	// it, whose timer blobs fire (the others' are frozen copies, format
	// 10.3). Operator rows sort after an operator's keyed rows, so they
	// are known when its timer blob comes.
	keyed [2]savepoint.RunningGroups
}

// cancelEvery is how many rows Compare merges between looks at its
// context.
const cancelEvery = 1 << 16

// Compare compares the logical state of a and b. It fails when ctx is
// done before it ends, or when a file of either side changed while it was
// read (savepoint.ErrInputChanged): its verdict would describe a mix. A
// memory-mapped input cut short while it is read is such an error too, not
// a panic: Compare reads under savepoint.Guard. A payload of either side
// that fails its integrity check is refused however the side was opened
// (savepoint.Savepoint.CheckIntegrity): its rows would be compared as
// state that clink refuses to restore.
func Compare(ctx context.Context, a, b *savepoint.Savepoint, opts Options) (res *Result, err error) {
	for i, sp := range []*savepoint.Savepoint{a, b} {
		if err := sp.CheckUsable(); err != nil {
			return nil, fmt.Errorf("diff: side %c: %w", 'A'+i, err)
		}
	}
	if err := errors.Join(a.UndecodableError(), b.UndecodableError()); err != nil {
		return nil, err
	}
	for i, sp := range []*savepoint.Savepoint{a, b} {
		if err := sp.CheckIntegrity(""); err != nil {
			return nil, fmt.Errorf("diff: side %c: %w", 'A'+i, err)
		}
	}
	for i, sp := range []*savepoint.Savepoint{a, b} {
		if err := sp.CheckTempDirApart(opts.TempDir); err != nil {
			// (Both sides may be one input: named once.)
			return nil, fmt.Errorf("diff: side %c: %w", 'A'+i, err)
		}
	}
	if err := checkGaps(a, b); err != nil {
		return nil, err
	}
	err = savepoint.Guard(func() error {
		res, err = compareSides(ctx, a, b, opts)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// checkGaps refuses to compare a tree with no directory for a subtask
// below its highest with a side of another layout: its chain groups
// cannot be told across the gap, so a copy another subtask holds of the
// missing one's rows, or a stale copy of a present owner's, would pass
// for restored state, and differ from the other side's where nothing
// changed. Two trees of the same subtasks, gap and all (a rule's input
// and its output), are compared, with the warning each side's union
// gives.
func checkGaps(a, b *savepoint.Savepoint) error {
	if sameLayout(a, b) {
		return nil
	}
	for i, sp := range []*savepoint.Savepoint{a, b} {
		if err := sp.CheckConsecutive(); err != nil {
			return fmt.Errorf("diff: side %c: %s: %w; it has no restored state to compare with a side of another layout (sptool cat gives every stored row)", 'A'+i, sp.Path, err)
		}
	}
	return nil
}

// compareSides is Compare, its reads of mapped input unguarded.
func compareSides(ctx context.Context, a, b *savepoint.Savepoint, opts Options) (*Result, error) {
	res := &Result{Operators: []Operator{}, Versions: []VersionChange{}, Metadata: []MetadataChange{}, Warnings: []string{}}
	d := &differ{opts: opts, slots: map[slotKey]*Slot{}, a: a, b: b, sameLayout: sameLayout(a, b)}
	d.keyed = [2]savepoint.RunningGroups{savepoint.NewRunningGroups(a), savepoint.NewRunningGroups(b)}
	var sa, sb savepoint.UnionStats
	va, droppedA, doneA, err := inOrder(ctx, a, "A", opts.TempDir, &res.Warnings)
	if err != nil {
		return nil, err
	}
	defer doneA()
	vb, droppedB, doneB, err := inOrder(ctx, b, "B", opts.TempDir, &res.Warnings)
	if err != nil {
		return nil, err
	}
	defer doneB()
	// Each side's rows are merged on a goroutine of its own; a fault in
	// one (an input cut short) is raised here once both have returned.
	var faults savepoint.Faults
	nextA, stopA := pullAhead(va.UnionSeqCopies(&sa), &faults)
	defer stopA()
	nextB, stopB := pullAhead(vb.UnionSeqCopies(&sb), &faults)
	defer stopB()
	ra, okA := nextA()
	rb, okB := nextB()
	for n := 0; okA || okB; n++ {
		if n%cancelEvery == cancelEvery-1 && ctx.Err() != nil {
			break
		}
		c := 0
		switch {
		case !okA:
			c = 1
		case !okB:
			c = -1
		default:
			c = ra.Row.Compare(rb.Row)
		}
		switch {
		case c < 0:
			d.keyed[0].NoteRow(ra.Row, ra.Subtask)
			d.removed(ra)
			ra, okA = nextA()
		case c > 0:
			d.keyed[1].NoteRow(rb.Row, rb.Subtask)
			d.added(rb)
			rb, okB = nextB()
		default:
			d.keyed[0].NoteRow(ra.Row, ra.Subtask)
			d.keyed[1].NoteRow(rb.Row, rb.Subtask)
			d.both(ra, rb)
			ra, okA = nextA()
			rb, okB = nextB()
		}
	}
	stopA()
	stopB()
	faults.Wait() // and the merges' statistics are complete
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := a.CheckUnchanged(); err != nil {
		return nil, fmt.Errorf("A: %w", err)
	}
	if err := b.CheckUnchanged(); err != nil {
		return nil, fmt.Errorf("B: %w", err)
	}
	// The rows the sorts dropped as duplicates were stored rows.
	sa.StoredRows, sa.FileDuplicates = sa.StoredRows+droppedA, sa.FileDuplicates+droppedA
	sb.StoredRows, sb.FileDuplicates = sb.StoredRows+droppedB, sb.FileDuplicates+droppedB
	res.A, res.B = side(a, sa), side(b, sb)
	for _, w := range slices.Concat(a.ReadWarnings(), a.EmptyPayloadWarnings(), sa.Warnings) {
		res.Warnings = append(res.Warnings, "A: "+w)
	}
	for _, w := range slices.Concat(b.ReadWarnings(), b.EmptyPayloadWarnings(), sb.Warnings) {
		res.Warnings = append(res.Warnings, "B: "+w)
	}
	d.collect(res)
	res.Versions = versionChanges(a, b, res)
	res.Metadata = metadataChanges(a, b)
	res.Summary.VersionChanges = len(res.Versions)
	for _, m := range res.Metadata {
		if m.CountsAsDifference {
			res.Summary.MetadataChanges++
		}
	}
	res.Identical = !res.Summary.Differs() && res.Summary.VersionChanges == 0 && res.Summary.MetadataChanges == 0
	return res, nil
}

// inOrder returns the view of side sp, called name, whose large files out
// of order are read through sorted copies in dir (Savepoint.InOrder), the
// rows their sorts dropped as duplicates, and a function that removes
// the copies. Should the copies fail (no room for them), it returns sp
// itself, read in place as smaller files are, and adds a warning saying
// so; but once ctx is done it fails with ctx's error: reading in place
// would sort in memory, at length, what the stopped sorts were sorting.
func inOrder(ctx context.Context, sp *savepoint.Savepoint, name, dir string, warnings *[]string) (*savepoint.Savepoint, int, func(), error) {
	v, dropped, done, err := sp.InOrder(ctx, dir, sortRows, false)
	if cerr := ctx.Err(); cerr != nil {
		if err == nil {
			done()
		}
		return nil, 0, nil, cerr
	}
	if err != nil {
		*warnings = append(*warnings, fmt.Sprintf("%s: %v; its files are read in place", name, err))
		return sp, 0, func() {}, nil
	}
	return v, dropped, done, nil
}

// pullBatch is how many rows pullAhead hands over at a time.
const pullBatch = 512

// pullAhead runs seq on a goroutine of its own (started through faults,
// whose Wait the caller calls once it is done) and hands its rows to next
// pullBatch at a time: each side's merge of a diff then runs beside the
// comparison, and no switch is made per row (iter.Pull's, one a row, were
// 10% of the CPU of a diff of two 10M-row savepoints). The rows' bytes are
// the savepoints' (their columns or memory maps), not the sequence's
// buffers, so a row stays valid after the next. stop ends the sequence
// early, and returns once its goroutine has.
func pullAhead(seq iter.Seq[savepoint.UnionRow], faults *savepoint.Faults) (next func() (savepoint.UnionRow, bool), stop func()) {
	// Three buffers: one filling, one handed over, one waiting.
	full := make(chan []savepoint.UnionRow, 1)
	free := make(chan []savepoint.UnionRow, 3)
	for range 3 {
		free <- make([]savepoint.UnionRow, 0, pullBatch)
	}
	quit := make(chan struct{})
	faults.Go(func() {
		defer close(full)
		send := func(buf []savepoint.UnionRow) bool {
			select {
			case full <- buf:
				return true
			case <-quit:
				return false
			}
		}
		buf := <-free
		for r := range seq {
			if buf = append(buf, r); len(buf) < pullBatch {
				continue
			}
			if !send(buf) {
				return
			}
			select {
			case buf = <-free:
			case <-quit:
				return
			}
		}
		if len(buf) > 0 {
			send(buf)
		}
	})
	var held, cur []savepoint.UnionRow
	next = func() (savepoint.UnionRow, bool) {
		if len(held) == 0 {
			if cur != nil {
				free <- cur[:0]
				cur = nil
			}
			b, ok := <-full // closed: at the end, every time
			if !ok {
				return savepoint.UnionRow{}, false
			}
			cur, held = b, b
		}
		r := held[0]
		held = held[1:]
		return r, true
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		close(quit)
		for range full { // until the goroutine has returned
		}
	}
	return next, stop
}

func side(sp *savepoint.Savepoint, st savepoint.UnionStats) Side {
	return Side{
		Path: sp.Path, Kind: sp.Kind.String(), Backend: string(sp.Backend), Generation: sp.Generation, Checkpoint: sp.Checkpoint,
		Files: len(sp.Files), Groups: savepoint.FormatGroups(sp.Groups), StoredRows: st.StoredRows, Rows: st.Rows,
		StaleCopies: st.StaleCopies, Lost: st.Lost, StaleRaw: st.StaleRaw, LostRaw: st.LostRaw,
	}
}

func (d *differ) slot(r savepoint.Row) (*Slot, savepoint.Key) {
	k := savepoint.ParseKey(r.Key)
	sk := slotKey{r.Op, k.HasSlot, string(k.Slot)}
	s := d.slots[sk]
	if s == nil {
		s = &Slot{Slot: savepoint.RawSlot, Display: savepoint.RawSlot, Samples: Samples{Added: []Sample{}, Removed: []Sample{}, Changed: []Sample{}}}
		if k.HasSlot {
			s.Slot, s.HasSlot, s.SlotHex, s.Display = sk.name, true, hex.EncodeToString(k.Slot), displaySlot(k.Slot)
		}
		d.slots[sk] = s
	}
	return s, k
}

// displaySlot quotes a printable slot name, else shows 0x hex.
func displaySlot(b []byte) string {
	if savepoint.Printable(b) {
		return strconv.Quote(string(b))
	}
	return "0x" + hex.EncodeToString(b)
}

func (d *differ) sample(u savepoint.UnionRow, k savepoint.Key) (Sample, *Value) {
	s := Sample{Kind: k.Kind.String(), KeyGroup: k.KeyGroup, Key: string(savepoint.AppendRenderUserKey(nil, u.Row.Key, k, 32)), KeyHex: hex.EncodeToString(u.Row.Key)}
	v := &Value{Value: savepoint.RenderBytes(u.Row.Value, 64), Hex: hex.EncodeToString(u.Row.Value), Subtask: u.Subtask}
	if d.opts.Rules != nil {
		dec, _ := export.DecodeRow(d.opts.Rules, &d.env, u.Row, u.Subtask)
		s.DecodedKey, v.Decoded, v.ExpireAt = dec.JSONFields(nil, nil)
	}
	return s, v
}

func (d *differ) removed(u savepoint.UnionRow) {
	s, k := d.slot(u.Row)
	s.Removed++
	if len(s.Samples.Removed) < d.opts.Limit {
		smp, v := d.sample(u, k)
		smp.A = v
		s.Samples.Removed = append(s.Samples.Removed, smp)
	}
}

func (d *differ) added(u savepoint.UnionRow) {
	s, k := d.slot(u.Row)
	s.Added++
	if len(s.Samples.Added) < d.opts.Limit {
		smp, v := d.sample(u, k)
		smp.B = v
		s.Samples.Added = append(s.Samples.Added, smp)
	}
}

func (d *differ) both(a, b savepoint.UnionRow) {
	s, k := d.slot(a.Row)
	same, note := bytes.Equal(a.Row.Value, b.Row.Value), ""
	switch {
	case k.Kind != savepoint.KindOperator && len(a.Row.Key) != 0:
		// (The empty key, like operator state, is each subtask's own.)
	case bytes.HasPrefix(a.Row.Key, savepoint.TimerKeyPrefix):
		// A timer blob: the timers a restore keeps, whichever blobs hold
		// them (a rescale moves them between subtasks).
		_, okA := d.keyed[0].Of(a.Row.Op)
		_, okB := d.keyed[1].Of(b.Row.Op)
		if eq, n, ok := sameTimers(d.a, a, &d.keyed[0], d.b, b, &d.keyed[1]); ok && okA && okB {
			same = eq
			if !eq {
				note = fmt.Sprintf("the timers a restore keeps differ (%d on one side only)", n)
			}
		} else if !sameCopies(a, b, d.release) {
			// A blob that does not decode, or an operator that holds no
			// keyed rows to say which group runs it: its stored copies,
			// byte for byte.
			same, note = false, "the blob's stored copies differ (its timers could not be compared: a copy does not decode, or no keyed row says which chain group runs the operator)"
		}
	case d.sameLayout && same:
		// Each subtask restores its own copy: they may differ where the
		// copies the union chose do not. In a tree of several chain
		// groups only the subtasks of the groups running the operator
		// count: the others' copies are frozen replicas (format 10.3).
		ga, okA := d.keyed[0].Of(a.Row.Op)
		gb, okB := d.keyed[1].Of(b.Row.Op)
		running := func(sub int) bool {
			if !okA || !okB || ga == nil && gb == nil {
				return true
			}
			return d.keyed[0].Runs(a.Row.Op, sub) || d.keyed[1].Runs(b.Row.Op, sub)
		}
		if diffs := differentRestores(a, b, running, d.release); len(diffs) > 0 {
			same, note = false, restoresNote(diffs)
		}
	}
	if same {
		s.Unchanged++
		return
	}
	s.Changed++
	if len(s.Samples.Changed) < d.opts.Limit {
		smp, va := d.sample(a, k)
		_, vb := d.sample(b, k)
		smp.A, smp.B, smp.Note = va, vb, note
		s.Samples.Changed = append(s.Samples.Changed, smp)
	}
}

// sameLayout reports whether a and b are trees of the same subtasks and
// chain groups.
func sameLayout(a, b *savepoint.Savepoint) bool {
	if a.Kind == savepoint.InputFile || b.Kind == savepoint.InputFile || len(a.Files) != len(b.Files) || !slices.Equal(a.Groups, b.Groups) {
		return false
	}
	for i := range a.Files {
		if a.Files[i].Subtask != b.Files[i].Subtask {
			return false
		}
	}
	return true
}

// release drops from the resident set the pages of subtask sub's files
// on both sides: once a copy of savepoint.LargeValueBytes or more is
// compared, a broadcast state in every file would otherwise be resident
// as many times over.
func (d *differ) release(sub int) {
	for _, sp := range []*savepoint.Savepoint{d.a, d.b} {
		if f := sp.File(sub); f != nil {
			f.ReleasePages()
		}
	}
}

// sameCopies reports whether a and b are stored, byte for byte, by the
// same subtasks; release is called with each subtask whose copies, of
// savepoint.LargeValueBytes or more, were compared.
func sameCopies(a, b savepoint.UnionRow, release func(sub int)) bool {
	ca, cb := copiesOf(a), copiesOf(b)
	if len(ca) != len(cb) {
		return false
	}
	byA := map[int][]byte{}
	for _, c := range ca {
		byA[c.Subtask] = c.Row.Value
	}
	for _, c := range cb {
		v, ok := byA[c.Subtask]
		if !ok || !bytes.Equal(v, c.Row.Value) {
			return false
		}
		if len(v) >= savepoint.LargeValueBytes {
			release(c.Subtask)
		}
	}
	return true
}

// copiesOf is the stored copies of a union row: Copies, or the row itself.
func copiesOf(u savepoint.UnionRow) []savepoint.UnionRow {
	if u.Copies != nil {
		return u.Copies
	}
	return []savepoint.UnionRow{u}
}

// restoreDiff is what one subtask restores of an operator-state row on
// each side (see differentRestores): its own copy, or (ownA, ownB false)
// the union's, the copy shown.
type restoreDiff struct {
	sub        int
	a, b       []byte
	ownA, ownB bool
	// noneA, noneB: the subtask restores no copy on that side (the empty
	// key, which no union fills in, and the subtask holds none).
	noneA, noneB bool
}

// maxRestoreDiffs bounds the subtasks restoresNote shows the values of.
const maxRestoreDiffs = 3

// restoresNote says which subtasks (at least one) restore different
// values on the two sides, and what, for the first few: "…: subtask 0:
// 0x0a… (int64 10), its own -> 0x0b… (int64 11), the union's", A's value
// before B's.
func restoresNote(diffs []restoreDiff) string {
	subs := make([]int, len(diffs))
	for i, d := range diffs {
		subs[i] = d.sub
	}
	head := fmt.Sprintf("subtasks %s restore other values on each side", savepoint.JoinInts(subs, ","))
	if len(diffs) == 1 {
		head = fmt.Sprintf("subtask %d restores another value on each side", diffs[0].sub)
	}
	if slices.ContainsFunc(diffs, func(d restoreDiff) bool { return d.noneA || d.noneB }) {
		head += " (a subtask restores its own copy of the empty key, and none without one: no union fills the empty key in, format 1.6 and 5.3)"
	} else {
		head += " (a subtask restores its own copy, one without a copy the union's, the copy shown: format 5.3)"
	}
	whose := map[bool]string{true: "its own", false: "the union's"}
	side := func(v []byte, own, none bool) string {
		if none {
			return "none"
		}
		return savepoint.RenderBytes(v, 24) + ", " + whose[own]
	}
	var parts []string
	for _, d := range diffs[:min(len(diffs), maxRestoreDiffs)] {
		parts = append(parts, fmt.Sprintf("subtask %d: %s -> %s", d.sub, side(d.a, d.ownA, d.noneA), side(d.b, d.ownB, d.noneB)))
	}
	if len(diffs) > maxRestoreDiffs {
		parts = append(parts, "…")
	}
	return head + ": " + strings.Join(parts, "; ")
}

// differentRestores returns the subtasks (those running reports) that
// restore different values of an operator-state row, or of the empty key,
// whose chosen copies a and b are equal, at one layout, with what each
// restores on each side: a subtask restores its own copy, and one without
// a copy the union's (format 5.3: own wins, the others are merged in), but
// for the empty key, which is not operator state and which the union does
// not take (format 1.6 and 5.3 step 4): without a copy, none. release is
// called with each subtask whose copy, of savepoint.LargeValueBytes or
// more, was compared.
func differentRestores(a, b savepoint.UnionRow, running func(sub int) bool, release func(sub int)) []restoreDiff {
	unioned := len(a.Row.Key) > 0
	own := func(u savepoint.UnionRow) map[int][]byte {
		m := map[int][]byte{}
		for _, c := range copiesOf(u) {
			m[c.Subtask] = c.Row.Value
		}
		return m
	}
	oa, ob := own(a), own(b)
	var diffs []restoreDiff
	for _, sub := range slices.Sorted(maps.Keys(oa)) {
		if !running(sub) {
			continue
		}
		vb, ok := ob[sub]
		if !ok && !unioned {
			diffs = append(diffs, restoreDiff{sub: sub, a: oa[sub], ownA: true, noneB: true})
		} else {
			if !ok {
				vb = b.Row.Value
			}
			if !bytes.Equal(oa[sub], vb) {
				diffs = append(diffs, restoreDiff{sub: sub, a: oa[sub], b: vb, ownA: true, ownB: ok})
			}
		}
		if len(vb) >= savepoint.LargeValueBytes {
			release(sub)
		}
	}
	for _, sub := range slices.Sorted(maps.Keys(ob)) {
		if _, ok := oa[sub]; !ok && running(sub) && (!unioned || !bytes.Equal(a.Row.Value, ob[sub])) {
			diffs = append(diffs, restoreDiff{sub: sub, a: a.Row.Value, b: ob[sub], ownB: true, noneA: !unioned})
		}
		if len(ob[sub]) >= savepoint.LargeValueBytes {
			release(sub)
		}
	}
	slices.SortFunc(diffs, func(x, y restoreDiff) int { return x.sub - y.sub })
	return diffs
}

// sameTimers compares the timers a restore of each side keeps of one
// operator's timer blobs: those of every copy in a group that runs the
// operator (running, which takes every group when it is not known; the
// others are frozen copies) whose key
// group the copy's subtask owns (a restore filters the others, format
// 10.2), or whose owner has no blob and restores this one, the last (5.3
// step 4), each once. n is how many are on one side only; ok is false when
// a blob does not decode (the blobs' bytes are compared then).
func sameTimers(spA *savepoint.Savepoint, a savepoint.UnionRow, runA *savepoint.RunningGroups, spB *savepoint.Savepoint, b savepoint.UnionRow, runB *savepoint.RunningGroups) (same bool, n int, ok bool) {
	set := func(sp *savepoint.Savepoint, u savepoint.UnionRow, running *savepoint.RunningGroups) (map[string]bool, bool) {
		m := map[string]bool{}
		var live []savepoint.UnionRow
		hasBlob := map[int]bool{}
		for _, c := range copiesOf(u) {
			if running.Runs(u.Row.Op, c.Subtask) {
				live = append(live, c)
				hasBlob[c.Subtask] = true
			}
		}
		for i, c := range live {
			proc, event, err := savepoint.ParseTimers(c.Row.Value)
			if err != nil {
				return nil, false
			}
			g, grouped := sp.GroupOf(c.Subtask)
			for domain, list := range [2][]savepoint.Timer{proc, event} {
				for _, t := range list {
					if grouped && !savepoint.TimerFires(g, c.Subtask, t.Key, func(o int) bool { return hasBlob[o] }, i == len(live)-1) {
						continue
					}
					m[fmt.Sprintf("%d/%d/%x", domain, t.Time, t.Key)] = true
				}
			}
		}
		return m, true
	}
	ta, okA := set(spA, a, runA)
	tb, okB := set(spB, b, runB)
	if !okA || !okB {
		return false, 0, false
	}
	for t := range ta {
		if !tb[t] {
			n++
		}
	}
	for t := range tb {
		if !ta[t] {
			n++
		}
	}
	return n == 0, n, true
}

// collect sorts the slots into operators and adds up the counts.
func (d *differ) collect(res *Result) {
	keys := make([]slotKey, 0, len(d.slots))
	for k := range d.slots {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b slotKey) int {
		if a.op != b.op {
			return cmp.Compare(a.op, b.op)
		}
		if a.has != b.has {
			if a.has {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	for _, k := range keys {
		s := d.slots[k]
		if n := len(res.Operators); n == 0 || res.Operators[n-1].Op != k.op {
			res.Operators = append(res.Operators, Operator{Op: k.op, Slots: []Slot{}})
		}
		op := &res.Operators[len(res.Operators)-1]
		op.Slots = append(op.Slots, *s)
		op.Counts.add(s.Counts)
		res.Summary.Counts.add(s.Counts)
		if s.Differs() {
			res.Summary.SlotsChanged++
		}
	}
	for _, op := range res.Operators {
		if op.Differs() {
			res.Summary.OperatorsChanged++
		}
	}
}

func versionChanges(a, b *savepoint.Savepoint, res *Result) []VersionChange {
	va, na := a.JobVersions()
	vb, nb := b.JobVersions()
	if na > 1 {
		res.Warnings = append(res.Warnings, "A: the files carry different version maps; the first non-empty one is compared (as clink's merge keeps it), and which file carries which (each subtask restores its own)")
	}
	if nb > 1 {
		res.Warnings = append(res.Warnings, "B: the files carry different version maps; the first non-empty one is compared (as clink's merge keeps it), and which file carries which (each subtask restores its own)")
	}
	type key struct {
		op uint64
		t  string
	}
	entries := map[key]*VersionChange{}
	for i, vm := range []savepoint.VersionMap{va, vb} {
		for _, e := range vm.Entries() {
			k := key{e.Op, e.StateType}
			c := entries[k]
			if c == nil {
				c = &VersionChange{Op: e.Op, StateType: e.StateType, StateTypeHex: savepoint.HexUnlessUTF8(e.StateType)}
				entries[k] = c
			}
			ve := e.State()
			if i == 0 {
				c.A = ve
			} else {
				c.B = ve
			}
		}
	}
	out := []VersionChange{}
	for _, c := range entries {
		if c.A == nil || c.B == nil || *c.A != *c.B {
			out = append(out, *c)
		}
	}
	slices.SortFunc(out, func(x, y VersionChange) int {
		if x.Op != y.Op {
			return cmp.Compare(x.Op, y.Op)
		}
		return strings.Compare(x.StateType, y.StateType)
	})
	return out
}

// versionMapFiles compares which version map each file carries when the
// files of a side do not all carry the same one: a subtask restores its own
// file's map (a file without one reads every stamp as version 1), so the
// job-wide map versionChanges compares does not tell all. With the same
// subtasks on both sides the maps are compared subtask by subtask, else as
// sets. A difference is a metadata change of clink.state_versions that
// counts, its values the packed maps ("" for none), each "subtask N: map"
// when compared by subtask.
func versionMapFiles(a, b *savepoint.Savepoint) (MetadataChange, bool) {
	_, na := a.JobVersions()
	_, nb := b.JobVersions()
	if na <= 1 && nb <= 1 {
		return MetadataChange{}, false
	}
	bySubtask := func(sp *savepoint.Savepoint) map[int]string {
		m := map[int]string{}
		for _, f := range sp.Files {
			if f.Snapshot != nil {
				m[f.Subtask] = f.Snapshot.Versions.Pack()
			}
		}
		return m
	}
	pa, pb := bySubtask(a), bySubtask(b)
	sameSubtasks := len(pa) == len(pb)
	for s := range pa {
		if _, ok := pb[s]; !ok {
			sameSubtasks = false
		}
	}
	values := func(m map[int]string) []string {
		var out []string
		for _, s := range slices.Sorted(maps.Keys(m)) {
			v := m[s]
			if sameSubtasks {
				v = fmt.Sprintf("subtask %d: %s", s, v)
			}
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
		if !sameSubtasks {
			slices.Sort(out)
		}
		return out
	}
	va, vb := values(pa), values(pb)
	if slices.Equal(va, vb) {
		return MetadataChange{}, false
	}
	return MetadataChange{Key: savepoint.MetaStateVersions, A: va, B: vb, CountsAsDifference: true}, true
}

// metadataValues returns, per metadata key other than clink's two, the
// distinct values the files carry, sorted.
func metadataValues(sp *savepoint.Savepoint) map[string][]string {
	out := map[string][]string{}
	for _, f := range sp.Files {
		if f.Snapshot == nil {
			continue
		}
		for _, e := range f.Snapshot.Metadata {
			if e.Key == savepoint.MetaFormatVersion || e.Key == savepoint.MetaStateVersions {
				continue
			}
			if !slices.Contains(out[e.Key], e.Value) {
				out[e.Key] = append(out[e.Key], e.Value)
			}
		}
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}

// metadataChanges returns the metadata keys whose values differ between the
// sides, sorted by key, with the per-file version maps (versionMapFiles).
func metadataChanges(a, b *savepoint.Savepoint) []MetadataChange {
	ma, mb := metadataValues(a), metadataValues(b)
	keys := map[string]bool{}
	for k := range ma {
		keys[k] = true
	}
	for k := range mb {
		keys[k] = true
	}
	out := []MetadataChange{}
	for k := range keys {
		if slices.Equal(ma[k], mb[k]) {
			continue
		}
		va, vb := ma[k], mb[k]
		if va == nil {
			va = []string{}
		}
		if vb == nil {
			vb = []string{}
		}
		out = append(out, MetadataChange{Key: k, A: va, B: vb, CountsAsDifference: k != savepoint.MetaProvenance})
	}
	if c, ok := versionMapFiles(a, b); ok {
		out = append(out, c)
	}
	slices.SortFunc(out, func(x, y MetadataChange) int { return strings.Compare(x.Key, y.Key) })
	for i := range out {
		out[i].KeyHex = savepoint.HexUnlessUTF8(out[i].Key)
		out[i].AHex, out[i].BHex = hexUnlessUTF8(out[i].A), hexUnlessUTF8(out[i].B)
	}
	return out
}

// hexUnlessUTF8 returns vals in hex when one of them is not valid UTF-8,
// else nil.
func hexUnlessUTF8(vals []string) []string {
	if !slices.ContainsFunc(vals, func(v string) bool { return !utf8.ValidString(v) }) {
		return nil
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = hex.EncodeToString([]byte(v))
	}
	return out
}

// WriteText renders r for a terminal, in the manner of clink's state-diff:
// a header naming both sides, one line per slot that differs with its
// samples, the version-map and metadata changes, and a closing verdict.
func (r *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "sptool diff\n  A: %s\n  B: %s\n", sideLabel(r.A), sideLabel(r.B))
	for _, op := range r.Operators {
		for _, s := range op.Slots {
			if !s.Differs() {
				continue
			}
			fmt.Fprintf(&b, "op %d slot %s: +%d -%d ~%d (%d unchanged)\n", op.Op, s.Display, s.Added, s.Removed, s.Changed, s.Unchanged)
			for _, x := range s.Samples.Removed {
				fmt.Fprintf(&b, "  - %s was %s%s\n", sampleKey(x), x.A.Value, decodedNote(x, x.A, nil))
			}
			more(&b, s.Removed, len(s.Samples.Removed), "removed")
			for _, x := range s.Samples.Added {
				fmt.Fprintf(&b, "  + %s -> %s%s\n", sampleKey(x), x.B.Value, decodedNote(x, nil, x.B))
			}
			more(&b, s.Added, len(s.Samples.Added), "added")
			for _, x := range s.Samples.Changed {
				if x.A.Hex == x.B.Hex {
					// The copies shown are alike: the note says what differs.
					fmt.Fprintf(&b, "  ~ %s %s, the copy shown on both sides%s\n", sampleKey(x), x.A.Value, decodedNote(x, x.A, nil))
				} else {
					fmt.Fprintf(&b, "  ~ %s %s -> %s%s\n", sampleKey(x), x.A.Value, x.B.Value, decodedNote(x, x.A, x.B))
				}
				if x.Note != "" {
					fmt.Fprintf(&b, "    (%s)\n", x.Note)
				}
			}
			more(&b, s.Changed, len(s.Samples.Changed), "changed")
		}
	}
	for _, v := range r.Versions {
		fmt.Fprintf(&b, "version: op %d type %q: %s -> %s\n", v.Op, v.StateType, versionText(v.A), versionText(v.B))
	}
	for _, m := range r.Metadata {
		note := ""
		switch {
		case !m.CountsAsDifference:
			note = " (provenance; not a state difference)"
		case m.Key == savepoint.MetaStateVersions:
			// The job-wide entries compare as "version:" lines; this is
			// each file's own map, which a restore of the file reads.
			note = " (each file's own version map, \"\" for none: a file without one reads every stamp as version 1"
			if len(r.Versions) == 0 {
				note += "; the job-wide entries are the same"
			}
			note += ")"
		}
		fmt.Fprintf(&b, "metadata: %q: %s%s\n", m.Key, metaChangeText(m.A, m.B), note)
	}
	s := r.Summary
	if r.Identical {
		fmt.Fprintf(&b, "identical: no state, version-map or metadata differences (%d logical rows)\n", s.Unchanged)
	} else {
		fmt.Fprintf(&b, "different: %d added, %d removed, %d changed, %d unchanged rows (%d slot%s of %d operator%s differ); %d version-map change%s; %d metadata change%s\n",
			s.Added, s.Removed, s.Changed, s.Unchanged, s.SlotsChanged, plural(s.SlotsChanged), s.OperatorsChanged, plural(s.OperatorsChanged),
			s.VersionChanges, plural(s.VersionChanges), s.MetadataChanges, plural(s.MetadataChanges))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func sideLabel(s Side) string {
	var parts []string
	parts = append(parts, s.Kind)
	if s.Kind != "file" {
		parts = append(parts, "generation "+strconv.Itoa(s.Generation), "checkpoint "+strconv.FormatUint(s.Checkpoint, 10), fmt.Sprintf("%d file%s", s.Files, plural(s.Files)))
	}
	parts = append(parts, fmt.Sprintf("%d logical rows", s.Rows))
	return fmt.Sprintf("%s (%s)", savepoint.ShowName(s.Path), strings.Join(parts, ", "))
}

func sampleKey(x Sample) string {
	if x.KeyGroup >= 0 {
		return fmt.Sprintf("kg=%d key %s", x.KeyGroup, x.Key)
	}
	return fmt.Sprintf("%s key %s", x.Kind, x.Key)
}

// more notes the rows of a kind left out of the samples shown: none when
// none is shown (--limit 0 asks for the counts alone, which the slot's
// line gives; with a limit above 0 and rows of the kind, one is shown).
func more(b *strings.Builder, n int64, shown int, what string) {
	if shown > 0 && n > int64(shown) {
		fmt.Fprintf(b, "  ... %d more %s (raise --limit)\n", n-int64(shown), what)
	}
}

// decodedNote shows the decoded key and values in brackets, when decoded.
func decodedNote(x Sample, a, b *Value) string {
	var parts []string
	if x.DecodedKey != nil {
		parts = append(parts, "key="+export.ShownText(x.DecodedKey))
	}
	val := func(v *Value) (string, bool) {
		if v == nil || v.Decoded == nil {
			return "", false
		}
		s := export.ShownText(v.Decoded)
		if v.ExpireAt != nil {
			s += " expire_at=" + strconv.FormatInt(*v.ExpireAt, 10)
		}
		return s, true
	}
	sa, okA := val(a)
	sb, okB := val(b)
	// A changed row one side of which does not decode says which side
	// the decoded value is.
	const none = "(not decoded)"
	switch {
	case okA && okB:
		parts = append(parts, "value="+sa+" -> "+sb)
	case okA && b != nil:
		parts = append(parts, "value="+sa+" -> "+none)
	case okB && a != nil:
		parts = append(parts, "value="+none+" -> "+sb)
	case okA:
		parts = append(parts, "value="+sa)
	case okB:
		parts = append(parts, "value="+sb)
	}
	if len(parts) == 0 {
		return ""
	}
	return "  [" + strings.Join(parts, " ") + "]"
}

func versionText(e *VersionEntry) string {
	if e == nil {
		return "absent"
	}
	s := "v" + strconv.FormatUint(uint64(e.Version), 10)
	if e.Slot != "" {
		s += " slot " + strconv.Quote(e.Slot)
	}
	return s
}

// metaText shows a key's values: absent, one quoted value, or the first
// and how many distinct values the files carry.
func metaText(vs []string) string {
	switch len(vs) {
	case 0:
		return "absent"
	case 1:
		return strconv.Quote(vs[0])
	}
	return fmt.Sprintf("%s and %d other value%s", strconv.Quote(vs[0]), len(vs)-1, plural(len(vs)-1))
}

// metaChangeText shows a key's change: both sides as metaText does, or,
// when a side carries several values (its files differ) and the sides
// share some, the values only one side carries and how many both carry (a
// version map changed in one subtask's file of four would otherwise show
// the same first value on both sides). Written as a change of one value
// ("" -> none), that form read as if the key had gone from empty to
// absent where one file of A lacked the map B's files all hold.
func metaChangeText(a, b []string) string {
	onlyA, onlyB := minus(a, b), minus(b, a)
	same := len(a) - len(onlyA)
	if len(a) <= 1 && len(b) <= 1 || same == 0 {
		return metaText(a) + " -> " + metaText(b)
	}
	return fmt.Sprintf("only in A: %s; only in B: %s; in both: %d value%s", valuesText(onlyA), valuesText(onlyB), same, plural(same))
}

// minus returns the values of a that b does not hold, in a's order.
func minus(a, b []string) []string {
	var out []string
	for _, v := range a {
		if !slices.Contains(b, v) {
			out = append(out, v)
		}
	}
	return out
}

// valuesText quotes every value of vs, "none" when there are none.
func valuesText(vs []string) string {
	if len(vs) == 0 {
		return "none"
	}
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}

// TextWarnings returns the warnings for a terminal: a warning both sides
// give is shown once, prefixed "A and B: ".
func (r *Result) TextWarnings() []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range r.Warnings {
		if rest, ok := strings.CutPrefix(w, "A: "); ok && slices.Contains(r.Warnings, "B: "+rest) {
			out = append(out, "A and B: "+rest)
			seen["B: "+rest] = true
			continue
		}
		if !seen[w] {
			out = append(out, w)
		}
	}
	return out
}
