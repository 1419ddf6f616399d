package savepoint

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pierrec/lz4/v4"
)

// TestClinkFixture reads clink's own snapshot-v1.snap to exactly the rows of
// format section 8 and writes it back with the same schema, metadata and rows.
func TestClinkFixture(t *testing.T) {
	const path = "../testdata/clink/snapshot-v1.snap"
	sp, err := Open(path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f := sp.Files[0]
	if f.Size != 704 || f.CRC32C != 3978191169 {
		t.Fatalf("size %d crc %d, want 704 and 3978191169", f.Size, f.CRC32C)
	}
	s := f.Snapshot
	if s.Variant != Canonical || len(s.BatchRows) != 1 || s.BatchRows[0] != 3 || s.Compression != "" {
		t.Fatalf("variant %v batches %v compression %q", s.Variant, s.BatchRows, s.Compression)
	}
	if want := (Metadata{{MetaFormatVersion, "1"}}); fmt.Sprint(s.Metadata) != fmt.Sprint(want) {
		t.Fatalf("metadata %v, want %v", s.Metadata, want)
	}
	if !rowsEqual(s.Rows, fixtureRows) {
		t.Fatalf("rows %v", s.Rows)
	}
	wantKG := []int{36, 7, 98}
	for i, r := range s.Rows {
		k := ParseKey(r.Key)
		if k.Kind != KindKeyed || k.KeyGroup != wantKG[i] || string(k.Slot) != "counts" || KeyGroupOf(k.UserKey) != wantKG[i] {
			t.Errorf("row %d: %+v", i, k)
		}
	}
	if f.Verdict != VerdictIncomplete || f.Sidecar != nil {
		t.Errorf("verdict %v, want incomplete (the fixture has no sidecar)", f.Verdict)
	}

	// Written back: same schema, metadata and rows (canonical order), plus
	// the sidecar of section 8 when the bytes are clink's own.
	out := filepath.Join(t.TempDir(), "checkpoint-7.snap")
	info, err := WriteSnapshotFile(out, CanonicalMetadata(s.Metadata, s.Versions), s.Rows, SnapshotOptions{Sidecar: true, CheckpointID: 7})
	if err != nil {
		t.Fatal(err)
	}
	back, err := Open(out, OpenOptions{RequireValid: true})
	if err != nil {
		t.Fatal(err)
	}
	b := back.Files[0]
	if b.Verdict != VerdictValid {
		t.Fatalf("own output verdict %v: %s", b.Verdict, b.VerdictDetail)
	}
	if fmt.Sprint(b.Snapshot.Metadata) != fmt.Sprint(s.Metadata) || !rowsEqual(b.Snapshot.Rows, Logical(s.Rows)) || len(b.Snapshot.BatchRows) != 1 {
		t.Fatalf("round trip differs: %v %v", b.Snapshot.Metadata, b.Snapshot.Rows)
	}
	if b.Size != info.Size || b.CRC32C != info.CRC32C {
		t.Fatalf("reported %+v, on disk %d/%d", info, b.Size, b.CRC32C)
	}
	// The fixture's own sidecar as checkpoint 7 (section 8).
	fx, _ := os.ReadFile(path)
	want := "clink_checkpoint_meta=1\ncheckpoint_id=7\npayload_bytes=704\npayload_crc32c=3978191169\n"
	if got := string(NewSidecar(7, fx).Marshal()); got != want {
		t.Fatalf("sidecar %q, want %q", got, want)
	}
	// With the rows in clink's order, the record-batch body is byte-identical
	// to clink's (section 1.5): the 128 bytes after the header, and the EOS.
	asIs := filepath.Join(t.TempDir(), "as-is.snap")
	if _, err := WriteSnapshotFile(asIs, s.Metadata, s.Rows, SnapshotOptions{AsIs: true}); err != nil {
		t.Fatal(err)
	}
	ours, _ := os.ReadFile(asIs)
	if !bytes.Equal(ours[len(ours)-8-128:], fx[len(fx)-8-128:]) {
		t.Errorf("body differs from clink's:\n%x\n%x", ours[len(ours)-136:], fx[len(fx)-136:])
	}
}

// truth is the part of an independent fixture's truth file the tests use.
type truth struct {
	Generation int    `json:"generation"`
	Checkpoint string `json:"checkpoint"`
	Job        string `json:"job"`
	Layout     struct {
		Groups []struct {
			First       int `json:"first_subtask"`
			Parallelism int `json:"parallelism"`
		} `json:"groups"`
	} `json:"layout"`
	Files []struct {
		Subtask int    `json:"subtask"`
		Path    string `json:"path"`
		Variant string `json:"variant"`
		Batches []int  `json:"batches"`
	} `json:"files"`
	Entries []struct {
		Subtask int    `json:"subtask"`
		Op      string `json:"op_id"`
		Kind    string `json:"kind"`
		KeyHex  string `json:"key_hex"`
		ValHex  string `json:"value_hex"`
		KG      *int   `json:"key_group"`
	} `json:"entries"`
}

func loadTruth(t *testing.T, name string) truth {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../testdata/independent", name+".truth.json"))
	if err != nil {
		t.Skipf("independent fixtures not present: %v", err)
	}
	var tr truth
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestIndependentTrees reads every tree written by the independent (non-Go)
// Arrow implementation and checks every entry of its truth file: same rows per
// subtask file, same kinds and key groups, same layout.
func TestIndependentTrees(t *testing.T) {
	for _, name := range []string{"mixed-p4", "changelog-p4", "two-groups", "gen3-stale", "changelog-file"} {
		t.Run(name, func(t *testing.T) {
			tr := loadTruth(t, name)
			sp, err := Open(filepath.Join("../testdata/independent", name), OpenOptions{RequireValid: true})
			if err != nil {
				t.Fatal(err)
			}
			if sp.Generation != tr.Generation || strconv.FormatUint(sp.Checkpoint, 10) != tr.Checkpoint || sp.Job != tr.Job {
				t.Fatalf("gen %d ckpt %d job %q; truth %d %s %s", sp.Generation, sp.Checkpoint, sp.Job, tr.Generation, tr.Checkpoint, tr.Job)
			}
			var wantGroups []Group
			for _, g := range tr.Layout.Groups {
				wantGroups = append(wantGroups, Group{First: g.First, Count: g.Parallelism})
			}
			if FormatGroups(sp.Groups) != FormatGroups(wantGroups) {
				t.Errorf("groups %s, truth %s", FormatGroups(sp.Groups), FormatGroups(wantGroups))
			}
			want := map[int]map[string]string{}
			for _, e := range tr.Entries {
				if want[e.Subtask] == nil {
					want[e.Subtask] = map[string]string{}
				}
				want[e.Subtask][e.Op+"/"+e.KeyHex] = e.ValHex
				k := ParseKey(hexBytes(e.KeyHex))
				if k.Kind.String() != e.Kind {
					t.Errorf("key %s: kind %v, truth %s", e.KeyHex, k.Kind, e.Kind)
				}
			}
			for _, f := range sp.Files {
				got := map[string]string{}
				for _, r := range Logical(f.Snapshot.Rows) {
					got[strconv.FormatUint(r.Op, 10)+"/"+hex.EncodeToString(r.Key)] = hex.EncodeToString(r.Value)
				}
				w := want[f.Subtask]
				if len(got) != len(w) {
					t.Errorf("subtask %d: %d rows, truth %d", f.Subtask, len(got), len(w))
				}
				for k, v := range w {
					if got[k] != v {
						t.Errorf("subtask %d: entry %s = %q, truth %q", f.Subtask, k, got[k], v)
					}
				}
			}
			for _, tf := range tr.Files {
				f := sp.File(tf.Subtask)
				if f == nil || f.Rel != filepath.FromSlash(tf.Path) {
					t.Errorf("file of subtask %d: %v, truth %s", tf.Subtask, f, tf.Path)
					continue
				}
				if tf.Variant == "canonical" && fmt.Sprint(f.Snapshot.BatchRows) != fmt.Sprint(tf.Batches) {
					t.Errorf("%s batches %v, truth %v", tf.Path, f.Snapshot.BatchRows, tf.Batches)
				}
			}
		})
	}
}

// TestRoundTripTrees writes generated trees (several operators and slots, TTL
// values, operator rows, several batches, zero-row files, duplicates, a
// changelog file) as clink shapes them, reads them, writes them canonically,
// reads them again: identical logical state, canonical layout.
func TestRoundTripTrees(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	rowsOf := map[int][]Row{}
	for sub := 0; sub < 4; sub++ {
		var rows []Row
		for i := 0; i < 50; i++ {
			uk := []byte(fmt.Sprintf("user-%d", i*4+sub))
			for _, slot := range []string{"counts", "seen", ""} {
				v := []byte(fmt.Sprintf("v%d", i))
				if slot == "seen" {
					v = JoinTTL(int64(1795910400000+i), v)
				}
				rows = append(rows, Row{Op: uint64(7 + sub%2), Key: EncodeKeyedKey([]byte(slot), uk), Value: v})
			}
		}
		rows = append(rows, Row{Op: 99, Key: []byte("\xff__kafka_off__:0"), Value: []byte{byte(sub), 0, 0, 0, 0, 0, 0, 0}})
		rows = append(rows, Row{Op: 99, Key: []byte("\xff__clink_timers"), Value: []byte("blob")})
		// a duplicate later in stream order: restore keeps the last keyed copy
		rows = append(rows, Row{Op: 7, Key: rows[0].Key, Value: []byte("newer")})
		rowsOf[sub] = rows
	}
	rowsOf[3] = nil // a zero-row file
	var vm VersionMap
	vm.Set(VersionEntry{Op: 7, StateType: "Counter", Version: 2, Slot: "counts"})
	md := append(CanonicalMetadata(nil, vm), MetaEntry{"clink.x_future", "kept"})
	tw, err := CreateTree(in, TreeOptions{Generation: 2, Checkpoint: 9})
	if err != nil {
		t.Fatal(err)
	}
	for sub := 0; sub < 4; sub++ {
		d := filepath.Join(tw.Stage(), "v2", strconv.Itoa(sub))
		os.MkdirAll(d, 0o755)
		n := len(rowsOf[sub])
		batches := []int{n / 3, 0, n - n/3}
		if sub == 2 {
			batches = []int{} // merge of nothing: no batch at all
			rowsOf[2] = nil
		}
		if _, err := WriteSnapshotFile(filepath.Join(d, "checkpoint-9.snap"), md, rowsOf[sub], SnapshotOptions{AsIs: true, Batches: batches, Sidecar: true, CheckpointID: 9}); err != nil {
			t.Fatal(err)
		}
	}
	// subtask 1 as a changelog blob with an inline materialisation and log entries.
	if err := tw.Commit("5", nil); err != nil {
		t.Fatal(err)
	}
	sp, err := Open(in, OpenOptions{RequireValid: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(sp.Files) != 4 || sp.Files[0].Snapshot.BatchRows[1] != 0 || len(sp.Files[2].Snapshot.BatchRows) != 0 {
		t.Fatalf("unexpected layout: %d files, batches %v", len(sp.Files), sp.Files[0].Snapshot.BatchRows)
	}
	out := filepath.Join(dir, "out")
	tw2, err := CreateTree(out, TreeOptions{Generation: sp.Generation, Checkpoint: sp.Checkpoint})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range sp.Files {
		if _, err := tw2.WriteSubtask(f.Subtask, CanonicalMetadata(f.Snapshot.Metadata, f.Snapshot.Versions), f.Snapshot.Rows, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw2.Commit(sp.Job, nil); err != nil {
		t.Fatal(err)
	}
	again, err := Open(out, OpenOptions{RequireValid: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range again.Files {
		orig := sp.Files[i]
		if !rowsEqual(f.Snapshot.Rows, Logical(orig.Snapshot.Rows)) {
			t.Errorf("subtask %d: logical state changed", f.Subtask)
		}
		if !Sorted(f.Snapshot.Rows) || len(f.Snapshot.BatchRows) != 1 {
			t.Errorf("subtask %d: not canonical (batches %v)", f.Subtask, f.Snapshot.BatchRows)
		}
		if fmt.Sprint(f.Snapshot.Metadata) != fmt.Sprint(CanonicalMetadata(orig.Snapshot.Metadata, orig.Snapshot.Versions)) {
			t.Errorf("subtask %d: metadata %v", f.Subtask, f.Snapshot.Metadata)
		}
	}
	if got := Logical(sp.Files[0].Snapshot.Rows); func() string {
		for _, r := range got {
			if r.Op == 7 && bytes.Equal(r.Key, rowsOf[0][0].Key) {
				return string(r.Value)
			}
		}
		return ""
	}() != "newer" {
		t.Error("the later duplicate keyed row did not win")
	}
	if again.Completed == nil || fmt.Sprint(again.Completed.Subtasks) != "[0 1 2 3]" || again.Generation != 2 || again.Checkpoint != 9 {
		t.Errorf("marker %+v gen %d ckpt %d", again.Completed, again.Generation, again.Checkpoint)
	}
}

// TestOperatorDuplicates pins clink's restore rule for operator-state rows:
// both 8 bytes: the greater signed int64 wins; otherwise the later row.
func TestOperatorDuplicates(t *testing.T) {
	le := func(v int64) []byte {
		return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24), byte(v >> 32), byte(v >> 40), byte(v >> 48), byte(v >> 56)}
	}
	k := []byte("\xff__file_source_offset__")
	cases := []struct {
		name string
		a, b []byte
		want []byte
	}{
		{"greater wins", le(700), le(100), le(700)},
		{"greater wins later", le(100), le(700), le(700)},
		{"tie keeps existing", le(5), le(5), le(5)},
		{"signed compare", le(-1), le(1), le(1)},
		{"not 8 bytes: last wins", []byte("aaaaaaaaa"), []byte("b"), []byte("b")},
		{"one 8 bytes: last wins", le(900), []byte("short"), []byte("short")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Logical([]Row{{1, k, c.a}, {1, k, c.b}})
			if len(got) != 1 || !bytes.Equal(got[0].Value, c.want) {
				t.Fatalf("got %v", got)
			}
		})
	}
}

// TestCompressedFiles reads a savepoint compressed as a whole with every
// supported format, recognised by magic bytes.
func TestCompressedFiles(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []string{CompressGzip, CompressZstd, CompressLZ4, CompressBzip2, CompressXZ} {
		t.Run(c, func(t *testing.T) {
			p := filepath.Join(dir, "checkpoint-1.snap."+c)
			if _, err := WriteSnapshotFile(p, CanonicalMetadata(nil, VersionMap{}), fixtureRows, SnapshotOptions{Compression: c}); err != nil {
				t.Fatal(err)
			}
			sp, err := Open(p, OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if f := sp.Files[0]; f.Compression != c || !rowsEqual(f.Snapshot.Rows, Logical(fixtureRows)) {
				t.Fatalf("compression %q rows %v", f.Compression, f.Snapshot.Rows)
			}
		})
	}
}

// TestCompressedFramings reads the framings archivers write besides the
// plain zstd and lz4 frames: the legacy lz4 frame (lz4 -l), and skippable
// frames (which zstd and lz4 share) ahead of a stream, whose first real
// frame names the compression. A skippable frame cut short, or one with
// nothing recognisable after it, names none: the file is then read as an
// Arrow stream and refused as one.
func TestCompressedFramings(t *testing.T) {
	var plain bytes.Buffer
	if err := EncodeStreamAsIs(&plain, CanonicalMetadata(nil, VersionMap{}), fixtureRows, nil); err != nil {
		t.Fatal(err)
	}
	want, err := DecodeSnapshot(plain.Bytes(), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var legacy bytes.Buffer
	lw := lz4.NewWriter(&legacy)
	if err := lw.Apply(lz4.LegacyOption(true)); err != nil {
		t.Fatal(err)
	}
	if _, err := lw.Write(plain.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}
	skip := func(magic byte, payload string) []byte {
		b := []byte{magic, 0x2a, 0x4d, 0x18, 0, 0, 0, 0}
		binary.LittleEndian.PutUint32(b[4:], uint32(len(payload)))
		return append(b, payload...)
	}
	join := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	zst, lz := compressed(t, CompressZstd, plain.Bytes()), compressed(t, CompressLZ4, plain.Bytes())
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"legacy lz4", legacy.Bytes(), CompressLZ4},
		{"skippable then zstd", join(skip(0x50, "archiver metadata"), zst), CompressZstd},
		{"two skippable then lz4", join(skip(0x5f, ""), skip(0x5a, "x"), lz), CompressLZ4},
		{"skippable then legacy lz4", join(skip(0x53, "meta"), legacy.Bytes()), CompressLZ4},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := DetectCompression(c.data); got != c.want {
				t.Fatalf("DetectCompression = %q, want %q", got, c.want)
			}
			p := filepath.Join(t.TempDir(), "checkpoint-1.snap")
			if err := os.WriteFile(p, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			sp, err := Open(p, OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if f := sp.Files[0]; f.Compression != c.want || !rowsEqual(f.Snapshot.Rows, want.Rows) {
				t.Fatalf("compression %q rows %v, want %v", f.Compression, f.Snapshot.Rows, want.Rows)
			}
		})
	}
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"skippable cut short", skip(0x50, "meta")[:10]},
		{"skippable then Arrow", join(skip(0x50, "meta"), plain.Bytes())},
		{"skippable size past the end", join([]byte{0x50, 0x2a, 0x4d, 0x18, 0xff, 0xff, 0xff, 0xff}, zst)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := DetectCompression(c.data); got != CompressNone {
				t.Fatalf("DetectCompression = %q, want none", got)
			}
			p := filepath.Join(t.TempDir(), "checkpoint-1.snap")
			if err := os.WriteFile(p, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := Open(p, OpenOptions{}); err == nil || !strings.Contains(err.Error(), p) {
				t.Fatalf("Open: %v, want an error naming %s", err, p)
			}
		})
	}
}

// A skippable frame ahead of a gzip, bzip2 or xz stream is read by no
// reader of those formats: the error says so, rather than the reader's
// complaint about the file's first bytes.
func TestSkippableFrameAheadOfOtherCompressions(t *testing.T) {
	var plain bytes.Buffer
	if err := EncodeStreamAsIs(&plain, CanonicalMetadata(nil, VersionMap{}), fixtureRows, nil); err != nil {
		t.Fatal(err)
	}
	frame := []byte{0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 'm', 'e', 't', 'a'}
	for _, c := range []string{CompressGzip, CompressBzip2, CompressXZ} {
		data := append(append([]byte(nil), frame...), compressed(t, c, plain.Bytes())...)
		p := filepath.Join(t.TempDir(), "checkpoint-1.snap")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(p, OpenOptions{}); err == nil || !strings.Contains(err.Error(), "12 bytes of zstd/lz4 skippable frames") || !strings.Contains(err.Error(), p) {
			t.Errorf("%s after a skippable frame: %v, want an error naming the file and the frames", c, err)
		}
	}
}

// TestEmptyInputs: a 0-byte file is empty state; a stream with no batch too.
func TestEmptyInputs(t *testing.T) {
	s, err := DecodeSnapshot(nil, ReadOptions{})
	if err != nil || s.Variant != Empty || len(s.Rows) != 0 {
		t.Fatalf("0 bytes: %v %v", s, err)
	}
	var buf bytes.Buffer
	if err := EncodeStreamAsIs(&buf, nil, nil, []int{}); err != nil {
		t.Fatal(err)
	}
	s, err = DecodeSnapshot(buf.Bytes(), ReadOptions{})
	if err != nil || len(s.BatchRows) != 0 || len(s.Metadata) != 0 {
		t.Fatalf("no batch: %+v %v", s, err)
	}
	// sptool never writes a 0-byte file: empty state is one zero-row batch.
	buf.Reset()
	if err := EncodeStream(&buf, CanonicalMetadata(nil, VersionMap{}), nil); err != nil {
		t.Fatal(err)
	}
	s, err = DecodeSnapshot(buf.Bytes(), ReadOptions{})
	if err != nil || fmt.Sprint(s.BatchRows) != "[0]" {
		t.Fatalf("empty state: %+v %v", s, err)
	}
}

// TestBatchSplit: a column passing the binary limit starts a new batch.
func TestBatchSplit(t *testing.T) {
	defer func(v int64) { maxColumnBytes = v }(maxColumnBytes)
	maxColumnBytes = 40
	var buf bytes.Buffer
	if err := EncodeStream(&buf, nil, fixtureRows); err != nil {
		t.Fatal(err)
	}
	s, err := DecodeSnapshot(buf.Bytes(), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(s.BatchRows) != "[2 1]" || !rowsEqual(s.Rows, Logical(fixtureRows)) {
		t.Fatalf("batches %v", s.BatchRows)
	}
	maxColumnBytes = 10
	if err := EncodeStream(&buf, nil, fixtureRows); err == nil {
		t.Fatal("a row larger than the limit was written")
	}
}

// TestCheckpointInOtherGeneration: --checkpoint selects within the
// generation read; a checkpoint held by another generation of the tree is
// refused with that generation's directory named, and opens from it.
func TestCheckpointInOtherGeneration(t *testing.T) {
	root := filepath.Join("..", "testdata", "independent", "gen3-stale")
	_, err := Open(root, OpenOptions{Checkpoint: 16, CheckpointSet: true})
	if err == nil || !strings.Contains(err.Error(), "checkpoint 16 is not in generation v3 (present: 17); it is in "+filepath.Join(root, "v2")+": give that directory") {
		t.Fatalf("Open(%s, checkpoint 16): %v, want the refusal naming v2", root, err)
	}
	_, err = Open(root, OpenOptions{Checkpoint: 99, CheckpointSet: true})
	if err == nil || strings.Contains(err.Error(), "it is in") {
		t.Errorf("Open(%s, checkpoint 99): %v, want a refusal naming no generation", root, err)
	}
	sp, err := Open(filepath.Join(root, "v2"), OpenOptions{Checkpoint: 16, CheckpointSet: true})
	if err != nil {
		t.Fatal(err)
	}
	if sp.Generation != 2 || sp.Checkpoint != 16 {
		t.Errorf("v2: generation %d checkpoint %d, want 2 and 16", sp.Generation, sp.Checkpoint)
	}
}

// A file that does not start as an Arrow IPC stream (a text file given by
// mistake) is said to be no savepoint, beside what its first bytes would
// mean; a stream that goes wrong later, or one inside the file, is not.
func TestNotAStreamSaid(t *testing.T) {
	const hint = "is it a savepoint?"
	for _, data := range [][]byte{[]byte("# README\n\nsome text"), []byte("hel"), []byte("{\"rows\": 1}\n")} {
		_, err := DecodeSnapshot(data, ReadOptions{})
		if err == nil || (len(data) >= 4) != strings.Contains(err.Error(), hint) {
			t.Errorf("%q: %v", data, err)
		}
	}
	var b bytes.Buffer
	if err := WriteStream(&b, nil, RowSlice{{Op: 1, Key: []byte{1, 's', '|', 'k'}, Value: []byte("v")}}); err != nil {
		t.Fatal(err)
	}
	cut := b.Bytes()[:b.Len()-20]
	if _, err := DecodeSnapshot(cut, ReadOptions{}); err == nil || strings.Contains(err.Error(), hint) {
		t.Errorf("a stream cut short: %v", err)
	}
	// A stream inside the file that is no stream: the file is a savepoint.
	var cl bytes.Buffer
	if err := EncodeChangelog(&cl, []ChangelogEntry{{Kind: RowKindMaterialised, Row: Row{Value: []byte("# damaged materialisation bytes")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeSnapshot(cl.Bytes(), ReadOptions{}); err == nil || strings.Contains(err.Error(), hint) {
		t.Errorf("a changelog whose inline materialisation is no stream: %v", err)
	}
}
