package savepoint

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Every acceptance rule and edge case of section 4.2.
func TestParseVersionMap(t *testing.T) {
	tests := []struct {
		name    string
		packed  string
		want    []VersionEntry
		pack    string // expected Pack() of the result; "-" = same as packed
		wantErr string // substring of the error; "" = success
	}{
		{name: "empty string", packed: "", want: nil, pack: ""},
		{name: "only newlines", packed: "\n\n", want: nil, pack: ""},
		{name: "three fields", packed: "1|counts|2", want: []VersionEntry{{1, "counts", 2, ""}}, pack: "-"},
		{name: "four fields", packed: "1|counts|2|cnt", want: []VersionEntry{{1, "counts", 2, "cnt"}}, pack: "-"},
		{name: "trailing newline", packed: "1|t|2\n", want: []VersionEntry{{1, "t", 2, ""}}, pack: "1|t|2"},
		{name: "blank lines skipped", packed: "\n1|t|2\n\n3|u|4\n", want: []VersionEntry{{1, "t", 2, ""}, {3, "u", 4, ""}}, pack: "1|t|2\n3|u|4"},
		{name: "version 0 accepted", packed: "1|t|0", want: []VersionEntry{{1, "t", 0, ""}}, pack: "-"},
		{name: "empty state type accepted", packed: "1||2", want: []VersionEntry{{1, "", 2, ""}}, pack: "-"},
		{name: "trailing pipe means no slot", packed: "1|t|2|", want: []VersionEntry{{1, "t", 2, ""}}, pack: "1|t|2"},
		{name: "leading zeros", packed: "007|t|0002", want: []VersionEntry{{7, "t", 2, ""}}, pack: "7|t|2"},
		{name: "max op and version", packed: "18446744073709551615|t|4294967295", want: []VersionEntry{{18446744073709551615, "t", 4294967295, ""}}, pack: "-"},
		{name: "op 0", packed: "0|t|1", want: []VersionEntry{{0, "t", 1, ""}}, pack: "-"},
		{name: "CRLF on 4-field line joins the slot", packed: "1|t|2|s\r\n", want: []VersionEntry{{1, "t", 2, "s\r"}}, pack: "1|t|2|s\r"},
		{name: "CR alone as slot", packed: "1|t|2|\r", want: []VersionEntry{{1, "t", 2, "\r"}}, pack: "-"},
		{name: "CRLF on 3-field line is an invalid version", packed: "1|t|2\r\n", wantErr: `line 1 "1|t|2\r": invalid version "2\r"`},
		{name: "CR in state type kept", packed: "1|t\r|2", want: []VersionEntry{{1, "t\r", 2, ""}}, pack: "-"},
		{name: "sorted by op numerically then type bytewise",
			packed: "10|a|1\n9|b|1\n9|B|1\n9|a|1",
			want:   []VersionEntry{{9, "B", 1, ""}, {9, "a", 1, ""}, {9, "b", 1, ""}, {10, "a", 1, ""}},
			pack:   "9|B|1\n9|a|1\n9|b|1\n10|a|1"},
		{name: "non-ascii state type and slot", packed: "1|\xff\x00|1|\xfe", want: []VersionEntry{{1, "\xff\x00", 1, "\xfe"}}, pack: "-"},

		// Duplicates go through set().
		{name: "duplicate same slot last wins", packed: "1|t|1|s\n1|t|2|s", want: []VersionEntry{{1, "t", 2, "s"}}, pack: "1|t|2|s"},
		{name: "duplicate both slot-less last wins", packed: "1|t|5\n1|t|3", want: []VersionEntry{{1, "t", 3, ""}}, pack: "1|t|3"},
		{name: "slot-less then slotted binds the slot", packed: "1|t|1\n1|t|2|s", want: []VersionEntry{{1, "t", 2, "s"}}, pack: "1|t|2|s"},
		{name: "slotted then slot-less drops the slot", packed: "1|t|1|s\n1|t|2", want: []VersionEntry{{1, "t", 2, ""}}, pack: "1|t|2"},
		{name: "slotted then trailing-pipe drops the slot", packed: "1|t|1|s\n1|t|2|", want: []VersionEntry{{1, "t", 2, ""}}, pack: "1|t|2"},
		{name: "rebinding through a slot-less line is allowed", packed: "1|t|1|a\n1|t|2\n1|t|3|b", want: []VersionEntry{{1, "t", 3, "b"}}, pack: "1|t|3|b"},
		{name: "same type on other op is independent", packed: "1|t|1|a\n2|t|1|b", want: []VersionEntry{{1, "t", 1, "a"}, {2, "t", 1, "b"}}, pack: "-"},
		{name: "conflicting slot", packed: "1|t|1|a\n1|t|2|b", wantErr: `line 2 "1|t|2|b": state_type "t" is already bound to slot "a"`},
		{name: "conflicting slot CRLF", packed: "1|t|1|a\r\n1|t|1|a", wantErr: `line 2 "1|t|1|a": state_type "t" is already bound to slot "a\r"`},

		// Rejections.
		{name: "no pipe", packed: "garbage", wantErr: `line 1 "garbage": missing '|' separator in line`},
		{name: "one pipe", packed: "1|t", wantErr: "missing second '|' separator"},
		{name: "five fields", packed: "1|t|2|s|x", wantErr: "too many '|' separators in line"},
		{name: "five fields empty slot", packed: "1|t|2||", wantErr: "too many '|' separators in line"},
		{name: "empty op", packed: "|t|2", wantErr: `invalid op_id ""`},
		{name: "signed op", packed: "+1|t|2", wantErr: "invalid op_id"},
		{name: "negative op", packed: "-1|t|2", wantErr: "invalid op_id"},
		{name: "space before op", packed: " 1|t|2", wantErr: "invalid op_id"},
		{name: "space after op", packed: "1 |t|2", wantErr: "invalid op_id"},
		{name: "hex op", packed: "0x1|t|2", wantErr: "invalid op_id"},
		{name: "op overflow", packed: "18446744073709551616|t|2", wantErr: "invalid op_id"},
		{name: "empty version", packed: "1|t|", wantErr: `invalid version ""`},
		{name: "empty version with slot", packed: "1|t||s", wantErr: `invalid version ""`},
		{name: "signed version", packed: "1|t|+2", wantErr: "invalid version"},
		{name: "negative version", packed: "1|t|-2", wantErr: "invalid version"},
		{name: "version overflow", packed: "1|t|4294967296", wantErr: "invalid version"},
		{name: "version trailing space", packed: "1|t|2 ", wantErr: "invalid version"},
		{name: "version decimal point", packed: "1|t|1.0", wantErr: "invalid version"},
		{name: "error names the line number after blank lines", packed: "1|t|1\n\n\nbad", wantErr: `line 4 "bad"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseVersionMap(tc.packed)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseVersionMap(%q) = %v, want error containing %q", tc.packed, m.Entries(), tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "parse version map line ") {
					t.Fatalf("error = %q, want it to contain %q", err, tc.wantErr)
				}
				if m.Len() != 0 {
					t.Fatalf("failed parse returned %d entries", m.Len())
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseVersionMap(%q): %v", tc.packed, err)
			}
			if got := m.Entries(); !slices.Equal(got, tc.want) {
				t.Fatalf("entries = %+v, want %+v", got, tc.want)
			}
			if m.Len() != len(tc.want) {
				t.Fatalf("Len = %d, want %d", m.Len(), len(tc.want))
			}
			wantPack := tc.pack
			if wantPack == "-" {
				wantPack = tc.packed
			}
			if got := m.Pack(); got != wantPack {
				t.Fatalf("Pack = %q, want %q", got, wantPack)
			}
			m2, err := ParseVersionMap(m.Pack())
			if err != nil || !m2.Equal(m) {
				t.Fatalf("re-parse of Pack: %v, equal %v", err, m2.Equal(m))
			}
		})
	}
}

func TestParseVersionMapConflictIsErrSlotConflict(t *testing.T) {
	_, err := ParseVersionMap("1|t|1|a\n1|t|2|b")
	if !errors.Is(err, ErrSlotConflict) {
		t.Fatalf("error %v does not wrap ErrSlotConflict", err)
	}
}

func TestVersionMapZeroValue(t *testing.T) {
	var m VersionMap
	if m.Len() != 0 || m.Pack() != "" || len(m.Entries()) != 0 || m.String() != "" {
		t.Fatal("zero value is not empty")
	}
	if _, ok := m.Get(1, "t"); ok {
		t.Fatal("Get on zero value found an entry")
	}
	if m.Delete(1, "t") {
		t.Fatal("Delete on zero value reported a deletion")
	}
	if !m.Equal(VersionMap{}) {
		t.Fatal("zero values not Equal")
	}
	empty, _ := ParseVersionMap("")
	if !m.Equal(empty) {
		t.Fatal("zero value not Equal to parsed empty map")
	}
	if err := m.Set(VersionEntry{Op: 1, StateType: "t", Version: 2}); err != nil {
		t.Fatal(err)
	}
	if m.Pack() != "1|t|2" {
		t.Fatalf("Pack = %q", m.Pack())
	}
}

func TestVersionMapSet(t *testing.T) {
	base := func() VersionMap {
		m, err := ParseVersionMap("1|a|1|sa\n1|b|1")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	tests := []struct {
		name    string
		e       VersionEntry
		pack    string
		wantErr string
	}{
		{"new entry", VersionEntry{2, "c", 3, "x"}, "1|a|1|sa\n1|b|1\n2|c|3|x", ""},
		{"bump same slot", VersionEntry{1, "a", 2, "sa"}, "1|a|2|sa\n1|b|1", ""},
		{"bump empty slot unbinds", VersionEntry{1, "a", 2, ""}, "1|a|2\n1|b|1", ""},
		{"bind slot-less entry", VersionEntry{1, "b", 2, "sb"}, "1|a|1|sa\n1|b|2|sb", ""},
		{"different slot conflicts", VersionEntry{1, "a", 2, "other"}, "", `state_type "a" is already bound to slot "sa"`},
		{"pipe in type", VersionEntry{1, "a|b", 1, ""}, "", "state_type \"a|b\" must not contain"},
		{"newline in type", VersionEntry{1, "a\nb", 1, ""}, "", "must not contain"},
		{"pipe in slot", VersionEntry{1, "c", 1, "x|y"}, "", "slot \"x|y\" must not contain"},
		{"newline in slot", VersionEntry{1, "c", 1, "x\n"}, "", "must not contain"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := base()
			err := m.Set(tc.e)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Set = %v, want error containing %q", err, tc.wantErr)
				}
				if !m.Equal(base()) {
					t.Fatalf("failed Set changed the map: %q", m.Pack())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Pack() != tc.pack {
				t.Fatalf("Pack = %q, want %q", m.Pack(), tc.pack)
			}
		})
	}
}

func TestVersionMapPut(t *testing.T) {
	m, _ := ParseVersionMap("1|a|1|sa")
	if err := m.Put(VersionEntry{1, "a", 5, "other"}); err != nil {
		t.Fatalf("Put rebinding: %v", err)
	}
	if m.Pack() != "1|a|5|other" {
		t.Fatalf("Pack = %q", m.Pack())
	}
	for _, e := range []VersionEntry{{1, "a|", 1, ""}, {1, "a", 1, "\n"}} {
		t.Run(e.StateType+e.Slot, func(t *testing.T) {
			if err := m.Put(e); err == nil || !strings.Contains(err.Error(), "must not contain") {
				t.Fatalf("Put(%+v) = %v", e, err)
			}
		})
	}
}

func TestVersionMapGetDelete(t *testing.T) {
	m, _ := ParseVersionMap("1|a|1|sa\n1|b|2\n3|a|4")
	if e, ok := m.Get(1, "a"); !ok || e != (VersionEntry{1, "a", 1, "sa"}) {
		t.Fatalf("Get(1,a) = %+v %v", e, ok)
	}
	if _, ok := m.Get(2, "a"); ok {
		t.Fatal("Get(2,a) found")
	}
	if !m.Delete(1, "b") || m.Delete(1, "b") {
		t.Fatal("Delete(1,b) twice")
	}
	if m.Pack() != "1|a|1|sa\n3|a|4" {
		t.Fatalf("Pack = %q", m.Pack())
	}
}

func TestVersionMapValueSemantics(t *testing.T) {
	m, _ := ParseVersionMap("1|a|1|sa\n1|b|2\n3|a|4")
	orig := m.Pack()
	mutations := map[string]func(c *VersionMap){
		"Set":        func(c *VersionMap) { _ = c.Set(VersionEntry{1, "a", 9, "sa"}) },
		"Put":        func(c *VersionMap) { _ = c.Put(VersionEntry{1, "b", 9, ""}) },
		"Delete":     func(c *VersionMap) { c.Delete(1, "a") },
		"RenameSlot": func(c *VersionMap) { c.RenameSlot(1, "sa", "x") },
		"RemapOp":    func(c *VersionMap) { _ = c.RemapOp(1, 7) },
		"Entries":    func(c *VersionMap) { c.Entries()[0].Version = 99 },
	}
	for name, f := range mutations {
		t.Run(name, func(t *testing.T) {
			c := m
			f(&c)
			if m.Pack() != orig {
				t.Fatalf("mutating a copy changed the original: %q", m.Pack())
			}
		})
	}
}

func TestVersionMapRenameSlot(t *testing.T) {
	tests := []struct {
		name     string
		op       uint64
		from, to string
		n        int
		pack     string
	}{
		{"renames entries of the op", 1, "s", "t", 2, "1|a|1|t\n1|b|1|t\n1|c|1\n2|a|1|s"},
		{"other op untouched", 3, "s", "t", 0, "1|a|1|s\n1|b|1|s\n1|c|1\n2|a|1|s"},
		{"unknown slot", 1, "zz", "t", 0, "1|a|1|s\n1|b|1|s\n1|c|1\n2|a|1|s"},
		{"empty from never matches slot-less entries", 1, "", "t", 0, "1|a|1|s\n1|b|1|s\n1|c|1\n2|a|1|s"},
		{"invalid to refused", 1, "s", "t|u", 0, "1|a|1|s\n1|b|1|s\n1|c|1\n2|a|1|s"},
		{"to empty unbinds", 2, "s", "", 1, "1|a|1|s\n1|b|1|s\n1|c|1\n2|a|1"},
		{"same name", 1, "s", "s", 0, "1|a|1|s\n1|b|1|s\n1|c|1\n2|a|1|s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseVersionMap("1|a|1|s\n1|b|1|s\n1|c|1\n2|a|1|s")
			if err != nil {
				t.Fatal(err)
			}
			if n := m.RenameSlot(tc.op, tc.from, tc.to); n != tc.n {
				t.Fatalf("RenameSlot = %d, want %d", n, tc.n)
			}
			if m.Pack() != tc.pack {
				t.Fatalf("Pack = %q, want %q", m.Pack(), tc.pack)
			}
		})
	}
}

func TestVersionMapRemapOp(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		from, to uint64
		pack     string
		wantErr  string
	}{
		{"move", "1|a|1|s\n1|b|2\n5|c|1", 1, 9, "5|c|1\n9|a|1|s\n9|b|2", ""},
		{"move to lower op", "5|a|1\n7|b|2", 7, 1, "1|b|2\n5|a|1", ""},
		{"absent from op", "1|a|1", 2, 3, "1|a|1", ""},
		{"same op", "1|a|1", 1, 1, "1|a|1", ""},
		{"merge identical entry", "1|a|1|s\n2|a|1|s\n2|z|3", 1, 2, "2|a|1|s\n2|z|3", ""},
		{"conflicting version", "1|a|1\n2|a|2", 1, 2, "1|a|1\n2|a|2", `state_type "a" is already stamped on op 2 with version 2`},
		{"conflicting slot", "1|a|1|x\n2|a|1|y", 1, 2, "1|a|1|x\n2|a|1|y", `slot "y"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseVersionMap(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			err = m.RemapOp(tc.from, tc.to)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("RemapOp = %v, want error containing %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if m.Pack() != tc.pack {
				t.Fatalf("Pack = %q, want %q", m.Pack(), tc.pack)
			}
		})
	}
}

