package savepoint

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ---- the independent fixture trees and their truth files ----

// vtFixtures are the trees of testdata/independent (see its README.md).
var vtFixtures = []string{"mixed-p4", "changelog-p4", "two-groups", "gen3-stale", "changelog-file"}

type vtTruthFile struct {
	Subtask                      int      `json:"subtask"`
	Path                         string   `json:"path"`
	Variant                      string   `json:"variant"`
	Batches                      []int    `json:"batches"`
	MetadataKeys                 []string `json:"metadata_keys"`
	Materialisation              *string  `json:"materialisation"`
	UnreferencedMaterialisations []string `json:"unreferenced_materialisations"`
}

type vtTruthEntry struct {
	Subtask       int    `json:"subtask"`
	OpID          string `json:"op_id"`
	Kind          string `json:"kind"`
	KeyHex        string `json:"key_hex"`
	KeyGroup      *int   `json:"key_group"`
	ValueHex      string `json:"value_hex"`
	Origin        string `json:"origin"`
	Duplicate     bool   `json:"duplicate"`
	Authoritative *bool  `json:"authoritative"`
}

func (e vtTruthEntry) op(t testing.TB) uint64 {
	op, err := strconv.ParseUint(e.OpID, 10, 64)
	if err != nil {
		t.Fatalf("truth op_id %q: %v", e.OpID, err)
	}
	return op
}

type vtTruth struct {
	Generation int    `json:"generation"`
	Checkpoint string `json:"checkpoint"`
	Job        string `json:"job"`
	VersionMap []struct {
		Packed string `json:"packed"`
	} `json:"version_map"`
	Files  []vtTruthFile `json:"files"`
	Layout struct {
		Groups []struct {
			FirstSubtask int `json:"first_subtask"`
			Parallelism  int `json:"parallelism"`
		} `json:"groups"`
	} `json:"layout"`
	Counts struct {
		Entries                int `json:"entries"`
		Keyed                  int `json:"keyed"`
		Operator               int `json:"operator"`
		Raw                    int `json:"raw"`
		ReplicaOperatorRows    int `json:"replica_operator_rows"`
		StaleKeyedCopies       int `json:"stale_keyed_copies"`
		NonAuthoritativeCopies int `json:"non_authoritative_copies"`
	} `json:"counts"`
	Entries []vtTruthEntry `json:"entries"`
}

func vtLoadTruth(t testing.TB, name string) *vtTruth {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "independent", name+".truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tr vtTruth
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatalf("%s truth: %v", name, err)
	}
	return &tr
}

// vtOpen opens path as the CLI does for inspect and validate: memory-mapped
// and columnar (the rows read through batches, not Rows). The savepoint is
// closed when the test ends.
func vtOpen(t testing.TB, path string, opts OpenOptions) *Savepoint {
	t.Helper()
	opts.Columnar = true
	sp, err := Open(path, opts)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { sp.Close() })
	return sp
}

// vtChangelogTree writes a changelog+file tree of generation 1,
// checkpoint 7, a subtask for each of rows, and returns its path.
func vtChangelogTree(t testing.TB, rows [][]Row) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "cl")
	tw, err := CreateTree(out, TreeOptions{Generation: 1, Checkpoint: 7, Backend: BackendChangelogFile})
	if err != nil {
		t.Fatal(err)
	}
	for i, rows := range rows {
		if _, err := tw.WriteSubtask(i, CanonicalMetadata(nil, VersionMap{}), rows, CompressNone); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Commit("job1", nil); err != nil {
		t.Fatal(err)
	}
	return out
}

func vtFixturePath(name string) string { return filepath.Join("..", "testdata", "independent", name) }

// vtNoMapFiles are the files of each fixture that carry no version map:
// changelog files whose materialisation is empty (log only) or absent. The
// truth describes them by their variant ("empty materialisation, log
// only", "changelog+file (log)", "changelog+file (empty)"); a changelog's
// map lives in its materialisation, so they cannot carry one.
var vtNoMapFiles = map[string][]string{
	"changelog-p4":   {"v1/2/checkpoint-17.snap"},
	"changelog-file": {"v1/2/changelog-17.snap", "v1/3/changelog-17.snap"},
}

type vtFindingKey struct {
	check   string
	sev     Severity
	subtask int
	op      uint64
	key     string
}

func vtKeys(fs []Finding) []vtFindingKey {
	out := make([]vtFindingKey, 0, len(fs))
	for _, f := range fs {
		out = append(out, vtFindingKey{f.Check, f.Severity, f.Subtask, f.Op, hex.EncodeToString(f.Key)})
	}
	slices.SortFunc(out, vtCompareKey)
	return out
}

func vtCompareKey(a, b vtFindingKey) int {
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

func vtDump(r *Report) string {
	var b strings.Builder
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "  %s %s %s row %d: %s\n", f.Severity, f.Check, f.File, f.Row, f.Message)
	}
	return b.String()
}

func TestValidateIndependentFixtures(t *testing.T) {
	for _, name := range vtFixtures {
		t.Run(name, func(t *testing.T) {
			tr := vtLoadTruth(t, name)
			sp := vtOpen(t, vtFixturePath(name), OpenOptions{})
			rep := Validate(sp, ValidateOptions{})
			// The only errors: changelog payloads stored as checkpoint
			// files, which clink's file backend refuses to restore.
			want := 0
			for _, f := range tr.Files {
				if sp.Backend == BackendFile && strings.HasPrefix(f.Variant, "changelog") {
					want++
				}
			}
			if rep.Errors() != want || len(rep.ByCheck(CheckChangelogOnFileBackend)) != want {
				t.Fatalf("%d errors, want %d (changelog payloads on the file backend):\n%s", rep.Errors(), want, vtDump(rep))
			}
			// The chain groups the validation judged placement by are the truth's.
			var groups []Group
			for _, g := range tr.Layout.Groups {
				groups = append(groups, Group{First: g.FirstSubtask, Count: g.Parallelism})
			}
			if !slices.Equal(sp.Groups, groups) {
				t.Fatalf("groups %v, truth %v", sp.Groups, groups)
			}

			// Stale copies: exactly the truth's non-authoritative copies.
			var wantStale []vtFindingKey
			staleKeyed := 0
			for _, e := range tr.Entries {
				if e.Authoritative != nil && !*e.Authoritative {
					wantStale = append(wantStale, vtFindingKey{CheckStaleCopy, SeverityWarning, e.Subtask, e.op(t), e.KeyHex})
					if e.Kind == "keyed" {
						staleKeyed++
					}
				}
			}
			slices.SortFunc(wantStale, vtCompareKey)
			gotStale := rep.ByCheck(CheckStaleCopy)
			if got := vtKeys(gotStale); !slices.Equal(got, wantStale) {
				t.Errorf("stale copies:\n got %v\nwant %v", got, wantStale)
			}
			if len(gotStale) != tr.Counts.NonAuthoritativeCopies {
				t.Errorf("%d stale-copy findings, truth counts %d non-authoritative copies", len(gotStale), tr.Counts.NonAuthoritativeCopies)
			}
			keyed := 0
			for _, f := range gotStale {
				if ParseKey(f.Key).Kind == KindKeyed {
					keyed++
				}
				if !strings.Contains(f.Message, "the owner's copy in subtask") {
					t.Errorf("stale-copy message %q does not name the owner", f.Message)
				}
				if raw := ParseKey(f.Key).Kind == KindRaw; raw != strings.Contains(f.Message, "its subtask's own state") {
					t.Errorf("stale-copy message %q of a legacy raw key (%v) or not", f.Message, raw)
				}
			}
			if keyed != tr.Counts.StaleKeyedCopies || staleKeyed != tr.Counts.StaleKeyedCopies {
				t.Errorf("stale keyed copies: %d findings, %d in the truth entries, truth counts %d", keyed, staleKeyed, tr.Counts.StaleKeyedCopies)
			}

			// Replicated operator rows: computed from the truth entries.
			type opKey struct {
				op  uint64
				key string
			}
			vals := map[opKey]map[string]bool{}
			holders := map[opKey]int{}
			for _, e := range tr.Entries {
				if e.Kind != "operator" {
					continue
				}
				k := opKey{e.op(t), e.KeyHex}
				if vals[k] == nil {
					vals[k] = map[string]bool{}
				}
				vals[k][e.ValueHex] = true
				holders[k]++
			}
			var wantDiv []vtFindingKey
			replicated, diverging := 0, 0
			divWarnings, divInfos := 0, 0
			for k, vs := range vals {
				if holders[k] > 1 {
					replicated++
				}
				if len(vs) < 2 {
					continue
				}
				diverging++
				all8 := true
				for v := range vs {
					all8 = all8 && len(v) == 16
				}
				key, _ := hex.DecodeString(k.key)
				fk := vtFindingKey{CheckOperatorDivergence, SeverityWarning, -1, k.op, k.key}
				switch {
				case all8 && bytes.Contains(key, []byte("source_offset")):
					fk.check = CheckOffsetDivergence
					divWarnings++
				case all8, IsTimerBlob(key):
					// 8-byte counters merge by the greater, and each
					// subtask's timer blob is its own: infos.
					fk.sev = SeverityInfo
					divInfos++
				default:
					divWarnings++
				}
				wantDiv = append(wantDiv, fk)
			}
			slices.SortFunc(wantDiv, vtCompareKey)
			gotDiv := vtKeys(append(rep.ByCheck(CheckOperatorDivergence), rep.ByCheck(CheckOffsetDivergence)...))
			if !slices.Equal(gotDiv, wantDiv) {
				t.Errorf("operator divergence:\n got %v\nwant %v", gotDiv, wantDiv)
			}
			// Replicated operator rows are a warning (the contract's).
			if rs := rep.ByCheck(CheckOperatorReplica); len(rs) != 1 || rs[0].Severity != SeverityWarning ||
				!strings.HasPrefix(rs[0].Message, fmt.Sprintf("%d operator-state keys are held by several subtask files", replicated)) ||
				!strings.HasSuffix(rs[0].Message, fmt.Sprintf("; %d of them with differing values", diverging)) {
				t.Errorf("operator-replica findings %v, want one warning for %d keys, %d diverging", rs, replicated, diverging)
			}

			// Version maps: every file carrying one carries the truth's.
			for _, f := range sp.Files {
				if p := f.Snapshot.Versions.Pack(); p != "" && p != tr.VersionMap[0].Packed {
					t.Errorf("%s version map %q, truth %q", f.Rel, p, tr.VersionMap[0].Packed)
				}
			}
			vm := rep.ByCheck(CheckVersionMapDisagreement)
			if noMap := vtNoMapFiles[name]; len(noMap) > 0 {
				want := "no map: " + strings.Join(noMap, ", ") + ")"
				if len(vm) != 1 || vm[0].Severity != SeverityWarning || !strings.Contains(vm[0].Message, want) {
					t.Errorf("version-map findings %v, want one warning containing %q", vm, want)
				}
			} else if len(vm) != 0 {
				t.Errorf("unexpected version-map findings %v", vm)
			}

			// Changelog payloads under checkpoint-<id>.snap.
			var wantCl []string
			wantUnref := 0
			for _, f := range tr.Files {
				if sp.Backend == BackendFile && strings.HasPrefix(f.Variant, "changelog") {
					wantCl = append(wantCl, f.Path)
				}
				wantUnref += len(f.UnreferencedMaterialisations)
			}
			var gotCl []string
			for _, f := range rep.ByCheck(CheckChangelogOnFileBackend) {
				if f.Severity != SeverityError || !strings.Contains(f.Message, "clink's file backend refuses changelog payloads under checkpoint-<id>.snap") {
					t.Errorf("changelog finding %+v", f)
				}
				gotCl = append(gotCl, f.File)
			}
			if !slices.Equal(gotCl, wantCl) {
				t.Errorf("changelog-on-file-backend files %v, want %v", gotCl, wantCl)
			}
			unref := rep.ByCheck(CheckUnreferencedMaterialization)
			if len(unref) != wantUnref {
				t.Errorf("%d unreferenced-materialization findings, truth lists %d", len(unref), wantUnref)
			}
			for _, f := range tr.Files {
				for _, u := range f.UnreferencedMaterialisations {
					if !slices.ContainsFunc(unref, func(x Finding) bool { return strings.HasPrefix(x.Message, u+" ") }) {
						t.Errorf("no finding for the unreferenced %s", u)
					}
				}
			}

			// Unsorted canonical files, judged independently from the rows.
			var wantUnsorted []string
			for _, f := range sp.Files {
				if f.Snapshot.Variant != Canonical {
					continue
				}
				rows := vtRows(f)
				for i := 1; i < len(rows); i++ {
					if rows[i-1].Op > rows[i].Op || rows[i-1].Op == rows[i].Op && bytes.Compare(rows[i-1].Key, rows[i].Key) > 0 {
						wantUnsorted = append(wantUnsorted, f.Rel)
						break
					}
				}
			}
			var gotUnsorted []string
			for _, f := range rep.ByCheck(CheckUnsorted) {
				gotUnsorted = append(gotUnsorted, f.File)
			}
			if !slices.Equal(gotUnsorted, wantUnsorted) {
				t.Errorf("unsorted files %v, want %v", gotUnsorted, wantUnsorted)
			}

			// Sidecars: the changelog+file tree carries none (one info).
			sc := rep.ByCheck(CheckSidecar)
			if sp.Backend == BackendChangelogFile {
				if len(sc) != 1 || sc[0].Severity != SeverityInfo || !strings.HasPrefix(sc[0].Message, "4 changelog+file payloads carry no .meta sidecar") {
					t.Errorf("sidecar findings %v", sc)
				}
			} else if len(sc) != 0 {
				t.Errorf("sidecar findings %v", sc)
			}

			// Nothing else: the warnings and infos add up.
			wantWarnings := len(wantStale) + divWarnings + len(wantUnsorted) + 1 // + operator-replica
			wantInfos := divInfos + wantUnref
			if len(vtNoMapFiles[name]) > 0 {
				wantWarnings++
			}
			if sp.Backend == BackendChangelogFile {
				wantInfos++
			}
			if rep.Warnings() != wantWarnings || rep.Infos() != wantInfos {
				t.Errorf("%d warnings, %d infos; want %d, %d:\n%s", rep.Warnings(), rep.Infos(), wantWarnings, wantInfos, vtDump(rep))
			}

			// At its own parallelism the layout check adds nothing.
			if len(sp.Groups) == 1 {
				again := Validate(sp, ValidateOptions{Parallelism: sp.Groups[0].Count})
				if len(again.ByCheck(CheckParallelism)) != 0 || len(again.Findings) != len(rep.Findings) {
					t.Errorf("parallelism %d adds findings:\n%s", sp.Groups[0].Count, vtDump(again))
				}
			}
		})
	}
}

func TestValidateFixtureOrderIsStable(t *testing.T) {
	sp := vtOpen(t, vtFixturePath("two-groups"), OpenOptions{})
	a, b := Validate(sp, ValidateOptions{}), Validate(sp, ValidateOptions{})
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Fatal("two validations of one savepoint differ")
	}
	// Tree-level findings first, then files in subtask order, rows ascending.
	seenFile := false
	lastSub, lastRow := -2, -2
	lastFile := ""
	for _, f := range a.Findings {
		if f.File == "" {
			if seenFile {
				t.Fatalf("tree-level finding after a file finding: %+v", f)
			}
			continue
		}
		seenFile = true
		if f.Subtask < lastSub || f.Subtask == lastSub && f.File == lastFile && f.Row < lastRow {
			t.Fatalf("out of order: %+v after subtask %d row %d", f, lastSub, lastRow)
		}
		lastSub, lastRow, lastFile = f.Subtask, f.Row, f.File
	}
}

// ---- constructed trees ----

// vtKeysIn returns n distinct string user keys whose key group lies in [lo, hi).
func vtKeysIn(t testing.TB, lo, hi, n int) [][]byte {
	t.Helper()
	var out [][]byte
	for i := 0; len(out) < n && i < 1_000_000; i++ {
		k := []byte("user-" + strconv.Itoa(i))
		if kg := KeyGroupOf(k); kg >= lo && kg < hi {
			out = append(out, k)
		}
	}
	if len(out) < n {
		t.Fatalf("no %d keys in key groups [%d,%d)", n, lo, hi)
	}
	return out
}

func vtKeyed(op uint64, slot string, userKey []byte, value string) Row {
	return Row{Op: op, Key: EncodeKeyedKey([]byte(slot), userKey), Value: []byte(value)}
}

func vtOperator(op uint64, logical string, value []byte) Row {
	return Row{Op: op, Key: append([]byte{0xff}, logical...), Value: value}
}

func vtI64(v int64) []byte {
	b := make([]byte, 8)
	for i := range b {
		b[i] = byte(uint64(v) >> (8 * i))
	}
	return b
}

// vtWriteTree writes a file-backend tree v1/<i>/checkpoint-7.snap for the
// given subtasks (0..len-1) with a COMPLETED marker of job "job1".
// vtTwoSubtasks is the files of a tree of two subtasks at parallelism 2,
// each with one keyed row of operator 5 in its own key-group range.
func vtTwoSubtasks(t testing.TB) [][]Row {
	t.Helper()
	r0, r1 := KeyGroupRangeForSubtask(0, 2), KeyGroupRangeForSubtask(1, 2)
	return [][]Row{
		{vtKeyed(5, "agg", vtKeysIn(t, r0.First, r0.Last, 1)[0], "v")},
		{vtKeyed(5, "agg", vtKeysIn(t, r1.First, r1.Last, 1)[0], "v")},
	}
}

func vtWriteTree(t testing.TB, files [][]Row, versions []VersionMap) string {
	t.Helper()
	return vtWriteTreeWith(t, files, versions, SnapshotOptions{})
}

// vtWriteTreeAsIs is vtWriteTree with each file's rows stored as given
// (their order and duplicates kept).
func vtWriteTreeAsIs(t testing.TB, files [][]Row) string {
	t.Helper()
	return vtWriteTreeWith(t, files, nil, SnapshotOptions{AsIs: true})
}

