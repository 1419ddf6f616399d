package savepoint

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sptool/sptool/internal/golden"
)

// TestInspectGolden compares WriteText with testdata/golden/*.txt
// (regenerate with `go test ./savepoint -run TestInspectGolden -update`).
func TestInspectGolden(t *testing.T) {
	for _, c := range []struct{ name, path string }{
		{"inspect-clink-fixture", filepath.Join("..", "testdata", "clink", "snapshot-v1.snap")},
		{"inspect-mixed-p4", vtFixturePath("mixed-p4")},
	} {
		t.Run(c.name, func(t *testing.T) {
			sum := Summarize(vtOpen(t, c.path, OpenOptions{}))
			var got bytes.Buffer
			if err := sum.WriteText(&got); err != nil {
				t.Fatal(err)
			}
			compareGolden(t, c.name+".txt", got.Bytes())
			// Deterministic: a second rendering is identical.
			var again bytes.Buffer
			if err := Summarize(vtOpen(t, c.path, OpenOptions{})).WriteText(&again); err != nil || !bytes.Equal(again.Bytes(), got.Bytes()) {
				t.Error("two renderings differ")
			}
		})
	}
}

// compareGolden compares got with testdata/golden/name, which -update
// writes first.
func compareGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", "golden", name), got, *update, "go test ./savepoint -update")
}

