package transform_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sptool/sptool/internal/gen"
	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/transform"
)

// shuffledRows returns n generated rows in random order, as clink stores
// them.
func shuffledRows(n int, seed uint64) []savepoint.Row {
	rows := gen.BigRows(gen.BigOptions{Rows: n, Seed: seed})
	rand.New(rand.NewPCG(seed, 2)).Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	return rows
}

// runCutDuringSpill runs the rules src over the savepoint at path, to out,
// with outputs of 1,000 rows or more sorted through temporary files in
// dir, and cuts the input file victim short just before the first sort;
// it returns the run's error.
func runCutDuringSpill(t *testing.T, path, victim, src, out, dir string) error {
	t.Helper()
	defer transform.SetSpill(1000, 0)()
	var cut sync.Once // once: a rescale sorts its group's other files too
	defer transform.SetBeforeSpillSort(func() {
		cut.Do(func() {
			if err := os.Truncate(victim, 4096); err != nil {
				t.Error(err)
			}
		})
	})()
	sp, err := savepoint.Open(path, savepoint.OpenOptions{Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	_, err = transform.Run(context.Background(), sp, parseRules(t, src, nil), transform.Options{Out: out, TempDir: dir})
	return err
}

// An input cut short while its output is sorted through temporary files
// (the sort reads it in its own goroutines) is ErrInputChanged, not a crash,
// and nothing is written.
func TestSpilledSortInputCut(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "in.snap")
	if _, err := savepoint.WriteSnapshotFile(file, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), shuffledRows(40000, 5), savepoint.SnapshotOptions{AsIs: true, Sidecar: true}); err != nil {
		t.Fatal(err)
	}
	err := runCutDuringSpill(t, file, file, "version: 1\nrules:\n  - drop: 'slot == \"agg\"'\n", filepath.Join(dir, "out.snap"), dir)
	if !errors.Is(err, savepoint.ErrInputChanged) {
		t.Errorf("run over a cut input: %v, want ErrInputChanged", err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != "in.snap" && e.Name() != "in.snap.meta" {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// An input file of a rescale cut short while it is sorted through
// temporary files (a rescale sorts each old file of a group before it
// merges them) is ErrInputChanged too, naming the file, not a crash, and
// nothing is written.
func TestRescaleSpilledSortInputCut(t *testing.T) {
	files := map[int][]savepoint.Row{}
	for _, row := range shuffledRows(40000, 6) {
		s := 0
		if !row.IsOperatorState() {
			s = savepoint.SubtaskForKeyGroup(int(row.Key[0]), 2)
		}
		files[s] = append(files[s], row)
	}
	dir := t.TempDir()
	tree := writeTreeAsIs(t, filepath.Join(dir, "tree"), 5, files, savepoint.VersionMap{})
	victim := filepath.Join(tree, "v1", "1", "checkpoint-5.snap")
	out := filepath.Join(dir, "out")
	err := runCutDuringSpill(t, tree, victim, "version: 1\nrules:\n  - rescale: {parallelism: 3}\n", out, dir)
	if !errors.Is(err, savepoint.ErrInputChanged) || !strings.Contains(err.Error(), victim) {
		t.Errorf("rescale over a cut input: %v, want ErrInputChanged naming %s", err, victim)
	}
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("output: %v, want none", err)
	}
}

// TestSpilledSortAgrees: sorting the output through temporary files (as
// large files in clink's hash-map order are) writes the same bytes and the
// same report as the in-memory sort, duplicates and rewritten rows
// included, for a file and for a tree that is rescaled, and leaves nothing
// in the temporary directory.
func TestSpilledSortAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	rows := gen.BigRows(gen.BigOptions{Rows: 12000, Seed: 3})
	for i := 0; i < 400; i++ { // keyed duplicates: the later row wins
		d := rows[r.IntN(len(rows))]
		rows = append(rows, savepoint.Row{Op: d.Op, Key: d.Key, Value: []byte{byte(i)}})
	}
	for i := 0; i < 300; i++ { // operator state: the greater 8-byte value wins
		v := binary.LittleEndian.AppendUint64(nil, uint64(r.IntN(1000)))
		rows = append(rows, savepoint.Row{Op: gen.OpAgg, Key: []byte{0xfe, byte(r.IntN(20))}, Value: v})
	}
	r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	dir := t.TempDir()
	file := filepath.Join(dir, "in.snap")
	if _, err := savepoint.WriteSnapshotFile(file, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.SnapshotOptions{AsIs: true}); err != nil {
		t.Fatal(err)
	}
	files := map[int][]savepoint.Row{}
	for _, row := range rows {
		s := 0
		if !row.IsOperatorState() {
			s = savepoint.SubtaskForKeyGroup(int(row.Key[0]), 2)
		}
		files[s] = append(files[s], row)
	}
	tree := writeTreeAsIs(t, filepath.Join(dir, "tree"), 5, files, savepoint.VersionMap{})
	sets := map[string]string{
		"drop":    "rules:\n  - drop: 'key_group < 64 && slot == \"agg\"'\n",
		"purge":   "rules:\n  - purge_keys: {keys: [1, 2, 3, 50, 700, 9000], codec: int64}\n  - drop: 'key_group >= 100'\n",
		"rekey":   "rules:\n  - rename_slot: {op: 7, from: count, to: count_v2}\n  - remap_operator: {from: 7, to: 8}\n",
		"rescale": "rules:\n  - drop: 'slot == \"window\"'\n  - rescale: {parallelism: 3}\n",
	}
	for name, src := range sets {
		set := parseRules(t, "version: 1\n"+src, nil)
		for _, in := range []string{file, tree} {
			if name == "rescale" && in == file {
				continue
			}
			run := func(spill bool) (map[string][]byte, []byte) {
				if spill {
					defer transform.SetSpill(0, 2048)()
				} else {
					defer transform.SetSpill(1<<30, 0)()
				}
				sp, err := savepoint.Open(in, savepoint.OpenOptions{RequireValid: true, AllowMissingSidecar: true, Columnar: true})
				if err != nil {
					t.Fatal(err)
				}
				defer sp.Close()
				tmp := filepath.Join(dir, "tmp")
				os.RemoveAll(tmp)
				if err := os.Mkdir(tmp, 0o755); err != nil {
					t.Fatal(err)
				}
				out := filepath.Join(dir, "out")
				if in == file {
					out += ".snap"
				}
				rep, err := transform.Run(context.Background(), sp, set, transform.Options{Out: out, Force: true, TempDir: tmp})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
					t.Errorf("%s: %d files left in the temporary directory", name, len(ents))
				}
				got := map[string][]byte{}
				filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
					if err == nil && !d.IsDir() {
						b, _ := os.ReadFile(p)
						rel, _ := filepath.Rel(out, p)
						got[rel] = b
					}
					return err
				})
				os.RemoveAll(out)
				os.Remove(out + ".meta")
				rep.Output = nil
				js, _ := json.Marshal(rep)
				return got, js
			}
			mem, memRep := run(false)
			before := transform.Spills()
			spilled, spilledRep := run(true)
			if transform.Spills() == before {
				t.Fatalf("%s on %s: nothing was sorted through temporary files", name, filepath.Base(in))
			}
			if len(mem) == 0 || len(mem) != len(spilled) {
				t.Fatalf("%s on %s: %d files written in memory, %d spilled", name, filepath.Base(in), len(mem), len(spilled))
			}
			for p, b := range mem {
				if !bytes.Equal(spilled[p], b) {
					t.Errorf("%s on %s: %s differs (%d bytes spilled, %d in memory)", name, filepath.Base(in), p, len(spilled[p]), len(b))
				}
			}
			if !bytes.Equal(memRep, spilledRep) {
				t.Errorf("%s on %s: reports differ:\n in memory %s\n spilled   %s", name, filepath.Base(in), memRep, spilledRep)
			}
			var rep transform.Report
			json.Unmarshal(memRep, &rep)
			if rep.DuplicatesResolved == 0 {
				t.Errorf("%s on %s: no duplicates resolved; the test input has some", name, filepath.Base(in))
			}
		}
	}
}

