package transform_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sptool/sptool/internal/testhook"
	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/transform"
)

// Helpers shared by the transform tests: building inputs, parsing rules,
// reading outputs back and comparing rows.

// i64 encodes v with clink's int64 codec (8 bytes little-endian).
func i64(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }

// u32 encodes v with clink's uint32 codec.
func u32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// keyed builds a keyed row: [kg(userKey)] slot '|' userKey.
func keyed(op uint64, slot, userKey string, value []byte) savepoint.Row {
	return savepoint.Row{Op: op, Key: savepoint.EncodeKeyedKey([]byte(slot), []byte(userKey)), Value: value}
}

// operatorRow builds an operator-state row 0xFF logical.
func operatorRow(op uint64, logical string, value []byte) savepoint.Row {
	return savepoint.Row{Op: op, Key: append([]byte{0xFF}, logical...), Value: value}
}

// ttl prefixes payload with an expire-at stamp.
func ttl(expireAt int64, payload []byte) []byte { return savepoint.JoinTTL(expireAt, payload) }

// composite is an expiring-collection user key K 0x1F element.
func composite(k, elem string) string { return k + "\x1f" + elem }

// located is a row with the subtask file it is stored in (-1: single file).
type located struct {
	Subtask int
	savepoint.Row
}

func (l located) String() string {
	k := savepoint.ParseKey(l.Key)
	return fmt.Sprintf("subtask %d op %d %s slot %q key %s = %s", l.Subtask, l.Op, k.Kind, k.SlotName(),
		savepoint.RenderBytes(k.UserKey, 0), savepoint.RenderBytes(l.Value, 0))
}

func compareLocated(a, b located) int {
	if a.Subtask != b.Subtask {
		return a.Subtask - b.Subtask
	}
	if c := a.Row.Compare(b.Row); c != 0 {
		return c
	}
	return bytes.Compare(a.Value, b.Value)
}

// sameRows fails t unless got and want hold the same located rows (as
// multisets), listing the differences.
func sameRows(t *testing.T, what string, got, want []located) {
	t.Helper()
	g, w := slices.Clone(got), slices.Clone(want)
	slices.SortFunc(g, compareLocated)
	slices.SortFunc(w, compareLocated)
	var missing, extra []string
	i, j := 0, 0
	for i < len(g) || j < len(w) {
		switch {
		case i == len(g):
			missing = append(missing, w[j].String())
			j++
		case j == len(w):
			extra = append(extra, g[i].String())
			i++
		default:
			c := compareLocated(g[i], w[j])
			switch {
			case c == 0:
				i++
				j++
			case c < 0:
				extra = append(extra, g[i].String())
				i++
			default:
				missing = append(missing, w[j].String())
				j++
			}
		}
	}
	if len(missing)+len(extra) > 0 {
		t.Errorf("%s: %d rows, want %d\nmissing:\n  %s\nunexpected:\n  %s", what, len(got), len(want),
			strings.Join(missing, "\n  "), strings.Join(extra, "\n  "))
	}
}

