package transform

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
)

// RescaleReport details a rescale: the layout before and after, and every
// row's fate.
type RescaleReport struct {
	Groups []RescaleGroupReport `json:"groups"`
	// KeyedIn counts keyed rows (first key byte below 128, legacy raw keys
	// included) entering the rescale; KeyedOut those written. KeyedIn =
	// KeyedOut + StaleCopies + Lost.
	KeyedIn  int64 `json:"keyed_in"`
	KeyedOut int64 `json:"keyed_out"`
	// StaleCopies are keyed rows found in a file other than the one of the
	// subtask that owned their key group, whose owner's input file holds
	// the row too (or its changelog erases it): the owner's copy is the
	// authoritative one (format section 10.1), and is kept, but for one a
	// rule dropped (see Lost).
	StaleCopies int64 `json:"stale_copies_dropped"`
	// StaleRaw counts the StaleCopies that are legacy raw keys (first
	// byte below 128, no slot), which a restore filters by key group as
	// it does keyed rows. Unlike a keyed row's stale copy, each was its
	// subtask's own state (clink's in-flight buffers are such keys), which
	// a chained subtask restores unfiltered: the rescale warns that they
	// are lost (staleRawWarning).
	StaleRaw int64 `json:"stale_copies_raw"`
	// Lost are keyed rows found only outside their owner's file (each
	// file's copy counted; of an operator and key a file stores twice,
	// one, the other being a duplicate resolved): no restore at the old
	// layout holds them, and the rescale drops them too. Whether the owner
	// holds a row is asked of its input, as Savepoint.Union and validate
	// ask it: a copy whose owner's copy a rule dropped is a stale copy.
	// Rows a rule dropped are counted by the rule, not here.
	Lost int64 `json:"lost_dropped"`
	// LostRaw counts the Lost rows that are legacy raw keys.
	LostRaw int64 `json:"lost_raw"`
	// LostExamples names up to 5 of the Lost rows (absent when there are
	// none).
	LostExamples []LostRow `json:"lost_examples,omitempty"`
	// left counts, by old subtask, the keyed copies of its file the
	// rescale dropped (stale and lost): its file's rows out in the report
	// are those it sent to the new subtasks.
	left map[int]int64
	// OperatorIn counts operator-state rows read (every copy in every old
	// file); OperatorDistinct the distinct (op, key) after merging; OperatorOut
	// the rows written (every distinct row into every new file of its group).
	OperatorIn       int64 `json:"operator_in"`
	OperatorDistinct int64 `json:"operator_distinct"`
	OperatorOut      int64 `json:"operator_out"`
	// TimersIn and TimersOut count the timers of the timer blobs of each
	// group's own operators; TimersStale those dropped because they sat in
	// the blob of a subtask that did not own their key's group, or repeated
	// a timer kept. TimersUnchosen are those dropped because they sat in
	// the blob of a subtask other than the last, for an owner without a
	// blob of its own: its restore takes one of the others' blobs, which
	// clink picks in directory order and sptool as the last (see
	// savepoint.TimerFires); a restore of the input may have fired them.
	// TimersIn = TimersOut + TimersStale + TimersUnchosen.
	TimersIn       int64 `json:"timers_in"`
	TimersOut      int64 `json:"timers_out"`
	TimersStale    int64 `json:"timers_stale_dropped"`
	TimersUnchosen int64 `json:"timers_unchosen_dropped"`
	// Merges lists every operator-state key whose copies differed, and the
	// value chosen.
	Merges []MergeChoice `json:"merges"`
	// Outputs are the new files of the rescaled groups, in subtask order.
	Outputs []RescaleOutput `json:"outputs"`
}

// staleRawWarning is the rescale's warning of the n copies of legacy raw
// keys it dropped as stale (RescaleReport.StaleRaw).
func staleRawWarning(n int64) string {
	copies := fmt.Sprintf("%d copies of legacy raw keys", n)
	if n == 1 {
		copies = "1 copy of a legacy raw key"
	}
	return fmt.Sprintf("%s dropped: held by subtasks that do not own the key group of their first byte (95 for clink's in-flight buffers, such as __broadcast_main_inflight__), each was that subtask's own state, which a chained subtask restores unfiltered at the old layout; the new layout keeps only the copy of the group's old owner (format 10.1), so what the others held is lost", copies)
}

// RescaleOutput is one new file of a rescaled group: its subtask, the key
// groups it owns ([KeyGroupStart, KeyGroupEnd)), its rows (keyed and
// operator rows) and the timers of its operators' timer blobs.
type RescaleOutput struct {
	Subtask       int   `json:"subtask"`
	KeyGroupStart int   `json:"key_group_start"`
	KeyGroupEnd   int   `json:"key_group_end"`
	Rows          int64 `json:"rows"`
	Timers        int64 `json:"timers"`
}

// LostRow is a keyed row a rescale dropped because only a subtask that did
// not own its key group held it.
type LostRow struct {
	// File is the snapshot file holding the copy, relative to the
	// savepoint's root, and Row its row there (of a file sorted through
	// temporary files, which keep no input rows, the first row holding an
	// operator and key the row may have had, the rules' remaps and renames
	// undone; -1 when there is none); Subtask its old subtask and Owner
	// the old subtask owning the key group.
	File string `json:"file"`
	Row  int    `json:"row"`
	// Replayed reports that File is a changelog payload, whose Row indexes
	// its replayed rows in canonical order, not its stream's (absent
	// otherwise).
	Replayed bool   `json:"replayed,omitempty"`
	Subtask  int    `json:"subtask"`
	Owner    int    `json:"owner"`
	Op       uint64 `json:"op"`
	KeyGroup int    `json:"key_group"`
	// Key is the row's key, hex-encoded. Op and Key are as stored in the
	// input (before any rule), or after the rules when Row is -1.
	Key string `json:"key"`
}

// where names the file and row of l: "v1/3/checkpoint-7.snap row 4",
// "v1/3/changelog-7.snap replayed row 0", or the file alone.
func (l LostRow) where() string {
	if l.Row < 0 {
		return l.File
	}
	return l.File + " " + savepoint.RowName(l.Replayed, l.Row)
}

// maxLostExamples bounds RescaleReport.LostExamples.
const maxLostExamples = 5

// RescaleGroupReport is one chain group before and after.
type RescaleGroupReport struct {
	OldFirst       int `json:"old_first"`
	OldParallelism int `json:"old_parallelism"`
	NewFirst       int `json:"new_first"`
	NewParallelism int `json:"new_parallelism"`
	// Action is "copy" (parallelism unchanged: each file keeps its rows,
	// and FileStats.Action says whether it is copied byte for byte or
	// rewritten) or "rescale".
	Action string `json:"action"`
}

// MergeChoice is one operator-state key whose copies differed across the old
// subtasks of a group: its operator, its key rendered as inspect renders a
// timer blob's (savepoint.RenderKey), how many distinct values its copies
// held, the rule that chose one, the old subtask whose copy was kept, and
// Warning, the report's warning of the choice (copies not all 8 bytes
// long, or source offsets that differ; absent otherwise).
type MergeChoice struct {
	// Group is the old chain group whose copies were merged ("0-2").
	Group   string `json:"group"`
	Op      uint64 `json:"op"`
	Key     string `json:"key"`
	Values  int    `json:"distinct_values"`
	Rule    string `json:"rule"` // "greater-int64" or "highest-subtask"
	FromOld int    `json:"chosen_from_subtask"`
	Warning string `json:"warning,omitempty"`
}

