package rules

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/sptool/sptool/internal/textdist"
	"github.com/sptool/sptool/savepoint"
)

// ParseOptions tunes Parse and Load. The zero value is ready to use.
type ParseOptions struct {
	// Now is the clock 'as_of: now' is resolved with, once, at load time;
	// nil means time.Now. Tests inject a fixed clock.
	Now func() time.Time
	// Dir is the directory keys files are resolved against; "" means the
	// directory of the rule file's name.
	Dir string
	// MaxExprNodes bounds the size of one expression; 0 means
	// DefaultMaxExprNodes.
	MaxExprNodes uint
	// ReadFile reads keys files; nil means ReadKeysFile. Tests and fuzzers
	// substitute an in-memory file system. The set keeps the bytes it
	// returns (a list's keys are views of them, not copies): they must not
	// change after.
	ReadFile func(name string) ([]byte, error)
	// KeysReady, if set, is called once during the parse, when the whole
	// file has been read without an error, with the rule file's purge
	// lists (rules.PurgeKeysSpec, in rule order; none: not called) as
	// soon as their filters are built (MayMatch, MayMatchColumn), before
	// their indexes are (Lookup, Match, Keys, Duplicates): a caller may
	// hand the filters to other goroutines, which ask them while the
	// parse goes on. The lists are those of the Set Parse returns, if it
	// returns one (a lint may still fail it).
	KeysReady func(lists []*PurgeKeysSpec)
	// Declarations reads the file for its slot declarations alone (the
	// codecs of cat, export and diff's --rules): 'rules' may be left out.
	// Rules it holds are still read and checked.
	Declarations bool
}

// MaxRuleFileSize and MaxKeysFileSize bound the files a rule set is read
// from: a rule file is a page of YAML, a keys file a line per key (1 GiB
// holds tens of millions of keys; split a larger erasure into several
// rules). Larger files, and files that are not regular files (a device
// such as /dev/zero would be read without end), are refused before they
// are read.
const (
	MaxRuleFileSize = 64 << 20
	MaxKeysFileSize = 1 << 30
)

// ReadKeysFile reads a keys file: a regular file of at most
// MaxKeysFileSize bytes.
func ReadKeysFile(path string) ([]byte, error) {
	return savepoint.ReadRegularFile(path, MaxKeysFileSize)
}

// Load reads and compiles the rule file at path (see Parse).
func Load(path string) (*Set, error) { return LoadWithOptions(path, ParseOptions{}) }

// LoadDeclarations is Load for a file read for its slot declarations alone
// (ParseOptions.Declarations): 'rules' may be left out.
func LoadDeclarations(path string) (*Set, error) {
	return LoadWithOptions(path, ParseOptions{Declarations: true})
}

// LoadWithOptions is Load with options.
func LoadWithOptions(path string, opts ParseOptions) (*Set, error) {
	src, err := savepoint.ReadRegularFile(path, MaxRuleFileSize)
	if err != nil {
		return nil, fmt.Errorf("read rule file: %w", err)
	}
	return ParseWithOptions(path, src, opts)
}

// Parse compiles the rule file src; filename names it in errors and is the
// base keys files are resolved against. It runs three phases: parse (the
// YAML node tree, walked by hand so that every key, type, duplicate and
// extra document is checked and positioned), validate (names, ranges,
// operator references, rule order) and compile (codecs, expressions, keys
// files). Every problem of the file is reported at once, as an *Errors
// that also carries the lint warnings; on success the warnings are in
// Set.Warnings.
func Parse(filename string, src []byte) (*Set, error) {
	return ParseWithOptions(filename, src, ParseOptions{})
}

