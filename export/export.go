// Package export writes the analytics projections of a savepoint's logical
// state: Parquet (clink's canonical projection, or a query projection with
// decoded keys and values), JSON Lines and CSV.
//
// # Rows
//
// By default the rows are the savepoint's logical view (savepoint.Union):
// one row per (op, key), as a restore at the tree's own layout sees it. With
// Options.PerFile every stored row of every file is written instead (copies
// held by several files included), with its subtask.
//
// Rows are written in the order of clink's Parquet projection: operator id
// ascending, then slot (the "<raw>" pseudo-slot compared as that string),
// then user key (both bytewise), then subtask. Rows of one operator, key
// group and slot are consecutive in a file's canonical order and already in
// that order, so the export merges such runs of every file with a heap,
// slot by slot, resolving the copies several files hold as the union does:
// memory holds the runs and a row group, not the rows. (When the runs are
// too many to be worth it, each operator's rows are buffered and sorted as
// they come out of the union instead.)
//
// # Canonical Parquet projection
//
// Exactly the columns of clink's write_state_parquet (format section 7.1),
// all non-nullable:
//
//	op_id        uint64   operator id
//	key_group    uint8    see below
//	slot         utf8     slot name; "<raw>" for keys without a separator
//	user_key     binary   bytes after the separator; the whole stored key for "<raw>" rows
//	value_bytes  binary   the stored value (TTL prefix included)
//
// plus, with PerFile only, subtask int32 (the file the row was read from).
// The stored key is lossless: op_id, key_group, slot and user_key give it
// back (keyed: key_group, slot, '|', user_key; "<raw>": user_key).
//
// key_group: clink writes 0 for every "<raw>" row, which puts operator
// state, timer blobs and the legacy in-flight buffers into key group 0 and
// skews any key-group query. sptool writes the first byte of the stored key
// instead, for every row: 0..127 is the key group a narrowed restore filters
// the row by (keyed rows, and legacy raw keys such as '_'-prefixed in-flight
// buffers, which restore treats as key group 95); 128..255 marks rows a
// restore never filters (operator state: 255 for clink's 0xFF prefix, and
// for the empty key, which has no first byte). So `WHERE key_group < 128`
// selects exactly the key-grouped rows.
//
// Slot names that are not valid UTF-8 (clink allows any bytes but '|' and
// '\n') are written as "0x" followed by their hex, since the column is utf8.
//
// File key-value metadata: clink.state_versions (the packed version map of
// the first file carrying a non-empty one, as clink's merge keeps it) only
// when non-empty, as clink writes it; sptool.projection, sptool.view and
// sptool.provenance (no clock reading: the same input gives the same
// bytes). clink.format_version is not written: it marks a restorable
// snapshot stream, which a projection is not, and clink's projection does
// not carry it either.
//
// Writer settings: row groups of Options.RowGroupRows rows (default 512 Ki;
// the last one fewer), or fewer where their keys and values pass 32 MiB,
// written with the Parquet column writers in batches of 64 Ki rows (or of
// 16 MiB of one binary column), Snappy compression by default,
// dictionary encoding only for the low-cardinality columns (op_id,
// key_group, slot, and subtask and kind where present), no statistics for the
// key and value columns (min/max over random bytes cost ~40% of the write
// time and prune nothing). The canonical columns are built directly from
// buffers, not appended row by row. The file writer is used directly, not
// through pqarrow: the columns are Go slices already, and pqarrow would link
// in Arrow Flight and gRPC, a third of the command's start-up time.
//
// # Query Parquet projection
//
// clink's state-query columns (section 7.1), all nullable, then sptool's:
//
//	event_time   int64    always null (clink's leading column)
//	op_id        int64    operator id bit-cast to signed
//	key_group    int64    first key byte when below 128 (keyed rows and legacy raw keys), else null
//	slot         utf8     as in the canonical projection
//	user_key     utf8     the canonical user_key, printable (0x20..0x7e) verbatim (not starting 0x), else 0x + hex
//	key_int      int64    the user key's 8-byte little-endian reading, else null
//	value        utf8     the decoded value for slots declared with a value codec (TTL stamp removed;
//	                      scalars as text, collections as JSON), else the stored value rendered like user_key
//	value_int    int64    the decoded value when it is an integer, else (undeclared) the stored value's
//	                      8-byte reading, else null
//	kind         utf8     keyed, operator or raw (sptool's row model)
//	key          utf8     the user key decoded with the slot's key codec, else rendered like user_key
//	                      (row model: for operator rows without a separator, the logical key after 0xFF)
//	expire_at    int64    the TTL stamp (epoch ms) in slots declared ttl: true, else null
//	subtask      int64    the subtask the row was taken from; null for a single file
//	key_decoded  bool     whether the slot's declared key codec decoded key (false: key shows the
//	                      stored bytes), null when none is declared
//	value_decoded bool    the same for value (a value codec or a TTL stamp declared)
//
// so that `SELECT key, value FROM 'state.parquet'` shows decoded keys and
// values when a rule file declares the slots.
//
// # JSON Lines and CSV
//
// One object (line) per row with op, kind, key_group (the row model: 0..127
// for keyed rows, -1 otherwise), slot, key and value (decoded as typed JSON
// when declared: numbers, strings, arrays; else rendered like user_key),
// key_hex (the whole stored key), value_hex (the stored value), expire_at,
// subtask (-1 for a single file), key_decoded and value_decoded (as in the
// query projection). CSV has the same columns in the same order, with
// collections as JSON text and null as the empty string.
package export

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/bits"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/sptool/sptool/internal/rowtext"
	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/savepoint/codec"
)

// Format is an output format.
type Format string

const (
	// Parquet writes a Parquet file (Options.Projection chooses the columns).
	Parquet Format = "parquet"
	// JSONL writes one JSON object per row.
	JSONL Format = "jsonl"
	// CSV writes a header line and one line per row.
	CSV Format = "csv"
)

// Projection chooses the columns of a Parquet export.
type Projection string

const (
	// Canonical is clink's write_state_parquet projection (bytes, non-nullable).
	Canonical Projection = "canonical"
	// Query is clink's state-query projection plus decoded columns.
	Query Projection = "query"
)

// Parquet writer defaults.
const (
	// DefaultRowGroupRows is the default maximum number of rows per row group.
	// A row group's pages are held in memory until it is complete: at 512 Ki
	// rows an export of 10M rows peaks at 0.39x the input (1 Mi rows:
	// 0.48-0.52x) and runs faster.
	DefaultRowGroupRows = 1 << 19
	// DefaultCompression is the default Parquet compression codec.
	DefaultCompression = "snappy"
)

// batchRows is the number of rows written to the column writers at once,
// and maxBatchBytes bounds the data of one binary column per batch (its
// offsets are int32s). Variables so that tests can
// exercise many batches per row group.
var (
	batchRows     = 1 << 16
	maxBatchBytes = 16 << 20
)

// maxRowGroupBytes bounds the keys and values a row group is given: the
// writer holds a row group's pages until it ends, and RowGroupRows rows of
// large values (512 Ki rows of 1 MiB) would be the whole file. A row group
// ends at the first batch past it (a batch holds at most maxBatchBytes of
// each binary column). The export of 400 rows of 1 MiB values peaked at
// 2.2 GB (5.2x the file) with one row group and batches of up to 1 GiB,
// 0.5 GB so (1.2x); rows of small values (512 Ki rows of 8-byte keys and
// values: 12 MB) never reach it. A variable so that tests can lower it.
var maxRowGroupBytes = 32 << 20

// Options control an export.
type Options struct {
	// Format is the output format (default Parquet).
	Format Format
	// Projection chooses the Parquet columns (default Canonical).
	Projection Projection
	// Rules, when set, decodes keys and values of declared slots (query
	// projection, JSONL, CSV). Only its slot declarations are used. The
	// canonical projection holds bytes only, and refuses it.
	Rules *rules.Set
	// PerFile writes every stored row of every file instead of the union.
	PerFile bool
	// Compression is the Parquet codec: "snappy" (default), "zstd", "gzip",
	// "lz4raw" or "none".
	Compression string
	// RowGroupRows is the maximum number of rows per row group (0: the
	// default, 512 Ki; a negative number is refused).
	RowGroupRows int
	// Tool names the writer in the provenance metadata (default "sptool").
	Tool string
	// Allocator is used for Arrow and Parquet buffers (default: a pool that
	// recycles the writer's page and compression buffers by size class,
	// which keeps the export's memory from growing with its row count).
	Allocator memory.Allocator
	// TempDir is where a large single file in clink's hash-map order is put
	// in canonical order first, through temporary files (about twice its
	// bytes while the export runs; unlinked at once). Default: for
	// WriteFile the nearest existing directory above the output, for Write
	// os.TempDir().
	TempDir string
}

// Result says what was written.
type Result struct {
	// Rows is the number of rows written; Operators and Slots the distinct
	// operators and (operator, slot) pairs among them.
	Rows      int64
	Operators int
	Slots     int
	// RowGroups is the number of Parquet row groups (0 for other formats).
	RowGroups int
	// Bytes is the size of the output.
	Bytes int64
	// Union describes how the union resolved shared rows (zero with PerFile).
	Union savepoint.UnionStats
	// Warnings are where the tree was read otherwise than clink reads it
	// (Savepoint.ReadWarnings), the union's warnings, version-map
	// disagreements, values the declared codecs could not decode, and
	// (WriteFile) what interrupted runs left beside the output (see
	// savepoint.Leftovers).
	Warnings []string
}

// ErrExists is what errors.Is matches in the error of WriteFile when the
// output exists and force is not set (a *savepoint.OutputExistsError): it
// is fs.ErrExist.
var ErrExists = fs.ErrExist

// Codecs maps Options.Compression names to Parquet codecs.
var Codecs = map[string]compress.Compression{
	"snappy": compress.Codecs.Snappy,
	"zstd":   compress.Codecs.Zstd,
	"gzip":   compress.Codecs.Gzip,
	"lz4raw": compress.Codecs.Lz4Raw,
	"none":   compress.Codecs.Uncompressed,
}

