package transform

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sptool/sptool/internal/gen"
	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
)

func TestRunLog(t *testing.T) {
	slot := []byte("agg")
	var l runLog
	l.add(7, 3, slot, true, 5, true)
	l.add(7, 3, []byte("agg"), true, 2, true) // same stretch
	l.add(7, 3, slot, true, 0, true)          // nothing
	l.add(7, 4, slot, true, 1, false)
	l.add(7, -1, nil, false, 1, false)
	if len(l.runs) != 3 || l.runs[0].n != 7 || l.runs[1].kg != 4 || l.runs[2].kg != -1 || !l.describes(9) || l.describes(8) {
		t.Fatalf("log %+v (rows %d)", l.runs, l.rows)
	}
	slot[0] = 'x' // the first stretch's slot was copied
	if string(l.runs[0].slot) != "agg" {
		t.Errorf("slot %q: not copied", l.runs[0].slot)
	}
	var m runLog
	m.add(7, 4, []byte("agg"), true, 3, true) // continues l's last but one: not its last
	l.appendLog(&m)
	if len(l.runs) != 4 || !l.describes(12) {
		t.Errorf("appended: %+v", l.runs)
	}
	m.drop()
	l.appendLog(&m)
	if !l.broken || l.describes(l.rows) {
		t.Error("a log with a dropped one appended is still usable")
	}

	// A stretch nearly every row: the log stops at runLogMin stretches.
	var h runLog
	for i := 0; i < 3*runLogMin; i++ {
		h.add(1, i%2, slot, true, 1, false)
	}
	if !h.broken || h.runs != nil {
		t.Errorf("%d stretches for %d rows kept", len(h.runs), h.rows)
	}
	// Long stretches: kept past runLogMin.
	var g runLog
	for i := 0; i < 2*runLogMin; i++ {
		g.add(1, i%2, slot, true, runLogRows, false)
	}
	if !g.describes(2 * runLogMin * runLogRows) {
		t.Errorf("a log of stretches of %d rows was dropped", runLogRows)
	}
}

// A rescale sorted out from the process pass's logs writes the same files
// and the same report as one that reads every key again, and as the
// row-by-row path; rules that reorder rows (rekeying) drop the logs.
func TestRescaleRunLog(t *testing.T) {
	defer func(a, b bool) { noRunLog, rowByRow = a, b }(noRunLog, rowByRow)
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	if err := gen.WriteBigTree(in, gen.BigOptions{Rows: 40000, Seed: 3, Sorted: true}, 4); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := 0; i < 40000; i += 29 {
		keys = append(keys, fmt.Sprint(i))
	}
	purge := "[" + keys[0]
	for _, k := range keys[1:] {
		purge += ", " + k
	}
	purge += "]"
	sets := []struct {
		name, src string
		logged    bool
	}{
		{"rescale only", ``, true},
		{"drop", `
  - drop: 'key_group < 64 && slot == "agg"'`, true},
		{"purge and set_value", `
  - purge_keys: {keys: ` + purge + `, codec: int64}
  - set_value: {op: 42, slot: agg, expr: 'value % 1000'}`, true},
		{"remap keeping the order", `
  - remap_operator: {from: 7, to: 8}`, true},
		{"rekeying", `
  - rename_slot: {op: 7, from: count, to: a_count}
  - remap_operator: {from: 42, to: 3}`, false},
	}
	for _, s := range sets {
		for _, par := range []int{3, 7} {
			src := fmt.Sprintf("version: 1\nslots:\n  - {op: 42, slot: agg, key: int64, value: int64}\nrules:%s\n  - rescale: {parallelism: %d}\n", s.src, par)
			set, err := rules.Parse(filepath.Join(dir, "r.yaml"), []byte(src))
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			run := func(mode string) (map[string][]byte, []byte, int64) {
				noRunLog, rowByRow = mode == "no log", mode == "row by row"
				sp, err := savepoint.Open(in, savepoint.OpenOptions{Columnar: true, RequireValid: true})
				if err != nil {
					t.Fatal(err)
				}
				defer sp.Close()
				out := filepath.Join(dir, "out-"+mode)
				os.RemoveAll(out)
				uses := runLogUses.Load()
				rep, err := Run(context.Background(), sp, set, Options{Out: out, Jobs: 2})
				if err != nil {
					t.Fatalf("%s: %v", s.name, err)
				}
				rep.Output = nil // it names the output directory
				js, _ := json.Marshal(rep)
				return readTree(t, out), js, runLogUses.Load() - uses
			}
			what := fmt.Sprintf("%s, parallelism %d", s.name, par)
			logOut, logRep, logUses := run("log")
			for _, mode := range []string{"no log", "row by row"} {
				o, r, uses := run(mode)
				if mode == "no log" && uses != 0 {
					t.Errorf("%s: %s: %d files sorted out from logs", what, mode, uses)
				}
				if !reflect.DeepEqual(logOut, o) {
					t.Errorf("%s: %s: the files differ", what, mode)
				}
				if !bytes.Equal(logRep, r) {
					t.Errorf("%s: %s: reports differ:\nlog %.3000s\n%s %.3000s", what, mode, logRep, mode, r)
				}
			}
			if want := int64(0); s.logged {
				want = 4
				if logUses != want {
					t.Errorf("%s: %d of 4 files sorted out from logs", what, logUses)
				}
			} else if logUses != want {
				t.Errorf("%s: %d files sorted out from logs of reordered rows", what, logUses)
			}
		}
	}
}

// readTree returns the bytes of every file under dir by relative path.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[rel], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
