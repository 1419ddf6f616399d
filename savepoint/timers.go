package savepoint

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// TimerKeyPrefix starts the key of an operator's timer blob (format 3.4):
// an operator-state row 0xFF "__clink_timers".
var TimerKeyPrefix = []byte("\xff__clink_timers")

// IsTimerBlob reports whether key is the key of an operator's timer blob:
// TimerKeyPrefix, or the legacy unprefixed "__clink_timers" key (a raw
// key, without a slot separator), which get_operator_state falls back to
// when the prefixed one is absent (format 2.1), so that an old tree's
// timers may live there.
func IsTimerBlob(key []byte) bool {
	if bytes.HasPrefix(key, TimerKeyPrefix) {
		return true
	}
	return bytes.HasPrefix(key, TimerKeyPrefix[1:]) && bytes.IndexByte(key, '|') < 0
}

// Timer is one timer of a timer blob: its time (epoch ms) and the user key
// it fires for, as the operator's keyed state holds it after slot '|' (the
// bytes KeyGroupOf hashes: a restore routes a timer to the subtask owning
// KeyGroupOf(Key), and a purge of a key removes its timers).
type Timer struct {
	Time int64
	Key  []byte
}

// ParseTimers decodes a timer blob (format 3.4): u32 n_proc {i64 ts, u32
// klen, key}*n, then u32 n_event {...}, little-endian. Bytes after the
// event-time timers are ignored, as clink's restore ignores them
// (TimerService::restore_from reads the two sets and stops).
func ParseTimers(b []byte) (proc, event []Timer, err error) {
	proc, event, _, err = ParseTimersTrailing(b)
	return proc, event, err
}

// ParseTimersTrailing is ParseTimers that also returns how many bytes
// follow the event-time timers.
func ParseTimersTrailing(b []byte) (proc, event []Timer, trailing int, err error) {
	off := 0
	read := func(what string) ([]Timer, error) {
		if off+4 > len(b) {
			return nil, fmt.Errorf("truncated %s timer count at byte %d", what, off)
		}
		n := int(binary.LittleEndian.Uint32(b[off:]))
		off += 4
		if n > (len(b)-off)/12 {
			return nil, fmt.Errorf("%s timer count %d does not fit in %d bytes", what, n, len(b)-off)
		}
		ts := make([]Timer, 0, n)
		for i := 0; i < n; i++ {
			if off+12 > len(b) {
				return nil, fmt.Errorf("truncated %s timer %d at byte %d", what, i, off)
			}
			t := int64(binary.LittleEndian.Uint64(b[off:]))
			kl := int(binary.LittleEndian.Uint32(b[off+8:]))
			off += 12
			if kl < 0 || kl > len(b)-off {
				return nil, fmt.Errorf("%s timer %d key length %d runs past the blob", what, i, kl)
			}
			ts = append(ts, Timer{t, b[off : off+kl]})
			off += kl
		}
		return ts, nil
	}
	if proc, err = read("processing-time"); err != nil {
		return nil, nil, 0, err
	}
	if event, err = read("event-time"); err != nil {
		return nil, nil, 0, err
	}
	return proc, event, len(b) - off, nil
}

// EncodeTimers encodes a timer blob (format 3.4) of the processing-time and
// event-time timers given, in their order.
func EncodeTimers(proc, event []Timer) []byte {
	var b []byte
	for _, list := range [][]Timer{proc, event} {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(list)))
		for _, t := range list {
			b = binary.LittleEndian.AppendUint64(b, uint64(t.Time))
			b = binary.LittleEndian.AppendUint32(b, uint32(len(t.Key)))
			b = append(b, t.Key...)
		}
	}
	return b
}

// TimerFires reports whether a restore at the layout of chain group g fires
// the timer for key held in the blob of subtask blob: the owner of key's
// group restores its own blob, or, when it has none (hasBlob), the others'
// merged, which keeps the last of them (last: blob is that one; format 5.3
// step 4, 10.2). A timer anywhere else is a stale copy.
func TimerFires(g Group, blob int, key []byte, hasBlob func(subtask int) bool, last bool) bool {
	o := g.Owner(KeyGroupOf(key))
	return o == blob || !hasBlob(o) && last
}
