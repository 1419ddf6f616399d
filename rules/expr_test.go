package rules

import (
	"strings"
	"testing"
)

// The parser's message for a likely slip in an expression says what was
// meant: = for ==, a word operator in another case; others get no hint.
func TestSyntaxHints(t *testing.T) {
	for _, c := range []struct{ expr, hint string }{
		{`slot = "x"`, "compare with =="},
		{`value =! 0`, "compare with =="},
		{`key startswith "user"`, "did you mean the operator startsWith?"},
		{`key ENDS_WITH "x"`, "did you mean the operator endsWith?"},
		{`key foo "u"`, ""},
		{`slot == "x" &&`, ""},
	} {
		src := "version: 1\nrules:\n  - drop: '" + c.expr + "'\n"
		_, err := Parse("r.yaml", []byte(src))
		if err == nil {
			t.Errorf("%s: parsed", c.expr)
			continue
		}
		msg := err.Error()
		if c.hint == "" {
			if strings.Contains(msg, "did you mean the operator") || strings.Contains(msg, "compare with") {
				t.Errorf("%s: %v, want no hint", c.expr, err)
			}
		} else if !strings.Contains(msg, c.hint) {
			t.Errorf("%s: %v, want %q", c.expr, err, c.hint)
		}
	}
}
