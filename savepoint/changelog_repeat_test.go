package savepoint

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A changelog payload whose materialisation rows name one external handle
// many times reads it at most twice (for the metadata, at its first row,
// and at its last, where it is restored), and holds what restoring it at
// every row would: the later copy of a keyed row, the greater 8-byte
// operator value. Every materialisation row is still listed.
func TestChangelogRepeatedHandle(t *testing.T) {
	key := func(k string) []byte { return EncodeKeyedKey([]byte("s"), []byte(k)) }
	op := []byte("\xff_offsets")
	u64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	mats := map[string][]byte{
		"v1/0/materializations/mat-a.bin": zstdStreamOf(t, []Row{
			{Op: 7, Key: key("k1"), Value: []byte("a1")},
			{Op: 7, Key: key("k2"), Value: []byte("a2")},
			{Op: 9, Key: op, Value: u64(5)},
		}),
		"v1/0/materializations/mat-b.bin": zstdStreamOf(t, []Row{
			{Op: 7, Key: key("k1"), Value: []byte("b1")},
			{Op: 7, Key: key("k3"), Value: []byte("b3")},
			{Op: 9, Key: op, Value: u64(9)},
		}),
	}
	const a, b = "v1/0/materializations/mat-a.bin", "v1/0/materializations/mat-b.bin"
	for _, c := range []struct {
		name    string
		handles []string
		want    map[string]string // user key -> value; "op" the operator value
		reads   map[string]int
	}{
		{"a b a...", append([]string{a, b}, repeat(a, 50)...),
			map[string]string{"k1": "a1", "k2": "a2", "k3": "b3", "op": "9"}, map[string]int{a: 2, b: 1}},
		{"a... b", append(repeat(a, 50), b),
			map[string]string{"k1": "b1", "k2": "a2", "k3": "b3", "op": "9"}, map[string]int{a: 2, b: 1}},
		{"b a b", []string{b, a, b},
			map[string]string{"k1": "b1", "k2": "a2", "k3": "b3", "op": "9"}, map[string]int{a: 1, b: 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			kinds := make([]uint8, 0, len(c.handles)+1)
			rows := make([]Row, 0, len(c.handles)+1)
			for _, h := range c.handles {
				kinds, rows = append(kinds, rowKindHandle), append(rows, Row{Value: []byte(h)})
			}
			kinds, rows = append(kinds, rowKindPut), append(rows, Row{Op: 7, Key: key("k4"), Value: []byte("p")})
			reads := map[string]int{}
			s, err := DecodeSnapshot(vtChangelogStream(t, kinds, rows), ReadOptions{Resolve: func(h string) ([]byte, error) {
				reads[h]++
				return mats[h], nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, r := range s.Rows {
				if bytes.Equal(r.Key, op) {
					got["op"] = fmt.Sprint(binary.LittleEndian.Uint64(r.Value))
				} else {
					got[string(r.Key[len(key("")):])] = string(r.Value)
				}
			}
			c.want["k4"] = "p"
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("state %v, want %v", got, c.want)
			}
			if fmt.Sprint(reads) != fmt.Sprint(c.reads) {
				t.Errorf("handles read %v, want %v", reads, c.reads)
			}
			if strings.Join(s.Changelog.Handles, ",") != strings.Join(c.handles, ",") || len(s.Changelog.InBlob) != len(c.handles) {
				t.Errorf("materialisation rows %q (in blob %v), want %q", s.Changelog.Handles, s.Changelog.InBlob, c.handles)
			}
			if len(s.Metadata) == 0 {
				t.Error("no metadata")
			}
		})
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// Handles spelled differently that name one file (the job's base differs
// before v<gen>/, a symbolic link) are one file: read at most twice, as a
// repeated handle is, and the state is what restoring it at each row gives.
// A tree of a few kilobytes repeating one large materialisation under
// thousands of spellings took as many decodes.
func TestChangelogHandleSpellings(t *testing.T) {
	root := t.TempDir()
	key := func(k string) []byte { return EncodeKeyedKey([]byte("s"), []byte(k)) }
	mat := func(name string, rows []Row) {
		p := filepath.Join(root, "v1", "0", "materializations", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, zstdStreamOf(t, rows), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mat("mat-a.bin", []Row{{Op: 7, Key: key("k1"), Value: []byte("a1")}, {Op: 7, Key: key("k2"), Value: []byte("a2")}})
	mat("mat-b.bin", []Row{{Op: 7, Key: key("k1"), Value: []byte("b1")}})
	if err := os.Symlink("mat-a.bin", filepath.Join(root, "v1", "0", "materializations", "link-a.bin")); err != nil {
		t.Fatal(err)
	}
	var handles []string
	for i := range 200 {
		handles = append(handles, fmt.Sprintf("/base%d/v1/0/materializations/mat-a.bin", i))
	}
	handles = append(handles, "v1/0/materializations/mat-b.bin", "/elsewhere/v1/0/materializations/link-a.bin")
	kinds := make([]uint8, len(handles))
	rows := make([]Row, len(handles))
	for i, h := range handles {
		kinds[i], rows[i] = rowKindHandle, Row{Value: []byte(h)}
	}
	reads := 0
	s, err := DecodeSnapshot(vtChangelogStream(t, kinds, rows), ReadOptions{
		Resolve: func(h string) ([]byte, error) {
			reads++
			data, _, _, _, err := resolveHandleRel(root, h, nil)
			return data, err
		},
		identify: func(h string) string {
			id, _ := handleIdentity(root, h)
			return id
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if reads > 3 { // a's first row (metadata), b, a's last row
		t.Errorf("%d materialisations read for 2 files", reads)
	}
	got := map[string]string{}
	for _, r := range s.Rows {
		got[string(r.Key[len(key("")):])] = string(r.Value)
	}
	if want := map[string]string{"k1": "a1", "k2": "a2"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("state %v, want %v (a restored last)", got, want)
	}
	if len(s.Changelog.Handles) != len(handles) {
		t.Errorf("%d materialisation rows listed, want %d", len(s.Changelog.Handles), len(handles))
	}
	// A handle that names no file is its own identity.
	a, _ := handleIdentity(root, "v1/0/materializations/none.bin")
	if b, _ := handleIdentity(root, "x/v1/0/materializations/none.bin"); a == b {
		t.Errorf("missing handles share the identity %q", a)
	}
}

// A handle row not read, because another names its file, still lists its
// materialisation among the file's (a copy of the subtask copies those):
// a link to the file read is copied too, so the copy's changelog, which
// still names it, opens.
func TestSkippedHandleListed(t *testing.T) {
	root, payload, mat := changelogTree(t)
	if err := os.Symlink("mat-7.bin", filepath.Join(filepath.Dir(mat), "link-7.bin")); err != nil {
		t.Fatal(err)
	}
	const a, link = "v1/0/materializations/mat-7.bin", "v1/0/materializations/link-7.bin"
	handles := []string{a, link, "/base/" + a}
	kinds := make([]uint8, len(handles))
	rows := make([]Row, len(handles))
	for i, h := range handles {
		kinds[i], rows[i] = rowKindHandle, Row{Value: []byte(h)}
	}
	if err := os.WriteFile(payload, vtChangelogStream(t, kinds, rows), 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := Open(root, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	f := sp.Files[0]
	got := slices.Sorted(slices.Values(f.Materializations))
	if want := []string{filepath.FromSlash(link), filepath.FromSlash(a)}; !slices.Equal(slices.Compact(got), want) {
		t.Errorf("materialisations listed %q, want %q", f.Materializations, want)
	}
	st, err := os.Stat(mat)
	if err != nil {
		t.Fatal(err)
	}
	for i, info := range f.MaterializationInfo {
		if info.Size != st.Size() {
			t.Errorf("materialisation %s listed with %d bytes, want %d", f.Materializations[i], info.Size, st.Size())
		}
	}
}

// A changelog file given alone is read in the tree its subtask directory
// is part of; outside a subtask directory (v<generation>/<subtask>/) it
// has no tree, and a handle relative to the directory two up (/ for a
// file in /tmp/x) is not read: it is an error saying so.
func TestChangelogFileOutsideTree(t *testing.T) {
	key := EncodeKeyedKey([]byte("s"), []byte("k1"))
	mat := zstdStreamOf(t, []Row{{Op: 7, Key: key, Value: []byte("a1")}})
	changelog := func(handle string) []byte {
		return vtChangelogStream(t, []uint8{rowKindHandle}, []Row{{Value: []byte(handle)}})
	}
	base := t.TempDir()
	// In its place in a tree: the handle, relative to the tree, is read.
	inTree := filepath.Join(base, "tree", "v1", "0", "changelog-5.snap")
	for p, b := range map[string][]byte{inTree: changelog("v1/0/materializations/mat-5.bin"), filepath.Join(base, "tree", "v1", "0", "materializations", "mat-5.bin"): mat} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sp, err := Open(inTree, OpenOptions{})
	if err != nil {
		t.Fatalf("a changelog in its tree: %v", err)
	}
	if n := sp.Files[0].Snapshot.NumRows(); n != 1 {
		t.Errorf("a changelog in its tree: %d rows, want its materialisation's 1", n)
	}
	sp.Close()
	// Two directories below the tree's root, but not in a subtask
	// directory: the same handle names a file there, which is not read.
	outside := filepath.Join(base, "tree", "x", "y", "changelog-5.snap")
	if err := os.MkdirAll(filepath.Dir(outside), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(outside, changelog("v1/0/materializations/mat-5.bin"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(outside, OpenOptions{})
	if err == nil || !strings.Contains(err.Error(), "not in a subtask directory (v<generation>/<subtask>/) of a checkpoint tree") {
		t.Errorf("a changelog outside a tree: %v, want the handle refused for want of a tree", err)
	}
}

// validate of a changelog given alone whose handle sptool does not
// resolve names no subtask (a file has none) and gives the advice that
// fits: outside a tree, to give the tree; in a subtask directory, with a
// handle leading out of it, to copy the materialisation into it.
func TestValidateLoneChangelogHandleUnread(t *testing.T) {
	key := EncodeKeyedKey([]byte("s"), []byte("k1"))
	mat := zstdStreamOf(t, []Row{{Op: 7, Key: key, Value: []byte("a1")}})
	changelog := func(handle string) []byte {
		return vtChangelogStream(t, []uint8{rowKindHandle}, []Row{{Value: []byte(handle)}})
	}
	base := t.TempDir()
	outside := filepath.Join(base, "x", "changelog-5.snap")
	crossed := filepath.Join(base, "tree", "v1", "0", "changelog-5.snap")
	for p, b := range map[string][]byte{
		outside: changelog("v1/0/materializations/mat-5.bin"),
		crossed: changelog("/srv/state/v1/0/../1/materializations/mat-5.bin"),
		filepath.Join(base, "tree", "v1", "1", "materializations", "mat-5.bin"): mat,
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		path, want, not string
	}{
		{outside, "give the tree, or the changelog in its place in it", "copy the materialisation"},
		{crossed, "copy the materialisation", "give the tree"},
	} {
		sp, err := Open(c.path, OpenOptions{KeepUndecodable: true, KeepUndecodableFile: true})
		if err != nil {
			t.Fatal(err)
		}
		fs := Validate(sp, ValidateOptions{}).ByCheck(CheckFormat)
		sp.Close()
		if len(fs) != 1 {
			t.Fatalf("%s: format findings %+v, want 1", c.path, fs)
		}
		m := fs[0].Message
		if strings.Contains(m, "subtask -1") || !strings.Contains(m, c.want) || strings.Contains(m, c.not) {
			t.Errorf("%s: %s\nwant no subtask -1, %q and not %q", c.path, m, c.want, c.not)
		}
	}
}
