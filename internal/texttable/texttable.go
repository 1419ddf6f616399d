// Package texttable lays out the text tables of sptool's reports (inspect's
// tables, the plan and apply report): each column is as wide as its widest
// cell, counted in terminal columns (a rune of most scripts takes one, an
// East Asian wide one or an emoji two, a combining mark none), so that a
// long name or a wide number moves the columns after it on every row alike
// rather than pushing its own row out of line.
package texttable

import (
	"io"
	"strings"

	"github.com/rivo/uniseg"
)

// Column says how a table lays out one of its columns.
type Column struct {
	// Min is the least width of the column, in columns: a report whose cells
	// are short keeps the layout it has always had.
	Min int
	// Right aligns the column's cells on the right, as numbers are.
	Right bool
}

// Table is a text table: rows of cells, and lines of text between them
// outside the columns, laid out when the table is written, once every
// row is in.
type Table struct {
	indent string
	gap    int
	cols   []Column
	lines  []line
}

// line is a row of cells, or, when cells is nil, text written as it is.
type line struct {
	cells []string
	text  string
}

// New returns an empty table whose rows start with indent and whose
// columns are gap spaces apart. cols lays out the first len(cols) columns;
// a column after them is aligned on the left, with no least width.
func New(indent string, gap int, cols ...Column) *Table {
	return &Table{indent: indent, gap: gap, cols: cols}
}

// Row adds a row of cells. A row may have fewer cells than another: the
// columns it lacks are left empty. A cell is measured as it is: it should
// hold no tab or newline.
func (t *Table) Row(cells ...string) {
	if cells == nil {
		cells = []string{}
	}
	t.lines = append(t.lines, line{cells: cells})
}

// Text adds text written as it is (newlines included) where the table
// has got to, outside the columns: a note under a row, say.
func (t *Table) Text(text string) {
	t.lines = append(t.lines, line{text: text})
}

// widths returns each column's width: the widest of its cells, in
// columns (width), or its least width if that is more.
func (t *Table) widths() []int {
	var w []int
	for _, l := range t.lines {
		for i, c := range l.cells {
			if i == len(w) {
				w = append(w, 0)
				if i < len(t.cols) {
					w[i] = t.cols[i].Min
				}
			}
			w[i] = max(w[i], width(c))
		}
	}
	return w
}

// WriteTo writes the table to w: each row on a line of its own, its
// cells padded to their columns' widths, without spaces after the last
// cell that is not empty.
func (t *Table) WriteTo(w io.Writer) (int64, error) {
	widths := t.widths()
	var b strings.Builder
	for _, l := range t.lines {
		if l.cells == nil {
			b.WriteString(l.text)
			continue
		}
		last := len(l.cells) - 1
		for last >= 0 && l.cells[last] == "" {
			last--
		}
		if last >= 0 {
			b.WriteString(t.indent)
		}
		for i, c := range l.cells[:last+1] {
			if i > 0 {
				b.WriteString(strings.Repeat(" ", t.gap))
			}
			pad := strings.Repeat(" ", widths[i]-width(c))
			switch {
			case i < len(t.cols) && t.cols[i].Right:
				b.WriteString(pad)
				b.WriteString(c)
			case i < last:
				b.WriteString(c)
				b.WriteString(pad)
			default:
				b.WriteString(c)
			}
		}
		b.WriteByte('\n')
	}
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

// width returns how many terminal columns cell takes: counted in runes, a
// name of East Asian wide characters (a slot "計数") would take half the
// room it is given and shift the cells after it on its row.
func width(cell string) int { return uniseg.StringWidth(cell) }
