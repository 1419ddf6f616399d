package savepoint

import (
	"cmp"
	"fmt"
	"slices"
)

// timerID is one timer of a blob: its domain, time and key.
type timerID struct {
	event bool
	time  int64
	key   string
}

func (t timerID) String() string {
	domain := "a processing"
	if t.event {
		domain = "an event"
	}
	return fmt.Sprintf("%s-time timer at %d for key %s", domain, t.time, RenderTimerKey([]byte(t.key)))
}

// timerCopy is one subtask's copy of an operator's timer blob.
type timerCopy struct {
	file   *File
	timers []timerID
}

// checkTimers checks the timer blobs of the operators each chain group
// runs (CheckTimers) and, with ValidateOptions.Parallelism M, what a job
// resubmitted at M would fire of them (CheckParallelism). perFile,
// legacyTimers and keyedOps are operatorRows': the blobs are the timer
// blobs among the operator rows and the legacy unprefixed ones. Which
// copies are live is blobLiveness's; a blob whose liveness is not known
// gets an info finding and no check.
func (v *validator) checkTimers(perFile, legacyTimers [][]Row, keyedOps []map[uint64]bool) {
	sp := v.sp
	unknown := map[blobID]bool{}
	live := sp.newBlobLiveness(keyedOps)
	blobRows := make([][]Row, len(perFile)) // each file's timer blobs
	for i, rows := range perFile {
		for _, r := range rows {
			if IsTimerBlob(r.Key) {
				blobRows[i] = append(blobRows[i], r)
			}
		}
		blobRows[i] = append(blobRows[i], legacyTimers[i]...)
	}
	// The distinct values of each blob in the whole tree, frozen copies
	// included: a subtask without a blob of its own gets one of them.
	values := map[blobID]map[string]bool{}
	for _, rows := range blobRows {
		for _, r := range rows {
			id := blobID{r.Op, string(r.Key)}
			if values[id] == nil {
				values[id] = map[string]bool{}
			}
			values[id][string(r.Value)] = true
		}
	}
	for _, g := range sp.Groups {
		if f := undecodableIn(sp.undecodable(), g); f != nil {
			v.treeFinding(SeverityInfo, CheckTimers, 0, nil, fmt.Sprintf("the timers of chain group %s are not checked: the payload of its subtask %d, %s, %s, and which timers a restore fires depends on every subtask's blob", FormatGroups([]Group{g}), f.Subtask, f.Rel, f.notRead()))
			continue
		}
		blobs := map[blobID][]timerCopy{}
		held := map[blobID]map[int]bool{} // the subtasks storing it, readable or not
		var order []blobID
		for i, f := range sp.Files {
			if !g.Contains(f.Subtask) {
				continue
			}
			for _, r := range blobRows[i] {
				switch live.state(g, r.Op) {
				case BlobFrozen:
					continue
				case BlobUnknown:
					if id := (blobID{r.Op, string(r.Key)}); !unknown[id] {
						unknown[id] = true
						v.treeFinding(SeverityInfo, CheckTimers, r.Op, r.Key, fmt.Sprintf("op %d timer blob %s: no chain group holds keyed rows of op %d, so which group runs it, and which copies of the blob fire, is not known (section 10.3): its timers are not checked", r.Op, RenderKey(r.Key), r.Op))
					}
					continue
				}
				k := blobID{r.Op, string(r.Key)}
				if held[k] == nil {
					held[k] = map[int]bool{}
					order = append(order, k)
				}
				held[k][f.Subtask] = true
				timers, trailing, err := parseTimerIDs(r.Value)
				if err != nil {
					v.add(Finding{Severity: SeverityError, Check: CheckTimers, File: f.Rel, Subtask: f.Subtask, Row: -1, Op: r.Op, Key: r.Key,
						Message: undecodableBlob(r.Op, r.Key, err)})
					continue
				}
				if trailing > 0 {
					v.add(Finding{Severity: SeverityWarning, Check: CheckTimers, File: f.Rel, Subtask: f.Subtask, Row: -1, Op: r.Op, Key: r.Key,
						Message: trailingBlob(r.Op, r.Key, trailing)})
				}
				blobs[k] = append(blobs[k], timerCopy{file: f, timers: timers})
			}
		}
		for _, k := range order {
			if len(blobs[k]) == 0 {
				continue // no copy decodes
			}
			v.checkTimerCopies(g, k.op, []byte(k.key), blobs[k], held[k], values[k])
		}
	}
}

// undecodableIn returns the first of files (that do not decode) in group
// g, nil when none is.
func undecodableIn(files []*File, g Group) *File {
	for _, f := range files {
		if g.Contains(f.Subtask) {
			return f
		}
	}
	return nil
}

