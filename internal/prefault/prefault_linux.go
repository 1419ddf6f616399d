//go:build linux

package prefault

import (
	"runtime"
	"syscall"
	"unsafe"
)

// The package imports only runtime, sync/atomic, syscall and unsafe, so
// that this runs before most other packages' initialisation.
func init() { populate() }

// madvPopulateRead is MADV_POPULATE_READ (Linux 5.14); older kernels
// refuse it with EINVAL, and nothing is done.
const madvPopulateRead = 22

// populate maps in the pages of the executable's code that the page cache
// holds, in runs of at least minRun pages, and returns how many bytes it
// mapped.
func populate() uintptr {
	fd, err := syscall.Open("/proc/self/maps", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	// The executable's mappings come first; a static Go binary's list is
	// short.
	buf := make([]byte, 16<<10)
	n, _ := syscall.Read(fd, buf)
	syscall.Close(fd)
	page := uintptr(syscall.Getpagesize())
	var done uintptr
	for _, s := range segments(buf[:max(n, 0)]) {
		vec, ok := resident(s.lo, s.hi)
		if !ok {
			continue
		}
		for _, r := range residentRuns(vec, minRun) {
			lo, hi := s.lo+uintptr(r[0])*page, min(s.hi, s.lo+uintptr(r[1])*page)
			if madvise(lo, hi, madvPopulateRead) != nil {
				return done
			}
			done += hi - lo
		}
	}
	return done
}

// minRun is the fewest pages populate maps in at once: a fault maps the
// pages around it that the page cache holds too (16 by default).
const minRun = 16

// residentRuns returns the runs [from, to) of at least least pages that
// vec (mincore's: bit 0 of each byte set for a page the page cache holds)
// says are resident.
func residentRuns(vec []byte, least int) [][2]int {
	var runs [][2]int
	from := -1
	for i := 0; i <= len(vec); i++ {
		in := i < len(vec) && vec[i]&1 != 0
		switch {
		case in && from < 0:
			from = i
		case !in && from >= 0:
			if i-from >= least {
				runs = append(runs, [2]int{from, i})
			}
			from = -1
		}
	}
	return runs
}

// segment is a range of addresses [lo, hi).
type segment struct{ lo, hi uintptr }

// segments returns the mappings of maps (the text of /proc/<pid>/maps)
// that belong to the file of its first line and hold code: readable and
// executable, not writable. Lines it cannot parse end the list. (Its
// read-only data is left out: mapping it in too cost more than the faults
// it saved, and added 11 MB to the resident set.)
func segments(maps []byte) []segment {
	var out []segment
	var file []byte
	for len(maps) > 0 {
		line := maps
		if i := indexByte(maps, '\n'); i >= 0 {
			line, maps = maps[:i], maps[i+1:]
		} else {
			maps = nil
		}
		// address perms offset dev inode path (which may hold spaces)
		f, path := fields(line, 5)
		if len(f) < 5 || len(path) == 0 || path[0] != '/' {
			if file == nil {
				return nil
			}
			continue
		}
		if file == nil {
			file = path
		} else if string(path) != string(file) {
			continue
		}
		lo, hi, ok := addressRange(f[0])
		if !ok {
			return out
		}
		if perms := f[1]; len(perms) >= 3 && perms[0] == 'r' && perms[1] != 'w' && perms[2] == 'x' {
			out = append(out, segment{lo, hi})
		}
	}
	return out
}

// addressRange parses "lo-hi" in hexadecimal.
func addressRange(b []byte) (lo, hi uintptr, ok bool) {
	i := indexByte(b, '-')
	if i <= 0 || i == len(b)-1 {
		return 0, 0, false
	}
	lo, ok1 := hex(b[:i])
	hi, ok2 := hex(b[i+1:])
	return lo, hi, ok1 && ok2 && lo < hi
}

func hex(b []byte) (uintptr, bool) {
	if len(b) == 0 || len(b) > 2*int(unsafe.Sizeof(uintptr(0))) {
		return 0, false
	}
	var v uintptr
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uintptr(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uintptr(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// resident returns mincore's vector for the pages of [lo, hi): bit 0 of
// each byte is set for a page the page cache holds.
func resident(lo, hi uintptr) ([]byte, bool) {
	page := uintptr(syscall.Getpagesize())
	vec := make([]byte, (hi-lo+page-1)/page)
	_, _, e := syscall.Syscall(syscall.SYS_MINCORE, lo, hi-lo, uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
	runtime.KeepAlive(vec)
	return vec, e == 0
}

func madvise(lo, hi uintptr, advice int) error {
	if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, uintptr(advice)); e != 0 {
		return e
	}
	return nil
}

// indexByte is bytes.IndexByte, which the package does without so as to
// run early.
func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// fields returns the first n fields of b separated by spaces, and the rest
// of b after them with its leading spaces removed.
func fields(b []byte, n int) ([][]byte, []byte) {
	var out [][]byte
	i := 0
	for {
		for i < len(b) && b[i] == ' ' {
			i++
		}
		if len(out) == n || i == len(b) {
			return out, b[i:]
		}
		j := i
		for j < len(b) && b[j] != ' ' {
			j++
		}
		out = append(out, b[i:j])
		i = j
	}
}
