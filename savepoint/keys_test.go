package savepoint

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// Golden vectors of section 2.2 of the format.
func TestFNV1a64KeyGroupGolden(t *testing.T) {
	tests := []struct {
		name string
		key  string // hex
		hash uint64 // 0 = not given in the spec
		kg   int
	}{
		{"int64 0", "0000000000000000", 0xa8c7f832281a39c5, 69},
		{"int64 1", "0100000000000000", 0x89cd31291d2aefa4, 36},
		{"int64 2", "0200000000000000", 0xe6bd86443df8ce07, 7},
		{"int64 7", "0700000000000000", 0x4bd7a317074c5b62, 98},
		{"int64 -1", "ffffffffffffffff", 0x8cf51a8bfca3883d, 61},
		{"int64 42", "2a00000000000000", 0xff3add6b3789daef, 111},
		{"int64 1000000", "40420f0000000000", 0x0e0a0a27a32b9948, 72},
		{"empty string", "", 0xcbf29ce484222325, 37},
		{"a", "61", 0xaf63dc4c8601ec8c, 12},
		{"alpha", "616c706861", 0x8ac625bb85ed202b, 43},
		{"beta", "62657461", 0x7627619b954620a7, 39},
		{"gamma", "67616d6d61", 0x229176bd1f6ba96a, 106},
		{"user-42", "757365722d3432", 0x32c6d7a54d35dacb, 75},
		{"user1", "7573657231", 0, 89},
		// Section 3.3: composite keys of expiring collection states.
		{"expiring map user1 itemA", hex.EncodeToString([]byte("user1\x1fitemA")), 0, 88},
		{"expiring map user1 itemB", hex.EncodeToString([]byte("user1\x1fitemB")), 0, 113},
		{"expiring list user1 seq 0", hex.EncodeToString([]byte("user1\x1f\x00\x00\x00\x00\x00\x00\x00\x00")), 0, 50},
		{"expiring list user1 seq 1", hex.EncodeToString([]byte("user1\x1f\x00\x00\x00\x00\x00\x00\x00\x01")), 0, 101},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := mustHex(t, tc.key)
			if tc.hash != 0 {
				if got := FNV1a64(b); got != tc.hash {
					t.Errorf("FNV1a64 = %016x, want %016x", got, tc.hash)
				}
			}
			if got := KeyGroupOf(b); got != tc.kg {
				t.Errorf("KeyGroupOf = %d, want %d", got, tc.kg)
			}
		})
	}
}

func TestEncodeKeyedKeyGolden(t *testing.T) {
	tests := []struct {
		name    string
		slot    string
		userKey []byte
		want    string
	}{
		{"spec 2.2 counts/alpha", "counts", []byte("alpha"), "2b 636f756e7473 7c 616c706861"},
		{"fixture row 1", "counts", mustHex(t, "0100000000000000"), "24 636f756e7473 7c 0100000000000000"},
		{"fixture row 2", "counts", mustHex(t, "0200000000000000"), "07 636f756e7473 7c 0200000000000000"},
		{"fixture row 7", "counts", mustHex(t, "0700000000000000"), "62 636f756e7473 7c 0700000000000000"},
		{"empty slot empty key", "", nil, "25 7c"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := EncodeKeyedKey([]byte(tc.slot), tc.userKey)
			want := mustHex(t, tc.want)
			if !bytes.Equal(got, want) {
				t.Fatalf("EncodeKeyedKey = %x, want %x", got, want)
			}
			k := ParseKey(got)
			if k.Kind != KindKeyed || k.KeyGroup != int(want[0]) || !k.HasSlot ||
				string(k.Slot) != tc.slot || !bytes.Equal(k.UserKey, tc.userKey) {
				t.Fatalf("ParseKey round trip = %+v", k)
			}
			if k.KeyGroup != KeyGroupOf(k.UserKey) {
				t.Fatalf("stored kg %d != KeyGroupOf(user key) %d", k.KeyGroup, KeyGroupOf(k.UserKey))
			}
		})
	}
}

