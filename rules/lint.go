package rules

import (
	"slices"

	"go.yaml.in/yaml/v3"
)

// lint records warnings about a valid rule list: rules that do nothing,
// rules after which nothing can match, rules that name an operator or slot
// an earlier rule removed, reused names.
func (p *parser) lint() {
	deadOps := map[uint64]int{}
	deadSlots := map[slotName]int{}
	names := map[string]int{}
	var purges []*purgeAt // scoped purge_keys rules so far, where their rows are now
	for _, r := range p.set.Rules {
		p.rule, p.ruleName = r.Index, r.Name
		at := &yaml.Node{Line: r.Line, Column: r.Col}
		if r.Name != "" {
			if first, dup := names[r.Name]; dup {
				p.warnAt(at, "name %q is also used by rule %d", r.Name, first)
			} else {
				names[r.Name] = r.Index
			}
		}
		ops, slots := refs(r)
		for _, op := range ops {
			if by, dead := deadOps[op]; dead {
				p.warnAt(at, "op %d has no rows any more (rule %d moved or dropped them): this rule can match nothing", op, by)
			}
		}
		for _, s := range slots {
			if by, dead := deadSlots[s]; dead {
				p.warnAt(at, "slot %q of op %d has no rows any more (rule %d renamed or dropped it): this rule can match nothing", s.slot, s.op, by)
			}
		}
		if f := r.Filter(); f != nil {
			if v, ok := f.Predicate.Constant(); ok {
				keepAll := (r.Kind == KindKeep) == v
				switch {
				case keepAll:
					p.warnAt(at, "%s: '%s' is constant: the rule does nothing", r.Kind, f.Expr)
				case f.Scope.All():
					p.warnAt(at, "%s: '%s' is constant: the rule drops every row", r.Kind, f.Expr)
					if r.Index < len(p.set.Rules) {
						next := p.set.Rules[r.Index]
						p.rule, p.ruleName = next.Index, next.Name
						p.warnAt(&yaml.Node{Line: next.Line, Column: next.Col}, "rule %d drops every row: this rule and every later one can match nothing", r.Index)
					}
					p.rule, p.ruleName = 0, ""
					return
				default:
					p.warnAt(at, "%s: '%s' is constant: the rule drops every row of %s", r.Kind, f.Expr, f.Scope)
				}
			}
		}
		for _, pa := range purges {
			if pa.movesInto(r) {
				p.warnAt(at, "this rule moves rows next to those of rule %d (purge_keys, %s), which ran before it: rows of its listed keys among them are not purged; put the purge after this rule", pa.rule.Index, pa.rule.PurgeKeys.Scope)
			}
			pa.follow(r)
		}
		switch r.Kind {
		case KindPurgeKeys:
			if sc := r.PurgeKeys.Scope; !sc.All() {
				pa := &purgeAt{rule: r}
				if sc.Op != nil {
					pa.op = &sc.Op.ID
				}
				pa.slot = sc.Slot
				purges = append(purges, pa)
			}
		case KindDropOperator:
			deadOps[r.DropOperator.Op.ID] = r.Index
		case KindRemapOperator:
			deadOps[r.RemapOperator.From.ID] = r.Index
			delete(deadOps, r.RemapOperator.To.ID)
			// The rows moved in may hold any slot, one an earlier rule
			// renamed or dropped in the operator moved into too.
			for s := range deadSlots {
				if s.op == r.RemapOperator.To.ID {
					delete(deadSlots, s)
				}
			}
		case KindRenameSlot:
			s := r.RenameSlot
			deadSlots[slotName{s.Op.ID, s.From}] = r.Index
			delete(deadSlots, slotName{s.Op.ID, s.To})
		case KindDropSlot:
			deadSlots[slotName{r.DropSlot.Op.ID, r.DropSlot.Slot}] = r.Index
		}
	}
	p.rule, p.ruleName = 0, ""
}

// purgeAt is a purge_keys rule scoped to an operator and/or slot, and the
// operator and slot its rows have after the moves since (nil: any). A scope
// of a slot alone covers that slot in every operator: renamed is the slot
// they have in the operators where a rename moved them, and moved in the
// other slots that a remap moved the rows of another operator into.
type purgeAt struct {
	rule    *Rule
	op      *uint64
	slot    *string
	renamed map[uint64]string
	movedIn map[uint64][]string
	moved   bool // a rule after the purge moved its rows
}

// slotIn returns the slot the purge's rows have in operator op, if the
// scope holds that operator.
func (pa *purgeAt) slotIn(op uint64) (string, bool) {
	if pa.op != nil && *pa.op != op {
		return "", false
	}
	if s, ok := pa.renamed[op]; ok {
		return s, true
	}
	return *pa.slot, true
}

// slotsIn returns the slots the purge's rows have in operator op (none
// when the scope does not hold it): slotIn's, and those a remap moved the
// purged rows of another operator into (movedIn).
func (pa *purgeAt) slotsIn(op uint64) []string {
	s, ok := pa.slotIn(op)
	if !ok {
		return nil
	}
	return append([]string{s}, pa.movedIn[op]...)
}

// movesInto reports whether rule r moves rows from elsewhere to where the
// purge's rows are: a remap into their operator, a rename into their slot.
func (pa *purgeAt) movesInto(r *Rule) bool {
	switch {
	case r.RemapOperator != nil:
		m := r.RemapOperator
		if m.From.ID == m.To.ID {
			return false
		}
		if pa.op != nil {
			return m.To.ID == *pa.op
		}
		// A scope of a slot alone: the purged rows of each operator are
		// in its slots of purged rows (slotsIn), and a slot of one of the
		// two holds rows the purge did not see unless it is one of the
		// other's too (a rename before moved one of them).
		to, from := pa.slotsIn(m.To.ID), pa.slotsIn(m.From.ID)
		return slices.ContainsFunc(to, func(s string) bool { return !slices.Contains(from, s) }) ||
			slices.ContainsFunc(from, func(s string) bool { return !slices.Contains(to, s) })
	case r.RenameSlot != nil:
		if pa.slot == nil {
			return false
		}
		m := r.RenameSlot
		slots := pa.slotsIn(m.Op.ID)
		return slices.Contains(slots, m.To) && !slices.Contains(slots, m.From)
	}
	return false
}

