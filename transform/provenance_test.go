package transform

import (
	"slices"
	"strings"
	"testing"

	"github.com/sptool/sptool/savepoint"
)

// The rule files a provenance remembers: the last run's first, then those
// it remembered, each once, at most maxEarlierDigests, and only digests
// (what a hand-made provenance holds besides is not passed on).
func TestInputDigests(t *testing.T) {
	d := func(c byte) string { return strings.Repeat(string(c), 64) }
	md := func(v string) savepoint.Metadata {
		return savepoint.Metadata{{Key: savepoint.MetaProvenance, Value: v}}
	}
	for _, c := range []struct {
		prov string
		want []string
	}{
		{"", nil},
		{"tool=sptool;rules_sha256=" + d('a') + ";input=x;y", []string{d('a')}},
		{"tool=sptool;rules_sha256=" + d('a') + ";earlier_rules_sha256=" + d('b') + "," + d('a') + "," + d('c') + ";input=v1/0/c.snap", []string{d('a'), d('b'), d('c')}},
		{"tool=sptool;rules_sha256=nothex;earlier_rules_sha256=" + d('B') + ",x," + d('c') + ";input=a", []string{d('c')}},
		{"tool=sptool;rules_sha256=" + d('0') + ";earlier_rules_sha256=" + strings.Join([]string{d('1'), d('2'), d('3'), d('4'), d('5'), d('6'), d('7'), d('8'), d('9')}, ",") + ";input=a",
			[]string{d('0'), d('1'), d('2'), d('3'), d('4'), d('5'), d('6'), d('7')}},
	} {
		m := md(c.prov)
		if c.prov == "" {
			m = nil
		}
		if got := inputDigests(m); !slices.Equal(got, c.want) {
			t.Errorf("%q: %q, want %q", c.prov, got, c.want)
		}
	}
}