// ParseWithOptions is Parse with options.
func ParseWithOptions(filename string, src []byte, opts ParseOptions) (*Set, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Dir == "" {
		opts.Dir = filepath.Dir(filename)
	}
	if opts.MaxExprNodes == 0 {
		opts.MaxExprNodes = DefaultMaxExprNodes
	}
	if opts.ReadFile == nil {
		opts.ReadFile = ReadKeysFile
	}
	sum := sha256.Sum256(src)
	p := &parser{
		file: filename,
		src:  src,
		opts: opts,
		set: &Set{
			Digest:    hex.EncodeToString(sum[:]),
			Source:    filename,
			slotIndex: declIndex{},
		},
	}
	p.run()
	slices.SortStableFunc(p.warns, func(a, b *Warning) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	if len(p.errs) > 0 {
		e := &Errors{List: p.errs, Warnings: p.warns, Omitted: p.omitted}
		e.sort()
		return nil, e
	}
	p.set.Warnings = p.warns
	return p.set, nil
}

// parser holds the state of one Parse call. The rule/slot fields are the
// context every error is tagged with.
type parser struct {
	file       string
	src        []byte
	lineStarts []int
	opts       ParseOptions
	set        *Set
	errs       []*Error
	warns      []*Warning
	// codecWarns are warnPurgeCodec's warnings, which another purge may
	// take back (coveredCodecWarnings).
	codecWarns []codecWarning

	rule     int
	ruleName string
	slot     int

	// view maps the (op, slot) names a declaration has at the rule being
	// parsed; rename_slot and remap_operator extend it, and take from it
	// the names they move a declared slot away from (vacated).
	view    map[slotName]*SlotDecl
	vacated map[slotName]vacatedName
	// viewIndex is view as a declIndex, what the rule being parsed sees
	// (Rule.decls); nil when a rule changed view since it was built.
	viewIndex *declIndex

	// purges are the purge_keys rules read, whose indexes are built at
	// the end of the walk (finishPurges).
	purges []purgeList

	// omitted counts the problems found past maxErrors.
	omitted int

	// badDecls are the slots whose declaration has a problem (reported):
	// a rule naming one is not told again that it is not declared.
	badDecls map[slotName]bool
}

// maxErrors bounds the problems a parse holds and lists: a hostile file of
// 2,000,000 bad rules took 1.5 GB and printed 566 MB of them.
const maxErrors = 1000

// vacatedName is a declared slot's name that a rule moved the slot away
// from: Set.SlotDecl still gives the declaration for it (declarations are
// looked up by name, whatever the rule), so rows of an undeclared slot
// must not be moved into it.
type vacatedName struct {
	decl *SlotDecl
	rule int
}

type slotName struct {
	op   uint64
	slot string
}

func (p *parser) addErr(line, col int, key, msg string) {
	if len(p.errs) >= maxErrors {
		p.omitted++ // a hostile file's millions of problems: counted, not held
		return
	}
	p.errs = append(p.errs, &Error{
		File: p.file, Line: line, Col: col,
		Rule: p.rule, RuleName: p.ruleName, Slot: p.slot,
		Key: key, Msg: msg, sortLine: line, sortCol: col,
	})
}

// errAt reports a problem at node n about key.
func (p *parser) errAt(n *yaml.Node, key, format string, args ...any) {
	line, col := 1, 1
	if n != nil {
		line, col = n.Line, n.Column
	}
	p.addErr(line, col, key, fmt.Sprintf(format, args...))
}

// warnAt records a lint finding at node n.
func (p *parser) warnAt(n *yaml.Node, format string, args ...any) {
	line, col := 1, 1
	if n != nil {
		line, col = n.Line, n.Column
	}
	p.warns = append(p.warns, &Warning{
		File: p.file, Line: line, Col: col,
		Rule: p.rule, RuleName: p.ruleName, Slot: p.slot,
		Msg: fmt.Sprintf(format, args...),
	})
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxErr reports a YAML syntax error. yaml.v3 gives the line only; the
// column is that of the first tab on the line for tab problems, else of the
// line's first non-blank character.
func (p *parser) syntaxErr(err error) {
	msg := err.Error()
	line, col := 1, 1
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
		if isParserError(msg) {
			// yaml.v3 prints the parser's marks 0-based (its scanner
			// errors are 1-based): the line of the construct being parsed.
			line++
			if strings.HasPrefix(msg, "did not find expected") {
				// That is where the enclosing block starts; the line
				// at fault is the one whose prefix first fails so.
				if at, ok := p.culpritLine(line, msg); ok && at != line {
					msg += fmt.Sprintf(" (in the block that starts on line %d)", line)
					line = at
				}
			}
		}
		text, _ := p.line(line)
		col = 1
		if i := strings.IndexByte(text, '\t'); i >= 0 && strings.Contains(msg, "cannot start any token") {
			col = runeCol(text, i)
			msg += " (a tab; indent with spaces)"
		} else if i := strings.IndexFunc(text, func(r rune) bool { return r != ' ' && r != '\t' }); i >= 0 {
			col = runeCol(text, i)
		}
	} else {
		// The reader's errors (bytes that are not UTF-8, control
		// characters) come without a position: it is that of the first
		// such character.
		msg = strings.TrimPrefix(msg, "yaml: ")
		if l, c, b, ok := firstUnreadable(p.src); ok {
			line, col = l, c
			msg += fmt.Sprintf(" (byte %#02x)", b)
		}
	}
	p.addErr(line, col, "", "YAML syntax error: "+msg)
}

// maxCulpritScan bounds the lines culpritLine tries past a block's start,
// and maxCulpritBytes the bytes it parses in all (each try parses the file
// up to the line): a few milliseconds.
const (
	maxCulpritScan  = 500
	maxCulpritBytes = 4 << 20
)

// culpritLine returns the first line from from on (1-based) at which the
// rule file's lines up to it fail to parse with the error msg: yaml.v3
// names the line where the block being parsed starts ("did not find
// expected key" on a mapping's first line), not the one at fault.
func (p *parser) culpritLine(from int, msg string) (int, bool) {
	p.indexLines()
	budget := maxCulpritBytes
	for l := from; l <= min(len(p.lineStarts), from+maxCulpritScan); l++ {
		end := len(p.src)
		if l < len(p.lineStarts) {
			end = p.lineStarts[l]
		}
		if budget -= end; budget < 0 {
			return 0, false
		}
		var n yaml.Node
		if err := yaml.Unmarshal(p.src[:end], &n); err != nil {
			if text, _ := p.line(l); strings.HasSuffix(err.Error(), msg) && strings.TrimSpace(text) != "" {
				return l, true
			}
			return 0, false // another error first: no guess
		}
	}
	return 0, false
}

// firstUnreadable returns the 1-based line and column (in characters) of
// the first character of src that YAML's reader refuses, and its first
// byte: one not valid UTF-8, or a control character other than tab, line
// feed and carriage return (YAML 1.2's printable set, as yaml.v3 checks
// it). A byte order mark at the start is allowed.
func firstUnreadable(src []byte) (line, col int, b byte, ok bool) {
	line, col = 1, 1
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		printable := r == 0x09 || r == 0x0A || r == 0x0D || r >= 0x20 && r <= 0x7E || r == 0x85 ||
			r >= 0xA0 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
		if r == utf8.RuneError && size == 1 || !printable {
			return line, col, src[i], true
		}
		switch {
		case r == '\n':
			line, col = line+1, 1
		case i > 0 || r != 0xFEFF: // (the mark is no column)
			col++
		}
		i += size
	}
	return 0, 0, 0, false
}

