package texttable

import (
	"strings"
	"testing"
)

// render writes t and returns what it wrote.
func render(t *testing.T, tab *Table) string {
	t.Helper()
	var b strings.Builder
	n, err := tab.WriteTo(&b)
	if err != nil || int(n) != b.Len() {
		t.Fatalf("WriteTo: %d bytes, %v; wrote %d", n, err, b.Len())
	}
	return b.String()
}

// Each column is as wide as its widest cell counted in runes (a name of
// two-byte runes is no wider than its runes), or its least width; numbers
// align on the right; a row may lack cells; text lines go between rows as
// they are; no line ends in spaces.
func TestLayout(t *testing.T) {
	tab := New("  ", 1, Column{Min: 4}, Column{}, Column{Min: 3, Right: true})
	tab.Row("op", "slot", "rows", "note")
	tab.Row("7", "zählerzählerzähler", "5", "x")
	tab.Text("    a line of its own, as it is\n")
	tab.Row("12345678901", "s", "1234567")
	tab.Row("", "t", "", "")
	tab.Row()
	want := "" +
		"  op          slot                  rows note\n" +
		"  7           zählerzählerzähler       5 x\n" +
		"    a line of its own, as it is\n" +
		"  12345678901 s                  1234567\n" +
		"              t\n" +
		"\n"
	if got := render(t, tab); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// Short cells keep the least widths.
func TestLeastWidths(t *testing.T) {
	tab := New("", 2, Column{Min: 6}, Column{Min: 5, Right: true})
	tab.Row("a", "1")
	tab.Row("b", "22")
	if got, want := render(t, tab), "a           1\nb          22\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A cell is measured in the columns a terminal gives it: an East Asian
// wide character takes two (the slot "zähler·計数" of the independent
// fixtures), a combining mark none, so the cells after it line up.
func TestLayoutWideAndCombining(t *testing.T) {
	tab := New("  ", 2)
	tab.Row("SLOT", "ROWS")
	tab.Row(`"zähler·計数"`, "40")
	tab.Row(`"cafe`+"\u0301"+`"`, "7")
	tab.Row(`"cart"`, "60")
	want := "" +
		"  SLOT           ROWS\n" +
		"  \"zähler·計数\"  40\n" +
		"  \"cafe\u0301\"         7\n" +
		"  \"cart\"         60\n"
	if got := render(t, tab); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
