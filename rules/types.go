package rules

import (
	"encoding/hex"
	"fmt"
	"reflect"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/sptool/sptool/internal/prefault"
	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/savepoint/codec"
)

// SupportedVersion is the only rule-file 'version' this package reads.
const SupportedVersion = 1

// DefaultMerge is the default of remap_operator's 'merge': refuse to merge
// into an operator that already has state.
const DefaultMerge = false

// DefaultPurgeCodec is the default of purge_keys' 'codec'.
const DefaultPurgeCodec = "string"

// MaxParallelism is the largest parallelism rescale accepts. Parallelisms
// above WarnParallelism are accepted with a warning: clink has 128 key
// groups, so the subtasks above 128 get no keyed state.
const (
	MaxParallelism  = savepoint.MaxParallelism
	WarnParallelism = 128
)

// Set is a compiled rule file: every expression compiled, every codec
// parsed, every keys file loaded. A Set is immutable after Parse returns
// and safe for concurrent use; evaluation state lives in the caller's
// *vm.VM. A nil *Set is a rule file with no slots and no rules to its
// methods.
type Set struct {
	// Version is the file's 'version' (always SupportedVersion).
	Version int
	// Slots are the 'slots:' declarations in file order.
	Slots []*SlotDecl
	// Rules are the rules in file order (Rules[i].Index == i+1).
	Rules []*Rule
	// Digest is the hex SHA-256 of the rule file's bytes.
	Digest string
	// Source is the rule file's name as given to Parse or Load.
	Source string
	// Warnings are the lint findings; they do not make the file invalid.
	Warnings []*Warning

	// slotIndex holds every name a declaration has anywhere in the
	// file: its own, and those rename_slot and remap_operator give it.
	slotIndex declIndex
}

// RescaleShorthand is the Source of the one-rule set that `sptool rescale`'s
// flags stand for: the rule is the command's, and messages about it name
// no rule of a file.
const RescaleShorthand = "(sptool rescale)"

// declIndex maps (op, slot name) to a slot declaration.
type declIndex map[uint64]map[string]*SlotDecl

func (x declIndex) put(op uint64, slot string, d *SlotDecl) {
	m := x[op]
	if m == nil {
		m = map[string]*SlotDecl{}
		x[op] = m
	}
	m[slot] = d
}

// get returns the declaration of (op, slot), held in bytes (no
// allocation), or nil (also from a nil index).
func (x *declIndex) get(op uint64, slot []byte) *SlotDecl {
	if x == nil {
		return nil
	}
	m := (*x)[op]
	if m == nil {
		return nil
	}
	return m[string(slot)]
}

// Check returns an error unless s is a rule set as Parse, ParseWithOptions
// or Load made it: each rule with the spec its Kind names and no other,
// compiled and checked with the rest of its file. transform.Run refuses
// any other set: a Set or Rule filled in by hand has no compiled
// expressions or declarations to run with. (A parsed Set is not to be
// changed either: its Digest and Source would name a file that says
// otherwise. Write the YAML, and parse it, to build rules in a program.)
func (s *Set) Check() error {
	const how = "rules are made by rules.Parse or rules.Load (build the rule file's YAML to make them in a program)"
	if s == nil || s.slotIndex == nil {
		return fmt.Errorf("the rule set was not made by parsing a rule file: %s", how)
	}
	for i, r := range s.Rules {
		if r == nil {
			return fmt.Errorf("rule %d is nil: %s", i+1, how)
		}
		specs := []any{r.Keep, r.Drop, r.DropOperator, r.RemapOperator, r.RenameSlot, r.DropSlot, r.PurgeKeys, r.PurgeExpired, r.SetValue, r.SetVersion, r.DropVersion, r.Rescale}
		set := 0
		for _, sp := range specs {
			if !reflect.ValueOf(sp).IsNil() {
				set++
			}
		}
		spec := reflect.ValueOf(r.Spec())
		if r.decls == nil || r.Index != i+1 || set != 1 || !spec.IsValid() || spec.IsNil() {
			return fmt.Errorf("rule %d (%s) is not as parsing a rule file makes it (its spec, index or compiled declarations): %s", i+1, r.Kind, how)
		}
	}
	return nil
}

