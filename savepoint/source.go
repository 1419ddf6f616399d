package savepoint

import "os"

// InputKind says what a PATH given to Open pointed at.
type InputKind uint8

const (
	// InputFile is a single snapshot file.
	InputFile InputKind = iota
	// InputTree is a checkpoint directory holding v<generation>/ and _jobs/.
	InputTree
	// InputGeneration is a v<generation> directory itself.
	InputGeneration
)

// String returns "file", "tree" or "generation".
func (k InputKind) String() string {
	switch k {
	case InputFile:
		return "file"
	case InputTree:
		return "tree"
	case InputGeneration:
		return "generation"
	}
	return "unknown"
}

// Backend names the clink state backend that wrote a tree.
type Backend string

const (
	// BackendFile is clink's file backend: checkpoint-<id>.snap with a .meta sidecar.
	BackendFile Backend = "file"
	// BackendChangelogFile is clink's changelog+file backend: changelog-<id>.snap
	// (no sidecar) and materializations/mat-<id>.bin.
	BackendChangelogFile Backend = "changelog+file"
)

// UnionsOperatorRows reports whether a restore from a tree of backend b
// gives each subtask the operator rows (timer blobs among them) of the
// other subtask directories, its own winning (format 5.3 step 4): every
// backend but changelog+file, which restores a subtask's own rows only
// (format 1.7).
func (b Backend) UnionsOperatorRows() bool { return b != BackendChangelogFile }

// Group is one chain group's block of consecutive global subtask indices.
// Keyed rows are owned within a group: the owner of key group kg is subtask
// First + floor(kg * Count / 128).
type Group struct {
	First int // first global subtask index of the block
	Count int // the group's parallelism
}

// Contains reports whether global subtask index i lies in the group's block.
func (g Group) Contains(i int) bool { return i >= g.First && i < g.First+g.Count }

// Owner returns the global subtask index that owns key group kg in this group.
func (g Group) Owner(kg int) int { return g.First + SubtaskForKeyGroup(kg, g.Count) }

// Range returns the key-group range of global subtask i of this group.
func (g Group) Range(i int) KeyGroupRange { return KeyGroupRangeForSubtask(i-g.First, g.Count) }

// File is one snapshot file of a savepoint, with its integrity verdict and
// decoded content. Its Snapshot must not be used after the Savepoint is
// closed (see Snapshot).
type File struct {
	// Subtask is the global subtask index (-1 for a single-file input).
	Subtask int
	// Path is the payload's path on disk.
	Path string
	// Rel is the payload's path relative to the savepoint root (the base name for a file input).
	Rel string
	// Size is the payload's size in bytes; CRC32C its checksum.
	Size   int64
	CRC32C uint32
	// Compression is the whole-file compression recognised by magic bytes
	// ("", "gzip", "zstd", "lz4", "bzip2", "xz").
	Compression string
	// Sidecar is the parsed .meta sidecar, nil when absent or unparseable.
	Sidecar *Sidecar
	// Verdict is clink's integrity verdict for the payload and its sidecar;
	// VerdictDetail says why when it is not Valid.
	Verdict       Verdict
	VerdictDetail string
	// Materializations lists the materialisation files a changelog+file
	// payload references, relative to the root, and MaterializationInfo
	// their sizes and CRC-32Cs, in the same order: the state of such a
	// tree is in them.
	Materializations    []string
	MaterializationInfo []FileInfo
	// Snapshot is the decoded content; nil when Undecodable is set.
	Snapshot *Snapshot
	// Undecodable says why the payload's bytes do not decode, for a file
	// of a tree opened with OpenOptions.KeepUndecodable (nil otherwise:
	// Open fails on such a file). Its size, checksum and sidecar verdict
	// are recorded; its rows are not. It is also set, with none of those
	// recorded, on a payload path that is no regular file (a directory),
	// and on a missing payload (Missing).
	Undecodable error
	// Missing is set, with Undecodable, on the File of a subtask whose
	// payload of the checkpoint is not in the tree (a subtask directory
	// without it, or a subtask the COMPLETED marker lists that has no
	// directory, or a symbolic link to nothing), for a tree opened with
	// OpenOptions.KeepUndecodable: clink refuses to restore that subtask.
	// Path and Rel name the file clink would open; the sizes, checksums
	// and verdict are zero.
	Missing bool
	// Unlisted is set on the file of a subtask that the checkpoint's only
	// marker does not list, below the highest it lists: read, as a restore
	// at that layout starts the subtask from it, which unions its operator
	// rows into no other subtask's state (those above it are left out:
	// Savepoint.Unlisted). An output that keeps the file's place leaves its
	// subtask out of the marker's list too.
	Unlisted bool
	// missingWhy says how Missing's payload is missing ("subtask
	// directory 2 holds no checkpoint 7").
	missingWhy string

	mapping []byte      // the payload's memory map (OpenOptions.Columnar)
	mapped  *mappedFile // the open file behind mapping
	// plain is the unnamed temporary file a payload compressed as a whole
	// is decompressed into and mapped from (mapping), with Columnar.
	plain *os.File
	stamp fileStamp // the payload's metadata when opened (see CheckUnchanged)
	// matStamps are the materialisation files read for a changelog
	// payload, with their metadata and CRC-32C when read.
	matStamps []matStamp
	// matMaps are the memory maps of the large materialisation files a
	// changelog payload names (Columnar), and replayed the temporary files
	// its state was replayed into (ReadOptions.replayInFile), if any: the
	// state's first.
	matMaps  []*mappedFile
	replayed []*Spilled
	// kgs are the key groups of the rows whose first key byte is below
	// 128, as a bit set, when kgsKnown (see KeyGroupsHeld).
	kgs      [NumKeyGroups / 64]uint64
	kgsKnown bool
	// sidecarUnread: the sidecar was too large to be read, so its verdict
	// is sptool's, and clink's may differ (see unreadableSidecar).
	sidecarUnread bool
}