// newFile is one file of the output tree.
type newFile struct {
	subtask  int
	rows     savepoint.RowSource // in canonical order
	md       savepoint.Metadata
	versions savepoint.VersionMap
	// copyOf is set when the file is an input file carried over byte for
	// byte (no rule changed it).
	copyOf *savepoint.File
	// canonical: rows are in canonical order (all but copies of unsorted
	// inputs).
	canonical bool
	// from names the input the file was made of, for the provenance key.
	from        string
	inputCRC    uint32
	compression string
	// counts, if set, are the rows per operator and slot (a rescale's new
	// file counted as it was sorted out; see recountAfterRescale).
	counts *slotCounts
	// rescaled is set on the new files of a rescaled group, whose key
	// groups are keyGroups; timers counts the timers of their blobs.
	rescaled  bool
	keyGroups savepoint.KeyGroupRange
	timers    int64
	// unlisted: the file keeps the place of an input file whose subtask
	// the input's marker does not list (File.Unlisted), and so stays out
	// of the output marker's list.
	unlisted bool
	// of is the input subtask whose file a file of a group that keeps its
	// layout is made of (sameLayoutFile); not set when rescaled.
	of int
}

// sameLayoutFile is the output file of an input file whose place in the
// layout does not change (no rescale, or its group keeps its parallelism).
func sameLayoutFile(f *savepoint.File, res *fileResult, subtask int) *newFile {
	nf := &newFile{subtask: subtask, rows: res.out, md: f.Snapshot.Metadata, versions: res.versions,
		from: f.Rel, inputCRC: f.CRC32C, compression: f.Compression, canonical: res.canonical,
		unlisted: f.Unlisted, of: f.Subtask}
	if !res.changed {
		nf.copyOf = f
	}
	return nf
}

// groupsHint returns how a rescale of a tree of these groups gives each its
// parallelism, in a rule's groups and in --group-parallelism, with the
// parallelisms to choose named M, N, O, ...
func groupsHint(gs []savepoint.Group) (rule, flag string) {
	const names = "MNOPQRSTUVWXYZ"
	var rs, fs []string
	for i, g := range gs {
		name := fmt.Sprintf("P%d", i+1)
		if i < len(names) {
			name = names[i : i+1]
		}
		sub := savepoint.FormatGroups([]savepoint.Group{g})
		rs = append(rs, fmt.Sprintf("{subtasks: \"%s\", parallelism: %s}", sub, name))
		fs = append(fs, sub+"="+name)
	}
	return strings.Join(rs, ", "), strings.Join(fs, ",")
}

// rescaleRuleErr is err of set's rescale rule (its last), prefixed with the
// rule's label, but for the rule of `sptool rescale`'s flags, which the
// user did not write as one.
func rescaleRuleErr(set *rules.Set, err error) error {
	if set.Source == rules.RescaleShorthand {
		return err
	}
	return fmt.Errorf("%s: %w", ruleAt(set, set.Rules[len(set.Rules)-1]), err)
}

// ErrRescaleNeedsTree is the error of a rescale of a single snapshot file.
var ErrRescaleNeedsTree = errors.New("rescale needs a checkpoint tree (a v<generation> directory of subtask directories), not a single file")

// groupsNamed names the tree's chain groups as they were found: inferred
// from the rows, or given (--groups).
func groupsNamed(sp *savepoint.Savepoint) string {
	if sp.GroupsInferred {
		return "inferred chain groups"
	}
	return "chain groups given with --groups"
}

// rescaleGroups resolves the rescale spec against the tree's groups.
func rescaleGroups(sp *savepoint.Savepoint, spec *rules.RescaleSpec) ([]savepoint.Group, []int, []string, error) {
	if sp.Kind == savepoint.InputFile {
		return nil, nil, nil, ErrRescaleNeedsTree
	}
	if err := sp.CheckConsecutive(); err != nil {
		return nil, nil, nil, err
	}
	var warnings []string
	if spec.Groups == nil {
		if len(sp.Groups) != 1 {
			rule, flag := groupsHint(sp.Groups)
			return nil, nil, nil, fmt.Errorf("the tree has %d chain groups (subtasks %s); give each its parallelism (rule: 'rescale: {groups: [%s]}'; command: --group-parallelism %s)", len(sp.Groups), savepoint.FormatGroups(sp.Groups), rule, flag)
		}
		return sp.Groups, []int{spec.Parallelism}, nil, nil
	}
	var groups []savepoint.Group
	var pars []int
	for _, g := range spec.Groups {
		groups = append(groups, savepoint.Group{First: g.First, Count: g.Count()})
		pars = append(pars, g.Parallelism)
	}
	first, last := sp.Files[0].Subtask, sp.Files[len(sp.Files)-1].Subtask
	next := first
	for i, g := range groups {
		if g.First != next {
			return nil, nil, nil, fmt.Errorf("rescale group %d (subtasks %s) does not match the tree: its groups must tile its subtasks %d-%d in order (the tree's %s are %s)", i+1, spec.Groups[i].Subtasks, first, last, groupsNamed(sp), savepoint.FormatGroups(sp.Groups))
		}
		next = g.First + g.Count
	}
	if next != last+1 || len(sp.Files) != last-first+1 {
		return nil, nil, nil, fmt.Errorf("rescale groups %s do not cover the tree's subtasks %d-%d (its %s are %s)", savepoint.FormatGroups(groups), first, last, groupsNamed(sp), savepoint.FormatGroups(sp.Groups))
	}
	if savepoint.FormatGroups(groups) != savepoint.FormatGroups(sp.Groups) {
		if !sp.GroupsInferred {
			// Both state the layout: neither is taken over the other.
			return nil, nil, nil, fmt.Errorf("the rescale groups %s differ from the chain groups given for the tree (%s, --groups); the rescale reads the tree at its own groups, so give the same groups in both, or the rescale's alone", savepoint.FormatGroups(groups), savepoint.FormatGroups(sp.Groups))
		}
		warnings = append(warnings, fmt.Sprintf("the rescale groups %s differ from the chain groups inferred from the tree (%s); the rescale groups are used", savepoint.FormatGroups(groups), savepoint.FormatGroups(sp.Groups)))
	}
	return groups, pars, warnings, nil
}

