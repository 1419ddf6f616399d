package rules

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"go.yaml.in/yaml/v3"

	"github.com/sptool/sptool/internal/prefault"
	"github.com/sptool/sptool/internal/testhook"
	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/savepoint/codec"
)

var operatorIDFromUID = savepoint.OperatorIDFromUID

// kindKeys are the keys of each kind's mapping.
var kindKeys = map[Kind][]string{
	KindKeep:          {"op", "uid", "slot", "expr"},
	KindDrop:          {"op", "uid", "slot", "expr"},
	KindDropOperator:  {"op", "uid"},
	KindRemapOperator: {"from", "from_uid", "to", "to_uid", "merge"},
	KindRenameSlot:    {"op", "uid", "from", "to", "merge"},
	KindDropSlot:      {"op", "uid", "slot"},
	KindPurgeKeys:     {"keys", "keys_file", "codec", "op", "uid", "slot"},
	KindPurgeExpired:  {"as_of", "op", "uid", "slot"},
	KindSetValue:      {"op", "uid", "slot", "expr", "erase_empty"},
	KindSetVersion:    {"op", "uid", "state_type", "version", "slot"},
	KindDropVersion:   {"op", "uid", "state_type"},
	KindRescale:       {"parallelism", "groups", "drop_lost"},
}

var slotDeclKeys = []string{"op", "uid", "slot", "key", "value", "ttl", "composite", "broadcast"}

// parseSlots reads the 'slots:' declarations.
func (p *parser) parseSlots(n *yaml.Node) {
	if n.Kind != yaml.SequenceNode {
		if !(n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null") {
			p.errAt(n, "slots", "'slots' must be a list of slot declarations, got %s", describe(n))
		}
		return
	}
	seen := map[slotName]*SlotDecl{}
	for i, dn := range n.Content {
		p.slot = i + 1
		m := p.mapping(dn, nil, "slot declaration", slotDeclKeys)
		if dn.Kind != yaml.MappingNode {
			continue
		}
		d := &SlotDecl{Index: i + 1, Line: dn.Line, Col: dn.Column}
		ok := true
		op, opOK := m.opRef(dn, "op", "uid", true)
		ok = ok && opOK
		if op != nil {
			d.Op = *op
		}
		s, slotGiven := m.reqStr(dn, "slot")
		var bok bool
		d.Broadcast, bok = m.boolean("broadcast", false)
		ok = ok && bok
		switch {
		case !slotGiven:
			ok = false
		case d.Broadcast:
			// clink's BroadcastState takes any name ('\n' too, which its
			// KeyedState refuses); '|' would end it in the stored key.
			ok = m.matchableSlot("slot", s) && ok
			d.Slot = s
		default:
			ok = m.validSlot("slot", s) && ok
			d.Slot = s
		}
		if kn := m.get("key"); kn != nil {
			c, cok := p.codecValue(kn, "key", dn.Style&yaml.FlowStyle != 0)
			d.KeyCodec, ok = c, ok && cok
		}
		if vn := m.get("value"); vn != nil {
			c, cok := p.codecValue(vn, "value", dn.Style&yaml.FlowStyle != 0)
			d.ValueCodec, ok = c, ok && cok
		}
		d.TTL, bok = m.boolean("ttl", false)
		ok = ok && bok
		d.Composite, bok = m.boolean("composite", false)
		ok = ok && bok
		if d.Broadcast {
			// Broadcast state is one row of the whole state's value at key
			// 0xFF slot '|': no user key, no TTL stamp, no elements.
			for _, f := range []struct {
				name string
				set  bool
			}{{"key", m.get("key") != nil}, {"ttl", d.TTL}, {"composite", d.Composite}} {
				if f.set {
					p.errAt(m.get(f.name), f.name, "slot %q is declared 'broadcast: true': broadcast state is one row at key 0xFF slot '|' whose value is the whole state, with no user key, TTL stamp or elements, so '%s' does not apply", d.Slot, f.name)
					ok = false
				}
			}
		}
		if !ok {
			if op != nil && slotGiven {
				if p.badDecls == nil {
					p.badDecls = map[slotName]bool{}
				}
				p.badDecls[slotName{op.ID, d.Slot}] = true
			}
			continue
		}
		d.keyType, d.valueType = declTypes(d)
		d.checkEnv = declCheckEnv(d)
		k := slotName{d.Op.ID, d.Slot}
		if first := seen[k]; first != nil {
			hint := ""
			if first.Broadcast != d.Broadcast {
				hint = ": a declaration describes either the slot's keyed rows or, 'broadcast: true', its broadcast state, not both"
			}
			p.errAt(m.get("slot"), "slot", "slot %q of op %s is already declared (slot %d, line %d)%s", d.Slot, d.Op, first.Index, first.Line, hint)
			continue
		}
		seen[k] = d
		p.set.Slots = append(p.set.Slots, d)
		p.indexSlot(d.Op.ID, d.Slot, d)
	}
	p.slot = 0
}

// declCheckEnv returns the type an expression scoped to declared slot d is
// type-checked against: 'key' and 'value' of its codecs' types
// (declTypes), the elements of a list and the entries of a map typed too
// (exprType), and 'expire_at' an int64 in a 'ttl: true' slot. So a filter
// that compares an int64 list's element with a string, reads a map entry's
// field that is not 'key' or 'value', or compares the stamp with a date()
// fails at load, not at the first row (or, a missing field read as nil, at
// none). What runs is compiled against Env, whose collections are []any and
// map entries map[string]any: the typed elements serve the check only.
func declCheckEnv(d *SlotDecl) reflect.Type {
	key, value := d.keyType, d.valueType
	if d.KeyCodec != nil && !d.Composite && codec.Args(d.KeyCodec) != nil {
		key = exprType(d.KeyCodec)
	}
	if d.ValueCodec != nil {
		value = exprType(d.ValueCodec)
	}
	var expireAt reflect.Type
	if d.TTL {
		expireAt = reflect.TypeFor[int64]()
	}
	return typedEnv(key, value, expireAt)
}

// exprType returns the type a value of codec c is type-checked as (nil:
// any): a scalar as it decodes, list<E> a slice of E's type, map<K,V> a
// slice of entries with fields 'key' and 'value' of K's and V's types;
// pair<A,B> and optional<T>, whose values take several types, any.
func exprType(c codec.Codec) reflect.Type {
	args := codec.Args(c)
	orAny := func(t reflect.Type) reflect.Type {
		if t == nil {
			return anyType
		}
		return t
	}
	switch {
	case args == nil:
		return goTypeOf(c.Decode)
	case codec.Collection(c) && len(args) == 1:
		return reflect.SliceOf(orAny(exprType(args[0])))
	case codec.Collection(c):
		entry := reflect.StructOf([]reflect.StructField{
			{Name: "Key", Type: orAny(exprType(args[0])), Tag: `expr:"key"`},
			{Name: "Value", Type: orAny(exprType(args[1])), Tag: `expr:"value"`},
		})
		entryNames.add(entry, c)
		return reflect.SliceOf(entry)
	case len(args) == 1: // optional<T>: nil or T
		return exprType(args[0])
	}
	return nil // pair<A,B>
}

// entryNames names the entry types of exprType in the messages of the
// type checker, which shows an anonymous struct as its Go source.
var entryNames entryNamer

// entryNamer replaces the Go text of each entry type it was given with a
// name a rule's author reads: "an entry of map<string,int64> (fields key
// and value)".
type entryNamer struct {
	mu    sync.Mutex
	names map[string]string
	r     *strings.Replacer
}

func (n *entryNamer) add(entry reflect.Type, c codec.Codec) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.names == nil {
		n.names = map[string]string{}
	}
	if _, ok := n.names[entry.String()]; ok {
		return
	}
	n.names[entry.String()] = "an entry of " + c.String() + " (fields key and value)"
	var pairs []string
	for _, from := range slices.Sorted(maps.Keys(n.names)) {
		pairs = append(pairs, "type "+from, n.names[from], from, n.names[from])
	}
	n.r = strings.NewReplacer(pairs...)
}

