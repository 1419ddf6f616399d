package savepoint

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
)

// NumKeyGroups is clink's compile-time number of key groups (kNumKeyGroups).
// A stored key whose first byte is below NumKeyGroups is a keyed row of that
// key group as far as a narrowed restore is concerned; a first byte of
// NumKeyGroups or more marks operator state.
const NumKeyGroups = 128

// FNV-1a 64-bit parameters used by clink's key_groups.hpp.
const (
	fnvOffset64 = 0xcbf29ce484222325
	fnvPrime64  = 0x100000001b3
)

// FNV1a64 returns the 64-bit FNV-1a hash of b (offset basis
// 0xcbf29ce484222325, prime 0x100000001b3): for each byte, h ^= b; h *= prime.
// It is clink's fnv1a_64_key.
func FNV1a64(b []byte) uint64 {
	h := uint64(fnvOffset64)
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime64
	}
	return h
}

// KeyGroupOf returns the key group of a user key: FNV1a64(userKey) % 128.
// userKey is the key codec's output only, never the slot or the stored key.
// Record routing and the stored key-group byte both use this function.
func KeyGroupOf(userKey []byte) int {
	return int(FNV1a64(userKey) % NumKeyGroups)
}

// keyGroupsIn sets kgs[t] to the key group (KeyGroupOf) of the user key of
// key t of a column, keys[offs[t]+skip : offs[t+1]] (skip: the bytes of the
// stored key before its user key), for t from 0 to len(offs)-2. Four keys of
// one length are hashed at once (keyGroups4: validate of a sorted file of
// 10M rows spent a quarter of its time in KeyGroupOf).
func keyGroupsIn(keys []byte, offs []int32, skip int32, kgs []uint8) {
	n := len(offs) - 1
	t := 0
	for ; t+4 <= n; t += 4 {
		kgs[t], kgs[t+1], kgs[t+2], kgs[t+3] = keyGroups4(keys[offs[t]+skip:offs[t+1]], keys[offs[t+1]+skip:offs[t+2]],
			keys[offs[t+2]+skip:offs[t+3]], keys[offs[t+3]+skip:offs[t+4]])
	}
	for ; t < n; t++ {
		kgs[t] = uint8(KeyGroupOf(keys[offs[t]+skip : offs[t+1]]))
	}
}

// keyGroups4 returns the key groups of four user keys. Each byte of a key
// is a multiply that waits for the one before; four keys of one length are
// hashed in one loop, where their multiplies overlap. Keys of other lengths
// are hashed one by one.
func keyGroups4(a, b, c, d []byte) (uint8, uint8, uint8, uint8) {
	if len(b) != len(a) || len(c) != len(a) || len(d) != len(a) {
		return uint8(KeyGroupOf(a)), uint8(KeyGroupOf(b)), uint8(KeyGroupOf(c)), uint8(KeyGroupOf(d))
	}
	b, c, d = b[:len(a)], c[:len(a)], d[:len(a)]
	ha, hb, hc, hd := uint64(fnvOffset64), uint64(fnvOffset64), uint64(fnvOffset64), uint64(fnvOffset64)
	for j := range a {
		ha = (ha ^ uint64(a[j])) * fnvPrime64
		hb = (hb ^ uint64(b[j])) * fnvPrime64
		hc = (hc ^ uint64(c[j])) * fnvPrime64
		hd = (hd ^ uint64(d[j])) * fnvPrime64
	}
	return uint8(ha % NumKeyGroups), uint8(hb % NumKeyGroups), uint8(hc % NumKeyGroups), uint8(hd % NumKeyGroups)
}

// SubtaskForKeyGroup returns the subtask index (within its operator) that
// owns key group kg at the given parallelism: floor(kg*p/128). A parallelism
// of zero or less yields 0, as clink's subtask_for_key_group does for p=0.
// Other arguments are taken to be in range (0 <= kg < 128, parallelism at
// most MaxParallelism): outside it the result is the formula's, no subtask.
func SubtaskForKeyGroup(kg, parallelism int) int {
	if parallelism <= 0 {
		return 0
	}
	return kg * parallelism / NumKeyGroups
}