func (o *Options) defaults() error {
	if err := o.check(); err != nil {
		return err
	}
	if o.Format == "" {
		o.Format = Parquet
	}
	if o.Projection == "" {
		o.Projection = Canonical
	}
	if o.Compression == "" {
		o.Compression = DefaultCompression
	}
	if o.RowGroupRows == 0 {
		o.RowGroupRows = DefaultRowGroupRows
	}
	if o.Tool == "" {
		o.Tool = "sptool"
	}
	if o.Allocator == nil {
		o.Allocator = newPoolAllocator()
	}
	return nil
}

// check returns the error of options Write refuses, their zero values
// standing for the defaults.
func (o *Options) check() error {
	switch o.Format {
	case "", Parquet, JSONL, CSV:
	default:
		return fmt.Errorf("unknown format %q (want parquet, jsonl or csv)", o.Format)
	}
	switch o.Projection {
	case "", Canonical, Query:
	default:
		return fmt.Errorf("unknown projection %q (want canonical or query)", o.Projection)
	}
	if _, ok := Codecs[o.Compression]; !ok && o.Compression != "" {
		return fmt.Errorf("unknown compression %q (want snappy, zstd, gzip, lz4raw or none)", o.Compression)
	}
	if o.RowGroupRows < 0 {
		return fmt.Errorf("export: RowGroupRows is %d; a row group holds at least one row (0 gives the default, %d)", o.RowGroupRows, DefaultRowGroupRows)
	}
	if o.Rules != nil && (o.Format == "" || o.Format == Parquet) && (o.Projection == "" || o.Projection == Canonical) {
		return errors.New("export: Rules decodes keys and values for the query projection, JSONL and CSV; the canonical Parquet projection holds bytes only (set Projection to Query, or leave Rules nil)")
	}
	return nil
}

// checkInput refuses a payload that fails its integrity check
// (savepoint.Savepoint.CheckIntegrity), and to export the logical state
// of a tree with no directory for a subtask below its highest: that view
// would be no restore's, and a copy another subtask holds of the missing
// one's rows would pass for its state. Every stored row (PerFile) is
// still there to export.
func checkInput(sp *savepoint.Savepoint, opts Options) error {
	if err := sp.UndecodableError(); err != nil {
		return err
	}
	if err := sp.CheckIntegrity(""); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := sp.CheckTempDirApart(opts.TempDir); err != nil {
		return err
	}
	if opts.PerFile {
		return nil
	}
	if err := sp.CheckConsecutive(); err != nil {
		return fmt.Errorf("%s: %w; it has no logical state to export (--per-file exports every stored row)", sp.Path, err)
	}
	return nil
}

// CheckOutput returns the error WriteFile gives for its output path as it
// is now: a directory, or a file that is not replaceable, or any existing
// file unless force is set. WriteFile checks it, but only once the input
// is open; a caller may check it before, to fail early.
func CheckOutput(path string, force bool) error {
	st, err := os.Lstat(path)
	if err != nil {
		return nil
	}
	if st.IsDir() {
		return fmt.Errorf("%s is a directory; the export is one file", path)
	}
	if err := savepoint.CheckReplaceable(path, false); err != nil {
		return fmt.Errorf("%w (-o - writes JSON Lines and CSV to standard output)", err)
	}
	if !force {
		return &savepoint.OutputExistsError{Path: path, Note: savepoint.LeftoversNote(path)}
	}
	return nil
}

