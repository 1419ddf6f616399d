package savepoint

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// emptyOffsetsStream is a canonical stream of one zero-row record batch
// whose binary columns have no offsets buffer (length 0), as Arrow Java
// writes an empty batch, followed by a batch holding the fixture's rows.
func emptyOffsetsStream(t testing.TB) []byte {
	t.Helper()
	meta := arrow.NewMetadata([]string{MetaFormatVersion}, []string{"1"})
	schema := arrow.NewSchema(canonicalFields, &meta)
	none := []*memory.Buffer{nil, nil, nil}
	empty := array.NewRecordBatch(schema, []arrow.Array{
		array.MakeFromData(array.NewData(u64, 0, none[:2], nil, 0, 0)),
		array.MakeFromData(array.NewData(bin, 0, none, nil, 0, 0)),
		array.MakeFromData(array.NewData(bin, 0, none, nil, 0, 0)),
	}, 0)
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	for _, rec := range []arrow.RecordBatch{empty, arrowGoBatch(schema, fixtureRows)} {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A zero-row batch whose binary columns declare empty offsets buffers is a
// legal empty batch: it opens, columnar or not, as a batch with the single
// offset 0 (arrow-go's ValueOffsets panics on it, which used to kill the
// process on a columnar open).
func TestEmptyBatchWithoutOffsets(t *testing.T) {
	data := emptyOffsetsStream(t)
	path := filepath.Join(t.TempDir(), "empty-offsets.snap")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, columnar := range []bool{false, true} {
		sp, err := Open(path, OpenOptions{Columnar: columnar, AllowMissingSidecar: true})
		if err != nil {
			t.Fatalf("columnar %v: %v", columnar, err)
		}
		snap := sp.Files[0].Snapshot
		if len(snap.Batches) != 2 || snap.Batches[0].Len() != 0 {
			t.Fatalf("columnar %v: batches %v", columnar, snap.BatchRows)
		}
		for _, offs := range [][]int32{snap.Batches[0].KeyOffs, snap.Batches[0].ValOffs} {
			if len(offs) != 1 || offs[0] != 0 {
				t.Fatalf("columnar %v: offsets of the empty batch %v, want [0]", columnar, offs)
			}
		}
		var got []Row
		snap.EachRow(func(_ int, r Row) bool { got = append(got, r); return true })
		if !rowsEqual(got, fixtureRows) {
			t.Fatalf("columnar %v: rows %v", columnar, got)
		}
		sp.Close()
	}
}
