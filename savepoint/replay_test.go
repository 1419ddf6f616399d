package savepoint

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// changelogKey is the key of (op, k) in restoreModel's maps.
func changelogKey(op uint64, k []byte) string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], op)
	return string(b[:]) + string(k)
}

// restoreModel is clink's ChangelogStateBackend::restore written out: the
// rows of each materialisation put into a map of (op, key) in turn,
// merged with the restore's duplicate rules, then each log row replayed,
// an erase removing its key and any other kind putting its row. It
// returns the state in canonical order and the keys whose last log row is
// an erase. Materialisation rows among the log rows (row_kind 0 and 3) are
// restored with mats, not replayed.
func restoreModel(mats [][]Row, kinds []uint8, logs []Row) ([]Row, map[string]bool) {
	state := map[string]Row{}
	for _, m := range mats {
		for _, r := range m {
			k := changelogKey(r.Op, r.Key)
			if old, ok := state[k]; ok {
				r = MergeDuplicate(old, r)
			}
			state[k] = r
		}
	}
	erased := map[string]bool{}
	for i, r := range logs {
		k := changelogKey(r.Op, r.Key)
		if kinds[i] == rowKindMaterialised || kinds[i] == rowKindHandle {
			continue // (restored first, as mats)
		}
		if kinds[i] == rowKindErase {
			delete(state, k)
			erased[k] = true
			continue
		}
		state[k] = r
		delete(erased, k)
	}
	rows := make([]Row, 0, len(state))
	for _, r := range state {
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b Row) int { return compareRows(a.Op, a.Key, b.Op, b.Key) })
	return rows, erased
}

// replay, in memory and through temporary files (replayInFile), leaves
// the state the restore leaves, in canonical order, and notes the keys
// erased last, on random materialisations (keys stored twice, operator
// rows of 8-byte values that merge by the greater) and logs (puts,
// erases, unknown kinds, keys put and erased again).
func TestReplayMatchesRestore(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 4))
	key := func() (uint64, []byte) {
		op := uint64(1 + r.IntN(2))
		if r.IntN(4) == 0 {
			return op, EncodeBroadcastKey([]byte{byte('a' + r.IntN(3))})
		}
		return op, EncodeKeyedKey([]byte("s"), []byte{byte(r.IntN(12))})
	}
	value := func() []byte {
		if r.IntN(3) == 0 {
			return []byte{byte(r.IntN(256))} // merged by order alone
		}
		return binary.LittleEndian.AppendUint64(nil, r.Uint64()) // an operator row's: the greater int64 kept
	}
	for round := range 3000 {
		var mats [][]Row
		for range r.IntN(3) {
			var m []Row
			for range r.IntN(12) {
				op, k := key()
				m = append(m, Row{Op: op, Key: k, Value: value()})
			}
			mats = append(mats, m)
		}
		// The stream's rows: log rows, and materialisation rows among
		// them (restored apart, passed over here), some of the log's keys.
		var logs changelogLog
		var logRows []Row
		for range r.IntN(12) {
			op, k := key()
			kind := []uint8{rowKindPut, rowKindErase, 9, rowKindPut, rowKindErase, rowKindMaterialised, rowKindHandle}[r.IntN(7)]
			logs.kinds = append(logs.kinds, kind)
			logRows = append(logRows, Row{Op: op, Key: k, Value: value()})
		}
		logs.rows = (&Snapshot{Rows: logRows}).NewCursor()
		cursors := make([]*Cursor, len(mats))
		for i, m := range mats {
			cursors[i] = (&Snapshot{Rows: m}).NewCursor()
		}
		want, wantErased := restoreModel(mats, logs.kinds, logRows)
		check := func(how string, got []Row, info *ChangelogInfo) {
			t.Helper()
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("round %d, %s: mats %v, log %v %v:\nreplayed %v\nrestore   %v", round, how, mats, logs.kinds, logRows, got, want)
			}
			if len(info.erased) != len(wantErased) {
				t.Fatalf("round %d, %s: %d keys erased, want %v", round, how, len(info.erased), wantErased)
			}
			snap := &Snapshot{Changelog: info}
			for _, r := range append(slices.Concat(mats...), logRows...) {
				if got, want := snap.ErasedByLog(r.Op, r.Key), wantErased[changelogKey(r.Op, r.Key)]; got != want {
					t.Fatalf("round %d, %s: ErasedByLog(%d, %x) = %v, want %v", round, how, r.Op, r.Key, got, want)
				}
			}
		}
		info := &ChangelogInfo{}
		check("in memory", replay(cursors, &logs, info), info)
		if round%10 != 0 {
			continue // (several ms a round: three temporary files, two sorts' set-up)
		}
		info = &ChangelogInfo{}
		files, err := replayInFile(cursors, &logs, info, ReadOptions{tempDir: dir})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		check("in a file", snapRows(files[0].Snapshot()), info) // (ErasedByLog reads files[1])
		for _, f := range files {
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// The replayed state keeps room for its rows, not for every row replayed:
// 100,000 puts of 4 keys leave 5 rows.
func TestReplayRowsSizedToState(t *testing.T) {
	var mat bytes.Buffer
	if err := EncodeStream(&mat, nil, []Row{{Op: 1, Key: []byte{1, 's', '|', 'k'}, Value: []byte("v0")}}); err != nil {
		t.Fatal(err)
	}
	entries := []ChangelogEntry{{Kind: RowKindMaterialised, Row: Row{Value: mat.Bytes()}}}
	for i := range 100_000 {
		entries = append(entries, ChangelogEntry{Kind: RowKindPut, Row: Row{Op: 1, Key: []byte{1, 's', '|', byte('a' + i%4)}, Value: []byte{byte(i)}}})
	}
	var stream bytes.Buffer
	if err := EncodeChangelog(&stream, entries); err != nil {
		t.Fatal(err)
	}
	snap, err := DecodeSnapshot(stream.Bytes(), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Rows) != 5 || cap(snap.Rows) > 64 {
		t.Errorf("%d rows in a slice of capacity %d; want 5, in about as much", len(snap.Rows), cap(snap.Rows))
	}
}

// snapRows returns a snapshot's rows, in stream order.
func snapRows(s *Snapshot) []Row {
	rows := []Row{}
	s.EachRow(func(_ int, r Row) bool {
		rows = append(rows, r)
		return true
	})
	return rows
}
