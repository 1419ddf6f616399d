package savepoint

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sptool/sptool/internal/texttable"
)

// Summary describes what a savepoint holds: its files, operators and slots,
// how its keyed state is spread over key groups, its version map and
// metadata. It is what `sptool inspect` prints; Summarize builds it and
// WriteText renders it for a terminal.
//
// Its JSON form (the snake_case tags below) is a stable interface. Row
// counts come in two views:
//
//   - stored: every row as stored, file by file (a row held by several
//     files counts once per file; a changelog file counts its replayed
//     rows). Files, Operators and Totals use this view.
//   - logical: the keyed state a restore at the tree's own layout sees:
//     each keyed row (kind keyed) once, the owner subtask's copy within its
//     chain group (section 10.1). KeyGroups uses this view.
//
// Strings taken from the savepoint's bytes may not be valid UTF-8, which
// encoding/json writes with U+FFFD in place of each invalid byte. A slot
// name always comes with its bytes in hex (slot_hex); the strings of the
// version map (state_type, slot, packed) and of the schema metadata (key,
// value, metadata_keys) come with a "_hex" companion only when they are
// not valid UTF-8.
type Summary struct {
	// Input identifies what was read.
	Input InputSummary `json:"input"`
	// Files lists every snapshot file, in subtask order.
	Files []FileSummary `json:"files"`
	// Operators lists every operator id, ascending, with its slots.
	Operators []OperatorSummary `json:"operators"`
	// KeyGroups is the key-group histogram of the logical keyed rows.
	KeyGroups KeyGroupSummary `json:"key_groups"`
	// Timers lists the operators' timer blobs, by operator and key.
	Timers []TimerBlobSummary `json:"timers"`
	// VersionMap is the job's state version map and whether files disagree on it.
	VersionMap VersionMapSummary `json:"version_map"`
	// UnknownMetadata lists schema metadata keys other than clink's own two,
	// sorted by key and value, with the files carrying them.
	UnknownMetadata []MetadataSummary `json:"unknown_metadata"`
	// Totals adds up the files (stored view).
	Totals TotalsSummary `json:"totals"`
	// Notes are the observations made while opening (older checkpoints or
	// generations ignored, groups inferred, ...).
	Notes []string `json:"notes"`
}

// InputSummary identifies the input of a Summary.
type InputSummary struct {
	// Path is the path as given to Open.
	Path string `json:"path"`
	// Kind is "file", "tree" or "generation".
	Kind string `json:"kind"`
	// Backend is "file" or "changelog+file".
	Backend string `json:"backend"`
	// Generation and Checkpoint identify the checkpoint read (0 when unknown).
	Generation int    `json:"generation"`
	Checkpoint uint64 `json:"checkpoint"`
	// Job is the job id of the COMPLETED marker ("" without one).
	Job string `json:"job"`
	// CompletedMarker is the marker's path relative to the root ("" without one);
	// CompletedSubtasks its subtasks= list ([] in sptool's JSON when it
	// has none, as every list without an element: nil in Go).
	CompletedMarker   string `json:"completed_marker"`
	CompletedSubtasks []int  `json:"completed_subtasks"`
	// Groups are the chain groups (empty for a single file); GroupsInferred
	// reports that they were inferred rather than given.
	Groups         []GroupSummary `json:"groups"`
	GroupsInferred bool           `json:"groups_inferred"`
}

// GroupSummary is one chain group.
type GroupSummary struct {
	// Subtasks is the block of global subtask indices, e.g. "0-3".
	Subtasks string `json:"subtasks"`
	// FirstSubtask and Parallelism define the block.
	FirstSubtask int `json:"first_subtask"`
	Parallelism  int `json:"parallelism"`
}

// FileSummary describes one snapshot file.
type FileSummary struct {
	// Rel is the path relative to the root; Subtask the global subtask index (-1 for a file input).
	Rel     string `json:"rel"`
	Subtask int    `json:"subtask"`
	// Size is the payload size in bytes, CRC32C its checksum.
	Size   int64  `json:"size"`
	CRC32C uint32 `json:"crc32c"`
	// Variant is "canonical", "changelog" or "empty", or "undecodable" for
	// a payload that does not decode, "missing" for one that is not there
	// (see Undecodable).
	Variant string `json:"variant"`
	// Undecodable says why the payload does not decode or is missing, for
	// a file of a tree opened with OpenOptions.KeepUndecodable (absent
	// otherwise): its rows are not read, nor counted anywhere in the
	// summary.
	Undecodable string `json:"undecodable,omitempty"`
	// noEOS reports that Undecodable is ErrNoEndOfStream's; missing
	// that the payload is missing (File.Missing).
	noEOS, missing bool
	// BodyCompression is the record-batch body codec ("" none, "lz4", "zstd");
	// FileCompression the whole-file compression ("" none, "gzip", "zstd", ...).
	BodyCompression string `json:"body_compression"`
	FileCompression string `json:"file_compression"`
	// Batches lists the row count of each record batch as stored.
	Batches []int `json:"batches"`
	// Rows counts the rows (stored view), by kind; KeyBytes and ValueBytes
	// add up their key and value lengths.
	Rows       int   `json:"rows"`
	Keyed      int   `json:"keyed"`
	Operator   int   `json:"operator"`
	Raw        int   `json:"raw"`
	KeyBytes   int64 `json:"key_bytes"`
	ValueBytes int64 `json:"value_bytes"`
	// TrailingBytes counts bytes after the end-of-stream marker.
	TrailingBytes int64 `json:"trailing_bytes"`
	// HiddenBatches and HiddenRows count the record batches, and their
	// rows, that those bytes hold (see HiddenStream): never read. Absent
	// when there are none.
	HiddenBatches int   `json:"hidden_batches,omitempty"`
	HiddenRows    int64 `json:"hidden_rows,omitempty"`
	hidden        HiddenStream
	// Sidecar is the integrity verdict; null when the backend writes no
	// sidecar (changelog+file), and for a payload that is missing or is no
	// regular file (no verdict is made).
	Sidecar *SidecarSummary `json:"sidecar"`
	// MetadataKeys lists the schema metadata keys in stream order.
	// MetadataKeysHex lists them again in hex, in the same order, when one
	// is not valid UTF-8 (absent otherwise; see Summary on such strings).
	MetadataKeys    []string `json:"metadata_keys"`
	MetadataKeysHex []string `json:"metadata_keys_hex,omitempty"`
	// VersionEntries is the number of entries of the file's version map.
	VersionEntries int `json:"version_entries"`
	// Changelog describes a changelog file; null for other variants.
	Changelog *ChangelogSummary `json:"changelog"`
}

// SidecarSummary is a file's integrity verdict.
type SidecarSummary struct {
	// Verdict is clink's verdict: "valid", "incomplete", "corrupt", "unsupported", "missing".
	Verdict string `json:"verdict"`
	// Detail explains a verdict other than valid.
	Detail string `json:"detail"`
}

// ChangelogSummary describes a changelog file as stored.
type ChangelogSummary struct {
	// Blobs is the number of blobs (more than one with CLMB framing).
	Blobs int `json:"blobs"`
	// Materialization says, per blob, how row 0 holds the materialisation:
	// "inline" (row_kind 0, possibly empty), "handle" (row_kind 3) or
	// "handle-empty" (row_kind 3 with an empty handle: nothing materialised yet).
	Materialization []string `json:"materialization"`
	// Handles are the external handles, per materialisation row (one a
	// blob as clink writes them; "" for none or inline).
	Handles []string `json:"handles"`
	// Materializations are the materialisation files the handles resolved to, relative to the root.
	Materializations []string `json:"materializations"`
	// MaterializationBytes are their sizes as stored (-1: not found
	// since it was read), in the same order: a restore reads them too.
	MaterializationBytes []int64 `json:"materialization_bytes"`
	// LogRows counts the log entries; Puts and Erases split them by kind.
	LogRows int `json:"log_rows"`
	Puts    int `json:"puts"`
	Erases  int `json:"erases"`
	// inlineEmpty marks, per blob as Materialization, an "inline"
	// materialisation with no bytes (nothing materialised yet).
	inlineEmpty []bool
}

