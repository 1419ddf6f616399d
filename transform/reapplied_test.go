package transform_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sptool/sptool/transform"
)

// A rule file applied to its own output is warned of (the files carry its
// digest in sptool.provenance), and only then: not on the input it was
// made for, not for another rule file, and --strict refuses the run.
func TestReappliedRulesWarned(t *testing.T) {
	dir := t.TempDir()
	in := writeBaseTree(t, filepath.Join(dir, "in"), baseRows)
	set := parseRules(t, slotDecls+"  - set_value: {op: 7, slot: agg, expr: 'value * 10'}\n", nil)
	other := parseRules(t, slotDecls+"  - drop: 'slot == \"tmp\"'\n", nil)
	reapplied := func(rep *transform.Report) int {
		n := 0
		for _, w := range rep.Warnings {
			if strings.Contains(w, "written by these same rules") {
				n++
			}
		}
		return n
	}
	out := filepath.Join(dir, "out")
	rep, err := run(t, in, set, transform.Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if n := reapplied(rep); n != 0 {
		t.Errorf("first run: %d warnings of rules applied again: %q", n, rep.Warnings)
	}
	rep, err = run(t, out, set, transform.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := reapplied(rep); n != 1 {
		t.Errorf("the same rules on their output: %d warnings of rules applied again, want 1: %q", n, rep.Warnings)
	}
	if rep, err = run(t, out, other, transform.Options{DryRun: true}); err != nil {
		t.Fatal(err)
	} else if n := reapplied(rep); n != 0 {
		t.Errorf("other rules on the output: %d warnings of rules applied again: %q", n, rep.Warnings)
	}
	var werr *transform.WarningsError
	if _, err := run(t, out, set, transform.Options{DryRun: true, Strict: true}); !errors.As(err, &werr) {
		t.Errorf("--strict, the same rules on their output: %v, want a *WarningsError", err)
	}
	// A rescale in between carries the rule file's digest on.
	rescaled := filepath.Join(dir, "rescaled")
	if _, err := run(t, out, parseRules(t, "version: 1\nrules:\n  - rescale: {parallelism: 3}\n", nil), transform.Options{Out: rescaled}); err != nil {
		t.Fatal(err)
	}
	if rep, err = run(t, rescaled, set, transform.Options{DryRun: true}); err != nil {
		t.Fatal(err)
	} else if n := reapplied(rep); n != 1 {
		t.Errorf("the same rules after a rescale of their output: %d warnings of rules applied again, want 1: %q", n, rep.Warnings)
	}
	// A recurring erasure runs one rule file, its keys file renewed, on
	// its own output: nothing compounds, nothing is warned of.
	erase := slotDecls + "  - purge_keys: {keys_file: subjects.txt, op: 8, slot: cart}\n"
	erased := filepath.Join(dir, "erased")
	if _, err := run(t, in, parseRules(t, erase, map[string]string{"subjects.txt": "alice\n"}), transform.Options{Out: erased}); err != nil {
		t.Fatal(err)
	}
	if rep, err = run(t, erased, parseRules(t, erase, map[string]string{"subjects.txt": "bob\n"}), transform.Options{DryRun: true}); err != nil {
		t.Fatal(err)
	} else if n := reapplied(rep); n != 0 {
		t.Errorf("an erasure run again on its output: %d warnings of rules applied again: %q", n, rep.Warnings)
	}
}
