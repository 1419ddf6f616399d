package savepoint

import "testing"

// A timer's key is the user key it fires for, not a stored key: an int64
// key whose first byte is 0x86 reads as that key, with the key group a
// restore routes it by, not as an operator key of first byte 0x86
// ("0x86+0x08000000000000"), nor a key of the stored layout as kg/slot/key
// (the key groups are FNV-1a 64 mod 128 of the bytes, computed apart).
func TestRenderTimerKey(t *testing.T) {
	for _, c := range []struct {
		key  []byte
		want string
	}{
		{[]byte{0x86, 0x08, 0, 0, 0, 0, 0, 0}, "0x8608000000000000 (int64 2182) (key group 43)"},
		{[]byte("k"), `"k" (key group 10)`},
		{[]byte("\x05agg|x"), `0x056167677c78 (key group 77)`},
	} {
		if got := RenderTimerKey(c.key); got != c.want {
			t.Errorf("RenderTimerKey(%q) = %s, want %s", c.key, got, c.want)
		}
	}
}