// KeyGroupRange is a half-open range [First, Last) of key groups, clink's
// KeyGroupRange. The full range is {0, 128}.
type KeyGroupRange struct {
	First, Last int
}

// KeyGroupRangeForSubtask returns the key groups owned by subtask i at the
// given parallelism: [ceil(i*128/p), ceil((i+1)*128/p)). It is the exact
// inverse of SubtaskForKeyGroup: kg lies in KeyGroupRangeForSubtask(i, p)
// iff SubtaskForKeyGroup(kg, p) == i. At a parallelism above 128 some
// subtasks get an empty range. A parallelism of zero or less yields the
// empty range [0,0). Other arguments are taken to be in range (0 <= i <
// parallelism <= MaxParallelism): outside it the result is the formula's,
// not a range of key groups.
func KeyGroupRangeForSubtask(i, parallelism int) KeyGroupRange {
	if parallelism <= 0 {
		return KeyGroupRange{}
	}
	p := parallelism
	return KeyGroupRange{
		First: (i*NumKeyGroups + p - 1) / p,
		Last:  ((i+1)*NumKeyGroups + p - 1) / p,
	}
}

// Contains reports whether First <= kg < Last.
func (r KeyGroupRange) Contains(kg int) bool { return r.First <= kg && kg < r.Last }

// Empty reports whether the range holds no key group.
func (r KeyGroupRange) Empty() bool { return r.Last <= r.First }

// String formats the range as "[First,Last)", e.g. "[0,32)".
func (r KeyGroupRange) String() string {
	return "[" + strconv.Itoa(r.First) + "," + strconv.Itoa(r.Last) + ")"
}

// Kind classifies a stored key in sptool's row model.
type Kind uint8

const (
	// KindKeyed is a keyed-state row: first byte < 128 (the key group) and a
	// '|' separator at index 1 or later.
	KindKeyed Kind = iota
	// KindOperator is an operator-state row: first byte >= 128 (0xFF for
	// rows written by clink's operator-state API).
	KindOperator
	// KindRaw is anything else: the empty key, or a first byte < 128 with no
	// separator (legacy unprefixed keys such as unaligned-checkpoint buffers).
	KindRaw
)