// writeTree writes a file-backend checkpoint tree (generation 1) with one
// canonical file per subtask and a COMPLETED marker for job (none when job
// is ""). It returns dir.
func writeTree(t testing.TB, dir string, ckpt uint64, job string, files map[int][]savepoint.Row, vm savepoint.VersionMap, compression string) string {
	t.Helper()
	tw, err := savepoint.CreateTree(dir, savepoint.TreeOptions{Generation: 1, Checkpoint: ckpt})
	if err != nil {
		t.Fatal(err)
	}
	defer tw.Abort()
	md := savepoint.CanonicalMetadata(nil, vm)
	subs := make([]int, 0, len(files))
	for s := range files {
		subs = append(subs, s)
	}
	slices.Sort(subs)
	for _, s := range subs {
		if _, err := tw.WriteSubtask(s, md, files[s], compression); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Commit(job, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// parseRules compiles a rule file placed in a fresh temporary directory with
// the given side files (keys files), as rules.Load would see it.
func parseRules(t testing.TB, src string, sideFiles map[string]string) *rules.Set {
	t.Helper()
	dir := t.TempDir()
	for name, body := range sideFiles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := rules.Parse(path, []byte(src))
	if err != nil {
		t.Fatalf("rules do not parse: %v\n%s", err, src)
	}
	return set
}

// open opens a savepoint as sptool apply does (sidecars required).
func open(t testing.TB, path string) *savepoint.Savepoint {
	t.Helper()
	sp, err := savepoint.Open(path, savepoint.OpenOptions{RequireValid: true})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	return sp
}

// run applies set to the savepoint at in.
func run(t testing.TB, in string, set *rules.Set, opts transform.Options) (*transform.Report, error) {
	t.Helper()
	return transform.Run(context.Background(), open(t, in), set, opts)
}

// rowsOf returns every stored row of every file of sp, with its subtask.
func rowsOf(sp *savepoint.Savepoint) []located {
	var out []located
	for _, f := range sp.Files {
		for _, r := range f.Snapshot.Rows {
			out = append(out, located{f.Subtask, r})
		}
	}
	return out
}

// readRows opens path (requiring valid sidecars) and returns its rows.
func readRows(t testing.TB, path string) []located {
	t.Helper()
	return rowsOf(open(t, path))
}

// checkAccounting checks the report's row accounting against itself and
// against the rows actually read and written.
func checkAccounting(t *testing.T, rep *transform.Report, in, out int) {
	t.Helper()
	if rep.RowsIn != rep.RowsOut+rep.RowsDropped {
		t.Errorf("accounting: %d in != %d out + %d dropped", rep.RowsIn, rep.RowsOut, rep.RowsDropped)
	}
	if rep.RowsIn != int64(in) {
		t.Errorf("RowsIn = %d, want %d (rows in the input)", rep.RowsIn, in)
	}
	if out >= 0 && rep.RowsOut != int64(out) {
		t.Errorf("RowsOut = %d, want %d (rows in the output)", rep.RowsOut, out)
	}
	var dropped int64
	for _, rs := range rep.PerRule {
		dropped += rs.Dropped
	}
	// Every row dropped is a rule's, or a duplicate resolved (or a
	// rescale's operator copy merged into one).
	if r := rep.Rescale; r != nil {
		dropped += r.OperatorIn - r.OperatorDistinct
	}
	if dropped+rep.DuplicatesResolved != rep.RowsDropped {
		t.Errorf("RowsDropped = %d, but the rules' Dropped and the %d duplicates resolved add up to %d", rep.RowsDropped, rep.DuplicatesResolved, dropped+rep.DuplicatesResolved)
	}
	var before, after int64
	for _, s := range rep.Slots {
		before += s.Before
		after += s.After
	}
	if before != rep.RowsIn || after != rep.RowsWritten {
		t.Errorf("slot counts add up to %d before / %d after, want %d / %d (rows in, rows written)", before, after, rep.RowsIn, rep.RowsWritten)
	}
}

// checksums returns the SHA-256 of every regular file under root (and the
// set of directories), keyed by relative path.
func checksums(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			out[rel+"/"] = "dir"
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameChecksums fails t unless both maps are equal.
func sameChecksums(t testing.TB, what string, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s changed (sha256 %s, was %s)", what, k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %s appeared", what, k)
		}
	}
}

// ruleStats returns the stats of the rule with 1-based index i.
func ruleStats(t testing.TB, rep *transform.Report, i int) *transform.RuleStats {
	t.Helper()
	for _, rs := range rep.PerRule {
		if rs.Index == i {
			return rs
		}
	}
	t.Fatalf("report has no rule %d", i)
	return nil
}

// exists reports whether p exists (without following a final symlink).
func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// The input of the rule-kind table: a tree at parallelism 2 holding several
// operators, slot kinds and key codecs.
const (
	opAgg    = 7  // slots agg (int64 -> int64), tmp, seen (ttl), xseen (not ttl), small (uint32); a timer blob; a raw row
	opCart   = 8  // slots cart (composite, ttl, int64 values), profile, notes (not composite)
	opSrc    = 9  // operator state only
	opDedup  = 12 // slot dedup
	opDedup2 = 13 // slot dedup, shares the key "zed" with op 12
)

var (
	rA1 = keyed(opAgg, "agg", string(i64(1)), i64(10))
	rA2 = keyed(opAgg, "agg", string(i64(2)), i64(20))
	rA3 = keyed(opAgg, "agg", string(i64(3)), i64(0))
	rT1 = keyed(opAgg, "tmp", "a", []byte("x"))
	rT2 = keyed(opAgg, "tmp", "b", []byte("y"))
	rS1 = keyed(opAgg, "seen", "alice", ttl(1000, []byte("web")))
	rS2 = keyed(opAgg, "seen", "bob", ttl(2000, []byte("app")))
	rS3 = keyed(opAgg, "seen", "carol", ttl(2001, []byte("web")))
	rS4 = keyed(opAgg, "seen", "dave", []byte("abc")) // shorter than a TTL stamp
	rX1 = keyed(opAgg, "xseen", "alice", ttl(0, []byte("z")))
	rU1 = keyed(opAgg, "small", "u", u32(5))
	rTM = operatorRow(opAgg, "__clink_timers", []byte{0, 0, 0, 0, 0, 0, 0, 0})
	rR1 = savepoint.Row{Op: opAgg, Key: []byte("__iterate_inflight__"), Value: []byte("buf")}
	rC1 = keyed(opCart, "cart", composite("alice", "sku-1"), ttl(1500, i64(1)))
	rC2 = keyed(opCart, "cart", composite("alice", "sku-2"), ttl(2500, i64(2)))
	rC3 = keyed(opCart, "cart", composite("bob", "sku-1"), ttl(1500, i64(3)))
	rC4 = keyed(opCart, "cart", composite("alicex", "sku-1"), ttl(2500, i64(4)))
	rP1 = keyed(opCart, "profile", "alice", []byte(`{"tier":"pro"}`))
	rP2 = keyed(opCart, "profile", "bob", []byte(`{"tier":"free"}`))
	rN1 = keyed(opCart, "notes", composite("alice", "n1"), []byte("hi"))
	rN2 = keyed(opCart, "notes", "alice", []byte("hello"))
	rK0 = operatorRow(opSrc, "__kafka_off__:0", i64(100))
	rD1 = keyed(opDedup, "dedup", "alice", []byte("1"))
	rD2 = keyed(opDedup, "dedup", "zed", []byte("2"))
	rE1 = keyed(opDedup2, "dedup", "zed", []byte("3"))

	baseRows = []savepoint.Row{rA1, rA2, rA3, rT1, rT2, rS1, rS2, rS3, rS4, rX1, rU1, rTM, rR1,
		rC1, rC2, rC3, rC4, rP1, rP2, rN1, rN2, rK0, rD1, rD2, rE1}
)

// baseVersions is the input's version map.
func baseVersions(t testing.TB) savepoint.VersionMap {
	vm, err := savepoint.ParseVersionMap("7|SeenTtl|1|seen\n7|UserCounter|1|agg\n8|Cart|1|cart\n12|Dedup|3")
	if err != nil {
		t.Fatal(err)
	}
	return vm
}

// place returns the subtasks of a parallelism-2 tree that store r: keyed
// and raw rows in the owner of their first byte, operator rows in both.
func place(r savepoint.Row) []int {
	if r.IsOperatorState() {
		return []int{0, 1}
	}
	return []int{savepoint.SubtaskForKeyGroup(int(r.Key[0]), 2)}
}

func placeAll(rows []savepoint.Row) []located {
	var out []located
	for _, r := range rows {
		for _, s := range place(r) {
			out = append(out, located{s, r})
		}
	}
	return out
}

func writeBaseTree(t testing.TB, dir string, rows []savepoint.Row) string {
	files := map[int][]savepoint.Row{0: nil, 1: nil}
	for _, l := range placeAll(rows) {
		files[l.Subtask] = append(files[l.Subtask], l.Row)
	}
	return writeTree(t, dir, 5, "job-1", files, baseVersions(t), savepoint.CompressNone)
}

// except returns rows without the listed ones.
func except(rows []savepoint.Row, drop ...savepoint.Row) []savepoint.Row {
	var out []savepoint.Row
next:
	for _, r := range rows {
		for _, d := range drop {
			if r.Op == d.Op && string(r.Key) == string(d.Key) && string(r.Value) == string(d.Value) {
				continue next
			}
		}
		out = append(out, r)
	}
	return out
}

// replace returns rows with pairs[0] replaced by pairs[1], pairs[2] by
// pairs[3], ...; a zero Row as the replacement deletes (see nonNil).
func replace(rows []savepoint.Row, pairs ...savepoint.Row) []savepoint.Row {
	out := except(rows, everyOther(pairs, 0)...)
	return append(out, everyOther(pairs, 1)...)
}

func everyOther(rows []savepoint.Row, start int) []savepoint.Row {
	var out []savepoint.Row
	for i := start; i < len(rows); i += 2 {
		out = append(out, rows[i])
	}
	return out
}

func withOp(r savepoint.Row, op uint64) savepoint.Row { r.Op = op; return r }

func withSlot(r savepoint.Row, slot string) savepoint.Row {
	k := savepoint.ParseKey(r.Key)
	key := append([]byte{r.Key[0]}, slot...)
	key = append(key, '|')
	r.Key = append(key, k.UserKey...)
	return r
}

func withValue(r savepoint.Row, v []byte) savepoint.Row { r.Value = v; return r }

const slotDecls = `version: 1
slots:
  - {op: 7, slot: agg, key: int64, value: int64}
  - {op: 7, slot: seen, key: string, value: string, ttl: true}
  - {op: 7, slot: small, key: string, value: uint32}
  - {op: 8, slot: cart, key: string, value: int64, ttl: true, composite: true}
  - {op: 8, slot: profile, key: string, value: string}
rules:
`

// counts is one rule's expected (matched, dropped, changed).
type counts struct{ matched, dropped, changed int64 }

// TestRuleKinds applies each rule kind to the same two-subtask tree and
// checks the rows written, the per-rule counters, the version map of every
// output file and the report's accounting.
func TestRuleKinds(t *testing.T) {
	// Rows stored twice (operator rows are in both files) count twice.
	cases := []struct {
		name  string
		rules string
		files map[string]string
		// want is the output's logical rows (placed like the input's).
		want     []savepoint.Row
		counts   []counts
		dupes    int64
		versions string // packed version map of every output file
		check    func(t *testing.T, rep *transform.Report, out []located)
		wantErr  string
	}{
		{
			name:   "keep global",
			rules:  "  - keep: 'op != 9'\n",
			want:   except(baseRows, rK0),
			counts: []counts{{2, 2, 0}},
		},
		{
			name:   "keep scoped to a declared slot",
			rules:  "  - keep: {op: 8, slot: profile, expr: 'value contains \"pro\"'}\n",
			want:   except(baseRows, rP2),
			counts: []counts{{1, 1, 0}},
		},
		{
			name:   "drop global",
			rules:  "  - drop: 'slot == \"tmp\" || kind == \"raw\"'\n",
			want:   except(baseRows, rT1, rT2, rR1),
			counts: []counts{{3, 3, 0}},
		},
		{
			name:   "drop scoped to a declared slot with its value codec",
			rules:  "  - drop: {op: 7, slot: agg, expr: 'value == 0'}\n",
			want:   except(baseRows, rA3),
			counts: []counts{{1, 1, 0}},
		},
		{
			name:   "drop scoped to a slot of every operator",
			rules:  "  - drop: {slot: dedup, expr: 'key == \"zed\"'}\n",
			want:   except(baseRows, rD2, rE1),
			counts: []counts{{2, 2, 0}},
		},
		{
			name:     "drop_operator drops its rows and version entries",
			rules:    "  - drop_operator: {op: 12}\n",
			want:     except(baseRows, rD1, rD2),
			counts:   []counts{{2, 2, 0}},
			versions: "7|SeenTtl|1|seen\n7|UserCounter|1|agg\n8|Cart|1|cart",
		},
		{
			name:     "drop_operator of operator state in every file",
			rules:    "  - drop_operator: {op: 9}\n",
			want:     except(baseRows, rK0),
			counts:   []counts{{2, 2, 0}},
			versions: "7|SeenTtl|1|seen\n7|UserCounter|1|agg\n8|Cart|1|cart\n12|Dedup|3",
		},
		{
			name:     "remap_operator into a fresh operator",
			rules:    "  - remap_operator: {from: 12, to: 14}\n",
			want:     replace(baseRows, rD1, withOp(rD1, 14), rD2, withOp(rD2, 14)),
			counts:   []counts{{2, 0, 2}},
			versions: "7|SeenTtl|1|seen\n7|UserCounter|1|agg\n8|Cart|1|cart\n14|Dedup|3",
		},
		{
			name:    "remap_operator refuses a target with state",
			rules:   "  - remap_operator: {from: 12, to: 13}\n",
			wantErr: "rules.yaml:9:5: rule 1 (remap_operator): operator 13 already has state (1 rows)",
		},
		{
			// The empty slot name is a slot's, not the whole operator's:
			// dropping or renaming it leaves the target's other state.
			name:    "remap_operator refuses a target with state after a drop of its empty slot",
			rules:   "  - drop_slot: {op: 13, slot: \"\"}\n  - remap_operator: {from: 12, to: 13}\n",
			wantErr: "rule 2 (remap_operator): operator 13 already has state (1 rows)",
		},
		{
			name:    "remap_operator refuses a target with state after a rename of its empty slot",
			rules:   "  - rename_slot: {op: 13, from: \"\", to: zz}\n  - remap_operator: {from: 12, to: 13}\n",
			wantErr: "rule 2 (remap_operator): operator 13 already has state (1 rows)",
		},
		{
			// The target's own row for "zed" comes later in stream order
			// (op 13 sorts after op 12), so a restore keeps it.
			name:     "remap_operator with merge",
			rules:    "  - remap_operator: {from: 12, to: 13, merge: true}\n",
			want:     replace(except(baseRows, rD2), rD1, withOp(rD1, 13)),
			counts:   []counts{{2, 0, 2}},
			dupes:    1,
			versions: "7|SeenTtl|1|seen\n7|UserCounter|1|agg\n8|Cart|1|cart\n13|Dedup|3",
			check: func(t *testing.T, rep *transform.Report, _ []located) {
				if len(rep.Warnings) == 0 || !strings.Contains(strings.Join(rep.Warnings, "\n"), "1 rows had the same (op, key)") {
					t.Errorf("no warning about the resolved duplicate: %q", rep.Warnings)
				}
			},
		},
		{
			// (A second run of a migration over its own output: the old
			// operator is gone, and nothing is merged.)
			name:   "remap_operator of an operator with no rows into one with state does nothing",
			rules:  "  - remap_operator: {from: 99, to: 13}\n",
			want:   baseRows,
			counts: []counts{{0, 0, 0}},
			check: func(t *testing.T, rep *transform.Report, _ []located) {
				if !strings.Contains(strings.Join(rep.Warnings, "\n"), "rule 1 (remap_operator): operator 99 has no rows here; the rule does nothing") {
					t.Errorf("no warning that the rule does nothing: %q", rep.Warnings)
				}
			},
		},
		{
			name:     "remap_operator into an operator an earlier rule dropped",
			rules:    "  - drop_operator: {op: 13}\n  - remap_operator: {from: 12, to: 13}\n",
			want:     replace(except(baseRows, rE1), rD1, withOp(rD1, 13), rD2, withOp(rD2, 13)),
			counts:   []counts{{1, 1, 0}, {2, 0, 2}},
			versions: "7|SeenTtl|1|seen\n7|UserCounter|1|agg\n8|Cart|1|cart\n13|Dedup|3",
		},
		{
			name:  "rename_slot moves rows, keeps the key group, rebinds the version entry",
			rules: "  - rename_slot: {op: 7, from: agg, to: agg_v2}\n",
			want: replace(baseRows, rA1, withSlot(rA1, "agg_v2"), rA2, withSlot(rA2, "agg_v2"),
				rA3, withSlot(rA3, "agg_v2")),
			counts:   []counts{{3, 0, 3}},
			versions: "7|SeenTtl|1|seen\n7|UserCounter|1|agg_v2\n8|Cart|1|cart\n12|Dedup|3",
			check: func(t *testing.T, rep *transform.Report, out []located) {
				n := 0
				for _, l := range out {
					k := savepoint.ParseKey(l.Key)
					if k.SlotName() != "agg_v2" {
						continue
					}
					n++
					if int(l.Key[0]) != savepoint.KeyGroupOf(k.UserKey) {
						t.Errorf("renamed row %s has key group byte %d, want %d", l, l.Key[0], savepoint.KeyGroupOf(k.UserKey))
					}
				}
				if n != 3 {
					t.Errorf("%d rows in agg_v2, want 3", n)
				}
				wantSlots(t, rep, opAgg, "agg", 3, 0)
				wantSlots(t, rep, opAgg, "agg_v2", 0, 3)
			},
		},
		{
			name:  "rename_slot matches the whole slot name only",
			rules: "  - rename_slot: {op: 7, from: seen, to: seen_v2}\n",
			want: replace(baseRows, rS1, withSlot(rS1, "seen_v2"), rS2, withSlot(rS2, "seen_v2"),
				rS3, withSlot(rS3, "seen_v2"), rS4, withSlot(rS4, "seen_v2")),
			counts:   []counts{{4, 0, 4}},
			versions: "7|SeenTtl|1|seen_v2\n7|UserCounter|1|agg\n8|Cart|1|cart\n12|Dedup|3",
		},
		{
			// A version entry without a slot applies to every row of the
			// operator (format 4.4): renaming its slot to "" must not
			// unbind it.
			name:    "rename_slot to the empty slot refuses to unbind a version entry",
			rules:   "  - rename_slot: {op: 7, from: agg, to: \"\"}\n",
			wantErr: `rules.yaml:9:5: rule 1 (rename_slot): version map: op 7's entry for state type "UserCounter" is bound to slot "agg"`,
		},
		{
			name:  "rename_slot to the empty slot after drop_version of its entry",
			rules: "  - drop_version: {op: 7, state_type: UserCounter}\n  - rename_slot: {op: 7, from: agg, to: \"\"}\n",
			want: replace(baseRows, rA1, withSlot(rA1, ""), rA2, withSlot(rA2, ""),
				rA3, withSlot(rA3, "")),
			counts:   []counts{{0, 0, 0}, {3, 0, 3}},
			versions: "7|SeenTtl|1|seen\n8|Cart|1|cart\n12|Dedup|3",
		},
		{
			// drop_slot leaves SeenTtl bound to "seen": the rows renamed
			// into that name would be migrated as SeenTtl (format 4.4).
			name:     "rename_slot into a dropped slot whose version entry stays warns",
			rules:    "  - drop_slot: {op: 7, slot: seen}\n  - rename_slot: {op: 7, from: xseen, to: seen}\n",
			want:     replace(except(baseRows, rS1, rS2, rS3, rS4), rX1, withSlot(rX1, "seen")),
			counts:   []counts{{4, 4, 0}, {1, 0, 1}},
			versions: "7|SeenTtl|1|seen\n7|UserCounter|1|agg\n8|Cart|1|cart\n12|Dedup|3",
			check: func(t *testing.T, rep *transform.Report, _ []located) {
				want := `rule 2 (rename_slot): the version map binds state type "SeenTtl" of operator 7 to slot "seen"`
				if !strings.Contains(strings.Join(rep.Warnings, "\n"), want) {
					t.Errorf("warnings %q, want one containing %q", rep.Warnings, want)
				}
			},
		},
		{
			name:    "rename_slot refuses a target slot with rows",
			rules:   "  - rename_slot: {op: 7, from: xseen, to: seen}\n",
			wantErr: `rules.yaml:9:5: rule 1 (rename_slot): operator 7 already has slot "seen" (4 rows); renaming slot "xseen" (1 rows) into it would merge the two`,
		},
		{
			// Each refused rename is said, in rule order, in one run (errors
			// joined: one a line): rule 2's follows rule 1's.
			name:    "two rename_slots refused at once",
			rules:   "  - rename_slot: {op: 7, from: xseen, to: tmp}\n  - rename_slot: {op: 7, from: seen, to: tmp}\n",
			wantErr: "rules.yaml:10:5: rule 2 (rename_slot): operator 7 already has slot \"tmp\" (3 rows); renaming slot \"seen\" (4 rows)",
		},
		{
			name:    "two remap_operators refused at once",
			rules:   "  - remap_operator: {from: 12, to: 13}\n  - remap_operator: {from: 9, to: 7}\n",
			wantErr: "rules.yaml:10:5: rule 2 (remap_operator): operator 7 already has state",
		},
		{
			// xseen|alice becomes seen|alice, which exists: the later row
			// in stream order (the renamed one) is the one restored.
			name:   "rename_slot with merge onto an existing slot resolves duplicates",
			rules:  "  - rename_slot: {op: 7, from: xseen, to: seen, merge: true}\n",
			want:   replace(baseRows, rX1, withSlot(rX1, "seen"), rS1, savepoint.Row{}),
			counts: []counts{{1, 0, 1}},
			dupes:  1,
		},
		{
			// The merge keeps the renamed alice (stamp 0); the purge
			// drops it, and the copy the merge discarded (rS1, not
			// expired) does not come back.
			name:   "rename_slot with merge, then a purge of the copy kept",
			rules:  "  - rename_slot: {op: 7, from: xseen, to: seen, merge: true}\n  - purge_expired: {as_of: 500}\n",
			want:   except(baseRows, rX1, rS1),
			counts: []counts{{1, 0, 1}, {1, 1, 0}},
			dupes:  1,
		},
		{
			// op 13's zed (value 3) is kept by the merge; a filter that
			// drops it leaves no zed, not op 12's.
			name:     "remap_operator with merge, then a drop of the copy kept",
			rules:    "  - remap_operator: {from: 12, to: 13, merge: true}\n  - drop: {op: 13, expr: 'string(value_bytes) == \"3\"'}\n",
			want:     replace(except(baseRows, rD2, rE1), rD1, withOp(rD1, 13)),
			counts:   []counts{{2, 0, 2}, {1, 1, 0}},
			dupes:    1,
			versions: "7|SeenTtl|1|seen\n7|UserCounter|1|agg\n8|Cart|1|cart\n13|Dedup|3",
		},
		{
			// (An undeclared slot renamed into the name a declared one left
			// is refused: see rules' TestVacatedSlotNames.)
			name:  "rename_slot into a slot an earlier rule dropped, and a declared slot renamed away",
			rules: "  - drop_slot: {op: 7, slot: tmp}\n  - rename_slot: {op: 7, from: agg, to: tmp}\n  - rename_slot: {op: 7, from: seen, to: seen_v2}\n  - rename_slot: {op: 7, from: xseen, to: seen_x}\n",
			want: replace(except(baseRows, rT1, rT2), rA1, withSlot(rA1, "tmp"), rA2, withSlot(rA2, "tmp"), rA3, withSlot(rA3, "tmp"),
				rS1, withSlot(rS1, "seen_v2"), rS2, withSlot(rS2, "seen_v2"), rS3, withSlot(rS3, "seen_v2"), rS4, withSlot(rS4, "seen_v2"),
				rX1, withSlot(rX1, "seen_x")),
			counts:   []counts{{2, 2, 0}, {3, 0, 3}, {4, 0, 4}, {1, 0, 1}},
			versions: "7|SeenTtl|1|seen_v2\n7|UserCounter|1|tmp\n8|Cart|1|cart\n12|Dedup|3",
		},
		{
			name:   "drop_slot",
			rules:  "  - drop_slot: {op: 7, slot: tmp}\n",
			want:   except(baseRows, rT1, rT2),
			counts: []counts{{2, 2, 0}},
			check: func(t *testing.T, rep *transform.Report, _ []located) {
				wantSlots(t, rep, opAgg, "tmp", 2, 0)
				wantSlots(t, rep, opAgg, "agg", 3, 3)
			},
		},
		{
			// notes is not a composite slot: "alice\x1fn1" is not alice's.
			// "alicex\x1f..." in the composite cart is not alice's either.
			name:   "purge_keys inline string keys, composite prefix only in composite slots",
			rules:  "  - purge_keys: {keys: [alice, nobody]}\n",
			want:   except(baseRows, rS1, rX1, rC1, rC2, rP1, rN2, rD1),
			counts: []counts{{7, 7, 0}},
			check: func(t *testing.T, rep *transform.Report, _ []located) {
				wantPurge(t, ruleStats(t, rep, 1).Purge, map[string]int64{"alice": 7}, []string{"nobody"})
			},
		},
		{
			name:   "purge_keys keys_file with op and slot scope",
			rules:  "  - purge_keys: {keys_file: subjects.txt, op: 8, slot: cart}\n",
			files:  map[string]string{"subjects.txt": "# erasure 1\nalice\n\nbob\ncarol\n"},
			want:   except(baseRows, rC1, rC2, rC3),
			counts: []counts{{3, 3, 0}},
			check: func(t *testing.T, rep *transform.Report, _ []located) {
				p := ruleStats(t, rep, 1).Purge
				wantPurge(t, p, map[string]int64{"alice": 2, "bob": 1}, []string{"carol"})
				if p.KeysFile != "subjects.txt" || len(p.KeysDigest) != 64 {
					t.Errorf("audit keys file %q digest %q", p.KeysFile, p.KeysDigest)
				}
			},
		},
		{
			name:   "purge_keys inline int64 keys",
			rules:  "  - purge_keys: {keys: [1, 3, 99], codec: int64}\n",
			want:   except(baseRows, rA1, rA3),
			counts: []counts{{2, 2, 0}},
			check: func(t *testing.T, rep *transform.Report, _ []located) {
				wantPurge(t, ruleStats(t, rep, 1).Purge, map[string]int64{"1": 1, "3": 1}, []string{"99"})
			},
		},
		{
			name:   "purge_keys int64 keys_file scoped to a slot",
			rules:  "  - purge_keys: {keys_file: ids.txt, codec: int64, op: 7, slot: agg}\n",
			files:  map[string]string{"ids.txt": "2\r\n-5\r\n"},
			want:   except(baseRows, rA2),
			counts: []counts{{1, 1, 0}},
			check: func(t *testing.T, rep *transform.Report, _ []located) {
				wantPurge(t, ruleStats(t, rep, 1).Purge, map[string]int64{"2": 1}, []string{"-5"})
			},
		},
		{
			name:   "purge_keys scoped to an operator",
			rules:  "  - purge_keys: {keys: [alice], op: 12}\n",
			want:   except(baseRows, rD1),
			counts: []counts{{1, 1, 0}},
		},
		{
			// as_of 2000 ms: stamps 1000, 1500 and 2000 expire, 2001 and 2500
			// do not; dave's 3-byte value has no stamp; xseen is not a TTL slot.
			name:   "purge_expired",
			rules:  "  - purge_expired: {as_of: 2000}\n",
			want:   except(baseRows, rS1, rS2, rC1, rC3),
			counts: []counts{{4, 4, 0}},
			check: func(t *testing.T, rep *transform.Report, _ []located) {
				e := ruleStats(t, rep, 1).Expired
				if e == nil || e.ShortValues != 1 || e.AsOfMs != 2000 || len(e.Slots) != 2 {
					t.Errorf("expired info = %+v, want 1 short value, as_of 2000, 2 slots", e)
				}
			},
		},
		{
			name:   "purge_expired scoped to an operator, RFC 3339",
			rules:  "  - purge_expired: {as_of: \"1970-01-01T00:00:02Z\", op: 8}\n",
			want:   except(baseRows, rC1, rC3),
			counts: []counts{{2, 2, 0}},
		},
		{
			name:   "set_value re-encodes with the slot's codec",
			rules:  "  - set_value: {op: 7, slot: agg, expr: 'value * 100'}\n",
			want:   replace(baseRows, rA1, withValue(rA1, i64(1000)), rA2, withValue(rA2, i64(2000))),
			counts: []counts{{3, 0, 2}},
		},
		{
			name:  "set_value keeps the TTL stamp",
			rules: "  - set_value: {op: 8, slot: cart, expr: 'value + 10'}\n",
			want: replace(baseRows, rC1, withValue(rC1, ttl(1500, i64(11))), rC2, withValue(rC2, ttl(2500, i64(12))),
				rC3, withValue(rC3, ttl(1500, i64(13))), rC4, withValue(rC4, ttl(2500, i64(14)))),
			counts: []counts{{4, 0, 4}},
		},
		{
			name:    "set_value encode error names the row",
			rules:   "  - set_value: {op: 7, slot: small, expr: 'value - 10'}\n",
			wantErr: `op 7, slot "small", key "u"`,
		},
		{
			name:    "set_value on a TTL value without a stamp names the row",
			rules:   "  - set_value: {op: 7, slot: seen, expr: 'value + \"!\"'}\n",
			wantErr: `slot "seen", key "dave"`,
		},
		{
			name: "set_version",
			rules: "  - set_version: {op: 7, state_type: UserCounter, version: 2}\n" +
				"  - set_version: {op: 8, state_type: Cart, version: 5, slot: cart2}\n" +
				"  - set_version: {op: 9, state_type: Offsets, version: 1}\n",
			want:     baseRows,
			counts:   []counts{{0, 0, 0}, {0, 0, 0}, {0, 0, 0}},
			versions: "7|SeenTtl|1|seen\n7|UserCounter|2|agg\n8|Cart|5|cart2\n9|Offsets|1\n12|Dedup|3",
			check: func(t *testing.T, rep *transform.Report, _ []located) {
				for i := 1; i <= 3; i++ {
					if n := ruleStats(t, rep, i).VersionEntries; n != 2 {
						t.Errorf("rule %d changed the version map of %d files, want 2", i, n)
					}
				}
				want := []transform.VersionChange{
					{Op: 7, StateType: "UserCounter", Before: `v1 slot "agg"`, After: `v2 slot "agg"`,
						BeforeEntry: &savepoint.VersionState{Version: 1, Slot: "agg"}, AfterEntry: &savepoint.VersionState{Version: 2, Slot: "agg"}},
					{Op: 8, StateType: "Cart", Before: `v1 slot "cart"`, After: `v5 slot "cart2"`,
						BeforeEntry: &savepoint.VersionState{Version: 1, Slot: "cart"}, AfterEntry: &savepoint.VersionState{Version: 5, Slot: "cart2"}},
					{Op: 9, StateType: "Offsets", Before: "", After: "v1", AfterEntry: &savepoint.VersionState{Version: 1}},
				}
				if !reflect.DeepEqual(rep.VersionMap, want) {
					t.Errorf("version map changes = %+v, want %+v", rep.VersionMap, want)
				}
			},
		},
		{
			name:     "drop_version",
			rules:    "  - drop_version: {op: 7, state_type: SeenTtl}\n  - drop_version: {op: 7, state_type: Absent}\n",
			want:     baseRows,
			counts:   []counts{{0, 0, 0}, {0, 0, 0}},
			versions: "7|UserCounter|1|agg\n8|Cart|1|cart\n12|Dedup|3",
			check: func(t *testing.T, rep *transform.Report, _ []located) {
				if a, b := ruleStats(t, rep, 1).VersionEntries, ruleStats(t, rep, 2).VersionEntries; a != 2 || b != 0 {
					t.Errorf("version map files changed: %d, %d; want 2, 0", a, b)
				}
				// The rule that removed nothing says so, naming the
				// operator's state types as it sees them (rule 1 removed
				// SeenTtl); the other does not.
				want := `rule 2 (drop_version): the version map has no entry of operator 7 for state type "Absent" here (its state types: "UserCounter"); the rule does nothing`
				if n := len(rep.Warnings); n != 1 || rep.Warnings[0] != want {
					t.Errorf("warnings %q, want [%q]", rep.Warnings, want)
				}
			},
		},
		{
			// The warning names the state types as the rule sees them: after
			// the remap, op 99 holds op 12's.
			name:     "drop_version after remap_operator",
			rules:    "  - remap_operator: {from: 12, to: 99}\n  - drop_version: {op: 99, state_type: Dedupe}\n",
			want:     replace(baseRows, rD1, withOp(rD1, 99), rD2, withOp(rD2, 99)),
			counts:   []counts{{2, 0, 2}, {0, 0, 0}},
			versions: "7|SeenTtl|1|seen\n7|UserCounter|1|agg\n8|Cart|1|cart\n99|Dedup|3",
			check: func(t *testing.T, rep *transform.Report, _ []located) {
				want := `rule 2 (drop_version): the version map has no entry of operator 99 for state type "Dedupe" here (its state types: "Dedup"); the rule does nothing`
				if !slices.Contains(rep.Warnings, want) {
					t.Errorf("warnings %q, want %q", rep.Warnings, want)
				}
			},
		},
		{
			// drop_operator takes op 12's entry; a drop_version of it
			// after says so again, and is not warned of; one of an
			// entry op 12 never had is.
			name:     "drop_version after drop_operator",
			rules:    "  - drop_operator: {op: 12}\n  - drop_version: {op: 12, state_type: Dedup}\n  - drop_version: {op: 12, state_type: Absent}\n",
			want:     replace(baseRows, rD1, savepoint.Row{}, rD2, savepoint.Row{}),
			counts:   []counts{{2, 2, 0}, {0, 0, 0}, {0, 0, 0}},
			versions: "7|SeenTtl|1|seen\n7|UserCounter|1|agg\n8|Cart|1|cart",
			check: func(t *testing.T, rep *transform.Report, _ []located) {
				want := `rule 3 (drop_version): the version map has no entry of operator 12 for state type "Absent" here (it has none); the rule does nothing`
				if len(rep.Warnings) != 1 || rep.Warnings[0] != want {
					t.Errorf("warnings %q, want [%q]", rep.Warnings, want)
				}
			},
		},
		{
			name:   "keep false empties every file",
			rules:  "  - keep: 'false'\n",
			want:   nil,
			counts: []counts{{int64(len(placeAll(baseRows))), int64(len(placeAll(baseRows))), 0}},
			check: func(t *testing.T, rep *transform.Report, _ []located) {
				for _, f := range rep.Files {
					if f.RowsOut != 0 || f.Action != "rewrite" {
						t.Errorf("subtask %d: %d rows out, action %s", f.Subtask, f.RowsOut, f.Action)
					}
				}
			},
		},
		{
			// The declaration of seen follows it to seen2.
			name:     "purge_expired after rename_slot",
			rules:    "  - rename_slot: {op: 7, from: seen, to: seen2}\n  - purge_expired: {as_of: 1000, op: 7}\n",
			want:     replace(baseRows, rS1, savepoint.Row{}, rS2, withSlot(rS2, "seen2"), rS3, withSlot(rS3, "seen2"), rS4, withSlot(rS4, "seen2")),
			counts:   []counts{{4, 0, 4}, {1, 1, 0}},
			versions: "7|SeenTtl|1|seen2\n7|UserCounter|1|agg\n8|Cart|1|cart\n12|Dedup|3",
		},
		{
			name:    "remap_operator with merge refuses conflicting version stamps",
			rules:   "  - set_version: {op: 13, state_type: Dedup, version: 1}\n  - remap_operator: {from: 12, to: 13, merge: true}\n",
			wantErr: `rules.yaml:10:5: rule 2 (remap_operator): version map: remap version stamps of op 12 to op 13: state_type "Dedup" is already stamped on op 13 with version 1 slot "" (op 12 has version 3 slot ""): drop one of the two entries with a drop_version rule before this one`,
		},
		{
			name: "rules run in order on each row",
			rules: "  - rename_slot: {op: 7, from: agg, to: counts}\n" +
				"  - drop: {op: 7, slot: counts, expr: 'value_bytes[0] == 10'}\n" +
				"  - purge_keys: {keys: [3], codec: int64, op: 7, slot: counts}\n",
			want:     replace(baseRows, rA1, savepoint.Row{}, rA2, withSlot(rA2, "counts"), rA3, savepoint.Row{}),
			counts:   []counts{{3, 0, 3}, {1, 1, 0}, {1, 1, 0}},
			versions: "7|SeenTtl|1|seen\n7|UserCounter|1|counts\n8|Cart|1|cart\n12|Dedup|3",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in := writeBaseTree(t, filepath.Join(dir, "in"), baseRows)
			set := parseRules(t, slotDecls+tc.rules, tc.files)
			out := filepath.Join(dir, "out")
			rep, err := run(t, in, set, transform.Options{Out: out})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				for _, rs := range []string{"rule 1 (", "rule 2 ("} {
					if strings.Count(err.Error(), rs) > 1 {
						t.Errorf("error names %q twice: %v", rs, err)
					}
				}
				if exists(out) {
					t.Errorf("output %s written despite the error", out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sp := open(t, out)
			got := rowsOf(sp)
			sameRows(t, "output", got, placeAll(nonNil(tc.want)))
			checkAccounting(t, rep, len(placeAll(baseRows)), len(got))
			if rep.DuplicatesResolved != tc.dupes {
				t.Errorf("DuplicatesResolved = %d, want %d", rep.DuplicatesResolved, tc.dupes)
			}
			if len(rep.PerRule) != len(tc.counts) {
				t.Fatalf("%d rules in the report, want %d", len(rep.PerRule), len(tc.counts))
			}
			for i, c := range tc.counts {
				rs := rep.PerRule[i]
				if got := (counts{rs.Matched, rs.Dropped, rs.Changed}); got != c {
					t.Errorf("%s: matched/dropped/changed = %v, want %v", rs.Label, got, c)
				}
			}
			versions := tc.versions
			if versions == "" {
				versions = baseVersions(t).Pack()
			}
			for _, f := range sp.Files {
				if got := f.Snapshot.Versions.Pack(); got != versions {
					t.Errorf("subtask %d version map:\n%s\nwant:\n%s", f.Subtask, got, versions)
				}
				if !savepoint.Sorted(f.Snapshot.Rows) {
					t.Errorf("subtask %d: output rows are not in canonical order", f.Subtask)
				}
			}
			if vr := savepoint.Validate(sp, savepoint.ValidateOptions{}); vr.Errors() != 0 {
				t.Errorf("output does not validate: %d errors", vr.Errors())
			}
			if tc.check != nil {
				tc.check(t, rep, got)
			}
		})
	}
}

// nonNil drops the zero rows replace uses to delete a row.
func nonNil(rows []savepoint.Row) []savepoint.Row {
	var out []savepoint.Row
	for _, r := range rows {
		if r.Key != nil {
			out = append(out, r)
		}
	}
	return out
}

func wantSlots(t *testing.T, rep *transform.Report, op uint64, slot string, before, after int64) {
	t.Helper()
	for _, s := range rep.Slots {
		if s.Op == op && s.Slot == slot {
			if s.Before != before || s.After != after {
				t.Errorf("op %d slot %q: %d before, %d after; want %d, %d", op, slot, s.Before, s.After, before, after)
			}
			return
		}
	}
	t.Errorf("report has no op %d slot %q", op, slot)
}

func wantPurge(t *testing.T, p *transform.PurgeAudit, found map[string]int64, notFound []string) {
	t.Helper()
	if p == nil {
		t.Fatal("no purge audit in the report")
	}
	got := map[string]int64{}
	for _, f := range p.Found {
		got[f.Key] = f.Rows
	}
	if !reflect.DeepEqual(got, found) {
		t.Errorf("found = %v, want %v", got, found)
	}
	if !reflect.DeepEqual(p.NotFound, notFound) {
		t.Errorf("not found = %q, want %q", p.NotFound, notFound)
	}
	if p.Remaining != 0 {
		t.Errorf("rows remaining = %d, want 0", p.Remaining)
	}
	if p.KeysListed != len(found)+len(notFound) {
		t.Errorf("keys listed = %d, want %d", p.KeysListed, len(found)+len(notFound))
	}
}

// writeTreeAsIs writes a tree whose files hold the rows exactly as given
// (unsorted, as clink's hash maps write them), with sidecars and a marker.
func writeTreeAsIs(t testing.TB, dir string, ckpt uint64, files map[int][]savepoint.Row, vm savepoint.VersionMap) string {
	t.Helper()
	md := savepoint.CanonicalMetadata(savepoint.Metadata{{Key: "x-future-key", Value: "kept"}}, vm)
	return writeTreeAsIsOf(t, dir, ckpt, "j", md, files)
}

// writeTreeAsIsOf is writeTreeAsIs of job job, every file's metadata md.
func writeTreeAsIsOf(t testing.TB, dir string, ckpt uint64, job string, md savepoint.Metadata, files map[int][]savepoint.Row) string {
	t.Helper()
	var subs []int
	for s, rows := range files {
		p := filepath.Join(dir, "v1", strconv.Itoa(s), "checkpoint-"+strconv.FormatUint(ckpt, 10)+".snap")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := savepoint.WriteSnapshotFile(p, md, rows, savepoint.SnapshotOptions{AsIs: true, Sidecar: true, CheckpointID: ckpt}); err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s)
	}
	slices.Sort(subs)
	c := savepoint.Completed{Job: job, Checkpoint: ckpt, Generation: 1, Subtasks: subs, HasSubtasks: true}
	if err := os.MkdirAll(filepath.Join(dir, "_jobs", job), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "_jobs", job, "COMPLETED-"+strconv.FormatUint(ckpt, 10)), c.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestNotCopiedWhenBytesBesideRows: a copy carries every byte of a file,
// so a file holding bytes after its end-of-stream marker is written anew
// (with a warning naming it), in an erasure's run too; the others are
// copied.
func TestNotCopiedWhenBytesBesideRows(t *testing.T) {
	secret := []byte("bytes of an erased subject")
	for _, tc := range []struct {
		name, rules string
		rewrite     func(subtask int) bool
	}{
		{"trailing bytes", "  - drop_slot: {op: 7, slot: nothing}\n", func(s int) bool { return s == 1 }},
		{"erasure", "  - purge_keys: {keys: [999999], codec: int64}\n", func(s int) bool { return s == 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in := writeTreeAsIs(t, filepath.Join(dir, "in"), 5, threeSubtasks(), baseVersions(t))
			// Subtask 1's payload gets bytes after its stream, and a
			// sidecar that covers them.
			p := filepath.Join(in, "v1", "1", "checkpoint-5.snap")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, secret...)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p+".meta", savepoint.NewSidecar(5, b).Marshal(), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out")
			rep, err := run(t, in, parseRules(t, slotDecls+tc.rules, nil), transform.Options{Out: out})
			if err != nil {
				t.Fatal(err)
			}
			for _, fs := range rep.Files {
				want := "copy"
				if tc.rewrite(fs.Subtask) {
					want = "rewrite"
				}
				if fs.Action != want {
					t.Errorf("subtask %d: action %q, want %q", fs.Subtask, fs.Action, want)
				}
			}
			got, err := os.ReadFile(filepath.Join(out, "v1", "1", "checkpoint-5.snap"))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(got, secret) {
				t.Error("the bytes after the input's stream reached the output")
			}
			want := "v1/1/checkpoint-5.snap holds 26 bytes after its end-of-stream marker, which clink's reader ignores: the output leaves them out"
			if !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.HasPrefix(w, want) }) {
				t.Errorf("no warning %q in %q", want, rep.Warnings)
			}
			for _, f := range open(t, out).Files {
				if f.Verdict != savepoint.VerdictValid || f.Snapshot.TrailingBytes != 0 {
					t.Errorf("%s: verdict %s, %d trailing bytes", f.Rel, f.Verdict, f.Snapshot.TrailingBytes)
				}
			}
		})
	}
}

