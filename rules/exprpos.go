package rules

import (
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// exprPos maps a rune offset inside the value of scalar n to its line and
// column in the rule file. It is exact for plain, single-quoted and
// double-quoted scalars on one line, and for block scalars ('|' and '>',
// with or without an indentation indicator, blank lines folded or kept);
// for flow scalars folded over several lines each line break counts as
// one character, which is exact unless blank lines are folded.
func (p *parser) exprPos(n *yaml.Node, off int) (line, col int) {
	if n == nil {
		return 1, 1
	}
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return p.blockPos(n, off)
	}
	b := p.offsetOf(n.Line, n.Column)
	if b < 0 {
		return n.Line, n.Column
	}
	var quote byte
	switch {
	case n.Style&yaml.SingleQuotedStyle != 0:
		quote = '\''
	case n.Style&yaml.DoubleQuotedStyle != 0:
		quote = '"'
	}
	line, col = n.Line, n.Column
	if quote != 0 && b < len(p.src) && p.src[b] == quote {
		b++
		col++
	}
	return p.walk(b, line, col, quote, off)
}

// walk advances off value characters from byte b (at line:col) through the
// source of a flow scalar or folded block, undoing escapes and line folding.
func (p *parser) walk(b, line, col int, quote byte, off int) (int, int) {
	src := p.src
	for k := 0; k < off && b < len(src); k++ {
		c := src[b]
		switch {
		case c == '\n' || c == '\r':
			// A line break folds to one character; the next line's
			// indentation is not part of the value.
			if c == '\r' && b+1 < len(src) && src[b+1] == '\n' {
				b++
			}
			b++
			line, col = line+1, 1
			for b < len(src) && (src[b] == ' ' || src[b] == '\t') {
				b++
				col++
			}
		case quote == '\'' && c == '\'' && b+1 < len(src) && src[b+1] == '\'':
			b += 2
			col += 2
		case quote == '"' && c == '\\':
			n := escapeLen(src[b:])
			b += n
			col += n
		default:
			_, size := utf8.DecodeRune(src[b:])
			b += size
			col++
		}
	}
	return line, col
}

// escapeLen returns the source length of the double-quoted escape at the
// start of s.
func escapeLen(s []byte) int {
	n := 2
	if len(s) > 1 {
		switch s[1] {
		case 'x':
			n = 4
		case 'u':
			n = 6
		case 'U':
			n = 10
		}
	}
	return min(n, len(s))
}

// blockPos is exprPos for a block scalar: it lines the value up with the
// source lines of its content, rune by rune. A content rune is its own
// source rune; where a source line ends, the value holds what the line
// break became ('\n' kept, ' ' folded, nothing for a break folded into
// the blank lines after it), and the lines with no content left are
// skipped. The content's indentation is the first non-blank line's, less
// the spaces that start the value's first line (more, under an
// indentation indicator: '|2').
func (p *parser) blockPos(n *yaml.Node, off int) (line, col int) {
	first := n.Line + 1
	value := []rune(n.Value)
	valueLead := 0
	for _, ln := range strings.Split(n.Value, "\n") {
		if strings.TrimSpace(ln) != "" {
			valueLead = len(ln) - len(strings.TrimLeft(ln, " "))
			break
		}
	}
	indent := -1
	var lines [][]rune // the block's lines, from first on, indentation cut
	for l := first; ; l++ {
		t, ok := p.line(l)
		if !ok {
			break
		}
		lead := len(t) - len(strings.TrimLeft(t, " "))
		if strings.TrimSpace(t) == "" {
			lines = append(lines, nil)
			continue
		}
		if indent < 0 {
			indent = max(0, lead-valueLead)
		}
		if lead < indent {
			break // the block's end
		}
		lines = append(lines, []rune(t[indent:]))
	}
	if indent < 0 {
		return first, 1
	}
	li, ci := 0, 0
	for k := 0; k < off && k < len(value) && li < len(lines); k++ {
		r := value[k]
		if ci < len(lines[li]) && lines[li][ci] == r {
			ci++
			continue
		}
		if r == '\n' || r == ' ' {
			li, ci = li+1, 0 // what a line break became
			continue
		}
		// A break folded away: the next line holding content has r.
		for li++; li < len(lines) && len(lines[li]) == 0; li++ {
		}
		ci = 1
	}
	for li < len(lines)-1 && len(lines[li]) == 0 {
		li++ // a blank line holds no rune
	}
	return first + li, indent + ci + 1
}

// line returns the 1-based source line l without its line break.
func (p *parser) line(l int) (string, bool) {
	p.indexLines()
	if l < 1 || l > len(p.lineStarts) {
		return "", false
	}
	start := p.lineStarts[l-1]
	end := len(p.src)
	if l < len(p.lineStarts) {
		end = p.lineStarts[l] - 1
	}
	return strings.TrimSuffix(string(p.src[start:end]), "\r"), true
}

// offsetOf returns the byte offset of 1-based line:col, or -1.
func (p *parser) offsetOf(line, col int) int {
	p.indexLines()
	if line < 1 || line > len(p.lineStarts) {
		return -1
	}
	b := p.lineStarts[line-1]
	for c := 1; c < col; c++ {
		if b >= len(p.src) || p.src[b] == '\n' {
			return -1
		}
		_, size := utf8.DecodeRune(p.src[b:])
		b += size
	}
	return b
}

func (p *parser) indexLines() {
	if p.lineStarts != nil {
		return
	}
	p.lineStarts = []int{0}
	for i, c := range p.src {
		if c == '\n' {
			p.lineStarts = append(p.lineStarts, i+1)
		}
	}
}
