package rules

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"go.yaml.in/yaml/v3"

	"github.com/sptool/sptool/internal/prefault"
)

// maxKeyErrors bounds the invalid lines of one keys file reported one by
// one; the rest are counted.
const maxKeyErrors = 10

// loadKeysFile reads spec.KeysFile (relative to ParseOptions.Dir): one key
// per line, blank lines and lines starting with '#' skipped, CRLF line ends
// and a UTF-8 byte order mark tolerated. String keys are the line's bytes
// exactly (leading and trailing blanks included, with a warning); int64
// keys are decimal, surrounding blanks ignored, parsed strictly, and
// encoded as 8 bytes little-endian. n is the 'keys_file' value node.
func (p *parser) loadKeysFile(n *yaml.Node, spec *PurgeKeysSpec) bool {
	path := spec.KeysFile
	if !filepath.IsAbs(path) {
		path = filepath.Join(p.opts.Dir, path)
	}
	spec.Path = path
	data, err := p.opts.ReadFile(path)
	if err != nil {
		p.errAt(n, "keys_file", "read keys file %q: %v", spec.KeysFile, err)
		return false
	}
	sum := sha256.Sum256(data)
	spec.FileDigest = hex.EncodeToString(sum[:])
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))

	est := bytes.Count(data, []byte{'\n'}) + 1
	spec.initIndex(est)
	spec.Keys = make([]string, 0, est)
	spec.Lines = make([]int, 0, est)
	prefault.Slice(spec.Keys)
	prefault.Slice(spec.Lines)
	isInt := spec.Codec == "int64"
	// The int64 keys' encodings share one buffer, written once and never
	// changed: one allocation instead of one per key.
	var encoded []byte
	if isInt {
		encoded = make([]byte, 0, 8*est)
		prefault.Slice(encoded)
	}
	all := string(data) // one copy; string keys are substrings of it
	bad, wsLine, wsLines, lineNo := 0, 0, 0, 0
	var batch keyBatch
	for start := 0; start < len(all); {
		var ln string
		if end := strings.IndexByte(all[start:], '\n'); end >= 0 {
			ln, start = all[start:start+end], start+end+1
		} else {
			ln, start = all[start:], len(all)
		}
		lineNo++
		if len(ln) > 0 && ln[len(ln)-1] == '\r' {
			ln = ln[:len(ln)-1]
		}
		t := strings.TrimSpace(ln)
		if t == "" || t[0] == '#' {
			continue
		}
		enc := ln
		if isInt {
			v, err := strconv.ParseInt(t, 10, 64)
			if err != nil {
				bad++
				if bad <= maxKeyErrors {
					why := "not a decimal integer"
					if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
						why = "out of int64 range"
					}
					p.keysErr(n, path, lineNo, strings.Index(ln, t)+1, fmt.Sprintf("invalid int64 key %q: %s", t, why))
				}
				continue
			}
			if len(encoded)+8 <= cap(encoded) {
				encoded = binary.LittleEndian.AppendUint64(encoded, uint64(v))
				enc = unsafe.String(&encoded[len(encoded)-8], 8)
			} else {
				enc = int64Key(v)
			}
		} else if len(t) != len(ln) {
			if wsLines++; wsLine == 0 {
				wsLine = lineNo
			}
		}
		batch.add(spec, enc, lineNo)
	}
	batch.flush(spec)
	if bad > maxKeyErrors {
		p.keysErr(n, path, lineNo, 1, fmt.Sprintf("%d more invalid int64 keys not listed (%d in all)", bad-maxKeyErrors, bad))
	}
	switch {
	case wsLines == 1:
		p.warnAt(n, "keys file %q line %d starts or ends with blanks, which are part of the key", spec.KeysFile, wsLine)
	case wsLines > 1:
		p.warnAt(n, "keys file %q: %d lines start or end with blanks, which are part of their keys (the first: line %d)", spec.KeysFile, wsLines, wsLine)
	}
	return bad == 0
}

// keyBatch holds keys read from a keys file until there are enough of them
// to add together (see flush).
type keyBatch struct {
	n    int
	keys [prefetchBatch]struct {
		enc  string
		line int
		h    uint64
	}
}

// add adds key enc (from line) to the batch, and the batch to s when it
// is full.
func (b *keyBatch) add(s *PurgeKeysSpec, enc string, line int) {
	b.keys[b.n].enc, b.keys[b.n].line = enc, line
	if b.n++; b.n == len(b.keys) {
		b.flush(s)
	}
}

// flush adds the keys of the batch to s, in order, and empties it. Each
// key's place in the index and the filter is read for all of them first,
// so that the cache misses of the fresh, randomly accessed index overlap
// rather than come one after the other.
func (b *keyBatch) flush(s *PurgeKeysSpec) {
	var sink uint64
	for i := range b.n {
		k := &b.keys[i]
		k.h = keyHash(k.enc)
		if len(s.index.slots) > 0 {
			sink += uint64(s.index.slots[s.index.slot(k.h)])
		}
		if s.filter.words != nil {
			w, _ := s.filter.at(k.h)
			sink += s.filter.words[w]
		}
	}
	prefetchSink.Add(sink)
	for i := range b.n {
		k := &b.keys[i]
		s.addHashed(k.enc, k.line, k.h)
	}
	b.n = 0
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