// Rescale returns the rescale rule's spec, or nil when the file has none.
// A rescale rule is always the last rule.
func (s *Set) Rescale() *RescaleSpec {
	if s == nil {
		return nil
	}
	if n := len(s.Rules); n > 0 {
		return s.Rules[n-1].Rescale
	}
	return nil
}

// SlotDecl returns the declaration of (op, slot) under any of the names
// the file gives it, or nil when the slot is not declared. A declaration
// follows its slot through rename_slot and remap_operator rules: after
// `rename_slot: {op: 7, from: agg, to: agg_v2}` the declaration of
// (7, "agg") is also returned for (7, "agg_v2"). This is how export, diff
// and cat decode both sides of a migration; the rules themselves see each
// declaration under the names it has at their place (Rule.SlotDecl).
func (s *Set) SlotDecl(op uint64, slot string) *SlotDecl {
	if s == nil {
		return nil
	}
	return s.slotIndex[op][slot]
}

// ShowKey renders the user key of k, a key of operator op, for a message:
// as clink's tools render bytes (savepoint.RenderBytes, cut at 32 bytes)
// and, where the file declares the slot's key codec (not composite, nor
// bytes or int64, which the rendering shows) and the key decodes to other
// text than the rendering's, also as that codec reads it, since clink's
// rendering reads any 8 bytes as an int64: `0xffffffffffffffff (int64 -1)
// = uint64 18446744073709551615`.
func (s *Set) ShowKey(op uint64, k savepoint.Key) string {
	shown := savepoint.RenderBytes(k.UserKey, 32)
	if k.Kind != savepoint.KindKeyed {
		return shown
	}
	d := s.SlotDecl(op, k.SlotName())
	if d == nil || d.Broadcast || d.KeyCodec == nil || d.Composite {
		return shown
	}
	if name := d.KeyCodec.String(); name == "bytes" || name == "int64" {
		return shown // the rendering reads them so already
	}
	v, err := d.KeyCodec.Decode(k.UserKey)
	if err != nil {
		return shown
	}
	var text string
	switch v := v.(type) {
	case string:
		text = strconv.Quote(v)
	case []byte:
		text = "0x" + hex.EncodeToString(v)
	default:
		text = fmt.Sprint(v)
	}
	if text == shown {
		// A string key the rendering shows as its text already.
		return shown
	}
	if len(text) > 64 {
		cut := 64
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + "..."
	}
	return shown + " = " + d.KeyCodec.String() + " " + text
}

// SlotDecl returns the declaration of (op, slot) as rule r sees it: under
// the names it has at r's place in the file, before r applies. A name a
// later rename_slot or remap_operator moves a declaration to is not
// declared here, nor is one an earlier rule moved it away from.
func (r *Rule) SlotDecl(op uint64, slot []byte) *SlotDecl { return r.decls.get(op, slot) }

// SameDecls reports whether rules r and o see the same declarations under
// the same names (no rule between them renames or remaps a declared
// slot), so that a row decoded for one is decoded for the other.
func (r *Rule) SameDecls(o *Rule) bool { return r.decls == o.decls }

// OpRef names an operator by numeric id or by uid.
type OpRef struct {
	// ID is the operator id; for a uid it is savepoint.OperatorIDFromUID(UID).
	ID uint64
	// UID is the uid as written, "" when the id was given.
	UID string
}

// YAML returns the reference as a rule file writes it: "op: 7", or
// `uid: "enricher"`.
func (o OpRef) YAML() string {
	if o.UID != "" {
		return "uid: " + strconv.Quote(o.UID)
	}
	return "op: " + strconv.FormatUint(o.ID, 10)
}

// String returns "7", or `uid "enricher" (op 123…)` for a uid.
func (o OpRef) String() string {
	if o.UID != "" {
		return fmt.Sprintf("uid %q (op %d)", o.UID, o.ID)
	}
	return strconv.FormatUint(o.ID, 10)
}

// Scope restricts a rule to one operator and/or one slot. The zero Scope
// matches every row.
type Scope struct {
	// Op is the operator, nil for every operator.
	Op *OpRef
	// Slot is the slot name, nil for every slot. A slot scope matches only
	// rows that have a slot (keyed rows and slotted operator rows).
	Slot *string
}

// All reports whether the scope matches every row.
func (s Scope) All() bool { return s.Op == nil && s.Slot == nil }

// MatchOp reports whether op is in scope.
func (s Scope) MatchOp(op uint64) bool { return s.Op == nil || s.Op.ID == op }

