package transform_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
	set, err := parseRulesErr(t, src, sideFiles)
	if err != nil {
		t.Fatalf("rules do not parse: %v\n%s", err, src)
	}
	return set
}

func parseRulesErr(t testing.TB, src string, sideFiles map[string]string) (*rules.Set, error) {
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
	return rules.Parse(path, []byte(src))
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
	if rep.RowsIn != rep.RowsOut+rep.RowsDropped+rep.DuplicatesResolved {
		t.Errorf("accounting: %d in != %d out + %d dropped + %d duplicates", rep.RowsIn, rep.RowsOut, rep.RowsDropped, rep.DuplicatesResolved)
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
	if dropped != rep.RowsDropped {
		t.Errorf("RowsDropped = %d, but the rules' Dropped add up to %d", rep.RowsDropped, dropped)
	}
	var before, after int64
	for _, s := range rep.Slots {
		before += s.Before
		after += s.After
	}
	if before != rep.RowsIn || after != rep.RowsOut {
		t.Errorf("slot counts add up to %d before / %d after, want %d / %d", before, after, rep.RowsIn, rep.RowsOut)
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
