package cli

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Integer flags are decimal: a leading 0 is no octal, and Go's other
// literals (0x10, 0b11, 1_0) are refused, as are values out of range.
func TestDecimalFlags(t *testing.T) {
	for _, c := range []struct {
		arg     string
		want    int
		wantU   uint64
		err     string // "" for none; else held by both flags' errors
		uintErr string // the uint flag's, when it differs
	}{
		{"010", 10, 10, "", ""},
		{"7", 7, 7, "", ""},
		{"0", 0, 0, "", ""},
		{"-3", -3, 0, "", "must be a decimal integer"},
		{"0x10", 0, 0, "must be a decimal integer", ""},
		{"0b11", 0, 0, "must be a decimal integer", ""},
		{"0o7", 0, 0, "must be a decimal integer", ""},
		{"1_0", 0, 0, "must be a decimal integer", ""},
		{"1.5", 0, 0, "must be a decimal integer", ""},
		{"", 0, 0, "must be a decimal integer", ""},
		{"99999999999999999999", 0, 0, "out of range", ""},
		{"18446744073709551615", 0, 18446744073709551615, "out of range", "-"},
	} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		fs.SetOutput(new(strings.Builder))
		n := intFlag(fs, "n", 1, "")
		u := uint64Flag(fs, "u", 1, "")
		errN := fs.Parse([]string{"--n=" + c.arg})
		errU := fs.Parse([]string{"--u=" + c.arg})
		switch {
		case c.err == "" && (errN != nil || *n != c.want):
			t.Errorf("--n=%s: %d, %v; want %d", c.arg, *n, errN, c.want)
		case c.err != "" && (errN == nil || !strings.Contains(errN.Error(), c.err)):
			t.Errorf("--n=%s: %d, %v; want an error holding %q", c.arg, *n, errN, c.err)
		}
		uErr := c.err
		if c.uintErr != "" {
			uErr = c.uintErr
		}
		switch {
		case uErr == "" || uErr == "-":
			if errU != nil || *u != c.wantU {
				t.Errorf("--u=%s: %d, %v; want %d", c.arg, *u, errU, c.wantU)
			}
		case errU == nil || !strings.Contains(errU.Error(), uErr):
			t.Errorf("--u=%s: %d, %v; want an error holding %q", c.arg, *u, errU, uErr)
		}
	}
}
