package savepoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// smallTree writes a tree of one subtask file (checkpoint 7, generation 1,
// sidecar and COMPLETED marker) and returns its root.
func smallTree(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "tree")
	tw, err := CreateTree(out, TreeOptions{Generation: 1, Checkpoint: 7})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tw.WriteSubtask(0, CanonicalMetadata(nil, VersionMap{}), []Row{{Op: 1, Key: []byte("k"), Value: []byte("v")}}, CompressNone); err != nil {
		t.Fatal(err)
	}
	if err := tw.Commit("job1", nil); err != nil {
		t.Fatal(err)
	}
	return out
}

// A sidecar or COMPLETED marker larger than any real one (they are under
// 200 bytes) is an error naming it, not read whole into memory.
func TestControlFilesTooLarge(t *testing.T) {
	for _, which := range []string{"sidecar", "marker"} {
		root := smallTree(t)
		payload := filepath.Join(root, "v1", "0", "checkpoint-7.snap")
		path := payload + ".meta"
		if which == "marker" {
			path = filepath.Join(root, "_jobs", "job1", "COMPLETED-7")
		}
		big := []byte(strings.Repeat("x=1\n", 1<<18)) // 1 MiB
		if err := os.WriteFile(path, big, 0o644); err != nil {
			t.Fatal(err)
		}
		opens := []string{root}
		if which == "sidecar" {
			opens = append(opens, payload)
		}
		for _, p := range opens {
			sp, err := Open(p, OpenOptions{})
			if err == nil {
				sp.Close()
			}
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "more than the 65536 bytes") {
				t.Errorf("Open %s with a 1 MiB %s: %v, want an error naming %s", p, which, err, path)
			}
		}
	}
}
