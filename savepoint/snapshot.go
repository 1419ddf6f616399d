package savepoint

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"sort"
	"strconv"
)

// Metadata keys clink writes into a snapshot's schema.
const (
	// MetaFormatVersion is the snapshot format version key; sptool always writes "1".
	MetaFormatVersion = "clink.format_version"
	// MetaStateVersions holds the packed state version map (section 4 of the format).
	MetaStateVersions = "clink.state_versions"
	// MetaProvenance is sptool's own key: the digests of the input and the rules that produced a file.
	MetaProvenance = "sptool.provenance"
)

// Row is one stored entry of a snapshot: the operator id, the full stored key
// (key-group byte, slot, separator and user key for keyed state) and the
// stored value (TTL prefix included). The byte slices may alias the input
// buffers; treat them as read-only.
type Row struct {
	Op    uint64
	Key   []byte
	Value []byte
}

// Compare orders rows canonically: by operator id, then key bytes.
func (r Row) Compare(o Row) int {
	if r.Op != o.Op {
		return cmp.Compare(r.Op, o.Op)
	}
	return bytes.Compare(r.Key, o.Key)
}

// IsOperatorState reports whether restore treats the row as operator state:
// its first key byte is 128 or more (never filtered by key group).
func (r Row) IsOperatorState() bool { return len(r.Key) > 0 && r.Key[0] >= NumKeyGroups }

// MetaEntry is one schema metadata key/value pair.
type MetaEntry struct {
	Key   string
	Value string
}

// Metadata is a schema's key/value metadata in stream order. Duplicate keys
// are kept; lookups return the first occurrence, as clink's FindKey does.
type Metadata []MetaEntry

// Get returns the value of the first entry named key.
func (m Metadata) Get(key string) (string, bool) {
	for _, e := range m {
		if e.Key == key {
			return e.Value, true
		}
	}
	return "", false
}

// With returns a copy of m where the first entry named key has value v (or a
// new entry is appended) and later duplicates of key are removed.
func (m Metadata) With(key, v string) Metadata {
	out := make(Metadata, 0, len(m)+1)
	found := false
	for _, e := range m {
		if e.Key == key {
			if found {
				continue
			}
			found = true
			e.Value = v
		}
		out = append(out, e)
	}
	if !found {
		out = append(out, MetaEntry{key, v})
	}
	return out
}

// Without returns a copy of m with every entry named key removed.
func (m Metadata) Without(key string) Metadata {
	out := make(Metadata, 0, len(m))
	for _, e := range m {
		if e.Key != key {
			out = append(out, e)
		}
	}
	return out
}

// Variant says which stream layout a snapshot file used.
type Variant uint8

const (
	// Canonical is the three-column stream (op_id, key_bytes, value_bytes).
	Canonical Variant = iota
	// Changelog is the four-column changelog stream (row_kind first), replayed on read.
	Changelog
	// Empty is a 0-byte file: empty state, accepted everywhere by clink.
	Empty
)

// RowName names row i of a snapshot in messages: "row 4", or, of a
// changelog (replayed), "replayed row 4": its rows are those its replay
// restores, in canonical order (sptool cat's), not rows stored in the file.
func RowName(replayed bool, i int) string {
	if replayed {
		return "replayed row " + strconv.Itoa(i)
	}
	return "row " + strconv.Itoa(i)
}

// String returns "canonical", "changelog" or "empty".
func (v Variant) String() string {
	switch v {
	case Canonical:
		return "canonical"
	case Changelog:
		return "changelog"
	case Empty:
		return "empty"
	}
	return "unknown"
}

// Snapshot is the decoded content of one snapshot file.
//
// For a canonical stream Rows are the stored rows in stream order (duplicates
// kept, as stored). For a changelog stream Rows are the result of replaying
// the materialisation and the log, in canonical order; opened with
// OpenOptions.Columnar, a large changelog's replayed rows are Batches
// instead, in a temporary file that Savepoint.Close removes.
//
// The Snapshot of a Savepoint opened with OpenOptions.Columnar, its Rows
// and Batches and the rows read from them, must not be used after the
// Savepoint is closed: they may be memory it has unmapped (see Batch).
type Snapshot struct {
	Variant Variant
	// Metadata is the schema metadata of the canonical stream (for a changelog
	// file: of its materialisation, if any).
	Metadata Metadata
	// Versions is the parsed clink.state_versions map (empty when absent).
	Versions VersionMap
	// BatchRows lists the row count of each record batch as stored.
	BatchRows []int
	// Compression names the IPC body compression ("", "lz4", "zstd").
	Compression string
	// Rows are the entries (see the type comment for their order). Nil for a
	// canonical stream opened with OpenOptions.Columnar: see Batches.
	Rows []Row
	// Batches are the record batches of a canonical stream as columns (nil
	// for 0-byte files, and for the changelog variant but one opened with
	// OpenOptions.Columnar whose replayed state is large: then its rows,
	// in canonical order, in a temporary file).
	Batches []Batch
	// Changelog describes the changelog structure when Variant is Changelog.
	Changelog *ChangelogInfo
	// TrailingBytes counts bytes after the end-of-stream marker (clink ignores them).
	TrailingBytes int64
	// Hidden is what those bytes hold of a stream (see HiddenStream).
	Hidden HiddenStream
	// LooseBytes counts the bytes of the stream that no row holds and
	// that are neither its framing, its schema nor zero padding: bytes of
	// a record batch's body outside what its rows use (a validity bitmap,
	// slack past the values or offsets, bytes outside the span a binary
	// column's offsets give, bytes between and after the buffers), a
	// schema message's body, messages' custom_metadata and the schema's
	// fields' custom_metadata (which clink ignores). clink's writer
	// leaves none; a copy of the file carries them. Unknown for compressed
	// record-batch bodies (see Compression).
	LooseBytes int64

	order orderInfo   // see Order
	runs  *PrefixRuns // see Runs
	hits  *KeyHits    // see KeyHits
	// replayed are the temporary files a changelog's state was replayed
	// into (ReadOptions.replayInFile; see replayInFile), Batches the
	// first's batches: the file opened takes them (File.replayed), to
	// close.
	replayed []*Spilled
}

