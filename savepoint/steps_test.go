package savepoint

import "testing"

// TestRunBuilderGivesUp: a builder notes stretches up to its max, and gives
// up early, from denseAfter stretches on, when they average fewer than 8
// rows (rows in clink's own order, the operator changing at almost every
// row), without growing its array to max first.
func TestRunBuilderGivesUp(t *testing.T) {
	const rows = 1 << 20
	for _, tc := range []struct {
		name     string
		every    int // rows a stretch
		max      int
		wantOver bool
		most     int // the most runs ever held, at most
	}{
		{"long stretches", 16, rows / 8, false, rows / 16},
		{"stretches of 8 rows", 8, rows / 8, false, rows / 8},
		// (the first time the array is full from denseAfter on)
		{"a new operator every row", 1, rows / 8, true, 2 * denseAfter},
		{"stretches of 7 rows", 7, rows / 8, true, 2 * denseAfter},
		{"few rows, short stretches", 1, 1024, true, 1024},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ob := opBuilder{runBuilder[opRun]{max: tc.max}}
			most := 0
			for row := range rows {
				ob.add(row, uint64(row/tc.every))
				most = max(most, len(ob.runs))
			}
			if ob.over != tc.wantOver {
				t.Fatalf("over = %v, want %v (%d runs)", ob.over, tc.wantOver, len(ob.runs))
			}
			if most > tc.most || !ob.over && most != len(ob.runs) {
				t.Errorf("held at most %d runs, want at most %d", most, tc.most)
			}
			if !ob.over {
				for i, r := range ob.runs {
					if r.row != i*tc.every || r.op != uint64(i) {
						t.Fatalf("run %d = %+v", i, r)
					}
				}
			}
		})
	}
}
