package transform

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sptool/sptool/internal/texttable"
	"github.com/sptool/sptool/savepoint"
)

// Report is what a run did: per rule, per file, per operator and slot, the
// version-map changes and the erasure audit. Its JSON form (snake_case) is a
// stable interface: fields are only ever added.
type Report struct {
	// Command is the command that made the report ("apply", "plan",
	// "rescale"), when its caller says (absent otherwise; sptool's
	// commands always say); the text form starts with it.
	Command string `json:"command,omitempty"`
	// DryRun is true for `plan` and `rescale --dry-run`: nothing was
	// written.
	DryRun bool `json:"dry_run"`
	// Input describes what was read, with a digest of every payload.
	Input Input `json:"input"`
	// Output describes what was written (nil, and absent from the JSON,
	// for a dry run).
	Output *Output `json:"output,omitempty"`
	// Rules identifies the rule file.
	Rules RulesInfo `json:"rules"`
	// RowsIn is every row read (for changelog files: the replayed state).
	// RowsIn = RowsOut + RowsDropped, always: each row read is carried
	// into the output or dropped. A run whose counts do not add up fails
	// with ErrAccounting and writes nothing.
	RowsIn int64 `json:"rows_in"`
	// RowsOut counts the rows read that the output holds, each once: with
	// a rescale, an operator row its merge kept once though it is written
	// into every new file of its group (RowsWritten counts those copies).
	RowsOut int64 `json:"rows_out"`
	// RowsDropped counts the rows read that the output does not hold: the
	// rows the rules dropped (PerRule; a rescale's rule drops the stale
	// and lost keyed copies it leaves out), the DuplicatesResolved, the
	// OrphanedCopies, and a
	// rescale's operator copies merged into one (Rescale.OperatorIn -
	// Rescale.OperatorDistinct).
	RowsDropped int64 `json:"rows_dropped"`
	// RowsWritten counts the rows of the output files: RowsOut, but for a
	// rescale's operator rows, each written into every new file of its
	// group (Rescale.OperatorOut of them).
	RowsWritten int64 `json:"rows_written"`
	// DuplicatesResolved counts rows that became duplicates of another row's
	// (op, key) (a remap with merge, a rename onto an existing slot, or
	// duplicates stored in a rewritten input file) and were resolved as
	// clink's restore does, but for the copies of timer blobs a merge
	// joined (see TimersMerged), whose timers the copy kept holds; they
	// are among RowsDropped.
	DuplicatesResolved int64 `json:"duplicates_resolved"`
	// OrphanedCopies counts the stale copies of a tree's keys (keyed rows
	// outside the file of the subtask owning their key group, legacy raw
	// keys not among them) dropped as their owner's output holds no row of
	// their key while its input held the key they had there: a rule that
	// decides by the row's value or subtask dropped the owner's copy and
	// kept them, or the owner's changelog erased the key in its log, which
	// its output does not keep.
	// The output would hold them with no owner copy, which a narrowed
	// restore drops and a chained subtask keeps (the key's older state).
	// They are among RowsDropped, and a warning says so; a rescale counts
	// its stale copies in Rescale instead.
	OrphanedCopies int64 `json:"orphaned_copies_dropped"`
	// TimersMerged counts the timers of the timer blobs that a
	// remap_operator (or rename_slot) with merge: true joined: a timer blob
	// is one value, and rather than keep one operator's blob whole (as a
	// restore resolves a duplicate) the copy kept holds the timers of every
	// blob that met there, identical ones once.
	TimersMerged int64 `json:"timers_merged"`
	// PerRule has one entry per rule, in file order.
	PerRule []*RuleStats `json:"per_rule"`
	// Slots counts rows per operator and slot before and after: the
	// befores add up to RowsIn, the afters to RowsWritten (a rescale's
	// operator rows count once in each new file). They are in the order
	// of their operator, then of their names' bytes, the keys without a
	// separator taken as the text <raw> and put after a slot of that name,
	// as export orders rows (inspect and diff list them after the named
	// slots instead).
	Slots []*SlotStats `json:"slots"`
	// Files reports each input file's fate.
	Files []*FileStats `json:"files"`
	// VersionMap lists the version-map entries that changed (job-wide view).
	VersionMap []VersionChange `json:"version_map_changes"`
	// Rescale details a rescale (nil, and absent from the JSON, without
	// one).
	Rescale *RescaleReport `json:"rescale,omitempty"`
	// Warnings are things the user should know (none make the run fail).
	Warnings []string `json:"warnings"`

	// pending are the parts of the report merge leaves to be put together
	// while the output is written (see Report.finish).
	pending []func()
}