// OperatorSummary describes the rows of one operator id (stored view).
type OperatorSummary struct {
	Op         uint64 `json:"op"`
	Rows       int    `json:"rows"`
	Keyed      int    `json:"keyed"`
	Operator   int    `json:"operator"`
	Raw        int    `json:"raw"`
	KeyBytes   int64  `json:"key_bytes"`
	ValueBytes int64  `json:"value_bytes"`
	// Slots lists the operator's slots: named ones by slot bytes, then the
	// "<raw>" pseudo-slot of keys without a separator.
	Slots []SlotSummary `json:"slots"`
	// Subtasks gives the operator's row count in each file holding it.
	Subtasks []SubtaskRows `json:"subtasks"`
}

// SlotSummary describes one slot of an operator (stored view). Keyed rows
// and operator rows with a separator (broadcast state) carry a slot; keys
// without one fall under the "<raw>" pseudo-slot.
type SlotSummary struct {
	// Slot is the slot name as a string ("<raw>" for the pseudo-slot; may
	// hold invalid UTF-8, see SlotHex); SlotHex its bytes in hex; HasSlot
	// is false for the pseudo-slot.
	Slot    string `json:"slot"`
	SlotHex string `json:"slot_hex"`
	HasSlot bool   `json:"has_slot"`
	// Display is the name as WriteText shows it: quoted when printable, else 0x hex.
	Display    string `json:"display"`
	Rows       int    `json:"rows"`
	Keyed      int    `json:"keyed"`
	Operator   int    `json:"operator"`
	Raw        int    `json:"raw"`
	KeyBytes   int64  `json:"key_bytes"`
	ValueBytes int64  `json:"value_bytes"`
}

// SubtaskRows is a row count of one subtask file.
type SubtaskRows struct {
	Subtask int `json:"subtask"`
	Rows    int `json:"rows"`
}

// KeyGroupSummary is the key-group histogram of the logical keyed rows:
// each keyed row (kind keyed) counted once, in the key group its stored
// first byte names, taking the copy of the subtask that owns that key group
// within its chain group. Copies in other subtasks' files are counted in
// StaleCopies when the owner holds the row too, else in Lost (no subtask
// restores them). For a single file every keyed row counts, once per
// (op, key).
type KeyGroupSummary struct {
	// Counts holds the 128 buckets.
	Counts [NumKeyGroups]int `json:"counts"`
	// Rows is the number of logical keyed rows (the sum of Counts).
	Rows int `json:"rows"`
	// NonEmpty is the number of key groups holding at least one row.
	NonEmpty int `json:"non_empty"`
	// Max is the largest bucket and MaxKeyGroup the first key group holding it.
	Max         int `json:"max"`
	MaxKeyGroup int `json:"max_key_group"`
	// Mean is Rows / 128.
	Mean float64 `json:"mean"`
	// Skew is Max / Mean over the 128 buckets (1 = perfectly even, 128 =
	// everything in one key group); 0 when there are no keyed rows.
	Skew float64 `json:"skew"`
	// StaleCopies and Lost count keyed copies outside their owner's file (see the type comment).
	StaleCopies int `json:"stale_copies"`
	Lost        int `json:"lost"`
	// Duplicates counts the keyed rows a file stores again under an (op,
	// key) it holds already (clink's merges write them): a restore keeps
	// one, and only it is counted.
	Duplicates int `json:"duplicates"`
}

// VersionMapSummary describes the version maps of the files.
type VersionMapSummary struct {
	// Entries is the map of the first file carrying a non-empty one (the
	// one clink's merge keeps), in packed order.
	Entries []VersionEntrySummary `json:"entries"`
	// Disagree reports that the files do not all carry the same map (a file
	// without a map counts as carrying the empty map).
	Disagree bool `json:"disagree"`
	// Variants lists each distinct map with the files carrying it, in file order.
	Variants []VersionMapVariant `json:"variants"`
	// Unread lists the files whose payload does not decode or is missing
	// (FileSummary.Undecodable): their maps are unknown, and in no variant.
	// Absent when there are none.
	Unread []string `json:"unread,omitempty"`
}

// VersionEntrySummary is one version-map entry. StateTypeHex and SlotHex
// give the state type and the slot in hex when they are not valid UTF-8
// (absent otherwise; see Summary on such strings).
type VersionEntrySummary struct {
	Op           uint64 `json:"op"`
	StateType    string `json:"state_type"`
	StateTypeHex string `json:"state_type_hex,omitempty"`
	Version      uint32 `json:"version"`
	Slot         string `json:"slot"`
	SlotHex      string `json:"slot_hex,omitempty"`
}

// summariseVersions returns m's entries as inspect reports them, in
// packed order; never nil.
func summariseVersions(m VersionMap) []VersionEntrySummary {
	out := []VersionEntrySummary{}
	for _, e := range m.Entries() {
		out = append(out, VersionEntrySummary{
			Op: e.Op, StateType: e.StateType, StateTypeHex: HexUnlessUTF8(e.StateType),
			Version: e.Version, Slot: e.Slot, SlotHex: HexUnlessUTF8(e.Slot),
		})
	}
	return out
}

// VersionMapVariant is one distinct version map and the files carrying it.
// PackedHex gives the packed map in hex when it is not valid UTF-8 (absent
// otherwise; see Summary on such strings).
type VersionMapVariant struct {
	Entries   int      `json:"entries"`
	Packed    string   `json:"packed"`
	PackedHex string   `json:"packed_hex,omitempty"`
	Files     []string `json:"files"`
	// Map is the map's entries, decoded, in packed order.
	Map []VersionEntrySummary `json:"map"`
}

// MetadataSummary is one unknown schema metadata key/value and the files
// carrying it. KeyHex and ValueHex give the key and the value in hex when
// they are not valid UTF-8 (absent otherwise; see Summary on such strings).
type MetadataSummary struct {
	Key      string   `json:"key"`
	KeyHex   string   `json:"key_hex,omitempty"`
	Value    string   `json:"value"`
	ValueHex string   `json:"value_hex,omitempty"`
	Files    []string `json:"files"`
}

// HexUnlessUTF8 returns s in lowercase hex when it is not valid UTF-8,
// else "": encoding/json writes U+FFFD for each invalid byte of a string,
// so the JSON of such a string loses its bytes, and its hex keeps them.
// The JSON outputs give such strings a "_hex" companion with it.
func HexUnlessUTF8(s string) string {
	if utf8.ValidString(s) {
		return ""
	}
	return hex.EncodeToString([]byte(s))
}

// TotalsSummary adds up the files (stored view). Files counts the
// payloads there are, not a missing one (FileSummary.Variant "missing").
type TotalsSummary struct {
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// Materializations and MaterializationBytes count the materialisation
	// files of a changelog+file tree's changelogs (beside Files and
	// Bytes, which count the changelogs): a restore reads both. Absent
	// when there are none (the file backend's trees, single files).
	Materializations     int   `json:"materializations,omitempty"`
	MaterializationBytes int64 `json:"materialization_bytes,omitempty"`
	Rows                 int   `json:"rows"`
	Keyed                int   `json:"keyed"`
	Operator             int   `json:"operator"`
	Raw                  int   `json:"raw"`
	KeyBytes             int64 `json:"key_bytes"`
	ValueBytes           int64 `json:"value_bytes"`
	Operators            int   `json:"operators"`
	Slots                int   `json:"slots"`
}

