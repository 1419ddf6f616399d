package transform

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sptool/sptool/internal/gen"
	"github.com/sptool/sptool/internal/testhook"
	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
)

// Runs of a prefix (the fast path) and the row-by-row path give the same
// output bytes and the same report, for rule sets that exercise every way a
// plan can come out: passed, dropped whole, purge-only live steps, live
// steps that rewrite values, steps that rekey, expressions the VM runs.
func TestRunsAgreeWithRows(t *testing.T) {
	defer func(v bool) { rowByRow = v }(rowByRow)
	defer func(v int) { scanBlock = v }(scanBlock)
	var keys []string
	for i := 0; i < 20000; i += 37 {
		keys = append(keys, fmt.Sprint(i))
	}
	purge := "[" + strings.Join(keys, ", ") + "]"
	sets := map[string]string{
		"drop fast": `
rules:
  - drop: 'key_group < 64 && slot == "agg"'`,
		"keep and drop_slot": `
rules:
  - keep: 'slot != "window" || key_group % 3 == 0'
  - drop_slot: {op: 42, slot: count}
  - drop_operator: {op: 7}`,
		"purge then drop": `
rules:
  - purge_keys: {keys: ` + purge + `, codec: int64}
  - drop: 'key_group >= 100'`,
		"two purges, one scoped": `
rules:
  - purge_keys: {keys: [5, 17, 40, 41, 42, 43], codec: int64, op: 42}
  - purge_keys: {keys: ` + purge + `, codec: int64, slot: agg}`,
		"purge and set_value": `
slots:
  - {op: 42, slot: agg, key: int64, value: int64}
rules:
  - purge_keys: {keys: ` + purge + `, codec: int64}
  - set_value: {op: 42, slot: agg, expr: 'value % 1000'}`,
		"vm filter": `
slots:
  - {op: 42, slot: window, key: int64, value: int64}
rules:
  - drop: 'op == 42 && slot == "window" && key % 5 == 0'
  - purge_keys: {keys: ` + purge + `, codec: int64}`,
		"remap alone": `
rules:
  - remap_operator: {from: 7, to: 8}`,
		"remaps, then whole drops of the new operators": `
rules:
  - remap_operator: {from: 7, to: 8}
  - remap_operator: {from: 8, to: 9}
  - remap_operator: {from: 42, to: 43}
  - drop_slot: {op: 43, slot: count}
  - drop_operator: {op: 9}`,
		"remap onto another operator": `
rules:
  - remap_operator: {from: 7, to: 42, merge: true}`,
		"remap, then a filter of the new operator": `
rules:
  - remap_operator: {from: 7, to: 8}
  - drop: 'op == 8 && key_group < 10'`,
		"filter, then remap": `
rules:
  - drop: 'key_group < 10'
  - remap_operator: {from: 7, to: 8}`,
		"rekeying": `
rules:
  - drop: 'key_group < 20 && slot == "window"'
  - rename_slot: {op: 7, from: count, to: count_v2}
  - purge_keys: {keys: ` + purge + `, codec: int64}
  - remap_operator: {from: 7, to: 8}`,
	}
	dir := t.TempDir()
	n := 20000
	if testing.Short() {
		n = 6000 // the race detector's run, where 20,000 rows took 64 s
	}
	for _, sorted := range []bool{true, false} {
		in := filepath.Join(dir, fmt.Sprintf("in-%v.snap", sorted))
		if err := gen.WriteBig(in, gen.BigOptions{Rows: n, Seed: 5, Sorted: sorted}); err != nil {
			t.Fatal(err)
		}
		for name, src := range sets {
			set, err := rules.Parse(filepath.Join(dir, "r.yaml"), []byte("version: 1\n"+strings.TrimPrefix(src, "\n")+"\n"))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, columnar := range []bool{true, false} {
				run := func(byRow bool, probe savepoint.KeyProbe) ([]byte, []byte) {
					rowByRow = byRow
					return applyOnce(t, in, columnar, probe, 0, set, filepath.Join(dir, fmt.Sprintf("by-row-%v", byRow), "out.snap"), nil)
				}
				rowsOut, rowsRep := run(true, nil)
				// Runs read in blocks of 7 rows cross block ends. The
				// purge lists may be asked at open (Probe; TestProbedPurge
				// has an input large enough for the pass at open to index
				// its runs, which the probe needs).
				for _, c := range []struct {
					block int
					probe savepoint.KeyProbe
				}{{4096, nil}, {7, nil}, {7, Probe(set)}} {
					scanBlock = c.block
					runsOut, runsRep := run(false, c.probe)
					what := fmt.Sprintf("%s (sorted %v, columnar %v, blocks of %d, probe %v)", name, sorted, columnar, c.block, c.probe != nil)
					if !bytes.Equal(runsOut, rowsOut) {
						t.Errorf("%s: outputs differ", what)
					}
					if !bytes.Equal(runsRep, rowsRep) {
						t.Errorf("%s: reports differ:\nruns %.2000s\nrows %.2000s", what, runsRep, rowsRep)
					}
				}
				if bytes.Equal(rowsOut, mustRead(t, in)) {
					t.Errorf("%s (sorted %v, columnar %v): the rules changed nothing", name, sorted, columnar)
				}
			}
		}
	}
}

