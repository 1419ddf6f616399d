package rules

import (
	"reflect"
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
		// a string key the rendering shows as its text: not twice
		{7, "s", "t-short", `"t-short"`},
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

// TestBroadcastDecl: a 'broadcast: true' declaration decodes the value of
// its slot's broadcast row (0xFF slot '|') and no other row of the slot;
// a keyed declaration decodes the keyed rows and not the broadcast row.
func TestBroadcastDecl(t *testing.T) {
	set, err := Parse("b.yaml", []byte(`version: 1
slots:
  - {op: 7, slot: b, value: int64, broadcast: true}
  - {op: 7, slot: k, value: int64}
rules: []
`))
	if err != nil {
		t.Fatal(err)
	}
	v5 := le64(5)
	for _, tc := range []struct {
		key  string
		want any
	}{
		{"\xffb|", int64(5)},
		{"\xffb|x", v5},
		{"\x80b|", v5},
		{string(savepoint.EncodeKeyedKey([]byte("b"), []byte("x"))), v5},
		{"\xffk|", v5},
		{string(savepoint.EncodeKeyedKey([]byte("k"), []byte("x"))), int64(5)},
	} {
		var env Env
		if err := set.FillEnv(&env, savepoint.Row{Op: 7, Key: []byte(tc.key), Value: v5}, -1); err != nil {
			t.Fatalf("%q: %v", tc.key, err)
		}
		if !reflect.DeepEqual(env.Value, tc.want) {
			t.Errorf("%q: value %#v, want %#v", tc.key, env.Value, tc.want)
		}
		d := set.SlotDecl(7, savepoint.ParseKey([]byte(tc.key)).SlotName())
		if got, want := d.Describes(savepoint.ParseKey([]byte(tc.key)), []byte(tc.key)), tc.want == int64(5); got != want {
			t.Errorf("%q: Describes %v, want %v", tc.key, got, want)
		}
	}
	if d := set.SlotDecl(7, "b"); !d.Broadcast || d.KeyCodec != nil || d.ValueCodec.String() != "int64" {
		t.Errorf("declaration %+v", d)
	}

	// clink's BroadcastState takes a name with '\n', which its KeyedState
	// refuses: a broadcast declaration may name it, a keyed one may not,
	// and neither may hold '|', which ends the name in the stored key.
	set, err = Parse("n.yaml", []byte("version: 1\nslots:\n  - {op: 7, slot: \"a\\nb\", value: int64, broadcast: true}\nrules: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	var env Env
	if err := set.FillEnv(&env, savepoint.Row{Op: 7, Key: savepoint.EncodeBroadcastKey([]byte("a\nb")), Value: v5}, -1); err != nil || env.Value != int64(5) {
		t.Errorf("broadcast slot \"a\\nb\": value %#v, %v; want 5 decoded", env.Value, err)
	}
	for _, tc := range []struct{ decl, want string }{
		{`{op: 7, slot: "a\nb", value: int64}`, `'slot': invalid slot name "a\nb": byte 1 is '\n'`},
		{`{op: 7, slot: "a|b", value: int64, broadcast: true}`, `'slot' can never match a slot: "a|b" holds '|'`},
	} {
		_, err := Parse("n.yaml", []byte("version: 1\nslots:\n  - "+tc.decl+"\nrules: []\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.decl, err, tc.want)
		}
	}
	if !savepoint.IsBroadcastKey([]byte("\xffb|")) || savepoint.IsBroadcastKey([]byte("\xffb|x")) || savepoint.IsBroadcastKey([]byte("\x80b|")) || !savepoint.IsBroadcastKey([]byte("\xff|")) || savepoint.IsBroadcastKey([]byte("\xff")) || savepoint.IsBroadcastKey(nil) {
		t.Error("IsBroadcastKey: want true for 0xFF slot '|' (the empty slot too), false for any other key")
	}
}
