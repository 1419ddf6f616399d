package savepoint

import (
	"errors"
	"fmt"
	"io"
	"os"
	"unsafe"
)

// mappedFile is the file behind the batches of a memory-mapped snapshot.
// Long sequential passes (the writer's) read it with pread(2) instead of
// through the map: the first touch of each mapped page costs more than
// read's copy, and what is read that way never enters the resident set.
type mappedFile struct {
	f    *os.File
	data []byte // the map
}

// offsetOf returns the file offset of b when b lies in the map.
func (m *mappedFile) offsetOf(b []byte) (int64, bool) {
	if m == nil || len(b) == 0 || len(m.data) == 0 {
		return 0, false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(m.data)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if p < base || p+uintptr(len(b)) > base+uintptr(len(m.data)) {
		return 0, false
	}
	return int64(p - base), true
}

// readAt fills b with the file's bytes from off.
func (m *mappedFile) readAt(b []byte, off int64) error {
	n, err := m.f.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w (%s ends before byte %d)", ErrInputChanged, m.f.Name(), off+int64(len(b)))
	}
	return err
}

// windowSize is how much of a mapped file the writer reads at once (the
// size of the sink's buffer, so that they share a pool). A variable so
// tests can make windows small.
var windowSize = sinkSize

// window holds a range of a mapped file's bytes, read with pread. It pays
// off when reads go forward through the file; when they jump about (rows
// written in another order than stored) it stops reading and leaves the
// bytes to the map.
type window struct {
	m   *mappedFile
	off int64
	buf []byte // the file's bytes [off, off+len(buf))
	// refills and served: windows read, bytes served from them.
	refills, served int64
}

// useful reports whether reading another window is worth it: the first few
// are, then only while each served a good part of what it read on average.
func (w *window) useful() bool {
	return w.refills < 4 || w.served/w.refills >= int64(windowSize/16)
}

// view returns the bytes of b, a slice of the map of m (nil m: b is
// returned as it is), from the window, reading the file from b's offset
// when the window does not hold them. b must be at most windowSize long.
// On a read error the bytes are zeros and the error is returned.
func (w *window) view(m *mappedFile, b []byte) ([]byte, error) {
	off, ok := m.offsetOf(b)
	if !ok {
		return b, nil
	}
	end := off + int64(len(b))
	if w.m == m && off >= w.off && end <= w.off+int64(len(w.buf)) {
		w.served += int64(len(b))
		return w.buf[off-w.off : end-w.off], nil
	}
	if !w.useful() {
		return b, nil
	}
	w.refills++
	w.served += int64(len(b))
	n := min(int64(windowSize), int64(len(m.data))-off)
	if n < int64(len(b)) {
		n = int64(len(b)) // windowSize changed by a test
	}
	if int64(cap(w.buf)) < n {
		if b, ok := bufPool.Get().(*[]byte); ok && cap(*b) >= int(n) {
			w.buf = (*b)[:0]
		} else {
			w.buf = make([]byte, 0, min(windowSize, len(m.data)))
		}
	}
	w.m, w.off, w.buf = m, off, w.buf[:n]
	if err := m.readAt(w.buf, off); err != nil {
		clear(w.buf)
		w.m = nil
		return w.buf[:len(b)], err
	}
	return w.buf[:len(b)], nil
}