// Replace returns msg with each entry type's Go text replaced by its name.
func (n *entryNamer) Replace(msg string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.r == nil {
		return msg
	}
	return n.r.Replace(msg)
}

// declTypes returns the Go types 'key' and 'value' have in expressions on a
// declared slot.
func declTypes(d *SlotDecl) (key, value reflect.Type) {
	key = stringType
	if d.KeyCodec != nil && !d.Composite {
		key = goTypeOf(d.KeyCodec.Decode)
		if key == bytesType {
			key = stringType
		}
	}
	value = bytesType
	if d.ValueCodec != nil {
		value = goTypeOf(d.ValueCodec.Decode)
	}
	return key, value
}

func (p *parser) indexSlot(op uint64, slot string, d *SlotDecl) { p.set.slotIndex.put(op, slot, d) }

// codecValue parses a codec spec, the value of a {...} mapping when flow.
func (p *parser) codecValue(n *yaml.Node, key string, flow bool) (codec.Codec, bool) {
	s, ok := p.stringValue(n, key)
	if !ok {
		return nil, false
	}
	c, err := codec.Parse(s)
	if err != nil {
		hint := ""
		if flow && n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) == 0 && strings.Count(s, "<") > strings.Count(s, ">") {
			// {slot: m, value: map<string,int64>}: YAML ends a plain
			// scalar of a flow mapping at its comma.
			hint = fmt.Sprintf(` (a codec with a comma is quoted in a {...} mapping: %s: "map<string,int64>")`, key)
		}
		p.errAt(n, key, "bad codec in '%s': %v%s", key, err, hint)
		return nil, false
	}
	return c, true
}

// parseRules reads 'rules:'.
func (p *parser) parseRules(n, keyNode *yaml.Node) {
	if n.Kind != yaml.SequenceNode {
		p.errAt(n, "rules", "'rules' must be a list of rules, got %s", describe(n))
		return
	}
	if len(n.Content) == 0 {
		p.warnAt(keyNode, "'rules' is empty: the file changes nothing")
	}
	for i, rn := range n.Content {
		p.rule, p.ruleName = i+1, ""
		if p.viewIndex == nil {
			x := declIndex{}
			for k, d := range p.view {
				x.put(k.op, k.slot, d)
			}
			p.viewIndex = &x
		}
		decls := p.viewIndex
		if r := p.parseRule(rn, i+1); r != nil {
			r.decls = decls
			p.set.Rules = append(p.set.Rules, r)
		}
	}
	// Validation across rules: rescale must be last. Read off the YAML,
	// so that a rescale rule with errors of its own is placed too.
	for i, rn := range n.Content[:max(len(n.Content)-1, 0)] {
		if rn.Kind != yaml.MappingNode {
			continue
		}
		var kind *yaml.Node
		name := ""
		for j := 0; j+1 < len(rn.Content); j += 2 {
			switch k := rn.Content[j]; k.Value {
			case string(KindRescale):
				kind = k
			case "name":
				name = rn.Content[j+1].Value
			}
		}
		if kind != nil {
			p.rule, p.ruleName = i+1, name
			next := n.Content[i+1]
			p.addErr(kind.Line, kind.Column, string(KindRescale), fmt.Sprintf("rescale must be the last rule (rule %d follows it at line %d)", i+2, next.Line))
		}
	}
}

// parseRule reads one rule: a mapping with an optional 'name' and exactly
// one kind key. It returns nil when the rule has problems (reported).
func (p *parser) parseRule(rn *yaml.Node, index int) *Rule {
	if rn.Kind == yaml.AliasNode {
		return nil
	}
	if rn.Kind != yaml.MappingNode {
		p.errAt(rn, "", "a rule must be a mapping with an optional 'name' and one kind key (%s), got %s", kindList(), describe(rn))
		return nil
	}
	// The name first, so that every other error carries it.
	for i := 0; i+1 < len(rn.Content); i += 2 {
		if kn := rn.Content[i]; kn.Kind == yaml.ScalarNode && kn.Value == "name" {
			if name, ok := p.stringValue(rn.Content[i+1], "name"); ok {
				p.ruleName = name
			}
			break
		}
	}
	allowed := []string{"name"}
	for _, k := range AllKinds {
		allowed = append(allowed, string(k))
	}
	e0 := len(p.errs)
	m := p.mapping(rn, nil, "a rule", allowed)
	var kinds []string
	for _, k := range m.order {
		if k != "name" {
			kinds = append(kinds, k)
		}
	}
	switch {
	case len(kinds) == 0:
		if len(p.errs) == e0 {
			p.errAt(rn, "", "rule has no kind: give one of %s", kindList())
		}
		return nil
	case len(kinds) > 1:
		p.errAt(m.keys[kinds[1]], kinds[1], "rule has two kinds, '%s' and '%s'; a rule has exactly one (split it into two rules)", kinds[0], kinds[1])
		return nil
	}
	kind := Kind(kinds[0])
	kn, vn := m.keys[kinds[0]], m.vals[kinds[0]]
	r := &Rule{Index: index, Name: p.ruleName, Kind: kind, Line: kn.Line, Col: kn.Column}
	if vn.Kind == yaml.AliasNode {
		return nil
	}
	switch kind {
	case KindKeep:
		r.Keep = p.parseFilter(kn, vn, r)
	case KindDrop:
		r.Drop = p.parseFilter(kn, vn, r)
	case KindDropOperator:
		r.DropOperator = p.parseDropOperator(kn, vn)
	case KindRemapOperator:
		r.RemapOperator = p.parseRemapOperator(kn, vn)
	case KindRenameSlot:
		r.RenameSlot = p.parseRenameSlot(kn, vn)
	case KindDropSlot:
		r.DropSlot = p.parseDropSlot(kn, vn)
	case KindPurgeKeys:
		r.PurgeKeys = p.parsePurgeKeys(kn, vn)
	case KindPurgeExpired:
		r.PurgeExpired = p.parsePurgeExpired(kn, vn)
	case KindSetValue:
		r.SetValue = p.parseSetValue(kn, vn, r)
	case KindSetVersion:
		r.SetVersion = p.parseSetVersion(kn, vn)
	case KindDropVersion:
		r.DropVersion = p.parseDropVersion(kn, vn)
	case KindRescale:
		r.Rescale = p.parseRescale(kn, vn)
	}
	if len(p.errs) > e0 || reflect.ValueOf(r.Spec()).IsNil() {
		return nil
	}
	return r
}

func kindList() string {
	q := make([]string, len(AllKinds))
	for i, k := range AllKinds {
		q[i] = "'" + string(k) + "'"
	}
	return strings.Join(q, ", ")
}

// kindMapping checks a kind's value is a mapping with the kind's keys.
func (p *parser) kindMapping(kn, vn *yaml.Node) *mapping {
	return p.mapping(vn, kn, "'"+kn.Value+"'", kindKeys[Kind(kn.Value)])
}

// parseFilter reads keep/drop: an expression, or the scoped form
// {op|uid, slot, expr}.
func (p *parser) parseFilter(kn, vn *yaml.Node, r *Rule) *FilterSpec {
	key := string(r.Kind)
	label := ruleLabel(r.Index, p.ruleName, r.Kind)
	if vn.Kind == yaml.ScalarNode {
		src, ok := p.stringValue(vn, key)
		if !ok {
			return nil
		}
		c := p.compile(vn, key, src, p.undeclaredEnv(), true)
		if c == nil || !p.checkExpireAt(vn, key, c, nil, Scope{}) {
			return nil
		}
		p.warnUntypable(vn, key, src, Scope{})
		pred := c.predicate(src)
		pred.rule = label
		return &FilterSpec{Expr: src, Predicate: pred}
	}
	m := p.kindMapping(kn, vn)
	if vn.Kind != yaml.MappingNode {
		return nil
	}
	sc, ok := m.scope(kn)
	src, eok := m.reqStr(kn, "expr")
	if !ok || !eok {
		if eok {
			// Every error of the file in one pass: the expression's
			// syntax (its types depend on the scope).
			p.checkSyntax(m.get("expr"), "expr", src)
		}
		return nil
	}
	f := &FilterSpec{Expr: src, Scope: sc}
	typed := p.undeclaredEnv()
	if sc.Op != nil && sc.Slot != nil {
		if d := p.view[slotName{sc.Op.ID, *sc.Slot}]; d != nil {
			f.Decl = d
			typed = d.checkEnv
		} else if p.syntaxOnly(m.get("expr"), "expr", src, sc.Op, *sc.Slot) {
			return nil
		}
	}
	c := p.compile(m.get("expr"), "expr", src, typed, true)
	if c == nil || !p.checkExpireAt(m.get("expr"), "expr", c, f.Decl, sc) {
		return nil
	}
	if f.Decl == nil {
		p.warnUntypable(m.get("expr"), "expr", src, sc)
	}
	f.Predicate = c.predicate(src)
	f.Predicate.rule = label
	return f
}

