package codec

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckMapKeys(t *testing.T) {
	entry := func(k, v any) any { return map[string]any{"key": k, "value": v} }
	tests := []struct {
		name, spec string
		v          any
		want       string // "" for no error
	}{
		{"distinct keys", "map<string,int64>", []any{entry("a", 1), entry("b", 2)}, ""},
		{"a key twice", "map<string,int64>", []any{entry("a", 1), entry("b", 2), entry("a", 3)}, `map entries 0 and 2 hold the key "a"`},
		{"int keys", "map<int64,string>", []any{entry(7, "x"), entry(int64(7), "y")}, "map entries 0 and 1 hold the key 7"},
		{"empty map", "map<string,int64>", []any{}, ""},
		{"no map", "list<string>", []any{"a", "a"}, ""},
		{"in a list", "list<map<string,int64>>", []any{[]any{entry("a", 1)}, []any{entry("b", 1), entry("b", 2)}}, `list element 1: map entries 0 and 1 hold the key "b"`},
		{"in a map's value", "map<string,map<string,int64>>", []any{entry("o", []any{entry("i", 1), entry("i", 1)})}, `map entry 0 value: map entries 0 and 1`},
		{"in an optional", "optional<map<string,int64>>", []any{entry("a", 1), entry("a", 1)}, "map entries 0 and 1"},
		{"optional none", "optional<map<string,int64>>", nil, ""},
		{"in a pair", "pair<int64,map<string,int64>>", []any{1, []any{entry("a", 1), entry("a", 2)}}, "pair second: map entries 0 and 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := MustParse(tt.spec)
			b, err := c.Encode(tt.v)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			err = CheckMapKeys(c, b)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("CheckMapKeys = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrRepeatedMapKey) {
				t.Fatalf("CheckMapKeys = %v, want an ErrRepeatedMapKey containing %q", err, tt.want)
			}
		})
	}
	if err := CheckMapKeys(MustParse("map<string,int64>"), []byte{1}); err == nil || errors.Is(err, ErrRepeatedMapKey) {
		t.Errorf("CheckMapKeys of bytes that do not decode = %v, want a decode error", err)
	}
}
