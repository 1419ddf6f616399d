package cli

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress draws the progress of a run on a terminal: rows processed (with
// rate and time left), then bytes written (with rate).
//
// The rates are its own, over the work done since the stage's first
// report: progressbar's divide all the work done by the time since its
// first frame, which comes with that report, after the stage has done some
// work (a file's first block of rows), and read billions of rows a second
// there; nor can the stage's start be taken as the previous stage's last
// report, when work that reports nothing (a sort) runs between them.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	now   func() time.Time
	stage string
	first time.Time // the stage's first report
	from  int64     // the work done at that report
	bar   *progressbar.ProgressBar
}

// minRateTime is how long after its first report a stage's rate is
// shown: over a shorter time it says little.
const minRateTime = 200 * time.Millisecond

func newProgress(w io.Writer) *progress {
	return &progress{w: w, now: time.Now}
}

func (p *progress) update(stage string, done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if stage != p.stage {
		p.clear()
		p.stage, p.first, p.from = stage, now, done
		p.bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionSetElapsedTime(false),
			progressbar.OptionShowDescriptionAtLineEnd(),
		)
	}
	p.bar.Describe(progressText(stage, done, total, done-p.from, now.Sub(p.first)))
	p.bar.Set64(done)
}

// progressText describes a stage's progress: "rows: 4.2M of 10M, 9.5M
// rows/s, about 1s left", "writing: 335 MB, 1.0 GB/s"; the rate (of the
// work since done in the time since elapsed) and the time left once
// elapsed is minRateTime.
func progressText(stage string, done, total, since int64, elapsed time.Duration) string {
	rate := 0.0
	if elapsed >= minRateTime {
		rate = float64(since) / elapsed.Seconds()
	}
	if stage != "rows" {
		s := "writing: " + siCount(float64(done), "B")
		if rate > 0 {
			s += ", " + siCount(rate, "B") + "/s"
		}
		return s
	}
	s := fmt.Sprintf("rows: %s of %s", siCount(float64(done), ""), siCount(float64(total), ""))
	if rate > 0 {
		s += fmt.Sprintf(", %s rows/s", siCount(rate, ""))
		if left := float64(total - done); left > 0 {
			s += fmt.Sprintf(", about %s left", time.Duration(left/rate*float64(time.Second)).Round(time.Second))
		}
	}
	return s
}

// siCount writes n with an SI prefix: of rows "950", "4.2k", "10M"; of
// bytes (unit "B") "950 B", "4.2 kB", "1.0 GB".
func siCount(n float64, unit string) string {
	sep := ""
	if unit != "" {
		sep = " "
	}
	for _, u := range []struct {
		at     float64
		prefix string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if n >= u.at {
			v := n / u.at
			if v < 10 {
				return fmt.Sprintf("%.1f%s%s%s", v, sep, u.prefix, unit)
			}
			return fmt.Sprintf("%.0f%s%s%s", v, sep, u.prefix, unit)
		}
	}
	return fmt.Sprintf("%.0f%s%s", n, sep, unit)
}

// clear takes the stage's bar off the terminal.
func (p *progress) clear() {
	if p.bar != nil {
		p.bar.Finish() // (OptionClearOnFinish: the line is blanked)
		p.bar.Exit()
		p.bar = nil
	}
}

// finish takes the bar off the terminal, before the run's report is
// printed; the progress may be finished more than once.
func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	p.stage = ""
}