// KeyGroupsHeld reports whether the payload holds a row whose key's first
// byte is key group kg (a keyed row, or a legacy raw key), as far as the
// open read it: known is false when it did not (the chain groups were
// given rather than inferred from the rows, or the tree has too many files
// for its key groups to be read: see InferGroups), and then held is true.
func (f *File) KeyGroupsHeld(kg int) (held, known bool) {
	if !f.kgsKnown {
		return true, false
	}
	return f.kgs[kg/64]&(1<<(kg%64)) != 0, true
}

// matStamp is a materialisation file as it was read: its real path, its
// metadata and the CRC-32C of its bytes (see CheckUnchanged).
type matStamp struct {
	path  string
	stamp fileStamp
	crc   uint32
}

// ShadowedName is a name in a tree that clink does not open beside the
// one it does: Rel (relative to Root) names the same subtask or checkpoint
// as Read, which is read.
type ShadowedName struct {
	Rel, Read string
	// Checkpoint reports a payload; else Rel is a subtask directory.
	Checkpoint bool
}

// Savepoint is an opened input: one file, or the files of one checkpoint of a tree.
//
// Nothing that reads a Savepoint changes it (Union, UnionSeq, StoredSeq,
// Validate, Summarize; transform.Run, diff.Compare, export.Write): several
// goroutines may read one at once. Close must not run while any of them
// does, and neither the Savepoint nor any row read from it may be used after
// Close: Union, UnionWithStats, Validate, Summarize and the iterations of
// UnionSeq, UnionSeqCopies and StoredSeq then panic with ErrClosed, and the
// functions that return an error return it. The Snapshots of its Files, and their Cursors
// and Batches, are not checked (a check in each row's read would slow it):
// read after Close, they may fault on memory no longer mapped, which ends
// the process, or, under Guard, is ErrClosed.
//
// A nil *Savepoint is no savepoint, nor is a zero Savepoint (one not made
// by Open): its methods, Validate and Summarize panic on a nil one, as Go
// methods do; the functions that return an error (transform.Run,
// diff.Compare, export.Write) return one for either (CheckUsable).
type Savepoint struct {
	// Path is the path as given to Open; Root is the checkpoint directory (the
	// directory holding v<gen>/ and _jobs/), or the file's directory.
	Path string
	Root string
	// dirs are the tree's directories as listed, for checkDirs.
	dirs []dirStamp
	Kind InputKind
	// Backend is the backend layout of a tree; of a file input,
	// BackendChangelogFile when it is named changelog-<id>.snap, else
	// BackendFile.
	Backend Backend
	// Generation and Checkpoint identify the checkpoint read from a tree.
	Generation int
	Checkpoint uint64
	// Job is the job id of the COMPLETED marker, when one was found.
	Job string
	// Completed is the checkpoint's COMPLETED marker, nil when absent;
	// CompletedRel its path relative to Root.
	Completed    *Completed
	CompletedRel string
	// OtherCompleted are the paths, relative to Root, of the checkpoint's
	// other COMPLETED markers (of other jobs). clink applies a marker's
	// subtasks= line only when exactly one marker exists: with several it
	// unions operator rows from every subtask directory.
	OtherCompleted []string
	// NewerCompleted are the paths, relative to Root, of the COMPLETED
	// markers of this generation for checkpoints newer than the one read
	// whose files the generation does not hold: a restore of the job's
	// latest completed checkpoint would look for them.
	NewerCompleted []string
	// OlderGenerationCompleted are the paths, relative to Root, of the
	// COMPLETED markers of the job's newest completed checkpoint when they
	// name a generation older than the one read and the generation read
	// holds none of its files: clink restores from the highest generation
	// only, so a restore of that checkpoint from this directory finds no
	// state.
	OlderGenerationCompleted []string
	// UnreadMarkers name the COMPLETED markers of other checkpoints than the
	// one read that do not parse, each with why ("_jobs/7/COMPLETED-3:
	// ..."): a restore of the checkpoint read does not look at them (format
	// 5.3), so they are left unread.
	UnreadMarkers []string
	// IgnoredMarkers name the COMPLETED markers that do not parse or
	// cannot be read and that could choose or describe the checkpoint
	// read, each with why: read as if they were not there
	// (OpenOptions.TolerateBadMarkers).
	IgnoredMarkers []string
	// Files are the snapshot files, sorted by subtask index.
	Files []*File
	// Groups are the chain groups of a tree, in subtask order (given by the
	// caller or inferred from which operators hold keyed rows).
	Groups []Group
	// GroupsInferred reports that Groups were inferred rather than given.
	GroupsInferred bool
	// GroupConflicts are, when Groups were given, the operators whose keyed
	// rows the files of more than one of them hold, in operator order: an
	// operator runs in one chain group, so the rows contradict the groups
	// given (or the tree holds state no restore reads).
	GroupConflicts []GroupConflict
	// Notes are observations made while opening (older checkpoints ignored,
	// files of other checkpoints present, ...).
	Notes []string
	// Unlisted are the files of the checkpoint in subtask directories its
	// only marker does not list, above the highest it lists: left out
	// (relative to Root).
	Unlisted []string
	// Shadowed are the subtask directories and payloads named with
	// leading zeros beside the name clink opens (01 beside 1,
	// checkpoint-017.snap beside checkpoint-17.snap): left out, as clink
	// leaves them; each says what it is and what is read instead.
	Shadowed []ShadowedName
	// bareSubtasks are the subtasks below the highest the marker lists
	// whose directories, which it does not list, hold no file of the
	// checkpoint: left out, as missing as one with no directory.
	bareSubtasks []int
	// newestNote says why the checkpoint read was chosen as the newest
	// present (OpenOptions.NewestPresent), "" otherwise.
	newestNote string
	// closed is set by Close.
	closed bool
}

// ChangelogTree reports whether sp is a tree of clink's changelog+file
// backend. Its payloads carry no sidecar to verify (that backend writes
// none), and an apply writes each of them again (their materialisation
// handles point into the output). A single file named changelog-<id>.snap
// has that Backend but is not such a tree: its sidecar, if any, is
// verified, and it is copied when no rule changes it.
func (sp *Savepoint) ChangelogTree() bool {
	return sp.Kind != InputFile && sp.Backend == BackendChangelogFile
}
