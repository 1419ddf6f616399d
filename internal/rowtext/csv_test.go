package rowtext

import (
	"bytes"
	"encoding/csv"
	"math/rand/v2"
	"testing"
)

// csvLine is the line encoding/csv writes for fields.
func csvLine(t testing.TB, fields []string) string {
	t.Helper()
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if err := w.Write(fields); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	return buf.String()
}

func TestAppendCSVFieldMatchesEncodingCSV(t *testing.T) {
	fixed := []string{"", "a", `\.`, `\.x`, " lead", "\tlead", "\u00a0nbsp", "\u2003em space", "trail ", `say "hi"`,
		"a,b", "line\nfeed", "carriage\rreturn", "\r\n", `""`, "é", "\xff", "0x00ff"}
	for _, f := range fixed {
		if got, want := string(AppendCSVLine(nil, f, "x")), csvLine(t, []string{f, "x"}); got != want {
			t.Errorf("field %q: %q, want %q", f, got, want)
		}
		if got, want := string(AppendCSVField(nil, []byte(f))), string(AppendCSVField(nil, f)); got != want {
			t.Errorf("field %q as bytes: %q, as a string %q", f, got, want)
		}
	}
	r := rand.New(rand.NewPCG(9, 10))
	alphabet := []byte("a ,\"\r\n\t\\.\xc2\xa0\xe2\x80\x83\xff")
	for range 20000 {
		fields := make([]string, 1+r.IntN(3))
		for i := range fields {
			b := make([]byte, r.IntN(6))
			for j := range b {
				b[j] = alphabet[r.IntN(len(alphabet))]
			}
			fields[i] = string(b)
		}
		if got, want := string(AppendCSVLine(nil, fields...)), csvLine(t, fields); got != want {
			t.Fatalf("fields %q: %q, want %q", fields, got, want)
		}
	}
}
