package transform_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sptool/sptool/internal/gen"
	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/transform"
)

// exampleTree is the bundled example savepoint (internal/gen DefaultExample).
const exampleTree = "../testdata/example"

// TestExamples applies every examples/rules/*.yaml to the bundled example
// tree: the output must validate, and every rule must have done something
// (matched a row or changed the version map), except the rules listed in
// idle, with the reason.
func TestExamples(t *testing.T) {
	paths, err := filepath.Glob("../examples/rules/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 5 {
		t.Fatalf("found only %d examples: %q", len(paths), paths)
	}
	// Rules that legitimately match nothing on the example tree.
	idle := map[string][]int{}
	// Further checks per example, on the report and the output.
	extra := map[string]func(t *testing.T, rep *transform.Report, out *savepoint.Savepoint){
		"gdpr-erasure.yaml": func(t *testing.T, rep *transform.Report, out *savepoint.Savepoint) {
			// user-7: seen, profile, 1 cart item; user-42: profile;
			// user-299: seen, profile, 2 cart items (gen.ExampleRows).
			wantPurge(t, ruleStats(t, rep, 1).Purge, map[string]int64{"user-7": 3, "user-42": 1, "user-299": 4}, []string{"user-9999"})
			wantPurge(t, ruleStats(t, rep, 2).Purge, map[string]int64{"7": 1, "42": 1}, []string{})
		},
		"cleanup.yaml": func(t *testing.T, rep *transform.Report, out *savepoint.Savepoint) {
			// user-100..user-199 are the load-test users: one profile each.
			zero := int64(0)
			for _, l := range rowsOf(open(t, exampleTree)) {
				if l.Op == gen.OpAgg && savepoint.ParseKey(l.Key).SlotName() == "counts" && string(l.Value) == string(i64(0)) {
					zero++
				}
			}
			// The keep drops the free-tier profiles the first rule left.
			free := int64(0)
			for _, l := range rowsOf(open(t, exampleTree)) {
				k := savepoint.ParseKey(l.Key)
				user := string(k.UserKey)
				loadTest := strings.HasPrefix(user, "user-1") && len(user) == 8
				if l.Op == gen.OpEnricher && k.SlotName() == "profile" && !loadTest && strings.Contains(string(l.Value), `"tier":"free"`) {
					free++
				}
			}
			if zero == 0 || free == 0 {
				t.Fatalf("test setup: the example has %d zero counts and %d free-tier profiles", zero, free)
			}
			for i, want := range []counts{{100, 100, 0}, {zero, zero, 0}, {free, free, 0}} {
				rs := ruleStats(t, rep, i+1)
				if got := (counts{rs.Matched, rs.Dropped, rs.Changed}); got != want {
					t.Errorf("%s: matched/dropped/changed = %v, want %v", rs.Label, got, want)
				}
			}
		},
		"ttl-purge.yaml": func(t *testing.T, rep *transform.Report, out *savepoint.Savepoint) {
			asOf := ruleStats(t, rep, 1).Expired.AsOfMs
			left := map[string]int{}
			for _, l := range rowsOf(out) {
				k := savepoint.ParseKey(l.Key)
				if k.Kind != savepoint.KindKeyed || (k.SlotName() != "seen" && k.SlotName() != "cart") {
					continue
				}
				left[k.SlotName()]++
				if exp, _, ok := savepoint.SplitTTL(l.Value); ok && exp <= asOf {
					t.Errorf("expired row remains: %s", l)
				}
			}
			// The example shows a purge that keeps some of each slot: the
			// entries that expire after as_of.
			for _, slot := range []string{"seen", "cart"} {
				if left[slot] == 0 {
					t.Errorf("no row of %q left: the example purges the whole slot", slot)
				}
			}
			if rs := ruleStats(t, rep, 1); rs.Dropped == 0 {
				t.Errorf("the purge dropped no row")
			}
		},
		"migrate-to-v2.yaml": func(t *testing.T, rep *transform.Report, out *savepoint.Savepoint) {
			v2 := savepoint.OperatorIDFromUID("enricher-v2")
			n := 0
			for _, l := range rowsOf(out) {
				k := savepoint.ParseKey(l.Key)
				if l.Op == gen.OpEnricher {
					t.Fatalf("row of the old enricher remains: %s", l)
				}
				if l.Op == v2 {
					n++
				}
				if l.Op == gen.OpAgg && k.SlotName() == "counts" {
					t.Fatalf("row of the renamed slot remains: %s", l)
				}
			}
			if n != 600 {
				t.Errorf("%d rows of enricher-v2, want 600", n)
			}
			for _, f := range out.Files {
				e, ok := f.Snapshot.Versions.Get(gen.OpAgg, "UserCounter")
				if !ok || e.Version != 2 || e.Slot != "counts_v2" {
					t.Errorf("subtask %d: UserCounter entry %+v", f.Subtask, e)
				}
			}
		},
		"drop-operator.yaml": func(t *testing.T, rep *transform.Report, out *savepoint.Savepoint) {
			for _, l := range rowsOf(out) {
				if l.Op == gen.OpSource {
					t.Fatalf("row of the dropped operator remains: %s", l)
				}
				if k := savepoint.ParseKey(l.Key); l.Op == gen.OpAgg && k.Kind == savepoint.KindKeyed && string(k.Slot) == "seen" {
					t.Fatalf("row of the dropped slot remains: %s", l)
				}
			}
			for _, f := range out.Files {
				if _, ok := f.Snapshot.Versions.Get(gen.OpAgg, "SeenTtl"); ok {
					t.Errorf("subtask %d still stamps SeenTtl", f.Subtask)
				}
			}
		},
	}
	in := open(t, exampleTree)
	inRows := len(rowsOf(in))
	for _, p := range paths {
		name := filepath.Base(p)
		t.Run(name, func(t *testing.T) {
			set, err := rules.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "out")
			rep, err := run(t, exampleTree, set, transform.Options{Out: out})
			if err != nil {
				t.Fatal(err)
			}
			sp := open(t, out)
			if vr := savepoint.Validate(sp, savepoint.ValidateOptions{}); vr.Errors() != 0 {
				t.Errorf("output has %d validation errors: %+v", vr.Errors(), vr.ByCheck(""))
			}
			if sp.Generation != in.Generation || sp.Checkpoint != in.Checkpoint || len(sp.Files) != len(in.Files) || sp.Job != in.Job {
				t.Errorf("output is generation %d checkpoint %d with %d files (job %q), want %d, %d, %d (%q)",
					sp.Generation, sp.Checkpoint, len(sp.Files), sp.Job, in.Generation, in.Checkpoint, len(in.Files), in.Job)
			}
			checkAccounting(t, rep, inRows, len(rowsOf(sp)))
			if len(rep.PerRule) != len(set.Rules) {
				t.Fatalf("%d rules reported, want %d", len(rep.PerRule), len(set.Rules))
			}
			for _, rs := range rep.PerRule {
				did := rs.Matched > 0 || rs.VersionEntries > 0
				if slices.Contains(idle[name], rs.Index) {
					if rs.Dropped != 0 || rs.Changed != 0 {
						t.Errorf("%s: expected to do nothing, dropped %d changed %d", rs.Label, rs.Dropped, rs.Changed)
					}
					continue
				}
				if !did {
					t.Errorf("%s did nothing on the example (matched %d, version map changed in %d files)", rs.Label, rs.Matched, rs.VersionEntries)
				}
				if rs.Dropped > rs.Matched || rs.Changed > rs.Matched {
					t.Errorf("%s: dropped %d / changed %d rows but matched only %d", rs.Label, rs.Dropped, rs.Changed, rs.Matched)
				}
			}
			if f := extra[name]; f != nil {
				f(t, rep, sp)
			}
		})
	}
}