// follow moves the purge's rows with rule r: a remap of their operator, a
// rename of their slot.
func (pa *purgeAt) follow(r *Rule) {
	switch {
	case r.RemapOperator != nil:
		m := r.RemapOperator
		switch {
		case m.To.ID == m.From.ID:
		case pa.op != nil && m.From.ID == *pa.op:
			to := m.To.ID
			pa.op, pa.moved = &to, true
		case pa.op == nil && pa.slot != nil:
			// A scope of a slot alone: the rows of the operator remapped,
			// in its slot (renamed, perhaps) and those moved into it, join
			// the operator remapped into, beside its own. The operator
			// remapped has none left: rows that come to it later are in
			// the scope as named (its slot as the rule names it) only.
			to := pa.slotsIn(m.To.ID)
			for _, s := range pa.slotsIn(m.From.ID) {
				if !slices.Contains(to, s) {
					if pa.movedIn == nil {
						pa.movedIn = map[uint64][]string{}
					}
					pa.movedIn[m.To.ID] = append(pa.movedIn[m.To.ID], s)
					to = append(to, s)
					pa.moved = true
				}
			}
			delete(pa.renamed, m.From.ID)
			delete(pa.movedIn, m.From.ID)
		}
	case r.RenameSlot != nil:
		if pa.slot == nil {
			return
		}
		m := r.RenameSlot
		if i := slices.Index(pa.movedIn[m.Op.ID], m.From); i >= 0 && m.To != m.From {
			pa.movedIn[m.Op.ID][i], pa.moved = m.To, true
		}
		s, ok := pa.slotIn(m.Op.ID)
		if !ok || m.From != s || m.To == s {
			return
		}
		pa.moved = true
		if pa.op != nil {
			to := m.To
			pa.slot = &to
			return
		}
		if pa.renamed == nil {
			pa.renamed = map[uint64]string{}
		}
		pa.renamed[m.Op.ID] = m.To
	}
}

// MovedScope is where the rows in the scope of a purge_keys rule are
// once the rules after it have run: the operator a remap moved them into,
// the slot a rename gave them (see Set.PurgedScope).
type MovedScope struct{ at purgeAt }

// PurgedScope returns where the rows in the scope of purge_keys rule r,
// one of s's, are after the rules that follow it; nil for a purge of
// every row, or a rule that is no purge_keys.
func (s *Set) PurgedScope(r *Rule) *MovedScope {
	if r.PurgeKeys == nil || r.PurgeKeys.Scope.All() {
		return nil
	}
	m := &MovedScope{at: purgeAt{rule: r, slot: r.PurgeKeys.Scope.Slot}}
	if sc := r.PurgeKeys.Scope; sc.Op != nil {
		m.at.op = &sc.Op.ID
	}
	for _, next := range s.Rules[r.Index:] {
		m.at.follow(next)
	}
	return m
}

// Match reports whether a row of operator op and slot (hasSlot: it has
// one) is where the purge's rows are.
func (m *MovedScope) Match(op uint64, slot []byte, hasSlot bool) bool {
	if m == nil || m.at.op != nil && *m.at.op != op {
		return false
	}
	if m.at.slot == nil {
		return true
	}
	s, ok := m.at.slotIn(op)
	return ok && hasSlot && (string(slot) == s || slices.Contains(m.at.movedIn[op], string(slot)))
}

// Moved reports whether the rules after the purge move its rows: a remap
// of their operator, a rename of their slot.
func (m *MovedScope) Moved() bool { return m != nil && m.at.moved }

// MatchOp reports whether operator op is where the purge's rows are, in
// one of its slots or all of them (a timer blob belongs to its operator).
func (m *MovedScope) MatchOp(op uint64) bool {
	return m != nil && (m.at.op == nil || *m.at.op == op)
}

// refs returns the operators and (op, slot) pairs a rule names explicitly
// as the rows it works on.
func refs(r *Rule) (ops []uint64, slots []slotName) {
	scope := func(s Scope) {
		if s.Op != nil {
			ops = append(ops, s.Op.ID)
			if s.Slot != nil {
				slots = append(slots, slotName{s.Op.ID, *s.Slot})
			}
		}
	}
	switch r.Kind {
	case KindKeep, KindDrop:
		scope(r.Filter().Scope)
	case KindDropOperator:
		ops = append(ops, r.DropOperator.Op.ID)
	case KindRemapOperator:
		ops = append(ops, r.RemapOperator.From.ID)
	case KindRenameSlot:
		ops = append(ops, r.RenameSlot.Op.ID)
		slots = append(slots, slotName{r.RenameSlot.Op.ID, r.RenameSlot.From})
	case KindDropSlot:
		ops = append(ops, r.DropSlot.Op.ID)
		slots = append(slots, slotName{r.DropSlot.Op.ID, r.DropSlot.Slot})
	case KindPurgeKeys:
		scope(r.PurgeKeys.Scope)
	case KindPurgeExpired:
		scope(r.PurgeExpired.Scope)
	case KindSetValue:
		ops = append(ops, r.SetValue.Op.ID)
		slots = append(slots, slotName{r.SetValue.Op.ID, r.SetValue.Slot})
	}
	return ops, slots
}