// TestErasureRewritesLooseBytes: in an erasure's run a file no rule
// changed is copied only when it holds nothing but its rows: one with
// bytes no row holds (here in a padding) is written anew, so that they do
// not reach the output; another run copies it as it is.
func TestErasureRewritesLooseBytes(t *testing.T) {
	in := filepath.Join(t.TempDir(), "in.snap")
	// The value "abc" ends the body: 5 bytes of padding before the
	// end-of-stream marker.
	rows := []savepoint.Row{keyed(99, "x", "k", []byte("abc"))}
	if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, baseVersions(t)), rows, savepoint.SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	end := len(b) - 8
	if !bytes.Equal(b[end-5:end], make([]byte, 5)) {
		t.Fatalf("test setup: the 5 bytes before the marker are % x, not padding", b[end-5:end])
	}
	copy(b[end-5:end], "anna")
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ rules, action string }{
		{"  - purge_keys: {keys: [999999], codec: int64}\n", "rewrite"},
		{"  - drop_slot: {op: 7, slot: nothing}\n", "copy"},
	} {
		out := filepath.Join(t.TempDir(), "out.snap")
		rep, err := run(t, in, parseRules(t, slotDecls+tc.rules, nil), transform.Options{Out: out})
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Files[0].Action != tc.action || bytes.Contains(got, []byte("anna")) != (tc.action == "copy") {
			t.Errorf("%s: action %s, output holds the loose bytes: %v; want %s", tc.rules, rep.Files[0].Action, bytes.Contains(got, []byte("anna")), tc.action)
		}
	}
}