// Match reports whether a row of op whose key has the given slot (hasSlot
// false for keys without a separator) is in scope.
func (s Scope) Match(op uint64, slot []byte, hasSlot bool) bool {
	if s.Op != nil && s.Op.ID != op {
		return false
	}
	if s.Slot != nil && (!hasSlot || string(slot) != *s.Slot) {
		return false
	}
	return true
}

// String describes the scope: "every row", "op 7", "op 7 slot \"agg\"",
// "slot \"agg\"".
func (s Scope) String() string {
	switch {
	case s.Op != nil && s.Slot != nil:
		return fmt.Sprintf("op %s slot %q", s.Op, *s.Slot)
	case s.Op != nil:
		return "op " + s.Op.String()
	case s.Slot != nil:
		return fmt.Sprintf("slot %q", *s.Slot)
	}
	return "every row"
}

// SlotDecl is one 'slots:' declaration: the codecs and TTL-ness of a
// keyed-state slot, which the snapshot does not record.
type SlotDecl struct {
	// Index is the 1-based position in 'slots:'.
	Index int
	// Line and Col locate the declaration in the rule file.
	Line, Col int
	// Op is the operator ('op' or 'uid').
	Op OpRef
	// Slot is the slot name.
	Slot string
	// KeyCodec decodes the user key; nil when not declared ('key' then is
	// the user key's raw bytes as a string).
	KeyCodec codec.Codec
	// ValueCodec decodes the value (after the TTL prefix); nil when not
	// declared ('value' then is the raw bytes).
	ValueCodec codec.Codec
	// TTL reports 'ttl: true': values carry an 8-byte expire-at prefix.
	TTL bool
	// Broadcast reports 'broadcast: true': the declaration describes the
	// slot's broadcast state, the operator row at key 0xFF slot '|'
	// (clink's BroadcastState), whose value ValueCodec decodes, instead of
	// its keyed rows; KeyCodec is nil, TTL and Composite false.
	Broadcast bool
	// Composite reports 'composite: true': the user key is K 0x1F element
	// (ExpiringMapState/ExpiringListState), so purge_keys also matches keys
	// that start with a listed key followed by 0x1F, and 'key' in
	// expressions is the whole composite key as a string.
	Composite bool

	keyType, valueType reflect.Type
	// checkEnv is the type expressions scoped to the slot are type-checked
	// against (see declCheckEnv).
	checkEnv reflect.Type
}

// String returns `op 7 slot "agg"`.
func (d *SlotDecl) String() string { return fmt.Sprintf("op %s slot %q", d.Op, d.Slot) }

// Describes reports whether d describes a row of its operator and slot
// whose stored key is stored, parsed as k: a keyed row, or for a
// 'broadcast: true' declaration the broadcast row (key 0xFF slot '|').
// Other rows of the slot's name (keyed rows of a broadcast slot, an
// operator row with a key after the '|') are read as bytes, as an
// undeclared slot's are.
func (d *SlotDecl) Describes(k savepoint.Key, stored []byte) bool {
	if d.Broadcast {
		return savepoint.IsBroadcastKey(stored)
	}
	return k.Kind == savepoint.KindKeyed
}

// KeyType returns the Go type 'key' has in expressions on this slot:
// string for undeclared, string, bytes and composite keys, else the key
// codec's decoded type (int64 for int64, …).
func (d *SlotDecl) KeyType() reflect.Type { return d.keyType }

// ValueType returns the Go type 'value' has in expressions on this slot:
// []byte when no value codec is declared, else the codec's decoded type
// (nil when it varies, as for optional<T>).
func (d *SlotDecl) ValueType() reflect.Type { return d.valueType }

