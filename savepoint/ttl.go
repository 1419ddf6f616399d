package savepoint

import "encoding/binary"

// TTLPrefixLen is the size of the expire-at stamp clink's KeyedState puts in
// front of every value of a slot with a TtlConfig.
const TTLPrefixLen = 8

// SplitTTL splits a TTL-slot value into its expire-at stamp (milliseconds,
// signed 64-bit little-endian; processing-time epoch ms or an event-time
// watermark) and the codec payload, which aliases value. ok is false when
// the value is shorter than 8 bytes (clink's get treats such a value as
// missing and its cleanup leaves it alone).
func SplitTTL(value []byte) (expireAt int64, payload []byte, ok bool) {
	if len(value) < TTLPrefixLen {
		return 0, nil, false
	}
	return int64(binary.LittleEndian.Uint64(value)), value[TTLPrefixLen:], true
}

// JoinTTL returns a new value: expireAt as 8 bytes little-endian followed
// by payload.
func JoinTTL(expireAt int64, payload []byte) []byte {
	out := make([]byte, TTLPrefixLen, TTLPrefixLen+len(payload))
	binary.LittleEndian.PutUint64(out, uint64(expireAt))
	return append(out, payload...)
}

// TTLExpired reports whether a stamp is expired at now: expireAt <= now
// (inclusive), as clink's KeyedState decides.
func TTLExpired(expireAt, now int64) bool { return expireAt <= now }