// isParserError reports whether a yaml.v3 message comes from its parser
// (as opposed to its scanner); see syntaxErr.
func isParserError(msg string) bool {
	switch msg {
	case "did not find expected <document start>", "did not find expected node content",
		"did not find expected key", "did not find expected '-' indicator",
		"did not find expected ',' or ']'", "did not find expected ',' or '}'":
		return true
	}
	return strings.HasPrefix(msg, "found duplicate %") || strings.HasPrefix(msg, "found incompatible YAML document") ||
		strings.HasPrefix(msg, "found undefined tag handle")
}

// runeCol returns the 1-based column (in characters) of byte offset i.
func runeCol(s string, i int) int { return len([]rune(s[:i])) + 1 }

func (p *parser) run() {
	dec := yaml.NewDecoder(bytes.NewReader(p.src))
	var doc yaml.Node
	if err := decodeNode(dec, &doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.addErr(1, 1, "", "empty rule file: want 'version: 1' and 'rules:'")
			return
		}
		p.syntaxErr(err)
		return
	}
	var extra yaml.Node
	switch err := decodeNode(dec, &extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		p.syntaxErr(err)
	default:
		p.errAt(&extra, "", "a second YAML document is not allowed: a rule file holds exactly one document")
	}
	p.checkDocAliases(&doc)

	var root *yaml.Node
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root = doc.Content[0]
	}
	if root == nil || root.Kind != yaml.MappingNode {
		what := "nothing"
		if root != nil {
			what = describe(root)
		}
		p.errAt(root, "", "a rule file must be a mapping with 'version' and 'rules', got %s", what)
		return
	}
	top := p.mapping(root, nil, "the rule file", []string{"version", "slots", "rules"})
	if vn := top.get("version"); vn != nil {
		if v, ok := p.intValue(vn, "version", 64); ok {
			if v != SupportedVersion {
				p.errAt(vn, "version", "unsupported 'version' %d: this sptool reads version %d", v, SupportedVersion)
			}
		}
	} else if !top.present("version") {
		p.errAt(root, "version", "missing 'version' (want 'version: %d' at the top level)", SupportedVersion)
	}
	p.set.Version = SupportedVersion

	if sn := top.get("slots"); sn != nil {
		p.parseSlots(sn)
	}
	p.view, p.vacated = map[slotName]*SlotDecl{}, map[slotName]vacatedName{}
	for _, d := range p.set.Slots {
		k := slotName{d.Op.ID, d.Slot}
		p.view[k] = d
	}
	if rn := top.get("rules"); rn != nil {
		p.parseRules(rn, top.keys["rules"])
	} else if !top.present("rules") && !p.opts.Declarations {
		p.errAt(root, "rules", "missing 'rules' (a list of rules)")
	}
	p.rule, p.ruleName, p.slot = 0, "", 0
	p.finishPurges()
	p.rule, p.ruleName = 0, ""
	if len(p.errs) == 0 {
		p.lint()
	}
}

