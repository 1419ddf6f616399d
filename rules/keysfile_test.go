package rules

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestPlainInt64Lines: the lines plainInt64 reads give the keys, and the
// line numbers, that eachKeyLine and parseInt64 give; every other line
// goes the general way, to the same result. Lines are drawn from the bytes
// that matter to either (blanks, signs, digits, CR, '#', a vertical tab,
// a letter), with long runs of digits now and then.
func TestPlainInt64Lines(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const alphabet = "  \t\t--++0123456789012345678901234567890123456789\r#\vx"
	for round := range 2000 {
		var b strings.Builder
		for range r.IntN(12) {
			for range r.IntN(8) {
				b.WriteByte(alphabet[r.IntN(len(alphabet))])
			}
			if r.IntN(6) == 0 {
				b.WriteString(strings.Repeat("9", 15+r.IntN(6)))
			}
			if r.IntN(10) > 0 {
				b.WriteByte('\n')
			}
		}
		text := b.String()
		var want, got []string
		eachKeyLine(text, func(line int, _, t string) {
			if v, ok := parseInt64(t); ok {
				want = append(want, fmt.Sprint(line, v))
			} else {
				want = append(want, fmt.Sprintf("%d %q", line, t))
			}
		}, nil)
		plain := 0
		n := scanKeyLines(text, func(line int, v int64) {
			plain++
			got = append(got, fmt.Sprint(line, v))
		}, func(line int, _, t string) {
			if v, ok := parseInt64(t); ok {
				got = append(got, fmt.Sprint(line, v))
			} else {
				got = append(got, fmt.Sprintf("%d %q", line, t))
			}
		}, nil)
		if !slices.Equal(got, want) || n != eachKeyLine(text, func(int, string, string) {}, nil) {
			t.Fatalf("round %d, text %q:\n got %q\nwant %q", round, text, got, want)
		}
		if round == 0 && plain == 0 {
			t.Fatal("no line read the plain way")
		}
	}
	// The plain way reads these; the general way the others.
	for text, plain := range map[string]bool{
		"42": true, " -7\t\r\n": true, "+0\n": true, "123456789012345678\n": true,
		"1234567890123456789\n": false, "": false, "-\n": false, "4 2\n": false, "42\r\r\n": false, "\v42\n": false, "# 42\n": false,
	} {
		_, _, ok := plainInt64(text, 0)
		if ok != plain {
			t.Errorf("plainInt64(%q): %v, want %v", text, ok, plain)
		}
	}
}
