//go:build unix

package savepoint

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A fault in a goroutine run by Faults reaches the Guard around Wait.
func TestFaultsReachGuard(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	m, err := mapFile(fh, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer unmapFile(m)
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	var sink byte
	err = Guard(func() error {
		var f Faults
		f.Go(func() { sink = m[1<<19] }) // past the end of the file now
		f.Go(func() {})
		f.Wait()
		return nil
	})
	if !errors.Is(err, ErrInputChanged) {
		t.Fatalf("fault in a goroutine: %v (read %d), want ErrInputChanged", err, sink)
	}
}

// A mapped input cut short faults in the goroutines of Order's own pass
// (when the pass at open left the order unknown); the fault reaches the
// caller's Guard as ErrInputChanged.
func TestOrderFaultReachesGuard(t *testing.T) {
	sp, path := openCountedRows(t, 300_000)
	defer sp.Close()
	sp.ReleasePages()
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	err := Guard(func() error { sp.Files[0].Snapshot.computeOrder(); return nil })
	if !errors.Is(err, ErrInputChanged) {
		t.Fatalf("Order on a truncated mapped input: %v, want ErrInputChanged", err)
	}
}
