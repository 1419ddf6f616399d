package savepoint

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The real markers of the independent fixture trees (copied to
// testdata/clink/completed as <tree>-COMPLETED-<ckpt>).
func TestParseCompletedFixtures(t *testing.T) {
	tests := []struct {
		file       string
		job        string
		checkpoint uint64
		generation int
		subtasks   []int
	}{
		{"changelog-file-COMPLETED-17", "7105", 17, 1, []int{0, 1, 2, 3}},
		{"changelog-p4-COMPLETED-17", "7102", 17, 1, []int{0, 1, 2, 3}},
		{"gen3-stale-COMPLETED-16", "7104", 16, 2, []int{0, 1}},
		{"gen3-stale-COMPLETED-17", "7104", 17, 3, []int{0, 1, 2, 3}},
		{"mixed-p4-COMPLETED-17", "7101", 17, 1, []int{0, 1, 2, 3}},
		{"two-groups-COMPLETED-17", "7103", 17, 1, []int{0, 1, 2, 3, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(fixtureDir, "completed", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			c, err := ParseCompleted(b)
			if err != nil {
				t.Fatal(err)
			}
			if c.Job != tc.job || c.Checkpoint != tc.checkpoint || c.Generation != tc.generation ||
				!c.HasSubtasks || !slices.Equal(c.Subtasks, tc.subtasks) || len(c.Extra) != 0 {
				t.Fatalf("ParseCompleted = %+v", c)
			}
			if got := string(c.Marshal()); got != string(b) {
				t.Fatalf("Marshal = %q, want the file's bytes %q", got, b)
			}
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestParseCompleted(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Completed
		marshal string // "-" = same as in
		wantErr string
	}{
		{name: "spec body", in: "job=9\ncheckpoint=3\ngeneration=2\nsubtasks=0,1\n",
			want: Completed{Job: "9", Checkpoint: 3, Generation: 2, Subtasks: []int{0, 1}, HasSubtasks: true}, marshal: "-"},
		{name: "no subtasks line", in: "job=9\ncheckpoint=3\ngeneration=2\n",
			want: Completed{Job: "9", Checkpoint: 3, Generation: 2}, marshal: "-"},
		{name: "empty subtasks", in: "job=9\ncheckpoint=3\ngeneration=2\nsubtasks=\n",
			want: Completed{Job: "9", Checkpoint: 3, Generation: 2, Subtasks: []int{}, HasSubtasks: true}, marshal: "-"},
		{name: "unknown keys kept in order", in: "job=9\nz=1\ncheckpoint=3\ngeneration=2\na=x=y\nsubtasks=5\n",
			want: Completed{Job: "9", Checkpoint: 3, Generation: 2, Subtasks: []int{5}, HasSubtasks: true,
				Extra: []MetaEntry{{"z", "1"}, {"a", "x=y"}}},
			marshal: "job=9\ncheckpoint=3\ngeneration=2\nsubtasks=5\nz=1\na=x=y\n"},
		{name: "any order, no final newline, blank lines", in: "subtasks=2,0\n\ngeneration=1\ncheckpoint=18446744073709551615\njob=",
			want:    Completed{Job: "", Checkpoint: 18446744073709551615, Generation: 1, Subtasks: []int{2, 0}, HasSubtasks: true},
			marshal: "job=\ncheckpoint=18446744073709551615\ngeneration=1\nsubtasks=2,0\n"},
		{name: "job keeps everything after the first =", in: "job=a=b c\ncheckpoint=1\ngeneration=0\n",
			want: Completed{Job: "a=b c", Checkpoint: 1}, marshal: "-"},
		{name: "leading zeros", in: "job=1\ncheckpoint=007\ngeneration=01\nsubtasks=00,01\n",
			want:    Completed{Job: "1", Checkpoint: 7, Generation: 1, Subtasks: []int{0, 1}, HasSubtasks: true},
			marshal: "job=1\ncheckpoint=7\ngeneration=1\nsubtasks=0,1\n"},

		{name: "not key=value", in: "job=1\ncheckpoint=1\ngeneration=1\ngarbage\n", wantErr: `line 4 "garbage": not a key=value line`},
		{name: "bad checkpoint", in: "job=1\ncheckpoint=x\ngeneration=1\n", wantErr: `line 2 "checkpoint=x": checkpoint: "x" is not a plain decimal number`},
		{name: "negative checkpoint", in: "job=1\ncheckpoint=-1\ngeneration=1\n", wantErr: "line 2"},
		{name: "checkpoint overflow", in: "job=1\ncheckpoint=18446744073709551616\ngeneration=1\n", wantErr: "out of range"},
		{name: "empty generation", in: "job=1\ncheckpoint=1\ngeneration=\n", wantErr: `line 3 "generation=": generation: empty value`},
		{name: "CRLF", in: "job=1\r\ncheckpoint=1\r\ngeneration=1\r\n", wantErr: `line 2 "checkpoint=1\r"`},
		{name: "bad subtask", in: "job=1\ncheckpoint=1\ngeneration=1\nsubtasks=0,x\n", wantErr: `line 4 "subtasks=0,x": subtasks entry 2`},
		{name: "trailing comma", in: "job=1\ncheckpoint=1\ngeneration=1\nsubtasks=0,\n", wantErr: "subtasks entry 2: empty value"},
		{name: "spaces in subtasks", in: "job=1\ncheckpoint=1\ngeneration=1\nsubtasks=0, 1\n", wantErr: "subtasks entry 2"},
		{name: "duplicate key", in: "job=1\ncheckpoint=1\ncheckpoint=2\ngeneration=1\n", wantErr: `line 3 "checkpoint=2": duplicate checkpoint= line`},
		{name: "missing job", in: "checkpoint=1\ngeneration=1\n", wantErr: "missing job= line"},
		{name: "missing checkpoint", in: "job=1\ngeneration=1\n", wantErr: "missing checkpoint= line"},
		{name: "missing generation", in: "job=1\ncheckpoint=1\n", wantErr: "missing generation= line"},
		{name: "empty", in: "", wantErr: "missing job= line"},
		// clink does not read the job= line: a path there is read as it
		// is (Open then takes the job from the marker's directory).
		{name: "job id a path", in: "job=../../x\ncheckpoint=1\ngeneration=1\n",
			want: Completed{Job: "../../x", Checkpoint: 1, Generation: 1}, marshal: "-"},
		{name: "generation above 2^31-1", in: "job=1\ncheckpoint=1\ngeneration=2147483648\n", wantErr: "out of range"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseCompleted([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseCompleted(%q) = %+v, %v; want error containing %q", tc.in, c, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Job != tc.want.Job || c.Checkpoint != tc.want.Checkpoint || c.Generation != tc.want.Generation ||
				c.HasSubtasks != tc.want.HasSubtasks || !slices.Equal(c.Subtasks, tc.want.Subtasks) ||
				!slices.Equal(c.Extra, tc.want.Extra) {
				t.Fatalf("ParseCompleted = %+v, want %+v", c, tc.want)
			}
			want := tc.marshal
			if want == "-" {
				want = tc.in
			}
			if got := string(c.Marshal()); got != want {
				t.Fatalf("Marshal = %q, want %q", got, want)
			}
		})
	}
}

func TestCompletedMarshal(t *testing.T) {
	tests := []struct {
		name string
		c    Completed
		want string
	}{
		{"subtasks without HasSubtasks still written", Completed{Job: "1", Checkpoint: 2, Generation: 3, Subtasks: []int{0, 1}},
			"job=1\ncheckpoint=2\ngeneration=3\nsubtasks=0,1\n"},
		{"HasSubtasks with none", Completed{Job: "1", Checkpoint: 2, Generation: 3, HasSubtasks: true},
			"job=1\ncheckpoint=2\ngeneration=3\nsubtasks=\n"},
		{"zero value", Completed{}, "job=\ncheckpoint=0\ngeneration=0\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(tc.c.Marshal()); got != tc.want {
				t.Fatalf("Marshal = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCompletedValidate(t *testing.T) {
	tests := []struct {
		name    string
		c       Completed
		wantErr string
	}{
		{"ok", Completed{Job: "1", Subtasks: []int{0}, Extra: []MetaEntry{{"x", "y"}, {"", "empty key ok"}}}, ""},
		{"newline in job", Completed{Job: "1\n2"}, "job id"},
		{"generation above the largest", Completed{Generation: MaxGeneration + 1}, "above 2147483647"},
		{"negative generation", Completed{Generation: -1}, "negative generation"},
		{"negative subtask", Completed{Subtasks: []int{-1}}, "negative subtask"},
		{"= in extra key", Completed{Extra: []MetaEntry{{"a=b", ""}}}, "invalid extra key"},
		{"extra repeats known key", Completed{Extra: []MetaEntry{{"job", "x"}}}, "repeats a known key"},
		{"newline in extra value", Completed{Extra: []MetaEntry{{"a", "x\ny"}}}, "contains a newline"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Validate = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestCompletedHasSubtask(t *testing.T) {
	c := Completed{Subtasks: []int{0, 2}, HasSubtasks: true}
	for i, want := range []bool{true, false, true, false} {
		if got := c.HasSubtask(i); got != want {
			t.Errorf("HasSubtask(%d) = %v", i, got)
		}
	}
}

// FuzzParseCompleted: a completion marker is untrusted input. Any bytes
// parse or fail without a panic; what parses passes Validate and marshals
// to a marker that parses back to the same value.
func FuzzParseCompleted(f *testing.F) {
	files, err := filepath.Glob(filepath.Join(fixtureDir, "completed", "*"))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("job=1\ncheckpoint=007\ngeneration=2\nsubtasks=\nx==y\n=z\n"))
	f.Add([]byte("job=a=b\r\ncheckpoint=18446744073709551615\ngeneration=2147483647"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCompleted(b)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("ParseCompleted(%q) = %+v, which does not validate: %v", b, c, err)
		}
		m := c.Marshal()
		back, err := ParseCompleted(m)
		if err != nil {
			t.Fatalf("re-parse of %q (from %q): %v", m, b, err)
		}
		if back.Job != c.Job || back.Checkpoint != c.Checkpoint || back.Generation != c.Generation ||
			back.HasSubtasks != c.HasSubtasks || !slices.Equal(back.Subtasks, c.Subtasks) || !slices.Equal(back.Extra, c.Extra) {
			t.Fatalf("%q -> %+v -> %q -> %+v", b, c, m, back)
		}
	})
}

// CheckJobID refuses the job ids that are no directory name of _jobs/.
func TestCheckJobID(t *testing.T) {
	for job, ok := range map[string]bool{"1001": true, "job-a b": true, "": true, "a/b": false, "..": false, ".": false, "a\x00": false, "../x": false} {
		if err := CheckJobID(job); (err == nil) != ok {
			t.Errorf("CheckJobID(%q) = %v", job, err)
		}
	}
}