// TestErasureRewritesFieldMetadata: a file whose schema gives a field
// custom metadata (which clink ignores, and neither clink's writer nor
// sptool's writes) holds bytes no row holds; an erasure writes it anew,
// so that they do not reach the output, even when no rule changed its rows.
func TestErasureRewritesFieldMetadata(t *testing.T) {
	in := filepath.Join(t.TempDir(), "in.snap")
	fields := []arrow.Field{
		{Name: "op_id", Type: arrow.PrimitiveTypes.Uint64, Metadata: arrow.NewMetadata([]string{"note"}, []string{"last seen: anna"})},
		{Name: "key_bytes", Type: arrow.BinaryTypes.Binary},
		{Name: "value_bytes", Type: arrow.BinaryTypes.Binary},
	}
	md := arrow.NewMetadata([]string{savepoint.MetaFormatVersion}, []string{"1"})
	schema := arrow.NewSchema(fields, &md)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer rb.Release()
	rb.Field(0).(*array.Uint64Builder).Append(99)
	rb.Field(1).(*array.BinaryBuilder).Append(savepoint.EncodeKeyedKey([]byte("x"), []byte("bob")))
	rb.Field(2).(*array.BinaryBuilder).Append([]byte("v"))
	rec := rb.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	if err := errors.Join(w.Write(rec), w.Close()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.snap")
	rep, err := run(t, in, parseRules(t, "version: 1\nrules:\n  - purge_keys: {keys: [anna]}\n", nil), transform.Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files[0].Action != "rewrite" || bytes.Contains(got, []byte("anna")) {
		t.Errorf("action %s, output holds the field's metadata: %v; want rewrite, and not", rep.Files[0].Action, bytes.Contains(got, []byte("anna")))
	}
}

// reversed returns the rows in reverse order (not canonical).
func reversed(rows []savepoint.Row) []savepoint.Row {
	out := slices.Clone(rows)
	slices.Reverse(out)
	return out
}

// threeSubtasks splits baseRows over a parallelism-3 tree, operator rows in
// every file.
func threeSubtasks() map[int][]savepoint.Row {
	files := map[int][]savepoint.Row{}
	for _, r := range baseRows {
		if r.IsOperatorState() {
			for s := 0; s < 3; s++ {
				files[s] = append(files[s], r)
			}
			continue
		}
		s := savepoint.SubtaskForKeyGroup(int(r.Key[0]), 3)
		files[s] = append(files[s], r)
	}
	return files
}

// TestUnchangedFilesAreCopied: a subtask file no rule changed is copied byte
// for byte with its sidecar (here: unsorted input files stay unsorted),
// while a changed file is rewritten canonically, keeping unknown metadata.
func TestUnchangedFilesAreCopied(t *testing.T) {
	dir := t.TempDir()
	files := threeSubtasks()
	for s := range files {
		files[s] = reversed(files[s])
	}
	in := writeTreeAsIs(t, filepath.Join(dir, "in"), 5, files, baseVersions(t))
	// Op 12's rows live in some subtasks only. (drop_operator would also
	// drop op 12's version entry, which changes every file.)
	set := parseRules(t, slotDecls+"  - drop_slot: {op: 12, slot: dedup}\n", nil)
	out := filepath.Join(dir, "out")
	rep, err := run(t, in, set, transform.Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	changed := map[int]bool{}
	for _, r := range []savepoint.Row{rD1, rD2} {
		changed[savepoint.SubtaskForKeyGroup(int(r.Key[0]), 3)] = true
	}
	if len(changed) == 3 {
		t.Fatal("test setup: every subtask holds a row of op 12")
	}
	for _, fs := range rep.Files {
		wantAction := "copy"
		if changed[fs.Subtask] {
			wantAction = "rewrite"
		}
		if fs.Action != wantAction {
			t.Errorf("subtask %d: action %q, want %q", fs.Subtask, fs.Action, wantAction)
		}
		rel := filepath.Join("v1", strconv.Itoa(fs.Subtask), "checkpoint-5.snap")
		inB, _ := os.ReadFile(filepath.Join(in, rel))
		outB, err := os.ReadFile(filepath.Join(out, rel))
		if err != nil {
			t.Fatal(err)
		}
		inM, _ := os.ReadFile(filepath.Join(in, rel+".meta"))
		outM, err := os.ReadFile(filepath.Join(out, rel+".meta"))
		if err != nil {
			t.Fatal(err)
		}
		if !changed[fs.Subtask] {
			if !bytes.Equal(inB, outB) || !bytes.Equal(inM, outM) {
				t.Errorf("subtask %d: unchanged file not copied byte for byte (payload equal %v, sidecar equal %v)", fs.Subtask, bytes.Equal(inB, outB), bytes.Equal(inM, outM))
			}
			continue
		}
		if bytes.Equal(inB, outB) {
			t.Errorf("subtask %d: changed file is byte-identical to the input", fs.Subtask)
		}
	}
	sp := open(t, out)
	for _, f := range sp.Files {
		if changed[f.Subtask] {
			if !savepoint.Sorted(f.Snapshot.Rows) {
				t.Errorf("subtask %d: rewritten file is not canonical", f.Subtask)
			}
			if v, _ := f.Snapshot.Metadata.Get("x-future-key"); v != "kept" {
				t.Errorf("subtask %d: unknown metadata key lost (%q)", f.Subtask, v)
			}
			if v, _ := f.Snapshot.Metadata.Get(savepoint.MetaProvenance); !strings.Contains(v, "rules_sha256="+set.Digest) {
				t.Errorf("subtask %d: provenance %q does not name the rules", f.Subtask, v)
			}
		} else if savepoint.Sorted(f.Snapshot.Rows) {
			t.Errorf("subtask %d: copied file was re-sorted", f.Subtask)
		}
	}
	var want []located
	for s, rows := range files {
		for _, r := range except(rows, rD1, rD2) {
			want = append(want, located{s, r})
		}
	}
	sameRows(t, "output", rowsOf(sp), want)
	if c := sp.Completed; c == nil || c.Job != "j" || c.Checkpoint != 5 || !reflect.DeepEqual(c.Subtasks, []int{0, 1, 2}) {
		t.Errorf("output COMPLETED marker = %+v", c)
	}
}

// TestZeroBytePayloadRewritten: a 0-byte payload, which clink reads as an
// absent file, is written as the canonical empty stream even when no rule
// changes it: sptool writes no 0-byte .snap (format 1.1).
func TestZeroBytePayloadRewritten(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "empty.snap")
	if err := os.WriteFile(in, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.snap")
	rep, err := run(t, in, parseRules(t, "version: 1\nrules: []\n", nil), transform.Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Files) != 1 || rep.Files[0].Action != "rewrite" {
		t.Errorf("files %+v, want one rewrite", rep.Files)
	}
	st, err := os.Stat(out)
	if err != nil || st.Size() == 0 {
		t.Fatalf("output %v, %v: want a non-empty payload", st, err)
	}
	sp := open(t, out)
	if n := sp.Files[0].Snapshot.NumRows(); n != 0 || sp.Files[0].Verdict != savepoint.VerdictValid {
		t.Errorf("output: %d rows, sidecar %s; want 0 rows and a valid sidecar", n, sp.Files[0].Verdict)
	}
	if v, _ := sp.Files[0].Snapshot.Metadata.Get(savepoint.MetaFormatVersion); v != "1" {
		t.Errorf("output format version %q", v)
	}
}

// A tree holding a 0-byte payload, which clink's restore takes for an
// absent file and refuses, is refused by apply, plan and rescale alike
// (a *MissingStateError naming the file and its subtask), unless
// AllowMissingState accepts it as empty state, with a warning.
func TestZeroBytePayloadInTree(t *testing.T) {
	dir := t.TempDir()
	in := writeTree(t, filepath.Join(dir, "in"), 5, "j", threeSubtasks(), baseVersions(t), "")
	payload := filepath.Join(in, "v1", "1", "checkpoint-5.snap")
	if err := os.WriteFile(payload, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(payload+savepoint.SidecarSuffix, []byte("clink_checkpoint_meta=1\ncheckpoint_id=5\npayload_bytes=0\npayload_crc32c=0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	keep := parseRules(t, "version: 1\nrules: []\n", nil)
	rescale := parseRules(t, "version: 1\nrules:\n  - rescale: {parallelism: 2}\n", nil)
	out := filepath.Join(dir, "out")
	writers := []struct {
		name string
		set  *rules.Set
		dry  bool
	}{{"apply", keep, false}, {"plan", keep, true}, {"rescale", rescale, false}}
	for _, tc := range writers {
		_, err := run(t, in, tc.set, transform.Options{Out: out, DryRun: tc.dry})
		var me *transform.MissingStateError
		if !errors.As(err, &me) || !slices.Equal(me.Subtasks, []int{1}) || !strings.Contains(err.Error(), filepath.Join("v1", "1", "checkpoint-5.snap")+" (subtask 1)") {
			t.Errorf("%s: %v; want a MissingStateError naming v1/1", tc.name, err)
		}
		if exists(out) {
			t.Fatalf("%s: output written", tc.name)
		}
	}
	rep, err := run(t, in, keep, transform.Options{Out: out, AllowMissingState: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, "is 0 bytes, accepted as empty state") }) {
		t.Errorf("warnings %q: want one on the 0-byte payload", rep.Warnings)
	}
	sp := open(t, out)
	if f := sp.Files[1]; f.Size == 0 || f.Snapshot.NumRows() != 0 {
		t.Errorf("output subtask 1: %d bytes, %d rows; want a zero-row stream", f.Size, f.Snapshot.NumRows())
	}

	// A payload compressed as a whole around nothing is one compressed:
	// refused alike, and said so.
	os.RemoveAll(out)
	var z bytes.Buffer
	zw, err := savepoint.NewCompressor(savepoint.CompressGzip, &z)
	if err != nil || zw.Close() != nil {
		t.Fatalf("gzip: %v", err)
	}
	empty := z.Bytes()
	if err := os.WriteFile(payload, empty, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(payload+savepoint.SidecarSuffix, []byte(fmt.Sprintf("clink_checkpoint_meta=1\ncheckpoint_id=5\npayload_bytes=%d\npayload_crc32c=%d\n", len(empty), savepoint.CRC32C(empty))), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range writers {
		_, err := run(t, in, tc.set, transform.Options{Out: out, DryRun: tc.dry, Decompress: true})
		var me *transform.MissingStateError
		if !errors.As(err, &me) || !slices.Equal(me.Subtasks, []int{1}) || !strings.Contains(err.Error(), filepath.Join("v1", "1", "checkpoint-5.snap")+" (subtask 1, 0 bytes once gzip-decompressed)") {
			t.Errorf("%s of a gzip payload of nothing: %v; want a MissingStateError naming v1/1", tc.name, err)
		}
		if exists(out) {
			t.Fatalf("%s: output written", tc.name)
		}
	}
	rep, err = run(t, in, keep, transform.Options{Out: out, AllowMissingState: true, Decompress: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(rep.Warnings, func(w string) bool {
		return strings.Contains(w, "decompresses (gzip) to 0 bytes, accepted as empty state")
	}) {
		t.Errorf("warnings %q: want one on the gzip payload of nothing", rep.Warnings)
	}
	if f := open(t, out).Files[1]; f.Compression != savepoint.CompressNone || f.Snapshot.NumRows() != 0 {
		t.Errorf("output subtask 1: compression %q, %d rows; want a zero-row stream", f.Compression, f.Snapshot.NumRows())
	}

	// A changelog+file tree's 0-byte changelog: refused, and said so.
	cl := filepath.Join(dir, "changelog")
	if err := os.CopyFS(cl, os.DirFS("../testdata/independent/changelog-file")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cl, "v1", "2", "changelog-17.snap"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = run(t, cl, keep, transform.Options{Out: filepath.Join(dir, "clout")})
	var me *transform.MissingStateError
	if !errors.As(err, &me) || !me.Changelog || !strings.Contains(err.Error(), "a changelog+file subtask's changelog holds the handle") {
		t.Errorf("0-byte changelog: %v", err)
	}

	// A 0-byte materialisation, which clink restores as empty state
	// without a word: refused by every writer, and accepted with a
	// warning, written as an empty materialisation, when told.
	cm := filepath.Join(dir, "mat")
	if err := os.CopyFS(cm, os.DirFS("../testdata/independent/changelog-file")); err != nil {
		t.Fatal(err)
	}
	mat := filepath.Join("v1", "0", "materializations", "mat-17.bin")
	if err := os.WriteFile(filepath.Join(cm, mat), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	mout := filepath.Join(dir, "matout")
	for _, tc := range writers {
		_, err := run(t, cm, tc.set, transform.Options{Out: mout, DryRun: tc.dry})
		var me *transform.MissingStateError
		if !errors.As(err, &me) || len(me.Files) != 0 || !slices.Equal(me.Materializations, []string{mat}) || !slices.Equal(me.MaterializationSubtasks, []int{0}) ||
			!strings.Contains(err.Error(), "0-byte materialisation "+mat+" (subtask 0): clink restores it as empty materialised state without a word") {
			t.Errorf("0-byte materialisation, %s: %v", tc.name, err)
		}
		if exists(mout) {
			t.Fatalf("%s: output written", tc.name)
		}
	}
	rep, err = run(t, cm, keep, transform.Options{Out: mout, AllowMissingState: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(rep.Warnings, func(w string) bool {
		return strings.Contains(w, "materialisation "+mat+", which subtask 0's changelog references, is 0 bytes")
	}) {
		t.Errorf("warnings %q: want one on the 0-byte materialisation", rep.Warnings)
	}
}

// TestConfirmedMarkerCarried: a CONFIRMED marker is carried over, byte for
// byte at the same checkpoint id, and renamed with its checkpoint= line
// rewritten at another (--checkpoint-id).
func TestConfirmedMarkerCarried(t *testing.T) {
	dir := t.TempDir()
	in := writeTree(t, filepath.Join(dir, "in"), 5, "j", threeSubtasks(), baseVersions(t), "")
	body := "job=j\r\ncheckpoint=5\r\nextra=1"
	if err := os.WriteFile(filepath.Join(in, "_jobs", "j", "CONFIRMED-5"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	set := parseRules(t, "version: 1\nrules: []\n", nil)
	for _, tc := range []struct {
		ckpt       uint64
		name, want string
	}{
		{0, "CONFIRMED-5", body},
		{9, "CONFIRMED-9", "job=j\r\ncheckpoint=9\r\nextra=1"},
	} {
		out := filepath.Join(dir, fmt.Sprint("out", tc.ckpt))
		if _, err := run(t, in, set, transform.Options{Out: out, Checkpoint: tc.ckpt}); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(out, "_jobs", "j", tc.name))
		if err != nil || string(got) != tc.want {
			t.Errorf("checkpoint %d: %s = %q, %v; want %q", tc.ckpt, tc.name, got, err, tc.want)
		}
	}
}

// A marker whose job= line is not its directory's name: the CONFIRMED marker
// beside it is carried over, both are written under the job id, and the
// input's open says so. A job id naming a path is refused at open, and
// nothing is written outside the output.
func TestMarkerJobLine(t *testing.T) {
	dir := t.TempDir()
	in := writeTree(t, filepath.Join(dir, "in"), 5, "j", threeSubtasks(), baseVersions(t), "")
	marker := filepath.Join(in, "_jobs", "j", "COMPLETED-5")
	body, err := os.ReadFile(marker)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in, "_jobs", "j", "CONFIRMED-5"), []byte("job=k\ncheckpoint=5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(marker, []byte(strings.Replace(string(body), "job=j", "job=k", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	sp := open(t, in)
	if !slices.ContainsFunc(sp.Notes, func(n string) bool { return strings.Contains(n, "says job=k, not its directory's name j") }) {
		t.Errorf("notes %q: want one on the job= line", sp.Notes)
	}
	set := parseRules(t, "version: 1\nrules: []\n", nil)
	out := filepath.Join(dir, "out")
	if _, err := run(t, in, set, transform.Options{Out: out}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"COMPLETED-5", "CONFIRMED-5"} {
		if _, err := os.Stat(filepath.Join(out, "_jobs", "k", name)); err != nil {
			t.Errorf("output %s: %v", name, err)
		}
	}

	// A job= line naming a path: the job is the marker's directory's.
	if err := os.WriteFile(marker, []byte(strings.Replace(string(body), "job=j", "job=../../../escaped", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	sp = open(t, in)
	if sp.Job != "j" || !slices.ContainsFunc(sp.Notes, func(n string) bool {
		return strings.Contains(n, "which is no directory name; the job is taken to be its directory's name, j")
	}) {
		t.Errorf("job %q, notes %q: want j and a note on the job= line", sp.Job, sp.Notes)
	}
	out = filepath.Join(dir, "out2")
	if _, err := run(t, in, set, transform.Options{Out: out}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"COMPLETED-5", "CONFIRMED-5"} {
		if _, err := os.Stat(filepath.Join(out, "_jobs", "j", name)); err != nil {
			t.Errorf("output %s: %v", name, err)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 3 {
		t.Errorf("%s holds %d entries, want in, out and out2: written outside the output?", dir, len(left))
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escaped")); err == nil {
		t.Error("the marker was written where its job= line leads")
	}
}

// A generation no COMPLETED marker holds is refused before anything is
// written.
func TestGenerationAboveMarkers(t *testing.T) {
	dir := t.TempDir()
	in := writeTree(t, filepath.Join(dir, "in"), 5, "j", threeSubtasks(), baseVersions(t), "")
	set := parseRules(t, "version: 1\nrules: []\n", nil)
	out := filepath.Join(dir, "out")
	_, err := run(t, in, set, transform.Options{Out: out, Generation: savepoint.MaxGeneration + 1})
	if err == nil || !strings.Contains(err.Error(), "the largest a COMPLETED marker holds") {
		t.Errorf("generation 2^31: %v", err)
	}
	if exists(out) {
		t.Error("output written")
	}
	// An input of such a generation is refused too, by a plan as by an
	// apply, unless the output is given another.
	if err := os.Rename(filepath.Join(in, "v1"), filepath.Join(in, "v3000000000")); err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		_, err := run(t, in, set, transform.Options{Out: out, DryRun: dry})
		if err == nil || !strings.Contains(err.Error(), "the input's generation v3000000000 is above 2147483647") {
			t.Errorf("dry run %v: %v", dry, err)
		}
	}
	if _, err := run(t, in, set, transform.Options{Out: out, Generation: 2}); err != nil {
		t.Errorf("with generation 2: %v", err)
	}
}

// TestPlanEqualsApply: a dry run reports exactly what apply does and
// writes nothing.
func TestPlanEqualsApply(t *testing.T) {
	dir := t.TempDir()
	in := writeBaseTree(t, filepath.Join(dir, "in"), baseRows)
	set := parseRules(t, slotDecls+`  - purge_keys: {keys: [bob, nobody]}
  - purge_expired: {as_of: 1500, op: 8}
  - rename_slot: {op: 7, from: xseen, to: seen, merge: true}
  - set_value: {op: 7, slot: agg, expr: 'value * 2'}
  - drop: 'kind == "raw"'
  - set_version: {op: 7, state_type: UserCounter, version: 2}
`, nil)
	before := checksums(t, dir)
	out := filepath.Join(dir, "out")
	plan, err := run(t, in, set, transform.Options{DryRun: true, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	sameChecksums(t, "after plan", checksums(t, dir), before)
	if exists(out) || !plan.DryRun || plan.Output != nil {
		t.Fatalf("plan wrote something: output exists %v, dry run %v, output %+v", exists(out), plan.DryRun, plan.Output)
	}
	apply, err := run(t, in, set, transform.Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if apply.DryRun || apply.Output == nil || apply.Output.Files != 2 {
		t.Fatalf("apply report: dry run %v, output %+v", apply.DryRun, apply.Output)
	}
	if plan.RowsDropped == 0 || plan.DuplicatesResolved != 1 {
		t.Fatalf("test setup: plan dropped %d rows, resolved %d duplicates", plan.RowsDropped, plan.DuplicatesResolved)
	}
	// Only the output description differs.
	norm := *apply
	norm.DryRun, norm.Output = true, nil
	norm.Files = nil
	for _, f := range apply.Files {
		c := *f
		if c.Output == "" {
			t.Errorf("apply report: subtask %d has no output file", f.Subtask)
		}
		c.Output = ""
		norm.Files = append(norm.Files, &c)
	}
	pj, _ := json.MarshalIndent(plan, "", " ")
	aj, _ := json.MarshalIndent(&norm, "", " ")
	if !bytes.Equal(pj, aj) {
		t.Errorf("plan and apply reports differ:\nplan:\n%s\napply:\n%s", pj, aj)
	}
	checkAccounting(t, apply, len(placeAll(baseRows)), len(readRows(t, out)))
}

// A changelog payload stored as a file backend's checkpoint-<id>.snap,
// which clink's file backend refuses, is written in canonical form even
// when no rule changes it; the other files are copied.
func TestChangelogPayloadRewritten(t *testing.T) {
	in := filepath.Join("..", "testdata", "independent", "changelog-p4")
	out := filepath.Join(t.TempDir(), "out")
	rep, err := run(t, in, parseRules(t, "version: 1\nrules:\n  - drop: 'false'\n", nil), transform.Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	sp := open(t, in)
	changelogs := 0
	for i, f := range rep.Files {
		want := "copy"
		if sp.Files[i].Snapshot.Variant == savepoint.Changelog {
			want = "rewrite"
			changelogs++
		}
		if f.Action != want {
			t.Errorf("%s: %s, want %s", f.Input, f.Action, want)
		}
	}
	if changelogs == 0 {
		t.Fatal("the fixture holds no changelog payload")
	}
	o := open(t, out)
	for _, f := range o.Files {
		if f.Snapshot.Variant != savepoint.Canonical && f.Snapshot.Variant != savepoint.Empty {
			t.Errorf("output %s: variant %v", f.Rel, f.Snapshot.Variant)
		}
	}
	if n := len(savepoint.Validate(o, savepoint.ValidateOptions{}).ByCheck(savepoint.CheckChangelogOnFileBackend)); n != 0 {
		t.Errorf("%d changelog payloads left in the output", n)
	}
}

// A file's output keeps the checkpoint id of its input's sidecar, which the
// file's name need not carry; a copy's sidecar is the input's, byte for
// byte.
func TestFileOutputKeepsSidecarCheckpoint(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "state.snap")
	if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, baseVersions(t)), baseRows, savepoint.SnapshotOptions{Sidecar: true, CheckpointID: 5}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ rules, action string }{
		{"  - drop_slot: {op: 7, slot: tmp}\n", "rewrite"},
		{"  - drop_slot: {op: 7, slot: nothing}\n", "copy"},
	} {
		out := filepath.Join(t.TempDir(), "out.snap")
		rep, err := run(t, in, parseRules(t, slotDecls+tc.rules, nil), transform.Options{Out: out})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Files[0].Action != tc.action {
			t.Errorf("action %s, want %s", rep.Files[0].Action, tc.action)
		}
		if f := open(t, out).Files[0]; f.Sidecar == nil || f.Sidecar.CheckpointID != 5 || f.Verdict != savepoint.VerdictValid {
			t.Errorf("%s: sidecar %+v, verdict %s; want checkpoint id 5", tc.action, f.Sidecar, f.Verdict)
		}
		if tc.action == "copy" {
			a, _ := os.ReadFile(in + ".meta")
			b, _ := os.ReadFile(out + ".meta")
			if !bytes.Equal(a, b) {
				t.Errorf("copy's sidecar\n%s\ndiffers from the input's\n%s", b, a)
			}
		}
	}
}

// TestCompressedInput: a whole-file compressed input gives an output
// compressed the same way (rewritten or copied), with a valid sidecar,
// under a name that says so: a name that does not (or that names a
// compression for a plain output) is refused before any work.
func TestCompressedInput(t *testing.T) {
	for _, comp := range []string{savepoint.CompressZstd, savepoint.CompressGzip, savepoint.CompressLZ4} {
		t.Run(comp, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "checkpoint-9.snap")
			md := savepoint.CanonicalMetadata(nil, baseVersions(t))
			if _, err := savepoint.WriteSnapshotFile(in, md, baseRows, savepoint.SnapshotOptions{Compression: comp, Sidecar: true, CheckpointID: 9}); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				rules string
				want  []savepoint.Row
			}{
				{"  - drop_slot: {op: 7, slot: tmp}\n", except(baseRows, rT1, rT2)},
				{"  - drop_slot: {op: 7, slot: nothing}\n", baseRows},
			} {
				plain := filepath.Join(t.TempDir(), "out.snap")
				_, err := run(t, in, parseRules(t, slotDecls+tc.rules, nil), transform.Options{Out: plain})
				if want := "the output is " + comp + "-compressed, as its input is, and its name must say so (out.snap" + savepoint.CompressionSuffix(comp) + ")"; err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("output named %s: %v, want %q", plain, err, want)
				}
				out := plain + savepoint.CompressionSuffix(comp)
				rep, err := run(t, in, parseRules(t, slotDecls+tc.rules, nil), transform.Options{Out: out})
				if err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				if got := savepoint.DetectCompression(b); got != comp {
					t.Errorf("%s output compression %q, want %q", rep.Files[0].Action, got, comp)
				}
				// clink restores only a plain stream: the report says so.
				warn := "the output file made of checkpoint-9.snap (" + comp + ") is written compressed as a whole, as the input is: clink's reader restores only an uncompressed stream"
				if !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.HasPrefix(w, warn) }) {
					t.Errorf("warnings %q lack %q", rep.Warnings, warn)
				}
				sp := open(t, out)
				f := sp.Files[0]
				if f.Compression != comp || f.Verdict != savepoint.VerdictValid || f.Sidecar == nil || f.Sidecar.CheckpointID != 9 {
					t.Errorf("output: compression %q, verdict %s, sidecar %+v", f.Compression, f.Verdict, f.Sidecar)
				}
				var want []located
				for _, r := range tc.want {
					want = append(want, located{-1, r})
				}
				sameRows(t, "output", rowsOf(sp), want)
				if f.Snapshot.Versions.Pack() != baseVersions(t).Pack() {
					t.Errorf("version map %q lost", f.Snapshot.Versions.Pack())
				}
			}
		})
	}
	t.Run("tree", func(t *testing.T) {
		dir := t.TempDir()
		files := map[int][]savepoint.Row{}
		for _, l := range placeAll(baseRows) {
			files[l.Subtask] = append(files[l.Subtask], l.Row)
		}
		in := writeTree(t, filepath.Join(dir, "in"), 5, "j", files, baseVersions(t), savepoint.CompressZstd)
		out := filepath.Join(dir, "out")
		if _, err := run(t, in, parseRules(t, slotDecls+"  - drop_slot: {op: 7, slot: tmp}\n", nil), transform.Options{Out: out}); err != nil {
			t.Fatal(err)
		}
		sp := open(t, out)
		for _, f := range sp.Files {
			if f.Compression != savepoint.CompressZstd || f.Verdict != savepoint.VerdictValid {
				t.Errorf("subtask %d: compression %q verdict %s", f.Subtask, f.Compression, f.Verdict)
			}
		}
		sameRows(t, "output", rowsOf(sp), placeAll(except(baseRows, rT1, rT2)))
	})
}

// TestDeterministic: the same input and rules give byte-identical output.
func TestDeterministic(t *testing.T) {
	dir := t.TempDir()
	files := threeSubtasks()
	for s := range files {
		files[s] = reversed(files[s])
	}
	in := writeTreeAsIs(t, filepath.Join(dir, "in"), 5, files, baseVersions(t))
	src := slotDecls + `  - remap_operator: {from: 12, to: 13, merge: true}
  - rename_slot: {op: 7, from: agg, to: agg_v2}
  - set_value: {op: 7, slot: agg_v2, expr: 'value + 1'}
  - purge_keys: {keys: [bob]}
  - set_version: {op: 7, state_type: UserCounter, version: 2, slot: agg_v2}
`
	var sums []map[string]string
	for i := range 2 {
		out := filepath.Join(dir, "out"+strconv.Itoa(i))
		// Parse each time: nothing may depend on the Set's identity or Jobs.
		if _, err := run(t, in, parseRules(t, src, nil), transform.Options{Out: out, Jobs: 1 + 2*i}); err != nil {
			t.Fatal(err)
		}
		sums = append(sums, checksums(t, out))
	}
	if len(sums[0]) < 8 {
		t.Fatalf("output holds only %v", sums[0])
	}
	sameChecksums(t, "second run", sums[1], sums[0])

	// A single file, twice.
	file := filepath.Join(dir, "one.snap")
	if _, err := savepoint.WriteSnapshotFile(file, nil, reversed(baseRows), savepoint.SnapshotOptions{AsIs: true}); err != nil {
		t.Fatal(err)
	}
	var payloads [][]byte
	for i := range 2 {
		out := filepath.Join(dir, "one-out"+strconv.Itoa(i)+".snap")
		if _, err := run(t, file, parseRules(t, src, nil), transform.Options{Out: out}); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(out)
		m, _ := os.ReadFile(out + ".meta")
		payloads = append(payloads, append(b, m...))
	}
	if !bytes.Equal(payloads[0], payloads[1]) || len(payloads[0]) == 0 {
		t.Error("two runs on a single file gave different bytes")
	}
}

// TestOutputRefused: an existing output is refused unless Force; the input
// itself, a path inside it, or inside a generation directory's checkpoint
// directory are always refused; nothing is written.
func TestOutputRefused(t *testing.T) {
	dir := t.TempDir()
	in := writeBaseTree(t, filepath.Join(dir, "in"), baseRows)
	file := filepath.Join(dir, "checkpoint-3.snap")
	if _, err := savepoint.WriteSnapshotFile(file, nil, baseRows, savepoint.SnapshotOptions{Sidecar: true, CheckpointID: 3}); err != nil {
		t.Fatal(err)
	}
	set := parseRules(t, slotDecls+"  - drop_slot: {op: 7, slot: tmp}\n", nil)
	inSums := checksums(t, in)

	// An earlier output (a tree), and a directory of other files.
	existing := filepath.Join(dir, "existing")
	if err := os.MkdirAll(filepath.Join(existing, "v9", "0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(existing, "v9", "0", "checkpoint-1.snap"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	others := filepath.Join(dir, "others")
	if err := os.MkdirAll(filepath.Join(others, "v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(others, "keep.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	existingFile := filepath.Join(dir, "existing.snap")
	if err := os.WriteFile(existingFile, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, in, out string
		wantErr       string
		is            error
	}{
		{"existing directory", in, existing, "output " + existing + " exists", fs.ErrExist},
		{"existing file", file, existingFile, "output " + existingFile + " exists", fs.ErrExist},
		{"the input tree", in, in, "must not be the input", savepoint.ErrOutputIsInput},
		{"the input tree, spelled differently", in, in + "/./v1/..", "must not be the input", savepoint.ErrOutputIsInput},
		{"the input file", file, file, "must not be the input", savepoint.ErrOutputIsInput},
		{"inside the input tree", in, filepath.Join(in, "v1", "out"), "lies inside the input", savepoint.ErrOutputIsInput},
		{"a new generation beside the input generation", filepath.Join(in, "v1"), filepath.Join(in, "v2"), "inside the input", savepoint.ErrOutputIsInput},
		{"containing the input", in, dir, "contains the input", savepoint.ErrOutputIsInput},
		{"a file named as a directory", file, filepath.Join(dir, "new.snap") + "/", "ends with /, which names a directory: a file output takes the file's name", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := checksums(t, dir)
			_, err := run(t, tc.in, set, transform.Options{Out: tc.out})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			sameChecksums(t, "after the refusal", checksums(t, dir), before)
		})
	}

	t.Run("force replaces only an earlier output", func(t *testing.T) {
		before := checksums(t, dir)
		for _, c := range []struct{ in, out, want string }{
			{in, others, "it holds keep.txt, which is not part of a checkpoint tree"},
			{in, existingFile, "is not a directory: a checkpoint tree will not replace it"},
			{file, existing, "is a directory, which a file will not replace"},
		} {
			if _, err := run(t, c.in, set, transform.Options{Out: c.out, Force: true}); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s over %s: error %v, want one containing %q", filepath.Base(c.in), filepath.Base(c.out), err, c.want)
			}
		}
		sameChecksums(t, "after the refusals", checksums(t, dir), before)
	})

	t.Run("force replaces", func(t *testing.T) {
		rep, err := run(t, in, set, transform.Options{Out: existing, Force: true})
		if err != nil {
			t.Fatal(err)
		}
		if exists(filepath.Join(existing, "v9")) {
			t.Error("the replaced output's old content survived")
		}
		sameRows(t, "forced output", readRows(t, existing), placeAll(except(baseRows, rT1, rT2)))
		checkAccounting(t, rep, len(placeAll(baseRows)), -1)
		if _, err := run(t, file, set, transform.Options{Out: existingFile, Force: true}); err != nil {
			t.Fatal(err)
		}
		var want []located
		for _, r := range except(baseRows, rT1, rT2) {
			want = append(want, located{-1, r})
		}
		sameRows(t, "forced file output", readRows(t, existingFile), want)
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.Contains(e.Name(), ".sptool-") || strings.Contains(e.Name(), ".part.") {
				t.Errorf("left over: %s", e.Name())
			}
		}
	})
	sameChecksums(t, "input", checksums(t, in), inSums)
}

// TestInputUntouched: apply never modifies the input (every file's bytes,
// and no file added or removed), whatever the rules do.
func TestInputUntouched(t *testing.T) {
	dir := t.TempDir()
	in := writeBaseTree(t, filepath.Join(dir, "in"), baseRows)
	before := checksums(t, in)
	set := parseRules(t, slotDecls+`  - remap_operator: {from: 12, to: 14}
  - rename_slot: {op: 7, from: agg, to: a2}
  - purge_keys: {keys: [alice]}
  - purge_expired: {as_of: 2000}
  - drop_operator: {op: 9}
  - set_version: {op: 7, state_type: X, version: 3}
`, nil)
	for i, opts := range []transform.Options{{DryRun: true}, {Out: filepath.Join(dir, "out")}, {Out: filepath.Join(dir, "out"), Force: true}} {
		if _, err := run(t, in, set, opts); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		sameChecksums(t, "input after run "+strconv.Itoa(i), checksums(t, in), before)
	}
	// The output is a different tree, and a valid one.
	if vr := savepoint.Validate(open(t, filepath.Join(dir, "out")), savepoint.ValidateOptions{}); vr.Errors() != 0 {
		t.Errorf("output has %d validation errors", vr.Errors())
	}
}

// TestStoredDuplicates: an (op, key) stored twice in one file is resolved
// as clink's restore does when the file is rewritten (and counted), and
// kept as stored when the file is copied.
func TestStoredDuplicates(t *testing.T) {
	dir := t.TempDir()
	older := withValue(rA1, i64(1))
	files := map[int][]savepoint.Row{0: {older, rA1, rT1, rK0, operatorRow(opSrc, "__kafka_off__:0", i64(50))}, 1: {rT2}}
	in := writeTreeAsIs(t, filepath.Join(dir, "in"), 5, files, savepoint.VersionMap{})
	for _, tc := range []struct {
		rules string
		want  []located
		dupes int64
	}{
		// rA1 is the later copy; of the two 8-byte offsets the greater wins.
		{"  - drop_slot: {op: 7, slot: tmp}\n", []located{{0, rA1}, {0, rK0}}, 2},
		{"  - drop_slot: {op: 7, slot: nothing}\n", []located{{0, older}, {0, rA1}, {0, rT1}, {0, rK0}, {0, operatorRow(opSrc, "__kafka_off__:0", i64(50))}, {1, rT2}}, 0},
	} {
		checkDedup(t, in, tc.rules, tc.want, tc.dupes, 6)
	}
}

// TestMergeLosersStayLost: a copy that a merge resolved away does not come
// back when a later rule drops, by its value, the copy the merge kept; nor
// when the rules before the merge differ for the two.
func TestMergeLosersStayLost(t *testing.T) {
	dir := t.TempDir()
	a := operatorRow(opSrc, "off", i64(-5))
	b := operatorRow(opDedup2, "off", i64(3))
	files := map[int][]savepoint.Row{0: {a, rD1, rD2, rE1, b}}
	in := writeTreeAsIs(t, filepath.Join(dir, "in"), 5, files, savepoint.VersionMap{})
	for _, tc := range []struct {
		rules string
		want  []located
		dupes int64
	}{
		// op 13's 3 is the greater offset, and its zed the later copy.
		{"  - remap_operator: {from: 9, to: 13, merge: true}\n  - drop: 'kind == \"operator\" && value_bytes == [3, 0, 0, 0, 0, 0, 0, 0]'\n",
			[]located{{0, rD1}, {0, rD2}, {0, rE1}}, 1},
		{"  - remap_operator: {from: 12, to: 13, merge: true}\n  - drop: 'op == 13 && string(value_bytes) == \"3\"'\n",
			[]located{{0, a}, {0, withOp(rD1, 13)}, {0, b}}, 1},
		// With the kept copy dropped before the merge, there is nothing
		// to resolve: op 12's zed stays.
		{"  - drop: 'op == 13 && string(value_bytes) == \"3\"'\n  - remap_operator: {from: 12, to: 13, merge: true}\n  - drop: 'string(value_bytes) == \"x\"'\n",
			[]located{{0, a}, {0, withOp(rD1, 13)}, {0, withOp(rD2, 13)}, {0, b}}, 0},
	} {
		checkDedup(t, in, tc.rules, tc.want, tc.dupes, 5)
	}
}

// checkDedup applies rules (after slotDecls) to the tree in and checks the
// rows written, the duplicates resolved and the accounting of rowsIn rows.
func checkDedup(t *testing.T, in, rules string, want []located, dupes int64, rowsIn int) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	rep, err := run(t, in, parseRules(t, slotDecls+rules, nil), transform.Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	got := readRows(t, out)
	sameRows(t, rules, got, want)
	if rep.DuplicatesResolved != dupes {
		t.Errorf("%s: DuplicatesResolved = %d, want %d", rules, rep.DuplicatesResolved, dupes)
	}
	checkAccounting(t, rep, rowsIn, len(got))
}

// TestInputChangedWhileRunning: an input file changed while it was read
// (here, its modification time moved on), or a run cancelled, publishes
// nothing: the check runs before the output is renamed into place.
func TestInputChangedWhileRunning(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "checkpoint-3.snap")
	if _, err := savepoint.WriteSnapshotFile(file, nil, baseRows, savepoint.SnapshotOptions{Sidecar: true, CheckpointID: 3}); err != nil {
		t.Fatal(err)
	}
	for _, rule := range []string{"  - drop_slot: {op: 7, slot: tmp}\n", "  - keep: 'true'\n"} {
		set := parseRules(t, slotDecls+rule, nil)
		for _, how := range []string{"changed", "cancelled"} {
			out := filepath.Join(dir, "out.snap")
			ctx, cancel := context.WithCancel(context.Background())
			sp := open(t, file)
			calls := 0
			_, err := transform.Run(ctx, sp, set, transform.Options{Out: out, Jobs: 1, Progress: func(stage string, done, total int64) {
				if calls++; calls > 1 {
					return
				}
				if how == "cancelled" {
					cancel()
					return
				}
				later := time.Now().Add(time.Hour)
				if err := os.Chtimes(file, later, later); err != nil {
					t.Error(err)
				}
			}})
			cancel()
			sp.Close()
			want := savepoint.ErrInputChanged
			if how == "cancelled" {
				want = context.Canceled
			}
			if calls == 0 {
				t.Fatalf("%s%s: no progress call to act in", rule, how)
			}
			if !errors.Is(err, want) {
				t.Errorf("%s%s: error %v, want %v", rule, how, err, want)
			}
			if left, _ := filepath.Glob(out + "*"); len(left) > 0 {
				t.Errorf("%s%s: left %v", rule, how, left)
			}
		}
	}
}

// TestCancelDuringSlowExpression: a run cancelled while an expression that
// takes long on each row runs stops within a row, not at the end of the
// 64K-row block (about 40 ms a row here: 2,000 rows would take over a
// minute), and publishes nothing.
func TestCancelDuringSlowExpression(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "checkpoint-3.snap")
	rows := make([]savepoint.Row, 2000)
	for i := range rows {
		rows[i] = savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), binary.BigEndian.AppendUint64(nil, uint64(i))), Value: []byte("v")}
	}
	if _, err := savepoint.WriteSnapshotFile(file, nil, rows, savepoint.SnapshotOptions{Sidecar: true, CheckpointID: 3}); err != nil {
		t.Fatal(err)
	}
	set := parseRules(t, "version: 1\nrules:\n  - drop: 'any(1..999, {any(1..999, {# == 0})}) || kind == \"nope\"'\n", nil)
	out := filepath.Join(dir, "out.snap")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := transform.Run(ctx, open(t, file), set, transform.Options{Out: out, Jobs: 1})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the run stopped %v after it started, 100 ms after its cancellation", d)
	}
	if left, _ := filepath.Glob(out + "*"); len(left) > 0 {
		t.Errorf("left %v", left)
	}
}

// TestFailureStopsOtherFiles: a file whose rules fail stops the run: the
// files not yet processed are not (with one worker, none of their rows is
// counted), and the error is that file's, not the stop of the others.
func TestFailureStopsOtherFiles(t *testing.T) {
	files := map[int][]savepoint.Row{}
	for s := range 4 {
		for i := range 100 {
			files[s] = append(files[s], keyed(7, "agg", fmt.Sprintf("k%03d", i), []byte("v")))
		}
	}
	dir := t.TempDir()
	in := writeTree(t, filepath.Join(dir, "in"), 3, "job", files, savepoint.VersionMap{}, "")
	set := parseRules(t, "version: 1\nrules:\n  - drop: 'subtask == 0 && key_group % subtask == 0'\n", nil)
	for _, jobs := range []int{1, 2} {
		var mu sync.Mutex
		counted := int64(0)
		out := filepath.Join(dir, "out")
		_, err := run(t, in, set, transform.Options{Out: out, Jobs: jobs, Progress: func(stage string, done, total int64) {
			mu.Lock()
			defer mu.Unlock()
			if stage == "rows" {
				counted = max(counted, done)
			}
		}})
		if err == nil || errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "divide by zero") || !strings.Contains(err.Error(), filepath.Join("v1", "0", "checkpoint-3.snap")) {
			t.Fatalf("jobs %d: error %v, want subtask 0's division by zero", jobs, err)
		}
		if jobs == 1 && counted > 0 {
			t.Errorf("jobs 1: %d rows of the files after the one that failed were processed", counted)
		}
		if exists(out) {
			t.Errorf("jobs %d: output written", jobs)
		}
	}
}

// TestEvalErrorOfRow: the runtime error of a drop's expression, as of a
// set_value's, is a *rules.EvalError naming the rule and the row it failed
// on, with the message it had.
func TestEvalErrorOfRow(t *testing.T) {
	files := map[int][]savepoint.Row{0: {keyed(7, "agg", "k0", i64(1)), keyed(7, "agg", "k1", i64(2))}}
	dir := t.TempDir()
	in := writeTree(t, filepath.Join(dir, "in"), 3, "job", files, savepoint.VersionMap{}, "")
	for _, tc := range []struct{ rule, want string }{
		{"drop: {op: 7, slot: agg, expr: 'value % (value - 2) == 0'}", `row 1 (op 7, slot "agg", key "k1"): ` + "RULES:5:5: rule 1 (drop): 2 % 0: integer divide by zero (1:7)\n"},
		{"set_value: {op: 7, slot: agg, expr: 'value % (value - 2)'}", `row 1 (op 7, slot "agg", key "k1"): ` + "RULES:5:5: rule 1 (set_value): evaluate \"value % (value - 2)\": 2 % 0: integer divide by zero (1:7)\n"},
	} {
		set := parseRules(t, "version: 1\nslots:\n  - {op: 7, slot: agg, value: int64}\nrules:\n  - "+tc.rule+"\n", nil)
		_, err := run(t, in, set, transform.Options{Out: filepath.Join(dir, "out")})
		var ee *rules.EvalError
		if !errors.As(err, &ee) || ee.Rule != "rule 1 ("+string(set.Rules[0].Kind)+")" || ee.Op != 7 || ee.Row != 1 || string(savepoint.ParseKey(ee.Key).UserKey) != "k1" {
			t.Errorf("%s: %#v, want a *rules.EvalError of row 1", tc.rule, err)
			continue
		}
		if want := strings.Replace(tc.want, "RULES", set.Source, 1); !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %q, want %q", tc.rule, err, want)
		}
	}
}

// TestDecompress: with Decompress, a tree whose files are compressed as a
// whole comes out uncompressed (the only form clink restores), files no rule
// changed included, rewritten in canonical form with the same rows; without
// it, an unchanged compressed file is copied as it is and a changed one is
// written compressed again. A file input's output then takes a plain name.
func TestDecompress(t *testing.T) {
	dir := t.TempDir()
	files := threeSubtasks()
	in := writeTree(t, filepath.Join(dir, "in"), 5, "j", files, baseVersions(t), savepoint.CompressGzip)
	set := parseRules(t, slotDecls+"  - drop_slot: {op: 12, slot: dedup}\n", nil)
	changed := map[int]bool{}
	for _, r := range []savepoint.Row{rD1, rD2} {
		changed[savepoint.SubtaskForKeyGroup(int(r.Key[0]), 3)] = true
	}
	if len(changed) == 3 {
		t.Fatal("test setup: every subtask holds a row of op 12")
	}
	var want []located
	for s, rows := range files {
		for _, r := range except(rows, rD1, rD2) {
			want = append(want, located{s, r})
		}
	}
	for _, decompress := range []bool{false, true} {
		out := filepath.Join(dir, fmt.Sprintf("out-%v", decompress))
		rep, err := run(t, in, set, transform.Options{Out: out, Decompress: decompress})
		if err != nil {
			t.Fatal(err)
		}
		checkAccounting(t, rep, len(rowsOf(open(t, in))), len(want))
		for _, fs := range rep.Files {
			wantAction := "copy"
			if decompress || changed[fs.Subtask] {
				wantAction = "rewrite"
			}
			if fs.Action != wantAction {
				t.Errorf("decompress %v: subtask %d: action %q, want %q", decompress, fs.Subtask, fs.Action, wantAction)
			}
		}
		sp := open(t, out)
		for _, f := range sp.Files {
			wantComp := savepoint.CompressGzip
			if decompress {
				wantComp = savepoint.CompressNone
			}
			if f.Compression != wantComp || f.Verdict != savepoint.VerdictValid {
				t.Errorf("decompress %v: subtask %d: compression %q, sidecar %s; want %q and a valid sidecar", decompress, f.Subtask, f.Compression, f.Verdict, wantComp)
			}
		}
		sameRows(t, fmt.Sprintf("decompress %v", decompress), rowsOf(sp), want)
	}

	// A file: the output is named as what it holds.
	zin := filepath.Join(dir, "one.snap.zst")
	if _, err := savepoint.WriteSnapshotFile(zin, savepoint.CanonicalMetadata(nil, baseVersions(t)), files[0], savepoint.SnapshotOptions{Compression: savepoint.CompressZstd, Sidecar: true}); err != nil {
		t.Fatal(err)
	}
	none := parseRules(t, "version: 1\nrules: []\n", nil)
	if _, err := run(t, zin, none, transform.Options{Out: filepath.Join(dir, "one-out.snap.zst"), Decompress: true}); err == nil || !strings.Contains(err.Error(), "--decompress writes an uncompressed stream; name it without the suffix") {
		t.Errorf("a compressed name for a decompressed output: err %v", err)
	}
	if _, err := run(t, zin, none, transform.Options{Out: filepath.Join(dir, "one-out.snap")}); err == nil || !strings.Contains(err.Error(), "--decompress writes one it restores") {
		t.Errorf("a plain name for a compressed output: err %v", err)
	}
	plain := filepath.Join(dir, "one-out.snap")
	rep, err := run(t, zin, none, transform.Options{Out: plain, Decompress: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files[0].Action != "rewrite" {
		t.Errorf("decompressed file: action %q, want rewrite", rep.Files[0].Action)
	}
	sp := open(t, plain)
	if f := sp.Files[0]; f.Compression != savepoint.CompressNone || f.Verdict != savepoint.VerdictValid {
		t.Errorf("decompressed file: compression %q, sidecar %s", f.Compression, f.Verdict)
	}
	sameRows(t, "decompressed file", rowsOf(sp), placeFile(files[0]))
}

// placeFile locates the rows of a single-file input.
func placeFile(rows []savepoint.Row) []located {
	out := make([]located, len(rows))
	for i, r := range rows {
		out[i] = located{-1, r}
	}
	return out
}

// A set_value whose result is an empty list or map removes the row with
// erase_empty (as clink's ListState.update([]) and a map's last removal
// erase the key; the rule counts it as dropped); without it the row is
// written, counted and warned about (a ValueState may hold one).
func TestSetValueEmptyCollection(t *testing.T) {
	list := func(vs ...int64) []byte {
		b := binary.LittleEndian.AppendUint32(nil, uint32(len(vs)))
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint32(b, 8)
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
		return b
	}
	rows := []savepoint.Row{
		keyed(opAgg, "hist", "a", list(1, 5)),
		keyed(opAgg, "hist", "b", list(2)),
		keyed(opAgg, "hist", "c", list()), // stored empty (not by clink): erased too
		keyed(opAgg, "ttlhist", "d", ttl(9, list(3))),
		keyed(opAgg, "ttlhist", "e", ttl(9, list(4, 6))),
		keyed(opAgg, "blob", "f", []byte{0, 0, 0, 0}), // not a collection: kept as it is
	}
	in := writeTree(t, filepath.Join(t.TempDir(), "in"), 5, "job-1", map[int][]savepoint.Row{0: rows}, savepoint.VersionMap{}, savepoint.CompressNone)
	src := `version: 1
slots:
  - {op: 7, slot: hist, key: string, value: "list<int64>"}
  - {op: 7, slot: ttlhist, key: string, value: "list<int64>", ttl: true}
  - {op: 7, slot: blob, key: string, value: bytes}
rules:
  - set_value: {op: 7, slot: hist, expr: 'filter(value, # > 1)', erase_empty: true}
  - set_value: {op: 7, slot: ttlhist, expr: 'filter(value, # > 3)', erase_empty: true}
  - set_value: {op: 7, slot: blob, expr: 'value'}
`
	out := filepath.Join(t.TempDir(), "out")
	rep, err := run(t, in, parseRules(t, src, nil), transform.Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []counts{{3, 1, 1}, {2, 1, 0}, {1, 0, 0}} {
		if s := ruleStats(t, rep, i+1); s.Matched != want.matched || s.Dropped != want.dropped || s.Changed != want.changed {
			t.Errorf("rule %d: matched %d dropped %d changed %d, want %+v", i+1, s.Matched, s.Dropped, s.Changed, want)
		}
	}
	checkAccounting(t, rep, len(rows), 4)
	sameRows(t, "output", readRows(t, out), []located{
		{0, keyed(opAgg, "blob", "f", []byte{0, 0, 0, 0})},
		{0, keyed(opAgg, "hist", "a", list(5))},
		{0, keyed(opAgg, "hist", "b", list(2))},
		{0, keyed(opAgg, "ttlhist", "e", ttl(9, list(4, 6)))},
	})
	if len(rep.Warnings) != 0 {
		t.Errorf("warnings: %q", rep.Warnings)
	}

	// Without erase_empty: written, counted, warned about.
	keep := strings.ReplaceAll(src, ", erase_empty: true", "")
	out = filepath.Join(t.TempDir(), "out")
	if rep, err = run(t, in, parseRules(t, keep, nil), transform.Options{Out: out}); err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, rep, len(rows), len(rows))
	if a, b := ruleStats(t, rep, 1), ruleStats(t, rep, 2); a.Dropped != 0 || a.EmptyWritten != 1 || b.Dropped != 0 || b.EmptyWritten != 1 {
		t.Errorf("without erase_empty: rule 1 %+v, rule 2 %+v; want 1 empty row each, none dropped", a, b)
	}
	if len(rep.Warnings) != 2 || !strings.Contains(rep.Warnings[0], `rule 1 (set_value): after it, 1 row of op 7 slot "hist" holds an empty list or map`) || !strings.Contains(rep.Warnings[1], "add 'erase_empty: true'") {
		t.Errorf("warnings: %q", rep.Warnings)
	}
}

// TestMergeLosersRawKeys: a row whose key has no slot separator and a
// first byte below 128 is restored as a keyed row (last copy wins, format
// 1.6): a merge that resolves two such copies loses one for good too.
func TestMergeLosersRawKeys(t *testing.T) {
	dir := t.TempDir()
	a := savepoint.Row{Op: opDedup, Key: []byte("__inflight__"), Value: []byte("1")}
	b := savepoint.Row{Op: opDedup2, Key: []byte("__inflight__"), Value: []byte("3")}
	files := map[int][]savepoint.Row{0: {a, rD1, b}}
	in := writeTreeAsIs(t, filepath.Join(dir, "in"), 5, files, savepoint.VersionMap{})
	checkDedup(t, in, "  - remap_operator: {from: 12, to: 13, merge: true}\n  - drop: 'op == 13 && string(value_bytes) == \"3\"'\n",
		[]located{{0, withOp(rD1, 13)}}, 1, 3)
}

// TestMergeLosersShadowedTakeNoPart: a copy the input stores twice and a
// restore of it would not keep (gone before any rule) does not win a merge
// over the row merged in: a rule deciding by value after the merge, which
// drops nothing, changes nothing.
func TestMergeLosersShadowedTakeNoPart(t *testing.T) {
	dir := t.TempDir()
	zed0 := keyed(opDedup2, "dedup", "zed", []byte("0"))
	files := map[int][]savepoint.Row{0: {rD2, rE1, zed0, rD1}}
	in := writeTreeAsIs(t, filepath.Join(dir, "in"), 5, files, savepoint.VersionMap{})
	const rules = "  - drop: 'op == 13 && string(value_bytes) == \"0\"'\n  - remap_operator: {from: 12, to: 13, merge: true}\n"
	want := []located{{0, withOp(rD1, 13)}, {0, withOp(rD2, 13)}}
	checkDedup(t, in, rules, want, 1, 4)
	checkDedup(t, in, rules+"  - drop: 'string(value_bytes) == \"nothing\"'\n", want, 1, 4)
}

// A payload whose checksum disagrees with its sidecar is refused by Run
// even when the savepoint was opened without RequireValid (OpenOptions'
// zero value): rewritten, its damaged rows would be published with a fresh
// sidecar that clink accepts. A tree without sidecars is still rewritten.
func TestRunRefusesCorruptPayload(t *testing.T) {
	dir := t.TempDir()
	rows := map[int][]savepoint.Row{0: {
		{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), []byte("a")), Value: []byte("VALUE-A")},
		{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), []byte("b")), Value: []byte("VALUE-B")},
	}}
	in := writeTree(t, filepath.Join(dir, "in"), 3, "job", rows, savepoint.VersionMap{}, "")
	payload := filepath.Join(in, "v1", "0", "checkpoint-3.snap")
	b, err := os.ReadFile(payload)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte("VALUE-A"))
	if i < 0 {
		t.Fatal("value not found in the payload")
	}
	b[i] = 'X' // still decodes; the checksum no longer matches
	if err := os.WriteFile(payload, b, 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := savepoint.Open(in, savepoint.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if sp.Files[0].Verdict != savepoint.VerdictCorrupt {
		t.Fatalf("verdict %s, want corrupt", sp.Files[0].Verdict)
	}
	set, err := rules.Parse("r.yaml", []byte("version: 1\nrules:\n  - drop: 'key == \"b\"'\n"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	for _, dry := range []bool{true, false} {
		rep, err := transform.Run(context.Background(), sp, set, transform.Options{DryRun: dry, Out: out})
		var ve *savepoint.VerdictError
		if !errors.As(err, &ve) || ve.Verdict != savepoint.VerdictCorrupt || rep != nil || !strings.Contains(err.Error(), "integrity check corrupt") {
			t.Errorf("dry run %v: Run of a corrupt payload: %v, %v; want an integrity error", dry, rep, err)
		}
	}
	if _, err := os.Lstat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("output %s: %v, want none", out, err)
	}

	// Without its sidecar the payload is unverified, not refused.
	if err := os.Remove(payload + savepoint.SidecarSuffix); err != nil {
		t.Fatal(err)
	}
	sp2, err := savepoint.Open(in, savepoint.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sp2.Close()
	if _, err := transform.Run(context.Background(), sp2, set, transform.Options{Out: out}); err != nil {
		t.Errorf("Run of a payload without a sidecar: %v", err)
	}
}

// An output that exists without Force is refused with an error a caller
// can tell with errors.Is(err, fs.ErrExist), for a file input (the payload
// or its sidecar there) as for a tree, from Run as from CheckOutput.
func TestRunOutputExistsIsErrExist(t *testing.T) {
	dir := t.TempDir()
	rows := map[int][]savepoint.Row{0: {{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), []byte("a")), Value: []byte("v")}}}
	tree := writeTree(t, filepath.Join(dir, "in"), 3, "job", rows, savepoint.VersionMap{}, "")
	file := filepath.Join(dir, "in.snap")
	if _, err := savepoint.WriteSnapshotFile(file, nil, rows[0], savepoint.SnapshotOptions{Sidecar: true}); err != nil {
		t.Fatal(err)
	}
	set := parseRules(t, "version: 1\nrules: []\n", nil)
	for _, tc := range []struct{ in, out, existing string }{
		{tree, filepath.Join(dir, "out-tree"), filepath.Join(dir, "out-tree")},
		{file, filepath.Join(dir, "out.snap"), filepath.Join(dir, "out.snap")},
		{file, filepath.Join(dir, "out2.snap"), filepath.Join(dir, "out2.snap") + savepoint.SidecarSuffix},
	} {
		create := func() error { return os.WriteFile(tc.existing, []byte("x"), 0o644) }
		if tc.in == tree {
			create = func() error { return os.Mkdir(tc.existing, 0o755) } // (a tree replaces a directory)
		}
		if err := create(); err != nil {
			t.Fatal(err)
		}
		sp, err := savepoint.Open(tc.in, savepoint.OpenOptions{RequireValid: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := transform.Run(context.Background(), sp, set, transform.Options{Out: tc.out}); !errors.Is(err, fs.ErrExist) {
			t.Errorf("Run to %s (%s there): %v, want an fs.ErrExist", tc.out, tc.existing, err)
		}
		if err := transform.CheckOutput(tc.in, tc.in == file, tc.out, false); !errors.Is(err, fs.ErrExist) {
			t.Errorf("CheckOutput %s: %v, want an fs.ErrExist", tc.out, err)
		}
		if err := transform.CheckOutput(tc.in, tc.in == file, tc.out, true); err != nil {
			t.Errorf("CheckOutput %s with force: %v", tc.out, err)
		}
		sp.Close()
	}
}

// A single file named changelog-<id>.snap whose sidecar disagrees with it
// is refused by Run as a checkpoint-<id>.snap is, even opened without
// RequireValid: the name makes it the changelog+file backend's, whose tree
// payloads carry no sidecar, but this one has one, and it says the file is
// damaged.
func TestRunRefusesLoneChangelogNamedCorruptPayload(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "changelog-3.snap")
	rows := []savepoint.Row{{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), []byte("a")), Value: []byte("v")}}
	info, err := savepoint.WriteSnapshotFile(in, nil, rows, savepoint.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	info.CRC32C ^= 1
	if err := os.WriteFile(in+savepoint.SidecarSuffix, savepoint.SidecarFor(3, info), 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := savepoint.Open(in, savepoint.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	set := parseRules(t, "version: 1\nrules: []\n", nil)
	out := filepath.Join(dir, "out.snap")
	var ve *savepoint.VerdictError
	if rep, err := transform.Run(context.Background(), sp, set, transform.Options{Out: out}); !errors.As(err, &ve) || ve.Verdict != savepoint.VerdictCorrupt || rep != nil {
		t.Errorf("Run of a damaged changelog-3.snap: %v, %v; want a corrupt VerdictError", rep, err)
	}
	if _, err := os.Lstat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("output %s: %v, want none", out, err)
	}
}

// A single canonical file named changelog-<id>.snap that no rule changes
// is copied byte for byte, as any single file is, and the report says so.
func TestRunLoneChangelogNamedCopyReported(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "changelog-3.snap")
	rows := []savepoint.Row{{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), []byte("a")), Value: []byte("v")}}
	if _, err := savepoint.WriteSnapshotFile(in, nil, rows, savepoint.SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	sp, err := savepoint.Open(in, savepoint.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	out := filepath.Join(dir, "out.snap")
	rep, err := transform.Run(context.Background(), sp, parseRules(t, "version: 1\nrules: []\n", nil), transform.Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(in)
	b, _ := os.ReadFile(out)
	if !bytes.Equal(a, b) {
		t.Fatal("the unchanged file was not copied byte for byte")
	}
	if got := rep.Files[0].Action; got != "copy" {
		t.Errorf("report action %q for a file copied byte for byte, want copy", got)
	}
}

// Run without a savepoint or a rule set, or with a zero savepoint or one
// used after Close, is an error, not a panic.
func TestRunNil(t *testing.T) {
	set, err := rules.Parse("r.yaml", []byte("version: 1\nrules:\n  - drop: 'key == \"b\"'\n"))
	if err != nil {
		t.Fatal(err)
	}
	sp := open(t, filepath.Join("..", "testdata", "example"))
	closed, err := savepoint.Open(filepath.Join("..", "testdata", "example"), savepoint.OpenOptions{Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	out := filepath.Join(t.TempDir(), "out")
	for _, tc := range []struct {
		sp   *savepoint.Savepoint
		set  *rules.Set
		want string
	}{
		{nil, set, "savepoint: none (a nil *Savepoint)"},
		{&savepoint.Savepoint{}, set, "savepoint: holds no file (a Savepoint is made by Open)"},
		{closed, set, "savepoint: used after Close"},
		{sp, nil, "no rule set"},
		// Sets and rules filled in by hand: refused, not a panic in the
		// engine or a rule that does nothing.
		{sp, &rules.Set{Rules: []*rules.Rule{{Index: 1, Kind: rules.KindDrop, Drop: &rules.FilterSpec{Expr: "true"}}}}, "the rule set was not made by parsing a rule file"},
		{sp, handRule(set, &rules.Rule{Index: 1, Kind: rules.KindDrop, Drop: &rules.FilterSpec{Expr: "true"}}), "rule 1 (drop) is not as parsing a rule file makes it"},
		{sp, handRule(set, &rules.Rule{Index: 1, Kind: rules.KindRescale, Rescale: &rules.RescaleSpec{}}), "rule 1 (rescale) is not as parsing a rule file makes it"},
		{sp, handRule(set, &rules.Rule{Index: 1, Kind: rules.KindDropSlot}), "rule 1 (drop_slot) is not as parsing a rule file makes it"},
		{sp, handRule(set, nil), "rule 1 is nil"},
	} {
		if rep, err := transform.Run(context.Background(), tc.sp, tc.set, transform.Options{Out: out}); err == nil || rep != nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, %v", tc.want, rep, err)
		}
		if _, err := os.Lstat(out); err == nil {
			t.Errorf("%s: %s written", tc.want, out)
		}
	}
}

// handRule returns a copy of the parsed set whose one rule is r.
func handRule(set *rules.Set, r *rules.Rule) *rules.Set {
	c := *set
	c.Rules = []*rules.Rule{r}
	return &c
}

// TestStepErrorNamesRuleFile: an error a rule meets on a row names the row,
// its key as the declared codec reads it, the rule and where the rule is
// in its file.
func TestStepErrorNamesRuleFile(t *testing.T) {
	set := parseRules(t, "version: 1\nslots:\n  - {op: 11678514624188656593, slot: counts, key: uint64, value: uint64}\nrules:\n  - keep: 'true'\n  - drop: {op: 11678514624188656593, slot: counts, expr: 'value / 0 > 1'}\n", nil)
	_, err := run(t, "../testdata/example", set, transform.Options{DryRun: true})
	if err == nil || !strings.Contains(err.Error(), "rules.yaml:6:5: rule 2 (drop): ") || !strings.Contains(err.Error(), "division by zero") {
		t.Errorf("err = %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "(int64 37) = uint64 37): ") {
		t.Errorf("err = %v, want the key as its codec reads it", err)
	}
}

// TestFirstErrorInOrder: when a rule fails on rows of several files, the
// run reports the first failing row of the first such file, every time,
// whatever the timing of the files' goroutines.
func TestFirstErrorInOrder(t *testing.T) {
	set := parseRules(t, "version: 1\nslots:\n  - {op: 11678514624188656593, slot: counts, key: uint64, value: uint64}\nrules:\n  - drop: {op: 11678514624188656593, slot: counts, expr: 'value / 0 > 1'}\n", nil)
	var first string
	for i := range 20 {
		_, err := run(t, "../testdata/example", set, transform.Options{DryRun: true, Jobs: 4})
		if err == nil {
			t.Fatal("no error")
		}
		if i == 0 {
			first = err.Error()
			if !strings.Contains(first, filepath.Join("v1", "0", "checkpoint-7.snap")+": row ") {
				t.Fatalf("first error %q: want subtask 0's file", first)
			}
		} else if err.Error() != first {
			t.Fatalf("run %d: %q, want %q", i, err, first)
		}
	}
}

// TestDeclaredFilterPassesOverBroadcastRows: a filter scoped to a declared
// slot that reads the key or value applies to the slot's keyed rows; an
// operator row of that slot name (broadcast state), which declarations do
// not decode, is passed over and counted in a warning, where it used to be
// compared as bytes against the codec's types. A filter that reads neither
// applies to both.
func TestDeclaredFilterPassesOverBroadcastRows(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.snap")
	rows := []savepoint.Row{
		{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("s"), []byte("k1")), Value: []byte("x")},
		{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("s"), []byte("k2")), Value: []byte("y")},
		{Op: 7, Key: []byte("\xffs|"), Value: []byte("x")},
	}
	if _, err := savepoint.WriteSnapshotFile(in, nil, rows, savepoint.SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	const decl = "version: 1\nslots:\n  - {op: 7, slot: s, key: string, value: string}\nrules:\n"
	for _, c := range []struct {
		rule    string
		dropped int64
		passed  bool // the warning of operator rows passed over
	}{
		{`drop: {op: 7, slot: s, expr: 'value == "x"'}`, 1, true},
		{`drop: {op: 7, slot: s, expr: 'value != "x"'}`, 1, true},
		{`drop: {op: 7, slot: s, expr: 'kind == "operator"'}`, 1, false},
		{`drop: {op: 7, slot: s, expr: 'true'}`, 3, false},
		{`set_value: {op: 7, slot: s, expr: 'value + "!"'}`, 0, true},
	} {
		set := parseRules(t, decl+"  - "+c.rule+"\n", nil)
		rep, err := run(t, in, set, transform.Options{DryRun: true})
		if err != nil {
			t.Fatalf("%s: %v", c.rule, err)
		}
		warned := slices.ContainsFunc(rep.Warnings, func(w string) bool {
			return strings.Contains(w, `rule 1 (`) && strings.Contains(w, `: passed over 1 operator row of slot "s"`)
		})
		if rep.RowsDropped != c.dropped || warned != c.passed {
			t.Errorf("%s: %d dropped, warned %v (%q); want %d, %v", c.rule, rep.RowsDropped, warned, rep.Warnings, c.dropped, c.passed)
		}
	}
}

// TestBroadcastDeclaration: a 'broadcast: true' declaration describes the
// slot's broadcast row (key 0xFF slot '|') alone: scoped filters and
// set_value read its value with the codec, and pass over the slot's other
// rows (keyed rows, an operator row with a key after the '|', one whose
// first byte is another operator marker), which a filter reading the value
// counts in a warning.
func TestBroadcastDeclaration(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.snap")
	le := func(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
	rows := []savepoint.Row{
		{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("s"), []byte("k1")), Value: le(9)},
		{Op: 7, Key: savepoint.EncodeBroadcastKey([]byte("s")), Value: le(5)},
		{Op: 7, Key: []byte("\xffs|x"), Value: le(9)},
		{Op: 7, Key: []byte("\x80s|"), Value: le(9)},
		{Op: 8, Key: savepoint.EncodeBroadcastKey([]byte("s")), Value: []byte("not 8 bytes")},
	}
	if _, err := savepoint.WriteSnapshotFile(in, nil, rows, savepoint.SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	const decl = "version: 1\nslots:\n  - {op: 7, slot: s, value: int64, broadcast: true}\nrules:\n"
	for _, c := range []struct {
		rule             string
		dropped, changed int64
		passed           bool // the warning of rows passed over
	}{
		{`drop: {op: 7, slot: s, expr: 'value > 3'}`, 1, 0, true},
		{`drop: {op: 7, slot: s, expr: 'value < 3'}`, 0, 0, true},
		{`drop: {op: 7, slot: s, expr: 'kind == "keyed"'}`, 1, 0, false},
		{`set_value: {op: 7, slot: s, expr: 'value * 10'}`, 0, 1, true},
	} {
		set := parseRules(t, decl+"  - "+c.rule+"\n", nil)
		out := filepath.Join(dir, "out.snap")
		rep, err := run(t, in, set, transform.Options{Out: out, Force: true})
		if err != nil {
			t.Fatalf("%s: %v", c.rule, err)
		}
		warned := slices.ContainsFunc(rep.Warnings, func(w string) bool {
			return strings.Contains(w, `rule 1 (`) && strings.Contains(w, `passed over 3 rows of slot "s" that are not its broadcast state`)
		})
		if rep.RowsDropped != c.dropped || rep.PerRule[0].Changed != c.changed || warned != c.passed {
			t.Errorf("%s: %d dropped, %d changed, warned %v (%q); want %d, %d, %v", c.rule, rep.RowsDropped, rep.PerRule[0].Changed, warned, rep.Warnings, c.dropped, c.changed, c.passed)
		}
		if c.changed == 0 {
			continue
		}
		snap := open(t, out).Files[0].Snapshot
		got := map[string]string{}
		snap.EachRow(func(_ int, r savepoint.Row) bool {
			got[fmt.Sprintf("%d %q", r.Op, r.Key)] = fmt.Sprintf("%x", r.Value)
			return true
		})
		want := map[string]string{
			`7 "\x00s|k1"`: fmt.Sprintf("%x", le(9)),
			`7 "\xffs|"`:   fmt.Sprintf("%x", le(50)),
			`7 "\xffs|x"`:  fmt.Sprintf("%x", le(9)),
			`7 "\x80s|"`:   fmt.Sprintf("%x", le(9)),
			`8 "\xffs|"`:   fmt.Sprintf("%x", "not 8 bytes"),
		}
		kg := savepoint.EncodeKeyedKey([]byte("s"), []byte("k1"))
		want[fmt.Sprintf("7 %q", kg)] = want[`7 "\x00s|k1"`]
		delete(want, `7 "\x00s|k1"`)
		if !maps.Equal(got, want) {
			t.Errorf("%s: rows %v, want %v", c.rule, got, want)
		}
	}
}

// TestBroadcastNewlineSlot: a broadcast slot whose name holds '\n' (clink's
// BroadcastState takes it) can be declared, and set_value rewrites it.
func TestBroadcastNewlineSlot(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.snap")
	le := func(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
	key := savepoint.EncodeBroadcastKey([]byte("a\nb"))
	if _, err := savepoint.WriteSnapshotFile(in, nil, []savepoint.Row{{Op: 7, Key: key, Value: le(5)}}, savepoint.SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	set := parseRules(t, "version: 1\nslots:\n  - {op: 7, slot: \"a\\nb\", value: int64, broadcast: true}\nrules:\n  - set_value: {op: 7, slot: \"a\\nb\", expr: 'value * 10'}\n", nil)
	out := filepath.Join(dir, "out.snap")
	rep, err := run(t, in, set, transform.Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if rep.PerRule[0].Changed != 1 || len(rep.Warnings) != 0 {
		t.Errorf("changed %d, warnings %q; want 1 row changed, no warning", rep.PerRule[0].Changed, rep.Warnings)
	}
	var got []byte
	open(t, out).Files[0].Snapshot.EachRow(func(_ int, r savepoint.Row) bool {
		got = r.Value
		return true
	})
	if !bytes.Equal(got, le(50)) {
		t.Errorf("value %x, want %x", got, le(50))
	}
}

// A tree without a COMPLETED marker gives an output without one, which
// plan and apply both warn of: under Strict a plan refuses what the run
// would.
func TestNoMarkerWarning(t *testing.T) {
	dir := t.TempDir()
	in := writeBaseTree(t, filepath.Join(dir, "in"), baseRows)
	if err := os.RemoveAll(filepath.Join(in, "_jobs")); err != nil {
		t.Fatal(err)
	}
	const want = "the input has no COMPLETED marker, so the output has none (clink does not need one to restore)"
	for _, dry := range []bool{true, false} {
		opts := transform.Options{DryRun: dry, Strict: true}
		if !dry {
			opts.Out = filepath.Join(dir, "out")
		}
		rep, err := run(t, in, parseRules(t, "version: 1\nrules:\n  - drop_slot: {op: 7, slot: tmp}\n", nil), opts)
		var werr *transform.WarningsError
		if !errors.As(err, &werr) || !slices.Contains(rep.Warnings, want) {
			t.Errorf("dry %v: %v, warnings %q; want %q, refused", dry, err, rep.Warnings, want)
		}
	}
}

// Strict refuses a run whose report carries warnings, writing nothing and
// returning the report as a dry run's with a *WarningsError; a run
// without warnings is written as ever.
func TestStrict(t *testing.T) {
	dir := t.TempDir()
	in := writeBaseTree(t, filepath.Join(dir, "in"), baseRows)
	for _, tc := range []struct {
		name, rules string
		warns       bool
	}{
		{"warning", "  - drop_slot: {op: 7, slot: nosuch}\n", true},
		{"clean", "  - drop_slot: {op: 7, slot: tmp}\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name)
			rep, err := run(t, in, parseRules(t, "version: 1\nrules:\n"+tc.rules, nil), transform.Options{Out: out, Strict: true})
			var werr *transform.WarningsError
			if got := errors.As(err, &werr); got != tc.warns {
				t.Fatalf("error %v, want a WarningsError: %v", err, tc.warns)
			}
			_, statErr := os.Stat(out)
			if tc.warns {
				if rep == nil || !rep.DryRun || werr.Warnings != len(rep.Warnings) || werr.Warnings == 0 || !errors.Is(statErr, fs.ErrNotExist) {
					t.Errorf("report %v, warnings %+v, output %v: want a dry run's report and no output", rep != nil && rep.DryRun, werr, statErr)
				}
				return
			}
			if err != nil || rep.DryRun || statErr != nil {
				t.Errorf("clean run: %v, dry %v, output %v", err, rep.DryRun, statErr)
			}
		})
	}
}

// The leftovers a run reports are judged once its output is in place: a
// sidecar a killed --force run moved aside completed the older payload,
// not the new one, and renaming it back would pair them.
func TestLeftoversAfterPublish(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "checkpoint-3.snap")
	if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, baseVersions(t)), baseRows, savepoint.SnapshotOptions{Sidecar: true, CheckpointID: 3}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.snap")
	if _, err := run(t, in, parseRules(t, slotDecls+"  - drop_slot: {op: 7, slot: nothing}\n", nil), transform.Options{Out: out}); err != nil {
		t.Fatal(err)
	}
	aside := out + ".meta.sptool-old-999999999.2.k"
	if err := os.Rename(out+".meta", aside); err != nil {
		t.Fatal(err)
	}
	if got := savepoint.Leftovers(out); len(got) != 1 || !strings.Contains(got[0], "rename it back") {
		t.Fatalf("before the run: %q", got)
	}
	rep, err := run(t, in, parseRules(t, slotDecls+"  - drop_slot: {op: 7, slot: tmp}\n", nil), transform.Options{Out: out, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, w := range rep.Warnings {
		if strings.Contains(w, filepath.Base(aside)) {
			left = append(left, w)
		}
	}
	if len(left) != 1 || strings.Contains(left[0], "rename it back") || !strings.Contains(left[0], "delete it") {
		t.Errorf("after the run: %q", left)
	}
}

// TestSetValueOverTextNotUTF8: a set_value whose string functions rewrite
// a value that was not UTF-8 (its bytes become U+FFFD) is warned of and
// counted; one that changes only text, or leaves such a value as it is,
// is not.
func TestSetValueOverTextNotUTF8(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.snap")
	rows := []savepoint.Row{
		keyed(opAgg, "seen", "alice", ttl(1000, []byte("web"))),
		keyed(opAgg, "seen", "bob", ttl(1000, []byte("\xffweb"))),
	}
	if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, baseVersions(t)), rows, savepoint.SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	const want = `rule 1 (set_value): it changed 1 value of op 7 slot "seen" that was not valid UTF-8`
	for _, tc := range []struct {
		expr    string
		changed int64
	}{
		{`upper(value)`, 1},
		{`value == "web" ? "app" : value`, 0},
	} {
		out := filepath.Join(t.TempDir(), "out.snap")
		rep, err := run(t, in, parseRules(t, slotDecls+"  - set_value: {op: 7, slot: seen, expr: '"+tc.expr+"'}\n", nil), transform.Options{Out: out})
		if err != nil {
			t.Fatal(err)
		}
		if got := rep.PerRule[0].NonUTF8Changed; got != tc.changed {
			t.Errorf("%s: %d values not UTF-8 changed, want %d", tc.expr, got, tc.changed)
		}
		warned := slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.HasPrefix(w, want) })
		if warned != (tc.changed > 0) {
			t.Errorf("%s: warnings %q, want %q: %v", tc.expr, rep.Warnings, want, tc.changed > 0)
		}
	}
}

// TestMarkersOfOneCheckpoint: of two jobs' markers of the checkpoint read,
// the one of the generation read names the job, whatever the order of
// their directories, and its CONFIRMED marker and receipts are carried; a
// receipt of a subtask the output leaves out is not.
func TestMarkersOfOneCheckpoint(t *testing.T) {
	write := func(t *testing.T, p, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set := parseRules(t, "version: 1\nrules: []\n", nil)
	t.Run("another generation's marker", func(t *testing.T) {
		dir := t.TempDir()
		in := writeTree(t, filepath.Join(dir, "in"), 5, "j", threeSubtasks(), baseVersions(t), "")
		old := savepoint.Completed{Job: "a-old", Checkpoint: 5, Generation: 2, Subtasks: []int{0, 1}, HasSubtasks: true}
		write(t, filepath.Join(in, "_jobs", "a-old", "COMPLETED-5"), string(old.Marshal()))
		write(t, filepath.Join(in, "_jobs", "j", "CONFIRMED-5"), "job=j\ncheckpoint=5\n")
		write(t, filepath.Join(in, "_jobs", "j", "receipts", "sub0-5"), "r0")
		out := filepath.Join(dir, "out")
		if _, err := run(t, in, set, transform.Options{Out: out}); err != nil {
			t.Fatal(err)
		}
		for _, rel := range []string{"_jobs/j/COMPLETED-5", "_jobs/j/CONFIRMED-5", "_jobs/j/receipts/sub0-5"} {
			if _, err := os.Stat(filepath.Join(out, rel)); err != nil {
				t.Errorf("%s not in the output: %v", rel, err)
			}
		}
	})
	t.Run("an empty subtasks= line", func(t *testing.T) {
		dir := t.TempDir()
		in := writeTree(t, filepath.Join(dir, "in"), 5, "j", threeSubtasks(), baseVersions(t), "")
		c := savepoint.Completed{Job: "j", Checkpoint: 5, Generation: 1, HasSubtasks: true}
		write(t, filepath.Join(in, "_jobs", "j", "COMPLETED-5"), string(c.Marshal()))
		rep, err := run(t, in, set, transform.Options{Out: filepath.Join(dir, "out")})
		if err != nil {
			t.Fatal(err)
		}
		const want = "_jobs/j/COMPLETED-5 lists no subtask (an empty subtasks= line, which no coordinator writes): a restore of the input unions no other subtask's operator rows"
		if !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.HasPrefix(w, want) }) {
			t.Errorf("no warning %q in %q", want, rep.Warnings)
		}
	})
	t.Run("a subtask left out", func(t *testing.T) {
		dir := t.TempDir()
		in := writeTree(t, filepath.Join(dir, "in"), 5, "j", threeSubtasks(), baseVersions(t), "")
		c := savepoint.Completed{Job: "j", Checkpoint: 5, Generation: 1, Subtasks: []int{0, 1}, HasSubtasks: true}
		write(t, filepath.Join(in, "_jobs", "j", "COMPLETED-5"), string(c.Marshal()))
		write(t, filepath.Join(in, "_jobs", "j", "receipts", "sub0-5"), "r0")
		write(t, filepath.Join(in, "_jobs", "j", "receipts", "sub2-5"), "r2")
		out := filepath.Join(dir, "out")
		rep, err := run(t, in, set, transform.Options{Out: out})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Files) != 2 {
			t.Fatalf("test setup: %d files written, want subtask 2 left out", len(rep.Files))
		}
		if _, err := os.Stat(filepath.Join(out, "_jobs", "j", "receipts", "sub0-5")); err != nil {
			t.Errorf("subtask 0's receipt not carried: %v", err)
		}
		if _, err := os.Stat(filepath.Join(out, "_jobs", "j", "receipts", "sub2-5")); err == nil {
			t.Error("the receipt of subtask 2, which the output leaves out, was carried")
		}
		if !slices.ContainsFunc(rep.Warnings, func(w string) bool {
			return strings.Contains(w, "(sub2-5, in ") && strings.Contains(w, "the output holds no file of their subtasks")
		}) {
			t.Errorf("no warning on the receipt left: %q", rep.Warnings)
		}
	})
}

// The warning on the receipts an output leaves behind is in the plan's
// report too, and --strict refuses the run it is in, writing nothing.
func TestReceiptsLeftWarnedInPlan(t *testing.T) {
	dir := t.TempDir()
	in := writeTree(t, filepath.Join(dir, "in"), 5, "j", threeSubtasks(), baseVersions(t), "")
	p := filepath.Join(in, "_jobs", "j", "receipts", "sub1-5")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("r1"), 0o644); err != nil {
		t.Fatal(err)
	}
	set := parseRules(t, "version: 1\nrules:\n  - rescale: {parallelism: 2}\n", nil)
	left := func(w string) bool {
		return strings.Contains(w, "(sub1-5, in ") && strings.Contains(w, "the rescale writes their subtasks anew")
	}
	planWarnsAsApply(t, in, set, filepath.Join(dir, "out"), left, "the receipt left")
	strict := filepath.Join(dir, "strict")
	_, err := run(t, in, set, transform.Options{Out: strict, Strict: true})
	var werr *transform.WarningsError
	if !errors.As(err, &werr) {
		t.Errorf("--strict: %v, want a *WarningsError", err)
	}
	if _, err := os.Stat(strict); err == nil {
		t.Error("--strict wrote an output whose report has a warning")
	}
}

// A subtask directory named with leading zeros beside the decimal one is
// not read (clink reads the subtask's state from the decimal one), but a
// restore unions its operator rows: the run says the output leaves them.
func TestShadowedSubtaskDirWarned(t *testing.T) {
	dir := t.TempDir()
	in := writeTree(t, filepath.Join(dir, "in"), 5, "j", threeSubtasks(), baseVersions(t), "")
	if err := os.CopyFS(filepath.Join(in, "v1", "01"), os.DirFS(filepath.Join(in, "v1", "1"))); err != nil {
		t.Fatal(err)
	}
	rep, err := run(t, in, parseRules(t, "version: 1\nrules: []\n", nil), transform.Options{Out: filepath.Join(dir, "out")})
	if err != nil {
		t.Fatal(err)
	}
	const want = "subtask directory v1/01 is not read, nor written to the output: clink reads the subtask's own state from v1/1 (section 5.3), but its restore unions the operator rows of every numeric directory"
	if !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.HasPrefix(w, want) }) {
		t.Errorf("no warning %q in %q", want, rep.Warnings)
	}
}

// An input tree of checkpoint 0 makes an output of checkpoint 0, which
// clink does not restore: the plan warns of it as the apply does.
func TestCheckpointZeroWarnedInPlan(t *testing.T) {
	dir := t.TempDir()
	in := writeTree(t, filepath.Join(dir, "in"), 0, "j", threeSubtasks(), baseVersions(t), "")
	set := parseRules(t, "version: 1\nrules:\n  - drop_slot: {op: 7, slot: tmp}\n", nil)
	planWarnsAsApply(t, in, set, filepath.Join(dir, "out"), func(w string) bool { return strings.HasPrefix(w, "the output tree is checkpoint 0") }, "checkpoint 0")
	_, err := run(t, in, set, transform.Options{DryRun: true, Strict: true})
	var werr *transform.WarningsError
	if !errors.As(err, &werr) {
		t.Errorf("plan --strict: %v, want a *WarningsError", err)
	}
}

// planWarnsAsApply applies set to in, writing out, checks that the apply
// warns as want accepts (of what), and that a plan of it gives the same
// warnings.
func planWarnsAsApply(t *testing.T, in string, set *rules.Set, out string, want func(string) bool, what string) {
	t.Helper()
	applied, err := run(t, in, set, transform.Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(applied.Warnings, want) {
		t.Fatalf("test setup: no warning on %s: %q", what, applied.Warnings)
	}
	planned, err := run(t, in, set, transform.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(planned.Warnings, applied.Warnings) {
		t.Errorf("plan's warnings %q, apply's %q", planned.Warnings, applied.Warnings)
	}
}

// flagCtx is a context whose deadline passes when passed is set.
type flagCtx struct {
	context.Context
	passed atomic.Bool
	done   chan struct{}
	once   sync.Once
}

func (c *flagCtx) pass()                 { c.once.Do(func() { c.passed.Store(true); close(c.done) }) }
func (c *flagCtx) Done() <-chan struct{} { return c.done }
func (c *flagCtx) Err() error {
	if c.passed.Load() {
		return context.DeadlineExceeded
	}
	return nil
}

// A Run whose ctx passes its deadline while it writes returns an error that
// errors.Is matches with context.DeadlineExceeded (its writers stop with
// context.Canceled whatever stopped them), and writes nothing.
func TestRunDeadlineError(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.snap")
	rows := make([]savepoint.Row, 250_000) // 25 MB: the writer reports progress every 16 MiB
	value := bytes.Repeat([]byte("v"), 80)
	for i := range rows {
		rows[i] = savepoint.Row{Op: 7, Key: savepoint.EncodeKeyedKey([]byte("agg"), binary.BigEndian.AppendUint64(nil, uint64(i))), Value: value}
	}
	if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), savepoint.Logical(rows), savepoint.SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx := &flagCtx{Context: context.Background(), done: make(chan struct{})}
	out := filepath.Join(dir, "out.snap")
	set := parseRules(t, "version: 1\nrules:\n  - drop: 'key_group < 2'\n", nil)
	_, err := transform.Run(ctx, open(t, in), set, transform.Options{Out: out, Progress: func(stage string, done, total int64) {
		if stage == "write" {
			ctx.pass() // the deadline passes during the write
		}
	}})
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Errorf("Run past its deadline: %v; want an error errors.Is matches with context.DeadlineExceeded, not context.Canceled", err)
	}
	var timeout interface{ Timeout() bool }
	if !errors.As(err, &timeout) || !timeout.Timeout() {
		t.Errorf("Run past its deadline: %v; errors.As finds no Timeout() true in it", err)
	}
	if _, serr := os.Lstat(out); serr == nil {
		t.Error("output written")
	}
}

// A Run that published its output and then failed, its ctx done meanwhile,
// returns the report and the *savepoint.PublishedError itself: the run was
// not stopped before it published.
func TestRunPublishedThenStopped(t *testing.T) {
	set := parseRules(t, "version: 1\nrules:\n  - drop: 'key_group < 64'\n", nil)
	out := filepath.Join(t.TempDir(), "tree")
	if _, err := run(t, exampleTree, set, transform.Options{Out: out}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	testhook.RemoveReplaced = func(string) error { cancel(); return errors.New("cannot remove") }
	defer func() { testhook.RemoveReplaced = nil }()
	rep, err := transform.Run(ctx, open(t, exampleTree), set, transform.Options{Out: out, Force: true})
	if _, ok := err.(*savepoint.PublishedError); !ok || rep == nil {
		t.Errorf("published, then the ctx done: %T %v, report %v; want the *savepoint.PublishedError and the report", err, err, rep != nil)
	}
}
