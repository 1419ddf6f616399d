package savepoint

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// A timer blob decodes to the timers it was encoded from, and a blob that
// is cut short or counts more timers than it holds is refused, naming what
// is wrong. Bytes after the timers are ignored, as clink's restore ignores
// them, and counted.
func TestParseTimers(t *testing.T) {
	proc := []Timer{{1, []byte("\x05s|a")}, {-7, nil}}
	event := []Timer{{1 << 40, bytes.Repeat([]byte{'k'}, 300)}}
	blob := EncodeTimers(proc, event)
	p, e, err := ParseTimers(blob)
	if err != nil || !slices.EqualFunc(p, proc, timerEqual) || !slices.EqualFunc(e, event, timerEqual) {
		t.Fatalf("round trip: %v %v %v", p, e, err)
	}
	if p, e, err := ParseTimers(EncodeTimers(nil, nil)); err != nil || len(p)+len(e) != 0 {
		t.Errorf("empty blob: %v %v %v", p, e, err)
	}
	for _, c := range []struct {
		name string
		blob []byte
		want string
	}{
		{"nothing", nil, "truncated processing-time timer count at byte 0"},
		{"no event count", EncodeTimers(proc, nil)[:len(EncodeTimers(proc, nil))-4], "truncated event-time timer count"},
		{"count past the blob", []byte{9, 0, 0, 0, 1, 2}, "processing-time timer count 9 does not fit in 2 bytes"},
		{"key past the blob", []byte{1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 100, 0, 0, 0, 'a', 'b'}, "processing-time timer 0 key length 100 runs past the blob"},
	} {
		if _, _, err := ParseTimers(c.blob); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
	}
	p, e, trailing, err := ParseTimersTrailing(append(slices.Clone(blob), 0, 7))
	if err != nil || trailing != 2 || !slices.EqualFunc(p, proc, timerEqual) || !slices.EqualFunc(e, event, timerEqual) {
		t.Errorf("two bytes after the timers: %v %v, %d trailing, %v; want the timers, 2 trailing", p, e, trailing, err)
	}
}

func timerEqual(a, b Timer) bool { return a.Time == b.Time && bytes.Equal(a.Key, b.Key) }

// FuzzParseTimers: any bytes decode without a panic, and what decodes
// encodes back to the same bytes, but for those after the timers.
func FuzzParseTimers(f *testing.F) {
	f.Add(EncodeTimers([]Timer{{1, []byte("\x05s|a")}}, []Timer{{2, nil}}))
	f.Add([]byte{})
	f.Add([]byte{255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, e, trailing, err := ParseTimersTrailing(b)
		if err != nil {
			return
		}
		if again := EncodeTimers(p, e); !bytes.Equal(again, b[:len(b)-trailing]) {
			t.Fatalf("%x decodes and encodes back to %x (%d bytes after its timers)", b, again, trailing)
		}
	})
}

func TestIsTimerBlob(t *testing.T) {
	for key, want := range map[string]bool{
		"\xff__clink_timers":    true,
		"\xff__clink_timers0":   true,
		"__clink_timers":        true, // the legacy unprefixed key
		"__clink_timers0":       true,
		"_x|__clink_timers":     false, // a keyed row
		"__clink_timers|x":      false, // a keyed row of slot "_clink_timers"
		"\xff__vector_offset__": false,
		"__iterate_inflight__":  false,
		"":                      false,
		"\xfe__clink_timers":    false,
	} {
		if got := IsTimerBlob([]byte(key)); got != want {
			t.Errorf("IsTimerBlob(%q) = %v, want %v", key, got, want)
		}
	}
}