// decodeNode decodes the next document into n, turning a panic of the YAML
// library into an error so that no input can crash a caller.
func decodeNode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	return dec.Decode(n)
}

// checkDocAliases reports every alias of the document (checkAliases),
// naming the rule of one in a rule.
func (p *parser) checkDocAliases(doc *yaml.Node) {
	root := doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root = doc.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		p.checkAliases(doc)
		return
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		p.checkAliases(k)
		if k.Value != "rules" || v.Kind != yaml.SequenceNode {
			p.checkAliases(v)
			continue
		}
		for j, rn := range v.Content {
			p.rule, p.ruleName = j+1, ruleNameOf(rn)
			p.checkAliases(rn)
		}
		p.rule, p.ruleName = 0, ""
	}
}

// ruleNameOf returns the 'name' a rule's mapping gives, or "".
func ruleNameOf(rn *yaml.Node) string {
	if rn.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(rn.Content); i += 2 {
		if k, v := rn.Content[i], rn.Content[i+1]; k.Value == "name" && v.Kind == yaml.ScalarNode {
			return v.Value
		}
	}
	return ""
}

// checkAliases reports every alias: rule files are read without alias
// expansion, so that a file means what it says.
func (p *parser) checkAliases(n *yaml.Node) {
	if n == nil {
		return
	}
	if n.Kind == yaml.AliasNode {
		p.errAt(n, "", "YAML alias '*%s' is not supported in a rule file; write the value out", n.Value)
		return
	}
	for _, c := range n.Content {
		p.checkAliases(c)
	}
}

// keyName shows a mapping key of the rule file in a message: in single
// quotes, or, if it holds a quote or a character that is not printable (an
// escape sequence would act on the terminal), quoted as Go quotes it.
func keyName(k string) string {
	if strings.ContainsRune(k, '\'') || strings.ContainsFunc(k, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return strconv.Quote(k)
	}
	return "'" + k + "'"
}

