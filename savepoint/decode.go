package savepoint

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// ReadOptions control how a snapshot is decoded.
type ReadOptions struct {
	// Resolve returns the bytes of an external materialisation handle
	// (changelog row_kind 3). Nil means handles cannot be resolved, which is
	// an error when a file holds a non-empty handle.
	Resolve func(handle string) ([]byte, error)
	// Columnar leaves Snapshot.Rows nil for canonical streams: rows are read
	// through Snapshot.Batches, which alias the input (no per-row memory).
	Columnar bool

	// readMapped, when set, reads bytes of the input (a memory map) with
	// pread: validation reads every offset through it rather than the map
	// (see mappedFile).
	readMapped func(dst, src []byte) error
	// deferOffsets, with readMapped, leaves the walk over the binary
	// offsets to the caller (verifyMapped, or validateOffsetsOf).
	deferOffsets bool
	// probe is OpenOptions.Probe.
	probe *ProbeSlot
	// tempDir is OpenOptions.TempDir.
	tempDir string
	// budget is the file's bound on what its compressed record batches
	// declare uncompressed, shared by every stream it holds (nil: one of
	// the decoded data's size).
	budget *inflateBudget
	// tree, for a file of a tree, is the tree's bound (see treeInflate).
	tree *treeInflate
	// ctx is OpenContext's (nil: never done).
	ctx context.Context
	// keepUndecodable is OpenOptions.KeepUndecodable, for a tree's files.
	keepUndecodable bool
	// keepOnly, when set, narrows keepUndecodable to the errors it
	// accepts (a single file's: see OpenOptions.KeepUndecodableFile).
	keepOnly func(err error) bool
	// identify, when set, names the file an external materialisation
	// handle resolves to: handles of one file, however spelled, are read
	// once (nil: each distinct handle is its own file).
	identify func(handle string) string
	// skipped, when set, is called with each external handle not read
	// because its file is restored at a later row.
	skipped func(handle string)
	// replayInFile replays a large changelog through temporary files in
	// tempDir (see replayInFile): set where the snapshot's owner closes
	// them (Savepoint.Close).
	replayInFile bool
	// release, when set, drops the pages of the file's memory maps (its
	// own, its materialisations') from the resident set.
	release func()
}

// clmbMagic starts a multi-blob changelog frame (section 1.7).
var clmbMagic = []byte("CLMB")

// Changelog row kinds (section 1.7): the row_kind of a ChangelogEntry.
const (
	// RowKindMaterialised is a materialisation stored inline: the value is
	// a canonical stream.
	RowKindMaterialised = 0
	// RowKindPut is a log entry that puts its row.
	RowKindPut = 1
	// RowKindErase is a log entry that erases its key.
	RowKindErase = 2
	// RowKindHandle is a materialisation stored apart: the value is the
	// handle (a path) of its file.
	RowKindHandle = 3

	rowKindMaterialised = RowKindMaterialised
	rowKindPut          = RowKindPut
	rowKindErase        = RowKindErase
	rowKindHandle       = RowKindHandle
)

// DecodeSnapshot decodes one snapshot held in data (already decompressed if
// the file was compressed as a whole): a 0-byte input is empty state; a
// CLMB-framed or four-column stream is the changelog variant, replayed; a
// three-column stream is canonical. Errors name the byte offset or row.
func DecodeSnapshot(data []byte, opts ReadOptions) (*Snapshot, error) {
	if len(data) == 0 {
		return &Snapshot{Variant: Empty}, nil
	}
	if opts.budget == nil {
		opts.budget = &inflateBudget{size: len(data)}
	}
	if bytes.HasPrefix(data, clmbMagic) {
		blobs, err := splitCLMB(data)
		if err != nil {
			return nil, err
		}
		return replayChangelog(blobs, opts)
	}
	// Decoding reads each batch's message header and the first and last
	// offsets of its binary columns through the map (arrow-go's array
	// constructors and Validate), a few bytes each; but each fault maps
	// the page cache's whole folio around the byte, up to a megabyte, so
	// that a file of 16 batches (as clink's sharded backend writes) held
	// 80 MB of them by the end of decoding, and one of 78,125 batches of
	// 128 rows nearly all its pages. A map (data, when readMapped reads
	// it) is released every decodeReleaseBytes of batches decoded.
	var release func(n int64)
	if opts.readMapped != nil {
		rel := newMapRelease(decodeReleaseBytes)
		release = func(n int64) { rel.add(data, n) }
	}
	rs, err := readStreamReleasing(data, opts.budget, release, true)
	if err != nil {
		return nil, err
	}
	fs := rs.schema.Fields()
	if len(fs) == 4 && fs[0].Name == "row_kind" {
		return replayChangelog([][]byte{data}, opts)
	}
	return canonicalFromStream(rs, opts.Columnar, opts.readMapped, opts.deferOffsets, release)
}