// rescale re-partitions the per-file results into the files of the new
// layout. Keyed rows move to the subtask owning their key group at the new
// parallelism; operator rows are merged across the group's old subtasks and
// written into every new file of the group; the timer blobs of the group's
// own operators are split by key group.
//
// shorthand is set for the rule of `sptool rescale`'s flags, whose groups
// the user gave as --group-parallelism.
func rescale(sp *savepoint.Savepoint, spec *rules.RescaleSpec, shorthand bool, results []*fileResult, inputIDs func(op uint64, key []byte) []savepoint.Row, rep *Report) ([]*newFile, error) {
	groups, pars, warns, err := rescaleGroups(sp, spec)
	if err != nil {
		return nil, err
	}
	rep.Warnings = append(rep.Warnings, warns...)
	rr := &RescaleReport{Merges: []MergeChoice{}, Outputs: []RescaleOutput{}}
	rep.Rescale = rr
	byIndex := fileIndexes(sp)
	var out []*newFile
	newFirst := 0
	anyKeyed := &keyedAnywhere{results: results}
	for gi, g := range groups {
		m := pars[gi]
		gr := RescaleGroupReport{OldFirst: g.First, OldParallelism: g.Count, NewFirst: newFirst, NewParallelism: m, Action: "rescale"}
		// (A parallelism above 128, which leaves subtasks without keyed
		// state, is warned of by the rule file's load.)
		if m == g.Count {
			gr.Action = "copy"
			for i := 0; i < g.Count; i++ {
				fi := byIndex[g.First+i]
				res := results[fi]
				out = append(out, sameLayoutFile(sp.Files[fi], res, newFirst+i))
			}
		} else {
			// A row stored twice in one file (clink's merges write such
			// files): restore keeps one (format 1.6), and so does the rescale.
			// One file at a time: each sort through temporary files uses
			// every core already, and two at once held twice the memory
			// (a 10M-row tree in clink's order: 0.51x its size against
			// 0.32x). A fault of the mapped input names the file.
			var dupes int64
			for i := 0; i < g.Count; i++ {
				res := results[byIndex[g.First+i]]
				if res.canonical {
					continue
				}
				var n int64
				err := savepoint.Guard(func() (err error) {
					n, err = res.out.canonicalise(nil)
					return err
				})
				if err != nil {
					return nil, savepoint.WithFile(sp.Files[byIndex[g.First+i]].Path, err)
				}
				dupes += n
				res.canonical = true
			}
			if dupes > 0 {
				rep.DuplicatesResolved += dupes
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("group %s: %d rows were stored twice in one file; each was resolved as clink's restore does (keyed: the later row; operator state: the greater 8-byte value)", savepoint.FormatGroups([]savepoint.Group{g}), dupes))
			}
			files, warns, err := rescaleGroup(sp, g, newFirst, m, byIndex, results, inputIDs, anyKeyed, rr)
			if err != nil {
				return nil, err
			}
			rep.Warnings = append(rep.Warnings, warns...)
			out = append(out, files...)
		}
		rr.Groups = append(rr.Groups, gr)
		newFirst += m
	}
	if rr.Lost > 0 && !spec.DropLost {
		return nil, lostError(groups, layoutSource(sp, spec, shorthand), rr)
	}
	if rr.Lost > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("lost keyed rows dropped: %d, held only outside the file of the subtask owning their key group, so no restore at the old layout holds them (the report lists the first; sptool validate reports them all)", rr.Lost))
	}
	if rr.StaleRaw > 0 {
		rep.Warnings = append(rep.Warnings, staleRawWarning(rr.StaleRaw))
	}
	if rr.TimersUnchosen > 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("timers dropped: %d, of subtasks without a timer blob of their own, held in a peer's blob other than the last: such a subtask restores one of its peers' blobs, which clink picks in directory order and sptool as the last, so a restore of the input may have fired them and the output's will not (sptool validate names the blobs)", rr.TimersUnchosen))
	}
	for _, mc := range rr.Merges {
		if mc.Warning != "" {
			rep.Warnings = append(rep.Warnings, mc.Warning)
		}
	}
	return out, nil
}

// fileIndexes returns the index in sp.Files of each subtask's file.
func fileIndexes(sp *savepoint.Savepoint) map[int]int {
	byIndex := make(map[int]int, len(sp.Files))
	for i, f := range sp.Files {
		byIndex[f.Subtask] = i
	}
	return byIndex
}

// layoutSource says where the chain groups a rescale reads the tree at
// come from, for the advice to check them: the rescale's own groups when
// it gives them (as --group-parallelism, for the rule of `sptool
// rescale`'s flags), else the tree's, given with --groups or inferred.
func layoutSource(sp *savepoint.Savepoint, spec *rules.RescaleSpec, shorthand bool) string {
	switch {
	case spec.Groups != nil && shorthand:
		return "the ranges of --group-parallelism"
	case spec.Groups != nil:
		return "the rescale rule's groups"
	case sp.GroupsInferred:
		return "inferred from the rows; --groups states them"
	default:
		return "--groups"
	}
}

// lostError refuses a rescale that would drop lost keyed rows (see
// rules.RescaleSpec.DropLost), naming the first. groups is the old layout
// the rescale reads the tree at: its own groups when given, which may
// differ from those inferred from the tree; from says where they come
// from (layoutSource).
func lostError(groups []savepoint.Group, from string, rr *RescaleReport) error {
	msg := fmt.Sprintf("the rescale would drop %d lost keyed rows: rows held only outside the file of the subtask owning their key group at the old layout (chain groups %s), which no restore at that layout holds", rr.Lost, savepoint.FormatGroups(groups))
	if len(rr.LostExamples) > 0 {
		l := rr.LostExamples[0]
		msg += fmt.Sprintf(", such as %s (op %d, key group %d, owned by subtask %d)", l.where(), l.Op, l.KeyGroup, l.Owner)
	}
	return fmt.Errorf("%s. They usually mean the tree is read at the wrong layout: a subtask directory missing, or the wrong chain groups (%s); sptool validate lists them. Nothing is written; to drop them, as a restore at this layout would, give 'drop_lost: true' to the rescale rule (sptool rescale --drop-lost)", msg, from)
}

// unionMetadata is the metadata of a rescaled group's new files: first's
// (the first old file's that has any) with the keys only other old files
// carry added, in old subtask order. clink reads none of these keys, but
// they belong to the state (sptool.md: unknown keys are carried over) and
// each old file's rows are spread over the new ones. A key the old files
// give different values keeps the first and is reported. The version map
// is chosen apart, and the provenance is the output's own.
func unionMetadata(first savepoint.Metadata, files []*savepoint.File, g savepoint.Group) (savepoint.Metadata, []string) {
	out := slices.Clone(first)
	kept := map[string]string{}
	for _, e := range out {
		if _, ok := kept[e.Key]; !ok {
			kept[e.Key] = e.Value
		}
	}
	var warns []string
	reported := map[string]bool{}
	for i, f := range files {
		for _, e := range f.Snapshot.Metadata {
			switch e.Key {
			case savepoint.MetaFormatVersion, savepoint.MetaStateVersions, savepoint.MetaProvenance:
				continue
			}
			v, ok := kept[e.Key]
			switch {
			case !ok:
				kept[e.Key] = e.Value
				out = append(out, e)
			case v != e.Value && !reported[e.Key]:
				reported[e.Key] = true
				warns = append(warns, fmt.Sprintf("group %s: metadata key %q has another value in subtask %d's file (%q) than the one the new files keep (%q)", savepoint.FormatGroups([]savepoint.Group{g}), e.Key, g.First+i, e.Value, v))
			}
		}
	}
	return out, warns
}

// keyedAnywhere tells whether an operator has keyed rows (first key byte
// below 128) in the output of the rules of any file of a tree, read the
// first time it is asked: after the rules, as a group's own operators are
// found, so that an operator whose keyed slots the rules dropped, or one a
// remap moved, is taken as it is written.
type keyedAnywhere struct {
	results []*fileResult
	ops     map[uint64]bool
	err     error
	read    bool
}

