package rules

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/bits"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"go.yaml.in/yaml/v3"

	"github.com/sptool/sptool/internal/prefault"
)

// maxKeyErrors bounds the invalid lines of one keys file reported one by
// one; the rest are counted.
const maxKeyErrors = 10

// loadKeysFile reads spec.KeysFile (relative to ParseOptions.Dir): one key
// per line, blank lines and lines starting with '#' skipped (a string list
// warns of a skipped line of one word, which may be a key), CRLF line ends
// and a UTF-8 byte order mark tolerated. String keys are the line's bytes
// exactly (leading and trailing blanks included, with a warning); integer
// keys (int64, uint64, uint32) are decimal, surrounding blanks ignored,
// parsed strictly within the codec's range, and encoded little-endian (8
// bytes, or 4 for uint32). n is the 'keys_file' value node.
//
// It checks every line and builds the list's filter; it returns the
// file's text, how many keys it holds and, for a string list, whether
// every key is a decimal integer (numeric), which collectKeys makes the
// list's keys of once the walk of the rule file is done (see
// finishPurges): the filter is ready for a probe (ParseOptions.KeysReady)
// before the list's keys and their index are. An integer list's keys are
// kept encoded (spec.encoded) and their lines (spec.Lines) as they are
// parsed.
func (p *parser) loadKeysFile(n *yaml.Node, spec *PurgeKeysSpec) (text string, keys int, numeric, ok bool) {
	path := spec.KeysFile
	if !filepath.IsAbs(path) {
		path = filepath.Join(p.opts.Dir, path)
	}
	spec.Path = path
	data, err := p.opts.ReadFile(path)
	if err != nil {
		before := len(p.errs)
		p.errAt(n, "keys_file", "read keys file %q: %v", spec.KeysFile, err)
		if len(p.errs) > before {
			p.errs[before].Err = err // (errors.Is: a missing file)
		}
		return "", 0, false, false
	}
	sum := sha256.Sum256(data)
	spec.FileDigest = hex.EncodeToString(sum[:])
	data = bytes.TrimPrefix(data, utf8BOM)
	if !p.keysTextOK(n, spec, data) {
		return "", 0, false, false
	}
	most := bytes.Count(data, []byte{'\n'}) + 1 // keys, at most
	spec.initFilter(most)
	// data is never written again: string keys are substrings of it.
	text = unsafe.String(unsafe.SliceData(data), len(data))
	width := spec.KeyWidth()
	isInt := width > 0
	var encoded []byte // an integer list's keys, encoded, and their lines
	var lineOf []int
	if isInt {
		// Kept as they are parsed, for collectKeys: a second parse of
		// the text took 4-5 ms of CPU for 100,000 keys, while the pass
		// at open needed both cores.
		encoded, lineOf = make([]byte, 0, width*most), make([]int, 0, most)
		prefault.Slice(encoded)
		prefault.Slice(lineOf)
	}
	numeric = !isInt
	bad, wsLine, wsLines, crLine, crLines := 0, 0, 0, 0, 0
	hashLine, hashLines := 0, 0
	// A comment of one word ("#anna") may be a key that starts with '#'
	// (a hashtag, a handle): a string list that skips it says so, by its
	// line alone (a warning goes into the report, which names no key
	// under --audit-keys sha256 or hmac-sha256).
	var comment func(int, string)
	if !isInt {
		comment = func(line int, t string) {
			if len(t) > 1 && !strings.ContainsAny(t, " \t") {
				if hashLines++; hashLine == 0 {
					hashLine = line
				}
			}
		}
	}
	// record adds an integer key, given as its bits.
	var record func(line int, v uint64)
	switch width {
	case 8:
		record = func(line int, v uint64) {
			spec.filter.addHash(keyHash8(v))
			spec.filter.addExact(bits.ReverseBytes64(v), true)
			encoded = binary.LittleEndian.AppendUint64(encoded, v)
			lineOf = append(lineOf, line)
			keys++
		}
	case 4:
		record = func(line int, v uint64) {
			enc := intKey(v, 4)
			spec.filter.add(enc)
			encoded = append(encoded, enc...)
			lineOf = append(lineOf, line)
			keys++
		}
	}
	// The lines of an int64 list in their plainest form are read in one
	// pass (plainInt64); the other integer codecs' lines are parsed one
	// by one (their keys are never negative).
	var plain func(line int, v int64)
	if spec.Codec == "int64" {
		plain = func(line int, v int64) { record(line, uint64(v)) }
	}
	lines := scanKeyLines(text, plain, func(line int, ln, t string) {
		if !isInt {
			// A carriage return has a warning of its own: a line of
			// blanks around the key besides is one of these too.
			if len(t) != len(strings.Trim(ln, "\r")) {
				if wsLines++; wsLine == 0 {
					wsLine = line
				}
			}
			if strings.IndexByte(ln, '\r') >= 0 {
				if crLines++; crLine == 0 {
					crLine = line
				}
			}
			if numeric {
				numeric = decimalInteger(t)
			}
			spec.filter.add(ln)
			keys++
			return
		}
		v, why, hint := parseIntKey(t, spec.Codec)
		if why != "" {
			bad++
			if bad <= maxKeyErrors {
				if strings.HasPrefix(why, "not a decimal") {
					why = "not a decimal integer"
				}
				p.keysErr(n, path, line, strings.Index(ln, t)+1, fmt.Sprintf("invalid %s key %q: %s%s", spec.Codec, t, why, hint))
			}
			return
		}
		record(line, v)
	}, comment)
	if isInt && bad == 0 {
		spec.encoded, spec.Lines = encoded, lineOf
	}
	if bad > maxKeyErrors {
		p.keysErr(n, path, lines, 1, fmt.Sprintf("%d more invalid %s keys not listed (%d in all)", bad-maxKeyErrors, spec.Codec, bad))
	}
	switch {
	case wsLines == 1:
		p.warnAt(n, "keys file %q line %d starts or ends with blanks, which are part of the key", spec.KeysFile, wsLine)
	case wsLines > 1:
		p.warnAt(n, "keys file %q: %d lines start or end with blanks, which are part of their keys (the first: line %d)", spec.KeysFile, wsLines, wsLine)
	}
	if crLines > 0 {
		p.warnAt(n, "keys file %q: %d key(s) hold a carriage return (the first: line %d), which is part of the key: keys are read one a line, ended by LF or CRLF; a file whose lines end in CR alone reads as one key", spec.KeysFile, crLines, crLine)
	}
	switch {
	case hashLines == 1:
		p.warnAt(n, "keys file %q line %d starts with '#' and holds one word: it is a comment, not a key; list a key that starts with '#' in 'keys:', or write the comment with a blank after the '#'", spec.KeysFile, hashLine)
	case hashLines > 1:
		p.warnAt(n, "keys file %q: %d lines of one word start with '#' (the first: line %d): they are comments, not keys; list keys that start with '#' in 'keys:', or write the comments with a blank after the '#'", spec.KeysFile, hashLines, hashLine)
	}
	return text, keys, numeric && keys > 0, bad == 0
}