// WriteFile exports sp to path atomically (temporary file, fsync, rename,
// directory fsync). An existing path is refused unless force is set; the
// output must not be, lie in or contain the input; an input that changed
// while it was read (savepoint.ErrInputChanged) leaves nothing.
func WriteFile(ctx context.Context, path string, sp *savepoint.Savepoint, opts Options, force bool) (*Result, error) {
	if err := sp.CheckUsable(); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if path == "" {
		return nil, errors.New("export: no output path")
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	// A generation directory's input is its whole checkpoint directory (a
	// file beside v<gen> changes what it restores).
	if err := savepoint.CheckOutputPath(savepoint.InputRoot(sp.Path), path); err != nil {
		return nil, err
	}
	if err := checkInput(sp, opts); err != nil {
		return nil, err
	}
	if err := CheckOutput(path, force); err != nil {
		return nil, err
	}
	leftovers := savepoint.Leftovers(path)
	var res *Result
	// As apply and rescale do, the output's missing directories are made
	// (the export failed only once it had read the whole input), and
	// removed again if the export fails. Without force, an export that
	// appears meanwhile is kept.
	err := savepoint.SaveFileMakingDirs(path, force, func(w io.Writer) error {
		if opts.TempDir == "" {
			opts.TempDir = savepoint.TempDirFor(path) // (its directory, made by now)
		}
		// A fault of the mapped input (a file cut short meanwhile) is an
		// error here, so that the temporary file is removed.
		err := savepoint.Guard(func() (err error) {
			res, err = Write(ctx, w, sp, opts)
			return err
		})
		if err != nil {
			return err
		}
		// Before the export is put in place: the run was not cancelled
		// (Write has checked that the input did not change).
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(path); err == nil {
		res.Bytes = st.Size()
	}
	res.Warnings = append(res.Warnings, leftovers...)
	return res, nil
}

// Write exports sp to w (see the package comment). It fails, after writing,
// when a file of sp changed while it was read (savepoint.ErrInputChanged):
// what it wrote then mixes old and new rows. A memory-mapped input cut short
// while it is read is such an error too, not a fault that ends the process:
// Write reads under savepoint.Guard. A payload that fails its integrity
// check is refused however sp was opened
// (savepoint.Savepoint.CheckIntegrity), before anything is written: its
// rows would be exported as state that clink refuses to restore.
func Write(ctx context.Context, w io.Writer, sp *savepoint.Savepoint, opts Options) (res *Result, err error) {
	if err := sp.CheckUsable(); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if w == nil {
		return nil, errors.New("export: no writer (a nil io.Writer)")
	}
	err = savepoint.Guard(func() error {
		res, err = write(ctx, w, sp, opts)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// write is Write, its reads of mapped input unguarded.
func write(ctx context.Context, w io.Writer, sp *savepoint.Savepoint, opts Options) (*Result, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if err := checkInput(sp, opts); err != nil {
		return nil, err
	}
	cw := &countWriter{w: w}
	res := &Result{}
	versions, vmWarn := versionMap(sp)
	dec := newDecoder(opts.Rules)
	var s sink
	var err error
	switch opts.Format {
	case Parquet:
		s, err = newParquetSink(cw, sp, opts, versions, dec)
	case JSONL:
		s = newJSONLSink(cw, dec)
	case CSV:
		s = newCSVSink(cw, dec)
	}
	if err != nil {
		return nil, err
	}
	p := &pipeline{sink: s, res: res, ctx: ctx, tempDir: opts.TempDir}
	if f := singleFile(sp); f != nil && singleFileFastPath {
		err = p.single(f, opts.PerFile, &res.Union)
	} else {
		// Large files out of order are read through sorted copies.
		var u *savepoint.Savepoint
		var dupes int
		var done func()
		if u, dupes, done, err = sp.InOrder(ctx, p.tempDir, spillRows, opts.PerFile); err == nil {
			defer done()
		}
		merged := false
		if err == nil && treeMergeEnabled {
			merged, err = p.treeMerged(u, opts.PerFile, &res.Union)
		}
		if err == nil && !merged {
			seq := u.StoredSeq()
			if !opts.PerFile {
				seq = u.UnionSeq(&res.Union)
			}
			for r := range seq {
				if err = p.add(r); err != nil {
					break
				}
			}
			if err == nil {
				err = p.flush()
			}
		}
		// The rows the sorts dropped as duplicates were stored rows.
		res.Union.StoredRows += dupes
		res.Union.FileDuplicates += dupes
	}
	if cerr := s.close(err); err == nil {
		err = cerr
	}
	if err == nil {
		// What was written describes a mix if a file changed meanwhile.
		err = sp.CheckUnchanged()
	}
	if err != nil {
		return nil, err
	}
	res.Bytes = cw.n
	if ps, ok := s.(*parquetSink); ok {
		res.RowGroups = ps.rowGroups
	}
	// Whatever the path: the files the marker leaves out are in no output.
	res.Warnings = append(res.Warnings, sp.ReadWarnings()...)
	res.Warnings = append(res.Warnings, sp.EmptyPayloadWarnings()...)
	if !opts.PerFile {
		res.Warnings = append(res.Warnings, res.Union.Warnings...)
	}
	if vmWarn != "" {
		res.Warnings = append(res.Warnings, vmWarn)
	}
	res.Warnings = append(res.Warnings, dec.warnings()...)
	return res, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil {
		// The writer's own error says nothing of what it was writing.
		err = fmt.Errorf("write the output at byte %d: %w", c.n, err)
	}
	return n, err
}

// versionMap returns the job-wide version map and a warning when the
// files disagree on it.
func versionMap(sp *savepoint.Savepoint) (savepoint.VersionMap, string) {
	vm, n := sp.JobVersions()
	if n > 1 {
		return vm, fmt.Sprintf("the files carry %d different version maps; clink.state_versions is the first non-empty one (as clink's merge keeps it); see sptool inspect", n)
	}
	return vm, ""
}

// RawSlot is the slot value of keys without a separator.
var rawSlot = []byte(savepoint.RawSlot)

// entry is one row waiting in its operator's buffer.
type entry struct {
	key, value []byte
	subtask    int32
	sep        int32 // index of the slot separator, -1 for "<raw>" rows
}

func (e *entry) slot() []byte {
	if e.sep < 0 {
		return rawSlot
	}
	return e.key[1:e.sep]
}

// newSlot returns 1 when e is the first row of its slot among the rows of
// one slot position, whose kinds seen holds, else 0. Keys without a
// separator and a slot named <raw> share a position (both compare as
// "<raw>", so their rows interleave) but are two slots of the output.
func (e *entry) newSlot(seen *uint8) int {
	bit := uint8(2)
	if e.sep < 0 {
		bit = 1
	}
	if *seen&bit != 0 {
		return 0
	}
	*seen |= bit
	return 1
}

// userKey is clink's collect_entries user key: the bytes after the
// separator, or the whole stored key for "<raw>" rows.
func (e *entry) userKey() []byte {
	if e.sep < 0 {
		return e.key
	}
	return e.key[e.sep+1:]
}

// separator returns the index of the first '|' at index 1 or later in keys
// of two bytes or more (clink's collect_entries), or -1.
func separator(key []byte) int32 {
	if len(key) < 2 {
		return -1
	}
	i := bytes.IndexByte(key[1:], savepoint.KeySeparator)
	if i < 0 {
		return -1
	}
	return int32(i + 1)
}

func compareEntries(a, b entry) int {
	if c := bytes.Compare(a.slot(), b.slot()); c != 0 {
		return c
	}
	if c := bytes.Compare(a.userKey(), b.userKey()); c != 0 {
		return c
	}
	if c := bytes.Compare(a.key, b.key); c != 0 {
		return c
	}
	return int(a.subtask) - int(b.subtask)
}

// sink receives the rows in output order.
type sink interface {
	add(op uint64, e *entry) error
	// close finishes the output; failed says an earlier error ends the export.
	close(failed error) error
}

// pipeline buffers one operator's rows, sorts them and hands them to the sink.
type pipeline struct {
	sink sink
	res  *Result
	ctx  context.Context
	op   uint64
	buf  []entry
	keys []sortKey
	n    int
	// warmed is written by warm so that its loads are not optimised away.
	warmed byte
	// tempDir is Options.TempDir.
	tempDir string
}

func (p *pipeline) add(u savepoint.UnionRow) error {
	if len(p.buf) > 0 && u.Row.Op != p.op {
		if err := p.flush(); err != nil {
			return err
		}
	}
	p.n++
	if p.n&0xFFFF == 0 && p.ctx.Err() != nil {
		return p.ctx.Err()
	}
	p.op = u.Row.Op
	// The sort key is computed here, while the row's key is in cache.
	e := entry{key: u.Row.Key, value: u.Row.Value, subtask: int32(u.Subtask), sep: separator(u.Row.Key)}
	p.keys = append(p.keys, sortKey{slotPrefix(e.slot()), ukPrefix(e.userKey()), uint32(len(p.buf))})
	p.buf = append(p.buf, e)
	return nil
}

func (p *pipeline) flush() error {
	if len(p.buf) == 0 {
		return nil
	}
	sortEntries(p.buf, p.keys)
	p.res.Operators++
	warmed := 0
	var seen uint8
	for i, k := range p.keys {
		if i >= warmed {
			warmed = p.warmEntries(i)
		}
		e := &p.buf[k.idx]
		// A new slot: the slot prefix changes, or (names of 7 bytes or
		// more share a prefix) the names differ.
		if i == 0 || k.slot != p.keys[i-1].slot || k.slot&0xFF >= 7 && !bytes.Equal(p.buf[p.keys[i-1].idx].slot(), e.slot()) {
			seen = 0
		}
		p.res.Slots += e.newSlot(&seen)
		if err := p.sink.add(p.op, e); err != nil {
			return err
		}
	}
	p.res.Rows += int64(len(p.buf))
	clear(p.buf)
	p.buf, p.keys = p.buf[:0], p.keys[:0]
	return nil
}

// sortKey is an entry's position with the first bytes of its slot and user
// key precomputed, so that most comparisons are two integer compares.
type sortKey struct {
	slot, uk uint64
	idx      uint32
}

// slotPrefix packs the first 7 bytes of a slot name (zero-padded) and its
// length capped at 7, so that the integers order as the names do bytewise
// (a name sorts before its extensions) for names under 7 bytes, and every
// name of 7 bytes or more packs to the same integer as the others that
// share its first 7 bytes: those compare in full (the length of a longer
// name would order "counts_v2" before "counts_by_user").
func slotPrefix(s []byte) uint64 {
	var b [8]byte
	copy(b[:7], s)
	b[7] = byte(min(len(s), 7))
	return binary.BigEndian.Uint64(b[:])
}

// ukPrefix is the first 8 bytes of a user key, zero-padded: different
// prefixes order as the keys do; equal prefixes compare the keys in full.
func ukPrefix(k []byte) uint64 {
	if len(k) >= 8 {
		return binary.BigEndian.Uint64(k)
	}
	var b [8]byte
	copy(b[:], k)
	return binary.BigEndian.Uint64(b[:])
}

// sortEntries sorts keys (one per entry of buf) into export order
// (compareEntries).
func sortEntries(buf []entry, keys []sortKey) {
	for i := 1; i < len(keys); i++ {
		if compareSortKeys(buf, keys[i-1], keys[i]) > 0 {
			slices.SortFunc(keys, func(a, b sortKey) int { return compareSortKeys(buf, a, b) })
			return
		}
	}
}

func compareSortKeys(buf []entry, a, b sortKey) int {
	if a.slot != b.slot {
		return cmp.Compare(a.slot, b.slot)
	}
	if a.slot&0xFF >= 7 { // names sharing their first 7 bytes: the whole names first
		if c := bytes.Compare(buf[a.idx].slot(), buf[b.idx].slot()); c != 0 {
			return c
		}
	}
	if a.uk != b.uk {
		return cmp.Compare(a.uk, b.uk)
	}
	if c := compareEntries(buf[a.idx], buf[b.idx]); c != 0 {
		return c
	}
	return int(a.idx) - int(b.idx) // arrival order among copies of one key
}

// singleFileFastPath enables pipeline.single, and treeMergeEnabled
// pipeline.treeMerged (tests compare the paths).
var singleFileFastPath, treeMergeEnabled = true, true

// singleFile returns the file of a savepoint made of one file whose rows a
// restore takes as they are (a file input, or a tree of one subtask, which
// owns every key group), else nil.
func singleFile(sp *savepoint.Savepoint) *savepoint.File {
	if len(sp.Files) != 1 || sp.Files[0].Snapshot == nil {
		return nil
	}
	f := sp.Files[0]
	if sp.Kind != savepoint.InputFile {
		if g, ok := sp.GroupOf(f.Subtask); !ok || g.Count != 1 {
			return nil
		}
	}
	return f
}

// flatKey is a row of a single file with its export sort key.
type flatKey struct {
	op, slot, uk uint64
	idx          uint32
	sep          int32
}

// single exports one file's rows without the k-way merge: one sort of the
// file's rows straight into export order, the sort keys computed in stream
// order (sequential memory), then one pass that resolves duplicate (op,
// key) rows as Logical does (they are adjacent, in stream order) and hands
// the rows to the sink. The rows are exactly Union's (or, perFile, every
// stored row) in the order the k-way path writes them.
func (p *pipeline) single(f *savepoint.File, perFile bool, st *savepoint.UnionStats) error {
	if done, err := p.singleMerged(f, perFile, st); done {
		return err
	}
	if done, err := p.singleSpilled(f, perFile, st); done {
		return err
	}
	return p.singleSorted(f, perFile, st)
}

// singleSorted is single by sorting every row of f into export order.
func (p *pipeline) singleSorted(f *savepoint.File, perFile bool, st *savepoint.UnionStats) error {
	rows := f.Snapshot.NewCursor() // the rows in place (memory-mapped columns when opened so)
	n := rows.Len()
	if !perFile {
		*st = savepoint.UnionStats{Files: 1, StoredRows: n}
	}
	keys := make([]flatKey, n)
	for i := range keys {
		k := rows.Key(i)
		e := entry{key: k, sep: separator(k)}
		keys[i] = flatKey{rows.Op(i), slotPrefix(e.slot()), ukPrefix(e.userKey()), uint32(i), e.sep}
	}
	f.ReleasePages()
	ent := func(k flatKey) entry {
		r := rows.Row(int(k.idx))
		return entry{key: r.Key, value: r.Value, subtask: int32(f.Subtask), sep: k.sep}
	}
	byKey := func(a, b flatKey) int {
		switch {
		case a.op != b.op:
			return cmp.Compare(a.op, b.op)
		case a.slot != b.slot:
			return cmp.Compare(a.slot, b.slot)
		case a.slot&0xFF >= 7: // names sharing their first 7 bytes: the whole names first
			ea, eb := ent(a), ent(b)
			if c := bytes.Compare(ea.slot(), eb.slot()); c != 0 {
				return c
			}
		}
		if a.uk != b.uk {
			return cmp.Compare(a.uk, b.uk)
		}
		if c := compareEntries(ent(a), ent(b)); c != 0 {
			return c
		}
		return int(a.idx) - int(b.idx) // stream order among duplicates
	}
	if err := p.ctx.Err(); err != nil {
		return err
	}
	if !slices.IsSortedFunc(keys, byKey) {
		slices.SortFunc(keys, byKey)
	}
	hdr := make([]savepoint.Row, gatherBlock)
	warmed := 0
	var seen uint8
	e := new(entry) // one allocation: the sink takes a pointer

	release := savepoint.NewPacer(0, f.ReleaseRows())
	for i := 0; i < len(keys); {
		if i&0xFFFF == 0 {
			if p.ctx.Err() != nil {
				return p.ctx.Err()
			}
		}
		if release.Due(i) {
			f.ReleasePages() // what was read stays cached, not resident
		}
		if i >= warmed {
			warmed = p.warm(rows, keys, i, hdr)
		}
		k := keys[i]
		*e = ent(k)
		j := i + 1
		if !perFile {
			// Duplicates of (op, key), in stream order: clink's restore rule.
			// Equal keys have equal prefixes, so only those are compared.
			best := rows.Row(int(k.idx))
			for ; j < len(keys) && keys[j].op == k.op && keys[j].slot == k.slot && keys[j].uk == k.uk && bytes.Equal(rows.Key(int(keys[j].idx)), e.key); j++ {
				best = savepoint.MergeDuplicate(best, rows.Row(int(keys[j].idx)))
			}
			st.FileDuplicates += j - i - 1
			e.value = best.Value
		}
		newOp := i == 0 || k.op != keys[i-1].op
		if newOp {
			p.res.Operators++
		}
		if newOp || k.slot != keys[i-1].slot || k.slot&0xFF >= 7 && !bytes.Equal(separatorSlot(rows.Key(int(keys[i-1].idx)), keys[i-1].sep), e.slot()) {
			seen = 0
		}
		p.res.Slots += e.newSlot(&seen)
		if err := p.sink.add(k.op, e); err != nil {
			return err
		}
		p.res.Rows++
		i = j
	}
	if !perFile {
		st.Rows = int(p.res.Rows)
	}
	return nil
}

// spillRows is the fewest rows of a file in clink's hash-map order that
// the export puts in canonical order through temporary files: from there
// on it is the faster, and the files of a tree sorted in memory were all
// held at once (the 10M-row tree of 16 files: 561 MB against 145 MB). A
// variable so tests can lower it.
var spillRows = 1 << 16

// singleSpilled is single for a large file in clink's hash-map order:
// sorting every row into export order would hold 32 bytes a row, and
// writing them would gather rows from all over the input. It puts the rows
// in canonical order through temporary files instead (Savepoint.InOrder:
// duplicates resolved as Logical does, or, perFile, all kept in stream
// order), then exports the sorted copy with singleMerged. It returns
// false, having done nothing, for other files.
func (p *pipeline) singleSpilled(f *savepoint.File, perFile bool, st *savepoint.UnionStats) (bool, error) {
	v, dupes, done, err := (&savepoint.Savepoint{Files: []*savepoint.File{f}}).InOrder(p.ctx, p.tempDir, spillRows, perFile)
	if err != nil {
		return true, err
	}
	defer done()
	sf := v.Files[0]
	if sf == f {
		return false, nil // small, or in order already with runs too short to merge
	}
	merged, err := p.singleMerged(sf, perFile, st)
	if !merged { // runs too short to merge
		err = p.singleSorted(sf, perFile, st)
	}
	if !perFile {
		st.StoredRows, st.FileDuplicates = f.Snapshot.NumRows(), dupes
	}
	return true, err
}

// gatherBlock is the number of rows pipeline.warm loads ahead.
const gatherBlock = 512

// warm loads the rows keys[from:from+gatherBlock] point to, their headers
// and the first and last bytes of their keys and values, in loops whose
// loads do not depend on each other, so that the CPU overlaps the cache and
// TLB misses of the random gather that follows (in sort order the rows sit
// anywhere in the input) instead of taking them one at a time. It returns
// the end of the block.
func (p *pipeline) warm(rows *savepoint.Cursor, keys []flatKey, from int, hdr []savepoint.Row) int {
	end := min(from+len(hdr), len(keys))
	h := hdr[:end-from]
	for b := range h {
		h[b] = rows.Row(int(keys[from+b].idx))
	}
	var x byte
	for b := range h {
		if n := len(h[b].Key); n > 0 {
			x ^= h[b].Key[0] ^ h[b].Key[n-1]
		}
		if n := len(h[b].Value); n > 0 {
			x ^= h[b].Value[0] ^ h[b].Value[n-1]
		}
	}
	p.warmed ^= x // keeps the loads
	return end
}

// warmEntries is warm for the operator buffer of the k-way path: it loads
// the entries p.keys[from:from+gatherBlock] point to and the ends of their
// keys and values.
func (p *pipeline) warmEntries(from int) int {
	end := min(from+gatherBlock, len(p.keys))
	var x byte
	for _, k := range p.keys[from:end] {
		e := &p.buf[k.idx]
		if n := len(e.key); n > 0 {
			x ^= e.key[0] ^ e.key[n-1]
		}
		if n := len(e.value); n > 0 {
			x ^= e.value[0] ^ e.value[n-1]
		}
	}
	p.warmed ^= x
	return end
}

// separatorSlot is entry.slot for a stored key and its separator index.
func separatorSlot(key []byte, sep int32) []byte {
	e := entry{key: key, sep: sep}
	return e.slot()
}

// slotText renders a slot name for a utf8 column (see AppendSlotText).
func slotText(slot []byte) string { return string(AppendSlotText(nil, slot)) }

// AppendSlotText appends a slot name as text to b: as it is when it is
// valid UTF-8, else 0x and its hex (names are any bytes; format 2.4). A
// name that starts with 0x is written in hex too, or the name 0xfffe and
// the bytes ff fe would give the same text, and so is the name <raw>, the
// text of keys without a separator: the text names one slot.
func AppendSlotText(b, slot []byte) []byte {
	if !slotInHex(slot) {
		return append(b, slot...)
	}
	b = append(b, "0x"...)
	return hex.AppendEncode(b, slot)
}

// slotInHex reports whether AppendSlotText writes a slot name in hex.
func slotInHex(slot []byte) bool {
	return !utf8.Valid(slot) || bytes.HasPrefix(slot, []byte("0x")) || string(slot) == savepoint.RawSlot
}

// slotInHex reports whether e's slot text is 0x and its hex: never for a
// key without a separator (its text is <raw>), else as AppendSlotText.
func (e *entry) slotInHex() bool { return e.sep >= 0 && slotInHex(e.slot()) }

// appendSlotText appends the slot text of e: <raw> for a key without a
// separator, else AppendSlotText of its slot.
func (e *entry) appendSlotText(b []byte) []byte {
	if e.sep < 0 {
		return append(b, savepoint.RawSlot...)
	}
	return AppendSlotText(b, e.slot())
}

// Render renders bytes as the query projection does: printable ASCII
// (0x20..0x7e) verbatim, anything else as 0x followed by lowercase hex, and
// so is printable text that starts with 0x, so that each text renders one
// key (the text "0x00" is 0x30783030, the byte 0 is 0x00).
func Render(b []byte) string {
	if verbatim(b) {
		return string(b)
	}
	return "0x" + hex.EncodeToString(b)
}

// verbatim reports whether Render writes b as it is.
func verbatim(b []byte) bool {
	return savepoint.Printable(b) && !(len(b) >= 2 && b[0] == '0' && b[1] == 'x')
}

// ShownText renders a value decoded by a codec where a line of text shows
// it among other fields (cat's text format, diff's samples), so that no two
// values read alike, nor as more fields: a string Go-quoted, bytes as a
// slot name is (quoted when printable, else 0x and hex), numbers and
// booleans as Text, collections as JSON with every character that is not
// printable escaped as \uXXXX (so that they never read as a quoted
// string), and nil as null.
func ShownText(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(x)
	case []byte:
		return string(savepoint.AppendRenderName(nil, x))
	}
	t, _ := Text(JSONValue(v))
	for _, r := range t {
		if !unicode.IsPrint(r) {
			return escapeUnprintable(t)
		}
	}
	return t
}

// escapeUnprintable escapes each character of t, JSON text, that is not
// printable as JSON does (\uXXXX, a surrogate pair past U+FFFF); in JSON
// text such characters stand only inside strings.
func escapeUnprintable(t string) string {
	var b strings.Builder
	for _, r := range t {
		if unicode.IsPrint(r) {
			b.WriteRune(r)
			continue
		}
		if r > 0xFFFF {
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, "\\u%04x\\u%04x", r1, r2)
			continue
		}
		fmt.Fprintf(&b, "\\u%04x", r)
	}
	return b.String()
}

// Text renders a value decoded by a codec as text: strings verbatim (0x hex
// when not valid UTF-8), bytes as Render, numbers in decimal, collections as
// JSON (see JSONValue). ok is false for nil (optional none, no value).
func Text(v any) (s string, ok bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case string:
		if utf8.ValidString(x) {
			return x, true
		}
		return "0x" + hex.EncodeToString([]byte(x)), true
	case []byte:
		return Render(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case uint64:
		return strconv.FormatUint(x, 10), true
	case int:
		return strconv.Itoa(x), true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64), true
		}
		// As JSON Lines write it (encoding/json's form: 9007199254740992,
		// not 9.007199254740992e+15), so that the formats agree.
		b, _ := rowtext.AppendJSONValue(nil, x)
		return string(b), true
	case bool:
		return strconv.FormatBool(x), true
	}
	b, err := rowtext.AppendJSONValue(nil, JSONValue(v)) // as JSON Lines write it: no HTML escapes
	if err != nil {
		return fmt.Sprint(v), true
	}
	return string(b), true
}

// JSONValue converts a decoded value to one encoding/json renders faithfully:
// bytes as Render, strings that are not valid UTF-8 as 0x hex, non-finite
// floats as strings, recursively through lists and map entries.
func JSONValue(v any) any {
	switch x := v.(type) {
	case []byte:
		return Render(x)
	case string:
		if utf8.ValidString(x) {
			return x
		}
		return "0x" + hex.EncodeToString([]byte(x))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		return x
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = JSONValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = JSONValue(e)
		}
		return out
	}
	return v
}

// Decoded is a row's key and value as the rule file's slot declarations
// decode them.
type Decoded struct {
	// Declared reports that the row is a keyed row of a declared slot.
	Declared bool
	// Key is the decoded user key (string for string, bytes, composite and
	// undeclared key codecs); KeyOK is false when the key codec failed.
	Key   any
	KeyOK bool
	// Value is the decoded value (TTL stamp removed: a TTL slot declared
	// without a value codec gives the stored bytes after the stamp);
	// ValueOK is false when the value codec failed, the slot declares
	// neither a value codec nor a TTL stamp, or a TTL value is shorter than
	// its 8-byte stamp (an error then).
	Value   any
	ValueOK bool
	// ExpireAt is the TTL stamp of a 'ttl: true' slot.
	ExpireAt    int64
	HasExpireAt bool
	// KeyDeclared and ValueDeclared report that the declaration decodes
	// the key (a key codec; in a composite slot, the string codec, which
	// takes the whole key) and the value (a value codec or a TTL stamp):
	// only then do KeyOK and ValueOK say whether it did.
	KeyDeclared, ValueDeclared bool
}

// KeyDecoded returns what the key_decoded column holds: whether the
// declared key codec decoded the key, and false (null) when the row's
// slot declares none, its key then being shown as stored.
func (d Decoded) KeyDecoded() (decoded, declared bool) {
	return d.KeyOK, d.Declared && d.KeyDeclared
}

// JSONFields returns the decoded key and value as JSON values (JSONValue),
// key and value in place of each the declarations did not decode, and the
// TTL stamp (nil without one).
func (d Decoded) JSONFields(key, value any) (any, any, *int64) {
	if d.Declared && d.KeyOK {
		key = JSONValue(d.Key)
	}
	if d.Declared && d.ValueOK {
		value = JSONValue(d.Value)
	}
	var at *int64
	if d.Declared && d.HasExpireAt {
		v := d.ExpireAt
		at = &v
	}
	return key, value, at
}

// ValueDecoded is KeyDecoded for the value (value_decoded).
func (d Decoded) ValueDecoded() (decoded, declared bool) {
	return d.ValueOK, d.Declared && d.ValueDeclared
}

type slotID struct {
	op   uint64
	slot string
}

// DecodeFailures counts, per operator and slot, the rows that the
// declared codecs could not decode, with the first error of each, and
// apart from them the rows that decode to a string that is not valid UTF-8
// (rules.ErrNotUTF8).
type DecodeFailures struct {
	count map[failureID]int
	first map[failureID]string
	order []failureID
}

// failureID is a slot's failures, or (notUTF8) its strings that are not
// UTF-8.
type failureID struct {
	slotID
	notUTF8 bool
}

// Add counts a row of op and slot that failed to decode with err.
func (f *DecodeFailures) Add(op uint64, slot []byte, err error) {
	id := failureID{slotID{op, string(slot)}, errors.Is(err, rules.ErrNotUTF8)}
	if f.count == nil {
		f.count, f.first = map[failureID]int{}, map[failureID]string{}
	}
	if f.count[id] == 0 {
		f.order = append(f.order, id)
		f.first[id] = err.Error()
	}
	f.count[id]++
}

// Warnings returns a warning per slot with failures, in the order first
// met, saying what became of the rows (done: "written undecoded"), and
// one per slot with strings that are not UTF-8, which decode but are
// given as stored.
func (f *DecodeFailures) Warnings(done string) []string {
	var out []string
	for _, id := range f.order {
		n := f.count[id]
		if id.notUTF8 {
			out = append(out, fmt.Sprintf("op %d slot %q: %d row%s holding a declared string that is not valid UTF-8, given as stored (0x and hex), which as text would read as other text; first: %s", id.op, slotText([]byte(id.slot)), n, plural(n), f.first[id]))
			continue
		}
		out = append(out, fmt.Sprintf("op %d slot %q: %d row%s the declared codecs could not decode (%s); first: %s", id.op, slotText([]byte(id.slot)), n, plural(n), done, f.first[id]))
	}
	return out
}

// decoder decodes rows with a rule set's slot declarations and counts failures.
type decoder struct {
	set      *rules.Set
	env      rules.Env
	failures DecodeFailures
	// declared holds the declared (op, slot) pairs met; last is the one
	// met last, as rows come slot by slot.
	declared map[slotID]bool
	last     slotID
	// undescribed holds the declared (op, slot) pairs met in rows their
	// declaration does not describe (SlotDecl.Describes): broadcast state
	// of a keyed declaration, keyed rows of a broadcast one.
	undescribed map[slotID]bool
}

func newDecoder(set *rules.Set) *decoder {
	return &decoder{set: set}
}

// DecodeRow decodes a row with set's declarations (nil set: nothing is
// declared). env is the caller's reusable environment.
func DecodeRow(set *rules.Set, env *rules.Env, r savepoint.Row, subtask int) (Decoded, error) {
	if set == nil {
		return Decoded{}, nil
	}
	k := savepoint.ParseKey(r.Key)
	if !k.HasSlot {
		return Decoded{}, nil
	}
	decl := set.SlotDecl(r.Op, string(k.Slot))
	if decl == nil || !decl.Describes(k, r.Key) {
		return Decoded{}, nil
	}
	err := set.FillEnv(env, r, subtask)
	// A key the declaration does not decode is shown as stored, as an
	// undeclared slot's is: not as the text of its bytes. A composite key
	// (K 0x1F element) is text only with the string codec; with another,
	// it is not decoded.
	keyDecodes := decl.KeyCodec != nil && (!decl.Composite || decl.KeyCodec.String() == "string")
	d := Decoded{Declared: true, Key: env.Key, KeyDeclared: keyDecodes, ValueDeclared: decl.ValueCodec != nil || decl.TTL}
	d.KeyOK = keyDecodes
	if d.KeyOK && !decl.Composite && decl.KeyCodec.String() == "bytes" {
		// The bytes codec's key is a string in expressions; shown, it is
		// bytes, rendered as a bytes value is.
		d.Key = k.UserKey
	}
	var de *rules.DecodeError
	if errors.As(err, &de) && de.Part == "key" {
		d.KeyOK = false
	}
	if at, ok := env.ExpireAt.(int64); ok {
		d.ExpireAt, d.HasExpireAt = at, true
	}
	switch {
	case decl.TTL && !d.HasExpireAt:
		// A value too short for its stamp: written undecoded, and counted.
		if err == nil {
			codec := "bytes"
			if decl.ValueCodec != nil {
				codec = decl.ValueCodec.String()
			}
			err = &rules.DecodeError{Op: r.Op, Slot: decl.Slot, Part: "value", Codec: codec,
				Err: fmt.Errorf("value of %d bytes has no %d-byte TTL stamp", len(r.Value), savepoint.TTLPrefixLen), Line: decl.Line}
		}
	case decl.ValueCodec == nil && !decl.TTL:
		// Bytes as stored: the value columns hold them already.
	case errors.As(err, &de) && de.ValueFailed():
	default:
		// Decoded, or (a TTL slot declared without a value codec) the
		// stored bytes with their stamp removed.
		d.Value, d.ValueOK = env.Value, true
	}
	// A declared string that is not UTF-8 cannot be written as text: it is
	// written as stored (0x and hex), and counted, so that it is not taken
	// for the text "0x...".
	if d.KeyOK && notUTF8String(decl.KeyCodec, d.Key) {
		d.KeyOK = false
		if err == nil {
			err = &rules.DecodeError{Op: r.Op, Slot: decl.Slot, Part: "key", Codec: decl.KeyCodec.String(), Err: rules.ErrNotUTF8, Line: decl.Line}
		}
	}
	if d.ValueOK && notUTF8String(decl.ValueCodec, d.Value) {
		d.ValueOK = false
		if err == nil {
			err = &rules.DecodeError{Op: r.Op, Slot: decl.Slot, Part: "value", Codec: decl.ValueCodec.String(), Err: rules.ErrNotUTF8, Line: decl.Line}
		}
	}
	return d, err
}

// NotUTF8Error returns the *rules.DecodeError DecodeRow gives a row of a
// declared slot whose key or value, decoded with the string codec into env
// (by set.FillEnv), is not valid UTF-8, else nil: such a string cannot be
// shown as text without being taken for other text.
func NotUTF8Error(set *rules.Set, env *rules.Env, r savepoint.Row) error {
	k := savepoint.ParseKey(r.Key)
	if set == nil || !k.HasSlot {
		return nil
	}
	decl := set.SlotDecl(r.Op, string(k.Slot))
	if decl == nil || !decl.Describes(k, r.Key) {
		return nil
	}
	switch {
	case notUTF8String(decl.KeyCodec, env.Key):
		return &rules.DecodeError{Op: r.Op, Slot: decl.Slot, Part: "key", Codec: decl.KeyCodec.String(), Err: rules.ErrNotUTF8, Line: decl.Line}
	case notUTF8String(decl.ValueCodec, env.Value):
		return &rules.DecodeError{Op: r.Op, Slot: decl.Slot, Part: "value", Codec: decl.ValueCodec.String(), Err: rules.ErrNotUTF8, Line: decl.Line}
	}
	return nil
}

// notUTF8String reports whether v, decoded with codec c, is a string that
// is not valid UTF-8 (c is the string codec, or an optional of it, which
// decodes to the string itself), or a collection holding one at any depth
// (the strings of a decoded list, map or pair come from its string
// elements only: bytes elements decode to []byte). A string v of another
// codec is not a decoded one: Env holds a bytes key, and a composite key
// of any codec, as a string of the stored bytes. Shown, such a string
// would be 0x and hex, read as the text "0x...".
func notUTF8String(c codec.Codec, v any) bool {
	if c == nil {
		return false
	}
	if s, ok := v.(string); ok {
		if strings.HasPrefix(c.String(), "optional<") {
			c = codec.Args(c)[0] // (an optional of an optional is refused)
		}
		return c.String() == "string" && !utf8.ValidString(s)
	}
	return holdsNotUTF8(v)
}

// holdsNotUTF8 reports whether v, a decoded value, is or holds a string
// that is not valid UTF-8.
func holdsNotUTF8(v any) bool {
	switch x := v.(type) {
	case string:
		return !utf8.ValidString(x)
	case []any:
		return slices.ContainsFunc(x, holdsNotUTF8)
	case map[string]any:
		for _, e := range x {
			if holdsNotUTF8(e) {
				return true
			}
		}
	}
	return false
}

func (d *decoder) decode(op uint64, e *entry) Decoded {
	if d.set == nil {
		return Decoded{}
	}
	r := savepoint.Row{Op: op, Key: e.key, Value: e.value}
	dd, err := DecodeRow(d.set, &d.env, r, int(e.subtask))
	if err != nil {
		d.failures.Add(op, e.slot(), err)
	}
	if !dd.Declared {
		if k := savepoint.ParseKey(e.key); k.HasSlot && d.set.SlotDecl(op, string(k.Slot)) != nil {
			if d.undescribed == nil {
				d.undescribed = map[slotID]bool{}
			}
			d.undescribed[slotID{op, string(k.Slot)}] = true
		}
	}
	if dd.Declared && (d.declared == nil || op != d.last.op || d.last.slot != string(e.slot())) {
		if d.declared == nil {
			d.declared = map[slotID]bool{}
		}
		d.last = slotID{op, string(e.slot())}
		d.declared[d.last] = true
	}
	return dd
}

// warnings returns the decoding failures' warnings, then one for each slot
// declaration that no row exported matched: a mistyped operator or slot
// name, which would otherwise leave the slot's rows undecoded without a
// word.
func (d *decoder) warnings() []string {
	warns := d.failures.Warnings("written undecoded")
	if d.set == nil {
		return warns
	}
	// A declaration decodes its slot under each name the file gives it
	// (after a rename or remap): the rows it matched are those of any.
	matched, undescribed := map[*rules.SlotDecl]bool{}, map[*rules.SlotDecl]bool{}
	for id := range d.declared {
		matched[d.set.SlotDecl(id.op, id.slot)] = true
	}
	for id := range d.undescribed {
		undescribed[d.set.SlotDecl(id.op, id.slot)] = true
	}
	for _, decl := range d.set.Slots {
		switch {
		case matched[decl]:
		case undescribed[decl] && decl.Broadcast:
			warns = append(warns, fmt.Sprintf("slots: declaration %d (line %d): the rows exported of operator %s slot %q are not its broadcast state (key 0xFF slot '|'), which a 'broadcast: true' declaration alone decodes; those rows are written as stored", decl.Index, decl.Line, decl.Op, decl.Slot))
		case undescribed[decl]:
			warns = append(warns, fmt.Sprintf("slots: declaration %d (line %d): the rows exported of operator %s slot %q are operator state (broadcast state, key 0xFF slot '|'), which the declaration does not decode: it describes keyed state (declare the slot 'broadcast: true' to decode its broadcast state); those rows are written as stored", decl.Index, decl.Line, decl.Op, decl.Slot))
		default:
			warns = append(warns, fmt.Sprintf("slots: declaration %d (line %d): no row exported is of operator %s slot %q; the declaration matches no row (a mistyped operator or slot?)", decl.Index, decl.Line, decl.Op, decl.Slot))
		}
	}
	return warns
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// keyText is the row model's key as text: decoded when declared, else the
// key appendShownKey gives.
func keyText(e *entry, k savepoint.Key, d Decoded) string {
	if d.Declared && d.KeyOK {
		if s, ok := Text(d.Key); ok {
			return s
		}
	}
	return string(appendShownKey(nil, e, k))
}

// appendShownKey appends the key text of e (k its ParseKey) that the text
// columns show: its user key rendered (Render), after "0x80+" (the first
// byte) for an operator-state row whose first byte is 0x80-0xFE rather
// than 0xFF, as cat prints it. Its user key alone would read as that of
// the 0xFF row of the same logical key, which clink's operator code reads;
// Render never writes a '+' after 0x and two hex digits.
func appendShownKey(b []byte, e *entry, k savepoint.Key) []byte {
	if operatorByte(e, k) {
		b = fmt.Appendf(b, "0x%02x+", e.key[0])
	}
	return append(b, Render(k.UserKey)...)
}

// operatorByte reports whether e's key text starts with its first byte
// (see appendShownKey).
func operatorByte(e *entry, k savepoint.Key) bool {
	return k.Kind == savepoint.KindOperator && len(e.key) > 0 && e.key[0] != 0xFF
}

func int64Of(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), true
		}
	case int:
		return int64(x), true
	}
	return 0, false
}