// undeclaredEnv returns the types expressions see when the rule file
// declares no slot: every row's 'key' is then its bytes as a string and its
// 'value' its bytes, so a filter is type-checked against them at load
// ('value' alone, not a bool, is an error there rather than at the first
// row). With declarations, a filter not scoped to one declared slot may
// see any of their types, and nil leaves it to expr's 'any'.
func (p *parser) undeclaredEnv() reflect.Type {
	if len(p.set.Slots) > 0 {
		return nil
	}
	return typedEnv(stringType, bytesType, nil)
}

// vacatedAt reports whether slot of op was declared until a rule before
// the one being read moved its declaration away (renamed or remapped).
func (p *parser) vacatedAt(op uint64, slot string) bool {
	_, ok := p.vacated[slotName{op, slot}]
	return ok
}

// hasTTLSlot reports whether any of decls is declared 'ttl: true'.
func hasTTLSlot(decls []*SlotDecl) bool {
	return slices.ContainsFunc(decls, func(d *SlotDecl) bool { return d.TTL })
}

// noTTLSlot is why 'expire_at' is nil on every row of a rule file that
// declares no TTL slot.
const noTTLSlot = "no slot is declared with 'ttl: true'"

// checkExpireAt refuses (false) an expression c, held by node n, that
// reads 'expire_at' where it is nil on every row: scoped to declared slot
// d, which is not a 'ttl: true' slot, to a slot sc names that no
// declaration describes, or (d nil) in a rule file that declares no such
// slot. Such a filter fails on the first row it compares the stamp of, or,
// testing for nil first, matches nothing. One that may see rows of slots
// without a stamp beside those of a TTL slot (not scoped to one slot) is
// warned of unless it tests the stamp for nil or reads the slot
// (compiled.stampGuarded): it fails on the first such row.
func (p *parser) checkExpireAt(n *yaml.Node, key string, c *compiled, d *SlotDecl, sc Scope) bool {
	if c.fields&FieldExpireAt == 0 || c.fields == AllFields {
		return true
	}
	why := ""
	switch {
	case d != nil && !d.TTL:
		why = fmt.Sprintf("slot %q of op %s is not declared with 'ttl: true'", d.Slot, d.Op)
	case d == nil && !hasTTLSlot(p.set.Slots):
		why = noTTLSlot
	case d == nil && sc.Op != nil && sc.Slot != nil && p.vacatedAt(sc.Op.ID, *sc.Slot):
		return true // moved away by a rule before: lint warns that it matches nothing
	case d == nil && sc.Op != nil && sc.Slot != nil:
		why = fmt.Sprintf("slot %q of op %s is not declared", *sc.Slot, sc.Op)
	case d == nil && !c.stampGuarded:
		p.warnAt(n, "'%s': 'expire_at' is nil on the rows of every slot not declared 'ttl: true', which this expression may see: it fails on the first such row; scope the rule to the TTL slot (its op and slot) or test expire_at != nil first", key)
		return true
	default:
		return true
	}
	p.errAt(n, key, "'expire_at' is nil on every row this expression reads: %s (a TTL slot's value starts with its 8-byte expiry stamp, which 'ttl: true' reads)", why)
	return false
}

// badKindMessage says that an expression compares kind with value, which
// no row has.
func badKindMessage(value string) string {
	return fmt.Sprintf("kind is \"keyed\", \"operator\" or \"raw\": %q is none of them, and no row has it", value)
}

// compile compiles an expression held by node n and reports its errors at
// their position inside the YAML.
func (p *parser) compile(n *yaml.Node, key, src string, typed reflect.Type, asBool bool) *compiled {
	c, e := compileExpr(src, typed, asBool, p.opts.MaxExprNodes)
	if e == nil {
		for _, k := range c.badKinds {
			line, col := p.exprPos(n, k.off)
			p.warnAt(&yaml.Node{Line: line, Column: col}, "'%s': %s", key, badKindMessage(k.value))
		}
		return c
	}
	line, col := p.exprPos(n, e.off)
	msg := fmt.Sprintf("bad expression in '%s': %s", key, e.msg)
	if e.notBool {
		msg = fmt.Sprintf("'%s' must be a boolean expression: %s", key, e.msg)
	}
	p.addErr(line, col, key, msg)
	return nil
}

// checkSyntax reports the syntax error of expression src at n, if any: an
// expression that cannot be type-checked (its slot's codecs are unknown)
// is still parsed, so that every error of the file is reported in one pass.
func (p *parser) checkSyntax(n *yaml.Node, key, src string) {
	if e := syntaxErr(src); e != nil {
		line, col := p.exprPos(n, e.off)
		p.addErr(line, col, key, fmt.Sprintf("bad expression in '%s': %s", key, e.msg))
	}
}

// syntaxOnly checks the syntax alone of an expression (src, at n) whose
// types come from the declaration of slot of op, when that declaration has
// an error (reported): its types are unknown, and the check of an
// undeclared slot's would give errors of its own. It says that the rest was
// not checked, so that a run after the declaration is fixed holds no
// surprise. It reports whether the slot's declaration has an error.
func (p *parser) syntaxOnly(n *yaml.Node, key, src string, op *OpRef, slot string) bool {
	if !p.badDecls[slotName{op.ID, slot}] {
		return false
	}
	p.checkSyntax(n, key, src)
	p.warnAt(n, "'%s' is checked for its syntax alone: the declaration of slot %q of op %s has an error, so the types it gives are unknown", key, slot, op)
	return true
}

func (p *parser) parseDropOperator(kn, vn *yaml.Node) *DropOperatorSpec {
	m := p.kindMapping(kn, vn)
	if vn.Kind != yaml.MappingNode {
		return nil
	}
	op, ok := m.opRef(kn, "op", "uid", true)
	if !ok {
		return nil
	}
	return &DropOperatorSpec{Op: *op}
}

func (p *parser) parseRemapOperator(kn, vn *yaml.Node) *RemapOperatorSpec {
	m := p.kindMapping(kn, vn)
	if vn.Kind != yaml.MappingNode {
		return nil
	}
	from, fok := m.opRef(kn, "from", "from_uid", true)
	to, tok := m.opRef(kn, "to", "to_uid", true)
	merge, mok := m.boolean("merge", DefaultMerge)
	if !fok || !tok || !mok {
		return nil
	}
	if from.ID == to.ID {
		at := m.keys["to"]
		if at == nil {
			at = m.keys["to_uid"]
		}
		p.errAt(at, at.Value, "'from' and 'to' are the same operator (%d); nothing to remap", from.ID)
		return nil
	}
	// Declarations of the old operator follow it.
	var moved []SlotTarget
	for k, d := range p.view {
		if k.op == from.ID {
			moved = append(moved, SlotTarget{Op: to.ID, Slot: k.slot, Decl: d})
		}
	}
	sortTargets(moved)
	movedSlots := map[string]bool{}
	for _, t := range moved {
		p.alias(kn, slotName{t.Op, t.Slot}, t.Decl)
		movedSlots[t.Slot] = true
	}
	// Slots of the target whose declarations an earlier rule moved away
	// would decode the remapped rows of the same name.
	var clash []slotName
	for k := range p.vacated {
		if k.op == to.ID && !movedSlots[k.slot] && p.view[k] == nil {
			clash = append(clash, k)
		}
	}
	if len(clash) > 0 {
		slices.SortFunc(clash, func(a, b slotName) int { return strings.Compare(a.slot, b.slot) })
		v := p.vacated[clash[0]]
		p.errAt(kn, kn.Value, "op %d had slot %q declared (slot %d at line %d) until rule %d moved it away: declarations are looked up by name, so op %d's rows of that slot, remapped here, would be decoded with it; declare slot %q of op %d, or remap in another order", to.ID, clash[0].slot, v.decl.Index, v.decl.Line, v.rule, from.ID, clash[0].slot, from.ID)
	}
	for k, d := range p.view {
		if k.op == from.ID {
			p.vacate(k, d)
		}
	}
	return &RemapOperatorSpec{From: *from, To: *to, Merge: merge}
}

