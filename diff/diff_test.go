package diff

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sptool/sptool/internal/golden"
	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/transform"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

var exampleTree = filepath.Join("..", "testdata", "example")

var (
	opAgg      = savepoint.OperatorIDFromUID("agg")
	opEnricher = savepoint.OperatorIDFromUID("enricher")
)

func open(t testing.TB, path string) *savepoint.Savepoint {
	t.Helper()
	sp, err := savepoint.Open(path, savepoint.OpenOptions{RequireValid: true})
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// compare is Compare that fails the test on an error.
func compare(t testing.TB, a, b *savepoint.Savepoint, opts Options) *Result {
	t.Helper()
	r, err := Compare(context.Background(), a, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestCompareFails: a comparison cancelled, or of an input that changed
// while it was read, gives an error, never a verdict.
func TestCompareFails(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r, err := Compare(ctx, open(t, exampleTree), open(t, exampleTree), Options{}); !errors.Is(err, context.Canceled) || r != nil {
		t.Errorf("cancelled: %v, %v; want context.Canceled and no result", r, err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "in.snap")
	src, err := os.ReadFile(filepath.Join("..", "testdata", "clink", "snapshot-v1.snap"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	a, b := open(t, path), open(t, path)
	if err := os.WriteFile(path, append(src, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := Compare(context.Background(), a, b, Options{}); !errors.Is(err, savepoint.ErrInputChanged) || r != nil || !strings.HasPrefix(err.Error(), "A: ") {
		t.Errorf("changed input: %v, %v; want A: ErrInputChanged and no result", r, err)
	}
}

// TestCompareTempDirInside: a TempDir inside an input is refused, naming
// the side, once when both sides are that input.
func TestCompareTempDirInside(t *testing.T) {
	tmp := filepath.Join(exampleTree, "v1")
	r, err := Compare(context.Background(), open(t, exampleTree), open(t, exampleTree), Options{TempDir: tmp})
	if err == nil || r != nil || !strings.HasPrefix(err.Error(), "diff: side A: temporary directory "+tmp+" lies inside the input") || strings.Count(err.Error(), "lies inside") != 1 {
		t.Errorf("TempDir inside the input: %v, %v", r, err)
	}
}

// TestInOrderCancelled: a side whose sorted copies were stopped because
// the comparison was cancelled is not read in place (which would sort its
// files in memory, at length): the error is the context's.
func TestInOrderCancelled(t *testing.T) {
	defer func(v int) { sortRows = v }(sortRows)
	sortRows = 0
	var rows []savepoint.Row
	for i := range 1000 {
		rows = append(rows, savepoint.Row{Op: 1, Key: savepoint.EncodeKeyedKey([]byte("s"), fmt.Appendf(nil, "%d", 999-i)), Value: []byte("v")})
	}
	sp := &savepoint.Savepoint{Kind: savepoint.InputTree, Files: []*savepoint.File{{Snapshot: &savepoint.Snapshot{Rows: rows}}}, Groups: []savepoint.Group{{First: 0, Count: 1}}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var warnings []string
	if v, _, _, err := inOrder(ctx, sp, "A", t.TempDir(), &warnings); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: view %p of %p, warnings %q, error %v; want context.Canceled", v, sp, warnings, err)
	}
	v, _, done, err := inOrder(context.Background(), sp, "A", t.TempDir(), &warnings)
	if err != nil || v == sp || len(warnings) > 0 {
		t.Fatalf("view %p of %p, warnings %q, error %v; want a sorted copy", v, sp, warnings, err)
	}
	done()
}

func parse(t testing.TB, src string) *rules.Set {
	t.Helper()
	set, err := rules.Parse("rules.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// apply runs a rule file over the example tree with the transform engine
// and returns the output tree's path.
func apply(t testing.TB, src string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	if _, err := transform.Run(context.Background(), open(t, exampleTree), parse(t, src), transform.Options{Out: out}); err != nil {
		t.Fatal(err)
	}
	return out
}

func slotOf(r *Result, op uint64, slot string) *Slot {
	for i := range r.Operators {
		if r.Operators[i].Op != op {
			continue
		}
		for j := range r.Operators[i].Slots {
			if s := &r.Operators[i].Slots[j]; s.Slot == slot {
				return s
			}
		}
	}
	return nil
}

func TestDiffIdentical(t *testing.T) {
	a, b := open(t, exampleTree), open(t, exampleTree)
	r := compare(t, a, b, Options{Limit: DefaultLimit})
	rows, _ := a.Union()
	if !r.Identical || r.Summary.Unchanged != int64(len(rows)) || r.Summary.Differs() || len(r.Versions) != 0 || len(r.Metadata) != 0 {
		t.Fatalf("identical trees: %+v", r.Summary)
	}
	if r.A.Rows != len(rows) || r.B.Rows != len(rows) || r.A.StoredRows != 1112 {
		t.Errorf("sides %+v %+v", r.A, r.B)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "identical: no state, version-map or metadata differences") {
		t.Errorf("text:\n%s", text.String())
	}
}

// TestDiffPurge: a purge of two users' keys reports exactly the removed rows.
func TestDiffPurge(t *testing.T) {
	out := apply(t, `version: 1
slots:
  - {uid: enricher, slot: cart, key: string, value: int64, ttl: true, composite: true}
rules:
  - purge_keys: {keys: [user-1, user-2], codec: string}
`)
	a, b := open(t, exampleTree), open(t, out)
	// Expected: every row of a whose user key is user-1 or user-2, or starts
	// with one of them followed by 0x1F in the composite cart slot.
	union, _ := a.Union()
	want := map[string]int64{}
	var total int64
	for _, u := range union {
		k := savepoint.ParseKey(u.Row.Key)
		if k.Kind != savepoint.KindKeyed {
			continue
		}
		uk := string(k.UserKey)
		if i := strings.IndexByte(uk, 0x1F); i >= 0 && string(k.Slot) == "cart" {
			uk = uk[:i]
		}
		if uk == "user-1" || uk == "user-2" {
			want[fmt.Sprintf("%d/%s", u.Row.Op, k.Slot)]++
			total++
		}
	}
	r := compare(t, a, b, Options{Limit: 100})
	if r.Identical || r.Summary.Removed != total || r.Summary.Added != 0 || r.Summary.Changed != 0 || int(r.Summary.Unchanged) != len(union)-int(total) {
		t.Fatalf("summary %+v, want %d removed", r.Summary, total)
	}
	for _, op := range r.Operators {
		for _, s := range op.Slots {
			if s.Removed != want[fmt.Sprintf("%d/%s", op.Op, s.Slot)] {
				t.Errorf("op %d slot %s: %d removed, want %d", op.Op, s.Slot, s.Removed, want[fmt.Sprintf("%d/%s", op.Op, s.Slot)])
			}
			if int64(len(s.Samples.Removed)) != s.Removed {
				t.Errorf("op %d slot %s: %d samples of %d", op.Op, s.Slot, len(s.Samples.Removed), s.Removed)
			}
			for _, x := range s.Samples.Removed {
				kh := x.KeyHex
				if x.A == nil || x.B != nil || !strings.Contains(kh, "757365722d31") && !strings.Contains(kh, "757365722d32") { // user-1, user-2
					t.Errorf("sample %+v", x)
				}
			}
		}
	}
	// The rewritten files carry sptool.provenance: reported, not counted.
	if len(r.Metadata) != 1 || r.Metadata[0].Key != savepoint.MetaProvenance || r.Metadata[0].CountsAsDifference || r.Summary.MetadataChanges != 0 {
		t.Errorf("metadata %+v", r.Metadata)
	}
	// The reverse direction: the same rows added.
	back := compare(t, b, a, Options{})
	if back.Summary.Added != total || back.Summary.Removed != 0 {
		t.Errorf("reverse: %+v", back.Summary)
	}
}

// TestDiffRename: a renamed slot shows its rows removed under the old name
// and added under the new one, and the version-map entry's slot change.
func TestDiffRename(t *testing.T) {
	src := `version: 1
slots:
  - {uid: agg, slot: counts, key: int64, value: int64}
rules:
  - rename_slot: {uid: agg, from: counts, to: counts_v2}
  - set_version: {uid: agg, state_type: UserCounter, version: 2, slot: counts_v2}
`
	out := apply(t, src)
	r := compare(t, open(t, exampleTree), open(t, out), Options{Limit: 2, Rules: parse(t, src)})
	old, nu := slotOf(r, opAgg, "counts"), slotOf(r, opAgg, "counts_v2")
	if old == nil || nu == nil {
		t.Fatalf("slots %+v", r.Operators)
	}
	if old.Removed != 300 || old.Added != 0 || old.Unchanged != 0 || nu.Added != 300 || nu.Removed != 0 {
		t.Errorf("counts %+v, counts_v2 %+v", old.Counts, nu.Counts)
	}
	if r.Summary.Removed != 300 || r.Summary.Added != 300 || r.Summary.Changed != 0 || r.Summary.SlotsChanged != 2 || r.Summary.OperatorsChanged != 1 {
		t.Errorf("summary %+v", r.Summary)
	}
	// Samples are decoded with the declaration (which follows the rename).
	for _, x := range append(old.Samples.Removed, nu.Samples.Added...) {
		v := x.A
		if v == nil {
			v = x.B
		}
		if _, ok := x.DecodedKey.(int64); !ok || v.Decoded == nil {
			t.Errorf("sample not decoded: %+v", x)
		}
	}
	if len(r.Versions) != 1 {
		t.Fatalf("versions %+v", r.Versions)
	}
	v := r.Versions[0]
	if v.Op != opAgg || v.StateType != "UserCounter" || *v.A != (VersionEntry{Version: 1, Slot: "counts"}) || *v.B != (VersionEntry{Version: 2, Slot: "counts_v2"}) {
		t.Errorf("version change %+v a=%+v b=%+v", v, v.A, v.B)
	}
}

// TestDiffVersionOnly: a version bump alone is a difference with no row changes.
func TestDiffVersionOnly(t *testing.T) {
	out := apply(t, `version: 1
rules:
  - set_version: {uid: enricher, state_type: Profile, version: 3, slot: profile}
  - set_version: {uid: enricher, state_type: Fresh, version: 1}
`)
	r := compare(t, open(t, exampleTree), open(t, out), Options{Limit: DefaultLimit})
	if r.Identical || r.Summary.Differs() || r.Summary.VersionChanges != 2 {
		t.Fatalf("summary %+v identical %v", r.Summary, r.Identical)
	}
	want := `[{"op":3714747266114981297,"state_type":"Fresh","a":null,"b":{"version":1,"slot":""}},{"op":3714747266114981297,"state_type":"Profile","a":{"version":2,"slot":"profile"},"b":{"version":3,"slot":"profile"}}]`
	got, _ := json.Marshal(r.Versions)
	if string(got) != want {
		t.Errorf("versions\n%s\nwant\n%s", got, want)
	}
}

// TestDiffChangedValues: set_value changes every count; samples show both sides.
func TestDiffChangedValues(t *testing.T) {
	src := `version: 1
slots:
  - {uid: agg, slot: counts, key: int64, value: int64}
rules:
  - set_value: {uid: agg, slot: counts, expr: 'value == 0 ? 0 : value * 100'}
`
	out := apply(t, src)
	r := compare(t, open(t, exampleTree), open(t, out), Options{Limit: 3, Rules: parse(t, src)})
	s := slotOf(r, opAgg, "counts")
	if s.Changed+s.Unchanged != 300 || s.Changed < 290 || len(s.Samples.Changed) != 3 {
		t.Fatalf("counts %+v", s.Counts)
	}
	for _, x := range s.Samples.Changed {
		a, b := x.A.Decoded.(int64), x.B.Decoded.(int64)
		if b != a*100 || x.A.Hex == x.B.Hex {
			t.Errorf("sample %+v", x)
		}
		var raw [8]byte
		binary.LittleEndian.PutUint64(raw[:], uint64(b))
		if x.B.Value != savepoint.RenderBytes(raw[:], 64) {
			t.Errorf("sample rendering %q", x.B.Value)
		}
	}
	var text bytes.Buffer
	r.WriteText(&text)
	if !strings.Contains(text.String(), "~ kg=") || !strings.Contains(text.String(), "... ") {
		t.Errorf("text:\n%s", text.String())
	}
}

// TestDiffStaleCopiesIgnored: stale keyed copies do not make a difference;
// only the owner's copy is compared.
func TestDiffStaleCopiesIgnored(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, extra []savepoint.Row) *savepoint.Savepoint {
		tw, err := savepoint.CreateTree(filepath.Join(dir, name), savepoint.TreeOptions{Generation: 1, Checkpoint: 3})
		if err != nil {
			t.Fatal(err)
		}
		k := savepoint.EncodeKeyedKey([]byte("s"), []byte("user-42")) // key group 75: subtask 1 of 2
		for i := 0; i < 2; i++ {
			rows := []savepoint.Row{{Op: 9, Key: []byte{0xff, 'o'}, Value: []byte{byte(i + 1), 0, 0, 0, 0, 0, 0, 0}}}
			if i == 1 {
				rows = append(rows, savepoint.Row{Op: 9, Key: k, Value: []byte("owner")})
			} else {
				rows = append(rows, extra...)
			}
			if _, err := tw.WriteSubtask(i, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.CompressNone); err != nil {
				t.Fatal(err)
			}
		}
		if err := tw.Commit("1", nil); err != nil {
			t.Fatal(err)
		}
		return open(t, filepath.Join(dir, name))
	}
	k := savepoint.EncodeKeyedKey([]byte("s"), []byte("user-42"))
	a := write("a", nil)
	b := write("b", []savepoint.Row{{Op: 9, Key: k, Value: []byte("stale")}})
	r := compare(t, a, b, Options{})
	if !r.Identical || r.B.StaleCopies != 1 || len(r.Warnings) != 1 || !strings.HasPrefix(r.Warnings[0], "B: 1 stale keyed copy") {
		t.Fatalf("identical %v, B %+v, warnings %q", r.Identical, r.B, r.Warnings)
	}
}

// TestDiffNoWarningForDifferingOperatorCopies: operator rows and the empty
// key whose copies differ per subtask (not all 8-byte values: window
// watermarks, CDC positions) are compared as restores see them, so diff
// does not warn that the union used one copy (docs/diff-export.md); export
// does.
func TestDiffNoWarningForDifferingOperatorCopies(t *testing.T) {
	dir := t.TempDir()
	tw, err := savepoint.CreateTree(filepath.Join(dir, "t"), savepoint.TreeOptions{Generation: 1, Checkpoint: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		rows := []savepoint.Row{
			{Op: 9, Key: nil, Value: []byte{byte(i), 0, 0, 0, 0, 0, 0, 0}},
			{Op: 9, Key: []byte("\xffwinrow.wm"), Value: []byte{1, byte(i), 0, 0, 0, 0, 0, 0, 0}},
		}
		if _, err := tw.WriteSubtask(i, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.CompressNone); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Commit("1", nil); err != nil {
		t.Fatal(err)
	}
	sp := open(t, filepath.Join(dir, "t"))
	r := compare(t, sp, sp, Options{})
	if !r.Identical || len(r.Warnings) != 0 {
		t.Fatalf("identical %v, warnings %q, want none", r.Identical, r.Warnings)
	}
}

// TestDiffGolden pins the text and JSON output of a small diff.
func TestDiffGolden(t *testing.T) {
	src := `version: 1
slots:
  - {uid: agg, slot: counts, key: int64, value: int64}
  - {uid: enricher, slot: profile, key: string, value: string}
rules:
  - purge_keys: {keys: [user-7], codec: string, uid: enricher, slot: profile}
  - set_value: {uid: agg, slot: counts, expr: 'key == 3 ? value + 1 : value'}
  - rename_slot: {uid: enricher, from: cart, to: basket}
  - set_version: {uid: enricher, state_type: Cart, version: 1, slot: basket}
`
	out := apply(t, src)
	r := compare(t, open(t, exampleTree), open(t, out), Options{Limit: 1, Rules: parse(t, src)})
	r.A.Path, r.B.Path = "A", "B"
	// sptool.provenance is the transform engine's business: pin only its presence.
	for i, m := range r.Metadata {
		if m.Key == savepoint.MetaProvenance {
			for j := range m.B {
				r.Metadata[i].B[j] = fmt.Sprintf("<provenance of file %d>", j)
			}
		}
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]byte{"diff.txt": text.Bytes(), "diff.json": append(js, '\n')} {
		golden.Check(t, filepath.Join("testdata", "golden", name), got, *update, "go test ./diff -update")
	}
}

// Files out of order are read through sorted copies: the comparison (counts,
// samples, both sides' stored rows and duplicates) is the one made reading
// them in place, for trees with duplicates within files and stale copies.
func TestDiffThroughSortedCopies(t *testing.T) {
	defer func(v int) { sortRows = v }(sortRows)
	tree := func(seed uint64, change bool) *savepoint.Savepoint {
		r := rand.New(rand.NewPCG(seed, 3))
		var files []*savepoint.File
		for s := 0; s < 3; s++ {
			var rows []savepoint.Row
			for j := 300 + r.IntN(300); j > 0; j-- {
				key := savepoint.EncodeKeyedKey([]byte([]string{"a", "bb"}[r.IntN(2)]), []byte(fmt.Sprint(r.IntN(150))))
				v := []byte{byte(s), byte(j % 3)}
				if change && j%7 == 0 {
					v = []byte{9}
				}
				rows = append(rows, savepoint.Row{Op: uint64(1 + r.IntN(2)), Key: key, Value: v})
			}
			files = append(files, &savepoint.File{Subtask: s, Snapshot: &savepoint.Snapshot{Rows: rows}})
		}
		return &savepoint.Savepoint{Kind: savepoint.InputTree, Files: files, Groups: []savepoint.Group{{First: 0, Count: 3}}}
	}
	for seed := uint64(1); seed <= 5; seed++ {
		a, b := tree(seed, false), tree(seed+100, true)
		opts := Options{Limit: 5, TempDir: t.TempDir()}
		sortRows = 1 << 20
		inPlace := compare(t, a, b, opts)
		want, _ := json.Marshal(inPlace)
		sortRows = 0
		got, _ := json.Marshal(compare(t, a, b, opts))
		if !bytes.Equal(got, want) {
			t.Fatalf("seed %d: through sorted copies\n%s\nin place\n%s", seed, got, want)
		}
		if s := inPlace.A; s.StoredRows == s.Rows+s.StaleCopies+s.Lost || s.StaleCopies+s.Lost == 0 || inPlace.Summary.Changed == 0 {
			t.Fatalf("seed %d: no duplicates within files, no stale or lost copies, or no change: the test covers nothing (%+v)", seed, s)
		}
	}
}

// pullAhead hands out every row of its sequence in order, whatever the
// count against its batch, and stopping it early stops the sequence.
func TestPullAhead(t *testing.T) {
	seq := func(n int, made *int) iter.Seq[savepoint.UnionRow] {
		return func(yield func(savepoint.UnionRow) bool) {
			for i := range n {
				*made = i + 1
				if !yield(savepoint.UnionRow{Row: savepoint.Row{Op: uint64(i)}, Subtask: i % 3}) {
					return
				}
			}
		}
	}
	for _, n := range []int{0, 1, pullBatch - 1, pullBatch, pullBatch + 1, 3*pullBatch + 7} {
		var made int
		var faults savepoint.Faults
		next, stop := pullAhead(seq(n, &made), &faults)
		for i := range n {
			r, ok := next()
			if !ok || r.Row.Op != uint64(i) || r.Subtask != i%3 {
				t.Fatalf("%d rows: row %d is %+v, %v", n, i, r, ok)
			}
		}
		if r, ok := next(); ok {
			t.Fatalf("%d rows: a row more: %+v", n, r)
		}
		stop()
		faults.Wait()
		if made != n {
			t.Fatalf("%d rows: the sequence made %d", n, made)
		}
	}
	var made int
	var faults savepoint.Faults
	next, stop := pullAhead(seq(10*pullBatch, &made), &faults)
	next()
	stop()
	faults.Wait()
	// Three buffers of rows and the one being made when stopped, at most.
	if made > 3*pullBatch+1 {
		t.Errorf("stopped after one row, the sequence made %d", made)
	}
}

// A panic of pullAhead's sequence (a fault reading a mapped input cut short)
// ends its rows, and Wait raises it in the caller.
func TestPullAheadPanic(t *testing.T) {
	seq := func(yield func(savepoint.UnionRow) bool) {
		for i := range 3 * pullBatch {
			if i == pullBatch+100 {
				panic("input cut short")
			}
			if !yield(savepoint.UnionRow{Row: savepoint.Row{Op: uint64(i)}}) {
				return
			}
		}
	}
	var faults savepoint.Faults
	next, stop := pullAhead(seq, &faults)
	n := 0
	for _, ok := next(); ok; _, ok = next() {
		n++
	}
	stop()
	if n > pullBatch {
		t.Errorf("%d rows handed over, from a sequence that failed at %d", n, pullBatch+100)
	}
	defer func() {
		if p := recover(); p != "input cut short" {
			t.Errorf("Wait raised %v", p)
		}
	}()
	faults.Wait()
	t.Error("Wait raised nothing")
}

// TestVersionMapPerFile: when a side's files carry different version maps,
// which subtask carries which is compared too (each restores its own), so a
// stamp changed in a file other than the first is a difference; files that
// agree on both sides compare the job-wide map only.
func TestVersionMapPerFile(t *testing.T) {
	vm := func(packed string) savepoint.VersionMap {
		v, err := savepoint.ParseVersionMap(packed)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tree := func(maps ...string) *savepoint.Savepoint {
		sp := &savepoint.Savepoint{Kind: savepoint.InputTree, Groups: []savepoint.Group{{First: 0, Count: len(maps)}}}
		for i, m := range maps {
			sp.Files = append(sp.Files, &savepoint.File{Subtask: i, Snapshot: &savepoint.Snapshot{Versions: vm(m)}})
		}
		return sp
	}
	const v1, v2 = "1|T|1|s", "1|T|2|s"
	for _, c := range []struct {
		a, b      []string
		identical bool
		wantA     []string
	}{
		{[]string{v2, v2}, []string{v2, v2}, true, nil},
		{[]string{v2, v1}, []string{v2, v1}, true, nil},
		{[]string{v2, v2}, []string{v2, v1}, false, []string{"subtask 0: " + v2, "subtask 1: " + v2}},
		{[]string{v2, ""}, []string{v2, v2}, false, []string{"subtask 0: " + v2, "subtask 1: "}},
		{[]string{v2, v1}, []string{v1, v2}, false, []string{"subtask 0: " + v2, "subtask 1: " + v1}},
		{[]string{v2, v1}, []string{v2, v1, v1}, true, nil}, // other layouts: compared as sets
		{[]string{v2, v1}, []string{v2, v2, v2}, false, []string{v1, v2}},
	} {
		r := compare(t, tree(c.a...), tree(c.b...), Options{})
		var got []string
		for _, m := range r.Metadata {
			if m.Key == savepoint.MetaStateVersions && m.CountsAsDifference {
				got = m.A
			}
		}
		if r.Identical != c.identical || !slices.Equal(got, c.wantA) {
			t.Errorf("%q vs %q: identical %v, state_versions change A %q; want %v, %q", c.a, c.b, r.Identical, got, c.identical, c.wantA)
		}
		// The text says what the change is: the files' own maps, not the
		// job-wide entries (no "version:" line here).
		var b strings.Builder
		if err := r.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		const note = `(each file's own version map, "" for none: a file without one reads every stamp as version 1; the job-wide entries are the same)`
		if has := strings.Contains(b.String(), note); has != (got != nil && len(r.Versions) == 0) {
			t.Errorf("%q vs %q: the text has the note %v:\n%s", c.a, c.b, has, b.String())
		}
	}
}

// Operator state is compared as restores see it: a timer blob by the
// timers a restore keeps, whichever subtasks' blobs hold them (a rescale
// that keeps every timer is no change; dropping some subtasks' timers is),
// and, between trees of one layout, each subtask's own copy (a copy changed
// in one subtask is a change even where the union's choice is not).
func TestDiffOperatorStateAsRestored(t *testing.T) {
	timers := []byte("\xff__clink_timers")
	changedOp := func(r *Result) (n int64, notes []string) {
		for _, op := range r.Operators {
			for _, s := range op.Slots {
				if s.HasSlot {
					continue
				}
				n += s.Changed
				for _, smp := range s.Samples.Changed {
					notes = append(notes, smp.Note)
				}
			}
		}
		return n, notes
	}
	ex := open(t, exampleTree)

	rescaled := apply(t, "version: 1\nrules:\n  - rescale: {parallelism: 3}\n")
	if r := compare(t, ex, open(t, rescaled), Options{}); !r.Identical {
		t.Errorf("a rescale that keeps every timer: %+v", r.Summary)
	}

	// Two chain groups: the other group's copy of a blob is frozen (it
	// never fires), whatever its subtasks become.
	twoGroups := filepath.Join("..", "testdata", "independent", "two-groups")
	for _, gp := range []string{"{subtasks: \"0-2\", parallelism: 5}, {subtasks: \"3-4\", parallelism: 1}", "{subtasks: \"0-2\", parallelism: 3}, {subtasks: \"3-4\", parallelism: 4}"} {
		out := filepath.Join(t.TempDir(), "out")
		if _, err := transform.Run(context.Background(), open(t, twoGroups), parse(t, "version: 1\nrules:\n  - rescale: {groups: ["+gp+"]}\n"), transform.Options{Out: out}); err != nil {
			t.Fatal(err)
		}
		if r := compare(t, open(t, twoGroups), open(t, out), Options{Limit: 3}); !r.Identical {
			t.Errorf("two groups rescaled (%s): %+v %+v", gp, r.Summary, r.Operators)
		}
	}

	// Dropping another group's frozen replicas of an operator's rows
	// changes nothing a restore of the group running it sees: op 42 runs
	// in 3-4 (its keyed rows), agg in 0-2.
	for _, drop := range []string{`op == 42 && kind == "operator" && subtask <= 2`, `op == uid("agg") && kind == "operator" && subtask >= 3`} {
		out := filepath.Join(t.TempDir(), "out")
		if _, err := transform.Run(context.Background(), open(t, twoGroups), parse(t, "version: 1\nrules:\n  - drop: '"+drop+"'\n"), transform.Options{Out: out}); err != nil {
			t.Fatal(err)
		}
		if r := compare(t, open(t, twoGroups), open(t, out), Options{Limit: 3}); !r.Identical {
			n, notes := changedOp(r)
			t.Errorf("frozen replicas dropped (%s): %d changed, notes %q", drop, n, notes)
		}
	}

	noTimers := apply(t, "version: 1\nrules:\n  - drop: 'subtask < 3 && kind == \"operator\" && op == uid(\"agg\")'\n")
	r := compare(t, ex, open(t, noTimers), Options{Limit: 5})
	if n, notes := changedOp(r); r.Identical || n != 1 || len(notes) != 1 || !strings.HasPrefix(notes[0], "the timers a restore keeps differ (") {
		t.Errorf("timers of subtasks 0-2 dropped: identical %v, %d changed, notes %q", r.Identical, n, notes)
	}

	// One subtask's copy of a replicated operator row changed, the copy
	// the union chooses (the highest subtask's) not.
	dir := t.TempDir()
	off := []byte("\xff__offset__")
	tree := func(name string, sub0 int64) *savepoint.Savepoint {
		files := map[int][]savepoint.Row{}
		for s, v := range []int64{sub0, 5, 5} {
			files[s] = []savepoint.Row{{Op: 9, Key: off, Value: binary.LittleEndian.AppendUint64(nil, uint64(v))}, {Op: 9, Key: timers, Value: savepoint.EncodeTimers(nil, nil)}}
		}
		tw, err := savepoint.CreateTree(filepath.Join(dir, name), savepoint.TreeOptions{Generation: 1, Checkpoint: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer tw.Abort()
		for s := range 3 {
			if _, err := tw.WriteSubtask(s, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), files[s], ""); err != nil {
				t.Fatal(err)
			}
		}
		if err := tw.Commit("j", nil); err != nil {
			t.Fatal(err)
		}
		return open(t, filepath.Join(dir, name))
	}
	a, b := tree("a", 3), tree("b", 4)
	r = compare(t, a, b, Options{Limit: 5})
	if n, notes := changedOp(r); r.Identical || n != 1 || !slices.Equal(notes, []string{"subtask 0 restores another value on each side (a subtask restores its own copy, one without a copy the union's, the copy shown: format 5.3): subtask 0: 0x0300000000000000 (int64 3), its own -> 0x0400000000000000 (int64 4), its own"}) {
		t.Errorf("subtask 0's copy changed: identical %v, %d changed, notes %q", r.Identical, n, notes)
	}
	if r := compare(t, a, tree("c", 3), Options{}); !r.Identical {
		t.Errorf("the same copies: %+v", r.Summary)
	}
}

// TestMetaChangeText: a change between sides of several values shows the
// values only one side carries, not the first of each (which may be the
// same on both).
func TestMetaChangeText(t *testing.T) {
	for _, c := range []struct {
		a, b []string
		want string
	}{
		{nil, []string{"x"}, `absent -> "x"`},
		{[]string{"x"}, []string{"y"}, `"x" -> "y"`},
		{[]string{"x", "y"}, []string{"z"}, `"x" and 1 other value -> "z"`},
		{[]string{"s0", "s1", "s2"}, []string{"s0", "s1", "s2'"}, `only in A: "s2"; only in B: "s2'"; in both: 2 values`},
		{[]string{"s0", "s1"}, []string{"s0"}, `only in A: "s1"; only in B: none; in both: 1 value`},
		{[]string{"", "m"}, []string{"m"}, `only in A: ""; only in B: none; in both: 1 value`},
		{[]string{"s0"}, []string{"s0", "s1", "s2"}, `only in A: none; only in B: "s1", "s2"; in both: 1 value`},
	} {
		if got := metaChangeText(c.a, c.b); got != c.want {
			t.Errorf("metaChangeText(%q, %q) = %s, want %s", c.a, c.b, got, c.want)
		}
	}
}

// TestDiffSharedRowsPerSubtask: between trees of one layout, the empty key
// (each subtask restores its own copy, as of operator state) and a timer
// blob whose timers cannot be compared (a copy does not decode, or no
// keyed row says which group runs the operator) are compared subtask by
// subtask: a change in a copy the union does not choose is a difference.
func TestDiffSharedRowsPerSubtask(t *testing.T) {
	dir := t.TempDir()
	timers := savepoint.EncodeTimers([]savepoint.Timer{{Time: 1, Key: []byte("k")}}, nil)
	tree := func(name string, row func(s int) savepoint.Row) *savepoint.Savepoint {
		tw, err := savepoint.CreateTree(filepath.Join(dir, name), savepoint.TreeOptions{Generation: 1, Checkpoint: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer tw.Abort()
		for s := range 3 {
			rows := []savepoint.Row{row(s)}
			if rows[0].Op == 0 {
				rows = nil // the subtask holds no copy
			}
			if _, err := tw.WriteSubtask(s, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, ""); err != nil {
				t.Fatal(err)
			}
		}
		if err := tw.Commit("j", nil); err != nil {
			t.Fatal(err)
		}
		return open(t, filepath.Join(dir, name))
	}
	emptyKey := func(sub0 byte) func(s int) savepoint.Row {
		return func(s int) savepoint.Row {
			v := []byte{5, 0, 0, 0, 0, 0, 0, 0}
			if s == 0 {
				v[0] = sub0
			}
			return savepoint.Row{Op: 9, Key: nil, Value: v}
		}
	}
	blob := func(sub0 []byte) func(s int) savepoint.Row {
		return func(s int) savepoint.Row {
			v := timers
			if s == 0 {
				v = sub0
			}
			return savepoint.Row{Op: 9, Key: []byte("\xff__clink_timers"), Value: v}
		}
	}
	// without returns row with subtask sub holding no copy.
	without := func(row func(s int) savepoint.Row, sub int) func(s int) savepoint.Row {
		return func(s int) savepoint.Row {
			if s == sub {
				return savepoint.Row{}
			}
			return row(s)
		}
	}
	opRow := func(s int) savepoint.Row {
		return savepoint.Row{Op: 9, Key: []byte("\xffcount"), Value: []byte{5, 0, 0, 0, 0, 0, 0, 0}}
	}
	for _, c := range []struct {
		name string
		a, b func(s int) savepoint.Row
		same bool
		note string // in the change's note, when not the same
	}{
		{"empty key, same", emptyKey(3), emptyKey(3), true, ""},
		{"empty key, subtask 0's copy changed", emptyKey(3), emptyKey(4), false, "subtask 0: 0x0300000000000000 (int64 3), its own -> 0x0400000000000000 (int64 4), its own"},
		// No union fills the empty key in (format 1.6, 5.3): a subtask
		// whose copy is gone restores none, on either side.
		{"empty key, subtask 0's copy gone", emptyKey(5), without(emptyKey(5), 0), false, "subtask 0: 0x0500000000000000 (int64 5), its own -> none"},
		{"empty key, subtask 1's copy new", without(emptyKey(5), 1), emptyKey(5), false, "subtask 1: none -> 0x0500000000000000 (int64 5), its own"},
		// An operator-state row's is: the subtask restores the same value.
		{"operator row, subtask 0's copy gone", opRow, without(opRow, 0), true, ""},
		{"timer blob of an operator without keyed rows, same", blob(timers), blob(timers), true, ""},
		{"timer blob of an operator without keyed rows, subtask 0's changed", blob(timers), blob(savepoint.EncodeTimers(nil, nil)), false, ""},
		{"timer blob that does not decode in subtask 0", blob(timers), blob(timers[:len(timers)-3]), false, ""},
	} {
		r := compare(t, tree(c.name+"-a", c.a), tree(c.name+"-b", c.b), Options{Limit: 5})
		if r.Identical != c.same {
			t.Errorf("%s: identical %v, want %v: %+v", c.name, r.Identical, c.same, r.Summary)
		}
		if c.note == "" {
			continue
		}
		var notes []string
		for _, op := range r.Operators {
			for _, sl := range op.Slots {
				for _, x := range sl.Samples.Changed {
					notes = append(notes, x.Note)
				}
			}
		}
		if len(notes) != 1 || !strings.Contains(notes[0], c.note) {
			t.Errorf("%s: notes %q, want one holding %q", c.name, notes, c.note)
		}
	}
}

// TestVersionChangeHex: a version-map entry whose state type and slot are
// not valid UTF-8 comes with their bytes in hex in the JSON, which writes
// U+FFFD for each bad byte of the strings; valid ones have no companion.
func TestVersionChangeHex(t *testing.T) {
	file := func(packed string) *savepoint.Savepoint {
		v, err := savepoint.ParseVersionMap(packed)
		if err != nil {
			t.Fatal(err)
		}
		return &savepoint.Savepoint{Kind: savepoint.InputFile, Files: []*savepoint.File{{Subtask: -1, Snapshot: &savepoint.Snapshot{Versions: v}}}}
	}
	r := compare(t, file("1|Caf\xe9|1|sl\xfft\n2|Plain|1|s"), file("1|Caf\xe9|2|sl\xfft\n2|Plain|2|s"), Options{})
	got := map[uint64]VersionChange{}
	for _, c := range r.Versions {
		got[c.Op] = c
	}
	if c := got[1]; c.StateTypeHex != "436166e9" || c.A == nil || c.B == nil || c.A.SlotHex != "736cff74" || c.B.SlotHex != "736cff74" {
		t.Errorf("op 1's change %+v (a %+v, b %+v): want state_type_hex 436166e9 and slot_hex 736cff74 on both sides", c, c.A, c.B)
	}
	if c := got[2]; c.StateTypeHex != "" || c.A == nil || c.A.SlotHex != "" {
		t.Errorf("op 2's change %+v (a %+v): a valid string has no hex", c, c.A)
	}
	js, err := json.Marshal(got[1])
	if err != nil || !strings.Contains(string(js), `"state_type_hex":"436166e9"`) {
		t.Errorf("JSON %s (%v) lacks state_type_hex", js, err)
	}
}

// TestMetadataChangeHex: metadata keys and values that are not valid UTF-8
// keep their bytes in the JSON (values that differ only in such bytes must
// not both read as U+FFFD), beside the text a valid one keeps alone.
func TestMetadataChangeHex(t *testing.T) {
	file := func(md ...savepoint.MetaEntry) *savepoint.Savepoint {
		return &savepoint.Savepoint{Kind: savepoint.InputFile, Files: []*savepoint.File{{Subtask: -1, Snapshot: &savepoint.Snapshot{Metadata: md}}}}
	}
	r := compare(t,
		file(savepoint.MetaEntry{Key: "k\xff", Value: "v\xc3"}, savepoint.MetaEntry{Key: "plain", Value: "1"}),
		file(savepoint.MetaEntry{Key: "k\xff", Value: "v\xc4"}, savepoint.MetaEntry{Key: "plain", Value: "2"}),
		Options{})
	got := map[string]MetadataChange{}
	for _, c := range r.Metadata {
		got[c.Key] = c
	}
	if c := got["k\xff"]; c.KeyHex != "6bff" || !slices.Equal(c.AHex, []string{"76c3"}) || !slices.Equal(c.BHex, []string{"76c4"}) {
		t.Errorf("change of k\\xff: %+v, want key_hex 6bff, a_hex [76c3], b_hex [76c4]", c)
	}
	if c := got["plain"]; c.KeyHex != "" || c.AHex != nil || c.BHex != nil {
		t.Errorf("change of plain: %+v: valid strings have no hex", c)
	}
	js, err := json.Marshal(r.Metadata)
	if err != nil || !strings.Contains(string(js), `"key_hex":"6bff"`) || !strings.Contains(string(js), `"a_hex":["76c3"]`) || strings.Count(string(js), "_hex") != 3 {
		t.Errorf("JSON %s (%v): want key_hex, a_hex and b_hex for k\\xff only", js, err)
	}
}

// A side's path holding a newline is shown quoted in the text header.
func TestSideLabelQuotesPath(t *testing.T) {
	got := sideLabel(Side{Path: "a\nfake line", Kind: "file", Rows: 1})
	if strings.Contains(got, "\n") || !strings.HasPrefix(got, `"a\nfake line" (file`) {
		t.Errorf("side label %q", got)
	}
}

// A memory-mapped side cut short while Compare reads it is
// ErrInputChanged, as the doc says, not a panic raised in the caller: a
// caller need not run Compare under Guard.
func TestCompareInputCutUnguarded(t *testing.T) {
	dir := t.TempDir()
	open := func(name string, fill byte) (*savepoint.Savepoint, string) {
		path := filepath.Join(dir, name)
		var rows []savepoint.Row
		for i := range 200000 {
			var k [8]byte
			binary.LittleEndian.PutUint64(k[:], uint64(i))
			rows = append(rows, savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), k[:]), Value: bytes.Repeat([]byte{fill}, 16)})
		}
		if _, err := savepoint.WriteSnapshotFile(path, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.SnapshotOptions{Sidecar: true}); err != nil {
			t.Fatal(err)
		}
		sp, err := savepoint.Open(path, savepoint.OpenOptions{Columnar: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sp.Close() })
		return sp, path
	}
	a, pathA := open("a.snap", 1)
	b, _ := open("b.snap", 2)
	if err := os.Truncate(pathA, 4096); err != nil {
		t.Fatal(err)
	}
	res, err := Compare(context.Background(), a, b, Options{})
	if !errors.Is(err, savepoint.ErrInputChanged) || res != nil {
		t.Errorf("Compare of a cut input: %v, %v; want ErrInputChanged and no result", res, err)
	}
}

// restoresNote names the one subtask, or lists them all, with what the
// first few restore on each side.
func TestRestoresNote(t *testing.T) {
	v := func(b byte) []byte { return []byte{b, 0, 0, 0, 0, 0, 0, 0} }
	for _, tc := range []struct {
		diffs []restoreDiff
		want  string
	}{
		{[]restoreDiff{{sub: 3, a: v(1), b: v(2), ownA: true, ownB: true}}, "subtask 3 restores another value on each side (a subtask restores its own copy, one without a copy the union's, the copy shown: format 5.3): subtask 3: 0x0100000000000000 (int64 1), its own -> 0x0200000000000000 (int64 2), its own"},
		{[]restoreDiff{{sub: 0, a: v(1), b: v(3), ownA: true, ownB: false}, {sub: 2, a: []byte("x"), b: v(3), ownA: false, ownB: true}}, `subtasks 0,2 restore other values on each side (a subtask restores its own copy, one without a copy the union's, the copy shown: format 5.3): subtask 0: 0x0100000000000000 (int64 1), its own -> 0x0300000000000000 (int64 3), the union's; subtask 2: "x", the union's -> 0x0300000000000000 (int64 3), its own`},
		{[]restoreDiff{{sub: 1, a: v(1), b: v(2), ownA: true, ownB: true}, {sub: 10, a: v(1), b: v(2), ownA: true, ownB: true}, {sub: 20, a: v(1), b: v(2), ownA: true, ownB: true}, {sub: 127, a: v(1), b: v(2), ownA: true, ownB: true}}, "subtasks 1,10,20,127 restore other values on each side (a subtask restores its own copy, one without a copy the union's, the copy shown: format 5.3): subtask 1: "},
		// The empty key: a subtask without a copy restores none.
		{[]restoreDiff{{sub: 0, a: v(1), ownA: true, noneB: true}, {sub: 2, b: v(2), ownB: true, noneA: true}}, "subtasks 0,2 restore other values on each side (a subtask restores its own copy of the empty key, and none without one: no union fills the empty key in, format 1.6 and 5.3): subtask 0: 0x0100000000000000 (int64 1), its own -> none; subtask 2: none -> 0x0200000000000000 (int64 2), its own"},
	} {
		got := restoresNote(tc.diffs)
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("restoresNote(%v) = %q, want %q", tc.diffs, got, tc.want)
		}
		if n := len(tc.diffs); n > maxRestoreDiffs && (strings.Contains(got, "subtask 127:") || !strings.HasSuffix(got, "; …")) {
			t.Errorf("restoresNote of %d subtasks = %q, want the first %d and an ellipsis", n, got, maxRestoreDiffs)
		}
	}
}

// A missing side is an error, not a panic.
func TestCompareNil(t *testing.T) {
	sp := open(t, exampleTree)
	for _, sides := range [][2]*savepoint.Savepoint{{nil, sp}, {sp, nil}, {nil, nil}} {
		if res, err := Compare(context.Background(), sides[0], sides[1], Options{}); err == nil || res != nil || !strings.Contains(err.Error(), "savepoint: none (a nil *Savepoint)") {
			t.Errorf("Compare(%v, %v): %v, %v, want a nil side named", sides[0] != nil, sides[1] != nil, res, err)
		}
	}
}

// A sample of an operator key whose first byte is not 0xff shows that byte
// (0x80+"weird"), as cat and export do: without it, the rows of 0x80"weird"
// and 0xff"weird" read alike.
func TestSampleOperatorByte(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, rows []savepoint.Row) string {
		p := filepath.Join(dir, name)
		if _, err := savepoint.WriteSnapshotFile(p, nil, rows, savepoint.SnapshotOptions{}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ff := savepoint.Row{Op: 7, Key: []byte("\xffweird"), Value: []byte{1}}
	a := write("a.snap", []savepoint.Row{ff})
	b := write("b.snap", []savepoint.Row{{Op: 7, Key: []byte("\x80weird"), Value: []byte{2}}, ff})
	r := compare(t, open(t, a), open(t, b), Options{Limit: DefaultLimit})
	s := slotOf(r, 7, savepoint.RawSlot)
	if s == nil || len(s.Samples.Added) != 1 || s.Samples.Added[0].Key != `0x80+"weird"` {
		t.Fatalf("slot %+v, want one sample added, of key 0x80+\"weird\"", s)
	}
}

// The decoded key and values in a sample's brackets stay on the line and
// read as what they are, as cat shows them: a decoded string is quoted (a
// newline or a tab in it escaped), so that neither 'say "hi" -> x' nor the
// string "(not decoded)" reads as another field or as the marker; a list
// holding a control character is JSON with it escaped, not a quoted
// string; a changed row one side of which does not decode says which side
// the decoded value is.
func TestDecodedNote(t *testing.T) {
	for _, c := range []struct {
		x    Sample
		a, b *Value
		want string
	}{
		{Sample{DecodedKey: "new\nline"}, &Value{Decoded: "a\tb"}, &Value{}, `  [key="new\nline" value="a\tb" -> (not decoded)]`},
		{Sample{DecodedKey: "k"}, &Value{}, &Value{Decoded: int64(2)}, `  [key="k" value=(not decoded) -> 2]`},
		{Sample{}, nil, &Value{Decoded: "plain"}, `  [value="plain"]`},
		{Sample{}, &Value{Decoded: int64(1)}, &Value{Decoded: int64(2)}, `  [value=1 -> 2]`},
		{Sample{}, &Value{Decoded: `say "hi" -> x`}, &Value{Decoded: "(not decoded)"}, `  [value="say \"hi\" -> x" -> "(not decoded)"]`},
		{Sample{}, nil, &Value{Decoded: []any{"a", "\x7f"}}, `  [value=["a","\u007f"]]`},
		{Sample{}, nil, &Value{Decoded: "[\"a\",\"\x7f\"]"}, `  [value="[\"a\",\"\x7f\"]"]`},
		{Sample{}, nil, &Value{Decoded: float64(1 << 53)}, `  [value=9007199254740992]`},
	} {
		if got := decodedNote(c.x, c.a, c.b); got != c.want {
			t.Errorf("got %s, want %s", got, c.want)
		}
	}
}

// TestCompareRefusesDamagedPayload: a payload of either side whose
// checksum disagrees with its sidecar is refused however the side was
// opened (here without RequireValid): its rows are no state clink
// restores.
func TestCompareRefusesDamagedPayload(t *testing.T) {
	tree := filepath.Join(t.TempDir(), "tree")
	if err := os.CopyFS(tree, os.DirFS(exampleTree)); err != nil {
		t.Fatal(err)
	}
	meta := filepath.Join(tree, "v1", "0", "checkpoint-7.snap.meta")
	b, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	// A digit more in the checksum the sidecar records: the payload's
	// verdict is corrupt, its rows decode as before.
	fixed := strings.Replace(string(b), "payload_crc32c=", "payload_crc32c=1", 1)
	if fixed == string(b) {
		t.Fatalf("%s: no payload_crc32c", meta)
	}
	if err := os.WriteFile(meta, []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	good := open(t, exampleTree)
	bad, err := savepoint.Open(tree, savepoint.OpenOptions{Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	for _, c := range []struct {
		a, b *savepoint.Savepoint
		side string
	}{{good, bad, "B"}, {bad, good, "A"}} {
		_, err := Compare(context.Background(), c.a, c.b, Options{})
		var verdict *savepoint.VerdictError
		if !errors.As(err, &verdict) || verdict.Verdict != savepoint.VerdictCorrupt || !strings.HasPrefix(err.Error(), "diff: side "+c.side+": ") {
			t.Errorf("damaged side %s: %v, want its integrity refused", c.side, err)
		}
	}
}
