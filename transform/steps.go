package transform

import (
	"fmt"
	"unicode/utf8"

	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
)

// step is one compiled rule. apply transforms a row (nil for rules that only
// touch the version map); versions transforms a file's version map (nil for
// rules that only touch rows).
//
// prefix tells, for the keyed rows of one prefix (operator, key group and
// slot), what apply would do to every one of them without looking at the
// user key or the value (see prefixPlan); nil means apply must see each
// row. rekeys marks steps that may change a row's operator or key.
type step struct {
	rule     *rules.Rule
	apply    func(w *worker, i int, r savepoint.Row, k savepoint.Key) (savepoint.Row, bool, error)
	versions func(savepoint.VersionMap) (savepoint.VersionMap, error)
	prefix   func(op uint64, k savepoint.Key, subtask int) verdict
	rekeys   bool
	// remap is set for a remap_operator step: every row of operator from
	// becomes a row of operator to, its key and value kept.
	remap *struct{ from, to uint64 }
	// fields are what the rule's expression reads (rules.Rule.Fields).
	fields rules.Fields
}

// verdict is what a step does to every keyed row of one prefix.
type verdict uint8

const (
	pass    verdict = iota // leaves every row as it is
	dropAll                // drops every row that reaches it
	eachRow                // depends on the user key or the value
)

// when is the verdict of a step that acts on the rows of a prefix iff
// match: act, else pass.
func when(match bool, act verdict) verdict {
	if match {
		return act
	}
	return pass
}

