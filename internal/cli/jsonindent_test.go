package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// jsonIndentCases are compact JSON texts as Marshal writes them, with the
// shapes the reports have: empty and nested objects and arrays, strings
// holding escapes, quotes, brackets, commas and colons, numbers, literals.
var jsonIndentCases = []string{
	`{}`,
	`[]`,
	`"x"`,
	`7`,
	`{"a":[],"b":{},"c":[{}],"d":[[],[1,2]],"e":{"f":{"g":null}}}`,
	`{"key":"a\"b\\","k2":"\\\"","k3":"{[,:]}","k4":"\u0000\u001f\n","k5":"é☃"}`,
	`[true,false,null,-1.5e+10,0,"",""]`,
	`{"found":[{"key":"sha256:2bd806c9","rows":1},{"key":"0x6efc","key_hex":"6efc","rows":2,"timers":3}],"not_found":["bob"]}`,
	`{"\\":"\\\\","\"":"\"\""}`,
}

// TestAppendIndented: the indentation is json.Indent's, byte for byte,
// with and without the newline Encode ends a value with.
func TestAppendIndented(t *testing.T) {
	deep := strings.Repeat(`{"a":[`, 40) + "1" + strings.Repeat("]}", 40) // 80 levels, deeper than any report
	for _, c := range append(jsonIndentCases, deep) {
		for _, src := range []string{c, c + "\n"} {
			checkIndented(t, []byte(src))
		}
	}
}

// checkIndented fails t when appendIndented and json.Indent indent src
// differently.
func checkIndented(t *testing.T, src []byte) {
	t.Helper()
	var want bytes.Buffer
	if err := json.Indent(&want, src, "", "  "); err != nil {
		t.Fatalf("%q: %v", src, err)
	}
	if got := appendIndented([]byte("pre"), src); !bytes.Equal(got, append([]byte("pre"), want.Bytes()...)) {
		t.Errorf("%q indented as\n%s\nwant\n%s", src, got, want.Bytes())
	}
}

// FuzzAppendIndented: any valid JSON, made compact as Marshal makes it, is
// indented as json.Indent indents it.
func FuzzAppendIndented(f *testing.F) {
	for _, c := range jsonIndentCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, b); err != nil {
			t.Fatal(err)
		}
		compact.WriteByte('\n')
		checkIndented(t, compact.Bytes())
	})
}
