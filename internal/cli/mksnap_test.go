package cli

import (
	"bufio"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode"

	"github.com/sptool/sptool/savepoint"
)

// mksnapMain is the scripts' mksnap command: it writes the snapshot file a
// spec lists, so that a script can hold inputs no sptool command makes
// (bytes clink writes and sptool only reads).
//
//	exec mksnap [-sidecar ID] [-as-is] OUT SPEC
//
// SPEC has one entry a line; blank lines and lines starting with '#' are
// skipped. Strings are Go-quoted ("\xff__clink_timers") or 0x hex:
//
//	meta KEY VALUE        a schema metadata entry, after clink.format_version "1", in the order listed
//	row OP KEY VALUE      a row of operator OP (decimal)
//
// The rows are written in canonical order, or with -as-is in the order
// listed (as clink's writers leave them); -sidecar writes a .meta sidecar
// for checkpoint ID.
func mksnapMain() int {
	if err := mksnap(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mksnap:", err)
		return 2
	}
	return 0
}

func mksnap(args []string) error {
	fs := flag.NewFlagSet("mksnap", flag.ContinueOnError)
	sidecar := fs.Int64("sidecar", -1, "write a .meta sidecar for this checkpoint id")
	asIs := fs.Bool("as-is", false, "write the rows in the order listed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return fmt.Errorf("usage: mksnap [-sidecar ID] [-as-is] OUT SPEC")
	}
	md, rows, err := readSnapSpec(fs.Arg(1))
	if err != nil {
		return err
	}
	opts := savepoint.SnapshotOptions{Sidecar: *sidecar >= 0, CheckpointID: uint64(max(*sidecar, 0)), AsIs: *asIs}
	if _, err := savepoint.WriteSnapshotFile(fs.Arg(0), md, rows, opts); err != nil {
		return fmt.Errorf("writing %s: %w", fs.Arg(0), err)
	}
	return nil
}

// readSnapSpec reads the metadata and rows of a mksnap spec.
func readSnapSpec(path string) (savepoint.Metadata, []savepoint.Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	md := savepoint.Metadata{{Key: savepoint.MetaFormatVersion, Value: "1"}}
	var rows []savepoint.Row
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		fields, err := specFields(line)
		if err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		switch {
		case fields[0] == "meta" && len(fields) == 3:
			k, err1 := specBytes(fields[1])
			v, err2 := specBytes(fields[2])
			if err := errors.Join(err1, err2); err != nil {
				return nil, nil, fmt.Errorf("%s:%d: %w", path, n, err)
			}
			md = append(md, savepoint.MetaEntry{Key: string(k), Value: string(v)})
		case fields[0] == "row" && len(fields) == 4:
			op, err1 := strconv.ParseUint(fields[1], 10, 64)
			k, err2 := specBytes(fields[2])
			v, err3 := specBytes(fields[3])
			if err := errors.Join(err1, err2, err3); err != nil {
				return nil, nil, fmt.Errorf("%s:%d: %w", path, n, err)
			}
			rows = append(rows, savepoint.Row{Op: op, Key: k, Value: v})
		default:
			return nil, nil, fmt.Errorf("%s:%d: want `meta KEY VALUE` or `row OP KEY VALUE`, got %q", path, n, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return md, rows, nil
}

// specFields splits a spec line at spaces outside double quotes.
func specFields(line string) ([]string, error) {
	var out []string
	for line = strings.TrimLeftFunc(line, unicode.IsSpace); line != ""; line = strings.TrimLeftFunc(line, unicode.IsSpace) {
		if line[0] != '"' {
			end := strings.IndexFunc(line, unicode.IsSpace)
			if end < 0 {
				end = len(line)
			}
			out = append(out, line[:end])
			line = line[end:]
			continue
		}
		q, err := strconv.QuotedPrefix(line)
		if err != nil {
			return nil, fmt.Errorf("bad quoted string at %q: %w", line, err)
		}
		out = append(out, q)
		line = line[len(q):]
	}
	return out, nil
}

// specBytes decodes a spec string: Go-quoted, or 0x hex.
func specBytes(s string) ([]byte, error) {
	if h, ok := strings.CutPrefix(s, "0x"); ok {
		b, err := hex.DecodeString(h)
		if err != nil {
			return nil, fmt.Errorf("bad hex %q: %w", s, err)
		}
		return b, nil
	}
	u, err := strconv.Unquote(s)
	if err != nil {
		return nil, fmt.Errorf("%q is neither Go-quoted nor 0x hex", s)
	}
	return []byte(u), nil
}