// ---------------------------------------------------------------- JSONL / CSV

// Record is one row of the JSONL and CSV exports: a JSON Lines export writes
// each row as encoding/json writes its Record, and a CSV export its fields
// in CSVHeader's order (a decoded key or value as Text gives it).
type Record struct {
	Op       uint64 `json:"op"`
	Kind     string `json:"kind"`
	KeyGroup int    `json:"key_group"`
	Slot     string `json:"slot"`
	Key      any    `json:"key"`
	Value    any    `json:"value"`
	KeyHex   string `json:"key_hex"`
	ValueHex string `json:"value_hex"`
	ExpireAt *int64 `json:"expire_at"`
	Subtask  int    `json:"subtask"`
	// KeyDecoded and ValueDecoded say whether the declared codecs decoded
	// Key and Value (false: the codec failed and the bytes are shown as
	// stored), null when the slot declares none for them: a decoded
	// string that starts with 0x is then told from a value shown in hex.
	KeyDecoded   *bool `json:"key_decoded"`
	ValueDecoded *bool `json:"value_decoded"`
}

// CSVHeader is the CSV export's header line.
var CSVHeader = []string{"op", "kind", "key_group", "slot", "key", "value", "key_hex", "value_hex", "expire_at", "subtask", "key_decoded", "value_decoded"}