func vtWriteTreeWith(t testing.TB, files [][]Row, versions []VersionMap, opts SnapshotOptions) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "tree")
	tw, err := CreateTree(out, TreeOptions{Generation: 1, Checkpoint: 7})
	if err != nil {
		t.Fatal(err)
	}
	for i, rows := range files {
		var vm VersionMap
		if versions != nil {
			vm = versions[i]
		}
		if !opts.AsIs {
			rows = Logical(rows)
		}
		if _, err := tw.WriteSubtaskWith(i, CanonicalMetadata(nil, vm), RowSlice(rows), opts); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Commit("job1", nil); err != nil {
		t.Fatal(err)
	}
	return out
}

func vtPayload(tree string, i int) string {
	return filepath.Join(tree, "v1", strconv.Itoa(i), "checkpoint-7.snap")
}

// vtRawStream encodes rows as a canonical stream exactly as given (no
// sorting, duplicates kept), with format version metadata.
func vtRawStream(t testing.TB, rows []Row) []byte {
	t.Helper()
	md := arrow.NewMetadata([]string{MetaFormatVersion}, []string{"1"})
	schema := arrow.NewSchema(canonicalFields, &md)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer rb.Release()
	for _, r := range rows {
		rb.Field(0).(*array.Uint64Builder).Append(r.Op)
		rb.Field(1).(*array.BinaryBuilder).Append(r.Key)
		rb.Field(2).(*array.BinaryBuilder).Append(r.Value)
	}
	return vtWriteRecord(t, schema, rb)
}

// vtChangelogStream encodes a changelog blob: kinds[i] is row i's row_kind.
func vtChangelogStream(t testing.TB, kinds []uint8, rows []Row) []byte {
	t.Helper()
	entries := make([]ChangelogEntry, len(rows))
	for i, r := range rows {
		entries[i] = ChangelogEntry{Kind: kinds[i], Row: r}
	}
	var b bytes.Buffer
	if err := EncodeChangelog(&b, entries); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func vtWriteRecord(t testing.TB, schema *arrow.Schema, rb *array.RecordBuilder) []byte {
	rec := rb.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// vtReplace writes data as path with a valid sidecar for checkpoint 7.
func vtReplace(t testing.TB, path string, data []byte, sidecar bool) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if sidecar {
		if err := os.WriteFile(path+".meta", NewSidecar(7, data).Marshal(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// vtRowIndex returns the index of (op, key) in file f's rows.
func vtRowIndex(t testing.TB, f *File, op uint64, key []byte) int {
	t.Helper()
	for i, r := range vtRows(f) {
		if r.Op == op && bytes.Equal(r.Key, key) {
			return i
		}
	}
	t.Fatalf("%s holds no row (%d, %x)", f.Rel, op, key)
	return -1
}

// vtRows returns a file's stored rows, in stream order.
func vtRows(f *File) []Row {
	var rows []Row
	f.Snapshot.EachRow(func(_ int, r Row) bool {
		rows = append(rows, r)
		return true
	})
	return rows
}

// vtWant is a finding vtExpect wants: compared on severity, check, file,
// row, op and key, its message containing every fragment of frags.
type vtWant struct {
	sev   Severity
	check string
	file  string
	row   int
	op    uint64
	key   []byte
	frags []string
}

// vtExpect fails unless the report's findings are exactly want, in order.
func vtExpect(t testing.TB, rep *Report, want []vtWant) {
	t.Helper()
	if len(rep.Findings) != len(want) {
		t.Fatalf("%d findings, want %d:\n%s", len(rep.Findings), len(want), vtDump(rep))
	}
	for i, w := range want {
		f := rep.Findings[i]
		if f.Severity != w.sev || f.Check != w.check || f.File != w.file || f.Row != w.row || f.Op != w.op || !bytes.Equal(f.Key, w.key) {
			t.Errorf("finding %d = %s %s %s row %d op %d key %x; want %s %s %s row %d op %d key %x\n%s",
				i, f.Severity, f.Check, f.File, f.Row, f.Op, f.Key, w.sev, w.check, w.file, w.row, w.op, w.key, vtDump(rep))
			continue
		}
		for _, fr := range w.frags {
			if !strings.Contains(f.Message, fr) {
				t.Errorf("finding %d message %q lacks %q", i, f.Message, fr)
			}
		}
	}
}

func TestValidateMisplacedAndStaleRows(t *testing.T) {
	const op = 7
	low := vtKeysIn(t, 0, 64, 2)
	high := vtKeysIn(t, 64, 128, 3)
	lost := vtKeyed(op, "agg", high[0], "lost")
	stale := vtKeyed(op, "agg", high[1], "old")
	owner := vtKeyed(op, "agg", high[1], "new")
	inflight := Row{Op: 42, Key: []byte("__broadcast_main_inflight__"), Value: []byte("buf")}
	tree := vtWriteTree(t, [][]Row{
		{vtKeyed(op, "agg", low[0], "a"), vtKeyed(op, "agg", low[1], "b"), lost, stale, inflight},
		{owner, vtKeyed(op, "agg", high[2], "c")},
	}, nil)
	sp := vtOpen(t, tree, OpenOptions{Groups: []Group{{First: 0, Count: 2}}})
	f0 := sp.File(0)
	rep := Validate(sp, ValidateOptions{})
	want := []vtWant{
		{SeverityError, CheckMisplacedRow, "v1/0/checkpoint-7.snap", vtRowIndex(t, f0, op, lost.Key), op, lost.Key,
			[]string{"lost on restore", fmt.Sprintf("key group %d lies outside subtask 0's range [0,64)", KeyGroupOf(high[0])), "its owner, subtask 1, holds no copy"}},
		{SeverityWarning, CheckStaleCopy, "v1/0/checkpoint-7.snap", vtRowIndex(t, f0, op, stale.Key), op, stale.Key,
			[]string{"stale copy", "the owner's copy in subtask 1 is restored"}},
		{SeverityError, CheckMisplacedRow, "v1/0/checkpoint-7.snap", vtRowIndex(t, f0, 42, inflight.Key), 42, inflight.Key,
			[]string{"key group 95 (a legacy raw key, filtered by its first byte)", "a narrowed restore drops it here"}},
	}
	slices.SortStableFunc(want, func(a, b vtWant) int { return a.row - b.row })
	vtExpect(t, rep, want)
	if rep.Errors() != 2 || rep.Warnings() != 1 {
		t.Errorf("errors %d warnings %d, want 2 and 1", rep.Errors(), rep.Warnings())
	}

	// The histogram leaves both copies outside their owner's range out.
	if kg := Summarize(sp).KeyGroups; kg.Rows != 4 || kg.StaleCopies != 1 || kg.Lost != 1 {
		t.Errorf("histogram rows %d stale %d lost %d, want 4, 1, 1", kg.Rows, kg.StaleCopies, kg.Lost)
	}

	// A single file has no placement to check.
	single := vtOpen(t, vtPayload(tree, 0), OpenOptions{})
	if got := Validate(single, ValidateOptions{}); got.Errors() != 0 || len(got.ByCheck(CheckStaleCopy)) != 0 {
		t.Errorf("single file:\n%s", vtDump(got))
	}
}

// TestValidateOperatorGroups: an operator runs in one chain group, so its
// keyed rows in another group's files are never read by it, though each
// fits the key-group range of the file holding it (as when --groups names
// a layout the files do not follow): an error for each such file, the
// operator taken to run in the group holding most of its keyed state.
func TestValidateOperatorGroups(t *testing.T) {
	lo, hi := vtKeysIn(t, 0, 64, 2), vtKeysIn(t, 64, 128, 2)
	tree := vtWriteTree(t, [][]Row{
		{vtKeyed(42, "agg", lo[0], "a"), vtKeyed(77, "win", lo[1], "stray")},
		{vtKeyed(42, "agg", hi[0], "b")},
		{vtKeyed(77, "win", lo[0], "c")},
		{vtKeyed(77, "win", hi[1], "d")},
	}, nil)
	sp := vtOpen(t, tree, OpenOptions{Groups: []Group{{0, 2}, {2, 2}}})
	vtExpect(t, Validate(sp, ValidateOptions{}), []vtWant{
		{SeverityError, CheckOperatorGroups, "v1/0/checkpoint-7.snap", -1, 0, nil,
			[]string{"holds keyed rows of op 77, which the files of chain group 2-3 (subtasks 2-3) hold too", "the copies in chain group 0-1 are never read by op 77"}},
	})
	// The same files read as one group of four: every operator in one
	// group, the rows checked against that group's ranges instead.
	if rep := Validate(vtOpen(t, tree, OpenOptions{Groups: []Group{{0, 4}}}), ValidateOptions{}); len(rep.ByCheck(CheckOperatorGroups)) != 0 {
		t.Errorf("one group:\n%s", vtDump(rep))
	}
}

func TestValidateKeyGroupByte(t *testing.T) {
	good := vtKeyed(7, "agg", []byte("alpha"), "1") // kg 43
	bad := vtKeyed(7, "agg", []byte("beta"), "2")   // kg 39, stored as 40
	bad.Key = bytes.Clone(bad.Key)
	bad.Key[0] = 40
	path := filepath.Join(t.TempDir(), "checkpoint-7.snap")
	if _, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), []Row{good, bad}, SnapshotOptions{Sidecar: true, CheckpointID: 7}); err != nil {
		t.Fatal(err)
	}
	// A legacy raw key holding '|' parses as a keyed row of a wrong
	// key-group byte (format 2.5): a warning, since a restore keeps it
	// under its first byte and operator code reads it whole.
	raw := Row{Op: 7, Key: []byte("__inflight|left"), Value: []byte("x")}
	if _, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), []Row{good, bad, raw}, SnapshotOptions{Sidecar: true, CheckpointID: 7}); err != nil {
		t.Fatal(err)
	}
	sp := vtOpen(t, path, OpenOptions{})
	rep := Validate(sp, ValidateOptions{})
	want := []vtWant{
		{SeverityError, CheckKeyGroup, "checkpoint-7.snap", vtRowIndex(t, sp.Files[0], 7, bad.Key), 7, bad.Key,
			[]string{"stored key-group byte 40", "hashes to key group 39"}},
	}
	if KeyGroupOf([]byte("left")) != int('_') {
		want = append(want, vtWant{SeverityWarning, CheckKeyGroup, "checkpoint-7.snap", vtRowIndex(t, sp.Files[0], 7, raw.Key), 7, raw.Key,
			[]string{"stored key-group byte 95", "or it is a legacy raw key that holds '|'"}})
	}
	vtExpect(t, rep, want)
}

// A timer blob of a single file that does not decode is an error, as it is
// in a tree: a restore cannot read its timers. One that decodes is not; one
// with bytes after its timers is a warning, as a restore ignores them.
// The legacy unprefixed blob (a raw row get_operator_state falls back to)
// is checked as the prefixed one is.
func TestValidateFileTimerBlob(t *testing.T) {
	for _, key := range []string{"\xff__clink_timers", "__clink_timers", "__clink_timers0"} {
		t.Run(fmt.Sprintf("%q", key), func(t *testing.T) {
			good := Row{Op: 7, Key: []byte(key), Value: EncodeTimers(nil, []Timer{{Time: 3, Key: []byte("k")}})}
			bad := Row{Op: 8, Key: []byte(key), Value: EncodeTimers(nil, []Timer{{Time: 3, Key: []byte("k")}})}
			bad.Value = bad.Value[:len(bad.Value)-2]
			trailing := Row{Op: 9, Key: []byte(key), Value: append(EncodeTimers(nil, []Timer{{Time: 3, Key: []byte("k")}}), 0)}
			path := filepath.Join(t.TempDir(), "checkpoint-7.snap")
			if _, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), []Row{good, bad, trailing}, SnapshotOptions{Sidecar: true, CheckpointID: 7}); err != nil {
				t.Fatal(err)
			}
			sp := vtOpen(t, path, OpenOptions{})
			vtExpect(t, Validate(sp, ValidateOptions{}), []vtWant{
				{SeverityError, CheckTimers, "checkpoint-7.snap", vtRowIndex(t, sp.Files[0], 8, bad.Key), 8, bad.Key,
					[]string{"op 8 timer blob " + RenderKey(bad.Key), "does not decode", "a restore cannot read its timers"}},
				{SeverityWarning, CheckTimers, "checkpoint-7.snap", vtRowIndex(t, sp.Files[0], 9, trailing.Key), 9, trailing.Key,
					[]string{"op 9 timer blob " + RenderKey(trailing.Key), "holds 1 byte after its timers, which a restore ignores"}},
			})
		})
	}
}

// A row whose first key byte is 0x80-0xfe is restored as operator state,
// but no operator reads it: a warning. 0xff rows are not flagged.
func TestValidateOperatorKeyByte(t *testing.T) {
	odd := Row{Op: 7, Key: []byte("\x80abc"), Value: []byte("v")}
	ok := vtOperator(7, "abc", []byte("v"))
	path := filepath.Join(t.TempDir(), "checkpoint-7.snap")
	if _, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), []Row{odd, ok}, SnapshotOptions{Sidecar: true, CheckpointID: 7}); err != nil {
		t.Fatal(err)
	}
	sp := vtOpen(t, path, OpenOptions{})
	vtExpect(t, Validate(sp, ValidateOptions{}), []vtWant{
		{SeverityWarning, CheckOperatorKeyByte, "checkpoint-7.snap", vtRowIndex(t, sp.Files[0], 7, odd.Key), 7, odd.Key,
			[]string{"first key byte 0x80", "no operator reads it"}},
	})
}