type inspCounts struct {
	rows, keyed, operator, raw int
	keyBytes, valueBytes       int64
}

// add counts n rows of kind k holding keyBytes and valueBytes.
func (c *inspCounts) add(k Kind, n int, keyBytes, valueBytes int64) {
	c.rows += n
	switch k {
	case KindKeyed:
		c.keyed += n
	case KindOperator:
		c.operator += n
	default:
		c.raw += n
	}
	c.keyBytes += keyBytes
	c.valueBytes += valueBytes
}

// merge adds d's counts to c.
func (c *inspCounts) merge(d inspCounts) {
	c.rows += d.rows
	c.keyed += d.keyed
	c.operator += d.operator
	c.raw += d.raw
	c.keyBytes += d.keyBytes
	c.valueBytes += d.valueBytes
}

type inspSlotKey struct {
	has  bool
	name string
}

type inspOp struct {
	inspCounts
	fileRows int // rows of the file being summarised, for subtasks
	// slots are the counts of the rows without a slot (0) and of each
	// slot by name (1): a lookup by a slot's bytes allocates nothing
	// (rows in clink's hash-map order change slot nearly every row).
	slots    [2]map[string]*inspCounts
	subtasks map[int]int
}

// tallyPartRows is the fewest rows a part of a file's rows in no order
// that Summarize counts on a goroutine of its own (a variable so tests can
// lower it).
var tallyPartRows = 1 << 18

// fileTally counts the rows of a file, or of a part of them: by kind and
// bytes, by key group (keyed rows in its subtask's range), and by
// operator and slot, on the counters of ops.
type fileTally struct {
	fc      inspCounts
	pre     kgRuns
	grouped bool // the key groups of the file's subtask are rng
	rng     KeyGroupRange
	ops     map[uint64]*inspOp
	fileOps []*inspOp // the operators of ops with rows of the file counted here
	// keyedOps are the operators of the keyed rows counted (lastKeyed the
	// latest, so that a run of one operator's rows is noted once), timers
	// the rows of timer blobs.
	keyedOps  map[uint64]bool
	lastKeyed uint64
	timers    []int
	// The counters of recent (op, slot) pairs are cached: rows come
	// grouped by operator and slot, or (in clink's hash-map order) change
	// pair nearly every row among a few, and a lookup by the slot's bytes
	// costs a map lookup or two.
	cache slotCache
}

func newFileTally(ops map[uint64]*inspOp) *fileTally {
	return &fileTally{pre: kgRuns{complete: true}, ops: ops, keyedOps: map[uint64]bool{}}
}

// add counts a group of n rows from row i that share the operator, the
// kind and the slot of r, their keys and values of kb and vb bytes.
func (t *fileTally) add(i int, r Row, n int, kb, vb int64) {
	kind, slot, hasSlot := keySlot(r.Key)
	t.fc.add(kind, n, kb, vb)
	e := t.cache.entry(r.Op, hasSlot, slot)
	if e.o == nil {
		e.o = t.op(r.Op)
		e.sc = e.o.slot(hasSlot, slot)
	}
	switch {
	case kind == KindKeyed:
		// Noted once an entry: in clink's order the operator changes
		// from row to row, and a map write each took 3% of inspect.
		if !e.keyed {
			t.keyedOps[r.Op], e.keyed = true, true
		}
	case runsOperator(r.Key) && (r.Op != t.lastKeyed || len(t.keyedOps) == 0):
		t.keyedOps[r.Op], t.lastKeyed = true, r.Op
	}
	if kind != KindKeyed && IsTimerBlob(r.Key) {
		// A key without a slot separator is a group of its own; keys that
		// share one up to a '|' come as one group, each a blob. A legacy
		// unprefixed blob is a raw row, and shows its operator runs here
		// too, as any raw row does.
		for j := range n {
			t.timers = append(t.timers, i+j)
		}
	}
	if t.pre.complete && kind == KindKeyed {
		if kg := int(r.Key[0]); !t.grouped || t.rng.Contains(kg) {
			t.pre.counts[kg] += n
		} else {
			t.pre.complete = false
		}
	}
	e.o.add(kind, n, kb, vb)
	e.o.fileRows += n
	e.sc.add(kind, n, kb, vb)
}

// op returns the counters of operator op, made if new, and notes it among
// the file's operators.
func (t *fileTally) op(op uint64) *inspOp {
	o := t.ops[op]
	if o == nil {
		o = &inspOp{subtasks: map[int]int{}}
		t.ops[op] = o
	}
	if o.fileRows == 0 {
		t.fileOps = append(t.fileOps, o)
	}
	return o
}

// merge adds the counts of u, a part of the file's rows, to t.
func (t *fileTally) merge(u *fileTally) {
	t.fc.merge(u.fc)
	maps.Copy(t.keyedOps, u.keyedOps)
	t.timers = append(t.timers, u.timers...)
	t.pre.complete = t.pre.complete && u.pre.complete
	for kg, n := range u.pre.counts {
		t.pre.counts[kg] += n
	}
	for id, uo := range u.ops {
		o := t.op(id)
		o.inspCounts.merge(uo.inspCounts)
		o.fileRows += uo.fileRows
		for h, m := range uo.slots {
			for name, c := range m {
				o.slot(h == 1, []byte(name)).merge(*c)
			}
		}
	}
}

// slotCache is a small cache of the counters of (op, slot) pairs met, by
// the pair's operator and slot (length and first 16 bytes, as two words).
type slotCache [64]slotEntry

// slotCacheProbes is how many entries of a slotCache, from the one the
// pair's hash names, may hold a pair.
const slotCacheProbes = 4

// slotEntry is an entry of a slotCache.
type slotEntry struct {
	op      uint64
	w0, w1  uint64
	slen    int
	hasSlot bool
	keyed   bool   // op is among the file's keyed operators (fileTally.keyedOps)
	slot    []byte // the slot, when longer than 16 bytes
	o       *inspOp
	sc      *inspCounts
}

// entry returns the cache's entry for operator op and the slot (hasSlot,
// name): the one of slotCacheProbes entries from the pair's that holds its
// counters; or else the first of those that is free, or else the pair's,
// emptied, with no counters (nil o and sc) for the caller to set. Pairs
// that shared an entry, with none beside it, took it from each other row
// after row in clink's hash-map order: the 20 pairs of the benchmarks'
// files missed at 500,000 of 10M rows, each a lookup in two maps.
func (c *slotCache) entry(op uint64, hasSlot bool, name []byte) *slotEntry {
	w0, w1 := PrefixWords(name)
	h := int(PrefixHash(op, w0, w1, len(name)) >> 58)
	for i := range slotCacheProbes {
		e := &c[(h+i)&(len(c)-1)]
		if e.o == nil {
			return e.reset(op, hasSlot, w0, w1, name)
		}
		if e.op == op && e.hasSlot == hasSlot && e.slen == len(name) && e.w0 == w0 && e.w1 == w1 &&
			(len(name) <= 16 || bytes.Equal(e.slot, name)) {
			return e
		}
	}
	return c[h].reset(op, hasSlot, w0, w1, name)
}

// reset empties e for the pair of op and the slot (hasSlot, name, whose
// first words are w0 and w1), and returns it.
func (e *slotEntry) reset(op uint64, hasSlot bool, w0, w1 uint64, name []byte) *slotEntry {
	e.op, e.w0, e.w1, e.slen, e.hasSlot, e.o, e.sc, e.keyed = op, w0, w1, len(name), hasSlot, nil, nil, false
	e.slot = append(e.slot[:0], name...) // name does not last
	return e
}