func TestParseKey(t *testing.T) {
	tests := []struct {
		name     string
		stored   []byte
		kind     Kind
		kg       int
		hasSlot  bool
		slot     string
		userKey  string
		slotName string
	}{
		{"keyed", []byte("\x2bcounts|alpha"), KindKeyed, 43, true, "counts", "alpha", "counts"},
		{"keyed empty slot", []byte("\x05|abc"), KindKeyed, 5, true, "", "abc", ""},
		{"keyed empty user key", []byte("\x05s|"), KindKeyed, 5, true, "s", "", "s"},
		{"keyed user key with pipe", []byte("\x05s|a|b"), KindKeyed, 5, true, "s", "a|b", "s"},
		{"keyed first byte is pipe", []byte("||"), KindKeyed, '|', true, "", "", ""},
		{"keyed non-utf8 slot", []byte("\x7f\xff\xfe|k"), KindKeyed, 127, true, "\xff\xfe", "k", "\xff\xfe"},
		{"operator no pipe", []byte("\xff__kafka_off__:3"), KindOperator, -1, false, "", "__kafka_off__:3", RawSlot},
		{"operator timer blob", []byte("\xff__clink_timers0"), KindOperator, -1, false, "", "__clink_timers0", RawSlot},
		{"operator broadcast", []byte("\xffrules|"), KindOperator, -1, true, "rules", "", "rules"},
		{"operator 0x80", []byte("\x80x"), KindOperator, -1, false, "", "x", RawSlot},
		{"operator marker only", []byte("\xff"), KindOperator, -1, false, "", "", RawSlot},
		{"operator pipe right after marker", []byte("\xff|x"), KindOperator, -1, true, "", "x", ""},
		{"raw empty", []byte{}, KindRaw, -1, false, "", "", RawSlot},
		{"raw nil", nil, KindRaw, -1, false, "", "", RawSlot},
		{"raw one byte", []byte("\x05"), KindRaw, -1, false, "", "\x05", RawSlot},
		{"raw single pipe", []byte("|"), KindRaw, -1, false, "", "|", RawSlot},
		{"raw legacy operator key", []byte("__vector_source_offset__"), KindRaw, -1, false, "", "__vector_source_offset__", RawSlot},
		{"raw inflight buffer", []byte("__broadcast_main_inflight__"), KindRaw, -1, false, "", "__broadcast_main_inflight__", RawSlot},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := ParseKey(tc.stored)
			if k.Kind != tc.kind || k.KeyGroup != tc.kg || k.HasSlot != tc.hasSlot ||
				string(k.Slot) != tc.slot || string(k.UserKey) != tc.userKey {
				t.Fatalf("ParseKey(%q) = %+v, want kind %v kg %d hasSlot %v slot %q user %q",
					tc.stored, k, tc.kind, tc.kg, tc.hasSlot, tc.slot, tc.userKey)
			}
			if !tc.hasSlot && k.Slot != nil {
				t.Errorf("Slot = %q, want nil", k.Slot)
			}
			if got := k.SlotName(); got != tc.slotName {
				t.Errorf("SlotName = %q, want %q", got, tc.slotName)
			}
			want := 0
			if k.Kind == KindKeyed {
				want = len(tc.stored) - len(k.UserKey)
			}
			if got := KeyedPrefixLen(tc.stored); got != want {
				t.Errorf("KeyedPrefixLen = %d, want %d", got, want)
			}
			if kind, slot, has := keySlot(tc.stored); kind != k.Kind || has != k.HasSlot || !bytes.Equal(slot, k.Slot) || (slot == nil) != (k.Slot == nil) || cap(slot) != len(slot) {
				t.Errorf("keySlot = %v %q %v, want %v %q %v as ParseKey", kind, slot, has, k.Kind, k.Slot, k.HasSlot)
			}
		})
	}
}

func TestParseKeySlotCannotGrowIntoKey(t *testing.T) {
	stored := []byte("\x05ab|cd")
	k := ParseKey(stored)
	_ = append(k.Slot, 'X')
	if string(stored) != "\x05ab|cd" {
		t.Fatalf("appending to Slot overwrote the stored key: %q", stored)
	}
}

// CollectEntryKey mirrors clink's collect_entries (section 2.5).
func TestCollectEntryKey(t *testing.T) {
	tests := []struct {
		name   string
		stored string
		kg     int
		slot   string
		user   string
	}{
		{"keyed", "\x2bcounts|alpha", 43, "counts", "alpha"},
		{"empty slot", "\x05|abc", 5, "", "abc"},
		{"operator with pipe shows 255", "\xffrules|", 255, "rules", ""},
		{"operator without pipe is raw with kg 0", "\xff__kafka_off__:0", 0, RawSlot, "\xff__kafka_off__:0"},
		{"raw legacy", "__file_source_offset__", 0, RawSlot, "__file_source_offset__"},
		{"empty", "", 0, RawSlot, ""},
		{"single pipe", "|", 0, RawSlot, "|"},
		{"legacy raw key with pipe is mis-split", "_a|b", '_', "a", "b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kg, slot, user := CollectEntryKey([]byte(tc.stored))
			if kg != tc.kg || slot != tc.slot || string(user) != tc.user {
				t.Fatalf("CollectEntryKey(%q) = %d %q %q, want %d %q %q", tc.stored, kg, slot, user, tc.kg, tc.slot, tc.user)
			}
		})
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{KindKeyed: "keyed", KindOperator: "operator", KindRaw: "raw", Kind(9): "Kind(9)"} {
		t.Run(want, func(t *testing.T) {
			if got := k.String(); got != want {
				t.Fatalf("String = %q, want %q", got, want)
			}
		})
	}
}