// blobRestore is how a restore at the layout of chain group g takes the
// copies of one timer blob.
type blobRestore struct {
	g Group
	// unions: a subtask without a copy of its own restores one of the
	// others' (the operator-state union, format 5.3 step 4). Not with a
	// backend whose restore unions no operator rows (changelog on files),
	// nor for a legacy unprefixed blob, a raw row, which no union takes.
	unions bool
	// kg is the key group a restore filters a legacy unprefixed blob by
	// (its first byte, 95: format 2.1), -1 for a 0xFF-prefixed blob.
	kg int
}

// newBlobRestore returns how a restore at the layout of g takes the copies
// of the timer blob at key; unions is false for a backend whose restore
// unions no operator rows.
func newBlobRestore(g Group, key []byte, unions bool) blobRestore {
	kg, filtered := RestoreKeyGroup(key)
	if !filtered {
		kg = -1
	}
	return blobRestore{g: g, unions: unions && !filtered, kg: kg}
}

// legacy reports whether the blob is a legacy unprefixed one.
func (b blobRestore) legacy() bool { return b.kg >= 0 }

// keeper is the subtask whose copy of a legacy blob a narrowed restore
// keeps: the owner of key group kg.
func (b blobRestore) keeper() int { return b.g.Owner(b.kg) }

// keeps reports whether a narrowed restore of subtask s keeps its copy of
// the blob: every subtask keeps a prefixed blob, only the keeper a legacy
// one.
func (b blobRestore) keeps(s int) bool { return !b.legacy() || b.keeper() == s }

// undecodableBlob is the finding of a timer blob of op at key that does not
// decode (err), in a tree or in a single file.
func undecodableBlob(op uint64, key []byte, err error) string {
	return fmt.Sprintf("op %d timer blob %s does not decode (%v): a restore cannot read its timers", op, RenderKey(key), err)
}

// timerFires reports whether restore b fires timer t of copy c, one of
// copies (in subtask order): TimerFires, over the copies b keeps.
func timerFires(b blobRestore, copies []timerCopy, c *timerCopy, t timerID) bool {
	if !b.keeps(c.file.Subtask) {
		return false
	}
	hasBlob := func(s int) bool { return b.keeps(s) && timerCopyOf(copies, s) != nil }
	last := b.unions && c.file.Subtask == copies[len(copies)-1].file.Subtask
	return TimerFires(b.g, c.file.Subtask, []byte(t.key), hasBlob, last)
}

// firedTimers returns the timers of copies that restore b fires, each
// once.
func firedTimers(b blobRestore, copies []timerCopy) map[timerID]bool {
	fired := map[timerID]bool{}
	for i := range copies {
		for _, t := range copies[i].timers {
			if timerFires(b, copies, &copies[i], t) {
				fired[t] = true
			}
		}
	}
	return fired
}

// timerChoices returns the subtasks of group g without a blob of their own
// (held: the subtasks storing one) for which the blob's values in the tree
// hold different timers of their range: which of those a restore fires
// depends on the directory order of the union (format 5.3 step 4, 6.3). A
// value that does not decode is a choice of its own.
func timerChoices(g Group, held map[int]bool, values map[string]bool) []int {
	// Each value's timers of each subtask's range, as one string.
	var ranges []map[int]string
	for v := range values {
		timers, _, err := parseTimerIDs([]byte(v))
		if err != nil {
			ranges = append(ranges, nil)
			continue
		}
		slices.SortFunc(timers, func(a, b timerID) int { return cmp.Compare(a.String(), b.String()) })
		of := map[int]string{}
		for _, t := range timers {
			o := g.Owner(KeyGroupOf([]byte(t.key)))
			of[o] += t.String() + "\n"
		}
		ranges = append(ranges, of)
	}
	var open []int
	for s := g.First; s < g.First+g.Count; s++ {
		if held[s] {
			continue
		}
		seen := map[string]bool{}
		for _, of := range ranges {
			sig := "undecodable"
			if of != nil {
				sig = of[s]
			}
			seen[sig] = true
		}
		if len(seen) > 1 {
			open = append(open, s)
		}
	}
	return open
}

// parseTimerIDs decodes a timer blob into its timers, processing-time
// ones first, and returns how many bytes follow them.
func parseTimerIDs(b []byte) ([]timerID, int, error) {
	proc, event, trailing, err := ParseTimersTrailing(b)
	if err != nil {
		return nil, 0, err
	}
	ids := make([]timerID, 0, len(proc)+len(event))
	for domain, list := range [2][]Timer{proc, event} {
		for _, t := range list {
			ids = append(ids, timerID{domain == 1, t.Time, string(t.Key)})
		}
	}
	return ids, trailing, nil
}