var utf8BOM = []byte("\xef\xbb\xbf")

// keysTextOK checks that data, a keys file after its UTF-8 byte order
// mark, reads as lines of UTF-8 text. A UTF-16 file (its byte order mark
// first) is refused: every key would hold NUL bytes and match nothing, and
// the erasure report nothing found. Of a string list it warns of the first
// key holding a NUL byte (UTF-16 without a mark, or a binary file), of the
// first one that is not valid UTF-8, and of a second byte order mark,
// which is part of the first key, or else of the first line after the
// first that starts with one (keys files joined): such keys are matched as
// their bytes, most likely against none.
func (p *parser) keysTextOK(n *yaml.Node, spec *PurgeKeysSpec, data []byte) bool {
	if bytes.HasPrefix(data, []byte{0xff, 0xfe}) || bytes.HasPrefix(data, []byte{0xfe, 0xff}) {
		p.errAt(n, "keys_file", "keys file %q is UTF-16 (it starts with the byte order mark %X): keys are read as lines of UTF-8 text; save it as UTF-8", spec.KeysFile, data[:2])
		return false
	}
	if spec.KeyWidth() > 0 {
		return true // a key that is not a decimal number is an error
	}
	lineOf := func(i int) int { return bytes.Count(data[:i], []byte{'\n'}) + 1 }
	if i := bytes.IndexByte(data, 0); i >= 0 {
		p.warnAt(n, "keys file %q line %d holds a NUL byte: is the file UTF-16 or binary? keys are read as lines of UTF-8 text, and matched as their bytes", spec.KeysFile, lineOf(i))
	}
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			i += size
		}
		p.warnAt(n, "keys file %q line %d is not valid UTF-8 (byte %#x): is the file in another encoding? its keys are matched as their bytes", spec.KeysFile, lineOf(i), data[i])
	}
	if bytes.HasPrefix(data, utf8BOM) {
		p.warnAt(n, "keys file %q starts with two UTF-8 byte order marks: the second is part of the first key", spec.KeysFile)
	} else if i := bytes.Index(data, append([]byte{'\n'}, utf8BOM...)); i >= 0 {
		p.warnAt(n, "keys file %q line %d starts with a UTF-8 byte order mark (files joined with cat?): it is part of that line's key, which is matched as its bytes, most likely against none", spec.KeysFile, lineOf(i+1))
	}
	return true
}

