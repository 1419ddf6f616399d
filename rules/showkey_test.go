package rules

import (
	"strings"
	"testing"

	"github.com/sptool/sptool/savepoint"
)

// TestShowKey: a key is shown as clink renders it, and as the declared key
// codec reads it where one is declared and the key decodes.
func TestShowKey(t *testing.T) {
	set, err := Parse("show.yaml", []byte(`version: 1
slots:
  - {op: 7, slot: u, key: uint64}
  - {op: 7, slot: s, key: string}
  - {op: 7, slot: b, key: bytes}
  - {op: 7, slot: i, key: int64}
  - {op: 7, slot: c, key: string, composite: true}
  - {op: 7, slot: v, value: int64}
rules: []
`))
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", 40)
	for _, tc := range []struct {
		op         uint64
		slot, user string
		want       string
	}{
		{7, "u", "\xff\xff\xff\xff\xff\xff\xff\xff", `0xffffffffffffffff (int64 -1) = uint64 18446744073709551615`},
		{7, "s", "ab\x01", `0x616201 = string "ab\x01"`},
		{7, "b", "ab", `"ab"`},
		{7, "i", "\x01\x00\x00\x00\x00\x00\x00\x00", `0x0100000000000000 (int64 1)`},
		{7, "s", long, `0x` + strings.Repeat("c3a9", 16) + `... [80 bytes] = string "` + strings.Repeat("é", 31) + `...`},
		// no decoding: a key of the wrong length, a composite slot, no key
		// codec, an undeclared slot or operator
		{7, "u", "abc", `"abc"`},
		{7, "c", "k\x1fe", `0x6b1f65`},
		{7, "v", "abcdefgh", `"abcdefgh" (int64 7523094288207667809)`},
		{7, "x", "ab", `"ab"`},
		{8, "u", "\x01\x00\x00\x00\x00\x00\x00\x00", `0x0100000000000000 (int64 1)`},
	} {
		k := savepoint.ParseKey(savepoint.EncodeKeyedKey([]byte(tc.slot), []byte(tc.user)))
		if got := set.ShowKey(tc.op, k); got != tc.want {
			t.Errorf("ShowKey(%d, %q/%q) = %s, want %s", tc.op, tc.slot, tc.user, got, tc.want)
		}
	}
	var none *Set
	k := savepoint.ParseKey(savepoint.EncodeKeyedKey([]byte("u"), []byte("ab")))
	if got := none.ShowKey(7, k); got != `"ab"` {
		t.Errorf("nil set: %s", got)
	}
}
