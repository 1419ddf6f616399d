package savepoint

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"path/filepath"
	"strconv"
	"strings"
)

// MaxGeneration is the largest generation a COMPLETED marker holds (and
// ParseCompleted reads): 2^31-1.
const MaxGeneration = math.MaxInt32

// CompletedPrefix is the file-name prefix of a completion marker:
// _jobs/<job>/COMPLETED-<checkpoint>.
const CompletedPrefix = "COMPLETED-"

// Completed is a coordinator completion marker _jobs/<job>/COMPLETED-<ckpt>
// (section 5.5 of the format):
//
//	job=<id>
//	checkpoint=<ckpt>
//	generation=<gen>
//	subtasks=<i,j,...>
type Completed struct {
	// Job is the job id, as written.
	Job string
	// Checkpoint is the completed checkpoint id.
	Checkpoint uint64
	// Generation is the topology generation the checkpoint was taken in.
	Generation int
	// Subtasks lists the global subtask indices that took part, in the
	// order written; meaningful when HasSubtasks is set.
	Subtasks []int
	// HasSubtasks reports that a subtasks= line is present (it may be
	// empty). Without one, clink's restore unions operator rows from every
	// subtask directory.
	HasSubtasks bool
	// Extra holds lines with unknown keys, in order, so they survive a
	// rewrite.
	Extra []MetaEntry
}

// parseDecimal parses a plain unsigned decimal (digits only, not empty).
func parseDecimal(s string, bits int) (uint64, error) {
	if s == "" {
		return 0, errors.New("empty value")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q is not a plain decimal number", s)
		}
	}
	v, err := strconv.ParseUint(s, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("%q is out of range", s)
	}
	return v, nil
}

// textLines yields the lines of s that are not empty, '\n'-terminated or
// not, with their 1-based line numbers.
func textLines(s string) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		for no := 1; s != ""; no++ {
			line, rest, _ := strings.Cut(s, "\n")
			s = rest
			if line != "" && !yield(no, line) {
				return
			}
		}
	}
}

// ParseCompleted parses a completion marker. Lines are split on '\n'
// (empty lines, including the one after the final newline, are skipped);
// each must be key=value. job, checkpoint and generation are required;
// checkpoint and generation are plain decimal numbers; subtasks is optional
// and holds comma-separated plain decimal indices (an empty value is an
// empty list). Repeating a known key is an error; unknown keys are kept in
// Extra. Errors name the 1-based line number and quote the line.
func ParseCompleted(b []byte) (Completed, error) {
	var c Completed
	seen := map[string]bool{}
	for lineNo, line := range textLines(string(b)) {
		fail := func(err error) (Completed, error) {
			return Completed{}, fmt.Errorf("parse completed marker line %d %q: %w", lineNo, line, err)
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return fail(errors.New("not a key=value line"))
		}
		switch key {
		case "job", "checkpoint", "generation", "subtasks":
			if seen[key] {
				return fail(fmt.Errorf("duplicate %s= line", key))
			}
			seen[key] = true
		}
		switch key {
		case "job":
			c.Job = value
		case "checkpoint":
			v, err := parseDecimal(value, 64)
			if err != nil {
				return fail(fmt.Errorf("checkpoint: %w", err))
			}
			c.Checkpoint = v
		case "generation":
			v, err := parseDecimal(value, 31)
			if err != nil {
				return fail(fmt.Errorf("generation: %w", err))
			}
			c.Generation = int(v)
		case "subtasks":
			c.HasSubtasks = true
			c.Subtasks = []int{}
			if value == "" {
				break
			}
			for i, part := range strings.Split(value, ",") {
				v, err := parseDecimal(part, 31)
				if err != nil {
					return fail(fmt.Errorf("subtasks entry %d: %w", i+1, err))
				}
				c.Subtasks = append(c.Subtasks, int(v))
			}
		default:
			c.Extra = append(c.Extra, MetaEntry{Key: key, Value: value})
		}
	}
	for _, k := range []string{"job", "checkpoint", "generation"} {
		if !seen[k] {
			return Completed{}, fmt.Errorf("parse completed marker: missing %s= line", k)
		}
	}
	return c, nil
}

// CheckJobID refuses a job id that is no directory name of _jobs/ (a
// marker lives in _jobs/<job>/, and an output's is written there): "." and
// "..", and ids holding a path separator or a NUL.
func CheckJobID(job string) error {
	if job == "." || job == ".." || strings.ContainsAny(job, "/\x00"+string(filepath.Separator)) {
		return fmt.Errorf("job id %q is not a directory name (a marker lives in _jobs/<job>/)", job)
	}
	return nil
}

// Validate checks that c marshals to a marker ParseCompleted reads back
// unchanged: no '\n' in the job id or in Extra, no '=' in Extra keys, no
// Extra key repeating a known key, no negative generation or subtask, a
// generation of at most MaxGeneration. (That the job id names a directory
// is CheckJobID's to say.)
func (c Completed) Validate() error {
	if strings.ContainsRune(c.Job, '\n') {
		return fmt.Errorf("completed marker: job id %q contains a newline", c.Job)
	}
	if c.Generation > MaxGeneration {
		return fmt.Errorf("completed marker: generation %d is above %d, the largest a marker holds", c.Generation, MaxGeneration)
	}
	if c.Generation < 0 {
		return fmt.Errorf("completed marker: negative generation %d", c.Generation)
	}
	for _, s := range c.Subtasks {
		if s < 0 {
			return fmt.Errorf("completed marker: negative subtask index %d", s)
		}
	}
	for _, e := range c.Extra {
		switch {
		case strings.ContainsAny(e.Key, "=\n"):
			return fmt.Errorf("completed marker: invalid extra key %q", e.Key)
		case e.Key == "job" || e.Key == "checkpoint" || e.Key == "generation" || e.Key == "subtasks":
			return fmt.Errorf("completed marker: extra key %q repeats a known key", e.Key)
		case strings.ContainsRune(e.Value, '\n'):
			return fmt.Errorf("completed marker: extra value %q of %q contains a newline", e.Value, e.Key)
		}
	}
	return nil
}

// Marshal returns the marker body as clink's coordinator writes it:
// "job=<id>\ncheckpoint=<ckpt>\ngeneration=<gen>\nsubtasks=<i,j,...>\n".
// The subtasks line is written when HasSubtasks is set or Subtasks is not
// empty; Extra lines follow in order. Check c with Validate first when its
// fields come from untrusted input.
func (c Completed) Marshal() []byte {
	b := make([]byte, 0, 64)
	b = append(b, "job="...)
	b = append(b, c.Job...)
	b = append(b, "\ncheckpoint="...)
	b = strconv.AppendUint(b, c.Checkpoint, 10)
	b = append(b, "\ngeneration="...)
	b = strconv.AppendInt(b, int64(c.Generation), 10)
	b = append(b, '\n')
	if c.HasSubtasks || len(c.Subtasks) > 0 {
		b = append(b, "subtasks="...)
		for i, s := range c.Subtasks {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(s), 10)
		}
		b = append(b, '\n')
	}
	for _, e := range c.Extra {
		b = append(b, e.Key...)
		b = append(b, '=')
		b = append(b, e.Value...)
		b = append(b, '\n')
	}
	return b
}

// HasSubtask reports whether the marker lists global subtask index i. A
// marker without a subtasks= line lists nothing.
func (c Completed) HasSubtask(i int) bool {
	for _, s := range c.Subtasks {
		if s == i {
			return true
		}
	}
	return false
}