// collectKeys sets the list's Keys and Lines to the keys of text, a keys
// file that loadKeysFile read (without an invalid line) and found count
// keys in, repeats included. The filter is not written. An integer list's
// keys are those loadKeysFile encoded, end to end in one buffer (one
// allocation instead of one a key), which their strings share.
func (s *PurgeKeysSpec) collectKeys(text string, count int) {
	s.Keys = make([]string, 0, count)
	prefault.Slice(s.Keys)
	if w := s.KeyWidth(); w > 0 {
		for i := 0; i+w <= len(s.encoded); i += w {
			s.Keys = append(s.Keys, unsafe.String(&s.encoded[i], w))
		}
		return
	}
	s.Lines = make([]int, 0, count)
	prefault.Slice(s.Lines)
	eachKeyLine(text, func(line int, ln, _ string) { s.collect(ln, line) }, nil)
}

// eachKeyLine calls fn for each line of a keys file's text that holds a
// key, in order: its 1-based number, the line without its end (LF or
// CRLF), and the line without surrounding blanks, neither empty nor
// starting with '#'. It calls comment, if not nil, with the number and the
// text without surrounding blanks of each line starting with '#'. It
// returns the number of lines.
func eachKeyLine(text string, fn func(line int, ln, t string), comment func(line int, t string)) int {
	return scanKeyLines(text, nil, fn, comment)
}

// scanKeyLines is eachKeyLine that, when plain is not nil, calls it
// instead of fn for each line of an int64 key in plain decimal (see
// plainInt64), with the key.
func scanKeyLines(text string, plain func(line int, v int64), fn func(line int, ln, t string), comment func(line int, t string)) int {
	lineNo := 0
	for start := 0; start < len(text); {
		if plain != nil {
			if v, next, ok := plainInt64(text, start); ok {
				lineNo++
				plain(lineNo, v)
				start = next
				continue
			}
		}
		var ln string
		if end := strings.IndexByte(text[start:], '\n'); end >= 0 {
			ln, start = text[start:start+end], start+end+1
		} else {
			ln, start = text[start:], len(text)
		}
		lineNo++
		if len(ln) > 0 && ln[len(ln)-1] == '\r' {
			ln = ln[:len(ln)-1]
		}
		switch t := strings.TrimSpace(ln); {
		case t == "":
		case t[0] != '#':
			fn(lineNo, ln, t)
		case comment != nil:
			comment(lineNo, t)
		}
	}
	return lineNo
}

