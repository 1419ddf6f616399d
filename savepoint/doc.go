// Package savepoint reads and writes the state snapshots of the clink stream
// engine: single snapshot files (the canonical three-column Arrow IPC stream
// and the changelog variant) and whole checkpoint trees
// (v<generation>/<subtask>/checkpoint-<id>.snap with CRC-32C sidecars and
// COMPLETED markers).
//
// Everything about the bytes follows clink's own reader: the format-version
// gate, the exact schema check (names, order, types, nullability), the key
// layout and FNV-1a key groups, the version-map packing, the sidecar CRC and
// the restore rules that decide which copy of a row is authoritative.
//
// The reader accepts every form clink writes in practice (0..N record batches,
// LZ4/ZSTD bodies, 0-byte files, changelog blobs with CLMB framing and
// external materialisation handles, whole-file gzip/zstd/lz4/bzip2/xz
// compression). The writer emits one canonical form: the exact schema, the
// metadata keys in clink's order followed by any unknown keys of the input,
// rows sorted by (op, key bytes), one record batch unless a column would pass
// the 2 GiB binary limit, published atomically (temporary name, fsync,
// rename, directory fsync), payload before sidecar.
//
// A savepoint opened with OpenOptions.Columnar keeps its uncompressed
// payloads memory-mapped, and its rows are read from the map. If another
// process cuts a payload short meanwhile, reading it faults: run code that
// reads the rows under Guard, which turns the fault into an
// ErrInputChanged error naming the file and the byte (the sptool commands,
// transform.Run and export.WriteFile do), or the fault ends the process. A
// page the system could not read (a disk or file system that failed)
// faults too: Guard reports ErrInputUnreadable then.
//
// A payload whose bytes clink's reader does not take (malformed, cut
// short, a format version this build does not know) fails with an error
// of ErrBadFormat (errors.Is), a failure to read it with the system's
// error (an *fs.PathError) or one of the two above, and a payload that
// fails its integrity check with a *VerdictError.
//
// Messages (errors, warnings and validation findings, here and in the
// packages built on this one) are written for the people who run sptool:
// where an option would change the outcome they name it as sptool's flag
// (--checkpoint, --groups, --temp-dir, --per-file), which sets the option
// field of the same name (OpenOptions.Checkpoint, OpenOptions.Groups, the
// TempDir and PerFile fields of transform's and export's options). The two
// refusals a program meets most, an output that exists
// (*OutputExistsError) and a payload refused for its integrity verdict
// (*VerdictError), name no flag: they carry a Hint for the caller to set.
package savepoint
