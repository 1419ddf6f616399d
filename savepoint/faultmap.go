package savepoint

import (
	"errors"
	"fmt"
	"os"
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
}

// mappings are the files mapped now (all), and the last ones unmapped
// (gone, the latest last): a fault is told after the panic it raised has
// unwound the stack, past the deferred Close that unmapped its file.
var mappings struct {
	sync.Mutex
	all, gone []mapping
}

// goneMappings is how many unmapped mappings are kept for faultError.
const goneMappings = 64

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
	mappings.Lock()
	defer mappings.Unlock()
	for i, m := range mappings.all {
		if m.base == base {
			mappings.all = append(mappings.all[:i], mappings.all[i+1:]...)
			if len(mappings.gone) == goneMappings {
				mappings.gone = append(mappings.gone[:0], mappings.gone[1:]...)
			}
			m.data = nil // (unmapped)
			mappings.gone = append(mappings.gone, m)
			return
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
	for i := len(mappings.gone) - 1; i >= 0; i-- {
		if m := mappings.gone[i]; addr >= m.base && addr-m.base < m.size {
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
// In a mapped file, it names the file and the byte: a file whose size is
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
	st, err := m.f.Stat()
	if err != nil {
		if st, err = os.Stat(name); err != nil {
			return fmt.Errorf("%w (%s faulted at byte %d, and it can no longer be examined: %v)", ErrInputChanged, name, off, err)
		}
	}
	if st.Size() <= off || st.Size() != int64(m.size) {
		// (Cut short and grown again, past where it was read, it has
		// changed too, and its size tells unless it is the same.)
		return fmt.Errorf("%w (%s now ends at byte %d, at byte %d when it was opened; byte %d was being read)", ErrInputChanged, name, st.Size(), m.size, off)
	}
	return fmt.Errorf("read %s at byte %d: %w", name, off, ErrInputUnreadable)
}
