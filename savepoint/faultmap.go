package savepoint

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"
)

// ErrInputUnreadable is wrapped by the error of a read of a memory-mapped
// input file that faulted where the file still has bytes: the system could
// not bring that page in, which is an I/O error of the disk or of the file
// system (a network file system that lost its server, a failing disk), not
// a change of the file.
var ErrInputUnreadable = errors.New("the system could not read the file (an I/O error of the disk or file system)")

// InputFault reports whether err is an input file's own failure, changed
// (ErrInputChanged) or unreadable (ErrInputUnreadable) while it was read:
// reading it another way would not do better.
func InputFault(err error) bool {
	return errors.Is(err, ErrInputChanged) || errors.Is(err, ErrInputUnreadable)
}

// mapping is a file mapped into memory by mapFile, kept so that a fault in
// it can be told as the file and the byte it hit.
type mapping struct {
	base, size uintptr
	f          *os.File
	data       []byte // the map
	// closed is set on a mapping unmapped by a Close that ran while no
	// panic unwound the stack: a fault in it is a read after that Close
	// (ErrClosed), not one whose panic unwound past the Close.
	closed bool
}

// mappings are the files mapped now (all), and the last ones unmapped
// (gone, a ring whose next entry to replace is next): a fault is told after
// the panic it raised has unwound the stack, past the deferred Close that
// unmapped its file, and a read after Close is told as such.
var mappings struct {
	sync.Mutex
	all, gone []mapping
	next      int
}

// goneMappings is how many unmapped mappings are kept for faultError: the
// files of a large tree, closed together.
const goneMappings = 1024

// addMapping records that b maps f from its start.
func addMapping(b []byte, f *os.File) {
	if len(b) == 0 {
		return
	}
	mappings.Lock()
	defer mappings.Unlock()
	mappings.all = append(mappings.all, mapping{base: uintptr(unsafe.Pointer(&b[0])), size: uintptr(len(b)), f: f, data: b})
}

// removeMapping forgets the mapping b, about to be unmapped.
func removeMapping(b []byte) {
	if len(b) == 0 {
		return
	}
	base := uintptr(unsafe.Pointer(&b[0]))
	closed := !unwinding()
	mappings.Lock()
	defer mappings.Unlock()
	for i, m := range mappings.all {
		if m.base == base {
			mappings.all = append(mappings.all[:i], mappings.all[i+1:]...)
			m.data, m.closed = nil, closed // (unmapped)
			if len(mappings.gone) < goneMappings {
				mappings.gone = append(mappings.gone, m)
			} else {
				mappings.gone[mappings.next] = m
			}
			mappings.next = (mappings.next + 1) % goneMappings
			return
		}
	}
}

// unwinding reports whether the caller runs while a panic unwinds its
// goroutine's stack (a deferred call: the runtime's panic is among the
// callers).
func unwinding() bool {
	var pcs [64]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs[:])])
	for {
		f, more := frames.Next()
		if f.Function == "runtime.gopanic" {
			return true
		}
		if !more {
			return false
		}
	}
}

// mappingAt returns the mapping that holds addr.
func mappingAt(addr uintptr) (mapping, bool) {
	mappings.Lock()
	defer mappings.Unlock()
	for _, m := range mappings.all {
		if addr >= m.base && addr-m.base < m.size {
			return m, true
		}
	}
	for i := range mappings.gone { // the latest first
		j := (mappings.next - 1 - i + 2*goneMappings) % goneMappings
		if m := mappings.gone[j]; addr >= m.base && addr-m.base < m.size {
			return m, true
		}
	}
	return mapping{}, false
}

// mappedFileOf returns the mapped file that holds b, or nil when b is not
// in a file mapped now (memory of the heap: a decompressed stream).
// Batches decoded from a map name their file through it when their
// offsets are found out of bounds (the file rewritten while read), as
// those of a payload do (see Batch.changed).
func mappedFileOf(b []byte) *mappedFile {
	if len(b) == 0 {
		return nil
	}
	addr := uintptr(unsafe.Pointer(&b[0]))
	mappings.Lock()
	defer mappings.Unlock()
	for _, m := range mappings.all {
		if addr >= m.base && addr-m.base < m.size {
			return &mappedFile{f: m.f, data: m.data}
		}
	}
	return nil
}

// faultError is the error of a memory fault at addr while input was read.
// In a mapped file, it names the file and the byte: a file unmapped by a
// Close before the read was used after it (ErrClosed); a file whose size is
// no longer the one mapped was cut short while it was read
// (ErrInputChanged); one that still holds that byte at its old size could
// not be read (ErrInputUnreadable). A fault outside every mapping is reported as
// ErrInputChanged with its address, as a mapping of a file may have been
// left behind by a caller of this package.
func faultError(addr uintptr) error {
	m, ok := mappingAt(addr)
	if !ok {
		return fmt.Errorf("%w (fault at %#x)", ErrInputChanged, addr)
	}
	off := int64(addr - m.base)
	name := m.f.Name()
	shown := name
	if st, err := os.Stat(name); err == nil && st.IsDir() {
		// A file made without a name (O_TMPFILE) is named by its
		// directory: the sort's or a replay's copy of an input's rows.
		shown = "a temporary file in " + name
	}
	// A *FileError, which WithFile does not name the file in again.
	fileErr := func(format string, a ...any) error {
		return &FileError{Path: shown, Err: fmt.Errorf(format, a...)}
	}
	if m.closed {
		return fileErr("%w (read at byte %d after Close unmapped it)", ErrClosed, off)
	}
	st, err := m.f.Stat()
	if err != nil {
		if st, err = os.Stat(name); err != nil {
			return fileErr("%w (it faulted at byte %d, and it can no longer be examined: %v)", ErrInputChanged, off, err)
		}
	}
	if st.Size() <= off || st.Size() != int64(m.size) {
		// (Cut short and grown again, past where it was read, it has
		// changed too, and its size tells unless it is the same.)
		return fileErr("%w (it now ends at byte %d, at byte %d when it was opened; byte %d was being read)", ErrInputChanged, st.Size(), m.size, off)
	}
	return fileErr("read at byte %d: %w", off, ErrInputUnreadable)
}
