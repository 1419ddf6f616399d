package rules

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/expr-lang/expr/vm"

	"github.com/sptool/sptool/savepoint"
)

// TestFastMatchesVM: for random predicates over op, kind, key_group, slot
// and subtask, the closure compilation gives exactly the VM's result on
// random rows (including operator ids above 2^63, raw and operator rows).
func TestFastMatchesVM(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	ints := []string{"op", "key_group", "subtask"}
	strs := []string{"slot", "kind"}
	cmps := []string{"==", "!=", "<", "<=", ">", ">="}
	sops := []string{"==", "!=", "startsWith", "endsWith", "contains"}
	svals := []string{`"agg"`, `"keyed"`, `"operator"`, `"<raw>"`, `"a"`, `""`, `"cnt"`}
	var atom func(d int) string
	atom = func(d int) string {
		if d > 0 && r.IntN(3) == 0 {
			op := []string{"&&", "||", "and", "or"}[r.IntN(4)]
			return "(" + atom(d-1) + " " + op + " " + atom(d-1) + ")"
		}
		if d > 0 && r.IntN(6) == 0 {
			return "!" + atom(d-1)
		}
		if r.IntN(2) == 0 {
			f, c, v := ints[r.IntN(3)], cmps[r.IntN(6)], []int{-1, 0, 7, 42, 63, 64, 127, 3}[r.IntN(8)]
			if r.IntN(4) == 0 {
				return fmt.Sprintf("%d %s %s", v, c, f)
			}
			return fmt.Sprintf("%s %s %d", f, c, v)
		}
		if r.IntN(5) == 0 {
			fn := []string{`uid("src")`, `uid("agg")`, `opid("42")`, `opid("18446744073709551615")`, `opid("9223372036854775808")`}[r.IntN(5)]
			if r.IntN(2) == 0 {
				return fmt.Sprintf("op %s %s", cmps[r.IntN(6)], fn)
			}
			return fmt.Sprintf("%s %s op", fn, cmps[r.IntN(6)])
		}
		return fmt.Sprintf("%s %s %s", strs[r.IntN(2)], sops[r.IntN(5)], svals[r.IntN(len(svals))])
	}
	keys := [][]byte{
		savepoint.EncodeKeyedKey([]byte("agg"), []byte("u1")),
		savepoint.EncodeKeyedKey([]byte("cnt"), []byte("u2")),
		savepoint.EncodeKeyedKey([]byte(""), []byte("u3")),
		[]byte("\xff__kafka_off__:0"),
		[]byte("\xffbroadcast|"),
		[]byte("__legacy__"),
		{},
	}
	ops := []uint64{0, 7, 42, 1 << 63, 1<<64 - 1, 11678514624188656593, savepoint.OperatorIDFromUID("src")}
	set, err := Parse("t.yaml", []byte("version: 1\nrules: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	var m vm.VM
	var env Env
	compiled := 0
	for i := 0; i < 3000; i++ {
		src := atom(3)
		p, err := set.CompileFilter(src)
		if err != nil {
			continue // a type error (e.g. kind < 3) is not our concern here
		}
		fast := p.Fast()
		if fast == nil {
			continue
		}
		compiled++
		for j := 0; j < 20; j++ {
			row := savepoint.Row{Op: ops[r.IntN(len(ops))], Key: keys[r.IntN(len(keys))], Value: []byte("v")}
			sub := r.IntN(4) - 1
			if err := set.FillEnv(&env, row, sub); err != nil {
				t.Fatal(err)
			}
			want, err := p.Eval(&m, &env)
			if err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			got := fast(&RowView{Op: row.Op, Key: savepoint.ParseKey(row.Key), Subtask: sub})
			if got != want {
				t.Fatalf("%q on op %d key %q subtask %d: fast %v, VM %v", src, row.Op, row.Key, sub, got, want)
			}
		}
	}
	if compiled < 1000 {
		t.Fatalf("only %d predicates compiled to closures", compiled)
	}
}

// TestOpIDFunctions: uid() hashes as clink does, opid() reads a full 64-bit
// id, and a bad opid literal is a compile error with its column.
func TestOpIDFunctions(t *testing.T) {
	set, err := Parse("t.yaml", []byte("version: 1\nrules: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	var m vm.VM
	var env Env
	row := savepoint.Row{Op: 18088258576788386267, Key: []byte("\xff__kafka_off__:0")}
	if err := set.FillEnv(&env, row, 0); err != nil {
		t.Fatal(err)
	}
	// (ordering compares by value: this id is above 42)
	for _, src := range []string{`op == uid("src")`, `op == opid("18088258576788386267")`, `uid("src") == op`, `op > opid("42")`, `op > 42`} {
		p, err := set.CompileFilter(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if v, err := p.Eval(&m, &env); err != nil || !v {
			t.Errorf("%s on op %d: %v %v, want true", src, row.Op, v, err)
		}
		if f := p.Fast(); f == nil || !f(&RowView{Op: row.Op, Key: savepoint.ParseKey(row.Key)}) {
			t.Errorf("%s: closure missing or false", src)
		}
	}
	if _, err := set.CompileFilter(`op == opid("12x")`); err == nil || !strings.Contains(err.Error(), `opid("12x"): not an operator id`) || !strings.Contains(err.Error(), "column 12") {
		t.Errorf("bad opid: %v", err)
	}
}
