package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
