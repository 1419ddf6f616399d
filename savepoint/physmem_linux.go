package savepoint

import (
	"math"
	"syscall"
)

// physicalMemory returns the machine's physical memory in bytes (at most
// math.MaxInt), or fixedMemoryCap when the kernel does not say.
func physicalMemory() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil || si.Totalram == 0 {
		return fixedMemoryCap
	}
	unit := uint64(si.Unit)
	if unit == 0 {
		unit = 1
	}
	total := uint64(si.Totalram) * unit
	if total/unit != uint64(si.Totalram) || total > math.MaxInt {
		return math.MaxInt
	}
	return int64(total)
}
