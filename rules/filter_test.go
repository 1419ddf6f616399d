package rules

import (
	"slices"
	"strings"
	"testing"
)

// A standalone filter is type-checked as a keep or drop rule of the same
// rule file: with no slot declared, 'key' is a string and 'value' bytes,
// so a comparison of the bytes with a number fails at once, not at the
// first row; with slots declared, 'value' may be any of their types.
func TestCompileFilterTypes(t *testing.T) {
	bare, err := Parse("r.yaml", []byte("version: 1\nrules: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	declared, err := Parse("r.yaml", []byte("version: 1\nslots:\n  - {op: 7, slot: agg, key: string, value: int64}\nrules: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		set     *Set
		src     string
		wantErr string // "" when it compiles
	}{
		{bare, "value > 15", "column 7"},
		{nil, "value > 15", "column 7"},
		{bare, `key startsWith "user-" && string(value) == "x"`, ""},
		{bare, "key_group < 64", ""},
		{declared, "value > 15", ""},
	} {
		_, err := c.set.CompileFilter(c.src)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%q (declared %v): %v", c.src, c.set == declared, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%q (declared %v): %v, want an error with %q", c.src, c.set == declared, err, c.wantErr)
		}
	}
}

// A standalone filter comparing kind with a value no row has is warned of,
// as a rule's expression is, naming the column; one comparing it with a
// kind is not.
func TestCompileFilterWarnings(t *testing.T) {
	for _, c := range []struct {
		src  string
		want []string
	}{
		{`kind == "operator"`, nil},
		{`kind == "timer" || kind != "Keyed"`, []string{
			`column 9: kind is "keyed", "operator" or "raw": "timer" is none of them, and no row has it`,
			`column 28: kind is "keyed", "operator" or "raw": "Keyed" is none of them, and no row has it`,
		}},
	} {
		p, err := (*Set)(nil).CompileFilter(c.src)
		if err != nil {
			t.Fatalf("%q: %v", c.src, err)
		}
		if got := p.Warnings(); !slices.Equal(got, c.want) {
			t.Errorf("%q: warnings %q, want %q", c.src, got, c.want)
		}
	}
}
