package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sptool/sptool/internal/gen"
)

// TestMain runs main itself when a test starts this binary as sptool
// (SPTOOL_TEST_MAIN=1), so that tests see its exit code and output.
func TestMain(m *testing.M) {
	if os.Getenv("SPTOOL_TEST_MAIN") == "1" {
		os.Args = append([]string{"sptool"}, strings.Fields(os.Getenv("SPTOOL_TEST_ARGS"))...)
		main()
	}
	os.Exit(m.Run())
}

// sptool runs main with args and the environment env added, and returns
// its exit code and stderr.
func sptool(t *testing.T, args string, env ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), append(env, "SPTOOL_TEST_MAIN=1", "SPTOOL_TEST_ARGS="+args)...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// The profiles that SPTOOL_CPUPROFILE and SPTOOL_MEMPROFILE ask for are
// written whole, or the run says why not and exits 2: a profile that
// could not be written (no such directory, a full disk) is not passed
// over in silence, nor left in part.
func TestProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof")
	if code, stderr := sptool(t, "version", "SPTOOL_CPUPROFILE="+cpu, "SPTOOL_MEMPROFILE="+mem); code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, p := range []string{cpu, mem} {
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v, want a profile", p, err)
		}
	}
	missing := filepath.Join(dir, "missing")
	cpu, mem = filepath.Join(missing, "cpu.prof"), filepath.Join(missing, "mem.prof")
	code, stderr := sptool(t, "version", "SPTOOL_CPUPROFILE="+cpu, "SPTOOL_MEMPROFILE="+mem)
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	for _, want := range []string{"sptool: SPTOOL_CPUPROFILE=" + cpu + ": the profile was not written: ", "sptool: SPTOOL_MEMPROFILE=" + mem + ": the profile was not written: "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q does not say %q", stderr, want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("left in %s: %v", dir, ents)
	}
	// A failed run keeps its own exit code.
	if code, stderr := sptool(t, "inspect "+filepath.Join(dir, "nothing"), "SPTOOL_MEMPROFILE="+mem); code != 2 || !strings.Contains(stderr, "SPTOOL_MEMPROFILE") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// A second SIGINT sent with the first (timeout(1) signals the process,
// then its process group) is the same request: the run stops as after one,
// and says so, rather than being killed by the second. One that comes
// later ends the process at once. The run is cat's, blocked on a full
// stdout pipe until the test reads it, so that both signals come while it
// runs.
func TestSignalTwice(t *testing.T) {
	in := filepath.Join(t.TempDir(), "in.snap") // its rows print more than a pipe and cat's buffer hold
	if err := gen.WriteBig(in, gen.BigOptions{Rows: 100_000, Seed: 1, Sorted: true}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		gap    time.Duration
		killed bool
		sig    syscall.Signal
	}{
		{20 * time.Millisecond, false, syscall.SIGINT},
		{sameSignal + 750*time.Millisecond, true, syscall.SIGINT},
		// A hangup (a terminal or an SSH session closed) stops it too.
		{20 * time.Millisecond, false, syscall.SIGHUP},
	} {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "SPTOOL_TEST_MAIN=1", "SPTOOL_TEST_ARGS=cat "+in)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Its first line: main runs, and its signal handlers are set.
		if _, err := stdout.Read(make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		cmd.Process.Signal(c.sig)
		time.Sleep(c.gap)
		cmd.Process.Signal(c.sig)
		time.Sleep(20 * time.Millisecond)
		io.Copy(io.Discard, stdout)
		cmd.Wait()
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		switch {
		case c.killed && !ws.Signaled():
			t.Errorf("second %v %v after the first: exit %d, stderr %q; want the process killed", c.sig, c.gap, cmd.ProcessState.ExitCode(), stderr.String())
		case !c.killed && ws.Signaled():
			t.Errorf("second %v %v after the first: killed by %v; want the run stopped", c.sig, c.gap, ws.Signal())
		case !c.killed && (cmd.ProcessState.ExitCode() != 2 || !strings.Contains(stderr.String(), "sptool cat: stopped: "+c.sig.String())):
			t.Errorf("second %v %v after the first: exit %d, stderr %q; want exit 2 and the run stopped", c.sig, c.gap, cmd.ProcessState.ExitCode(), stderr.String())
		}
	}
}