// In clink's hash-map order, rows whose plans pass or drop them whole are
// taken from their prefix's entry of the plan cache, without the plan:
// slots whose names share their first 16 bytes, which share an entry's
// words, are told apart by their plans, and a whole drop of one does not
// reach the other.
func TestAloneLongSlots(t *testing.T) {
	defer func(v bool) { rowByRow = v }(rowByRow)
	long := strings.Repeat("s", 16)
	r := rand.New(rand.NewPCG(7, 8))
	var rows []savepoint.Row
	kept := 0
	for i := range 4000 {
		slot := []string{long + "x", long + "y", "agg"}[i%3]
		if slot != long+"x" {
			kept++
		}
		uk := binary.LittleEndian.AppendUint64(nil, r.Uint64())
		rows = append(rows, savepoint.Row{Op: uint64(1 + i%2), Key: savepoint.EncodeKeyedKey([]byte(slot), uk), Value: []byte{byte(i)}})
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.snap")
	if _, err := savepoint.WriteSnapshotFile(in, nil, rows, savepoint.SnapshotOptions{AsIs: true}); err != nil {
		t.Fatal(err)
	}
	set, err := rules.Parse(filepath.Join(dir, "r.yaml"), []byte("version: 1\nrules:\n  - drop: 'slot == \""+long+"x\"'\n"))
	if err != nil {
		t.Fatal(err)
	}
	var byRuns []byte
	for _, byRow := range []bool{false, true} {
		rowByRow = byRow
		out, _ := applyOnce(t, in, true, nil, 0, set, filepath.Join(dir, fmt.Sprint(byRow), "out.snap"), nil)
		if byRuns == nil {
			byRuns = out
			continue
		}
		if !bytes.Equal(byRuns, out) {
			t.Error("the rows taken alone and one by one give different outputs")
		}
	}
	sp, err := savepoint.Open(filepath.Join(dir, "false", "out.snap"), savepoint.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if n := sp.Files[0].Snapshot.NumRows(); n != kept {
		t.Errorf("%d rows kept, want %d", n, kept)
	}
}

// A plan cache entry says what its key groups' plans do to a row without
// them: keep, drop, or keep unless a purge list may hold the key, the lists
// being the entry's; a plan with other lists than the entry's, or one that
// must see each row, or a slot part longer than the entry's words, is asked.
func TestSlotPlansWhole(t *testing.T) {
	a, b := &rules.PurgeKeysSpec{}, &rules.PurgeKeysSpec{}
	keep := &prefixPlan{whole: true, dropBy: -1}
	drop := &prefixPlan{whole: true, dropBy: 2}
	listed := &prefixPlan{whole: true, dropBy: -1, purges: []*rules.PurgeKeysSpec{a}}
	other := &prefixPlan{whole: true, dropBy: -1, purges: []*rules.PurgeKeysSpec{b}}
	live := &prefixPlan{whole: true, dropBy: -1, live: []int{0}}
	generic := &prefixPlan{dropBy: -1, generic: true}
	var e slotPlans
	e.reset(1, 0, 0, 4)
	for kg, c := range []struct {
		p    *prefixPlan
		want uint8
	}{{keep, wholeKeep}, {drop, wholeDrop}, {listed, wholeUnlisted}, {other, wholeAsk}, {live, wholeAsk}, {generic, wholeAsk}, {listed, wholeUnlisted}} {
		e.set(kg, c.p)
		if e.whole[kg] != c.want || e.plans[kg] != c.p {
			t.Errorf("key group %d: %d, want %d", kg, e.whole[kg], c.want)
		}
	}
	if len(e.purges) != 1 || e.purges[0] != a {
		t.Errorf("the entry's lists: %v", e.purges)
	}
	e.reset(1, 0, 0, 17)
	if e.set(0, keep); e.whole[0] != wholeAsk {
		t.Errorf("a slot part of 17 bytes: %d, want %d", e.whole[0], wholeAsk)
	}
	if e.reset(2, 0, 0, 4); e.whole != [savepoint.NumKeyGroups]uint8{} || e.purges != nil || e.plans[0] != nil {
		t.Error("reset left the entry's verdicts, lists or plans")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A run of one prefix whose user keys do not increase (8-byte keys, where
// scanRun compares integers, and longer ones) is noticed: the output is
// sorted, not copied in stored order.
func TestScanRunNoticesDisorder(t *testing.T) {
	for _, width := range []int{8, 11} {
		var rows []savepoint.Row
		slot := []byte("agg")
		for _, u := range []int{5, 9, 7, 300, 2} {
			uk := make([]byte, width)
			uk[width-1], uk[width-2] = byte(u), byte(u>>8)
			rows = append(rows, savepoint.Row{Op: 1, Key: savepoint.EncodeKeyedKey(slot, uk), Value: []byte{byte(u)}})
		}
		// The same key group for all: the rows form one run.
		kg := rows[0].Key[0]
		for i := range rows {
			rows[i].Key[0] = kg
		}
		rows = append(rows, savepoint.Row{Op: 2, Key: []byte{0xfe, 1}, Value: []byte{1}})
		dir := t.TempDir()
		in := filepath.Join(dir, "in.snap")
		if _, err := savepoint.WriteSnapshotFile(in, nil, rows, savepoint.SnapshotOptions{AsIs: true}); err != nil {
			t.Fatal(err)
		}
		sp, err := savepoint.Open(in, savepoint.OpenOptions{Columnar: true})
		if err != nil {
			t.Fatal(err)
		}
		set, err := rules.Parse(filepath.Join(dir, "r.yaml"), []byte("version: 1\nrules:\n  - drop_operator: {op: 2}\n"))
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out.snap")
		if _, err := Run(context.Background(), sp, set, Options{Out: out}); err != nil {
			t.Fatal(err)
		}
		sp.Close()
		res, err := savepoint.Open(out, savepoint.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sorted, _ := res.Files[0].Snapshot.Order(); !sorted || len(res.Files[0].Snapshot.Rows) != 5 {
			t.Errorf("user keys of %d bytes: output sorted %v, %d rows", width, sorted, len(res.Files[0].Snapshot.Rows))
		}
		res.Close()
	}
}

// slotCounts keeps its own copy of the last slot it counted: callers pass
// slices of buffers they reuse (the external sort's), and a memo that
// aliased one would count a later slot under the earlier one.
func TestSlotCountsCopyLastSlot(t *testing.T) {
	var c slotCounts
	buf := []byte("agg")
	c.addN(1, buf, true, 5)
	copy(buf, "cnt") // the caller reuses its buffer
	c.addN(1, []byte("cnt"), true, 2)
	got := map[string]int64{}
	c.each(func(k slotKey, n int64) { got[k.slot] = n })
	if got["agg"] != 5 || got["cnt"] != 2 {
		t.Fatalf("counts %v, want agg 5, cnt 2", got)
	}
}

// compositeMemo, like slotCounts, keeps its own copy of the slot it
// answered for.
func TestCompositeMemoCopiesSlot(t *testing.T) {
	set, err := rules.Parse("r.yaml", []byte("version: 1\nslots:\n  - {op: 1, slot: cart, key: string, value: int64, composite: true}\nrules:\n  - drop_operator: {op: 9}\n"))
	if err != nil {
		t.Fatal(err)
	}
	m := compositeMemo{e: &engine{set: set}}
	buf := []byte("cart")
	if !m.of(1, buf) {
		t.Fatal("slot cart is declared composite")
	}
	copy(buf, "bart") // the caller reuses its buffer
	if m.of(1, []byte("bart")) {
		t.Fatal("slot bart answered from the memo of cart")
	}
}

// scanColumns (gallop, then check the rows increase) finds the same run and
// the same order as scanLinear (row by row) on batches sorted, nearly
// sorted and shuffled, with keys of one length and of several, runs of
// every length, and prefixes that share bytes.
func TestScanColumnsAgreesWithLinear(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	prefixes := [][]byte{[]byte("\x05agg|"), []byte("\x05ag|"), []byte("\x05agh|"), []byte("\x06agg|")}
	for trial := 0; trial < 3000; trial++ {
		n := 1 + rng.IntN(200)
		widths := []int{8}
		if trial%3 == 1 {
			widths = []int{3, 8, 11, 12}
		} else if trial%3 == 2 {
			widths = []int{11}
		}
		type row struct {
			op  uint64
			key []byte
		}
		rows := make([]row, n)
		for i := range rows {
			uk := make([]byte, widths[rng.IntN(len(widths))])
			for j := range uk {
				uk[j] = byte(rng.IntN(3)) // few values: duplicates happen
			}
			rows[i] = row{op: uint64(1 + rng.IntN(2)), key: append(append([]byte{}, prefixes[rng.IntN(len(prefixes))]...), uk...)}
			if trial%4 == 0 {
				rows[i].op = 1
			}
		}
		if trial%5 != 4 {
			sort.Slice(rows, func(a, b int) bool {
				if rows[a].op != rows[b].op {
					return rows[a].op < rows[b].op
				}
				return bytes.Compare(rows[a].key, rows[b].key) < 0
			})
		}
		if trial%5 == 3 { // nearly sorted
			a, b := rng.IntN(n), rng.IntN(n)
			rows[a], rows[b] = rows[b], rows[a]
		}
		ops := make([]uint64, n)
		offs := make([]int32, n+1)
		var keys []byte
		for i, r := range rows {
			ops[i] = r.op
			keys = append(keys, r.key...)
			offs[i+1] = int32(len(keys))
		}
		for i := 0; i < n; i++ {
			key := keys[offs[i]:offs[i+1]]
			prefix := key[:bytes.IndexByte(key, '|')+1]
			gotN, gotInc := scanColumns(ops[i:], offs[i:], keys, ops[i], prefix)
			wantN, wantInc := scanLinear(ops[i:], offs[i:], keys, ops[i], prefix)
			if gotN != wantN || gotInc != wantInc {
				t.Fatalf("trial %d, row %d of %d: scanColumns %d rows, increasing %v; scanLinear %d, %v", trial, i, n, gotN, gotInc, wantN, wantInc)
			}
		}
	}
}

// A rescale that reads its runs' keys in blocks of a few rows (so key
// groups cross block ends) writes the same tree and report as one that
// reads them in large blocks; the slot counts of the report come from the
// same blocks.
func TestRescaleAcrossKeyBlocks(t *testing.T) {
	defer func(v int) { scanBlock = v }(scanBlock)
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	if err := gen.WriteBigTree(in, gen.BigOptions{Rows: 30000, Seed: 3, Sorted: true}, 3); err != nil {
		t.Fatal(err)
	}
	set, err := rules.Parse("r.yaml", []byte("version: 1\nrules:\n  - rescale: {parallelism: 5}\n"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(block int) (map[string][]byte, []byte) {
		scanBlock = block
		sp, err := savepoint.Open(in, savepoint.OpenOptions{Columnar: true})
		if err != nil {
			t.Fatal(err)
		}
		defer sp.Close()
		out := filepath.Join(dir, fmt.Sprintf("out-%d", block))
		rep, err := Run(context.Background(), sp, set, Options{Out: out})
		if err != nil {
			t.Fatal(err)
		}
		rep.Output = nil
		js, _ := json.Marshal(rep)
		return readTree(t, out), js
	}
	wantFiles, wantRep := run(4096)
	gotFiles, gotRep := run(5)
	if len(wantFiles) < 5 || !reflect.DeepEqual(gotFiles, wantFiles) {
		t.Errorf("blocks of 5 rows: %d files written, differing from the %d of blocks of 4096", len(gotFiles), len(wantFiles))
	}
	if !bytes.Equal(gotRep, wantRep) {
		t.Errorf("blocks of 5 rows: report\n%.3000s\nwant\n%.3000s", gotRep, wantRep)
	}
}

// planFor gives one plan per operator and prefix, whichever of its caches
// answers: prefixes that differ only in length (a trailing zero byte, which
// the table's words pad with), prefixes that share their first 16 bytes,
// and operators, all in an order that changes prefix every row; and a
// plan's buffer is its own.
func TestPlanForDistinguishesPrefixes(t *testing.T) {
	set, err := rules.Parse("r.yaml", []byte("version: 1\nrules:\n  - drop: 'slot == \"agg\"'\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := &engine{set: set, steps: compile(set)}
	w := &worker{e: e}
	long := strings.Repeat("s", 20)
	slots := []string{"agg", "ag", "agg\x00", long + "x", long + "y", "count"}
	type id struct {
		op  uint64
		key string
	}
	plans := map[id]*prefixPlan{}
	for round := 0; round < 3; round++ {
		for _, op := range []uint64{1, 1 << 40} {
			for kg := 0; kg < 128; kg += 5 {
				for _, slot := range slots {
					key := savepoint.EncodeKeyedKey([]byte(slot), []byte{byte(round), 7})
					key[0] = byte(kg)
					buf := bytes.Clone(key)
					k := savepoint.ParseKey(buf)
					p := w.planFor(savepoint.Row{Op: op, Key: buf}, k)
					clear(buf) // the caller's buffer changes; the plan keeps its own
					want := id{op, string(key[:len(key)-len(k.UserKey)])}
					if p.op != op || string(p.prefix) != want.key {
						t.Fatalf("op %d slot %q key group %d: plan of op %d prefix %q", op, slot, kg, p.op, p.prefix)
					}
					if q, ok := plans[want]; ok && q != p {
						t.Fatalf("op %d slot %q key group %d: a second plan for one prefix", op, slot, kg)
					}
					plans[want] = p
				}
			}
		}
	}
	if len(plans) != 2*26*len(slots) {
		t.Errorf("%d plans, want %d", len(plans), 2*26*len(slots))
	}
	// Two operators whose plans of one prefix take the same slot of the
	// table, asked for in turn.
	key := savepoint.EncodeKeyedKey([]byte("agg"), []byte{1})
	k := savepoint.ParseKey(key)
	part := key[1 : len(key)-len(k.UserKey)]
	w0, w1 := savepoint.PrefixWords(part)
	other := uint64(2)
	for planSlot(other, w0, w1, len(part)) != planSlot(1, w0, w1, len(part)) {
		other++
	}
	for _, op := range []uint64{1, other, 1, other} {
		if p := w.planFor(savepoint.Row{Op: op, Key: key}, k); p.op != op {
			t.Fatalf("op %d: the plan of op %d, which shares its slot", op, p.op)
		}
	}
}

// A purge rule's found keys are counted whether or not their log filled
// up (hitsMax) on the way, each once, under its own rule.
func TestHitsCounted(t *testing.T) {
	for _, n := range []int{0, 1, hitsMax - 1, hitsMax, 3*hitsMax + 5} {
		res := &fileResult{purged: [][]int64{nil, make([]int64, 10)}, hits: make([][]int32, 2)}
		want := make([]int64, 10)
		for x := range n {
			res.hit(1, x%7)
			want[x%7]++
		}
		res.countHits()
		if !slices.Equal(res.purged[1], want) || len(res.hits[1]) != 0 || res.purged[0] != nil {
			t.Errorf("%d hits: counts %v, %d left in the log; want %v", n, res.purged[1], len(res.hits[1]), want)
		}
		res.countHits() // nothing left to count twice
		if !slices.Equal(res.purged[1], want) {
			t.Errorf("%d hits: counted again: %v", n, res.purged[1])
		}
	}
}

// A purge over a snapshot whose purge lists were asked at open (Probe)
// takes the listed rows found there instead of reading every key again,
// and gives the bytes and report of a purge that reads them: for one list,
// two lists (one scoped), and a purge with another rule. The probe of
// another set of rules is not used (its lists are others, even with the
// same keys).
func TestProbedPurge(t *testing.T) {
	var keys []string
	for i := 0; i < 200_000; i += 37 {
		keys = append(keys, fmt.Sprint(i))
	}
	purge := "[" + strings.Join(keys, ", ") + "]"
	sets := map[string]string{
		"purge":                  "  - purge_keys: {keys: " + purge + ", codec: int64}",
		"two purges, one scoped": "  - purge_keys: {keys: [5, 17, 40, 41, 42, 43], codec: int64, op: 42}\n  - purge_keys: {keys: " + purge + ", codec: int64, slot: agg}",
		"purge then drop":        "  - purge_keys: {keys: " + purge + ", codec: int64}\n  - drop: 'key_group >= 100'",
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.snap")
	if err := gen.WriteBig(in, gen.BigOptions{Rows: 200_000, Seed: 9, Sorted: true}); err != nil {
		t.Fatal(err)
	}
	parse := func(name, src string) *rules.Set {
		set, err := rules.Parse(filepath.Join(dir, name+".yaml"), []byte("version: 1\nrules:\n"+src+"\n"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return set
	}
	other := parse("other", sets["purge"])
	var used, scanned atomic.Int64
	hitsUsed = func(n int) { used.Add(1); scanned.Add(int64(n)) }
	var lateScanned int64
	defer func() { hitsUsed = nil }()
	for name, src := range sets {
		set := parse(name, src)
		run := func(probe savepoint.KeyProbe, late int) ([]byte, []byte) {
			return applyOnce(t, in, true, probe, late, set, filepath.Join(dir, "out", "out.snap"), func(snap *savepoint.Snapshot) {
				if snap.Runs() == nil {
					t.Fatal("no index of prefix runs: the input is too small")
				}
			})
		}
		used.Store(0)
		wantOut, wantRep := run(nil, 0)
		if used.Load() != 0 {
			t.Fatalf("%s: listed rows from the pass at open without a probe", name)
		}
		if bytes.Equal(wantOut, mustRead(t, in)) {
			t.Fatalf("%s: the rules changed nothing", name)
		}
		for _, c := range []struct {
			what  string
			probe savepoint.KeyProbe
			late  int
			use   bool
		}{
			{"its probe", Probe(set), 0, true},
			{"its probe, come after 9 blocks of rows", Probe(set), 10, true},
			{"the probe of another set of rules", Probe(other), 0, false},
		} {
			used.Store(0)
			scanned.Store(0)
			out, rep := run(c.probe, c.late)
			if !bytes.Equal(out, wantOut) {
				t.Errorf("%s, %s: outputs differ", name, c.what)
			}
			if !bytes.Equal(rep, wantRep) {
				t.Errorf("%s, %s: reports differ:\n%.2000s\n%.2000s", name, c.what, rep, wantRep)
			}
			if got := used.Load() > 0; got != c.use {
				t.Errorf("%s, %s: listed rows from the pass at open: %v, want %v", name, c.what, got, c.use)
			}
			if c.late > 0 {
				lateScanned += scanned.Load()
			}
		}
	}
	// A probe that came late leaves the first rows of the run it came in
	// to scan (blocks of 2048 rows from the start of a range of the pass
	// never end where a run of 10,000 rows does), and the rest of the run
	// is taken from the pass.
	if lateScanned == 0 {
		t.Error("no run probed in part at open")
	}
}

// applyOnce opens in (memory-mapped or not, its keys probed at open by
// probe if not nil, from the late-th block of rows the pass at open reads
// if late > 0), checks the snapshot with check if not nil, applies set
// to it into out, and returns the output's bytes and the report as JSON,
// without the output's name.
func applyOnce(t *testing.T, in string, columnar bool, probe savepoint.KeyProbe, late int, set *rules.Set, out string, check func(*savepoint.Snapshot)) ([]byte, []byte) {
	t.Helper()
	opts := savepoint.OpenOptions{Columnar: columnar}
	if probe != nil {
		opts.Probe = &savepoint.ProbeSlot{}
		if late > 0 {
			var blocks atomic.Int64
			testhook.ProbeChunk = func(slot any) {
				if blocks.Add(1) == int64(late) {
					slot.(*savepoint.ProbeSlot).Set(probe)
				}
			}
			defer func() { testhook.ProbeChunk = nil }()
		} else {
			opts.Probe.Set(probe)
		}
	}
	sp, err := savepoint.Open(in, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if check != nil {
		check(sp.Files[0].Snapshot)
	}
	os.RemoveAll(filepath.Dir(out))
	rep, err := Run(context.Background(), sp, set, Options{Out: out, Jobs: 2})
	if err != nil {
		t.Fatalf("%s: %v", set.Source, err)
	}
	rep.Output = nil // it names the output directory
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	return mustRead(t, out), js
}

// Operators and slots whose entries of the plan table collide each keep an
// entry of their own, up to slotProbes of them; one more takes the first
// entry, emptied. Slot parts that differ in their first 8 bytes, and parts
// that differ only after them.
func TestPlanCacheEntries(t *testing.T) {
	for _, format := range []string{"s%d|", "a_long_slot_%d|"} {
		testPlanCacheEntries(t, format)
	}
}

func testPlanCacheEntries(t *testing.T, format string) {
	const op = 42
	type pair struct {
		w0, w1 uint64
		slen   int
	}
	var colliding []pair
	want := -1
	for i := 0; len(colliding) < slotProbes+1; i++ {
		part := []byte(fmt.Sprintf(format, i))
		w0, w1 := savepoint.PrefixWords(part)
		h := planSlot(op, w0, w1, len(part))
		if want < 0 {
			want = h
		}
		if h == want {
			colliding = append(colliding, pair{w0, w1, len(part)})
		}
	}
	var c planCache
	var entries []*slotPlans
	for k, p := range colliding[:slotProbes] {
		e := c.entry(op, p.w0, p.w1, p.slen)
		if slices.Contains(entries, e) {
			t.Fatalf("%s: pair %d took the entry of another", format, k)
		}
		e.plans[3] = &prefixPlan{kg: k}
		entries = append(entries, e)
	}
	for k, p := range colliding[:slotProbes] {
		if e := c.entry(op, p.w0, p.w1, p.slen); e != entries[k] || e.plans[3] == nil || e.plans[3].kg != k {
			t.Fatalf("%s: pair %d: its entry or plans were lost", format, k)
		}
	}
	last := colliding[slotProbes]
	e := c.entry(op, last.w0, last.w1, last.slen)
	if e != entries[0] || e.plans[3] != nil || e.w0 != last.w0 || e.w1 != last.w1 || e.slen != last.slen {
		t.Fatalf("%s: one pair more: entry %p (first %p), plans kept %v", format, e, entries[0], e.plans[3] != nil)
	}
}
