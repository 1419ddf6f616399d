package savepoint

// CRC-32C of a concatenation from the CRCs of its parts, so that parts of a
// file checksummed (or written) concurrently give the file's CRC. This is
// zlib's crc32_combine: appending len2 bytes multiplies the first part's
// register by x^(8*len2) modulo the polynomial, and CRC arithmetic is
// linear, so the pre- and post-conditioning of both parts cancel out.

// crc32cPoly is the Castagnoli polynomial, bit-reversed (as hash/crc32).
const crc32cPoly = 0x82f63b78

// x2nModP[k] is x^(2^k) modulo the polynomial, for every k xPow8nModP
// uses (3 to 65 for an int64 length). zlib's table has 32 entries and
// wraps k modulo 32, which holds for its polynomial but not for
// Castagnoli's: x^(2^32) is not x modulo it.
var x2nModP = func() (t [67]uint32) {
	p := uint32(1) << 30 // x^1
	t[0] = p
	for k := 1; k < len(t); k++ {
		p = multModP(p, p)
		t[k] = p
	}
	return t
}()

// multModP multiplies a and b modulo the polynomial (reflected bit order:
// bit 31 is x^0).
func multModP(a, b uint32) uint32 {
	m := uint32(1) << 31
	var p uint32
	for {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				return p
			}
		}
		m >>= 1
		if b&1 != 0 {
			b = b>>1 ^ crc32cPoly
		} else {
			b >>= 1
		}
	}
}

// xPow8nModP returns x^(8n) modulo the polynomial.
func xPow8nModP(n int64) uint32 {
	p := uint32(1) << 31 // x^0
	for k := 3; n != 0; n, k = n>>1, k+1 {
		if n&1 != 0 {
			p = multModP(x2nModP[k], p)
		}
	}
	return p
}

// crc32cCombine returns the CRC-32C of A followed by B, given crcA, the
// CRC-32C of A, and crcB, that of B, lenB bytes long.
func crc32cCombine(crcA, crcB uint32, lenB int64) uint32 {
	return multModP(xPow8nModP(lenB), crcA) ^ crcB
}
