// Package rules reads sptool's rule files: the YAML language that declares
// slot codecs and the ordered rules applied to a savepoint's rows. It
// parses, validates and compiles a file in one call (Parse, Load) and hands
// the engine a compiled Set: every expression compiled and type-checked,
// every codec parsed, every keys file loaded, so that applying rules never
// meets an invalid one.
//
// # File
//
//	version: 1                     # required, and must be 1
//	slots:                         # optional declarations (the snapshot records no codecs)
//	  - {op: 7, slot: agg, key: int64, value: int64}
//	  - {op: 7, slot: seen, key: string, value: bytes, ttl: true}
//	  - {uid: enricher, slot: cart, key: string, ttl: true, composite: true}
//	  - {op: 42, slot: rules, value: string, broadcast: true}
//	rules:                         # applied in order; each row flows through every rule
//	  - name: drop the retired dedup operator      # optional
//	    drop_operator: {op: 12}
//	  - ...
//
// A slot declaration names its operator with 'op' (the numeric id) or 'uid'
// (hashed as clink does, savepoint.OperatorIDFromUID), never both; 'slot' is
// required and must pass savepoint.ValidSlotName (savepoint.RawSlot, as
// any key of a rule that names a slot, names the slot of that name, never
// the keys without a slot, which an expression's 'slot' shows as it too);
// 'key' and 'value' are codec
// specs (package savepoint/codec: bytes, string, int64, uint64, uint32,
// double, list<E>, map<K,V>, optional<T>, pair<A,B>); 'ttl: true' says values
// carry the 8-byte expire-at prefix; 'composite: true' says user keys are
// K 0x1F element (clink's expiring collections); 'broadcast: true' says the
// declaration describes the slot's broadcast state, the operator row at key
// 0xFF slot '|', instead of its keyed rows, and takes a 'value' codec only
// (SlotDecl.Describes); its name may hold '\n', which clink's
// BroadcastState accepts and its KeyedState refuses. Declaring the same (op, slot) twice, for keyed and
// broadcast state too, is an error. A declaration follows its slot through later
// rename_slot and remap_operator rules, so a rule after
// `rename_slot: {op: 7, from: agg, to: agg_v2}` finds the declaration of
// "agg" under "agg_v2", and a rule before it finds none there
// (Rule.SlotDecl); Set.SlotDecl finds it under every name.
//
// # Rule kinds
//
// Each rule is a mapping with an optional 'name' and exactly one kind key.
// Operators are named with 'op' or 'uid' (for remap_operator: 'from' or
// 'from_uid', 'to' or 'to_uid'); giving both forms, or neither where one is
// required, is an error.
//
//	keep: EXPR                      keep rows where EXPR is true, drop the others
//	keep: {op|uid, slot, expr}      the same within one operator and/or slot only
//	drop: EXPR                      drop rows where EXPR is true
//	drop: {op|uid, slot, expr}      the same within one operator and/or slot only
//	drop_operator: {op|uid}         every row of the operator, and its version-map entries
//	remap_operator: {from|from_uid, to|to_uid, merge: false}
//	rename_slot: {op|uid, from, to, merge}
//	drop_slot: {op|uid, slot}
//	purge_keys: {keys: [...] | keys_file: PATH, codec: string|int64|uint64|uint32, op|uid, slot}
//	purge_expired: {as_of: RFC3339 | "now" | EPOCH_MS, op|uid, slot}
//	set_value: {op|uid, slot, expr, erase_empty}
//	set_version: {op|uid, state_type, version, slot}
//	drop_version: {op|uid, state_type}
//	rescale: {parallelism: M | groups: [{subtasks: "a-b", parallelism: M}, ...], drop_lost}
//
// keep and drop also take a scope ({op|uid, slot, expr}): rows outside
// the scope pass untouched, and when the scope is one declared
// (op, slot) the expression is type-checked with that slot's codec types.
//
// remap_operator's and rename_slot's 'merge' (DefaultMerge false) lets the
// engine move rows into an operator, or a slot, that already has state;
// without it the engine refuses.
// rename_slot's 'to' must pass savepoint.ValidSlotName and differ from
// 'from'. purge_keys takes its keys inline or from a file relative to the
// rule file's directory (one key per line; blank lines and lines whose first
// non-blank character is '#' are skipped; CRLF and a UTF-8 BOM are
// tolerated; string keys are the line's bytes exactly; int64 keys are
// decimal and become 8 bytes little-endian); the keys are kept in file order
// for the audit report and in a set for matching (PurgeKeysSpec.Match). A
// million-key file loads in well under a second. purge_expired requires
// 'as_of'; "now" is allowed but must be written, is resolved once at load
// time through ParseOptions.Now, and is recorded (PurgeExpiredSpec.Now) so
// that reports can say so; only slots declared 'ttl: true' are affected,
// and a purge_expired with no such slot in scope is an error. set_value
// needs its slot declared with a 'value' codec; its expression is
// type-checked with 'value' of the codec's Go type (so `value * 100`
// passes for int64 and `value + "x"` does not), its static result type
// must suit the codec, and at run time the result is encoded with the
// codec (SetValueSpec.Apply); with 'erase_empty: true' (list and map
// codecs only) an empty list or map removes the row (SetValueSpec.Empty).
// set_version's 'version' is a uint32 and
// 'state_type' may not contain '|' or a newline. rescale must be the last
// rule; parallelisms are 1..65535 (a warning above 128); group ranges are
// old global subtask indices "a-b" or "a", in increasing order without
// overlap; 'drop_lost: true' drops keyed rows held only outside their
// owner's file, which the rescale otherwise refuses.
//
// # Expressions
//
// Expressions are expr-lang (github.com/expr-lang/expr) over the row
// model, the struct Env:
//
//	op          uint64   operator id
//	kind        string   "keyed", "operator" or "raw"
//	key_group   int      0..127 for keyed rows, -1 otherwise
//	slot        string   slot name, "<raw>" for keys without a separator (and for a slot of that name)
//	key         any      user key decoded with the slot's key codec (default: raw bytes as a string)
//	key_bytes   []byte   user key bytes
//	value       any      value decoded with the slot's value codec, TTL prefix removed (default: raw bytes)
//	value_bytes []byte   stored value bytes, TTL prefix included
//	expire_at   any      TTL stamp in epoch ms (int64) for declared TTL slots, else nil
//	subtask     int      subtask directory of the row, -1 for a single file
//
// Every expression is compiled once, at load, with expr.Env(Env{}) (keep
// and drop are type-checked with expr.AsBool(), so a filter of another
// static type is a load-time error; one whose value is nil or not a bool
// for a row is an error of that row, never read as false) and bounded by
// expr.MaxNodes. Where a rule's scope is one declared
// (op, slot) — set_value always, keep/drop in their scoped form — the
// expression is first type-checked against a struct laid out like Env whose
// 'key' and 'value' fields have the slot's codec types (int64, string,
// []byte, float64, []any, ...), so `value > 5` on an int64 slot is checked
// and `value == "x"` is rejected; the program that runs is the one compiled
// against Env, fed with the same Go values. A file that declares no slot
// has every filter checked so, with 'key' a string and 'value' bytes.
//
// Evaluation is on a caller-owned *vm.VM, one per goroutine and reused
// across rows (Predicate.Eval, ValueProgram.Eval, SetValueSpec.Apply); the
// caller fills one *Env per row with Set.FillEnv. In composite slots 'key'
// is the whole composite user key as a string; a TTL value shorter than 8
// bytes leaves 'expire_at' and 'value' nil.
//
// # Errors
//
// Parsing is strict: an unknown key, a wrong type, a duplicate key, a
// second YAML document, a YAML alias or merge key, a rule with zero or two
// kinds, a missing or unsupported 'version' are errors. Every problem of a
// file is reported in one pass as an *Errors, one *Error per problem, each
// formatted
//
//	rules.yaml:12:7: rule 3 ("purge-old"): unknown key 'wehre' in 'drop_slot' (want 'op', 'uid', 'slot')
//
// with the 1-based position of the offending key or value, the rule's
// 1-based index and name (or "slot N:" for the N-th slot declaration), keys
// quoted as spelled with single quotes. Expression errors are placed at the
// column expr reports, rebased into the YAML scalar (exact for plain and
// quoted scalars on one line and for '|' blocks); problems in a keys file
// are positioned in that file. Lint findings (a constant filter, rules that
// can no longer match because an earlier rule removed their operator or
// slot or every row, duplicate keys, reused names, parallelism above 128)
// are warnings in Set.Warnings (or Errors.Warnings), never errors.
package rules