// vacate takes name k, which a rule moves declared slot d away from, out of
// the view: rules after it see no declaration there.
func (p *parser) vacate(k slotName, d *SlotDecl) {
	delete(p.view, k)
	p.viewIndex = nil
	p.vacated[k] = vacatedName{decl: d, rule: p.rule}
}

// alias makes declaration d also apply to the name k (after a rename or a
// remap). A different declaration already bound to k is a conflict.
func (p *parser) alias(at *yaml.Node, k slotName, d *SlotDecl) {
	if old := p.view[k]; old != nil && old != d && !equivalentDecl(old, d) {
		p.errAt(at, at.Value, "after this rule slot %q of op %d would have two declarations that disagree (slot %d at line %d and slot %d at line %d): a name takes one declaration in a rule file (declare it once, or, when the slots' codecs differ, make the moves in two runs, a rule file each)", k.slot, k.op, old.Index, old.Line, d.Index, d.Line)
		return
	}
	if old := p.view[k]; old != nil {
		return
	}
	p.view[k] = d
	p.viewIndex = nil
	if cur := p.set.SlotDecl(k.op, k.slot); cur == nil {
		p.indexSlot(k.op, k.slot, d)
	} else if cur != d && !equivalentDecl(cur, d) {
		p.errAt(at, at.Value, "slot %q of op %d is declared differently before and after this rule (slot %d at line %d and slot %d at line %d): a name takes one declaration in a rule file (declare it once, or, when the slots' codecs differ, make the moves in two runs, a rule file each)", k.slot, k.op, cur.Index, cur.Line, d.Index, d.Line)
	}
}

func equivalentDecl(a, b *SlotDecl) bool {
	spec := func(c codec.Codec) string {
		if c == nil {
			return ""
		}
		return c.String()
	}
	return spec(a.KeyCodec) == spec(b.KeyCodec) && spec(a.ValueCodec) == spec(b.ValueCodec) &&
		a.TTL == b.TTL && a.Composite == b.Composite && a.Broadcast == b.Broadcast
}

func (p *parser) parseRenameSlot(kn, vn *yaml.Node) *RenameSlotSpec {
	m := p.kindMapping(kn, vn)
	if vn.Kind != yaml.MappingNode {
		return nil
	}
	op, ok := m.opRef(kn, "op", "uid", true)
	from, fok := m.reqStr(kn, "from")
	to, tok := m.reqStr(kn, "to")
	merge, mok := m.boolean("merge", DefaultMerge)
	ok = ok && mok
	if fok {
		fok = m.matchableSlot("from", from)
	}
	if tok {
		tok = m.validSlot("to", to)
	}
	if !ok || !fok || !tok {
		return nil
	}
	if from == to {
		p.errAt(m.get("to"), "to", "'from' and 'to' are the same slot %q; nothing to rename", to)
		return nil
	}
	if d := p.view[slotName{op.ID, from}]; d != nil {
		p.alias(kn, slotName{op.ID, to}, d)
		p.vacate(slotName{op.ID, from}, d)
	} else if v, ok := p.vacated[slotName{op.ID, to}]; ok {
		p.errAt(m.get("to"), "to", "slot %q of op %d is not declared, but %q was (slot %d at line %d) until rule %d moved it away: declarations are looked up by name, so the rows renamed here would be decoded with it; declare slot %q of op %d, or rename in another order", from, op.ID, to, v.decl.Index, v.decl.Line, v.rule, from, op.ID)
	}
	return &RenameSlotSpec{Op: *op, From: from, To: to, Merge: merge}
}

func (p *parser) parseDropSlot(kn, vn *yaml.Node) *DropSlotSpec {
	m := p.kindMapping(kn, vn)
	if vn.Kind != yaml.MappingNode {
		return nil
	}
	op, ok := m.opRef(kn, "op", "uid", true)
	slot, sok := m.reqStr(kn, "slot")
	if !ok || !sok || !m.matchableSlot("slot", slot) {
		return nil
	}
	return &DropSlotSpec{Op: *op, Slot: slot}
}

func (p *parser) parsePurgeKeys(kn, vn *yaml.Node) *PurgeKeysSpec {
	m := p.kindMapping(kn, vn)
	if vn.Kind != yaml.MappingNode {
		return nil
	}
	sc, ok := m.scope(kn)
	spec := &PurgeKeysSpec{Scope: sc, Codec: DefaultPurgeCodec}
	codecOK := true
	if m.present("codec") {
		c, cok := m.str("codec")
		if cok && c != "string" && PurgeKeyWidth(c) == 0 {
			p.errAt(m.get("codec"), "codec", "'codec' must be 'string', 'int64', 'uint64' or 'uint32', got %q", c)
			cok = false
		}
		ok, codecOK = ok && cok, cok
		if cok {
			spec.Codec = c
		}
	}
	hasKeys, hasFile := m.present("keys"), m.present("keys_file")
	switch {
	case hasKeys && hasFile:
		p.errAt(m.keys["keys_file"], "keys_file", "both 'keys' and 'keys_file' given in 'purge_keys'; use one")
		return nil
	case !hasKeys && !hasFile:
		m.missing(kn, "keys", " (give 'keys: [...]' or 'keys_file: <path>')")
		return nil
	}
	// The keys are read even when the rule has an error already, so that
	// every error of the file is reported in one pass (a keys file that
	// is missing too). Without a codec they are read as text, for the
	// errors of the list itself; what that reading warns of is left out.
	warned := len(p.warns)
	fail := func() *PurgeKeysSpec {
		if !codecOK {
			p.warns = p.warns[:warned]
		}
		return nil
	}
	list := purgeList{spec: spec, node: kn, rule: p.rule, ruleName: p.ruleName}
	numericFile := false // a keys file of integers alone, no codec said
	if hasKeys {
		if !p.inlineKeys(m.get("keys"), spec) {
			return fail()
		}
	} else {
		fn := m.get("keys_file")
		if fn == nil {
			return fail()
		}
		f, fok := p.stringValue(fn, "keys_file")
		if !fok {
			return fail()
		}
		if f == "" {
			p.errAt(fn, "keys_file", "'keys_file' must not be empty")
			return fail()
		}
		spec.KeysFile = f
		text, count, numeric, ok := p.loadKeysFile(fn, spec)
		if !ok {
			return fail()
		}
		numericFile = numeric && !m.present("codec")
		if count == 0 {
			// An erasure request exported empty, or the wrong file: an
			// audit of nothing erased must not pass for the erasure.
			p.errAt(fn, "keys_file", "keys file %q lists no keys (it is empty, or holds only comments and blank lines): a purge of nothing is refused; remove the rule to run without it", f)
			return fail()
		}
		list.text, list.count = text, count
	}
	if !ok {
		return fail()
	}
	if len(spec.Keys) == 0 && list.count == 0 {
		p.warnAt(kn, "purge_keys lists no keys: it matches nothing")
	}
	// Its index is built, and its repeats counted, when every list is
	// read (see finishPurges).
	p.purges = append(p.purges, list)
	declared := len(p.warns) // the codec checks' warnings follow
	if sc.Op != nil && sc.Slot != nil {
		if d := p.view[slotName{sc.Op.ID, *sc.Slot}]; d != nil && d.Broadcast {
			p.warnAt(kn, "slot %q of op %s is declared 'broadcast: true' (slot %d, line %d): purge_keys removes keyed rows by user key, and broadcast state has none; it matches only keyed rows the slot may hold", *sc.Slot, sc.Op, d.Index, d.Line)
		} else if d != nil && d.KeyCodec != nil {
			if kc := d.KeyCodec.String(); !purgeCodecFits(kc, spec.Codec) {
				p.warnAt(kn, "slot %q of op %s declares key codec %s but purge_keys encodes keys with %s: they cannot match", *sc.Slot, sc.Op, kc, spec.Codec)
			}
		}
	} else {
		// A text list of integers alone may be a list whose codec was
		// forgotten: its warning is not taken back.
		integers := numericFile || hasKeys && spec.Codec == "string" && allIntScalars(m.get("keys"))
		p.warnPurgeCodec(kn, sc, spec.Codec, integers)
	}
	if numericFile && len(p.warns) == declared {
		// The inline list's case below, where a file cannot quote its
		// keys: the codec said is the way to keep them text. (A slot
		// declared with an integer key codec was warned of above.)
		p.warnAt(m.get("keys_file"), "keys file %q lists only decimal integers, but they are matched as text (codec string, the default): a key a slot stores as an integer is found only with an integer codec ('codec: int64' or 'uint64' for an int64 or uint64 slot's, 'codec: uint32' for a uint32 slot's); say 'codec: string' if the keys are text", spec.KeysFile)
	}
	if hasKeys && spec.Codec == "string" && allIntScalars(m.get("keys")) {
		p.warnAt(m.get("keys"), "purge_keys lists its keys as integers, but matches them as text (codec string, the default): a key a slot stores as an integer is found only with an integer codec ('codec: int64' or 'uint64' for an int64 or uint64 slot's, 'codec: uint32' for a uint32 slot's)")
	}
	if hasKeys && spec.Codec == "string" {
		p.warnTypedKeys(m.get("keys"))
	}
	return spec
}