// describe names a node's type and value for messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			return "an empty list"
		}
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.DocumentNode:
		return "a document"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	switch n.ShortTag() {
	case "!!null":
		return "null"
	case "!!str":
		return fmt.Sprintf("string %q", v)
	case "!!int":
		return "integer " + v
	case "!!float":
		return "float " + v
	case "!!bool":
		return "boolean " + v
	case "!!timestamp":
		return "timestamp " + v
	}
	return fmt.Sprintf("%s %q", n.ShortTag(), v)
}

// mapping is a YAML mapping whose keys have been checked: scalar, unique,
// known.
type mapping struct {
	p    *parser
	n    *yaml.Node
	what string
	keys map[string]*yaml.Node
	vals map[string]*yaml.Node
	// order lists the keys in file order.
	order []string
}

// mapping checks that n is a mapping and that its keys are unique and in
// allowed (nil allows every key). what names it in messages ("'drop_slot'",
// "the top level"). For a node that is not a mapping it reports an error
// and returns an empty mapping, so callers need no nil checks.
func (p *parser) mapping(n *yaml.Node, at *yaml.Node, what string, allowed []string) *mapping {
	m := &mapping{p: p, n: n, what: what, keys: map[string]*yaml.Node{}, vals: map[string]*yaml.Node{}}
	if n.Kind == yaml.AliasNode {
		return m // reported by checkAliases
	}
	if n.Kind != yaml.MappingNode {
		key := strings.Trim(what, "'")
		p.errAt(n, key, "%s must be a mapping, got %s", what, describe(n))
		return m
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if kn.Kind != yaml.ScalarNode {
			if kn.Kind != yaml.AliasNode {
				p.errAt(kn, "", "keys in %s must be plain names, got %s", what, describe(kn))
			}
			continue
		}
		k := kn.Value
		if k == "<<" && kn.ShortTag() == "!!merge" {
			p.errAt(kn, k, "YAML merge key '<<' is not supported in a rule file; write the keys out")
			continue
		}
		if first, dup := m.keys[k]; dup {
			p.errAt(kn, k, "duplicate key %s in %s (first at line %d:%d)", keyName(k), what, first.Line, first.Column)
			continue
		}
		if allowed != nil && !contains(allowed, k) {
			p.errAt(kn, k, "unknown key %s in %s%s", keyName(k), what, suggest(k, allowed))
			continue
		}
		m.keys[k] = kn
		m.vals[k] = vn
		m.order = append(m.order, k)
	}
	return m
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// suggest returns " (did you mean 'x'?)" for the closest allowed key within
// edit distance 2, or the list of allowed keys.
func suggest(k string, allowed []string) string {
	best, bestD := "", 3
	for _, a := range allowed {
		if d := textdist.Distance(k, a); d < bestD {
			best, bestD = a, d
		}
	}
	if best != "" && len(k) > 2 {
		return fmt.Sprintf(" (did you mean '%s'?)", best)
	}
	quoted := make([]string, len(allowed))
	for i, a := range allowed {
		quoted[i] = "'" + a + "'"
	}
	return " (want " + strings.Join(quoted, ", ") + ")"
}

// present reports whether key k was given (even with a bad value).
func (m *mapping) present(k string) bool {
	for i := 0; i+1 < len(m.n.Content); i += 2 {
		if m.n.Content[i].Value == k && m.n.Content[i].Kind == yaml.ScalarNode {
			return true
		}
	}
	return false
}

// get returns the value node of k, nil when absent (or an alias, which was
// reported already).
func (m *mapping) get(k string) *yaml.Node {
	v := m.vals[k]
	if v == nil || v.Kind == yaml.AliasNode {
		return nil
	}
	return v
}

// missing reports a required key that is absent. at is the key node naming
// the mapping (the kind key), or the mapping itself.
func (m *mapping) missing(at *yaml.Node, k, hint string) {
	if at == nil {
		at = m.n
	}
	m.p.errAt(at, k, "missing '%s' in %s%s", k, m.what, hint)
}

// str returns the string value of k; ok is false when absent or invalid.
func (m *mapping) str(k string) (string, bool) {
	n := m.get(k)
	if n == nil {
		return "", false
	}
	return m.p.stringValue(n, k)
}

// reqStr is str for a required key.
func (m *mapping) reqStr(at *yaml.Node, k string) (string, bool) {
	if !m.present(k) {
		m.missing(at, k, "")
		return "", false
	}
	return m.str(k)
}

// boolean returns the boolean value of k, def when absent.
func (m *mapping) boolean(k string, def bool) (bool, bool) {
	n := m.get(k)
	if n == nil {
		return def, !m.present(k)
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		m.p.errAt(n, k, "'%s' must be true or false, got %s", k, describe(n))
		return def, false
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		m.p.errAt(n, k, "'%s' must be true or false, got %s", k, describe(n))
		return def, false
	}
	return b, true
}

// stringValue reads a scalar as a string, as spelled: strings, and also
// integers, floats, booleans and timestamps (so that `slot: 2` names slot
// "2"). Null, lists and mappings are errors.
func (p *parser) stringValue(n *yaml.Node, key string) (string, bool) {
	if n.Kind == yaml.AliasNode {
		return "", false
	}
	if !stringScalar(n) {
		p.errAt(n, key, "'%s' must be a string, got %s", key, describe(n))
		return "", false
	}
	return n.Value, true
}

// stringScalar reports whether n is a scalar that reads as a string, as
// spelled (see stringValue).
func stringScalar(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode {
		return false
	}
	switch n.ShortTag() {
	case "!!str", "!!int", "!!float", "!!bool", "!!timestamp":
		return true
	}
	return false
}

// intValue reads an integer scalar that fits in a signed integer of bits.
func (p *parser) intValue(n *yaml.Node, key string, bits int) (int64, bool) {
	if n.Kind == yaml.AliasNode {
		return 0, false
	}
	if tooLarge(n) {
		p.errAt(n, key, "'%s' is out of range: %s", key, n.Value)
		return 0, false
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		p.errAt(n, key, "'%s' must be an integer, got %s", key, describe(n))
		return 0, false
	}
	if p.refuseOctal(n, key) {
		return 0, false
	}
	var v int64
	if err := n.Decode(&v); err != nil || (bits < 64 && (v < -(1<<(bits-1)) || v >= 1<<(bits-1))) {
		p.errAt(n, key, "'%s' is out of range: %s", key, n.Value)
		return 0, false
	}
	return v, true
}

// octalLooking reports whether the integer literal v starts with a 0 that
// another digit follows (037): YAML reads it as octal (31), where a
// number elsewhere in a rule file (a purge's int64 keys, a slot named
// 012) is taken as spelled, and an operator id or a version so written is
// most likely meant in decimal.
func octalLooking(v string) bool {
	v = strings.TrimLeft(strings.TrimSpace(v), "+-")
	return len(v) > 1 && v[0] == '0' && v[1] >= '0' && v[1] <= '9'
}

// refuseOctal reports, and says why, an integer scalar written with a
// leading 0 (octalLooking).
func (p *parser) refuseOctal(n *yaml.Node, key string) bool {
	if !octalLooking(n.Value) {
		return false
	}
	digits := strings.TrimLeft(strings.TrimLeft(strings.TrimSpace(n.Value), "+-"), "0")
	p.errAt(n, key, "'%s' is written %s: YAML reads an integer with a leading 0 as octal, where sptool takes other numbers of a rule file as spelled; write %s for the decimal number, or 0o%s for the octal one", key, n.Value, cmp.Or(digits, "0"), cmp.Or(digits, "0"))
	return true
}

// tooLarge reports whether n is a decimal integer literal beyond 64 bits,
// which YAML resolves as a float (not one tagged !!float that fits).
func tooLarge(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!float" {
		return false
	}
	d := strings.TrimLeft(n.Value, "+-")
	if d == "" || strings.Trim(d, "0123456789") != "" {
		return false
	}
	_, err := strconv.ParseUint(d, 10, 64)
	return err != nil
}

