package savepoint

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// VersionEntry is one stamp of clink's state version map: the schema version
// of state type StateType of operator Op, optionally bound to a keyed-state
// slot (restore-time migration then only touches that slot's rows; an empty
// Slot means every row of the operator).
type VersionEntry struct {
	Op        uint64
	StateType string
	Version   uint32
	Slot      string
}

// VersionState is a version-map entry's version and slot as the JSON
// outputs give them (diff's changes, the report's version_map_changes):
// Slot "" for every row of the op, SlotHex the slot in hex when it is not
// valid UTF-8 (absent otherwise: HexUnlessUTF8).
type VersionState struct {
	Version uint32 `json:"version"`
	Slot    string `json:"slot"`
	SlotHex string `json:"slot_hex,omitempty"`
}

// State returns e's version and slot.
func (e VersionEntry) State() *VersionState {
	return &VersionState{Version: e.Version, Slot: e.Slot, SlotHex: HexUnlessUTF8(e.Slot)}
}

// VersionMap is clink's StateVersionMap, the value of the
// clink.state_versions schema metadata key. Entries are keyed by
// (Op, StateType) and kept sorted by Op (numeric) then StateType (bytewise),
// the order Pack writes.
//
// The zero value is an empty map. VersionMap has value semantics: the
// mutating methods never write into storage shared with a copy.
type VersionMap struct {
	entries []VersionEntry
}

// ErrSlotConflict is wrapped by the error Set returns when a state type is
// already bound to a different non-empty slot.
var ErrSlotConflict = errors.New("state type bound to another slot")

func compareEntryKey(e VersionEntry, op uint64, stateType string) int {
	if c := cmp.Compare(e.Op, op); c != 0 {
		return c
	}
	return strings.Compare(e.StateType, stateType)
}

func (m VersionMap) find(op uint64, stateType string) (int, bool) {
	return slices.BinarySearchFunc(m.entries, VersionEntry{}, func(e, _ VersionEntry) int {
		return compareEntryKey(e, op, stateType)
	})
}

// validateVersionEntry applies clink's set() character rules.
func validateVersionEntry(e VersionEntry) error {
	if strings.ContainsAny(e.StateType, "|\n") {
		return fmt.Errorf("state_type %q must not contain '|' or '\\n' (reserved for the packed form)", e.StateType)
	}
	if strings.ContainsAny(e.Slot, "|\n") {
		return fmt.Errorf("slot %q must not contain '|' or '\\n' (reserved for the packed form)", e.Slot)
	}
	return nil
}

// put stores e, replacing any entry with the same key, copy-on-write.
func (m *VersionMap) put(e VersionEntry) {
	i, found := m.find(e.Op, e.StateType)
	if found {
		m.entries = slices.Clone(m.entries)
		m.entries[i] = e
		return
	}
	out := make([]VersionEntry, 0, len(m.entries)+1)
	out = append(out, m.entries[:i]...)
	out = append(out, e)
	m.entries = append(out, m.entries[i:]...)
}

// Set stores e with the semantics of clink's StateVersionMap::set: the state
// type and slot must not contain '|' or '\n'; an existing entry for
// (Op, StateType) is replaced entirely (version and slot, so a slot-less
// entry replacing a slotted one leaves the entry slot-less) unless both the
// existing and the new slot are non-empty and differ, which is an error
// wrapping ErrSlotConflict.
func (m *VersionMap) Set(e VersionEntry) error {
	if err := validateVersionEntry(e); err != nil {
		return fmt.Errorf("set version of op %d: %w", e.Op, err)
	}
	if i, found := m.find(e.Op, e.StateType); found {
		if err := checkSlot(m.entries[i], e); err != nil {
			return err
		}
	}
	m.put(e)
	return nil
}

// checkSlot applies Set's slot rule to e replacing the entry existing of the
// same key: an error wrapping ErrSlotConflict when both have a slot and
// the slots differ.
func checkSlot(existing, e VersionEntry) error {
	if existing.Slot != "" && e.Slot != "" && existing.Slot != e.Slot {
		return fmt.Errorf("state_type %q is already bound to slot %q: %w", e.StateType, existing.Slot, ErrSlotConflict)
	}
	return nil
}

// Put stores e, replacing any entry for (Op, StateType) unconditionally
// (sptool's own set_version rule may rebind a state type to another slot).
// The state type and slot must not contain '|' or '\n'.
func (m *VersionMap) Put(e VersionEntry) error {
	if err := validateVersionEntry(e); err != nil {
		return fmt.Errorf("put version of op %d: %w", e.Op, err)
	}
	m.put(e)
	return nil
}

