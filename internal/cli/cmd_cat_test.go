package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sptool/sptool/savepoint"
)

// appendCatJSON writes what encoding/json wrote for a catRow, for every
// kind of key and value, decoded or not.
func TestAppendCatJSON(t *testing.T) {
	at := int64(1700000000000)
	decodes := []*decode{nil, {Key: "k", Value: int64(3)}, {Key: []byte{1, 2}, Value: map[string]any{"<": 1.5}, ExpireAt: &at},
		{Key: nil, Value: []any{"x", uint64(7)}}}
	// Stored keys: keyed rows (key group, slot, '|', user key) with slots
	// and user keys that JSON escapes or that are not UTF-8, and keys
	// without a separator; values printable or not, 8 bytes or not.
	keys := [][]byte{[]byte("\x05agg|user-001"), []byte("\x7fwin\"dow|k\\ey"), []byte("\x00\xff\xfe|\x00\n\x1f"),
		[]byte("\x03sl\u2028ot|\xc3\xa9<&>"), []byte("\x09|"), []byte("raw-key"), []byte("\xff"), nil,
		[]byte("\x01a|12345678")}
	values := [][]byte{nil, []byte("v"), []byte("8 bytes!"), []byte("\x00\x01\x02\x03\x04\x05\x06\x07"), []byte("quote\"back\\slash"),
		[]byte("\xe2\x80\xa9 and more than eight")}
	var scratch []byte
	for i, key := range keys {
		for j, value := range values {
			row := savepoint.Row{Op: uint64(i * j * 1000003), Key: key, Value: value}
			k := savepoint.ParseKey(row.Key)
			subtask := (i+j)%3 - 1
			dec := decodes[(i*len(values)+j)%len(decodes)]
			var got []byte
			var err error
			got, scratch, err = appendCatJSON([]byte("prev\n"), scratch, row, k, subtask, dec)
			if err != nil {
				t.Fatal(err)
			}
			cr := newCatRow(row, k, subtask)
			cr.Decoded = dec
			var want bytes.Buffer
			want.WriteString("prev\n")
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(cr); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("row %q = %q:\n%s\nwant\n%s", row.Key, row.Value, got, want.Bytes())
			}
		}
	}
}

// cat prints the same bytes whether a file out of canonical order goes
// through an index sorted in memory or through a sorted copy on disk, in
// every format, duplicates and all, and removes its copies.
func TestCatThroughSortedCopies(t *testing.T) {
	// A file in no order whose keys each come two or three times, with
	// other values: a copy must keep every row, duplicates in stream order.
	dupes := filepath.Join(t.TempDir(), "dupes.snap")
	var rows []savepoint.Row
	for i := range 3000 {
		k := (i * 7919) % 1000
		key := append([]byte{byte(k % 128)}, fmt.Sprintf("slot|key-%04d", k)...)
		rows = append(rows, savepoint.Row{Op: uint64(1 + k%3), Key: key, Value: []byte(fmt.Sprintf("v%d", i))})
	}
	if _, err := savepoint.WriteSnapshotFile(dupes, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), rows, savepoint.SnapshotOptions{AsIs: true}); err != nil {
		t.Fatal(err)
	}
	inputs := []string{dupes, filepath.Join("..", "..", "testdata", "example")}
	fixtures, err := filepath.Glob(filepath.Join("..", "..", "testdata", "independent", "*.truth.json"))
	if err != nil || len(fixtures) == 0 {
		t.Fatalf("no independent fixtures: %v", err)
	}
	for _, f := range fixtures {
		inputs = append(inputs, strings.TrimSuffix(f, ".truth.json"))
	}
	unsorted := 0
	for _, in := range inputs {
		sp, err := savepoint.Open(in, savepoint.OpenOptions{Columnar: true, AllowMissingSidecar: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range sp.Files {
			if _, strict := f.Snapshot.Order(); !strict {
				unsorted++
			}
		}
		sp.Close()
		for _, format := range []string{"text", "jsonl", "csv"} {
			run := func(spillRows int) string {
				defer func(n int) { catSpillRows = n }(catSpillRows)
				catSpillRows = spillRows
				tmp := t.TempDir()
				var out, errs bytes.Buffer
				if code := Main(context.Background(), []string{"cat", "--allow-unverified", "--format", format, "--temp-dir", tmp, in}, &Streams{Out: &out, Err: &errs}); code != ExitOK {
					t.Fatalf("cat %s --format %s: exit %d: %s", in, format, code, errs.String())
				}
				if left, _ := os.ReadDir(tmp); len(left) > 0 {
					t.Fatalf("cat %s left %d temporary files", in, len(left))
				}
				return out.String()
			}
			inMemory, copied := run(1<<30), run(1)
			if inMemory == "" || inMemory != copied {
				t.Fatalf("cat %s --format %s: %d bytes through a sorted index, %d through sorted copies, not the same", in, format, len(inMemory), len(copied))
			}
		}
	}
	if unsorted == 0 {
		t.Fatal("no input has a file out of canonical order: the sorted copies are not tested")
	}
}