// compile turns each rule into a step. The rule set is already validated,
// so every spec pointer named by a rule's kind is set.
func compile(set *rules.Set) []step {
	steps := make([]step, len(set.Rules))
	for i, r := range set.Rules {
		s := step{rule: r, fields: r.Fields()}
		switch {
		case r.Keep != nil:
			s.apply, s.prefix = filterStep(r.Keep, true)
		case r.Drop != nil:
			s.apply, s.prefix = filterStep(r.Drop, false)
		case r.DropOperator != nil:
			op := r.DropOperator.Op.ID
			s.prefix = func(o uint64, _ savepoint.Key, _ int) verdict { return when(o == op, dropAll) }
			s.apply = func(w *worker, i int, row savepoint.Row, k savepoint.Key) (savepoint.Row, bool, error) {
				if row.Op != op {
					return row, true, nil
				}
				w.res.rules[i].matched++
				return row, false, nil
			}
			s.versions = func(vm savepoint.VersionMap) (savepoint.VersionMap, error) {
				for _, e := range vm.Entries() {
					if e.Op == op {
						vm.Delete(e.Op, e.StateType)
					}
				}
				return vm, nil
			}
		case r.RemapOperator != nil:
			from, to := r.RemapOperator.From.ID, r.RemapOperator.To.ID
			s.prefix = func(o uint64, _ savepoint.Key, _ int) verdict { return when(o == from, eachRow) }
			s.rekeys = true
			s.remap = &struct{ from, to uint64 }{from, to}
			s.apply = func(w *worker, i int, row savepoint.Row, k savepoint.Key) (savepoint.Row, bool, error) {
				if row.Op != from {
					return row, true, nil
				}
				w.res.rules[i].matched++
				w.res.rules[i].changed++
				row.Op = to
				return row, true, nil
			}
			s.versions = func(vm savepoint.VersionMap) (savepoint.VersionMap, error) {
				if err := vm.RemapOp(from, to); err != nil {
					return vm, fmt.Errorf("%w: drop one of the two entries with a drop_version rule before this one, or set both to one version and slot", err)
				}
				return vm, nil
			}
		case r.RenameSlot != nil:
			spec := r.RenameSlot
			op, from, to := spec.Op.ID, spec.From, []byte(spec.To)
			s.prefix = func(o uint64, k savepoint.Key, _ int) verdict {
				return when(o == op && string(k.Slot) == from, eachRow)
			}
			s.rekeys = true
			s.apply = func(w *worker, i int, row savepoint.Row, k savepoint.Key) (savepoint.Row, bool, error) {
				if row.Op != op || !k.HasSlot || string(k.Slot) != from {
					return row, true, nil
				}
				w.res.rules[i].matched++
				w.res.rules[i].changed++
				key := make([]byte, 0, 2+len(to)+len(k.UserKey))
				key = append(key, row.Key[0])
				key = append(key, to...)
				key = append(key, '|')
				key = append(key, k.UserKey...)
				row.Key = key
				return row, true, nil
			}
			s.versions = func(vm savepoint.VersionMap) (savepoint.VersionMap, error) {
				if spec.To == "" {
					// An entry without a slot applies to every row of the
					// operator, its timers and operator state included
					// (format 4.4): the rename would widen the migration.
					for _, e := range vm.Entries() {
						if e.Op == op && e.Slot == from {
							return vm, fmt.Errorf("op %d's entry for state type %q is bound to slot %q; renamed to the empty slot it would have no slot, which clink's restore migration applies to every row of the operator, its timers, operator state and other slots included (format section 4.4): drop the entry with a drop_version rule before this one, or rename the slot to a non-empty name", op, e.StateType, from)
						}
					}
				}
				vm.RenameSlot(op, from, spec.To)
				return vm, nil
			}
		case r.DropSlot != nil:
			op, slot := r.DropSlot.Op.ID, r.DropSlot.Slot
			s.prefix = func(o uint64, k savepoint.Key, _ int) verdict {
				return when(o == op && string(k.Slot) == slot, dropAll)
			}
			s.apply = func(w *worker, i int, row savepoint.Row, k savepoint.Key) (savepoint.Row, bool, error) {
				if row.Op != op || !k.HasSlot || string(k.Slot) != slot {
					return row, true, nil
				}
				w.res.rules[i].matched++
				return row, false, nil
			}
		case r.PurgeKeys != nil:
			s.apply = purgeStep(r.PurgeKeys)
			scope := r.PurgeKeys.Scope
			s.prefix = func(o uint64, k savepoint.Key, _ int) verdict {
				return when(scope.Match(o, k.Slot, k.HasSlot), eachRow)
			}
		case r.PurgeExpired != nil:
			p := r.PurgeExpired
			s.prefix = func(o uint64, k savepoint.Key, _ int) verdict {
				return when(p.Scope.Match(o, k.Slot, k.HasSlot) && p.Applies(o, k.Slot), eachRow)
			}
			s.apply = func(w *worker, i int, row savepoint.Row, k savepoint.Key) (savepoint.Row, bool, error) {
				if k.Kind != savepoint.KindKeyed || !p.Scope.Match(row.Op, k.Slot, k.HasSlot) || !p.Applies(row.Op, k.Slot) {
					return row, true, nil
				}
				exp, _, ok := savepoint.SplitTTL(row.Value)
				if !ok {
					w.res.short[i]++
					return row, true, nil
				}
				if !p.Expired(exp) {
					return row, true, nil
				}
				w.res.rules[i].matched++
				return row, false, nil
			}
		case r.SetValue != nil:
			sv := r.SetValue
			op, slot := sv.Op.ID, sv.Slot
			s.prefix = func(o uint64, k savepoint.Key, _ int) verdict {
				return when(o == op && string(k.Slot) == slot, eachRow)
			}
			s.apply = func(w *worker, i int, row savepoint.Row, k savepoint.Key) (savepoint.Row, bool, error) {
				if row.Op != op || !k.HasSlot || string(k.Slot) != slot {
					return row, true, nil
				}
				if !sv.Decl.Describes(k, row.Key) {
					// A row of the slot's name its declaration does not
					// describe: left as it is, and counted in a warning
					// (passedOverWarnings), as a filter's.
					w.e.passedOver[i].Add(1)
					return row, true, nil
				}
				w.res.rules[i].matched++
				if err := w.fill(row, i); err != nil {
					return row, false, err
				}
				v, err := sv.Apply(&w.vm, &w.env)
				if err != nil {
					return row, false, err
				}
				if sv.Empty(v) {
					if sv.EraseEmpty {
						return row, false, nil // the key goes, as clink erases it
					}
					w.res.rules[i].empty++
				}
				if string(v) != string(row.Value) {
					w.res.rules[i].changed++
					if sv.Text() && !utf8.Valid(storedText(row.Value, sv.Decl.TTL)) {
						w.res.rules[i].nonUTF8++
					}
					row.Value = v
				}
				return row, true, nil
			}
		case r.SetVersion != nil:
			s.versions = setVersionStep(r.SetVersion, "")
		case r.DropVersion != nil:
			dv := r.DropVersion
			s.versions = func(vm savepoint.VersionMap) (savepoint.VersionMap, error) {
				vm.Delete(dv.Op.ID, dv.StateType)
				return vm, nil
			}
		}
		steps[i] = s
	}
	return steps
}

