package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sptool/sptool/savepoint"
)

// A run stopped by a signal says "stopped", and still names what it left
// behind, wherever its error holds it: behind an error of several wrapped
// errors too, whose Unwrap returns a list (a walk with errors.Unwrap ended
// there).
func TestFailStoppedNamesLeftBehind(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("interrupt signal received"))
	left := errors.New("the staging directory is left behind: unlinkat /o/out.sptool-tmp-1.1.a: permission denied; delete it")
	inner := &savepoint.LeftError{Err: errors.New("read spill: file already closed"), Left: left}
	err := fmt.Errorf("%w (%w)", inner, context.Canceled)
	var errs bytes.Buffer
	fail(&Streams{Err: &errs, ctx: ctx}, "apply", err)
	if !strings.Contains(errs.String(), left.Error()) {
		t.Errorf("stderr %q does not name what is left behind", errs.String())
	}
}