// Rule is one compiled rule. Exactly one of the spec pointers is set: the
// one named by Kind.
type Rule struct {
	// Index is the 1-based position in 'rules:'.
	Index int
	// Name is the rule's 'name:', "" when it has none.
	Name string
	// Kind is the rule's kind.
	Kind Kind
	// Line and Col locate the rule's kind key in the rule file.
	Line, Col int

	// Keep is set for KindKeep.
	Keep *FilterSpec
	// Drop is set for KindDrop.
	Drop *FilterSpec
	// DropOperator is set for KindDropOperator.
	DropOperator *DropOperatorSpec
	// RemapOperator is set for KindRemapOperator.
	RemapOperator *RemapOperatorSpec
	// RenameSlot is set for KindRenameSlot.
	RenameSlot *RenameSlotSpec
	// DropSlot is set for KindDropSlot.
	DropSlot *DropSlotSpec
	// PurgeKeys is set for KindPurgeKeys.
	PurgeKeys *PurgeKeysSpec
	// PurgeExpired is set for KindPurgeExpired.
	PurgeExpired *PurgeExpiredSpec
	// SetValue is set for KindSetValue.
	SetValue *SetValueSpec
	// SetVersion is set for KindSetVersion.
	SetVersion *SetVersionSpec
	// DropVersion is set for KindDropVersion.
	DropVersion *DropVersionSpec
	// Rescale is set for KindRescale.
	Rescale *RescaleSpec

	// decls are the slot declarations under the names they have at the
	// rule's place (SlotDecl), shared by the rules that see the same.
	decls *declIndex
}

// Label identifies the rule in reports and errors: `rule 3 "purge-old"
// (purge_keys)`, or `rule 3 (purge_keys)` without a name.
func (r *Rule) Label() string {
	if r.Name != "" {
		return fmt.Sprintf("rule %d %q (%s)", r.Index, r.Name, r.Kind)
	}
	return fmt.Sprintf("rule %d (%s)", r.Index, r.Kind)
}

// Filter returns the spec of a keep or drop rule, nil for another kind.
func (r *Rule) Filter() *FilterSpec {
	if r.Keep != nil {
		return r.Keep
	}
	return r.Drop
}

// Spec returns the rule's spec pointer (the field named by Kind).
func (r *Rule) Spec() any {
	switch r.Kind {
	case KindKeep:
		return r.Keep
	case KindDrop:
		return r.Drop
	case KindDropOperator:
		return r.DropOperator
	case KindRemapOperator:
		return r.RemapOperator
	case KindRenameSlot:
		return r.RenameSlot
	case KindDropSlot:
		return r.DropSlot
	case KindPurgeKeys:
		return r.PurgeKeys
	case KindPurgeExpired:
		return r.PurgeExpired
	case KindSetValue:
		return r.SetValue
	case KindSetVersion:
		return r.SetVersion
	case KindDropVersion:
		return r.DropVersion
	case KindRescale:
		return r.Rescale
	}
	return nil
}

// FilterSpec is a keep or drop rule: `keep: EXPR`, or the scoped form
// `keep: {op|uid, slot, expr: EXPR}`. A scoped keep drops only the rows in
// scope for which the expression is false; rows out of scope pass
// untouched. A scoped drop drops rows in scope for which it is true.
type FilterSpec struct {
	// Expr is the expression's source.
	Expr string `yaml:"expr"`
	// Scope restricts the rule (scoped form only).
	Scope Scope `yaml:"-"`
	// Decl is the declaration of the scope's (op, slot) when both are given
	// and declared; the expression was then type-checked with 'key' and
	// 'value' of the slot's codec types.
	Decl *SlotDecl `yaml:"-"`
	// Predicate is the compiled expression.
	Predicate *Predicate `yaml:"-"`
}

// DropOperatorSpec is `drop_operator: {op|uid}`.
type DropOperatorSpec struct {
	// Op is the operator whose rows and version-map entries are dropped.
	Op OpRef `yaml:"op"`
}

// RemapOperatorSpec is `remap_operator: {from|from_uid, to|to_uid, merge}`.
type RemapOperatorSpec struct {
	// From is the operator whose rows move.
	From OpRef `yaml:"from"`
	// To is the operator id they move to.
	To OpRef `yaml:"to"`
	// Merge allows moving into an operator that already has state
	// (DefaultMerge: false). The engine enforces it; the rule carries it.
	Merge bool `yaml:"merge"`
}

// RenameSlotSpec is `rename_slot: {op|uid, from, to, merge}`.
type RenameSlotSpec struct {
	// Op is the operator.
	Op OpRef `yaml:"op"`
	// From is the current slot name.
	From string `yaml:"from"`
	// To is the new slot name; it passes savepoint.ValidSlotName and differs
	// from From.
	To string `yaml:"to"`
	// Merge allows renaming into a slot that already has rows (DefaultMerge:
	// false); a key held in both keeps one value, as restore resolves a
	// duplicate. The engine enforces it; the rule carries it.
	Merge bool `yaml:"merge"`
}