func TestVersionMapEqual(t *testing.T) {
	a, _ := ParseVersionMap("2|b|1\n1|a|1|s")
	b, _ := ParseVersionMap("1|a|1|s\n2|b|1\n")
	c, _ := ParseVersionMap("1|a|1\n2|b|1")
	if !a.Equal(b) || a.Equal(c) || c.Equal(a) {
		t.Fatalf("Equal: a=b %v a=c %v", a.Equal(b), a.Equal(c))
	}
}

func FuzzParseVersionMap(f *testing.F) {
	for _, s := range []string{
		"", "\n", "1|t|2", "1|t|2|s", "1|t|2|s\r\n", "1|t|2\r\n", "1||0", "1|t|2|",
		"007|t|0002", "1|t|1|a\n1|t|2\n1|t|3|b", "1|t|1|a\n1|t|2|b", "1|t|2|s|x",
		"18446744073709551615|t|4294967295", "10|a|1\n9|b|1\n9|B|1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseVersionMap(s)
		// The documented acceptance: each non-empty line parsed and Set in
		// order, stopping at the first line that fails.
		var ref VersionMap
		refNo := 0
		for no, line := range textLines(s) {
			e, lerr := parseVersionLine(line)
			if lerr == nil {
				lerr = ref.Set(e)
			}
			if lerr != nil {
				refNo = no
				break
			}
		}
		if refNo != 0 {
			if want := fmt.Sprintf("parse version map line %d ", refNo); err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("ParseVersionMap(%q): %v, want an error starting %q", s, err, want)
			}
			return
		}
		if err != nil || !m.Equal(ref) {
			t.Fatalf("ParseVersionMap(%q) = %q, %v; Set line by line gives %q", s, m.Pack(), err, ref.Pack())
		}
		packed := m.Pack()
		m2, err := ParseVersionMap(packed)
		if err != nil {
			t.Fatalf("re-parse of %q (from %q): %v", packed, s, err)
		}
		if !m2.Equal(m) || m2.Pack() != packed {
			t.Fatalf("unstable: %q -> %q -> %q", s, packed, m2.Pack())
		}
		for _, e := range m.Entries() {
			if got, ok := m.Get(e.Op, e.StateType); !ok || got != e {
				t.Fatalf("Get(%d,%q) = %+v %v", e.Op, e.StateType, got, ok)
			}
		}
	})
}