// ---------------------------------------------------------------- Parquet

// CanonicalSchema returns the canonical projection's Arrow schema (with a
// subtask column when perFile is set).
func CanonicalSchema(perFile bool) *arrow.Schema {
	fields := []arrow.Field{
		{Name: "op_id", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "key_group", Type: arrow.PrimitiveTypes.Uint8},
		{Name: "slot", Type: arrow.BinaryTypes.String},
		{Name: "user_key", Type: arrow.BinaryTypes.Binary},
		{Name: "value_bytes", Type: arrow.BinaryTypes.Binary},
	}
	if perFile {
		fields = append(fields, arrow.Field{Name: "subtask", Type: arrow.PrimitiveTypes.Int32})
	}
	return arrow.NewSchema(fields, nil)
}

// QuerySchema returns the query projection's Arrow schema.
func QuerySchema() *arrow.Schema {
	i64 := arrow.PrimitiveTypes.Int64
	str := arrow.BinaryTypes.String
	return arrow.NewSchema([]arrow.Field{
		{Name: "event_time", Type: i64, Nullable: true},
		{Name: "op_id", Type: i64, Nullable: true},
		{Name: "key_group", Type: i64, Nullable: true},
		{Name: "slot", Type: str, Nullable: true},
		{Name: "user_key", Type: str, Nullable: true},
		{Name: "key_int", Type: i64, Nullable: true},
		{Name: "value", Type: str, Nullable: true},
		{Name: "value_int", Type: i64, Nullable: true},
		{Name: "kind", Type: str, Nullable: true},
		{Name: "key", Type: str, Nullable: true},
		{Name: "expire_at", Type: i64, Nullable: true},
		{Name: "subtask", Type: i64, Nullable: true},
		{Name: "key_decoded", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "value_decoded", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil)
}

// Metadata keys sptool adds to a Parquet export.
const (
	// MetaProjection is "canonical" or "query".
	MetaProjection = "sptool.projection"
	// MetaView is "union" (the logical view) or "per-file" (every stored row).
	MetaView = "sptool.view"
)

// provenance describes the input without paths or clock readings.
func provenance(sp *savepoint.Savepoint, opts Options) string {
	var crc [4]byte
	h := savepoint.NewCRC32C()
	for _, f := range sp.Files {
		binary.LittleEndian.PutUint32(crc[:], f.CRC32C)
		h.Write(crc[:])
	}
	s := fmt.Sprintf("tool=%s;input_kind=%s;generation=%d;checkpoint=%d;files=%d;input_crc32c=%d", opts.Tool, sp.Kind, sp.Generation, sp.Checkpoint, len(sp.Files), h.Sum32())
	if opts.Rules != nil && opts.Projection == Query {
		s += ";rules_sha256=" + opts.Rules.Digest
	}
	return s
}

// ParquetMetadata returns the file key-value metadata of an export, in order.
func ParquetMetadata(sp *savepoint.Savepoint, opts Options, versions savepoint.VersionMap) savepoint.Metadata {
	var md savepoint.Metadata
	if versions.Len() > 0 {
		md = append(md, savepoint.MetaEntry{Key: savepoint.MetaStateVersions, Value: versions.Pack()})
	}
	view := "union"
	if opts.PerFile {
		view = "per-file"
	}
	return append(md,
		savepoint.MetaEntry{Key: MetaProjection, Value: string(opts.Projection)},
		savepoint.MetaEntry{Key: MetaView, Value: view},
		savepoint.MetaEntry{Key: savepoint.MetaProvenance, Value: provenance(sp, opts)},
	)
}

// writerProperties are the Parquet writer settings of a projection.
func writerProperties(opts Options) *parquet.WriterProperties {
	props := []parquet.WriterProperty{
		parquet.WithCompression(Codecs[opts.Compression]),
		parquet.WithMaxRowGroupLength(int64(opts.RowGroupRows)),
		parquet.WithDictionaryDefault(false),
		parquet.WithAllocator(opts.Allocator),
	}
	dict := []string{"op_id", "key_group", "slot"}
	if opts.Projection == Canonical {
		props = append(props,
			parquet.WithStatsFor("user_key", false),
			parquet.WithStatsFor("value_bytes", false))
		if opts.PerFile {
			dict = append(dict, "subtask")
		}
	} else {
		dict = append(dict, "kind", "subtask")
		props = append(props,
			parquet.WithStatsFor("user_key", false),
			parquet.WithStatsFor("value", false),
			parquet.WithStatsFor("key", false))
	}
	// Dictionary-encoded in every row group: arrow-go gives up a column's
	// dictionary when it is not smaller than the plain encoding by its own
	// estimate of an uncompressed column, which it makes for
	// --compression none only: an op_id column of 4 MB where 238 bytes do.
	for _, c := range dict {
		props = append(props, parquet.WithDictionaryFor(c, true), parquet.WithDictionaryCostFallbackFor(c, false))
	}
	return parquet.NewWriterProperties(props...)
}

// parquetSink writes the exported rows as Parquet, a batch of rows at a
// time, batches filling row groups of Options.RowGroupRows rows.
//
// Building a batch (reading and merging rows, rendering the query
// projection) and encoding it (dictionaries, pages, compression) take about
// as long as each other, so they overlap: a full batch is handed to a
// goroutine that encodes it while the rows of the next fill the other
// batch. One batch is encoded at a time, in order, and only that goroutine
// touches the Parquet writer until close; the batches hold copies of the
// rows' bytes, never the input's memory.
type parquetSink struct {
	fw     *file.Writer
	rg     file.BufferedRowGroupWriter // the writing goroutine's
	haveRG bool
	rgRows int // rows given to the current row group
	// rgBytes are the key and value bytes given to it (maxRowGroupBytes).
	rgBytes int
	opts    Options
	dec     *decoder
	// canon or query is the batch being filled; spare is the other one
	// (being encoded, or free).
	canon, spareCanon *canonBatch
	query, spareQuery *queryBatch
	// writing is the encoding in flight, if any (a panic in it is raised
	// again in wait), writeErr its error.
	writing   *savepoint.Faults
	writeErr  error
	rowGroups int
}

// parquetRoot returns the Parquet schema of a projection's Arrow schema, as
// pqarrow converts it (field ids -1; unsigned and narrow integers as
// annotated INT32/INT64; utf8 as a String-annotated BYTE_ARRAY), so that
// Arrow readers get the projection's types back.
func parquetRoot(as *arrow.Schema) (*schema.GroupNode, error) {
	fields := make(schema.FieldList, 0, as.NumFields())
	for _, f := range as.Fields() {
		rep := parquet.Repetitions.Required
		if f.Nullable {
			rep = parquet.Repetitions.Optional
		}
		var (
			n   schema.Node
			err error
		)
		switch f.Type.ID() {
		case arrow.UINT64:
			n, err = schema.NewPrimitiveNodeLogical(f.Name, rep, schema.NewIntLogicalType(64, false), parquet.Types.Int64, -1, -1)
		case arrow.INT64:
			n, err = schema.NewPrimitiveNodeLogical(f.Name, rep, schema.NewIntLogicalType(64, true), parquet.Types.Int64, -1, -1)
		case arrow.UINT8:
			n, err = schema.NewPrimitiveNodeLogical(f.Name, rep, schema.NewIntLogicalType(8, false), parquet.Types.Int32, -1, -1)
		case arrow.INT32:
			n, err = schema.NewPrimitiveNodeLogical(f.Name, rep, schema.NewIntLogicalType(32, true), parquet.Types.Int32, -1, -1)
		case arrow.STRING:
			n, err = schema.NewPrimitiveNodeLogical(f.Name, rep, schema.StringLogicalType{}, parquet.Types.ByteArray, -1, -1)
		case arrow.BINARY:
			n, err = schema.NewPrimitiveNode(f.Name, rep, parquet.Types.ByteArray, -1, -1)
		case arrow.BOOL:
			n, err = schema.NewPrimitiveNode(f.Name, rep, parquet.Types.Boolean, -1, -1)
		default:
			err = fmt.Errorf("no Parquet type for %s", f.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", f.Name, err)
		}
		fields = append(fields, n)
	}
	return schema.NewGroupNode("schema", parquet.Repetitions.Required, fields, -1)
}

func newParquetSink(w io.Writer, sp *savepoint.Savepoint, opts Options, versions savepoint.VersionMap, dec *decoder) (*parquetSink, error) {
	var as *arrow.Schema
	if opts.Projection == Canonical {
		as = CanonicalSchema(opts.PerFile)
	} else {
		as = QuerySchema()
	}
	root, err := parquetRoot(as)
	if err != nil {
		return nil, fmt.Errorf("create parquet writer: %w", err)
	}
	kv := metadata.NewKeyValueMetadata()
	for _, e := range ParquetMetadata(sp, opts, versions) {
		if err := kv.Append(e.Key, e.Value); err != nil {
			return nil, fmt.Errorf("create parquet writer: %w", err)
		}
	}
	fw, err := file.NewParquetWriterWithError(w, root, file.WithWriterProps(writerProperties(opts)), file.WithWriteMetadata(kv))
	if err != nil {
		return nil, fmt.Errorf("create parquet writer: %w", err)
	}
	s := &parquetSink{fw: fw, opts: opts, dec: dec}
	if opts.Projection == Canonical {
		s.canon = newCanonBatch(opts.PerFile)
	} else {
		s.query = newQueryBatch()
	}
	return s, nil
}

func (s *parquetSink) add(op uint64, e *entry) error {
	if s.canon != nil {
		if s.canon.full(e) || s.rgRows+s.canon.n >= s.opts.RowGroupRows {
			if err := s.flushBatch(); err != nil {
				return err
			}
		}
		s.canon.add(op, e)
		return nil
	}
	if s.query.full(e) || s.rgRows+s.query.n >= s.opts.RowGroupRows {
		if err := s.flushBatch(); err != nil {
			return err
		}
	}
	s.query.add(op, e, s.dec.decode(op, e))
	return nil
}

// flushBatch writes the current batch into the current row group, after
// starting a new one when it is full: a batch never crosses a row group,
// and row groups hold RowGroupRows rows (the last one fewer).
func (s *parquetSink) flushBatch() error {
	n, size := 0, 0
	if s.canon != nil {
		n, size = s.canon.n, len(s.canon.keyData)+len(s.canon.valDat)
	} else {
		n, size = s.query.n, s.query.bytes
	}
	if n == 0 {
		return nil
	}
	if err := s.wait(); err != nil { // the spare batch is free
		return err
	}
	newRG := !s.haveRG || s.rgRows >= s.opts.RowGroupRows || s.rgBytes >= maxRowGroupBytes
	if newRG {
		s.haveRG, s.rgRows, s.rgBytes = true, 0, 0
	}
	s.rgRows += n
	s.rgBytes += size
	var b interface {
		write(file.BufferedRowGroupWriter) error
	}
	if s.canon != nil {
		if s.spareCanon == nil {
			s.spareCanon = newCanonBatch(s.canon.perFile)
		}
		b, s.canon, s.spareCanon = s.canon, s.spareCanon, s.canon
	} else {
		if s.spareQuery == nil {
			s.spareQuery = newQueryBatch()
		}
		b, s.query, s.spareQuery = s.query, s.spareQuery, s.query
	}
	s.writing = new(savepoint.Faults)
	s.writing.Go(func() {
		if newRG {
			rg, err := s.fw.AppendBufferedRowGroupChecked()
			if err != nil {
				s.writeErr = fmt.Errorf("write parquet: %w", err)
				return
			}
			s.rg = rg
		}
		if err := b.write(s.rg); err != nil {
			s.writeErr = fmt.Errorf("write parquet: %w", err)
		}
	})
	return nil
}

// wait waits for the batch being encoded, if any, and returns its error.
func (s *parquetSink) wait() error {
	if s.writing == nil {
		return nil
	}
	w := s.writing
	s.writing = nil
	w.Wait()
	return s.writeErr
}

func (s *parquetSink) close(failed error) error {
	if failed == nil {
		failed = s.flushBatch()
		if err := s.wait(); failed == nil {
			failed = err
		}
		if failed != nil {
			s.fw.Close()
			return failed
		}
	}
	s.wait()
	if err := s.fw.Close(); err != nil && failed == nil {
		return fmt.Errorf("finish parquet: %w", err)
	}
	s.rowGroups = s.fw.NumRowGroups()
	return nil
}

// batchWriter is a typed Parquet column writer.
type batchWriter[V any] interface {
	WriteBatch(values []V, defLevels, repLevels []int16) (int64, error)
}

// writeColumn writes the values of column i of a batch (def: definition
// levels of an optional column, one per row; values then holds the
// non-null ones).
func writeColumn[W batchWriter[V], V any](rg file.BufferedRowGroupWriter, i int, values []V, def []int16) error {
	cw, err := rg.Column(i)
	if err != nil {
		return err
	}
	w, ok := cw.(W)
	if !ok {
		return fmt.Errorf("internal error: column %d has a %T", i, cw)
	}
	_, err = w.WriteBatch(values, def, nil)
	return err
}

// byteArrays returns the values of a column stored as data with end
// offsets ends (the first value starts at 0), reusing dst.
func byteArrays[O int32 | int](dst []parquet.ByteArray, data []byte, ends []O) []parquet.ByteArray {
	dst = dst[:0]
	from := O(0)
	for _, e := range ends {
		dst = append(dst, data[from:e:e])
		from = e
	}
	return dst
}

// canonBatch builds the canonical columns directly in Go slices.
type canonBatch struct {
	perFile                   bool
	n                         int
	ops                       []int64 // op ids, as the INT64 column stores them
	kgs                       []int32
	subs                      []int32
	slotEnd, keyEnd, valEnd   []int32
	slotData, keyData, valDat []byte
	values                    [][]parquet.ByteArray // for write, a scratch slice a column
}

func newCanonBatch(perFile bool) *canonBatch {
	b := &canonBatch{perFile: perFile}
	b.reset()
	return b
}

// reset empties the batch, keeping its memory: the column writers copy what
// they keep (encoded pages, dictionary entries, statistics) before
// WriteBatch returns.
func (b *canonBatch) reset() {
	b.n = 0
	if b.ops == nil {
		b.ops = make([]int64, 0, batchRows)
		b.kgs = make([]int32, 0, batchRows)
		b.subs = make([]int32, 0, batchRows)
		b.slotEnd = make([]int32, 0, batchRows)
		b.keyEnd = make([]int32, 0, batchRows)
		b.valEnd = make([]int32, 0, batchRows)
		b.slotData = make([]byte, 0, 8*batchRows)
		b.keyData = make([]byte, 0, 16*batchRows)
		b.valDat = make([]byte, 0, 16*batchRows)
	}
	b.ops, b.kgs, b.subs = b.ops[:0], b.kgs[:0], b.subs[:0]
	b.slotEnd, b.keyEnd, b.valEnd = b.slotEnd[:0], b.keyEnd[:0], b.valEnd[:0]
	b.slotData, b.keyData, b.valDat = b.slotData[:0], b.keyData[:0], b.valDat[:0]
}

func (b *canonBatch) full(e *entry) bool {
	return b.n > 0 && (b.n >= batchRows ||
		len(b.keyData)+len(e.key) > maxBatchBytes || len(b.valDat)+len(e.value) > maxBatchBytes)
}

// canonicalKeyGroup is the key_group column's value: the stored key's first
// byte, 255 for the empty key (see the package comment).
func canonicalKeyGroup(key []byte) byte {
	if len(key) == 0 {
		return 0xFF
	}
	return key[0]
}

func (b *canonBatch) add(op uint64, e *entry) {
	b.n++
	b.ops = append(b.ops, int64(op))
	b.kgs = append(b.kgs, int32(canonicalKeyGroup(e.key)))
	if b.perFile {
		b.subs = append(b.subs, e.subtask)
	}
	b.slotData = e.appendSlotText(b.slotData)
	b.slotEnd = append(b.slotEnd, int32(len(b.slotData)))
	b.keyData = append(b.keyData, e.userKey()...)
	b.keyEnd = append(b.keyEnd, int32(len(b.keyData)))
	b.valDat = append(b.valDat, e.value...)
	b.valEnd = append(b.valEnd, int32(len(b.valDat)))
}

// write writes the batch's columns into rg and starts a new batch.
func (b *canonBatch) write(rg file.BufferedRowGroupWriter) error {
	cols := 5
	if b.perFile {
		cols = 6
	}
	byteCols := [3]struct {
		data []byte
		ends []int32
	}{{b.slotData, b.slotEnd}, {b.keyData, b.keyEnd}, {b.valDat, b.valEnd}}
	err := encodeColumns(cols, &b.values, func(col int, values *[]parquet.ByteArray) error {
		switch col {
		case 0:
			return writeColumn[*file.Int64ColumnChunkWriter](rg, 0, b.ops, nil)
		case 1:
			return writeColumn[*file.Int32ColumnChunkWriter](rg, 1, b.kgs, nil)
		case 5:
			return writeColumn[*file.Int32ColumnChunkWriter](rg, 5, b.subs, nil)
		}
		c := byteCols[col-2]
		*values = byteArrays(*values, c.data, c.ends)
		return writeColumn[*file.ByteArrayColumnChunkWriter](rg, col, *values, nil)
	})
	b.reset()
	return err
}

// encodeColumns calls write for each of a batch's cols columns, each on a
// goroutine of its own, and returns the error of the first column that
// failed. A column writer of a buffered row group keeps its pages to
// itself until the row group ends, so columns encode (dictionaries,
// statistics, compression) at once, and the file is the same whatever
// their order: a Parquet export of 10M rows spent three quarters of its
// time encoding, one column after another, while the rows of the next
// batch waited. values holds a scratch slice per column for its write.
func encodeColumns(cols int, values *[][]parquet.ByteArray, write func(col int, values *[]parquet.ByteArray) error) error {
	if len(*values) < cols {
		*values = make([][]parquet.ByteArray, cols)
	}
	errs := make([]error, cols)
	var f savepoint.Faults
	for col := range cols {
		f.Go(func() { errs[col] = write(col, &(*values)[col]) })
	}
	f.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// optInt64 is an optional INT64 column of a batch: the non-null values and
// a definition level per row.
type optInt64 struct {
	vals []int64
	def  []int16
}

func (c *optInt64) add(v int64) { c.vals, c.def = append(c.vals, v), append(c.def, 1) }
func (c *optInt64) null()       { c.def = append(c.def, 0) }
func (c *optInt64) reset()      { c.vals, c.def = c.vals[:0], c.def[:0] }

// optBool is an optional boolean column of a batch.
type optBool struct {
	vals []bool
	def  []int16
}

// set adds a row's flag (Decoded.KeyDecoded): its value, or null when
// nothing is declared.
func (c *optBool) set(flag func() (bool, bool)) {
	if v, declared := flag(); declared {
		c.vals, c.def = append(c.vals, v), append(c.def, 1)
		return
	}
	c.def = append(c.def, 0)
}
func (c *optBool) reset() { c.vals, c.def = c.vals[:0], c.def[:0] }

// optString is an optional string column of a batch: the non-null values
// (data and end offsets) and a definition level per row.
type optString struct {
	data []byte
	ends []int
	def  []int16
}

func (c *optString) add(s string) {
	c.data = append(c.data, s...)
	c.ends, c.def = append(c.ends, len(c.data)), append(c.def, 1)
}
func (c *optString) null()  { c.def = append(c.def, 0) }
func (c *optString) reset() { c.data, c.ends, c.def = c.data[:0], c.ends[:0], c.def[:0] }

// queryBatch builds the query projection's columns in Go slices.
type queryBatch struct {
	n                                                     int
	bytes                                                 int
	eventTime, opID, keyGroup, keyInt, valueInt, expireAt optInt64
	subtask                                               optInt64
	slot, userKey, value, kind, key                       optString
	keyDecoded, valueDecoded                              optBool
	values                                                [][]parquet.ByteArray // for write, a scratch slice a column
}

func newQueryBatch() *queryBatch { return &queryBatch{} }

func (q *queryBatch) reset() {
	q.n, q.bytes = 0, 0
	for _, c := range q.ints() {
		c.reset()
	}
	for _, c := range q.strings() {
		c.reset()
	}
	q.keyDecoded.reset()
	q.valueDecoded.reset()
}

// ints and strings return the columns in schema order.
func (q *queryBatch) ints() []*optInt64 {
	return []*optInt64{&q.eventTime, &q.opID, &q.keyGroup, &q.keyInt, &q.valueInt, &q.expireAt, &q.subtask}
}

func (q *queryBatch) strings() []*optString {
	return []*optString{&q.slot, &q.userKey, &q.value, &q.kind, &q.key}
}

func (q *queryBatch) full(e *entry) bool {
	// Rendering at most doubles a value (hex); the key appears twice.
	return q.n > 0 && (q.n >= batchRows || q.bytes+4*len(e.key)+2*len(e.value)+64 > maxBatchBytes)
}

func le64(b []byte) (int64, bool) {
	if len(b) != 8 {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(b)), true
}

func (q *queryBatch) add(op uint64, e *entry, d Decoded) {
	q.n++
	q.bytes += 4*len(e.key) + 2*len(e.value) + 64
	k := savepoint.ParseKey(e.key)
	q.eventTime.null()
	q.opID.add(int64(op))
	if len(e.key) > 0 && e.key[0] < savepoint.NumKeyGroups {
		q.keyGroup.add(int64(e.key[0]))
	} else {
		q.keyGroup.null()
	}
	q.slot.add(string(e.appendSlotText(nil)))
	uk := e.userKey()
	q.userKey.add(Render(uk))
	if v, ok := le64(uk); ok {
		q.keyInt.add(v)
	} else {
		q.keyInt.null()
	}
	switch {
	case d.Declared && d.ValueOK:
		if s, ok := Text(d.Value); ok {
			q.value.add(s)
		} else {
			q.value.null()
		}
		if v, ok := int64Of(d.Value); ok {
			q.valueInt.add(v)
		} else {
			q.valueInt.null()
		}
	default:
		q.value.add(Render(e.value))
		// The stored bytes' reading stands for the value of a slot that
		// declares no value codec, not for one its codec failed on (a
		// TTL slot's 8 bytes would be the stamp).
		if v, ok := le64(e.value); ok && !(d.Declared && d.ValueDeclared) {
			q.valueInt.add(v)
		} else {
			q.valueInt.null()
		}
	}
	q.kind.add(k.Kind.String())
	q.key.add(keyText(e, k, d))
	if d.HasExpireAt {
		q.expireAt.add(d.ExpireAt)
	} else {
		q.expireAt.null()
	}
	if e.subtask >= 0 {
		q.subtask.add(int64(e.subtask))
	} else {
		q.subtask.null()
	}
	q.keyDecoded.set(d.KeyDecoded)
	q.valueDecoded.set(d.ValueDecoded)
}

// queryColumns is the query schema's column order: an int64 column (index
// into ints), a string column (index into strings) or, last, the two flags.
var queryColumns = []struct {
	kind queryColumn
	i    int
}{{qInt, 0}, {qInt, 1}, {qInt, 2}, {qStr, 0}, {qStr, 1}, {qInt, 3}, {qStr, 2}, {qInt, 4}, {qStr, 3}, {qStr, 4}, {qInt, 5}, {qInt, 6}, {qBool, 0}, {qBool, 1}}

type queryColumn uint8

const (
	qInt queryColumn = iota
	qStr
	qBool
)

// write writes the batch's columns into rg and starts a new batch.
func (q *queryBatch) write(rg file.BufferedRowGroupWriter) error {
	ints, strs := q.ints(), q.strings()
	err := encodeColumns(len(queryColumns), &q.values, func(col int, values *[]parquet.ByteArray) error {
		switch c := queryColumns[col]; c.kind {
		case qStr:
			s := strs[c.i]
			*values = byteArrays(*values, s.data, s.ends)
			return writeColumn[*file.ByteArrayColumnChunkWriter](rg, col, *values, s.def)
		case qBool:
			b := [...]*optBool{&q.keyDecoded, &q.valueDecoded}[c.i]
			return writeColumn[*file.BooleanColumnChunkWriter](rg, col, b.vals, b.def)
		}
		c := queryColumns[col]
		return writeColumn[*file.Int64ColumnChunkWriter](rg, col, ints[c.i].vals, ints[c.i].def)
	})
	q.reset()
	return err
}

// poolAllocator is a memory.Allocator that recycles freed buffers by size
// class (powers of two from 4 KiB to 64 MiB; other sizes come from the Go
// heap as memory.GoAllocator does). The Parquet writer allocates and frees
// its page and compression buffers for every page; recycling them keeps the
// export's memory from growing with the row count between garbage
// collections, and spares the page faults of fresh memory, which dominate
// on machines where they are slow. Buffers are 64-byte aligned and zeroed,
// as GoAllocator's are. Safe for concurrent use.
type poolAllocator struct {
	pools [poolClasses]sync.Pool
}

const (
	poolMinShift = 12 // 4 KiB
	poolClasses  = 15 // up to 64 MiB
)

func newPoolAllocator() *poolAllocator { return &poolAllocator{} }

// class returns the size class holding n bytes, or -1 when n is outside the pooled range.
func poolClass(n int) int {
	if n <= 0 || n > 1<<(poolMinShift+poolClasses-1) {
		return -1
	}
	c := bits.Len(uint(n-1)) - poolMinShift
	return max(c, 0)
}

func alignedBytes(n int) []byte {
	buf := make([]byte, n+64)
	shift := 0
	if off := int(uintptr(unsafe.Pointer(unsafe.SliceData(buf))) & 63); off != 0 {
		shift = 64 - off
	}
	return buf[shift : shift+n : shift+n]
}

func (a *poolAllocator) Allocate(size int) []byte {
	c := poolClass(size)
	if c < 0 {
		return alignedBytes(size)
	}
	if p, ok := a.pools[c].Get().(*[]byte); ok {
		b := (*p)[:size]
		clear(b)
		return b
	}
	return alignedBytes(1 << (c + poolMinShift))[:size]
}

func (a *poolAllocator) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		return b[:size]
	}
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

func (a *poolAllocator) Free(b []byte) {
	n := cap(b)
	if c := poolClass(n); c >= 0 && n == 1<<(c+poolMinShift) {
		b = b[:n]
		a.pools[c].Put(&b)
	}
}