// decodeReleaseBytes is how many bytes of a mapped stream's batches are
// decoded between two releases of its pages.
const decodeReleaseBytes = 8 << 20

// canonicalFromStream makes the snapshot of a canonical stream's batches;
// release, when not nil, is told the bytes of each batch validated (it
// releases the pages of the map they were read from).
func canonicalFromStream(rs *rawStream, columnar bool, readMapped func(dst, src []byte) error, deferOffsets bool, release func(n int64)) (*Snapshot, error) {
	if err := checkFields(rs.schema, canonicalFields); err != nil {
		return nil, fmt.Errorf("%w; expected %s", err, CanonicalSchemaString)
	}
	s := &Snapshot{Variant: Canonical, Metadata: rs.meta, Compression: rs.compression, TrailingBytes: rs.trailing, Hidden: rs.hidden, LooseBytes: rs.loose}
	if v, ok := rs.meta.Get(MetaStateVersions); ok {
		vm, err := ParseVersionMap(v)
		if err != nil {
			return nil, fmt.Errorf("schema metadata %s: %w", MetaStateVersions, err)
		}
		s.Versions = vm
	}
	total := 0
	for _, rec := range rs.batches {
		total += int(rec.NumRows())
	}
	s.Batches = make([]Batch, 0, len(rs.batches))
	for bi, rec := range rs.batches {
		if err := validateBatch(rec, readMapped, deferOffsets && readMapped != nil); err != nil {
			return nil, fmt.Errorf("record batch %d: %w", bi, err)
		}
		b, err := batchOf(rec, 0)
		if err != nil {
			return nil, fmt.Errorf("record batch %d: %w", bi, err)
		}
		s.Batches = append(s.Batches, b)
		s.BatchRows = append(s.BatchRows, int(rec.NumRows()))
		if release != nil {
			release(int64(8*len(b.Ops) + 4*len(b.KeyOffs) + len(b.Keys) + 4*len(b.ValOffs) + len(b.Vals)))
		}
	}
	if !columnar {
		s.Rows = make([]Row, 0, total)
		for bi := range s.Batches {
			b := &s.Batches[bi]
			for i := 0; i < b.Len(); i++ {
				s.Rows = append(s.Rows, b.Row(i))
			}
		}
	}
	return s, nil
}

// splitCLMB unpacks the multi-blob framing: "CLMB" | u32 count | {u32 len | blob}*.
func splitCLMB(data []byte) ([][]byte, error) {
	if len(data) < 8 {
		return nil, &offsetError{4, "truncated CLMB frame: no blob count"}
	}
	n := binary.LittleEndian.Uint32(data[4:])
	off := int64(8)
	if uint64(n) > uint64(len(data))/4 {
		return nil, &offsetError{4, fmt.Sprintf("CLMB frame declares %d blobs, more than the file can hold", n)}
	}
	blobs := make([][]byte, 0, n)
	for i := uint32(0); i < n; i++ {
		if off+4 > int64(len(data)) {
			return nil, &offsetError{off, fmt.Sprintf("truncated CLMB frame: blob %d length missing", i)}
		}
		l := int64(binary.LittleEndian.Uint32(data[off:]))
		off += 4
		if off+l > int64(len(data)) {
			return nil, &offsetError{off, fmt.Sprintf("truncated CLMB frame: blob %d needs %d bytes, %d left", i, l, int64(len(data))-off)}
		}
		blobs = append(blobs, data[off:off+l:off+l])
		off += l
	}
	if off != int64(len(data)) {
		return nil, &offsetError{off, fmt.Sprintf("%d bytes after the last CLMB blob", int64(len(data))-off)}
	}
	return blobs, nil
}

