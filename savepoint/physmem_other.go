//go:build !linux

package savepoint

// physicalMemory returns fixedMemoryCap: outside Linux the machine's memory
// is not asked for.
func physicalMemory() int64 { return fixedMemoryCap }
