package rules

import (
	"math"
	"strings"
	"testing"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"

	"github.com/sptool/sptool/savepoint"
)

// min, max, sort and sortBy order integers by value, as the comparisons
// do: an operator id or a uint64 of 2^63 or more is above every int.
func TestExactOrderBuiltins(t *testing.T) {
	set, err := Parse("r.yaml", []byte(`version: 1
slots:
  - {op: 9223372036854775813, slot: u, key: uint64, value: uint64}
  - {op: 7, slot: u, key: uint64, value: uint64}
  - {op: 7, slot: l, key: string, value: "list<uint64>"}
rules: []
`))
	if err != nil {
		t.Fatal(err)
	}
	row := func(op uint64, slot string, key, value any) savepoint.Row {
		return declaredRow(t, set, op, slot, key, value)
	}
	big := row(1<<63+5, "u", uint64(3), uint64(1<<63+5))
	small := row(7, "u", uint64(3), uint64(9))
	list := row(7, "l", "k", []any{uint64(math.MaxUint64), uint64(2), uint64(1 << 63)})
	cases := []struct {
		src  string
		row  savepoint.Row
		want bool
	}{
		{"max(op, 1) == op", big, true},
		{"min(op, 1) == 1", big, true},
		{"max(op, -1, 2.5) == op", big, true},
		{"min(op, -1, 2.5) == -1", big, true},
		{`min(op, opid("18446744073709551615")) == op`, small, true},
		{`max(op, opid("18446744073709551615")) == opid("18446744073709551615")`, small, true},
		{"max([1, [op, 2]]) == op", big, true},
		{"max(value, key) == value", big, true},
		{"min(value, key) == key", big, true},
		{"max(value) == opid(\"18446744073709551615\")", list, true},
		{"min(value) == 2", list, true},
		{"sort([op, 1])[1] == op", big, true},
		{"sort([op, 1], \"desc\")[0] == op", big, true},
		{"sort(value)[0] == 2 && sort(value)[2] == opid(\"18446744073709551615\")", list, true},
		{"sortBy([op, 1], #)[1] == op", big, true},
		{"sortBy([op, 1], #, \"desc\")[0] == op", big, true},
		{"sortBy(value, #)[1] == opid(\"9223372036854775808\")", list, true},
		{"sortBy([{\"a\": op}, {\"a\": 1}], .a)[0].a == 1", big, true},
		{"sortBy([3, 1, 2], -#) == [3, 2, 1]", small, true},
		{"sort([\"b\", \"a\"]) == [\"a\", \"b\"]", small, true},
		{"max(1, 2) == 2 && min(1.5, 2) == 1.5", small, true},
	}
	for _, c := range cases {
		if got, err := filterOn(t, set, c.src, c.row); err != nil || got != c.want {
			t.Errorf("%s on %v: %v, %v; want %v", c.src, c.row, got, err, c.want)
		}
	}
	// What expr refuses, these refuse too.
	var m vm.VM
	for src, want := range map[string]string{
		`max(op, "a") == 1`:           "invalid argument for max",
		`sort([op, 1], "up")[0] == 1`: "invalid order",
	} {
		p, err := set.CompileFilter(src)
		if err != nil {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v; want %q", src, err, want)
			}
			continue
		}
		var env Env
		if err := set.FillEnv(&env, big, 0); err != nil {
			t.Fatal(err)
		}
		if got, err := p.Eval(&m, &env); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, %v; want an error with %q", src, got, err, want)
		}
	}
}

// A set_value of max(value, 1) keeps a value of 2^63 or more.
func TestExactOrderSetValue(t *testing.T) {
	set, err := Parse("r.yaml", []byte(`version: 1
slots:
  - {op: 7, slot: a, key: string, value: uint64}
rules:
  - set_value: {op: 7, slot: a, expr: 'max(value, 1)'}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := declaredRow(t, set, 7, "a", "k", uint64(1<<63+5))
	var m vm.VM
	var env Env
	if err := set.FillEnv(&env, r, 0); err != nil {
		t.Fatal(err)
	}
	got, err := set.Rules[0].SetValue.Apply(&m, &env)
	if err != nil {
		t.Fatal(err)
	}
	if dv, err := set.SlotDecl(7, "a").ValueCodec.Decode(got); err != nil || dv != uint64(1<<63+5) {
		t.Errorf("max(value, 1) of 2^63+5 wrote %x (%v, %v)", got, dv, err)
	}
}

// What expr's built-ins give for values no wide integer is among, the
// routed ones give too: max of one value that is no number is that value
// (max(value) ?? 0 of a null optional is 0), ties keep expr's order.
func TestExactOrderAsExpr(t *testing.T) {
	set, err := Parse("r.yaml", []byte(`version: 1
slots:
  - {op: 7, slot: o, key: string, value: "optional<list<int64>>"}
  - {op: 7, slot: s, key: string, value: string}
rules: []
`))
	if err != nil {
		t.Fatal(err)
	}
	row := func(slot string, value any) savepoint.Row { return declaredRow(t, set, 7, slot, "k", value) }
	for _, c := range []struct {
		src  string
		row  savepoint.Row
		want bool
	}{
		{"(max(value) ?? 0) == 0", row("o", nil), true},
		{"(min(value) ?? 5) == 5", row("o", nil), true},
		{"max(value) == 9", row("o", []any{int64(3), int64(9)}), true},
		{`max(value) == "abc"`, row("s", "abc"), true},
		{`sortBy([{"a": 1, "b": 1}, {"a": 1, "b": 2}, {"a": 0, "b": 3}], .a)[0].b == 3`, row("s", "x"), true},
		{`sortBy(split("c b a", " "), #) == ["a", "b", "c"]`, row("s", "x"), true},
	} {
		if got, err := filterOn(t, set, c.src, c.row); err != nil || got != c.want {
			t.Errorf("%s: %v, %v; want %v", c.src, got, err, c.want)
		}
	}
}

// A sortBy inside a sortBy's list is not written twice: the compiled
// expression grows with the nesting, not twice a level.
func TestSortByNestingLinear(t *testing.T) {
	size := func(depth int) int {
		src := strings.Repeat("sortBy(", depth) + "[3, 1, 2]" + strings.Repeat(", #)", depth) + " == [1, 2, 3]"
		p, err := (*Set)(nil).CompileFilter(src)
		if err != nil {
			t.Fatalf("depth %d: %v", depth, err)
		}
		n := 0
		ast.Walk(new(p.prog.Node()), countNodes{&n})
		return n
	}
	a, b := size(10), size(20)
	if b-a > 2*(a-size(5)) {
		t.Errorf("nodes at depth 5, 10, 20: %d, %d, %d: not linear", size(5), a, b)
	}
}

type countNodes struct{ n *int }

func (c countNodes) Visit(*ast.Node) { *c.n++ }