// replayChangelog decodes the changelog blobs of one file (one, or several
// in a CLMB frame) as clink's ChangelogStateBackend::restore reads them:
// each blob must hold a materialisation row (row_kind 0 or 3, anywhere in
// it); the materialisations of all blobs are combined with the restore's
// duplicate rules, then every log row is replayed in order (an erase
// removes its key, any other kind puts its row).
//
// An external handle named by several materialisation rows is read and
// restored once, at its last row: the duplicate rules (the later copy, or
// the greater 8-byte operator value, over a run of such values) give what
// restoring it at every row gives, and a payload of 2,000 rows naming one
// 4 MiB materialisation took 4.4 s to open, reading and decoding it 2,000
// times. The metadata is still that of the first materialisation that
// has any.
func replayChangelog(blobs [][]byte, opts ReadOptions) (*Snapshot, error) {
	s := &Snapshot{Variant: Changelog, Changelog: &ChangelogInfo{Blobs: len(blobs)}}
	var logs changelogLog
	type matRow struct {
		kind  uint8
		value []byte
		where string // the blob, when there are several
		blob  int
		row   int // in the blob
	}
	var mats []matRow
	for bi, blob := range blobs {
		where := ""
		if len(blobs) > 1 {
			where = fmt.Sprintf("CLMB blob %d: ", bi)
		}
		rs, err := readStream(blob, opts.budget)
		if err != nil {
			return nil, fmt.Errorf("%schangelog stream: %w", where, err)
		}
		if err := checkFields(rs.schema, changelogFields); err != nil {
			return nil, fmt.Errorf("%schangelog %w", where, err)
		}
		if rs.compression != "" {
			s.Compression = rs.compression
		}
		total := 0 // (the kinds grown once, not by doubling)
		for _, rec := range rs.batches {
			total += int(rec.NumRows())
		}
		logs.kinds = slices.Grow(logs.kinds, total)
		matSeen, row := false, 0
		for ri, rec := range rs.batches {
			if err := validateBatch(rec, nil, false); err != nil {
				return nil, fmt.Errorf("%srecord batch %d: %w", where, ri, err)
			}
			s.BatchRows = append(s.BatchRows, int(rec.NumRows()))
			b, err := batchOf(rec, 1)
			if err != nil {
				return nil, fmt.Errorf("%srecord batch %d: %w", where, ri, err)
			}
			b.file = mappedFileOf(blob) // (read again by the replay: see Batch.changed)
			logs.batches = append(logs.batches, b)
			kinds := rec.Column(0).(*array.Uint8).Values()
			logs.kinds = append(logs.kinds, kinds...)
			for i, kind := range kinds {
				if !isLogKind(kind) {
					// Wherever it lies (clink's writer puts it in row 0),
					// and however many there are: clink's restore takes
					// each.
					matSeen = true
					mats = append(mats, matRow{kind, b.Row(i).Value, where, bi, row + i})
				}
			}
			row += len(kinds)
		}
		if !matSeen {
			return nil, fmt.Errorf("%schangelog snapshot is malformed: no materialisation row (row_kind 0 or 3)", where)
		}
	}
	// The materialisations of every blob, restored as they came.
	// A file named by several handle rows (the same handle, or handles
	// spelled differently that resolve to it) is restored at its last:
	// restoring it before too would change nothing but the time taken,
	// which a small changelog repeating one handle could make hours.
	ids := map[string]string{} // handle -> the file it names
	id := func(h string) string {
		if opts.identify == nil {
			return h
		}
		v, ok := ids[h]
		if !ok {
			v = opts.identify(h)
			ids[h] = v
		}
		return v
	}
	last := map[string]int{} // an external handle's file's last row in mats
	for j, m := range mats {
		if m.kind == rowKindHandle && len(m.value) > 0 {
			last[id(string(m.value))] = j
		}
	}
	var metaSet bool
	var restored []*Cursor      // the materialisations restored, in turn
	noMeta := map[string]bool{} // files read whose materialisation has no metadata
	for j, m := range mats {
		var h string // an external handle (not an inline materialisation's bytes, which may be GBs)
		if m.kind == rowKindHandle {
			h = string(m.value)
		}
		again := m.kind == rowKindHandle && len(m.value) > 0 && last[id(h)] != j
		s.Changelog.places = append(s.Changelog.places, matPlace{m.blob, m.row}) // (noted below, in either way)
		if again && (metaSet || noMeta[id(h)]) {
			s.Changelog.note(m.kind, h) // restored at its last row
			if opts.skipped != nil {
				opts.skipped(h)
			}
			continue
		}
		mat, err := materialisation(m.kind, m.value, opts, s.Changelog)
		if err != nil {
			return nil, fmt.Errorf("%srow %d: %w", m.where, m.row, err)
		}
		if mat == nil {
			continue
		}
		if !metaSet && len(mat.Metadata) > 0 {
			s.Metadata, s.Versions, metaSet = mat.Metadata, mat.Versions, true
		}
		if again {
			noMeta[id(h)] = len(mat.Metadata) == 0
			continue
		}
		restored = append(restored, mat.NewCursor())
	}
	logs.rows = (&Snapshot{Batches: logs.batches}).NewCursor()
	for i, kind := range logs.kinds {
		if !logs.isLog(i) {
			continue
		}
		s.Changelog.LogRows++
		switch kind {
		case rowKindErase:
			s.Changelog.Erases++
		case rowKindPut:
		default:
			if s.Changelog.OtherKinds++; s.Changelog.OtherKinds == 1 {
				s.Changelog.OtherKind = kind
			}
		}
	}
	s.Changelog.Puts = s.Changelog.LogRows - s.Changelog.Erases // (any other kind replays as a put)
	if rows := newMatSource(restored).Len() + logs.rows.Len(); opts.replayInFile && rows >= replayFileRows {
		sp, err := replayInFile(restored, &logs, s.Changelog, opts)
		var tfe *TempFileError
		switch {
		case err == nil:
			s.Batches, s.replayed = sp[0].snap.Batches, sp
			if len(s.Batches) == 0 {
				s.Batches = nil
				s.Rows = []Row{}
			}
			return s, nil
		case !errors.As(err, &tfe) || rows >= InPlaceRows:
			return nil, err
		}
		// No room for the files: replayed in memory, as a smaller one is.
		s.Changelog.erased = s.Changelog.erased[:0]
	}
	s.Rows = replay(restored, &logs, s.Changelog)
	return s, nil
}