// slot returns the counts of a slot of o, made if new.
func (o *inspOp) slot(hasSlot bool, name []byte) *inspCounts {
	m := &o.slots[b2i(hasSlot)]
	if sc := (*m)[string(name)]; sc != nil {
		return sc
	}
	if *m == nil {
		*m = map[string]*inspCounts{}
	}
	sc := &inspCounts{}
	(*m)[string(name)] = sc
	return sc
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Summarize describes an opened savepoint (see Summary). It reads only what
// Open decoded; it does not touch the disk. sp must be non-nil, as for the
// methods of Savepoint.
func Summarize(sp *Savepoint) *Summary {
	sp.mustBeOpen()
	kgPre := map[*File]*kgRuns{}
	s := &Summary{
		Input: InputSummary{
			Path: sp.Path, Kind: sp.Kind.String(), Backend: string(sp.Backend),
			Generation: sp.Generation, Checkpoint: sp.Checkpoint, Job: sp.Job,
			CompletedMarker: sp.CompletedRel, GroupsInferred: sp.GroupsInferred && len(sp.Groups) > 0,
			Groups: []GroupSummary{},
		},
		Files:           []FileSummary{},
		Operators:       []OperatorSummary{},
		UnknownMetadata: []MetadataSummary{},
		Notes:           append([]string{}, sp.Notes...),
	}
	if sp.Completed != nil && sp.Completed.HasSubtasks {
		s.Input.CompletedSubtasks = append([]int{}, sp.Completed.Subtasks...)
	}
	for _, g := range sp.Groups {
		s.Input.Groups = append(s.Input.Groups, GroupSummary{FormatGroups([]Group{g}), g.First, g.Count})
	}
	if w := sp.groupConflictWarning(); w != "" {
		s.Notes = append(s.Notes, w)
	}
	if missing := sp.MissingSubtasks(); len(missing) > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("%s: a job restoring it at this layout refuses to start %s %s, and the chain groups are not inferred across the gap (sptool validate says more)",
			sp.NotConsecutive(missing), plural(len(missing), "subtask", "subtasks"), showSubtaskList(missing)))
	}
	if s.Input.GroupsInferred && len(sp.Groups) > 1 {
		s.Notes = append(s.Notes, "chain groups "+FormatGroups(sp.Groups)+" were inferred from the keyed rows of each subtask file (their operators and key groups); --groups states them")
	}

	ops := map[uint64]*inspOp{}
	var total inspCounts           // of every file
	var keyedOps []map[uint64]bool // by file
	var timerRows []fileRow
	type metaKV struct{ k, v string }
	meta := map[metaKV][]string{}
	var vmVariants []VersionMapVariant
	vmIndex := map[string]int{}
	matSeen := map[string]bool{} // materialisations counted in the totals
	for _, f := range sp.Files {
		fs := FileSummary{Rel: f.Rel, Subtask: f.Subtask, Size: f.Size, CRC32C: f.CRC32C, FileCompression: f.Compression, Batches: []int{}, MetadataKeys: []string{}}
		if f.Verdict != "" {
			fs.Sidecar = &SidecarSummary{Verdict: string(f.Verdict), Detail: f.VerdictDetail}
		}
		snap := f.Snapshot
		if snap == nil {
			snap = &Snapshot{Variant: Empty}
		}
		fs.Variant = snap.Variant.String()
		if f.Undecodable != nil {
			fs.Variant, fs.Undecodable = "undecodable", undecodableReason(f)
			if f.Missing {
				fs.Variant, fs.missing = "missing", true
			}
			fs.noEOS = errors.Is(f.Undecodable, ErrNoEndOfStream)
		}
		fs.BodyCompression = snap.Compression
		fs.Batches = append(fs.Batches, snap.BatchRows...)
		fs.TrailingBytes = snap.TrailingBytes
		fs.HiddenBatches, fs.HiddenRows, fs.hidden = snap.Hidden.Batches, snap.Hidden.Rows, snap.Hidden
		fs.VersionEntries = snap.Versions.Len()
		for _, e := range snap.Metadata {
			fs.MetadataKeys = append(fs.MetadataKeys, e.Key)
			if e.Key != MetaFormatVersion && e.Key != MetaStateVersions {
				kv := metaKV{e.Key, e.Value}
				if fl := meta[kv]; len(fl) == 0 || fl[len(fl)-1] != f.Rel {
					meta[kv] = append(fl, f.Rel)
				}
			}
		}
		if slices.ContainsFunc(fs.MetadataKeys, func(k string) bool { return !utf8.ValidString(k) }) {
			for _, k := range fs.MetadataKeys {
				fs.MetadataKeysHex = append(fs.MetadataKeysHex, hex.EncodeToString([]byte(k)))
			}
		}
		if cl := snap.Changelog; cl != nil {
			cs := &ChangelogSummary{Blobs: cl.Blobs, Materialization: []string{}, Handles: []string{}, Materializations: append([]string{}, f.Materializations...), MaterializationBytes: []int64{}, LogRows: cl.LogRows, Puts: cl.Puts, Erases: cl.Erases}
			for _, rel := range f.Materializations {
				n := int64(-1)
				if st, err := os.Stat(filepath.Join(sp.Root, rel)); err == nil {
					n = st.Size()
					if !matSeen[rel] {
						matSeen[rel] = true
						s.Totals.Materializations++
						s.Totals.MaterializationBytes += n
					}
				}
				cs.MaterializationBytes = append(cs.MaterializationBytes, n)
			}
			for i, inBlob := range cl.InBlob {
				h := ""
				if i < len(cl.Handles) {
					h = cl.Handles[i]
				}
				switch {
				case inBlob:
					cs.Materialization = append(cs.Materialization, "inline")
				case h == "":
					cs.Materialization = append(cs.Materialization, "handle-empty")
				default:
					cs.Materialization = append(cs.Materialization, "handle")
				}
				cs.Handles = append(cs.Handles, h)
				cs.inlineEmpty = append(cs.inlineEmpty, inBlob && i < len(cl.inlineEmpty) && cl.inlineEmpty[i])
			}
			fs.Changelog = cs
		}
		p := snap.Versions.Pack()
		if f.Undecodable != nil {
			s.VersionMap.Unread = append(s.VersionMap.Unread, f.Rel)
		} else if i, ok := vmIndex[p]; ok {
			vmVariants[i].Files = append(vmVariants[i].Files, f.Rel)
		} else {
			vmIndex[p] = len(vmVariants)
			entries := summariseVersions(snap.Versions)
			vmVariants = append(vmVariants, VersionMapVariant{Entries: snap.Versions.Len(), Packed: p, PackedHex: HexUnlessUTF8(p), Files: []string{f.Rel}, Map: entries})
			if len(s.VersionMap.Entries) == 0 && len(entries) > 0 {
				s.VersionMap.Entries = slices.Clone(entries)
			}
		}

		// A file's key-group histogram is counted from the same runs when
		// it holds no (op, key) twice (see keyGroupHistogram); out of range
		// of its subtask, rows need the owner's file, and the histogram
		// reads them again.
		_, strict := snap.Order()
		ft := newFileTally(ops)
		ft.pre.strict = strict
		if g, grouped := sp.GroupOf(f.Subtask); grouped && sp.Kind != InputFile {
			ft.grouped, ft.rng = true, g.Range(f.Subtask)
		}
		kgPre[f] = &ft.pre
		if n := snap.NumRows(); !strict && snap.Columnar() && n >= 2*tallyPartRows {
			// Rows in no order come a group of one at a time: parts of
			// them are counted at once, each on counters of its own.
			// The walk hashes the rows for the histogram's question
			// whether the file holds an (op, key) twice, answered here
			// so that the hashes are dropped before the next file.
			parts := min(runtime.GOMAXPROCS(0), n/tallyPartRows)
			budget := DistinctBudget(f)
			hashes := keyHashesFor(snap, budget, parts)
			tallies := make([]*fileTally, parts)
			ForEach(parts, func(p int) {
				pt := newFileTally(map[uint64]*inspOp{})
				pt.grouped, pt.rng = ft.grouped, ft.rng
				snap.eachRunIn(p*n/parts, (p+1)*n/parts, f.ReleasePages, hashes.part(p), pt.add)
				tallies[p] = pt
			})
			for _, pt := range tallies {
				ft.merge(pt)
			}
			if hashes != nil && hashes.complete() {
				ft.pre.distinct, ft.pre.distinctKnown = distinctKeysOf(snap, hashes, budget), true
			}
		} else {
			snap.eachRun(f.ReleasePages, ft.add)
		}
		for _, o := range ft.fileOps {
			o.subtasks[f.Subtask] += o.fileRows
			o.fileRows = 0
		}
		keyedOps = append(keyedOps, ft.keyedOps)
		if len(ft.timers) > 0 {
			cur := snap.NewCursor()
			for _, i := range ft.timers {
				timerRows = append(timerRows, fileRow{len(keyedOps) - 1, cur.Row(i)})
			}
		}
		fc := ft.fc
		f.ReleasePages()
		fs.Rows, fs.Keyed, fs.Operator, fs.Raw, fs.KeyBytes, fs.ValueBytes = fc.rows, fc.keyed, fc.operator, fc.raw, fc.keyBytes, fc.valueBytes
		s.Files = append(s.Files, fs)

		if !f.Missing {
			s.Totals.Files++
		}
		s.Totals.Bytes += f.Size
		total.merge(fc)
	}
	t := &s.Totals
	t.Rows, t.Keyed, t.Operator, t.Raw, t.KeyBytes, t.ValueBytes = total.rows, total.keyed, total.operator, total.raw, total.keyBytes, total.valueBytes
	if s.VersionMap.Entries == nil {
		s.VersionMap.Entries = []VersionEntrySummary{}
	}
	if vmVariants == nil {
		vmVariants = []VersionMapVariant{}
	}
	s.VersionMap.Variants = vmVariants
	s.VersionMap.Disagree = len(vmVariants) > 1

	opIDs := make([]uint64, 0, len(ops))
	for id := range ops {
		opIDs = append(opIDs, id)
	}
	slices.Sort(opIDs)
	for _, id := range opIDs {
		o := ops[id]
		osum := OperatorSummary{Op: id, Rows: o.rows, Keyed: o.keyed, Operator: o.operator, Raw: o.raw, KeyBytes: o.keyBytes, ValueBytes: o.valueBytes, Slots: []SlotSummary{}, Subtasks: []SubtaskRows{}}
		sks := make([]inspSlotKey, 0, len(o.slots[0])+len(o.slots[1]))
		for h, m := range o.slots {
			for name := range m {
				sks = append(sks, inspSlotKey{h == 1, name})
			}
		}
		slices.SortFunc(sks, func(a, b inspSlotKey) int {
			if a.has != b.has {
				return boolCmp(!a.has, !b.has)
			}
			return strings.Compare(a.name, b.name)
		})
		for _, sk := range sks {
			c := o.slots[b2i(sk.has)][sk.name]
			ss := SlotSummary{Slot: RawSlot, HasSlot: sk.has, Display: RawSlot, Rows: c.rows, Keyed: c.keyed, Operator: c.operator, Raw: c.raw, KeyBytes: c.keyBytes, ValueBytes: c.valueBytes}
			if sk.has {
				ss.Slot, ss.SlotHex, ss.Display = sk.name, hex.EncodeToString([]byte(sk.name)), QuoteSlot([]byte(sk.name))
			}
			osum.Slots = append(osum.Slots, ss)
		}
		subs := make([]int, 0, len(o.subtasks))
		for st := range o.subtasks {
			subs = append(subs, st)
		}
		slices.Sort(subs)
		for _, st := range subs {
			osum.Subtasks = append(osum.Subtasks, SubtaskRows{st, o.subtasks[st]})
		}
		s.Operators = append(s.Operators, osum)
		s.Totals.Slots += len(osum.Slots)
	}
	s.Totals.Operators = len(s.Operators)

	kvs := make([]metaKV, 0, len(meta))
	for kv := range meta {
		kvs = append(kvs, kv)
	}
	slices.SortFunc(kvs, func(a, b metaKV) int {
		if c := strings.Compare(a.k, b.k); c != 0 {
			return c
		}
		return strings.Compare(a.v, b.v)
	})
	for _, kv := range kvs {
		s.UnknownMetadata = append(s.UnknownMetadata, MetadataSummary{Key: kv.k, KeyHex: HexUnlessUTF8(kv.k), Value: kv.v, ValueHex: HexUnlessUTF8(kv.v), Files: meta[kv]})
	}

	s.KeyGroups = keyGroupHistogram(sp, kgPre)
	s.Timers = summarizeTimers(sp, keyedOps, timerRows)
	return s
}

