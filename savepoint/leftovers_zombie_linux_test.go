package savepoint

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A run killed a moment ago may still be a zombie, its exit not yet
// collected by its parent (a `timeout -s KILL` that died with it leaves
// it to init): it runs no more and writes nothing, so what it left is
// reported, not taken for the names of a run still writing them.
func TestLeftoversOfZombieReported(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer cmd.Wait()
	pid := strconv.Itoa(cmd.Process.Pid)
	for deadline := time.Now().Add(5 * time.Second); ; {
		b, err := os.ReadFile("/proc/" + pid + "/stat")
		if err == nil && strings.Contains(string(b), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Skip("the child did not become a zombie")
		}
		time.Sleep(5 * time.Millisecond)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out+".sptool-tmp-"+pid+".1.abc", 0o755); err != nil {
		t.Fatal(err)
	}
	if ws := Leftovers(out); len(ws) != 1 {
		t.Fatalf("leftovers of a zombie: %q, want one warning", ws)
	}
}
