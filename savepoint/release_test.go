package savepoint

import "testing"

// A long pass releases a mapped file's pages every 32 MB or so of its rows:
// every 256K rows of short rows, more often for long ones, every row for
// rows larger than that.
func TestReleaseRows(t *testing.T) {
	for _, c := range []struct {
		bytes int64
		rows  int
		want  int
	}{
		{0, 0, 1 << 18},
		{390_000_000, 10_000_000, 1 << 18}, // 39-byte rows
		{413_500_000, 100_000, 8114},       // 4 KB keys
		{400 << 20, 2, 1},                  // 200 MB values
		{100, 0, 1 << 18},
	} {
		if got := releaseRows(c.bytes, c.rows); got != c.want {
			t.Errorf("releaseRows(%d bytes, %d rows) = %d, want %d", c.bytes, c.rows, got, c.want)
		}
	}
}
