//go:build !unix

package export

// cpuTimes returns zeros where the process's CPU times are not read.
func cpuTimes() (user, sys float64) { return 0, 0 }

// syncAll does nothing where there is no sync(2).
func syncAll() {}
