package rowtext

import (
	"encoding/hex"
	"errors"
	"io"
)

// LineWriterSize is the size of a LineWriter's buffers.
const LineWriterSize = 1 << 20

// LineWriter writes buffers of lines to w on a goroutine of its own, one
// at a time, while the caller fills the other buffer: a JSON Lines export
// of 10M rows writes 2.2 GB, and the writes (the kernel's copy into the
// page cache) take about as long as building the lines.
type LineWriter struct {
	w io.Writer
	// Buf is the buffer being filled: the caller appends lines to it and
	// then calls MaybeFlush.
	Buf []byte
	// spare is the other buffer, free once the write in flight (writing,
	// its error in writeErr) is waited for.
	spare    []byte
	writing  chan struct{}
	writeErr error
	panicked any   // a panic of the write in flight, raised again by wait
	err      error // the first write error seen by the caller
}

// NewLineWriter returns a LineWriter that writes to w.
func NewLineWriter(w io.Writer) *LineWriter {
	return &LineWriter{w: w, Buf: make([]byte, 0, LineWriterSize+LineWriterSize/8), spare: make([]byte, 0, LineWriterSize+LineWriterSize/8)}
}

// MaybeFlush hands the buffer to the writing goroutine once it holds
// LineWriterSize bytes or more, and returns an error of an earlier write.
func (l *LineWriter) MaybeFlush() error {
	if len(l.Buf) < LineWriterSize {
		return l.err
	}
	return l.flush()
}

// flush waits for the write in flight, then starts writing the buffer.
func (l *LineWriter) flush() error {
	if err := l.wait(); err != nil {
		return err
	}
	if len(l.Buf) == 0 {
		return nil
	}
	full, done := l.Buf, make(chan struct{})
	l.Buf, l.spare, l.writing = l.spare[:0], nil, done
	go func() {
		defer close(done)
		// A writer that panics (an http.ResponseWriter's handler abort,
		// say) has its panic raised in the caller's goroutine, where it
		// can be recovered, not in this one, where it ends the process.
		defer func() { l.panicked = recover() }()
		_, l.writeErr = l.w.Write(full)
		l.spare = full
	}()
	return nil
}

// wait waits for the write in flight, if any, and returns the first write
// error. A panic of the write is raised again here.
func (l *LineWriter) wait() error {
	if l.writing != nil {
		<-l.writing
		l.writing = nil
		if p := l.panicked; p != nil {
			l.panicked = nil
			l.err = errors.New("the writer panicked")
			panic(p)
		}
		if l.err == nil {
			l.err = l.writeErr
		}
	}
	return l.err
}

// PieceSize is the most bytes of a field that AppendPieces encodes at once.
const PieceSize = 256 << 10

// AppendPieces appends enc's encoding of field to l.Buf. A field longer than
// PieceSize is encoded a piece at a time, each piece ending where cut puts
// it (nil: anywhere), and l.Buf is handed to the writer whenever it is full
// in between: a line holding a value of hundreds of MB is written as it is
// encoded, never held whole (its encoding can be several times the value),
// and l's buffers stay near LineWriterSize. enc must encode the pieces, end
// to end, as it encodes the field. A line so written is partly written when
// the caller fails on a later field of it: the output is then to be
// abandoned (Close(false)).
func AppendPieces[S string | []byte](l *LineWriter, field S, cut func(s S, at int) int, enc func(dst []byte, piece S) []byte) error {
	for len(field) > PieceSize {
		n := PieceSize
		if cut != nil {
			n = cut(field, n)
		}
		l.Buf = enc(l.Buf, field[:n])
		field = field[n:]
		if err := l.MaybeFlush(); err != nil {
			return err
		}
	}
	l.Buf = enc(l.Buf, field)
	return nil
}

// AppendHex appends b in hex to l.Buf, a piece at a time when it is longer
// than PieceSize (AppendPieces).
func AppendHex(l *LineWriter, b []byte) error {
	if len(b) <= PieceSize {
		l.Buf = hex.AppendEncode(l.Buf, b)
		return nil
	}
	return AppendPieces(l, b, nil, hex.AppendEncode)
}

// Close writes what is buffered (unless write is false: the output
// failed and is abandoned) and waits for every write; it returns the
// first write error.
func (l *LineWriter) Close(write bool) error {
	if write {
		if err := l.flush(); err != nil {
			return err
		}
	}
	return l.wait()
}
