package savepoint

import (
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"strconv"
	"strings"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32C returns the CRC-32C (Castagnoli, reflected polynomial 0x82F63B78,
// init and final xor ^0) of b, the checksum of clink's integrity sidecars.
func CRC32C(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// NewCRC32C returns a streaming CRC-32C hash (see CRC32C).
func NewCRC32C() hash.Hash32 { return crc32.New(castagnoli) }

// SidecarVersion is the sidecar format version clink writes and the highest
// one it reads (kCheckpointMetaVersion).
const SidecarVersion = 1

// SidecarSuffix is appended to a payload path to name its integrity sidecar.
const SidecarSuffix = ".meta"

// Sidecar is the content of a checkpoint-<id>.snap.meta integrity sidecar
// (clink's CheckpointMeta, section 5.2 of the format).
type Sidecar struct {
	// Version is the clink_checkpoint_meta value. clink reads it as a
	// uint32 (std::stoul then a cast), so it never exceeds 2^32-1.
	Version uint64
	// CheckpointID is never checked against the payload's file name.
	CheckpointID uint64
	// PayloadBytes is the declared payload size.
	PayloadBytes uint64
	// PayloadCRC32C is the declared CRC-32C of the whole payload.
	PayloadCRC32C uint32
	// HasVersion reports that the clink_checkpoint_meta key was present
	// (always true for a parsed sidecar).
	HasVersion bool
}

// NewSidecar returns the sidecar clink would write for payload as
// checkpoint checkpointID (version 1).
func NewSidecar(checkpointID uint64, payload []byte) Sidecar {
	return Sidecar{
		Version:       SidecarVersion,
		CheckpointID:  checkpointID,
		PayloadBytes:  uint64(len(payload)),
		PayloadCRC32C: CRC32C(payload),
		HasVersion:    true,
	}
}

// Marshal returns the sidecar text exactly as clink's serialise() writes it:
//
//	clink_checkpoint_meta=<version>
//	checkpoint_id=<id>
//	payload_bytes=<size>
//	payload_crc32c=<crc, unsigned decimal>
//
// each line ending in '\n'. The version written is s.Version when
// HasVersion is set, else 1 (so a zero Sidecar marshals as version 1).
func (s Sidecar) Marshal() []byte {
	v := uint64(SidecarVersion)
	if s.HasVersion {
		v = s.Version
	}
	b := make([]byte, 0, 96)
	b = append(b, "clink_checkpoint_meta="...)
	b = strconv.AppendUint(b, v, 10)
	b = append(b, "\ncheckpoint_id="...)
	b = strconv.AppendUint(b, s.CheckpointID, 10)
	b = append(b, "\npayload_bytes="...)
	b = strconv.AppendUint(b, s.PayloadBytes, 10)
	b = append(b, "\npayload_crc32c="...)
	b = strconv.AppendUint(b, uint64(s.PayloadCRC32C), 10)
	return append(b, '\n')
}

// isCSpace reports whether c is whitespace for C's isspace in the "C" locale.
func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// parseStoull parses s as std::stoul/std::stoull do on LP64 (strtoul base
// 10): leading whitespace skipped, an optional '+' or '-', then at least one
// decimal digit; anything after the digits is ignored. A '-' negates modulo
// 2^64 ("-1" is 2^64-1). No digits, or a magnitude above 2^64-1, is an error.
func parseStoull(s string) (uint64, error) {
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	start := i
	var v uint64
	overflow := false
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		d := uint64(s[i] - '0')
		if v > (^uint64(0)-d)/10 {
			overflow = true
		}
		v = v*10 + d
	}
	if i == start {
		return 0, errors.New("not a number")
	}
	if overflow {
		return 0, errors.New("out of range")
	}
	if neg {
		v = -v
	}
	return v, nil
}

// ParseSidecar parses sidecar text with the leniency of clink's
// CheckpointMeta::parse: the text is split on '\n'; lines without '=' and
// unknown keys are ignored; a repeated key takes its last value; values are
// read with std::stoul/stoull semantics (leading whitespace, an optional
// sign with '-' wrapping around modulo 2^64, and trailing junk such as a
// '\r' are accepted; an empty or non-numeric value, or one above 2^64-1, is
// an error); clink_checkpoint_meta and payload_crc32c are truncated to 32
// bits as clink's casts do. The clink_checkpoint_meta key is required;
// missing checkpoint_id, payload_bytes or payload_crc32c read as 0.
func ParseSidecar(b []byte) (Sidecar, error) {
	var s Sidecar
	text := string(b)
	lineNo := 0
	for pos := 0; pos < len(text); {
		lineNo++
		eol := strings.IndexByte(text[pos:], '\n')
		if eol < 0 {
			eol = len(text)
		} else {
			eol += pos
		}
		line := text[pos:eol]
		pos = eol + 1
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		var dst *uint64
		var crc bool
		switch key {
		case "clink_checkpoint_meta":
			dst = &s.Version
		case "checkpoint_id":
			dst = &s.CheckpointID
		case "payload_bytes":
			dst = &s.PayloadBytes
		case "payload_crc32c":
			crc = true
		default:
			continue
		}
		v, err := parseStoull(value)
		if err != nil {
			return Sidecar{}, fmt.Errorf("parse sidecar line %d: %s value %q: %w", lineNo, key, value, err)
		}
		switch {
		case crc:
			s.PayloadCRC32C = uint32(v)
		case key == "clink_checkpoint_meta":
			*dst = uint64(uint32(v))
			s.HasVersion = true
		default:
			*dst = v
		}
	}
	if !s.HasVersion {
		return Sidecar{}, errors.New("parse sidecar: no clink_checkpoint_meta line")
	}
	return s, nil
}

// Verdict is clink's integrity verdict for a checkpoint payload
// (CheckpointStatus, written in lower case as clink's to_string does).
type Verdict string

// The verdicts of verify_checkpoint.
const (
	// VerdictValid: size and checksum agree with the sidecar.
	VerdictValid Verdict = "valid"
	// VerdictMissing: no payload. Not an error for restore (empty state).
	VerdictMissing Verdict = "missing"
	// VerdictIncomplete: no sidecar, or the size disagrees (an unfinished write).
	VerdictIncomplete Verdict = "incomplete"
	// VerdictCorrupt: the sidecar is unreadable, or the checksum disagrees.
	VerdictCorrupt Verdict = "corrupt"
	// VerdictUnsupported: the sidecar is from a newer format version.
	VerdictUnsupported Verdict = "unsupported"
)

// VerdictError is the error of a payload refused for its integrity verdict
// (Open with OpenOptions.RequireValid, transform.Run): errors.As gives the
// payload and its verdict to a caller that tells, say, a damaged file
// (VerdictCorrupt) from one without a sidecar (VerdictIncomplete).
type VerdictError struct {
	Path    string  // the payload
	Verdict Verdict // never VerdictValid
	Detail  string  // what disagrees (File.VerdictDetail)
	Note    string  // what the refusal means, or what to do, appended to the message
	// NoSidecar says the payload was refused for want of a sidecar, which
	// OpenOptions.AllowMissingSidecar accepts.
	NoSidecar bool
	// Unread says the sidecar was too large for sptool to read: clink,
	// which reads past keys it does not know, may restore the payload.
	Unread bool
	// Hint, when not empty, follows the message in parentheses: how the
	// caller's user accepts the payload (sptool's --allow-unverified, for
	// one without a sidecar).
	Hint string
}

func (e *VerdictError) Error() string {
	refuses := "clink would refuse to restore it"
	if e.Unread {
		refuses = "sptool does not read the sidecar" // (the detail says what clink may do)
	}
	msg := fmt.Sprintf("%s: integrity check %s: %s; %s%s", e.Path, e.Verdict, e.Detail, refuses, e.Note)
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// Verify applies the order of clink's verify_checkpoint to facts the caller
// has already gathered about the payload at payloadPath:
//
//   - payloadExists false: Missing;
//   - sidecar nil (no sidecar file): Incomplete, "no integrity sidecar
//     beside <path> ...";
//   - sidecar unparseable: Corrupt;
//   - sidecar version above 1: Unsupported;
//   - size < 0 (the caller could not size the payload, e.g. it is a
//     directory): Corrupt, "cannot size <path>";
//   - size differs from payload_bytes: Incomplete;
//   - crc differs from payload_crc32c: Corrupt;
//   - otherwise Valid with an empty detail.
//
// An existing but empty sidecar file must be passed as a non-nil empty
// slice (it is Corrupt, not Incomplete). The detail explains a non-Valid
// verdict with the numbers involved, in clink's wording. The returned
// sidecar is non-nil whenever it parsed.
func Verify(payloadPath string, payloadExists bool, size int64, crc uint32, sidecar []byte) (Verdict, string, *Sidecar) {
	if !payloadExists {
		return VerdictMissing, "no payload at " + ShowName(payloadPath), nil
	}
	metaPath := ShowName(payloadPath + SidecarSuffix)
	if sidecar == nil {
		return VerdictIncomplete, "no integrity sidecar beside " + ShowName(payloadPath) +
			" - the checkpoint was never published (or predates integrity metadata)", nil
	}
	meta, err := ParseSidecar(sidecar)
	if err != nil {
		return VerdictCorrupt, "unparseable sidecar " + metaPath + ": " + err.Error(), nil
	}
	if meta.Version > SidecarVersion {
		return VerdictUnsupported, fmt.Sprintf("sidecar %s is format version %d; this build understands up to %d",
			metaPath, meta.Version, SidecarVersion), &meta
	}
	if size < 0 {
		return VerdictCorrupt, "cannot size " + ShowName(payloadPath), &meta
	}
	if uint64(size) != meta.PayloadBytes {
		return VerdictIncomplete, fmt.Sprintf("%s is %d bytes, sidecar declares %d", ShowName(payloadPath), size, meta.PayloadBytes), &meta
	}
	if crc != meta.PayloadCRC32C {
		return VerdictCorrupt, fmt.Sprintf("%s checksum mismatch: computed %d, sidecar declares %d",
			ShowName(payloadPath), crc, meta.PayloadCRC32C), &meta
	}
	return VerdictValid, "", &meta
}