// ChangelogInfo describes a changelog file as stored.
type ChangelogInfo struct {
	// Blobs is the number of blobs (more than one only with CLMB framing).
	Blobs int
	// Handles are the external materialisation handles (row_kind 3), one
	// per materialisation row in blob and row order (clink writes one a
	// blob, in its row 0); "" = none yet, or inline.
	Handles []string
	// InBlob reports, per materialisation row (as Handles), whether the
	// materialisation was stored inline (row_kind 0).
	InBlob []bool
	// inlineEmpty reports, per materialisation row (as InBlob), an inline
	// materialisation with no bytes: nothing materialised yet (format 1.7).
	inlineEmpty []bool
	// places are the materialisation rows' blobs and rows (as InBlob).
	places []matPlace
	// LogRows counts the log entries (row_kind 1, 2 and unknown kinds replayed as puts).
	LogRows int
	// Puts and Erases count the log entries by kind.
	Puts, Erases int
	// OtherKinds counts the log entries of a kind clink does not write
	// (not 0-3), which its restore replays as puts without a check, as
	// sptool does (among Puts); OtherKind is the first such kind.
	OtherKinds int
	OtherKind  uint8
	// erased holds the keys (ChangelogInfo.key form) whose last log entry
	// is an erase: the state the log leaves is that they are absent.
	erased []uint32 // (see noteErased)
	log    *Cursor  // the rows erased indexes (see noteErased)
}

// matPlace is where a changelog's materialisation row lies: its blob
// (0 unless CLMB-framed) and its row in the blob.
type matPlace struct{ blob, row int }

// ErasedByLog reports whether the changelog's log erases (op, key) last,
// so that its replayed state holds no such key by the log's say, not
// because the key never reached this subtask: a copy of it in another
// subtask's file is stale, not lost (format 1.7, 10.1). False for a
// canonical snapshot.
func (s *Snapshot) ErasedByLog(op uint64, key []byte) bool {
	if s == nil || s.Changelog == nil {
		return false
	}
	c := s.Changelog
	k := Row{Op: op, Key: key}
	i := sort.Search(len(c.erased), func(i int) bool { return c.log.Row(int(c.erased[i])).Compare(k) >= 0 })
	return i < len(c.erased) && c.log.Row(int(c.erased[i])).Compare(k) == 0
}

// ErasesByLog reports whether the changelog's log erases some key last
// (see ErasedByLog). False for a canonical snapshot.
func (s *Snapshot) ErasesByLog() bool {
	return s != nil && s.Changelog != nil && len(s.Changelog.erased) > 0
}

// Sorted reports whether rows are in strictly increasing canonical order
// (sorted and free of duplicate (op, key) pairs).
func Sorted(rows []Row) bool {
	for i := 1; i < len(rows); i++ {
		if rows[i-1].Compare(rows[i]) >= 0 {
			return false
		}
	}
	return true
}

// Logical returns the state a restore of these rows would hold: sorted by
// (op, key) with one row per key. Duplicates are resolved as clink's reference
// restore does (section 1.6): for keyed rows the last one in stream order wins;
// for operator-state rows the greater signed int64 wins when both values are
// exactly 8 bytes, else the later one. The input slice is not modified.
func Logical(rows []Row) []Row {
	if Sorted(rows) {
		return rows
	}
	pos := CanonicalPositions(Columns(RowSlice(rows)), nil, nil)
	out := make([]Row, len(pos))
	for i, p := range pos {
		out[i] = rows[p]
	}
	return out
}

// MergeDuplicate resolves two rows with the same (op, key), existing first in
// stream order, as clink's restore does: operator-state rows whose values are
// both 8 bytes keep the greater signed int64 (the existing one on a tie);
// everything else keeps the incoming row.
func MergeDuplicate(existing, incoming Row) Row {
	if IncomingWins(existing, incoming) {
		return incoming
	}
	return existing
}

// IncomingWins reports whether MergeDuplicate keeps incoming.
func IncomingWins(existing, incoming Row) bool {
	if existing.IsOperatorState() && len(existing.Value) == 8 && len(incoming.Value) == 8 {
		a := int64(binary.LittleEndian.Uint64(existing.Value))
		b := int64(binary.LittleEndian.Uint64(incoming.Value))
		return b > a
	}
	return true
}