// TestInspectJSONNonUTF8 compares the JSON of a file whose version map and
// schema metadata hold strings that are not valid UTF-8 with
// testdata/golden/inspect-non-utf8.json (regenerate with `go test
// ./savepoint -run TestInspectJSONNonUTF8 -update`): encoding/json writes
// such a string with U+FFFD in place of its bad bytes, and its "_hex"
// companion gives them back. Valid strings have no companion.
func TestInspectJSONNonUTF8(t *testing.T) {
	const packed = "7|Caf\xe9|2|sl\xfft\n7|Plain|1"
	md := Metadata{{MetaFormatVersion, "1"}, {MetaStateVersions, packed}, {"x.owner\xfe", "val\xff"}, {"x.ok", "fine"}}
	path := filepath.Join(t.TempDir(), "non-utf8.snap")
	if _, err := WriteSnapshotFile(path, md, []Row{vtKeyed(7, "agg", []byte("alpha"), "v")}, SnapshotOptions{Sidecar: true, CheckpointID: 7}); err != nil {
		t.Fatal(err)
	}
	sum := Summarize(vtOpen(t, path, OpenOptions{}))
	sum.Input.Path = "non-utf8.snap" // (a temporary directory's)
	var got bytes.Buffer
	enc := json.NewEncoder(&got)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // as the CLI writes it
	if err := enc.Encode(sum); err != nil {
		t.Fatal(err)
	}
	compareGolden(t, "inspect-non-utf8.json", got.Bytes())

	// Each companion decodes to the bytes stored.
	var back Summary
	if err := json.Unmarshal(got.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	unhex := func(h string) string {
		t.Helper()
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	vm := back.VersionMap
	if len(vm.Entries) != 2 || unhex(vm.Entries[0].StateTypeHex) != "Caf\xe9" || unhex(vm.Entries[0].SlotHex) != "sl\xfft" ||
		vm.Entries[1].StateTypeHex != "" || vm.Entries[1].SlotHex != "" {
		t.Errorf("version map entries %+v", vm.Entries)
	}
	if len(vm.Variants) != 1 || unhex(vm.Variants[0].PackedHex) != packed {
		t.Errorf("version map variants %+v", vm.Variants)
	}
	um := back.UnknownMetadata
	if len(um) != 2 || um[0].Key != "x.ok" || um[0].KeyHex != "" || um[0].ValueHex != "" || unhex(um[1].KeyHex) != "x.owner\xfe" || unhex(um[1].ValueHex) != "val\xff" {
		t.Errorf("unknown metadata %+v", um)
	}
	var keys []string
	for _, h := range back.Files[0].MetadataKeysHex {
		keys = append(keys, unhex(h))
	}
	if want := []string{MetaFormatVersion, MetaStateVersions, "x.owner\xfe", "x.ok"}; !slices.Equal(keys, want) {
		t.Errorf("metadata keys from hex %q, want %q", keys, want)
	}

	// The text shows such a key in hex, as it shows such a slot, not as
	// raw bytes.
	var text bytes.Buffer
	if err := sum.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(text.Bytes()) {
		t.Errorf("text output is not valid UTF-8:\n%s", text.Bytes())
	}
	for _, want := range []string{"  0x782e6f776e6572fe = 0x76616cff (", "  x.ok = \"fine\" (", "clink.state_versions, 0x782e6f776e6572fe, x.ok\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, text.Bytes())
		}
	}
}

func TestSummarizeClinkFixture(t *testing.T) {
	sum := Summarize(vtOpen(t, filepath.Join("..", "testdata", "clink", "snapshot-v1.snap"), OpenOptions{}))
	if sum.Input.Kind != "file" || sum.Input.Backend != "file" || len(sum.Input.Groups) != 0 {
		t.Errorf("input %+v", sum.Input)
	}
	if len(sum.Files) != 1 {
		t.Fatalf("files %+v", sum.Files)
	}
	f := sum.Files[0]
	if f.Rel != "snapshot-v1.snap" || f.Subtask != -1 || f.Size != 704 || f.CRC32C != 3978191169 || f.Variant != "canonical" ||
		!slices.Equal(f.Batches, []int{3}) || f.Rows != 3 || f.Keyed != 3 || f.KeyBytes != 48 || f.ValueBytes != 24 ||
		!slices.Equal(f.MetadataKeys, []string{MetaFormatVersion}) || f.Sidecar == nil || f.Sidecar.Verdict != "incomplete" || f.Changelog != nil {
		t.Errorf("file %+v", f)
	}
	if len(sum.Operators) != 1 || sum.Operators[0].Op != 42 || len(sum.Operators[0].Slots) != 1 {
		t.Fatalf("operators %+v", sum.Operators)
	}
	sl := sum.Operators[0].Slots[0]
	if sl.Slot != "counts" || sl.SlotHex != "636f756e7473" || !sl.HasSlot || sl.Display != `"counts"` || sl.Rows != 3 || sl.Keyed != 3 {
		t.Errorf("slot %+v", sl)
	}
	kg := sum.KeyGroups
	var want [NumKeyGroups]int
	want[36], want[7], want[98] = 1, 1, 1 // section 8: int64 keys 1, 2, 7
	if kg.Counts != want || kg.Rows != 3 || kg.NonEmpty != 3 || kg.Max != 1 || kg.MaxKeyGroup != 7 ||
		math.Abs(kg.Mean-3.0/128) > 1e-12 || math.Abs(kg.Skew-128.0/3) > 1e-9 {
		t.Errorf("key groups %+v", kg)
	}
	if len(sum.VersionMap.Entries) != 0 || sum.VersionMap.Disagree || len(sum.VersionMap.Variants) != 1 {
		t.Errorf("version map %+v", sum.VersionMap)
	}
}

func TestSummarizeIndependentFixtures(t *testing.T) {
	for _, name := range vtFixtures {
		t.Run(name, func(t *testing.T) {
			tr := vtLoadTruth(t, name)
			sp := vtOpen(t, vtFixturePath(name), OpenOptions{})
			sum := Summarize(sp)

			in := sum.Input
			if in.Kind != "tree" || in.Generation != tr.Generation || strconv.FormatUint(in.Checkpoint, 10) != tr.Checkpoint || in.Job != tr.Job {
				t.Errorf("input %+v", in)
			}
			if len(in.Groups) != len(tr.Layout.Groups) {
				t.Fatalf("groups %+v, truth %+v", in.Groups, tr.Layout.Groups)
			}
			for i, g := range tr.Layout.Groups {
				if in.Groups[i].FirstSubtask != g.FirstSubtask || in.Groups[i].Parallelism != g.Parallelism {
					t.Errorf("group %d %+v, truth %+v", i, in.Groups[i], g)
				}
			}

			// Totals against the truth counts.
			tot := sum.Totals
			var matFiles int
			var matBytes int64
			defer func() {
				if tot.Materializations != matFiles || tot.MaterializationBytes != matBytes {
					t.Errorf("totals: %d materialisations of %d bytes, the files' %d of %d", tot.Materializations, tot.MaterializationBytes, matFiles, matBytes)
				}
			}()
			if tot.Rows != tr.Counts.Entries || tot.Keyed != tr.Counts.Keyed || tot.Operator != tr.Counts.Operator || tot.Raw != tr.Counts.Raw {
				t.Errorf("totals %+v, truth counts %+v", tot, tr.Counts)
			}

			// Per file and kind, per operator: counted from the truth entries.
			type sk struct {
				subtask int
				kind    string
			}
			perFile := map[sk]int{}
			perOp := map[uint64]int{}
			perOpSub := map[uint64]map[int]int{}
			for _, e := range tr.Entries {
				perFile[sk{e.Subtask, e.Kind}]++
				op := e.op(t)
				perOp[op]++
				if perOpSub[op] == nil {
					perOpSub[op] = map[int]int{}
				}
				perOpSub[op][e.Subtask]++
			}
			for i, f := range sum.Files {
				tf := tr.Files[i]
				if f.Subtask != tf.Subtask || filepath.ToSlash(f.Rel) != tf.Path {
					t.Fatalf("file %d is %s (subtask %d), truth %s (subtask %d)", i, f.Rel, f.Subtask, tf.Path, tf.Subtask)
				}
				if f.Keyed != perFile[sk{f.Subtask, "keyed"}] || f.Operator != perFile[sk{f.Subtask, "operator"}] || f.Raw != perFile[sk{f.Subtask, "raw"}] ||
					f.Rows != f.Keyed+f.Operator+f.Raw {
					t.Errorf("%s: rows %d keyed %d operator %d raw %d; truth keyed %d operator %d raw %d", f.Rel, f.Rows, f.Keyed, f.Operator, f.Raw,
						perFile[sk{f.Subtask, "keyed"}], perFile[sk{f.Subtask, "operator"}], perFile[sk{f.Subtask, "raw"}])
				}
				if f.Variant == "canonical" && !slices.Equal(f.Batches, tf.Batches) {
					t.Errorf("%s batches %v, truth %v", f.Rel, f.Batches, tf.Batches)
				}
				if f.Variant == "canonical" && !slices.Equal(f.MetadataKeys, tf.MetadataKeys) {
					t.Errorf("%s metadata keys %v, truth %v", f.Rel, f.MetadataKeys, tf.MetadataKeys)
				}
				if sp.Backend == BackendFile && (f.Sidecar == nil || f.Sidecar.Verdict != "valid") {
					t.Errorf("%s sidecar %+v", f.Rel, f.Sidecar)
				}
				if sp.Backend == BackendChangelogFile {
					if f.Sidecar != nil || f.Changelog == nil {
						t.Errorf("%s sidecar %+v changelog %+v", f.Rel, f.Sidecar, f.Changelog)
					} else if want := tf.Materialisation; (want == nil) != (len(f.Changelog.Materializations) == 0) ||
						want != nil && filepath.ToSlash(f.Changelog.Materializations[0]) != *want {
						t.Errorf("%s materialisations %v, truth %v", f.Rel, f.Changelog.Materializations, want)
					} else if want != nil {
						// Their sizes, which a restore reads too, are
						// counted beside the changelogs'.
						st, err := os.Stat(filepath.Join(vtFixturePath(name), filepath.FromSlash(*want)))
						if err != nil || len(f.Changelog.MaterializationBytes) != 1 || f.Changelog.MaterializationBytes[0] != st.Size() {
							t.Errorf("%s materialisation bytes %v, stored %v (%v)", f.Rel, f.Changelog.MaterializationBytes, st, err)
						} else {
							matFiles, matBytes = matFiles+1, matBytes+st.Size()
						}
					}
				}
			}
			if len(sum.Operators) != len(perOp) {
				t.Errorf("%d operators, truth %d", len(sum.Operators), len(perOp))
			}
			for _, o := range sum.Operators {
				if o.Rows != perOp[o.Op] || o.Rows != o.Keyed+o.Operator+o.Raw {
					t.Errorf("op %d: %d rows, truth %d", o.Op, o.Rows, perOp[o.Op])
				}
				slotRows := 0
				for _, s := range o.Slots {
					slotRows += s.Rows
				}
				if slotRows != o.Rows {
					t.Errorf("op %d: slots add up to %d rows, not %d", o.Op, slotRows, o.Rows)
				}
				for _, st := range o.Subtasks {
					if st.Rows != perOpSub[o.Op][st.Subtask] {
						t.Errorf("op %d subtask %d: %d rows, truth %d", o.Op, st.Subtask, st.Rows, perOpSub[o.Op][st.Subtask])
					}
				}
			}

			// The histogram: each keyed entry once, stale copies left out.
			var want [NumKeyGroups]int
			for _, e := range tr.Entries {
				if e.Kind == "keyed" && (e.Authoritative == nil || *e.Authoritative) {
					want[*e.KeyGroup]++
				}
			}
			kg := sum.KeyGroups
			if kg.Counts != want {
				t.Errorf("histogram\n got %v\nwant %v", kg.Counts, want)
			}
			if kg.StaleCopies != tr.Counts.StaleKeyedCopies || kg.Lost != 0 || kg.Rows != tr.Counts.Keyed-tr.Counts.StaleKeyedCopies {
				t.Errorf("key groups: rows %d stale %d lost %d; truth keyed %d stale %d", kg.Rows, kg.StaleCopies, kg.Lost, tr.Counts.Keyed, tr.Counts.StaleKeyedCopies)
			}
			maxC, maxKG := 0, 0
			for i, c := range want {
				if c > maxC {
					maxC, maxKG = c, i
				}
			}
			if kg.Max != maxC || kg.MaxKeyGroup != maxKG || math.Abs(kg.Skew-float64(maxC)*128/float64(kg.Rows)) > 1e-9 {
				t.Errorf("max %d at %d, skew %v; want %d at %d", kg.Max, kg.MaxKeyGroup, kg.Skew, maxC, maxKG)
			}

			// The version map is the truth's job-wide map.
			var vm VersionMap
			for _, e := range sum.VersionMap.Entries {
				if err := vm.Set(VersionEntry{e.Op, e.StateType, e.Version, e.Slot}); err != nil {
					t.Fatal(err)
				}
			}
			if vm.Pack() != tr.VersionMap[0].Packed {
				t.Errorf("version map %q, truth %q", vm.Pack(), tr.VersionMap[0].Packed)
			}
			if sum.VersionMap.Disagree != (len(vtNoMapFiles[name]) > 0) {
				t.Errorf("disagree = %v", sum.VersionMap.Disagree)
			}
			if v := sum.VersionMap.Variants[0]; v.Packed != tr.VersionMap[0].Packed {
				t.Errorf("first variant %+v", v)
			}

			// Unknown metadata: the generator's future key, where the truth lists it.
			var withKey []string
			for _, tf := range tr.Files {
				if slices.Contains(tf.MetadataKeys, "clink.x_unknown_future_key") && sum.Files[slices.IndexFunc(sum.Files, func(f FileSummary) bool { return f.Subtask == tf.Subtask })].Variant == "canonical" {
					withKey = append(withKey, tf.Path)
				}
			}
			if len(withKey) > 0 {
				um := sum.UnknownMetadata
				if len(um) != 1 || um[0].Key != "clink.x_unknown_future_key" || um[0].Value != "ignore-me" {
					t.Fatalf("unknown metadata %+v", um)
				}
				for _, p := range withKey {
					if !slices.Contains(um[0].Files, filepath.FromSlash(p)) {
						t.Errorf("unknown metadata files %v lack %s", um[0].Files, p)
					}
				}
			}

			// The JSON form: snake_case keys, 128 buckets.
			b, err := json.Marshal(sum)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"input", "files", "operators", "key_groups", "version_map", "unknown_metadata", "totals", "notes"} {
				if _, ok := m[k]; !ok {
					t.Errorf("JSON lacks %q", k)
				}
			}
			if c := m["key_groups"].(map[string]any)["counts"].([]any); len(c) != NumKeyGroups {
				t.Errorf("%d buckets in JSON", len(c))
			}
			if f0 := m["files"].([]any)[0].(map[string]any); f0["rel"] == nil || f0["metadata_keys"] == nil || f0["body_compression"] == nil {
				t.Errorf("file JSON %v", f0)
			}
			var back Summary
			if err := json.Unmarshal(b, &back); err != nil || back.Totals != sum.Totals || back.KeyGroups != sum.KeyGroups {
				t.Errorf("JSON round trip: %v", err)
			}
		})
	}
}