// warnTypedKeys warns of the keys of an inline list (codec string) that
// YAML reads as booleans or floats: they are matched as the text typed
// ("1.50" stays "1.50", not 1.5), which is what a quoted key says without
// doubt; and a slot whose keys are doubles is matched by no purge_keys
// codec.
func (p *parser) warnTypedKeys(n *yaml.Node) {
	if n == nil || n.Kind != yaml.SequenceNode {
		return
	}
	var first *yaml.Node
	count := 0
	for _, k := range n.Content {
		if t := k.ShortTag(); k.Kind == yaml.ScalarNode && (t == "!!bool" || t == "!!float") {
			if first == nil {
				first = k
			}
			count++
		}
	}
	if first == nil {
		return
	}
	what := "a boolean"
	if first.ShortTag() == "!!float" {
		what = "a float"
	}
	p.warnAt(first, "purge_keys lists %d key(s) that YAML reads as booleans or floats (the first, %s, is %s): each is matched as the text typed, %q; quote them to say they are text (no purge_keys codec matches a slot whose keys are doubles; drop its rows with an expression on 'key')", count, first.Value, what, first.Value)
}

// warnPurgeCodec warns of a purge_keys rule of scope sc (not one slot)
// whose codec fits the key codec of none of the declared slots in its
// scope, when it has some: declared, the erasure's subjects are in slots
// whose keys it cannot match (only undeclared slots' keys can). The slots
// are those the declarations name at this rule, earlier renames and
// remaps followed. The warning of an unscoped rule is taken back once
// every rule is read if another purge_keys rule, of a codec that fits, has
// each of those slots in its scope (see coveredCodecWarnings): an erasure
// of both string and integer keys, each rule left unscoped, is what was
// meant. It is not when the rule, of codec string, lists integers alone
// (integers: its codec may have been forgotten), nor in a file whose rules
// rename a slot or remap an operator.
func (p *parser) warnPurgeCodec(kn *yaml.Node, sc Scope, purgeCodec string, integers bool) {
	var codecs []string
	var slots []codecSlot
	names := slices.SortedFunc(maps.Keys(p.view), func(a, b slotName) int {
		return cmp.Or(cmp.Compare(a.op, b.op), strings.Compare(a.slot, b.slot))
	})
	for _, name := range names {
		d := p.view[name]
		// A composite slot's key codec is its logical key's (K of
		// K 0x1F element), which the purge's keys are matched against.
		if d == nil || !sc.MatchOp(name.op) || sc.Slot != nil && name.slot != *sc.Slot || d.KeyCodec == nil {
			continue
		}
		kc := d.KeyCodec.String()
		if purgeCodecFits(kc, purgeCodec) {
			return
		}
		if !slices.Contains(codecs, kc) {
			codecs = append(codecs, kc)
		}
		slots = append(slots, codecSlot{name, kc})
	}
	if len(codecs) > 0 {
		p.warnAt(kn, "the slots declared in its scope have key codec %s, but purge_keys encodes keys with %s: it matches no key of theirs (only undeclared slots' keys)", strings.Join(codecs, ", "), purgeCodec)
		if sc.All() && !integers {
			// (A rule scoped to an operator names the slots it means; a
			// text list of integers alone may have lost its codec.)
			p.codecWarns = append(p.codecWarns, codecWarning{warn: p.warns[len(p.warns)-1], purge: len(p.purges) - 1, slots: slots})
		}
	}
}

// codecSlot is a declared slot and its key codec.
type codecSlot struct {
	name  slotName
	codec string
}

// codecWarning is a warning of warnPurgeCodec: purge p.purges[purge] fits
// the key codec of none of the declared slots in its scope.
type codecWarning struct {
	warn  *Warning
	purge int
	slots []codecSlot
}

// coveredCodecWarnings takes back each warning of warnPurgeCodec whose
// slots another purge_keys rule, of a codec that fits each, has in its
// scope.
func (p *parser) coveredCodecWarnings() {
	if slices.ContainsFunc(p.set.Rules, func(r *Rule) bool { return r.Kind == KindRenameSlot || r.Kind == KindRemapOperator }) {
		// The other purges' scopes may name the slots otherwise.
		return
	}
	for _, cw := range p.codecWarns {
		covered := func(s codecSlot) bool {
			return slices.ContainsFunc(p.purges, func(l purgeList) bool {
				return l.spec != p.purges[cw.purge].spec && purgeCodecFits(s.codec, l.spec.Codec) &&
					l.spec.Scope.Match(s.name.op, []byte(s.name.slot), true)
			})
		}
		if !slices.ContainsFunc(cw.slots, func(s codecSlot) bool { return !covered(s) }) {
			p.warns = slices.DeleteFunc(p.warns, func(w *Warning) bool { return w == cw.warn })
		}
	}
}

// allIntScalars reports whether n is a non-empty list of YAML integers.
func allIntScalars(n *yaml.Node) bool {
	if n == nil || n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		return false
	}
	for _, k := range n.Content {
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!int" {
			return false
		}
	}
	return true
}

// purgeList is a purge_keys rule read by the walk of the rule file, whose
// list's index finishPurges builds.
type purgeList struct {
	spec     *PurgeKeysSpec
	node     *yaml.Node // the rule's 'purge_keys' key
	rule     int
	ruleName string
	// text is the keys file's (count keys in it) whose keys are yet to be
	// collected; "" for an inline list, collected already.
	text  string
	count int
}