func TestValidateSidecars(t *testing.T) {
	rows := [][]Row{{vtKeyed(7, "agg", vtKeysIn(t, 0, 64, 1)[0], "a")}, {vtKeyed(7, "agg", vtKeysIn(t, 64, 128, 1)[0], "b")}}
	tree := vtWriteTree(t, rows, nil)
	// Subtask 0: a sidecar declaring the wrong checksum; subtask 1: none.
	data, err := os.ReadFile(vtPayload(tree, 0))
	if err != nil {
		t.Fatal(err)
	}
	sc := NewSidecar(7, data)
	sc.PayloadCRC32C++
	if err := os.WriteFile(vtPayload(tree, 0)+".meta", sc.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(vtPayload(tree, 1) + ".meta"); err != nil {
		t.Fatal(err)
	}
	rep := Validate(vtOpen(t, tree, OpenOptions{}), ValidateOptions{})
	vtExpect(t, rep, []vtWant{
		{SeverityError, CheckSidecar, "v1/0/checkpoint-7.snap", -1, 0, nil, []string{"sidecar verdict corrupt", "checksum mismatch", "clink's restore refuses this payload"}},
		{SeverityError, CheckSidecar, "v1/1/checkpoint-7.snap", -1, 0, nil, []string{"sidecar verdict incomplete", "no integrity sidecar"}},
	})

	// A single file: no sidecar is info, a bad one an error.
	single := vtOpen(t, vtPayload(tree, 1), OpenOptions{})
	vtExpect(t, Validate(single, ValidateOptions{}), []vtWant{
		{SeverityInfo, CheckSidecar, "checkpoint-7.snap", -1, 0, nil, []string{"no .meta sidecar"}},
	})
	single = vtOpen(t, vtPayload(tree, 0), OpenOptions{})
	vtExpect(t, Validate(single, ValidateOptions{}), []vtWant{
		{SeverityError, CheckSidecar, "checkpoint-7.snap", -1, 0, nil, []string{"sidecar verdict corrupt"}},
	})
}

func TestValidateCompletedMarker(t *testing.T) {
	rows := [][]Row{{vtKeyed(7, "agg", vtKeysIn(t, 0, 64, 1)[0], "a")}, {vtKeyed(7, "agg", vtKeysIn(t, 64, 128, 1)[0], "b")}}
	tree := vtWriteTree(t, rows, nil)
	marker := filepath.Join(tree, "_jobs", "job1", "COMPLETED-7")

	// As written: the marker lists both subtasks; nothing to say.
	sp := vtOpen(t, tree, OpenOptions{})
	if rep := Validate(sp, ValidateOptions{}); len(rep.Findings) != 0 {
		t.Fatalf("clean tree:\n%s", vtDump(rep))
	}

	// A marker of a newer checkpoint whose files the generation lacks: a
	// restore of the job's latest completed checkpoint would fail; the
	// checkpoint read is the newest the tree holds, and says so.
	newer := filepath.Join(tree, "_jobs", "job1", "COMPLETED-8")
	if err := os.WriteFile(newer, []byte("job=job1\ncheckpoint=8\ngeneration=1\nsubtasks=0,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	withNewer := vtOpen(t, tree, OpenOptions{})
	if withNewer.Checkpoint != 7 || !slices.Equal(withNewer.NewerCompleted, []string{"_jobs/job1/COMPLETED-8"}) {
		t.Fatalf("checkpoint %d, newer markers %q", withNewer.Checkpoint, withNewer.NewerCompleted)
	}
	vtExpect(t, Validate(withNewer, ValidateOptions{}), []vtWant{
		{SeverityWarning, CheckCompleted, "", -1, 0, nil, []string{"_jobs/job1/COMPLETED-8 marks a checkpoint newer than 7 complete, but v1 holds none of its files", "checkpoint 7 was checked"}},
	})
	if err := os.Remove(newer); err != nil {
		t.Fatal(err)
	}

	// A listed subtask with no directory (Open refuses such a marker, so
	// the Savepoint is changed after opening).
	c := *sp.Completed
	c.Subtasks = []int{0, 1, 2}
	sp.Completed = &c
	vtExpect(t, Validate(sp, ValidateOptions{}), []vtWant{
		{SeverityError, CheckCompleted, "", -1, 0, nil, []string{"_jobs/job1/COMPLETED-7 lists subtask 2, but v1 has no directory 2"}},
	})

	// A present subtask not listed, and a generation that differs.
	if err := os.WriteFile(marker, []byte("job=job1\ncheckpoint=7\ngeneration=2\nsubtasks=0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	vtExpect(t, Validate(vtOpen(t, tree, OpenOptions{}), ValidateOptions{}), []vtWant{
		{SeverityWarning, CheckCompleted, "", -1, 0, nil, []string{"generation=2", "generation v1"}},
		{SeverityWarning, CheckCompleted, "v1/1/checkpoint-7.snap", -1, 0, nil, []string{"does not list its subtask", "is left out", "does not union its operator rows"}},
	})

	// A second job's marker of the same checkpoint, listing a subtask the
	// tree lacks: clink applies no listing then, and neither does Open nor
	// validate, which warns of the markers.
	other := filepath.Join(tree, "_jobs", "job2", "COMPLETED-7")
	if err := os.MkdirAll(filepath.Dir(other), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(marker, []byte("job=job1\ncheckpoint=7\ngeneration=1\nsubtasks=0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, []byte("job=job2\ncheckpoint=7\ngeneration=1\nsubtasks=0,1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	vtExpect(t, Validate(vtOpen(t, tree, OpenOptions{}), ValidateOptions{}), []vtWant{
		{SeverityWarning, CheckCompleted, "", -1, 0, nil, []string{"2 COMPLETED-7 markers (_jobs/job1/COMPLETED-7, _jobs/job2/COMPLETED-7)", "only when exactly one marker exists"}},
	})
	if err := os.RemoveAll(filepath.Dir(other)); err != nil {
		t.Fatal(err)
	}

	// An empty subtasks= line: clink unions no subtask's operator rows
	// into another's restore, where sptool reads every directory.
	if err := os.WriteFile(marker, []byte("job=job1\ncheckpoint=7\ngeneration=1\nsubtasks=\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	vtExpect(t, Validate(vtOpen(t, tree, OpenOptions{}), ValidateOptions{}), []vtWant{
		{SeverityWarning, CheckCompleted, "", -1, 0, nil, []string{"_jobs/job1/COMPLETED-7 lists no subtask", "unions no other subtask's operator rows"}},
	})

	// No marker at all.
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	vtExpect(t, Validate(vtOpen(t, tree, OpenOptions{}), ValidateOptions{}), []vtWant{
		{SeverityInfo, CheckCompleted, "", -1, 0, nil, []string{"no COMPLETED-7 marker"}},
	})
}

// A subtask directory that lacks the checkpoint is left out when the
// checkpoint's only marker does not list it (a leftover of another layout,
// which no restore reads), and refused otherwise.
func TestUnlistedDirectoryWithoutCheckpoint(t *testing.T) {
	rows := [][]Row{{vtKeyed(7, "agg", vtKeysIn(t, 0, 64, 1)[0], "a")}, {vtKeyed(7, "agg", vtKeysIn(t, 64, 128, 1)[0], "b")}}
	tree := vtWriteTree(t, rows, nil)
	left := filepath.Join(tree, "v1", "2")
	if err := os.Mkdir(left, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(tree, "v1", "0", "checkpoint-7.snap"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(left, "checkpoint-3.snap"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	sp := vtOpen(t, tree, OpenOptions{})
	if len(sp.Files) != 2 || !slices.ContainsFunc(sp.Notes, func(n string) bool {
		return strings.Contains(n, "subtask directory 2 holds no checkpoint 7 and _jobs/job1/COMPLETED-7 does not list it: left out")
	}) {
		t.Errorf("%d files, notes %q", len(sp.Files), sp.Notes)
	}
	if rep := Validate(sp, ValidateOptions{}); rep.Errors() != 0 {
		t.Errorf("validate:\n%s", vtDump(rep))
	}
	// Listed, or with no marker to say, the directory is one a restore
	// reads: the tree is refused.
	marker := filepath.Join(tree, "_jobs", "job1", "COMPLETED-7")
	for _, body := range []string{"job=job1\ncheckpoint=7\ngeneration=1\nsubtasks=0,1,2\n", ""} {
		if body == "" {
			err = os.Remove(marker)
		} else {
			err = os.WriteFile(marker, []byte(body), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Open(tree, OpenOptions{Checkpoint: 7}); err == nil || !strings.Contains(err.Error(), "checkpoint 7 is missing from subtask directory 2") {
			t.Errorf("marker %q: %v", body, err)
		}
	}
}

// TestValidateMissingSubtasks: a tree whose subtasks have a gap is an
// error naming the missing ones, and no chain group spans the gap.
func TestValidateMissingSubtasks(t *testing.T) {
	var files [][]Row
	for i := range 5 {
		r := KeyGroupRangeForSubtask(i, 5)
		files = append(files, []Row{vtKeyed(7, "agg", vtKeysIn(t, r.First, r.Last, 1)[0], "v")})
	}
	tree := vtWriteTree(t, files, nil)
	for _, i := range []int{2, 3} {
		if err := os.RemoveAll(filepath.Join(tree, "v1", strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tree, "_jobs", "job1", "COMPLETED-7"), []byte("job=job1\ncheckpoint=7\ngeneration=1\nsubtasks=0,1,4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sp := vtOpen(t, tree, OpenOptions{})
	if got := sp.MissingSubtasks(); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("missing subtasks %v, want [2 3]", got)
	}
	for _, g := range sp.Groups {
		if g.Contains(1) && g.Contains(4) {
			t.Errorf("group %s spans the missing subtasks", FormatGroups([]Group{g}))
		}
	}
	rep := Validate(sp, ValidateOptions{})
	var found bool
	for _, f := range rep.Findings {
		if f.Check == CheckSubtasks {
			found = f.Severity == SeverityError && strings.Contains(f.Message, "checkpoint 7 of v1 lacks subtasks 2-3 (it holds subtasks 0,1,4; subtasks 2-3 have no directory)")
		}
	}
	if !found {
		t.Errorf("no error naming the missing subtasks:\n%s", vtDump(rep))
	}
	// Its placement errors were found under inferred groups, which an info
	// names; under groups given, it does not.
	if g := rep.ByCheck(CheckGroups); len(g) != 1 || g[0].Severity != SeverityInfo || !strings.Contains(g[0].Message, "inferred from the rows, 0-1 (parallelism 2), 4 (parallelism 1)") {
		t.Errorf("groups finding %+v", g)
	}
	sp.GroupsInferred = false // as if given
	if g := Validate(sp, ValidateOptions{}).ByCheck(CheckGroups); len(g) != 0 {
		t.Errorf("groups given: %+v", g)
	}
	sp.GroupsInferred = true
	if err := sp.CheckConsecutive(); err == nil || !strings.Contains(err.Error(), "it holds 0,1,4; subtasks 2-3 have no directory") {
		t.Errorf("CheckConsecutive: %v", err)
	}
	whole := vtOpen(t, vtWriteTree(t, files, nil), OpenOptions{})
	if got := whole.MissingSubtasks(); got != nil {
		t.Errorf("a whole tree: missing %v", got)
	}
	if err := whole.CheckConsecutive(); err != nil {
		t.Errorf("a whole tree: %v", err)
	}
}

// clink reads subtask i from v<G>/<i>, the index in decimal: a directory
// 01 holds state no restore of subtask 1 finds, which is an error, and so
// does a file checkpoint-007.snap, not the checkpoint-7.snap it opens. A
// generation named with leading zeros (v01) is refused when opening the
// checkpoint directory, naming the directory clink reads instead.
func TestValidateDirectoryNames(t *testing.T) {
	r := vtKeyed(7, "agg", []byte("alpha"), "1") // kg 43: subtask 0 of 2
	tree := vtWriteTree(t, [][]Row{{r}, {}}, nil)
	if err := os.Rename(filepath.Join(tree, "v1", "1"), filepath.Join(tree, "v1", "01")); err != nil {
		t.Fatal(err)
	}
	sp := vtOpen(t, tree, OpenOptions{})
	vtExpect(t, Validate(sp, ValidateOptions{}), []vtWant{
		{SeverityError, CheckSubtasks, "v1/01/checkpoint-7.snap", -1, 0, nil, []string{"directory 01 holds subtask 1's state, but clink reads subtask 1 from v1/1", "rename it to 1"}},
	})
	// The file of the checkpoint, named with leading zeros: read as
	// checkpoint 7, it is not the file clink opens (section 5.1).
	for _, ext := range []string{".snap", ".snap.meta"} {
		if err := os.Rename(filepath.Join(tree, "v1", "0", "checkpoint-7"+ext), filepath.Join(tree, "v1", "0", "checkpoint-007"+ext)); err != nil {
			t.Fatal(err)
		}
	}
	sp = vtOpen(t, tree, OpenOptions{})
	vtExpect(t, Validate(sp, ValidateOptions{}), []vtWant{
		{SeverityError, CheckSubtasks, "v1/0/checkpoint-007.snap", -1, 0, nil, []string{"file checkpoint-007.snap holds checkpoint 7's state, but clink opens checkpoint-7.snap", "rename it to checkpoint-7.snap"}},
		{SeverityError, CheckSubtasks, "v1/01/checkpoint-7.snap", -1, 0, nil, []string{"directory 01 holds subtask 1's state, but clink reads subtask 1 from v1/1", "rename it to 1"}},
	})
	if err := os.Rename(filepath.Join(tree, "v1"), filepath.Join(tree, "v01")); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(tree, OpenOptions{}); err == nil || !strings.Contains(err.Error(), "a directory names generation 1 with leading zeros, but clink reads generation 1 from v1 (section 5.3), which does not exist") {
		t.Errorf("open with v01: %v", err)
	}
}

// Beside the name clink opens, a subtask directory or payload named with
// leading zeros (01 beside 1, checkpoint-007.snap beside checkpoint-7.snap)
// is left out, as clink leaves it, and validate warns of it: the tree is
// read, not refused. Two such names and none clink opens are an error.
func TestShadowedNames(t *testing.T) {
	r := vtKeyed(7, "agg", []byte("alpha"), "1") // kg 43: subtask 0 of 2
	tree := vtWriteTree(t, [][]Row{{r}, {}}, nil)
	cp := func(from, to string) {
		t.Helper()
		if err := os.CopyFS(filepath.Join(tree, to), os.DirFS(filepath.Join(tree, from))); err != nil {
			t.Fatal(err)
		}
	}
	cp("v1/1", "v1/01")
	b, err := os.ReadFile(filepath.Join(tree, "v1", "0", "checkpoint-7.snap"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "v1", "0", "checkpoint-007.snap"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	sp := vtOpen(t, tree, OpenOptions{})
	if len(sp.Files) != 2 || sp.Files[0].Rel != filepath.FromSlash("v1/0/checkpoint-7.snap") || sp.Files[1].Rel != filepath.FromSlash("v1/1/checkpoint-7.snap") {
		t.Fatalf("files %v", sp.Files)
	}
	vtExpect(t, Validate(sp, ValidateOptions{}), []vtWant{
		{SeverityWarning, CheckSubtasks, "", -1, 0, nil, []string{"payload v1/0/checkpoint-007.snap is not read", "what v1/0/checkpoint-7.snap names, which clink opens (section 5.1)"}},
		{SeverityWarning, CheckSubtasks, "", -1, 0, nil, []string{"subtask directory v1/01 is not read", "what v1/1 names, from which clink restores the subtask's own state (section 5.3)", "a restore unions the operator rows of every numeric directory into every other subtask, this one's too"}},
	})
	cp("v1/1", "v1/001")
	if err := os.RemoveAll(filepath.Join(tree, "v1", "1")); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(tree, OpenOptions{}); err == nil || !strings.Contains(err.Error(), `directories "001", "01" all name subtask 1, and clink reads none of them`) {
		t.Errorf("open with 001 and 01: %v", err)
	}
	// The payloads of two backends for one checkpoint: which one the job
	// wrote is its setting, which the tree does not hold.
	if err := os.RemoveAll(filepath.Join(tree, "v1", "01")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "v1", "0", "changelog-7.snap"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(tree, OpenOptions{}); err == nil || !strings.Contains(err.Error(), "holds changelog-7.snap and checkpoint-007.snap and checkpoint-7.snap, which all name checkpoint 7: payloads of two backends (clink's file backend reads checkpoint-7.snap, its changelog+file backend changelog-7.snap), and sptool does not guess") {
		t.Errorf("open with changelog-7.snap beside checkpoint-7.snap: %v", err)
	}
}

// Beside the generations a tree holds, one named with leading zeros is
// ignored, and the note names it as it is (not as the generation clink
// reads), whether it is the highest number or an older one.
func TestOpenNotesGenerationNames(t *testing.T) {
	tree := vtWriteTree(t, [][]Row{{vtKeyed(7, "agg", []byte("alpha"), "1")}}, nil)
	for _, d := range []string{"v01", "v0", "v002"} {
		if err := os.Mkdir(filepath.Join(tree, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// v002 names generation 2, which is not there as v2: refused.
	if _, err := Open(tree, OpenOptions{}); err == nil || !strings.Contains(err.Error(), "clink reads generation 2 from v2 (section 5.3), which does not exist") {
		t.Fatalf("open with v002: %v", err)
	}
	if err := os.Remove(filepath.Join(tree, "v002")); err != nil {
		t.Fatal(err)
	}
	sp := vtOpen(t, tree, OpenOptions{})
	want := []string{
		"older generation v0 ignored (the highest, v1, is read)",
		"v01 ignored: it names generation 1 with leading zeros, and clink reads generation 1 from v1 only (section 5.3)",
	}
	if !slices.Equal(sp.Notes, want) {
		t.Errorf("notes:\n%s\nwant:\n%s", strings.Join(sp.Notes, "\n"), strings.Join(want, "\n"))
	}
}

// clink looks for _jobs/<job>/COMPLETED-<id> with the id in decimal
// (format 5.3, 5.5): a marker named with leading zeros is none it finds,
// so its subtasks= line does not apply and it picks no checkpoint.
func TestOpenMarkerNameWithLeadingZeros(t *testing.T) {
	r := vtKeyed(7, "agg", []byte("alpha"), "1")
	tree := vtWriteTree(t, [][]Row{{r}, {}}, nil)
	jobs := filepath.Join(tree, "_jobs", "job1")
	if err := os.Rename(filepath.Join(jobs, "COMPLETED-7"), filepath.Join(jobs, "COMPLETED-07")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(jobs, "COMPLETED-07"), []byte("job=job1\ncheckpoint=7\ngeneration=1\nsubtasks=0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sp := vtOpen(t, tree, OpenOptions{})
	if sp.Completed != nil || sp.Job != "" {
		t.Errorf("COMPLETED-07 read as the marker of checkpoint 7 (%s, job %q)", sp.CompletedRel, sp.Job)
	}
	if len(sp.Files) != 2 {
		t.Errorf("read %d files, want 2 (no marker's subtasks= line applies)", len(sp.Files))
	}
	found := false
	for _, n := range sp.Notes {
		found = found || strings.Contains(n, "COMPLETED-07") && strings.Contains(n, "ignored")
	}
	if !found {
		t.Errorf("no note of the ignored marker: %q", sp.Notes)
	}
}

// A job resubmitted at parallelism m gives every chain group m indices, in
// order (format 5.1): a later group's subtasks read the directories at its
// new indices, not its own files (6.2), and lose the keyed rows those do
// not hold.
func TestValidateParallelismMovesLaterGroups(t *testing.T) {
	a := vtKeyed(7, "agg", vtKeysIn(t, 0, 32, 1)[0], "a")
	b := vtKeyed(8, "agg", vtKeysIn(t, 0, 32, 1)[0], "b")
	// Group 0-1 holds op 7, group 2-3 op 8, each row in its owner's file.
	tree := vtWriteTree(t, [][]Row{{a}, {}, {b}, {}}, nil)
	sp := vtOpen(t, tree, OpenOptions{Groups: []Group{{0, 2}, {2, 2}}})
	if rep := Validate(sp, ValidateOptions{Parallelism: 2}); rep.Errors() != 0 {
		t.Fatalf("at its own parallelism:\n%s", vtDump(rep))
	}
	// At 4, group 2-3 becomes 4-7: its subtask 0 reads v1/4, which does
	// not exist, so op 8's row is lost; op 7's row stays in v1/0.
	rep := Validate(sp, ValidateOptions{Parallelism: 4})
	var lostA, lostB, moved bool
	for _, f := range rep.Findings {
		if f.Check != CheckParallelism || f.Severity != SeverityError {
			continue
		}
		lostA = lostA || f.Op == 7 && f.Row >= 0
		lostB = lostB || f.Op == 8 && f.Row >= 0
		moved = moved || strings.Contains(f.Message, "chain group 2-3 starts at subtask 4 at parallelism 4")
	}
	if lostA || !lostB || !moved {
		t.Errorf("op 7's row lost %v (want false), op 8's %v (want true), group move said %v (want true):\n%s", lostA, lostB, moved, vtDump(rep))
	}
}

func TestValidateParallelism(t *testing.T) {
	const op = 7
	q := [4][][]byte{vtKeysIn(t, 0, 32, 1), vtKeysIn(t, 32, 64, 1), vtKeysIn(t, 64, 96, 1), vtKeysIn(t, 96, 128, 1)}
	r := func(i int) Row { return vtKeyed(op, "agg", q[i][0], "v") }
	// A tree laid out at parallelism 2: subtask 0 holds [0,64), subtask 1 [64,128).
	tree := vtWriteTree(t, [][]Row{{r(0), r(1)}, {r(2), r(3)}}, nil)
	sp := vtOpen(t, tree, OpenOptions{Groups: []Group{{0, 2}}})
	f0, f1 := sp.File(0), sp.File(1)
	f0n, f1n := "v1/0/checkpoint-7.snap", "v1/1/checkpoint-7.snap"

	if rep := Validate(sp, ValidateOptions{Parallelism: 2}); len(rep.Findings) != 0 {
		t.Fatalf("at its own parallelism:\n%s", vtDump(rep))
	}

	// At 4: two files too few; subtask 0 keeps only [0,32), subtask 1 only [32,64).
	rep := Validate(sp, ValidateOptions{Parallelism: 4})
	want := []vtWant{
		{SeverityError, CheckParallelism, "", -1, 0, nil, []string{"the tree has 2 subtask files; a job at parallelism 4 restores 4"}},
		{SeverityError, CheckParallelism, f0n, vtRowIndex(t, f0, op, r(1).Key), op, r(1).Key, []string{"outside subtask 0's range [0,32) at parallelism 4", "subtask 1, which owns it there, holds no copy"}},
		{SeverityError, CheckParallelism, f1n, vtRowIndex(t, f1, op, r(2).Key), op, r(2).Key, []string{"outside subtask 1's range [32,64) at parallelism 4", "subtask 2, which owns it there"}},
		{SeverityError, CheckParallelism, f1n, vtRowIndex(t, f1, op, r(3).Key), op, r(3).Key, []string{"outside subtask 1's range [32,64) at parallelism 4", "subtask 3, which owns it there"}},
	}
	slices.SortStableFunc(want[1:], func(a, b vtWant) int {
		if a.file != b.file {
			return strings.Compare(a.file, b.file)
		}
		return a.row - b.row
	})
	vtExpect(t, rep, want)

	// At 1: subtask 1 does not exist any more and subtask 0 holds none of its rows.
	rep = Validate(sp, ValidateOptions{Parallelism: 1})
	want = []vtWant{
		{SeverityError, CheckParallelism, "", -1, 0, nil, []string{"the tree has 2 subtask files; a job at parallelism 1 restores 1"}},
		{SeverityError, CheckParallelism, f1n, vtRowIndex(t, f1, op, r(2).Key), op, r(2).Key, []string{"in subtask 1, which does not exist at parallelism 1"}},
		{SeverityError, CheckParallelism, f1n, vtRowIndex(t, f1, op, r(3).Key), op, r(3).Key, []string{"in subtask 1, which does not exist at parallelism 1"}},
	}
	slices.SortStableFunc(want[1:], func(a, b vtWant) int { return a.row - b.row })
	vtExpect(t, rep, want)

	// A copy in the file that owns the row at the target parallelism is a stale copy there.
	tree = vtWriteTree(t, [][]Row{{r(0), r(1)}, {r(1), r(2), r(3)}}, nil)
	sp = vtOpen(t, tree, OpenOptions{Groups: []Group{{0, 2}}})
	rep = Validate(sp, ValidateOptions{Parallelism: 4})
	var par []Finding
	for _, f := range rep.ByCheck(CheckParallelism) {
		if f.File == f0n {
			par = append(par, f)
		}
	}
	if len(par) != 1 || par[0].Severity != SeverityWarning || !strings.Contains(par[0].Message, "stale copy at parallelism 4") {
		t.Errorf("subtask 0 findings at parallelism 4: %v", par)
	}

	// Several chain groups, each running its own operator: at 4 the
	// second group's subtasks are 4-7 (format 5.1), reading directories
	// that do not exist, so it loses every row (6.2).
	r8 := func(i int) Row { return vtKeyed(op+1, "agg", q[i][0], "v") }
	tree = vtWriteTree(t, [][]Row{{r(0), r(1)}, {r(2), r(3)}, {r8(0), r8(1)}, {r8(2), r8(3)}}, nil)
	sp = vtOpen(t, tree, OpenOptions{Groups: []Group{{0, 2}, {2, 2}}})
	if rep := Validate(sp, ValidateOptions{Parallelism: 2}); len(rep.ByCheck(CheckParallelism)) != 0 {
		t.Errorf("two groups at parallelism 2:\n%s", vtDump(rep))
	}
	rep = Validate(sp, ValidateOptions{Parallelism: 4})
	var groupErrs []string
	for _, f := range rep.ByCheck(CheckParallelism) {
		if f.File == "" {
			groupErrs = append(groupErrs, f.Message)
		}
	}
	if len(groupErrs) != 3 || !strings.HasPrefix(groupErrs[0], "chain group 0-1 has 2 subtask files") || !strings.HasPrefix(groupErrs[1], "chain group 2-3 has 2 subtask files") || !strings.HasPrefix(groupErrs[2], "chain group 2-3 starts at subtask 4 at parallelism 4") {
		t.Errorf("group findings at parallelism 4: %q", groupErrs)
	}
	if rep.Errors() != 3+3+4 {
		t.Errorf("%d errors at parallelism 4, want 10 (3 group findings, 3 rows of the first group, all 4 of the second):\n%s", rep.Errors(), vtDump(rep))
	}

	// A parallelism no job runs is an error, not a panic of ranges that
	// overflow.
	vtExpect(t, Validate(sp, ValidateOptions{Parallelism: 1 << 62}), []vtWant{
		{SeverityError, CheckParallelism, "", -1, 0, nil, []string{"parallelism 4611686018427387904: not checked, a job runs at most 65535 subtasks"}},
	})
}

func TestValidateDuplicatesOrderAndOddKeys(t *testing.T) {
	a := vtKeyed(7, "agg", []byte("alpha"), "first")   // kg 43
	a2 := vtKeyed(7, "agg", []byte("alpha"), "second") // same key
	b := vtKeyed(7, "agg", []byte("a"), "x")           // kg 12, sorts before a
	nl := vtKeyed(7, "bad\nslot", []byte("beta"), "y")
	empty := Row{Op: 7, Key: []byte{}, Value: []byte("e")}
	off9 := vtOperator(9, "__vector_source_offset__", vtI64(9))
	off5 := vtOperator(9, "__vector_source_offset__", vtI64(5))
	rows := []Row{a, off9, a2, off5, b, nl, empty}
	data := append(vtRawStream(t, rows), "junk"...)
	path := filepath.Join(t.TempDir(), "checkpoint-7.snap")
	vtReplace(t, path, data, true)
	sp := vtOpen(t, path, OpenOptions{})
	rep := Validate(sp, ValidateOptions{})
	if kg := Summarize(sp).KeyGroups; kg.Rows != 3 || kg.Counts[43] != 1 {
		t.Errorf("histogram counts the duplicate twice: %+v", kg)
	}
	const f = "checkpoint-7.snap"
	vtExpect(t, rep, []vtWant{
		{SeverityWarning, CheckTrailingBytes, f, -1, 0, nil, []string{"4 bytes after the end-of-stream marker"}},
		{SeverityWarning, CheckUnsorted, f, -1, 0, nil, []string{"first out of order: row 2"}},
		{SeverityWarning, CheckDuplicate, f, 0, 7, a.Key, []string{"stored 2 times in this file (rows 0, 2); restore keeps row 2 (keyed rows: the last in stream order wins)"}},
		{SeverityWarning, CheckDuplicate, f, 1, 9, off9.Key, []string{"stored 2 times in this file (rows 1, 3); restore keeps row 1 (operator state: the greater int64"}},
		{SeverityWarning, CheckSlotName, f, 5, 7, nl.Key, []string{`slot name 0x6261640a736c6f74 contains '\n'`}},
		{SeverityInfo, CheckZeroLengthKey, f, 6, 7, []byte{}, []string{"never filtered by key group"}},
	})
}

// A key stored many times lists its first rows and counts the others: a
// message of every row number would take megabytes for a key stored
// millions of times.
func TestValidateDuplicateRowsListed(t *testing.T) {
	var rows []Row
	for i := range 13 {
		rows = append(rows, vtKeyed(7, "agg", []byte("alpha"), strconv.Itoa(i)))
	}
	path := filepath.Join(t.TempDir(), "checkpoint-7.snap")
	vtReplace(t, path, vtRawStream(t, rows), true)
	vtExpect(t, Validate(vtOpen(t, path, OpenOptions{}), ValidateOptions{}), []vtWant{
		{SeverityWarning, CheckDuplicate, "checkpoint-7.snap", 0, 7, rows[0].Key, []string{"stored 13 times in this file (rows 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, and 3 more); restore keeps row 12"}},
	})
}

// In a sorted file whose runs the open found, the rows of a run are checked
// a block at a time: a run of one stored key-group byte whose user keys
// hash to others names each row they do, and only those, across blocks.
func TestValidateKeyGroupsOfARun(t *testing.T) {
	defer func(n int) { keyBlock = n }(keyBlock)
	keyBlock = 6 // blocks end inside the run, and inside groups of four keys
	var rows []Row
	var bad []int
	for i := range 40 {
		k := binary.BigEndian.AppendUint64(nil, uint64(i*2654435761))
		r := vtKeyed(7, "agg", k, "v")
		r.Key[0] = 9 // the stored byte of the whole run
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b Row) int { return bytes.Compare(a.Key, b.Key) })
	for i, r := range rows {
		if KeyGroupOf(r.Key[len("\x09agg|"):]) != 9 {
			bad = append(bad, i)
		}
	}
	path := filepath.Join(t.TempDir(), "checkpoint-7.snap")
	if _, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), rows, SnapshotOptions{Sidecar: true, CheckpointID: 7, AsIs: true}); err != nil {
		t.Fatal(err)
	}
	sp := vtOpen(t, path, OpenOptions{Columnar: true})
	if sp.Files[0].Snapshot.Runs() == nil {
		t.Fatal("the open found no runs: the test checks nothing of the block path")
	}
	rep := Validate(sp, ValidateOptions{Limit: 1000})
	var got []int
	for _, f := range rep.Findings {
		if f.Check == CheckKeyGroup {
			got = append(got, f.Row)
		}
	}
	if len(bad) < 30 || !slices.Equal(got, bad) {
		t.Errorf("key-group findings at rows %v, want %v", got, bad)
	}
}

func TestValidateCapsRepeatedFindings(t *testing.T) {
	var rows []Row
	for _, k := range vtKeysIn(t, 0, 127, 25) {
		r := vtKeyed(7, "agg", k, "v")
		r.Key[0]++ // every stored key-group byte off by one
		rows = append(rows, r)
	}
	path := filepath.Join(t.TempDir(), "checkpoint-7.snap")
	if _, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), rows, SnapshotOptions{Sidecar: true, CheckpointID: 7}); err != nil {
		t.Fatal(err)
	}
	sp := vtOpen(t, path, OpenOptions{})

	rep := Validate(sp, ValidateOptions{})
	if len(rep.Findings) != DefaultFindingLimit+1 || rep.Errors() != 25 {
		t.Fatalf("%d findings, %d errors; want %d and 25:\n%s", len(rep.Findings), rep.Errors(), DefaultFindingLimit+1, vtDump(rep))
	}
	last := rep.Findings[len(rep.Findings)-1]
	if last.Omitted != 5 || last.Check != CheckKeyGroup || last.Severity != SeverityError || last.Row != -1 || last.File != "checkpoint-7.snap" ||
		last.Message != "5 more key-group error findings not listed (at most 20 per check and file)" {
		t.Errorf("summary finding %+v", last)
	}
	for _, f := range rep.Findings[:DefaultFindingLimit] {
		if f.Omitted != 0 || f.Row < 0 {
			t.Errorf("listed finding %+v", f)
		}
	}

	if rep := Validate(sp, ValidateOptions{Limit: -1}); len(rep.Findings) != 25 || rep.Errors() != 25 {
		t.Errorf("unlimited: %d findings, %d errors", len(rep.Findings), rep.Errors())
	}
	if rep := Validate(sp, ValidateOptions{Limit: 3}); len(rep.Findings) != 4 || rep.Findings[3].Omitted != 22 || rep.Errors() != 25 {
		t.Errorf("limit 3:\n%s", vtDump(rep))
	}
}

func TestValidateOperatorRowDivergence(t *testing.T) {
	k0, k1 := vtKeysIn(t, 0, 64, 1)[0], vtKeysIn(t, 64, 128, 1)[0]
	const src, agg, bc = 11, 12, 13
	file := func(i int, off, kafka int64) []Row {
		k := k0
		if i == 1 {
			k = k1
		}
		// Each subtask's blob holds a timer of its own key: they differ,
		// and every timer is where a restore fires it.
		timers := EncodeTimers(nil, []Timer{{int64(i), k}})
		return []Row{
			vtKeyed(agg, "agg", k, "v"),
			vtOperator(src, "__file_source_offset__", vtI64(off)),
			vtOperator(src, "__kafka_off__:0", vtI64(kafka)),
			vtOperator(agg, "__clink_timers", timers),
			vtOperator(bc, "rules|", []byte("same")),
		}
	}
	tree := vtWriteTree(t, [][]Row{file(0, 100, 50), file(1, 700, 40)}, nil)
	rep := Validate(vtOpen(t, tree, OpenOptions{}), ValidateOptions{})
	offKey := append([]byte{0xff}, "__file_source_offset__"...)
	kafkaKey := append([]byte{0xff}, "__kafka_off__:0"...)
	timersKey := append([]byte{0xff}, "__clink_timers"...)
	vtExpect(t, rep, []vtWant{
		{SeverityWarning, CheckOffsetDivergence, "", -1, src, offKey, []string{"subtask 0: 100; subtask 1: 700", "keeps the greatest, 700 (subtask 1)", "furthest position"}},
		{SeverityInfo, CheckOperatorDivergence, "", -1, src, kafkaKey, []string{"subtask 0: 50; subtask 1: 40", "greatest signed int64, 50 (subtask 0)"}},
		// Each subtask's timer blob is its own: an info, saying what a
		// scale-down restore by clink does with them.
		{SeverityInfo, CheckOperatorDivergence, "", -1, agg, timersKey, []string{"timer blob", "subtask 0: 26 bytes 0x", "; subtask 1: 26 bytes 0x", "keeps each subtask's own copy", "scale-down restore by clink keeps one parent's blob"}},
		{SeverityWarning, CheckOperatorReplica, "", -1, 0, nil, []string{"4 operator-state keys are held by several subtask files", "3 of them with differing values"}},
	})

	// Without a divergence to warn of, replicated operator rows are still
	// a warning (the contract's).
	tree = vtWriteTree(t, [][]Row{file(0, 100, 50), file(1, 100, 40)}, nil)
	rep = Validate(vtOpen(t, tree, OpenOptions{}), ValidateOptions{})
	vtExpect(t, rep, []vtWant{
		{SeverityInfo, CheckOperatorDivergence, "", -1, src, kafkaKey, []string{"subtask 0: 50; subtask 1: 40"}},
		{SeverityInfo, CheckOperatorDivergence, "", -1, agg, timersKey, []string{"timer blob"}},
		{SeverityWarning, CheckOperatorReplica, "", -1, 0, nil, []string{"4 operator-state keys are held by several subtask files", "2 of them with differing values"}},
	})
}

// Copies of an operator key that are not all 8-byte values merge in
// subtask order pair by pair, as clink's merge does: the later copy, but
// of two 8-byte values the greater. "abc", "xyz", 3, 2: subtask 2's 3.
func TestValidateOperatorDivergenceMixedWinner(t *testing.T) {
	const op = 12
	var files [][]Row
	for i, v := range [][]byte{[]byte("abc"), []byte("xyz"), vtI64(3), vtI64(2)} {
		k := vtKeysIn(t, 32*i, 32*(i+1), 1)[0]
		files = append(files, []Row{vtKeyed(op, "agg", k, "v"), vtOperator(op, "mix", v)})
	}
	rep := Validate(vtOpen(t, vtWriteTree(t, files, nil), OpenOptions{}), ValidateOptions{})
	vtExpect(t, rep, []vtWant{
		{SeverityWarning, CheckOperatorDivergence, "", -1, op, append([]byte{0xff}, "mix"...), []string{"4 different values", "the greater of two 8-byte values, else the later copy", "subtask 2's copy wins"}},
		{SeverityWarning, CheckOperatorReplica, "", -1, 0, nil, []string{"1 operator-state key"}},
	})
}

// In a tree of two chain groups, the other group's copies of an
// operator's rows are frozen replicas that no merge takes (format 10.3):
// the copy named is the one a merge of the running group's copies keeps,
// as export and rescale keep it.
func TestValidateOperatorDivergenceFrozenReplicas(t *testing.T) {
	k0, k1 := vtKeysIn(t, 0, 64, 1)[0], vtKeysIn(t, 64, 128, 1)[0]
	const agg, sink = 12, 20
	file := func(op uint64, k []byte, wm string, cnt int64) []Row {
		return []Row{
			vtKeyed(op, "s", k, "v"),
			vtOperator(agg, "wm", []byte(wm)),
			vtOperator(agg, "cnt", vtI64(cnt)),
			vtOperator(sink, "rules|", []byte("live")),
		}
	}
	files := [][]Row{file(agg, k0, "a0", 5), file(agg, k1, "a1", 6), file(sink, k0, "b2", 9), file(sink, k1, "b3", 9)}
	files[0][3].Value, files[1][3].Value = []byte("old"), []byte("old")
	sp := vtOpen(t, vtWriteTree(t, files, nil), OpenOptions{Groups: []Group{{First: 0, Count: 2}, {First: 2, Count: 2}}})
	rep := Validate(sp, ValidateOptions{})
	vtExpect(t, rep, []vtWant{
		{SeverityWarning, CheckOperatorDivergence, "", -1, agg, append([]byte{0xff}, "wm"...), []string{"4 different values", "subtask 1's copy wins", "subtasks 2,3, in chain groups that do not run op 12, are frozen replicas"}},
		{SeverityWarning, CheckOperatorDivergence, "", -1, sink, append([]byte{0xff}, "rules|"...), []string{"2 different values", "subtask 3's copy wins", "subtasks 0,1, in chain groups that do not run op 20, are frozen replicas"}},
		{SeverityInfo, CheckOperatorDivergence, "", -1, agg, append([]byte{0xff}, "cnt"...), []string{"subtask 0: 5; subtask 1: 6; subtasks 2,3: 9", "greatest signed int64, 6 (subtask 1)", "subtasks 2,3, in chain groups that do not run op 12, are frozen replicas"}},
		{SeverityWarning, CheckOperatorReplica, "", -1, 0, nil, []string{"3 operator-state keys are held by several subtask files", "3 of them with differing values"}},
	})
}

func TestValidateVersionMapDisagreement(t *testing.T) {
	var a, b VersionMap
	if err := a.Set(VersionEntry{Op: 7, StateType: "agg_sum", Version: 1}); err != nil {
		t.Fatal(err)
	}
	if err := b.Set(VersionEntry{Op: 7, StateType: "agg_sum", Version: 2}); err != nil {
		t.Fatal(err)
	}
	rows := [][]Row{{vtKeyed(7, "agg", vtKeysIn(t, 0, 64, 1)[0], "a")}, {vtKeyed(7, "agg", vtKeysIn(t, 64, 128, 1)[0], "b")}, {vtKeyed(7, "agg", vtKeysIn(t, 64, 128, 1)[0], "b")}}
	tree := vtWriteTree(t, rows[:2], []VersionMap{a, b})
	vtExpect(t, Validate(vtOpen(t, tree, OpenOptions{}), ValidateOptions{}), []vtWant{
		{SeverityWarning, CheckVersionMapDisagreement, "", -1, 0, nil, []string{"map A (1 entry): v1/0/checkpoint-7.snap; map B (1 entry): v1/1/checkpoint-7.snap", "first non-empty input's map"}},
	})
	tree = vtWriteTree(t, rows[:2], []VersionMap{a, {}})
	vtExpect(t, Validate(vtOpen(t, tree, OpenOptions{}), ValidateOptions{}), []vtWant{
		{SeverityWarning, CheckVersionMapDisagreement, "", -1, 0, nil, []string{"map A (1 entry): v1/0/checkpoint-7.snap; no map: v1/1/checkpoint-7.snap", "reads every stamp as version 1"}},
	})
}

func TestValidateFormat(t *testing.T) {
	k0, k1 := vtKeysIn(t, 0, 64, 1)[0], vtKeysIn(t, 64, 128, 1)[0]
	out := filepath.Join(t.TempDir(), "tree")
	tw, err := CreateTree(out, TreeOptions{Generation: 1, Checkpoint: 7})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tw.WriteSubtask(0, CanonicalMetadata(nil, VersionMap{}), []Row{vtKeyed(7, "agg", k0, "a")}, CompressGzip); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.WriteSubtask(1, CanonicalMetadata(nil, VersionMap{}), []Row{vtKeyed(7, "agg", k1, "b")}, CompressNone); err != nil {
		t.Fatal(err)
	}
	if err := tw.Commit("job1", nil); err != nil {
		t.Fatal(err)
	}
	vtReplace(t, vtPayload(out, 1), nil, true) // a 0-byte payload with a valid sidecar
	vtExpect(t, Validate(vtOpen(t, out, OpenOptions{Groups: []Group{{0, 2}}}), ValidateOptions{}), []vtWant{
		{SeverityError, CheckFormat, "v1/0/checkpoint-7.snap", -1, 0, nil, []string{"gzip-compressed as a whole", "refuses it"}},
		{SeverityError, CheckFormat, "v1/1/checkpoint-7.snap", -1, 0, nil, []string{"0-byte payload", "refuses to restore subtask 1 with empty state"}},
	})
	// Compressed, the payload is not 0 bytes to clink, which refuses it
	// for its compression; what it decompresses to is told apart.
	empty := compressed(t, CompressGzip, nil)
	vtReplace(t, vtPayload(out, 1), empty, true)
	vtExpect(t, Validate(vtOpen(t, out, OpenOptions{Groups: []Group{{0, 2}}}), ValidateOptions{}), []vtWant{
		{SeverityError, CheckFormat, "v1/0/checkpoint-7.snap", -1, 0, nil, []string{"gzip-compressed as a whole", "refuses it"}},
		{SeverityError, CheckFormat, "v1/1/checkpoint-7.snap", -1, 0, nil, []string{"gzip-compressed as a whole", "refuses it"}},
		{SeverityInfo, CheckFormat, "v1/1/checkpoint-7.snap", -1, 0, nil, []string{fmt.Sprintf("gzip-compressed payload (%d bytes) decompresses to 0 bytes", len(empty)), "sptool's writers refuse it"}},
	})
	// The commands that only read it say it is read as empty state, as
	// they say of a 0-byte payload.
	sp := vtOpen(t, out, OpenOptions{Groups: []Group{{0, 2}}})
	if w := sp.EmptyPayloadWarnings(); len(w) != 1 || !strings.HasPrefix(w[0], "v1/1/checkpoint-7.snap decompresses (gzip) to 0 bytes, read as empty state") {
		t.Errorf("warnings %q", w)
	}
}

func TestValidateChangelogPayloads(t *testing.T) {
	k0, k1 := vtKeysIn(t, 0, 64, 1)[0], vtKeysIn(t, 64, 128, 1)[0]
	put := vtKeyed(7, "agg", k1, "b")

	// A file-backend tree holding a changelog with an external handle (row_kind 3, empty).
	tree := vtWriteTree(t, [][]Row{{vtKeyed(7, "agg", k0, "a")}, {put}}, nil)
	vtReplace(t, vtPayload(tree, 1), vtChangelogStream(t, []uint8{3, 1}, []Row{{}, put}), true)
	vtExpect(t, Validate(vtOpen(t, tree, OpenOptions{Groups: []Group{{0, 2}}}), ValidateOptions{}), []vtWant{
		{SeverityWarning, CheckChangelogMode, "v1/1/checkpoint-7.snap", -1, 0, nil, []string{"external materialisation handle (row_kind 3)", "throws on this mode mismatch"}},
		{SeverityError, CheckChangelogOnFileBackend, "v1/1/checkpoint-7.snap", -1, 0, nil, []string{"clink's file backend refuses changelog payloads under checkpoint-<id>.snap (section 1.7", "its state tools read them"}},
	})

	// A changelog+file tree holding an inline materialisation (row_kind 0).
	out := vtChangelogTree(t, [][]Row{{vtKeyed(7, "agg", k0, "a")}, {put}})
	cl1 := filepath.Join(out, "v1", "1", "changelog-7.snap")
	vtReplace(t, cl1, vtChangelogStream(t, []uint8{0, 1}, []Row{{}, put}), false)
	sp := vtOpen(t, out, OpenOptions{Groups: []Group{{0, 2}}})
	if sp.Backend != BackendChangelogFile {
		t.Fatalf("backend %s", sp.Backend)
	}
	vtExpect(t, Validate(sp, ValidateOptions{}), []vtWant{
		{SeverityInfo, CheckSidecar, "", -1, 0, nil, []string{"2 changelog+file payloads carry no .meta sidecar"}},
		{SeverityError, CheckChangelogMode, "v1/1/changelog-7.snap", -1, 0, nil, []string{"inline materialisation (row_kind 0)", "throws on this mode mismatch"}},
		{SeverityInfo, CheckUnreferencedMaterialization, "v1/1/changelog-7.snap", -1, 0, nil, []string{"v1/1/materializations/mat-7.bin is referenced by no changelog of checkpoint 7"}},
	})

	// The same tree holding a canonical stream as changelog-7.snap.
	vtReplace(t, cl1, vtRawStream(t, []Row{put}), false)
	vtExpect(t, Validate(vtOpen(t, out, OpenOptions{Groups: []Group{{0, 2}}}), ValidateOptions{}), []vtWant{
		{SeverityInfo, CheckSidecar, "", -1, 0, nil, []string{"2 changelog+file payloads carry no .meta sidecar"}},
		{SeverityError, CheckCanonicalOnChangelogBackend, "v1/1/changelog-7.snap", -1, 0, nil, []string{"canonical payload stored as changelog-7.snap", "Snapshot is malformed", "apply writes it back as a changelog"}},
		{SeverityInfo, CheckUnreferencedMaterialization, "v1/1/changelog-7.snap", -1, 0, nil, []string{"v1/1/materializations/mat-7.bin is referenced by no changelog of checkpoint 7"}},
	})
}

// A changelog whose handle leads into another subtask's directory is read
// there, as clink reads it: validate warns of the handle, and the file it
// names is referenced (not left over). Here the two changelogs trade
// places, so each subtask restores the other's rows, out of its range.
func TestValidateCrossedMaterializationHandles(t *testing.T) {
	k0, k1 := vtKeysIn(t, 0, 64, 1)[0], vtKeysIn(t, 64, 128, 1)[0]
	out := vtChangelogTree(t, [][]Row{{vtKeyed(7, "agg", k0, "a")}, {vtKeyed(7, "agg", k1, "b")}})
	cl0, cl1 := filepath.Join(out, "v1", "0", "changelog-7.snap"), filepath.Join(out, "v1", "1", "changelog-7.snap")
	b0, err0 := os.ReadFile(cl0)
	b1, err1 := os.ReadFile(cl1)
	if err := errors.Join(err0, err1); err != nil {
		t.Fatal(err)
	}
	vtReplace(t, cl0, b1, false)
	vtReplace(t, cl1, b0, false)
	sp := vtOpen(t, out, OpenOptions{Groups: []Group{{0, 2}}})
	rep := Validate(sp, ValidateOptions{})
	if got := rep.ByCheck(CheckUnreferencedMaterialization); len(got) != 0 {
		t.Errorf("unreferenced: %v, want none (each file is read by the other subtask)", got)
	}
	handles := rep.ByCheck(CheckMaterializationHandle)
	if len(handles) != 2 {
		t.Fatalf("%d materialization-handle findings, want 2:\n%s", len(handles), vtDump(rep))
	}
	for i, f := range handles {
		other := 1 - i
		want := fmt.Sprintf("leads to v1/%d/materializations/mat-7.bin, outside this subtask's directory (v1/%d): a restore of subtask %d reads that file", other, i, i)
		if f.Severity != SeverityWarning || f.Subtask != i || !strings.Contains(f.Message, want) {
			t.Errorf("finding %d: %+v, want a warning with %q", i, f, want)
		}
	}
	if n := len(rep.ByCheck(CheckMisplacedRow)); n != 2 {
		t.Errorf("%d misplaced-row findings, want 2 (each subtask restores the other's row, out of its range)", n)
	}
}

// A changelog+file materialisation of 0 bytes is restored as empty state
// (clink reads empty bytes as no state anywhere), though clink never writes
// one: the subtask's materialised rows are gone, which validate says.
func TestValidateEmptyMaterialization(t *testing.T) {
	k0, k1 := vtKeysIn(t, 0, 64, 1)[0], vtKeysIn(t, 64, 128, 1)[0]
	out := vtChangelogTree(t, [][]Row{{vtKeyed(7, "agg", k0, "a")}, {vtKeyed(7, "agg", k1, "b")}})
	if err := os.Truncate(filepath.Join(out, "v1", "1", "materializations", "mat-7.bin"), 0); err != nil {
		t.Fatal(err)
	}
	vtExpect(t, Validate(vtOpen(t, out, OpenOptions{Groups: []Group{{0, 2}}}), ValidateOptions{}), []vtWant{
		{SeverityInfo, CheckSidecar, "", -1, 0, nil, []string{"2 changelog+file payloads carry no .meta sidecar"}},
		{SeverityWarning, CheckFormat, "v1/1/changelog-7.snap", -1, 0, nil, []string{"materialisation v1/1/materializations/mat-7.bin is 0 bytes", "restores no materialised state"}},
	})
}

func TestReportJSON(t *testing.T) {
	rep := &Report{Findings: []Finding{
		{Severity: SeverityError, Check: CheckMisplacedRow, File: "v1/0/checkpoint-7.snap", Subtask: 0, Row: 3, Op: 18088258576788386267, Key: []byte{0x5f, 0x7c, 0x01}, Message: "lost <raw> & gone"},
		{Severity: SeverityWarning, Check: CheckUnsorted, File: "v1/0/checkpoint-7.snap", Subtask: 0, Row: -1, Message: "m"},
		{Severity: SeverityError, Check: CheckKeyGroup, File: "v1/0/checkpoint-7.snap", Subtask: 0, Row: -1, Message: "more", Omitted: 4},
	}}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // as the CLI encodes it
	if err := enc.Encode(rep); err != nil {
		t.Fatal(err)
	}
	b := bytes.TrimSpace(buf.Bytes())
	want := `{"errors":5,"warnings":1,"infos":0,"findings":[` +
		`{"severity":"error","check":"misplaced-row","file":"v1/0/checkpoint-7.snap","subtask":0,"row":3,"op":18088258576788386267,"key":"5f7c01","message":"lost <raw> & gone"},` +
		`{"severity":"warning","check":"unsorted","file":"v1/0/checkpoint-7.snap","subtask":0,"row":-1,"op":0,"message":"m"},` +
		`{"severity":"error","check":"key-group","file":"v1/0/checkpoint-7.snap","subtask":0,"row":-1,"op":0,"message":"more","omitted":4}]}`
	if string(b) != want {
		t.Fatalf("JSON\n got %s\nwant %s", b, want)
	}
	escaped, err := json.Marshal(rep) // HTML-escaped, same content
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(escaped, []byte(`lost \u003craw\u003e \u0026 gone`)) {
		t.Errorf("json.Marshal form %s", escaped)
	}
	var back Report
	if err := json.Unmarshal(escaped, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Findings) != 3 || !bytes.Equal(back.Findings[0].Key, rep.Findings[0].Key) || back.Findings[1].Key != nil ||
		back.Findings[0].Op != 18088258576788386267 || back.Findings[2].Omitted != 4 || back.Errors() != 5 {
		t.Fatalf("round trip: %+v", back)
	}
	if b, _ := json.Marshal(&Report{}); string(b) != `{"errors":0,"warnings":0,"infos":0,"findings":[]}` {
		t.Errorf("empty report JSON %s", b)
	}
}

func TestReportWriteText(t *testing.T) {
	rep := &Report{Findings: []Finding{
		{Severity: SeverityInfo, Check: CheckCompleted, Subtask: -1, Row: -1, Message: "no marker"},
		{Severity: SeverityError, Check: CheckKeyGroup, File: "x.snap", Subtask: -1, Row: 2, Op: 7, Key: EncodeKeyedKey([]byte("agg"), []byte("alpha")), Message: "bad"},
		{Severity: SeverityWarning, Check: CheckUnsorted, File: "x.snap", Subtask: -1, Row: -1, Message: "unsorted"},
	}}
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "Errors (1)\n" +
		"  x.snap row 2 [key-group] op 7 key kg 43 slot \"agg\" key \"alpha\": bad\n\n" +
		"Warnings (1)\n" +
		"  x.snap [unsorted]: unsorted\n\n" +
		"Info (1)\n" +
		"  tree [completed]: no marker\n\n" +
		"INVALID: 1 error, 1 warning, 1 info\n"
	if b.String() != want {
		t.Fatalf("text\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := (&Report{}).WriteText(&b); err != nil || b.String() != "valid: 0 errors, 0 warnings, 0 infos\n" {
		t.Fatalf("empty report text %q", b.String())
	}
}

// TestValidateRowsInParts: a file's rows checked in parts at once give the
// findings of one pass, in the same order, under every finding limit.
func TestValidateRowsInParts(t *testing.T) {
	var rows []Row
	for i, k := range vtKeysIn(t, 0, 127, 300) {
		r := vtKeyed(7, "agg", k, "v")
		switch i % 7 {
		case 1, 4:
			r.Key[0]++ // a wrong key-group byte
		case 5:
			r = vtKeyed(7, "bad\nslot", k, "v")
		}
		rows = append(rows, r)
	}
	rows = append(rows, Row{Op: 7, Key: []byte{}, Value: []byte("e")})
	path := filepath.Join(t.TempDir(), "checkpoint-7.snap")
	if _, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), rows, SnapshotOptions{Sidecar: true, CheckpointID: 7}); err != nil {
		t.Fatal(err)
	}
	sp := vtOpen(t, path, OpenOptions{Columnar: true})
	defer func(n int) { checkRowsPart = n }(checkRowsPart)
	for _, limit := range []int{0, -1, 3} {
		checkRowsPart = 1 << 30
		one := vtDump(Validate(sp, ValidateOptions{Limit: limit}))
		checkRowsPart = 16
		parts := vtDump(Validate(sp, ValidateOptions{Limit: limit}))

		if parts != one {
			t.Errorf("limit %d: in parts\n%s\nin one pass\n%s", limit, parts, one)
		}
		if !strings.Contains(one, CheckSlotName) || !strings.Contains(one, CheckKeyGroup) || !strings.Contains(one, CheckZeroLengthKey) {
			t.Errorf("limit %d: findings missing:\n%s", limit, one)
		}
	}
}

// A legacy unprefixed timer blob ("__clink_timers" stored raw) is checked
// as a restore fires it: a raw row, which a restore filters as key group 95
// and never unions, so a narrowed restore keeps only the copy of the
// subtask owning key group 95 (here subtask 1 of 2) and fires from it the
// timers of that subtask's range; another subtask's copy fires nothing.
func TestValidateLegacyTimers(t *testing.T) {
	const op = 7
	q := [4][]byte{vtKeysIn(t, 0, 32, 1)[0], vtKeysIn(t, 32, 64, 1)[0], vtKeysIn(t, 64, 96, 1)[0], vtKeysIn(t, 96, 128, 1)[0]}
	a, c, d := q[0], q[2], q[3]
	legacy := func(ts ...Timer) Row { return Row{Op: op, Key: []byte("__clink_timers"), Value: EncodeTimers(nil, ts)} }
	prefixed := func(ts ...Timer) Row { return vtOperator(op, "__clink_timers", EncodeTimers(nil, ts)) }
	file := func(sub int, timers ...Row) []Row {
		return append([]Row{vtKeyed(op, "agg", q[2*sub], "v"), vtKeyed(op, "agg", q[2*sub+1], "v")}, timers...)
	}
	f0, f1 := "v1/0/checkpoint-7.snap", "v1/1/checkpoint-7.snap"
	const dropped = "a restore filters this legacy unprefixed blob, a raw row, as key group 95, so a narrowed restore drops this copy and keeps only subtask 1's"
	for _, tc := range []struct {
		name  string
		files [][]Row
		par   int
		check string
		want  [][]string
	}{
		{name: "the keeper's copy, each timer in its range", files: [][]Row{file(0), file(1, legacy(Timer{1, c}, Timer{2, d}))}, check: CheckTimers},
		{name: "a timer of subtask 0 in the keeper's copy", files: [][]Row{file(0), file(1, legacy(Timer{1, c}, Timer{3, a}))}, check: CheckTimers,
			want: [][]string{{"error " + f1, `op 7 timer blob "__clink_timers" of subtask 1 holds 1 timer outside its key-group range [64,128) that no restore fires`, "event-time timer at 3",
				"owned by subtask 0, which keeps no copy of this legacy blob (a raw row, which a restore filters as key group 95 and never unions: only subtask 1 keeps its copy), without it"}}},
		// The same as a prefixed blob: subtask 0, without one, restores
		// subtask 1's; a chained subtask 1 would fire a's timer too.
		{name: "prefixed, for comparison", files: [][]Row{file(0), file(1, prefixed(Timer{1, c}, Timer{3, a}))}, check: CheckTimers,
			want: [][]string{{"warning " + f1, "holds 1 timer outside its key-group range [64,128) that its owner fires from this blob through the union", "owned by subtask 0", "a chained subtask, restored unfiltered, fires them here as well"}}},
		{name: "subtask 0's copy alone", files: [][]Row{file(0, legacy(Timer{1, a})), file(1)}, check: CheckTimers,
			want: [][]string{{"error " + f0, `op 7 timer blob "__clink_timers" of subtask 0 holds 1 timer that no restore fires with their key's state (first: an event-time timer at 1`,
				"owned by subtask 0): " + dropped + ", which holds none", "a chained subtask, restored unfiltered, fires them here"}}},
		{name: "subtask 0's copy beside the keeper's", files: [][]Row{file(0, legacy(Timer{1, a}, Timer{1, c})), file(1, legacy(Timer{1, c}, Timer{1, d}))}, check: CheckTimers,
			want: [][]string{
				{"error " + f0, "holds 1 timer that no restore fires", "owned by subtask 0): " + dropped + ", which fires the timers of its own range alone"},
				{"warning " + f0, "holds 1 timer that subtask 1 fires from its copy: " + dropped, "fires them a second time here"}}},
		// At 4, key group 95 belongs to subtask 2, which has no file.
		{name: "resubmitted at 4", files: [][]Row{file(0), file(1, legacy(Timer{1, c}, Timer{2, d}))}, par: 4, check: CheckParallelism,
			want: [][]string{{"error ", `op 7 timer blob "__clink_timers": of the 2 timers a restore at this layout fires, a job resubmitted at parallelism 4 loses 2`,
				"as key group 95, so at parallelism 4 only subtask 2 keeps its copy (if it holds one)"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := vtOpen(t, vtWriteTree(t, tc.files, nil), OpenOptions{Groups: []Group{{0, 2}}})
			var got []string
			for _, m := range vtMessages(Validate(sp, ValidateOptions{Parallelism: tc.par}), tc.check) {
				if tc.check == CheckTimers || strings.Contains(m, "timer blob") {
					got = append(got, m)
				}
			}
			vtExpectMessages(t, tc.name, got, tc.want...)
		})
	}
}

// vtMessages returns the findings of check in rep as "severity file
// message".
func vtMessages(rep *Report, check string) []string {
	var out []string
	for _, f := range rep.ByCheck(check) {
		out = append(out, fmt.Sprintf("%s %s %s", f.Severity, f.File, f.Message))
	}
	return out
}

// vtExpectMessages checks that got (vtMessages) holds one finding for each
// of want, in order, holding each of its fragments.
func vtExpectMessages(t testing.TB, name string, got []string, want ...[]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d findings, want %d:\n%s", name, len(got), len(want), strings.Join(got, "\n"))
		return
	}
	for i, frags := range want {
		for _, fr := range frags {
			if !strings.Contains(got[i], fr) {
				t.Errorf("%s: finding %d %q lacks %q", name, i, got[i], fr)
			}
		}
	}
}

// Timer blobs are checked as a restore fires them: timers outside their
// blob's range are stale (the owner's blob holds them) or fire nowhere with
// their key's state; with --parallelism, the timers a job at M would lose
// or fire again are errors and warnings; frozen copies of another chain
// group's operator are not checked.
func TestValidateTimers(t *testing.T) {
	const op, other = 7, 8
	q := [4][]byte{vtKeysIn(t, 0, 32, 1)[0], vtKeysIn(t, 32, 64, 1)[0], vtKeysIn(t, 64, 96, 1)[0], vtKeysIn(t, 96, 128, 1)[0]}
	a, b, c, d := q[0], q[1], q[2], q[3]
	blob := func(ts ...Timer) Row { return vtOperator(op, "__clink_timers", EncodeTimers(nil, ts)) }
	file := func(sub int, timers ...Row) []Row {
		rows := []Row{vtKeyed(op, "agg", q[2*sub], "v"), vtKeyed(op, "agg", q[2*sub+1], "v")}
		return append(rows, timers...)
	}
	findings := vtMessages
	expect := func(name string, got []string, want ...[]string) {
		t.Helper()
		vtExpectMessages(t, name, got, want...)
	}
	open := func(files ...[]Row) *Savepoint {
		return vtOpen(t, vtWriteTree(t, files, nil), OpenOptions{Groups: []Group{{0, 2}}})
	}
	f0, f1 := "v1/0/checkpoint-7.snap", "v1/1/checkpoint-7.snap"

	clean := open(file(0, blob(Timer{1, a}, Timer{1, b})), file(1, blob(Timer{1, c}, Timer{1, d})))
	expect("each timer in its owner's blob", findings(Validate(clean, ValidateOptions{Parallelism: 2}), CheckTimers))

	// c is a stale copy (subtask 1 holds it too); d at 2 is held by no owner.
	sp := open(file(0, blob(Timer{1, a}, Timer{1, c}, Timer{2, d})), file(1, blob(Timer{1, c}, Timer{1, d})))
	expect("stale and orphaned timers", findings(Validate(sp, ValidateOptions{}), CheckTimers),
		[]string{"error " + f0, "timer blob 0xff+\"__clink_timers\" of subtask 0 holds 1 timer outside its key-group range [0,64) that no restore fires with their key's state", "event-time timer at 2 for key", "owned by subtask 1, which restores its own blob, without it", "fires them here"},
		[]string{"warning " + f0, "holds 1 stale timer outside its key-group range [0,64), which its owner fires from the blob it restores", "fires them a second time"})

	// Subtask 2 has no blob and restores the last one's, subtask 1's: a
	// timer of its range there fires, and subtask 0's copy of it is stale;
	// one that only subtask 0 holds fires nowhere.
	r := vtKeysIn(t, 86, 128, 2)
	three := vtOpen(t, vtWriteTree(t, [][]Row{
		{vtKeyed(op, "agg", a, "v"), blob(Timer{1, a}, Timer{5, r[0]}, Timer{6, r[1]})},
		{vtKeyed(op, "agg", c, "v"), blob(Timer{5, r[0]})},
		{vtKeyed(op, "agg", r[0], "v")},
	}, nil), OpenOptions{Groups: []Group{{0, 3}}})
	expect("owner without a blob of its own", findings(Validate(three, ValidateOptions{}), CheckTimers),
		[]string{"warning  op 7 timer blob", "subtask 2 has no blob of its own, and the tree's copies of it hold different timers of its range", "directory order (unspecified", "subtask 1's"},
		[]string{"error " + f0, "holds 1 timer outside its key-group range [0,43)", "an event-time timer at 6", "owned by subtask 2, which has no blob and restores another subtask's, in directory order (counted as the last, subtask 1's), without it"},
		[]string{"warning " + f0, "holds 1 stale timer outside its key-group range [0,43)"},
		[]string{"warning " + f1, "holds 1 timer outside its key-group range [43,86) that its owner fires from this blob through the union", "owned by subtask 2"})

	// A blob stored twice in one file: the later copy is the one a restore
	// keeps, and the earlier one's misplaced timer is not reported.
	sp = vtOpen(t, vtWriteTreeAsIs(t, [][]Row{file(0, blob(Timer{1, a}, Timer{7, d}), blob(Timer{1, a})), file(1, blob(Timer{1, c}))}), OpenOptions{Groups: []Group{{0, 2}}})
	expect("a blob stored twice", findings(Validate(sp, ValidateOptions{}), CheckTimers))

	// An owner without a blob of its own restores the last blob's timers
	// of its range; a chained subtask 0 fires them too.
	sp = open(file(0, blob(Timer{1, a}, Timer{1, c})), file(1))
	expect("owner without a blob", findings(Validate(sp, ValidateOptions{}), CheckTimers),
		[]string{"warning " + f0, "holds 1 timer outside its key-group range [0,64) that its owner fires from this blob through the union, having no blob of its own", "owned by subtask 1", "away from their key's state"})
	// An owner whose blob does not decode takes none through the union.
	sp = open(file(0, blob(Timer{1, a}, Timer{1, c})), file(1, vtOperator(op, "__clink_timers", []byte("not a blob"))))
	for _, m := range findings(Validate(sp, ValidateOptions{}), CheckTimers) {
		if strings.Contains(m, "through the union") {
			t.Errorf("owner with a blob that does not decode: %s", m)
		}
	}

	// At 4, b's new owner (subtask 1) restores its own blob, which lacks it;
	// c and d go to subtasks without files, which restore the last blob's.
	rep := Validate(clean, ValidateOptions{Parallelism: 4})
	var timerPar []string
	for _, f := range findings(rep, CheckParallelism) {
		if strings.Contains(f, "timer blob") {
			timerPar = append(timerPar, f)
		}
	}
	expect("clean at 4", timerPar, []string{"error  op 7 timer blob", "of the 4 timers a restore at this layout fires, a job resubmitted at parallelism 4 loses 1 (first: an event-time timer at 1 for key " + RenderTimerKey(b)})
	timerPar = nil
	for _, f := range findings(Validate(clean, ValidateOptions{Parallelism: 1}), CheckParallelism) {
		if strings.Contains(f, "timer blob") {
			timerPar = append(timerPar, f)
		}
	}
	expect("clean at 1", timerPar, []string{"error ", "at parallelism 1 loses 2"})

	// A timer of b at 9 that only subtask 1 holds fires nowhere now and at 4 in subtask 1.
	sp = open(file(0, blob(Timer{1, a}, Timer{1, b})), file(1, blob(Timer{1, c}, Timer{1, d}, Timer{9, b})))
	rep = Validate(sp, ValidateOptions{Parallelism: 4})
	expect("orphan of subtask 1", findings(rep, CheckTimers), []string{"error " + f1, "range [64,128)", "event-time timer at 9"})
	timerPar = nil
	for _, f := range findings(rep, CheckParallelism) {
		if strings.Contains(f, "timer blob") {
			timerPar = append(timerPar, f)
		}
	}
	expect("gained at 4", timerPar, []string{"error ", "loses 1 (first: an event-time timer at 1 for key"}, []string{"warning ", "fires 1 stale timer that a restore at this layout does not (first: an event-time timer at 9"})

	// Group 2-3 runs another operator: its copies of op 7's blob are frozen.
	// An undecodable blob of a running operator is an error.
	frozen := []Row{vtKeyed(other, "x", a, "v"), blob(Timer{1, d}, Timer{1, c})}
	tree := vtWriteTree(t, [][]Row{file(0, vtOperator(op, "__clink_timers", []byte("bad"))), file(1, blob(Timer{1, c})), frozen, frozen}, nil)
	sp = vtOpen(t, tree, OpenOptions{Groups: []Group{{0, 2}, {2, 2}}})
	expect("frozen copies and a bad blob", findings(Validate(sp, ValidateOptions{}), CheckTimers), []string{"error " + f0, "does not decode", "truncated"})

	// A changelog+file restore unions no operator rows: a subtask without a
	// blob restores no timers, and those of its range elsewhere fire nowhere.
	dir := filepath.Join(t.TempDir(), "cl")
	tw, err := CreateTree(dir, TreeOptions{Generation: 1, Checkpoint: 7, Backend: BackendChangelogFile})
	if err != nil {
		t.Fatal(err)
	}
	for i, rows := range [][]Row{file(0, blob(Timer{1, a}, Timer{1, c})), file(1)} {
		if _, err := tw.WriteSubtask(i, CanonicalMetadata(nil, VersionMap{}), rows, CompressNone); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Commit("job1", nil); err != nil {
		t.Fatal(err)
	}
	cl := vtOpen(t, dir, OpenOptions{Groups: []Group{{0, 2}}})
	if got := findings(Validate(cl, ValidateOptions{}), CheckTimers); len(got) != 1 || !strings.Contains(got[0], "owned by subtask 1, which has no blob, and this backend's restore takes none of the others'") {
		t.Errorf("changelog+file tree: %q", got)
	}

	// Subtask 1 has no blob: it restores one of the tree's copies, the
	// frozen one of group 2 among them, in directory order.
	sp = vtOpen(t, vtWriteTree(t, [][]Row{file(0, blob(Timer{1, a}, Timer{1, c})), file(1), {vtKeyed(other, "x", a, "v"), blob()}}, nil), OpenOptions{Groups: []Group{{0, 2}, {2, 1}}})
	expect("a frozen copy among those a blob-less owner may take", findings(Validate(sp, ValidateOptions{}), CheckTimers),
		[]string{"warning  op 7 timer blob", "subtask 1 has no blob of its own, and the tree's copies of it hold different timers of its range"},
		[]string{"warning " + f0, "that its owner fires from this blob through the union"})

	// No group holds keyed rows of op 9: its blob's liveness is not known,
	// said once, and its timers are not checked.
	timerOnly := vtOperator(9, "__clink_timers", EncodeTimers(nil, []Timer{{1, d}}))
	tree = vtWriteTree(t, [][]Row{file(0, timerOnly), file(1, timerOnly), {vtKeyed(other, "x", a, "v"), timerOnly}}, nil)
	sp = vtOpen(t, tree, OpenOptions{Groups: []Group{{0, 2}, {2, 1}}})
	expect("an operator with timers and no keyed rows", findings(Validate(sp, ValidateOptions{Parallelism: 1}), CheckTimers),
		[]string{"info  op 9 timer blob", "no chain group holds keyed rows of op 9", "not checked"})
}

// A changelog's materialisation row may lie anywhere in its blob, and a
// blob may hold several: clink's restore takes each, combines the
// materialisations of every blob, then replays every blob's log rows in
// order (ChangelogStateBackend::restore; format 1.7). A blob without one is
// malformed.
func TestReplayChangelogAsClinkRestores(t *testing.T) {
	mat := func(rows ...Row) []byte {
		path := filepath.Join(t.TempDir(), "m.snap")
		if _, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), rows, SnapshotOptions{}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	u1, u2 := []byte("u1"), []byte("u2")
	value := func(v string) Row { return Row{Value: mat(vtKeyed(7, "agg", u1, v))} }
	put := func(k []byte, v string) Row { return vtKeyed(7, "agg", k, v) }
	erase := func(k []byte) Row { return Row{Op: 7, Key: EncodeKeyedKey([]byte("agg"), k)} }
	for _, c := range []struct {
		name  string
		blobs [][]byte
		want  map[string]string // user key -> value
		err   string
	}{
		{"materialisation first", [][]byte{vtChangelogStream(t, []uint8{0, 1}, []Row{value("a"), put(u2, "b")})},
			map[string]string{"u1": "a", "u2": "b"}, ""},
		{"materialisation after the log rows", [][]byte{vtChangelogStream(t, []uint8{1, 2, 0}, []Row{put(u1, "x"), erase(u2), value("a")})},
			map[string]string{"u1": "x"}, ""},
		{"two materialisations, combined before the log", [][]byte{vtChangelogStream(t, []uint8{0, 1, 0}, []Row{{Value: mat(vtKeyed(7, "agg", u2, "m"))}, put(u1, "x"), value("a")})},
			map[string]string{"u1": "x", "u2": "m"}, ""},
		// Blob 2's materialisation is restored before blob 1's log rows.
		{"blobs: materialisations, then logs", [][]byte{
			vtChangelogStream(t, []uint8{0, 1}, []Row{value("a"), put(u1, "b")}),
			vtChangelogStream(t, []uint8{0}, []Row{value("c")}),
		}, map[string]string{"u1": "b"}, ""},
		{"no materialisation", [][]byte{vtChangelogStream(t, []uint8{1, 1}, []Row{put(u1, "x"), put(u2, "y")})},
			nil, "changelog snapshot is malformed: no materialisation row (row_kind 0 or 3)"},
		{"a second blob without one", [][]byte{
			vtChangelogStream(t, []uint8{0}, []Row{value("a")}),
			vtChangelogStream(t, []uint8{1}, []Row{put(u2, "y")}),
		}, nil, "CLMB blob 1: changelog snapshot is malformed: no materialisation row"},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := c.blobs[0]
			if len(c.blobs) > 1 {
				data = FrameCLMB(c.blobs)
			}
			s, err := DecodeSnapshot(data, ReadOptions{})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, r := range s.Rows {
				got[string(ParseKey(r.Key).UserKey)] = string(r.Value)
			}
			if !maps.Equal(got, c.want) {
				t.Errorf("restored %v, want %v", got, c.want)
			}
		})
	}
}

// A changelog payload read alone, without the .meta sidecar that clink's
// changelog+file backend never writes, is not called a checkpoint that was
// never published, nor one the file backend refuses; a canonical file
// without its sidecar still is.
func TestLoneChangelogFileSidecar(t *testing.T) {
	cl := vtOpen(t, filepath.Join(vtFixturePath("changelog-file"), "v1", "1", "changelog-17.snap"), OpenOptions{})
	f := cl.Files[0]
	if f.Verdict != VerdictIncomplete || strings.Contains(f.VerdictDetail, "never published") || !strings.Contains(f.VerdictDetail, "changelog+file backend writes none") {
		t.Errorf("verdict %s: %s", f.Verdict, f.VerdictDetail)
	}
	sc := Validate(cl, ValidateOptions{}).ByCheck(CheckSidecar)
	if len(sc) != 1 || sc[0].Severity != SeverityInfo || strings.Contains(sc[0].Message, "refuses") || !strings.Contains(sc[0].Message, "changelog+file backend writes none") {
		t.Errorf("sidecar findings %+v", sc)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint-1.snap")
	if _, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), []Row{{Op: 1, Key: EncodeKeyedKey([]byte("s"), []byte("k")), Value: []byte("v")}}, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path + SidecarSuffix); err == nil {
		t.Fatal("WriteSnapshotFile wrote a sidecar: the test needs a file without one")
	}
	plain := vtOpen(t, path, OpenOptions{})
	if d := plain.Files[0].VerdictDetail; !strings.Contains(d, "never published") {
		t.Errorf("canonical file without a sidecar: %s", d)
	}
	if sc := Validate(plain, ValidateOptions{}).ByCheck(CheckSidecar); len(sc) != 1 || !strings.Contains(sc[0].Message, "file backend refuses") {
		t.Errorf("canonical file's sidecar findings %+v", sc)
	}
	// A lone changelog-<id>.snap is the changelog+file backend's, as in a
	// tree: its backend says so, and an inline materialisation in it is
	// the mode mismatch that backend's restore throws on. The same bytes
	// as checkpoint-<id>.snap are the file backend's in-memory changelog.
	inline := vtChangelogStream(t, []uint8{0, 1}, []Row{{}, {Op: 7, Key: EncodeKeyedKey([]byte("agg"), []byte("k")), Value: []byte("v")}})
	for _, c := range []struct {
		name    string
		backend Backend
		errs    int
	}{{"changelog-7.snap", BackendChangelogFile, 1}, {"checkpoint-7.snap", BackendFile, 0}} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, inline, 0o644); err != nil {
			t.Fatal(err)
		}
		sp := vtOpen(t, p, OpenOptions{})
		mode := Validate(sp, ValidateOptions{}).ByCheck(CheckChangelogMode)
		if sp.Backend != c.backend || len(mode) != c.errs || c.errs > 0 && !strings.Contains(mode[0].Message, "throws on this mode mismatch") {
			t.Errorf("%s: backend %s, mode findings %+v", c.name, sp.Backend, mode)
		}
	}
}

// A changelog holding both an inline materialisation and an external
// handle is an error whatever its backend (every restore throws on one of
// them), named by row; the mode findings name the row and, in a CLMB
// frame, the blob of the materialisation they are about.
func TestChangelogModeRows(t *testing.T) {
	dir := t.TempDir()
	put := Row{Op: 7, Key: EncodeKeyedKey([]byte("agg"), []byte("k")), Value: []byte("v")}
	mixed := vtChangelogStream(t, []uint8{3, 1, 0}, []Row{{}, put, {}})
	handle := vtChangelogStream(t, []uint8{1, 3}, []Row{put, {}})
	inline := vtChangelogStream(t, []uint8{0, 1}, []Row{{}, put})
	inlineLater := vtChangelogStream(t, []uint8{1, 0}, []Row{put, {}})
	for _, c := range []struct {
		name string
		data []byte
		want []string // the mode findings' messages hold these, in turn
		errs int
	}{
		{"checkpoint-7.snap", mixed, []string{"row 2 holds an inline materialisation (row_kind 0) and row 0 an external materialisation handle (row_kind 3): clink's restore throws on one or the other whatever its store"}, 1},
		{"changelog-7.snap", mixed, []string{"row 2 holds an inline materialisation (row_kind 0) and row 0 an external"}, 1},
		// Every blob of a frame is restored with the same store.
		{"checkpoint-7.snap", FrameCLMB([][]byte{handle, inlineLater}), []string{"row 1 of blob 1 holds an inline materialisation (row_kind 0) and row 1 of blob 0 an external"}, 1},
		{"changelog-7.snap", FrameCLMB([][]byte{handle, handle}), nil, 0},
		{"changelog-7.snap", FrameCLMB([][]byte{inline, inlineLater}), []string{
			"row 0 of blob 0 holds an inline materialisation (row_kind 0), but the changelog+file backend",
			"row 1 of blob 1 holds an inline materialisation (row_kind 0), but the changelog+file backend"}, 2},
	} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		sp := vtOpen(t, p, OpenOptions{})
		r := Validate(sp, ValidateOptions{})
		mode := r.ByCheck(CheckChangelogMode)
		if len(mode) != len(c.want) || r.Errors() != c.errs {
			t.Errorf("%s %x: %d errors, mode findings %+v", c.name, c.data[:4], r.Errors(), mode)
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(mode[i].Message, w) {
				t.Errorf("%s: finding %q, want %q in it", c.name, mode[i].Message, w)
			}
		}
		sp.Close()
	}
}

// Open with RequireValid refuses a payload for its verdict with a
// *VerdictError, which tells a damaged payload from one without a sidecar;
// AllowMissingSidecar accepts the latter only.
func TestRequireValidVerdictError(t *testing.T) {
	k0 := vtKeysIn(t, 0, 64, 1)[0]
	tree := vtWriteTree(t, [][]Row{{vtKeyed(7, "agg", k0, "VALUE")}}, nil)
	payload := vtPayload(tree, 0)
	b, err := os.ReadFile(payload)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte("VALUE"))
	if i < 0 {
		t.Fatal("value not found in the payload")
	}
	b[i] = 'X'
	if err := os.WriteFile(payload, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var ve *VerdictError
	_, err = Open(tree, OpenOptions{RequireValid: true, AllowMissingSidecar: true})
	if !errors.As(err, &ve) || ve.Verdict != VerdictCorrupt || ve.Path != payload || !strings.Contains(err.Error(), "integrity check corrupt") {
		t.Fatalf("damaged payload: %v (%+v), want a corrupt VerdictError", err, ve)
	}
	if err := os.Remove(payload + SidecarSuffix); err != nil {
		t.Fatal(err)
	}
	_, err = Open(tree, OpenOptions{RequireValid: true})
	if !errors.As(err, &ve) || ve.Verdict != VerdictIncomplete || !ve.NoSidecar || strings.Contains(err.Error(), "--") {
		t.Fatalf("payload without a sidecar: %v (%+v), want an incomplete VerdictError", err, ve)
	}
	sp, err := Open(tree, OpenOptions{RequireValid: true, AllowMissingSidecar: true})
	if err != nil {
		t.Fatalf("AllowMissingSidecar: %v", err)
	}
	sp.Close()
}

// A single file named changelog-<id>.snap is the changelog+file backend's,
// whose tree payloads carry no sidecar; but a sidecar beside the file is
// still its integrity record: one that disagrees with it is refused with
// RequireValid, as for any other name, and no sidecar at all is accepted.
func TestRequireValidLoneChangelogName(t *testing.T) {
	dir := t.TempDir()
	canonical := filepath.Join(dir, "canonical.snap")
	if _, err := WriteSnapshotFile(canonical, CanonicalMetadata(nil, VersionMap{}), []Row{vtKeyed(7, "agg", []byte("k"), "v")}, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	plain, err := os.ReadFile(canonical)
	if err != nil {
		t.Fatal(err)
	}
	changelog := vtChangelogStream(t, []uint8{0, 1}, []Row{{}, vtKeyed(7, "agg", []byte("k"), "v")})
	for _, c := range []struct {
		name string
		data []byte
	}{{"canonical", plain}, {"changelog", changelog}} {
		p := filepath.Join(dir, c.name, "changelog-7.snap")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		sidecar := SidecarFor(7, FileInfo{Size: int64(len(c.data)), CRC32C: CRC32C(c.data) ^ 1})
		if err := os.WriteFile(p+SidecarSuffix, sidecar, 0o644); err != nil {
			t.Fatal(err)
		}
		var ve *VerdictError
		if sp, err := Open(p, OpenOptions{RequireValid: true, AllowMissingSidecar: true}); !errors.As(err, &ve) || ve.Verdict != VerdictCorrupt {
			if err == nil {
				sp.Close()
			}
			t.Errorf("%s payload as changelog-7.snap, its sidecar disagreeing: %v, want a corrupt VerdictError", c.name, err)
		}
		if err := os.Remove(p + SidecarSuffix); err != nil {
			t.Fatal(err)
		}
		sp, err := Open(p, OpenOptions{RequireValid: true})
		if err != nil {
			t.Errorf("%s payload as changelog-7.snap without a sidecar: %v", c.name, err)
			continue
		}
		if sp.Backend != BackendChangelogFile {
			t.Errorf("%s payload as changelog-7.snap: backend %s", c.name, sp.Backend)
		}
		sp.Close()
	}
}

// Only the name the changelog+file backend gives its payloads,
// changelog-<id>.snap, makes a single file that backend's: another name
// that merely starts with changelog- (an archive's, a copy's) leaves it
// unclassified, as a checkpoint-<id>.snap outside a tree is.
func TestLoneChangelogNameExact(t *testing.T) {
	dir := t.TempDir()
	data := vtChangelogStream(t, []uint8{0, 1}, []Row{{}, vtKeyed(7, "agg", []byte("k"), "v")})
	for name, want := range map[string]Backend{
		"changelog-7.snap":        BackendChangelogFile,
		"changelog-backup.snap":   BackendFile,
		"changelog-7.snap.orig":   BackendFile,
		"changelog-7-copy.snap":   BackendFile,
		"changelog-.snap":         BackendFile,
		"checkpoint-7.snap":       BackendFile,
		"changelog-007.snap":      BackendChangelogFile,
		"changelog-7.snap.backup": BackendFile,
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if sp := vtOpen(t, p, OpenOptions{}); sp.Backend != want {
			t.Errorf("%s: backend %s, want %s", name, sp.Backend, want)
		}
	}
}

// TestValidateCheckpointZero: a tree of checkpoint 0 is an error: clink
// takes a restore_checkpoint_id of 0 for no restore at all.
func TestValidateCheckpointZero(t *testing.T) {
	out := filepath.Join(t.TempDir(), "tree")
	for _, ckpt := range []uint64{0, 1} {
		dir := fmt.Sprintf("%s%d", out, ckpt)
		tw, err := CreateTree(dir, TreeOptions{Generation: 1, Checkpoint: ckpt})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tw.WriteSubtaskWith(0, CanonicalMetadata(nil, VersionMap{}), RowSlice([]Row{vtKeyed(7, "agg", []byte("k"), "v")}), SnapshotOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := tw.Commit("job1", nil); err != nil {
			t.Fatal(err)
		}
		rep := Validate(vtOpen(t, dir, OpenOptions{}), ValidateOptions{})
		if got := rep.ByCheck(CheckCheckpointID); len(got) != map[uint64]int{0: 1}[ckpt] || len(got) == 1 && (got[0].Severity != SeverityError || !strings.Contains(got[0].Message, "means no restore")) {
			t.Errorf("checkpoint %d: %s", ckpt, vtDump(rep))
		}
	}
}

// TestValidateErasedByOwnerLog: a copy of a key outside its owner's file
// whose owner's changelog log erases it is stale, not lost: the owner's
// restore replays the erase, so no restore holds the key (format 1.7,
// 10.1). Union counts it so too.
func TestValidateErasedByOwnerLog(t *testing.T) {
	k0, k1 := vtKeysIn(t, 0, 64, 1)[0], vtKeysIn(t, 64, 128, 2)
	stale := vtKeyed(7, "agg", k1[0], "old")
	out := vtChangelogTree(t, [][]Row{{vtKeyed(7, "agg", k0, "a"), stale}, {vtKeyed(7, "agg", k1[1], "b")}})
	sp := vtOpen(t, out, OpenOptions{Groups: []Group{{0, 2}}})
	handle := sp.File(1).Snapshot.Changelog.Handles[0]
	sp.Close()
	cl1 := filepath.Join(out, "v1", "1", "changelog-7.snap")
	for _, erase := range []bool{false, true} {
		kinds, rows := []uint8{3}, []Row{{Value: []byte(handle)}}
		if erase {
			// An erase of the key, after a put of it: the erase is last.
			kinds, rows = append(kinds, 1, 2), append(rows, stale, Row{Op: 7, Key: stale.Key})
		}
		vtReplace(t, cl1, vtChangelogStream(t, kinds, rows), false)
		sp := vtOpen(t, out, OpenOptions{Groups: []Group{{0, 2}}})
		if got := sp.File(1).Snapshot.ErasedByLog(7, stale.Key); got != erase {
			t.Fatalf("erase %v: ErasedByLog %v", erase, got)
		}
		rep := Validate(sp, ValidateOptions{})
		stales, lost := rep.ByCheck(CheckStaleCopy), rep.ByCheck(CheckMisplacedRow)
		if erase && (len(stales) != 1 || len(lost) != 0 || !strings.Contains(stales[0].Message, "erases this key in its changelog's log")) ||
			!erase && (len(stales) != 0 || len(lost) != 1) {
			t.Errorf("erase %v:\n%s", erase, vtDump(rep))
		}
		_, st := sp.UnionWithStats()
		if erase && (st.StaleCopies != 1 || st.Lost != 0) || !erase && (st.StaleCopies != 0 || st.Lost != 1) {
			t.Errorf("erase %v: union stale %d lost %d", erase, st.StaleCopies, st.Lost)
		}
		if kg := Summarize(sp).KeyGroups; erase && (kg.StaleCopies != 1 || kg.Lost != 0) || !erase && (kg.StaleCopies != 0 || kg.Lost != 1) {
			t.Errorf("erase %v: inspect's histogram stale %d lost %d", erase, kg.StaleCopies, kg.Lost)
		}
		sp.Close()
	}
}

// TestValidateReplayedRows: a finding about a row of a changelog payload
// says its row indexes the replayed rows, in text and JSON.
func TestValidateReplayedRows(t *testing.T) {
	rep := Validate(vtOpen(t, vtFixturePath("changelog-file"), OpenOptions{}), ValidateOptions{})
	stale := rep.ByCheck(CheckStaleCopy)
	if len(stale) == 0 || !stale[0].Replayed {
		t.Fatalf("stale copies %+v, want them marked replayed", stale)
	}
	b, err := json.Marshal(stale[0])
	if err != nil {
		t.Fatal(err)
	}
	var back Finding
	if err := json.Unmarshal(b, &back); err != nil || !strings.Contains(string(b), `"replayed":true`) || !back.Replayed {
		t.Errorf("JSON %s, back %+v (%v)", b, back, err)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil || !strings.Contains(text.String(), stale[0].File+" replayed row ") {
		t.Errorf("text: %v\n%s", err, text.String())
	}
}

// TestErasedByLog: a key is erased by a changelog's log when its last log
// entry is an erase, whether or not the materialisation held it; a put
// after the erase undoes it; a canonical snapshot erases nothing.
func TestErasedByLog(t *testing.T) {
	k := func(s string) Row { return vtKeyed(7, "agg", []byte(s), "v") }
	erase := func(r Row) Row { return Row{Op: r.Op, Key: r.Key} }
	held, never, again, kept := k("held"), k("never"), k("again"), k("kept")
	mat := vtRawStream(t, []Row{held, again, kept})
	s, err := DecodeSnapshot(vtChangelogStream(t, []uint8{0, 2, 2, 2, 1}, []Row{{Value: mat}, erase(held), erase(never), erase(again), again}), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		r    Row
		want bool
	}{{held, true}, {never, true}, {again, false}, {kept, false}} {
		if got := s.ErasedByLog(c.r.Op, c.r.Key); got != c.want {
			t.Errorf("%q: ErasedByLog %v, want %v", c.r.Key, got, c.want)
		}
	}
	if s.ErasedByLog(8, held.Key) {
		t.Error("another operator's key erased")
	}
	canon, err := DecodeSnapshot(mat, ReadOptions{})
	if err != nil || canon.ErasedByLog(7, held.Key) || (*Snapshot)(nil).ErasedByLog(7, held.Key) {
		t.Errorf("canonical or nil snapshot erases: %v", err)
	}
}

// A log row of a kind clink does not write is replayed as a put, as
// clink's restore does, and validate warns of it; a version-map entry
// whose slot kept a carriage return (a 4-field line ending in CRLF) is
// warned of too (section 4.2).
func TestValidateOddKindsAndCRSlot(t *testing.T) {
	dir := t.TempDir()
	put := Row{Op: 7, Key: EncodeKeyedKey([]byte("agg"), []byte("k")), Value: []byte("v")}
	p := filepath.Join(dir, "checkpoint-7.snap")
	if err := os.WriteFile(p, vtChangelogStream(t, []uint8{0, 1, 7, 9}, []Row{{}, put, put, put}), 0o644); err != nil {
		t.Fatal(err)
	}
	sp := vtOpen(t, p, OpenOptions{})
	if cl := sp.Files[0].Snapshot.Changelog; cl.Puts != 3 || cl.OtherKinds != 2 || cl.OtherKind != 7 {
		t.Errorf("puts %d, other kinds %d (first %d), want 3, 2 (first 7)", cl.Puts, cl.OtherKinds, cl.OtherKind)
	}
	const kinds = "2 log rows have a row_kind clink does not write (not 1, a put, or 2, an erase; the first: 7)"
	if !slices.ContainsFunc(Validate(sp, ValidateOptions{}).ByCheck(CheckFormat), func(f Finding) bool {
		return f.Severity == SeverityWarning && strings.HasPrefix(f.Message, kinds)
	}) {
		t.Errorf("no warning %q", kinds)
	}

	for _, c := range []struct {
		packed string
		warn   bool
	}{{"1|t|2|s\r", true}, {"1|t|2|s", false}} {
		md := Metadata{{Key: MetaFormatVersion, Value: "1"}, {Key: MetaStateVersions, Value: c.packed}}
		p := filepath.Join(t.TempDir(), "checkpoint-1.snap")
		if _, err := WriteSnapshotFile(p, md, []Row{put}, SnapshotOptions{}); err != nil {
			t.Fatal(err)
		}
		got := Validate(vtOpen(t, p, OpenOptions{}), ValidateOptions{}).ByCheck(CheckVersionMapSlot)
		if warned := len(got) == 1 && strings.Contains(got[0].Message, `binds slot "s\r", which holds a carriage return`); warned != c.warn || len(got) > 1 {
			t.Errorf("%q: findings %+v, want a warning: %v", c.packed, got, c.warn)
		}
	}
}

// The staging tree of a run stopped before its marker (which sptool writes
// last) may lack whole subtasks: validate calls it so, an error, where a
// tree of another name without a marker is only noted.
func TestValidateStagingTree(t *testing.T) {
	for _, c := range []struct {
		name string
		sev  Severity
	}{{"out.sptool-tmp-4242.1.k3x9", SeverityError}, {"out", SeverityInfo}} {
		root := filepath.Join(t.TempDir(), c.name)
		if err := os.CopyFS(root, os.DirFS(vtFixturePath("mixed-p4"))); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(filepath.Join(root, "_jobs")); err != nil {
			t.Fatal(err)
		}
		got := Validate(vtOpen(t, root, OpenOptions{}), ValidateOptions{}).ByCheck(CheckCompleted)
		if len(got) != 1 || got[0].Severity != c.sev || (c.sev == SeverityError) != strings.Contains(got[0].Message, "the staging tree of an sptool run that did not finish") {
			t.Errorf("%s: marker findings %+v, want one %s", c.name, got, c.sev)
		}
	}
}

// A CLMB frame of no blob reads as empty state, as clink's restore reads it,
// but no writer frames one: validate warns; a frame of two blobs does not.
func TestEmptyCLMBWarned(t *testing.T) {
	blob := vtChangelogStream(t, []uint8{rowKindMaterialised}, []Row{{}})
	for _, c := range []struct {
		name string
		data []byte
		warn bool
	}{
		{"no blob", FrameCLMB(nil), true},
		{"two blobs", FrameCLMB([][]byte{blob, blob}), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp := openWritten(t, "changelog-3.snap", c.data)
			warned := slices.ContainsFunc(Validate(sp, ValidateOptions{}).Findings, func(f Finding) bool {
				return f.Severity == SeverityWarning && strings.HasPrefix(f.Message, "a CLMB frame of no blob")
			})
			if warned != c.warn {
				t.Errorf("warned %v, want %v", warned, c.warn)
			}
		})
	}
}

// writeBroadcastTree writes a tree of n files, each holding the same
// operator row of size bytes (a broadcast state, replicated as clink
// replicates it) and nothing else, and returns its path.
func writeBroadcastTree(t testing.TB, n, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tree")
	tw, err := CreateTree(dir, TreeOptions{Generation: 1, Checkpoint: 7})
	if err != nil {
		t.Fatal(err)
	}
	v := make([]byte, size)
	for i := range v {
		v[i] = byte(i * 7)
	}
	for i := range n {
		if _, err := tw.WriteSubtask(i, CanonicalMetadata(nil, VersionMap{}), []Row{{Op: 5, Key: []byte("\xffrules|"), Value: v}}, CompressNone); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Commit("1", nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// validate compares the copies of an operator row replicated in every file
// without copying them: four files of an 8 MiB broadcast state allocate
// far less than one copy of it (counting its distinct values with the
// values as map keys allocated every copy, 32 MiB).
func TestReplicatedValueNotCopied(t *testing.T) {
	const size = 8 << 20
	sp, err := Open(writeBroadcastTree(t, 4, size), OpenOptions{Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rep := Validate(sp, ValidateOptions{})
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/2 {
		t.Errorf("validate allocated %d bytes for 4 copies of a %d-byte value", alloc, size)
	}
	if !slices.ContainsFunc(rep.Findings, func(f Finding) bool {
		return f.Check == CheckOperatorReplica && strings.Contains(f.Message, "0 of them with differing values")
	}) {
		t.Errorf("findings %v: want the replicated key, its copies equal", rep.Findings)
	}
}

// A tree laid out at parallelism 4 whose subtask 2 has no directory is
// checked at the layout its indices imply (subtasks 0-3, one group): the
// missing subtask is the only error, with no marker, with a marker that
// leaves it out, and with --groups 0-3.
func TestValidateGapLayout(t *testing.T) {
	var files [][]Row
	for i := range 4 {
		r := KeyGroupRangeForSubtask(i, 4)
		lo, hi := vtKeysIn(t, r.First, r.First+1, 1)[0], vtKeysIn(t, r.Last-1, r.Last, 1)[0]
		if i == 1 {
			lo, hi = vtKeysIn(t, 33, 34, 1)[0], vtKeysIn(t, 52, 53, 1)[0]
		}
		files = append(files, []Row{vtKeyed(5, "agg", lo, "v"), vtKeyed(5, "agg", hi, "v")})
	}
	for _, c := range []struct {
		name, marker string
		groups       []Group
	}{
		{"no marker", "", nil},
		{"marker 0,1,3", "subtasks=0,1,3\n", nil},
		{"groups 0-3", "", []Group{{First: 0, Count: 4}}},
	} {
		tree := vtWriteTree(t, files, nil)
		if err := os.RemoveAll(filepath.Join(tree, "v1", "2")); err != nil {
			t.Fatal(err)
		}
		marker := filepath.Join(tree, "_jobs", "job1", "COMPLETED-7")
		if c.marker == "" {
			if err := os.Remove(marker); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(marker, []byte("job=job1\ncheckpoint=7\ngeneration=1\n"+c.marker), 0o644); err != nil {
			t.Fatal(err)
		}
		sp := vtOpen(t, tree, OpenOptions{KeepUndecodable: true, KeepGaps: true, Groups: c.groups})
		if got := FormatGroups(sp.Groups); got != "0-3" {
			t.Errorf("%s: groups %s, want 0-3", c.name, got)
		}
		rep := Validate(sp, ValidateOptions{})
		var errs []string
		for _, f := range rep.Findings {
			if f.Severity == SeverityError {
				errs = append(errs, f.Check+" "+f.File+" "+f.Message)
			}
			if f.Check == CheckMisplacedRow || f.Check == CheckOperatorGroups {
				t.Errorf("%s: %s finding: %s", c.name, f.Check, f.Message)
			}
		}
		if len(errs) != 1 || !strings.HasPrefix(errs[0], CheckSubtasks+" "+filepath.Join("v1", "2", "checkpoint-7.snap")+" payload missing (v1 has no directory 2") {
			t.Errorf("%s: errors %q, want the missing subtask 2's alone", c.name, errs)
		}
	}
}

// A COMPLETED marker clink tolerates but sptool does not parse is, with
// TolerateBadMarkers, a warning naming it, and the tree is checked as if
// it had none; without the option Open refuses it, naming the marker and
// how to proceed.
func TestValidateBadMarker(t *testing.T) {
	files := vtTwoSubtasks(t)
	for name, body := range map[string]string{
		"no checkpoint line": "job=job1\ngeneration=1\nsubtasks=0,1\n",
		"comment line":       "job=job1\ncheckpoint=7\ngeneration=1\nsubtasks=0,1\n# written by ops\n",
		"CRLF":               "job=job1\r\ncheckpoint=7\r\ngeneration=1\r\nsubtasks=0,1\r\n",
		"garbage":            "\x00\x01\xfe\xff garbage",
	} {
		tree := vtWriteTree(t, files, nil)
		writeTreeFile(t, filepath.Join(tree, "_jobs", "job1", "COMPLETED-7"), []byte(body))
		if _, err := Open(tree, OpenOptions{KeepUndecodable: true}); err == nil || !strings.Contains(err.Error(), "_jobs/job1/COMPLETED-7") || !strings.Contains(err.Error(), "remove it") {
			t.Errorf("%s: Open without TolerateBadMarkers: %v", name, err)
		}
		sp := vtOpen(t, tree, OpenOptions{KeepUndecodable: true, TolerateBadMarkers: true})
		if sp.Checkpoint != 7 || sp.Completed != nil || len(sp.IgnoredMarkers) != 1 {
			t.Errorf("%s: checkpoint %d, marker %v, ignored %q", name, sp.Checkpoint, sp.Completed, sp.IgnoredMarkers)
		}
		rep := Validate(sp, ValidateOptions{})
		var warned bool
		for _, f := range rep.ByCheck(CheckCompleted) {
			warned = warned || f.Severity == SeverityWarning && strings.Contains(f.Message, "marker _jobs/job1/COMPLETED-7: parse completed marker") && strings.Contains(f.Message, "checked without it")
		}
		if rep.Errors() != 0 || !warned {
			t.Errorf("%s: %d errors, no warning naming the marker:\n%s", name, rep.Errors(), vtDump(rep))
		}
	}
}

// With NewestPresent, a tree with no checkpoint in every subtask directory
// (an empty one, no marker) is checked at its newest checkpoint present,
// an info says which, and the directory without it is a missing payload.
func TestValidateNewestPresent(t *testing.T) {
	tree := vtWriteTree(t, vtTwoSubtasks(t), nil)
	if err := os.RemoveAll(filepath.Join(tree, "_jobs")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"checkpoint-7.snap", "checkpoint-7.snap.meta"} {
		if err := os.Remove(filepath.Join(tree, "v1", "1", name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(tree, OpenOptions{KeepUndecodable: true}); err == nil || !strings.Contains(err.Error(), "choose one with --checkpoint") {
		t.Errorf("without NewestPresent: %v", err)
	}
	sp := vtOpen(t, tree, OpenOptions{KeepUndecodable: true, NewestPresent: true})
	rep := Validate(sp, ValidateOptions{})
	vtExpectMessages(t, "subtasks", vtMessages(rep, CheckSubtasks),
		[]string{"info  no checkpoint of generation v1 has a COMPLETED marker or a file in every subtask directory (present: 7); checkpoint 7, the newest present, is read"},
		[]string{"error v1/1/checkpoint-7.snap payload missing (subtask directory 1 holds no checkpoint 7)"})
	if rep.Errors() != 1 {
		t.Errorf("%d errors:\n%s", rep.Errors(), vtDump(rep))
	}
}

// A newer generation whose checkpoint no marker says is complete hides the
// job's only completed checkpoint, of an older generation: clink restores
// from the highest generation only, so restoring that checkpoint from the
// directory finds no state. validate warns, naming the marker.
func TestValidateCompletedInOlderGeneration(t *testing.T) {
	tree := vtWriteTree(t, vtTwoSubtasks(t), nil)
	sp := vtOpen(t, tree, OpenOptions{})
	if len(sp.OlderGenerationCompleted) != 0 {
		t.Errorf("the marker of the generation read noted as older: %q", sp.OlderGenerationCompleted)
	}
	// v2 holds checkpoint 8, the same files, and no marker says it is complete.
	for i := range 2 {
		for _, ext := range []string{"", ".meta"} {
			b := mustReadFile(t, filepath.Join(tree, "v1", strconv.Itoa(i), "checkpoint-7.snap"+ext))
			b = bytes.Replace(b, []byte("checkpoint_id=7\n"), []byte("checkpoint_id=8\n"), 1)
			writeTreeFile(t, filepath.Join(tree, "v2", strconv.Itoa(i), "checkpoint-8.snap"+ext), b)
		}
	}
	sp = vtOpen(t, tree, OpenOptions{})
	if sp.Generation != 2 || sp.Checkpoint != 8 {
		t.Fatalf("read v%d checkpoint %d, want v2 checkpoint 8", sp.Generation, sp.Checkpoint)
	}
	rep := Validate(sp, ValidateOptions{})
	var found bool
	for _, m := range vtMessages(rep, CheckCompleted) {
		if strings.HasPrefix(m, "warning  _jobs/") && strings.Contains(m, "COMPLETED-7 marks the job's newest completed checkpoint in an older generation than v2, which holds none of its files") {
			found = true
		}
	}
	if !found {
		t.Errorf("no warning of the completed checkpoint in v1:\n%s", vtDump(rep))
	}
}

// A sidecar of thousands of keys clink does not know (134 KB), which clink
// reads past, is read as the valid sidecar it is: the tree is not
// unreadable for it.
func TestValidateLargeSidecar(t *testing.T) {
	tree := vtWriteTree(t, vtTwoSubtasks(t), nil)
	meta := filepath.Join(tree, "v1", "1", "checkpoint-7.snap.meta")
	b := mustReadFile(t, meta)
	for i := range 5000 {
		b = fmt.Appendf(b, "future_key_%d=%d\n", i, i)
	}
	writeTreeFile(t, meta, b)
	sp := vtOpen(t, tree, OpenOptions{})
	if v := sp.Files[1].Verdict; v != VerdictValid {
		t.Errorf("the sidecar of %d bytes: verdict %v (%s)", len(b), v, sp.Files[1].VerdictDetail)
	}
	if rep := Validate(sp, ValidateOptions{}); rep.Errors() != 0 {
		t.Errorf("%d errors:\n%s", rep.Errors(), vtDump(rep))
	}
}

// A COMPLETED marker of the checkpoint read that does not parse, beside
// one that does, is one more marker of the checkpoint: read with
// TolerateBadMarkers, the good marker's subtasks= line is not applied, as
// clink applies one only when exactly one marker exists.
func TestValidateBadMarkerBesideGood(t *testing.T) {
	tree := vtWriteTree(t, vtTwoSubtasks(t), nil)
	writeTreeFile(t, filepath.Join(tree, "_jobs", "job1", "COMPLETED-7"), []byte("job=job1\ncheckpoint=7\ngeneration=1\nsubtasks=0\n"))
	writeTreeFile(t, filepath.Join(tree, "_jobs", "job2", "COMPLETED-7"), []byte("garbage\n"))
	sp := vtOpen(t, tree, OpenOptions{KeepUndecodable: true, TolerateBadMarkers: true})
	if _, applied := sp.appliedListing(); applied || len(sp.OtherCompleted) != 1 {
		t.Errorf("the good marker's list applied (%v) beside a bad one; other markers %q", applied, sp.OtherCompleted)
	}
	if rep := Validate(sp, ValidateOptions{}); rep.Errors() != 0 {
		t.Errorf("%d errors:\n%s", rep.Errors(), vtDump(rep))
	}
}

// The newest completed checkpoint of an older generation is not warned of
// when a marker of the generation read says a checkpoint of it is
// complete (of another job, or the checkpoint read itself).
func TestValidateOlderGenerationMarkedHere(t *testing.T) {
	tree := vtWriteTree(t, vtTwoSubtasks(t), nil)
	// v1/ moves to v2/, its marker now says generation 2; a job's newer
	// checkpoint 9 is marked complete in generation 1, which holds no file.
	if err := os.Rename(filepath.Join(tree, "v1"), filepath.Join(tree, "v2")); err != nil {
		t.Fatal(err)
	}
	writeTreeFile(t, filepath.Join(tree, "_jobs", "job1", "COMPLETED-7"), []byte("job=job1\ncheckpoint=7\ngeneration=2\nsubtasks=0,1\n"))
	writeTreeFile(t, filepath.Join(tree, "_jobs", "job0", "COMPLETED-9"), []byte("job=job0\ncheckpoint=9\ngeneration=1\nsubtasks=0,1\n"))
	sp := vtOpen(t, tree, OpenOptions{})
	if sp.Completed == nil || len(sp.OlderGenerationCompleted) != 0 {
		t.Errorf("marker of the checkpoint read %v; older generation's warned of: %q", sp.Completed != nil, sp.OlderGenerationCompleted)
	}
}

// A marker of another checkpoint that cannot be read (a directory where
// the file should be) is warned of as one that cannot be read as a
// marker, not as one that does not parse.
func TestValidateUnreadableOtherMarker(t *testing.T) {
	tree := vtWriteTree(t, vtTwoSubtasks(t), nil)
	if err := os.MkdirAll(filepath.Join(tree, "_jobs", "job1", "COMPLETED-3"), 0o755); err != nil {
		t.Fatal(err)
	}
	rep := Validate(vtOpen(t, tree, OpenOptions{KeepUndecodable: true, TolerateBadMarkers: true}), ValidateOptions{})
	var found bool
	for _, m := range vtMessages(rep, CheckCompleted) {
		if strings.Contains(m, "COMPLETED-3") {
			found = true
			if !strings.Contains(m, "it cannot be read as a marker") || strings.Contains(m, "does not parse") {
				t.Errorf("%s", m)
			}
		}
	}
	if !found {
		t.Errorf("no finding of the marker:\n%s", vtDump(rep))
	}
}

// TestFindingOpHasRowOrKey: a finding gives an operator only with a row
// or a key, so that "op": 0 without either names no operator (see
// Finding), over the independent trees, the example tree and the bad
// files of testdata.
func TestFindingOpHasRowOrKey(t *testing.T) {
	paths := []string{filepath.Join("..", "testdata", "example")}
	for _, name := range vtFixtures {
		paths = append(paths, vtFixturePath(name))
	}
	bad, err := filepath.Glob(filepath.Join("..", "testdata", "bad", "*.snap"))
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, bad...)
	findings := 0
	for _, path := range paths {
		sp, err := Open(path, OpenOptions{Columnar: true, AllowMissingSidecar: true})
		if err != nil {
			continue // (a bad file that does not open: its report names no operator)
		}
		rep := Validate(sp, ValidateOptions{})
		sp.Close()
		for _, f := range rep.Findings {
			findings++
			if f.Op != 0 && f.Row < 0 && f.Key == nil {
				t.Errorf("%s: a finding of op %d with no row and no key: %+v", path, f.Op, f)
			}
		}
	}
	if findings == 0 {
		t.Fatal("no findings to look at")
	}
}
