package transform

import (
	"slices"
	"testing"
)

// A row index built from runs, and joined to another, maps every output
// row to its input row, and keeps adjacent runs as one span.
func TestRowIndexRuns(t *testing.T) {
	type run struct{ start, n int }
	for _, tc := range []struct {
		name  string
		a, b  []run
		spans int
	}{
		{"empty", nil, nil, 0},
		{"one run", []run{{5, 3}}, nil, 1},
		{"adjacent runs join", []run{{0, 2}, {2, 3}, {9, 1}}, nil, 2},
		{"joined index extends the last span", []run{{0, 2}}, []run{{2, 2}, {7, 1}}, 2},
		{"joined index starts a span", []run{{0, 2}}, []run{{4, 2}, {7, 1}, {8, 4}}, 3},
		{"into an empty index", nil, []run{{3, 1}, {5, 1}}, 2},
		{"many single rows", func() (rs []run) {
			for i := 0; i < 5000; i += 2 {
				rs = append(rs, run{i, 1})
			}
			return rs
		}(), []run{{5000, 1}, {5001, 1}}, 2501},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var x, y rowIndex
			var want []int
			for _, r := range tc.a {
				x.appendRun(r.start, r.n)
				for i := range r.n {
					want = append(want, r.start+i)
				}
			}
			for _, r := range tc.b {
				y.appendRun(r.start, r.n)
				for i := range r.n {
					want = append(want, r.start+i)
				}
			}
			x.appendIndex(&y)
			if x.Len() != len(want) || len(x.spans) != tc.spans || len(x.ends) != tc.spans {
				t.Fatalf("%d rows in %d spans (%d ends), want %d in %d", x.Len(), len(x.spans), len(x.ends), len(want), tc.spans)
			}
			var got []int
			for i := 0; i < x.Len(); {
				start, n := x.run(i)
				if x.at(i) != start || n < 1 {
					t.Fatalf("row %d: at %d, run %d+%d", i, x.at(i), start, n)
				}
				for j := range n {
					got = append(got, start+j)
				}
				i += n
			}
			if !slices.Equal(got, want) {
				t.Fatalf("rows %v, want %v", got, want)
			}
		})
	}
}
