package savepoint

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// treeFile is a file of an archived tree.
type treeFile struct {
	name string // slash-separated, relative
	data []byte
}

// treeArchive packs the files under dir into the archive FuzzOpenTree
// reads a checkpoint tree from: for each file, a byte of name length, the
// name, 4 bytes (little-endian) of data length, the data.
func treeArchive(tb testing.TB, dir string) []byte {
	tb.Helper()
	var ar []byte
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		name := filepath.ToSlash(rel)
		ar = append(append(ar, byte(len(name))), name...)
		ar = append(binary.LittleEndian.AppendUint32(ar, uint32(len(b))), b...)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return ar
}

// parseTreeArchive reads treeArchive's form; a truncated length takes what
// is left.
func parseTreeArchive(ar []byte) []treeFile {
	var files []treeFile
	for len(ar) > 0 {
		n := min(int(ar[0]), len(ar)-1)
		name := string(ar[1 : 1+n])
		ar = ar[1+n:]
		size := len(ar)
		if len(ar) >= 4 {
			size = min(int(binary.LittleEndian.Uint32(ar)), len(ar)-4)
			ar = ar[4:]
		}
		size = min(size, len(ar))
		files = append(files, treeFile{name, ar[:size]})
		ar = ar[size:]
	}
	return files
}

// treeSeeds returns small checkpoint trees as archives: file backend with
// a COMPLETED marker (and the same without a payload), and changelog+file
// with its materialisations.
func treeSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	var seeds [][]byte
	for _, backend := range []Backend{BackendFile, BackendChangelogFile} {
		dir := filepath.Join(tb.TempDir(), "ckpt")
		tw, err := CreateTree(dir, TreeOptions{Generation: 1, Checkpoint: 4, Backend: backend, StateBase: "/state"})
		if err != nil {
			tb.Fatal(err)
		}
		for sub := range 2 {
			rows := []Row{
				{Op: 7, Key: append([]byte{byte(sub * 64)}, "\x05counta"...), Value: []byte{1, 0, 0, 0, 0, 0, 0, 0}},
				{Op: 7, Key: append([]byte{byte(sub*64 + 1)}, "\x05countb"...), Value: []byte("v")},
				{Op: 9, Key: []byte{0x80, 1}, Value: []byte{2, 0, 0, 0, 0, 0, 0, 0}},
			}
			if _, err := tw.WriteSubtask(sub, CanonicalMetadata(nil, VersionMap{}), rows, CompressNone); err != nil {
				tb.Fatal(err)
			}
		}
		if err := tw.Commit("77", nil); err != nil {
			tb.Fatal(err)
		}
		seeds = append(seeds, treeArchive(tb, dir))
		if backend == BackendFile {
			// And one whose subtask 1 lacks its payload, leaving its
			// sidecar: a finding with KeepUndecodable, an error without.
			if err := os.Remove(filepath.Join(dir, "v1", "1", "checkpoint-4.snap")); err != nil {
				tb.Fatal(err)
			}
			seeds = append(seeds, treeArchive(tb, dir))
		}
	}
	return seeds
}

// FuzzOpenTree opens arbitrary checkpoint trees (an archive of the files
// of one, see treeArchive, written to a directory) with the options the commands use,
// and summarises and validates what opens: the tree's markers, sidecars,
// handles and directory names are untrusted input too. It must return an
// error or a savepoint, never panic, hang or run out of memory.
func FuzzOpenTree(f *testing.F) {
	for _, s := range treeSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		files := parseTreeArchive(data)
		if len(files) == 0 || len(files) > 24 {
			return
		}
		dir := filepath.Join(t.TempDir(), "ckpt")
		for _, file := range files {
			name := filepath.FromSlash(file.name)
			if !filepath.IsLocal(name) {
				return
			}
			p := filepath.Join(dir, name)
			if os.MkdirAll(filepath.Dir(p), 0o755) != nil || os.WriteFile(p, file.data, 0o644) != nil {
				return // a file where a directory is wanted, or the reverse
			}
		}
		var summaries [2][]byte // of the first two options, nil when it did not open
		for i, opts := range []OpenOptions{
			{},
			{RequireValid: true},
			{Columnar: true, AllowMissingSidecar: true},
		} {
			sp, err := Open(dir, opts)
			if err != nil {
				continue
			}
			sum, err := json.Marshal(Summarize(sp))
			if err != nil {
				t.Fatalf("summary to JSON: %v", err)
			}
			if _, err := json.Marshal(Validate(sp, ValidateOptions{})); err != nil {
				t.Fatalf("validation report to JSON: %v", err)
			}
			sp.Close()
			if i < len(summaries) {
				summaries[i] = sum
			}
		}
		// RequireValid only refuses: what it opens opens without it, the same.
		if summaries[1] != nil && !bytes.Equal(summaries[0], summaries[1]) {
			t.Fatalf("opened with RequireValid: %s\nwithout: %s", summaries[1], summaries[0])
		}
		// KeepUndecodable only records files that do not decode: a tree
		// that opens without it has none, and Validate and Summarize read
		// what it opens.
		sp, err := Open(dir, OpenOptions{Columnar: true, KeepUndecodable: true})
		if err != nil {
			return
		}
		defer sp.Close()
		rep := Validate(sp, ValidateOptions{Parallelism: 3})
		if _, err := json.Marshal(rep); err != nil {
			t.Fatalf("validation report to JSON: %v", err)
		}
		sum := Summarize(sp)
		if _, err := json.Marshal(sum); err != nil {
			t.Fatalf("summary to JSON: %v", err)
		}
		// And the text views of both (tables, version maps, histogram).
		if err := sum.WriteText(io.Discard); err != nil {
			t.Fatalf("summary as text: %v", err)
		}
		if err := rep.WriteText(io.Discard); err != nil {
			t.Fatalf("validation report as text: %v", err)
		}
		if summaries[0] != nil && sp.UndecodableError() != nil {
			t.Fatalf("a tree that opens records an undecodable file: %v", sp.UndecodableError())
		}
	})
}
