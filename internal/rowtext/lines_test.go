package rowtext

import (
	"bytes"
	"errors"
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