func TestValidSlotName(t *testing.T) {
	tests := []struct {
		name    string
		slot    string
		wantErr string // substring; "" = valid
	}{
		{"empty allowed", "", ""},
		{"plain", "counts", ""},
		{"non-utf8 allowed", "\xff\x00\xfe", ""},
		{"raw pseudo name allowed", "<raw>", ""},
		{"cr allowed", "a\r", ""},
		{"pipe", "a|b", "byte 1 is '|'"},
		{"leading pipe", "|", "byte 0 is '|'"},
		{"newline", "ab\n", "byte 2 is '\\n'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidSlotName([]byte(tc.slot))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidSlotName(%q) = %v, want nil", tc.slot, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("ValidSlotName(%q) = %v, want error containing %q", tc.slot, err, tc.wantErr)
			}
		})
	}
}

func TestRestoreKeyGroup(t *testing.T) {
	tests := []struct {
		name     string
		stored   string
		kg       int
		filtered bool
	}{
		{"keyed", "\x24counts|x", 36, true},
		{"kg 0", "\x00s|x", 0, true},
		{"kg 127", "\x7fs|x", 127, true},
		{"operator 0x80", "\x80x", -1, false},
		{"operator 0xff", "\xffx", -1, false},
		{"empty never filtered", "", -1, false},
		{"legacy raw filtered as kg 95", "__vector_source_offset__", 95, true},
		{"one byte", "\x05", 5, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kg, f := RestoreKeyGroup([]byte(tc.stored))
			if kg != tc.kg || f != tc.filtered {
				t.Fatalf("RestoreKeyGroup(%q) = %d, %v; want %d, %v", tc.stored, kg, f, tc.kg, tc.filtered)
			}
		})
	}
}

// Golden ranges of section 2.3.
func TestKeyGroupRangeGolden(t *testing.T) {
	tests := []struct {
		p    int
		want string
	}{
		{1, "[0,128)"},
		{2, "[0,64)[64,128)"},
		{3, "[0,43)[43,86)[86,128)"},
		{4, "[0,32)[32,64)[64,96)[96,128)"},
		{5, "[0,26)[26,52)[52,77)[77,103)[103,128)"},
		{6, "[0,22)[22,43)[43,64)[64,86)[86,107)[107,128)"},
		{7, "[0,19)[19,37)[37,55)[55,74)[74,92)[92,110)[110,128)"},
		{8, "[0,16)[16,32)[32,48)[48,64)[64,80)[80,96)[96,112)[112,128)"},
	}
	for _, tc := range tests {
		t.Run("p="+strconv.Itoa(tc.p), func(t *testing.T) {
			var b strings.Builder
			for i := 0; i < tc.p; i++ {
				b.WriteString(KeyGroupRangeForSubtask(i, tc.p).String())
			}
			if b.String() != tc.want {
				t.Fatalf("ranges = %s, want %s", b.String(), tc.want)
			}
		})
	}
	t.Run("p=256 subtask 1 empty", func(t *testing.T) {
		r := KeyGroupRangeForSubtask(1, 256)
		if r != (KeyGroupRange{1, 1}) || !r.Empty() {
			t.Fatalf("range = %v (empty %v), want [1,1) empty", r, r.Empty())
		}
		if r := KeyGroupRangeForSubtask(0, 256); r != (KeyGroupRange{0, 1}) {
			t.Fatalf("subtask 0 = %v, want [0,1)", r)
		}
	})
	t.Run("p<=0", func(t *testing.T) {
		for _, p := range []int{0, -1} {
			if r := KeyGroupRangeForSubtask(0, p); r != (KeyGroupRange{}) || !r.Empty() {
				t.Fatalf("p=%d range = %v, want [0,0)", p, r)
			}
			if s := SubtaskForKeyGroup(100, p); s != 0 {
				t.Fatalf("p=%d subtask = %d, want 0", p, s)
			}
		}
	})
}