// Get returns the entry for (op, stateType).
func (m VersionMap) Get(op uint64, stateType string) (VersionEntry, bool) {
	if i, found := m.find(op, stateType); found {
		return m.entries[i], true
	}
	return VersionEntry{}, false
}

// Delete removes the entry for (op, stateType) and reports whether it existed.
func (m *VersionMap) Delete(op uint64, stateType string) bool {
	i, found := m.find(op, stateType)
	if !found {
		return false
	}
	m.entries = slices.Delete(slices.Clone(m.entries), i, i+1)
	return true
}

// RenameSlot rebinds every entry of op whose Slot is from to the slot to,
// and returns how many entries changed. Slot-less entries (which apply to
// every row of the operator) are never touched, so from == "" changes
// nothing. A to containing '|' or '\n' is refused (nothing changes, 0 is
// returned); validate it with ValidSlotName first. to == "" unbinds the
// entries, making them apply to every row of the operator.
func (m *VersionMap) RenameSlot(op uint64, from, to string) int {
	if from == "" || from == to || strings.ContainsAny(to, "|\n") {
		return 0
	}
	n := 0
	var out []VersionEntry
	for i, e := range m.entries {
		if e.Op == op && e.Slot == from {
			if out == nil {
				out = slices.Clone(m.entries)
			}
			out[i].Slot = to
			n++
		}
	}
	if out != nil {
		m.entries = out
	}
	return n
}

// RemapOp moves every entry of operator from to operator to. An entry of
// from whose state type already exists on to must be identical to it
// (same version and slot; the duplicate is dropped), otherwise RemapOp
// returns an error and leaves the map unchanged.
func (m *VersionMap) RemapOp(from, to uint64) error {
	if from == to {
		return nil
	}
	var moved []VersionEntry
	for _, e := range m.entries {
		if e.Op != from {
			continue
		}
		if cur, ok := m.Get(to, e.StateType); ok {
			if cur.Version != e.Version || cur.Slot != e.Slot {
				return fmt.Errorf("remap version stamps of op %d to op %d: state_type %q is already stamped on op %d with version %d slot %q (op %d has version %d slot %q)",
					from, to, e.StateType, to, cur.Version, cur.Slot, from, e.Version, e.Slot)
			}
			continue
		}
		e.Op = to
		moved = append(moved, e)
	}
	out := make([]VersionEntry, 0, len(m.entries))
	for _, e := range m.entries {
		if e.Op != from {
			out = append(out, e)
		}
	}
	out = append(out, moved...)
	slices.SortFunc(out, func(a, b VersionEntry) int { return compareEntryKey(a, b.Op, b.StateType) })
	m.entries = out
	return nil
}

// Len returns the number of entries.
func (m VersionMap) Len() int { return len(m.entries) }

// Entries returns a sorted copy of the entries.
func (m VersionMap) Entries() []VersionEntry { return slices.Clone(m.entries) }

// Equal reports whether both maps hold the same entries.
func (m VersionMap) Equal(o VersionMap) bool { return slices.Equal(m.entries, o.entries) }

// Pack returns the packed form clink writes (section 4.1): one line per
// entry in (op, state type) order, "<op>|<type>|<version>" or, when the
// entry has a slot, "<op>|<type>|<version>|<slot>", joined by '\n' with no
// trailing newline. An empty map packs to "" (the metadata key is then
// omitted).
func (m VersionMap) Pack() string {
	var b strings.Builder
	for i, e := range m.entries {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(strconv.FormatUint(e.Op, 10))
		b.WriteByte('|')
		b.WriteString(e.StateType)
		b.WriteByte('|')
		b.WriteString(strconv.FormatUint(uint64(e.Version), 10))
		if e.Slot != "" {
			b.WriteByte('|')
			b.WriteString(e.Slot)
		}
	}
	return b.String()
}

// String returns the packed form (see Pack).
func (m VersionMap) String() string { return m.Pack() }

// parseFromChars parses s as std::from_chars does for an unsigned integer
// that must consume the whole field: ASCII digits only (leading zeros
// allowed), no sign, no spaces, not empty, no overflow of bits.
func parseFromChars(s string, bits int) (uint64, error) {
	if s == "" {
		return 0, errors.New("empty")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("byte %d is %q, not a decimal digit", i, s[i])
		}
	}
	v, err := strconv.ParseUint(s, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("out of range for uint%d", bits)
	}
	return v, nil
}

