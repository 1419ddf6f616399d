package savepoint

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestDecodeIgnoresSpareCapacity: a stream decodes the same whatever lies
// beyond its length in the buffer: lengths read from the bytes must not
// reach past the message that holds them (found by the fuzzer: a metadata
// string length ran into the following bytes instead of failing).
func TestDecodeIgnoresSpareCapacity(t *testing.T) {
	fixture, err := os.ReadFile("../testdata/clink/snapshot-v1.snap")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range [][]byte{fixture, badCases[0].make(t, fixture)} {
		padded := append(bytes.Clone(in), bytes.Repeat([]byte{0x41}, 1<<16)...)[:len(in)]
		a, errA := DecodeSnapshot(in, ReadOptions{})
		b, errB := DecodeSnapshot(padded, ReadOptions{})
		if (errA == nil) != (errB == nil) || errA != nil && errA.Error() != errB.Error() {
			t.Fatalf("errors differ: %v / %v", errA, errB)
		}
		if errA == nil && !rowsEqual(a.Rows, b.Rows) {
			t.Fatal("rows differ with spare capacity")
		}
	}
	// A metadata string whose length runs past the schema message.
	bad := bytes.Clone(fixture)
	i := bytes.Index(bad, []byte("clink.format_version"))
	if i < 4 {
		t.Fatal("metadata key not found")
	}
	bad[i-4], bad[i-3] = 0xff, 0x7f // the key's length prefix
	padded := append(bytes.Clone(bad), bytes.Repeat([]byte{0x41}, 1<<16)...)[:len(bad)]
	if _, err := DecodeSnapshot(padded, ReadOptions{}); err == nil || !strings.Contains(err.Error(), "byte offset") {
		t.Fatalf("a length past the message decoded: %v", err)
	}
}