// KeyGroupRangeForSubtask is the exact inverse of SubtaskForKeyGroup, the
// ranges tile [0,128) in order, for every parallelism 1..300.
func TestKeyGroupRangeInverse(t *testing.T) {
	for p := 1; p <= 300; p++ {
		next := 0
		for i := 0; i < p; i++ {
			r := KeyGroupRangeForSubtask(i, p)
			if r.First != next {
				t.Fatalf("p=%d subtask %d range %v does not start at %d", p, i, r, next)
			}
			next = r.Last
			for kg := r.First; kg < r.Last; kg++ {
				if s := SubtaskForKeyGroup(kg, p); s != i {
					t.Fatalf("p=%d kg=%d: SubtaskForKeyGroup = %d, but range of %d is %v", p, kg, s, i, r)
				}
			}
		}
		if next != NumKeyGroups {
			t.Fatalf("p=%d ranges end at %d", p, next)
		}
		for kg := 0; kg < NumKeyGroups; kg++ {
			s := SubtaskForKeyGroup(kg, p)
			if s < 0 || s >= p || !KeyGroupRangeForSubtask(s, p).Contains(kg) {
				t.Fatalf("p=%d kg=%d: owner %d's range %v does not contain it", p, kg, s, KeyGroupRangeForSubtask(s, p))
			}
		}
	}
}

func TestKeyGroupRangeMethods(t *testing.T) {
	r := KeyGroupRange{32, 64}
	for _, tc := range []struct {
		kg   int
		want bool
	}{{31, false}, {32, true}, {63, true}, {64, false}} {
		t.Run(strconv.Itoa(tc.kg), func(t *testing.T) {
			if got := r.Contains(tc.kg); got != tc.want {
				t.Fatalf("Contains(%d) = %v", tc.kg, got)
			}
		})
	}
	if r.Empty() || r.String() != "[32,64)" {
		t.Fatalf("Empty=%v String=%q", r.Empty(), r.String())
	}
	if !(KeyGroupRange{5, 3}).Empty() {
		t.Fatal("inverted range not empty")
	}
}

// PrefixWords reads the first 16 bytes of a prefix of any length, padded
// with zeros, as two little-endian words, whether bytes follow the prefix
// within its capacity (read as words, then masked) or not.
func TestPrefixWords(t *testing.T) {
	b := []byte("0123456789abcdefghij")
	for n := 0; n <= len(b); n++ {
		var pad [16]byte
		copy(pad[:], b[:n])
		for _, p := range [][]byte{b[:n], b[:n:n]} {
			w0, w1 := PrefixWords(p)
			if w0 != binary.LittleEndian.Uint64(pad[:8]) || w1 != binary.LittleEndian.Uint64(pad[8:]) {
				t.Errorf("%d bytes, capacity %d: %#x %#x, want the words of %q", n, cap(p), w0, w1, pad)
			}
		}
	}
}

// keyGroupsIn gives each key of a column KeyGroupOf of its bytes after the
// prefix, for keys of one length (hashed four at once) and of mixed ones.
func TestKeyGroupsIn(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, lengths := range [][]int{{8}, {0}, {1, 8, 8, 8, 3}, {5, 11, 20}} {
		for _, n := range []int{0, 1, 3, 4, 5, 17, 64} {
			const skip = 5
			var keys []byte
			offs := []int32{0}
			for i := range n {
				k := make([]byte, skip+lengths[i%len(lengths)])
				for j := range k {
					k[j] = byte(r.Uint32())
				}
				keys = append(keys, k...)
				offs = append(offs, int32(len(keys)))
			}
			kgs := make([]uint8, n)
			keyGroupsIn(keys, offs, skip, kgs)
			for i := range n {
				if want := KeyGroupOf(keys[offs[i]+skip : offs[i+1]]); int(kgs[i]) != want {
					t.Fatalf("lengths %v, %d keys: key %d in key group %d, want %d", lengths, n, i, kgs[i], want)
				}
			}
		}
	}
}

// BenchmarkKeyGroupsIn is the key groups of a block of keys of one slot
// (a sorted file's run).
func BenchmarkKeyGroupsIn(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	var keys []byte
	offs := []int32{0}
	for range 4096 {
		k := EncodeKeyedKey([]byte("agg"), binary.BigEndian.AppendUint64(nil, r.Uint64()))
		keys = append(keys, k...)
		offs = append(offs, int32(len(keys)))
	}
	kgs := make([]uint8, 4096)
	for b.Loop() {
		keyGroupsIn(keys, offs, 5, kgs)
	}
}
