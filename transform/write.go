package transform

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
)

// provenance is the value of the sptool.provenance metadata key of a
// rewritten file: which tool, rules and input produced it, and the rule
// files (their digests) that produced the input, if sptool wrote it. It
// holds no clock reading, so the same input and rules give the same bytes.
func provenance(tool string, set *rules.Set, f *newFile) string {
	s := fmt.Sprintf("tool=%s;rules_sha256=%s", tool, set.Digest)
	if earlier := inputDigests(f.md); len(earlier) > 0 {
		s += ";earlier_rules_sha256=" + strings.Join(earlier, ",")
	}
	s += ";input=" + filepath.ToSlash(f.from)
	if f.inputCRC != 0 || f.copyOf != nil {
		s += fmt.Sprintf(";input_crc32c=%d", f.inputCRC)
	}
	return s
}

// maxEarlierDigests is how many rule files' digests a provenance remembers
// of the runs before the one that wrote it.
const maxEarlierDigests = 8

// inputDigests returns the digests of the rule files that produced a file
// of metadata md, by its sptool.provenance: the last run's first, then
// those it remembered, each once, at most maxEarlierDigests. A rescale
// between two runs of a rule file carries them on, so that the second run
// still knows its input was the first's output (reappliedWarnings).
func inputDigests(md savepoint.Metadata) []string {
	last, earlier := provenanceDigests(md)
	var out []string
	for _, d := range append([]string{last}, earlier...) {
		if isDigest(d) && !slices.Contains(out, d) && len(out) < maxEarlierDigests {
			out = append(out, d)
		}
	}
	return out
}

// provenanceDigests returns the rules_sha256 of a file's sptool.provenance
// and its earlier_rules_sha256, or "" and nil.
func provenanceDigests(md savepoint.Metadata) (last string, earlier []string) {
	v, ok := md.Get(savepoint.MetaProvenance)
	if !ok {
		return "", nil
	}
	field := func(name string) string {
		_, after, ok := strings.Cut(v, ";"+name+"=")
		if !ok {
			return ""
		}
		f, _, _ := strings.Cut(after, ";")
		return f
	}
	if e := field("earlier_rules_sha256"); e != "" {
		earlier = strings.Split(e, ",")
	}
	return field("rules_sha256"), earlier
}

