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

// TestPopulate maps in this test binary's read-only mappings: those the
// page cache holds whole (a binary just linked and run usually is).
func TestPopulate(t *testing.T) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skip(err)
	}
	segs := segments(maps)
	if len(segs) < 1 {
		t.Fatalf("found no code mapping of the executable:\n%s", maps)
	}
	var want uintptr
	for _, s := range segs {
		if resident(s.lo, s.hi) {
			want += s.hi - s.lo
		}
	}
	// The page of the code running now is resident.
	page := uintptr(os.Getpagesize())
	pc := reflect.ValueOf(TestPopulate).Pointer() &^ (page - 1)
	if !resident(pc, pc+page) {
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
	if at := uintptr(unsafe.Pointer(&m[0])); resident(at, at+16*page) {
		t.Errorf("the map of a file's hole is resident, says mincore")
	}
	if got := populate(); got != want {
		t.Errorf("populate mapped %d bytes, want %d (the resident mappings)", got, want)
	}
}