func TestSummarizeSlotRendering(t *testing.T) {
	rows := []Row{
		vtKeyed(7, "ok", []byte("a"), "1"),
		vtKeyed(7, "", []byte("b"), "2"),
		vtKeyed(7, "\xfe\x01", []byte("c"), "3"),
		vtOperator(7, "__clink_timers", []byte("t")),
		vtOperator(7, "rules|", []byte("r")),
	}
	path := filepath.Join(t.TempDir(), "x.snap")
	if _, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), rows, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	sum := Summarize(vtOpen(t, path, OpenOptions{}))
	var got []string
	for _, s := range sum.Operators[0].Slots {
		got = append(got, s.Display+"/"+strconv.Itoa(s.Keyed)+"/"+strconv.Itoa(s.Operator))
	}
	want := []string{`""/1/0`, `"ok"/1/0`, `"rules"/0/1`, "0xfe01/1/0", "<raw>/0/1"}
	if !slices.Equal(got, want) {
		t.Errorf("slots %q, want %q", got, want)
	}
	if sum.Totals.Slots != 5 || sum.Totals.Operators != 1 || sum.Totals.Rows != 5 {
		t.Errorf("totals %+v", sum.Totals)
	}
	var b bytes.Buffer
	if err := sum.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{"0xfe01", `"ok"`, "<raw>", "no integrity sidecar"} {
		if !bytes.Contains(b.Bytes(), []byte(frag)) {
			t.Errorf("text lacks %q:\n%s", frag, b.String())
		}
	}
}

// Summarize counts a strictly sorted file read in place a run of one
// operator, key group and slot at a time; the counts must be those of the
// same file read row by row (non-columnar), for a file and for a tree whose
// subtask holds key groups it does not own.
func TestSummarizeRunsAgreeWithRows(t *testing.T) {
	defer func(v int) { keyBlock = v }(keyBlock)
	defer func(v int64) { keyColumnsBytes = v }(keyColumnsBytes)
	for _, block := range []int{4096, 5} {
		for _, budget := range []int64{4 << 20, 40} {
			// Runs read in blocks of this many rows (fewer when their
			// keys pass the budget), reported in parts.
			keyBlock, keyColumnsBytes = block, budget
			testSummarizeRunsAgreeWithRows(t, false)
		}
	}
}

