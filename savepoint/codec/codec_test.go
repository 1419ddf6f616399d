package codec

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func h(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func TestParse(t *testing.T) {
	tests := []struct {
		spec string
		want string
	}{
		{"bytes", "bytes"},
		{"string", "string"},
		{"int64", "int64"},
		{"uint64", "uint64"},
		{"uint32", "uint32"},
		{"double", "double"},
		{"list<int64>", "list<int64>"},
		{"map<string,int64>", "map<string,int64>"},
		{"optional<string>", "optional<string>"},
		{"pair<int64,string>", "pair<int64,string>"},
		{"  map < string , list< pair<uint32 ,double> > >\n", "map<string,list<pair<uint32,double>>>"},
		{"list<optional<map<bytes,optional<int64>>>>", "list<optional<map<bytes,optional<int64>>>>"},
		{"optional<list<optional<int64>>>", "optional<list<optional<int64>>>"},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			c, err := Parse(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if c.String() != tc.want {
				t.Fatalf("String = %q, want %q", c.String(), tc.want)
			}
			c2, err := Parse(c.String())
			if err != nil || c2.String() != tc.want {
				t.Fatalf("canonical form does not re-parse: %v", err)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		wantErr string
	}{
		{"empty", "", "empty spec"},
		{"blank", "  ", "empty spec"},
		{"unknown", "int32", `unknown type "int32" at offset 0`},
		{"unknown nested", "map<string,in64>", `unknown type "in64" at offset 11`},
		{"upper case hint", "Int64", "names are lower case: int64"},
		{"scalar with args", "int64<string>", "int64 takes no type arguments, got '<' at offset 5"},
		{"list without args", "list", "list needs 1 type argument(s) in <...>, got end of spec at offset 4"},
		{"map one arg", "map<string>", "map takes 2 type argument(s), got 1 at offset 0"},
		{"pair three args", "pair<int64,int64,int64>", "pair takes 2 type argument(s), got 3"},
		{"list two args", "list<int64,int64>", "list takes 1 type argument(s), got 2"},
		{"unclosed", "list<int64", "expected ',' or '>' in the arguments of list, got end of spec at offset 10"},
		{"missing arg", "list<>", `expected a type name, got '>' at offset 5`},
		{"trailing comma", "map<string,>", `expected a type name, got '>' at offset 11`},
		{"trailing junk", "int64 x", `unexpected "x" at offset 6 after the complete type int64`},
		{"extra close", "list<int64>>", `unexpected ">" at offset 11`},
		{"bad char", "list<int64;>", `expected ',' or '>' in the arguments of list, got ';' at offset 10`},
		{"nested optional", "optional<optional<int64>>", "optional<optional<...>> at offset 9 is ambiguous"},
		{"nested optional with space", "optional< optional<int64>>", "at offset 10 is ambiguous"},
		{"too deep", strings.Repeat("list<", 100) + "int64" + strings.Repeat(">", 100), "nested deeper than 64"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(tc.spec)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want error", tc.spec, c)
			}
			if !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "parse codec ") {
				t.Fatalf("error = %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestMustParsePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("MustParse did not panic")
		}
	}()
	MustParse("nope")
}

// Golden vectors of sections 3.2 and 3.3, decoded and re-encoded.
func TestGolden(t *testing.T) {
	tests := []struct {
		name  string
		spec  string
		bytes string
		value any
	}{
		{"int64 1", "int64", "0100000000000000", int64(1)},
		{"int64 -1", "int64", "ffffffffffffffff", int64(-1)},
		{"int64 100", "int64", "6400000000000000", int64(100)},
		{"uint64 max", "uint64", "ffffffffffffffff", uint64(math.MaxUint64)},
		{"uint32", "uint32", "04030201", int64(0x01020304)},
		{"uint32 max", "uint32", "ffffffff", int64(math.MaxUint32)},
		{"double 1.5", "double", "000000000000f83f", 1.5},
		{"double -0", "double", "0000000000000080", math.Copysign(0, -1)},
		{"string", "string", "616c706861", "alpha"},
		{"string empty", "string", "", ""},
		{"string non-utf8", "string", "ff00fe", "\xff\x00\xfe"},
		{"bytes", "bytes", "00ff", []byte{0, 0xff}},
		{"bytes empty", "bytes", "", []byte{}},
		{"pair (5,\"ab\")", "pair<int64,string>", "08000000 0500000000000000 6162", []any{int64(5), "ab"}},
		{"vector {1,2}", "list<int64>", "02000000 08000000 0100000000000000 08000000 0200000000000000", []any{int64(1), int64(2)}},
		{"vector {}", "list<int64>", "00000000", []any{}},
		{"MapState {a:1,b:2}", "map<string,int64>",
			"02000000 0d000000 01000000 61 0100000000000000 0d000000 01000000 62 0200000000000000",
			[]any{map[string]any{"key": "a", "value": int64(1)}, map[string]any{"key": "b", "value": int64(2)}}},
		{"MapState insertion order kept", "map<string,int64>",
			"02000000 0d000000 01000000 62 0200000000000000 0d000000 01000000 61 0100000000000000",
			[]any{map[string]any{"key": "b", "value": int64(2)}, map[string]any{"key": "a", "value": int64(1)}}},
		{"MapState empty", "map<string,int64>", "00000000", []any{}},
		{"map_codec layout is list<pair> with an unprefixed value", "list<pair<string,int64>>",
			"01000000 0d000000 01000000 61 0100000000000000", []any{[]any{"a", int64(1)}}},
		{"optional none", "optional<int64>", "00", nil},
		{"optional some", "optional<int64>", "01 0700000000000000", int64(7)},
		{"optional some empty string", "optional<string>", "01", ""},
		{"list of optional", "list<optional<int64>>", "02000000 01000000 00 09000000 01 0300000000000000", []any{nil, int64(3)}},
		{"pair second runs to end", "pair<string,list<string>>", "01000000 78 01000000 02000000 7979", []any{"x", []any{"yy"}}},
		{"pair of empties", "pair<string,string>", "00000000", []any{"", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := MustParse(tc.spec)
			b := h(t, tc.bytes)
			v, err := c.Decode(b)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(v, tc.value) {
				t.Fatalf("Decode = %#v, want %#v", v, tc.value)
			}
			if f, ok := v.(float64); ok && math.Signbit(f) != math.Signbit(tc.value.(float64)) {
				t.Fatalf("sign bit lost")
			}
			enc, err := c.Encode(tc.value)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if !bytes.Equal(enc, b) {
				t.Fatalf("Encode = %x, want %x", enc, b)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		bytes   string
		wantErr string
	}{
		{"int64 short", "int64", "010000", "decode int64: int64 needs exactly 8 bytes at byte 0, got 3"},
		{"int64 long", "int64", "010000000000000000", "got 9"},
		{"uint32 wrong size", "uint32", "0100000000000000", "uint32 needs exactly 4 bytes at byte 0, got 8"},
		{"double short", "double", "", "double needs exactly 8 bytes"},
		{"list count truncated", "list<int64>", "0200", "list element count at byte 0 needs 4 bytes, only 2 left"},
		{"list element length truncated", "list<int64>", "02000000 08000000 0100000000000000 0800", "list element 1 of 2: length prefix at byte 16 needs 4 bytes, only 2 left"},
		{"list element runs past end", "list<int64>", "01000000 09000000 0100000000000000", "list element 0 of 1: length 9 at byte 4 runs past the end (8 bytes left)"},
		{"list element bad size", "list<int64>", "02000000 08000000 0100000000000000 04000000 01000000", "list element 1: int64 needs exactly 8 bytes at byte 20, got 4"},
		{"list trailing bytes", "list<int64>", "00000000 ff", "1 trailing bytes at byte 4 after the 0 elements"},
		{"list huge count", "list<int64>", "ffffffff", "list element 0 of 4294967295: length prefix at byte 4"},
		{"nested offsets are absolute", "list<list<int64>>", "01000000 0c000000 01000000 04000000 00000000",
			"list element 0: list element 0: int64 needs exactly 8 bytes at byte 16, got 4"},
		{"map entry pair length past end", "map<string,int64>", "01000000 0d000000 0a000000 61 0100000000000000",
			"map entry 0: pair first length 10 at byte 8 runs past the end (9 bytes left)"},
		{"map value bad size", "map<string,int64>", "01000000 07000000 01000000 61 01 00",
			"map entry 0: pair second: int64 needs exactly 8 bytes at byte 13, got 2"},
		{"map entry shorter than a pair header", "map<string,int64>", "01000000 02000000 0100",
			"map entry 0: pair first-length prefix at byte 8 needs 4 bytes, only 2 left"},
		{"pair empty", "pair<int64,string>", "", "pair first-length prefix at byte 0 needs 4 bytes, only 0 left"},
		{"pair first bad", "pair<int64,string>", "02000000 0100 6162", "pair first: int64 needs exactly 8 bytes at byte 4, got 2"},
		{"optional empty", "optional<int64>", "", "optional flag missing at byte 0"},
		{"optional bad flag", "optional<int64>", "02", "optional flag 0x02 at byte 0, want 00 (none) or 01 (some)"},
		{"optional none trailing", "optional<int64>", "00 00", "1 trailing bytes at byte 1 after optional none"},
		{"optional some bad", "optional<int64>", "01 00", "optional value: int64 needs exactly 8 bytes at byte 1, got 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := MustParse(tc.spec)
			v, err := c.Decode(h(t, tc.bytes))
			if err == nil {
				t.Fatalf("Decode = %#v, want error", v)
			}
			if !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "decode "+c.String()+": ") {
				t.Fatalf("error = %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

type myInt int16

// Encode accepts the Go values an expression may produce.
func TestEncodeLenient(t *testing.T) {
	tests := []struct {
		name  string
		spec  string
		value any
		want  string
	}{
		{"int64 from int", "int64", 7, "0700000000000000"},
		{"int64 from negative int32", "int64", int32(-1), "ffffffffffffffff"},
		{"int64 from uint8", "int64", uint8(255), "ff00000000000000"},
		{"int64 from named int", "int64", myInt(2), "0200000000000000"},
		{"int64 from whole float", "int64", 3.0, "0300000000000000"},
		{"int64 from float32", "int64", float32(-2), "feffffffffffffff"},
		{"int64 from the largest float below 2^53", "int64", 9007199254740991.0, "ffffffffffff1f00"},
		{"int64 from the least float above -2^53", "int64", -9007199254740991.0, "010000000000e0ff"},
		{"uint64 from int", "uint64", 1, "0100000000000000"},
		{"uint64 max", "uint64", uint64(math.MaxUint64), "ffffffffffffffff"},
		{"uint64 from a float below 2^53", "uint64", 9007199254740991.0, "ffffffffffff1f00"},
		{"uint32 from int", "uint32", 1, "01000000"},
		{"uint32 max from int64", "uint32", int64(math.MaxUint32), "ffffffff"},
		{"double from int", "double", 2, "0000000000000040"},
		{"double from uint64", "double", uint64(1), "000000000000f03f"},
		{"double from float32", "double", float32(0.5), "000000000000e03f"},
		{"double NaN", "double", math.NaN(), "010000000000f87f"},
		{"string from bytes", "string", []byte("ab"), "6162"},
		{"bytes from string", "bytes", "ab", "6162"},
		{"list from typed slice", "list<int64>", []int64{1}, "01000000 08000000 0100000000000000"},
		{"list from []int", "list<int64>", []int{1}, "01000000 08000000 0100000000000000"},
		{"list from array", "list<string>", [2]string{"a", "b"}, "02000000 01000000 61 01000000 62"},
		{"list of strings from []string", "list<string>", []string{}, "00000000"},
		{"pair from typed slice", "pair<string,string>", []string{"a", "b"}, "01000000 61 62"},
		{"map entries as pairs", "map<string,int64>", []any{[]any{"a", 1}, []any{"b", 2.0}},
			"02000000 0d000000 01000000 61 0100000000000000 0d000000 01000000 62 0200000000000000"},
		{"map entries as typed key/value maps", "map<string,string>", []map[string]any{{"key": "a", "value": "x"}},
			"01000000 06000000 01000000 61 78"},
		{"map from Go map sorted by encoded key", "map<string,int64>", map[string]any{"b": 2, "a": 1},
			"02000000 0d000000 01000000 61 0100000000000000 0d000000 01000000 62 0200000000000000"},
		{"map from Go map int keys sorted by bytes", "map<int64,string>", map[int64]string{256: "x", 1: "y"},
			"02000000 0d000000 08000000 0001000000000000 78 0d000000 08000000 0100000000000000 79"},
		{"map from empty Go map", "map<string,int64>", map[string]int64{}, "00000000"},
		{"optional some from int", "optional<int64>", 1, "01 0100000000000000"},
		{"optional list", "optional<list<int64>>", []any{}, "01 00000000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MustParse(tc.spec).Encode(tc.value)
			if err != nil {
				t.Fatalf("Encode(%#v): %v", tc.value, err)
			}
			if want := h(t, tc.want); !bytes.Equal(got, want) {
				t.Fatalf("Encode(%#v) = %x, want %x", tc.value, got, want)
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		value   any
		wantErr string
	}{
		{"int64 from string", "int64", "1", "encode int64: int64: got string 1, want an integer"},
		{"int64 from nil", "int64", nil, "got nil"},
		{"int64 from bool", "int64", true, "want an integer"},
		{"int64 fraction", "int64", 1.5, "value 1.5 is not a whole number"},
		{"int64 NaN", "int64", math.NaN(), "not a whole number"},
		{"int64 Inf", "int64", math.Inf(1), "not a whole number"},
		{"int64 float too big", "int64", 9223372036854775808.0, "is a float of 2^53 or more"},
		{"int64 float of 2^53", "int64", 9007199254740992.0, "it may be an integer rounded on its way"},
		{"int64 float of -2^53", "int64", -9007199254740992.0, "is a float of 2^53 or more"},
		{"uint64 float of 2^53", "uint64", 9007199254740992.0, "is a float of 2^53 or more"},
		{"list<int64> float of 2^53", "list<int64>", []any{9007199254740992.0}, "is a float of 2^53 or more"},
		{"int64 uint64 too big", "int64", uint64(1 << 63), "value 9223372036854775808 is out of range"},
		{"uint64 negative", "uint64", -1, "value -1 is negative"},
		{"uint64 negative float", "uint64", -1.0, "is negative"},
		{"uint64 float too big", "uint64", 18446744073709551616.0, "is a float of 2^53 or more"},
		{"uint32 too big", "uint32", int64(1) << 32, "value 4294967296 is out of range (max 4294967295)"},
		{"uint32 negative", "uint32", -5, "negative"},
		{"double from string", "double", "1.0", "want a number"},
		{"string from int", "string", 5, "want a string"},
		{"bytes from int", "bytes", 5, "want []byte or string"},
		{"bytes from nil", "bytes", nil, "got nil"},
		{"list from scalar", "list<int64>", 5, "list: got int 5, want a list"},
		{"list from nil", "list<int64>", nil, "want a list"},
		{"list element bad", "list<int64>", []any{1, "x"}, "list element 1: int64: got string x"},
		{"pair wrong length", "pair<int64,int64>", []any{1}, "pair: got 1 elements, want 2"},
		{"pair first bad", "pair<int64,int64>", []any{"a", 1}, "pair first: int64"},
		{"pair second bad", "pair<int64,int64>", []any{1, "b"}, "pair second: int64"},
		{"map entry not an entry", "map<string,int64>", []any{5}, "map entry 0: got int 5, want {key: ..., value: ...} or [key, value]"},
		{"map entry extra field", "map<string,int64>", []any{map[string]any{"key": "a", "value": 1, "x": 2}}, `want exactly "key" and "value"`},
		{"map entry missing value", "map<string,int64>", []any{map[string]any{"key": "a"}}, `got a map with keys [key]`},
		{"map entry bad value", "map<string,int64>", []any{map[string]any{"key": "a", "value": "v"}}, "map entry 0: pair second: int64"},
		{"Go map bad value", "map<string,int64>", map[string]any{"a": "v"}, "map entry a: pair second"},
		{"Go map duplicate encoded key", "map<int64,int64>", map[any]any{1: 1, 1.0: 2}, "two keys encode to the same bytes"},
		{"optional inner bad", "optional<int64>", "x", "optional value: int64"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := MustParse(tc.spec)
			b, err := c.Encode(tc.value)
			if err == nil {
				t.Fatalf("Encode = %x, want error", b)
			}
			if !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "encode "+c.String()+": ") {
				t.Fatalf("error = %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestDecodeDoesNotAlias(t *testing.T) {
	in := []byte("abc")
	v, _ := MustParse("bytes").Decode(in)
	in[0] = 'X'
	if string(v.([]byte)) != "abc" {
		t.Fatal("decoded bytes alias the input")
	}
	src := []byte("ab")
	out, _ := MustParse("bytes").Encode(src)
	out[0] = 'Z'
	if string(src) != "ab" {
		t.Fatal("encoded bytes alias the value")
	}
}

// Decoded values are usable and editable as expressions produce them:
// decode, modify the Go value, re-encode.
func TestEditRoundTrip(t *testing.T) {
	c := MustParse("map<string,int64>")
	v, err := c.Decode(h(t, "02000000 0d000000 01000000 61 0100000000000000 0d000000 01000000 62 0200000000000000"))
	if err != nil {
		t.Fatal(err)
	}
	entries := v.([]any)
	entries[1].(map[string]any)["value"] = entries[1].(map[string]any)["value"].(int64) + 40
	entries = append(entries, map[string]any{"key": "c", "value": 3})
	b, err := c.Encode(entries)
	if err != nil {
		t.Fatal(err)
	}
	want := h(t, "03000000 0d000000 01000000 61 0100000000000000 0d000000 01000000 62 2a00000000000000 0d000000 01000000 63 0300000000000000")
	if !bytes.Equal(b, want) {
		t.Fatalf("Encode = %x, want %x", b, want)
	}
}

var fuzzSpecs = []string{
	"bytes", "string", "int64", "uint64", "uint32", "double",
	"list<int64>", "list<string>", "list<list<uint32>>",
	"map<string,int64>", "map<int64,list<string>>", "map<string,optional<double>>",
	"optional<int64>", "optional<list<optional<string>>>",
	"pair<int64,string>", "pair<string,pair<uint32,bytes>>", "list<pair<string,int64>>",
	"optional<bytes>", "optional<map<bytes,string>>", "pair<optional<uint32>,list<double>>",
	"map<pair<bytes,int64>,optional<list<bytes>>>",
}

func FuzzCodecRoundTrip(f *testing.F) {
	seeds := []string{
		"", "00", "01", "0100000000000000", "08000000 0500000000000000 6162",
		"02000000 08000000 0100000000000000 08000000 0200000000000000", "00000000",
		"02000000 0d000000 01000000 61 0100000000000000 0d000000 01000000 62 0200000000000000",
		"01 0700000000000000", "ffffffff", "000000000000f87f", "010000000000f07f",
	}
	for i, s := range seeds {
		b, _ := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
		f.Add(uint8(i), b)
	}
	codecs := make([]Codec, len(fuzzSpecs))
	for i, s := range fuzzSpecs {
		codecs[i] = MustParse(s)
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		c := codecs[int(which)%len(codecs)]
		v, err := c.Decode(b)
		if err != nil {
			return
		}
		enc, err := c.Encode(v)
		if err != nil {
			t.Fatalf("%s: Encode(Decode(%x)) failed: %v", c, b, err)
		}
		if !bytes.Equal(enc, b) {
			t.Fatalf("%s: Encode(Decode(%x)) = %x", c, b, enc)
		}
		// Whatever decodes, CheckMapKeys judges without failing to
		// decode it.
		if err := CheckMapKeys(c, b); err != nil && !errors.Is(err, ErrRepeatedMapKey) {
			t.Fatalf("%s: CheckMapKeys(%x) = %v", c, b, err)
		}
	})
}

func FuzzParse(f *testing.F) {
	for _, s := range append(fuzzSpecs, "map<", "optional<optional<int64>>", " list < int64 > ", "pair<,>") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		c, err := Parse(spec)
		if err != nil {
			return
		}
		c2, err := Parse(c.String())
		if err != nil || c2.String() != c.String() {
			t.Fatalf("canonical %q of %q does not re-parse: %v", c.String(), spec, err)
		}
	})
}

// EmptyCollection is true for the encoding of an empty list or map only.
func TestEmptyCollection(t *testing.T) {
	zero := []byte{0, 0, 0, 0}
	for _, c := range []struct {
		spec string
		b    []byte
		want bool
	}{
		{"list<int64>", zero, true},
		{"map<string,int64>", zero, true},
		{"list<int64>", []byte{1, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0}, false},
		{"list<int64>", []byte{0, 0, 0, 0, 0}, false},
		{"bytes", zero, false},
		{"uint32", zero, false},
		{"optional<list<int64>>", append([]byte{1}, zero...), false},
		{"pair<bytes,bytes>", zero, false},
	} {
		if got := EmptyCollection(MustParse(c.spec), c.b); got != c.want {
			t.Errorf("EmptyCollection(%s, %x) = %v, want %v", c.spec, c.b, got, c.want)
		}
	}
}

// Args gives each codec's type arguments, themselves codecs.
func TestArgs(t *testing.T) {
	for spec, want := range map[string]string{
		"int64":                              "",
		"string":                             "",
		"list<int64>":                        "int64",
		"map<string,list<double>>":           "string list<double>",
		"pair<uint32,optional<bytes>>":       "uint32 optional<bytes>",
		"optional<map<int64,string>>":        "map<int64,string>",
		"list<pair<string,optional<int64>>>": "pair<string,optional<int64>>",
	} {
		var got []string
		for _, a := range Args(MustParse(spec)) {
			got = append(got, a.String())
		}
		if s := strings.Join(got, " "); s != want {
			t.Errorf("Args(%s) = %q, want %q", spec, s, want)
		}
	}
}
