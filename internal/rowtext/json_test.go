package rowtext

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// marshal is what encoding/json writes for v with HTML escaping off.
func marshal(t testing.TB, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatalf("encoding/json refused %#v: %v", v, err)
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}))
}

var samples = []string{
	"", "a", "agg", "0x0011", "key with spaces", `quote " and \ backslash`, "<html> & 'apos'",
	"\x00\x01\x07\x08\x09\x0a\x0b\x0c\x0d\x1b\x1f", "\x7f DEL", "é ü ß 日本 🙂", "\u2028 line \u2029 para",
	"\xff", "a\xffb", "\xc3", "\xc3(", "\xe2\x80", "\xed\xa0\x80 surrogate", "\xf4\x90\x80\x80 beyond", "tail\xe2",
}

func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range samples {
		want := marshal(t, s)
		if got := string(AppendJSONString([]byte("prefix"), s)); got != "prefix"+want {
			t.Errorf("AppendJSONString(%q) = %s, want %s", s, got[len("prefix"):], want)
		}
		if got := string(AppendJSONString(nil, []byte(s))); got != want {
			t.Errorf("AppendJSONString([]byte %q) = %s, want %s", s, got, want)
		}
	}
}

func TestAppendJSONStringRandomBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	// Bytes from a small alphabet that holds every class the escaper
	// tells apart: safe ASCII, escapes, controls, lead and continuation
	// bytes, and the bytes of U+2028.
	alphabet := []byte("a \"\\\x00\x08\x0c\n\r\t\x1f\x7f\xc3\xa9\xe2\x80\xa8\xa9\xf0\x9f\x99\x82\xff\xed")
	for range 20000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		want := marshal(t, string(b))
		if got := string(AppendJSONString(nil, b)); got != want {
			t.Fatalf("AppendJSONString(%q) = %s, want %s", b, got, want)
		}
		// In pieces of 1-4 bytes or a little more, cut by CutUTF8, as
		// AppendPieces writes long strings.
		got := []byte{'"'}
		for rest := b; len(rest) > 0; {
			n := CutUTF8(rest, 1+r.IntN(4))
			got = AppendJSONStringBody(got, rest[:n])
			rest = rest[n:]
		}
		if got = append(got, '"'); string(got) != want {
			t.Fatalf("%q in pieces: %s, want %s", b, got, want)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range samples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := marshal(t, s)
		if got := string(AppendJSONString(nil, s)); got != want {
			t.Fatalf("AppendJSONString(%q) = %s, want %s", s, got, want)
		}
		// In pieces cut by CutUTF8, as long fields are written.
		got := []byte{'"'}
		for rest, n := s, 1+len(s)%5; rest != ""; {
			at := CutUTF8(rest, n)
			got = AppendJSONStringBody(got, rest[:at])
			rest = rest[at:]
		}
		if got = append(got, '"'); string(got) != want {
			t.Fatalf("%q in pieces: %s, want %s", s, got, want)
		}
	})
}

func TestAppendJSONValueMatchesEncodingJSON(t *testing.T) {
	values := []any{
		nil, "text", "<&>", int64(-1 << 63), int64(42), uint64(1<<64 - 1), 7, int32(-5), true, false,
		0.0, math.Copysign(0, -1), 1.0, -2.5, 1e20, 1e21, 123456789e15, 1e-6, 9.99e-7, 1e-9, 5e-324, math.MaxFloat64,
		0.1, 1.0 / 3, -1e-7, 12345678.9,
		[]any{int64(1), "two", nil, []any{true}}, map[string]any{"b": 1.5, "a": "<x>"},
		[]byte{1, 2, 3}, struct{ A int }{1},
	}
	for _, v := range values {
		got, err := AppendJSONValue([]byte("["), v)
		if err != nil {
			t.Fatalf("AppendJSONValue(%#v): %v", v, err)
		}
		if want := "[" + marshal(t, v); string(got) != want {
			t.Errorf("AppendJSONValue(%#v) = %s, want %s", v, got, want)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		got, err := AppendJSONValue([]byte("x"), f)
		if err == nil || string(got) != "x" {
			t.Errorf("AppendJSONValue(%v) = %q, %v; want x and encoding/json's error", f, got, err)
		}
	}
}

func TestAppendJSONFloatRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		got, ok := AppendJSONFloat(nil, f)
		if want := marshal(t, f); !ok || string(got) != want {
			t.Fatalf("AppendJSONFloat(%v) = %s, want %s", f, got, want)
		}
	}
}

func BenchmarkAppendJSONString(b *testing.B) {
	s := "0x00000e0000000000"
	var buf []byte
	for b.Loop() {
		buf = AppendJSONString(buf[:0], s)
	}
}
