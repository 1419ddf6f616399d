package rules

import (
	"errors"
	"os"
	"path/filepath"
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
