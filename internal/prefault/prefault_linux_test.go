//go:build linux

package prefault

import (
	"os"
	"reflect"
	"syscall"
	"testing"
	"unsafe"
)

func TestSegments(t *testing.T) {
	for _, c := range []struct {
		name, maps string
		want       []segment
	}{
		{"static binary", `00400000-013eb000 r-xp 00000000 fe:00 9978424                            /tmp/b/sptool
013eb000-023ec000 r--p 00feb000 fe:00 9978424                            /tmp/b/sptool
023ec000-024ef000 rw-p 01fec000 fe:00 9978424                            /tmp/b/sptool
024ef000-0453b000 rw-p 00000000 00:00 0 
7f7f97e00000-7f7f99e00000 rw-p 00000000 00:00 0 
7ffd4b5f2000-7ffd4b613000 rw-p 00000000 00:00 0                          [stack]
7ffd4b7d6000-7ffd4b7d8000 r-xp 00000000 00:00 0                          [vdso]
`, []segment{{0x400000, 0x13eb000}}},
		{"other files left out", `55a5a0369000-55a5a036b000 r--p 00000000 fe:00 247026                     /usr/bin/cat
55a5a036b000-55a5a0370000 r-xp 00002000 fe:00 247026                     /usr/bin/cat
55a5a0374000-55a5a0375000 rw-p 0000a000 fe:00 247026                     /usr/bin/cat
7f2c1a000000-7f2c1a028000 r--p 00000000 fe:00 262401                     /usr/lib/x86_64-linux-gnu/libc.so.6
7f2c1a028000-7f2c1a1b0000 r-xp 00028000 fe:00 262401                     /usr/lib/x86_64-linux-gnu/libc.so.6`,
			[]segment{{0x55a5a036b000, 0x55a5a0370000}}},
		{"a path with spaces", "00400000-00401000 r-xp 00000000 fe:00 1 /tmp/my dir/sptool\n00401000-00402000 r--p 00001000 fe:00 1 /tmp/my dir/sptool\n00402000-00403000 r-xp 00002000 fe:00 1 /tmp/my dir/sptool\n",
			[]segment{{0x400000, 0x401000}, {0x402000, 0x403000}}},
		{"another path starting alike", "00400000-00401000 r-xp 00000000 fe:00 1 /tmp/my dir/sptool\n00401000-00402000 r--p 00001000 fe:00 2 /tmp/my dir/other\n",
			[]segment{{0x400000, 0x401000}}},
		{"first line anonymous", "024ef000-0453b000 rw-p 00000000 00:00 0\n00400000-013eb000 r-xp 00000000 fe:00 1 /x\n", nil},
		{"bad address ends the list", "00400000-00401000 r-xp 00000000 fe:00 1 /x\n0040100g-00402000 r-xp 00001000 fe:00 1 /x\n00402000-00403000 r-xp 00002000 fe:00 1 /x\n",
			[]segment{{0x400000, 0x401000}}},
		{"empty range", "00401000-00401000 r-xp 00000000 fe:00 1 /x\n", nil},
		{"truncated read", "00400000-00401000 r-xp 00000000 fe:00 1 /x\n00401000-0040", []segment{{0x400000, 0x401000}}},
		{"empty", "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := segments([]byte(c.maps)); !reflect.DeepEqual(got, c.want) {
				t.Errorf("segments = %x, want %x", got, c.want)
			}
		})
	}
}

func TestResidentRuns(t *testing.T) {
	for _, c := range []struct {
		vec   string // 1: resident
		least int
		want  [][2]int
	}{
		{"", 1, nil},
		{"0000", 1, nil},
		{"1111", 1, [][2]int{{0, 4}}},
		{"1111", 5, nil},
		{"0110111001", 2, [][2]int{{1, 3}, {4, 7}}},
		{"0110111001", 3, [][2]int{{4, 7}}},
		{"1000000001", 1, [][2]int{{0, 1}, {9, 10}}},
	} {
		vec := make([]byte, len(c.vec))
		for i := range c.vec {
			vec[i] = (c.vec[i] - '0') | 0x80 // only bit 0 counts
		}
		if got := residentRuns(vec, c.least); !reflect.DeepEqual(got, c.want) {
			t.Errorf("residentRuns(%s, %d) = %v, want %v", c.vec, c.least, got, c.want)
		}
	}
}

// TestPopulate maps in this test binary's code: the pages the page cache
// holds (a binary just linked and run holds nearly all of them).
func TestPopulate(t *testing.T) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip(err)
	}
	segs := segments(maps)
	if len(segs) < 1 {
		t.Fatalf("found no code mapping of the executable:\n%s", maps)
	}
	page := uintptr(os.Getpagesize())
	var want uintptr
	for _, s := range segs {
		vec, ok := resident(s.lo, s.hi)
		if !ok {
			t.Fatalf("mincore of %#x-%#x failed", s.lo, s.hi)
		}
		for _, r := range residentRuns(vec, minRun) {
			want += uintptr(r[1]-r[0]) * page
		}
	}
	// The page of the code running now is resident.
	pc := reflect.ValueOf(TestPopulate).Pointer() &^ (page - 1)
	if vec, ok := resident(pc, pc+page); !ok || vec[0]&1 == 0 {
		t.Errorf("the page of TestPopulate's code (%#x) is not resident, says mincore", pc)
	}
	// The pages of a file's hole are not: the page cache holds none.
	f, err := os.Create(t.TempDir() + "/hole")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(16 * int64(page)); err != nil {
		t.Fatal(err)
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, 16*int(page), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	at := uintptr(unsafe.Pointer(&m[0]))
	if vec, ok := resident(at, at+16*page); !ok || len(residentRuns(vec, 1)) != 0 {
		t.Errorf("the map of a file's hole is resident, says mincore")
	}
	if got := populate(); got != want || got == 0 {
		t.Errorf("populate mapped %d bytes, want %d (the resident runs), not 0", got, want)
	}
}