// kgRuns is a file's keyed rows per key group, counted from its runs while
// summarising it; complete when every run lay in its subtask's range. Then
// they are what keyGroupHistogram would count if the file holds no (op,
// key) twice: when it is strictly ordered, or its rows' hashes show it.
type kgRuns struct {
	strict, complete bool
	counts           [NumKeyGroups]int
	// distinct is distinctKeys' answer for the file when distinctKnown:
	// found with the hashes its rows' count made.
	distinct, distinctKnown bool
}

// distinctIn reports whether file f, whose runs p counted (or nil), holds
// no (op, key) twice, as distinctKeys says.
func (p *kgRuns) distinctIn(f *File) bool {
	if p != nil && p.distinctKnown {
		return p.distinct
	}
	return distinctKeys(f.Snapshot, DistinctBudget(f))
}

// keyGroupHistogram counts the logical keyed rows per key group. Each file's
// rows are visited in (op, key) order through an index (no copy of the
// rows), so a key stored twice in one file counts once.
func keyGroupHistogram(sp *Savepoint, pre map[*File]*kgRuns) KeyGroupSummary {
	var h KeyGroupSummary
	tree := sp.Kind != InputFile
	idx := map[*File]*valRowIndex{}
	index := func(f *File) *valRowIndex {
		ix := idx[f]
		if ix == nil {
			ix = newValRowIndex(f)
			idx[f] = ix
		}
		return ix
	}
	for _, f := range sp.Files {
		if f.Snapshot == nil {
			continue
		}
		if p := pre[f]; p != nil && p.complete && (p.strict || p.distinctIn(f)) {
			for kg, n := range p.counts {
				h.Counts[kg] += n
			}
			continue
		}
		g, grouped := sp.GroupOf(f.Subtask)
		var rng KeyGroupRange
		if grouped {
			rng = g.Range(f.Subtask)
		}
		count := func(r Row, d int) { // a keyed row of this file, stored once (d 1) or taken back (d -1)
			kg := int(r.Key[0])
			if tree && grouped && !rng.Contains(kg) {
				if of := sp.File(g.Owner(kg)); of != nil && of != f && of.Snapshot != nil && (index(of).has(r.Op, r.Key) || of.Snapshot.ErasedByLog(r.Op, r.Key)) {
					h.StaleCopies += d // the owner's copy, or its erase, is restored
				} else {
					h.Lost += d
				}
				return
			}
			h.Counts[kg] += d
		}
		if _, strict := f.Snapshot.Order(); strict {
			// No duplicates, and rows of a key group and slot come in runs.
			cur := f.Snapshot.NewCursor()
			f.Snapshot.eachRun(f.ReleasePages, func(i int, r Row, n int, _, _ int64) {
				if ParseKey(r.Key).Kind != KindKeyed {
					return
				}
				if kg := int(r.Key[0]); !tree || !grouped || rng.Contains(kg) {
					h.Counts[kg] += n
					return
				}
				for j := i; j < i+n; j++ {
					count(cur.Row(j), 1)
				}
			})
			continue
		}
		// Every keyed row in stream order, then each duplicate taken back:
		// the sorted order is read only where a row's sort prefix ties,
		// and not at all when the rows' hashes show there are none.
		f.Snapshot.EachKey(func(i int, op uint64, key []byte) bool {
			if i&releaseEvery == 0 {
				f.ReleasePages()
			}
			if ParseKey(key).Kind == KindKeyed {
				count(Row{Op: op, Key: key}, 1)
			}
			return true
		})
		f.ReleasePages()
		if pre[f].distinctIn(f) {
			continue
		}
		ix := index(f)
		for j := 1; j < ix.len(); j++ {
			if j&releaseEvery == 0 {
				f.ReleasePages()
			}
			if ix.sameAsPrev(j) {
				if r := ix.row(j); ParseKey(r.Key).Kind == KindKeyed {
					count(r, -1)
					h.Duplicates++
				}
			}
		}
	}
	for kg, c := range h.Counts {
		h.Rows += c
		if c > 0 {
			h.NonEmpty++
		}
		if c > h.Max {
			h.Max, h.MaxKeyGroup = c, kg
		}
	}
	if h.Rows > 0 {
		h.Mean = float64(h.Rows) / NumKeyGroups
		h.Skew = float64(h.Max) / h.Mean
	}
	return h
}

