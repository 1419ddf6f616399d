package transform_test

import (
	"encoding/binary"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sptool/sptool/savepoint"
	"github.com/sptool/sptool/transform"
)

// TestDeclarationsByPlace: each rule decodes rows with the slot
// declarations under the names they have at its place in the rule file. A
// name that a later rename_slot or remap_operator moves a declaration to
// is not declared for the rules before it: its rows there are the
// undeclared rows the input holds.
func TestDeclarationsByPlace(t *testing.T) {
	i64 := func(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
	keyed := func(op uint64, slot, key string, value []byte) savepoint.Row {
		return savepoint.Row{Op: op, Key: savepoint.EncodeKeyedKey([]byte(slot), []byte(key)), Value: value}
	}
	for _, c := range []struct {
		name  string
		rows  []savepoint.Row
		rules string
		want  []string // the output's rows, as op/slot/key
	}{{
		// Slot a is undeclared at rule 1: its 8-byte value is no stamp.
		name:  "a ttl declaration renamed onto an undeclared slot",
		rows:  []savepoint.Row{keyed(7, "a", "k", i64(4)), keyed(7, "t", "j", append(i64(1000), 'A'))},
		rules: "version: 1\nslots: [{op: 7, slot: t, ttl: true}]\nrules:\n  - drop: 'expire_at != nil'\n  - rename_slot: {op: 7, from: t, to: a, merge: true}\n",
		want:  []string{"7/a/k"},
	}, {
		// Op 9's slot seen is undeclared at rule 1: its value is bytes,
		// not an int64 that does not decode.
		name:  "an int64 declaration remapped onto an undeclared operator",
		rows:  []savepoint.Row{keyed(7, "seen", "alice", i64(5)), keyed(9, "seen", "bob", []byte("x"))},
		rules: "version: 1\nslots: [{op: 7, slot: seen, value: int64}]\nrules:\n  - drop: 'op == 9 && key == \"zzz\"'\n  - remap_operator: {from: 7, to: 9, merge: true}\n",
		want:  []string{"9/seen/alice", "9/seen/bob"},
	}, {
		// The exception: purge_keys matches a slot declared composite
		// under its name anywhere in the file as composite, so that no
		// element of a listed key is left in the output's composite
		// slot b (its audit would count it).
		name:  "a composite declaration renamed after a purge",
		rows:  []savepoint.Row{keyed(7, "b", "alice\x1fsome", []byte("v")), keyed(7, "cart", "alice\x1fitem", []byte("v")), keyed(7, "cart", "bob\x1fitem", []byte("v"))},
		rules: "version: 1\nslots: [{op: 7, slot: cart, key: string, composite: true}]\nrules:\n  - purge_keys: {keys: [alice]}\n  - rename_slot: {op: 7, from: cart, to: b, merge: true}\n",
		want:  []string{"7/b/bob\x1fitem"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			in, out := filepath.Join(dir, "in.snap"), filepath.Join(dir, "out.snap")
			if _, err := savepoint.WriteSnapshotFile(in, savepoint.CanonicalMetadata(nil, savepoint.VersionMap{}), c.rows, savepoint.SnapshotOptions{Sidecar: true}); err != nil {
				t.Fatal(err)
			}
			if _, err := run(t, in, parseRules(t, c.rules, nil), transform.Options{Out: out}); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range readRows(t, out) {
				k := savepoint.ParseKey(l.Key)
				got = append(got, strconv.FormatUint(l.Op, 10)+"/"+string(k.Slot)+"/"+string(k.UserKey))
			}
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("rows %q, want %q", got, c.want)
			}
		})
	}
}