// Input describes the savepoint read: its path as given, its kind
// ("file", "tree" or "generation") and backend ("file" or
// "changelog+file"), the Generation and Checkpoint of a tree or generation
// input (both absent for a file input, which has none: inspect and diff
// give 0 there), and its files, their bytes and digest.
type Input struct {
	Path       string `json:"path"`
	Kind       string `json:"kind"`
	Backend    string `json:"backend"`
	Generation int    `json:"generation,omitempty"`
	Checkpoint uint64 `json:"checkpoint,omitempty"`
	Files      int    `json:"files"`
	Bytes      int64  `json:"bytes"`
	// Digest is "crc32c:" followed by the CRC-32C of every payload's CRC in
	// file order, each followed by the CRCs of the materialisation files a
	// changelog+file payload references: it changes when any input byte
	// changes. Bytes counts those files too.
	Digest string `json:"digest"`
}

// MarshalJSON writes the checkpoint of a tree or generation input even when
// it is 0 (the id of clink's offline writer), so that an erasure's report
// names the checkpoint it erased from; a file input has none.
func (in Input) MarshalJSON() ([]byte, error) {
	type plain Input
	if in.Kind == "file" {
		return json.Marshal(plain(in))
	}
	return json.Marshal(struct {
		Path       string `json:"path"`
		Kind       string `json:"kind"`
		Backend    string `json:"backend"`
		Generation int    `json:"generation,omitempty"`
		Checkpoint uint64 `json:"checkpoint"`
		Files      int    `json:"files"`
		Bytes      int64  `json:"bytes"`
		Digest     string `json:"digest"`
	}(in))
}

// Output describes what was written.
type Output struct {
	Path  string `json:"path"`
	Files int    `json:"files"`
	Bytes int64  `json:"bytes"`
	// Digest is "crc32c:" followed by the CRC-32C of every payload's CRC
	// in file order, with the materialisation files', as Input.Digest; it
	// is not a file's CRC (the sidecar has that).
	Digest string `json:"digest"`
}

// RulesInfo identifies the rule file.
type RulesInfo struct {
	Source string `json:"source"`
	Digest string `json:"digest"`
}

// RuleStats counts what one rule did. Index is the rule's position in the
// file (from 1), Name its name (absent when it has none), Kind its kind
// ("drop_operator", "purge_keys", ..., "rescale") and Label how messages
// name it. Matched counts rows the rule applied to (in its scope, and its
// condition held; for keep, the rows whose expression did not hold, which
// it drops); Dropped and Changed what it did to them.
type RuleStats struct {
	Index   int    `json:"index"`
	Name    string `json:"name,omitempty"`
	Kind    string `json:"kind"`
	Label   string `json:"label"`
	Matched int64  `json:"matched"`
	Dropped int64  `json:"dropped"`
	Changed int64  `json:"changed"`
	// Purge is the erasure audit of a purge_keys rule (absent for the
	// other kinds).
	Purge *PurgeAudit `json:"purge,omitempty"`
	// Expired details a purge_expired rule (absent for the other kinds).
	Expired *ExpiredInfo `json:"expired,omitempty"`
	// VersionEntries counts files whose version map the rule changed
	// (absent when none).
	VersionEntries int64 `json:"version_map_files_changed,omitempty"`
	// EmptyWritten counts, for a set_value without erase_empty, the rows
	// written with an empty list or map (absent when none).
	EmptyWritten int64 `json:"empty_collections_written,omitempty"`
	// NonUTF8Changed counts, for a set_value of a string codec's slot,
	// the values it changed that were not valid UTF-8 before it (see the
	// warning; absent when none).
	NonUTF8Changed int64 `json:"non_utf8_values_changed,omitempty"`
}