// has reports whether op has keyed rows in some file's output.
func (k *keyedAnywhere) has(op uint64) (bool, error) {
	if !k.read {
		k.read = true
		k.ops = map[uint64]bool{}
		k.err = savepoint.Guard(func() error {
			for _, res := range k.results {
				if err := res.out.keyedOps(res.canonical, k.ops); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return k.ops[op], k.err
}

// keyedOps adds to ops the operators of the keyed rows of o: run by run
// when o is canonical (see keyedRun), else row by row.
func (o *outRows) keyedOps(canonical bool, ops map[uint64]bool) error {
	var kc savepoint.KeyColumns
	for j := 0; j < o.Len(); {
		if !canonical {
			if _, keyed := savepoint.RestoreKeyGroup(o.Key(j)); keyed {
				ops[o.Op(j)] = true
			}
			j++
			continue
		}
		n, op, _, keyed, err := o.keyedRun(j, &kc)
		if err != nil {
			return err
		}
		if keyed {
			ops[op] = true
		}
		j += n
	}
	return nil
}

// rescaleGroup spreads the rows of the old files of chain group g (after
// the rules: results, by index in sp.Files) over m new files, numbered
// from newFirst: keyed rows to the new subtask owning their key group,
// operator rows merged into every new file, timer blobs split by key
// group. It returns the new files and the warnings to report.
func rescaleGroup(sp *savepoint.Savepoint, g savepoint.Group, newFirst, m int, byIndex map[int]int, results []*fileResult, inputIDs func(op uint64, key []byte) []savepoint.Row, anyKeyed *keyedAnywhere, rr *RescaleReport) ([]*newFile, []string, error) {
	files := make([]*newFile, m)
	// Keyed rows are not copied: pos[j][o] lists, in order, the spans of
	// positions in old file o's output of the rows that go to new file j
	// (rows of one key group are consecutive); operator rows, few and
	// merged, are collected as rows.
	pos := make([][]rowIndex, m)
	olds := make([]*outRows, g.Count)
	groupFiles := make([]*savepoint.File, g.Count)
	rows := make([][]savepoint.Row, m)
	for i := range files {
		files[i] = &newFile{subtask: newFirst + i, rescaled: true, keyGroups: savepoint.KeyGroupRangeForSubtask(i, m)}
		pos[i] = make([]rowIndex, g.Count)
	}
	newG := savepoint.Group{First: newFirst, Count: m}
	// Operators with keyed rows in this group's files are its own operators:
	// their timer blobs are split; the blobs of operators with keyed rows in
	// another group are frozen copies. A group that is the whole tree runs
	// every operator in it (one with timers but no keyed state included).
	// An operator with keyed rows in no file's output (a process function
	// that keeps only timers, or one whose keyed slots the rules dropped)
	// may run in any group that holds its blob: its blob is split in every
	// rescaled group that holds it, since only the split keeps every timer
	// of the group that runs it; a copy split in a group that does not run
	// it is never read there.
	wholeTree := g.Count == len(sp.Files)
	var ownerless []string
	own := map[uint64]bool{}
	opRows := map[string][]opCopy{} // op+key -> copies in old subtask order
	var opOrder []savepoint.Row
	var meta savepoint.Metadata
	// The version map is job-wide: the new files carry the first
	// non-empty one of the old files, as clink's merge keeps it.
	var versions savepoint.VersionMap
	packed := map[string]bool{}
	for i := 0; i < g.Count; i++ {
		fi := byIndex[g.First+i]
		res, f := results[fi], sp.Files[fi]
		if meta == nil && len(f.Snapshot.Metadata) > 0 {
			meta = f.Snapshot.Metadata
		}
		if versions.Len() == 0 {
			versions = res.versions
		}
		packed[res.versions.Pack()] = true
		olds[i] = res.out
		groupFiles[i] = f
	}
	// The old files' rows are sorted out at once, each into its own part
	// (its spans of pos, counts and operator rows), then merged in old
	// subtask order: the result is that of one pass over the files in turn.
	parts := make([]rescalePart, g.Count)
	savepoint.ForEach(g.Count, func(i int) {
		fi := byIndex[g.First+i]
		parts[i] = sortOut(sp.Files[fi], results[fi].out, oldFile{g: g, newG: newG, i: i, pos: pos})
	})
	counts := newFileCounts(parts, m)
	for i, p := range parts {
		if p.err != nil {
			return nil, nil, savepoint.WithFile(sp.Files[byIndex[g.First+i]].Path, p.err)
		}
		for op := range p.own {
			own[op] = true
		}
		lost, lostRaw, raw := countLost(groupFiles, g.First, olds, i, p.staleRuns, inputIDs, rr)
		rr.KeyedIn += p.keyedIn
		rr.StaleCopies += p.stale - lost
		rr.StaleRaw += raw - lostRaw
		rr.Lost += lost
		rr.LostRaw += lostRaw
		if p.stale > 0 {
			if rr.left == nil {
				rr.left = map[int]int64{}
			}
			rr.left[g.First+i] += p.stale
		}
		rr.KeyedOut += p.keyedOut
		rr.OperatorIn += int64(len(p.opRows))
		for _, r := range p.opRows {
			k := opKey(r)
			if _, ok := opRows[k]; !ok {
				opOrder = append(opOrder, savepoint.Row{Op: r.Op, Key: r.Key})
			}
			opRows[k] = append(opRows[k], opCopy{g.First + i, r.Value})
		}
	}
	for _, id := range opOrder {
		copies := opRows[opKey(id)]
		isBlob := bytes.HasPrefix(id.Key, savepoint.TimerKeyPrefix)
		split := isBlob && (wholeTree || own[id.Op])
		if isBlob && !split {
			keyed, err := anyKeyed.has(id.Op)
			if err != nil {
				return nil, nil, err
			}
			if !keyed {
				split = true
				ownerless = append(ownerless, fmt.Sprintf("op %d timer blob %s", id.Op, savepoint.RenderKey(id.Key)))
			}
		}
		if split {
			blobs := make([][]byte, m)
			timers, err := splitTimers(id, copies, g, newG, groupFiles, sp.Backend.UnionsOperatorRows(), blobs, rr)
			if err != nil {
				return nil, nil, err
			}
			for i, f := range files {
				rows[i] = append(rows[i], savepoint.Row{Op: id.Op, Key: id.Key, Value: blobs[i]})
				f.timers += timers[i]
			}
			rr.OperatorDistinct++
			rr.OperatorOut += int64(m)
			continue
		}
		value, choice := mergeOperator(id, copies, func(old int) { groupFiles[old-g.First].ReleasePages() })
		if choice != nil {
			choice.Group = savepoint.FormatGroups([]savepoint.Group{g})
			rr.Merges = append(rr.Merges, *choice)
		}
		for i := range files {
			rows[i] = append(rows[i], savepoint.Row{Op: id.Op, Key: id.Key, Value: value})
		}
		rr.OperatorDistinct++
		rr.OperatorOut += int64(m)
	}
	meta, warns := unionMetadata(meta, groupFiles, g)
	warns = append(warns, legacyBlobWarnings(g, newG, olds, parts)...)
	for _, b := range ownerless {
		warns = append(warns, fmt.Sprintf("group %s: %s: no chain group holds keyed rows of its operator, so which group runs it is not known: the blob was split by key group in this group, as in every rescaled group whose files hold it, so that no timer of the group that runs it is lost (a group that does not run it never reads its copies)", savepoint.FormatGroups([]savepoint.Group{g}), b))
	}
	if len(packed) > 1 {
		vm := versions.Pack()
		if vm == "" {
			vm = "(none)"
		}
		warns = append(warns, fmt.Sprintf("group %s: the old files carry %d different version maps; every new file carries the first non-empty one, as clink's merge keeps it: %q (subtasks restored from the other files read other stamps; sptool validate lists them)", savepoint.FormatGroups([]savepoint.Group{g}), len(packed), vm))
	}
	from := fmt.Sprintf("rescaled from subtasks %d-%d of v%d", g.First, g.First+g.Count-1, sp.Generation)
	for i, f := range files {
		f.md, f.versions, f.from = meta, versions, from
		f.rows, f.canonical = mergeSorted(olds, pos[i], savepoint.Logical(rows[i]), sp.ReleasePages), true
		pos[i] = nil
		if counts != nil {
			countSlots(savepoint.RowSlice(rows[i]), true, counts[i], func() {})
			f.counts = counts[i]
		}
	}
	return files, warns, nil
}

// legacyTimerKey starts the key of a legacy unprefixed timer blob (see
// savepoint.IsTimerBlob).
var legacyTimerKey = savepoint.TimerKeyPrefix[1:]

// legacyBlobWarnings says what a rescale of group g to newG does to the
// legacy unprefixed timer blobs of its old files' outputs (olds, canonical;
// parts their operators). Such a blob is a raw row of key group 95
// (format 2.1): a restore keeps the copy of the owner of 95 and fires the
// timers of that subtask's range from it, and the rescale moves that copy
// whole to the new owner of 95 (docs/rescale.md). The timers of the old
// owner's range that the new owner's range does not hold stop firing: each
// blob with such timers, or that does not decode, is named, with how many.
func legacyBlobWarnings(g, newG savepoint.Group, olds []*outRows, parts []rescalePart) []string {
	owner := g.Owner(95)
	i := owner - g.First
	out, newOwner := olds[i], newG.Owner(95)
	oldRange, newRange := g.Range(owner), newG.Range(newOwner)
	group := savepoint.FormatGroups([]savepoint.Group{g})
	var warns []string
	for _, op := range slices.Sorted(maps.Keys(parts[i].own)) {
		for x := lowerBound(out, op, legacyTimerKey); x < out.Len() && out.Op(x) == op && bytes.HasPrefix(out.Key(x), legacyTimerKey); x++ {
			if !savepoint.IsTimerBlob(out.Key(x)) {
				continue // a keyed row of a slot that starts so
			}
			key := savepoint.RenderKey(out.Key(x))
			proc, event, err := savepoint.ParseTimers(bytes.Clone(out.Value(x)))
			if err != nil {
				warns = append(warns, fmt.Sprintf("group %s: op %d legacy timer blob %s of subtask %d does not decode (%v): moved whole to new subtask %d, the new owner of key group 95, its timers not counted", group, op, key, owner, err, newOwner))
				continue
			}
			fired, stop := 0, 0
			var first savepoint.Timer
			for _, t := range append(proc, event...) {
				kg := savepoint.KeyGroupOf(t.Key)
				if !oldRange.Contains(kg) {
					continue
				}
				if fired++; !newRange.Contains(kg) {
					if stop++; stop == 1 {
						first = t
					}
				}
			}
			if stop > 0 {
				warns = append(warns, fmt.Sprintf("group %s: op %d legacy timer blob %s (unprefixed, a raw row of key group 95) moves whole from subtask %d to new subtask %d, the new owner of key group 95, and is not split: %d of the %d timers it fires at the old layout (key groups %s) are outside the new owner's range %s and no longer fire (the first: at %d for key %s); sptool validate of the output lists them", group, op, key, owner, newOwner, stop, fired, oldRange, newRange, first.Time, savepoint.RenderTimerKey(first.Key)))
			}
		}
	}
	return warns
}

// rescalePart is what sortOut found in one old file of a rescale group.
type rescalePart struct {
	own                      map[uint64]bool // operators with keyed rows
	keyedIn, stale, keyedOut int64
	// staleRuns are the runs of keyed rows whose key group the old subtask
	// did not own, in output order.
	staleRuns []staleRun
	opRows    []savepoint.Row // operator rows, in order
	// counts, when the old file's output has a runLog, are the rows per
	// operator and slot it gives each new file (nil otherwise).
	counts []*slotCounts
	err    error
}

// oldFile is the i-th old file of rescale group g, whose rows go to the
// new group newG: pos[x][i] lists the spans of its output that go to new
// file x (see sortOut).
type oldFile struct {
	g, newG savepoint.Group
	i       int
	pos     [][]rowIndex
}

// sortOut sorts the rows of out, the output of old file o, into the new
// group: each run of keyed rows of one key group the old subtask owns is
// appended to o.pos[new file][o.i], one it does not own is a stale copy,
// and operator rows are collected. It touches only o.pos[*][o.i].
func sortOut(f *savepoint.File, out *outRows, o oldFile) rescalePart {
	if out.log.describes(out.Len()) {
		return sortOutLogged(out, o)
	}
	p := rescalePart{own: map[uint64]bool{}}
	var kc savepoint.KeyColumns
	release := savepoint.NewPacer(0, f.ReleaseRows())
	for j := 0; j < out.Len(); j++ {
		if release.Due(j) {
			f.ReleasePages()
		}
		n, op, kg, keyed, err := out.keyedRun(j, &kc)
		if err != nil {
			p.err = err
			return p
		}
		if keyed {
			o.keyed(&p, op, kg, j, n)
			j += n - 1
			continue
		}
		// Operator state (first byte >= 128) and zero-length keys, which
		// restore never filters: merged, then written into every new file.
		p.opRows = append(p.opRows, out.Row(j))
	}
	return p
}

// keyed takes into p the n keyed rows of operator op and key group kg at
// output position j of o: a stale copy when o's subtask does not own kg,
// else appended to the spans of the new file x that does. It returns x,
// or -1 for a stale copy.
func (o oldFile) keyed(p *rescalePart, op uint64, kg, j, n int) int {
	p.own[op] = true
	p.keyedIn += int64(n)
	if owner := o.g.Owner(kg); owner != o.g.First+o.i {
		p.stale += int64(n)
		p.staleRuns = append(p.staleRuns, staleRun{j: j, n: n, owner: owner - o.g.First, kg: kg})
		return -1
	}
	x := o.newG.Owner(kg) - o.newG.First
	o.pos[x][o.i].appendRun(j, n)
	p.keyedOut += int64(n)
	return x
}

// staleRun is a run of n keyed rows of one operator and key group kg at
// output position j of an old file that did not own kg; owner is the index
// in the group of the old file that did.
type staleRun struct{ j, n, owner, kg int }

// countLost returns how many rows of the stale runs of old file i of a
// group are lost, and records the first of them in rr.LostExamples: rows
// whose operator and key, as stored in the input, the owner's input file
// does not hold (olds holds the group's outputs, each in canonical order;
// files their input files). So the split between stale and lost rows is
// that of the input, as Savepoint.Union and validate count it, whatever the
// rules dropped. Of a file sorted through temporary files the input row of
// an output row is not known: the operators and keys its row may have had
// in the input (inputIDs: the rules' remaps and renames undone) are looked
// up, and a row is lost when the owner's input holds none of them and its
// changelog's log erases none of them (Snapshot.ErasedByLog). A row
// whose owner's output holds its operator and key is stale: each run is
// merged with the owner's output from the first row not below the run's
// first, linear in the runs and the owner's rows of their operators and
// key groups. The others are looked up in the owner's input (see
// findRows).
//
// It returns the lost rows, those of them that are legacy raw keys, and
// the raw keys among all the runs' rows.
func countLost(files []*savepoint.File, first int, olds []*outRows, i int, runs []staleRun, inputIDs func(op uint64, key []byte) []savepoint.Row, rr *RescaleReport) (lost, lostRaw, raw int64) {
	src := olds[i]
	type candidate struct {
		op    uint64
		key   []byte
		owner int
		kg    int
		inRow int
		// ids are the operators and keys the row may have had in the
		// input: one when the input row is known.
		ids    []savepoint.Row
		isLost bool
		isRaw  bool // a legacy raw key
	}
	var cands []candidate
	for _, r := range runs {
		owner := olds[r.owner]
		op0, key0 := src.Op(r.j), bytes.Clone(src.Key(r.j))
		x := lowerBound(owner, op0, key0)
		for k := r.j; k < r.j+r.n; k++ {
			op, key := src.Op(k), bytes.Clone(src.Key(k))
			isRaw := savepoint.ParseKey(key).Kind == savepoint.KindRaw
			if isRaw {
				raw++
			}
			c := 1
			for ; x < owner.Len(); x++ {
				if c = compareRow(owner.Op(x), owner.Key(x), op, key); c >= 0 {
					break
				}
			}
			if c == 0 {
				continue
			}
			cd := candidate{op: op, key: key, owner: r.owner, kg: r.kg, inRow: -1, isRaw: isRaw}
			if src.spilled {
				cd.ids = inputIDs(op, key)
			} else {
				in := src.idx.at(k)
				cd.op, cd.key, cd.inRow = src.cur.Op(in), bytes.Clone(src.cur.Key(in)), in
				cd.ids = []savepoint.Row{{Op: cd.op, Key: cd.key}}
			}
			cands = append(cands, cd)
		}
	}
	if len(cands) == 0 {
		return 0, 0, raw
	}
	// The candidates' owners, each asked once.
	byOwner := map[int][]int{}
	for ci, c := range cands {
		byOwner[c.owner] = append(byOwner[c.owner], ci)
	}
	for owner, cis := range byOwner {
		var ids []savepoint.Row
		for _, ci := range cis {
			ids = append(ids, cands[ci].ids...)
		}
		os := files[owner].Snapshot
		at := findRows(os, ids)
		for _, ci := range cis {
			n := len(cands[ci].ids)
			// A key the owner's changelog log erases is no loss: the
			// owner's state is that it is absent, and the copy is stale.
			cands[ci].isLost = !slices.ContainsFunc(at[:n], func(row int) bool { return row >= 0 }) &&
				!slices.ContainsFunc(cands[ci].ids, func(id savepoint.Row) bool { return os.ErasedByLog(id.Op, id.Key) })
			at = at[n:]
		}
	}
	// The examples whose input row is not known yet, and their candidates.
	var unplaced []struct{ ex, ci int }
	for ci, c := range cands {
		if !c.isLost {
			continue
		}
		lost++
		if c.isRaw {
			lostRaw++
		}
		if len(rr.LostExamples) < maxLostExamples {
			if c.inRow < 0 {
				unplaced = append(unplaced, struct{ ex, ci int }{len(rr.LostExamples), ci})
			}
			rr.LostExamples = append(rr.LostExamples, LostRow{File: files[i].Rel, Row: c.inRow, Replayed: files[i].Snapshot.Variant == savepoint.Changelog, Subtask: first + i, Owner: first + c.owner, Op: c.op, KeyGroup: c.kg, Key: hex.EncodeToString(c.key)})
		}
	}
	// An output sorted through temporary files does not keep its rows'
	// input rows: an example that its input holds under one of the
	// operators and keys it may have had gets the first row there, and
	// that operator and key (in one pass over the input's keys for at most
	// maxLostExamples rows); the others keep Row -1, and the operator and
	// key after the rules.
	if len(unplaced) > 0 {
		var ids []savepoint.Row
		for _, u := range unplaced {
			ids = append(ids, cands[u.ci].ids...)
		}
		at := findRows(files[i].Snapshot, ids)
		for _, u := range unplaced {
			n := len(cands[u.ci].ids)
			for y, row := range at[:n] {
				if row >= 0 {
					ex, id := &rr.LostExamples[u.ex], cands[u.ci].ids[y]
					ex.Row, ex.Op, ex.Key = row, id.Op, hex.EncodeToString(id.Key)
					break
				}
			}
			at = at[n:]
		}
	}
	return lost, lostRaw, raw
}

// maxInputIDs bounds engine.inputIDs.
const maxInputIDs = 64

// inputIDs returns the operators and keys an output row of operator op
// and key key may have had in the input: its own, and those the rules'
// remap_operator and rename_slot steps, undone from the last to the
// first, lead back to (a remap into an operator that had rows of its own
// leaves both). At most maxInputIDs, the first ones found.
func (e *engine) inputIDs(op uint64, key []byte) []savepoint.Row {
	ids := []savepoint.Row{{Op: op, Key: key}}
	for i := len(e.steps) - 1; i >= 0 && len(ids) < maxInputIDs; i-- {
		r := e.steps[i].rule
		for _, id := range ids[:len(ids):len(ids)] {
			switch {
			case r.RemapOperator != nil && id.Op == r.RemapOperator.To.ID:
				ids = append(ids, savepoint.Row{Op: r.RemapOperator.From.ID, Key: id.Key})
			case r.RenameSlot != nil && id.Op == r.RenameSlot.Op.ID:
				k := savepoint.ParseKey(id.Key)
				if k.Kind != savepoint.KindKeyed || !k.HasSlot || string(k.Slot) != r.RenameSlot.To {
					continue
				}
				old := append(append(append([]byte{id.Key[0]}, r.RenameSlot.From...), '|'), k.UserKey...)
				ids = append(ids, savepoint.Row{Op: id.Op, Key: old})
			}
		}
	}
	return ids[:min(len(ids), maxInputIDs)]
}

// findRows returns for each of ids the first row of the input snapshot s
// of its operator and key, or -1 when s holds none: by binary search when
// s is strictly ordered, else in one pass over its keys, which stops once
// each is found.
func findRows(s *savepoint.Snapshot, ids []savepoint.Row) []int {
	at := make([]int, len(ids))
	for j := range at {
		at[j] = -1
	}
	cur := s.NewCursor()
	if _, strict := s.Order(); strict {
		for j, id := range ids {
			if x := lowerBound(cur, id.Op, id.Key); x < cur.Len() && compareRow(cur.Op(x), cur.Key(x), id.Op, id.Key) == 0 {
				at[j] = x
			}
		}
		return at
	}
	want, left := byID(ids), len(ids)
	cur.EachKeyIn(0, cur.Len(), func(row int, op uint64, key []byte) bool {
		if js, ok := want[op][string(key)]; ok {
			for _, j := range js {
				at[j] = row
			}
			delete(want[op], string(key))
			left -= len(js)
		}
		return left > 0
	})
	return at
}

// sortedRows is what lowerBound searches: rows in canonical order (an
// output's or an input's).
type sortedRows interface {
	Len() int
	Op(i int) uint64
	Key(i int) []byte
}

// lowerBound returns the first row of rs not below (op, key).
func lowerBound(rs sortedRows, op uint64, key []byte) int {
	return sort.Search(rs.Len(), func(y int) bool { return compareRow(rs.Op(y), rs.Key(y), op, key) >= 0 })
}

// compareRow orders rows canonically: by operator, then by key bytes.
func compareRow(aOp uint64, a []byte, bOp uint64, b []byte) int {
	if c := cmp.Compare(aOp, bOp); c != 0 {
		return c
	}
	return bytes.Compare(a, b)
}

// newFileCounts adds up the parts' rows per operator and slot of each of
// the m new files; nil unless every part counted them.
func newFileCounts(parts []rescalePart, m int) []*slotCounts {
	for _, p := range parts {
		if p.counts == nil {
			return nil
		}
	}
	counts := make([]*slotCounts, m)
	for x := range counts {
		counts[x] = &slotCounts{}
		for _, p := range parts {
			p.counts[x].each(func(k slotKey, n int64) { counts[x].addKey(k, n) })
		}
	}
	return counts
}

// sortOutLogged is sortOut from the output's runLog: the keys are not read,
// and the rows each new file gets are counted by operator and slot.
func sortOutLogged(out *outRows, o oldFile) rescalePart {
	runLogUses.Add(1)
	p := rescalePart{own: map[uint64]bool{}, counts: make([]*slotCounts, o.newG.Count)}
	for x := range p.counts {
		p.counts[x] = &slotCounts{}
	}
	j := 0
	for _, r := range out.log.runs {
		switch {
		case r.kg < 0:
			for k := j; k < j+r.n; k++ {
				p.opRows = append(p.opRows, out.Row(k))
			}
		default:
			if x := o.keyed(&p, r.op, r.kg, j, r.n); x >= 0 {
				p.counts[x].addN(r.op, r.slot, r.hasSlot, int64(r.n))
			}
		}
		j += r.n
	}
	return p
}

// mergedRows is a new file of a rescale: references to runs of rows of the
// old files' outputs and to its operator rows, in canonical order. It is a
// savepoint.RunSource, so the writer streams it from the inputs, a run at
// a time.
type mergedRows struct {
	olds  []*outRows
	ops   []savepoint.Row
	refs  []mref
	ends  []int       // ends[k]: the row just after refs[k]
	hints regionHints // the run last found, per region of rows
}

// mref is a run of n rows: positions pos.. of old output src, or, for
// src == len(olds), operator rows pos.. of ops.
type mref struct {
	src    int32
	pos, n uint32
}

func (m *mergedRows) Len() int {
	if len(m.ends) == 0 {
		return 0
	}
	return m.ends[len(m.ends)-1]
}

func (m *mergedRows) add(src, pos, n int) {
	if n == 0 {
		return
	}
	if k := len(m.refs) - 1; k >= 0 && int(m.refs[k].src) == src && int(m.refs[k].pos+m.refs[k].n) == pos {
		m.refs[k].n += uint32(n)
		m.ends[k] += n
		return
	}
	m.refs = append(m.refs, mref{int32(src), uint32(pos), uint32(n)})
	m.ends = append(m.ends, m.Len()+n)
}

// ref returns the run holding row i and i's offset in it.
func (m *mergedRows) ref(i int) (mref, int) {
	h := m.hints.at(i, m.Len())
	k := int(h.Load())
	if !(k < len(m.ends) && i < m.ends[k] && (k == 0 || i >= m.ends[k-1])) {
		k = sort.SearchInts(m.ends, i+1)
		h.Store(int32(k))
	}
	start := 0
	if k > 0 {
		start = m.ends[k-1]
	}
	return m.refs[k], i - start
}

func (m *mergedRows) at(i int) (*outRows, int) {
	r, off := m.ref(i)
	if int(r.src) < len(m.olds) {
		return m.olds[r.src], int(r.pos) + off
	}
	return nil, int(r.pos) + off
}

// Row returns row i.
func (m *mergedRows) Row(i int) savepoint.Row {
	o, p := m.at(i)
	if o != nil {
		return o.Row(p)
	}
	return m.ops[p]
}

// Op returns the operator of row i.
func (m *mergedRows) Op(i int) uint64 {
	o, p := m.at(i)
	if o != nil {
		return o.Op(p)
	}
	return m.ops[p].Op
}

// Key returns the key of row i.
func (m *mergedRows) Key(i int) []byte {
	o, p := m.at(i)
	if o != nil {
		return o.Key(p)
	}
	return m.ops[p].Key
}

// Value returns the value of row i.
func (m *mergedRows) Value(i int) []byte {
	o, p := m.at(i)
	if o != nil {
		return o.Value(p)
	}
	return m.ops[p].Value
}

// Run returns the rows from i on that are consecutive unmodified rows of
// one input batch (see savepoint.RunSource).
func (m *mergedRows) Run(i int) (*savepoint.Batch, int, int, bool) {
	r, off := m.ref(i)
	if int(r.src) >= len(m.olds) {
		return nil, 0, 0, false
	}
	b, lo, n, ok := m.olds[r.src].Run(int(r.pos) + off)
	return b, lo, min(n, int(r.n)-off), ok
}

// mergeSorted merges sorted sequences (the spans of positions of each old
// output, in order, and the canonical operator rows) into one canonical
// sequence of runs. The sequences hold no duplicates of each other: keyed
// rows come from their key group's single owner, and operator keys are
// merged. Each step takes from the sequence with the least next row all its
// rows (of the current span) below the least next row of the others.
func mergeSorted(olds []*outRows, pos []rowIndex, ops []savepoint.Row, release func()) *mergedRows {
	m := &mergedRows{olds: olds, ops: ops}
	type cursor struct {
		spans []span
		k     int // current span
		off   int // rows of it taken
	}
	seqs := make([]cursor, len(olds)+1)
	for s := range olds {
		seqs[s].spans = pos[s].spans
	}
	if len(ops) > 0 {
		seqs[len(olds)].spans = []span{{0, uint32(len(ops))}}
	}
	// The old outputs' keys are read with pread: a key read through the
	// map faults in the pages around it (on some virtual machines a
	// quarter of a millisecond a fault, and each take reads a few keys).
	kcs := make([]savepoint.KeyColumns, len(olds))
	row := func(s, p int) (uint64, []byte) {
		if s < len(olds) {
			return olds[s].opKey(p, &kcs[s])
		}
		return ops[p].Op, ops[p].Key
	}
	less := func(aOp uint64, aKey []byte, bOp uint64, bKey []byte) bool {
		return aOp < bOp || aOp == bOp && bytes.Compare(aKey, bKey) < 0
	}
	head := func(s int) (uint64, []byte, bool) {
		c := &seqs[s]
		if c.k >= len(c.spans) {
			return 0, nil, false
		}
		op, key := row(s, int(c.spans[c.k].start)+c.off)
		return op, key, true
	}
	pace := savepoint.NewPacer(0, releaseRows+1)
	for {
		best, second := -1, -1
		var bOp, sOp uint64
		var bKey, sKey []byte
		for s := range seqs {
			op, k, ok := head(s)
			if !ok {
				continue
			}
			switch {
			case best < 0 || less(op, k, bOp, bKey):
				second, sOp, sKey = best, bOp, bKey
				best, bOp, bKey = s, op, k
			case second < 0 || less(op, k, sOp, sKey):
				second, sOp, sKey = s, op, k
			}
		}
		if best < 0 {
			return m
		}
		c := &seqs[best]
		sp := c.spans[c.k]
		from := int(sp.start) + c.off
		left := int(sp.n) - c.off
		n := left
		if second >= 0 {
			// The rows of a span are sorted: the first one not below the
			// other sequences' least row ends the take. Spans of different
			// old files rarely interleave (each holds the key groups its
			// subtask owned): the span's last row is looked at first.
			if op, key := row(best, from+left-1); !less(op, key, sOp, sKey) {
				n = 1 + sort.Search(left-1, func(x int) bool {
					op, key := row(best, from+1+x)
					return !less(op, key, sOp, sKey)
				})
			}
		}
		m.add(best, from, n)
		if c.off += n; c.off == int(sp.n) {
			c.k, c.off = c.k+1, 0
		}
		if pace.Due(m.Len()) {
			// The keys compared stay cached, not resident: those of the
			// input (release) and those of the old outputs, which are
			// sorted copies of the inputs that were out of order.
			release()
			for _, o := range olds {
				o.release()
			}
		}
	}
}

// opCopy is one old subtask's copy of an operator-state row.
type opCopy struct {
	old   int
	value []byte
}

func opKey(r savepoint.Row) string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], r.Op)
	return string(b[:]) + string(r.Key)
}

// mergeOperator applies clink's merge rule to the copies of one
// operator-state key: all equal, that value; all 8 bytes, the greatest signed
// int64; otherwise clink's pairwise rule folded in old subtask order, as its
// scale-down restore merges the parents: the later copy, unless both are 8
// bytes (then the greater) — the highest old subtask's copy unless 8-byte
// copies follow the last longer or shorter one. A choice between differing
// values is returned for the report. release is called with the old
// subtask of each copy of savepoint.LargeValueBytes or more, once compared.
func mergeOperator(id savepoint.Row, copies []opCopy, release func(old int)) ([]byte, *MergeChoice) {
	// The distinct values, each as one copy's (not a copy of its bytes as
	// a map key: a broadcast state of 50 MB in each of 16 old files took
	// 800 MB so).
	var distinct [][]byte
	// Only operator state (first key byte 128 or more) keeps the greater
	// of two 8-byte values; the empty key, which clink's merge does not
	// take for operator state (format 1.6), keeps the later copy.
	opState := id.IsOperatorState()
	all8 := opState
	for _, c := range copies {
		if !slices.ContainsFunc(distinct, func(d []byte) bool { return bytes.Equal(d, c.value) }) {
			distinct = append(distinct, c.value)
		}
		all8 = all8 && len(c.value) == 8
		if len(c.value) >= savepoint.LargeValueBytes {
			release(c.old) // its pages compared stay cached, not resident
		}
	}
	last := copies[len(copies)-1]
	if len(distinct) == 1 {
		return last.value, nil
	}
	mc := &MergeChoice{Op: id.Op, Key: savepoint.RenderKey(id.Key), Values: len(distinct)}
	if all8 {
		best := copies[0]
		for _, c := range copies[1:] {
			if int64(binary.LittleEndian.Uint64(c.value)) > int64(binary.LittleEndian.Uint64(best.value)) {
				best = c
			}
		}
		mc.Rule, mc.FromOld = "greater-int64", best.old
		if isSourceOffset(id.Key) {
			mc.Warning = fmt.Sprintf("op %d key %s: the source offsets of the old subtasks differ; the greatest (%d, subtask %d) is kept, as clink's merge does, which hands every new subtask the furthest position any old one reached (format 10.4)", id.Op, mc.Key, int64(binary.LittleEndian.Uint64(best.value)), best.old)
		}
		return best.value, mc
	}
	best := copies[0]
	for _, c := range copies[1:] {
		if savepoint.IncomingWins(savepoint.Row{Key: id.Key, Value: best.value}, savepoint.Row{Key: id.Key, Value: c.value}) {
			best = c
		}
	}
	mc.Rule, mc.FromOld = "highest-subtask", best.old
	if best.old != last.old {
		mc.Rule = "greater-int64"
	}
	mc.Warning = fmt.Sprintf("op %d key %s: %d different values across the old subtasks (%s); the copy of subtask %d is kept (clink's merge in subtask order: the later copy, the greater of two 8-byte ones), where clink would pick one in directory order (format 10.4)", id.Op, mc.Key, len(distinct), savepoint.DifferingCopiesWhy(id.Key), best.old)
	return best.value, mc
}

// isSourceOffset recognises the fixed-key source offsets of clink's sources
// (format 2.1), for which greater-wins is a silent skip.
func isSourceOffset(key []byte) bool {
	return bytes.Contains(key, []byte("source_offset")) || bytes.Contains(key, []byte("_cdc_pos")) || bytes.Contains(key, []byte("source.cursor"))
}

// timer is one timer of a blob.
// splitTimers merges the timer blobs of one operator from every old subtask
// of a group and splits them by the key group of each timer's key: each new
// subtask gets exactly the timers of its range. A timer in the blob of an old
// subtask that did not own its key's group is a stale copy (left by an
// unfiltered restore of a chained subtask, format 10.2) and is dropped,
// unless its owner has no blob and this one is the last: a restore gives
// such an owner the others' blobs, merged, and it keeps the timers of its
// range; unions is false for a tree whose restore takes no operator rows
// from other subtasks (changelog+file, format 1.7), where such an owner
// restores no timer and the timer is stale too. Identical timers are kept
// once, so none fires twice. It returns how many timers each new blob
// holds; a blob that does not decode is an error naming its file (files
// are the group's old files, by subtask from g.First).
func splitTimers(id savepoint.Row, copies []opCopy, g, newG savepoint.Group, files []*savepoint.File, unions bool, blobs [][]byte, rr *RescaleReport) ([]int64, error) {
	type dk struct {
		event bool
		ts    int64
		key   string
	}
	seen := map[dk]bool{}
	// Timers of an owner without a blob, in a blob other than the last:
	// unchosen unless the last, or another blob firing them, holds them.
	unchosen := map[dk]bool{}
	proc := make([][]savepoint.Timer, len(blobs))
	event := make([][]savepoint.Timer, len(blobs))
	// A subtask without a blob of its own restores the others', merged
	// (the later copy kept), and keeps the timers of its range from it
	// (format 5.3 step 4, 10.2); with unions false, none.
	hasBlob := map[int]bool{}
	for _, c := range copies {
		hasBlob[c.old] = true
	}
	last := copies[len(copies)-1].old
	for _, c := range copies {
		p, e, err := savepoint.ParseTimers(c.value)
		if err != nil {
			return nil, savepoint.WithFile(files[c.old-g.First].Path, fmt.Errorf("op %d timer blob %s of old subtask %d: %w", id.Op, savepoint.RenderKey(id.Key), c.old, err))
		}
		for domain, list := range [][]savepoint.Timer{p, e} {
			for _, t := range list {
				rr.TimersIn++
				kg := savepoint.KeyGroupOf(t.Key)
				k := dk{domain == 1, t.Time, string(t.Key)}
				if !savepoint.TimerFires(g, c.old, t.Key, func(o int) bool { return hasBlob[o] }, unions && c.old == last) {
					if unions && !hasBlob[g.Owner(kg)] && !unchosen[k] {
						unchosen[k] = true
					} else {
						rr.TimersStale++
					}
					continue
				}
				if seen[k] {
					rr.TimersStale++
					continue
				}
				seen[k] = true
				dst := newG.Owner(kg) - newG.First
				if domain == 0 {
					proc[dst] = append(proc[dst], t)
				} else {
					event[dst] = append(event[dst], t)
				}
				rr.TimersOut++
			}
		}
	}
	for k := range unchosen {
		if seen[k] {
			rr.TimersStale++ // kept from the blob the owner restores
		} else {
			rr.TimersUnchosen++
		}
	}
	for i := range blobs {
		sortTimers(proc[i])
		sortTimers(event[i])
		blobs[i] = savepoint.EncodeTimers(proc[i], event[i])
	}
	counts := make([]int64, len(blobs))
	for i := range counts {
		counts[i] = int64(len(proc[i]) + len(event[i]))
	}
	return counts, nil
}

// describeLayout renders groups and parallelisms for messages.
func describeLayout(rr *RescaleReport) string {
	var parts []string
	for _, g := range rr.Groups {
		part := fmt.Sprintf("%d-%d (p=%d) -> %d-%d (p=%d)", g.OldFirst, g.OldFirst+g.OldParallelism-1, g.OldParallelism, g.NewFirst, g.NewFirst+g.NewParallelism-1, g.NewParallelism)
		if g.Action == "copy" {
			part += " unchanged"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

// rescaled reports whether some group of rr changes its parallelism: the
// report's keyed, operator and timer counts are those of such groups.
func (rr *RescaleReport) rescaled() bool {
	return slices.ContainsFunc(rr.Groups, func(g RescaleGroupReport) bool { return g.Action != "copy" })
}
