package rules_test

import (
	"fmt"
	"log"

	"github.com/expr-lang/expr/vm"

	"github.com/sptool/sptool/rules"
	"github.com/sptool/sptool/savepoint"
)

// Select rows with an expression over the row model, with the checks
// `sptool cat --where` applies (cat tests each file's stored rows; this
// counts the rows a restore would see): the rule file's slot declarations
// decode keys and values, the expression is compiled once and evaluated
// per row, with only the fields it reads decoded (a value its codec cannot
// decode fails only an expression that reads it).
func ExampleSet_CompileFilter() {
	set, err := rules.Parse("inline.yaml", []byte(`version: 1
slots:
  - {uid: agg, slot: counts, key: int64, value: int64}
rules: []
`))
	if err != nil {
		log.Fatal(err)
	}
	pred, err := set.CompileFilter(`slot == "counts" && value > 3000`)
	if err != nil {
		log.Fatal(err) // the error gives the column within the expression
	}

	sp, err := savepoint.Open("../testdata/example", savepoint.OpenOptions{RequireValid: true, Columnar: true})
	if err != nil {
		log.Fatal(err)
	}
	defer sp.Close()
	var m vm.VM
	var env rules.Env
	matched, first := 0, ""
	err = savepoint.Guard(func() error {
		for r := range sp.UnionSeq(nil) {
			if err := set.FillEnvFields(&env, r.Row, r.Subtask, pred.Fields()); err != nil {
				return err
			}
			ok, err := pred.Eval(&m, &env)
			if err != nil {
				return err
			}
			if ok {
				if matched++; matched == 1 {
					first = fmt.Sprintf("key %v value %v (subtask %d)", env.Key, env.Value, env.Subtask)
				}
			}
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(matched, "rows; the first:", first)
	// Output:
	// 113 rows; the first: key 68 value 3985 (subtask 0)
}