// DropSlotSpec is `drop_slot: {op|uid, slot}`.
type DropSlotSpec struct {
	// Op is the operator.
	Op OpRef `yaml:"op"`
	// Slot is the slot whose rows are dropped.
	Slot string `yaml:"slot"`
}

// PurgeKeysSpec is `purge_keys: {keys | keys_file, codec, op|uid, slot}`:
// drop every keyed row (in scope) whose user key is one of Keys, scanning
// every key group; in composite slots also the rows whose user key starts
// with a listed key followed by 0x1F.
type PurgeKeysSpec struct {
	// Scope restricts the purge; the zero scope purges everywhere.
	Scope Scope `yaml:"-"`
	// Codec is "string", or "int64", "uint64" or "uint32" (integer keys,
	// see KeyWidth); DefaultPurgeCodec: "string".
	Codec string `yaml:"codec"`
	// KeysFile is 'keys_file' as written, "" for an inline 'keys' list.
	KeysFile string `yaml:"keys_file"`
	// Path is the keys file's path, resolved against the rule file's
	// directory; "" for an inline list.
	Path string `yaml:"-"`
	// FileDigest is the hex SHA-256 of the keys file, "" for an inline list.
	FileDigest string `yaml:"-"`
	// Keys are the encoded user keys (int64 and uint64: 8 bytes
	// little-endian; uint32: 4) in file order, each once (Duplicates counts the repeats that were dropped).
	Keys []string `yaml:"-"`
	// Lines[i] is the 1-based line of Keys[i] in the keys file, or its
	// 1-based position in an inline list.
	Lines []int `yaml:"-"`
	// Duplicates is the number of listed keys that repeated an earlier one.
	Duplicates int `yaml:"-"`

	index  keyIndex
	filter keyFilter
	// encoded holds the encodings of an int64 keys file's keys end to
	// end, Keys' strings pointing into it (repeats included until
	// compactEncoded drops them); nil otherwise.
	encoded []byte
}

// initFilter sizes the filter for about n keys.
func (p *PurgeKeysSpec) initFilter(n int) {
	p.filter = newKeyFilter(n)
	// Filled at random: fresh pages would each fault when first written.
	prefault.Slice(p.filter.words)
}

// Len returns the number of distinct keys.
func (p *PurgeKeysSpec) Len() int { return len(p.Keys) }

// KeyWidth returns the bytes of each encoded key of an integer codec (8
// for int64 and uint64, 4 for uint32), 0 for the string codec.
func (p *PurgeKeysSpec) KeyWidth() int { return PurgeKeyWidth(p.Codec) }

// PurgeKeyWidth returns the bytes of each encoded key of a purge_keys
// codec: 8 for int64 and uint64, 4 for uint32, 0 for string (and any
// other name).
func PurgeKeyWidth(codec string) int {
	switch codec {
	case "int64", "uint64":
		return 8
	case "uint32":
		return 4
	}
	return 0
}

// Display returns key i as written: the string itself, or the decimal
// integer; a string that is not UTF-8 as 0x and its hex, which JSON keeps
// apart from another such key.
func (p *PurgeKeysSpec) Display(i int) string {
	k := p.Keys[i]
	if w := p.KeyWidth(); w > 0 && len(k) == w {
		var u uint64
		for j := w - 1; j >= 0; j-- {
			u = u<<8 | uint64(k[j])
		}
		if p.Codec == "int64" {
			return strconv.FormatInt(int64(u), 10)
		}
		return strconv.FormatUint(u, 10)
	}
	if !utf8.ValidString(k) {
		// JSON would show each invalid byte as U+FFFD, and two keys alike.
		return "0x" + hex.EncodeToString([]byte(k))
	}
	return k
}

// Lookup returns the index in Keys of a user key equal to userKey.
func (p *PurgeKeysSpec) Lookup(userKey []byte) (int, bool) {
	if p.filter.words == nil {
		return 0, false // no keys
	}
	h := keyHash(userKey)
	if !p.filter.mayHaveHash(h) {
		return 0, false
	}
	i, _ := find(&p.index, p.Keys, userKey, h)
	return i, i >= 0
}

// MayMatch reports false when userKey is surely not a listed key (a
// Bloom filter: no map lookup); true means it may be.
func (p *PurgeKeysSpec) MayMatch(userKey []byte) bool { return p.filter.mayHave(userKey) }

