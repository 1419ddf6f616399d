package transform_test

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sptool/sptool/internal/gen"
	"github.com/sptool/sptool/savepoint"
)

// buildSptool builds cmd/sptool into a temporary directory.
func buildSptool(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sptool")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/sptool/sptool/cmd/sptool")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// crashRows is the size of the crash test's input: apply takes about a
// second on it.
const crashRows = 300_000

// crashSubtasks is the parallelism of crashTree's input: its files of
// 37,500 rows each are sorted in memory.
const crashSubtasks = 8

// crashRules rewrites every subtask file.
const crashRules = `version: 1
rules:
  - drop: 'slot == "agg" && key_group % 2 == 0'
  - purge_keys: {keys: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], codec: int64}
`

// killer starts `sptool apply` repeatedly and SIGKILLs it after a random
// delay within its uninterrupted runtime.
type killer struct {
	t      *testing.T
	bin    string
	rng    *rand.Rand
	window time.Duration // runtime of an uninterrupted run
	write  time.Duration // when it started writing its output
	runs   int           // runs made
	killed int           // runs killed before they finished
	// killedWriting counts the kills that hit the write phase.
	killedWriting int
}

func newKiller(t *testing.T, bin string) *killer {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SPTOOL_CRASH_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("random delays from seed %d (SPTOOL_CRASH_SEED)", seed)
	return &killer{t: t, bin: bin, rng: rand.New(rand.NewPCG(seed, 1))}
}

// reference runs apply to completion and records its runtime and when it
// started writing (when a path matching the glob writing appeared), unless
// an earlier reference run was faster: on a machine whose speed varies, a
// slow run's window would have most random delays fall after the runs end.
func (k *killer) reference(writing string, args ...string) {
	k.t.Helper()
	var write time.Duration
	start := time.Now()
	cmd := exec.Command(k.bin, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		k.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				k.t.Fatalf("sptool %s: %v\n%s", strings.Join(args, " "), err, out.String())
			}
			window := time.Since(start)
			if write == 0 {
				k.t.Fatalf("never saw %s while sptool ran", writing)
			}
			k.t.Logf("uninterrupted apply: %v, writing from %v on", window.Round(time.Millisecond), write.Round(time.Millisecond))
			if k.window == 0 || window < k.window {
				k.window, k.write = window, write
			}
			return
		case <-tick.C:
			if write == 0 {
				if m, _ := filepath.Glob(writing); len(m) > 0 {
					write = time.Since(start)
				}
			}
		}
	}
}

// run starts sptool with args and SIGKILLs it: with atWrite false after a
// random delay within the uninterrupted runtime; with atWrite true after a
// random delay within the write phase, counted from the moment a path
// matching the glob writing appears (the write phase is short, so a delay
// from the start would rarely hit it). It counts the runs killed, and those
// killed while writing.
func (k *killer) run(writing string, atWrite bool, args ...string) {
	k.t.Helper()
	k.runs++
	start := time.Now()
	cmd := exec.Command(k.bin, args...)
	if err := cmd.Start(); err != nil {
		k.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var kill <-chan time.Time
	if !atWrite {
		kill = time.After(time.Duration(k.rng.Int64N(int64(k.window))))
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	sawWrite := false
	for {
		select {
		case err := <-done:
			if err != nil {
				k.t.Fatalf("sptool exited early: %v", err)
			}
			// It finished before its kill: later delays are drawn within
			// its runtime, which is the machine's speed now.
			k.window = min(k.window, time.Since(start))
			return
		case <-tick.C:
			if !sawWrite {
				m, _ := filepath.Glob(writing)
				sawWrite = len(m) > 0
				if sawWrite && atWrite {
					kill = time.After(time.Duration(k.rng.Int64N(int64(max(k.window-k.write, time.Millisecond)))))
				}
			}
		case <-kill:
			cmd.Process.Signal(syscall.SIGKILL)
			err := <-done
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				k.killed++
				if sawWrite {
					k.killedWriting++
				}
			} else if err != nil {
				k.t.Fatalf("sptool failed: %v", err)
			}
			return
		}
	}
}

// enough reports whether enough of the runs so far were interrupted, and
// some while writing, for the test to prove something.
func (k *killer) enough() bool { return k.killed >= k.runs/3 && k.killedWriting > 0 }

// more reports whether run i (from 0) is to be made: the first runs
// always; then more, up to three times as many, while too few were
// interrupted (on a machine whose speed changed since the reference runs,
// the delays drawn may fall after most runs end: run shortens the window
// to the runs that finish).
func (k *killer) more(i, runs int) bool { return i < runs || !k.enough() && i < 3*runs }

// checkKills fails the test when too few runs were interrupted, or none
// while writing, for it to prove anything.
func (k *killer) checkKills() {
	k.t.Helper()
	k.t.Logf("%d of %d runs killed before they finished, %d of them while writing", k.killed, k.runs, k.killedWriting)
	if !k.enough() {
		k.t.Errorf("too few runs interrupted (%d of %d, %d while writing): the kill delays miss the run", k.killed, k.runs, k.killedWriting)
	}
}

// TestCrashSafety builds sptool once and kills `sptool apply` at random
// moments, on a tree and on a single file.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("builds sptool and runs it many times")
	}
	bin := buildSptool(t)
	t.Run("tree", func(t *testing.T) { crashTree(t, bin) })
	t.Run("file", func(t *testing.T) { crashFile(t, bin) })
}

