package savepoint

import (
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestOpenTreeStopsAtBadFile: once a file of a tree fails to read, the
// files not started yet are left unread, and the error is the first bad
// file's in subtask order, however many are read at once.
func TestOpenTreeStopsAtBadFile(t *testing.T) {
	const n = 8
	files := make([][]Row, n)
	for i := range files {
		for k := range 50 {
			files[i] = append(files[i], Row{Op: 7, Key: EncodeKeyedKey([]byte("s"), []byte{byte(i), byte(k)}), Value: []byte("v")})
		}
	}
	for _, tc := range []struct {
		name     string
		bad      []int
		atOnce   int
		wantRead []int // nil: not checked
	}{
		{"the first file bad, one at a time", []int{0}, 1, []int{0}},
		{"a middle file bad, one at a time", []int{3}, 1, []int{0, 1, 2, 3}},
		{"the last file bad, one at a time", []int{n - 1}, 1, []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{"two bad files, one at a time", []int{2, 5}, 1, []int{0, 1, 2}},
		{"two bad files, four at a time", []int{5, 2}, 4, nil},
		{"two bad files, all at once", []int{6, 1}, n, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree := vtWriteTree(t, files, nil)
			for _, b := range tc.bad {
				if err := os.WriteFile(vtPayload(tree, b), []byte("not an Arrow stream"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			defer func(a int) { filesAtOnce, fileRead = a, nil }(filesAtOnce)
			filesAtOnce = tc.atOnce
			var mu sync.Mutex
			var read []int
			fileRead = func(s int) {
				mu.Lock()
				read = append(read, s)
				mu.Unlock()
			}
			sp, err := Open(tree, OpenOptions{})
			if err == nil {
				sp.Close()
				t.Fatal("opened a tree with bad files")
			}
			first := slices.Min(tc.bad)
			if want := strings.ReplaceAll(vtPayload("", first), "/", string(os.PathSeparator)); !strings.Contains(err.Error(), want[1:]) {
				t.Errorf("err = %v, want the error of subtask %d", err, first)
			}
			for _, b := range tc.bad {
				if b != first && strings.Contains(err.Error(), vtPayload("", b)[1:]) {
					t.Errorf("err = %v names subtask %d too", err, b)
				}
			}
			slices.Sort(read)
			if tc.wantRead != nil && !slices.Equal(read, tc.wantRead) {
				t.Errorf("read subtasks %v, want %v", read, tc.wantRead)
			}
			if !slices.Contains(read, first) {
				t.Errorf("read subtasks %v, not the first bad one", read)
			}
		})
	}
}