// PurgeAudit is the record of an erasure: every listed key, whether rows of
// it were found and removed, and how many.
type PurgeAudit struct {
	// KeysListed counts the distinct keys the rule lists (a key listed
	// twice counts once, as it is purged once); KeysFile and KeysDigest
	// name its keys_file as given and the SHA-256 of its bytes (both
	// absent for keys listed in the rule file).
	KeysListed int    `json:"keys_listed"`
	KeysFile   string `json:"keys_file,omitempty"`
	KeysDigest string `json:"keys_file_sha256,omitempty"`
	// KeysFound and KeysNotFound count the listed keys found (rows or
	// timers of theirs removed) and not found.
	KeysFound    int `json:"keys_found"`
	KeysNotFound int `json:"keys_not_found"`
	// Found and NotFound list them, in the list's order (nil when the run
	// was asked for the counts alone: Options.KeyCountsOnly; each key as
	// its digest under Options.KeyDigests).
	Found    []KeyFound `json:"found"`
	NotFound []string   `json:"not_found"`
	// DigestKey is the hex SHA-256 of the secret the keys' digests are
	// keyed with (Options.KeyDigestKey): it names the secret without
	// giving it. Absent for keys listed as they are or by plain SHA-256.
	DigestKey string `json:"digest_key_sha256,omitempty"`
	// NotFoundHex gives, in hex, the keys of NotFound that are not valid
	// UTF-8, in NotFound's order: NotFound shows each as 0x and its hex,
	// which a text key written that way would read as too. Absent when
	// there are none, and under Options.KeyDigests.
	NotFoundHex []string `json:"not_found_hex,omitempty"`
	// Remaining counts the rows of listed keys, and their timers, that the
	// output holds in the rule's scope (see the README's purge_keys); a
	// rule scoped to a slot leaves the keys' timers, which TimersKept
	// counts, so its Remaining counts rows only.
	Remaining int64 `json:"rows_remaining"`
	// ElementsLeft counts the rows the purge passed over in the slots of
	// CompositeLooking: rows whose key is a listed key, 0x1F and an
	// element (as clink's expiring collections store their elements),
	// which it matched whole and so left. They are counted in the key
	// groups whose first key in the slot looks composite (a key the
	// purge's codec could hold, 8 bytes for int64 and uint64, 4 for
	// uint32, text for string, then
	// 0x1F and an element), which in a slot of clink's expiring
	// collections is all of them (a slot that mixes plain keys and
	// composite ones may hide some); Remaining does not count them.
	ElementsLeft int64 `json:"elements_left"`
	// CompositeLooking names the slots in the rule's scope, not declared
	// composite, whose keys look composite (a key, 0x1F, an element), as
	// the rule sees them: the purge matched their keys whole, so elements
	// of listed keys there are left (a warning says so too). Absent when
	// there are none.
	CompositeLooking []string `json:"composite_looking_slots,omitempty"`
	// TimersRemoved counts the timers of listed keys removed from operators'
	// timer blobs (a timer of an erased key would fire for it after restore).
	TimersRemoved int64 `json:"timers_removed"`
	// TimersKept counts, for a rule scoped to a slot, the timers of listed
	// keys in the output's timer blobs of the operators in scope (a timer
	// belongs to the key, not to a slot, so such a rule leaves them);
	// absent when 0.
	TimersKept int64 `json:"timers_kept,omitempty"`
	// Scope says, as text, which rows the rule looks at ("every row", or
	// its operator and slot).
	Scope string `json:"scope"`
	found map[int]*int64
	// scoped and slotScoped say whether the rule names an operator or a
	// slot, and a slot; moved, whether rules after it move its rows (the
	// audit then looks where they went too).
	scoped, slotScoped, moved bool
}

