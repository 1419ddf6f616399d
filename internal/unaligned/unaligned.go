// Package unaligned loads words from byte slices at any offset, for the
// hot loops of the savepoint reader and the purge filter: where the
// machine loads unaligned words, one instruction without bounds checks,
// which the caller makes instead, once for a whole loop.
package unaligned
