// Package prefault maps the pages of the running executable's code in at
// start-up, a few system calls for all of them, where the kernel would
// otherwise take a page fault for each range of them that start-up touches.
//
// sptool's executable holds about 16 MB of code (and as much read-only
// data), and its packages' initialisation (Arrow's compute kernels,
// Parquet, the expression language, the compressors) touches pages all
// over it: about 600 page faults before main on a virtual machine where
// each costs tens of microseconds. Mapping the code in with
// MADV_POPULATE_READ costs about 1.5 ms and saves 3-4 ms of every run
// (start-up 27.8 -> 24.1 ms on the benchmark machine), and adds about 7 MB
// of the page cache's pages, shared and clean, to the resident set. Only
// the pages the page cache holds are mapped so, found with mincore: the
// others (all of them on the first run after a boot, the cold ones where
// the kernel reclaims them) are left to be faulted in as they are
// touched, since populating them would read them from disk.
//
// Importing the package does it (in its init, which runs early: it
// imports only the system call packages and sync/atomic); elsewhere than
// Linux it does nothing.
//
// Writable and Slice do the same for memory the program is about to fill:
// a pooled buffer, the arrays of a large purge list; Grow and GrowAtRate
// grow a slice into new memory mapped in that way.
package prefault
