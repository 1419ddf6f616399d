package rowtext

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// writerFunc is an io.Writer of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

var errDiskFull = errors.New("disk full")

func TestLineWriter(t *testing.T) {
	var out bytes.Buffer
	l := NewLineWriter(&out)
	var want bytes.Buffer
	for i := range 200000 {
		line := strings.Repeat("x", i%50) + "\n"
		l.Buf = append(l.Buf, line...)
		want.WriteString(line)
		if err := l.MaybeFlush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(true); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want.Bytes()) {
		t.Fatalf("wrote %d bytes, want the %d given, in order", out.Len(), want.Len())
	}

	// A failed write is reported by a later flush or by close.
	taken := 0
	l = NewLineWriter(writerFunc(func(p []byte) (int, error) {
		if taken += len(p); taken > LineWriterSize {
			return 0, errDiskFull
		}
		return len(p), nil
	}))
	var err error
	for i := 0; err == nil && i < 10*LineWriterSize; i++ {
		l.Buf = append(l.Buf, "0123456789abcdef\n"...)
		err = l.MaybeFlush()
	}
	if cerr := l.Close(true); !errors.Is(err, errDiskFull) && !errors.Is(cerr, errDiskFull) {
		t.Fatalf("writes into a full disk: %v, close %v; want %v", err, cerr, errDiskFull)
	}

	// Close(false) writes nothing more.
	out.Reset()
	l = NewLineWriter(&out)
	l.Buf = append(l.Buf, "never written\n"...)
	if err := l.Close(false); err != nil || out.Len() != 0 {
		t.Fatalf("Close(false) = %v after writing %q; want nothing written", err, out.String())
	}
}

// A writer that panics has its panic raised in the goroutine that waits for
// the write (Close, the next flush), where the caller can recover it; the
// writer then fails every later call.
func TestLineWriterPanicReachesCaller(t *testing.T) {
	l := NewLineWriter(writerFunc(func([]byte) (int, error) { panic("client went away") }))
	l.Buf = append(l.Buf, "line\n"...)
	got := func() (p any) {
		defer func() { p = recover() }()
		l.Close(true)
		return nil
	}()
	if got != "client went away" {
		t.Fatalf("recovered %v, want the writer's panic", got)
	}
	if err := l.Close(true); err == nil {
		t.Error("Close after the writer panicked: no error")
	}
}

// A field of many pieces is written as AppendJSONString, AppendCSVField
// and hex would write it whole, and the writer's buffers stay near
// LineWriterSize: without the pieces, a line of an 8 MiB value grew them
// to the line's size.
func TestAppendPiecesWritesLongFieldsInBoundedBuffers(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	// Runes of every length, the ones JSON escapes, and bytes that are not
	// UTF-8, so that pieces end at every kind of byte.
	alphabet := []string{"a", "\"", "\\", "\n", "\x01", "é", "€", "\u2028", "😀", "\xff", "\xe2\x80", "\x80", ","}
	size := 8 << 20
	if testing.Short() {
		size = 5 << 20 // (the race detector's runs; still over 4 MiB in every encoding)
	}
	var sb strings.Builder
	for sb.Len() < size {
		sb.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	field := []byte(sb.String())
	for _, c := range []struct {
		name  string
		write func(l *LineWriter) error
		whole func() []byte
	}{
		{"json", func(l *LineWriter) error {
			return AppendPieces(l, field, CutUTF8[[]byte], AppendJSONStringBody[[]byte])
		}, func() []byte { b := AppendJSONString(nil, field); return b[1 : len(b)-1] }},
		{"csv", func(l *LineWriter) error {
			return AppendPieces(l, field, nil, AppendCSVQuotedBody[[]byte])
		}, func() []byte { b := AppendCSVField(nil, field); return b[1 : len(b)-1] }},
		{"hex", func(l *LineWriter) error { return AppendPieces(l, field, nil, hex.AppendEncode) },
			func() []byte { return hex.AppendEncode(nil, field) }},
	} {
		var out bytes.Buffer
		most := 0
		l := NewLineWriter(writerFunc(func(p []byte) (int, error) {
			most = max(most, cap(p))
			return out.Write(p)
		}))
		if err := c.write(l); err != nil {
			t.Fatal(err)
		}
		last := cap(l.Buf) // (most is the writing goroutine's until Close)
		if err := l.Close(true); err != nil {
			t.Fatal(err)
		}
		most = max(most, last)
		if want := c.whole(); !bytes.Equal(out.Bytes(), want) {
			t.Errorf("%s: %d bytes written, differing from the %d of the field encoded whole", c.name, out.Len(), len(want))
		}
		if most > 4*LineWriterSize {
			t.Errorf("%s: a buffer of %d bytes; want them near LineWriterSize (%d)", c.name, most, LineWriterSize)
		}
	}
}
