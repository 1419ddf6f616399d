package savepoint

import (
	"bytes"
	"testing"
)

func TestTTLSplitJoin(t *testing.T) {
	tests := []struct {
		name     string
		value    string // hex
		ok       bool
		expireAt int64
		payload  string // hex
	}{
		{"stamp and int64", "00e40b5402000000 0100000000000000", true, 10000000000, "0100000000000000"},
		{"stamp only", "e803000000000000", true, 1000, ""},
		{"negative stamp", "ffffffffffffffff 61", true, -1, "61"},
		{"event time before first watermark stamps ttl", "60ea000000000000 6162", true, 60000, "6162"},
		{"seven bytes", "01020304050607", false, 0, ""},
		{"empty", "", false, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := mustHex(t, tc.value)
			exp, payload, ok := SplitTTL(v)
			if ok != tc.ok || exp != tc.expireAt || !bytes.Equal(payload, mustHex(t, tc.payload)) {
				t.Fatalf("SplitTTL = %d %x %v, want %d %s %v", exp, payload, ok, tc.expireAt, tc.payload, tc.ok)
			}
			if !ok {
				if payload != nil {
					t.Fatal("payload not nil")
				}
				return
			}
			if got := JoinTTL(exp, payload); !bytes.Equal(got, v) {
				t.Fatalf("JoinTTL = %x, want %x", got, v)
			}
		})
	}
	t.Run("join does not alias", func(t *testing.T) {
		p := []byte("xy")
		j := JoinTTL(5, p)
		j[8] = 'z'
		if string(p) != "xy" {
			t.Fatal("JoinTTL aliased its payload")
		}
	})
	t.Run("expired is inclusive", func(t *testing.T) {
		if !TTLExpired(10, 10) || TTLExpired(11, 10) || !TTLExpired(9, 10) {
			t.Fatal("TTLExpired")
		}
	})
}