// Rows in no order (clink's hash-map order) are counted in parts on
// goroutines of their own, each part on counters of its own, then added
// up: the same summary as the file read row by row, for the file and the
// tree whose subtask holds key groups it does not own (the parts' key-group
// histograms are then incomplete, and another pass counts it).
func TestSummarizePartsAgreeWithRows(t *testing.T) {
	defer func(v int) { keyBlock = v }(keyBlock)
	defer func(v int) { tallyPartRows = v }(tallyPartRows)
	for _, part := range []int{1000, 2500} { // 9006 rows: up to 9 parts and up to 3, one a CPU at most
		for _, block := range []int{4096, 5} {
			tallyPartRows, keyBlock = part, block
			testSummarizeRunsAgreeWithRows(t, true)
		}
	}
}

func testSummarizeRunsAgreeWithRows(t *testing.T, shuffled bool) {
	var rows []Row
	for op := uint64(1); op <= 3; op++ {
		for i := 0; i < 3000; i++ {
			slot := []string{"a", "bb", "window_sum", "window_cnt"}[i%4]
			rows = append(rows, Row{Op: op, Key: EncodeKeyedKey([]byte(slot), []byte(fmt.Sprintf("u%d", i))), Value: bytes.Repeat([]byte{1}, i%7)})
		}
		rows = append(rows, Row{Op: op, Key: []byte("\xff__offset"), Value: []byte("12345678")}, Row{Op: op, Key: []byte("raw-key"), Value: nil})
	}
	if shuffled {
		r := rand.New(rand.NewPCG(7, 11))
		r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	}
	write := SnapshotOptions{AsIs: shuffled}
	dir := t.TempDir()
	file := filepath.Join(dir, "one.snap")
	if _, err := WriteSnapshotFile(file, nil, rows, write); err != nil {
		t.Fatal(err)
	}
	// A tree of two subtasks whose first file holds every row: the key
	// groups of subtask 1 in it are lost or stale copies.
	tree := filepath.Join(dir, "tree")
	tw, err := CreateTree(tree, TreeOptions{Generation: 1, Checkpoint: 3})
	if err != nil {
		t.Fatal(err)
	}
	var second []Row
	for _, r := range rows {
		if len(r.Key) > 0 && r.Key[0] < NumKeyGroups && SubtaskForKeyGroup(int(r.Key[0]), 2) == 1 && r.Op == 2 {
			second = append(second, r)
		}
	}
	for s, rs := range [][]Row{rows, second} {
		if !shuffled {
			rs = Logical(rs)
		}
		if _, err := tw.WriteSubtaskWith(s, nil, RowSlice(rs), write); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Commit("j", nil); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{file, tree} {
		var got [2]string
		for i, columnar := range []bool{true, false} {
			sp, err := Open(path, OpenOptions{Columnar: columnar, Groups: groupsFor(path, tree)})
			if err != nil {
				t.Fatal(err)
			}
			if sorted, strict := sp.Files[0].Snapshot.Order(); sorted == shuffled || strict == shuffled {
				t.Fatalf("the file is sorted %v, strictly %v; want %v", sorted, strict, !shuffled)
			}
			sum := Summarize(sp)
			// The histogram counted from the summary's runs is the one a
			// pass of its own counts.
			if own := keyGroupHistogram(sp, nil); !reflect.DeepEqual(own, sum.KeyGroups) {
				t.Errorf("%s (columnar %v): histogram from the runs\n%+v\nfrom a pass of its own\n%+v", path, columnar, sum.KeyGroups, own)
			}
			b, _ := json.Marshal(sum)
			got[i] = string(b)
			sp.Close()
		}
		if got[0] != got[1] {
			t.Errorf("%s: read in place\n%s\nrow by row\n%s", path, got[0], got[1])
		}
		if path == tree {
			// File 0's rows of subtask 1's key groups: op 2's are stale
			// copies (subtask 1 holds them), the others' are lost.
			var stale, lost int
			for _, r := range rows {
				if len(r.Key) > 0 && r.Key[0] < NumKeyGroups && ParseKey(r.Key).Kind == KindKeyed && SubtaskForKeyGroup(int(r.Key[0]), 2) == 1 {
					if r.Op == 2 {
						stale++
					} else {
						lost++
					}
				}
			}
			sp, err := Open(path, OpenOptions{Columnar: true, Groups: groupsFor(path, tree)})
			if err != nil {
				t.Fatal(err)
			}
			h := Summarize(sp).KeyGroups
			sp.Close()
			if h.StaleCopies != stale || h.Lost != lost || stale == 0 || lost == 0 {
				t.Errorf("stale copies %d, lost %d; want %d, %d", h.StaleCopies, h.Lost, stale, lost)
			}
		}
	}
}

func groupsFor(path, tree string) []Group {
	if path == tree {
		return []Group{{First: 0, Count: 2}}
	}
	return nil
}

// The Files table lists the rows of a few batches one by one, and sums up
// many.
func TestBatchSizes(t *testing.T) {
	for _, c := range []struct {
		rows []int
		want string
	}{
		{nil, "-"},
		{[]int{3}, "3"},
		{[]int{58, 0, 87}, "58+0+87"},
		{[]int{1024, 1024, 1024, 7}, "1024+1024+1024+7"},
		{[]int{1024, 1024, 1024, 1024, 7}, "5 of 7-1024"},
	} {
		if got := batchSizes(c.rows); got != c.want {
			t.Errorf("%v: %q, want %q", c.rows, got, c.want)
		}
	}
}

// The (op, slot) cache of Summarize tells apart slots that share their
// first 16 bytes, a slot from no slot, and operators, in an order that
// changes pair every row (more pairs than it holds: the caller finds the
// evicted ones again, as Summarize's maps do).
func TestSlotCache(t *testing.T) {
	var c slotCache
	long := strings.Repeat("s", 16)
	type pair struct {
		op   uint64
		has  bool
		name string
	}
	made := map[pair]*inspCounts{}
	for round := 0; round < 3; round++ {
		for op := uint64(1); op <= 40; op++ {
			for _, p := range []pair{{op, true, "agg"}, {op, true, long + "x"}, {op, true, long + "y"}, {op, false, ""}, {op, true, ""}, {op, true, "agg\x00"}} {
				name := []byte(p.name)
				e := c.entry(p.op, p.has, name)
				if e.o == nil {
					if made[p] == nil {
						made[p] = &inspCounts{}
					}
					e.o, e.sc = &inspOp{}, made[p]
				}
				clear(name) // the caller's bytes change; the cache keeps its own
				if e.sc != made[p] {
					t.Fatalf("round %d, %+v: the counters of another pair", round, p)
				}
			}
		}
	}
	if len(made) != 40*6 {
		t.Errorf("%d pairs, want %d", len(made), 40*6)
	}
}

// Pairs whose entries of the (op, slot) cache collide each keep an entry
// of their own, up to slotCacheProbes of them, whatever the order they
// come in; one more takes the first entry, emptied.
func TestSlotCacheCollisions(t *testing.T) {
	const op = 42
	var names [][]byte
	home := -1
	for i := 0; len(names) < slotCacheProbes+1; i++ {
		name := []byte(fmt.Sprintf("slot%d", i))
		w0, w1 := PrefixWords(name)
		h := int(PrefixHash(op, w0, w1, len(name)) >> 58)
		if home < 0 {
			home = h
		}
		if h == home {
			names = append(names, name)
		}
	}
	var c slotCache
	entries := map[*slotEntry]int{}
	for k, name := range names[:slotCacheProbes] {
		e := c.entry(op, true, name)
		if _, taken := entries[e]; taken || e.o != nil {
			t.Fatalf("pair %d took the entry of another", k)
		}
		e.o, e.sc = &inspOp{}, &inspCounts{}
		entries[e] = k
	}
	for round := range 3 {
		for k, name := range names[:slotCacheProbes] {
			if e := c.entry(op, true, name); e.o == nil || entries[e] != k {
				t.Fatalf("round %d, pair %d: its entry was lost", round, k)
			}
		}
	}
	e := c.entry(op, true, names[slotCacheProbes])
	if e != &c[home] || e.o != nil || !bytes.Equal(e.slot, names[slotCacheProbes]) {
		t.Fatalf("one pair more: entry %p (first %p), counters kept %v", e, &c[home], e.o != nil)
	}
}

// The Timers section lists each copy of each timer blob: its counts, the
// timers outside its subtask's range, its earliest and latest times, and
// whether it is live (its chain group runs the operator) or frozen; a blob
// that does not decode says so. A file in no order, counted in parts, lists
// its blobs in row order.
func TestSummarizeTimers(t *testing.T) {
	const op, other = 7, 8
	q := [4][]byte{vtKeysIn(t, 0, 32, 1)[0], vtKeysIn(t, 32, 64, 1)[0], vtKeysIn(t, 64, 96, 1)[0], vtKeysIn(t, 96, 128, 1)[0]}
	blob := func(key string, proc, event []Timer) Row { return vtOperator(op, key, EncodeTimers(proc, event)) }
	const timerOnly = 9
	// Subtask 0 stores its timers1 blob twice: the later copy is the one a
	// restore keeps. Subtask 3 holds op 7's keyed state under a legacy raw
	// key only: its group runs op 7 all the same. No group holds keyed rows
	// of op 9.
	files := [][]Row{
		{vtKeyed(op, "agg", q[0], "v"), blob("__clink_timers", []Timer{{5, q[0]}}, []Timer{{3, q[1]}, {9, q[2]}}), blob("__clink_timers1", nil, nil),
			blob("__clink_timers1", nil, []Timer{{4, q[0]}}), vtOperator(timerOnly, "__clink_timers", EncodeTimers(nil, []Timer{{2, q[3]}}))},
		{vtKeyed(op, "agg", q[2], "v"), vtOperator(op, "__clink_timers", []byte("bad"))},
		{vtKeyed(other, "x", q[0], "v"), blob("__clink_timers", nil, []Timer{{1, q[3]}})},
		{{Op: op, Key: []byte("__inflight__"), Value: []byte("b")}, blob("__clink_timers", nil, []Timer{{1, q[3]}})},
	}
	tree := vtWriteTreeAsIs(t, files)
	s := Summarize(vtOpen(t, tree, OpenOptions{Groups: []Group{{0, 2}, {2, 1}, {3, 1}}}))
	i64, n := ptr[int64], ptr[int]
	want := []TimerBlobSummary{
		{Op: op, Key: `0xff+"__clink_timers"`, key: "\xff__clink_timers", Copies: []TimerCopySummary{
			{Subtask: 0, State: BlobLive, Processing: 1, Event: 2, OutsideRange: n(1), EarliestMs: i64(3), LatestMs: i64(9)},
			{Subtask: 1, State: BlobLive, Error: "truncated processing-time timer count at byte 0"},
			{Subtask: 2, State: BlobFrozen, Event: 1, EarliestMs: i64(1), LatestMs: i64(1)},
			{Subtask: 3, State: BlobLive, Event: 1, OutsideRange: n(0), EarliestMs: i64(1), LatestMs: i64(1)},
		}},
		{Op: op, Key: `0xff+"__clink_timers1"`, key: "\xff__clink_timers1", Copies: []TimerCopySummary{{Subtask: 0, State: BlobLive, Event: 1, OutsideRange: n(0), EarliestMs: i64(4), LatestMs: i64(4)}}},
		{Op: timerOnly, Key: `0xff+"__clink_timers"`, key: "\xff__clink_timers", Copies: []TimerCopySummary{{Subtask: 0, State: BlobUnknown, Event: 1, EarliestMs: i64(2), LatestMs: i64(2)}}},
	}
	if !reflect.DeepEqual(s.Timers, want) {
		t.Errorf("timers:\n%+v\nwant\n%+v", s.Timers, want)
	}
	var text bytes.Buffer
	if err := s.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{"Timers (5 in live blobs, 1 in frozen copies of other chain groups' operators, 1 of operators no chain group holds keyed rows of (which group runs them is not known))",
		"1 (frozen)", "2 (frozen)   0           1      -              1970-01-01T00:00:00.001Z", "0 (unknown)  0           1      -",
		"op 7 blob 0xff+\"__clink_timers\" of subtask 1 does not decode: truncated", "1970-01-01T00:00:00.003Z  1970-01-01T00:00:00.009Z"} {
		if frag == "1 (frozen)" {
			if strings.Contains(text.String(), frag) {
				t.Errorf("subtask 1 runs the operator, shown frozen:\n%s", text.String())
			}
			continue
		}
		if !strings.Contains(text.String(), frag) {
			t.Errorf("text lacks %q:\n%s", frag, text.String())
		}
	}

	// Blob keys that share a prefix up to a '|' come as one run: each is
	// listed.
	piped := Summarize(openAsIs(t, []Row{blob("__clink_timers|0", nil, []Timer{{1, q[0]}}), blob("__clink_timers|1", nil, []Timer{{2, q[0]}})}))
	if len(piped.Timers) != 2 || piped.Timers[1].Copies[0].EarliestMs == nil || *piped.Timers[1].Copies[0].EarliestMs != 2 {
		t.Errorf("blobs of keys with '|': %+v", piped.Timers)
	}

	// Past maxTimerCopyLines copies, a line a blob adds up its live copies.
	defer func(n int) { maxTimerCopyLines = n }(maxTimerCopyLines)
	maxTimerCopyLines = 2
	text.Reset()
	if err := s.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{
		`  7   0xff+"__clink_timers"   4 copies, 2 live  1           3      1              1970-01-01T00:00:00.001Z  1970-01-01T00:00:00.009Z`,
		`  9   0xff+"__clink_timers"   1 copy, 0 live    0           0      -              -                         -`,
		"(6 copies of 3 blobs: one line a blob, adding up its live copies; --json lists every copy)",
		"op 7 blob 0xff+\"__clink_timers\" of subtask 1 does not decode",
	} {
		if !strings.Contains(text.String(), frag) {
			t.Errorf("text lacks %q:\n%s", frag, text.String())
		}
	}

	// A file in no order, counted in parts.
	defer func(n int) { tallyPartRows = n }(tallyPartRows)
	tallyPartRows = 4
	var rows []Row
	for i := range 40 {
		rows = append(rows, vtKeyed(op, "agg", []byte(fmt.Sprintf("user-%d", 39-i)), "v"))
		if i%10 == 5 {
			rows = append(rows, blob(fmt.Sprintf("__clink_timers%d", 3-i/10), nil, []Timer{{int64(i), q[0]}}))
		}
	}
	s = Summarize(openAsIs(t, rows))
	var keys []string
	for _, b := range s.Timers {
		keys = append(keys, b.Key)
		if len(b.Copies) != 1 || b.Copies[0].Subtask != -1 || b.Copies[0].State != BlobLive || b.Copies[0].Event != 1 {
			t.Errorf("blob %s: %+v", b.Key, b.Copies)
		}
	}
	if want := []string{`0xff+"__clink_timers0"`, `0xff+"__clink_timers1"`, `0xff+"__clink_timers2"`, `0xff+"__clink_timers3"`}; !slices.Equal(keys, want) {
		t.Errorf("blobs %q, want %q", keys, want)
	}
}

// A legacy unprefixed timer blob ("__clink_timers" stored raw, which
// get_operator_state falls back to, format 2.1) is listed and counted as a
// prefixed one is, marked legacy, in the text and the JSON; a raw row of
// another name is not a blob.
func TestSummarizeLegacyTimers(t *testing.T) {
	const op = 7
	lo, hi := vtKeysIn(t, 0, 64, 1)[0], vtKeysIn(t, 64, 128, 1)[0]
	legacy := func(key string, proc, event []Timer) Row {
		return Row{Op: op, Key: []byte(key), Value: EncodeTimers(proc, event)}
	}
	files := [][]Row{
		{vtKeyed(op, "agg", lo, "v"), legacy("__clink_timers", []Timer{{5, lo}}, []Timer{{8, hi}})},
		{vtKeyed(op, "agg", hi, "v"), legacy("__clink_timers", nil, []Timer{{6, hi}}), vtOperator(op, "__clink_timers", EncodeTimers(nil, []Timer{{7, hi}})),
			legacy("__clink_timers1", nil, nil), {Op: op, Key: []byte("__iterate_inflight__"), Value: []byte("b")}},
	}
	s := Summarize(vtOpen(t, vtWriteTree(t, files, nil), OpenOptions{Groups: []Group{{0, 2}}}))
	i64, n := ptr[int64], ptr[int]
	want := []TimerBlobSummary{
		{Op: op, Key: `"__clink_timers"`, Legacy: true, key: "__clink_timers", Copies: []TimerCopySummary{
			{Subtask: 0, State: BlobLive, Processing: 1, Event: 1, OutsideRange: n(1), EarliestMs: i64(5), LatestMs: i64(8)},
			{Subtask: 1, State: BlobLive, Event: 1, OutsideRange: n(0), EarliestMs: i64(6), LatestMs: i64(6)},
		}},
		{Op: op, Key: `"__clink_timers1"`, Legacy: true, key: "__clink_timers1", Copies: []TimerCopySummary{{Subtask: 1, State: BlobLive, OutsideRange: n(0)}}},
		{Op: op, Key: `0xff+"__clink_timers"`, key: "\xff__clink_timers", Copies: []TimerCopySummary{{Subtask: 1, State: BlobLive, Event: 1, OutsideRange: n(0), EarliestMs: i64(7), LatestMs: i64(7)}}},
	}
	if !reflect.DeepEqual(s.Timers, want) {
		t.Errorf("timers:\n%+v\nwant\n%+v", s.Timers, want)
	}
	var text bytes.Buffer
	if err := s.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, frag := range []string{
		"Timers (4 in live blobs)",
		`  7   "__clink_timers" (legacy)   0        1           1      1              1970-01-01T00:00:00.005Z  1970-01-01T00:00:00.008Z`,
		"(legacy: an unprefixed __clink_timers raw row",
		"a narrowed restore keeps only the copy of the subtask owning key group 95)",
	} {
		if !strings.Contains(text.String(), frag) {
			t.Errorf("text lacks %q:\n%s", frag, text.String())
		}
	}
	js, err := json.Marshal(s.Timers)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(js), `"legacy":true`); got != 2 {
		t.Errorf("JSON marks %d blobs legacy, want 2: %s", got, js)
	}

	// A single file's legacy blob, in a file of rows in no order counted
	// in parts.
	defer func(n int) { tallyPartRows = n }(tallyPartRows)
	tallyPartRows = 2
	var rows []Row
	for i := range 8 {
		rows = append(rows, vtKeyed(op, "agg", []byte(fmt.Sprintf("user-%d", 7-i)), "v"))
	}
	rows = append(rows[:5], append([]Row{legacy("__clink_timers", []Timer{{1, lo}, {2, hi}}, nil)}, rows[5:]...)...)
	s = Summarize(openAsIs(t, rows))
	if len(s.Timers) != 1 || !s.Timers[0].Legacy || len(s.Timers[0].Copies) != 1 || s.Timers[0].Copies[0].Subtask != -1 || s.Timers[0].Copies[0].Processing != 2 {
		t.Errorf("single file: %+v", s.Timers)
	}
}