// trailingBlob describes a timer blob that holds bytes after its timers.
func trailingBlob(op uint64, key []byte, n int) string {
	return fmt.Sprintf("op %d timer blob %s holds %d byte%s after its timers, which a restore ignores (clink's restore_from reads the two timer sets and stops): its timers are restored", op, RenderKey(key), n, plural(n, "", "s"))
}

// timerCopyOf returns the copy of subtask s, or nil (copies are in
// subtask order).
func timerCopyOf(copies []timerCopy, s int) *timerCopy {
	if i, ok := slices.BinarySearchFunc(copies, s, func(c timerCopy, s int) int { return cmp.Compare(c.file.Subtask, s) }); ok {
		return &copies[i]
	}
	return nil
}

// checkTimerCopies checks the copies of one operator's timer blob in the
// files of group g (held: the subtasks storing it, copies: those whose
// copy decodes); values are the blob's distinct values in the whole tree.
func (v *validator) checkTimerCopies(g Group, op uint64, key []byte, copies []timerCopy, held map[int]bool, values map[string]bool) {
	unions := v.sp.Backend.UnionsOperatorRows()
	b := newBlobRestore(g, key, unions)
	now := firedTimers(b, copies)
	if b.unions && len(values) > 1 {
		if open := timerChoices(g, held, values); len(open) > 0 {
			v.treeFinding(SeverityWarning, CheckTimers, op, key, fmt.Sprintf("op %d timer blob %s: subtask%s %s ha%s no blob of %s own, and the tree's copies of it hold different timers of %s range: a restore takes one from the other subtask directories in directory order (unspecified, section 6.3), so which of them fire depends on that order (sptool counts the last copy of the chain group, subtask %d's)",
				op, RenderKey(key), plural(len(open), "", "s"), JoinInts(open, ","), plural(len(open), "s", "ve"), plural(len(open), "its", "their"), plural(len(open), "its", "their"), copies[len(copies)-1].file.Subtask))
		}
	}
	// restores names the blob a restore of subtask o takes its timers from.
	restores := func(o int) string {
		switch {
		case !b.keeps(o):
			return fmt.Sprintf("keeps no copy of this legacy blob (a raw row, which a restore filters as key group %d and never unions: only subtask %d keeps its copy)", b.kg, b.keeper())
		case timerCopyOf(copies, o) != nil:
			return "restores its own blob"
		case b.unions:
			return fmt.Sprintf("has no blob and restores another subtask's, in directory order (counted as the last, subtask %d's)", copies[len(copies)-1].file.Subtask)
		}
		return "has no blob, and this backend's restore takes none of the others'"
	}
	for i := range copies {
		c := &copies[i]
		var stale, orphan, viaUnion int
		var orphanEx, unionEx timerID
		orphanOwner, unionOwner := -1, -1
		for _, t := range c.timers {
			switch {
			case timerFires(b, copies, c, t):
				// Fired by its owner: this subtask, or one without a blob
				// that takes this copy through the union. Then this copy's
				// subtask holds a timer of another's range: a narrowed
				// restore drops it here, a chained one fires it here too.
				// (An owner storing a blob that does not decode takes none
				// through the union: its own is reported.)
				if owner := g.Owner(KeyGroupOf([]byte(t.key))); b.keeps(c.file.Subtask) && !b.legacy() && owner != c.file.Subtask && !held[owner] {
					if viaUnion++; viaUnion == 1 {
						unionEx, unionOwner = t, owner
					}
				}
			case now[t]: // its owner fires it from another blob
				stale++
			default:
				if orphan++; orphan == 1 {
					orphanEx, orphanOwner = t, g.Owner(KeyGroupOf([]byte(t.key)))
				}
			}
		}
		where := fmt.Sprintf("op %d timer blob %s of subtask %d holds", op, RenderKey(key), c.file.Subtask)
		var orphanMsg, staleMsg string
		if b.keeps(c.file.Subtask) {
			rng := g.Range(c.file.Subtask)
			orphanMsg = fmt.Sprintf("%s %d timer%s outside its key-group range %s that no restore fires with their key's state (first: %s, owned by subtask %d, which %s, without it): a narrowed restore drops them here; a chained subtask, restored unfiltered, fires them here (section 10.2)",
				where, orphan, plural(orphan, "", "s"), rng, orphanEx, orphanOwner, restores(orphanOwner))
			staleMsg = fmt.Sprintf("%s %d stale timer%s outside its key-group range %s, which %s from the blob %s: a narrowed restore drops them; a chained subtask, restored unfiltered, fires them a second time here (section 10.2)",
				where, stale, plural(stale, "", "s"), rng, plural(stale, "its owner fires", "their owners fire"), plural(stale, "it restores", "they restore"))
		} else {
			// A copy of a legacy blob that a narrowed restore drops
			// whole: none of its timers fire from it.
			dropped := fmt.Sprintf("a restore filters this legacy unprefixed blob, a raw row, as key group %d, so a narrowed restore drops this copy and keeps only subtask %d's", b.kg, b.keeper())
			keeper := "which fires the timers of its own range alone"
			switch {
			case timerCopyOf(copies, b.keeper()) != nil:
			case held[b.keeper()]:
				keeper = "whose copy does not decode"
			default:
				keeper = "which holds none"
			}
			orphanMsg = fmt.Sprintf("%s %d timer%s that no restore fires with their key's state (first: %s, owned by subtask %d): %s, %s; a chained subtask, restored unfiltered, fires them here (format 2.1, section 10.2)",
				where, orphan, plural(orphan, "", "s"), orphanEx, orphanOwner, dropped, keeper)
			staleMsg = fmt.Sprintf("%s %d timer%s that subtask %d fires from its copy: %s; a chained subtask, restored unfiltered, fires them a second time here (format 2.1, section 10.2)",
				where, stale, plural(stale, "", "s"), b.keeper(), dropped)
		}
		if orphan > 0 {
			v.add(Finding{Severity: SeverityError, Check: CheckTimers, File: c.file.Rel, Subtask: c.file.Subtask, Row: -1, Op: op, Key: key, Message: orphanMsg})
		}
		if stale > 0 {
			v.add(Finding{Severity: SeverityWarning, Check: CheckTimers, File: c.file.Rel, Subtask: c.file.Subtask, Row: -1, Op: op, Key: key, Message: staleMsg})
		}
		if viaUnion > 0 {
			v.add(Finding{Severity: SeverityWarning, Check: CheckTimers, File: c.file.Rel, Subtask: c.file.Subtask, Row: -1, Op: op, Key: key,
				Message: fmt.Sprintf("%s %d timer%s outside its key-group range %s that %s through the union, having no blob of %s own (first: %s, owned by subtask %d): a narrowed restore drops them here; a chained subtask, restored unfiltered, fires them here as well, away from their key's state (section 10.2)",
					where, viaUnion, plural(viaUnion, "", "s"), g.Range(c.file.Subtask), plural(viaUnion, "its owner fires from this blob", "their owners fire from this blob"), plural(viaUnion, "its", "their"), unionEx, unionOwner)})
		}
	}
	m := v.opts.Parallelism
	base := v.startAt(g, m) // the group's new subtasks are v<G>/<base>...
	if m <= 0 || m == g.Count && base == g.First {
		return
	}
	bm := newBlobRestore(Group{First: base, Count: m}, key, unions)
	atM := firedTimers(bm, copies)
	var lost, gained int
	var lostEx, gainedEx timerID
	for t := range now {
		if !atM[t] {
			if lost++; lost == 1 || t.less(lostEx) {
				lostEx = t
			}
		}
	}
	for t := range atM {
		if !now[t] {
			if gained++; gained == 1 || t.less(gainedEx) {
				gainedEx = t
			}
		}
	}
	what := fmt.Sprintf("op %d timer blob %s: of the %d timers a restore at this layout fires, a job resubmitted at parallelism %d", op, RenderKey(key), len(now), m)
	if lost > 0 {
		why := "each subtask restores the timers of its new range from its own blob, and the blob of their new owner does not hold them (section 10.2); sptool rescale moves every timer to its new owner"
		if bm.legacy() {
			why = fmt.Sprintf("a restore filters this legacy unprefixed blob, a raw row, as key group %d, so at parallelism %d only subtask %d keeps its copy (if it holds one) and fires from it the timers of its new range alone (format 2.1, section 10.2)", bm.kg, m, bm.keeper())
		}
		v.treeFinding(SeverityError, CheckParallelism, op, key, fmt.Sprintf("%s loses %d (first: %s): %s", what, lost, lostEx, why))
	}
	if gained > 0 {
		v.treeFinding(SeverityWarning, CheckParallelism, op, key, fmt.Sprintf("op %d timer blob %s: a job resubmitted at parallelism %d fires %d stale timer%s that a restore at this layout does not (first: %s): their copies outside their subtask's range fall in its new range", op, RenderKey(key), m, gained, plural(gained, "", "s"), gainedEx))
	}
}

// less orders timers by domain, time and key (for a stable example).
func (t timerID) less(u timerID) bool {
	if t.event != u.event {
		return !t.event
	}
	if t.time != u.time {
		return t.time < u.time
	}
	return t.key < u.key
}