// storedText is the part of a stored value its codec decodes: a TTL
// slot's payload after its stamp (SplitTTL), else the whole value.
func storedText(v []byte, ttl bool) []byte {
	if _, payload, ok := savepoint.SplitTTL(v); ttl && ok {
		return payload
	}
	return v
}

// setVersionStep is the version-map change of set_version sv: the entry of
// its operator and state type set to its version, bound to its slot, or,
// without 'slot', to the slot the file's entry is bound to, or, when the
// file has none, to bound (the slot the other files bind it to: see
// bindSetVersions).
func setVersionStep(sv *rules.SetVersionSpec, bound string) func(savepoint.VersionMap) (savepoint.VersionMap, error) {
	return func(vm savepoint.VersionMap) (savepoint.VersionMap, error) {
		slot := sv.Slot
		if !sv.HasSlot {
			slot = bound
			if old, ok := vm.Get(sv.Op.ID, sv.StateType); ok {
				slot = old.Slot
			}
		}
		err := vm.Put(savepoint.VersionEntry{Op: sv.Op.ID, StateType: sv.StateType, Version: sv.Version, Slot: slot})
		return vm, err
	}
}

// filterStep compiles keep (keepIf=true) and drop rules: the row function
// and, for a constant or fast predicate, the prefix verdict.
func filterStep(f *rules.FilterSpec, keepIf bool) (func(w *worker, i int, r savepoint.Row, k savepoint.Key) (savepoint.Row, bool, error), func(uint64, savepoint.Key, int) verdict) {
	konst, isConst := f.Predicate.Constant()
	fast := f.Predicate.Fast()
	// A filter scoped to a declared slot is type-checked against the
	// slot's codecs, which decode the rows the declaration describes only
	// (its keyed rows, or its broadcast row): another row of that slot
	// name (broadcast state of a keyed declaration, a keyed row of a
	// broadcast one), read as bytes where the expression expects the
	// codecs' types, would compare unequal, or in order, without a word.
	// Such a filter passes over those rows, and the run warns of them (see
	// passedOverWarnings).
	typedByDecl := f.Decl != nil && f.Predicate.Fields()&(rules.FieldKey|rules.FieldValue|rules.FieldExpireAt) != 0
	apply := func(w *worker, i int, r savepoint.Row, k savepoint.Key) (savepoint.Row, bool, error) {
		if !f.Scope.All() && !f.Scope.Match(r.Op, k.Slot, k.HasSlot) {
			return r, true, nil
		}
		if typedByDecl && !f.Decl.Describes(k, r.Key) {
			w.e.passedOver[i].Add(1)
			return r, true, nil
		}
		v := konst
		if fast != nil && !isConst {
			w.view = rules.RowView{Op: r.Op, Key: k, Subtask: w.subtask}
			v = fast(&w.view)
		} else if !isConst {
			if err := w.fill(r, i); err != nil {
				return r, false, err
			}
			var err error
			if v, err = f.Predicate.Eval(&w.vm, &w.env); err != nil {
				return r, false, err
			}
		}
		if v == keepIf {
			return r, true, nil
		}
		// Matched counts the rows the filter drops: drop's expression
		// held, or keep's did not.
		w.res.rules[i].matched++
		return r, false, nil
	}
	if !isConst && fast == nil || typedByDecl && f.Decl.Broadcast {
		// The VM may read the user key or the value; or the keyed rows of
		// a broadcast slot are passed over, and counted, by apply.
		return apply, nil
	}
	prefix := func(op uint64, k savepoint.Key, subtask int) verdict {
		if !f.Scope.All() && !f.Scope.Match(op, k.Slot, k.HasSlot) || typedByDecl && k.Kind != savepoint.KindKeyed {
			return pass // (the rows apply passes over and counts)
		}
		v := konst
		if !isConst {
			v = fast(&rules.RowView{Op: op, Key: k, Subtask: subtask})
		}
		return when(v != keepIf, dropAll)
	}
	return apply, prefix
}