// uintValue reads a non-negative integer scalar that fits in bits.
func (p *parser) uintValue(n *yaml.Node, key string, bits int) (uint64, bool) {
	if n.Kind == yaml.AliasNode {
		return 0, false
	}
	if tooLarge(n) {
		if strings.HasPrefix(n.Value, "-") {
			p.errAt(n, key, "'%s' must be a non-negative integer, got %s", key, n.Value)
		} else {
			p.errAt(n, key, "'%s' is out of range for a %d-bit unsigned integer: %s", key, bits, n.Value)
		}
		return 0, false
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		p.errAt(n, key, "'%s' must be a non-negative integer, got %s", key, describe(n))
		return 0, false
	}
	if strings.HasPrefix(strings.TrimSpace(n.Value), "-") {
		p.errAt(n, key, "'%s' must be a non-negative integer, got %s", key, n.Value)
		return 0, false
	}
	if p.refuseOctal(n, key) {
		return 0, false
	}
	var v uint64
	if err := n.Decode(&v); err != nil || (bits < 64 && v >= 1<<bits) {
		p.errAt(n, key, "'%s' is out of range for a %d-bit unsigned integer: %s", key, bits, n.Value)
		return 0, false
	}
	return v, true
}

// opRef reads an operator given as idKey (an integer id) or uidKey (a uid
// hashed as clink does). Both is an error; neither is an error when
// required. ok is false on error; ref is nil when absent and optional.
func (m *mapping) opRef(at *yaml.Node, idKey, uidKey string, required bool) (ref *OpRef, ok bool) {
	idN, uidN := m.get(idKey), m.get(uidKey)
	hasID, hasUID := m.present(idKey), m.present(uidKey)
	switch {
	case hasID && hasUID:
		m.p.errAt(m.keys[uidKey], uidKey, "both '%s' and '%s' given in %s; name the operator once", idKey, uidKey, m.what)
		return nil, false
	case !hasID && !hasUID:
		if required {
			m.missing(at, idKey, fmt.Sprintf(" (give the operator as '%s: <id>' or '%s: <uid>')", idKey, uidKey))
			return nil, false
		}
		return nil, true
	case hasID:
		if idN == nil {
			return nil, false
		}
		v, ok := m.p.uintValue(idN, idKey, 64)
		if !ok {
			return nil, false
		}
		return &OpRef{ID: v}, true
	default:
		if uidN == nil {
			return nil, false
		}
		s, ok := m.p.stringValue(uidN, uidKey)
		if !ok {
			return nil, false
		}
		if s == "" {
			m.p.errAt(uidN, uidKey, "'%s' must not be empty", uidKey)
			return nil, false
		}
		return &OpRef{ID: operatorIDFromUID(s), UID: s}, true
	}
}

