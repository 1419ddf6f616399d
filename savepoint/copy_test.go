package savepoint

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// CopyVerified publishes a copy whose bytes have the size and CRC read at
// open; a copy that differs (the input changed since) is ErrInputChanged,
// and nothing is left behind: another CRC, or more or fewer bytes than
// read. Small files and large ones (copied in parts by several goroutines)
// alike.
func TestCopyVerified(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(5, 6))
	for _, size := range []int{0, 1000, 9 << 20} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		src := filepath.Join(dir, "src")
		if err := os.WriteFile(src, data, 0o644); err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, "dst")
		if err := CopyVerified(src, dst, int64(size), CRC32C(data)); err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		if got, err := os.ReadFile(dst); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%d bytes: the copy differs (%v)", size, err)
		}
		os.Remove(dst)
		for _, c := range []struct {
			name string
			size int64
			crc  uint32
		}{
			{"another CRC", int64(size), CRC32C(data) ^ 1},
			{"a larger size", int64(size) + 1, CRC32C(data)},
			{"a smaller size", max(0, int64(size)-1), CRC32C(data[:max(0, size-1)])}, // the input grew
		} {
			if size == 0 && c.size == 0 {
				continue // no smaller size
			}
			err := CopyVerified(src, dst, c.size, c.crc)
			if !errors.Is(err, ErrInputChanged) {
				t.Errorf("%d bytes, %s: %v, want ErrInputChanged", size, c.name, err)
			}
			if left, _ := filepath.Glob(dst + "*"); len(left) > 0 {
				t.Errorf("%d bytes, %s: left behind %v", size, c.name, left)
			}
		}
	}
}

// The parts eachPart runs at once, over calls made at once (a tree's files
// copied or checksummed together), are at most one per CPU: each holds a
// buffer.
func TestEachPartBounded(t *testing.T) {
	var active, peak atomic.Int32
	part := func(lo, hi int64) (uint32, error) {
		n := active.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(time.Millisecond)
		active.Add(-1)
		return 0, nil
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := eachPart(64*int64(checksumBlock)*int64(runtime.NumCPU()), part); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > int32(runtime.NumCPU()) || p == 0 {
		t.Errorf("%d parts ran at once, want 1 to %d (one per CPU)", p, runtime.NumCPU())
	}
}