// changelogLog is the rows of a changelog's blobs, in order, read where
// they lie, and their row_kinds: its log rows (isLog) and its
// materialisation rows, which the replay passes over.
type changelogLog struct {
	kinds   []uint8
	batches []Batch // the blobs' record batches: operator, key and value columns
	rows    *Cursor // over batches
}

// isLog reports whether row i is a log row (row_kind 1, 2, or any other
// kind but a materialisation's 0 and 3, replayed as a put).
func (l *changelogLog) isLog(i int) bool { return isLogKind(l.kinds[i]) }

// replay returns the state that restoring the materialisations mats in
// turn, then replaying the log, leaves, as clink's restore leaves it, in
// canonical order, and notes in info the keys whose last log row erases
// them. The rows of the materialisations and the log are taken as one
// sequence, mats first, and sorted stably by (op, key); each key's rows
// are then resolved in that order: the materialisations' by the
// restore's duplicate rules (MergeDuplicate), then the log's, each put
// (row_kind 1, or any kind but an erase, as clink replays them) replacing
// the row and each erase removing it. Beside the rows it keeps (56 bytes
// a key restored), it takes 4 bytes a row replayed and the sort's scratch
// while it runs, and no map of the keys (which, for 5M keys, takes three
// times as much memory, and four times as long).
func replay(mats []*Cursor, logs *changelogLog, info *ChangelogInfo) []Row {
	info.log = logs.rows
	src := newMatSource(mats)
	logStart := src.Len() // the first row of the log
	n := logStart + logs.rows.Len()
	row := func(i int) Row {
		if i < logStart {
			return src.Row(i)
		}
		return logs.rows.Row(i - logStart)
	}
	order := SortOrder(n, func(i int) (uint64, []byte) {
		if i < logStart {
			return src.Op(i), src.Key(i)
		}
		return logs.rows.Op(i - logStart), logs.rows.Key(i - logStart)
	})
	out := make([]Row, 0, n) // room for every row: a slice this large grown by appending is copied over and over
	for lo := 0; lo < len(order); {
		first := row(int(order[lo]))
		var cur Row
		held, erased := false, -1 // erased: the log row of the key's last entry, when an erase
		hi := lo
		for ; hi < len(order); hi++ {
			i, r := int(order[hi]), first
			if hi > lo {
				if r = row(i); r.Op != first.Op || !bytes.Equal(r.Key, first.Key) {
					break
				}
			}
			switch {
			case i < logStart && held:
				cur = MergeDuplicate(cur, r)
			case i < logStart:
				cur, held = r, true
			case !logs.isLog(i - logStart):
				// a materialisation row, restored above
			case logs.kinds[i-logStart] == rowKindErase:
				held, erased = false, i-logStart
			default:
				cur, held, erased = r, true, -1
			}
		}
		if held {
			out = append(out, cur)
		}
		if erased >= 0 {
			info.noteErased(erased)
		}
		lo = hi
	}
	if cap(out) > 2*len(out) {
		// Keys written many times over: the snapshot keeps its rows for
		// its life, in at most twice their room. Not at less: a copy of
		// this slice of pointers costs fresh pages and the collector's
		// barriers (2 s for the 2.3M rows of a changelog of 2.5M, a
		// quarter of its 500,000 log rows erases).
		out = slices.Clone(out)
	}
	return out
}