// MayMatchColumn calls fn(t) for each key t of a column of keys that may
// be listed, as MayMatch says, in order: key t is keys[offs[t]-base+skip :
// offs[t+1]-base] (offsets counted from base, skip bytes of prefix left
// out), for t from 0 to len(offs)-2.
// The scan of a purge asks it of every row.
func (p *PurgeKeysSpec) MayMatchColumn(keys []byte, offs []int32, base, skip int32, fn func(t int)) {
	f := &p.filter
	if f.words == nil {
		for t := 0; t+1 < len(offs); t++ {
			fn(t)
		}
		return
	}
	if len(offs) == 0 {
		return
	}
	// The 8-byte keys (int64 keys, the common case) a block at a time,
	// through a loop without a call, whose state stays in registers; the
	// others one by one.
	var hits [64]int32
	for t := 0; t+1 < len(offs); {
		n, x := f.scan8(keys, offs[t:], base, skip, &hits)
		for _, h := range hits[:x] {
			fn(t + int(h))
		}
		if t += n; x < len(hits) && t+1 < len(offs) {
			if f.mayHave(keys[offs[t]-base+skip : offs[t+1]-base]) {
				fn(t)
			}
			t++
		}
	}
}

// MayMatchWords calls fn(t) for each 8-byte user key t that may be
// listed, as MayMatch says, in order: key t is the 8 bytes of words[t] in
// big-endian order (savepoint.WordProbe).
func (p *PurgeKeysSpec) MayMatchWords(words []uint64, fn func(t int)) {
	f := &p.filter
	if f.words == nil {
		for t := range words {
			fn(t)
		}
		return
	}
	if f.nexact > 0 {
		e0, e1 := f.exact[0], f.exact[1]
		for t, w := range words {
			if w == e0 || w == e1 {
				fn(t)
			}
		}
		return
	}
	var hits [64]int32
	for t := 0; t < len(words); {
		n, x := f.scanWords(words[t:], &hits)
		for _, h := range hits[:x] {
			fn(t + int(h))
		}
		t += n
	}
}

// Match returns the index in Keys of the key that userKey matches: equal
// to it, or, when composite is true, equal to the bytes before some 0x1F
// byte of userKey (the composite key K 0x1F element of clink's expiring
// collections; K may itself contain 0x1F, so every 0x1F is tried, the
// last first: the longest listed key is the one matched).
func (p *PurgeKeysSpec) Match(userKey []byte, composite bool) (int, bool) {
	if i, ok := p.Lookup(userKey); ok {
		return i, true
	}
	if composite {
		// The longest listed key before a separator: with "x" and "x\x1fy"
		// both listed, the element "it" of "x\x1fy" is credited to it, not
		// to "x" (the audit would list "x\x1fy" as not found).
		for j := len(userKey) - 1; j >= 0; j-- {
			if userKey[j] == CompositeSeparator {
				if i, ok := p.Lookup(userKey[:j]); ok {
					return i, true
				}
			}
		}
	}
	return 0, false
}

// CompositeSeparator is the byte between the logical key and the element
// of a composite user key (docs/clink-format.md 3.3).
const CompositeSeparator = 0x1F

// PurgeExpiredSpec is `purge_expired: {as_of, op|uid, slot}`: drop the rows
// of declared TTL slots (in scope) whose expire-at stamp is <= AsOfMs.
type PurgeExpiredSpec struct {
	// Scope restricts the purge to one operator and/or slot.
	Scope Scope `yaml:"-"`
	// AsOfText is 'as_of' as written ("now", an RFC 3339 time, or epoch ms).
	AsOfText string `yaml:"as_of"`
	// AsOf is the instant, resolved at load time ("now" through
	// ParseOptions.Now).
	AsOf time.Time `yaml:"-"`
	// AsOfMs is AsOf in epoch milliseconds, the unit of TTL stamps.
	AsOfMs int64 `yaml:"-"`
	// Now reports 'as_of: now': the instant is the load time, which a report
	// should say.
	Now bool `yaml:"-"`
	// Targets are the declared TTL slots in scope, under the names they
	// have at this rule (after earlier rename_slot and remap_operator
	// rules); never empty.
	Targets []SlotTarget `yaml:"-"`
}

