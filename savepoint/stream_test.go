package savepoint

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// LooseBytes counts the bytes a copy of a file would carry that no row
// holds and that are not zero padding: none in what clink's writer and
// sptool's write; the bytes of a padding that are not zero.
func TestLooseBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.snap")
	rows := []Row{{Op: 1, Key: EncodeKeyedKey([]byte("s"), []byte("k")), Value: []byte("abc")}}
	if _, err := WriteSnapshotFile(path, CanonicalMetadata(nil, VersionMap{}), rows, SnapshotOptions{}); err != nil {
		t.Fatal(err)
	}
	canonical, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	clink, err := os.ReadFile(filepath.Join("..", "testdata", "clink", "snapshot-v1.snap"))
	if err != nil {
		t.Fatal(err)
	}
	// The value "abc" ends the body: 5 bytes of padding, then the
	// end-of-stream marker.
	end := len(canonical) - 8
	padded := func(b string) []byte {
		out := slices.Clone(canonical)
		copy(out[end-5:end], b)
		return out
	}
	for _, c := range []struct {
		name  string
		data  []byte
		loose int64
	}{
		{"sptool's", canonical, 0},
		{"clink's", clink, 0},
		{"padding of zeros", padded("\x00\x00\x00\x00\x00"), 0},
		{"padding holding bytes", padded("anna\x00"), 4},
		// clink ignores a field's custom metadata; a copy would carry it.
		{"a field's custom metadata", fieldMetadataStream(t, "note", "anna"), 8},
	} {
		s, err := DecodeSnapshot(c.data, ReadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if s.LooseBytes != c.loose {
			t.Errorf("%s: %d loose bytes, want %d", c.name, s.LooseBytes, c.loose)
		}
	}
	if !bytes.Equal(canonical[end-5:end], make([]byte, 5)) {
		t.Fatalf("test setup: the 5 bytes before the marker are % x, not padding", canonical[end-5:end])
	}
}

// fieldMetadataStream is clink's fixture rows in a canonical stream whose
// first field carries the custom metadata key=value.
func fieldMetadataStream(t *testing.T, key, value string) []byte {
	t.Helper()
	fields := slices.Clone(canonicalFields)
	fields[0].Metadata = arrow.NewMetadata([]string{key}, []string{value})
	return streamOf(t, fields, map[string]string{MetaFormatVersion: "1"}, 1)
}