// plainInt64 reads the line of text that starts at start when it is an
// int64 key in its plainest form: blanks (spaces, tabs), an optional sign,
// 1 to 18 decimal digits, blanks, an optional CR, then LF or the end of
// the text. It returns the key and where the next line starts; false for
// any other line, which eachKeyLine's way reads (to the same key, if it
// is one). One pass over the bytes: a list of a million keys loads in
// 252 ms against 282 (BenchmarkLoadMillionKeys), and a purge's filter is
// ready sooner for the pass at open, which runs beside the load.
func plainInt64(text string, start int) (v int64, next int, ok bool) {
	i, n := start, len(text)
	for i < n && (text[i] == ' ' || text[i] == '\t') {
		i++
	}
	neg := false
	if i < n && (text[i] == '-' || text[i] == '+') {
		neg = text[i] == '-'
		i++
	}
	d := i
	var u uint64
	for i < n && text[i]-'0' < 10 {
		u = u*10 + uint64(text[i]-'0')
		i++
	}
	if i == d || i-d > 18 {
		return 0, 0, false
	}
	for i < n && (text[i] == ' ' || text[i] == '\t') {
		i++
	}
	if i < n && text[i] == '\r' {
		i++
	}
	switch {
	case i == n:
	case text[i] == '\n':
		i++
	default:
		return 0, 0, false
	}
	if neg {
		return -int64(u), i, true
	}
	return int64(u), i, true
}

// decimalInteger reports whether t is a decimal integer that an integer
// codec could list: an int64, or a uint64 of 2^63 or more.
func decimalInteger(t string) bool {
	if _, ok := parseInt64(t); ok {
		return true
	}
	_, why, _ := parseIntKey(t, "uint64")
	return why == ""
}

// parseInt64 is strconv.ParseInt(s, 10, 64) without the error's
// allocation, and faster for the keys of a keys file, whose digits fit in
// 18 (an optional sign, then decimal digits only).
func parseInt64(s string) (int64, bool) {
	d := s
	if len(d) > 0 && (d[0] == '+' || d[0] == '-') {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 {
		v, err := strconv.ParseInt(s, 10, 64)
		return v, err == nil
	}
	var u uint64
	for i := 0; i < len(d); i++ {
		c := d[i] - '0'
		if c > 9 {
			return 0, false
		}
		u = u*10 + uint64(c)
	}
	if s[0] == '-' {
		return -int64(u), true
	}
	return int64(u), true
}

// keysErr reports a problem at a line of a keys file; it sorts with the
// 'keys_file' value node n that names the file.
func (p *parser) keysErr(n *yaml.Node, path string, line, col int, msg string) {
	p.errs = append(p.errs, &Error{
		File: path, Line: line, Col: col,
		Rule: p.rule, RuleName: p.ruleName,
		Key: "keys_file", Msg: msg, sortLine: n.Line, sortCol: n.Column,
	})
}

// uint64KeyHint says, of a decimal t out of int64 range, how a list holds
// it when it is a uint64 (2^63 or more): with the uint64 codec, or, in an
// int64 list, as the int64 its 8 bytes read as, which the int64 codec
// encodes to the same 8 bytes a uint64 slot stores (" (a uint64 key: say
// 'codec: uint64', or list it as the int64 of its 8 bytes, the key minus
// 2^64: -1)"); "" for one that is no uint64 either.
func uint64KeyHint(t string) string {
	u, err := strconv.ParseUint(strings.TrimPrefix(t, "+"), 10, 64)
	if err != nil || u <= math.MaxInt64 {
		return ""
	}
	return fmt.Sprintf(" (a uint64 key: say 'codec: uint64', or list it as the int64 of its 8 bytes, the key minus 2^64: %d)", int64(u))
}