// ParseVersionMap parses a packed version map with the exact acceptance of
// clink's StateVersionMap::unpack (section 4.2):
//
//   - "" is the empty map; lines are split on '\n' and empty lines skipped
//     (a trailing newline is fine);
//   - a line needs at least two '|'; a third '|' starts the optional slot,
//     which must not contain a further '|';
//   - op_id (uint64) and version (uint32) are plain decimal digits filling
//     the whole field: no sign, no space, not empty, no overflow; leading
//     zeros and version 0 are accepted; the state type may be empty;
//   - a '\r' of a CRLF line ending makes a 3-field line's version invalid
//     but becomes part of the slot of a 4-field line; "1|t|2|" has no slot;
//   - every line goes through Set: a duplicate (op, type) replaces the
//     earlier line (slot included) unless both slots are non-empty and
//     differ, which is an error.
//
// Errors name the 1-based line number and quote the line.
//
// The lines are collected, sorted by key once (line order within a key),
// and the rules applied in one pass: Set line by line would copy the map
// for each new key, in time quadratic in the number of entries.
func ParseVersionMap(packed string) (VersionMap, error) {
	type line struct {
		e    VersionEntry
		no   int
		text string
	}
	var lines []line
	var bad error // the first malformed line: Set would never see those after it
	for lineNo, text := range textLines(packed) {
		e, err := parseVersionLine(text)
		if err == nil {
			if err = validateVersionEntry(e); err != nil {
				err = fmt.Errorf("set version of op %d: %w", e.Op, err)
			}
		}
		if err != nil {
			bad = fmt.Errorf("parse version map line %d %q: %w", lineNo, text, err)
			break
		}
		lines = append(lines, line{e, lineNo, text})
	}
	slices.SortFunc(lines, func(a, b line) int {
		if c := compareEntryKey(a.e, b.e.Op, b.e.StateType); c != 0 {
			return c
		}
		return cmp.Compare(a.no, b.no)
	})
	// Each key's lines in order, as Set would see them: the last one wins,
	// unless one conflicts with the entry it replaces. The earliest
	// conflict, in line order, is the error Set would have stopped at.
	var entries []VersionEntry
	var conflict error
	conflictNo := 0
	for i := 0; i < len(lines); {
		j := i + 1 // lines[i:j] share a key
		for j < len(lines) && compareEntryKey(lines[j].e, lines[i].e.Op, lines[i].e.StateType) == 0 {
			j++
		}
		cur := lines[i].e
		for _, l := range lines[i+1 : j] {
			if err := checkSlot(cur, l.e); err != nil {
				if conflict == nil || l.no < conflictNo {
					conflict = fmt.Errorf("parse version map line %d %q: %w", l.no, l.text, err)
					conflictNo = l.no
				}
				break
			}
			cur = l.e
		}
		entries = append(entries, cur)
		i = j
	}
	if conflict != nil {
		return VersionMap{}, conflict
	}
	if bad != nil {
		return VersionMap{}, bad
	}
	return VersionMap{entries: slices.Clip(entries)}, nil
}

func parseVersionLine(line string) (VersionEntry, error) {
	p1 := strings.IndexByte(line, '|')
	if p1 < 0 {
		return VersionEntry{}, errors.New("missing '|' separator in line")
	}
	p2 := strings.IndexByte(line[p1+1:], '|')
	if p2 < 0 {
		return VersionEntry{}, errors.New("missing second '|' separator")
	}
	p2 += p1 + 1
	opStr, typeStr := line[:p1], line[p1+1:p2]
	verStr, slot := line[p2+1:], ""
	if p3 := strings.IndexByte(verStr, '|'); p3 >= 0 {
		verStr, slot = verStr[:p3], verStr[p3+1:]
		if strings.IndexByte(slot, '|') >= 0 {
			return VersionEntry{}, errors.New("too many '|' separators in line")
		}
	}
	op, err := parseFromChars(opStr, 64)
	if err != nil {
		return VersionEntry{}, fmt.Errorf("invalid op_id %q: %w", opStr, err)
	}
	ver, err := parseFromChars(verStr, 32)
	if err != nil {
		return VersionEntry{}, fmt.Errorf("invalid version %q: %w", verStr, err)
	}
	return VersionEntry{Op: op, StateType: typeStr, Version: uint32(ver), Slot: slot}, nil
}