// isDigest reports whether d is a SHA-256 in lowercase hex, as a rule
// file's digest is: what a provenance read from a file passes on.
func isDigest(d string) bool {
	if len(d) != 64 {
		return false
	}
	for _, c := range d {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// outCompression is the whole-file compression of an output whose input
// file was compressed with in.
func outCompression(in string, opts Options) string {
	if opts.Decompress {
		return savepoint.CompressNone
	}
	return in
}

// outputCheckpoint returns the checkpoint id of a tree's output: the
// input's, unless Options give another.
func outputCheckpoint(sp *savepoint.Savepoint, opts Options) uint64 {
	if opts.Checkpoint > 0 || opts.CheckpointSet {
		return opts.Checkpoint
	}
	return sp.Checkpoint
}

// write publishes the output files; a tree's carries receipts, the 2PC
// commit receipts Run placed (receiptFates), at their paths.
func write(ctx context.Context, sp *savepoint.Savepoint, set *rules.Set, files []*newFile, rep *Report, opts Options, receipts map[string][]byte) (err error) {
	tool := opts.Tool
	if tool == "" {
		tool = "sptool"
	}
	meta := func(f *newFile) savepoint.Metadata {
		md := savepoint.CanonicalMetadata(f.md, f.versions)
		return md.With(savepoint.MetaProvenance, provenance(tool, set, f))
	}
	out := &Output{Path: opts.Out}
	digest := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	// A run cancelled while a file is written stops writing it.
	stop := func() bool { return ctx.Err() != nil }
	if sp.Kind == savepoint.InputFile {
		f, nf := sp.Files[0], files[0]
		made, err := savepoint.MakeDirs(filepath.Dir(opts.Out))
		if err != nil {
			return fmt.Errorf("create output directory: %w", err)
		}
		// The input's checkpoint id: its sidecar's, else its name's.
		ckpt, _ := checkpointOf(f.Rel)
		if f.Sidecar != nil {
			ckpt = f.Sidecar.CheckpointID
		}
		// The run must not have been interrupted, nor the input changed
		// while it was read: checked before anything is put in place.
		beforePublish := func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := sp.CheckUnchanged(); err != nil {
				return err
			}
			return callBeforePublish(opts)
		}
		var pub *savepoint.PublishedError
		if nf.copyOf != nil {
			if err := savepoint.CopySnapshotFile(f.Path, opts.Out, savepoint.FileInfo{Size: f.Size, CRC32C: f.CRC32C}, savepoint.SidecarFor(ckpt, savepoint.FileInfo{Size: f.Size, CRC32C: f.CRC32C}), savepoint.PublishOptions{Before: beforePublish, NoReplace: !opts.Force}); err != nil && !errors.As(err, &pub) {
				made.Remove() // nothing was published: the directories made for it go
				return err
			}
			out.Files, out.Bytes = 1, addFileDigest(digest, savepoint.FileInfo{Size: f.Size, CRC32C: f.CRC32C}, nil)
		} else {
			info, err := savepoint.WriteSnapshotFrom(opts.Out, meta(nf), nf.rows, savepoint.SnapshotOptions{Compression: outCompression(f.Compression, opts), Sidecar: true, CheckpointID: ckpt, Progress: (&writeProgress{sp: sp, progress: opts.Progress}).file(), Jobs: opts.Jobs, Stop: stop, BeforePublish: beforePublish, NoReplace: !opts.Force})
			if err != nil && !errors.As(err, &pub) {
				made.Remove()
				return err
			}
			out.Files, out.Bytes = 1, addFileDigest(digest, info, nil)
		}
		rep.Files[0].Output = filepath.Base(opts.Out)
		out.Digest = "crc32c:" + strconv.FormatUint(uint64(digest.Sum32()), 10)
		rep.Output = out
		return published(rep, pub)
	}

	gen, ckpt := sp.Generation, outputCheckpoint(sp, opts)
	if opts.Generation > 0 {
		gen = opts.Generation
	}
	var markerExtra []savepoint.MetaEntry
	if sp.Completed != nil {
		markerExtra = sp.Completed.Extra
	}
	// Files kept in their place whose subtasks the input's marker did not
	// list stay out of the output's list, so that a restore unions their
	// operator rows as it would the input's; the marker lists every new
	// subtask of a rescaled group.
	var unlisted []int
	for _, nf := range files {
		if nf.unlisted {
			unlisted = append(unlisted, nf.subtask)
		}
	}
	tw, err := savepoint.CreateTree(opts.Out, savepoint.TreeOptions{
		Generation: gen, Checkpoint: ckpt, Backend: sp.Backend,
		StateBase: opts.StateBase, Force: opts.Force, MarkerExtra: markerExtra,
		Unlisted: unlisted, BeforePublish: func() error { return callBeforePublish(opts) },
	})
	if err != nil {
		return err
	}
	defer func() {
		// A tree not published is removed; one that cannot be is named.
		if left := tw.Abort(); left != nil && err != nil {
			err = &savepoint.LeftError{Err: err, Left: left}
		}
	}()
	prog := &writeProgress{sp: sp, progress: opts.Progress}
	written := writeFiles(ctx, files, opts.Jobs, func(nf *newFile, jobs int) (savepoint.FileInfo, error) {
		if nf.copyOf != nil && sp.Backend == savepoint.BackendFile {
			if err := tw.CopySubtask(nf.subtask, nf.copyOf, sp.Root); err != nil {
				return savepoint.FileInfo{}, err
			}
			prog.file()(nf.copyOf.Size)
			return savepoint.FileInfo{Size: nf.copyOf.Size, CRC32C: nf.copyOf.CRC32C}, nil
		}
		return tw.WriteSubtaskWith(nf.subtask, meta(nf), nf.rows, savepoint.SnapshotOptions{Compression: outCompression(nf.compression, opts), Progress: prog.file(), Jobs: jobs, Stop: stop})
	})
	if err := firstError(written); err != nil {
		return err
	}
	outRel := map[*savepoint.File]string{}
	for i, nf := range files {
		out.Bytes += addFileDigest(digest, written[i].info, tw.MaterializationInfo(nf.subtask))
		out.Files++
		// A file made of one input file (a copy, a rewrite, a file of a
		// group a rescale kept or moved), not of a rescaled group's.
		for _, f := range sp.Files {
			if nf.from == f.Rel {
				outRel[f] = filepath.Join("v"+strconv.Itoa(gen), strconv.Itoa(nf.subtask), tw.PayloadName())
			}
		}
	}
	for i, f := range sp.Files {
		rep.Files[i].Output = outRel[f]
	}
	job := sp.Job
	extra, err := controlFiles(sp)
	if err != nil {
		return err
	}
	// (Run placed them once, and put the warnings on those left in the
	// report.)
	for rel, b := range receipts {
		extra[rel] = b
	}
	if ckpt != sp.Checkpoint {
		// CONFIRMED-<id> belongs to the input's checkpoint id; rename it
		// along, and its body's checkpoint= line with it.
		for rel, b := range extra {
			delete(extra, rel)
			extra[filepath.Join(filepath.Dir(rel), "CONFIRMED-"+strconv.FormatUint(ckpt, 10))] = retargetConfirmed(b, ckpt)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := sp.CheckUnchanged(); err != nil {
		return err
	}
	var pub *savepoint.PublishedError
	if err := tw.Commit(job, extra); err != nil && !errors.As(err, &pub) {
		return err
	}
	out.Digest = "crc32c:" + strconv.FormatUint(uint64(digest.Sum32()), 10)
	rep.Output = out
	return published(rep, pub)
}

// callBeforePublish calls opts.BeforePublish, if set.
func callBeforePublish(opts Options) error {
	if opts.BeforePublish == nil {
		return nil
	}
	return opts.BeforePublish()
}

// addFileDigest adds to a report's digest the CRC-32C of a payload, then
// those of the materialisation files mats it references (a changelog+file
// payload holds only their handles: the state is in them), and returns
// their bytes together.
func addFileDigest(digest hash.Hash32, payload savepoint.FileInfo, mats []savepoint.FileInfo) int64 {
	n := int64(0)
	for _, f := range append([]savepoint.FileInfo{payload}, mats...) {
		digest.Write([]byte{byte(f.CRC32C), byte(f.CRC32C >> 8), byte(f.CRC32C >> 16), byte(f.CRC32C >> 24)})
		n += f.Size
	}
	return n
}

// published returns pub, the error of an output published and then
// failing (nil: none), after adding what failed to the report's warnings.
func published(rep *Report, pub *savepoint.PublishedError) error {
	if pub == nil {
		return nil
	}
	rep.Warnings = append(rep.Warnings, pub.Err.Error())
	return pub
}

// writeProgress reports the bytes written of the output's files, which
// may be written several at once, and keeps the input's pages out of the
// resident set: the writer streams from the memory maps, and what it has
// read is not needed again (the pages stay in the page cache).
type writeProgress struct {
	sp       *savepoint.Savepoint
	progress func(string, int64, int64)
	mu       sync.Mutex
	written  int64
}

// file returns the progress hook of one file (see
// savepoint.SnapshotOptions.Progress: the bytes of the file written so
// far).
func (w *writeProgress) file() func(int64) {
	var last int64
	return func(n int64) {
		w.sp.ReleasePages()
		w.mu.Lock()
		defer w.mu.Unlock()
		w.written += n - last
		last = n
		if w.progress != nil {
			w.progress("write", w.written, -1)
		}
	}
}

// controlFiles returns the checkpoint's other control records that the
// output keeps (CONFIRMED-<id> for jobs with 2PC sinks).
func controlFiles(sp *savepoint.Savepoint) (map[string][]byte, error) {
	extra := map[string][]byte{}
	if sp.Job == "" {
		return extra, nil
	}
	// Read beside the marker, written beside the output's (under the job
	// id its job= line gives, which may differ from its directory's name).
	name := "CONFIRMED-" + strconv.FormatUint(sp.Checkpoint, 10)
	rel := filepath.Join(filepath.Dir(sp.CompletedRel), name)
	b, err := savepoint.ReadControlFile(filepath.Join(sp.Root, rel))
	if err == nil {
		extra[filepath.Join("_jobs", sp.Job, name)] = b
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	return extra, nil
}

// receiptFates places the 2PC commit receipts of the input's checkpoint
// in an output of files written as checkpoint ckpt (rescaled: a rescale
// made files): placed maps the path in the output of each receipt carried
// to its bytes, and warnings say which are left, and why. A plan reports
// the warnings as the apply does.
func receiptFates(sp *savepoint.Savepoint, files []*newFile, rescaled bool, ckpt uint64) (placed map[string][]byte, warnings []string, err error) {
	receipts, err := commitReceipts(sp)
	if err != nil {
		return nil, nil, err
	}
	placed = map[string][]byte{}
	// A receipt names a subtask and a checkpoint id: it is carried where
	// the output keeps both, the subtask's state, under the index the
	// output gives that state (another when a group before it changed its
	// parallelism, as its payload is moved).
	const (
		otherID   = "the output is another checkpoint id"
		writtenAn = "the rescale writes their subtasks anew"
		noFile    = "the output holds no file of their subtasks"
		noneRead  = "the rescale read no file of their subtasks"
		zeros     = "their subtasks moved to other indices, and their names give the old index with leading zeros, which clink does not look up (a restore of the input did not use them either)"
	)
	left := map[string][]string{}
	for _, r := range receipts {
		at, kept := keptAt(files, r.subtask)
		switch {
		case ckpt != sp.Checkpoint:
			left[otherID] = append(left[otherID], filepath.Base(r.rel))
		case kept && at == r.subtask:
			placed[r.rel] = r.body
		case kept && strings.HasPrefix(filepath.Base(r.rel), "sub"+strconv.Itoa(r.subtask)+"-"):
			placed[movedReceipt(r.rel, at, sp.Checkpoint)] = r.body
		case kept:
			// (Renamed, it would become a name clink looks up, and
			// could take the place of the receipt that had it.)
			left[zeros] = append(left[zeros], filepath.Base(r.rel))
		case rescaled && slices.ContainsFunc(sp.Files, func(f *savepoint.File) bool { return f.Subtask == r.subtask }):
			left[writtenAn] = append(left[writtenAn], filepath.Base(r.rel))
		case rescaled:
			// (Its index may be one of the output's new subtasks: their
			// state is another's.)
			left[noneRead] = append(left[noneRead], filepath.Base(r.rel))
		default:
			left[noFile] = append(left[noFile], filepath.Base(r.rel))
		}
	}
	for _, what := range []string{otherID, writtenAn, noneRead, zeros, noFile} {
		if names := left[what]; len(names) > 0 {
			why := what + ", and a receipt names a subtask and a checkpoint; a job restored from the output finds no receipt for its sinks' pending commits"
			if what == zeros {
				why = what
			}
			warnings = append(warnings, fmt.Sprintf("the input's 2PC commit receipts of checkpoint %d (%s, in %s) are not carried into the output: %s", sp.Checkpoint, strings.Join(names, ", "), savepoint.ShowName(filepath.Join(filepath.Dir(sp.CompletedRel), "receipts")), why))
		}
	}
	return placed, warnings, nil
}

// receipt is a 2PC commit receipt of the input's checkpoint: its path in
// the output tree, the subtask it names and its bytes.
type receipt struct {
	rel     string
	subtask int
	body    []byte
}

// commitReceipts returns the 2PC commit receipts of the input's checkpoint
// (format 5.1: receipts/sub<K>-<ckpt>, and .unresolved, beside the
// COMPLETED marker), in the order of their names.
func commitReceipts(sp *savepoint.Savepoint) ([]receipt, error) {
	if sp.Job == "" {
		return nil, nil
	}
	dir := filepath.Join(filepath.Dir(sp.CompletedRel), "receipts")
	ents, err := os.ReadDir(filepath.Join(sp.Root, dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	suffix := "-" + strconv.FormatUint(sp.Checkpoint, 10)
	var out []receipt
	for _, e := range ents {
		name := e.Name()
		base := strings.TrimSuffix(name, ".unresolved")
		k, ok := strings.CutPrefix(base, "sub")
		if !ok || !strings.HasSuffix(k, suffix) {
			continue
		}
		sub, err := strconv.ParseUint(strings.TrimSuffix(k, suffix), 10, 32)
		if err != nil {
			continue
		}
		b, err := savepoint.ReadControlFile(filepath.Join(sp.Root, dir, name))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, name), err)
		}
		out = append(out, receipt{rel: filepath.Join("_jobs", sp.Job, "receipts", name), subtask: int(sub), body: b})
	}
	return out, nil
}

// keptAt returns the index at which the output files hold input subtask
// k's state as its own, and whether they do: the file of a subtask whose
// group keeps its layout (sameLayoutFile), copied or written anew, at k or,
// in a rescale that changed an earlier group's parallelism, at the index
// its group moved to. A subtask an apply leaves out has none, nor one of a
// group a rescale writes anew.
func keptAt(files []*newFile, k int) (int, bool) {
	i := slices.IndexFunc(files, func(nf *newFile) bool {
		return !nf.rescaled && nf.of == k
	})
	if i < 0 {
		return 0, false
	}
	return files[i].subtask, true
}

// movedReceipt is the path in the output of the receipt at rel (in
// _jobs/<job>/receipts/, named sub<K>-<ckpt>[.unresolved]) of a subtask
// whose state the output holds at index at: the name says that index, and
// the rest as it was.
func movedReceipt(rel string, at int, ckpt uint64) string {
	name := filepath.Base(rel)
	suffix := ""
	if strings.HasSuffix(name, ".unresolved") {
		suffix = ".unresolved"
	}
	return filepath.Join(filepath.Dir(rel), "sub"+strconv.Itoa(at)+"-"+strconv.FormatUint(ckpt, 10)+suffix)
}

// retargetConfirmed returns the body of a CONFIRMED marker (lines
// job=<id>, checkpoint=<ckpt>; format 5.5) with its checkpoint= line saying
// ckpt; the other lines, and their order and line ends, are kept.
func retargetConfirmed(b []byte, ckpt uint64) []byte {
	lines := strings.SplitAfter(string(b), "\n")
	for i, l := range lines {
		body := strings.TrimRight(l, "\r\n")
		if strings.HasPrefix(body, "checkpoint=") {
			lines[i] = "checkpoint=" + strconv.FormatUint(ckpt, 10) + l[len(body):]
		}
	}
	return []byte(strings.Join(lines, ""))
}

// checkpointOf parses the checkpoint id from checkpoint-<id>.snap[...].
func checkpointOf(name string) (uint64, bool) {
	base := filepath.Base(name)
	for _, p := range []string{"checkpoint-", "changelog-"} {
		if rest, ok := strings.CutPrefix(base, p); ok {
			if i := strings.IndexByte(rest, '.'); i > 0 {
				id, err := strconv.ParseUint(rest[:i], 10, 64)
				return id, err == nil
			}
		}
	}
	return 0, false
}