// crashTree: after each kill the output is either absent or complete and
// identical to an uninterrupted run's; staging directories never look
// complete unless they are; the input never changes. The tree's files are
// in clink's hash-map order and small enough to be sorted in memory (the
// file of crashFile is sorted through temporary files).
func crashTree(t *testing.T, bin string) {
	start := time.Now()
	dir := t.TempDir()
	files := map[int][]savepoint.Row{}
	for _, r := range gen.BigRows(gen.BigOptions{Rows: crashRows, Seed: 3}) {
		s := savepoint.SubtaskForKeyGroup(int(r.Key[0]), crashSubtasks)
		files[s] = append(files[s], r)
	}
	for s, rows := range files {
		if len(rows) >= savepoint.InPlaceRows || len(rows) >= 1<<16 {
			t.Fatalf("subtask %d has %d rows: its file would not be sorted in memory", s, len(rows))
		}
	}
	in := writeTreeAsIs(t, filepath.Join(dir, "in"), 21, files, savepoint.VersionMap{})
	rulesPath := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rulesPath, []byte(crashRules), 0o644); err != nil {
		t.Fatal(err)
	}
	inSums := checksums(t, in)

	k := newKiller(t, bin)
	ref := filepath.Join(dir, "ref")
	// Twice: the first run reads a cold input.
	k.reference(ref+".sptool-tmp-*", "apply", "-r", rulesPath, in, "-o", ref)
	k.reference(ref+".sptool-tmp-*", "apply", "-r", rulesPath, in, "-o", ref, "--force")
	refSums := checksums(t, ref)
	refSP := open(t, ref)
	if vr := savepoint.Validate(refSP, savepoint.ValidateOptions{}); vr.Errors() != 0 || len(refSP.Files) != crashSubtasks {
		t.Fatalf("reference output: %d files, %d validation errors", len(refSP.Files), vr.Errors())
	}

	out := filepath.Join(dir, "out")
	outcomes := map[string]int{}
	const runs = 12
	for i := 0; k.more(i, runs); i++ {
		args := []string{"apply", "-r", rulesPath, in, "-o", out}
		if i%2 == 1 {
			// Replace whatever the previous run left (or nothing).
			args = append(args, "--force")
		} else if err := os.RemoveAll(out); err != nil {
			t.Fatal(err)
		}
		k.run(out+".sptool-tmp-*", i%4 >= 2, args...)
		switch {
		case !exists(out):
			outcomes["no output"]++
		default:
			outcomes["complete output"]++
			checkCompleteTree(t, out, refSums)
		}
		leftovers, _ := filepath.Glob(out + ".sptool-*")
		for _, l := range leftovers {
			switch {
			case strings.Contains(l, ".sptool-tmp-"):
				// A staging directory may be partial, but it must not carry
				// a COMPLETED marker unless it is complete.
				if hasMarker(l) {
					outcomes["complete staging directory"]++
					checkCompleteTree(t, l, refSums)
				} else {
					outcomes["partial staging directory"]++
				}
			case strings.Contains(l, ".sptool-old-"):
				// A replaced output moved aside: complete, or being deleted
				// marker first, so that it no longer looks complete.
				if hasMarker(l) {
					outcomes["replaced output moved aside"]++
					checkCompleteTree(t, l, refSums)
				} else {
					outcomes["replaced output partly deleted"]++
				}
			default:
				t.Errorf("unexpected leftover %s", l)
			}
			os.RemoveAll(l)
		}
		sameChecksums(t, "input after kill "+strconv.Itoa(i), checksums(t, in), inSums)
	}
	t.Logf("outcomes %v; %v in all", outcomes, time.Since(start).Round(time.Millisecond))
	k.checkKills()
}

// hasMarker reports whether the tree at dir has a COMPLETED-<id> marker
// (a marker's temporary file COMPLETED-<id>.part.<pid>.<n> is none: clink
// and sptool ignore names that do not end in the decimal id).
func hasMarker(dir string) bool {
	paths, _ := filepath.Glob(filepath.Join(dir, "_jobs", "*", "COMPLETED-*"))
	for _, p := range paths {
		if markerName.MatchString(filepath.Base(p)) {
			return true
		}
	}
	return false
}

var markerName = regexp.MustCompile(`^COMPLETED-[0-9]+$`)