// An output too small to need the sort through temporary files, whose sort
// through them fails (here: no temporary directory), is sorted in memory:
// the same bytes as through them.
func TestSpilledSortFallsBackInMemory(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "in.snap")
	if _, err := savepoint.WriteSnapshotFile(file, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), shuffledRows(8000, 7), savepoint.SnapshotOptions{AsIs: true, Sidecar: true}); err != nil {
		t.Fatal(err)
	}
	defer transform.SetSpill(1000, 0)()
	set := parseRules(t, "version: 1\nrules:\n  - drop: 'slot == \"agg\"'\n", nil)
	run := func(out, tempDir string) []byte {
		sp, err := savepoint.Open(file, savepoint.OpenOptions{Columnar: true})
		if err != nil {
			t.Fatal(err)
		}
		defer sp.Close()
		if _, err := transform.Run(context.Background(), sp, set, transform.Options{Out: out, TempDir: tempDir}); err != nil {
			t.Fatalf("temporary directory %s: %v", tempDir, err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	spills := transform.Spills()
	want := run(filepath.Join(dir, "spilled.snap"), dir)
	if transform.Spills() != spills+1 {
		t.Fatal("the output was not sorted through temporary files")
	}
	if got := run(filepath.Join(dir, "in-memory.snap"), filepath.Join(dir, "missing")); !bytes.Equal(got, want) {
		t.Error("the output sorted in memory differs from the one sorted through temporary files")
	}
}

// An input file cut short after its rows were processed, while another
// file's output is sorted, is ErrInputChanged, not a crash, when a merge
// across chain groups is checked (checkMergeGroups reads every input).
func TestMergeGroupsCheckInputCut(t *testing.T) {
	files := map[int][]savepoint.Row{}
	for i := range 500 {
		uk := binary.BigEndian.AppendUint64(nil, uint64(i))
		files[0] = append(files[0], savepoint.Row{Op: 901, Key: savepoint.EncodeKeyedKey([]byte("s"), uk), Value: []byte("v")})
	}
	files[1] = []savepoint.Row{{Op: 901, Key: savepoint.EncodeKeyedKey([]byte("s"), []byte("x")), Value: []byte("v")}}
	files[2] = shuffledRows(20000, 7)
	dir := t.TempDir()
	tree := writeTreeAsIs(t, filepath.Join(dir, "tree"), 5, files, savepoint.VersionMap{})
	victim := filepath.Join(tree, "v1", "0", "checkpoint-5.snap")
	defer transform.SetSpill(1000, 0)()
	var cut sync.Once
	defer transform.SetBeforeSpillSort(func() {
		cut.Do(func() {
			if err := os.Truncate(victim, 0); err != nil {
				t.Error(err)
			}
		})
	})()
	sp, err := savepoint.Open(tree, savepoint.OpenOptions{Columnar: true, Groups: []savepoint.Group{{First: 0, Count: 2}, {First: 2, Count: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	set := parseRules(t, "version: 1\nrules:\n  - remap_operator: {from: 901, to: 902, merge: true}\n  - drop: 'slot == \"agg\"'\n", nil)
	_, err = transform.Run(context.Background(), sp, set, transform.Options{Out: filepath.Join(dir, "out"), TempDir: dir, Jobs: 1})
	if !errors.Is(err, savepoint.ErrInputChanged) {
		t.Errorf("run over a cut input: %v, want ErrInputChanged", err)
	}
}

// A run cancelled while an output is sorted through temporary files stops
// the sort (none completes), rather than sorting every row first, and
// publishes nothing: a file or a rescale's old file.
func TestSpilledSortCancelled(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "in.snap")
	if _, err := savepoint.WriteSnapshotFile(file, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), shuffledRows(40000, 5), savepoint.SnapshotOptions{AsIs: true, Sidecar: true}); err != nil {
		t.Fatal(err)
	}
	files := map[int][]savepoint.Row{}
	for _, r := range shuffledRows(40000, 6) {
		for _, s := range place(r) {
			files[s] = append(files[s], r)
		}
	}
	tree := writeTreeAsIs(t, filepath.Join(dir, "tree"), 5, files, savepoint.VersionMap{})
	defer transform.SetSpill(1000, 0)()
	for _, c := range []struct{ in, rules string }{
		{file, "version: 1\nrules:\n  - drop: 'slot == \"agg\"'\n"},
		{tree, "version: 1\nrules:\n  - rescale: {parallelism: 3}\n"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		restore := transform.SetBeforeSpillSort(cancel)
		sp, err := savepoint.Open(c.in, savepoint.OpenOptions{Columnar: true})
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out")
		before := transform.Spills()
		_, err = transform.Run(ctx, sp, parseRules(t, c.rules, nil), transform.Options{Out: out, TempDir: dir, Jobs: 1})
		sp.Close()
		restore()
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v, want context.Canceled", c.in, err)
		}
		if n := transform.Spills() - before; n > 0 {
			t.Errorf("%s: %d sorts through temporary files completed after the run was cancelled", c.in, n)
		}
		if exists(out) {
			t.Errorf("%s: output written", c.in)
		}
	}
}

// An input rewritten in place while its output is sorted through temporary
// files (its offsets no longer those read at open) is ErrInputChanged,
// naming the file once.
func TestSpilledSortInputRewrittenNamedOnce(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "in.snap")
	if _, err := savepoint.WriteSnapshotFile(file, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), shuffledRows(40000, 5), savepoint.SnapshotOptions{AsIs: true, Sidecar: true}); err != nil {
		t.Fatal(err)
	}
	defer transform.SetSpill(1000, 0)()
	var once sync.Once
	defer transform.SetBeforeSpillSort(func() {
		once.Do(func() {
			fh, err := os.OpenFile(file, os.O_WRONLY, 0)
			if err != nil {
				t.Error(err)
				return
			}
			defer fh.Close()
			st, _ := fh.Stat()
			junk := bytes.Repeat([]byte{0xff}, int(st.Size()/2))
			if _, err := fh.WriteAt(junk, st.Size()/4); err != nil {
				t.Error(err)
			}
		})
	})()
	sp, err := savepoint.Open(file, savepoint.OpenOptions{Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	_, err = transform.Run(context.Background(), sp, parseRules(t, "version: 1\nrules:\n  - drop: 'slot == \"agg\"'\n", nil), transform.Options{Out: filepath.Join(dir, "out.snap"), TempDir: dir})
	if !errors.Is(err, savepoint.ErrInputChanged) || strings.Count(err.Error(), file) != 1 {
		t.Errorf("run over a rewritten input: %v, want ErrInputChanged naming %s once", err, file)
	}
}

// An input cut short after it was opened is ErrInputChanged, whose message
// names the file once, on one line.
func TestInputCutNamedOnce(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "in.snap")
	if _, err := savepoint.WriteSnapshotFile(file, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), shuffledRows(40000, 5), savepoint.SnapshotOptions{AsIs: true, Sidecar: true}); err != nil {
		t.Fatal(err)
	}
	sp, err := savepoint.Open(file, savepoint.OpenOptions{Columnar: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if err := os.Truncate(file, 4096); err != nil {
		t.Fatal(err)
	}
	_, err = transform.Run(context.Background(), sp, parseRules(t, "version: 1\nrules:\n  - drop: 'slot == \"agg\"'\n", nil), transform.Options{Out: filepath.Join(dir, "out.snap")})
	if !errors.Is(err, savepoint.ErrInputChanged) || strings.Count(err.Error(), file) != 1 || !strings.HasPrefix(err.Error(), file+": ") || strings.Contains(err.Error(), "\n") {
		t.Errorf("run over a cut input: %q, want ErrInputChanged naming %s once, on one line", err, file)
	}
}

// A run given neither an output path nor DryRun says it needs one or the
// other (before it looks at the name of the output it does not have).
func TestNoOutputPath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "in.snap.gz")
	if _, err := savepoint.WriteSnapshotFile(file, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), shuffledRows(100, 5), savepoint.SnapshotOptions{Sidecar: true, Compression: savepoint.CompressGzip}); err != nil {
		t.Fatal(err)
	}
	sp, err := savepoint.Open(file, savepoint.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	_, err = transform.Run(context.Background(), sp, parseRules(t, "version: 1\nrules: []\n", nil), transform.Options{})
	if err == nil || !strings.Contains(err.Error(), "no output path") || !strings.Contains(err.Error(), "Options.Out") || !strings.Contains(err.Error(), "Options.DryRun") {
		t.Errorf("zero Options: %v, want it to ask for Options.Out or Options.DryRun", err)
	}
}