// scope reads the optional op|uid and slot keys of a scoped rule.
func (m *mapping) scope(at *yaml.Node) (Scope, bool) {
	var sc Scope
	op, ok := m.opRef(at, "op", "uid", false)
	sc.Op = op
	if m.present("slot") {
		s, sok := m.str("slot")
		if sok {
			sok = m.matchableSlot("slot", s)
			sc.Slot = &s
		}
		ok = ok && sok
	}
	return sc, ok
}

// matchableSlot reports whether s, the value of key, is the slot name of
// some stored key: it must not hold '|', the key separator (a name no row
// can carry would make the rule match nothing without a word from lint).
// A '\n', which clink's KeyedState refuses in a name it opens, is allowed:
// hand-made rows carry it, and a rule may drop or rename them. RawSlot
// ("<raw>") is allowed too: it names the slot of that name, which clink
// accepts, never the keys without a slot that sptool shows as <raw>.
func (m *mapping) matchableSlot(key, s string) bool {
	if i := strings.IndexByte(s, '|'); i >= 0 {
		m.p.errAt(m.get(key), key, "'%s' can never match a slot: %q holds '|' (byte %d), the separator that ends a slot name in a stored key", key, s, i)
		return false
	}
	return true
}

// validSlot reports whether s, the value of key, may name a slot that a
// rule writes or a declaration decodes: a name clink's KeyedState accepts
// (savepoint.ValidSlotName), RawSlot included (see matchableSlot).
func (m *mapping) validSlot(key, s string) bool {
	if err := savepoint.ValidSlotName([]byte(s)); err != nil {
		m.p.errAt(m.get(key), key, "'%s': %v", key, err)
		return false
	}
	return true
}
