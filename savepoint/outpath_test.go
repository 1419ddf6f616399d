package savepoint

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestCheckOutputPath: an output may not be the input, lie inside or
// contain it, or be the input's sidecar (or have the input as its sidecar).
func TestCheckOutputPath(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "ckpt")
	file := filepath.Join(dir, "checkpoint-7.snap")
	cases := []struct {
		in, out string
		ok      bool
	}{
		{in, in, false},
		{in, filepath.Join(in, "v2"), false},
		{in, dir, false},
		{in, filepath.Join(dir, "ckpt-out"), true},
		{file, file, false},
		{file, file + ".meta", false},
		{file + ".meta", file, false},
		{file, filepath.Join(dir, "checkpoint-7.out.snap"), true},
	}
	for _, c := range cases {
		err := CheckOutputPath(c.in, c.out)
		if (err == nil) != c.ok {
			t.Errorf("CheckOutputPath(%s, %s) = %v, want ok=%v", c.in, c.out, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrOutputIsInput) {
			t.Errorf("CheckOutputPath(%s, %s) = %v, want ErrOutputIsInput", c.in, c.out, err)
		}
	}
}