// TestHistogramCountsDuplicates: a key a file stores twice is counted once
// in the key-group histogram, and the copy left out is counted apart, so
// that the keyed rows add up.
func TestHistogramCountsDuplicates(t *testing.T) {
	k := func(s string) []byte { return EncodeKeyedKey([]byte("s"), []byte(s)) }
	rows := []Row{{Op: 1, Key: k("a"), Value: []byte("1")}, {Op: 1, Key: k("b"), Value: []byte("2")}, {Op: 1, Key: k("a"), Value: []byte("3")}}
	path := filepath.Join(t.TempDir(), "dup.snap")
	if _, err := WriteSnapshotFile(path, nil, rows, SnapshotOptions{AsIs: true}); err != nil {
		t.Fatal(err)
	}
	sp, err := Open(path, OpenOptions{Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	kg := Summarize(sp).KeyGroups
	if kg.Rows != 2 || kg.Duplicates != 1 {
		t.Errorf("histogram rows %d, duplicates %d; want 2 and 1", kg.Rows, kg.Duplicates)
	}
}

// Two changelogs whose handles name the same materialisation: the totals
// count the file once, as it is on disk.
func TestSummarizeSharedMaterialisation(t *testing.T) {
	tree := filepath.Join(t.TempDir(), "tree")
	if err := os.CopyFS(tree, os.DirFS(vtFixturePath("changelog-file"))); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(tree, "v1", "1", "changelog-17.snap")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	old := []byte("/v1/1/materializations/mat-15.bin")
	if bytes.Count(b, old) != 1 {
		t.Fatalf("handle %q not found once in %s", old, p)
	}
	if err := os.WriteFile(p, bytes.Replace(b, old, []byte("/v1/0/materializations/mat-17.bin"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(tree, "v1", "0", "materializations", "mat-17.bin"))
	if err != nil {
		t.Fatal(err)
	}
	tot := Summarize(vtOpen(t, tree, OpenOptions{})).Totals
	if tot.Materializations != 1 || tot.MaterializationBytes != st.Size() {
		t.Errorf("totals: %d materialisations of %d bytes, want 1 of %d", tot.Materializations, tot.MaterializationBytes, st.Size())
	}
}

// A name a tree carries with a newline or an escape in it (here a job's
// directory) is shown quoted in the text of inspect and validate: it makes
// no line of its own.
func TestShowNameInText(t *testing.T) {
	if got := ShowName("_jobs/7/COMPLETED-3"); got != "_jobs/7/COMPLETED-3" {
		t.Errorf("plain name shown as %s", got)
	}
	if got := ShowName("j\nfake\x1b"); got != `"j\nfake\x1b"` {
		t.Errorf("name with controls shown as %s", got)
	}
	tree := vtWriteTree(t, [][]Row{{vtKeyed(7, "agg", []byte("k"), "v")}}, nil)
	if err := os.Rename(filepath.Join(tree, "_jobs", "job1"), filepath.Join(tree, "_jobs", "j\nfake line")); err != nil {
		t.Fatal(err)
	}
	// text is inspect's and validate's text of the tree at path; no line
	// of it may start with what follows the newline of a name.
	text := func(path, what string) string {
		sp := vtOpen(t, path, OpenOptions{})
		var b bytes.Buffer
		if err := Summarize(sp).WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if err := Validate(sp, ValidateOptions{}).WriteText(&b); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(b.String(), "\n") {
			if strings.HasPrefix(line, "fake line") {
				t.Errorf("a line of its own from %s:\n%s", what, b.String())
			}
		}
		return b.String()
	}
	if out := text(tree, "the job's directory name"); !strings.Contains(out, `marker "_jobs/j\nfake line/COMPLETED-7"`) {
		t.Errorf("marker not shown quoted:\n%s", out)
	}
	// The tree's own path, in the sidecar verdicts too.
	moved := filepath.Join(t.TempDir(), "t\nfake line")
	if err := os.Rename(tree, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(moved, "v1", "0", "checkpoint-7.snap.meta")); err != nil {
		t.Fatal(err)
	}
	text(moved, "the tree's path")
}

// A wide tree's rows per subtask and marker list are summed up in the text
// view (its lines stay readable at a parallelism of hundreds); a narrow
// one's, and a list not in strictly ascending order, are shown in full.
func TestInspectTextWideTree(t *testing.T) {
	per := func(n int) []SubtaskRows {
		var out []SubtaskRows
		for i := range n {
			out = append(out, SubtaskRows{Subtask: i, Rows: 100 + (i*37)%50})
		}
		return out
	}
	seq := func(from, to int) []int {
		var out []int
		for i := from; i <= to; i++ {
			out = append(out, i)
		}
		return out
	}
	for _, c := range []struct {
		got, want string
	}{
		{showSubtaskRows(per(3)), "0:100 1:137 2:124"},
		{showSubtaskRows([]SubtaskRows{{Subtask: -1, Rows: 7}}), "7"},
		// The subtasks read that hold none of the operator's rows show 0.
		{showSubtaskRows(withEmpty([]SubtaskRows{{1, 5}, {3, 7}, {9, 1}}, []int{0, 1, 2, 3, 4})), "0:0 1:5 2:0 3:7 4:0 9:1"},
		{showSubtaskRows(withEmpty([]SubtaskRows{{-1, 4}}, nil)), "4"},
		{showSubtaskRows(withEmpty(nil, []int{0, 1})), "0:0 1:0"},
		{showSubtaskRows(per(16)), "0:100 1:137 2:124 3:111 4:148 5:135 6:122 7:109 8:146 9:133 10:120 11:107 12:144 13:131 14:118 15:105"},
		{showSubtaskRows(per(128)), "128 subtasks, fewest 100 (subtask 0), most 149 (subtask 27); --json lists each"},
		{showSubtaskList(seq(0, 3)), "0,1,2,3"},
		{showSubtaskList(seq(0, 127)), "0-127, 128 of them"},
		{showSubtaskList(append(append(seq(0, 9), 12), seq(20, 29)...)), "0-9,12,20-29, 21 of them"},
		{showSubtaskList(append(seq(0, 19), 5)), JoinInts(append(seq(0, 19), 5), ",")},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	// The text view shows them so.
	s := &Summary{
		Input:     InputSummary{Path: "t", Kind: InputTree.String(), CompletedMarker: "_jobs/1/COMPLETED-1", CompletedSubtasks: seq(0, 127)},
		Operators: []OperatorSummary{{Op: 7, Rows: 1, Subtasks: per(128)}},
	}
	var b strings.Builder
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(subtasks 0-127, 128 of them)", "128 subtasks, fewest 100 (subtask 0), most 149 (subtask 27); --json lists each"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the text lacks %q:\n%s", want, b.String())
		}
	}
}

// A changelog whose row 0 is an inline materialisation with no bytes
// (row_kind 0, empty value: nothing materialised yet, format 1.7) is
// said to be empty in the text, as an empty handle is, not shown as if it
// held a materialisation: changelog-p4's subtask 2 is log only.
func TestInspectTextEmptyInlineMaterialisation(t *testing.T) {
	sum := Summarize(vtOpen(t, vtFixturePath("changelog-p4"), OpenOptions{}))
	var b bytes.Buffer
	if err := sum.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(b.String(), "\n") {
		if rel, rest, ok := strings.Cut(strings.TrimSpace(l), ": changelog, "); ok {
			lines[rel] = rest
		}
	}
	if got := lines["v1/1/checkpoint-17.snap"]; !strings.HasPrefix(got, "1 blob, inline materialisation;") {
		t.Errorf("subtask 1 (materialised inline): %q", got)
	}
	if got := lines["v1/2/checkpoint-17.snap"]; !strings.HasPrefix(got, "1 blob, empty inline materialisation (nothing materialised yet);") {
		t.Errorf("subtask 2 (empty materialisation, log only): %q", got)
	}
	// The JSON keeps its values: "inline", possibly empty.
	if m := sum.Files[2].Changelog.Materialization; !slices.Equal(m, []string{"inline"}) {
		t.Errorf("subtask 2 materialization %q, want [inline]", m)
	}
}

// The note on a tree whose subtask directories leave a gap names the
// subtasks missing as ranges when there are more than a few: a tree
// holding subtasks 0 and 5000 made a note of thousands of numbers, one
// line of 30 KB in the text and in the JSON.
func TestSummarizeWideGapNote(t *testing.T) {
	root := t.TempDir()
	for _, sub := range []int{0, 5000} {
		p := filepath.Join(root, "v1", strconv.Itoa(sub), "checkpoint-3.snap")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		rows := []Row{{Op: 1, Key: []byte("\x05s|k"), Value: []byte("v")}}
		if _, err := WriteSnapshotFile(p, nil, rows, SnapshotOptions{Sidecar: true, CheckpointID: 3}); err != nil {
			t.Fatal(err)
		}
	}
	sum := Summarize(vtOpen(t, root, OpenOptions{}))
	found := false
	for _, n := range sum.Notes {
		if len(n) > 1000 {
			t.Errorf("note of %d bytes: %.200s...", len(n), n)
		}
		if strings.Contains(n, "refuses to start subtasks 1-4999, 4999 of them,") {
			found = true
		}
	}
	if !found {
		t.Errorf("no note names subtasks 1-4999: %q", sum.Notes)
	}
}

// Files that disagree on the version map: the text shows, under the map
// clink's merge keeps (the first non-empty one), each other map with its
// files and its differences from the kept one, entries matched by operator
// and state type; the JSON carries each map's entries.
func TestInspectVersionMapVariants(t *testing.T) {
	mk := func(es ...VersionEntry) VersionMap {
		var m VersionMap
		for _, e := range es {
			if err := m.Set(e); err != nil {
				t.Fatal(err)
			}
		}
		return m
	}
	sum7 := VersionEntry{Op: 7, StateType: "agg_sum", Version: 1}
	seen := VersionEntry{Op: 8, StateType: "Seen", Version: 3, Slot: "seen"}
	kept := mk(sum7, seen)
	bumped := mk(VersionEntry{Op: 7, StateType: "agg_sum", Version: 2}, seen)
	other := mk(seen, VersionEntry{Op: 9, StateType: "New", Version: 1})
	var files [][]Row
	for i := range 4 {
		files = append(files, []Row{vtKeyed(7, "agg", vtKeysIn(t, 32*i, 32*i+32, 1)[0], "v")})
	}
	sum := Summarize(vtOpen(t, vtWriteTree(t, files, []VersionMap{{}, kept, bumped, other}), OpenOptions{}))
	var b bytes.Buffer
	if err := sum.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	want := `  no map: v1/0/checkpoint-7.snap
  map B (2 entries), the table above, which clink's merge keeps: v1/1/checkpoint-7.snap
  map C (2 entries): v1/2/checkpoint-7.snap
    - op 7 "agg_sum" version 1, every row of the op
    + op 7 "agg_sum" version 2, every row of the op
  map D (2 entries): v1/3/checkpoint-7.snap
    - op 7 "agg_sum" version 1, every row of the op
    + op 9 "New" version 1, every row of the op
`
	if !strings.Contains(text, filepath.FromSlash(want)) {
		t.Errorf("the text lacks\n%s\nin\n%s", want, text)
	}
	vm := sum.VersionMap
	if len(vm.Variants) != 4 || !vm.Disagree {
		t.Fatalf("variants %+v", vm.Variants)
	}
	for i, m := range []VersionMap{{}, kept, bumped, other} {
		if got := vm.Variants[i].Map; !slices.Equal(got, summariseVersions(m)) || got == nil {
			t.Errorf("variant %d map %+v, want %+v", i, got, m.Entries())
		}
	}
	if !slices.Equal(vm.Entries, summariseVersions(kept)) {
		t.Errorf("entries %+v, want the kept map's", vm.Entries)
	}
}