// maxListedSubtasks is how many subtasks inspect's text lists one by one
// (an operator's rows in each, a marker's subtasks= line); a wider tree's
// are summed up, and --json lists them all.
const maxListedSubtasks = 16

// readSubtasks returns, in increasing order, the subtasks of the tree's
// payloads that were read (neither missing nor undecodable); none for a
// file given alone.
func (s *Summary) readSubtasks() []int {
	var subs []int
	for _, f := range s.Files {
		if f.Subtask >= 0 && f.Variant != "missing" && f.Variant != "undecodable" {
			subs = append(subs, f.Subtask)
		}
	}
	slices.Sort(subs)
	return slices.Compact(subs)
}

// withEmpty returns an operator's rows per subtask file with a count of 0
// for each subtask of read that holds none of its rows, in increasing
// order of subtask: the text shows where an operator has no rows, which
// --json leaves out (it lists the files holding the operator).
func withEmpty(per []SubtaskRows, read []int) []SubtaskRows {
	var out []SubtaskRows
	i := 0
	for _, st := range read {
		for i < len(per) && per[i].Subtask < st {
			out = append(out, per[i])
			i++
		}
		if i < len(per) && per[i].Subtask == st {
			continue
		}
		out = append(out, SubtaskRows{Subtask: st})
	}
	return append(out, per[i:]...)
}

// showSubtaskRows renders an operator's rows per subtask file for the text
// view: "0:12 1:9" (a file's count alone), or, over maxListedSubtasks
// files, their number and the fewest and most rows with their subtasks
// (the first of several with as many).
func showSubtaskRows(per []SubtaskRows) string {
	if len(per) <= maxListedSubtasks {
		out := make([]string, len(per))
		for i, st := range per {
			if st.Subtask < 0 {
				out[i] = strconv.Itoa(st.Rows)
			} else {
				out[i] = fmt.Sprintf("%d:%d", st.Subtask, st.Rows)
			}
		}
		return strings.Join(out, " ")
	}
	lo, hi := per[0], per[0]
	for _, st := range per[1:] {
		if st.Rows < lo.Rows {
			lo = st
		}
		if st.Rows > hi.Rows {
			hi = st
		}
	}
	return fmt.Sprintf("%d subtasks, fewest %d (subtask %d), most %d (subtask %d); --json lists each", len(per), lo.Rows, lo.Subtask, hi.Rows, hi.Subtask)
}

// showSubtaskList renders a list of subtasks (a marker's subtasks= line,
// the subtasks a gap leaves without a directory) for the text view: as
// written ("0,1,3"), or, over maxListedSubtasks entries in strictly
// ascending order, as ranges ("0-127, 128 of them").
func showSubtaskList(xs []int) string {
	if len(xs) <= maxListedSubtasks {
		return JoinInts(xs, ",")
	}
	for i := 1; i < len(xs); i++ {
		if xs[i] <= xs[i-1] { // not strictly ascending: as written
			return JoinInts(xs, ",")
		}
	}
	var parts []string
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(xs[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", xs[i], xs[j]))
		}
		i = j + 1
	}
	return fmt.Sprintf("%s, %d of them", strings.Join(parts, ","), len(xs))
}

// RenderSlot renders a slot name for text output: as it is when it is
// printable UTF-8, else 0x and its bytes in hex.
func RenderSlot(slot []byte) string { return renderSlot(slot, false) }

// QuoteSlot renders a slot name as inspect shows it (SlotSummary.Display):
// in Go quotes when it is printable UTF-8 (the empty name as ""), else 0x
// and its bytes in hex; the keys without a separator are shown as RawSlot,
// unquoted, which no slot name is shown as.
func QuoteSlot(slot []byte) string { return renderSlot(slot, true) }

// renderSlot renders a slot name: when it is valid UTF-8 made of printable
// characters, as it is (in Go quotes if quote is set), else 0x followed by
// its hex.
func renderSlot(slot []byte, quote bool) string {
	if utf8.Valid(slot) && isPrintableText(string(slot)) {
		if quote {
			return strconv.Quote(string(slot))
		}
		return string(slot)
	}
	return "0x" + hex.EncodeToString(slot)
}