// remainingWhat says what Remaining counts: the rows and timers of listed
// keys the output holds in the rule's scope; a rule scoped to a slot leaves
// the keys' timers, which TimersKept counts, so its Remaining counts rows.
func (p *PurgeAudit) remainingWhat() string {
	switch {
	case !p.scoped:
		return "rows and timers of listed keys remaining"
	}
	where := "in its scope (" + p.Scope + ")"
	if p.moved {
		where += " and where the rules after it moved its rows"
	}
	if p.slotScoped {
		return "rows of listed keys remaining " + where
	}
	return "rows and timers of listed keys remaining " + where
}

// KeyFound is a purged key and the rows and timers removed for it (a key
// whose only data was timers is found too).
type KeyFound struct {
	// Key is the key as listed: an integer list's in decimal, a string
	// list's as its text, or, when it is not valid UTF-8, as 0x and its hex;
	// under Options.KeyDigests, "sha256:" and the hex SHA-256 of the key
	// as listed, or "hmac-sha256:" and its hex HMAC-SHA256 under
	// Options.KeyDigestKey.
	Key string `json:"key"`
	// KeyHex is the key's bytes in hex when it is not valid UTF-8 (Key
	// shows them as a text key "0x..." would read); absent otherwise.
	KeyHex string `json:"key_hex,omitempty"`
	// Rows and Timers count the rows and the timers removed for the key
	// (Timers absent when 0).
	Rows   int64 `json:"rows"`
	Timers int64 `json:"timers,omitempty"`
}

// ExpiredInfo details a purge_expired rule: AsOf, the rule's as_of in UTC
// with milliseconds ("2026-11-28T23:30:00.000Z"), AsOfMs the same in epoch
// milliseconds (a row whose stamp is at most it has expired), AsOfIsNow
// whether as_of was "now", and Slots the declared TTL slots it looked at,
// as text (`op 7 slot "seen"`, the slot Go-quoted).
type ExpiredInfo struct {
	AsOf      string `json:"as_of"`
	AsOfMs    int64  `json:"as_of_ms"`
	AsOfIsNow bool   `json:"as_of_is_now"`
	// ShortValues counts rows of TTL slots whose value has no 8-byte stamp
	// (left alone, as clink does).
	ShortValues int64    `json:"short_values_left"`
	Slots       []string `json:"slots"`
}

// SlotStats counts rows of one (operator, slot) before and after. SlotHex
// gives the slot in hex when it is not valid UTF-8 (absent otherwise:
// savepoint.HexUnlessUTF8). HasSlot is false for the rows of keys without
// a separator, whose Slot is savepoint.RawSlot ("<raw>"), as inspect's
// has_slot: a slot named "<raw>" has a line of its own, with HasSlot true.
type SlotStats struct {
	Op      uint64 `json:"op"`
	Slot    string `json:"slot"`
	SlotHex string `json:"slot_hex,omitempty"`
	HasSlot bool   `json:"has_slot"`
	Before  int64  `json:"before"`
	After   int64  `json:"after"`
}

// slotStats is the line of k, without counts.
func slotStats(k slotKey) *SlotStats {
	if k.noSlot {
		return &SlotStats{Op: k.op, Slot: savepoint.RawSlot}
	}
	return &SlotStats{Op: k.op, Slot: k.slot, SlotHex: savepoint.HexUnlessUTF8(k.slot), HasSlot: true}
}

// show is the slot as the text report names it, as inspect does
// (savepoint.QuoteSlot): quoted, or 0x and its hex, and <raw>, unquoted,
// for the keys without a separator.
func (s *SlotStats) show() string { return s.key().show() }

// key is the slotKey of s.
func (s *SlotStats) key() slotKey {
	if !s.HasSlot {
		return rawSlotKey(s.Op)
	}
	return slotKey{op: s.Op, slot: s.Slot}
}

