package savepoint

import (
	"os"
	"strings"
	"testing"
)

const fixtureDir = "../testdata/clink/"

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(fixtureDir + name)
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	return b
}

func TestCRC32CGolden(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want uint32
	}{
		{"empty", "", 0},
		{"a", "a", 0xC1D04330},
		{"123456789", "123456789", 0xE3069283},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := CRC32C([]byte(tc.in)); got != tc.want {
				t.Fatalf("CRC32C = %#08x, want %#08x", got, tc.want)
			}
			h := NewCRC32C()
			for i := 0; i < len(tc.in); i++ { // byte by byte: streaming must agree
				h.Write([]byte{tc.in[i]})
			}
			if got := h.Sum32(); got != tc.want {
				t.Fatalf("streaming CRC32C = %#08x, want %#08x", got, tc.want)
			}
		})
	}
	t.Run("fixture snapshot-v1.snap", func(t *testing.T) {
		b := readFixture(t, "snapshot-v1.snap")
		if len(b) != 704 {
			t.Fatalf("fixture is %d bytes, want 704", len(b))
		}
		if got := CRC32C(b); got != 3978191169 {
			t.Fatalf("CRC32C = %d, want 3978191169", got)
		}
	})
}

func TestSidecarMarshalGolden(t *testing.T) {
	b := readFixture(t, "snapshot-v1.snap")
	s := NewSidecar(7, b)
	want := "clink_checkpoint_meta=1\ncheckpoint_id=7\npayload_bytes=704\npayload_crc32c=3978191169\n"
	if got := string(s.Marshal()); got != want {
		t.Fatalf("Marshal = %q, want %q", got, want)
	}
	back, err := ParseSidecar(s.Marshal())
	if err != nil || back != s {
		t.Fatalf("ParseSidecar(Marshal) = %+v, %v; want %+v", back, err, s)
	}
	t.Run("zero value writes version 1", func(t *testing.T) {
		if got := string((Sidecar{}).Marshal()); got != "clink_checkpoint_meta=1\ncheckpoint_id=0\npayload_bytes=0\npayload_crc32c=0\n" {
			t.Fatalf("Marshal = %q", got)
		}
	})
}

