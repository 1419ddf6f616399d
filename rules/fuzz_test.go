package rules

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the parser: it must never panic, and
// every outcome must be well formed (a Set whose rules are numbered and
// carry their spec, or an *Errors whose problems all have a position).
// Keys files come from a fixed in-memory reader.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(envRules))
	f.Add([]byte(decls + "  - keep: {op: 7, slot: agg, expr: 'value > 5'}\n"))
	opts := testOpts()
	opts.ReadFile = func(name string) ([]byte, error) {
		if filepath.Base(name) == "missing.txt" {
			return nil, os.ErrNotExist
		}
		return []byte("user-1\n42\n# c\n-7\r\nx y\n"), nil
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		set, err := ParseWithOptions("fuzz.yaml", src, opts)
		if err != nil {
			var errs *Errors
			if !errors.As(err, &errs) || errs.Len() == 0 {
				t.Fatalf("error is not a non-empty *Errors: %T %v", err, err)
			}
			if set != nil {
				t.Fatal("Set returned with an error")
			}
			for _, e := range errs.List {
				if e.Line < 1 || e.Col < 1 || e.Msg == "" {
					t.Fatalf("problem without position or text: %+v", e)
				}
			}
			_ = err.Error()
			return
		}
		for i, r := range set.Rules {
			if r.Index != i+1 || r.Spec() == nil || !r.Kind.Valid() {
				t.Fatalf("rule %d malformed: %+v", i+1, r)
			}
			_ = r.Label()
		}
		for _, w := range set.Warnings {
			_ = w.String()
		}
	})
}

// FuzzKeysFile reads arbitrary bytes as the keys file of a string list and
// of an int64, a uint64 and a uint32 list. Either the rules load, or they fail with an *Errors
// whose problems have positions; when they load, each list's keys are
// exactly the file's key lines (a UTF-8 byte order mark, a line's final
// '\r', blank lines and lines whose first non-blank byte is '#' left out;
// a string key is the line as is, an integer key the decimal between the
// blanks, little-endian in 8 bytes (int64, uint64) or 4 (uint32)), each
// once in file order with its line
// number, and each is found by Lookup and passed by MayMatch.
func FuzzKeysFile(f *testing.F) {
	for _, name := range []string{"erasure.txt", "int64-keys.txt", "bad-int64-keys.txt"} {
		b, err := os.ReadFile(filepath.Join(corpusDir, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("\xef\xbb\xbfalice\r\n\r\n# comment\r\n   # x\r\nbob \r\n  carol\n#anna\nalice\nlast"))
	f.Add([]byte("1\n +2\n\t-3\t\n-9223372036854775808\n9223372036854775808\n"))
	f.Add([]byte("0\n4294967295\n4294967296\n18446744073709551615\n+7\n007\n"))
	f.Add([]byte("-0\n 4294967295\n+007\n"))
	f.Add([]byte("alice\rbob\r"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, codec := range []string{"string", "int64", "uint64", "uint32"} {
			checkKeysFile(t, data, codec)
		}
	})
}

// intLinesValid reports whether data, as a keys file, lists at least one
// key and every key line holds a decimal number (an optional sign, ASCII
// digits, surrounding white space) within the range of the integer codec:
// read with math/big, apart from the parser's own reading.
func intLinesValid(data []byte, codec string) bool {
	if bytes.HasPrefix(data, []byte{0xff, 0xfe}) || bytes.HasPrefix(data, []byte{0xfe, 0xff}) {
		return false // UTF-16, refused
	}
	lo, hi := new(big.Int), new(big.Int)
	switch codec {
	case "int64":
		lo.SetInt64(math.MinInt64)
		hi.SetInt64(math.MaxInt64)
	case "uint64":
		hi.SetUint64(math.MaxUint64)
	case "uint32":
		hi.SetUint64(math.MaxUint32)
	}
	keys := 0
	for _, ln := range strings.Split(strings.TrimPrefix(string(data), "\xef\xbb\xbf"), "\n") {
		tr := strings.TrimSpace(strings.TrimSuffix(ln, "\r"))
		if tr == "" || tr[0] == '#' {
			continue
		}
		digits := strings.TrimLeft(tr, "+-")
		if len(tr)-len(digits) > 1 || digits == "" || strings.Trim(digits, "0123456789") != "" {
			return false
		}
		v, ok := new(big.Int).SetString(tr, 10)
		if !ok || v.Cmp(lo) < 0 || v.Cmp(hi) > 0 {
			return false
		}
		keys++
	}
	return keys > 0
}

func checkKeysFile(t *testing.T, data []byte, codec string) {
	src := []byte("version: 1\nrules:\n  - purge_keys: {keys_file: k.txt, codec: " + codec + "}\n")
	opts := testOpts()
	opts.ReadFile = func(string) ([]byte, error) { return data, nil }
	set, err := ParseWithOptions("fuzz.yaml", src, opts)
	if err != nil {
		var errs *Errors
		if !errors.As(err, &errs) || errs.Len() == 0 {
			t.Fatalf("%s: error is not a non-empty *Errors: %T %v", codec, err, err)
		}
		for _, e := range errs.List {
			if e.Line < 1 || e.Col < 1 || e.Msg == "" {
				t.Fatalf("%s: problem without position or text: %+v", codec, e)
			}
		}
		if codec != "string" && intLinesValid(data, codec) {
			t.Fatalf("%s: a list of valid keys refused: %v", codec, err)
		}
		return
	}
	var keys []string
	var lines []int
	seen := map[string]bool{}
	text := strings.TrimPrefix(string(data), "\xef\xbb\xbf")
	for i, ln := range strings.Split(text, "\n") {
		ln = strings.TrimSuffix(ln, "\r")
		tr := strings.TrimSpace(ln)
		if tr == "" || tr[0] == '#' {
			continue
		}
		k := ln
		switch codec {
		case "int64":
			v, err := strconv.ParseInt(tr, 10, 64)
			if err != nil {
				t.Fatalf("line %d: %q is no int64, but the int64 list loaded", i+1, tr)
			}
			k = string(binary.LittleEndian.AppendUint64(nil, uint64(v)))
		case "uint64", "uint32":
			width := 8
			if codec == "uint32" {
				width = 4
			}
			v, ok := new(big.Int).SetString(tr, 10)
			if !ok || v.Sign() < 0 || v.BitLen() > 8*width {
				t.Fatalf("line %d: %q is no %s, but the %s list loaded", i+1, tr, codec, codec)
			}
			k = string(binary.LittleEndian.AppendUint64(nil, v.Uint64())[:width])
		}
		if !seen[k] {
			seen[k] = true
			keys, lines = append(keys, k), append(lines, i+1)
		}
	}
	p := set.Rules[0].PurgeKeys
	if !slices.Equal(p.Keys, keys) || !slices.Equal(p.Lines, lines) {
		t.Fatalf("%s: keys %q at lines %v, want %q at %v", codec, p.Keys, p.Lines, keys, lines)
	}
	for i, k := range p.Keys {
		if j, ok := p.Lookup([]byte(k)); !ok || j != i || !p.MayMatch([]byte(k)) {
			t.Fatalf("%s: key %d %q: Lookup %d %v, MayMatch %v", codec, i, k, j, ok, p.MayMatch([]byte(k)))
		}
	}
}