// finishPurges builds the index of every purge list the walk read, after
// handing the lists, their filters built, to ParseOptions.KeysReady when
// the walk found no error; and warns of the repeats of each list.
func (p *parser) finishPurges() {
	if len(p.purges) == 0 {
		return
	}
	p.coveredCodecWarnings()
	if testhook.PurgeFilter != nil {
		for _, l := range p.purges {
			testhook.PurgeFilter(l.spec.filter.words)
		}
	}
	if p.opts.KeysReady != nil && len(p.errs) == 0 {
		lists := make([]*PurgeKeysSpec, len(p.purges))
		for i, l := range p.purges {
			lists[i] = l.spec
		}
		p.opts.KeysReady(lists)
	}
	for _, l := range p.purges {
		if l.count > 0 {
			l.spec.collectKeys(l.text, l.count)
		}
		l.spec.buildIndex()
		p.rule, p.ruleName = l.rule, l.ruleName
		if i, ok := l.spec.selfCheck(); !ok {
			p.errAt(l.node, "purge_keys", "internal error: the purge's key filter or index does not find listed key %q (line %d): the purge would leave its rows; nothing is written", l.spec.Display(i), l.spec.Lines[i])
		}
		if l.spec.Duplicates > 0 {
			p.warnAt(l.node, "purge_keys lists %d duplicate key(s); each key is purged once", l.spec.Duplicates)
		}
	}
}

// purgeCodecFits reports whether keys encoded with a purge_keys codec
// ("string": the bytes as written; "int64": 8 bytes little-endian) can
// equal the user keys of a slot whose key codec is keyCodec: string and
// bytes keys are their bytes; int64 and uint64 keys are the same 8
// little-endian bytes (a negative int64 matches a uint64 of 2^63 or more).
// The other codecs' encodings are neither.
func purgeCodecFits(keyCodec, purgeCodec string) bool {
	switch keyCodec {
	case "string", "bytes":
		return purgeCodec == "string"
	case "int64", "uint64":
		return purgeCodec == "int64" || purgeCodec == "uint64"
	case "uint32":
		return purgeCodec == "uint32"
	}
	return false
}

// inlineKeys reads an inline 'keys' list into spec.
func (p *parser) inlineKeys(n *yaml.Node, spec *PurgeKeysSpec) bool {
	if n == nil {
		return false
	}
	if n.Kind != yaml.SequenceNode {
		p.errAt(n, "keys", "'keys' must be a list of keys, got %s", describe(n))
		return false
	}
	spec.initFilter(len(n.Content))
	ok := true
	want := "a string"
	if spec.KeyWidth() > 0 {
		want = "a decimal " + spec.Codec
	}
	for i, kn := range n.Content {
		if kn.Kind == yaml.AliasNode {
			ok = false // (refused where it is met)
			continue
		}
		if !stringScalar(kn) {
			p.errAt(kn, "keys", "key %d in 'keys' must be %s, got %s", i+1, want, describe(kn))
			ok = false
			continue
		}
		s := kn.Value
		enc := s
		if spec.KeyWidth() > 0 {
			t := strings.TrimSpace(s)
			decimal := kn.ShortTag() == "!!int" || kn.ShortTag() == "!!str"
			v, why, hint := parseIntKey(t, spec.Codec)
			if why == "" && !decimal {
				why = "not a decimal " + spec.Codec // (a tag said otherwise)
			}
			if why != "" {
				p.errAt(kn, "keys", "key %d is %s: %q%s", i+1, why, s, hint)
				ok = false
				continue
			}
			enc = intKey(v, spec.KeyWidth())
		}
		spec.add(enc, i+1)
	}
	return ok
}

// collect appends the encoded key enc (from line) to Keys and Lines, not
// to the filter. A repeat of an earlier key stays in the lists until
// buildIndex.
func (s *PurgeKeysSpec) collect(enc string, line int) {
	s.Keys = append(s.Keys, enc)
	s.Lines = append(s.Lines, line)
}

// add is collect of a key that is added to the filter too (sized by
// initFilter).
func (s *PurgeKeysSpec) add(enc string, line int) {
	s.collect(enc, line)
	s.filter.add(enc)
}

// buildIndex indexes the collected keys, and drops each repeat of an
// earlier key from Keys and Lines, counting it in Duplicates. It does not
// write the filter, which a probe may be asking meanwhile (see
// ParseOptions.KeysReady). The keys are taken a batch at a time: each
// one's slot of the index is read for all of them first, so that the
// cache misses of the fresh, randomly accessed index overlap rather than
// come one after the other.
func (s *PurgeKeysSpec) buildIndex() {
	s.index = newKeyIndex(len(s.Keys))
	prefault.Slice(s.index.slots)
	keys, lines := s.Keys, s.Lines
	var hashes [prefetchBatch]uint64
	var sink uint64
	w := 0 // the keys kept so far: keys[:w]
	for lo := 0; lo < len(keys); lo += prefetchBatch {
		hi := min(lo+prefetchBatch, len(keys))
		for i := lo; i < hi; i++ {
			h := keyHash(keys[i])
			hashes[i-lo] = h
			sink += s.index.slots[s.index.slot(h)]
		}
		for i := lo; i < hi; i++ {
			// keys[i] is read before keys[w] (w <= i) is written.
			k, h := keys[i], hashes[i-lo]
			j, slot := find(&s.index, keys[:w], k, h)
			if j >= 0 {
				s.Duplicates++
				continue
			}
			if w != i {
				// Only a key after a repeat moves: a string stored is a
				// pointer written, which the collector's write barrier
				// slows while it runs (a lint of 100,000 keys: 1.6 ms of
				// its 34 ms of CPU).
				keys[w], lines[w] = k, lines[i]
			}
			w++
			s.index.insertAt(w-1, h, slot)
		}
	}
	prefetchSink.Add(sink)
	clear(keys[w:]) // the repeats' strings
	s.Keys, s.Lines = keys[:w], lines[:w]
	s.compactEncoded()
}

// compactEncoded moves the encodings of an 8-byte integer keys file's
// keys (once its repeats are dropped) to the start of their buffer, key i
// at 8*i, and gives the index the buffer (keyIndex.words). Key i lies at 8*j for
// some j >= i, and every key after it further on, so each move writes
// over a repeat's bytes or its own.
func (s *PurgeKeysSpec) compactEncoded() {
	if s.encoded == nil {
		return
	}
	for i, k := range s.Keys {
		if len(k) != 8 {
			return // a uint32 list's: 4 bytes, compared as strings
		}
		at := s.encoded[8*i : 8*i+8]
		if unsafe.StringData(k) == &at[0] {
			continue // in place: no repeat before it
		}
		copy(at, k)
		s.Keys[i] = unsafe.String(&at[0], 8)
	}
	s.encoded = s.encoded[:8*len(s.Keys)]
	s.index.words = s.encoded
}

// int64Key encodes an int64 user key as clink's int64_codec does: 8 bytes
// little-endian two's complement.
func int64Key(v int64) string { return intKey(uint64(v), 8) }

// intKey encodes an integer user key of width bytes (8: int64 and uint64,
// 4: uint32) as clink's codecs do: little-endian, two's complement; v is
// the key's bits.
func intKey(v uint64, width int) string {
	var b [8]byte
	for i := range width {
		b[i] = byte(v >> (8 * i))
	}
	return string(b[:width])
}

// parseIntKey parses t, a key of an integer purge_keys codec (surrounding
// blanks removed), as a decimal number of the codec's range, and returns
// its bits; why says what is wrong with it ("" for nothing), and hint, if
// not "", how to list it (see uint64KeyHint).
func parseIntKey(t, codec string) (v uint64, why, hint string) {
	if codec == "int64" {
		if i, ok := parseInt64(t); ok {
			return uint64(i), "", ""
		}
		if _, err := strconv.ParseInt(t, 10, 64); errors.Is(err, strconv.ErrRange) {
			return 0, "out of int64 range", uint64KeyHint(t)
		}
		return 0, "not a decimal int64", ""
	}
	bits := 64
	if codec == "uint32" {
		bits = 32
	}
	u, err := strconv.ParseUint(strings.TrimPrefix(t, "+"), 10, bits)
	switch {
	case err == nil:
		return u, "", ""
	case errors.Is(err, strconv.ErrRange):
		return 0, "out of " + codec + " range", ""
	case strings.HasPrefix(t, "-"):
		v, err := strconv.ParseInt(t, 10, 64)
		if err == nil && v == 0 {
			return 0, "", "" // -0, as an int64 list reads it
		}
		if err == nil || errors.Is(err, strconv.ErrRange) {
			return 0, "negative", " (a " + codec + " key is 0 or more)"
		}
	}
	return 0, "not a decimal " + codec, ""
}