// SlotTarget is a declared slot under the (op, slot) name it has at some
// rule.
type SlotTarget struct {
	// Op and Slot are the names at the rule.
	Op   uint64
	Slot string
	// Decl is the declaration.
	Decl *SlotDecl
}

// Applies reports whether rows of (op, slot) are subject to the purge: the
// slot is one of Targets.
func (p *PurgeExpiredSpec) Applies(op uint64, slot []byte) bool {
	for _, t := range p.Targets {
		if t.Op == op && t.Slot == string(slot) {
			return true
		}
	}
	return false
}

// Expired reports whether a stamp is expired as of AsOfMs (inclusive, as
// clink decides).
func (p *PurgeExpiredSpec) Expired(expireAt int64) bool { return expireAt <= p.AsOfMs }

// SetValueSpec is `set_value: {op|uid, slot, expr}`.
type SetValueSpec struct {
	// Op is the operator.
	Op OpRef `yaml:"op"`
	// Slot is the slot; it is declared with a value codec.
	Slot string `yaml:"slot"`
	// Expr is the expression's source.
	Expr string `yaml:"expr"`
	// Decl is the slot's declaration.
	Decl *SlotDecl `yaml:"-"`
	// Program is the compiled expression, type-checked with 'key' and
	// 'value' of the slot's codec types.
	Program *ValueProgram `yaml:"-"`
	// EraseEmpty ('erase_empty: true', for a list or map codec) removes a
	// row whose new value is an empty list or map, as clink's ListState
	// and MapState erase such a key; without it the row is written and
	// counted (a ValueState may hold an empty collection).
	EraseEmpty bool `yaml:"erase_empty"`

	label string // the rule's Label, for run-time errors
	// text is set when the value codec is string, floats when it holds a
	// double anywhere, maps when it holds a map: what Apply checks a
	// result for (see there).
	text, floats, maps bool
}

// Text reports whether the slot's value codec is string: the expression
// sees the value as text, and string functions write each byte of it that
// is not UTF-8 as U+FFFD.
func (s *SetValueSpec) Text() bool { return s.text }

// SetVersionSpec is `set_version: {op|uid, state_type, version, slot}`.
type SetVersionSpec struct {
	// Op is the operator.
	Op OpRef `yaml:"op"`
	// StateType is the version-map state type.
	StateType string `yaml:"state_type"`
	// Version is the version to record.
	Version uint32 `yaml:"version"`
	// Slot binds the entry to a slot; "" when HasSlot is false.
	Slot string `yaml:"slot"`
	// HasSlot reports that 'slot' was given.
	HasSlot bool `yaml:"-"`
}

// DropVersionSpec is `drop_version: {op|uid, state_type}`.
type DropVersionSpec struct {
	// Op is the operator.
	Op OpRef `yaml:"op"`
	// StateType is the version-map state type whose entry is removed.
	StateType string `yaml:"state_type"`
}

// RescaleSpec is `rescale: {parallelism: M}` or
// `rescale: {groups: [{subtasks: "a-b", parallelism: M}, ...]}`.
type RescaleSpec struct {
	// Parallelism is the new parallelism of the single-group form; 0 when
	// Groups is used.
	Parallelism int `yaml:"parallelism"`
	// Groups are the chain groups of the groups form, in order of their
	// subtask ranges, which do not overlap.
	Groups []RescaleGroup `yaml:"groups"`
	// DropLost ('drop_lost: true') lets the rescale drop lost keyed rows:
	// rows held only outside the file of the subtask owning their key
	// group, which no restore at the old layout holds. Without it a
	// rescale that meets one fails, writing nothing: they usually mean the
	// tree was read at the wrong layout (a subtask directory missing, the
	// wrong chain groups).
	DropLost bool `yaml:"drop_lost"`
}

// RescaleGroup is one chain group of a rescale: the old global subtask
// indices First..Last (inclusive) are re-partitioned to Parallelism
// subtasks.
type RescaleGroup struct {
	// Subtasks is the range as written ("0-2" or "3").
	Subtasks string `yaml:"subtasks"`
	// First and Last are the inclusive bounds of the range.
	First, Last int `yaml:"-"`
	// Parallelism is the group's new parallelism.
	Parallelism int `yaml:"parallelism"`
	// Line and Col locate the group in the rule file.
	Line, Col int `yaml:"-"`
}

// Count returns the number of old subtasks in the group.
func (g RescaleGroup) Count() int { return g.Last - g.First + 1 }