// FileStats is one input file's fate: its subtask (-1 for a file input),
// its path and the path of the output file made of it, relative to the
// input's and the output's root (Output absent for a dry run, and for a
// file of a rescaled group, whose rows went to several new files), and
// its rows read and carried out.
type FileStats struct {
	Subtask int    `json:"subtask"`
	Input   string `json:"input"`
	Output  string `json:"output,omitempty"`
	RowsIn  int64  `json:"rows_in"`
	RowsOut int64  `json:"rows_out"`
	// Action is "rewrite" (re-encoded canonically), "copy" (byte for byte:
	// no rule changed anything in it) or "rescale" (its rows went to the
	// new subtasks' files; RowsOut counts those it sent, its stale and lost
	// keyed copies left out, its operator rows before merging).
	Action string `json:"action"`
}

// VersionChange is one version-map entry before and after ("" = absent;
// a slot in them is quoted). StateTypeHex gives the state type in hex when
// it is not valid UTF-8 (absent otherwise: savepoint.HexUnlessUTF8).
// BeforeEntry and AfterEntry give the same as values, for a program to
// read without parsing Before and After (each absent where the entry is).
type VersionChange struct {
	Op           uint64                  `json:"op"`
	StateType    string                  `json:"state_type"`
	StateTypeHex string                  `json:"state_type_hex,omitempty"`
	Before       string                  `json:"before"`
	After        string                  `json:"after"`
	BeforeEntry  *savepoint.VersionState `json:"before_entry,omitempty"`
	AfterEntry   *savepoint.VersionState `json:"after_entry,omitempty"`
}