func (p *parser) parsePurgeExpired(kn, vn *yaml.Node) *PurgeExpiredSpec {
	m := p.kindMapping(kn, vn)
	if vn.Kind != yaml.MappingNode {
		return nil
	}
	sc, ok := m.scope(kn)
	spec := &PurgeExpiredSpec{Scope: sc}
	an := m.get("as_of")
	switch {
	case !m.present("as_of"):
		m.missing(kn, "as_of", ` (an RFC 3339 time such as "2026-11-29T00:00:00Z", epoch milliseconds, or "now")`)
		return nil
	case an == nil:
		return nil
	}
	if !p.asOf(an, spec) || !ok {
		return nil
	}
	for k, d := range p.view {
		if d.TTL && sc.MatchOp(k.op) && (sc.Slot == nil || *sc.Slot == k.slot) {
			spec.Targets = append(spec.Targets, SlotTarget{Op: k.op, Slot: k.slot, Decl: d})
		}
	}
	sortTargets(spec.Targets)
	// clink's ExpiringMapState and ExpiringListState stamp every element
	// (format 3.3): a composite slot left out for want of 'ttl: true' is
	// most likely an omission.
	var untimed []SlotTarget
	for k, d := range p.view {
		if d.Composite && !d.TTL && sc.MatchOp(k.op) && (sc.Slot == nil || *sc.Slot == k.slot) {
			untimed = append(untimed, SlotTarget{Op: k.op, Slot: k.slot, Decl: d})
		}
	}
	sortTargets(untimed)
	for _, t := range untimed {
		p.warnAt(kn, "slot %q of op %d is declared 'composite: true' but not 'ttl: true': clink's ExpiringMapState and ExpiringListState stamp every element (format 3.3), and purge_expired leaves a slot not declared 'ttl: true' (slot %d, line %d); add 'ttl: true' to purge its expired elements", t.Slot, t.Op, t.Decl.Index, t.Decl.Line)
	}
	if len(spec.Targets) == 0 {
		switch {
		case sc.Op != nil && sc.Slot != nil && p.view[slotName{sc.Op.ID, *sc.Slot}] != nil:
			p.errAt(kn, "purge_expired", "slot %q of op %s is not declared 'ttl: true'; purge_expired only affects slots declared with 'ttl: true' under 'slots:'", *sc.Slot, sc.Op)
		case sc.All():
			p.errAt(kn, "purge_expired", "no slot is declared 'ttl: true'; purge_expired only affects slots declared with 'ttl: true' under 'slots:'")
		default:
			p.errAt(kn, "purge_expired", "no slot declared 'ttl: true' is in scope (%s); purge_expired only affects slots declared with 'ttl: true' under 'slots:'", sc)
		}
		return nil
	}
	return spec
}

func sortTargets(t []SlotTarget) {
	for i := 1; i < len(t); i++ {
		for j := i; j > 0 && (t[j].Op < t[j-1].Op || t[j].Op == t[j-1].Op && t[j].Slot < t[j-1].Slot); j-- {
			t[j], t[j-1] = t[j-1], t[j]
		}
	}
}

// asOf reads 'as_of': "now", an RFC 3339 time, or epoch milliseconds.
func (p *parser) asOf(n *yaml.Node, spec *PurgeExpiredSpec) bool {
	bad := func() bool {
		p.errAt(n, "as_of", `'as_of' must be an RFC 3339 time such as "2026-11-29T00:00:00Z", epoch milliseconds, or "now"; got %s`, describe(n))
		return false
	}
	if n.Kind != yaml.ScalarNode {
		return bad()
	}
	spec.AsOfText = n.Value
	if _, err := strconv.ParseInt(n.Value, 10, 64); n.ShortTag() != "!!str" && errors.Is(err, strconv.ErrRange) {
		// YAML reads an integer past int64 as a float.
		p.errAt(n, "as_of", "'as_of' %s is out of the range of epoch milliseconds (a signed 64-bit integer)", n.Value)
		return false
	}
	switch n.ShortTag() {
	case "!!int":
		ms, ok := p.intValue(n, "as_of", 64)
		if !ok {
			return false
		}
		spec.AsOfMs = ms
		spec.AsOf = time.UnixMilli(ms).UTC()
		// Epoch seconds of this century read as milliseconds fall in
		// 1970's first weeks and purge next to nothing: a slip likelier
		// than an instant of 1970.
		if ms >= 1e9 && ms < 1e11 {
			p.warnAt(n, "'as_of' %d is read as epoch milliseconds, %s; as seconds it would be %s: write %d000, or the time (%q)", ms,
				spec.AsOf.Format(time.RFC3339Nano), time.Unix(ms, 0).UTC().Format(time.RFC3339), ms, time.Unix(ms, 0).UTC().Format(time.RFC3339))
		}
		return true
	case "!!str", "!!timestamp":
		if n.Value == "now" {
			t := p.opts.Now()
			spec.Now = true
			spec.AsOf = t
			spec.AsOfMs = t.UnixMilli()
			return true
		}
		// RFC 3339 lets the T and the Z be written in lower case (its
		// section 5.6); Go's layout takes them in upper case only.
		t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(n.Value))
		if err != nil {
			return bad()
		}
		spec.AsOf = t
		spec.AsOfMs = t.UnixMilli()
		return true
	}
	return bad()
}

func (p *parser) parseSetValue(kn, vn *yaml.Node, r *Rule) *SetValueSpec {
	m := p.kindMapping(kn, vn)
	if vn.Kind != yaml.MappingNode {
		return nil
	}
	op, ok := m.opRef(kn, "op", "uid", true)
	slot, sok := m.reqStr(kn, "slot")
	src, eok := m.reqStr(kn, "expr")
	if !ok || !sok || !eok {
		if eok {
			p.checkSyntax(m.get("expr"), "expr", src) // (see parseFilter)
		}
		return nil
	}
	d := p.view[slotName{op.ID, slot}]
	if d == nil {
		// Every error of the file in one pass: the expression's syntax.
		if !p.syntaxOnly(m.get("expr"), "expr", src, op, slot) {
			p.errAt(m.get("slot"), "slot", "slot %q of op %s is not declared under 'slots:'; set_value needs its value codec", slot, op)
			p.checkSyntax(m.get("expr"), "expr", src)
		}
		return nil
	}
	if d.ValueCodec == nil {
		p.errAt(m.get("slot"), "slot", "slot %q of op %s is declared without a 'value' codec (slot %d, line %d); set_value needs one", slot, op, d.Index, d.Line)
		p.checkSyntax(m.get("expr"), "expr", src)
		return nil
	}
	erase, bok := m.boolean("erase_empty", false)
	if erase && !codec.Collection(d.ValueCodec) {
		p.errAt(m.get("erase_empty"), "erase_empty", "'erase_empty' needs a list or map value codec; slot %q of op %s stores %s", slot, op, d.ValueCodec)
		bok = false
	}
	if erase && d.Broadcast {
		p.errAt(m.get("erase_empty"), "erase_empty", "'erase_empty' erases a keyed row whose collection became empty, as clink's keyed collections do; slot %q of op %s is declared 'broadcast: true' (slot %d, line %d), whose row clink keeps when empty", slot, op, d.Index, d.Line)
		bok = false
	}
	en := m.get("expr")
	c := p.compile(en, "expr", src, d.checkEnv, false)
	if !bok {
		return nil // the expression's errors told
	}
	if c == nil || !p.checkExpireAt(en, "expr", c, d, Scope{}) {
		return nil
	}
	if !resultFits(c.resultType, d.valueType) {
		hint := ""
		if c.resultType.Kind() == reflect.Float64 {
			hint = " (wrap it in int(), which fails on a value that does not fit)"
		}
		line, col := p.exprPos(en, 0)
		p.addErr(line, col, "expr", fmt.Sprintf("'expr' yields %s but slot %q stores %s (codec %s)%s", exprTypeName(c.resultType), slot, exprTypeName(d.valueType), d.ValueCodec, hint))
		return nil
	}
	if c.constNil && d.valueType != nil {
		line, col := p.exprPos(en, 0)
		p.addErr(line, col, "expr", fmt.Sprintf("'expr' yields nil for every row, and slot %q stores %s (codec %s), which has no nil", slot, exprTypeName(d.valueType), d.ValueCodec))
		return nil
	}
	spec := d.ValueCodec.String()
	return &SetValueSpec{
		Op: *op, Slot: slot, Expr: src, Decl: d, EraseEmpty: erase,
		Program: &ValueProgram{Source: src, ResultType: c.resultType, prog: c.prog, fields: c.fields},
		label:   ruleLabel(r.Index, p.ruleName, KindSetValue),
		text:    spec == "string", floats: strings.Contains(spec, "double"), maps: strings.Contains(spec, "map<"),
	}
}