func isPrintableText(s string) bool {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// histogramBlocks are the bar glyphs of the key-group chart, lowest first.
var histogramBlocks = []rune("▁▂▃▄▅▆▇█")

// WriteText renders the summary for a terminal: a header, the file table
// (with sidecar verdicts), the operator and slot table, the key-group
// histogram as 8 lines of 16 key groups drawn with block characters (each
// scaled to the largest bucket; '·' marks an empty key group) with the skew,
// the version map, unknown metadata and notes. The output is deterministic.
func (s *Summary) WriteText(w io.Writer) error {
	var b bytes.Buffer
	in := s.Input
	fmt.Fprintf(&b, "savepoint %s\n", ShowName(in.Path))
	head := "  " + in.Kind
	if in.Kind == InputFile.String() {
		head = "  snapshot file"
	}
	if in.Kind != InputFile.String() || in.Checkpoint != 0 {
		head += fmt.Sprintf(", backend %s", in.Backend)
		if in.Kind != InputFile.String() {
			head += fmt.Sprintf(", generation %d", in.Generation)
		}
		head += fmt.Sprintf(", checkpoint %d", in.Checkpoint)
	}
	if in.Job != "" {
		head += ", job " + ShowName(in.Job)
	}
	b.WriteString(head + "\n")
	if in.CompletedMarker != "" {
		subs := "no subtasks= line"
		if in.CompletedSubtasks != nil {
			subs = "subtasks " + showSubtaskList(in.CompletedSubtasks)
		}
		fmt.Fprintf(&b, "  marker %s (%s)\n", ShowName(in.CompletedMarker), subs)
	} else if in.Kind != InputFile.String() {
		b.WriteString("  no COMPLETED marker\n")
	}
	if len(in.Groups) > 0 {
		gs := make([]string, len(in.Groups))
		for i, g := range in.Groups {
			gs[i] = fmt.Sprintf("%s (parallelism %d)", g.Subtasks, g.Parallelism)
		}
		how := "given"
		if in.GroupsInferred {
			how = "inferred"
		}
		fmt.Fprintf(&b, "  chain groups %s, %s\n", strings.Join(gs, ", "), how)
	}
	t := s.Totals
	mats := ""
	if t.Materializations > 0 {
		mats = fmt.Sprintf(" (and %d materialisation%s, %d bytes)", t.Materializations, plural(t.Materializations, "", "s"), t.MaterializationBytes)
	}
	fmt.Fprintf(&b, "  %d file%s, %d bytes%s; %d rows (keyed %d, operator %d, raw %d), %d key bytes, %d value bytes; %d operator%s, %d slot%s\n",
		t.Files, plural(t.Files, "", "s"), t.Bytes, mats, t.Rows, t.Keyed, t.Operator, t.Raw, t.KeyBytes, t.ValueBytes,
		t.Operators, plural(t.Operators, "", "s"), t.Slots, plural(t.Slots, "", "s"))

	b.WriteString("\nFiles\n")
	tab := texttable.New("  ", 2)
	tab.Row("SUBTASK", "FILE", "BYTES", "CRC32C", "VARIANT", "COMPRESSION", "BATCH ROWS", "ROWS", "KEYED", "OPERATOR", "RAW", "SIDECAR")
	for _, f := range s.Files {
		comp := "-"
		switch {
		case f.FileCompression != "" && f.BodyCompression != "":
			comp = f.FileCompression + "+" + f.BodyCompression + " body"
		case f.FileCompression != "":
			comp = f.FileCompression
		case f.BodyCompression != "":
			comp = f.BodyCompression + " body"
		}
		batches := batchSizes(f.Batches)
		sc := "none (changelog+file)"
		if f.Sidecar != nil {
			sc = f.Sidecar.Verdict
		}
		size, crc := strconv.FormatInt(f.Size, 10), strconv.FormatUint(uint64(f.CRC32C), 10)
		switch {
		case f.missing:
			sc, size, crc = "-", "-", "-"
		case f.Sidecar == nil && s.Input.Backend != string(BackendChangelogFile):
			sc = "-" // not read: the payload is no regular file
		}
		sub := strconv.Itoa(f.Subtask)
		if f.Subtask < 0 {
			sub = "-"
		}
		tab.Row(sub, ShowName(f.Rel), size, crc, f.Variant, comp, batches, strconv.Itoa(f.Rows), strconv.Itoa(f.Keyed), strconv.Itoa(f.Operator), strconv.Itoa(f.Raw), sc)
	}
	tab.WriteTo(&b)
	for _, f := range s.Files {
		switch {
		case f.missing:
			fmt.Fprintf(&b, "  %s: payload missing (%s): %s\n", ShowName(f.Rel), f.Undecodable, missingRestore(s.Input.Backend == string(BackendChangelogFile), f.Subtask))
		case f.Undecodable != "":
			who := "clink's reader refuses it"
			if f.noEOS {
				who = "sptool refuses it as truncated (clink's reader takes a stream that ends between two messages as complete)"
			}
			fmt.Fprintf(&b, "  %s: does not decode, and %s: %s; its rows are not counted here\n", ShowName(f.Rel), who, f.Undecodable)
		}
		if f.Sidecar != nil && f.Sidecar.Detail != "" {
			fmt.Fprintf(&b, "  %s: sidecar %s: %s", ShowName(f.Rel), f.Sidecar.Verdict, f.Sidecar.Detail)
			if f.Sidecar.Verdict == string(VerdictIncomplete) && s.Input.Kind == InputFile.String() {
				// (clink's wording, for a tree's payload: a file given
				// alone, written by a tool or a test, often has none.)
				b.WriteString("; sptool reads a single file without one, and writes one beside every file it outputs (clink's file backend refuses a payload without one)")
			}
			b.WriteString("\n")
		}
		if f.TrailingBytes > 0 {
			fmt.Fprintf(&b, "  %s: %d bytes after the end-of-stream marker", ShowName(f.Rel), f.TrailingBytes)
			if f.hidden.Found() {
				fmt.Fprintf(&b, "; they %s", f.hidden)
			}
			b.WriteString("\n")
		}
		if c := f.Changelog; c != nil {
			mats := make([]string, len(c.Materialization))
			for i, m := range c.Materialization {
				switch m {
				case "handle":
					mats[i] = "handle " + ShowName(c.Handles[i])
				case "handle-empty":
					mats[i] = "empty handle (nothing materialised yet)"
				case "inline":
					mats[i] = "inline materialisation"
					if i < len(c.inlineEmpty) && c.inlineEmpty[i] {
						mats[i] = "empty inline materialisation (nothing materialised yet)"
					}
				default:
					mats[i] = "inline materialisation"
				}
			}
			matsText := strings.Join(mats, ", ")
			if len(mats) == 0 {
				matsText = "no materialisation"
			}
			line := fmt.Sprintf("  %s: changelog, %d blob%s, %s; %d log rows (%d puts, %d erases)", ShowName(f.Rel), c.Blobs, plural(c.Blobs, "", "s"), matsText, c.LogRows, c.Puts, c.Erases)
			if len(c.Materializations) > 0 {
				mats := make([]string, len(c.Materializations))
				for i, m := range c.Materializations {
					mats[i] = ShowName(m)
					if i < len(c.MaterializationBytes) && c.MaterializationBytes[i] >= 0 {
						mats[i] += fmt.Sprintf(" (%d bytes)", c.MaterializationBytes[i])
					}
				}
				line += "; materialisation " + strings.Join(mats, ", ")
			}
			b.WriteString(line + "\n")
		}
	}
	b.WriteString("  metadata keys:\n")
	for _, f := range s.Files {
		keys := "(none)"
		if f.Undecodable != "" {
			keys = "(not read)"
		} else if len(f.MetadataKeys) > 0 {
			shown := make([]string, len(f.MetadataKeys))
			for i, k := range f.MetadataKeys {
				shown[i] = RenderSlot([]byte(k))
			}
			keys = strings.Join(shown, ", ")
		}
		fmt.Fprintf(&b, "    %s: %s\n", ShowName(f.Rel), keys)
	}

	b.WriteString("\nOperators\n")
	if len(s.Operators) == 0 {
		b.WriteString("  (no rows)\n")
	} else {
		tab := texttable.New("  ", 2)
		tab.Row("OP", "SLOT", "ROWS", "KEYED", "OPERATOR", "RAW", "KEY BYTES", "VALUE BYTES", "ROWS PER SUBTASK")
		read := s.readSubtasks()
		for _, o := range s.Operators {
			tab.Row(append([]string{strconv.FormatUint(o.Op, 10), "(all)"}, append(countCells(o.Rows, o.Keyed, o.Operator, o.Raw, o.KeyBytes, o.ValueBytes), showSubtaskRows(withEmpty(o.Subtasks, read)))...)...)
			for _, sl := range o.Slots {
				tab.Row(append([]string{"", sl.Display}, countCells(sl.Rows, sl.Keyed, sl.Operator, sl.Raw, sl.KeyBytes, sl.ValueBytes)...)...)
			}
		}
		tab.WriteTo(&b)
	}

	kg := s.KeyGroups
	view := "each keyed row counted once: the owner subtask's copy"
	if in.Kind == InputFile.String() {
		view = "each keyed row counted once"
	}
	fmt.Fprintf(&b, "\nKey groups (%d keyed rows, %s)\n", kg.Rows, view)
	if kg.Rows == 0 {
		b.WriteString("  (no keyed rows)\n")
	} else {
		fmt.Fprintf(&b, "  %d of 128 key groups hold rows; max %d (key group %d), mean %.2f, skew %.2f (max / mean)\n", kg.NonEmpty, kg.Max, kg.MaxKeyGroup, kg.Mean, kg.Skew)
		for row := 0; row < NumKeyGroups/16; row++ {
			var bar strings.Builder
			sum := 0
			for i := row * 16; i < row*16+16; i++ {
				c := kg.Counts[i]
				sum += c
				if c == 0 {
					bar.WriteRune('·')
					continue
				}
				lvl := int(math.Ceil(float64(c)*float64(len(histogramBlocks))/float64(kg.Max))) - 1
				bar.WriteRune(histogramBlocks[max(0, min(lvl, len(histogramBlocks)-1))])
			}
			fmt.Fprintf(&b, "  %3d-%3d %s %6d\n", row*16, row*16+15, bar.String(), sum)
		}
		fmt.Fprintf(&b, "  (█ = %d row%s; · = empty)\n", kg.Max, plural(kg.Max, "", "s"))
	}
	if kg.StaleCopies > 0 || kg.Lost > 0 {
		fmt.Fprintf(&b, "  not counted: %d stale keyed cop%s (the owner holds the row), %d keyed row%s no subtask restores\n", kg.StaleCopies, plural(kg.StaleCopies, "y", "ies"), kg.Lost, plural(kg.Lost, "", "s"))
	}
	if kg.Duplicates > 0 {
		fmt.Fprintf(&b, "  not counted: %d keyed row%s a file stores again under a key it holds (a restore keeps one)\n", kg.Duplicates, plural(kg.Duplicates, "", "s"))
	}

	writeTimers(&b, s.Timers)

	vm := s.VersionMap
	agree := "all files agree"
	switch {
	case len(vm.Variants) <= 1 && s.Totals.Files <= 1:
		agree = ""
	case vm.Disagree:
		agree = "FILES DISAGREE"
	case len(vm.Unread) > 0:
		agree = "all files read agree"
	}
	title := fmt.Sprintf("\nVersion map (%d entr%s", len(vm.Entries), plural(len(vm.Entries), "y", "ies"))
	if len(vm.Entries) == 0 && agree != "FILES DISAGREE" {
		title = "\nVersion map: none (no clink.state_versions"
	}
	if agree != "" {
		title += "; " + agree
	}
	b.WriteString(title + ")\n")
	if len(vm.Entries) > 0 {
		tab := texttable.New("  ", 2)
		tab.Row("OP", "STATE TYPE", "VERSION", "SLOT")
		for _, e := range vm.Entries {
			slot := "(every row of the op)"
			if e.Slot != "" {
				slot = renderSlot([]byte(e.Slot), true)
			}
			tab.Row(strconv.FormatUint(e.Op, 10), renderSlot([]byte(e.StateType), true), strconv.FormatUint(uint64(e.Version), 10), slot)
		}
		tab.WriteTo(&b)
	}
	if vm.Disagree {
		writeVariants(&b, vm)
	}
	if len(vm.Unread) > 0 {
		var missing, undecodable bool
		for _, f := range s.Files {
			if slices.Contains(vm.Unread, f.Rel) {
				missing = missing || f.missing
				undecodable = undecodable || !f.missing
			}
		}
		fmt.Fprintf(&b, "  not read (the payload %s): %s\n", whyNotRead(missing, undecodable, false), strings.Join(showNames(vm.Unread), ", "))
	}

	if len(s.UnknownMetadata) > 0 {
		b.WriteString("\nUnknown metadata\n")
		for _, m := range s.UnknownMetadata {
			fmt.Fprintf(&b, "  %s = %s (%s)\n", RenderSlot([]byte(m.Key)), renderBytesShort([]byte(m.Value), 64), strings.Join(showNames(m.Files), ", "))
		}
	}
	if len(s.Notes) > 0 {
		b.WriteString("\nNotes\n")
		for _, n := range s.Notes {
			fmt.Fprintf(&b, "  - %s\n", n)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeVariants renders the distinct version maps of files that disagree
// on it, each with its files and, for a map other than the one shown (the
// first non-empty one, which clink's merge keeps), how it differs from
// that map: a line "- " for each entry of the map shown that it lacks or
// holds otherwise, a line "+ " for each of its entries the map shown
// lacks or holds otherwise, entries being matched by operator and state
// type as clink's map matches them.
func writeVariants(b *bytes.Buffer, vm VersionMapSummary) {
	shown := -1
	for i, v := range vm.Variants {
		if v.Entries > 0 {
			shown = i
			break
		}
	}
	type opType struct {
		op uint64
		t  string
	}
	line := func(sign byte, e VersionEntrySummary) {
		slot := "every row of the op"
		if e.Slot != "" {
			slot = "slot " + renderSlot([]byte(e.Slot), true)
		}
		fmt.Fprintf(b, "    %c op %d %s version %d, %s\n", sign, e.Op, renderSlot([]byte(e.StateType), true), e.Version, slot)
	}
	ref := map[opType]VersionEntrySummary{}
	for _, e := range vm.Entries {
		ref[opType{e.Op, e.StateType}] = e
	}
	for i, v := range vm.Variants {
		what := fmt.Sprintf("map %c (%d entr%s)", 'A'+rune(i%26), v.Entries, plural(v.Entries, "y", "ies"))
		switch {
		case v.Entries == 0:
			what = "no map"
		case i == shown:
			what += ", the table above, which clink's merge keeps"
		}
		fmt.Fprintf(b, "  %s: %s\n", what, strings.Join(showNames(v.Files), ", "))
		if v.Entries == 0 || i == shown {
			continue
		}
		own := map[opType]VersionEntrySummary{}
		for _, e := range v.Map {
			own[opType{e.Op, e.StateType}] = e
		}
		for _, e := range vm.Entries {
			if o, ok := own[opType{e.Op, e.StateType}]; !ok || o != e {
				line('-', e)
			}
		}
		for _, e := range v.Map {
			if r, ok := ref[opType{e.Op, e.StateType}]; !ok || r != e {
				line('+', e)
			}
		}
	}
}

// countCells renders the counts of an operator, or of one of its slots,
// as cells of the Operators table.
func countCells(rows, keyed, operator, raw int, keyBytes, valueBytes int64) []string {
	return []string{strconv.Itoa(rows), strconv.Itoa(keyed), strconv.Itoa(operator), strconv.Itoa(raw), strconv.FormatInt(keyBytes, 10), strconv.FormatInt(valueBytes, 10)}
}

// batchSizes renders the rows of a file's batches for the Files table:
// each (58+0+87) when there are few, else their number and the least and
// most rows of one ("9766 of 1-1024"): a file of many small batches
// would otherwise make a line of thousands of numbers. The JSON lists
// every batch.
func batchSizes(rows []int) string {
	switch {
	case len(rows) == 0:
		return "-"
	case len(rows) <= maxBatchesListed:
		return JoinInts(rows, "+")
	}
	return fmt.Sprintf("%d of %d-%d", len(rows), slices.Min(rows), slices.Max(rows))
}

// maxBatchesListed is the most batches whose rows the Files table lists
// one by one.
const maxBatchesListed = 4