// WriteText renders the report for a terminal.
func (r *Report) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	mode := r.Command
	switch {
	case mode == "" && r.DryRun:
		mode = "plan"
	case mode == "":
		mode = "apply"
	}
	if r.DryRun {
		mode += " (dry run: nothing written)"
	}
	ew.printf("%s: %s %s", mode, r.Input.Kind, savepoint.ShowName(r.Input.Path))
	if r.Input.Kind != "file" {
		ew.printf(" (generation %d, checkpoint %d, %s, %s backend)", r.Input.Generation, r.Input.Checkpoint, countOf(r.Input.Files, "file"), r.Input.Backend)
	}
	ew.printf("\nrules: %s (sha256 %s)\n", r.Rules.Source, short(r.Rules.Digest))
	ew.printf("rows: %d in, %d out, %d dropped", r.RowsIn, r.RowsOut, r.RowsDropped)
	// What the dropped are, but the rules' own drops.
	var among []string
	add := func(n int64, what string) {
		if n > 0 {
			among = append(among, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(r.DuplicatesResolved, "duplicates resolved")
	if r.OrphanedCopies == 1 {
		add(1, "stale copy left without an owner copy")
	} else {
		add(r.OrphanedCopies, "stale copies left without an owner copy")
	}
	if rr := r.Rescale; rr != nil {
		add(rr.StaleCopies-rr.StaleRaw, "stale keyed copies")
		add(rr.StaleRaw, "stale copies of legacy raw keys")
		add(rr.Lost-rr.LostRaw, "lost keyed copies")
		add(rr.LostRaw, "lost copies of legacy raw keys")
		add(rr.OperatorIn-rr.OperatorDistinct, "operator copies merged into one")
	}
	if len(among) > 0 {
		// Said outright when no rule dropped a row: the rule table's
		// dropped column is then all 0, and what was merged is no loss.
		none := ""
		if r.RowsDropped > 0 && !slices.ContainsFunc(r.PerRule, func(rs *RuleStats) bool { return rs.Dropped > 0 }) {
			none = "none by a rule: "
		}
		ew.printf(" (%s%s)", none, strings.Join(among, ", "))
	}
	if r.TimersMerged > 0 {
		ew.printf(", %d timers in the timer blobs a merge joined", r.TimersMerged)
	}
	if rr := r.Rescale; rr != nil && rr.rescaled() {
		ew.printf("; %d rows written (%d operator rows, each in every new file of its group)", r.RowsWritten, rr.OperatorOut)
	} else if rr != nil {
		ew.printf("; %d rows written", r.RowsWritten)
	}
	ew.printf("\n\n")
	count := texttable.Column{Min: 10, Right: true}
	perRule := texttable.New("", 1, texttable.Column{Min: 4}, texttable.Column{Min: 44}, count, count, count)
	perRule.Row("#", "rule", "matched", "dropped", "changed")
	for _, rs := range r.PerRule {
		perRule.Row(strconv.Itoa(rs.Index), strings.TrimPrefix(rs.Label, fmt.Sprintf("rule %d ", rs.Index)), itoa(rs.Matched), itoa(rs.Dropped), itoa(rs.Changed))
		if p := rs.Purge; p != nil {
			left := ""
			if len(p.CompositeLooking) > 0 && p.ElementsLeft > 0 {
				// Beside the 0 an auditor reads first: what is left is
				// not rows of the keys, but it is their data.
				left = fmt.Sprintf("; elements of listed keys left, not counted there: %d", p.ElementsLeft)
			}
			perRule.Text(fmt.Sprintf("     erasure: %d keys listed, %d found (%d rows removed), %d not found; %s: %d%s\n", p.KeysListed, p.KeysFound, rs.Dropped, p.KeysNotFound, p.remainingWhat(), p.Remaining, left))
			if len(p.CompositeLooking) > 0 {
				perRule.Text(fmt.Sprintf("     not counted as remaining: elements (key 0x1F element) of listed keys in %s, not declared composite, whose keys look composite: %d left by the purge in the key groups whose first key looks composite (see the warning)\n", strings.Join(p.CompositeLooking, ", "), p.ElementsLeft))
			}
			if p.TimersRemoved > 0 {
				perRule.Text(fmt.Sprintf("     %d timers of listed keys removed from timer blobs\n", p.TimersRemoved))
			}
			if p.TimersKept > 0 {
				perRule.Text(fmt.Sprintf("     %d timers of listed keys left in timer blobs (the rule is scoped to a slot)\n", p.TimersKept))
			}
		}
		if e := rs.Expired; e != nil {
			now := ""
			if e.AsOfIsNow {
				now = " (as_of: now, the time of this run)"
			}
			short := ""
			if e.ShortValues > 0 {
				short = fmt.Sprintf("; %d values without a stamp left alone", e.ShortValues)
			}
			perRule.Text(fmt.Sprintf("     expired as of %s%s in %s%s\n", e.AsOf, now, strings.Join(e.Slots, ", "), short))
		}
		if rs.VersionEntries > 0 {
			perRule.Text(fmt.Sprintf("     version map changed in %d file(s)\n", rs.VersionEntries))
		}
	}
	ew.table(perRule)
	if rr := r.Rescale; rr != nil {
		ew.printf("\nrescale: %s\n", describeLayout(rr))
		if !rr.rescaled() {
			// The counts are of the groups rescaled: none here.
			ew.printf("  no group changes its parallelism: each file keeps its rows, copied as it is or rewritten where a rule changed it (see files)\n")
		} else {
			of := ""
			if slices.ContainsFunc(rr.Groups, func(g RescaleGroupReport) bool { return g.Action == "copy" }) {
				of = " of the rescaled groups"
			}
			ew.printf("  keyed rows and legacy raw keys%s: %d in, %d written, %d stale copies dropped%s (their owner's input file holds the key, or its changelog erases it: the owner's state is the authoritative one)", of, rr.KeyedIn, rr.KeyedOut, rr.StaleCopies, rawAmong(rr.StaleRaw))
			if rr.Lost > 0 {
				ew.printf(", %d lost rows dropped%s (held only outside their owner's file: no restore at the old layout holds them)", rr.Lost, rawAmong(rr.LostRaw))
			}
			ew.printf("\n")
			for _, l := range rr.LostExamples {
				ew.printf("    lost: op %d key group %d key %s in %s (subtask %d; owner %d)\n", l.Op, l.KeyGroup, l.Key, l.where(), l.Subtask, l.Owner)
			}
			ew.printf("  operator rows%s: %d copies in, %d distinct after merging, %d written (each into every new file of its group)\n", of, rr.OperatorIn, rr.OperatorDistinct, rr.OperatorOut)
			if rr.TimersIn > 0 {
				ew.printf("  timers%s: %d in, %d written, %d stale or duplicate copies dropped", of, rr.TimersIn, rr.TimersOut, rr.TimersStale)
				if rr.TimersUnchosen > 0 {
					ew.printf(", %d dropped from blobs a restore may not read", rr.TimersUnchosen)
				}
				ew.printf("\n")
			}
			for _, m := range rr.Merges {
				in := ""
				if len(rr.Groups) > 1 {
					in = " in group " + m.Group
				}
				ew.printf("  merged op %d key %s%s: %d values, %s, from old subtask %d\n", m.Op, m.Key, in, m.Values, m.Rule, m.FromOld)
			}
			for _, o := range rr.Outputs {
				ew.printf("  new subtask %d: key groups [%d,%d), rows %d, timers %d\n", o.Subtask, o.KeyGroupStart, o.KeyGroupEnd, o.Rows, o.Timers)
			}
		}
	}
	if len(r.VersionMap) > 0 {
		ew.printf("\nversion map:\n")
		for _, v := range r.VersionMap {
			ew.printf("  op %d %q: %s -> %s\n", v.Op, v.StateType, orAbsent(v.Before), orAbsent(v.After))
		}
	}
	ew.printf("\n")
	slots := texttable.New("", 1, texttable.Column{Min: 22}, texttable.Column{Min: 28}, count, count)
	slots.Row("op", "slot", "before", "after")
	for _, s := range r.Slots {
		mark := ""
		if s.Before != s.After {
			mark = "*"
		}
		slots.Row(strconv.FormatUint(s.Op, 10), s.show(), itoa(s.Before), itoa(s.After), mark)
	}
	ew.table(slots)
	ew.printf("\nfiles:\n")
	files := texttable.New("  ", 1, texttable.Column{Min: 36}, texttable.Column{Min: 8}, texttable.Column{Min: 8, Right: true})
	for _, f := range r.Files {
		moved := ""
		if r.Rescale != nil && f.Output != "" && filepath.Base(filepath.Dir(f.Output)) != strconv.Itoa(f.Subtask) {
			moved = ", written as " + f.Output // a copy of a group a rescale moved
		}
		if f.Action == "rescale" {
			moved = " to the new subtasks" // its rows went into the new files listed above
		}
		files.Row(savepoint.ShowName(f.Input), f.Action, itoa(f.RowsIn), fmt.Sprintf("-> %d rows%s", f.RowsOut, moved))
	}
	ew.table(files)
	if r.Output != nil {
		ew.printf("\nwritten: %s (%s, %d bytes, digest %s)\n", savepoint.ShowName(r.Output.Path), countOf(r.Output.Files, "file"), r.Output.Bytes, r.Output.Digest)
	}
	for _, w := range r.Warnings {
		ew.printf("warning: %s\n", w)
	}
	return ew.err
}

func orAbsent(s string) string {
	if s == "" {
		return "(absent)"
	}
	return s
}

func short(d string) string {
	if len(d) > 16 {
		return d[:16]
	}
	return d
}

// itoa is n in decimal, for a cell of a table.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// table writes t, unless a write failed before.
func (e *errWriter) table(t *texttable.Table) {
	if e.err == nil {
		_, e.err = t.WriteTo(e.w)
	}
}

// countOf is n and what it counts, plural unless n is 1 ("1 file", "4 files").
func countOf(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// rawAmong says how many of the rows counted are legacy raw keys (first
// byte below 128, no slot; a restore filters them by key group as it does
// keyed rows, and inspect counts them apart): ", 4 of them legacy raw
// keys", or "" for none.
func rawAmong(n int64) string {
	switch n {
	case 0:
		return ""
	case 1:
		return ", 1 of them a legacy raw key"
	}
	return fmt.Sprintf(", %d of them legacy raw keys", n)
}