func ruleLabel(i int, name string, k Kind) string {
	r := Rule{Index: i, Name: name, Kind: k}
	return r.Label()
}

// stateType reads a version-map state type: no '|' or '\n' (clink's
// StateVersionMap::set rejects them).
func (m *mapping) stateType(at *yaml.Node) (string, bool) {
	st, ok := m.reqStr(at, "state_type")
	if ok && strings.ContainsAny(st, "|\n") {
		m.p.errAt(m.get("state_type"), "state_type", "'state_type' must not contain '|' or a newline, got %q", st)
		return "", false
	}
	return st, ok
}

func (p *parser) parseSetVersion(kn, vn *yaml.Node) *SetVersionSpec {
	m := p.kindMapping(kn, vn)
	if vn.Kind != yaml.MappingNode {
		return nil
	}
	op, ok := m.opRef(kn, "op", "uid", true)
	st, sok := m.stateType(kn)
	spec := &SetVersionSpec{StateType: st}
	vok := false
	if vnode := m.get("version"); vnode != nil {
		var v uint64
		v, vok = p.uintValue(vnode, "version", 32)
		spec.Version = uint32(v)
	} else if !m.present("version") {
		m.missing(kn, "version", "")
	}
	slotOK := true
	if m.present("slot") {
		spec.Slot, slotOK = m.str("slot")
		spec.HasSlot = slotOK
		if slotOK {
			slotOK = m.validSlot("slot", spec.Slot)
		}
	}
	if !ok || !sok || !vok || !slotOK {
		return nil
	}
	spec.Op = *op
	return spec
}

func (p *parser) parseDropVersion(kn, vn *yaml.Node) *DropVersionSpec {
	m := p.kindMapping(kn, vn)
	if vn.Kind != yaml.MappingNode {
		return nil
	}
	op, ok := m.opRef(kn, "op", "uid", true)
	st, sok := m.stateType(kn)
	if !ok || !sok {
		return nil
	}
	return &DropVersionSpec{Op: *op, StateType: st}
}

var subtasksRE = regexp.MustCompile(`^([0-9]+)(?:-([0-9]+))?$`)

func (p *parser) parseRescale(kn, vn *yaml.Node) *RescaleSpec {
	m := p.kindMapping(kn, vn)
	if vn.Kind != yaml.MappingNode {
		return nil
	}
	dropLost, dok := m.boolean("drop_lost", false)
	if !dok {
		return nil
	}
	hasP, hasG := m.present("parallelism"), m.present("groups")
	switch {
	case hasP && hasG:
		p.errAt(m.keys["groups"], "groups", "both 'parallelism' and 'groups' given in 'rescale'; use one")
		return nil
	case !hasP && !hasG:
		m.missing(kn, "parallelism", " (give 'parallelism: M' or 'groups: [{subtasks: \"0-3\", parallelism: M}, ...]')")
		return nil
	case hasP:
		n := m.get("parallelism")
		if n == nil {
			return nil
		}
		par, ok := p.parallelism(n)
		if !ok {
			return nil
		}
		return &RescaleSpec{Parallelism: par, DropLost: dropLost}
	}
	gn := m.get("groups")
	if gn == nil {
		return nil
	}
	if gn.Kind != yaml.SequenceNode || len(gn.Content) == 0 {
		p.errAt(gn, "groups", "'groups' must be a non-empty list of {subtasks, parallelism}, got %s", describe(gn))
		return nil
	}
	spec := &RescaleSpec{DropLost: dropLost}
	ok := true
	for i, g := range gn.Content {
		gm := p.mapping(g, nil, fmt.Sprintf("rescale group %d", i+1), []string{"subtasks", "parallelism"})
		if g.Kind != yaml.MappingNode {
			ok = false
			continue
		}
		grp := RescaleGroup{Line: g.Line, Col: g.Column}
		s, sok := gm.reqStr(g, "subtasks")
		if sok {
			mm := subtasksRE.FindStringSubmatch(strings.TrimSpace(s))
			var a, b int
			var err1, err2 error
			if mm != nil {
				a, err1 = strconv.Atoi(mm[1])
				b = a
				if mm[2] != "" {
					b, err2 = strconv.Atoi(mm[2])
				}
			}
			if mm == nil || err1 != nil || err2 != nil || b < a || a > 1<<20 || b > 1<<20 {
				p.errAt(gm.get("subtasks"), "subtasks", `bad 'subtasks' %q: want "a-b" or "a" (old global subtask indices, a <= b)`, s)
				sok = false
			} else {
				grp.Subtasks, grp.First, grp.Last = s, a, b
			}
		}
		pok := false
		if pn := gm.get("parallelism"); pn != nil {
			grp.Parallelism, pok = p.parallelism(pn)
		} else if !gm.present("parallelism") {
			gm.missing(g, "parallelism", "")
		}
		if !sok || !pok {
			ok = false
			continue
		}
		if n := len(spec.Groups); n > 0 && grp.First <= spec.Groups[n-1].Last {
			prev := spec.Groups[n-1]
			p.errAt(gm.get("subtasks"), "subtasks", "subtasks %q overlap or precede the previous group's %q (line %d); groups must be in increasing order without overlap", grp.Subtasks, prev.Subtasks, prev.Line)
			ok = false
			continue
		}
		spec.Groups = append(spec.Groups, grp)
	}
	if !ok {
		return nil
	}
	return spec
}

func (p *parser) parallelism(n *yaml.Node) (int, bool) {
	v, ok := p.intValue(n, "parallelism", 64)
	if !ok {
		return 0, false
	}
	if v < 1 || v > MaxParallelism {
		p.errAt(n, "parallelism", "'parallelism' must be in 1..%d, got %d", MaxParallelism, v)
		return 0, false
	}
	if v > WarnParallelism {
		subtasks := "subtasks get"
		if v-WarnParallelism == 1 {
			subtasks = "subtask gets"
		}
		p.warnAt(n, "parallelism %d is above %d: clink has %d key groups, so %d %s no keyed state, only operator state", v, WarnParallelism, savepoint.NumKeyGroups, v-WarnParallelism, subtasks)
	}
	return int(v), true
}

// exprTypeName names a type an expression yields or a slot stores as the
// rule language speaks of it: bytes, a list, a map, rather than Go's
// []uint8, []interface {}, map[string]interface {}.
func exprTypeName(t reflect.Type) string {
	if t == nil {
		return "any value"
	}
	switch {
	case t == bytesType:
		return "bytes"
	case t.Kind() == reflect.Interface:
		return "any value"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Interface:
		return "a list"
	case t.Kind() == reflect.Slice:
		return "a list of " + exprTypeName(t.Elem())
	case t.Kind() == reflect.Map:
		return "a map"
	}
	return t.String()
}
