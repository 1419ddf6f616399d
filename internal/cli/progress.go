package cli

import (
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress draws the progress of a run on a terminal: rows processed (with
// rate and ETA), then bytes written.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	stage string
	bar   *progressbar.ProgressBar
}

func newProgress(w io.Writer) *progress { return &progress{w: w} }

func (p *progress) update(stage string, done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if stage != p.stage {
		if p.bar != nil {
			p.bar.Finish()
		}
		p.stage = stage
		opts := []progressbar.Option{
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionThrottle(100 * time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetWidth(30),
		}
		if stage == "rows" {
			opts = append(opts, progressbar.OptionSetDescription("rows"), progressbar.OptionSetItsString("rows"))
		} else {
			opts = append(opts, progressbar.OptionSetDescription("writing"), progressbar.OptionShowBytes(true))
		}
		p.bar = progressbar.NewOptions64(total, opts...)
	}
	p.bar.Set64(done)
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Finish()
		p.bar.Exit()
	}
}