// String returns "keyed", "operator" or "raw".
func (k Kind) String() string {
	switch k {
	case KindKeyed:
		return "keyed"
	case KindOperator:
		return "operator"
	case KindRaw:
		return "raw"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// RawSlot is the pseudo-slot name clink's tooling shows for keys without a
// slot separator (timer blobs, source offsets, 2PC handles, legacy keys).
const RawSlot = "<raw>"

// KeySeparator is the byte between the slot and the user key of a stored key.
const KeySeparator = '|'

// Key is a stored key split into its parts (see ParseKey). The byte slices
// alias the stored key.
type Key struct {
	// Kind classifies the row.
	Kind Kind
	// KeyGroup is the first byte for keyed rows; -1 for operator and raw rows.
	KeyGroup int
	// Slot is the slot name (bytes between the first byte and the separator)
	// when HasSlot is true; nil otherwise (shown as RawSlot).
	Slot []byte
	// HasSlot reports that a '|' separator was found at index 1 or later.
	HasSlot bool
	// UserKey is the bytes after the separator. Without a separator it is
	// the whole stored key for raw rows, and the logical key after the
	// marker byte for operator rows.
	UserKey []byte
}

// separatorIndex returns the index of the first '|' at index >= 1, or -1.
// Keys shorter than 2 bytes never have a separator (clink's collect_entries).
func separatorIndex(stored []byte) int {
	if len(stored) < 2 {
		return -1
	}
	i := bytes.IndexByte(stored[1:], KeySeparator)
	if i < 0 {
		return -1
	}
	return i + 1
}

// ParseKey splits a stored key the way clink's tooling does (section 2.5 of
// the format: the separator is the first '|' at index >= 1, only for keys of
// two bytes or more) and classifies it:
//
//   - first byte < 128 with a separator: KindKeyed, KeyGroup = first byte,
//     Slot = bytes [1, sep), UserKey = bytes after sep;
//   - first byte >= 128: KindOperator, KeyGroup = -1; with a separator Slot
//     and UserKey split as for keyed rows (a broadcast row 0xFF slot '|'
//     has an empty UserKey); without one, no slot and UserKey = the logical
//     key after the marker byte (e.g. "__kafka_off__:3" for 0xFF
//     "__kafka_off__:3");
//   - anything else (empty key, first byte < 128 without separator):
//     KindRaw, KeyGroup = -1, no slot, UserKey = the whole stored key.
//
// Note that clink's own tools show key_group 0 for pipe-less keys and the
// real first byte (255) for operator rows with a pipe; CollectEntryKey
// reproduces that view exactly.
func ParseKey(stored []byte) Key {
	sep := separatorIndex(stored)
	switch {
	case len(stored) > 0 && stored[0] >= NumKeyGroups:
		k := Key{Kind: KindOperator, KeyGroup: -1}
		if sep >= 0 {
			k.HasSlot = true
			k.Slot = stored[1:sep:sep]
			k.UserKey = stored[sep+1:]
		} else {
			k.UserKey = stored[1:]
		}
		return k
	case sep >= 0:
		return Key{
			Kind:     KindKeyed,
			KeyGroup: int(stored[0]),
			Slot:     stored[1:sep:sep],
			HasSlot:  true,
			UserKey:  stored[sep+1:],
		}
	default:
		return Key{Kind: KindRaw, KeyGroup: -1, UserKey: stored}
	}
}

// KeyedPrefixLen returns the length of the prefix (key group, slot and
// separator) of a stored key that ParseKey reads as a keyed row's, or 0
// for any other key: the Key's parts without the Key, for loops over
// millions of rows.
func KeyedPrefixLen(stored []byte) int {
	if len(stored) == 0 || stored[0] >= NumKeyGroups {
		return 0
	}
	return separatorIndex(stored) + 1
}

// keySlot returns the kind and slot of a stored key as ParseKey reads
// them, without the Key: a Key returned and then kept in a variable is
// copied through the stack, and the loads after the copy wait for it (a
// third of inspect's count of each group of rows, over rows in clink's
// order).
func keySlot(stored []byte) (kind Kind, slot []byte, hasSlot bool) {
	sep := separatorIndex(stored)
	switch {
	case len(stored) > 0 && stored[0] >= NumKeyGroups:
		if sep >= 0 {
			return KindOperator, stored[1:sep:sep], true
		}
		return KindOperator, nil, false
	case sep >= 0:
		return KindKeyed, stored[1:sep:sep], true
	}
	return KindRaw, nil, false
}

// SlotName returns the slot as a string, or RawSlot ("<raw>") when the key
// has no separator.
func (k Key) SlotName() string {
	if !k.HasSlot {
		return RawSlot
	}
	return string(k.Slot)
}

// ShowSlot returns the slot as messages and reports show it (QuoteSlot:
// quoted, or 0x and its hex), or RawSlot unquoted when the key has no
// separator, so that a slot named "<raw>" reads apart from those keys.
func (k Key) ShowSlot() string {
	if !k.HasSlot {
		return RawSlot
	}
	return QuoteSlot(k.Slot)
}

// CollectEntryKey splits a stored key exactly as clink's collect_entries
// (state_diff.hpp, used by state-cat, state-diff and the Parquet export)
// does: without a separator the slot is "<raw>", the user key is the whole
// stored key and the key group is 0; with one, the slot is bytes [1, sep),
// the user key the bytes after it and the key group the first byte (255 for
// operator rows with a pipe).
func CollectEntryKey(stored []byte) (keyGroup int, slot string, userKey []byte) {
	sep := separatorIndex(stored)
	if sep < 0 {
		return 0, RawSlot, stored
	}
	return int(stored[0]), string(stored[1:sep]), stored[sep+1:]
}

// OperatorMarker is the first byte of the operator-state rows operator
// code reads and writes (StateBackend::put_operator_state, BroadcastState).
const OperatorMarker = 0xFF

// IsBroadcastKey reports whether stored is the key of broadcast state:
// OperatorMarker, a slot and one '|', which ends the key (format 2.1).
func IsBroadcastKey(stored []byte) bool {
	sep := separatorIndex(stored)
	return sep >= 0 && sep == len(stored)-1 && stored[0] == OperatorMarker
}

// EncodeBroadcastKey builds the stored key of a slot's broadcast state:
// OperatorMarker slot '|'.
func EncodeBroadcastKey(slot []byte) []byte {
	out := make([]byte, 0, 2+len(slot))
	out = append(out, OperatorMarker)
	out = append(out, slot...)
	return append(out, KeySeparator)
}

// EncodeKeyedKey builds the stored key of a keyed-state row:
// [KeyGroupOf(userKey)] slot '|' userKey. The slot is not validated; check
// it with ValidSlotName first.
func EncodeKeyedKey(slot, userKey []byte) []byte {
	out := make([]byte, 0, 2+len(slot)+len(userKey))
	out = append(out, byte(KeyGroupOf(userKey)))
	out = append(out, slot...)
	out = append(out, KeySeparator)
	return append(out, userKey...)
}

// ValidSlotName checks a keyed-state slot name the way clink's KeyedState
// does: it must not contain '|' or '\n'. The empty name and any other bytes
// (non-UTF-8 included) are allowed. The error names the offending byte and
// its index.
func ValidSlotName(slot []byte) error {
	for i, c := range slot {
		switch c {
		case '|':
			return fmt.Errorf("invalid slot name %q: byte %d is '|' (the key separator, not allowed in a slot name)", slot, i)
		case '\n':
			return fmt.Errorf("invalid slot name %q: byte %d is '\\n' (not allowed in a slot name)", slot, i)
		}
	}
	return nil
}

// RestoreKeyGroup returns the key group clink's narrowed restore filters a
// row on: for a non-empty key whose first byte is below 128 it is that byte
// (filtered = true); operator rows (first byte >= 128) and the empty key are
// never filtered (-1, false). Raw keys with a printable first byte are
// filtered like keyed rows of that key group.
func RestoreKeyGroup(stored []byte) (kg int, filtered bool) {
	if len(stored) == 0 || stored[0] >= NumKeyGroups {
		return -1, false
	}
	return int(stored[0]), true
}

// PrefixWords returns the first 16 bytes of b, zero-padded, as two
// little-endian words: a short prefix of a key (a slot name, a key group
// and slot) compared, or hashed, as two words instead of as bytes.
func PrefixWords(b []byte) (uint64, uint64) {
	switch {
	case len(b) >= 16:
		return binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
	case len(b) >= 8:
		return binary.LittleEndian.Uint64(b), partialWord(b[8:])
	}
	return partialWord(b), 0
}

// partialWord is the little-endian word of b (up to 8 bytes), zero-padded.
// When b's capacity holds 8 bytes (a slot's part of a key, the user key
// after it), they are loaded as one word and masked: byte by byte, the
// plan lookup of each row in clink's order took 40-65 ms of the CPU of
// 10M rows.
func partialWord(b []byte) uint64 {
	if n := len(b); n < 8 && cap(b) >= 8 {
		return binary.LittleEndian.Uint64(b[:8]) & (1<<(8*n) - 1)
	}
	var w uint64
	for i := len(b) - 1; i >= 0; i-- {
		w = w<<8 | uint64(b[i])
	}
	return w
}

// PrefixHash mixes an operator and a prefix of n bytes whose PrefixWords
// are w0 and w1 into 64 bits, for tables looked up by (op, prefix): their
// top bits pick an entry.
func PrefixHash(op, w0, w1 uint64, n int) uint64 {
	return (op ^ w0*0x9e3779b97f4a7c15 ^ w1*0xc2b2ae3d27d4eb4f ^ uint64(n)) * 0xff51afd7ed558ccd
}
