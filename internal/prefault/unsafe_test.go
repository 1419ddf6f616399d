package prefault

import "unsafe"

func unsafeAddr(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

// unsafeSlice returns a slice of T of length n and capacity c over b.
func unsafeSlice[T any](b []byte, n, c int) []T {
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), c)[:n]
}