// checkCompleteTree checks that dir is a valid tree byte-identical to the
// reference output.
func checkCompleteTree(t *testing.T, dir string, refSums map[string]string) {
	t.Helper()
	sp, err := savepoint.Open(dir, savepoint.OpenOptions{RequireValid: true})
	if err != nil {
		t.Errorf("%s exists but does not open as a valid savepoint: %v", dir, err)
		return
	}
	if vr := savepoint.Validate(sp, savepoint.ValidateOptions{}); vr.Errors() != 0 {
		t.Errorf("%s: %d validation errors", dir, vr.Errors())
	}
	sameChecksums(t, dir, checksums(t, dir), refSums)
}

// crashFile: after each kill the output file is absent, or complete with a
// valid sidecar, or complete without its sidecar (which clink refuses as
// incomplete); a sidecar never vouches for a partial payload.
func crashFile(t *testing.T, bin string) {
	start := time.Now()
	dir := t.TempDir()
	in := filepath.Join(dir, "in", "checkpoint-4.snap")
	if err := gen.WriteBig(in, gen.BigOptions{Rows: crashRows, Seed: 4}); err != nil {
		t.Fatal(err)
	}
	inSums := checksums(t, filepath.Dir(in))
	rulesPath := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rulesPath, []byte(crashRules), 0o644); err != nil {
		t.Fatal(err)
	}
	k := newKiller(t, bin)
	ref := filepath.Join(dir, "ref", "checkpoint-4.snap")
	k.reference(ref+"*.part.*", "apply", "-r", rulesPath, in, "-o", ref)
	k.reference(ref+"*.part.*", "apply", "-r", rulesPath, in, "-o", ref, "--force")
	refPayload, err := os.ReadFile(ref)
	if err != nil {
		t.Fatal(err)
	}
	refSidecar, err := os.ReadFile(ref + ".meta")
	if err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(dir, "out", "checkpoint-4.snap")
	outcomes := map[string]int{}
	const runs = 8
	for i := 0; k.more(i, runs); i++ {
		args := []string{"apply", "-r", rulesPath, in, "-o", out}
		if i%2 == 1 {
			args = append(args, "--force")
		} else {
			os.Remove(out)
			os.Remove(out + ".meta")
		}
		k.run(out+"*.part.*", i%4 >= 2, args...)
		payload, perr := os.ReadFile(out)
		sidecar, serr := os.ReadFile(out + ".meta")
		switch {
		case perr != nil && serr != nil:
			outcomes["no output"]++
		case perr != nil:
			t.Errorf("run %d: a sidecar without its payload (clink would restore empty state)", i)
		case string(payload) != string(refPayload):
			t.Errorf("run %d: the payload at the output path is not the complete output (%d bytes, want %d)", i, len(payload), len(refPayload))
		case serr != nil:
			outcomes["payload without sidecar"]++
			if v, _, _ := savepoint.Verify(out, true, int64(len(payload)), savepoint.CRC32C(payload), nil); v == savepoint.VerdictValid {
				t.Errorf("run %d: a payload without a sidecar verifies as valid", i)
			}
		default:
			outcomes["complete output"]++
			if string(sidecar) != string(refSidecar) {
				t.Errorf("run %d: sidecar %q, want %q", i, sidecar, refSidecar)
			}
			if v, detail, _ := savepoint.Verify(out, true, int64(len(payload)), savepoint.CRC32C(payload), sidecar); v != savepoint.VerdictValid {
				t.Errorf("run %d: verdict %s: %s", i, v, detail)
			}
		}
		// Temporary files may be left behind, never under the output's
		// name; so may the pair a --force run moved aside to replace it
		// (the next run names them), whole: the output of an earlier run.
		ents, _ := os.ReadDir(filepath.Dir(out))
		for _, e := range ents {
			n := e.Name()
			if n == "checkpoint-4.snap" || n == "checkpoint-4.snap.meta" {
				continue
			}
			p := filepath.Join(filepath.Dir(out), n)
			switch {
			case strings.Contains(n, ".part."):
			case strings.HasPrefix(n, "checkpoint-4.snap.meta.sptool-old-"):
				outcomes["old sidecar aside"]++
				if b, _ := os.ReadFile(p); string(b) != string(refSidecar) {
					t.Errorf("run %d: %s is not the sidecar replaced", i, n)
				}
			case strings.HasPrefix(n, "checkpoint-4.snap.sptool-old-"):
				outcomes["old payload aside"]++
				if b, _ := os.ReadFile(p); string(b) != string(refPayload) {
					t.Errorf("run %d: %s is not the payload replaced", i, n)
				}
			default:
				t.Errorf("unexpected file %s", n)
			}
			os.Remove(p)
		}
		sameChecksums(t, "input after kill "+strconv.Itoa(i), checksums(t, filepath.Dir(in)), inSums)
	}
	t.Logf("outcomes %v; %v in all", outcomes, time.Since(start).Round(time.Millisecond))
	k.checkKills()
}