func TestParseSidecarFixture(t *testing.T) {
	s, err := ParseSidecar(readFixture(t, "checkpoint-meta-v1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := Sidecar{Version: 1, CheckpointID: 42, PayloadBytes: 1234, PayloadCRC32C: 3735928559, HasVersion: true}
	if s != want {
		t.Fatalf("ParseSidecar = %+v, want %+v", s, want)
	}
	if s.PayloadCRC32C != 0xDEADBEEF {
		t.Fatalf("crc = %#x", s.PayloadCRC32C)
	}
}

func TestParseSidecar(t *testing.T) {
	const max = "18446744073709551615"
	tests := []struct {
		name    string
		in      string
		want    Sidecar
		wantErr string
	}{
		{"canonical", "clink_checkpoint_meta=1\ncheckpoint_id=7\npayload_bytes=704\npayload_crc32c=3978191169\n",
			Sidecar{1, 7, 704, 3978191169, true}, ""},
		{"no trailing newline", "clink_checkpoint_meta=1\ncheckpoint_id=7", Sidecar{1, 7, 0, 0, true}, ""},
		{"only version, rest default 0", "clink_checkpoint_meta=1", Sidecar{Version: 1, HasVersion: true}, ""},
		{"any order", "payload_crc32c=5\nclink_checkpoint_meta=1\npayload_bytes=3", Sidecar{1, 0, 3, 5, true}, ""},
		{"lines without = ignored", "hello\n\nclink_checkpoint_meta=1\n# comment\n", Sidecar{Version: 1, HasVersion: true}, ""},
		{"unknown keys ignored even if not numeric", "clink_checkpoint_meta=1\nfuture=abc\n", Sidecar{Version: 1, HasVersion: true}, ""},
		{"key is not trimmed", "clink_checkpoint_meta=1\n payload_bytes=9\n", Sidecar{Version: 1, HasVersion: true}, ""},
		{"value split at first =", "clink_checkpoint_meta=1\npayload_bytes=9=3\n", Sidecar{Version: 1, PayloadBytes: 9, HasVersion: true}, ""},
		{"CRLF: trailing CR is junk", "clink_checkpoint_meta=1\r\npayload_bytes=9\r\n", Sidecar{Version: 1, PayloadBytes: 9, HasVersion: true}, ""},
		{"leading whitespace", "clink_checkpoint_meta= \t1\npayload_bytes=\v\f\r12", Sidecar{Version: 1, PayloadBytes: 12, HasVersion: true}, ""},
		{"plus sign", "clink_checkpoint_meta=+1\npayload_bytes=+12", Sidecar{Version: 1, PayloadBytes: 12, HasVersion: true}, ""},
		{"trailing junk", "clink_checkpoint_meta=1abc\npayload_bytes=12 bytes", Sidecar{Version: 1, PayloadBytes: 12, HasVersion: true}, ""},
		{"hex prefix reads as 0", "clink_checkpoint_meta=1\npayload_bytes=0x10", Sidecar{Version: 1, PayloadBytes: 0, HasVersion: true}, ""},
		{"minus wraps around", "clink_checkpoint_meta=1\npayload_bytes=-1", Sidecar{Version: 1, PayloadBytes: 1<<64 - 1, HasVersion: true}, ""},
		{"minus zero", "clink_checkpoint_meta=-0", Sidecar{Version: 0, HasVersion: true}, ""},
		{"minus max", "clink_checkpoint_meta=1\ncheckpoint_id=-" + max, Sidecar{Version: 1, CheckpointID: 1, HasVersion: true}, ""},
		{"max u64", "clink_checkpoint_meta=1\npayload_bytes=" + max, Sidecar{Version: 1, PayloadBytes: 1<<64 - 1, HasVersion: true}, ""},
		{"version truncated to 32 bits", "clink_checkpoint_meta=4294967297", Sidecar{Version: 1, HasVersion: true}, ""},
		{"version minus one is 2^32-1", "clink_checkpoint_meta=-1", Sidecar{Version: 4294967295, HasVersion: true}, ""},
		{"crc truncated to 32 bits", "clink_checkpoint_meta=1\npayload_crc32c=4294967301", Sidecar{Version: 1, PayloadCRC32C: 5, HasVersion: true}, ""},
		{"crc minus one", "clink_checkpoint_meta=1\npayload_crc32c=-1", Sidecar{Version: 1, PayloadCRC32C: 0xFFFFFFFF, HasVersion: true}, ""},
		{"repeated key last wins", "clink_checkpoint_meta=1\npayload_bytes=1\npayload_bytes=2", Sidecar{Version: 1, PayloadBytes: 2, HasVersion: true}, ""},
		{"version 0 parses", "clink_checkpoint_meta=0", Sidecar{Version: 0, HasVersion: true}, ""},
		{"NUL ends the number", "clink_checkpoint_meta=1\npayload_bytes=5\x009", Sidecar{Version: 1, PayloadBytes: 5, HasVersion: true}, ""},

		{"empty input", "", Sidecar{}, "no clink_checkpoint_meta line"},
		{"missing version key", "checkpoint_id=7\npayload_bytes=704\n", Sidecar{}, "no clink_checkpoint_meta line"},
		{"empty value", "clink_checkpoint_meta=1\npayload_bytes=\n", Sidecar{}, `line 2: payload_bytes value "": not a number`},
		{"empty version", "clink_checkpoint_meta=", Sidecar{}, "not a number"},
		{"non-numeric", "clink_checkpoint_meta=one", Sidecar{}, `clink_checkpoint_meta value "one": not a number`},
		{"sign only", "clink_checkpoint_meta=1\ncheckpoint_id=-", Sidecar{}, "not a number"},
		{"space after sign", "clink_checkpoint_meta=1\ncheckpoint_id=- 1", Sidecar{}, "not a number"},
		{"overflow", "clink_checkpoint_meta=1\npayload_bytes=18446744073709551616", Sidecar{}, "out of range"},
		{"negative overflow", "clink_checkpoint_meta=1\npayload_bytes=-18446744073709551616", Sidecar{}, "out of range"},
		{"bad value after version still fails", "clink_checkpoint_meta=1\npayload_crc32c=x", Sidecar{}, "line 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseSidecar([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseSidecar(%q) = %+v, %v; want error containing %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSidecar(%q): %v", tc.in, err)
			}
			if got != tc.want {
				t.Fatalf("ParseSidecar(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	const path = "/ck/v1/0/checkpoint-7.snap"
	good := []byte("clink_checkpoint_meta=1\ncheckpoint_id=7\npayload_bytes=704\npayload_crc32c=3978191169\n")
	tests := []struct {
		name    string
		exists  bool
		size    int64
		crc     uint32
		sidecar []byte
		verdict Verdict
		detail  string // substring; "" = empty detail
		parsed  bool
	}{
		{"valid", true, 704, 3978191169, good, VerdictValid, "", true},
		{"checkpoint id is never checked", true, 704, 3978191169,
			[]byte("clink_checkpoint_meta=1\ncheckpoint_id=999\npayload_bytes=704\npayload_crc32c=3978191169\n"), VerdictValid, "", true},
		{"missing payload wins over everything", false, 0, 0, nil, VerdictMissing, "no payload at " + path, false},
		{"no sidecar", true, 704, 3978191169, nil, VerdictIncomplete, "no integrity sidecar beside " + path, false},
		{"empty sidecar file is corrupt", true, 704, 3978191169, []byte{}, VerdictCorrupt, "unparseable sidecar " + path + ".meta", false},
		{"unparseable sidecar", true, 704, 3978191169, []byte("garbage\n"), VerdictCorrupt, "unparseable sidecar", false},
		{"newer version", true, 1, 2, []byte("clink_checkpoint_meta=2\npayload_bytes=704\n"), VerdictUnsupported,
			"sidecar " + path + ".meta is format version 2; this build understands up to 1", true},
		{"version checked before size", true, 5, 0, []byte("clink_checkpoint_meta=3\n"), VerdictUnsupported, "format version 3", true},
		{"version 0 accepted", true, 704, 3978191169, []byte("clink_checkpoint_meta=0\npayload_bytes=704\npayload_crc32c=3978191169"), VerdictValid, "", true},
		{"size mismatch", true, 700, 3978191169, good, VerdictIncomplete, path + " is 700 bytes, sidecar declares 704", true},
		{"size checked before crc", true, 700, 1, good, VerdictIncomplete, "is 700 bytes", true},
		{"crc mismatch", true, 704, 1, good, VerdictCorrupt, path + " checksum mismatch: computed 1, sidecar declares 3978191169", true},
		{"cannot size", true, -1, 0, good, VerdictCorrupt, "cannot size " + path, true},
		{"zero-byte payload", true, 0, 0, []byte("clink_checkpoint_meta=1\n"), VerdictValid, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, detail, sc := Verify(path, tc.exists, tc.size, tc.crc, tc.sidecar)
			if v != tc.verdict {
				t.Fatalf("verdict = %s (%s), want %s", v, detail, tc.verdict)
			}
			if tc.detail == "" && detail != "" || !strings.Contains(detail, tc.detail) {
				t.Fatalf("detail = %q, want %q", detail, tc.detail)
			}
			if (sc != nil) != tc.parsed {
				t.Fatalf("sidecar = %+v, want parsed %v", sc, tc.parsed)
			}
		})
	}
	t.Run("fixture round trip", func(t *testing.T) {
		b := readFixture(t, "snapshot-v1.snap")
		s := NewSidecar(7, b)
		v, detail, _ := Verify("x.snap", true, int64(len(b)), CRC32C(b), s.Marshal())
		if v != VerdictValid {
			t.Fatalf("verdict %s: %s", v, detail)
		}
	})
}

func FuzzParseSidecar(f *testing.F) {
	f.Add([]byte("clink_checkpoint_meta=1\ncheckpoint_id=7\npayload_bytes=704\npayload_crc32c=3978191169\n"))
	f.Add([]byte("clink_checkpoint_meta=1\ncheckpoint_id=42\npayload_bytes=1234\npayload_crc32c=3735928559\na_key_from_the_future=7\n"))
	f.Add([]byte("clink_checkpoint_meta= -1x\r\npayload_bytes=+5"))
	f.Add([]byte("payload_bytes=1"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSidecar(b)
		if err != nil {
			return
		}
		if !s.HasVersion || s.Version > 0xFFFFFFFF {
			t.Fatalf("parsed sidecar %+v", s)
		}
		back, err := ParseSidecar(s.Marshal())
		if err != nil || back != s {
			t.Fatalf("Marshal round trip: %+v -> %q -> %+v, %v", s, s.Marshal(), back, err)
		}
		// A payload of the declared size and checksum is valid, unless the
		// version is newer or the size is past what a file can have.
		size := int64(s.PayloadBytes & 0x7fffffffffffffff)
		v, detail, got := Verify("p", true, size, s.PayloadCRC32C, b)
		want := VerdictValid
		switch {
		case s.Version > SidecarVersion:
			want = VerdictUnsupported
		case uint64(size) != s.PayloadBytes:
			want = VerdictIncomplete
		}
		if v != want || got == nil || *got != s {
			t.Fatalf("Verify of %q: %s (%s), sidecar %+v; want %s, %+v", b, v, detail, got, want, s)
		}
	})
}
