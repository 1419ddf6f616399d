package savepoint

import "encoding/binary"

// libstdc++'s seed for std::hash<std::string> (_Hash_bytes) and the
// MurmurHash2-64 multiplier it uses.
const (
	libstdcxxHashSeed = 0xc70f6907
	libstdcxxHashMul  = 0xc6a4a7935bd1e995
)

func shiftMix(v uint64) uint64 { return v ^ (v >> 47) }

// HashBytesLibstdcxx returns libstdc++'s std::hash<std::string> of b on a
// 64-bit target: _Hash_bytes(b, len(b), 0xc70f6907), a MurmurHash2-64
// variant. h = seed ^ (len*mul); for each whole 8-byte little-endian word w:
// h ^= shift_mix(w*mul)*mul; h *= mul; then, if 1..7 bytes remain, they are
// loaded little-endian into t and h ^= t; h *= mul; finally
// h = shift_mix(shift_mix(h)*mul), where shift_mix(v) = v ^ (v >> 47) and
// mul = 0xc6a4a7935bd1e995. Builds against libc++ (macOS) hash differently.
func HashBytesLibstdcxx(b []byte) uint64 {
	h := uint64(libstdcxxHashSeed) ^ (uint64(len(b)) * libstdcxxHashMul)
	for len(b) >= 8 {
		w := binary.LittleEndian.Uint64(b)
		h ^= shiftMix(w*libstdcxxHashMul) * libstdcxxHashMul
		h *= libstdcxxHashMul
		b = b[8:]
	}
	if len(b) > 0 {
		var t uint64
		for i := len(b) - 1; i >= 0; i-- {
			t = t<<8 | uint64(b[i])
		}
		h ^= t
		h *= libstdcxxHashMul
	}
	return shiftMix(shiftMix(h) * libstdcxxHashMul)
}

// OperatorIDFromUID returns the operator id clink assigns to an operator
// with the given uid: HashBytesLibstdcxx("uid/" + uid), with 0 mapped to 1
// (include/clink/core/types.hpp). Operators without a uid are hashed from
// "stage<runner index>/<op name>" instead (see OperatorIDFromName).
func OperatorIDFromUID(uid string) uint64 {
	return OperatorIDFromName("uid/" + uid)
}

// OperatorIDFromName returns HashBytesLibstdcxx(name), with 0 mapped to 1:
// the operator id clink derives from an already-prefixed operator name
// ("uid/<uid>" or "stage<runner index>/<op name>").
func OperatorIDFromName(name string) uint64 {
	h := HashBytesLibstdcxx([]byte(name))
	if h == 0 {
		return 1
	}
	return h
}
