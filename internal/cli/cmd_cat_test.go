package cli

import (
	"bytes"
	"encoding/json"
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