// setFile gives the batches of a materialisation decoded from data the
// mapped file data lies in, if any: the replay reads their offsets again,
// and offsets found out of bounds then report the file rewritten while
// read (Batch.changed), not a crash.
func (s *Snapshot) setFile(data []byte) {
	if m := mappedFileOf(data); m != nil {
		for i := range s.Batches {
			s.Batches[i].file = m
		}
	}
}

// note records a materialisation row of kind (row_kind 0 or 3) and value.
func (c *ChangelogInfo) note(kind uint8, value string) {
	inBlob := kind == rowKindMaterialised
	c.InBlob = append(c.InBlob, inBlob)
	c.inlineEmpty = append(c.inlineEmpty, false)
	if inBlob {
		value = ""
	}
	c.Handles = append(c.Handles, value)
}

// errUnresolved is wrapped by the error of a materialisation handle read
// where there is nothing to resolve it with.
var errUnresolved = errors.New("no tree to resolve it in")

// materialisation decodes a changelog's materialisation row (row_kind 0
// or 3).
func materialisation(kind uint8, value []byte, opts ReadOptions, info *ChangelogInfo) (*Snapshot, error) {
	switch kind {
	case rowKindMaterialised:
		info.note(kind, "")
		if len(value) == 0 {
			info.inlineEmpty[len(info.inlineEmpty)-1] = true
			return nil, nil
		}
		rs, err := readStream(value, opts.budget)
		if err != nil {
			return nil, fmt.Errorf("inline materialisation: %w", err)
		}
		// Columnar: the replay reads its rows where they lie.
		mat, err := canonicalFromStream(rs, true, nil, false, nil)
		if err != nil {
			return nil, fmt.Errorf("inline materialisation: %w", err)
		}
		mat.setFile(value)
		return mat, nil
	case rowKindHandle:
		handle := string(value)
		info.note(kind, handle)
		if handle == "" {
			return nil, nil
		}
		if opts.Resolve == nil {
			return nil, fmt.Errorf("external materialisation handle %q cannot be resolved here: %w", handle, errUnresolved)
		}
		data, err := opts.Resolve(handle)
		if err != nil {
			return nil, fmt.Errorf("materialisation handle %q: %w", handle, err)
		}
		if c := DetectCompression(data); c != CompressNone {
			return nil, fmt.Errorf("materialisation %q is %s-compressed as a whole: clink reads a materialisation as a bare Arrow IPC stream (its record batches may be compressed, not the file), and refuses it", handle, c)
		}
		mat, err := DecodeSnapshot(data, ReadOptions{Columnar: true})
		if errors.Is(err, errUnresolved) {
			// A stream of handle rows: the handle names a changelog.
			return nil, fmt.Errorf("materialisation %q is itself a changelog stream (of materialisation handles), not the state a handle names", handle)
		}
		if err != nil {
			return nil, fmt.Errorf("materialisation %q: %w", handle, err)
		}
		if mat.Variant == Changelog {
			return nil, fmt.Errorf("materialisation %q is itself a changelog stream", handle)
		}
		mat.setFile(data)
		return mat, nil
	}
	return nil, fmt.Errorf("row_kind %d is no materialisation, expected 0 (inline) or 3 (external handle)", kind)
}