// purgeStep compiles purge_keys: keyed rows in scope whose user key is a
// listed key (or, in composite slots, starts with one followed by 0x1F).
func purgeStep(p *rules.PurgeKeysSpec) func(w *worker, i int, r savepoint.Row, k savepoint.Key) (savepoint.Row, bool, error) {
	return func(w *worker, i int, r savepoint.Row, k savepoint.Key) (savepoint.Row, bool, error) {
		if k.Kind != savepoint.KindKeyed && p.Scope.Slot == nil && p.Scope.MatchOp(r.Op) && savepoint.IsTimerBlob(r.Key) {
			// A timer blob holds timers keyed by user key: an erased subject's
			// timers go with its state (they would fire for it after restore).
			v, removed, err := purgeTimers(r.Value, func(key []byte) bool {
				j, ok := p.Match(key, false)
				if ok {
					// The audit counts the key found: its timers were data.
					if w.res.keyTimers[i] == nil {
						w.res.keyTimers[i] = make([]int64, p.Len())
					}
					w.res.keyTimers[i][j]++
				}
				return ok
			})
			if err != nil {
				// An erasure that cannot read a blob in its scope cannot say
				// that no timer of an erased key is left: nothing is written.
				return r, false, fmt.Errorf("timer blob %s: %w: the purge removes the listed keys' timers from every timer blob in its scope and cannot read this one; repair or drop the blob, or scope the purge with 'slot:' (which leaves timer blobs alone)", savepoint.RenderKey(r.Key), err)
			}
			if removed > 0 || len(v) != len(r.Value) {
				// The rule applied to the blob: matched, and changed.
				w.res.rules[i].matched++
				w.res.rules[i].changed++
				w.res.timers[i] += int64(removed)
				r.Value = v
			}
			return r, true, nil
		}
		if k.Kind != savepoint.KindKeyed || !p.Scope.Match(r.Op, k.Slot, k.HasSlot) {
			return r, true, nil
		}
		// A slot declared composite under this name anywhere in the file
		// is matched as one, before the rule that makes it so too: the
		// purge then leaves no element of a listed key in an output slot
		// that holds them, and its audit, which looks at the output,
		// finds none.
		composite := w.comp.of(r.Op, k.Slot)
		j, ok := p.Match(k.UserKey, composite)
		if !ok {
			if !composite && compositeLike(k.UserKey, p.Codec) {
				// An element of a listed key, in a slot not declared
				// composite, is left: the audit counts it (in the key
				// groups whose first key looks composite, which take
				// this path: see prefixPlan.withPurges).
				if _, ok := p.Match(k.UserKey, true); ok {
					w.res.addElems(elemKey{i, slotKey{op: r.Op, slot: string(k.Slot)}}, 1)
				}
			}
			return r, true, nil
		}
		w.res.rules[i].matched++
		w.res.hit(i, j)
		return r, false, nil
	}
}

// countTimers returns how many timers of a timer blob have a key that
// matches.
func countTimers(blob []byte, match func(key []byte) bool) (int, error) {
	proc, event, err := savepoint.ParseTimers(blob)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range append(proc, event...) {
		if match(t.Key) {
			n++
		}
	}
	return n, nil
}

// purgeTimers removes from a timer blob the timers whose key matches; it
// returns the blob unchanged when none does and it holds nothing after its
// timers. Bytes after the timers, which a restore ignores and no timer
// holds (a timer past a count that was cut short keeps its key there), are
// dropped: an erasure keeps none of a blob's bytes but its timers'.
func purgeTimers(blob []byte, match func(key []byte) bool) ([]byte, int, error) {
	proc, event, trailing, err := savepoint.ParseTimersTrailing(blob)
	if err != nil {
		return nil, 0, err
	}
	removed := 0
	keep := func(ts []savepoint.Timer) []savepoint.Timer {
		out := ts[:0]
		for _, t := range ts {
			if match(t.Key) {
				removed++
				continue
			}
			out = append(out, t)
		}
		return out
	}
	proc, event = keep(proc), keep(event)
	if removed == 0 && trailing == 0 {
		return blob, 0, nil
	}
	return savepoint.EncodeTimers(proc, event), removed, nil
}
