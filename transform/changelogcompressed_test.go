package transform_test

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/transform"
)

// A changelog+file tree's files are written plain, whatever the input's
// compression: a changelog compressed as a whole gives no warning that its
// output is written compressed (which --strict would refuse), and the
// output's changelog is a plain stream.
func TestChangelogCompressedWrittenPlain(t *testing.T) {
	in := filepath.Join(t.TempDir(), "in")
	if err := os.CopyFS(in, os.DirFS("../testdata/independent/changelog-file")); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(in, "v1", "1", "changelog-17.snap")
	plain, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(plain)
	zw.Close()
	if err := os.WriteFile(p, z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	set := parseRules(t, "version: 1\nrules:\n  - keep: 'op != 123456'\n", nil)
	rep, err := run(t, in, set, transform.Options{Out: out, Strict: true})
	if err != nil {
		t.Fatalf("run: %v (warnings %q)", err, rep.Warnings)
	}
	for _, w := range rep.Warnings {
		if strings.Contains(w, "compressed as a whole") {
			t.Errorf("warning %q: the output is written plain", w)
		}
	}
	got, err := os.ReadFile(filepath.Join(out, "v1", "1", "changelog-17.snap"))
	if err != nil {
		t.Fatal(err)
	}
	if c := savepoint.DetectCompression(got); c != savepoint.CompressNone {
		t.Errorf("output changelog compressed with %s", c)
	}
}
