package textdist

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "", 3},
		{"", "abc", 3},
		{"SeenTtl", "SeenTTL", 2},
		{"UserCounter", "UserCountr", 1},
		{"kitten", "sitting", 3},
		{"ключ", "клюк", 1}, // runes, not bytes
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := Distance(tc.b, tc.a); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestNearest(t *testing.T) {
	fields := []string{"op", "kind", "key_group", "slot", "key", "key_bytes", "value", "value_bytes", "expire_at", "subtask"}
	for _, tc := range []struct {
		name  string
		names []string
		want  string // "" for none
	}{
		{"kye", fields, "key"},   // the same letters
		{"ky", fields, "key"},    // one edit, short
		{"foo", fields, ""},      // two edits from "op": too far for 3 letters
		{"slto", fields, "slot"}, // the same letters
		{"keygroup", fields, "key_group"},
		{"vlaue", fields, "value"},
		{"xyzzy", fields, ""},
		{"kinf", []string{"kind", "king"}, ""},     // a tie: no suggestion
		{"jsno", []string{"json", "json"}, "json"}, // a name twice is one
	} {
		got, ok := Nearest(tc.name, tc.names)
		if !ok {
			got = ""
		}
		if got != tc.want {
			t.Errorf("Nearest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}
