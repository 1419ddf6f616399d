package prefault

import "unsafe"

// WritableMin is the smallest buffer Writable maps in: below it the faults
// cost about what the system call does.
const WritableMin = 64 << 10

// Slice is Writable of the memory of s up to its capacity: for a large
// slice just made, which the code that fills it would otherwise fault in
// a page at a time.
func Slice[T any](s []T) bool {
	if cap(s) == 0 {
		return false
	}
	var zero T
	s = s[:cap(s)]
	return Writable(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), uintptr(len(s))*unsafe.Sizeof(zero)))
}
