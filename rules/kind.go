package rules

// Kind names the kind of a rule: the one key of a rule mapping besides
// 'name'. The set of kinds is closed; AllKinds lists them in documentation
// order.
type Kind string

const (
	// KindKeep keeps the rows for which a boolean expression is true and
	// drops every other row (of the rule's scope, when one is given).
	KindKeep Kind = "keep"
	// KindDrop drops the rows for which a boolean expression is true.
	KindDrop Kind = "drop"
	// KindDropOperator drops every row of one operator and its entries of
	// the version map.
	KindDropOperator Kind = "drop_operator"
	// KindRemapOperator moves every row (and version-map entry) of one
	// operator id to another. Merging into an operator that already has
	// state is refused unless 'merge: true'.
	KindRemapOperator Kind = "remap_operator"
	// KindRenameSlot renames a keyed-state slot of one operator, rewriting
	// every stored key of that slot and the slot field of version-map
	// entries that name it.
	KindRenameSlot Kind = "rename_slot"
	// KindDropSlot drops every row of one slot of one operator.
	KindDropSlot Kind = "drop_slot"
	// KindPurgeKeys drops the keyed rows whose user key is one of a list of
	// keys (GDPR erasure), in every key group; in composite slots also the
	// rows whose user key starts with a listed key followed by 0x1F.
	KindPurgeKeys Kind = "purge_keys"
	// KindPurgeExpired drops the rows of slots declared 'ttl: true' whose
	// expire-at stamp is at or before a fixed instant.
	KindPurgeExpired Kind = "purge_expired"
	// KindSetValue rewrites the value of every row of one declared slot
	// with an expression; the result is re-encoded with the slot's value
	// codec (and the TTL prefix is kept on TTL slots).
	KindSetValue Kind = "set_value"
	// KindSetVersion sets the version-map entry (op, state_type) to a
	// version, optionally bound to a slot.
	KindSetVersion Kind = "set_version"
	// KindDropVersion removes the version-map entry (op, state_type).
	KindDropVersion Kind = "drop_version"
	// KindRescale re-partitions keyed rows into subtask files for a new
	// parallelism. It must be the last rule.
	KindRescale Kind = "rescale"
)

// AllKinds lists every rule kind in documentation order.
var AllKinds = []Kind{
	KindKeep, KindDrop, KindDropOperator, KindRemapOperator, KindRenameSlot,
	KindDropSlot, KindPurgeKeys, KindPurgeExpired, KindSetValue,
	KindSetVersion, KindDropVersion, KindRescale,
}

// Valid reports whether k is one of AllKinds.
func (k Kind) Valid() bool {
	for _, x := range AllKinds {
		if x == k {
			return true
		}
	}
	return false
}

// String returns the kind as spelled in a rule file.
func (k Kind) String() string { return string(k) }
